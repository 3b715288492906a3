//! The actor that runs one kernel (filter, project, join, aggregate, sort, limit).
//!
//! Output is pulled: while the output edge has credit the actor asks the kernel for its next
//! batch ([`Operator::next_output`]) and sends it; a batch that cannot go yet (no byte credit
//! for it, or no memory for it on the node) is held by the output edge, and the actor makes no
//! more until it went. Input is fed only while the kernel has no output pending and the output
//! holds nothing: items that arrive meanwhile (at most an input's window of batches and bytes,
//! plus its End) wait in arrival order, still accounted on the node, and an input gets its
//! credits (batches and bytes) back only once nothing is pending. So when the output is
//! blocked, input stops, and what the actor holds is bounded by the windows and the kernel's
//! own state.

use crate::exec::edge::{EdgeStat, Window};
use crate::exec::flow::Output;
use crate::exec::guard::{guarded, timed};
use crate::exec::messages::{Attach, Cancel, Credit, Item, ProbeFilter, Push, Upstream};
use crate::exec::messages::{FragmentLink, OpFailed, OpStopped};
use crate::memory::joins::next_join_id;
use crate::memory::joins::Supervised as Entry;
use crate::memory::messages::{Kill, MemoryFreed, Revoke};
use crate::node::state::{LiveGuard, NodeShared};
use actix::prelude::*;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use weir_operators::kernels::key_filter::KeyFilter;
use weir_operators::kernels::{InputOrder, Operator};
use weir_operators::Expr;
use weir_operators::Reservation;

#[derive(Default)]
struct Input {
    upstream: Option<Upstream>,
    edge: Option<Arc<EdgeStat>>,
    active: bool,
    granted: bool,
    /// Its End was given to the kernel, or it was cancelled.
    ended: bool,
    /// A key filter (and the keys) for its producer, until the producer is attached.
    filter: Option<(KeyFilter, Vec<Expr>)>,
    /// Batches given to the kernel whose credit has not been returned yet.
    owed: usize,
    /// Their bytes.
    owed_bytes: usize,
}

/// An input item received but not yet given to the kernel.
struct Received {
    port: usize,
    item: Item,
    /// The batch's bytes on this node, held until the kernel takes the batch.
    _mem: Option<Reservation>,
    /// Its byte credits.
    bytes: usize,
}

/// An operator under its node's memory circuit breaker: a hash join, which it may kill, or an
/// operator that can spill, which it may ask to.
struct Supervised {
    /// Its id among the node's [`RunningJoins`](crate::memory::joins::RunningJoins).
    id: u64,
    node: Arc<NodeShared>,
    /// Bytes it holds; for a join, the build bytes the pool counts as its (see `flush`).
    size: Arc<AtomicUsize>,
    /// Bytes it could give back by spilling.
    revocable: Arc<AtomicUsize>,
    /// Whether it is a hash join (its memory counted for admission's estimates).
    join: bool,
    /// Whether the breaker may kill it (a hash join that cannot spill).
    killable: bool,
}

/// Runs a kernel between its inputs and one output edge.
pub struct OperatorActor {
    op: Box<dyn Operator>,
    inputs: Vec<Input>,
    order: Vec<usize>,
    out: Output,
    /// Items received while the kernel had output pending, in arrival order.
    inbox: VecDeque<Received>,
    window: Window,
    link: FragmentLink,
    finished: bool,
    supervised: Option<Supervised>,
    /// Whether the kernel's key filter goes to its next input's producer.
    join_filters: bool,
    _live: LiveGuard,
}

impl OperatorActor {
    /// An actor for `op` with `inputs` input ports, sending to `out`.
    pub fn new(
        op: Box<dyn Operator>,
        inputs: usize,
        out: Output,
        window: Window,
        link: FragmentLink,
        live: LiveGuard,
    ) -> Self {
        let order: Vec<usize> = match op.input_order() {
            InputOrder::Any => (0..inputs).collect(),
            InputOrder::Sequential => {
                let first = op.first_port().min(inputs.saturating_sub(1));
                std::iter::once(first)
                    .chain((0..inputs).filter(|&p| p != first))
                    .collect()
            }
        };
        let mut ins: Vec<Input> = (0..inputs).map(|_| Input::default()).collect();
        match op.input_order() {
            InputOrder::Any => ins.iter_mut().for_each(|i| i.active = true),
            InputOrder::Sequential => {
                if let Some(&p) = order.first() {
                    ins[p].active = true;
                }
            }
        }
        OperatorActor {
            op,
            inputs: ins,
            order,
            out,
            inbox: VecDeque::new(),
            window,
            link,
            finished: false,
            supervised: None,
            join_filters: false,
            _live: live,
        }
    }

    /// Puts the actor under the node's memory circuit breaker (in Guarded mode: hash joins,
    /// with `join`, which it may kill when `killable`; and operators that can spill, which it
    /// may ask to).
    pub fn supervised(mut self, node: Arc<NodeShared>, join: bool, killable: bool) -> Self {
        self.supervised = Some(Supervised {
            id: next_join_id(),
            node,
            size: Arc::new(AtomicUsize::new(0)),
            revocable: Arc::new(AtomicUsize::new(0)),
            join,
            killable,
        });
        self
    }

