//! The admission queue: where queries wait for memory before they start.
//!
//! One queue for the whole cluster, so that a query that needs several nodes is admitted on
//! all of them at once or on none (all-or-nothing under one lock: no query ever holds
//! admission on one node while it waits for another, so two queries cannot deadlock).
//! Admission is first come, first served on every node: a waiter that cannot be admitted
//! holds its place on each of its nodes, and nobody behind it on one of those nodes passes
//! it. Queries whose hash join was killed by the breaker wait ahead of new ones.
//!
//! A query is admitted on a node when the node's breaker is closed and its estimated memory
//! fits under the breaker's reset mark together with what the node holds now and what the
//! queries admitted before it are still expected to build (the room between the reset mark
//! and the limit is left to batches in flight). A node with no admitted query admits the head
//! of its queue whatever the estimate (progress), and no node admits more queries that build
//! hash joins on it at once than the cluster has threads to run them
//! ([`BreakerConfig::joins_per_node`](crate::memory::breaker::BreakerConfig::joins_per_node)): more
//! only hold more memory and crowd each other out of the caches. A waiter that waits only for
//! such a slot holds back later joins on that node, not queries without a join there. The estimate of each hash join is predicted
//! from table sizes ([`estimate`](crate::memory::estimate)) and corrected by how the joins that ran on the node held
//! against their predictions ([`NodePool::calibrated`]), so it is right from a node's first
//! query on.
//!
//! The queue is looked at again whenever memory comes back (an admitted query ends, a hash
//! join stops, a breaker closes) and, as a fallback, when a waiter's own backoff timer fires.
//! A waiter that is admitted is told through its [`Wake`].

use crate::memory::estimate::BuildEstimate;

use crate::memory::pool::{NodePool, Wake};
use crate::memory::view::NodeView;
use crate::wire::ids::NodeId;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// Memory a query asks for on one node: `(node, estimated bytes)`.
pub type Demand = Vec<(NodeId, usize)>;

/// What a query asks of each of its `involved` nodes: the predicted build bytes of its joins
/// there (`builds`, per fragment; fragment 0 runs on the `initiator`, the others on their
/// `instances`), each corrected by the node's record ([`NodePool::calibrated`]). Each
/// prediction is recorded on its node, for that correction.
pub fn demand(
    builds: &BuildEstimate,
    instances: &[Vec<NodeId>],
    initiator: NodeId,
    involved: &[NodeId],
    nodes: &[Arc<impl NodeView + ?Sized>],
) -> Demand {
    let mut bytes: Demand = involved.iter().map(|&n| (n, 0)).collect();
    for (i, joins) in builds.joins.iter().enumerate() {
        if joins.is_empty() {
            continue;
        }
        let on: &[NodeId] = if i == 0 {
            std::slice::from_ref(&initiator)
        } else {
            instances.get(i).map_or(&[], Vec::as_slice)
        };
        for &node in on {
            let Some(pool) = nodes.get(node as usize).map(|n| n.pool()) else {
                continue;
            };
            let asked: usize = joins
                .iter()
                .map(|&predicted| {
                    pool.record_prediction(predicted);
                    pool.calibrated(predicted)
                })
                .fold(0, usize::saturating_add);
            match bytes.iter_mut().find(|(n, _)| *n == node) {
                Some((_, b)) => *b = b.saturating_add(asked),
                None => bytes.push((node, asked)),
            }
        }
    }
    bytes
}

/// Where a waiter stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Waiting,
    Admitted,
}

struct Entry {
    demand: Demand,
    status: Status,
    since: Instant,
    /// The first node that refused it when it was last looked at.
    blocker: Option<NodeId>,
    wake: Arc<dyn Wake>,
}

struct State {
    /// Waiters by `(class, ticket)`: re-runs of killed queries (class 0) ahead of new ones.
    waiting: BTreeMap<(u8, u64), ()>,
    /// Every place, waiting or admitted, by ticket.
    entries: BTreeMap<u64, (u8, Entry)>,
    /// Per node: the bytes admitted queries are expected to hold (the sum of their demands).
    committed: Vec<usize>,
    /// Per node: the admitted queries that build hash joins there (demand above zero).
    joins: Vec<usize>,
    /// What the waiters build, for the walk to stop early.
    tallies: Tallies,
}

