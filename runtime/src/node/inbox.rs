//! What a node's actor accepts from the other actors of its node and from the cluster.

use crate::exchange::messages::{RemoteAck, RemoteBatch, RemoteEvent, RemoteStop};
use crate::wire::messages::{NetMessage, NodeId, QueryId};
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
    /// A batch's bytes, accounted on this node (see [`crate::wire::network::Network::send_with`]).
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
