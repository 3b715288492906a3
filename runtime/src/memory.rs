//! A node's memory pool: every reservation made on a node is accounted here against the
//! node's budget, and the memory circuit breaker's state lives here.
//!
//! In [`JoinMode::Guarded`] growth past the budget is refused, crossing `limit` opens the
//! breaker (and wakes the node's supervisor), and falling below `reset` closes it. In
//! [`JoinMode::Legacy`] nothing is refused: going over the budget runs the node out of
//! memory.

use crate::breaker::{BreakerConfig, JoinMode};
use actix::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use weir_operators::{Error as OpError, MemoryPool};

/// Default per-node budget.
pub const DEFAULT_NODE_MEMORY: usize = 512 * 1024 * 1024;

/// Sent to the supervisor when the breaker may need attention.
#[derive(Message, Debug, Clone, Copy)]
#[rtype(result = "()")]
pub struct CheckMemory;

/// Sent to the node when it ran out of memory.
#[derive(Message, Debug, Clone, Copy)]
#[rtype(result = "()")]
pub struct OutOfMemory;

/// Accounted memory of one node, with its breaker.
#[derive(Debug)]
pub struct NodePool {
    name: String,
    budget: usize,
    limit: usize,
    reset: usize,
    mode: JoinMode,
    used: AtomicUsize,
    peak: AtomicUsize,
    open: AtomicBool,
    crashed: AtomicBool,
    check_pending: AtomicBool,
    join_estimate: AtomicUsize,
    admitting: AtomicUsize,
    trips: AtomicU64,
    supervisor: OnceLock<Recipient<CheckMemory>>,
    node: OnceLock<Recipient<OutOfMemory>>,
}

impl NodePool {
    /// A pool for node `name` with `budget` bytes.
    pub fn new(name: String, budget: usize, mode: JoinMode, breaker: &BreakerConfig) -> Arc<Self> {
        Arc::new(NodePool {
            name,
            budget,
            limit: (budget as f64 * breaker.limit) as usize,
            reset: (budget as f64 * breaker.reset) as usize,
            mode,
            used: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            open: AtomicBool::new(false),
            crashed: AtomicBool::new(false),
            check_pending: AtomicBool::new(false),
            join_estimate: AtomicUsize::new(0),
            admitting: AtomicUsize::new(0),
            trips: AtomicU64::new(0),
            supervisor: OnceLock::new(),
            node: OnceLock::new(),
        })
    }

    /// Connects the pool to its node's supervisor and node actor.
    pub fn connect(&self, supervisor: Recipient<CheckMemory>, node: Recipient<OutOfMemory>) {
        let _ = self.supervisor.set(supervisor);
        let _ = self.node.set(node);
    }

    /// The budget in bytes.
    pub fn budget(&self) -> usize {
        self.budget
    }

    /// Bytes at which the breaker opens.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes accounted now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::SeqCst)
    }

    /// Most bytes accounted at once.
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::SeqCst)
    }

    /// Whether the breaker is open.
    pub fn is_open(&self) -> bool {
        self.open.load(Ordering::SeqCst)
    }

    /// Times the breaker opened.
    pub fn trips(&self) -> u64 {
        self.trips.load(Ordering::Relaxed)
    }

    /// The join mode.
    pub fn mode(&self) -> JoinMode {
        self.mode
    }

    /// Whether the node ran out of memory and has not been restarted.
    pub fn crashed(&self) -> bool {
        self.crashed.load(Ordering::SeqCst)
    }

    /// Clears the out-of-memory state (the node restarted).
    pub fn restarted(&self) {
        self.crashed.store(false, Ordering::SeqCst);
        self.evaluate();
    }

    /// A hash join on this node finished holding at most `bytes`: keeps a moving average.
    pub fn record_join(&self, bytes: usize) {
        let _ = self
            .join_estimate
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |old| {
                Some(if old == 0 {
                    bytes
                } else {
                    (old * 7 + bytes) / 8
                })
            });
    }

    /// Whether one more hash join (of the size joins have had here lately) fits under the
    /// breaker's limit. Admission asks this so that the breaker rarely has to trip.
    pub fn has_room_for_join(&self) -> bool {
        let estimate = self.join_estimate.load(Ordering::Relaxed);
        // Joins admitted a moment ago have not reserved their build sides yet: count them.
        let coming = self.admitting.load(Ordering::Relaxed) + 1;
        self.mode == JoinMode::Legacy || self.used() + coming * estimate < self.limit
    }

    /// A query with a join was admitted on this node; its build side is coming.
    pub fn join_admitted(&self) {
        self.admitting.fetch_add(1, Ordering::Relaxed);
    }

    /// An admitted join has had time to reserve its build side (or its query ended).
    pub fn join_settled(&self) {
        let _ = self
            .admitting
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
    }

    /// The supervisor has looked at the pool (see [`CheckMemory`]).
    pub fn checked(&self) {
        self.check_pending.store(false, Ordering::SeqCst);
    }

    /// Re-evaluates the breaker: opens it above `limit`, closes it below `reset`. Returns
    /// whether it is open.
    pub fn evaluate(&self) -> bool {
        if self.mode == JoinMode::Legacy {
            return false;
        }
        let used = self.used();
        if used >= self.limit {
            if !self.open.swap(true, Ordering::SeqCst) {
                self.trips.fetch_add(1, Ordering::Relaxed);
            }
        } else if used < self.reset {
            self.open.store(false, Ordering::SeqCst);
        }
        self.is_open()
    }

    fn add(&self, bytes: usize) -> usize {
        let now = self.used.fetch_add(bytes, Ordering::SeqCst) + bytes;
        self.peak.fetch_max(now, Ordering::SeqCst);
        now
    }

    fn after_growth(&self, now: usize) {
        match self.mode {
            JoinMode::Legacy => {
                if now > self.budget && !self.crashed.swap(true, Ordering::SeqCst) {
                    if let Some(n) = self.node.get() {
                        n.do_send(OutOfMemory);
                    }
                }
            }
            JoinMode::Guarded => {
                if now >= self.limit {
                    self.evaluate();
                    // Wake the supervisor, once until it has looked.
                    if !self.check_pending.swap(true, Ordering::SeqCst) {
                        if let Some(s) = self.supervisor.get() {
                            s.do_send(CheckMemory);
                        }
                    }
                }
            }
        }
    }
}

impl MemoryPool for NodePool {
    fn grow(&self, bytes: usize) -> weir_operators::Result<()> {
        if self.mode == JoinMode::Guarded {
            let now = self.add(bytes);
            if now > self.budget {
                self.used.fetch_sub(bytes, Ordering::SeqCst);
                self.evaluate();
                return Err(OpError::Memory(format!(
                    "{}: memory budget of {} bytes exceeded",
                    self.name, self.budget
                )));
            }
            self.after_growth(now);
        } else {
            let now = self.add(bytes);
            self.after_growth(now);
        }
        Ok(())
    }

    fn shrink(&self, bytes: usize) {
        let now = self.used.fetch_sub(bytes, Ordering::SeqCst) - bytes;
        if self.mode == JoinMode::Guarded && now < self.reset && self.is_open() {
            self.open.store(false, Ordering::SeqCst);
        }
    }

    fn force_grow(&self, bytes: usize) -> bool {
        let now = self.add(bytes);
        self.after_growth(now);
        true
    }
}