/// Counts of the waiting queries by what they build.
struct Tallies {
    /// Waiters that build no hash join anywhere (every demand zero): only memory holds them
    /// back, never a join slot.
    light: usize,
    /// Per node: the waiters that build a hash join there.
    join_waiters: Vec<usize>,
}

impl Tallies {
    /// Counts a waiter asking for `demand` in (`add`) or out.
    fn count(&mut self, demand: &Demand, add: bool) {
        let change = |c: &mut usize| {
            if add {
                *c += 1;
            } else {
                *c = c.saturating_sub(1);
            }
        };
        if is_light(demand) {
            change(&mut self.light);
        }
        for &(n, bytes) in demand {
            if let Some(c) = self.join_waiters.get_mut(n as usize).filter(|_| bytes > 0) {
                change(c);
            }
        }
    }
}

/// Whether a query asking for `demand` builds no hash join on any node.
fn is_light(demand: &Demand) -> bool {
    demand.iter().all(|&(_, bytes)| bytes == 0)
}

/// The cluster's admission queue.
pub struct Admission {
    nodes: Arc<Vec<Arc<dyn NodeView>>>,
    capacity: usize,
    /// Most queries admitted at once that build hash joins on one node.
    max_joins: usize,
    state: Mutex<State>,
    next_ticket: AtomicU64,
}

impl std::fmt::Debug for Admission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admission")
            .field("waiting", &self.waiting())
            .finish()
    }
}

/// The queue already holds as many waiters as it may.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueFull {
    /// Waiters in the queue.
    pub waiting: usize,
}

/// A query's place in the queue, then its admission. RAII: dropped, it leaves the queue, or
/// gives back what it was admitted with (and the queue is looked at again).
pub struct Place {
    admission: Arc<Admission>,
    ticket: u64,
}

impl std::fmt::Debug for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Place")
            .field("ticket", &self.ticket)
            .finish()
    }
}

/// Wakes the admission queue when memory comes back on a node (see [`NodePool::on_release`]).
struct Pump(Weak<Admission>);

impl Wake for Pump {
    fn wake(&self) {
        if let Some(a) = self.0.upgrade() {
            a.pump();
        }
    }
}

impl Admission {
    /// A queue for `nodes` holding at most `capacity` waiters (re-runs of killed queries are
    /// always let in) and admitting at most `joins_per_node` queries at once that build hash
    /// joins on one node (at least 1). Hooks itself to every node's pool, to be woken when
    /// memory comes back.
    pub fn new(
        nodes: Arc<Vec<Arc<dyn NodeView>>>,
        capacity: usize,
        joins_per_node: usize,
    ) -> Arc<Self> {
        let a = Arc::new(Admission {
            state: Mutex::new(State {
                waiting: BTreeMap::new(),
                entries: BTreeMap::new(),
                committed: vec![0; nodes.len()],
                joins: vec![0; nodes.len()],
                tallies: Tallies {
                    light: 0,
                    join_waiters: vec![0; nodes.len()],
                },
            }),
            nodes,
            capacity,
            max_joins: joins_per_node.max(1),
            next_ticket: AtomicU64::new(1),
        });
        for n in a.nodes.iter() {
            n.pool().on_release(Arc::new(Pump(Arc::downgrade(&a))));
        }
        a
    }

    /// Queries waiting now.
    pub fn waiting(&self) -> usize {
        self.lock().waiting.len()
    }

