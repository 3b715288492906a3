//! The network between nodes, and the transport boundary under it.
//!
//! Every message that crosses nodes comes through [`Network::send_with`]: it is serialized
//! with bincode ([`codec::encode`]), counted by type and bytes (in total and per query,
//! [`counters`]), sealed with a checksum ([`codec::seal`]), and handed as an [`Outgoing`]
//! frame to a carrier, a [`Transport`]. The carrier only moves bytes; the receiving node's
//! actor unseals and decodes them from its [`Deliver`] message. Actors, the lean protocol,
//! replication and the breaker only ever talk to the [`Network`], so they do not know which
//! carrier moved their bytes. Messages between actors of one node never come here: they are
//! moved.
//!
//! Two carriers exist:
//! - [`simulated::Simulated`] reaches the nodes attached in this process (their mailboxes)
//!   and injects the faults of a [`FaultPlan`] when one is set;
//! - [`tcp::TcpTransport`] reaches nodes in other processes over authenticated TCP
//!   connections ([`framing`](crate::wire::framing) has the handshake). It is set with [`Network::set_remote`] and
//!   carries every frame for a node that is not attached here.
//!
//! A batch is accounted on its receiving node while it travels: the sender reserves its bytes
//! in that node's pool ([`Network::pool`]) and the reservation goes along with the message
//! ([`Network::send_with`]), outside the encoded bytes, to the first copy that arrives intact.
//! A message lost for good returns it. (A remote node's pool is not known here, so a batch to
//! another process travels without one and is accounted when it arrives.)

use crate::memory::pool::NodePool;
use crate::wire::codec;
use crate::wire::faults::{CrashNode, FaultPlan};
use crate::wire::messages::{MessageKind, NetMessage, NodeId, QueryId};
use actix::prelude::*;
use std::sync::{Arc, OnceLock, RwLock, Weak};
use weir_operators::Reservation;

use crate::wire::counters::{self, MessageCounters, MessageStats};
use crate::wire::simulated::{self};
use crate::wire::tcp;

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
    /// Whether it came from another process (over a remote carrier): such a message was
    /// counted by its sender's network, not this one, so the receiver counts it on arrival
    /// ([`Network::count_arrival`]).
    pub remote: bool,
}

/// One sealed message on its way to another node, as a carrier gets it.
pub struct Outgoing {
    /// Sending node.
    pub from: NodeId,
    /// Receiving node.
    pub to: NodeId,
    /// What the bytes encode (already counted).
    pub kind: MessageKind,
    /// The encoded, sealed message.
    pub bytes: Vec<u8>,
    /// A batch's reservation on the receiving node, if the sender could make one.
    pub mem: Option<Reservation>,
}

/// A carrier of sealed frames between nodes: the boundary under [`Network`].
///
/// A carrier neither encodes nor counts; it moves bytes and tells whether it took them.
pub trait Transport: Send + Sync {
    /// Whether node `to` is reachable through this carrier (attached here, or a known peer).
    fn reaches(&self, to: NodeId) -> bool;
    /// Takes `frame` towards its node. False when the frame was not taken (the node is
    /// unknown, down or not connected): it is lost, as on a real network.
    fn carry(&self, frame: Outgoing) -> bool;
}

/// Node mailboxes, pools and crash switches of the nodes attached in this process.
#[derive(Default)]
pub(crate) struct LocalNodes {
    mailboxes: RwLock<Vec<Option<Recipient<Deliver>>>>,
    pools: RwLock<Vec<Option<Arc<NodePool>>>>,
    crash: RwLock<Vec<Option<Recipient<CrashNode>>>>,
}

fn put<T: Clone>(slots: &RwLock<Vec<Option<T>>>, id: NodeId, value: Option<T>) {
    let mut slots = slots.write().unwrap_or_else(|e| e.into_inner());
    if slots.len() <= id as usize {
        slots.resize(id as usize + 1, None);
    }
    slots[id as usize] = value;
}

fn get<T: Clone>(slots: &RwLock<Vec<Option<T>>>, id: NodeId) -> Option<T> {
    slots
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .get(id as usize)
        .cloned()
        .flatten()
}

impl LocalNodes {
    /// Node `id`'s mailbox, if it is attached.
    pub(crate) fn mailbox(&self, id: NodeId) -> Option<Recipient<Deliver>> {
        get(&self.mailboxes, id)
    }

    /// Node `id`'s crash switch, if any.
    pub(crate) fn crash(&self, id: NodeId) -> Option<Recipient<CrashNode>> {
        get(&self.crash, id)
    }
}

/// The network: the counters above the transport boundary, the simulated carrier to the nodes
/// of this process and, optionally, a remote carrier to nodes of other processes.
pub struct Network {
    me: Weak<Network>,
    nodes: Arc<LocalNodes>,
    counters: counters::Counters,
    simulated: Arc<simulated::Simulated>,
    remote: OnceLock<Arc<dyn Transport>>,
}

