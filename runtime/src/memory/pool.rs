//! A node's memory pool: every reservation made on a node is accounted here against the
//! node's budget, and the memory circuit breaker's state lives here.
//!
//! In [`JoinMode::Guarded`] growth past the budget is refused (a refused grow changes neither
//! `used` nor `peak`), crossing `limit` opens the breaker (and wakes the node's supervisor),
//! and falling below `reset` closes it. Batches in flight are accounted like everything else:
//! a producer whose next batch cannot be accounted waits in the pool's queue of waiters
//! ([`MemoryWait`]) and is woken ([`MemoryFreed`]) when memory is released, in the order the
//! waiters came. The one growth that is never refused is [`MemoryPool::force_grow`], used only
//! for memory pressure from outside weir (`Cluster::hold_memory`): it alone can take a
//! Guarded node past its budget. In [`JoinMode::Legacy`] nothing is refused and nobody waits:
//! going over the budget runs the node out of memory.

use crate::memory::breaker::{BreakerConfig, JoinMode};
use crate::memory::messages::{CheckMemory, MemoryFreed};
use crate::wire::ids::NodeId;
use actix::prelude::*;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use weir_operators::{Error as OpError, MemoryPool, Reservation};

/// Default per-node budget.
pub const DEFAULT_NODE_MEMORY: usize = 512 * 1024 * 1024;

/// What a pool calls when its node runs out of memory (Legacy mode): the node crashes.
pub type OnOutOfMemory = Box<dyn Fn() + Send + Sync>;

/// The hook [`NodePool::connect`] sets.
struct OutOfMemoryHook(OnOutOfMemory);

impl std::fmt::Debug for OutOfMemoryHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OutOfMemoryHook")
    }
}

/// How a waiting producer is woken.
pub trait Wake: Send + Sync {
    /// Memory was released: try again.
    fn wake(&self);
    /// Whether the producer still exists (a stopped one is dropped from the queue).
    fn alive(&self) -> bool {
        true
    }
}

impl Wake for Recipient<MemoryFreed> {
    fn wake(&self) {
        self.do_send(MemoryFreed);
    }

    fn alive(&self) -> bool {
        self.connected()
    }
}

/// The hook told when memory comes back (see [`NodePool::on_release`]).
struct Released(Arc<dyn Wake>);

impl std::fmt::Debug for Released {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Released")
    }
}

/// A producer in a pool's queue of waiters.
struct Waiter {
    bytes: usize,
    wake: Arc<dyn Wake>,
}

/// The waiters of a pool, by ticket: the oldest first.
#[derive(Default)]
struct Waiters {
    queue: BTreeMap<u64, Waiter>,
}

impl std::fmt::Debug for Waiters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Waiters")
            .field("waiting", &self.queue.len())
            .finish()
    }
}

/// What [`MemoryWait::reserve`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reserve {
    /// The bytes are accounted.
    Granted,
    /// Refused: the producer is queued and will get [`MemoryFreed`].
    Waiting,
    /// More than the whole budget: it can never be accounted, and waiting would never end.
    TooLarge,
}

/// Folds `bytes` into the moving average `avg` (weight 1/8; the first value as it is).
fn moving_average(avg: &AtomicUsize, bytes: usize) {
    let _ = avg.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |old| {
        Some(if old == 0 {
            bytes
        } else {
            ((old as u128 * 7 + bytes as u128) / 8) as usize
        })
    });
}

/// The pools of the nodes in this process, by node id: a sender reserves room for a batch in
/// its receiver's pool before the batch leaves (see [`crate::exchange`]). A node of another
/// process has none here; its batches are accounted when they arrive.
#[derive(Debug, Default)]
pub struct Pools(RwLock<Vec<Option<Arc<NodePool>>>>);

impl Pools {
    /// Makes node `id`'s pool known.
    pub fn attach(&self, id: NodeId, pool: Arc<NodePool>) {
        let mut pools = self.0.write().unwrap_or_else(|e| e.into_inner());
        if pools.len() <= id as usize {
            pools.resize(id as usize + 1, None);
        }
        pools[id as usize] = Some(pool);
    }