    /// Bytes the queries admitted on `node` are expected to hold.
    pub fn committed(&self, node: NodeId) -> usize {
        self.lock()
            .committed
            .get(node as usize)
            .copied()
            .unwrap_or(0)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues a query asking for `demand`, and admits it at once if it can be. A re-run of a
    /// killed query (`rerun`) waits ahead of new ones. `wake` is told when it is admitted
    /// later.
    pub fn enter(
        self: &Arc<Self>,
        demand: Demand,
        rerun: bool,
        wake: Arc<dyn Wake>,
    ) -> Result<Place, QueueFull> {
        let ticket = self.next_ticket.fetch_add(1, Ordering::Relaxed);
        let class = if rerun { 0 } else { 1 };
        {
            let mut s = self.lock();
            if !rerun && s.waiting.len() >= self.capacity {
                return Err(QueueFull {
                    waiting: s.waiting.len(),
                });
            }
            s.waiting.insert((class, ticket), ());
            s.tallies.count(&demand, true);
            s.entries.insert(
                ticket,
                (
                    class,
                    Entry {
                        demand,
                        status: Status::Waiting,
                        since: Instant::now(),
                        blocker: None,
                        wake,
                    },
                ),
            );
        }
        let place = Place {
            admission: self.clone(),
            ticket,
        };
        // The newcomer itself is not woken: it asks `is_admitted`.
        self.pump_except(Some(ticket));
        Ok(place)
    }

    /// Admits, in queue order, every waiter whose demand fits on all of its nodes and that no
    /// earlier waiter on one of its nodes holds back; wakes those admitted.
    pub fn pump(&self) {
        self.pump_except(None);
    }

    fn pump_except(&self, quiet: Option<u64>) {
        let mut woken: Vec<Arc<dyn Wake>> = Vec::new();
        {
            let mut guard = self.lock();
            let s = &mut *guard;
            if s.waiting.is_empty() {
                return;
            }
            // Nodes where an earlier waiter waits for memory (nobody later passes it there),
            // and where one waits for a join slot (no later join passes it there; queries
            // without a join on that node do).
            let mut blocked = vec![false; self.nodes.len()];
            let mut slots_taken = vec![false; self.nodes.len()];
            // Nodes not yet held back for memory.
            let mut left = self.nodes.len();
            // Light waiters not looked at yet.
            let mut light_unseen = s.tallies.light;
            // Whether some node may still take a join that a waiter asks for (not held back
            // either way, a join slot free); `None` once a mark or an admission may have
            // changed it.
            let mut join_room: Option<bool> = None;
            let mut admitted = Vec::new();
            for &(class, ticket) in s.waiting.keys() {
                // Every node held back for memory: nobody passes.
                if left == 0 {
                    break;
                }
                // No light waiter left, and no node that may take a join and has a waiter
                // for one: every later waiter builds a join on some node, which refuses it.
                if light_unseen == 0 {
                    let room = *join_room.get_or_insert_with(|| {
                        (0..self.nodes.len()).any(|n| {
                            s.tallies.join_waiters[n] > 0
                                && !blocked[n]
                                && !slots_taken[n]
                                && self.has_join_slot(n as NodeId, &s.joins)
                        })
                    });
                    if !room {
                        break;
                    }
                }
                let Some((_, e)) = s.entries.get_mut(&ticket) else {
                    continue;
                };
                let light = is_light(&e.demand);
                light_unseen -= usize::from(light);
                let is =
                    |marks: &[bool], n: NodeId| marks.get(n as usize).copied().unwrap_or(false);
                let memory = e
                    .demand
                    .iter()
                    .find(|&&(n, bytes)| is(&blocked, n) || !self.fits(n, bytes, &s.committed))
                    .map(|&(n, _)| n);
                let slot = || {
                    e.demand
                        .iter()
                        .find(|&&(n, bytes)| {
                            bytes > 0 && (is(&slots_taken, n) || !self.has_join_slot(n, &s.joins))
                        })
                        .map(|&(n, _)| n)
                };
                // The node that refused it, and whether for memory (else for a join slot).
                let refused = match (memory, slot()) {
                    (Some(n), _) => Some((n, true)),
                    (None, Some(n)) => Some((n, false)),
                    (None, None) => None,
                };
                match refused {
                    Some((n, for_memory)) => {
                        e.blocker = Some(n);
                        for &(m, bytes) in &e.demand {
                            if !for_memory && bytes == 0 {
                                continue;
                            }
                            let m = m as usize;
                            if m >= blocked.len() {
                                continue;
                            }
                            let marks = if for_memory {
                                &mut blocked
                            } else {
                                &mut slots_taken
                            };
                            if !marks[m] {
                                marks[m] = true;
                                left -= usize::from(for_memory);
                                join_room = None;
                            }
                        }
                    }
                    None => {
                        join_room = None;
                        e.status = Status::Admitted;
                        e.blocker = None;
                        for &(n, bytes) in &e.demand {
                            if let Some(c) = s.committed.get_mut(n as usize) {
                                *c += bytes;
                            }
                            if let Some(j) = s.joins.get_mut(n as usize).filter(|_| bytes > 0) {
                                *j += 1;
                            }
                        }
                        if quiet != Some(ticket) {
                            woken.push(e.wake.clone());
                        }
                        s.tallies.count(&e.demand, false);
                        admitted.push((class, ticket));
                    }
                }
            }
            for key in admitted {
                s.waiting.remove(&key);
            }
        }
        for w in woken {
            w.wake();
        }
    }

    /// Whether a query building a hash join on `node` may start there now: fewer than the
    /// most joins at once are admitted there.
    fn has_join_slot(&self, node: NodeId, joins: &[usize]) -> bool {
        let Some(n) = self.nodes.get(node as usize) else {
            return true;
        };
        // Legacy never waits; a query needing a node that is down fails on its own.
        if n.pool().mode() == crate::memory::breaker::JoinMode::Legacy || !n.is_up() {
            return true;
        }
        joins.get(node as usize).copied().unwrap_or(0) < self.max_joins
    }

    /// Whether `bytes` more fit on `node` now.
    fn fits(&self, node: NodeId, bytes: usize, committed: &[usize]) -> bool {
        let Some(n) = self.nodes.get(node as usize) else {
            return true;
        };
        let pool: &NodePool = n.pool();
        if pool.mode() == crate::memory::breaker::JoinMode::Legacy || !n.is_up() {
            // Legacy never waits; a query needing a node that is down fails on its own.
            return true;
        }
        if pool.is_open() {
            return false;
        }
        let committed = committed.get(node as usize).copied().unwrap_or(0);
        if bytes == 0 || committed == 0 {
            return true;
        }
        // What the admitted queries have not built yet is still coming. Joins are admitted up
        // to the breaker's reset mark, not its limit: the room between the two is for the
        // batches in flight, so that they do not trip the breaker.
        let coming = committed.saturating_sub(pool.join_held());
        pool.used() + coming + bytes <= pool.reset()
    }

    fn leave(&self, ticket: u64) {
        let released = {
            let mut s = self.lock();
            match s.entries.remove(&ticket) {
                Some((class, e)) => match e.status {
                    Status::Waiting => {
                        s.waiting.remove(&(class, ticket));
                        s.tallies.count(&e.demand, false);
                        // The queue may have been held back by this waiter.
                        true
                    }
                    Status::Admitted => {
                        for (n, bytes) in e.demand {
                            if let Some(c) = s.committed.get_mut(n as usize) {
                                *c = c.saturating_sub(bytes);
                            }
                            if let Some(j) = s.joins.get_mut(n as usize).filter(|_| bytes > 0) {
                                *j = j.saturating_sub(1);
                            }
                        }
                        true
                    }
                },
                None => false,
            }
        };
        if released {
            self.pump();
        }
    }
}

impl Place {
    /// Whether the query has been admitted.
    pub fn is_admitted(&self) -> bool {
        self.admission
            .lock()
            .entries
            .get(&self.ticket)
            .is_some_and(|(_, e)| e.status == Status::Admitted)
    }

