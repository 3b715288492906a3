//! Credit-based flow control between actors.
//!
//! actix mailboxes do not bound their queues, so every edge between a producer and a consumer
//! carries credits, counted in batches and in bytes ([`Window`]): the consumer grants a window
//! of both when the producer attaches, and gives back both, a batch and its bytes
//! ([`Batch::data_size`]), each time it has consumed one. A producer sends while both allow,
//! so an edge never holds more than its window of batches, nor of bytes; the one exception
//! keeps an edge from stalling: a single batch larger than the whole byte window goes alone,
//! when nothing else is in flight. Each edge records its high-water marks. Exchange channels
//! across nodes follow the same rules (see [`crate::exchange`]).
//!
//! A batch a producer made is accounted in the memory pool of the consumer's node before it
//! waits for credit, and stays accounted until the consumer takes it. In Guarded mode that
//! growth can be refused: the producer then keeps the batch (it exists already: it is the one
//! thing a waiting producer holds that is not accounted) and waits in the pool's queue until
//! memory is released ([`crate::memory::pool::MemoryWait`]), making nothing more meanwhile. A batch
//! that comes with a reservation already made on the consumer's node (an exchange receiver
//! passing on what arrived) moves it along instead of being accounted again.

use crate::memory::messages::MemoryFreed;
use crate::memory::pool::{MemoryWait, NodePool, Reserve, Wake};
use actix::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use weir_operators::{Batch, Error as OpError, MemoryPool, Reservation};

/// Default bytes of the byte window per batch of the batch window: a window of 4 batches
/// lets 4 MiB be in flight on an edge.
pub const DEFAULT_BYTES_PER_BATCH: usize = 1 << 20;

/// How much an edge may hold: batches, and bytes of their rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Batches.
    pub batches: usize,
    /// Bytes ([`Batch::data_size`]).
    pub bytes: usize,
}

impl Window {
    /// A window of `batches` batches and `bytes` bytes (each at least 1).
    pub fn new(batches: usize, bytes: usize) -> Self {
        Window {
            batches: batches.max(1),
            bytes: bytes.max(1),
        }
    }
}

/// What a producer may still send on one edge, local or across nodes: the one place where
/// credits are counted. A batch needs a batch credit and its bytes in byte credit, except
/// that when nothing at all is in flight a batch larger than the whole byte window goes,
/// alone (so no batch waits for ever).
#[derive(Debug, Clone, Copy)]
pub struct Credits {
    window: Window,
    batches: usize,
    bytes: i64,
}

impl Credits {
    /// No credit yet: the consumer grants it when it wants the input.
    pub fn none(window: Window) -> Self {
        Credits {
            window,
            batches: 0,
            bytes: 0,
        }
    }

    /// The whole window at once (an exchange channel starts so).
    pub fn full(window: Window) -> Self {
        Credits {
            window,
            batches: window.batches,
            bytes: window.bytes as i64,
        }
    }

    /// Whether some credit of both kinds is left.
    pub fn any(&self) -> bool {
        self.batches > 0 && self.bytes > 0
    }

    /// Whether a batch of `bytes` may go now.
    pub fn allow(&self, bytes: usize) -> bool {
        let idle = self.batches >= self.window.batches && self.bytes >= self.window.bytes as i64;
        self.batches > 0 && (bytes as i64 <= self.bytes || idle)
    }

    /// A batch of `bytes` went.
    pub fn spend(&mut self, bytes: usize) {
        self.batches = self.batches.saturating_sub(1);
        self.bytes -= bytes as i64;
    }

    /// The consumer gave back `batches` and `bytes`.
    pub fn grant(&mut self, batches: usize, bytes: usize) {
        self.batches += batches;
        self.bytes += bytes as i64;
    }
}

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

/// Counters of one edge: batches and bytes queued now, and the most ever queued.
#[derive(Debug, Default)]
pub struct EdgeStat {
    /// `producer -> consumer` label.
    pub label: String,
    queued: AtomicUsize,
    high_water: AtomicUsize,
    queued_bytes: AtomicUsize,
    high_water_bytes: AtomicUsize,
}

impl EdgeStat {
    /// A new edge.
    pub fn new(label: String) -> Arc<Self> {
        Arc::new(EdgeStat {
            label,
            ..Default::default()
        })
    }

