//! The channel a query actor hands its caller's batches through: a bounded crossbeam
//! channel that a blocking reader ([`QueryStream`](crate::QueryStream)) waits on, plus a
//! waker slot so that an async reader ([`AsyncQueryStream`](crate::AsyncQueryStream)) is
//! woken instead of blocking its thread.

use crate::error::Error;
use crate::query::stats::QueryStats;
use crossbeam_channel::{Receiver, Sender, TryRecvError};
use futures::task::AtomicWaker;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use weir_operators::{Batch, Reservation};

/// What a query's caller receives on its channel.
#[derive(Debug)]
pub enum StreamItem {
    /// Result rows of attempt `.2`, with their bytes accounted on the initiator until the
    /// caller takes them. Rows of an aborted attempt are skipped by the stream.
    Batch(Batch, Option<Reservation>, u64),
    /// The query finished; its statistics.
    Done(QueryStats),
    /// The query failed.
    Failed(Error),
}

/// A bounded channel of `capacity` items, whose blocking reader spins for up to `spin`
/// before it sleeps (see [`crate::exec::idle`]).
pub(crate) fn bounded(capacity: usize, spin: Duration) -> (ResultSender, ResultReceiver) {
    let (tx, rx) = crossbeam_channel::bounded(capacity);
    let waker = Arc::new(AtomicWaker::new());
    (
        ResultSender {
            tx: Some(tx),
            waker: waker.clone(),
        },
        ResultReceiver { rx, waker, spin },
    )
}

/// The query actor's end. Every item sent, and the sender's drop, wakes an async reader.
pub struct ResultSender {
    /// `None` only while dropping.
    tx: Option<Sender<StreamItem>>,
    waker: Arc<AtomicWaker>,
}

impl ResultSender {
    /// Sends without waiting (the capacity is sized so that the actor never needs to);
    /// false when the item was not taken (the reader is gone, or the channel full).
    pub fn try_send(&self, item: StreamItem) -> bool {
        let sent = self.tx.as_ref().is_some_and(|tx| tx.try_send(item).is_ok());
        self.waker.wake();
        sent
    }
}

impl Drop for ResultSender {
    fn drop(&mut self) {
        // Disconnect first, then wake: a reader woken sees the channel closed.
        drop(self.tx.take());
        self.waker.wake();
    }
}

/// The caller's end.
pub(crate) struct ResultReceiver {
    rx: Receiver<StreamItem>,
    waker: Arc<AtomicWaker>,
    spin: Duration,
}

impl ResultReceiver {
    /// Waits for the next item; `None` once the sender is gone and the channel empty.
    pub(crate) fn recv(&self) -> Option<StreamItem> {
        let ready = crate::exec::idle::spin_for(self.spin, || match self.rx.try_recv() {
            Ok(item) => Some(Some(item)),
            Err(TryRecvError::Disconnected) => Some(None),
            Err(TryRecvError::Empty) => None,
        });
        match ready {
            Some(item) => item,
            None => self.rx.recv().ok(),
        }
    }

    /// The next item if there is one or one comes within the spin, else registers `cx`'s
    /// waker and returns `Pending`; `Ready(None)` once the sender is gone and the channel
    /// empty. (Parking a task and waking it from another thread costs tens of
    /// microseconds on a virtual machine: a point query's whole answer takes less.)
    pub(crate) fn poll_recv(&self, cx: &mut Context<'_>) -> Poll<Option<StreamItem>> {
        let ready = crate::exec::idle::spin_for(self.spin, || match self.rx.try_recv() {
            Ok(item) => Some(Some(item)),
            Err(TryRecvError::Disconnected) => Some(None),
            Err(TryRecvError::Empty) => None,
        });
        if let Some(item) = ready {
            return Poll::Ready(item);
        }
        self.waker.register(cx.waker());
        // Look again: an item sent between the first look and the registration woke nobody.
        match self.rx.try_recv() {
            Ok(item) => Poll::Ready(Some(item)),
            Err(TryRecvError::Disconnected) => Poll::Ready(None),
            Err(TryRecvError::Empty) => Poll::Pending,
        }
    }
}
