//! The sending end of an exchange: the consumer at the top of a fragment (see the [module docs](super)).

use crate::exchange::messages::{RemoteAck, RemoteFilter, RemoteStop};
use crate::exchange::router::{Links, SenderRoute};
use crate::exec::edge::{Credits, EdgeStat, Window};
use crate::exec::messages::{Attach, Cancel, Credit, Item, Push, Upstream};
use crate::exec::messages::{FragmentLink, OpFailed, OpStopped};
use crate::memory::messages::MemoryFreed;
use crate::memory::pool::{MemoryWait, Reserve, Wake};
use crate::node::state::LiveGuard;
use crate::wire::ids::{NodeId, QueryId};
use crate::wire::messages::{BatchMessage, NetMessage, Protocol};
use actix::prelude::*;
use std::collections::VecDeque;
use std::sync::Arc;
use weir_operators::kernels::key_filter::KeyFilter;
use weir_operators::kernels::partition::{hash_partition, hash_partition_filtered};
use weir_operators::plan::Distribution;
use weir_operators::{Batch, Error as OpError, Expr, MemoryPool, Reservation, Value};

/// A batch waiting on a channel for credit (or for room on the receiver's node).
struct Queued {
    rows: Option<Batch>,
    last: bool,
    /// Its bytes, accounted on the sender's node.
    mem: Option<Reservation>,
}

struct Channel {
    target: NodeId,
    edge: Arc<EdgeStat>,
    credits: Credits,
    next_id: u64,
    held: Option<(Batch, Reservation)>,
    queue: VecDeque<Queued>,
    last_sent: bool,
    /// The receiver needs no more batches: nothing is held or sent for it any more.
    stopped: bool,
    acked: std::collections::HashSet<u64>,
    /// The receiving node's pool, where a batch is accounted from the moment it is sent, with
    /// the channel's place in that pool's queue of waiters. `None`: the pool is not known (the
    /// receiver then accounts what arrives).
    memory: Option<MemoryWait>,
    /// The keys the receiver needs (see [`KeyFilter`]), with its bytes on this node: rows for
    /// this channel that it rules out are dropped.
    filter: Option<(KeyFilter, Reservation)>,
}

impl Channel {
    /// Bytes of the batches waiting for credit.
    fn queued_bytes(&self) -> usize {
        self.queue
            .iter()
            .map(|q| q.rows.as_ref().map_or(0, Batch::data_size))
            .sum()
    }

    /// Sends what credit, and room on the receiver's node, allow.
    fn flush(
        &mut self,
        spec: &SenderSpec,
        links: &Links,
        wake: Option<&Arc<dyn Wake>>,
    ) -> weir_operators::Result<()> {
        while let Some(front) = self.queue.front_mut() {
            let bytes = front.rows.as_ref().map_or(0, Batch::data_size);
            if !self.credits.allow(bytes) {
                break;
            }
            let mut travel = None;
            let mut local = None;
            if let (Some(memory), Some(rows), Some(wake)) = (&mut self.memory, &front.rows, wake) {
                let target: Arc<dyn MemoryPool> = memory.pool().clone();
                // On the sender's own node the reservation moves; elsewhere the receiver's
                // node accounts the batch before it leaves, and this node's bytes go after.
                let mut mem = match front.mem.take() {
                    Some(m) if m.same_pool(&target) => m,
                    other => {
                        local = other;
                        memory.reservation()
                    }
                };
                let size = rows.memory_size();
                if mem.size() > size {
                    mem.shrink(mem.size() - size);
                }
                let need = size - mem.size();
                match memory.reserve(&mut mem, need, wake) {
                    Reserve::Granted => travel = Some(mem),
                    Reserve::Waiting => {
                        // Woken by `MemoryFreed`: the channel tries again.
                        front.mem = local.or(Some(mem));
                        break;
                    }
                    Reserve::TooLarge => {
                        return Err(OpError::Memory(format!(
                            "a batch of {size} bytes cannot fit the memory budget of {} \
                             bytes of node {}",
                            memory.pool().budget(),
                            self.target
                        )));
                    }
                }
            }
            let Some(Queued { rows, last, mem }) = self.queue.pop_front() else {
                break;
            };
            self.credits.spend(bytes);
            self.edge.enqueued(bytes);
            let msg = BatchMessage {
                query: spec.query,
                fragment: spec.fragment,
                exchange: spec.exchange,
                batch_id: self.next_id,
                last,
                rows,
            };
            self.next_id += 1;
            self.last_sent |= last;
            links.send(self.target, NetMessage::QueryBatch(msg), travel);
            // Accounted on the receiver's node now: this node lets go.
            drop((mem, local));
        }
        Ok(())
    }