    /// Tells the breaker what the kernel holds now, and what of it it could give back.
    fn report_memory(&self) {
        if let Some(s) = &self.supervised {
            let now = self.op.memory_size();
            let old = s.size.swap(now, Ordering::Relaxed);
            if s.join {
                s.node.pool.join_resized(old, now);
            }
            let revocable = match self.op.has_output() {
                true => 0,
                false => self.op.revocable(),
            };
            s.revocable.store(revocable, Ordering::Relaxed);
        }
    }

    /// The kernel's key filter ([`Operator::probe_filter`]) goes to the producers of its next
    /// input (`true`), or is not asked for.
    pub fn join_filters(mut self, on: bool) -> Self {
        self.join_filters = on;
        self
    }

    /// Hands input `port`'s pending key filter to its producer, once attached (a producer
    /// that takes none lets it go).
    fn send_filter(&mut self, port: usize) {
        let input = &mut self.inputs[port];
        if let Some(up) = &input.upstream {
            if let (Some((filter, keys)), Some(to)) = (input.filter.take(), &up.filter) {
                to.do_send(ProbeFilter { filter, keys });
            }
        }
    }

    fn grant_initial(&mut self, port: usize) {
        let window = self.window;
        let input = &mut self.inputs[port];
        if input.active && !input.granted && !input.ended {
            if let Some(up) = &input.upstream {
                input.granted = true;
                up.credit.do_send(Credit::window(window));
            }
        }
    }

    fn fail(&mut self, e: weir_operators::Error, ctx: &mut Context<Self>) {
        self.link.failed.do_send(OpFailed(e));
        self.cancel_inputs();
        self.finished = true;
        ctx.stop();
    }

    fn cancel_inputs(&mut self) {
        for input in &mut self.inputs {
            if !input.ended {
                input.ended = true;
                if let Some(up) = &input.upstream {
                    up.cancel.do_send(Cancel);
                }
            }
        }
        for r in self.inbox.drain(..) {
            if matches!(r.item, Item::Batch(_)) {
                if let Some(e) = &self.inputs[r.port].edge {
                    e.dequeued(r.bytes);
                }
            }
        }
    }

    /// Gives one received item to the kernel.
    fn feed(&mut self, r: Received) -> weir_operators::Result<()> {
        let port = r.port;
        match r.item {
            Item::Batch(batch) => {
                if let Some(e) = &self.inputs[port].edge {
                    e.dequeued(r.bytes);
                }
                if self.inputs[port].ended {
                    return Ok(());
                }
                self.inputs[port].owed += 1;
                self.inputs[port].owed_bytes += r.bytes;
                let op = &mut self.op;
                timed(self.out.stat(), || {
                    guarded(op.name(), || op.push(port, batch))
                })
            }
            Item::End => {
                if self.inputs[port].ended {
                    return Ok(());
                }
                self.inputs[port].ended = true;
                let op = &mut self.op;
                timed(self.out.stat(), || guarded(op.name(), || op.finish(port)))?;
                // Sequential inputs: the next one may start, with a key filter.
                if let Some(pos) = self.order.iter().position(|&p| p == port) {
                    if let Some(&next) = self.order.get(pos + 1) {
                        if self.join_filters && pos == 0 {
                            self.inputs[next].filter = self.op.probe_filter();
                            self.send_filter(next);
                        }
                        if !self.inputs[next].active {
                            self.inputs[next].active = true;
                            self.grant_initial(next);
                        }
                    }
                }
                Ok(())
            }
        }
    }

    /// Sends output while the edge has credit, feeds received input while the kernel has no
    /// output pending, returns credits, and ends the output once everything is through.
    fn flush(&mut self, ctx: &mut Context<Self>) {
        if self.finished {
            return;
        }
        loop {
            while self.out.ready() {
                let op = &mut self.op;
                match timed(self.out.stat(), || guarded(op.name(), || op.next_output())) {
                    Ok(Some(b)) => {
                        if b.num_rows() > 0 {
                            if let Err(e) = self.out.send(b) {
                                return self.fail(e, ctx);
                            }
                        }
                    }
                    Ok(None) => break,
                    Err(e) => return self.fail(e, ctx),
                }
            }
            if self.op.has_output() || self.out.has_held() {
                // Blocked on credit or memory: input waits.
                break;
            }
            if self.op.is_done() {
                self.cancel_inputs();
                break;
            }
            let Some(r) = self.inbox.pop_front() else {
                break;
            };
            if let Err(e) = self.feed(r) {
                return self.fail(e, ctx);
            }
        }
        self.report_memory();
        let pending = self.op.has_output() || self.out.has_held();
        if !pending {
            for input in &mut self.inputs {
                if input.owed > 0 && !input.ended {
                    if let Some(up) = &input.upstream {
                        up.credit.do_send(Credit {
                            batches: input.owed,
                            bytes: input.owed_bytes,
                        });
                    }
                }
                input.owed = 0;
                input.owed_bytes = 0;
            }
        }
        if self.op.is_done() {
            self.cancel_inputs();
        }
        let inputs_done = self.inputs.iter().all(|i| i.ended);
        if inputs_done && !pending && self.inbox.is_empty() {
            self.finished = true;
            self.out.end();
            ctx.stop();
        }
    }
}

