//! The transport boundary under the network: the frame a carrier moves ([`Outgoing`]), the
//! carriers' interface ([`Transport`]), and what a frame becomes when it reaches a node of this
//! process ([`Deliver`], handed to the node's [`Inbox`]).

use crate::wire::ids::NodeId;
use crate::wire::messages::MessageKind;
use std::sync::{Arc, RwLock};
use weir_operators::Reservation;

/// A message arriving at a node.
pub struct Deliver {
    /// Sending node.
    pub from: NodeId,
    /// Encoded message.
    pub bytes: Vec<u8>,
    /// A batch's bytes, accounted on the receiving node (not part of the encoded message).
    pub mem: Option<Reservation>,
    /// Whether it came from another process (over a remote carrier): such a message was
    /// counted by its sender's network, not this one, so the receiver counts it on arrival
    /// ([`Network::count_arrival`](crate::wire::network::Network::count_arrival)).
    pub remote: bool,
}

impl std::fmt::Debug for Deliver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deliver")
            .field("from", &self.from)
            .field("bytes", &self.bytes.len())
            .field("remote", &self.remote)
            .finish()
    }
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

/// A carrier of sealed frames between nodes: the boundary under the
/// [`Network`](crate::wire::network::Network).
///
/// A carrier neither encodes nor counts; it moves bytes and tells whether it took them.
pub trait Transport: Send + Sync {
    /// Whether node `to` is reachable through this carrier (attached here, or a known peer).
    fn reaches(&self, to: NodeId) -> bool;
    /// Takes `frame` towards its node. False when the frame was not taken (the node is
    /// unknown, down or not connected): it is lost, as on a real network.
    fn carry(&self, frame: Outgoing) -> bool;
}

/// Where the network hands a node its messages: the node's door, whatever actor sits behind
/// it. The network knows no actor of weir's; a node attaches its inbox with
/// [`Network::attach`](crate::wire::network::Network::attach).
pub trait Inbox: Send + Sync {
    /// Hands `msg` to the node (its actor unseals and decodes the bytes).
    fn deliver(&self, msg: Deliver);
    /// Whether the node still takes messages (its actor runs).
    fn is_open(&self) -> bool;
    /// Crashes the node: the fault a [`FaultPlan::crash_after`](crate::wire::faults::FaultPlan::crash_after) injects.
    fn crash(&self);
}

/// The inboxes of the nodes attached in this process, by node id.
#[derive(Default)]
pub(crate) struct LocalNodes {
    inboxes: RwLock<Vec<Option<Arc<dyn Inbox>>>>,
}

impl LocalNodes {
    /// Attaches (or, with `None`, detaches) node `id`'s inbox.
    pub(crate) fn attach(&self, id: NodeId, inbox: Option<Arc<dyn Inbox>>) {
        let mut slots = self.inboxes.write().unwrap_or_else(|e| e.into_inner());
        if slots.len() <= id as usize {
            slots.resize(id as usize + 1, None);
        }
        slots[id as usize] = inbox;
    }

    /// Node `id`'s inbox, if it is attached.
    pub(crate) fn inbox(&self, id: NodeId) -> Option<Arc<dyn Inbox>> {
        self.inboxes
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(id as usize)
            .cloned()
            .flatten()
    }
}
