//! The messages the actors of a node send each other, in one place. Actors refer to each
//! other through recipients of these messages, never through each other's types, so the actor
//! modules depend on this one rather than on each other; the only other arrows run from a
//! parent to the children it starts (node → fragment → operators, sources, exchange ends;
//! query → root fragment).
//!
//! - to the node actor: [`LocalMessage`], [`RegisterReceiver`], [`RegisterSender`],
//!   [`Unregister`], [`FragmentFinished`], [`QueryRegistration`], [`NodeCrashed`],
//!   [`SetClient`], [`Restart`];
//! - to exchange ends: [`RemoteBatch`] (receiver), [`RemoteAck`] and [`RemoteStop`] (sender);
//! - to a query actor: [`RemoteEvent`];
//! - to a fragment actor: [`CloseFragment`], and from its operators [`OpStopped`] and
//!   [`OpFailed`] through a [`FragmentLink`].
//!
//! Flow control between producers and consumers has its own messages in [`crate::flow`].

use crate::messages::{
    BatchAck, BatchMessage, ErrorMessage, NetMessage, NodeId, QueryId, StartResponse,
};
use actix::prelude::*;
use weir_operators::Reservation;

/// A protocol message from an actor of the same node: moved, not serialized.
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct LocalMessage {
    /// Sending node (this one).
    pub from: NodeId,
    /// The message.
    pub msg: NetMessage,
    /// A batch's bytes, accounted on this node (see [`crate::network::Network::send_with`]).
    pub mem: Option<Reservation>,
}

/// An exchange receiver announces itself.
#[derive(Message)]
#[rtype(result = "()")]
pub struct RegisterReceiver {
    /// Query.
    pub query: QueryId,
    /// Exchange.
    pub exchange: u32,
    /// Where the receiver takes batches.
    pub to: Recipient<RemoteBatch>,
}

/// An exchange sender announces itself.
#[derive(Message)]
#[rtype(result = "()")]
pub struct RegisterSender {
    /// Query.
    pub query: QueryId,
    /// Exchange.
    pub exchange: u32,
    /// Where the sender takes acks.
    pub acks: Recipient<RemoteAck>,
    /// Where the sender hears that its receiver stopped.
    pub stops: Recipient<RemoteStop>,
}

/// An exchange end has stopped.
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub enum Unregister {
    /// A receiver of `(query, exchange)`.
    Receiver(QueryId, u32),
    /// A sender of `(query, exchange)`.
    Sender(QueryId, u32),
}

/// A fragment instance has stopped.
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct FragmentFinished {
    /// Query.
    pub query: QueryId,
    /// Fragment.
    pub fragment: u32,
}

/// A query initiated on this node starts or ends (so remote events reach its actor).
#[derive(Message)]
#[rtype(result = "()")]
pub enum QueryRegistration {
    /// Route the query's events to this actor.
    Register(QueryId, Recipient<RemoteEvent>),
    /// The query has ended.
    Unregister(QueryId),
}

/// A node crashed (sent to the client node, which tells its queries).
#[derive(Message, Debug, Clone, Copy)]
#[rtype(result = "()")]
pub struct NodeCrashed(pub NodeId);

/// Tells a node where crash notices go.
#[derive(Message)]
#[rtype(result = "()")]
pub struct SetClient(pub Recipient<NodeCrashed>);

/// Brings a crashed node back.
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct Restart;

/// Node → receiver: a batch arrived from `from`.
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct RemoteBatch {
    /// Sending node.
    pub from: NodeId,
    /// The batch.
    pub msg: BatchMessage,
    /// Its bytes, accounted on this node by the sender before it sent the batch.
    pub mem: Option<Reservation>,
}

/// Node → sender: the receiver on `from` wants no more batches.
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct RemoteStop {
    /// Receiving node that stopped.
    pub from: NodeId,
}

/// Node → sender: the receiver on `from` granted credits.
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct RemoteAck {
    /// Receiving node that acked.
    pub from: NodeId,
    /// The ack.
    pub ack: BatchAck,
}

/// Remote events routed to the query by its node.
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub enum RemoteEvent {
    /// A start response.
    Started {
        /// Responding node.
        node: NodeId,
        /// The response.
        resp: StartResponse,
    },
    /// A fragment instance sent its last batch to the initiator.
    Finished {
        /// Query id of the attempt.
        query: QueryId,
        /// Node of the instance.
        node: NodeId,
        /// Fragment.
        fragment: u32,
    },
    /// A fragment reported an error.
    Error {
        /// Reporting node.
        node: NodeId,
        /// The report.
        err: ErrorMessage,
    },
    /// A node crashed.
    NodeDown {
        /// The node.
        node: NodeId,
    },
}

/// Close the fragment: stop all its actors.
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct CloseFragment;

/// Operator → fragment: the operator actor has stopped.
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct OpStopped;

/// Operator → fragment: the operator failed.
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct OpFailed(pub weir_operators::Error);

/// What every operator actor reports to its fragment.
#[derive(Clone)]
pub struct FragmentLink {
    /// Stop notifications.
    pub stopped: Recipient<OpStopped>,
    /// Failure notifications.
    pub failed: Recipient<OpFailed>,
}
