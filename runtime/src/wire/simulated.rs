//! The simulated carrier: delivers frames between nodes of this process, straight into the
//! receiving node's inbox, and injects the faults of a [`FaultPlan`] when one is set.
//!
//! With a plan set, each transmission may be lost, corrupted, duplicated or delayed. The
//! carrier then behaves as a reliable transport over a lossy link: a transmission that is lost
//! or arrives corrupted is sent again after a retransmission timeout, so a fault costs time
//! rather than a failed query; receivers drop the duplicates this can cause.
//!
//! Without a plan a frame costs one atomic load and a send to the node's inbox: no lock, no copy.

use crate::wire::carrier::{Deliver, Inbox, LocalNodes, Outgoing, Transport};
use crate::wire::faults::{Delayer, FaultPlan};
use crate::wire::ids::NodeId;
use crate::wire::messages::MessageKind;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};
use weir_operators::Reservation;

/// Transmissions of one message before the transport gives up on it (the last retransmission
/// timeout is then about 2.5 s, the whole about 5 s).
pub const MAX_TRANSMISSIONS: u32 = 10;

/// How long the transport waits for transmission `attempt` (from 0) to arrive before sending
/// again: 10 ms, doubling, at most 2.5 s.
pub fn retransmission_timeout(attempt: u32) -> Duration {
    Duration::from_millis(10u64 << attempt.min(8)).min(Duration::from_millis(2_500))
}

struct Faults {
    plan: FaultPlan,
    rng: StdRng,
    batches_sent: HashMap<NodeId, u64>,
}

/// The in-process carrier, with optional fault injection.
pub struct Simulated {
    me: Weak<Simulated>,
    nodes: Arc<LocalNodes>,
    faults: Mutex<Option<Faults>>,
    /// Whether `faults` is set: the fault-free path reads this flag, not the lock.
    faulty: AtomicBool,
    delayer: Mutex<Option<Delayer>>,
    retransmits: AtomicU64,
    given_up: AtomicU64,
}

impl Simulated {
    /// A carrier between the nodes of `nodes`.
    pub(super) fn new(nodes: Arc<LocalNodes>) -> Arc<Self> {
        Arc::new_cyclic(|me| Simulated {
            me: me.clone(),
            nodes,
            faults: Mutex::new(None),
            faulty: AtomicBool::new(false),
            delayer: Mutex::new(None),
            retransmits: AtomicU64::new(0),
            given_up: AtomicU64::new(0),
        })
    }

    /// Injects faults from now on (`None`: a healthy network again).
    pub fn set_faults(&self, plan: Option<FaultPlan>) {
        let mut f = self.faults.lock().unwrap_or_else(|e| e.into_inner());
        self.faulty.store(plan.is_some(), Ordering::SeqCst);
        *f = plan.map(|plan| Faults {
            rng: StdRng::seed_from_u64(plan.seed),
            plan,
            batches_sent: Default::default(),
        });
    }

    /// Messages sent again because a transmission was lost or arrived corrupted.
    pub fn retransmits(&self) -> u64 {
        self.retransmits.load(Ordering::Relaxed)
    }

    /// Messages given up on after [`MAX_TRANSMISSIONS`] failed transmissions.
    pub fn given_up(&self) -> u64 {
        self.given_up.load(Ordering::Relaxed)
    }

