//! Message and byte counters, by message kind, in total and per query.
//!
//! They live above the transport boundary: [`Network`](crate::wire::network::Network) counts a message when
//! it is encoded, before any carrier sees it, so the simulated and the TCP carrier are
//! counted alike.

use crate::wire::ids::QueryId;
use crate::wire::messages::MessageKind;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

/// Message and byte counters, by message kind.
#[derive(Debug, Default)]
pub struct MessageCounters {
    counts: [AtomicU64; MessageKind::ALL.len()],
    bytes: AtomicU64,
}

impl MessageCounters {
    /// Counts one message of `kind`, `bytes` long once encoded.
    pub fn record(&self, kind: MessageKind, bytes: usize) {
        let i = MessageKind::ALL
            .iter()
            .position(|k| *k == kind)
            .unwrap_or(0);
        self.counts[i].fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// A snapshot of the counters.
    pub fn snapshot(&self) -> MessageStats {
        let mut by_kind = BTreeMap::new();
        let mut total = 0;
        for (i, kind) in MessageKind::ALL.iter().enumerate() {
            let n = self.counts[i].load(Ordering::Relaxed);
            by_kind.insert(kind.name().to_string(), n);
            total += n;
        }
        MessageStats {
            by_kind,
            total,
            bytes: self.bytes.load(Ordering::Relaxed),
        }
    }
}

/// Messages that crossed nodes, by type, with their total and bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MessageStats {
    /// Count per message type name (every type present, zeros included).
    pub by_kind: BTreeMap<String, u64>,
    /// Total messages.
    pub total: u64,
    /// Total encoded bytes.
    pub bytes: u64,
}

impl MessageStats {
    /// Count of one kind.
    pub fn count(&self, kind: MessageKind) -> u64 {
        self.by_kind.get(kind.name()).copied().unwrap_or(0)
    }
}

/// The totals and the counters of the queries counted separately.
#[derive(Debug, Default)]
pub(super) struct Counters {
    totals: MessageCounters,
    per_query: RwLock<HashMap<QueryId, Arc<MessageCounters>>>,
    /// How many queries `per_query` holds: a send reads this, not the lock, when it is 0.
    tracked: AtomicUsize,
}

impl Counters {
    /// Counts a message of `query` in the totals and, if tracked, in the query's counters.
    pub(super) fn record(&self, query: QueryId, kind: MessageKind, bytes: usize) {
        self.totals.record(kind, bytes);
        if self.tracked.load(Ordering::Acquire) == 0 {
            return;
        }
        let per_query = self.per_query.read().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = per_query.get(&query) {
            c.record(kind, bytes);
        }
    }

    /// Counts `query`'s messages in `counters` from now on.
    pub(super) fn track(&self, query: QueryId, counters: Arc<MessageCounters>) {
        let mut per_query = self.per_query.write().unwrap_or_else(|e| e.into_inner());
        per_query.insert(query, counters);
        self.tracked.store(per_query.len(), Ordering::Release);
    }

    /// Stops counting `query`'s messages separately.
    pub(super) fn untrack(&self, query: QueryId) {
        let mut per_query = self.per_query.write().unwrap_or_else(|e| e.into_inner());
        per_query.remove(&query);
        self.tracked.store(per_query.len(), Ordering::Release);
    }

    /// The totals so far.
    pub(super) fn totals(&self) -> MessageStats {
        self.totals.snapshot()
    }
}
