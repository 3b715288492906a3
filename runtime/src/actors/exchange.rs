//! Both ends of an exchange between fragments.
//!
//! The sending end holds back its newest batch so that the final one travels flagged `last`:
//! a fragment whose result fits one batch sends exactly one message. The receiving end acks
//! every batch it hands on (under Lean, all but the last), granting the sender one more credit.

use super::node::{RegisterReceiver, RegisterSender, Unregister};
use super::{FragmentLink, OpFailed, OpStopped};
use crate::flow::{Attach, Cancel, Credit, EdgeStat, Item, Output, Push, Upstream};
use crate::messages::{BatchAck, BatchMessage, BatchStop, NetMessage, NodeId, Protocol, QueryId};
use crate::node::{LiveGuard, NodeHandle};
use actix::prelude::*;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use weir_operators::kernels::hash::hash_rows;
use weir_operators::{eval, Batch, MemoryPool, Reservation, Value};
use weir_planner::Distribution;

/// Node → receiver: a batch arrived from `from`.
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct RemoteBatch {
    /// Sending node.
    pub from: NodeId,
    /// The batch.
    pub msg: BatchMessage,
}

/// Node → sender: the receiver on `from` wants no more batches.
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct RemoteStop {
    /// Receiving node that stopped.
    pub from: NodeId,
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

#[derive(Default)]
struct SenderState {
    /// The batch id expected next; earlier ids are duplicates.
    next_id: u64,
    /// Batches that arrived ahead of their turn (the network may reorder).
    early: std::collections::BTreeMap<u64, BatchMessage>,
    done: bool,
}

/// The receiving end of an exchange: a source for its fragment.
pub struct ExchangeRecvActor {
    query: QueryId,
    exchange: u32,
    node: NodeHandle,
    protocol: Protocol,
    out: Output,
    link: FragmentLink,
    senders: HashMap<NodeId, SenderState>,
    buffer: VecDeque<(NodeId, BatchMessage, Reservation)>,
    done: bool,
    _live: LiveGuard,
}

impl ExchangeRecvActor {
    /// A receiver for `exchange` of `query`, expecting one channel from each of `senders`.
    pub fn new(
        query: QueryId,
        exchange: u32,
        senders: &[NodeId],
        node: NodeHandle,
        protocol: Protocol,
        out: Output,
        link: FragmentLink,
    ) -> Self {
        let live = LiveGuard::new(&node.shared);
        ExchangeRecvActor {
            query,
            exchange,
            protocol,
            out,
            link,
            senders: senders
                .iter()
                .map(|&n| (n, SenderState::default()))
                .collect(),
            buffer: VecDeque::new(),
            done: false,
            node,
            _live: live,
        }
    }

    fn deliver(&mut self, ctx: &mut Context<Self>) {
        while !self.done {
            let Some((_, msg, _)) = self.buffer.front() else {
                break;
            };
            let has_rows = msg.rows.as_ref().is_some_and(|b| b.num_rows() > 0);
            if has_rows && !self.out.ready() {
                break;
            }
            let Some((from, msg, _mem)) = self.buffer.pop_front() else {
                break;
            };
            let (fragment, batch_id, last) = (msg.fragment, msg.batch_id, msg.last);
            if let Some(rows) = msg.rows {
                if rows.num_rows() > 0 {
                    self.out.send(rows);
                }
            }
            if !last || self.protocol == Protocol::Legacy {
                self.node.send(
                    from,
                    NetMessage::QueryBatchAck(BatchAck {
                        query: self.query,
                        fragment,
                        exchange: self.exchange,
                        batch_id,
                        credits: 1,
                    }),
                );
            }
            if last {
                if let Some(s) = self.senders.get_mut(&from) {
                    s.done = true;
                }
            }
        }
        if !self.done && self.buffer.is_empty() && self.senders.values().all(|s| s.done) {
            self.done = true;
            self.out.end();
            ctx.stop();
        }
    }
}

impl Actor for ExchangeRecvActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.out.attach(ctx.address());
        self.node.addr.do_send(RegisterReceiver {
            query: self.query,
            exchange: self.exchange,
            addr: ctx.address(),
        });
        if self.senders.is_empty() {
            self.deliver(ctx);
        }
    }

    fn stopped(&mut self, _ctx: &mut Self::Context) {
        self.node
            .addr
            .do_send(Unregister::Receiver(self.query, self.exchange));
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
        state.early.entry(msg.msg.batch_id).or_insert(msg.msg);
        let mut ready = Vec::new();
        while let Some(m) = state.early.remove(&state.next_id) {
            state.next_id += 1;
            ready.push(m);
        }
        let pool: Arc<dyn MemoryPool> = self.node.shared.pool.clone();
        for m in ready {
            // Rows that arrived and wait here count on this node until they move on.
            let mut mem = Reservation::new(pool.clone());
            mem.force_grow(m.rows.as_ref().map_or(0, Batch::memory_size));
            self.buffer.push_back((msg.from, m, mem));
        }
        self.deliver(ctx);
    }
}

