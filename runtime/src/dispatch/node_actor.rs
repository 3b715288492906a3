//! The per-node actor: decodes arriving messages, starts fragment instances, routes batches
//! and acks to the exchange ends registered on the node, and closes a query's fragments. A
//! batch arrives with its bytes already accounted on this node (the sender reserved them
//! here); the reservation stays with the batch wherever it goes, and a batch dropped here
//! returns its bytes.

use crate::dispatch::fragment::{FragmentActor, FragmentSink, FragmentSpec};
use crate::dispatch::messages::CloseFragment;
use crate::exchange::messages::{RemoteAck, RemoteBatch, RemoteEvent, RemoteStop};
use crate::exec::flow::{EdgeRegistry, Window};
use crate::memory::breaker::BreakerCounters;
use crate::memory::pool::OutOfMemory;
use crate::memory::supervisor::SupervisorActor;
use crate::node::inbox::{
    FragmentFinished, LocalMessage, NodeCrashed, QueryRegistration, RegisterReceiver,
    RegisterSender, Restart, SetClient, Unregister,
};
use crate::node::{LiveGuard, NodeHandle, NodeShared};
use crate::replication::membership::Membership;
use crate::replication::recent::RecentSet;
use crate::replication::resync::{self, Installs, ResyncReply};
use crate::replication::writes::{WriteParticipant, WriteReplies};
use crate::wire::codec;
use crate::wire::messages::{
    BatchMessage, BatchStop, ErrorKind, ErrorMessage, NetMessage, NodeId, PlanPayload, Protocol,
    QueryId, StartRequest, StartResponse,
};
use crate::wire::network::Deliver;
use actix::prelude::*;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use weir_operators::{PhysicalPlan, Reservation};

/// Counters a node keeps about the messages it handled.
#[derive(Debug, Default)]
pub struct NodeCounters {
    /// Messages that failed to decode.
    pub decode_errors: AtomicU64,
    /// Start requests whose plan came from the node's fragment cache.
    pub fragment_cache_hits: AtomicU64,
    /// Start requests that named a plan the node did not hold.
    pub fragment_cache_misses: AtomicU64,
    /// Messages about a query that neither runs nor lately ended here (confused or forged
    /// senders): dropped, logged and counted.
    pub unknown_query_messages: AtomicU64,
}

/// Batches that arrived for an exchange receiver not (yet) started here, with when the first
/// came. Their bytes are accounted on the node while they wait (the reservations they came
/// with).
type Pending = (
    std::time::Instant,
    Vec<(NodeId, BatchMessage, Option<Reservation>)>,
);

/// Most batches parked for one receiver that has not started: each sender has at most its
/// credit window in flight, so more than this means a misbehaving sender.
const MAX_PENDING_PER_RECEIVER: usize = 4096;

/// Default number of fragment plans a node keeps.
pub const DEFAULT_FRAGMENT_CACHE: usize = 1024;

/// The node's cache of fragment plans by key. It may evict any plan at any time: a start
/// request naming an evicted plan is answered `plan_missing` and the initiator resends it.
#[derive(Debug)]
struct FragmentCache {
    capacity: usize,
    plans: HashMap<u64, Arc<PhysicalPlan>>,
    order: VecDeque<u64>,
}

impl FragmentCache {
    fn new(capacity: usize) -> Self {
        FragmentCache {
            capacity,
            plans: HashMap::new(),
            order: VecDeque::new(),
        }
    }

    fn get(&self, key: u64) -> Option<Arc<PhysicalPlan>> {
        self.plans.get(&key).cloned()
    }

    /// Keeps `plan` under `key`, evicting the oldest plans beyond the capacity.
    fn insert(&mut self, key: u64, plan: Arc<PhysicalPlan>) {
        if self.capacity == 0 {
            return;
        }
        if self.plans.insert(key, plan).is_none() {
            self.order.push_back(key);
        }
        while self.plans.len() > self.capacity {
            match self.order.pop_front() {
                Some(old) => {
                    self.plans.remove(&old);
                }
                None => break,
            }
        }
    }
}