    /// Node `id`'s pool, if it is in this process.
    pub fn get(&self, id: NodeId) -> Option<Arc<NodePool>> {
        let pools = self.0.read().unwrap_or_else(|e| e.into_inner());
        pools.get(id as usize).cloned().flatten()
    }
}

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
    /// Moving average of the build bytes predicted (from table sizes) for joins asked for here.
    join_predicted: AtomicUsize,
    join_held: AtomicUsize,
    trips: AtomicU64,
    released: OnceLock<Released>,
    supervisor: OnceLock<Recipient<CheckMemory>>,
    out_of_memory: OnceLock<OutOfMemoryHook>,
    waiters: Mutex<Waiters>,
    /// Waiters queued, plus producers about to queue (read by `shrink` without the lock).
    waiting: AtomicUsize,
    next_ticket: AtomicU64,
    /// Operators running here whose state can spill ([`SpillingStatePool`]s alive).
    spilling: AtomicUsize,
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
            join_predicted: AtomicUsize::new(0),
            join_held: AtomicUsize::new(0),
            spilling: AtomicUsize::new(0),
            trips: AtomicU64::new(0),
            released: OnceLock::new(),
            supervisor: OnceLock::new(),
            out_of_memory: OnceLock::new(),
            waiters: Mutex::new(Waiters::default()),
            waiting: AtomicUsize::new(0),
            next_ticket: AtomicU64::new(1),
        })
    }

    /// Connects the pool to its node's supervisor, and to what crashes the node when it runs
    /// out of memory.
    pub fn connect(&self, supervisor: Recipient<CheckMemory>, out_of_memory: OnOutOfMemory) {
        let _ = self.supervisor.set(supervisor);
        let _ = self.out_of_memory.set(OutOfMemoryHook(out_of_memory));
    }

    /// The budget in bytes.
    pub fn budget(&self) -> usize {
        self.budget
    }

    /// Bytes at which the breaker opens.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes below which the breaker closes again.
    pub fn reset(&self) -> usize {
        self.reset
    }

    /// Bytes accounted now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::SeqCst)
    }

    /// Most bytes accounted at once.
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::SeqCst)
    }

    /// Starts the peak again from what is accounted now (to measure one query's peak).
    pub fn reset_peak(&self) {
        self.peak.store(self.used(), Ordering::SeqCst);
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
        moving_average(&self.join_estimate, bytes);
    }

    /// A query asks for a hash join here predicted (from table sizes) to build `bytes`: keeps
    /// a moving average of the predictions, to set against what joins really held.
    pub fn record_prediction(&self, bytes: usize) {
        moving_average(&self.join_predicted, bytes);
    }

    /// A join predicted to build `predicted` bytes, corrected by this node's record: scaled by
    /// the running estimate of what joins held here over the average of their predictions.
    /// Before any join finished here, the prediction itself; without predictions to compare
    /// (they were all 0), the running estimate.
    pub fn calibrated(&self, predicted: usize) -> usize {
        let held = self.join_estimate();
        let asked = self.join_predicted.load(Ordering::Relaxed);
        if held == 0 {
            predicted
        } else if asked == 0 {
            held
        } else {
            let scaled = predicted as u128 * held as u128 / asked as u128;
            scaled.min(usize::MAX as u128) as usize
        }
    }

    /// The running estimate of one hash join's build memory on this node (0 before any
    /// join finished here).
    pub fn join_estimate(&self) -> usize {
        self.join_estimate.load(Ordering::Relaxed)
    }

    /// Bytes the running hash joins of this node hold now.
    pub fn join_held(&self) -> usize {
        self.join_held.load(Ordering::Relaxed)
    }

    /// A running hash join's memory went from `old` to `new` bytes.
    pub fn join_resized(&self, old: usize, new: usize) {
        if new > old {
            self.join_held.fetch_add(new - old, Ordering::Relaxed);
        } else if old > new {
            self.join_held.fetch_sub(old - new, Ordering::Relaxed);
        }
    }

    /// A hash join that held `bytes` stopped (its memory is released): memory came back.
    pub fn join_stopped(&self, bytes: usize) {
        self.join_resized(bytes, 0);
        self.notify_released();
    }

    /// `wake` is told whenever memory comes back on this node in a way that may admit a
    /// waiting query: a hash join stopped, or the breaker closed. Set once.
    pub fn on_release(&self, wake: Arc<dyn Wake>) {
        let _ = self.released.set(Released(wake));
    }

    fn notify_released(&self) {
        if let Some(r) = self.released.get() {
            r.0.wake();
        }
    }

    fn close(&self) {
        if self.open.swap(false, Ordering::SeqCst) {
            self.notify_released();
        }
    }

    /// Asks the node's supervisor to look at the pool ([`CheckMemory`]), once until it has
    /// looked.
    pub fn notify_supervisor(&self) {
        if !self.check_pending.swap(true, Ordering::SeqCst) {
            if let Some(s) = self.supervisor.get() {
                s.do_send(CheckMemory);
            }
        }
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
                tracing::debug!(node = %self.name, used, limit = self.limit, "breaker tripped");
            }
        } else if used < self.reset {
            if self.is_open() {
                tracing::debug!(node = %self.name, used, reset = self.reset, "breaker closed");
            }
            self.close();
        }
        self.is_open()
    }

    fn add(&self, bytes: usize) -> usize {
        let now = self.used.fetch_add(bytes, Ordering::SeqCst) + bytes;
        self.peak.fetch_max(now, Ordering::SeqCst);
        now
    }

    /// Adds `bytes` only if the total stays within the budget; a refusal touches nothing.
    fn add_within_budget(&self, bytes: usize) -> Option<usize> {
        let budget = self.budget;
        let before = self
            .used
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
                used.checked_add(bytes).filter(|&now| now <= budget)
            })
            .ok()?;
        let now = before + bytes;
        self.peak.fetch_max(now, Ordering::SeqCst);
        Some(now)
    }

    /// Producers waiting for memory on this pool now.
    pub fn waiters(&self) -> usize {
        self.waiters
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .queue
            .len()
    }

    /// Wakes, oldest first, every waiter whose bytes fit in what is free now (each woken one's
    /// bytes counted as taken); those that do not fit keep their place. Stopped producers
    /// leave the queue.
    fn wake_waiters(&self) {
        let mut woken = Vec::new();
        {
            let mut w = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
            let mut free = self.budget.saturating_sub(self.used());
            w.queue.retain(|_, waiter| {
                if !waiter.wake.alive() {
                    false
                } else if waiter.bytes <= free {
                    free -= waiter.bytes;
                    woken.push(waiter.wake.clone());
                    false
                } else {
                    true
                }
            });
            self.waiting.store(w.queue.len(), Ordering::SeqCst);
        }
        // Outside the lock: a wake-up may drop a message, and with it a reservation.
        for wake in woken {
            wake.wake();
        }
    }

    fn leave(&self, ticket: u64) {
        let mut w = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
        if w.queue.remove(&ticket).is_some() {
            self.waiting.store(w.queue.len(), Ordering::SeqCst);
        }
    }

    fn after_growth(&self, now: usize) {
        match self.mode {
            JoinMode::Legacy => {
                if now > self.budget && !self.crashed.swap(true, Ordering::SeqCst) {
                    if let Some(OutOfMemoryHook(crash)) = self.out_of_memory.get() {
                        crash();
                    }
                }
            }
            JoinMode::Guarded => {
                if now >= self.limit {
                    self.evaluate();
                    self.notify_supervisor();
                }
            }
        }
    }
}

