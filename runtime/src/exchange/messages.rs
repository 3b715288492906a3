//! What the ends of an exchange, and the query actors, are sent by the node that routes a
//! query's messages.

use crate::wire::ids::{NodeId, QueryId};
use crate::wire::messages::{BatchAck, BatchMessage, ErrorMessage, ProfileMessage, StartResponse};
use actix::prelude::*;
use weir_operators::kernels::key_filter::KeyFilter;
use weir_operators::{Expr, Reservation};

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

/// Node → sender: the receiver on `from` needs only the rows whose keys `filter` may hold.
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct RemoteFilter {
    /// Receiving node that sent the filter.
    pub from: NodeId,
    /// The filter.
    pub filter: KeyFilter,
    /// The keys it was made for, over the rows the exchange carries.
    pub keys: Vec<Expr>,
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
    /// A fragment instance reported what its operators output (EXPLAIN ANALYZE).
    Profile {
        /// The report.
        report: ProfileMessage,
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