/// One per node.
pub struct NodeActor {
    shared: Arc<NodeShared>,
    network: Arc<crate::wire::network::Network>,
    protocol: Protocol,
    counters: Arc<NodeCounters>,
    fragments: HashMap<(QueryId, u32), Addr<FragmentActor>>,
    receivers: HashMap<(QueryId, u32), Recipient<RemoteBatch>>,
    /// Exchange senders: where their acks and stops go.
    senders: HashMap<(QueryId, u32), (Recipient<RemoteAck>, Recipient<RemoteStop>)>,
    pending: HashMap<(QueryId, u32), Pending>,
    closed: RecentSet<QueryId>,
    started: RecentSet<(QueryId, u32)>,
    /// Receivers that have stopped: batches for them are dropped, and their senders told
    /// again to stop.
    gone_receivers: RecentSet<(QueryId, u32)>,
    queries: HashMap<QueryId, Recipient<RemoteEvent>>,
    plans: FragmentCache,
    /// This node's side of replicated writes.
    writes: WriteParticipant,
    /// Partition copies being installed by a resync (a cluster of processes).
    installs: Installs,
    /// Where write replies go (read on the client node).
    write_replies: Arc<WriteReplies>,
    /// Peers, catalog copy and catalog replies (a cluster of processes).
    membership: Arc<Membership>,
    supervisor: Addr<SupervisorActor>,
    breaker: Arc<BreakerCounters>,
    client: Option<Recipient<NodeCrashed>>,
    _live: LiveGuard,
}

/// What a node actor is started with.
pub struct NodeSetup {
    /// The node's shared state.
    pub shared: Arc<NodeShared>,
    /// The network to other nodes.
    pub network: Arc<crate::wire::network::Network>,
    /// Message workflow.
    pub protocol: Protocol,
    /// The node's message counters.
    pub counters: Arc<NodeCounters>,
    /// The node's memory circuit breaker.
    pub supervisor: Addr<SupervisorActor>,
    /// Cluster-wide breaker counters.
    pub breaker: Arc<BreakerCounters>,
    /// Fragment plans kept by key.
    pub fragment_cache: usize,
    /// Where replies to writes go (read on the client node).
    pub write_replies: Arc<WriteReplies>,
    /// What the node knows of a cluster of processes (a default one in process).
    pub membership: Arc<Membership>,
}

impl NodeActor {
    /// The actor of node `setup.shared`.
    pub fn new(setup: NodeSetup) -> Self {
        let NodeSetup {
            shared,
            network,
            protocol,
            counters,
            supervisor,
            breaker,
            fragment_cache,
            write_replies,
            membership,
        } = setup;
        // Senders on other nodes reserve room for their batches in this node's pool.
        network.attach_pool(shared.id, shared.pool.clone());
        let live = LiveGuard::new(&shared);
        NodeActor {
            shared,
            network,
            protocol,
            counters,
            fragments: HashMap::new(),
            receivers: HashMap::new(),
            senders: HashMap::new(),
            pending: HashMap::new(),
            closed: RecentSet::default(),
            started: RecentSet::default(),
            gone_receivers: RecentSet::default(),
            queries: HashMap::new(),
            plans: FragmentCache::new(fragment_cache),
            writes: WriteParticipant::default(),
            installs: Installs::default(),
            write_replies,
            membership,
            supervisor,
            breaker,
            client: None,
            _live: live,
        }
    }

    fn handle_of(&self, ctx: &Context<Self>) -> NodeHandle {
        NodeHandle {
            shared: self.shared.clone(),
            addr: ctx.address(),
            network: self.network.clone(),
            supervisor: self.supervisor.clone(),
        }
    }

    fn up(&self) -> bool {
        self.shared.up.load(Ordering::SeqCst)
    }