impl MemoryPool for NodePool {
    fn grow(&self, bytes: usize) -> weir_operators::Result<()> {
        let now = if self.mode == JoinMode::Guarded {
            // Compare and swap: a refused grow never touches `used` or `peak`.
            let Some(now) = self.add_within_budget(bytes) else {
                self.evaluate();
                return Err(OpError::Memory(format!(
                    "{}: memory budget of {} bytes exceeded",
                    self.name, self.budget
                )));
            };
            now
        } else {
            self.add(bytes)
        };
        self.after_growth(now);
        Ok(())
    }

    fn shrink(&self, bytes: usize) {
        let now = self.used.fetch_sub(bytes, Ordering::SeqCst) - bytes;
        if self.mode == JoinMode::Guarded && now < self.reset && self.is_open() {
            self.close();
        }
        if self.waiting.load(Ordering::SeqCst) > 0 {
            self.wake_waiters();
        }
    }

    /// Never refused, in either mode: only for memory held outside weir
    /// (`Cluster::hold_memory`), the one thing that can take a Guarded node past its budget.
    fn force_grow(&self, bytes: usize) -> bool {
        let now = self.add(bytes);
        self.after_growth(now);
        true
    }
}

/// The pool an operator that can spill takes its state from: the node's pool, with a fair
/// share for each such operator under pressure (as DataFusion's `FairSpillPool`). Growth is
/// refused past the breaker's limit rather than past the budget, and, once the node is above
/// its reset level, past the operator's share: the limit divided among the operators that can
/// spill running on the node. Such an operator so spills before its node's breaker opens, two
/// of them in a pipeline (an aggregation feeding a sort) do not starve each other, nothing
/// spills while the node has room, and the room above the limit stays for batches in flight
/// (among them its own output, which it could otherwise wait for forever while it holds the
/// memory). The partitions' operators of a spilled join or aggregation share their parent's.
#[derive(Debug)]
pub struct SpillingStatePool {
    pool: Arc<NodePool>,
    /// Bytes this operator holds.
    held: AtomicUsize,
}

