//! The memory circuit breaker's actor: one per node. It keeps the node's running hash joins,
//! and when the node's accounted memory crosses the breaker's limit it kills half of those
//! that hold build memory (at random, seeded, or the largest half). It starts no new kill
//! round until the victims have stopped and their memory is back; then, if the node is still
//! over its limit, it kills half of the rest. Only kills delivered to a running join count.
//! A periodic tick re-evaluates the breaker.
//!
//! The joins enter and leave the node's [`RunningJoins`] themselves, under a lock and without a
//! message, so that a query whose joins never meet an open breaker costs the supervisor nothing.

use crate::memory::breaker::{BreakerConfig, BreakerCounters, KillPolicy};
use crate::memory::pool::CheckMemory;
use crate::node::{LiveGuard, NodeShared};
use actix::prelude::*;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

static NEXT_JOIN: AtomicU64 = AtomicU64::new(1);

/// A fresh id for a join actor.
pub fn next_join_id() -> u64 {
    NEXT_JOIN.fetch_add(1, Ordering::Relaxed)
}

/// Supervisor → join: stop now, the breaker killed you. Answers whether the join was still
/// running (a join that had finished is not killed).
#[derive(Message, Debug, Clone, Copy)]
#[rtype(result = "bool")]
pub struct Kill;

struct Join {
    kill: Recipient<Kill>,
    size: Arc<AtomicUsize>,
}

/// The hash joins running on one node, and the victims of its supervisor's kill round that
/// have not stopped yet.
#[derive(Default)]
pub struct RunningJoins(Mutex<Joins>);

#[derive(Default)]
struct Joins {
    running: HashMap<u64, Join>,
    victims: HashSet<u64>,
}

impl std::fmt::Debug for RunningJoins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let joins = self.lock();
        f.debug_struct("RunningJoins")
            .field("running", &joins.running.len())
            .field("victims", &joins.victims.len())
            .finish()
    }
}

impl RunningJoins {
    fn lock(&self) -> MutexGuard<'_, Joins> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A hash join starts running: `kill` stops it, `size` is the build memory it holds (kept
    /// current by the join).
    pub fn enter(&self, id: u64, kill: Recipient<Kill>, size: Arc<AtomicUsize>) {
        self.lock().running.insert(id, Join { kill, size });
    }

    /// A hash join has stopped. Returns whether it was the last victim of a kill round still
    /// running, so that the supervisor should look at the node again.
    pub fn leave(&self, id: u64) -> bool {
        let mut joins = self.lock();
        joins.running.remove(&id);
        joins.victims.remove(&id) && joins.victims.is_empty()
    }

    /// Joins running now.
    #[cfg(test)]
    fn running(&self) -> usize {
        self.lock().running.len()
    }

    /// Starts a kill round: half of the joins that hold build memory (rounded up), chosen by
    /// `policy` with `rng`, become victims. None while the last round's victims still run, or
    /// when no join holds memory (killing one that holds none frees nothing).
    fn choose_victims(
        &self,
        policy: KillPolicy,
        rng: &mut StdRng,
    ) -> Option<Vec<(u64, Recipient<Kill>)>> {
        let mut joins = self.lock();
        if !joins.victims.is_empty() {
            return None;
        }
        let mut sized: Vec<(u64, usize)> = joins
            .running
            .iter()
            .map(|(&id, j)| (id, j.size.load(Ordering::Relaxed)))
            .filter(|&(_, size)| size > 0)
            .collect();
        if sized.is_empty() {
            return None;
        }
        sized.sort_unstable();
        match policy {
            KillPolicy::RandomHalf => sized.shuffle(rng),
            KillPolicy::LargestHalf => sized.sort_by_key(|&(_, size)| std::cmp::Reverse(size)),
        }
        sized.truncate(sized.len().div_ceil(2));
        let victims: Vec<(u64, Recipient<Kill>)> = sized
            .into_iter()
            .map(|(id, _)| (id, joins.running[&id].kill.clone()))
            .collect();
        joins.victims.extend(victims.iter().map(|&(id, _)| id));
        Some(victims)
    }

    /// A victim had stopped before its kill reached it. Returns whether it was the round's
    /// last.
    fn spared(&self, id: u64) -> bool {
        let mut joins = self.lock();
        joins.victims.remove(&id) && joins.victims.is_empty()
    }
}

