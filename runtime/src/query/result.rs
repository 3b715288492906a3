//! What callers get back: a streaming iterator of batches (or an async stream of them), or
//! all of them at once.

use crate::error::{Error, Result};
use crate::query::actor::QueryActor;
use crate::query::channel::ResultReceiver;
use crate::query::channel::StreamItem;
use crate::query::messages::{CancelQuery, ConsumerCredit};
use crate::query::stats::QueryStats;
use actix::Addr;
use futures::ready;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use weir_operators::{Batch, Schema, Value};

/// A query's result batches, as the cluster produces them. The producers never run more than
/// a credit window ahead of the consumer; dropping the stream cancels the query.
pub struct QueryStream {
    pub(crate) rx: ResultReceiver,
    pub(crate) query: Option<Addr<QueryActor>>,
    pub(crate) schema: Schema,
    pub(crate) finished: bool,
    pub(crate) stats: Option<QueryStats>,
    pub(crate) epoch: Arc<AtomicU64>,
}

impl QueryStream {
    /// A stream that holds one batch computed up front (EXPLAIN text, rows affected), with
    /// no query behind it.
    pub(crate) fn of_batch(schema: Schema, batch: Batch) -> Self {
        let (tx, rx) = crate::query::channel::bounded(2, std::time::Duration::ZERO);
        let _ = tx.try_send(StreamItem::Batch(batch, None, 0));
        let _ = tx.try_send(StreamItem::Done(Default::default()));
        QueryStream {
            rx,
            query: None,
            schema,
            finished: false,
            stats: None,
            epoch: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Result columns.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// Statistics, available once the stream has ended successfully.
    pub fn stats(&self) -> Option<&QueryStats> {
        self.stats.as_ref()
    }

    /// Reads the rest of the stream into a [`QueryResult`].
    pub fn collect_all(mut self) -> Result<QueryResult> {
        let mut batches = Vec::new();
        for b in self.by_ref() {
            batches.push(b?);
        }
        Ok(QueryResult {
            schema: self.schema.clone(),
            batches,
            stats: self.stats.take().unwrap_or_default(),
        })
    }
}

impl QueryStream {
    /// Marks attempt `epoch` as seen by the caller; false when that attempt was aborted.
    fn take_attempt(&self, epoch: u64) -> bool {
        let mut state = self.epoch.load(Ordering::SeqCst);
        loop {
            if epoch < state >> 1 {
                return false;
            }
            if state & 1 == 1 {
                return true;
            }
            match self
                .epoch
                .compare_exchange(state, state | 1, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => return true,
                Err(now) => state = now,
            }
        }
    }
}

impl QueryStream {
    /// What the caller sees of one item from the channel (`None` when the sender is gone):
    /// `None` to skip it (rows of an aborted attempt), else the stream's next answer.
    fn accept(&mut self, item: Option<StreamItem>) -> Option<Option<Result<Batch>>> {
        match item {
            Some(StreamItem::Batch(b, _mem, epoch)) => {
                // `_mem` returns the batch's bytes to the initiator's pool here.
                if let Some(q) = &self.query {
                    q.do_send(ConsumerCredit(epoch));
                }
                if !self.take_attempt(epoch) {
                    // Rows of an attempt that was aborted and retried.
                    return None;
                }
                Some(Some(Ok(b)))
            }
            Some(StreamItem::Done(stats)) => {
                self.finished = true;
                self.stats = Some(stats);
                Some(None)
            }
            Some(StreamItem::Failed(e)) => {
                self.finished = true;
                Some(Some(Err(e)))
            }
            None => {
                self.finished = true;
                Some(Some(Err(Error::Shutdown)))
            }
        }
    }

    /// The async form of this stream: the same batches, read without blocking a thread.
    pub fn into_async(self) -> AsyncQueryStream {
        AsyncQueryStream { inner: self }
    }
}

impl Iterator for QueryStream {
    type Item = Result<Batch>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.finished {
            let item = self.rx.recv();
            if let Some(answer) = self.accept(item) {
                return answer;
            }
        }
        None
    }
}

/// A query's result batches as a [`futures::Stream`], for async callers
/// ([`Cluster::query_stream_async`](crate::Cluster::query_stream_async)). Polling never
/// waits longer than the cluster's idle spin
/// ([`ClusterBuilder::idle_spin`](crate::ClusterBuilder::idle_spin), as a blocking reader
/// spins): a batch that comes within it is taken at once, which spares a short query the
/// cost of parking and waking its task; after it the task is parked and the query actor
/// wakes it when a batch arrives. As with [`QueryStream`],
/// the producers never run more than a credit window ahead of the consumer, and dropping
/// the stream cancels the query.
pub struct AsyncQueryStream {
    inner: QueryStream,
}

impl AsyncQueryStream {
    /// Result columns.
    pub fn schema(&self) -> &Schema {
        self.inner.schema()
    }

    /// Statistics, available once the stream has ended successfully.
    pub fn stats(&self) -> Option<&QueryStats> {
        self.inner.stats()
    }

    /// Reads the rest of the stream into a [`QueryResult`].
    pub async fn collect_all(mut self) -> Result<QueryResult> {
        let mut batches = Vec::new();
        while let Some(b) = futures::StreamExt::next(&mut self).await {
            batches.push(b?);
        }
        Ok(QueryResult {
            schema: self.inner.schema.clone(),
            batches,
            stats: self.inner.stats.take().unwrap_or_default(),
        })
    }
}

impl futures::Stream for AsyncQueryStream {
    type Item = Result<Batch>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let stream = &mut self.get_mut().inner;
        while !stream.finished {
            let item = ready!(stream.rx.poll_recv(cx));
            if let Some(answer) = stream.accept(item) {
                return Poll::Ready(answer);
            }
        }
        Poll::Ready(None)
    }
}

impl Drop for QueryStream {
    fn drop(&mut self) {
        if !self.finished {
            if let Some(q) = &self.query {
                q.do_send(CancelQuery);
            }
        }
    }
}

/// All rows of a finished query.
#[derive(Debug, Clone)]
pub struct QueryResult {
    /// Result columns.
    pub schema: Schema,
    /// Result batches, in order.
    pub batches: Vec<Batch>,
    /// Messages and edge statistics of the query.
    pub stats: QueryStats,
}

impl QueryResult {
    /// Number of rows.
    pub fn num_rows(&self) -> usize {
        self.batches.iter().map(Batch::num_rows).sum()
    }

    /// All rows as values.
    pub fn rows(&self) -> Vec<Vec<Value>> {
        self.batches.iter().flat_map(Batch::rows).collect()
    }

    /// Column names.
    pub fn column_names(&self) -> Vec<String> {
        self.schema.fields.iter().map(|f| f.name.clone()).collect()
    }
}
