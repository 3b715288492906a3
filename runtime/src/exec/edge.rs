//! What an edge between a producer and a consumer may hold and what it holds: its window of
//! batches and bytes, the credits a producer may still spend on it, and its counters (see
//! [`crate::exec::flow`] for how credits flow).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Default bytes of the byte window per batch of the batch window: a window of 4 batches
/// lets 4 MiB be in flight on an edge.
pub const DEFAULT_BYTES_PER_BATCH: usize = 1 << 20;

/// How much an edge may hold: batches, and bytes of their rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Batches.
    pub batches: usize,
    /// Bytes ([`Batch::data_size`](weir_operators::Batch::data_size)).
    pub bytes: usize,
}

impl Window {
    /// A window of `batches` batches and `bytes` bytes (each at least 1).
    pub fn new(batches: usize, bytes: usize) -> Self {
        Window {
            batches: batches.max(1),
            bytes: bytes.max(1),
        }
    }
}

/// What a producer may still send on one edge, local or across nodes: the one place where
/// credits are counted. A batch needs a batch credit and its bytes in byte credit, except
/// that when nothing at all is in flight a batch larger than the whole byte window goes,
/// alone (so no batch waits for ever).
#[derive(Debug, Clone, Copy)]
pub struct Credits {
    window: Window,
    batches: usize,
    bytes: i64,
}

impl Credits {
    /// No credit yet: the consumer grants it when it wants the input.
    pub fn none(window: Window) -> Self {
        Credits {
            window,
            batches: 0,
            bytes: 0,
        }
    }

    /// The whole window at once (an exchange channel starts so).
    pub fn full(window: Window) -> Self {
        Credits {
            window,
            batches: window.batches,
            bytes: window.bytes as i64,
        }
    }

    /// Whether some credit of both kinds is left.
    pub fn any(&self) -> bool {
        self.batches > 0 && self.bytes > 0
    }

    /// Whether a batch of `bytes` may go now.
    pub fn allow(&self, bytes: usize) -> bool {
        let idle = self.batches >= self.window.batches && self.bytes >= self.window.bytes as i64;
        self.batches > 0 && (bytes as i64 <= self.bytes || idle)
    }

    /// A batch of `bytes` went.
    pub fn spend(&mut self, bytes: usize) {
        self.batches = self.batches.saturating_sub(1);
        self.bytes -= bytes as i64;
    }

    /// The consumer gave back `batches` and `bytes`.
    pub fn grant(&mut self, batches: usize, bytes: usize) {
        self.batches += batches;
        self.bytes += bytes as i64;
    }
}

/// Counters of one edge: batches and bytes queued now, the most ever queued, and, for EXPLAIN
/// ANALYZE, what its producer did: the rows and batches sent in all, and the time the
/// producer's kernel spent making them.
#[derive(Debug, Default)]
pub struct EdgeStat {
    /// `producer -> consumer` label.
    pub label: String,
    queued: AtomicUsize,
    high_water: AtomicUsize,
    queued_bytes: AtomicUsize,
    high_water_bytes: AtomicUsize,
    rows: AtomicU64,
    batches: AtomicU64,
    busy_nanos: AtomicU64,
}

impl EdgeStat {
    /// A new edge.
    pub fn new(label: String) -> Arc<Self> {
        Arc::new(EdgeStat {
            label,
            ..Default::default()
        })
    }

    /// A batch of `rows` rows was sent on the edge (counted once, whether or not it is then
    /// queued).
    pub fn sent(&self, rows: usize) {
        self.rows.fetch_add(rows as u64, Ordering::Relaxed);
        self.batches.fetch_add(1, Ordering::Relaxed);
    }

    /// Rows and batches sent on the edge so far.
    pub fn sent_so_far(&self) -> (u64, u64) {
        (
            self.rows.load(Ordering::Relaxed),
            self.batches.load(Ordering::Relaxed),
        )
    }

    /// The producer's kernel worked for `took` more.
    pub fn busy(&self, took: Duration) {
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        self.busy_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    /// How long the producer's kernel has worked so far.
    pub fn busy_so_far(&self) -> Duration {
        Duration::from_nanos(self.busy_nanos.load(Ordering::Relaxed))
    }

    /// A batch of `bytes` bytes was sent on the edge.
    pub fn enqueued(&self, bytes: usize) {
        let now = self.queued.fetch_add(1, Ordering::SeqCst) + 1;
        self.high_water.fetch_max(now, Ordering::SeqCst);
        let now = self.queued_bytes.fetch_add(bytes, Ordering::SeqCst) + bytes;
        self.high_water_bytes.fetch_max(now, Ordering::SeqCst);
    }

    /// A batch of `bytes` bytes was taken off the edge by its consumer.
    pub fn dequeued(&self, bytes: usize) {
        let _ = self
            .queued
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |q| q.checked_sub(1));
        let _ = self
            .queued_bytes
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |q| {
                Some(q.saturating_sub(bytes))
            });
    }

    /// Most batches ever queued at once.
    pub fn high_water(&self) -> usize {
        self.high_water.load(Ordering::SeqCst)
    }

    /// Most bytes ever queued at once.
    pub fn high_water_bytes(&self) -> usize {
        self.high_water_bytes.load(Ordering::SeqCst)
    }
}

/// The edges of one query, for stats.
#[derive(Debug, Default)]
pub struct EdgeRegistry {
    edges: Mutex<Vec<Arc<EdgeStat>>>,
}

impl EdgeRegistry {
    /// Creates and registers an edge.
    pub fn edge(&self, label: String) -> Arc<EdgeStat> {
        let e = EdgeStat::new(label);
        self.edges
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(e.clone());
        e
    }

    /// `(label, high-water mark)` of every edge, in batches.
    pub fn high_waters(&self) -> Vec<(String, usize)> {
        self.edges
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|e| (e.label.clone(), e.high_water()))
            .collect()
    }

    /// `(label, high-water mark)` of every edge, in bytes.
    pub fn high_water_bytes(&self) -> Vec<(String, usize)> {
        self.edges
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|e| (e.label.clone(), e.high_water_bytes()))
            .collect()
    }
}