impl SpillingStatePool {
    /// The state pool of one more operator that can spill on `pool`'s node.
    pub fn new(pool: Arc<NodePool>) -> Arc<Self> {
        pool.spilling.fetch_add(1, Ordering::SeqCst);
        Arc::new(SpillingStatePool {
            pool,
            held: AtomicUsize::new(0),
        })
    }

    /// The most this operator may hold now.
    fn share(&self) -> usize {
        self.pool.limit / self.pool.spilling.load(Ordering::SeqCst).max(1)
    }
}

impl Drop for SpillingStatePool {
    fn drop(&mut self) {
        self.pool.spilling.fetch_sub(1, Ordering::SeqCst);
    }
}

impl MemoryPool for SpillingStatePool {
    fn grow(&self, bytes: usize) -> weir_operators::Result<()> {
        let pool = &self.pool;
        let share = self.share();
        let held = self.held.load(Ordering::SeqCst);
        let after = pool.used().saturating_add(bytes);
        let pressed = after > pool.reset && held.saturating_add(bytes) > share;
        if pressed || after > pool.limit {
            return Err(OpError::Memory(format!(
                "{}: an operator's share of {share} bytes (of the breaker's limit of {} bytes) \
                 is held",
                pool.name, pool.limit
            )));
        }
        pool.grow(bytes)?;
        self.held.fetch_add(bytes, Ordering::SeqCst);
        Ok(())
    }

    fn shrink(&self, bytes: usize) {
        self.held.fetch_sub(bytes, Ordering::SeqCst);
        self.pool.shrink(bytes);
    }
}

/// A producer's place in a pool's queue of waiters, for the batch it holds. RAII: dropped (the
/// producer stopped), it leaves the queue. While it waits it keeps its ticket, so that a
/// producer woken but beaten to the memory keeps its place at the front.
pub struct MemoryWait {
    pool: Arc<NodePool>,
    ticket: Option<u64>,
}

impl std::fmt::Debug for MemoryWait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryWait")
            .field("pool", &self.pool.name)
            .field("ticket", &self.ticket)
            .finish()
    }
}

impl MemoryWait {
    /// Not waiting yet, on `pool`.
    pub fn new(pool: Arc<NodePool>) -> Self {
        MemoryWait { pool, ticket: None }
    }

    /// The pool.
    pub fn pool(&self) -> &Arc<NodePool> {
        &self.pool
    }

    /// An empty reservation against the pool.
    pub fn reservation(&self) -> Reservation {
        Reservation::new(self.pool.clone())
    }

    /// Whether the producer is queued (or was woken and has not tried again yet).
    pub fn is_waiting(&self) -> bool {
        self.ticket.is_some()
    }

    /// Grows `mem` (a reservation against this pool) by `bytes`, or queues the producer, who
    /// gets [`MemoryFreed`] through `wake` once that many bytes are free. In Legacy mode
    /// nothing is refused (and the node may run out of memory).
    pub fn reserve(
        &mut self,
        mem: &mut Reservation,
        bytes: usize,
        wake: &Arc<dyn Wake>,
    ) -> Reserve {
        let pool = &self.pool;
        debug_assert!(mem.same_pool(&(pool.clone() as Arc<dyn MemoryPool>)));
        if bytes == 0 || pool.mode == JoinMode::Legacy {
            mem.force_grow(bytes);
            self.done();
            return Reserve::Granted;
        }
        if mem.size().saturating_add(bytes) > pool.budget {
            self.done();
            return Reserve::TooLarge;
        }
        // Nobody waits and there is room: no need for the queue's lock (a refusal goes the
        // slow way below, which tries again once announced, so no wake-up is lost).
        if self.ticket.is_none()
            && pool.waiting.load(Ordering::SeqCst) == 0
            && mem.try_grow(bytes).is_ok()
        {
            return Reserve::Granted;
        }
        let mut w = pool.waiters.lock().unwrap_or_else(|e| e.into_inner());
        // Announced before trying, so that a shrink racing with this attempt either frees
        // memory the attempt sees or finds the producer queued (no lost wake-up).
        pool.waiting.fetch_add(1, Ordering::SeqCst);
        let granted = mem.try_grow(bytes).is_ok();
        match (granted, self.ticket) {
            (true, Some(t)) => {
                w.queue.remove(&t);
                self.ticket = None;
            }
            (true, None) => {}
            (false, ticket) => {
                let t = ticket.unwrap_or_else(|| pool.next_ticket.fetch_add(1, Ordering::Relaxed));
                self.ticket = Some(t);
                w.queue.insert(
                    t,
                    Waiter {
                        bytes,
                        wake: wake.clone(),
                    },
                );
            }
        }
        pool.waiting.store(w.queue.len(), Ordering::SeqCst);
        if granted {
            Reserve::Granted
        } else {
            Reserve::Waiting
        }
    }

