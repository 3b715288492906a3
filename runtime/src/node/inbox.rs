//! A node actor's inbox: [`NodeMsg`], everything the actor accepts, in one enum (as a ractor
//! actor declares its `Msg`), and [`NodeInbox`], the door the network hands the node's
//! messages through.
//!
//! The actor itself lives above, in [`crate::dispatch`]; whoever needs to reach a node holds
//! a `Recipient<NodeMsg>`, never the actor's type, so nothing below the dispatch floor
//! depends on it.

use crate::wire::carrier::{Deliver, Inbox};
use crate::wire::ids::{NodeId, QueryId};
use crate::wire::messages::NetMessage;
use actix::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use weir_operators::Reservation;

/// Protocol messages handed to a node's actor ([`NodeMsg::Deliver`] and [`NodeMsg::Local`])
/// and how many of them it has handled, so that a caller can tell a node with nothing in its
/// mailbox from one about to start a query's fragments.
#[derive(Debug, Default)]
pub struct InboxCount {
    sent: AtomicU64,
    handled: AtomicU64,
}

impl InboxCount {
    /// A message was handed to the actor.
    pub fn sent(&self) {
        self.sent.fetch_add(1, Ordering::SeqCst);
    }

    /// The actor has handled a message (after whatever it started is counted).
    pub fn handled(&self) {
        self.handled.fetch_add(1, Ordering::SeqCst);
    }

    /// (messages handled, messages handed over): equal when nothing waits in the mailbox.
    /// `handled` is read first, so a message handled in between shows as waiting.
    pub fn read(&self) -> (u64, u64) {
        let handled = self.handled.load(Ordering::SeqCst);
        (handled, self.sent.load(Ordering::SeqCst))
    }
}

/// What a node actor accepts.
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub enum NodeMsg {
    /// Sealed bytes from another node, as the network hands them over: the actor unseals,
    /// decodes and dispatches them.
    Deliver(Deliver),
    /// A protocol message from an actor of the same node: moved, not serialized.
    Local {
        /// Sending node (this one).
        from: NodeId,
        /// The message.
        msg: NetMessage,
        /// A batch's bytes, accounted on this node (see
        /// [`Network::send_with`](crate::wire::network::Network::send_with)).
        mem: Option<Reservation>,
    },
    /// A fragment instance of the node has stopped.
    FragmentFinished {
        /// Query.
        query: QueryId,
        /// Fragment.
        fragment: u32,
    },
    /// The node crashes: every fragment on it stops and its memory is gone, until
    /// [`NodeMsg::Restart`].
    Crash {
        /// Whether it ran out of memory (Legacy mode), rather than an injected fault.
        out_of_memory: bool,
    },
    /// A crashed node comes back.
    Restart,
    /// Where the node's crash notices go (the client node's actor).
    SetClient(Recipient<NodeMsg>),
    /// To the client node: node `.0` crashed (its queries hear of it).
    NodeCrashed(NodeId),
}

/// A node's door to the network: frames for the node go to its actor as
/// [`NodeMsg::Deliver`], and a fault plan's crash as [`NodeMsg::Crash`].
pub struct NodeInbox(pub Recipient<NodeMsg>, pub Arc<InboxCount>);

impl Inbox for NodeInbox {
    fn deliver(&self, msg: Deliver) {
        self.1.sent();
        self.0.do_send(NodeMsg::Deliver(msg));
    }

    fn is_open(&self) -> bool {
        self.0.connected()
    }

    fn crash(&self) {
        self.0.do_send(NodeMsg::Crash {
            out_of_memory: false,
        });
    }
}