impl Actor for OperatorActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.out.attach(ctx.address());
        if let Some(s) = &self.supervised {
            let entry = Entry {
                kill: ctx.address().recipient(),
                revoke: ctx.address().recipient(),
                size: s.size.clone(),
                revocable: s.revocable.clone(),
                killable: s.killable,
            };
            s.node.joins.enter(s.id, entry);
        }
    }

    fn stopped(&mut self, _ctx: &mut Self::Context) {
        // What the pool counts as this join's (see `flush`), and the most it held.
        let tracked = self
            .supervised
            .as_ref()
            .map_or(0, |s| s.size.swap(0, Ordering::Relaxed));
        let held = tracked.max(self.op.memory_size());
        // Free the kernel's memory before anyone hears that the actor stopped.
        self.op = Box::new(weir_operators::kernels::limit::LimitOp::new(0, Some(0)));
        self.inbox.clear();
        self.out.discard();
        if let Some(s) = &self.supervised {
            let pool = &s.node.pool;
            if s.join {
                if held > 0 {
                    pool.record_join(held);
                }
                pool.join_stopped(tracked);
            }
            if s.node.joins.leave(s.id) {
                // The last victim of a kill round is gone: the supervisor looks again.
                pool.notify_supervisor();
            }
        }
        self.link.stopped.do_send(OpStopped);
    }
}

impl Handler<Attach> for OperatorActor {
    type Result = ();

    fn handle(&mut self, msg: Attach, ctx: &mut Context<Self>) {
        let Some(input) = self.inputs.get_mut(msg.port) else {
            return;
        };
        input.upstream = Some(msg.upstream);
        input.edge = Some(msg.edge);
        if self.finished || input.ended {
            if let Some(up) = &input.upstream {
                up.cancel.do_send(Cancel);
            }
            return;
        }
        self.send_filter(msg.port);
        self.grant_initial(msg.port);
        let _ = ctx;
    }
}

impl Handler<Push> for OperatorActor {
    type Result = ();

    fn handle(&mut self, msg: Push, ctx: &mut Context<Self>) {
        let port = msg.port;
        if port >= self.inputs.len() || self.finished {
            return;
        }
        if self.inputs[port].ended {
            // Cancelled (or ended twice): dropped.
            if matches!(msg.item, Item::Batch(_)) {
                if let Some(e) = &self.inputs[port].edge {
                    e.dequeued(msg.bytes);
                }
            }
            return;
        }
        self.inbox.push_back(Received {
            port,
            item: msg.item,
            _mem: msg.mem,
            bytes: msg.bytes,
        });
        self.flush(ctx);
    }
}

impl Handler<Credit> for OperatorActor {
    type Result = ();

    fn handle(&mut self, msg: Credit, ctx: &mut Context<Self>) {
        if self.finished {
            return;
        }
        if let Err(e) = self.out.grant(msg) {
            return self.fail(e, ctx);
        }
        self.flush(ctx);
    }
}

impl Handler<MemoryFreed> for OperatorActor {
    type Result = ();

    fn handle(&mut self, _msg: MemoryFreed, ctx: &mut Context<Self>) {
        if self.finished {
            return;
        }
        if let Err(e) = self.out.memory_freed() {
            return self.fail(e, ctx);
        }
        self.flush(ctx);
    }
}

impl Handler<Kill> for OperatorActor {
    type Result = bool;

    /// Whether the kill was delivered to a running join (one that had finished is not killed).
    fn handle(&mut self, _msg: Kill, ctx: &mut Context<Self>) -> bool {
        if self.finished {
            return false;
        }
        let e = weir_operators::Error::Cancelled("killed by memory circuit breaker".into());
        self.fail(e, ctx);
        true
    }
}

impl Handler<Revoke> for OperatorActor {
    type Result = usize;

    /// Spills what the kernel can give back (nothing while it has output pending); answers
    /// the bytes freed.
    fn handle(&mut self, _msg: Revoke, ctx: &mut Context<Self>) -> usize {
        if self.finished || self.op.has_output() || self.op.revocable() == 0 {
            return 0;
        }
        let before = self.op.memory_size();
        if let Err(e) = self.op.revoke() {
            self.fail(e, ctx);
            return 0;
        }
        let freed = before.saturating_sub(self.op.memory_size());
        tracing::debug!(op = self.op.name(), freed, "spilled for the breaker");
        self.report_memory();
        freed
    }
}

impl Handler<Cancel> for OperatorActor {
    type Result = ();

    fn handle(&mut self, _msg: Cancel, ctx: &mut Context<Self>) {
        self.finished = true;
        self.cancel_inputs();
        ctx.stop();
    }
}