    /// A crash (out of memory, or an injected fault): the node goes down, every fragment on
    /// it stops and its memory is gone. It stays down until restarted.
    fn crash(&mut self, out_of_memory: bool) {
        if !self.up() {
            return;
        }
        self.shared.up.store(false, Ordering::SeqCst);
        self.network.attach(self.shared.id, None);
        if out_of_memory {
            self.breaker.oom_crashes.fetch_add(1, Ordering::Relaxed);
            tracing::warn!("{} ran out of memory and crashed", self.shared.name);
        } else {
            tracing::warn!("{} crashed", self.shared.name);
        }
        for f in self.fragments.values() {
            f.do_send(CloseFragment);
        }
        let queries: HashSet<QueryId> = self.fragments.keys().map(|(q, _)| *q).collect();
        for q in queries {
            self.mark_closed(q);
        }
        self.pending.clear();
        self.writes.crashed();
        self.installs.crashed();
        for q in self.queries.values() {
            q.do_send(RemoteEvent::NodeDown {
                node: self.shared.id,
            });
        }
        if let Some(c) = &self.client {
            c.do_send(NodeCrashed(self.shared.id));
        }
    }

    fn mark_closed(&mut self, query: QueryId) {
        self.closed.insert(query);
        self.pending.retain(|(q, _), _| *q != query);
    }

    /// A batch for exchange `key` arrived: hand it to its receiver, drop it when the receiver
    /// is gone (telling the sender again to stop, in case the first word was lost), or park it
    /// until the receiver starts.
    fn route_batch(
        &mut self,
        from: NodeId,
        batch: BatchMessage,
        mem: Option<Reservation>,
        ctx: &mut Context<Self>,
    ) {
        let key = (batch.query, batch.exchange);
        if let Some(r) = self.receivers.get(&key) {
            r.do_send(RemoteBatch {
                from,
                msg: batch,
                mem,
            });
        } else if self.gone_receivers.contains(&key) {
            if !batch.last {
                let stop = BatchStop {
                    query: batch.query,
                    exchange: batch.exchange,
                };
                self.send(from, NetMessage::QueryBatchStop(stop), ctx);
            }
        } else if !self.closed.contains(&batch.query) {
            let waiting = &mut self
                .pending
                .entry(key)
                .or_insert_with(|| (std::time::Instant::now(), Vec::new()))
                .1;
            if waiting.len() >= MAX_PENDING_PER_RECEIVER {
                tracing::warn!(
                    "{}: dropped a batch of query {} for exchange {}: too many wait for it",
                    self.shared.name,
                    batch.query,
                    batch.exchange
                );
                return;
            }
            waiting.push((from, batch, mem));
        }
    }