impl Handler<Credit> for ExchangeRecvActor {
    type Result = ();

    fn handle(&mut self, msg: Credit, ctx: &mut Context<Self>) {
        self.out.grant(msg.0);
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
                self.node.send(
                    from,
                    NetMessage::QueryBatchStop(BatchStop {
                        query: self.query,
                        exchange: self.exchange,
                    }),
                );
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

struct Channel {
    target: NodeId,
    edge: Arc<EdgeStat>,
    credits: usize,
    next_id: u64,
    held: Option<(Batch, Reservation)>,
    queue: VecDeque<(Option<Batch>, bool, Option<Reservation>)>,
    last_sent: bool,
    /// The receiver needs no more batches: nothing is held or sent for it any more.
    stopped: bool,
    acked: std::collections::HashSet<u64>,
}

/// What an exchange sender needs to know.
pub struct SenderSpec {
    /// Query.
    pub query: QueryId,
    /// Sending fragment.
    pub fragment: u32,
    /// Exchange.
    pub exchange: u32,
    /// How rows are spread.
    pub distribution: Distribution,
    /// Receiving nodes.
    pub targets: Vec<NodeId>,
    /// Parameters (hash keys may read them).
    pub params: Arc<Vec<Value>>,
    /// Credits per channel.
    pub window: usize,
    /// Workflow.
    pub protocol: Protocol,
    /// Where the channels' edges are registered.
    pub edges: Arc<crate::flow::EdgeRegistry>,
}

/// The sending end of an exchange: the consumer at the top of a fragment.
pub struct ExchangeSendActor {
    spec: SenderSpec,
    node: NodeHandle,
    link: FragmentLink,
    channels: Vec<Channel>,
    upstream: Option<Upstream>,
    edge: Option<Arc<EdgeStat>>,
    owed: usize,
    input_ended: bool,
    finished: bool,
    _live: LiveGuard,
}

impl ExchangeSendActor {
    /// A sender for `spec` on `node`.
    pub fn new(spec: SenderSpec, node: NodeHandle, link: FragmentLink) -> Self {
        let live = LiveGuard::new(&node.shared);
        let channels = spec
            .targets
            .iter()
            .map(|&target| Channel {
                edge: spec.edges.edge(format!(
                    "{}/f{} -> exchange {} @ node {target}",
                    node.shared.name, spec.fragment, spec.exchange
                )),
                target,
                credits: spec.window,
                next_id: 0,
                held: None,
                queue: VecDeque::new(),
                last_sent: false,
                stopped: false,
                acked: std::collections::HashSet::new(),
            })
            .collect();
        ExchangeSendActor {
            spec,
            node,
            link,
            channels,
            upstream: None,
            edge: None,
            owed: 0,
            input_ended: false,
            finished: false,
            _live: live,
        }
    }

    fn route(&mut self, batch: Batch) -> weir_operators::Result<()> {
        let n = self.channels.len();
        if n == 0 {
            return Ok(());
        }
        match &self.spec.distribution {
            Distribution::Gather => self.hold(0, batch),
            Distribution::Broadcast => {
                for i in 1..n {
                    self.hold(i, batch.clone());
                }
                self.hold(0, batch);
            }
            Distribution::Hash(keys) => {
                if n == 1 {
                    self.hold(0, batch);
                    return Ok(());
                }
                let cols = keys
                    .iter()
                    .map(|k| eval::evaluate(k, &batch, &self.spec.params))
                    .collect::<weir_operators::Result<Vec<_>>>()?;
                let mut hashes = Vec::with_capacity(batch.num_rows());
                hash_rows(&cols, &mut hashes);
                let mut parts: Vec<Vec<u32>> = vec![Vec::new(); n];
                for (row, h) in hashes.iter().enumerate() {
                    parts[(h % n as u64) as usize].push(row as u32);
                }
                // Every row to one target: move the batch instead of gathering a copy.
                let rows = batch.num_rows();
                if let Some(i) = parts.iter().position(|p| p.len() == rows) {
                    self.hold(i, batch);
                    return Ok(());
                }
                for (i, rows) in parts.into_iter().enumerate() {
                    if !rows.is_empty() {
                        let b = batch.take(&rows);
                        self.hold(i, b);
                    }
                }
            }
        }
        Ok(())
    }

    fn hold(&mut self, i: usize, batch: Batch) {
        if self.channels[i].stopped {
            return;
        }
        // Batches waiting for credit count on this node.
        let pool: Arc<dyn MemoryPool> = self.node.shared.pool.clone();
        let mut mem = Reservation::new(pool);
        mem.force_grow(batch.memory_size());
        let ch = &mut self.channels[i];
        if let Some((prev, prev_mem)) = ch.held.replace((batch, mem)) {
            ch.queue.push_back((Some(prev), false, Some(prev_mem)));
        }
    }

    fn flush(&mut self, ctx: &mut Context<Self>) {
        for ch in &mut self.channels {
            while ch.credits > 0 {
                let Some((rows, last, _mem)) = ch.queue.pop_front() else {
                    break;
                };
                ch.credits -= 1;
                ch.edge.enqueued();
                let msg = BatchMessage {
                    query: self.spec.query,
                    fragment: self.spec.fragment,
                    exchange: self.spec.exchange,
                    batch_id: ch.next_id,
                    last,
                    rows,
                };
                ch.next_id += 1;
                ch.last_sent |= last;
                self.node.send(ch.target, NetMessage::QueryBatch(msg));
            }
        }
        let queued: usize = self.channels.iter().map(|c| c.queue.len()).sum();
        if queued < self.spec.window && self.owed > 0 && !self.input_ended {
            if let Some(up) = &self.upstream {
                up.credit.do_send(Credit(self.owed));
            }
            self.owed = 0;
        }
        if self.finished {
            return;
        }
        if self.channels.iter().all(|c| c.stopped) {
            // Nobody wants these rows: stop the work that produces them.
            self.finished = true;
            if let Some(up) = &self.upstream {
                up.cancel.do_send(Cancel);
            }
            ctx.stop();
        } else if self.input_ended && self.channels.iter().all(|c| c.last_sent || c.stopped) {
            self.finished = true;
            ctx.stop();
        }
    }
}

impl Handler<RemoteStop> for ExchangeSendActor {
    type Result = ();

    fn handle(&mut self, msg: RemoteStop, ctx: &mut Context<Self>) {
        if let Some(ch) = self.channels.iter_mut().find(|c| c.target == msg.from) {
            ch.stopped = true;
            ch.held = None;
            ch.queue.clear();
        }
        self.flush(ctx);
    }
}

impl Actor for ExchangeSendActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.node.addr.do_send(RegisterSender {
            query: self.spec.query,
            exchange: self.spec.exchange,
            addr: ctx.address(),
        });
    }