    /// Leaves the queue (the batch was accounted elsewhere, or dropped).
    pub fn done(&mut self) {
        if let Some(t) = self.ticket.take() {
            self.pool.leave(t);
        }
    }
}

impl Drop for MemoryWait {
    fn drop(&mut self) {
        self.done();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1 << 20;

    fn pool(budget: usize) -> Arc<NodePool> {
        NodePool::new(
            "node-t".into(),
            budget,
            JoinMode::Guarded,
            &BreakerConfig::default(),
        )
    }

    #[derive(Default)]
    struct Woken(std::sync::Mutex<Vec<&'static str>>);

    struct Named(Arc<Woken>, &'static str);

    impl Wake for Named {
        fn wake(&self) {
            self.0 .0.lock().unwrap().push(self.1);
        }
    }

    fn woken(w: &Arc<Woken>) -> Vec<&'static str> {
        std::mem::take(&mut *w.0.lock().unwrap())
    }

    #[test]
    fn refused_grow_leaves_used_and_peak_unchanged() {
        let p = pool(10 * MIB);
        let dyn_pool: Arc<dyn MemoryPool> = p.clone();
        let mut r = Reservation::new(dyn_pool);
        r.try_grow(6 * MIB).unwrap();
        assert!(r.try_grow(5 * MIB).is_err());
        assert_eq!((p.used(), p.peak(), r.size()), (6 * MIB, 6 * MIB, 6 * MIB));
        r.try_grow(4 * MIB).unwrap();
        assert_eq!((p.used(), p.peak()), (10 * MIB, 10 * MIB));
        assert!(r.try_grow(1).is_err());
        assert_eq!(p.peak(), 10 * MIB);
        drop(r);
        assert_eq!((p.used(), p.peak()), (0, 10 * MIB));
    }

    #[test]
    fn operators_that_spill_share_the_limit_fairly_and_leave_the_rest_to_batches() {
        let p = pool(100 * MIB);
        let limit = p.limit();
        let mut sort = Reservation::new(SpillingStatePool::new(p.clone()));
        let mut agg = Reservation::new(SpillingStatePool::new(p.clone()));
        // Two operators: half the limit each once the node is above its reset level.
        sort.try_grow(limit / 2).unwrap();
        sort.try_grow(MIB).unwrap();
        sort.shrink(MIB);
        agg.try_grow(p.reset() - limit / 2).unwrap();
        assert!(sort.try_grow(1).is_err(), "past its share under pressure");
        agg.shrink(p.reset() - limit / 2);
        agg.try_grow(limit / 2 - MIB).unwrap();
        // A batch in flight takes the node's pool directly, above the limit.
        let mut batch = Reservation::new(p.clone());
        batch.try_grow(10 * MIB).unwrap();
        assert!(agg.try_grow(MIB).is_err(), "the limit is reached");
        drop(batch);
        agg.try_grow(MIB).unwrap();
        // One gone: the other may take the whole limit.
        drop(sort);
        agg.try_grow(limit / 2).unwrap();
        assert_eq!(p.used(), limit);
        drop(agg);
        assert_eq!(p.used(), 0);
    }

    #[test]
    fn concurrent_grows_never_pass_the_budget() {
        let p = pool(MIB);
        std::thread::scope(|s| {
            for _ in 0..4 {
                let p = p.clone();
                s.spawn(move || {
                    let mut r = Reservation::new(p.clone());
                    for i in 0..10_000 {
                        let _ = r.try_grow(1000 + i % 7);
                        if i % 3 == 0 {
                            r.shrink(2000);
                        }
                    }
                });
            }
        });
        assert!(p.peak() <= MIB, "peak {} over the budget", p.peak());
        assert_eq!(p.used(), 0);
    }

    #[test]
    fn waiters_are_woken_in_order_when_memory_is_freed() {
        let p = pool(10 * MIB);
        let w = Arc::new(Woken::default());
        let wake = |name| -> Arc<dyn Wake> { Arc::new(Named(w.clone(), name)) };
        let (a, b, c) = (wake("a"), wake("b"), wake("c"));
        let mut held = MemoryWait::new(p.clone()).reservation();
        held.try_grow(9 * MIB).unwrap();

        let (mut wa, mut wb, mut wc) = (
            MemoryWait::new(p.clone()),
            MemoryWait::new(p.clone()),
            MemoryWait::new(p.clone()),
        );
        let (mut ra, mut rb, mut rc) = (wa.reservation(), wb.reservation(), wc.reservation());
        assert_eq!(wa.reserve(&mut ra, 2 * MIB, &a), Reserve::Waiting);
        assert_eq!(wb.reserve(&mut rb, 3 * MIB / 2, &b), Reserve::Waiting);
        assert_eq!(wc.reserve(&mut rc, 3 * MIB, &c), Reserve::Waiting);
        assert_eq!((p.waiters(), p.used(), p.peak()), (3, 9 * MIB, 9 * MIB));
        // More than the budget can never be accounted: no wait.
        let mut big = MemoryWait::new(p.clone());
        let mut rbig = big.reservation();
        assert_eq!(big.reserve(&mut rbig, 11 * MIB, &a), Reserve::TooLarge);
        assert!(!big.is_waiting());

        // 2 MiB free: `a` (the oldest) fits and is woken; nothing is left for the others.
        held.shrink(MIB);
        assert_eq!(woken(&w), vec!["a"]);
        assert_eq!(p.waiters(), 2);
        // `b` takes what `a` was woken for, before `a` gets there: `a` queues again, in its
        // old place (ahead of `c`).
        assert_eq!(wb.reserve(&mut rb, 3 * MIB / 2, &b), Reserve::Granted);
        assert_eq!(wa.reserve(&mut ra, 2 * MIB, &a), Reserve::Waiting);
        assert_eq!(p.waiters(), 2);
        // 6 MiB free at once: `a` then `c`, oldest first.
        held.shrink(5 * MIB);
        assert_eq!(woken(&w), vec!["a", "c"]);
        assert_eq!(wa.reserve(&mut ra, 2 * MIB, &a), Reserve::Granted);
        assert_eq!(wc.reserve(&mut rc, 3 * MIB, &c), Reserve::Granted);
        assert_eq!(p.waiters(), 0);
        assert_eq!(p.used(), 3 * MIB + 3 * MIB / 2 + 2 * MIB + 3 * MIB);
        assert!(p.peak() <= p.budget());

        // A waiter that goes away leaves the queue.
        let mut wd = MemoryWait::new(p.clone());
        let mut rd = wd.reservation();
        assert_eq!(wd.reserve(&mut rd, 5 * MIB, &a), Reserve::Waiting);
        assert_eq!(p.waiters(), 1);
        drop(wd);
        assert_eq!(p.waiters(), 0);
        drop((ra, rb, rc, rd, held));
        assert_eq!(p.used(), 0);
        assert!(woken(&w).is_empty());
    }

    #[test]
    fn predictions_are_taken_as_they_are_until_joins_have_held_memory_then_scaled() {
        let p = pool(100 * MIB);
        // Before any join ran here: the prediction itself.
        p.record_prediction(MIB);
        assert_eq!(p.calibrated(MIB), MIB);
        assert_eq!(p.calibrated(3 * MIB), 3 * MIB);
        // Joins predicted at 1 MiB held 2 MiB: every prediction counts double from now on.
        p.record_join(2 * MIB);
        assert_eq!(p.calibrated(MIB), 2 * MIB);
        assert_eq!(p.calibrated(3 * MIB), 6 * MIB);
        // Nothing predicted (no table sizes to go by): the running estimate.
        let q = pool(100 * MIB);
        q.record_prediction(0);
        q.record_join(MIB);
        assert_eq!(q.calibrated(0), MIB);
    }

    #[test]
    fn legacy_pools_refuse_nothing() {
        let p = NodePool::new(
            "node-l".into(),
            MIB,
            JoinMode::Legacy,
            &BreakerConfig::default(),
        );
        let mut w = MemoryWait::new(p.clone());
        let mut r = w.reservation();
        let wake: Arc<dyn Wake> = Arc::new(Named(Arc::new(Woken::default()), "x"));
        assert_eq!(w.reserve(&mut r, 2 * MIB, &wake), Reserve::Granted);
        assert_eq!(p.used(), 2 * MIB);
    }
}