    /// Handles one protocol message; `mem` is a batch's reservation on this node.
    fn dispatch(
        &mut self,
        from: NodeId,
        msg: NetMessage,
        mem: Option<Reservation>,
        ctx: &mut Context<Self>,
    ) {
        match msg {
            NetMessage::QueryStartRequest(req) => self.start_fragment(from, *req, ctx),
            NetMessage::QueryStartResponse(resp) => match self.queries.get(&resp.query) {
                Some(q) => q.do_send(RemoteEvent::Started { node: from, resp }),
                None => self.unknown_query(from, "QueryStartResponse", resp.query),
            },
            NetMessage::QueryBatch(batch) => {
                if batch.last {
                    if let Some(q) = self.queries.get(&batch.query) {
                        q.do_send(RemoteEvent::Finished {
                            query: batch.query,
                            node: from,
                            fragment: batch.fragment,
                        });
                    }
                }
                self.route_batch(from, batch, mem, ctx);
            }
            NetMessage::WritePrepare(req) => {
                let reply = self.writes.prepare(&self.shared, *req);
                self.send(from, NetMessage::WriteReply(reply), ctx);
            }
            NetMessage::WriteCommit(c) => {
                let reply = self.writes.commit(&self.shared, c.write);
                self.send(from, NetMessage::WriteReply(reply), ctx);
            }
            NetMessage::WriteAbort(a) => self.writes.abort(a.write),
            NetMessage::WriteReply(reply) => {
                self.write_replies.deliver(reply.write, from, reply);
            }
            NetMessage::QueryBatchStop(stop) => {
                if let Some((_, stops)) = self.senders.get(&(stop.query, stop.exchange)) {
                    stops.do_send(RemoteStop { from });
                }
            }
            NetMessage::QueryBatchAck(ack) => {
                if let Some((acks, _)) = self.senders.get(&(ack.query, ack.exchange)) {
                    acks.do_send(RemoteAck { from, ack });
                }
            }
            NetMessage::QueryClose(close) => {
                self.mark_closed(close.query);
                let targets: Vec<(u32, Addr<FragmentActor>)> = self
                    .fragments
                    .iter()
                    .filter(|((q, f), _)| {
                        *q == close.query && close.fragment.is_none_or(|cf| cf == *f)
                    })
                    .map(|((_, f), a)| (*f, a.clone()))
                    .collect();
                for (_, a) in &targets {
                    a.do_send(CloseFragment);
                }
                if self.protocol == Protocol::Legacy {
                    let reply = NetMessage::QueryError(ErrorMessage {
                        query: close.query,
                        fragment: close.fragment.unwrap_or(0),
                        kind: ErrorKind::Cancelled,
                        message: "query closed".into(),
                    });
                    self.send(from, reply, ctx);
                }
            }
            NetMessage::QueryError(err) => match self.queries.get(&err.query) {
                Some(q) => q.do_send(RemoteEvent::Error { node: from, err }),
                None => self.unknown_query(from, "QueryError", err.query),
            },
            NetMessage::Join(join) => {
                for (peer, addr) in &join.peers {
                    if *peer != self.shared.id && !self.membership.add_peer(*peer, addr) {
                        tracing::warn!(
                            "{}: cannot connect to node {peer} at {addr:?} (from node {from})",
                            self.shared.name
                        );
                    }
                }
                self.protocol = join.protocol;
            }
            NetMessage::CatalogPut(put) => {
                let mut storage = self
                    .shared
                    .storage
                    .write()
                    .unwrap_or_else(|e| e.into_inner());
                self.membership.put_catalog(*put, &mut storage);
            }
            NetMessage::CatalogRequest(req) => {
                let reply = {
                    let storage = self
                        .shared
                        .storage
                        .read()
                        .unwrap_or_else(|e| e.into_inner());
                    self.membership.reply(req.request, &storage)
                };
                self.send(from, NetMessage::CatalogReply(Box::new(reply)), ctx);
            }
            NetMessage::CatalogReply(reply) => {
                if !self.membership.deliver(from, *reply) {
                    tracing::debug!("{}: a catalog reply nobody waits for", self.shared.name);
                }
            }
            NetMessage::PartitionFetch(fetch) => {
                let pieces = {
                    let storage = self
                        .shared
                        .storage
                        .read()
                        .unwrap_or_else(|e| e.into_inner());
                    resync::pieces(&storage, &fetch)
                };
                for piece in pieces {
                    self.send(from, NetMessage::PartitionRows(Box::new(piece)), ctx);
                }
            }
            NetMessage::PartitionInstall(install) => {
                let def = self.membership.table(&install.layout.table);
                if let Some(reply) = self.installs.take(&self.shared, def.as_ref(), *install) {
                    self.send(from, NetMessage::PartitionInstalled(reply), ctx);
                }
            }
            NetMessage::PartitionRows(rows) => {
                let request = rows.request;
                self.resync_reply(from, request, ResyncReply::Rows(rows));
            }
            NetMessage::PartitionInstalled(done) => {
                let request = done.request;
                self.resync_reply(from, request, ResyncReply::Installed(done));
            }
        }
    }

    /// Hands an answer to a resync to the client waiting for it (dropped when none does).
    fn resync_reply(&self, from: NodeId, request: u64, reply: ResyncReply) {
        if !self.membership.resyncs().deliver(request, from, reply) {
            tracing::debug!(
                "{}: a resync answer from node {from} nobody waits for",
                self.shared.name
            );
        }
    }