    /// One transmission of sealed `bytes` over the faulty network (attempt `attempt`, from 0).
    /// A transmission that is lost or arrives corrupted is sent again after a retransmission
    /// timeout that doubles each time, as a reliable transport would, until
    /// [`MAX_TRANSMISSIONS`]; a copy may still arrive twice (at least once, never changed), and
    /// receivers drop duplicates. A message to or from a crashed node is lost for good.
    fn transmit(
        &self,
        from: NodeId,
        to: NodeId,
        kind: MessageKind,
        bytes: Vec<u8>,
        mem: Option<Reservation>,
        attempt: u32,
    ) {
        if self.nodes.inbox(from).is_none() {
            return;
        }
        let Some(target) = self.nodes.inbox(to).filter(|r| r.is_open()) else {
            return;
        };
        let mut faults = self.faults.lock().unwrap_or_else(|e| e.into_inner());
        let Some(f) = faults.as_mut() else {
            drop(faults);
            target.deliver(Deliver {
                from,
                bytes,
                mem,
                remote: false,
            });
            return;
        };
        let lost = f.plan.cut_off.contains(&from)
            || f.plan.cut_off.contains(&to)
            || f.plan
                .lose
                .iter()
                .any(|&(n, k)| k == kind && (n == from || n == to))
            || f.rng.random_bool(f.plan.drop.clamp(0.0, 1.0));
        let corrupt_at = (!lost
            && !bytes.is_empty()
            && f.rng.random_bool(f.plan.corrupt.clamp(0.0, 1.0)))
        .then(|| {
            (
                f.rng.random_range(0..bytes.len()),
                f.rng.random_range(0..8u32),
            )
        });
        let copies = if lost {
            0
        } else if f.rng.random_bool(f.plan.duplicate.clamp(0.0, 1.0)) {
            2
        } else {
            1
        };
        let delays: Vec<Option<Duration>> = (0..copies)
            .map(|_| {
                f.plan.delay.map(|(lo, hi)| {
                    let span = hi.saturating_sub(lo).as_micros() as u64;
                    lo + Duration::from_micros(if span == 0 {
                        0
                    } else {
                        f.rng.random_range(0..=span)
                    })
                })
            })
            .collect();
        drop(faults);
        // The transport keeps the bytes until the receiver has them intact.
        let resend = (lost || corrupt_at.is_some()).then(|| bytes.clone());
        let last = delays.len().saturating_sub(1);
        let mut bytes = Some(bytes);
        // The reservation goes with the resend, or else with the copy that arrives first (the
        // shortest delay; the first of equal ones, which the delayer runs first).
        let mut mem = Some(mem);
        let mut resend_mem = None;
        let first = delays
            .iter()
            .enumerate()
            .min_by_key(|(_, d)| d.unwrap_or_default())
            .map(|(k, _)| k);
        if resend.is_some() {
            resend_mem = mem.take().flatten();
        }
        let base = Instant::now();
        for (k, d) in delays.into_iter().enumerate() {
            // Only a duplicate needs a copy; the last delivery takes the bytes.
            let mut bytes = if k == last {
                bytes.take().unwrap_or_default()
            } else {
                bytes.clone().unwrap_or_default()
            };
            if let Some((i, bit)) = corrupt_at {
                bytes[i] ^= 1 << bit;
            }
            let mem = if Some(k) == first {
                mem.take().flatten()
            } else {
                None
            };
            let msg = Deliver {
                from,
                bytes,
                mem,
                remote: false,
            };
            match d {
                Some(d) => self.later(base + d, {
                    let target = target.clone();
                    Box::new(move || target.deliver(msg))
                }),
                None => target.deliver(msg),
            }
        }
        if let Some(bytes) = resend {
            if attempt + 1 < MAX_TRANSMISSIONS {
                self.retransmits.fetch_add(1, Ordering::Relaxed);
                let me = self.me.clone();
                self.later(
                    Instant::now() + retransmission_timeout(attempt),
                    Box::new(move || {
                        if let Some(carrier) = me.upgrade() {
                            carrier.transmit(from, to, kind, bytes, resend_mem, attempt + 1);
                        }
                    }),
                );
            } else {
                self.given_up.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn later(&self, at: Instant, action: crate::wire::faults::Action) {
        let mut delayer = self.delayer.lock().unwrap_or_else(|e| e.into_inner());
        delayer
            .get_or_insert_with(Delayer::start)
            .run_at(at, action);
    }
}

impl Transport for Simulated {
    fn reaches(&self, to: NodeId) -> bool {
        self.nodes.inbox(to).is_some()
    }

    fn carry(&self, frame: Outgoing) -> bool {
        match self.nodes.inbox(frame.to) {
            Some(target) => self.deliver(target, frame),
            None => false,
        }
    }
}

impl Simulated {
    /// Carries `frame` to `target`, the inbox of its node (which must be attached here).
    pub(super) fn deliver(&self, target: Arc<dyn Inbox>, frame: Outgoing) -> bool {
        let Outgoing {
            from,
            to,
            kind,
            bytes,
            mem,
        } = frame;
        if !target.is_open() {
            return false;
        }
        if !self.faulty.load(Ordering::SeqCst) {
            target.deliver(Deliver {
                from,
                bytes,
                mem,
                remote: false,
            });
            return true;
        }
        let mut faults = self.faults.lock().unwrap_or_else(|e| e.into_inner());
        let Some(f) = faults.as_mut() else {
            drop(faults);
            target.deliver(Deliver {
                from,
                bytes,
                mem,
                remote: false,
            });
            return true;
        };
        let mut crash = None;
        if kind == MessageKind::QueryBatch {
            let sent = f.batches_sent.entry(from).or_default();
            *sent += 1;
            if f.plan.crash_after == Some((from, *sent)) {
                crash = Some(from);
            }
        }
        drop(faults);
        self.transmit(from, to, kind, bytes, mem, 0);
        if let Some(node) = crash {
            if let Some(inbox) = self.nodes.inbox(node) {
                inbox.crash();
            }
        }
        true
    }
}
