//! The receiving end of an exchange: a source for its fragment (see the [module docs](super)).

use crate::exchange::messages::RemoteBatch;
use crate::exchange::router::Links;
use crate::exec::flow::Output;
use crate::exec::messages::{Cancel, Credit, ProbeFilter};
use crate::exec::messages::{FragmentLink, OpFailed, OpStopped};
use crate::memory::messages::MemoryFreed;
use crate::node::state::LiveGuard;
use crate::wire::ids::{NodeId, QueryId};
use crate::wire::messages::{BatchAck, BatchFilter, BatchMessage, BatchStop, NetMessage, Protocol};
use actix::prelude::*;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use weir_operators::{Batch, Error as OpError, MemoryPool, Reservation};

#[derive(Default)]
struct SenderState {
    /// The batch id expected next; earlier ids are duplicates.
    next_id: u64,
    /// Batches that arrived ahead of their turn (the network may reorder), with their bytes.
    early: std::collections::BTreeMap<u64, (BatchMessage, Option<Reservation>)>,
    done: bool,
}

/// The receiving end of an exchange: a source for its fragment.
pub struct ExchangeRecvActor {
    query: QueryId,
    exchange: u32,
    /// Columns of the batches the exchange carries: a batch from another node that has
    /// another count is refused (the kernels above index its columns).
    width: usize,
    links: Links,
    protocol: Protocol,
    out: Output,
    link: FragmentLink,
    senders: HashMap<NodeId, SenderState>,
    buffer: VecDeque<(NodeId, BatchMessage, Reservation)>,
    done: bool,
    _live: LiveGuard,
}

impl ExchangeRecvActor {
    /// A receiver for `exchange` of `query`, whose batches have `width` columns, expecting one
    /// channel from each of `senders`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        query: QueryId,
        exchange: u32,
        width: usize,
        senders: &[NodeId],
        links: Links,
        protocol: Protocol,
        out: Output,
        link: FragmentLink,
    ) -> Self {
        let live = LiveGuard::new(&links.node.shared);
        ExchangeRecvActor {
            query,
            exchange,
            width,
            protocol,
            out,
            link,
            senders: senders
                .iter()
                .map(|&n| (n, SenderState::default()))
                .collect(),
            buffer: VecDeque::new(),
            done: false,
            links,
            _live: live,
        }
    }

    fn fail(&mut self, e: OpError, ctx: &mut Context<Self>) {
        self.done = true;
        self.out.discard();
        self.link.failed.do_send(OpFailed(e));
        self.stop_senders();
        ctx.stop();
    }

    /// Hands buffered batches on while the output allows (their reservations move along),
    /// acking each, and ends the output once every sender's last batch went.
    fn deliver(&mut self, ctx: &mut Context<Self>) {
        while !self.done {
            let Some((_, msg, _)) = self.buffer.front() else {
                break;
            };
            let has_rows = msg.rows.as_ref().is_some_and(|b| b.num_rows() > 0);
            if has_rows && !self.out.ready() {
                break;
            }
            let Some((from, msg, mem)) = self.buffer.pop_front() else {
                break;
            };
            let (fragment, batch_id, last) = (msg.fragment, msg.batch_id, msg.last);
            let bytes = msg.rows.as_ref().map_or(0, Batch::data_size);
            if let Some(rows) = msg.rows {
                if rows.num_rows() > 0 {
                    if let Err(e) = self.out.send_with(rows, Some(mem)) {
                        return self.fail(e, ctx);
                    }
                }
            }
            if !last || self.protocol == Protocol::Legacy {
                let ack = BatchAck {
                    query: self.query,
                    fragment,
                    exchange: self.exchange,
                    batch_id,
                    credits: 1,
                    bytes: bytes as u64,
                };
                self.links.send(from, NetMessage::QueryBatchAck(ack), None);
            }
            if last {
                if let Some(s) = self.senders.get_mut(&from) {
                    s.done = true;
                }
            }
        }
        if !self.done
            && self.buffer.is_empty()
            && !self.out.has_held()
            && self.senders.values().all(|s| s.done)
        {
            self.done = true;
            self.out.end();
            ctx.stop();
        }
    }
}

impl Actor for ExchangeRecvActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        let addr = ctx.address();
        self.out.attach_filtered(addr);
        self.links
            .router
            .add_receiver((self.query, self.exchange), ctx.address().recipient());
        if self.senders.is_empty() {
            self.deliver(ctx);
        }
    }

    fn stopped(&mut self, _ctx: &mut Self::Context) {
        self.buffer.clear();
        self.out.discard();
        self.links
            .router
            .remove_receiver((self.query, self.exchange));
        self.link.stopped.do_send(OpStopped);
    }
}