    /// A message of `kind` from node `from` about a query that does not run here: dropped.
    /// One of a query that ended here lately is a straggler (debug); any other is logged as
    /// a warning (a confused or forged sender).
    fn unknown_query(&self, from: NodeId, kind: &str, query: QueryId) {
        if self.closed.contains(&query) {
            tracing::debug!(
                "{}: a {kind} for ended query {query} from node {from}",
                self.shared.name
            );
        } else {
            self.counters
                .unknown_query_messages
                .fetch_add(1, Ordering::Relaxed);
            tracing::warn!(
                "{}: dropped a {kind} from node {from} for unknown query {query}",
                self.shared.name
            );
        }
    }

    fn send(&self, to: NodeId, msg: NetMessage, ctx: &mut Context<Self>) {
        if to == self.shared.id {
            ctx.notify(LocalMessage {
                from: to,
                msg,
                mem: None,
            });
        } else {
            self.network.send(self.shared.id, to, &msg);
        }
    }

    fn start_fragment(&mut self, from: NodeId, req: StartRequest, ctx: &mut Context<Self>) {
        // A duplicated start request must not start the fragment twice.
        if self.closed.contains(&req.query) || self.started.contains(&(req.query, req.fragment)) {
            return;
        }
        let plan = match req.plan {
            PlanPayload::Full { key, plan } => {
                let plan = Arc::new(*plan);
                self.plans.insert(key, plan.clone());
                Some(plan)
            }
            PlanPayload::Cached(key) => {
                let p = self.plans.get(key);
                let counter = if p.is_some() {
                    &self.counters.fragment_cache_hits
                } else {
                    &self.counters.fragment_cache_misses
                };
                counter.fetch_add(1, Ordering::Relaxed);
                p
            }
        };
        let Some(plan) = plan else {
            // Not marked started: the initiator resends the full plan under the same id.
            let resp = StartResponse {
                query: req.query,
                fragment: req.fragment,
                error: None,
                plan_missing: true,
            };
            self.send(from, NetMessage::QueryStartResponse(resp), ctx);
            return;
        };
        self.started.insert((req.query, req.fragment));
        let Some(output) = req.output else {
            let resp = StartResponse {
                query: req.query,
                fragment: req.fragment,
                error: Some("start request without an output".into()),
                plan_missing: false,
            };
            self.send(from, NetMessage::QueryStartResponse(resp), ctx);
            return;
        };
        let spec = FragmentSpec {
            query: req.query,
            fragment: req.fragment,
            initiator: req.initiator,
            plan,
            params: Arc::new(req.params),
            sink: FragmentSink::Exchange(output),
            inputs: req.inputs,
            partitions: req.partitions,
            batch_size: (req.batch_size as usize).clamp(1, 1 << 20),
            window: Window::new(
                (req.window as usize).clamp(1, 1024),
                req.window_bytes.clamp(1, 1 << 40) as usize,
            ),
            protocol: self.protocol,
            edges: Arc::new(EdgeRegistry::default()),
            timeout: std::time::Duration::from_millis(req.timeout_ms.clamp(1, 24 * 3600 * 1000)),
        };
        let addr = FragmentActor::new(spec, self.handle_of(ctx)).start();
        self.fragments.insert((req.query, req.fragment), addr);
        if self.protocol == Protocol::Legacy {
            let resp = StartResponse {
                query: req.query,
                fragment: req.fragment,
                error: None,
                plan_missing: false,
            };
            self.send(from, NetMessage::QueryStartResponse(resp), ctx);
        }
    }
}

impl Actor for NodeActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        // Batches for a fragment that never started here (its start request was lost) are
        // dropped after a while.
        ctx.run_interval(std::time::Duration::from_secs(1), |act, _| {
            let horizon = std::time::Duration::from_secs(60);
            act.pending
                .retain(|_, (since, _)| since.elapsed() < horizon);
            act.installs.expire();
        });
    }
}

impl Handler<Deliver> for NodeActor {
    type Result = ();

