//! The operators running on a node under its memory circuit breaker: hash joins that cannot
//! spill, which the breaker's supervisor may kill, and operators that can spill (sorts, grouped aggregations,
//! hash joins with a spill space), whose memory it first asks back ([`Revoke`]).
//!
//! They enter and leave the node's [`RunningJoins`] themselves, under a lock and without a
//! message, so that a query whose operators never meet an open breaker costs the supervisor
//! nothing.

use crate::memory::breaker::KillPolicy;
use crate::memory::messages::{Kill, Revoke};
use actix::prelude::*;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

static NEXT_JOIN: AtomicU64 = AtomicU64::new(1);

/// A fresh id for a join actor.
pub fn next_join_id() -> u64 {
    NEXT_JOIN.fetch_add(1, Ordering::Relaxed)
}

/// One operator under the breaker, as its actor enters it.
pub struct Supervised {
    /// Stops it (a kill).
    pub kill: Recipient<Kill>,
    /// Asks it to spill.
    pub revoke: Recipient<Revoke>,
    /// Bytes it holds (kept current by the actor).
    pub size: Arc<AtomicUsize>,
    /// Bytes it could give back by spilling (kept current by the actor).
    pub revocable: Arc<AtomicUsize>,
    /// Whether it may be killed (a hash join that cannot spill).
    pub killable: bool,
}

/// The operators running on one node under its breaker, the victims of its supervisor's kill
/// round that have not stopped yet, and the operators asked to spill that have not answered.
#[derive(Default)]
pub struct RunningJoins(Mutex<Joins>);

#[derive(Default)]
struct Joins {
    running: HashMap<u64, Supervised>,
    victims: HashSet<u64>,
    revoking: HashSet<u64>,
}

/// What the supervisor should do about revocable memory.
pub enum Revocation {
    /// Operators asked before have not answered yet: wait for them.
    Pending,
    /// Ask these to spill.
    Ask(Vec<(u64, Recipient<Revoke>)>),
    /// No memory can be revoked: kill, if anything.
    Nothing,
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

    /// An operator starts running under the breaker.
    pub fn enter(&self, id: u64, op: Supervised) {
        self.lock().running.insert(id, op);
    }

    /// A hash join has stopped. Returns whether it was the last victim of a kill round still
    /// running, so that the supervisor should look at the node again.
    pub fn leave(&self, id: u64) -> bool {
        let mut joins = self.lock();
        joins.running.remove(&id);
        let last_revoked = joins.revoking.remove(&id) && joins.revoking.is_empty();
        let last_victim = joins.victims.remove(&id) && joins.victims.is_empty();
        last_victim || last_revoked
    }

    /// The operators to ask to spill so that about `want` bytes come back: those holding
    /// revocable memory, largest first, until their revocable bytes reach `want` (all of them
    /// if they do not). They are remembered until they answer ([`RunningJoins::revoked`]) or
    /// stop.
    pub(crate) fn choose_revocable(&self, want: usize) -> Revocation {
        let mut joins = self.lock();
        if !joins.revoking.is_empty() {
            return Revocation::Pending;
        }
        let mut sized: Vec<(u64, usize)> = joins
            .running
            .iter()
            .map(|(&id, op)| (id, op.revocable.load(Ordering::Relaxed)))
            .filter(|&(_, bytes)| bytes > 0)
            .collect();
        if sized.is_empty() {
            return Revocation::Nothing;
        }
        sized.sort_unstable_by_key(|&(id, bytes)| (std::cmp::Reverse(bytes), id));
        let mut chosen = Vec::new();
        let mut freed = 0;
        for (id, bytes) in sized {
            if freed >= want && !chosen.is_empty() {
                break;
            }
            freed += bytes;
            chosen.push((id, joins.running[&id].revoke.clone()));
        }
        joins.revoking.extend(chosen.iter().map(|&(id, _)| id));
        Revocation::Ask(chosen)
    }

    /// An operator asked to spill answered. Returns whether it was the last one asked.
    pub(crate) fn revoked(&self, id: u64) -> bool {
        let mut joins = self.lock();
        joins.revoking.remove(&id) && joins.revoking.is_empty()
    }

    /// Joins running now.
    #[cfg(test)]
    pub(crate) fn running(&self) -> usize {
        self.lock().running.len()
    }

    /// Starts a kill round: half of the joins that hold build memory (rounded up), chosen by
    /// `policy` with `rng`, become victims. None while the last round's victims still run, or
    /// when no join holds memory (killing one that holds none frees nothing).
    pub(crate) fn choose_victims(
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
            .filter(|(_, j)| j.killable)
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
    pub(crate) fn spared(&self, id: u64) -> bool {
        let mut joins = self.lock();
        joins.victims.remove(&id) && joins.victims.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

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

    impl Handler<Revoke> for FakeJoin {
        type Result = usize;

        fn handle(&mut self, _msg: Revoke, _ctx: &mut Context<Self>) -> usize {
            0
        }
    }

    fn fake(size: usize, revocable: usize, join: bool) -> Supervised {
        let addr = FakeJoin.start();
        Supervised {
            kill: addr.clone().recipient(),
            revoke: addr.recipient(),
            size: Arc::new(AtomicUsize::new(size)),
            revocable: Arc::new(AtomicUsize::new(revocable)),
            killable: join,
        }
    }

    #[test]
    fn revocation_asks_the_largest_holders_until_enough_and_waits_for_their_answers() {
        System::new().block_on(async {
            let ops = RunningJoins::default();
            let mut handles = Vec::new();
            for (id, revocable) in [(0, 0), (1, 300), (2, 100), (3, 500), (4, 200)] {
                let op = fake(revocable, revocable, id % 2 == 0);
                handles.push(op.revocable.clone());
                ops.enter(id, op);
            }
            let Revocation::Ask(asked) = ops.choose_revocable(700) else {
                panic!("memory is revocable");
            };
            let ids: Vec<u64> = asked.iter().map(|(id, _)| *id).collect();
            assert_eq!(ids, vec![3, 1], "largest first, until 700 bytes");
            assert!(matches!(ops.choose_revocable(1), Revocation::Pending));
            assert!(!ops.revoked(3));
            assert!(ops.leave(1), "the last one asked stopped");
            // Those that spilled hold nothing revocable any more.
            for id in [2, 3, 4] {
                handles[id].store(0, Ordering::Relaxed);
            }
            assert!(matches!(ops.choose_revocable(1), Revocation::Nothing));
        });
    }

    #[test]
    fn a_kill_round_takes_half_of_the_joins_that_hold_memory_and_ends_with_its_last_victim() {
        System::new().block_on(async {
            let joins = RunningJoins::default();
            let sizes: Vec<usize> = vec![0, 100, 200, 300, 0, 400, 500];
            for (id, &size) in sizes.iter().enumerate() {
                joins.enter(id as u64, fake(size, 0, true));
            }
            // An operator that may not be killed is never a victim.
            joins.enter(99, fake(1 << 20, 0, false));
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
            // Left running: 0 and 4 (no memory), 2, 5 (spared but still running), and 99.
            assert_eq!(joins.running(), 5);
            let random = joins
                .choose_victims(KillPolicy::RandomHalf, &mut rng)
                .expect("joins hold memory");
            assert_eq!(random.len(), 1);
            assert!([2, 5].contains(&random[0].0));
            assert!(joins.leave(random[0].0));
            for id in [0, 2, 4, 5, 99] {
                joins.leave(id);
            }
            assert_eq!(joins.running(), 0);
            assert!(joins
                .choose_victims(KillPolicy::RandomHalf, &mut rng)
                .is_none());
        });
    }
}
