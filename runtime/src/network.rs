//! The simulated network between nodes: every message that crosses nodes is serialized with
//! bincode, counted by type and bytes (in total and per query), and decoded on arrival.
//! Messages between actors of one node never come here: they are moved.
//!
//! With a [`FaultPlan`] set, each transmission may be lost, corrupted, duplicated or delayed.
//! The network then behaves as a reliable transport over a lossy link: a transmission that
//! is lost or arrives corrupted is sent again after a retransmission timeout, so a fault
//! costs time rather than a failed query; receivers drop the duplicates this can cause.
//!
//! A batch is accounted on its receiving node while it travels: the sender reserves its bytes
//! in that node's pool ([`Network::pool`]) and the reservation goes along with the message
//! ([`Network::send_with`]), outside the encoded bytes, to the first copy that arrives intact.
//! A message lost for good returns it.

use crate::codec;
use crate::faults::{CrashNode, Delayer, FaultPlan};
use crate::memory::NodePool;
use crate::messages::{MessageKind, NetMessage, NodeId, QueryId};
use actix::prelude::*;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
use std::time::Instant;
use weir_operators::Reservation;

/// A message arriving at a node.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Deliver {
    /// Sending node.
    pub from: NodeId,
    /// Encoded message.
    pub bytes: Vec<u8>,
    /// A batch's bytes, accounted on the receiving node (not part of the encoded message).
    pub mem: Option<Reservation>,
}

/// Message and byte counters, by message kind.
#[derive(Debug, Default)]
pub struct MessageCounters {
    counts: [AtomicU64; MessageKind::ALL.len()],
    bytes: AtomicU64,
}

impl MessageCounters {
    fn record(&self, kind: MessageKind, bytes: usize) {
        let i = MessageKind::ALL
            .iter()
            .position(|k| *k == kind)
            .unwrap_or(0);
        self.counts[i].fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// A snapshot of the counters.
    pub fn snapshot(&self) -> MessageStats {
        let mut by_kind = BTreeMap::new();
        let mut total = 0;
        for (i, kind) in MessageKind::ALL.iter().enumerate() {
            let n = self.counts[i].load(Ordering::Relaxed);
            by_kind.insert(kind.name().to_string(), n);
            total += n;
        }
        MessageStats {
            by_kind,
            total,
            bytes: self.bytes.load(Ordering::Relaxed),
        }
    }
}

/// Messages that crossed nodes, by type, with their total and bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MessageStats {
    /// Count per message type name (every type present, zeros included).
    pub by_kind: BTreeMap<String, u64>,
    /// Total messages.
    pub total: u64,
    /// Total encoded bytes.
    pub bytes: u64,
}

impl MessageStats {
    /// Count of one kind.
    pub fn count(&self, kind: MessageKind) -> u64 {
        self.by_kind.get(kind.name()).copied().unwrap_or(0)
    }
}

struct Faults {
    plan: FaultPlan,
    rng: StdRng,
    batches_sent: std::collections::HashMap<NodeId, u64>,
}

/// Transmissions of one message before the transport gives up on it (the last retransmission
/// timeout is then about 2.5 s, the whole about 5 s).
pub const MAX_TRANSMISSIONS: u32 = 10;

/// How long the transport waits for transmission `attempt` (from 0) to arrive before sending
/// again: 10 ms, doubling, at most 2.5 s.
pub fn retransmission_timeout(attempt: u32) -> Duration {
    Duration::from_millis(10u64 << attempt.min(8)).min(Duration::from_millis(2_500))
}

/// The network: node mailboxes plus counters, and optionally injected faults.
#[derive(Default)]
pub struct Network {
    me: std::sync::Weak<Network>,
    retransmits: AtomicU64,
    given_up: AtomicU64,
    nodes: RwLock<Vec<Option<Recipient<Deliver>>>>,
    pools: RwLock<Vec<Option<Arc<NodePool>>>>,
    crash: RwLock<Vec<Option<Recipient<CrashNode>>>>,
    faults: Mutex<Option<Faults>>,
    /// Whether `faults` is set: the fault-free path reads this flag, not the lock.
    faulty: AtomicBool,
    delayer: Mutex<Option<Delayer>>,
    totals: MessageCounters,
    per_query: Mutex<HashMap<QueryId, Arc<MessageCounters>>>,
}

impl Network {
    /// A network with no nodes attached yet.
    pub fn new() -> Arc<Self> {
        Arc::new_cyclic(|me| Network {
            me: me.clone(),
            ..Network::default()
        })
    }

    /// Attaches (or, with `None`, detaches) node `id`'s mailbox.
    pub fn attach(&self, id: NodeId, mailbox: Option<Recipient<Deliver>>) {
        let mut nodes = self.nodes.write().unwrap_or_else(|e| e.into_inner());
        if nodes.len() <= id as usize {
            nodes.resize(id as usize + 1, None);
        }
        nodes[id as usize] = mailbox;
    }

    /// Makes node `id`'s memory pool known to senders on other nodes, which reserve room in it
    /// for the batches they send there.
    pub fn attach_pool(&self, id: NodeId, pool: Arc<NodePool>) {
        let mut pools = self.pools.write().unwrap_or_else(|e| e.into_inner());
        if pools.len() <= id as usize {
            pools.resize(id as usize + 1, None);
        }
        pools[id as usize] = Some(pool);
    }

    /// Node `id`'s memory pool, if known.
    pub fn pool(&self, id: NodeId) -> Option<Arc<NodePool>> {
        self.pools
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(id as usize)
            .cloned()
            .flatten()
    }

