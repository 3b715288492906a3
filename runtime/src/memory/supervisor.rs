//! The memory circuit breaker's actor: one per node. It keeps the node's running hash joins
//! and the operators that can spill, and when the node's accounted memory crosses the
//! breaker's limit it first asks operators holding revocable memory to spill (the largest
//! first, until what they hold would bring the node under its reset level), and waits for
//! their answers. Only when nothing is revocable does it kill half of the hash joins that
//! hold build memory (at random, seeded, or the largest half). It starts no new kill round
//! until the victims have stopped and their memory is back; then, if the node is still over
//! its limit, it kills half of the rest. Only kills delivered to a running join count, and
//! only spills that gave memory back. A periodic tick re-evaluates the breaker.
//!
//! The joins enter and leave the node's [`RunningJoins`](crate::memory::joins::RunningJoins)
//! themselves, under a lock and without a message, so that a query whose joins never meet an
//! open breaker costs the supervisor nothing.

use crate::memory::breaker::{BreakerConfig, BreakerCounters};
use crate::memory::joins::Revocation;
use crate::memory::messages::{CheckMemory, Kill, Revoke};
use crate::memory::view::NodeView;
use actix::prelude::*;
use rand::rngs::StdRng;
use rand::SeedableRng;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The memory circuit breaker of one node.
pub struct SupervisorActor {
    node: Arc<dyn NodeView>,
    config: BreakerConfig,
    counters: Arc<BreakerCounters>,
    rng: StdRng,
    /// Held while the actor lives: the node counts its live actors by it.
    _alive: Box<dyn Send>,
}

impl SupervisorActor {
    /// A supervisor for `node`, with a generator seeded from `seed`; it holds `alive` for as
    /// long as it runs.
    pub fn new(
        node: Arc<dyn NodeView>,
        config: BreakerConfig,
        counters: Arc<BreakerCounters>,
        seed: u64,
        alive: Box<dyn Send>,
    ) -> Self {
        SupervisorActor {
            rng: StdRng::seed_from_u64(seed ^ (node.id() as u64).wrapping_mul(0x9e37_79b9)),
            node,
            config,
            counters,
            _alive: alive,
        }
    }

    fn check(&mut self, ctx: &mut Context<Self>) {
        let pool = self.node.pool();
        pool.checked();
        if !pool.evaluate() || pool.used() < pool.limit() {
            return;
        }
        // Memory that operators can give back by spilling goes first; kills only when none can.
        let want = pool.used().saturating_sub(pool.reset());
        match self.node.joins().choose_revocable(want) {
            Revocation::Pending => return,
            Revocation::Ask(ops) => {
                let asked = ops.len();
                for (id, revoke) in ops {
                    let counters = self.counters.clone();
                    ctx.spawn(fut::wrap_future(revoke.send(Revoke)).map(
                        move |freed, act: &mut Self, ctx| {
                            if matches!(freed, Ok(bytes) if bytes > 0) {
                                counters.spills.fetch_add(1, Ordering::Relaxed);
                            }
                            if act.node.joins().revoked(id) {
                                act.check(ctx);
                            }
                        },
                    ));
                }
                tracing::info!(
                    node = %self.node.name(),
                    used = pool.used(),
                    budget = pool.budget(),
                    asked,
                    "breaker open: asking operators to spill"
                );
                return;
            }
            Revocation::Nothing => {}
        }
        // No kill cascades: never before the last round's victims are gone (their memory
        // back); admission keeps new queries out while the breaker is open.
        let Some(victims) = self
            .node
            .joins()
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
                        tracing::debug!(node = %act.node.name(), join = id, "hash join killed");
                    } else if act.node.joins().spared(id) {
                        // It had finished (or stopped) before the kill reached it.
                        act.check(ctx);
                    }
                },
            ));
        }
        tracing::info!(
            node = %self.node.name(),
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