    /// The receiver stopped: drops everything held for it.
    fn stop(&mut self) {
        self.stopped = true;
        self.filter = None;
        self.held = None;
        self.queue.clear();
        if let Some(m) = &mut self.memory {
            m.done();
        }
    }
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
    /// Credits per channel, and of the sender's input edge.
    pub window: Window,
    /// Workflow.
    pub protocol: Protocol,
    /// Rows a coalesced batch may reach (the plan's batch size): smaller parts for one target
    /// are appended to each other up to this.
    pub batch_rows: usize,
    /// Where the channels' edges are registered.
    pub edges: Arc<crate::exec::edge::EdgeRegistry>,
}

/// Rows a sender's key filters test before it judges whether they pay.
const FILTER_TRIAL_ROWS: usize = 100_000;
/// Key filters that drop fewer than one tested row in this many are let go.
const FILTER_MIN_DROPPED: usize = 10;

/// The parts of one input batch, waiting for room on the sender's node.
struct Stash {
    parts: Vec<(usize, Batch)>,
    /// What the input batch brought.
    mem: Option<Reservation>,
}

/// The sending end of an exchange: the consumer at the top of a fragment.
pub struct ExchangeSendActor {
    spec: SenderSpec,
    links: Links,
    link: FragmentLink,
    channels: Vec<Channel>,
    upstream: Option<Upstream>,
    edge: Option<Arc<EdgeStat>>,
    owed: usize,
    owed_bytes: usize,
    /// Input not routed yet, in arrival order (while a stash waits).
    inbox: VecDeque<(Item, Option<Reservation>)>,
    stash: Option<Stash>,
    /// This node's pool, for the parts of input batches.
    memory: MemoryWait,
    wake: Option<Arc<dyn Wake>>,
    input_ended: bool,
    finished: bool,
    /// Scratch for the row hashes of a hash distribution, kept between batches.
    hashes: Vec<u64>,
    /// Rows tested by the channels' key filters, and those dropped.
    filter_tested: usize,
    filter_dropped: usize,
    _live: LiveGuard,
}

