//! What a cluster reports about itself: per-node figures, totals, and health.

use super::Cluster;
use crate::memory::breaker::{BreakerTotals, Health};
use crate::node::state::NodeShared;
use crate::wire::counters::MessageStats;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use weir_operators::spill::SpillCounts;
use weir_operators::table_store::TableStore;

/// One node's figures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeStats {
    /// Display name.
    pub name: String,
    /// Whether it stores data (the client node does not).
    pub is_data: bool,
    /// Whether it is up.
    pub up: bool,
    /// Actors alive on it.
    pub live_actors: usize,
    /// Bytes accounted now.
    pub memory_reserved: usize,
    /// Most bytes accounted at once.
    pub memory_peak: usize,
    /// Budget.
    pub memory_budget: usize,
    /// Rows stored.
    pub rows_stored: usize,
    /// Highest number of batches ever queued on one edge (or exchange channel) of this node.
    pub edge_high_water: usize,
    /// Messages that failed to decode.
    pub decode_errors: u64,
    /// Start requests served from the node's fragment cache.
    pub fragment_cache_hits: u64,
    /// Start requests that named a fragment the node did not hold.
    pub fragment_cache_misses: u64,
    /// Messages about a query unknown here (neither running nor lately ended), dropped.
    pub unknown_query_messages: u64,
    /// Writes prepared on the node and given up because their coordinator never decided them
    /// (see [`crate::ClusterBuilder::prepared_write_ttl`]).
    pub expired_writes: u64,
    /// Whether the node's memory circuit breaker is open.
    pub breaker_open: bool,
    /// Times the breaker opened.
    pub trips: u64,
    /// Bytes the queries admitted on it are expected to build (the admission queue's estimate
    /// of their hash joins, from table sizes and what joins held here before).
    pub admitted_memory: usize,
    /// Whether the node ran out of memory (and was not restarted).
    pub out_of_memory: bool,
    /// Times an operator on the node spilled to disk because it was refused memory.
    pub spills: u64,
    /// Bytes written to spill files since the start (compressed).
    pub spill_bytes_written: u64,
    /// Bytes in spill files now (0 when no query runs).
    pub spill_bytes: u64,
    /// Rows its scans of external tables read from files (before filters), since the start.
    pub external_rows_read: u64,
    /// Parquet row groups its scans of external tables read, since the start.
    pub external_row_groups_read: u64,
    /// Parquet row groups its scans of external tables skipped by their statistics, since
    /// the start.
    pub external_row_groups_skipped: u64,
    /// Rows its exchange senders dropped, since the start, because a hash join's filter of
    /// its build keys ruled them out ([`crate::ClusterBuilder::join_filters`]).
    pub join_filtered_rows: u64,
    /// Whether the node runs in another process ([`crate::ClusterBuilder::connect`]): `up`
    /// follows its connection; its actors, memory, rows and counters are not seen from here
    /// and read 0 (`memory_budget` is this client's estimate, the builder's `node_memory`).
    pub remote: bool,
}

/// A snapshot of the cluster's figures.
#[derive(Debug, Clone)]
pub struct ClusterStats {
    /// Per node (data nodes first, then the client).
    pub nodes: Vec<NodeStats>,
    /// Messages that crossed nodes since the start.
    pub messages: MessageStats,
    /// Plan cache hits.
    pub plan_cache_hits: u64,
    /// Plan cache misses.
    pub plan_cache_misses: u64,
    /// Statements parsed.
    pub parses: u64,
    /// Queries started.
    pub queries_started: u64,
    /// Highest edge high-water mark seen in any finished query.
    pub max_edge_high_water: usize,
    /// Memory circuit breaker totals.
    pub breaker: BreakerTotals,
    /// Cluster health.
    pub health: Health,
}

impl ClusterStats {
    /// Live actors over all nodes.
    pub fn live_actors(&self) -> usize {
        self.nodes.iter().map(|n| n.live_actors).sum()
    }

    /// Accounted bytes over all nodes.
    pub fn memory_reserved(&self) -> usize {
        self.nodes.iter().map(|n| n.memory_reserved).sum()
    }
}

/// What node `n` spilled so far.
fn spill_counts(n: &NodeShared) -> SpillCounts {
    n.spill
        .as_ref()
        .map(|s| s.stats().snapshot())
        .unwrap_or_default()
}

