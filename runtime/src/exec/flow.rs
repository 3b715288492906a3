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

use crate::exec::edge::{Credits, EdgeStat, Window};
use crate::exec::messages::{Attach, Cancel, Credit, Item, ProbeFilter, Push, Upstream};
use crate::memory::messages::MemoryFreed;
use crate::memory::pool::{MemoryWait, NodePool, Reserve, Wake};
use actix::prelude::*;

use std::sync::Arc;
use weir_operators::{Batch, Error as OpError, MemoryPool, Reservation};

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
    pub fn stat(&self) -> &EdgeStat {
        &self.edge
    }

    /// The edge's counters, shared.
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
        self.attach_with(addr, None);
    }

    /// [`Output::attach`] for a producer that takes its consumer's key filter
    /// ([`ProbeFilter`]).
    pub fn attach_filtered<A>(&mut self, addr: Addr<A>)
    where
        A: Actor + Handler<Credit> + Handler<Cancel> + Handler<MemoryFreed> + Handler<ProbeFilter>,
        A::Context: actix::dev::ToEnvelope<A, Credit>
            + actix::dev::ToEnvelope<A, Cancel>
            + actix::dev::ToEnvelope<A, MemoryFreed>
            + actix::dev::ToEnvelope<A, ProbeFilter>,
    {
        let filter: Recipient<ProbeFilter> = addr.clone().recipient();
        self.attach_with(addr, Some(filter));
    }

    fn attach_with<A>(&mut self, addr: Addr<A>, filter: Option<Recipient<ProbeFilter>>)
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
                filter,
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
        self.edge.sent(batch.num_rows());
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
