//! What the actors that run a fragment send each other: the flow-control protocol of every
//! edge between a producer and a consumer ([`Attach`], [`Push`], [`Credit`], [`Cancel`]; see
//! [`crate::exec::flow`]) and what an operator reports to its fragment ([`OpStopped`],
//! [`OpFailed`]).
//!
//! | message | sent by | handled by |
//! |---|---|---|
//! | [`Attach`] | a producer, once | its consumer: an operator, an exchange sender, a query |
//! | [`Push`] | a producer, per batch and at the end | its consumer |
//! | [`Credit`] | a consumer, as it takes batches | its producer: an operator, a source, an exchange receiver |
//! | [`Cancel`] | a consumer that needs no more, or the fragment | its producer |
//! | [`ProbeFilter`] | a hash join whose build side ended | its probe input's producer, if it takes one (an exchange receiver, a scan) |
//! | [`OpStopped`], [`OpFailed`] | every actor of a fragment | the [`FragmentActor`](crate::dispatch::fragment::FragmentActor) |

use crate::exec::edge::{EdgeStat, Window};
use actix::prelude::*;
use std::sync::Arc;
use weir_operators::kernels::key_filter::KeyFilter;
use weir_operators::Expr;
use weir_operators::{Batch, Reservation};

/// What flows on an edge.
#[derive(Debug)]
pub enum Item {
    /// Rows.
    Batch(Batch),
    /// No more rows on this edge.
    End,
}

/// Producer → consumer: an item on input `port`.
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct Push {
    /// Consumer input port.
    pub port: usize,
    /// The item.
    pub item: Item,
    /// The batch's bytes, accounted on the consumer's node while it is in flight; returned
    /// when the message is consumed or dropped, or moved along with the batch.
    pub mem: Option<Reservation>,
    /// Byte credits the batch took ([`Batch::data_size`]); the consumer gives them back.
    pub bytes: usize,
}

/// Consumer → producer: this many more batches, and bytes, may be sent.
#[derive(Message, Debug, Clone, Copy, PartialEq, Eq)]
#[rtype(result = "()")]
pub struct Credit {
    /// Batches.
    pub batches: usize,
    /// Bytes.
    pub bytes: usize,
}

impl Credit {
    /// A whole window.
    pub fn window(w: Window) -> Self {
        Credit {
            batches: w.batches,
            bytes: w.bytes,
        }
    }
}

/// Stop now and cancel your inputs.
#[derive(Message, Debug, Clone, Copy)]
#[rtype(result = "()")]
pub struct Cancel;

/// Consumer → producer: the keys a row must have to be of use to the consumer (a hash join's
/// build keys, sent to its probe input once the build side ended). A producer that can drop
/// rows before they travel or are copied takes it: an exchange's receiving end tells its
/// senders, a scan tests its stored rows.
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct ProbeFilter {
    /// The filter of the keys.
    pub filter: KeyFilter,
    /// The key expressions over the producer's output columns.
    pub keys: Vec<Expr>,
}

/// A producer's handles, given to its consumer.
#[derive(Clone)]
pub struct Upstream {
    /// Where credits go.
    pub credit: Recipient<Credit>,
    /// Where cancellation goes.
    pub cancel: Recipient<Cancel>,
    /// Where a key filter goes, for a producer that takes one.
    pub filter: Option<Recipient<ProbeFilter>>,
}

/// Producer → consumer: "I feed your input `port`"; the consumer grants credits when it wants
/// that input.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Attach {
    /// Consumer input port.
    pub port: usize,
    /// The producer.
    pub upstream: Upstream,
    /// The edge's counters.
    pub edge: Arc<EdgeStat>,
}

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
