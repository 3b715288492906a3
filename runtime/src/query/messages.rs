//! What a query actor accepts from its caller and from the admission queue (its events from
//! the nodes are [`RemoteEvent`](crate::exchange::messages::RemoteEvent)s, and its result
//! rows come as the flow-control messages of [`crate::exec::messages`]).
//!
//! | message | sent by | handled by |
//! |---|---|---|
//! | [`ConsumerCredit`] | the caller's stream, per batch it took | the [`QueryActor`](crate::query::actor::QueryActor) |
//! | [`CancelQuery`] | the caller's stream, dropped early | the query actor |
//! | [`AdmissionReady`] | the admission queue, through [`Wake`] | the query actor |

use crate::memory::pool::Wake;
use actix::prelude::*;

/// The caller took a batch of attempt `.0` off the channel: one more may be sent.
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct ConsumerCredit(pub u64);

/// Admission → query: the query was admitted; start it.
#[derive(Message, Debug, Clone, Copy)]
#[rtype(result = "()")]
pub struct AdmissionReady;

impl Wake for Recipient<AdmissionReady> {
    fn wake(&self) {
        self.do_send(AdmissionReady);
    }

    fn alive(&self) -> bool {
        self.connected()
    }
}

/// The caller dropped its stream: cancel the query.
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct CancelQuery;
