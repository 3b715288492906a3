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
//! No more threads spin at once than the machine has cores: a thread that finds every slot
//! taken sleeps at once, so hundreds of waiting callers never spend the CPUs spinning.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// The default spin: a few times what a data node takes to answer a point query.
pub const DEFAULT_IDLE_SPIN: Duration = Duration::from_micros(200);

/// Threads of this process spinning now (see [`SpinSlot`]).
static SPINNING: AtomicUsize = AtomicUsize::new(0);

/// The right to spin: at most as many threads spin at once as the machine has cores, so that
/// spinners never crowd out threads with work (a benchmark with hundreds of waiting callers
/// would otherwise spend its CPUs spinning). A thread that gets no slot sleeps at once.
struct SpinSlot;

impl SpinSlot {
    fn take() -> Option<SpinSlot> {
        static CORES: OnceLock<usize> = OnceLock::new();
        let cores = *CORES.get_or_init(|| {
            std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
        });
        if SPINNING.fetch_add(1, Ordering::AcqRel) < cores {
            Some(SpinSlot)
        } else {
            SPINNING.fetch_sub(1, Ordering::AcqRel);
            None
        }
    }
}

impl Drop for SpinSlot {
    fn drop(&mut self) {
        SPINNING.fetch_sub(1, Ordering::AcqRel);
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
        let Some(_slot) = SpinSlot::take() else {
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
    let _slot = SpinSlot::take()?;
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
    fn no_more_threads_spin_than_the_machine_has_cores() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let slots: Vec<SpinSlot> = std::iter::from_fn(SpinSlot::take).take(cores + 1).collect();
        assert!(
            slots.len() <= cores,
            "{} slots on {cores} cores",
            slots.len()
        );
    }
}
