//! The memory circuit breaker's actor: one per node. It keeps the node's running hash joins,
//! and when the node's accounted memory crosses the breaker's limit it kills half of them
//! (at random, seeded, or the largest half), then starts no new kill round until the
//! victims' memory has been released. A periodic tick re-evaluates the breaker.

use crate::breaker::{BreakerConfig, BreakerCounters, KillPolicy};
use crate::memory::CheckMemory;
use crate::node::{LiveGuard, NodeShared};
use actix::prelude::*;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

static NEXT_JOIN: AtomicU64 = AtomicU64::new(1);

/// A fresh id for a join actor.
pub fn next_join_id() -> u64 {
    NEXT_JOIN.fetch_add(1, Ordering::Relaxed)
}

/// Supervisor → join: stop now, the breaker killed you.
#[derive(Message, Debug, Clone, Copy)]
#[rtype(result = "()")]
pub struct Kill;

/// A hash join starts running on the node.
#[derive(Message)]
#[rtype(result = "()")]
pub struct RegisterJoin {
    /// The join's id.
    pub id: u64,
    /// Where to send [`Kill`].
    pub kill: Recipient<Kill>,
    /// Bytes the join holds now (kept current by the join).
    pub size: Arc<AtomicUsize>,
}

/// A hash join has stopped.
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct UnregisterJoin(pub u64);

struct Join {
    kill: Recipient<Kill>,
    size: Arc<AtomicUsize>,
}

/// The memory circuit breaker of one node.
pub struct SupervisorActor {
    shared: Arc<NodeShared>,
    config: BreakerConfig,
    counters: Arc<BreakerCounters>,
    rng: StdRng,
    joins: HashMap<u64, Join>,
    victims: HashSet<u64>,
    killed_in_trip: Option<u64>,
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
            joins: HashMap::new(),
            victims: HashSet::new(),
            killed_in_trip: None,
            _live: live,
        }
    }

    fn check(&mut self) {
        let pool = &self.shared.pool;
        pool.checked();
        if !pool.evaluate() || pool.used() < pool.limit() {
            return;
        }
        // No kill cascades: one round per trip, and never before the last round's victims
        // are gone. Admission keeps the breaker from tripping again while it is open.
        let trip = pool.trips();
        if !self.victims.is_empty() || self.joins.is_empty() || self.killed_in_trip == Some(trip) {
            return;
        }
        self.killed_in_trip = Some(trip);
        let mut ids: Vec<u64> = self.joins.keys().copied().collect();
        ids.sort_unstable();
        match self.config.kill_policy {
            KillPolicy::RandomHalf => ids.shuffle(&mut self.rng),
            KillPolicy::LargestHalf => {
                ids.sort_by_key(|id| std::cmp::Reverse(self.joins[id].size.load(Ordering::Relaxed)))
            }
        }
        let half = ids.len().div_ceil(2);
        for id in ids.into_iter().take(half) {
            if let Some(j) = self.joins.get(&id) {
                j.kill.do_send(Kill);
                self.victims.insert(id);
            }
        }
        self.counters
            .kills
            .fetch_add(half as u64, Ordering::Relaxed);
        tracing::info!(
            "{}: breaker open at {} of {} bytes, killed {half} hash joins",
            self.shared.name,
            pool.used(),
            pool.budget()
        );
    }
}

impl Actor for SupervisorActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.run_interval(self.config.tick, |act, _| act.check());
    }
}

impl Handler<CheckMemory> for SupervisorActor {
    type Result = ();

    fn handle(&mut self, _msg: CheckMemory, _ctx: &mut Context<Self>) {
        self.check();
    }
}

impl Handler<RegisterJoin> for SupervisorActor {
    type Result = ();

    fn handle(&mut self, msg: RegisterJoin, _ctx: &mut Context<Self>) {
        self.joins.insert(
            msg.id,
            Join {
                kill: msg.kill,
                size: msg.size,
            },
        );
    }
}

impl Handler<UnregisterJoin> for SupervisorActor {
    type Result = ();

    fn handle(&mut self, msg: UnregisterJoin, _ctx: &mut Context<Self>) {
        self.joins.remove(&msg.0);
        if self.victims.remove(&msg.0) && self.victims.is_empty() {
            self.check();
        }
    }
}
