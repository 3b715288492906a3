//! How the runtime's threads wait for work: a short spin before they sleep.
//!
//! A point query hands work from thread to thread a few times (caller → client node → data
//! node → client node → caller). When a thread has gone to sleep, waking it costs a system
//! call on the waker's side and a scheduler wake-up on the sleeper's, which on a virtual
//! machine whose CPU has halted is tens of microseconds: far more than the work itself. So a
//! node's thread, and a caller waiting for its next batch, keep looking for work for a short
//! while after their last work ([`ClusterBuilder::idle_spin`](crate::ClusterBuilder::idle_spin)),
//! yielding the CPU to any other thread that wants it, and only then sleep. Work that arrives
//! while a thread spins is taken at once; a thread that finds none has spent at most the spin.
//!
//! On a node's thread the spin is a task of its own (`keep_awake`): woken when the thread
//! wakes up, it yields to the thread's other tasks and to other threads until no work has
//! come for the spin, then waits for the next wake-up. Work is what `note_work` marks: the
//! node actor marks every message from another node, the query actor what its caller sends.
//!
//! No more node threads spin at once than the machine has cores, and no more waiting callers:
//! a thread that finds every slot of its kind taken sleeps at once, so hundreds of waiting
//! callers never spend the CPUs spinning, and node threads spinning after their work never
//! take the slot of a caller waiting for its answer.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// The default spin: a few times what a data node takes to answer a point query.
pub const DEFAULT_IDLE_SPIN: Duration = Duration::from_micros(200);

/// Node threads of this process spinning now (see [`SpinSlot`]).
static NODES_SPINNING: AtomicUsize = AtomicUsize::new(0);

/// Callers of this process spinning for their queries' next batches now (see [`SpinSlot`]).
static CALLERS_SPINNING: AtomicUsize = AtomicUsize::new(0);

/// The right to spin: at most as many node threads spin at once as the machine has cores,
/// and at most as many waiting callers, so that spinners never crowd out threads with work
/// (a benchmark with hundreds of waiting callers would otherwise spend its CPUs spinning). A
/// thread that gets no slot sleeps at once. Callers and node threads count apart: a caller
/// waiting for the answer of the query it just started is the likeliest spinner to be
/// answered within its spin, and node threads that spin on speculation after their last work
/// (as they do once they ran that query's fragments) must not take its slot, or its answer
/// costs a task wake-up (through a server's async runtime, tens of microseconds more).
struct SpinSlot(&'static AtomicUsize);

impl SpinSlot {
    fn take(pool: &'static AtomicUsize) -> Option<SpinSlot> {
        static CORES: OnceLock<usize> = OnceLock::new();
        let cores = *CORES.get_or_init(|| {
            std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
        });
        if pool.fetch_add(1, Ordering::AcqRel) < cores {
            Some(SpinSlot(pool))
        } else {
            pool.fetch_sub(1, Ordering::AcqRel);
            None
        }
    }
}

impl Drop for SpinSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

thread_local! {
    /// Work items marked on this thread (see [`note_work`]).
    static WORK: Cell<u64> = const { Cell::new(0) };
    /// This thread's spinning task, while it waits for work.
    static SLEEPING_SPINNER: RefCell<Option<Arc<Notify>>> = const { RefCell::new(None) };
}

/// Marks that work arrived on this thread: its spinning task (if it has one) starts
/// spinning, or keeps on.
pub(crate) fn note_work() {
    WORK.with(|w| w.set(w.get().wrapping_add(1)));
    if let Some(spinner) = SLEEPING_SPINNER.with(|s| s.borrow_mut().take()) {
        spinner.notify_one();
    }
}

fn work_seen() -> u64 {
    WORK.with(Cell::get)
}

/// An arbiter (an actor thread) that spins for up to `spin` after its last work before it
/// sleeps (a plain arbiter when `spin` is zero).
pub(crate) fn arbiter(spin: Duration) -> actix::Arbiter {
    let arbiter = actix::Arbiter::new();
    if !spin.is_zero() {
        arbiter.spawn(keep_awake(spin));
    }
    arbiter
}

/// The spinning task of a node's thread (see the module comment).
async fn keep_awake(spin: Duration) {
    let wake = Arc::new(Notify::new());
    loop {
        SLEEPING_SPINNER.with(|s| *s.borrow_mut() = Some(wake.clone()));
        wake.notified().await;
        let Some(_slot) = SpinSlot::take(&NODES_SPINNING) else {
            continue;
        };
        let mut seen = work_seen();
        let mut until = Instant::now() + spin;
        loop {
            std::thread::yield_now();
            tokio::task::yield_now().await;
            let now = Instant::now();
            let work = work_seen();
            if work != seen {
                seen = work;
                until = now + spin;
            } else if now >= until {
                break;
            }
        }
    }
}

/// Calls `attempt` until it gives a value or `limit` has passed (yielding between calls);
/// `None` if it never did. Spinning needs a free slot (see [`SpinSlot`]): without one, it
/// calls `attempt` once.
pub(crate) fn spin_for<T>(limit: Duration, mut attempt: impl FnMut() -> Option<T>) -> Option<T> {
    if let Some(v) = attempt() {
        return Some(v);
    }
    if limit.is_zero() {
        return None;
    }
    let _slot = SpinSlot::take(&CALLERS_SPINNING)?;
    retry_for(limit, attempt)
}

/// [`spin_for`] without the slot.
fn retry_for<T>(limit: Duration, mut attempt: impl FnMut() -> Option<T>) -> Option<T> {
    let start = Instant::now();
    loop {
        if let Some(v) = attempt() {
            return Some(v);
        }
        if start.elapsed() >= limit {
            return None;
        }
        std::thread::yield_now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_for_returns_the_first_value_and_gives_up_after_the_limit() {
        let mut calls = 0;
        let got = retry_for(Duration::from_secs(5), || {
            calls += 1;
            (calls == 3).then_some(calls)
        });
        assert_eq!(got, Some(3));
        let none: Option<()> = retry_for(Duration::from_micros(200), || None);
        assert_eq!(none, None);
    }

    #[test]
    fn no_more_threads_of_a_kind_spin_than_the_machine_has_cores() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        for pool in [&NODES_SPINNING, &CALLERS_SPINNING] {
            let slots: Vec<SpinSlot> = std::iter::from_fn(|| SpinSlot::take(pool))
                .take(cores + 1)
                .collect();
            assert!(
                slots.len() <= cores,
                "{} slots on {cores} cores",
                slots.len()
            );
        }
    }

    #[test]
    fn node_threads_spinning_leave_waiting_callers_their_slots() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let nodes: Vec<SpinSlot> = std::iter::from_fn(|| SpinSlot::take(&NODES_SPINNING))
            .take(cores)
            .collect();
        assert_eq!(nodes.len(), cores);
        // A caller still spins for its answer, which comes on its third look.
        let mut looks = 0;
        let got = spin_for(Duration::from_secs(5), || {
            looks += 1;
            (looks == 3).then_some(looks)
        });
        assert_eq!(got, Some(3));
    }
}