    /// How long the query has waited (since it entered the queue).
    pub fn waited(&self) -> Duration {
        self.admission
            .lock()
            .entries
            .get(&self.ticket)
            .map_or(Duration::ZERO, |(_, e)| e.since.elapsed())
    }

    /// Its position in the queue, 1 for the head; `None` once admitted.
    pub fn position(&self) -> Option<usize> {
        let s = self.admission.lock();
        let (class, _) = s.entries.get(&self.ticket)?;
        let key = (*class, self.ticket);
        s.waiting
            .contains_key(&key)
            .then(|| s.waiting.range(..key).count() + 1)
    }

    /// The node that refused it when it was last looked at, else (it was not looked at:
    /// the queue ahead of it already held every node back) a node it shares with a waiter
    /// ahead of it.
    pub fn blocker(&self) -> Option<NodeId> {
        let s = self.admission.lock();
        let (class, e) = s.entries.get(&self.ticket)?;
        if e.blocker.is_some() || e.status == Status::Admitted {
            return e.blocker;
        }
        s.waiting
            .range(..(*class, self.ticket))
            .find_map(|(&(_, t), _)| {
                let ahead = &s.entries.get(&t)?.1;
                e.demand
                    .iter()
                    .map(|&(n, _)| n)
                    .find(|n| ahead.demand.iter().any(|&(m, _)| m == *n))
            })
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        self.admission.leave(self.ticket);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::breaker::{BreakerConfig, JoinMode};
    use crate::memory::joins::RunningJoins;
    use weir_operators::{MemoryPool, Reservation};

    const MIB: usize = 1 << 20;

    /// A node that is up, with a pool and no joins.
    struct TestNode {
        id: NodeId,
        name: String,
        pool: Arc<NodePool>,
        joins: RunningJoins,
    }

    impl NodeView for TestNode {
        fn id(&self) -> NodeId {
            self.id
        }
        fn name(&self) -> &str {
            &self.name
        }
        fn pool(&self) -> &Arc<NodePool> {
            &self.pool
        }
        fn joins(&self) -> &RunningJoins {
            &self.joins
        }
        fn is_up(&self) -> bool {
            true
        }
    }

    fn nodes(n: usize, budget: usize) -> Arc<Vec<Arc<dyn NodeView>>> {
        Arc::new(
            (0..n)
                .map(|i| {
                    let name = format!("node-{i}");
                    let pool = NodePool::new(
                        name.clone(),
                        budget,
                        JoinMode::Guarded,
                        &BreakerConfig::default(),
                    );
                    let node = TestNode {
                        id: i as NodeId,
                        name,
                        pool,
                        joins: RunningJoins::default(),
                    };
                    Arc::new(node) as Arc<dyn NodeView>
                })
                .collect(),
        )
    }

    /// Records the order in which waiters are admitted.
    #[derive(Default)]
    struct Log(Mutex<Vec<&'static str>>);

    struct Named(Arc<Log>, &'static str);

    impl Wake for Named {
        fn wake(&self) {
            self.0 .0.lock().unwrap().push(self.1);
        }
    }

    fn taken(log: &Arc<Log>) -> Vec<&'static str> {
        std::mem::take(&mut *log.0.lock().unwrap())
    }

    #[test]
    fn waiters_are_admitted_first_come_first_served_when_the_breaker_closes() {
        let nodes = nodes(2, 100 * MIB);
        let a = Admission::new(nodes.clone(), 16, usize::MAX);
        let log = Arc::new(Log::default());
        let w = |n| -> Arc<dyn Wake> { Arc::new(Named(log.clone(), n)) };
        // Memory from outside opens node-0's breaker.
        let pool: Arc<dyn MemoryPool> = nodes[0].pool().clone();
        let mut held = Reservation::new(pool);
        held.try_grow(90 * MIB).unwrap();
        assert!(nodes[0].pool().is_open());
        let q1 = a.enter(vec![(0, 0), (1, 0)], false, w("q1")).unwrap();
        // Only node-1, which is free, but q1 waits for node-1 too and came first.
        let q2 = a.enter(vec![(1, 0)], false, w("q2")).unwrap();
        let q3 = a.enter(vec![(0, MIB), (1, MIB)], false, w("q3")).unwrap();
        assert_eq!(
            [&q1, &q2, &q3].map(|p| (p.is_admitted(), p.position())),
            [(false, Some(1)), (false, Some(2)), (false, Some(3))]
        );
        assert_eq!((q1.blocker(), q2.blocker()), (Some(0), Some(1)));
        assert_eq!(a.waiting(), 3);
        // Memory released below the reset mark closes the breaker and wakes the queue at once.
        held.shrink(50 * MIB);
        assert!(!nodes[0].pool().is_open());
        assert_eq!(taken(&log), vec!["q1", "q2", "q3"]);
        assert!(q1.is_admitted() && q2.is_admitted() && q3.is_admitted());
        assert_eq!((a.committed(0), a.committed(1)), (MIB, MIB));
        drop((q1, q2, q3));
        assert_eq!((a.waiting(), a.committed(0), a.committed(1)), (0, 0, 0));
    }

    #[test]
    fn no_more_joins_are_admitted_on_a_node_than_it_may_run_at_once() {
        let nodes = nodes(2, 100 * MIB);
        let a = Admission::new(nodes, 16, 2);
        let log = Arc::new(Log::default());
        let w = |n| -> Arc<dyn Wake> { Arc::new(Named(log.clone(), n)) };
        // Memory for many, room for two joins at once on a node.
        let q1 = a.enter(vec![(0, MIB), (1, MIB)], false, w("q1")).unwrap();
        let q2 = a.enter(vec![(0, MIB)], false, w("q2")).unwrap();
        let q3 = a.enter(vec![(0, MIB)], false, w("q3")).unwrap();
        // A query without a join passes a waiter that waits only for a join slot; a join
        // behind it does not.
        let scan = a.enter(vec![(0, 0), (1, 0)], false, w("scan")).unwrap();
        let q4 = a.enter(vec![(1, MIB), (0, MIB)], false, w("q4")).unwrap();
        assert!(q1.is_admitted() && q2.is_admitted() && scan.is_admitted());
        assert_eq!((q3.is_admitted(), q3.blocker()), (false, Some(0)));
        assert_eq!((q4.is_admitted(), q4.position()), (false, Some(2)));
        drop(q2);
        assert_eq!(taken(&log), vec!["q3"]);
        assert!(q3.is_admitted() && !q4.is_admitted());
        drop(q3);
        assert_eq!(taken(&log), vec!["q4"]);
        assert_eq!((a.committed(0), a.committed(1)), (2 * MIB, 2 * MIB));
        drop((q1, q4, scan));
        assert_eq!((a.waiting(), a.committed(0), a.committed(1)), (0, 0, 0));
    }

    #[test]
    fn a_query_without_joins_deep_in_a_queue_of_held_joins_is_still_admitted() {
        let nodes = nodes(4, 100 * MIB);
        let a = Admission::new(nodes, 1024, 1);
        let log = Arc::new(Log::default());
        let w = |n| -> Arc<dyn Wake> { Arc::new(Named(log.clone(), n)) };
        // Joins on nodes 0 to 2, started from node 3 (which builds nothing).
        let everywhere = |bytes| vec![(0, bytes), (1, bytes), (2, bytes), (3, 0)];
        let running = a.enter(everywhere(MIB), false, w("running")).unwrap();
        // Joins on every node, each held for a join slot: the queue's walk stops at the
        // first of them while no query without a join waits.
        let held: Vec<Place> = (0..200)
            .map(|_| a.enter(everywhere(MIB), false, w("join")).unwrap())
            .collect();
        let light = a.enter(everywhere(0), false, w("light")).unwrap();
        assert!(running.is_admitted() && light.is_admitted());
        assert!(held.iter().all(|p| !p.is_admitted()));
        assert_eq!(a.waiting(), 200);
        // A second one, entering behind the same joins, once the state has settled.
        let later = a.enter(vec![(2, 0)], false, w("later")).unwrap();
        assert!(later.is_admitted());
        // The slot comes back: the first join waiter gets it, nobody else.
        drop(running);
        assert_eq!(taken(&log), vec!["join"]);
        assert!(held[0].is_admitted() && held[1..].iter().all(|p| !p.is_admitted()));
        drop((held, light, later));
        assert_eq!((a.waiting(), a.committed(0)), (0, 0));
    }

    #[test]
    fn estimates_that_do_not_fit_wait_for_memory_to_come_back() {
        let nodes = nodes(1, 100 * MIB);
        let a = Admission::new(nodes, 16, usize::MAX);
        let log = Arc::new(Log::default());
        let w = |n| -> Arc<dyn Wake> { Arc::new(Named(log.clone(), n)) };
        // The reset mark is 70 MiB: two queries of 35 MiB fit, a third does not.
        let q1 = a.enter(vec![(0, 35 * MIB)], false, w("q1")).unwrap();
        let q2 = a.enter(vec![(0, 35 * MIB)], false, w("q2")).unwrap();
        let q3 = a.enter(vec![(0, 35 * MIB)], false, w("q3")).unwrap();
        // Asks for nothing, but comes after q3 on the same node.
        let q4 = a.enter(vec![(0, 0)], false, w("q4")).unwrap();
        assert!(q1.is_admitted() && q2.is_admitted());
        assert_eq!((q3.position(), q4.position()), (Some(1), Some(2)));
        assert!(taken(&log).is_empty(), "admitted at once: nobody is woken");
        drop(q1);
        assert_eq!(taken(&log), vec!["q3", "q4"]);
        assert_eq!(a.committed(0), 70 * MIB);
        drop((q2, q3, q4));
        assert_eq!(a.committed(0), 0);
    }

    #[test]
    fn queries_on_several_nodes_are_admitted_on_all_or_none() {
        let nodes = nodes(2, 100 * MIB);
        let a = Admission::new(nodes, 16, usize::MAX);
        let log = Arc::new(Log::default());
        let w = |n| -> Arc<dyn Wake> { Arc::new(Named(log.clone(), n)) };
        let big0 = a.enter(vec![(0, 60 * MIB)], false, w("big0")).unwrap();
        let big1 = a.enter(vec![(1, 60 * MIB)], false, w("big1")).unwrap();
        // Each needs both nodes, listed in opposite orders.
        let qa = a
            .enter(vec![(0, 30 * MIB), (1, 30 * MIB)], false, w("a"))
            .unwrap();
        let qb = a
            .enter(vec![(1, 30 * MIB), (0, 30 * MIB)], false, w("b"))
            .unwrap();
        drop(big0);
        // Node-0 has room but node-1 not: neither holds anything on node-0 meanwhile.
        assert!(taken(&log).is_empty());
        assert_eq!(a.committed(0), 0);
        drop(big1);
        assert_eq!(taken(&log), vec!["a", "b"]);
        assert_eq!((a.committed(0), a.committed(1)), (60 * MIB, 60 * MIB));
        drop((qa, qb));
    }

    #[test]
    fn reruns_wait_ahead_of_new_queries_and_a_full_queue_refuses_new_ones() {
        let nodes = nodes(1, 100 * MIB);
        let a = Admission::new(nodes.clone(), 2, usize::MAX);
        let log = Arc::new(Log::default());
        let w = |n| -> Arc<dyn Wake> { Arc::new(Named(log.clone(), n)) };
        let pool: Arc<dyn MemoryPool> = nodes[0].pool().clone();
        let mut held = Reservation::new(pool);
        held.try_grow(90 * MIB).unwrap();
        let n1 = a.enter(vec![(0, 0)], false, w("n1")).unwrap();
        let n2 = a.enter(vec![(0, 0)], false, w("n2")).unwrap();
        assert_eq!(
            a.enter(vec![(0, 0)], false, w("n3")).unwrap_err(),
            QueueFull { waiting: 2 }
        );
        let r = a.enter(vec![(0, 0)], true, w("rerun")).unwrap();
        assert_eq!(
            (r.position(), n1.position(), n2.position()),
            (Some(1), Some(2), Some(3))
        );
        drop(held);
        assert_eq!(taken(&log), vec!["rerun", "n1", "n2"]);
        drop((n1, n2, r));
        assert_eq!(a.waiting(), 0);
    }
}