impl ExchangeSendActor {
    /// A sender for `spec`, on the node of `links`.
    pub fn new(spec: SenderSpec, links: Links, link: FragmentLink) -> Self {
        let node = &links.node;
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
                credits: Credits::full(spec.window),
                next_id: 0,
                held: None,
                queue: VecDeque::new(),
                last_sent: false,
                stopped: false,
                acked: std::collections::HashSet::new(),
                memory: node.pools.get(target).map(MemoryWait::new),
                filter: None,
            })
            .collect();
        ExchangeSendActor {
            memory: MemoryWait::new(node.shared.pool.clone()),
            spec,
            links,
            link,
            channels,
            upstream: None,
            edge: None,
            owed: 0,
            owed_bytes: 0,
            inbox: VecDeque::new(),
            stash: None,
            wake: None,
            input_ended: false,
            finished: false,
            hashes: Vec::new(),
            filter_tested: 0,
            filter_dropped: 0,
            _live: live,
        }
    }

    /// The parts of `batch` for each channel, as the exchange's distribution spreads rows.
    fn route(&mut self, batch: Batch) -> weir_operators::Result<Vec<(usize, Batch)>> {
        let n = self.channels.len();
        if n == 0 {
            return Ok(Vec::new());
        }
        Ok(match &self.spec.distribution {
            Distribution::Gather => vec![(0, batch)],
            Distribution::Broadcast => {
                let mut parts: Vec<(usize, Batch)> = (1..n).map(|i| (i, batch.clone())).collect();
                parts.push((0, batch));
                parts
            }
            Distribution::Hash(keys) => {
                if self.channels.iter().all(|c| c.filter.is_none()) {
                    return hash_partition(batch, keys, &self.spec.params, n, &mut self.hashes);
                }
                let filters: Vec<Option<&KeyFilter>> = self
                    .channels
                    .iter()
                    .map(|c| c.filter.as_ref().map(|(f, _)| f))
                    .collect();
                let (parts, dropped) = hash_partition_filtered(
                    batch,
                    keys,
                    &self.spec.params,
                    n,
                    &filters,
                    &mut self.hashes,
                )?;
                let kept: usize = parts
                    .iter()
                    .filter(|(t, _)| filters[*t].is_some())
                    .map(|(_, b)| b.num_rows())
                    .sum();
                self.note_filtered(kept + dropped, dropped);
                parts
            }
        })
    }

    /// Counts rows the key filters tested and dropped; filters that drop too few of them to
    /// pay for the test are let go.
    fn note_filtered(&mut self, tested: usize, dropped: usize) {
        self.filter_tested += tested;
        self.filter_dropped += dropped;
        self.links
            .node
            .shared
            .filtered_rows
            .fetch_add(dropped as u64, std::sync::atomic::Ordering::Relaxed);
        if self.filter_tested >= FILTER_TRIAL_ROWS
            && self.filter_dropped * FILTER_MIN_DROPPED < self.filter_tested
        {
            for ch in &mut self.channels {
                ch.filter = None;
            }
        }
    }

    /// Accounts the stashed parts on this node (with the input's reservation, plus what more
    /// they need) and hands them to their channels. Returns false while it waits for room.
    fn place_stash(&mut self) -> weir_operators::Result<bool> {
        let Some(stash) = &mut self.stash else {
            return Ok(true);
        };
        let channels = &self.channels;
        stash.parts.retain(|(i, _)| !channels[*i].stopped);
        let total: usize = stash.parts.iter().map(|(_, b)| b.memory_size()).sum();
        let pool: Arc<dyn MemoryPool> = self.memory.pool().clone();
        let mut mem = match stash.mem.take() {
            Some(m) if m.same_pool(&pool) => m,
            _ => self.memory.reservation(),
        };
        if mem.size() > total {
            mem.shrink(mem.size() - total);
        }
        let need = total - mem.size();
        let Some(wake) = &self.wake else {
            // Not started yet, so nothing could wake it: it waits, with what it has, for
            // `started`, which looks again.
            stash.mem = Some(mem);
            return Ok(false);
        };
        let outcome = self.memory.reserve(&mut mem, need, wake);
        match outcome {
            Reserve::Granted => {
                let Some(stash) = self.stash.take() else {
                    return Ok(true);
                };
                for (i, part) in stash.parts {
                    let r = mem.split(part.memory_size());
                    self.hold(i, part, r)?;
                }
                Ok(true)
            }
            Reserve::Waiting => {
                stash.mem = Some(mem);
                Ok(false)
            }
            Reserve::TooLarge => Err(OpError::Memory(format!(
                "a batch of {total} bytes cannot fit the memory budget of {} bytes of {}",
                self.memory.pool().budget(),
                self.links.node.shared.name
            ))),
        }
    }

    /// Holds `batch` (accounted by `mem`) as channel `i`'s newest: appended to the batch held
    /// there if both fit [`SenderSpec::batch_rows`] and what the append makes can be accounted
    /// on this node now, else sending the held one on its way.
    fn hold(&mut self, i: usize, batch: Batch, mut mem: Reservation) -> weir_operators::Result<()> {
        let target = self.spec.batch_rows;
        let ch = &mut self.channels[i];
        if ch.stopped {
            return Ok(());
        }
        if let Some((held, held_mem)) = &mut ch.held {
            if held.num_rows() + batch.num_rows() <= target {
                // Appending sizes the vectors exactly, so the two batches' bytes cover the
                // result, but for a validity bitmap made for the held rows when only the new
                // part has one: that growth is accounted before it is made. If the node has
                // no room for it, the two batches travel apart instead (no wait: the sender
                // may hold the very memory it would wait for).
                let size = held.appended_memory_size(&batch);
                let have = held_mem.size() + mem.size();
                if size <= have || mem.try_grow(size - have).is_ok() {
                    held.append(&batch)?;
                    held_mem.merge(mem);
                    let now = held.memory_size();
                    if held_mem.size() > now {
                        held_mem.shrink(held_mem.size() - now);
                    }
                    return Ok(());
                }
            }
        }
        if let Some((prev, prev_mem)) = ch.held.replace((batch, mem)) {
            ch.queue.push_back(Queued {
                rows: Some(prev),
                last: false,
                mem: Some(prev_mem),
            });
        }
        Ok(())
    }

    fn fail(&mut self, e: OpError, ctx: &mut Context<Self>) {
        self.link.failed.do_send(OpFailed(e));
        self.finished = true;
        ctx.stop();
    }

    /// Routes input in arrival order while its parts can be accounted, then sends.
    fn process(&mut self, ctx: &mut Context<Self>) {
        if self.finished {
            return;
        }
        loop {
            match self.place_stash() {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => return self.fail(e, ctx),
            }
            let Some((item, mem)) = self.inbox.pop_front() else {
                break;
            };
            match item {
                Item::Batch(batch) => match self.route(batch) {
                    Ok(parts) => self.stash = Some(Stash { parts, mem }),
                    Err(e) => return self.fail(e, ctx),
                },
                Item::End => {
                    self.input_ended = true;
                    for ch in &mut self.channels {
                        let (rows, mem) = match ch.held.take() {
                            Some((b, mem)) => (Some(b), Some(mem)),
                            None => (None, None),
                        };
                        ch.queue.push_back(Queued {
                            rows,
                            last: true,
                            mem,
                        });
                    }
                }
            }
        }
        self.flush(ctx);
    }

    fn flush(&mut self, ctx: &mut Context<Self>) {
        for ch in &mut self.channels {
            if let Err(e) = ch.flush(&self.spec, &self.links, self.wake.as_ref()) {
                self.link.failed.do_send(OpFailed(e));
                self.finished = true;
                ctx.stop();
                return;
            }
        }
        let queued: usize = self.channels.iter().map(|c| c.queue.len()).sum();
        let queued_bytes: usize = self.channels.iter().map(Channel::queued_bytes).sum();
        let blocked = self.stash.is_some() || !self.inbox.is_empty();
        if queued < self.spec.window.batches
            && queued_bytes < self.spec.window.bytes
            && !blocked
            && self.owed > 0
            && !self.input_ended
        {
            if let Some(up) = &self.upstream {
                up.credit.do_send(Credit {
                    batches: self.owed,
                    bytes: self.owed_bytes,
                });
            }
            self.owed = 0;
            self.owed_bytes = 0;
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

impl Handler<RemoteFilter> for ExchangeSendActor {
    type Result = ();

    /// The receiver on `from` needs only the rows its filter may hold: from now on the others
    /// bound there are dropped. The filter's bytes are accounted on this node; without room
    /// for them, or made for other keys than those the rows are routed by, it is not used.
    fn handle(&mut self, msg: RemoteFilter, _ctx: &mut Context<Self>) {
        let judged = self.filter_tested >= FILTER_TRIAL_ROWS;
        if self.finished || judged || !routes_by(&self.spec.distribution, &msg.keys) {
            return;
        }
        let mut mem = self.memory.reservation();
        if mem.try_grow(msg.filter.memory_size()).is_err() {
            return;
        }
        if let Some(ch) = self.channels.iter_mut().find(|c| c.target == msg.from) {
            if !ch.stopped {
                ch.filter = Some((msg.filter, mem));
            }
        }
    }
}

/// Whether rows routed by `distribution` are routed by the hashes of `keys`, so that a filter
/// of those hashes applies to them.
fn routes_by(distribution: &Distribution, keys: &[Expr]) -> bool {
    matches!(distribution, Distribution::Hash(routed) if routed.as_slice() == keys)
}

impl Handler<RemoteStop> for ExchangeSendActor {
    type Result = ();

    fn handle(&mut self, msg: RemoteStop, ctx: &mut Context<Self>) {
        if let Some(ch) = self.channels.iter_mut().find(|c| c.target == msg.from) {
            ch.stop();
        }
        self.process(ctx);
    }
}

impl Actor for ExchangeSendActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        let wake: Recipient<MemoryFreed> = ctx.address().recipient();
        self.wake = Some(Arc::new(wake));
        self.links.router.add_sender(
            (self.spec.query, self.spec.exchange),
            SenderRoute {
                acks: ctx.address().recipient(),
                stops: ctx.address().recipient(),
                filters: ctx.address().recipient(),
            },
        );
        // Input that waited for the start (see `place_stash`) goes on now.
        if self.stash.is_some() || !self.inbox.is_empty() {
            self.process(ctx);
        }
    }

    fn stopped(&mut self, _ctx: &mut Self::Context) {
        // What it holds goes before anyone hears that it stopped.
        self.inbox.clear();
        self.stash = None;
        self.memory.done();
        for ch in &mut self.channels {
            ch.stop();
        }
        self.links
            .router
            .remove_sender((self.spec.query, self.spec.exchange));
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
        msg.upstream
            .credit
            .do_send(Credit::window(self.spec.window));
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
        if matches!(msg.item, Item::Batch(_)) {
            if let Some(e) = &self.edge {
                e.dequeued(msg.bytes);
            }
            self.owed += 1;
            self.owed_bytes += msg.bytes;
        }
        // The batch's reservation comes along: its bytes stay accounted, now by the sender.
        self.inbox.push_back((msg.item, msg.mem));
        self.process(ctx);
    }
}