    /// A batch of `bytes` bytes was sent on the edge.
    pub fn enqueued(&self, bytes: usize) {
        let now = self.queued.fetch_add(1, Ordering::SeqCst) + 1;
        self.high_water.fetch_max(now, Ordering::SeqCst);
        let now = self.queued_bytes.fetch_add(bytes, Ordering::SeqCst) + bytes;
        self.high_water_bytes.fetch_max(now, Ordering::SeqCst);
    }

    /// A batch of `bytes` bytes was taken off the edge by its consumer.
    pub fn dequeued(&self, bytes: usize) {
        let _ = self
            .queued
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |q| q.checked_sub(1));
        let _ = self
            .queued_bytes
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |q| {
                Some(q.saturating_sub(bytes))
            });
    }

    /// Most batches ever queued at once.
    pub fn high_water(&self) -> usize {
        self.high_water.load(Ordering::SeqCst)
    }

    /// Most bytes ever queued at once.
    pub fn high_water_bytes(&self) -> usize {
        self.high_water_bytes.load(Ordering::SeqCst)
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

    /// `(label, high-water mark)` of every edge, in batches.
    pub fn high_waters(&self) -> Vec<(String, usize)> {
        self.edges
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|e| (e.label.clone(), e.high_water()))
            .collect()
    }

    /// `(label, high-water mark)` of every edge, in bytes.
    pub fn high_water_bytes(&self) -> Vec<(String, usize)> {
        self.edges
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|e| (e.label.clone(), e.high_water_bytes()))
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

/// A batch the producer holds: it waits for memory on the consumer's node (unaccounted, or
/// partly), then for credit (accounted).
struct Held {
    batch: Batch,
    /// What is accounted of it so far (on the consumer's node).
    mem: Option<Reservation>,
    /// Whether all of it is.
    accounted: bool,
    /// Its byte credits.
    bytes: usize,
}

/// A producer's side of an edge.
pub struct Output {
    target: Downstream,
    port: usize,
    credits: Credits,
    edge: Arc<EdgeStat>,
    ended: bool,
    held: Option<Held>,
    /// Where batches in flight are accounted (the consumer's node), with the producer's place
    /// in its queue of waiters.
    memory: Option<MemoryWait>,
    wake: Option<Arc<dyn Wake>>,
}

impl Output {
    /// An edge to `target`'s input `port`, with no credits yet; the consumer grants `window`.
    /// Batches in flight are accounted in `pool` (the consumer's node).
    pub fn new(
        target: Downstream,
        port: usize,
        edge: Arc<EdgeStat>,
        pool: Option<Arc<NodePool>>,
        window: Window,
    ) -> Self {
        Output {
            target,
            port,
            credits: Credits::none(window),
            edge,
            ended: false,
            held: None,
            memory: pool.map(MemoryWait::new),
            wake: None,
        }
    }

    /// The edge's counters.
    pub fn edge(&self) -> Arc<EdgeStat> {
        self.edge.clone()
    }

    /// Announces the producer to the consumer, which answers with credits.
    pub fn attach<A>(&mut self, addr: Addr<A>)
    where
        A: Actor + Handler<Credit> + Handler<Cancel> + Handler<MemoryFreed>,
        A::Context: actix::dev::ToEnvelope<A, Credit>
            + actix::dev::ToEnvelope<A, Cancel>
            + actix::dev::ToEnvelope<A, MemoryFreed>,
    {
        let wake: Recipient<MemoryFreed> = addr.clone().recipient();
        self.wake = Some(Arc::new(wake));
        self.target.attach.do_send(Attach {
            port: self.port,
            upstream: Upstream {
                credit: addr.clone().recipient(),
                cancel: addr.recipient(),
            },
            edge: self.edge.clone(),
        });
    }

    /// Whether the producer may make its next batch now: there is credit of both kinds and it
    /// holds no batch.
    pub fn ready(&self) -> bool {
        !self.ended && self.held.is_none() && self.credits.any()
    }

    /// Whether the producer holds a batch that could not go yet (for credit or memory). It
    /// must not end the edge or stop before it went.
    pub fn has_held(&self) -> bool {
        self.held.is_some()
    }

    /// Sends a batch, or holds it until credit and memory allow. An error means the batch can
    /// never be accounted (it is larger than the consumer node's whole budget).
    pub fn send(&mut self, batch: Batch) -> weir_operators::Result<()> {
        self.send_with(batch, None)
    }