    fn handle(&mut self, msg: Deliver, ctx: &mut Context<Self>) {
        crate::exec::idle::note_work();
        if !self.up() {
            return;
        }
        let body = codec::unseal(&msg.bytes);
        let len = body.as_ref().map_or(0, |b| b.len());
        match body.and_then(codec::decode::<NetMessage>) {
            Ok(m) => {
                if msg.remote {
                    self.network.count_arrival(m.query(), m.kind(), len);
                }
                self.dispatch(msg.from, m, msg.mem, ctx)
            }
            Err(e) => {
                self.counters.decode_errors.fetch_add(1, Ordering::Relaxed);
                tracing::warn!("{}: dropped a malformed message: {e}", self.shared.name);
            }
        }
    }
}

impl Handler<LocalMessage> for NodeActor {
    type Result = ();

    fn handle(&mut self, msg: LocalMessage, ctx: &mut Context<Self>) {
        if !self.up() {
            return;
        }
        self.dispatch(msg.from, msg.msg, msg.mem, ctx);
    }
}

impl Handler<crate::wire::faults::CrashNode> for NodeActor {
    type Result = ();

    fn handle(&mut self, _msg: crate::wire::faults::CrashNode, _ctx: &mut Context<Self>) {
        self.crash(false);
    }
}

impl Handler<OutOfMemory> for NodeActor {
    type Result = ();

    fn handle(&mut self, _msg: OutOfMemory, _ctx: &mut Context<Self>) {
        self.crash(true);
    }
}

impl Handler<NodeCrashed> for NodeActor {
    type Result = ();

    fn handle(&mut self, msg: NodeCrashed, _ctx: &mut Context<Self>) {
        for q in self.queries.values() {
            q.do_send(RemoteEvent::NodeDown { node: msg.0 });
        }
    }
}

impl Handler<SetClient> for NodeActor {
    type Result = ();

    fn handle(&mut self, msg: SetClient, _ctx: &mut Context<Self>) {
        self.client = Some(msg.0);
    }
}

impl Handler<Restart> for NodeActor {
    type Result = ();

    fn handle(&mut self, _msg: Restart, ctx: &mut Context<Self>) {
        self.shared.pool.restarted();
        self.shared.up.store(true, Ordering::SeqCst);
        self.network
            .attach(self.shared.id, Some(ctx.address().recipient()));
    }
}

impl Handler<RegisterReceiver> for NodeActor {
    type Result = ();

    fn handle(&mut self, msg: RegisterReceiver, _ctx: &mut Context<Self>) {
        let key = (msg.query, msg.exchange);
        if let Some((_, waiting)) = self.pending.remove(&key) {
            for (from, batch, mem) in waiting {
                msg.to.do_send(RemoteBatch {
                    from,
                    msg: batch,
                    mem,
                });
            }
        }
        self.receivers.insert(key, msg.to);
    }
}

impl Handler<RegisterSender> for NodeActor {
    type Result = ();

    fn handle(&mut self, msg: RegisterSender, _ctx: &mut Context<Self>) {
        self.senders
            .insert((msg.query, msg.exchange), (msg.acks, msg.stops));
    }
}

impl Handler<Unregister> for NodeActor {
    type Result = ();

    fn handle(&mut self, msg: Unregister, _ctx: &mut Context<Self>) {
        match msg {
            Unregister::Receiver(q, e) => {
                self.receivers.remove(&(q, e));
                self.pending.remove(&(q, e));
                self.gone_receivers.insert((q, e));
            }
            Unregister::Sender(q, e) => {
                self.senders.remove(&(q, e));
            }
        }
    }
}

impl Handler<FragmentFinished> for NodeActor {
    type Result = ();

    fn handle(&mut self, msg: FragmentFinished, _ctx: &mut Context<Self>) {
        self.fragments.remove(&(msg.query, msg.fragment));
    }
}

impl Handler<QueryRegistration> for NodeActor {
    type Result = ();

    fn handle(&mut self, msg: QueryRegistration, _ctx: &mut Context<Self>) {
        match msg {
            QueryRegistration::Register(q, addr) => {
                self.queries.insert(q, addr);
            }
            QueryRegistration::Unregister(q) => {
                self.queries.remove(&q);
                self.mark_closed(q);
            }
        }
    }
}
