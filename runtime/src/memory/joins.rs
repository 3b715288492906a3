//! The hash joins running on a node, which the breaker's supervisor may kill.
//!
//! The joins enter and leave the node's [`RunningJoins`] themselves, under a lock and without a
//! message, so that a query whose joins never meet an open breaker costs the supervisor nothing.

use crate::memory::breaker::KillPolicy;
use crate::memory::messages::Kill;
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