/// The memory circuit breaker of one node.
pub struct SupervisorActor {
    shared: Arc<NodeShared>,
    config: BreakerConfig,
    counters: Arc<BreakerCounters>,
    rng: StdRng,
    _live: LiveGuard,
}

impl SupervisorActor {
    /// A supervisor for `shared`, with a generator seeded from `seed`.
    pub fn new(
        shared: Arc<NodeShared>,
        config: BreakerConfig,
        counters: Arc<BreakerCounters>,
        seed: u64,
    ) -> Self {
        let live = LiveGuard::new(&shared);
        SupervisorActor {
            rng: StdRng::seed_from_u64(seed ^ (shared.id as u64).wrapping_mul(0x9e37_79b9)),
            shared,
            config,
            counters,
            _live: live,
        }
    }

    fn check(&mut self, ctx: &mut Context<Self>) {
        let pool = &self.shared.pool;
        pool.checked();
        if !pool.evaluate() || pool.used() < pool.limit() {
            return;
        }
        // No kill cascades: never before the last round's victims are gone (their memory
        // back); admission keeps new queries out while the breaker is open.
        let Some(victims) = self
            .shared
            .joins
            .choose_victims(self.config.kill_policy, &mut self.rng)
        else {
            return;
        };
        let half = victims.len();
        for (id, kill) in victims {
            let counters = self.counters.clone();
            ctx.spawn(fut::wrap_future(kill.send(Kill)).map(
                move |delivered, act: &mut Self, ctx| {
                    if delivered == Ok(true) {
                        counters.kills.fetch_add(1, Ordering::Relaxed);
                        tracing::debug!(node = %act.shared.name, join = id, "hash join killed");
                    } else if act.shared.joins.spared(id) {
                        // It had finished (or stopped) before the kill reached it.
                        act.check(ctx);
                    }
                },
            ));
        }
        tracing::info!(
            node = %self.shared.name,
            used = pool.used(),
            budget = pool.budget(),
            killing = half,
            "breaker open: killing hash joins"
        );
    }
}

impl Actor for SupervisorActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.run_interval(self.config.tick, |act, ctx| act.check(ctx));
    }
}

impl Handler<CheckMemory> for SupervisorActor {
    type Result = ();

    fn handle(&mut self, _msg: CheckMemory, ctx: &mut Context<Self>) {
        self.check(ctx);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct FakeJoin;

    impl Actor for FakeJoin {
        type Context = Context<Self>;
    }

    impl Handler<Kill> for FakeJoin {
        type Result = bool;

        fn handle(&mut self, _msg: Kill, _ctx: &mut Context<Self>) -> bool {
            true
        }
    }

    #[test]
    fn a_kill_round_takes_half_of_the_joins_that_hold_memory_and_ends_with_its_last_victim() {
        System::new().block_on(async {
            let joins = RunningJoins::default();
            let sizes: Vec<usize> = vec![0, 100, 200, 300, 0, 400, 500];
            for (id, &size) in sizes.iter().enumerate() {
                let kill = FakeJoin.start().recipient();
                joins.enter(id as u64, kill, Arc::new(AtomicUsize::new(size)));
            }
            let mut rng = StdRng::seed_from_u64(7);
            let largest = joins
                .choose_victims(KillPolicy::LargestHalf, &mut rng)
                .expect("joins hold memory");
            let mut ids: Vec<u64> = largest.iter().map(|(id, _)| *id).collect();
            ids.sort_unstable();
            // Five joins hold memory: the three largest.
            assert_eq!(ids, vec![3, 5, 6]);
            // No second round while the victims run.
            assert!(joins
                .choose_victims(KillPolicy::RandomHalf, &mut rng)
                .is_none());
            assert!(!joins.leave(3));
            assert!(!joins.spared(5));
            // A join that was no victim leaving ends nothing.
            assert!(!joins.leave(1));
            assert!(joins.leave(6), "the round's last victim is gone");
            // Left running: 0 and 4 (no memory), 2, and 5 (spared but still running).
            assert_eq!(joins.running(), 4);
            let random = joins
                .choose_victims(KillPolicy::RandomHalf, &mut rng)
                .expect("joins hold memory");
            assert_eq!(random.len(), 1);
            assert!([2, 5].contains(&random[0].0));
            assert!(joins.leave(random[0].0));
            for id in [0, 2, 4, 5] {
                joins.leave(id);
            }
            assert_eq!(joins.running(), 0);
            assert!(joins
                .choose_victims(KillPolicy::RandomHalf, &mut rng)
                .is_none());
        });
    }
}