impl Cluster {
    /// A snapshot of the cluster's figures.
    pub fn stats(&self) -> ClusterStats {
        let data = self.inner.config.nodes;
        let client = self.inner.client as usize;
        let remote = self.inner.remote.is_some();
        let nodes = self
            .inner
            .nodes
            .iter()
            .zip(&self.inner.counters)
            .enumerate()
            .filter(|(i, _)| *i < data || *i == client)
            .map(|(i, (n, c))| (i, n, c, spill_counts(n)))
            .map(|(i, n, c, spill)| NodeStats {
                remote: remote && i < data,
                name: n.name.clone(),
                is_data: n.is_data,
                up: n.up.load(Ordering::SeqCst),
                live_actors: n.live(),
                memory_reserved: n.pool.used(),
                memory_peak: n.pool.peak(),
                memory_budget: n.pool.budget(),
                rows_stored: n
                    .storage
                    .read()
                    .map(|s| s.tables.values().map(TableStore::num_rows).sum())
                    .unwrap_or(0),
                edge_high_water: n.edge_high_water.load(Ordering::Relaxed),
                decode_errors: c.decode_errors.load(Ordering::Relaxed),
                fragment_cache_hits: c.fragment_cache_hits.load(Ordering::Relaxed),
                fragment_cache_misses: c.fragment_cache_misses.load(Ordering::Relaxed),
                unknown_query_messages: c.unknown_query_messages.load(Ordering::Relaxed),
                expired_writes: c.expired_writes.load(Ordering::Relaxed),
                breaker_open: n.pool.is_open(),
                trips: n.pool.trips(),
                admitted_memory: self.inner.admission.committed(n.id),
                out_of_memory: n.pool.crashed(),
                spills: spill.spills,
                spill_bytes_written: spill.bytes_written,
                spill_bytes: n.spill.as_ref().map_or(0, |s| s.used()),
                external_rows_read: n.external.rows_read.load(Ordering::Relaxed),
                external_row_groups_read: n.external.row_groups_read.load(Ordering::Relaxed),
                external_row_groups_skipped: n.external.row_groups_skipped.load(Ordering::Relaxed),
                join_filtered_rows: n.filtered_rows.load(Ordering::Relaxed),
            })
            .collect();
        ClusterStats {
            nodes,
            messages: self.inner.network.totals(),
            plan_cache_hits: self.inner.plans.hits(),
            plan_cache_misses: self.inner.plans.misses(),
            parses: self.inner.plans.parses(),
            queries_started: self.inner.next_query.load(Ordering::Relaxed) - 1,
            max_edge_high_water: self.inner.max_high_water.load(Ordering::Relaxed),
            breaker: self.inner.breaker.totals(),
            health: self.health(),
        }
    }

    /// Starts every node's memory peak (`NodeStats::memory_peak`) again from what it holds
    /// now, so that the next peaks are those of what runs from here on (a benchmark measures
    /// each query's).
    pub fn reset_memory_peaks(&self) {
        for n in self.inner.nodes.iter() {
            n.pool.reset_peak();
        }
    }

    /// Green when every node is up and every copy current; yellow when a data node is down
    /// (or a copy stale: a resync failed, or has not run yet) but every partition is still
    /// readable; red when some partition is not.
    pub fn health(&self) -> Health {
        let data = self.inner.config.nodes;
        let up: Vec<bool> = self.inner.nodes[..data]
            .iter()
            .map(|n| n.up.load(Ordering::SeqCst))
            .collect();
        // The catalog before the book, in the order writers and restarts take them.
        let tables = self.tables();
        let book = self
            .inner
            .replicas
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if up.iter().all(|u| *u) && book.stale_copies().is_empty() {
            return Health::Green;
        }
        let readable = tables.iter().all(|t| {
            let key = t.name.to_lowercase();
            self.inner
                .copies(t.partitions)
                .iter()
                .enumerate()
                .all(|(p, c)| {
                    c.iter()
                        .any(|&n| up[n as usize] && !book.is_stale(&key, p as u32, n))
                })
        });
        if readable {
            Health::Yellow
        } else {
            Health::Red
        }
    }

    /// The copies this client counts stale (behind their partition's committed version: they
    /// serve no reads until refreshed), as (table, partition, node), sorted: what makes the
    /// health yellow, or red when every copy of a partition is among them or down.
    pub fn stale_copies(&self) -> Vec<(String, u32, usize)> {
        let book = self
            .inner
            .replicas
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let mut copies: Vec<(String, u32, usize)> = book
            .stale_copies()
            .iter()
            .flat_map(|(t, s)| s.iter().map(move |&(p, n)| (t.clone(), p, n as usize)))
            .collect();
        copies.sort();
        copies
    }

    /// Per node of this process: (protocol messages its actor handled, messages handed to it).
    fn inbox_counts(&self) -> Vec<(u64, u64)> {
        self.inner.nodes.iter().map(|n| n.inbox.read()).collect()
    }

    /// Waits until no query's actors are alive, no memory is accounted and no node has a
    /// protocol message waiting in its mailbox, or `timeout` passes. Returns whether the
    /// cluster became idle.
    pub fn wait_idle(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            // Messages in a node's mailbox may yet start actors (a query's start arriving after
            // its cancel): idle is no message waiting, before and after the figures are read.
            let before = self.inbox_counts();
            let s = self.stats();
            let after = self.inbox_counts();
            let waiting = before.iter().any(|(handled, sent)| handled != sent);
            if !waiting
                && before == after
                && s.live_actors() == self.baseline_actors()
                && s.memory_reserved() == 0
            {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}
