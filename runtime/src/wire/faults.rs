//! Seeded fault injection for the simulated network: lost, delayed, duplicated and corrupted
//! messages, nodes cut off, and a node that crashes after its k-th batch.

use crate::wire::ids::NodeId;
use crate::wire::messages::MessageKind;
use crossbeam_channel::{Receiver, Sender};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

/// What can go wrong on the network, each decided by a seeded coin.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FaultPlan {
    /// Seed of every coin.
    pub seed: u64,
    /// Probability that a message is lost.
    pub drop: f64,
    /// Probability that a message is delivered twice.
    pub duplicate: f64,
    /// Probability that one byte of a message is flipped.
    pub corrupt: f64,
    /// Extra delay of every message, uniform in this range.
    pub delay: Option<(Duration, Duration)>,
    /// Nodes that neither send nor receive.
    pub cut_off: Vec<NodeId>,
    /// Messages of a kind to or from a node that are lost, and lost again when retransmitted,
    /// while this plan holds: a node that never gets a write's commit, say.
    pub lose: Vec<(NodeId, MessageKind)>,
    /// Crash this node right after it sent this many batches.
    pub crash_after: Option<(NodeId, u64)>,
}

/// Something to do later: deliver a delayed message, or retransmit a lost one.
pub type Action = Box<dyn FnOnce() + Send>;

struct Delayed {
    at: Instant,
    seq: u64,
    action: Action,
}

impl PartialEq for Delayed {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for Delayed {}
impl PartialOrd for Delayed {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Delayed {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(o.at, o.seq))
    }
}

/// A thread that runs actions (delayed deliveries, retransmissions) when their time comes.
pub struct Delayer {
    tx: Sender<(Instant, Action)>,
}

impl Delayer {
    /// Starts the timer thread; it ends when the delayer is dropped.
    pub fn start() -> Self {
        let (tx, rx) = crossbeam_channel::unbounded();
        std::thread::Builder::new()
            .name("weir-delayer".into())
            .spawn(move || run(rx))
            .expect("spawn delayer thread");
        Delayer { tx }
    }

    /// Runs `action` at `at`.
    pub fn run_at(&self, at: Instant, action: Action) {
        let _ = self.tx.send((at, action));
    }
}

fn run(rx: Receiver<(Instant, Action)>) {
    let mut heap: BinaryHeap<Reverse<Delayed>> = BinaryHeap::new();
    let mut seq = 0u64;
    loop {
        let now = Instant::now();
        while heap.peek().is_some_and(|Reverse(d)| d.at <= now) {
            if let Some(Reverse(d)) = heap.pop() {
                (d.action)();
            }
        }
        let wait = heap
            .peek()
            .map_or(Duration::from_millis(100), |Reverse(d)| {
                d.at.saturating_duration_since(now)
            });
        match rx.recv_timeout(wait) {
            Ok((at, action)) => {
                seq += 1;
                heap.push(Reverse(Delayed { at, seq, action }));
            }
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => {}
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
                // Run what is left, then stop.
                for Reverse(d) in heap.drain() {
                    (d.action)();
                }
                return;
            }
        }
    }
}
