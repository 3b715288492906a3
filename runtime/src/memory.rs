//! A node's memory pool: every reservation made on a node is accounted here against the
//! node's budget.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use weir_operators::{Error as OpError, MemoryPool};

/// Default per-node budget.
pub const DEFAULT_NODE_MEMORY: usize = 512 * 1024 * 1024;

/// Accounted memory of one node.
#[derive(Debug)]
pub struct NodePool {
    name: String,
    budget: usize,
    used: AtomicUsize,
    peak: AtomicUsize,
}

impl NodePool {
    /// A pool for node `name` with `budget` bytes.
    pub fn new(name: String, budget: usize) -> Arc<Self> {
        Arc::new(NodePool {
            name,
            budget,
            used: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
        })
    }

    /// The budget in bytes.
    pub fn budget(&self) -> usize {
        self.budget
    }

    /// Bytes accounted now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::SeqCst)
    }

    /// Most bytes accounted at once.
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::SeqCst)
    }
}

impl MemoryPool for NodePool {
    fn grow(&self, bytes: usize) -> weir_operators::Result<()> {
        let now = self.used.fetch_add(bytes, Ordering::SeqCst) + bytes;
        if now > self.budget {
            self.used.fetch_sub(bytes, Ordering::SeqCst);
            return Err(OpError::Memory(format!(
                "{}: memory budget of {} bytes exceeded",
                self.name, self.budget
            )));
        }
        self.peak.fetch_max(now, Ordering::SeqCst);
        Ok(())
    }

    fn shrink(&self, bytes: usize) {
        self.used.fetch_sub(bytes, Ordering::SeqCst);
    }
}
