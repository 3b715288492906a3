//! Credit-based flow control between actors.
//!
//! actix mailboxes do not bound their queues, so every edge between a producer and a consumer
//! carries credits: the consumer grants a window of batches when the producer attaches, and one
//! more each time it has consumed a batch. A producer never sends without a credit, so an edge
//! never holds more than its window. Each edge records its high-water mark.

use actix::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use weir_operators::{Batch, MemoryPool, Reservation};

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
    /// when the message is consumed or dropped.
    pub mem: Option<Reservation>,
}

/// Consumer → producer: `n` more batches may be sent.
#[derive(Message, Debug, Clone, Copy)]
#[rtype(result = "()")]
pub struct Credit(pub usize);

/// Stop now and cancel your inputs.
#[derive(Message, Debug, Clone, Copy)]
#[rtype(result = "()")]
pub struct Cancel;

/// A producer's handles, given to its consumer.
#[derive(Clone)]
pub struct Upstream {
    /// Where credits go.
    pub credit: Recipient<Credit>,
    /// Where cancellation goes.
    pub cancel: Recipient<Cancel>,
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

/// Counters of one edge: batches queued now and the most ever queued.
#[derive(Debug, Default)]
pub struct EdgeStat {
    /// `producer -> consumer` label.
    pub label: String,
    queued: AtomicUsize,
    high_water: AtomicUsize,
}

impl EdgeStat {
    /// A new edge.
    pub fn new(label: String) -> Arc<Self> {
        Arc::new(EdgeStat {
            label,
            ..Default::default()
        })
    }

    /// A batch was sent on the edge.
    pub fn enqueued(&self) {
        let now = self.queued.fetch_add(1, Ordering::SeqCst) + 1;
        self.high_water.fetch_max(now, Ordering::SeqCst);
    }

    /// A batch was taken off the edge by its consumer.
    pub fn dequeued(&self) {
        let _ = self
            .queued
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |q| q.checked_sub(1));
    }

    /// Most batches ever queued at once.
    pub fn high_water(&self) -> usize {
        self.high_water.load(Ordering::SeqCst)
    }
}

/// The edges of one query, for stats.
#[derive(Debug, Default)]
pub struct EdgeRegistry {
    edges: Mutex<Vec<Arc<EdgeStat>>>,
}

impl EdgeRegistry {
    /// Creates and registers an edge.
    pub fn edge(&self, label: String) -> Arc<EdgeStat> {
        let e = EdgeStat::new(label);
        self.edges
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(e.clone());
        e
    }

    /// `(label, high-water mark)` of every edge.
    pub fn high_waters(&self) -> Vec<(String, usize)> {
        self.edges
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|e| (e.label.clone(), e.high_water()))
            .collect()
    }
}

/// A consumer's handles, given to its producer.
#[derive(Clone)]
pub struct Downstream {
    /// Where batches go.
    pub push: Recipient<Push>,
    /// Where the producer announces itself.
    pub attach: Recipient<Attach>,
}

impl Downstream {
    /// The handles of actor `addr`.
    pub fn of<A>(addr: &Addr<A>) -> Self
    where
        A: Actor + Handler<Push> + Handler<Attach>,
        A::Context: actix::dev::ToEnvelope<A, Push> + actix::dev::ToEnvelope<A, Attach>,
    {
        Downstream {
            push: addr.clone().recipient(),
            attach: addr.clone().recipient(),
        }
    }
}

/// A producer's side of an edge.
pub struct Output {
    target: Downstream,
    port: usize,
    credits: usize,
    edge: Arc<EdgeStat>,
    ended: bool,
    pool: Option<Arc<dyn MemoryPool>>,
}

impl Output {
    /// An edge to `target`'s input `port`, with no credits yet. Batches in flight are
    /// accounted in `pool` (the consumer's node).
    pub fn new(
        target: Downstream,
        port: usize,
        edge: Arc<EdgeStat>,
        pool: Option<Arc<dyn MemoryPool>>,
    ) -> Self {
        Output {
            target,
            port,
            credits: 0,
            edge,
            ended: false,
            pool,
        }
    }

    /// The edge's counters.
    pub fn edge(&self) -> Arc<EdgeStat> {
        self.edge.clone()
    }

    /// Announces the producer to the consumer, which answers with credits.
    pub fn attach<A>(&self, addr: Addr<A>)
    where
        A: Actor + Handler<Credit> + Handler<Cancel>,
        A::Context: actix::dev::ToEnvelope<A, Credit> + actix::dev::ToEnvelope<A, Cancel>,
    {
        self.target.attach.do_send(Attach {
            port: self.port,
            upstream: Upstream {
                credit: addr.clone().recipient(),
                cancel: addr.recipient(),
            },
            edge: self.edge.clone(),
        });
    }

    /// Whether a batch may be sent now.
    pub fn ready(&self) -> bool {
        self.credits > 0 && !self.ended
    }

    /// Sends a batch, spending a credit.
    pub fn send(&mut self, batch: Batch) {
        debug_assert!(self.credits > 0, "send without credit");
        self.credits = self.credits.saturating_sub(1);
        self.edge.enqueued();
        let mem = self.pool.as_ref().map(|p| {
            let mut r = Reservation::new(p.clone());
            r.force_grow(batch.memory_size());
            r
        });
        self.target.push.do_send(Push {
            port: self.port,
            item: Item::Batch(batch),
            mem,
        });
    }

    /// Ends the edge (once).
    pub fn end(&mut self) {
        if !self.ended {
            self.ended = true;
            self.target.push.do_send(Push {
                port: self.port,
                item: Item::End,
                mem: None,
            });
        }
    }

    /// Whether the edge was ended.
    pub fn is_ended(&self) -> bool {
        self.ended
    }

    /// Adds credits granted by the consumer.
    pub fn grant(&mut self, n: usize) {
        self.credits += n;
    }
}
