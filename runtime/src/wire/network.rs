//! The network between nodes, and the transport boundary under it.
//!
//! Every message that crosses nodes comes through [`Network::send_with`]: it is serialized
//! with bincode ([`codec::encode`]), counted by type and bytes (in total and per query,
//! [`counters`]), sealed with a checksum ([`codec::seal`]), and handed as an [`Outgoing`]
//! frame to a carrier, a [`Transport`]. The carrier only moves bytes, into the receiving
//! node's [`Inbox`] as a [`Deliver`]; the node's actor unseals and decodes them. Actors, the lean protocol,
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
//! in that node's pool and the reservation goes along with the message
//! ([`Network::send_with`]), outside the encoded bytes, to the first copy that arrives intact.
//! A message lost for good returns it. (A remote node's pool is not known here, so a batch to
//! another process travels without one and is accounted when it arrives.)

use crate::wire::carrier::{Deliver, Inbox, LocalNodes, Outgoing, Transport};
use crate::wire::codec;
use crate::wire::counters::{self, MessageCounters, MessageStats};
use crate::wire::faults::FaultPlan;
use crate::wire::ids::{NodeId, QueryId};
use crate::wire::messages::{MessageKind, NetMessage};
use crate::wire::simulated;
use crate::wire::tcp;
use std::sync::{Arc, OnceLock, Weak};
use weir_operators::Reservation;

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

    /// Attaches (or, with `None`, detaches: a crashed node) node `id`'s inbox.
    pub fn attach(&self, id: NodeId, inbox: Option<Arc<dyn Inbox>>) {
        self.nodes.attach(id, inbox);
    }

    /// Carries every frame for a node not attached here through `remote` (e.g. a
    /// [`tcp::TcpTransport`]). Set once; false if a remote carrier was already set.
    pub fn set_remote(&self, remote: Arc<dyn Transport>) -> bool {
        self.remote.set(remote).is_ok()
    }

    /// What a remote carrier calls with a frame that arrived for node `to` of this process:
    /// it goes to that node's inbox, whose actor unseals and decodes it. The closure holds the
    /// network weakly (a carrier set with [`Network::set_remote`] does not keep it alive).
    pub fn inbound(&self, to: NodeId) -> tcp::Inbound {
        let me = self.me.clone();
        Arc::new(move |from, bytes| {
            let Some(net) = me.upgrade() else {
                return false;
            };
            match net.nodes.inbox(to).filter(|r| r.is_open()) {
                Some(r) => {
                    r.deliver(Deliver {
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
        if self.nodes.inbox(from).is_none() {
            return false;
        }
        let bytes = match codec::encode_sized(msg, msg.rows_bytes() + 256) {
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
        if let Some(target) = self.nodes.inbox(to) {
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
        if let Some(r) = self.nodes.inbox(to) {
            r.deliver(Deliver {
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