impl Handler<RemoteAck> for ExchangeSendActor {
    type Result = ();

    fn handle(&mut self, msg: RemoteAck, ctx: &mut Context<Self>) {
        if let Some(ch) = self.channels.iter_mut().find(|c| c.target == msg.from) {
            // A duplicated ack grants nothing.
            if ch.acked.insert(msg.ack.batch_id) {
                ch.credits
                    .grant(msg.ack.credits as usize, msg.ack.bytes as usize);
                ch.edge.dequeued(msg.ack.bytes as usize);
            }
        }
        self.process(ctx);
    }
}

impl Handler<MemoryFreed> for ExchangeSendActor {
    type Result = ();

    fn handle(&mut self, _msg: MemoryFreed, ctx: &mut Context<Self>) {
        self.process(ctx);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A filter applies only to rows routed by the hashes of the very keys it was made for.
    #[test]
    fn a_filter_applies_to_rows_routed_by_its_keys_only() {
        let keys = vec![Expr::col(1), Expr::col(0)];
        assert!(routes_by(&Distribution::Hash(keys.clone()), &keys));
        assert!(!routes_by(&Distribution::Hash(vec![Expr::col(1)]), &keys));
        assert!(!routes_by(
            &Distribution::Hash(vec![Expr::col(0), Expr::col(1)]),
            &keys
        ));
        assert!(!routes_by(&Distribution::Broadcast, &keys));
        assert!(!routes_by(&Distribution::Gather, &keys));
    }
}
