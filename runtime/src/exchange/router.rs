//! A node's routing table for the messages of the queries that run on it: batches to the
//! exchange receivers, acks and stops to the exchange senders, and events to the query actors
//! initiated here.
//!
//! The ends of an exchange and the query actors enter and leave the table themselves, under a
//! lock and without a message. A message between two actors of one node goes straight
//! through the router ([`Router::send`]); one from another node is decoded by the node actor,
//! which hands it to the router. So a batch crosses no actor but its sender and its receiver.
//!
//! A batch may arrive before its receiver has started (the start request and the batch come
//! from different nodes): it is parked, with its reservation, until the receiver enters, or
//! dropped once the query has ended here or the batch has waited too long. A batch for a
//! receiver that has stopped is dropped, and its sender told again to stop (in case the first
//! word was lost).

use crate::exchange::messages::{RemoteAck, RemoteBatch, RemoteEvent, RemoteFilter, RemoteStop};
use crate::node::handle::NodeHandle;
use crate::node::recent::RecentSet;
use crate::wire::ids::{NodeId, QueryId};
use crate::wire::messages::{BatchAck, BatchFilter, BatchMessage, BatchStop, NetMessage};
use actix::Recipient;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use weir_operators::Reservation;

/// Most batches parked for one receiver that has not started: each sender has at most its
/// credit window in flight, so more than this means a misbehaving sender.
const MAX_PARKED_PER_RECEIVER: usize = 4096;

/// An exchange of a query: `(query, exchange id)`.
pub type ExchangeKey = (QueryId, u32);

/// Batches that arrived for a receiver not (yet) started here, with when the first came.
/// Their bytes stay accounted on the node while they wait (the reservations they came with).
struct Parked {
    since: Instant,
    batches: Vec<(NodeId, BatchMessage, Option<Reservation>)>,
}

/// Where an exchange sender hears from its receivers.
pub struct SenderRoute {
    /// Where acks go.
    pub acks: Recipient<RemoteAck>,
    /// Where stops go.
    pub stops: Recipient<RemoteStop>,
    /// Where key filters go.
    pub filters: Recipient<RemoteFilter>,
}

#[derive(Default)]
struct Routes {
    receivers: HashMap<ExchangeKey, Recipient<RemoteBatch>>,
    senders: HashMap<ExchangeKey, SenderRoute>,
    queries: HashMap<QueryId, Recipient<RemoteEvent>>,
    parked: HashMap<ExchangeKey, Parked>,
    /// Receivers that have stopped: batches for them are dropped.
    gone_receivers: RecentSet<ExchangeKey>,
    /// Queries that have ended on this node: nothing is parked for them any more.
    closed: RecentSet<QueryId>,
}

/// A node's routing table for its queries' messages (see the module docs).
pub struct Router {
    /// The node's name, for the log.
    node: String,
    routes: Mutex<Routes>,
}

impl std::fmt::Debug for Router {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Router").field("node", &self.node).finish()
    }
}

