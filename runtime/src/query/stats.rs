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
    /// What each operator output, summed over its fragment's instances (EXPLAIN ANALYZE only;
    /// empty otherwise).
    pub profile: Vec<OperatorProfile>,
}

/// What one operator of a query's plan output, over all instances of its fragment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OperatorProfile {
    /// The fragment's id.
    pub fragment: u32,
    /// The operator's number in its fragment: a pre-order walk of the fragment's plan (see
    /// [`QueryPlan::explain_analyzed`](weir_planner::QueryPlan::explain_analyzed)).
    pub operator: u32,
    /// Rows it output.
    pub rows: u64,
    /// Batches it output.
    pub batches: u64,
    /// The time its kernel spent working, summed over the instances (which run at once on
    /// their nodes, so the sum may pass the query's time); zero for an operator without a
    /// kernel (an exchange's receiving end).
    pub busy: Duration,
}