impl Network {
    /// A network with no nodes attached yet.
    pub fn new() -> Arc<Self> {
        let nodes = Arc::new(LocalNodes::default());
        Arc::new_cyclic(|me| Network {
            me: me.clone(),
            simulated: simulated::Simulated::new(nodes.clone()),
            nodes,
            counters: Default::default(),
            remote: OnceLock::new(),
        })
    }

    /// Attaches (or, with `None`, detaches) node `id`'s mailbox.
    pub fn attach(&self, id: NodeId, mailbox: Option<Recipient<Deliver>>) {
        put(&self.nodes.mailboxes, id, mailbox);
    }

    /// Makes node `id`'s memory pool known to senders on other nodes, which reserve room in it
    /// for the batches they send there.
    pub fn attach_pool(&self, id: NodeId, pool: Arc<NodePool>) {
        put(&self.nodes.pools, id, Some(pool));
    }

    /// Node `id`'s memory pool, if known.
    pub fn pool(&self, id: NodeId) -> Option<Arc<NodePool>> {
        get(&self.nodes.pools, id)
    }

    /// Lets the network crash node `id` (for [`FaultPlan::crash_after`]).
    pub fn attach_crash(&self, id: NodeId, crash: Recipient<CrashNode>) {
        put(&self.nodes.crash, id, Some(crash));
    }

    /// Carries every frame for a node not attached here through `remote` (e.g. a
    /// [`tcp::TcpTransport`]). Set once; false if a remote carrier was already set.
    pub fn set_remote(&self, remote: Arc<dyn Transport>) -> bool {
        self.remote.set(remote).is_ok()
    }

    /// What a remote carrier calls with a frame that arrived for node `to` of this process:
    /// it goes to that node's mailbox, which unseals and decodes it. The closure holds the
    /// network weakly (a carrier set with [`Network::set_remote`] does not keep it alive).
    pub fn inbound(&self, to: NodeId) -> tcp::Inbound {
        let me = self.me.clone();
        Arc::new(move |from, bytes| {
            let Some(net) = me.upgrade() else {
                return false;
            };
            match net.nodes.mailbox(to).filter(|r| r.connected()) {
                Some(r) => {
                    r.do_send(Deliver {
                        from,
                        bytes,
                        mem: None,
                        remote: true,
                    });
                    true
                }
                None => false,
            }
        })
    }

    /// Injects faults on the simulated carrier from now on (`None`: a healthy network again).
    /// A remote carrier is not affected.
    pub fn set_faults(&self, plan: Option<FaultPlan>) {
        self.simulated.set_faults(plan);
    }

    /// Starts counting a query's messages separately; returns its counters.
    pub fn track_query(&self, query: QueryId) -> Arc<MessageCounters> {
        let c = Arc::new(MessageCounters::default());
        self.counters.track(query, c.clone());
        c
    }

    /// Counts query `query`'s messages in `counters` (a retried query keeps its counters).
    pub fn track_query_as(&self, query: QueryId, counters: Arc<MessageCounters>) {
        self.counters.track(query, counters);
    }

    /// Stops counting a query's messages separately (they still count in the totals).
    pub fn untrack_query(&self, query: QueryId) {
        self.counters.untrack(query);
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
        if self.nodes.mailbox(from).is_none() {
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
        self.counters.record(msg.query(), kind, bytes.len());
        let frame = Outgoing {
            from,
            to,
            kind,
            bytes: codec::seal(bytes),
            mem,
        };
        if let Some(target) = self.nodes.mailbox(to) {
            return self.simulated.deliver(target, frame);
        }
        match self.remote.get() {
            Some(remote) => remote.carry(frame),
            None => false,
        }
    }

    /// Counts a message that arrived from another process (its sender counted it there), so
    /// that this process's counters hold every message to or from its nodes: a query's
    /// counters on a client of remote data nodes then hold its messages both ways, as in
    /// process. (Messages between two data nodes of other processes are not seen here.)
    pub fn count_arrival(&self, query: QueryId, kind: MessageKind, bytes: usize) {
        self.counters.record(query, kind, bytes);
    }

    /// Messages sent again because a transmission was lost or arrived corrupted.
    pub fn retransmits(&self) -> u64 {
        self.simulated.retransmits()
    }

    /// Messages given up on after [`MAX_TRANSMISSIONS`](crate::wire::simulated::MAX_TRANSMISSIONS) failed transmissions.
    pub fn given_up(&self) -> u64 {
        self.simulated.given_up()
    }

    /// Delivers raw bytes to node `to` without counting (fault tests forge messages with it).
    pub fn send_raw(&self, from: NodeId, to: NodeId, bytes: Vec<u8>) {
        if let Some(r) = self.nodes.mailbox(to) {
            r.do_send(Deliver {
                from,
                bytes,
                mem: None,
                remote: false,
            });
        }
    }

    /// Totals since the cluster started.
    pub fn totals(&self) -> MessageStats {
        self.counters.totals()
    }
}
