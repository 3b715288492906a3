//! The memory circuit breaker's actor: one per node. It keeps the node's running hash joins,
//! and when the node's accounted memory crosses the breaker's limit it kills half of those
//! that hold build memory (at random, seeded, or the largest half). It starts no new kill
//! round until the victims have stopped and their memory is back; then, if the node is still
//! over its limit, it kills half of the rest. Only kills delivered to a running join count.
//! A periodic tick re-evaluates the breaker.

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

/// Supervisor → join: stop now, the breaker killed you. Answers whether the join was still
/// running (a join that had finished is not killed).
#[derive(Message, Debug, Clone, Copy)]
#[rtype(result = "bool")]
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
        if !self.victims.is_empty() {
            return;
        }
        // Only joins that hold build memory: killing one that holds none frees nothing.
        let mut ids: Vec<u64> = self
            .joins
            .iter()
            .filter(|(_, j)| j.size.load(Ordering::Relaxed) > 0)
            .map(|(id, _)| *id)
            .collect();
        if ids.is_empty() {
            return;
        }
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
                self.victims.insert(id);
                let counters = self.counters.clone();
                let sent = j.kill.send(Kill);
                ctx.spawn(
                    fut::wrap_future(sent).map(move |delivered, act: &mut Self, ctx| {
                        if delivered == Ok(true) {
                            counters.kills.fetch_add(1, Ordering::Relaxed);
                            tracing::debug!(node = %act.shared.name, join = id, "hash join killed");
                        } else if act.victims.remove(&id) && act.victims.is_empty() {
                            // It had finished (or stopped) before the kill reached it.
                            act.check(ctx);
                        }
                    }),
                );
            }
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

    fn handle(&mut self, msg: UnregisterJoin, ctx: &mut Context<Self>) {
        self.joins.remove(&msg.0);
        if self.victims.remove(&msg.0) && self.victims.is_empty() {
            self.check(ctx);
        }
    }
}