    /// [`Output::send`] for a batch whose bytes (some or all) are already accounted in `mem`
    /// on the consumer's node: the reservation moves along with the batch.
    pub fn send_with(
        &mut self,
        batch: Batch,
        mem: Option<Reservation>,
    ) -> weir_operators::Result<()> {
        debug_assert!(self.held.is_none(), "send while a batch is held");
        debug_assert!(!self.ended, "send after end");
        let bytes = batch.data_size();
        self.held = Some(Held {
            batch,
            mem,
            accounted: false,
            bytes,
        });
        self.pump()
    }

    /// Sends the held batch if credit and memory allow.
    fn pump(&mut self) -> weir_operators::Result<()> {
        let Some(held) = &mut self.held else {
            return Ok(());
        };
        // First the memory: a batch that waits for credit waits accounted.
        if !held.accounted {
            if let Some(memory) = &mut self.memory {
                let pool: Arc<dyn MemoryPool> = memory.pool().clone();
                let mut mem = match held.mem.take() {
                    Some(m) if m.same_pool(&pool) => m,
                    _ => memory.reservation(),
                };
                let size = held.batch.memory_size();
                if mem.size() > size {
                    mem.shrink(mem.size() - size);
                }
                let need = size - mem.size();
                let outcome = match &self.wake {
                    Some(wake) => memory.reserve(&mut mem, need, wake),
                    None if need == 0 => Reserve::Granted,
                    // Not attached yet: nothing could wake it, so it cannot wait.
                    None => return Err(OpError::Internal("send before attach".into())),
                };
                held.mem = Some(mem);
                match outcome {
                    Reserve::Granted => {}
                    // Woken by `MemoryFreed`, the producer calls `memory_freed`.
                    Reserve::Waiting => return Ok(()),
                    Reserve::TooLarge => {
                        let budget = memory.pool().budget();
                        self.held = None;
                        return Err(OpError::Memory(format!(
                            "a batch of {size} bytes cannot fit a memory budget of {budget} \
                             bytes"
                        )));
                    }
                }
            }
            held.accounted = true;
        }
        let bytes = held.bytes;
        if !self.credits.allow(bytes) {
            return Ok(());
        }
        let Some(Held { batch, mem, .. }) = self.held.take() else {
            return Ok(());
        };
        self.credits.spend(bytes);
        self.edge.enqueued(bytes);
        self.target.push.do_send(Push {
            port: self.port,
            item: Item::Batch(batch),
            mem,
            bytes,
        });
        Ok(())
    }

    /// Memory was released on the consumer's node: tries the held batch again.
    pub fn memory_freed(&mut self) -> weir_operators::Result<()> {
        self.pump()
    }

    /// Drops the held batch, if any, with what was accounted of it, and leaves the pool's
    /// queue of waiters (the producer stops without sending it).
    pub fn discard(&mut self) {
        self.held = None;
        if let Some(m) = &mut self.memory {
            m.done();
        }
    }

    /// Ends the edge (once). The producer must not hold a batch (see [`Output::has_held`]).
    pub fn end(&mut self) {
        debug_assert!(self.held.is_none(), "end while a batch is held");
        if !self.ended {
            self.ended = true;
            self.target.push.do_send(Push {
                port: self.port,
                item: Item::End,
                mem: None,
                bytes: 0,
            });
        }
    }

    /// Whether the edge was ended.
    pub fn is_ended(&self) -> bool {
        self.ended
    }

    /// Adds credits granted by the consumer, and sends the held batch if they allow.
    pub fn grant(&mut self, credit: Credit) -> weir_operators::Result<()> {
        self.credits.grant(credit.batches, credit.bytes);
        self.pump()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credits_bound_batches_and_bytes_and_an_oversized_batch_goes_alone() {
        let mut c = Credits::none(Window::new(2, 100));
        assert!(!c.any() && !c.allow(1));
        c.grant(2, 100);
        assert!(c.allow(60));
        c.spend(60);
        // 40 bytes left: a 50-byte batch waits, a 40-byte one goes.
        assert!(!c.allow(50) && c.allow(40));
        c.spend(40);
        assert!(!c.any() && !c.allow(1));
        c.grant(1, 60);
        c.grant(1, 40);
        // Nothing in flight: a batch larger than the whole byte window goes alone...
        assert!(c.allow(500));
        c.spend(500);
        // ...and nothing goes until its bytes came back.
        assert!(!c.allow(1));
        c.grant(1, 500);
        assert!(c.allow(100));
        assert!(Credits::full(Window::new(3, 10)).allow(10));
    }
}
