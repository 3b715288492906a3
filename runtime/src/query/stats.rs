//! What a query's caller learns of how it ran.

use crate::wire::counters::MessageStats;
use std::time::Duration;

/// Statistics of one finished query.
#[derive(Debug, Clone, Default)]
pub struct QueryStats {
    /// Messages that crossed nodes for this query.
    pub messages: MessageStats,
    /// `(edge, high-water mark)` of the edges on the initiator, in batches.
    pub edges: Vec<(String, usize)>,
    /// `(edge, high-water mark)` of the edges on the initiator, in bytes of rows.
    pub edge_bytes: Vec<(String, usize)>,
    /// Attempts made (1 when the query ran at once).
    pub attempts: u32,
    /// The delays the query waited before each retry (admission refused or join killed).
    pub admission_delays: Vec<Duration>,
}