impl Handler<RemoteBatch> for ExchangeRecvActor {
    type Result = ();

    fn handle(&mut self, msg: RemoteBatch, ctx: &mut Context<Self>) {
        let Some(state) = self.senders.get_mut(&msg.from) else {
            tracing::warn!("batch from unexpected node {}", msg.from);
            return;
        };
        // Duplicates (an id already taken) are dropped; early arrivals wait for their turn,
        // so every channel is consumed exactly once and in order.
        if state.done || msg.msg.batch_id < state.next_id {
            return;
        }
        // A batch decoded from another node is checked against the exchange's width once
        // here (one moved within this node is the plan's own).
        let width = msg.msg.rows.as_ref().map_or(self.width, Batch::num_columns);
        if msg.from != self.links.node.shared.id && width != self.width {
            let e = OpError::Internal(format!(
                "a batch of {width} columns from node {} on exchange {}, which carries {}",
                msg.from, self.exchange, self.width
            ));
            self.fail(e, ctx);
            return;
        }
        // The first copy to arrive carries the reservation (see `Network::send_with`).
        state
            .early
            .entry(msg.msg.batch_id)
            .or_insert((msg.msg, msg.mem));
        let mut ready = Vec::new();
        while let Some(m) = state.early.remove(&state.next_id) {
            state.next_id += 1;
            ready.push(m);
        }
        let pool: Arc<dyn MemoryPool> = self.links.node.shared.pool.clone();
        for (m, mem) in ready {
            // Rows that arrived and wait here count on this node until they move on, with
            // what the sender reserved here for them.
            let mut mem = match mem {
                Some(r) if r.same_pool(&pool) => r,
                _ => Reservation::new(pool.clone()),
            };
            // Decoding may size the columns differently: correct it now if the node has room,
            // else the output tops it up before the batch moves on.
            let size = m.rows.as_ref().map_or(0, Batch::memory_size);
            if mem.size() > size {
                mem.shrink(mem.size() - size);
            } else {
                let _ = mem.try_grow(size - mem.size());
            }
            self.buffer.push_back((msg.from, m, mem));
        }
        self.deliver(ctx);
    }
}

impl Handler<Credit> for ExchangeRecvActor {
    type Result = ();

    fn handle(&mut self, msg: Credit, ctx: &mut Context<Self>) {
        if self.done {
            return;
        }
        if let Err(e) = self.out.grant(msg) {
            return self.fail(e, ctx);
        }
        self.deliver(ctx);
    }
}

impl Handler<MemoryFreed> for ExchangeRecvActor {
    type Result = ();

    fn handle(&mut self, _msg: MemoryFreed, ctx: &mut Context<Self>) {
        if self.done {
            return;
        }
        if let Err(e) = self.out.memory_freed() {
            return self.fail(e, ctx);
        }
        self.deliver(ctx);
    }
}

impl ExchangeRecvActor {
    /// The consumer needs no more rows: every sender still sending is told to stop, so that
    /// none of them waits for credits that will never come, and what waits here is dropped.
    fn stop_senders(&mut self) {
        self.buffer.clear();
        for (&from, s) in &mut self.senders {
            if !s.done {
                s.done = true;
                s.early.clear();
                let stop = BatchStop {
                    query: self.query,
                    exchange: self.exchange,
                };
                self.links
                    .send(from, NetMessage::QueryBatchStop(stop), None);
            }
        }
    }
}

impl Handler<ProbeFilter> for ExchangeRecvActor {
    type Result = ();

    /// The consumer needs only rows with the filter's keys: every sender still sending hears
    /// it, and drops the rows it rules out before they travel here.
    fn handle(&mut self, msg: ProbeFilter, _ctx: &mut Context<Self>) {
        if self.done {
            return;
        }
        for (&from, s) in &self.senders {
            if !s.done {
                let filter = BatchFilter {
                    query: self.query,
                    exchange: self.exchange,
                    filter: msg.filter.clone(),
                    keys: msg.keys.clone(),
                };
                self.links
                    .send(from, NetMessage::QueryBatchFilter(Box::new(filter)), None);
            }
        }
    }
}

impl Handler<Cancel> for ExchangeRecvActor {
    type Result = ();

    fn handle(&mut self, _msg: Cancel, ctx: &mut Context<Self>) {
        self.done = true;
        self.stop_senders();
        ctx.stop();
    }
}