    fn stopped(&mut self, _ctx: &mut Self::Context) {
        self.node
            .addr
            .do_send(Unregister::Sender(self.spec.query, self.spec.exchange));
        self.link.stopped.do_send(OpStopped);
    }
}

impl Handler<Attach> for ExchangeSendActor {
    type Result = ();

    fn handle(&mut self, msg: Attach, _ctx: &mut Context<Self>) {
        if self.finished {
            msg.upstream.cancel.do_send(Cancel);
            return;
        }
        msg.upstream.credit.do_send(Credit(self.spec.window));
        self.upstream = Some(msg.upstream);
        self.edge = Some(msg.edge);
    }
}

impl Handler<Push> for ExchangeSendActor {
    type Result = ();

    fn handle(&mut self, msg: Push, ctx: &mut Context<Self>) {
        if self.finished || self.input_ended {
            return;
        }
        match msg.item {
            Item::Batch(batch) => {
                if let Some(e) = &self.edge {
                    e.dequeued();
                }
                self.owed += 1;
                if let Err(e) = self.route(batch) {
                    self.link.failed.do_send(OpFailed(e));
                    self.finished = true;
                    ctx.stop();
                    return;
                }
            }
            Item::End => {
                self.input_ended = true;
                for ch in &mut self.channels {
                    match ch.held.take() {
                        Some((b, mem)) => ch.queue.push_back((Some(b), true, Some(mem))),
                        None => ch.queue.push_back((None, true, None)),
                    }
                }
            }
        }
        self.flush(ctx);
    }
}

impl Handler<RemoteAck> for ExchangeSendActor {
    type Result = ();

    fn handle(&mut self, msg: RemoteAck, ctx: &mut Context<Self>) {
        if let Some(ch) = self.channels.iter_mut().find(|c| c.target == msg.from) {
            // A duplicated ack grants nothing.
            if ch.acked.insert(msg.ack.batch_id) {
                ch.credits += msg.ack.credits as usize;
                ch.edge.dequeued();
            }
        }
        self.flush(ctx);
    }
}

impl Handler<Cancel> for ExchangeSendActor {
    type Result = ();

    fn handle(&mut self, _msg: Cancel, ctx: &mut Context<Self>) {
        self.finished = true;
        if let Some(up) = &self.upstream {
            up.cancel.do_send(Cancel);
        }
        ctx.stop();
    }
}
