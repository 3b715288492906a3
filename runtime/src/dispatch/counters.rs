//! What a node counts of the messages it handled.

use std::sync::atomic::AtomicU64;

/// Counters a node keeps about the messages it handled.
#[derive(Debug, Default)]
pub struct NodeCounters {
    /// Messages that failed to decode.
    pub decode_errors: AtomicU64,
    /// Start requests whose plan came from the node's fragment cache.
    pub fragment_cache_hits: AtomicU64,
    /// Start requests that named a plan the node did not hold.
    pub fragment_cache_misses: AtomicU64,
    /// Messages about a query that neither runs nor lately ended here (confused or forged
    /// senders): dropped, logged and counted.
    pub unknown_query_messages: AtomicU64,
    /// Writes prepared here whose coordinator neither committed nor aborted them in time:
    /// given up, and their held rows dropped.
    pub expired_writes: AtomicU64,
}
