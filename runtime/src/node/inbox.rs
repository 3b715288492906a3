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
use weir_operators::Reservation;

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
pub struct NodeInbox(pub Recipient<NodeMsg>);

impl Inbox for NodeInbox {
    fn deliver(&self, msg: Deliver) {
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