    /// Lets the network crash node `id` (for [`FaultPlan::crash_after`]).
    pub fn attach_crash(&self, id: NodeId, crash: Recipient<CrashNode>) {
        let mut c = self.crash.write().unwrap_or_else(|e| e.into_inner());
        if c.len() <= id as usize {
            c.resize(id as usize + 1, None);
        }
        c[id as usize] = Some(crash);
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

    /// Starts counting a query's messages separately; returns its counters.
    pub fn track_query(&self, query: QueryId) -> Arc<MessageCounters> {
        let c = Arc::new(MessageCounters::default());
        self.per_query
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(query, c.clone());
        c
    }

    /// Counts query `query`'s messages in `counters` (a retried query keeps its counters).
    pub fn track_query_as(&self, query: QueryId, counters: Arc<MessageCounters>) {
        self.per_query
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(query, counters);
    }

    /// Stops counting a query's messages separately (they still count in the totals).
    pub fn untrack_query(&self, query: QueryId) {
        self.per_query
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&query);
    }

    /// Serializes `msg`, counts it and delivers it to node `to`. A message to a detached
    /// (crashed) node is lost, as on a real network. Returns false when it was not delivered.
    pub fn send(&self, from: NodeId, to: NodeId, msg: &NetMessage) -> bool {
        self.send_with(from, to, msg, None)
    }

    /// [`Network::send`] with `mem`, a batch's reservation in node `to`'s pool: it travels with
    /// the message (to the first copy that arrives intact, across retransmissions) and is
    /// returned if the message is lost for good.
    pub fn send_with(
        &self,
        from: NodeId,
        to: NodeId,
        msg: &NetMessage,
        mem: Option<Reservation>,
    ) -> bool {
        debug_assert_ne!(from, to, "same-node messages must be moved, not sent");
        // A crashed (detached) node sends nothing.
        if self.mailbox(from).is_none() {
            return false;
        }
        let bytes = match codec::encode(msg) {
            Ok(b) => b,
            Err(e) => {
                tracing::error!("cannot encode {:?}: {e}", msg.kind());
                return false;
            }
        };
        let kind = msg.kind();
        self.totals.record(kind, bytes.len());
        let counters = self
            .per_query
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&msg.query())
            .cloned();
        if let Some(c) = counters {
            c.record(kind, bytes.len());
        }
        let Some(target) = self.mailbox(to).filter(|r| r.connected()) else {
            return false;
        };
        let bytes = codec::seal(bytes);
        if !self.faulty.load(Ordering::SeqCst) {
            target.do_send(Deliver { from, bytes, mem });
            return true;
        }
        let mut faults = self.faults.lock().unwrap_or_else(|e| e.into_inner());
        let Some(f) = faults.as_mut() else {
            drop(faults);
            target.do_send(Deliver { from, bytes, mem });
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
        self.transmit(from, to, bytes, mem, 0);
        if let Some(node) = crash {
            let c = self.crash.read().unwrap_or_else(|e| e.into_inner());
            if let Some(Some(r)) = c.get(node as usize) {
                r.do_send(CrashNode);
            }
        }
        true
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
        bytes: Vec<u8>,
        mem: Option<Reservation>,
        attempt: u32,
    ) {
        if self.mailbox(from).is_none() {
            return;
        }
        let Some(target) = self.mailbox(to).filter(|r| r.connected()) else {
            return;
        };
        let mut faults = self.faults.lock().unwrap_or_else(|e| e.into_inner());
        let Some(f) = faults.as_mut() else {
            drop(faults);
            target.do_send(Deliver { from, bytes, mem });
            return;
        };
        let lost = f.plan.cut_off.contains(&from)
            || f.plan.cut_off.contains(&to)
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
            let msg = Deliver { from, bytes, mem };
            match d {
                Some(d) => self.later(base + d, {
                    let target = target.clone();
                    Box::new(move || target.do_send(msg))
                }),
                None => target.do_send(msg),
            }
        }
        if let Some(bytes) = resend {
            if attempt + 1 < MAX_TRANSMISSIONS {
                self.retransmits.fetch_add(1, Ordering::Relaxed);
                let me = self.me.clone();
                self.later(
                    Instant::now() + retransmission_timeout(attempt),
                    Box::new(move || {
                        if let Some(net) = me.upgrade() {
                            net.transmit(from, to, bytes, resend_mem, attempt + 1);
                        }
                    }),
                );
            } else {
                self.given_up.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn later(&self, at: Instant, action: crate::faults::Action) {
        let mut delayer = self.delayer.lock().unwrap_or_else(|e| e.into_inner());
        delayer
            .get_or_insert_with(Delayer::start)
            .run_at(at, action);
    }

    /// Messages sent again because a transmission was lost or arrived corrupted.
    pub fn retransmits(&self) -> u64 {
        self.retransmits.load(Ordering::Relaxed)
    }

    /// Messages given up on after [`MAX_TRANSMISSIONS`] failed transmissions.
    pub fn given_up(&self) -> u64 {
        self.given_up.load(Ordering::Relaxed)
    }

    /// Delivers raw bytes to node `to` without counting (fault tests forge messages with it).
    pub fn send_raw(&self, from: NodeId, to: NodeId, bytes: Vec<u8>) {
        if let Some(r) = self.mailbox(to) {
            r.do_send(Deliver {
                from,
                bytes,
                mem: None,
            });
        }
    }

    fn mailbox(&self, to: NodeId) -> Option<Recipient<Deliver>> {
        self.nodes
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(to as usize)
            .cloned()
            .flatten()
    }

    /// Totals since the cluster started.
    pub fn totals(&self) -> MessageStats {
        self.totals.snapshot()
    }
}