impl Router {
    /// An empty table for node `node`.
    pub fn new(node: impl Into<String>) -> Self {
        Router {
            node: node.into(),
            routes: Mutex::new(Routes::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Routes> {
        self.routes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The receiver of `key` has started: batches parked for it go to it now, the rest as
    /// they come.
    pub fn add_receiver(&self, key: ExchangeKey, to: Recipient<RemoteBatch>) {
        let mut routes = self.lock();
        if let Some(parked) = routes.parked.remove(&key) {
            for (from, msg, mem) in parked.batches {
                to.do_send(RemoteBatch { from, msg, mem });
            }
        }
        routes.receivers.insert(key, to);
    }

    /// The receiver of `key` has stopped: batches for it are dropped from now on.
    pub fn remove_receiver(&self, key: ExchangeKey) {
        let mut routes = self.lock();
        routes.receivers.remove(&key);
        routes.parked.remove(&key);
        routes.gone_receivers.insert(key);
    }

    /// The sender of `key` has started: its acks, stops and key filters go to `route`.
    pub fn add_sender(&self, key: ExchangeKey, route: SenderRoute) {
        self.lock().senders.insert(key, route);
    }

    /// The sender of `key` has stopped.
    pub fn remove_sender(&self, key: ExchangeKey) {
        self.lock().senders.remove(&key);
    }

    /// Query `query`, initiated here, hears of its fragments through `to` until
    /// [`Router::remove_query`].
    pub fn add_query(&self, query: QueryId, to: Recipient<RemoteEvent>) {
        self.lock().queries.insert(query, to);
    }

    /// Query `query` has ended on its initiator: its events are dropped from now on.
    pub fn remove_query(&self, query: QueryId) {
        let mut routes = self.lock();
        routes.queries.remove(&query);
        close(&mut routes, query);
    }

    /// Query `query` has ended on this node: nothing more is parked for it.
    pub fn close(&self, query: QueryId) {
        close(&mut self.lock(), query);
    }

    /// Whether query `query` ended on this node lately.
    pub fn is_closed(&self, query: QueryId) -> bool {
        self.lock().closed.contains(&query)
    }

    /// Hands `event` to the actor of query `query`; false when no such query runs here.
    pub fn event(&self, query: QueryId, event: RemoteEvent) -> bool {
        match self.lock().queries.get(&query) {
            Some(q) => {
                q.do_send(event);
                true
            }
            None => false,
        }
    }

    /// Tells every query initiated here that node `node` went down.
    pub fn node_down(&self, node: NodeId) {
        for q in self.lock().queries.values() {
            q.do_send(RemoteEvent::NodeDown { node });
        }
    }

    /// A batch from node `from` arrived: to its receiver, parked until the receiver starts,
    /// or dropped. The query actor hears of a fragment's last batch. Returns the stop to
    /// send back to `from` when the receiver is gone.
    pub fn batch(
        &self,
        from: NodeId,
        batch: BatchMessage,
        mem: Option<Reservation>,
    ) -> Option<BatchStop> {
        let mut routes = self.lock();
        if batch.last {
            if let Some(q) = routes.queries.get(&batch.query) {
                q.do_send(RemoteEvent::Finished {
                    query: batch.query,
                    node: from,
                    fragment: batch.fragment,
                });
            }
        }
        let key = (batch.query, batch.exchange);
        if let Some(r) = routes.receivers.get(&key) {
            r.do_send(RemoteBatch {
                from,
                msg: batch,
                mem,
            });
            None
        } else if routes.gone_receivers.contains(&key) {
            (!batch.last).then_some(BatchStop {
                query: batch.query,
                exchange: batch.exchange,
            })
        } else {
            if !routes.closed.contains(&batch.query) {
                let parked = routes.parked.entry(key).or_insert_with(|| Parked {
                    since: Instant::now(),
                    batches: Vec::new(),
                });
                if parked.batches.len() < MAX_PARKED_PER_RECEIVER {
                    parked.batches.push((from, batch, mem));
                } else {
                    tracing::warn!(
                        "{}: dropped a batch of query {} for exchange {}: too many wait for it",
                        self.node,
                        batch.query,
                        batch.exchange
                    );
                }
            }
            None
        }
    }

    /// An ack from the receiving node `from`: to its sender (dropped when it stopped).
    pub fn ack(&self, from: NodeId, ack: BatchAck) {
        if let Some(s) = self.lock().senders.get(&(ack.query, ack.exchange)) {
            s.acks.do_send(RemoteAck { from, ack });
        }
    }

    /// The receiver on node `from` wants no more batches: its sender stops sending there.
    pub fn stop(&self, from: NodeId, stop: BatchStop) {
        if let Some(s) = self.lock().senders.get(&(stop.query, stop.exchange)) {
            s.stops.do_send(RemoteStop { from });
        }
    }

    /// A key filter from the receiving node `from`: to its sender (dropped when the sender
    /// stopped, or has not started: a filter only spares work).
    pub fn filter(&self, from: NodeId, filter: BatchFilter) {
        if let Some(s) = self.lock().senders.get(&(filter.query, filter.exchange)) {
            s.filters.do_send(RemoteFilter {
                from,
                filter: filter.filter,
                keys: filter.keys,
            });
        }
    }

    /// Sends an exchange message (a batch, an ack, a stop or a key filter) from `node` to node `to`: through
    /// this router when `to` is `node` itself (moved, with its reservation), over the network
    /// otherwise.
    pub fn send(&self, node: &NodeHandle, to: NodeId, msg: NetMessage, mem: Option<Reservation>) {
        let me = node.id();
        if to != me {
            node.network.send_with(me, to, &msg, mem);
            return;
        }
        match msg {
            NetMessage::QueryBatch(batch) => {
                if let Some(stop) = self.batch(me, batch, mem) {
                    self.stop(me, stop);
                }
            }
            NetMessage::QueryBatchAck(ack) => self.ack(me, ack),
            NetMessage::QueryBatchStop(stop) => self.stop(me, stop),
            NetMessage::QueryBatchFilter(filter) => self.filter(me, *filter),
            other => node.send_with(me, other, mem),
        }
    }

    /// Drops the batches parked longer than `horizon` (their start request was lost).
    pub fn expire(&self, horizon: Duration) {
        self.lock()
            .parked
            .retain(|_, p| p.since.elapsed() < horizon);
    }

    /// The node crashed: parked batches are gone with its memory.
    pub fn crashed(&self) {
        self.lock().parked.clear();
    }
}

/// What an end of an exchange talks through: its node, and the node's router.
#[derive(Clone)]
pub struct Links {
    /// The node the end runs on.
    pub node: NodeHandle,
    /// The node's router.
    pub router: Arc<Router>,
}

impl Links {
    /// Sends exchange message `msg` to node `to` (see [`Router::send`]).
    pub fn send(&self, to: NodeId, msg: NetMessage, mem: Option<Reservation>) {
        self.router.send(&self.node, to, msg, mem);
    }
}

fn close(routes: &mut Routes, query: QueryId) {
    routes.closed.insert(query);
    routes.parked.retain(|(q, _), _| *q != query);
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix::prelude::*;
    use std::sync::Mutex as StdMutex;

    /// Records the batches it is handed.
    struct Receiver(Arc<StdMutex<Vec<(NodeId, u64)>>>);

    impl Actor for Receiver {
        type Context = Context<Self>;
    }

    impl Handler<RemoteBatch> for Receiver {
        type Result = ();
        fn handle(&mut self, msg: RemoteBatch, _ctx: &mut Context<Self>) {
            self.0.lock().unwrap().push((msg.from, msg.msg.batch_id));
        }
    }

    fn batch(query: QueryId, batch_id: u64, last: bool) -> BatchMessage {
        BatchMessage {
            query,
            fragment: 1,
            exchange: 7,
            batch_id,
            last,
            rows: None,
        }
    }

    #[actix::test]
    async fn parks_batches_until_the_receiver_enters_and_drops_them_once_it_left() {
        let router = Router::new("node-0");
        // Two batches arrive before the receiver starts: parked.
        assert!(router.batch(1, batch(5, 0, false), None).is_none());
        assert!(router.batch(2, batch(5, 0, false), None).is_none());
        let seen = Arc::new(StdMutex::new(Vec::new()));
        let receiver = Receiver(seen.clone()).start();
        router.add_receiver((5, 7), receiver.clone().recipient());
        // The next one goes straight to it.
        assert!(router.batch(1, batch(5, 1, false), None).is_none());
        actix::clock::sleep(Duration::from_millis(20)).await;
        assert_eq!(*seen.lock().unwrap(), vec![(1, 0), (2, 0), (1, 1)]);
        // Once it left, a batch is dropped and its sender told to stop; a last one is not.
        router.remove_receiver((5, 7));
        let stop = router.batch(1, batch(5, 2, false), None);
        assert_eq!(
            stop,
            Some(BatchStop {
                query: 5,
                exchange: 7
            })
        );
        assert!(router.batch(1, batch(5, 3, true), None).is_none());
        assert_eq!(seen.lock().unwrap().len(), 3);
    }

    #[test]
    fn nothing_is_parked_for_a_closed_query_and_old_parked_batches_expire() {
        let router = Router::new("node-0");
        router.close(9);
        assert!(router.is_closed(9));
        router.batch(1, batch(9, 0, false), None);
        assert!(router.lock().parked.is_empty());
        router.batch(1, batch(10, 0, false), None);
        assert_eq!(router.lock().parked.len(), 1);
        router.expire(Duration::ZERO);
        assert!(router.lock().parked.is_empty());
        // Closing a query drops what was parked for it.
        router.batch(1, batch(11, 0, false), None);
        router.close(11);
        assert!(router.lock().parked.is_empty());
    }
}
