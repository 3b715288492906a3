//! The per-node actor: it accepts a [`NodeMsg`], decodes what arrives from other nodes, and
//! dispatches each protocol message to the part of the runtime that owns it: exchange
//! traffic and query events to the node's [`Router`], start requests to [`Starts`] and a new
//! [`FragmentActor`], writes to the [write participant](crate::replication::writes::participant), catalog and resync messages to the
//! replication floor. It keeps the fragment instances running here, and crashes and restarts
//! the node.
//!
//! A batch arrives with its bytes already accounted on this node (the sender reserved them
//! here); the reservation stays with the batch wherever it goes, and a batch dropped here
//! returns its bytes.

use crate::dispatch::counters::NodeCounters;
use crate::dispatch::fragment::{FragmentActor, FragmentSpec};
use crate::dispatch::messages::CloseFragment;
use crate::dispatch::start::{Start, Starts, DEFAULT_FRAGMENT_CACHE};
use crate::error::ErrorKind;
use crate::exchange::messages::RemoteEvent;
use crate::exchange::router::Router;
use crate::exec::idle::note_work;
use crate::memory::breaker::{BreakerConfig, BreakerCounters};
use crate::memory::pool::Pools;
use crate::memory::supervisor::SupervisorActor;
use crate::node::handle::NodeHandle;
use crate::node::inbox::{NodeInbox, NodeMsg};
use crate::node::state::{LiveGuard, NodeShared};
use crate::replication::membership::{Membership, ReadCheck};
use crate::replication::resync::{self, Installs, ResyncReply};
use crate::replication::writes::participant::{self, PreparedSince};
use crate::replication::writes::WriteReplies;
use crate::wire::carrier::Deliver;
use crate::wire::codec;
use crate::wire::ids::{NodeId, QueryId};
use crate::wire::messages::{
    CatalogDecided, CloseMessage, Decision, ErrorMessage, Join, NetMessage, Protocol, StartRequest,
    StartResponse, WritePhase, WriteRefusal, WriteReply,
};
use crate::wire::network::Network;
use actix::prelude::*;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use weir_operators::Reservation;

/// How long batches for a fragment that never started here (its start request was lost) are
/// kept before they are dropped.
const PARKED_HORIZON: Duration = Duration::from_secs(60);

/// Longest a fragment's start waits for the node's read lease before it is refused
/// ([`NodeActor::run_fragment`]): a lease renewal, or the election of a new leader of the
/// catalog log after its leader went down (0.75–1.5 s).
const LEASE_WAIT: Duration = Duration::from_millis(2000);

/// How often a start waiting for the read lease looks again.
const LEASE_POLL: Duration = Duration::from_millis(10);

/// One per node.
pub struct NodeActor {
    shared: Arc<NodeShared>,
    network: Arc<Network>,
    pools: Arc<Pools>,
    protocol: Protocol,
    counters: Arc<NodeCounters>,
    /// Where the messages of the node's queries go.
    router: Arc<Router>,
    fragments: HashMap<(QueryId, u32), Addr<FragmentActor>>,
    starts: Starts,
    /// Partition copies being installed by a resync (a cluster of processes).
    installs: Installs,
    /// Where write replies go (read on the client node).
    write_replies: Arc<WriteReplies>,
    /// Peers, catalog copy and catalog replies (a cluster of processes).
    membership: Arc<Membership>,
    breaker: Arc<BreakerCounters>,
    /// The client node's actor, told of this node's crashes.
    client: Option<Recipient<NodeMsg>>,
    /// The largest value a function may make, set on the node's thread when it starts.
    max_value_bytes: usize,
    /// When the writes prepared here and not yet decided were prepared.
    prepared: PreparedSince,
    _live: LiveGuard,
}

/// How long a write prepared on a node may wait for its decision by default: twice the
/// default query (and write) timeout.
pub const DEFAULT_PREPARED_WRITE_TTL: Duration = Duration::from_secs(60);

/// What a node is started with.
pub struct NodeSetup {
    /// The node's shared state.
    pub shared: Arc<NodeShared>,
    /// The network to other nodes.
    pub network: Arc<Network>,
    /// The pools of the nodes in this process (the node enters its own).
    pub pools: Arc<Pools>,
    /// Message workflow.
    pub protocol: Protocol,
    /// The node's message counters.
    pub counters: Arc<NodeCounters>,
    /// Where the messages of the node's queries go.
    pub router: Arc<Router>,
    /// The memory breaker's settings, for the node's supervisor.
    pub breaker_config: BreakerConfig,
    /// Cluster-wide breaker counters.
    pub breaker: Arc<BreakerCounters>,
    /// Seed of the supervisor's choice of victims.
    pub seed: u64,
    /// Fragment plans kept by key.
    pub fragment_cache: usize,
    /// Where replies to writes go (read on the client node).
    pub write_replies: Arc<WriteReplies>,
    /// What the node knows of a cluster of processes (a default one in process).
    pub membership: Arc<Membership>,
    /// The largest value a function may make on the node's thread
    /// ([`weir_operators::limits`]).
    pub max_value_bytes: usize,
    /// How long a write prepared here may wait for its commit or abort before the node gives
    /// it up ([`crate::ClusterBuilder::prepared_write_ttl`]).
    pub prepared_write_ttl: Duration,
}

impl NodeSetup {
    /// A setup for node `shared` with fresh counters, router, membership and write replies,
    /// the default fragment cache and no other node's pool known.
    pub fn new(shared: Arc<NodeShared>, network: Arc<Network>, protocol: Protocol) -> Self {
        NodeSetup {
            router: Arc::new(Router::new(shared.name.clone())),
            shared,
            network,
            pools: Arc::default(),
            protocol,
            counters: Arc::default(),
            breaker_config: BreakerConfig::default(),
            breaker: Arc::default(),
            seed: 0,
            fragment_cache: DEFAULT_FRAGMENT_CACHE,
            write_replies: Arc::default(),
            membership: Arc::default(),
            max_value_bytes: weir_operators::limits::DEFAULT_MAX_VALUE_BYTES,
            prepared_write_ttl: DEFAULT_PREPARED_WRITE_TTL,
        }
    }
}

/// Starts node `setup.shared` on `arbiter`: its supervisor and its actor, its pool connected
/// to both, and the node attached to the network. Returns the actor's address.
pub fn start_node(arbiter: &ArbiterHandle, setup: NodeSetup) -> Addr<NodeActor> {
    let shared = setup.shared.clone();
    let network = setup.network.clone();
    let supervisor = {
        let (node, config, counters, seed) = (
            shared.clone(),
            setup.breaker_config.clone(),
            setup.breaker.clone(),
            setup.seed,
        );
        SupervisorActor::start_in_arbiter(arbiter, move |_| {
            let alive = Box::new(LiveGuard::new(&node));
            SupervisorActor::new(node, config, counters, seed, alive)
        })
    };
    let addr = NodeActor::start_in_arbiter(arbiter, move |_| NodeActor::new(setup));
    let inbox: Recipient<NodeMsg> = addr.clone().recipient();
    shared.pool.connect(
        supervisor.recipient(),
        Box::new(move || {
            inbox.do_send(NodeMsg::Crash {
                out_of_memory: true,
            })
        }),
    );
    network.attach(
        shared.id,
        Some(Arc::new(NodeInbox(
            addr.clone().recipient(),
            shared.inbox.clone(),
        ))),
    );
    addr
}

impl NodeActor {
    /// The actor of node `setup.shared`.
    pub fn new(setup: NodeSetup) -> Self {
        let NodeSetup {
            shared,
            network,
            pools,
            protocol,
            counters,
            router,
            breaker,
            fragment_cache,
            write_replies,
            membership,
            max_value_bytes,
            prepared_write_ttl,
            ..
        } = setup;
        // Senders on other nodes of this process reserve room for their batches in this
        // node's pool.
        pools.attach(shared.id, shared.pool.clone());
        let live = LiveGuard::new(&shared);
        NodeActor {
            shared,
            network,
            pools,
            protocol,
            counters,
            router,
            fragments: HashMap::new(),
            starts: Starts::new(fragment_cache),
            installs: Installs::default(),
            write_replies,
            membership,
            breaker,
            client: None,
            max_value_bytes,
            prepared: PreparedSince::new(prepared_write_ttl),
            _live: live,
        }
    }

    fn handle_of(&self, ctx: &Context<Self>) -> NodeHandle {
        NodeHandle {
            shared: self.shared.clone(),
            inbox: ctx.address().recipient(),
            network: self.network.clone(),
            pools: self.pools.clone(),
        }
    }

    /// A crash (out of memory, or an injected fault): the node goes down, every fragment on
    /// it stops and its memory is gone. It stays down until restarted.
    fn crash(&mut self, out_of_memory: bool) {
        if !self.shared.is_up() {
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
            self.router.close(q);
        }
        self.router.crashed();
        // The writes it had prepared are gone with its memory (not a change: its log, if it
        // has one, still holds them).
        self.shared
            .storage
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .forget_prepared();
        self.installs.crashed();
        self.router.node_down(self.shared.id);
        if let Some(c) = &self.client {
            c.do_send(NodeMsg::NodeCrashed(self.shared.id));
        }
    }

    fn restart(&mut self, ctx: &Context<Self>) {
        self.shared.pool.restarted();
        self.shared.up.store(true, Ordering::SeqCst);
        self.network.attach(
            self.shared.id,
            Some(Arc::new(NodeInbox(
                ctx.address().recipient(),
                self.shared.inbox.clone(),
            ))),
        );
    }

    /// Sealed bytes from another node: unsealed, decoded and dispatched.
    fn deliver(&mut self, msg: Deliver, ctx: &mut Context<Self>) {
        note_work();
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

    /// Hands one protocol message to its owner; `mem` is a batch's reservation on this node.
    fn dispatch(
        &mut self,
        from: NodeId,
        msg: NetMessage,
        mem: Option<Reservation>,
        ctx: &mut Context<Self>,
    ) {
        match msg {
            NetMessage::QueryStartRequest(req) => self.start_fragment(from, *req, ctx),
            NetMessage::QueryStartResponse(resp) => {
                let query = resp.query;
                let event = RemoteEvent::Started { node: from, resp };
                self.query_event(from, "QueryStartResponse", query, event);
            }
            NetMessage::QueryError(err) => {
                let query = err.query;
                let event = RemoteEvent::Error { node: from, err };
                self.query_event(from, "QueryError", query, event);
            }
            NetMessage::QueryProfile(report) => {
                let query = report.query;
                let event = RemoteEvent::Profile { report };
                self.query_event(from, "QueryProfile", query, event);
            }
            NetMessage::QueryBatch(batch) => {
                if let Some(stop) = self.router.batch(from, batch, mem) {
                    self.send(from, NetMessage::QueryBatchStop(stop), ctx);
                }
            }
            NetMessage::QueryBatchAck(ack) => self.router.ack(from, ack),
            NetMessage::QueryBatchStop(stop) => self.router.stop(from, stop),
            NetMessage::QueryBatchFilter(filter) => self.router.filter(from, *filter),
            NetMessage::QueryClose(close) => self.close(from, close, ctx),
            NetMessage::WritePrepare(req) => {
                let (write, one_phase) = (req.write, req.commit);
                if let Some(refusal) = self.membership.check_layout(&req.layout, req.catalog_epoch)
                {
                    let phase = if one_phase {
                        WritePhase::Commit
                    } else {
                        WritePhase::Prepare
                    };
                    let reply = WriteReply {
                        write,
                        phase,
                        error: Some(refusal),
                    };
                    self.send(from, NetMessage::WriteReply(reply), ctx);
                    return;
                }
                let (reply, lsn) = participant::prepare(&self.shared, *req);
                if !one_phase && reply.as_ref().is_none_or(|r| r.error.is_none()) {
                    self.prepared.prepared(write);
                }
                if let Some(reply) = reply {
                    self.reply_when_durable(from, reply, lsn, ctx);
                }
            }
            NetMessage::WriteCommit(c) => {
                self.prepared.decided(c.write);
                let (reply, lsn) = participant::commit(&self.shared, c.write);
                self.reply_when_durable(from, reply, lsn, ctx);
                self.shared.maybe_checkpoint();
            }
            NetMessage::WriteAbort(a) => {
                self.prepared.decided(a.write);
                participant::abort(&self.shared, a.write);
            }
            NetMessage::WriteReply(reply) => {
                self.write_replies.deliver(reply.write, from, reply);
            }
            NetMessage::Join(join) => self.join(from, join),
            NetMessage::RaftCall(call) => match self.membership.log() {
                Some(log) => log.call(from, *call),
                None => tracing::warn!(
                    "{}: a catalog log call from node {from}, but this node keeps no catalog log",
                    self.shared.name
                ),
            },
            NetMessage::RaftAnswer(answer) => {
                if let Some(log) = self.membership.log() {
                    log.answer(from, *answer);
                }
            }
            NetMessage::CatalogPropose(propose) => match self.membership.log() {
                Some(log) => log.propose(from, *propose),
                None => {
                    let decided = CatalogDecided {
                        request: propose.request,
                        decision: Decision::Failed(format!(
                            "{} keeps no catalog log (not a data node)",
                            self.shared.name
                        )),
                        index: 0,
                    };
                    self.send(from, NetMessage::CatalogDecided(decided), ctx);
                }
            },
            NetMessage::CatalogDecided(decided) => {
                if !self.membership.deliver_decision(from, decided) {
                    tracing::debug!("{}: a catalog decision nobody waits for", self.shared.name);
                }
            }
            NetMessage::CatalogRequest(req) => {
                let log = self.membership.log_view();
                let reply = {
                    let storage = self
                        .shared
                        .storage
                        .read()
                        .unwrap_or_else(|e| e.into_inner());
                    self.membership.reply(req.request, &storage, log)
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

    /// Sends write reply `reply` to node `from` once the change it answers (at `lsn`, when the
    /// node logs its changes) is durable; a change that did not become durable is refused.
    fn reply_when_durable(
        &self,
        from: NodeId,
        reply: WriteReply,
        lsn: Option<u64>,
        ctx: &mut Context<Self>,
    ) {
        let (Some(lsn), Some(journal)) = (lsn, &self.shared.journal) else {
            self.send(from, NetMessage::WriteReply(reply), ctx);
            return;
        };
        let (network, me, name) = (
            self.network.clone(),
            self.shared.id,
            self.shared.name.clone(),
        );
        let inbox: Recipient<NodeMsg> = ctx.address().recipient();
        let count = self.shared.inbox.clone();
        journal.when_durable(
            lsn,
            Box::new(move |durable| {
                let mut reply = reply;
                if let Err(e) = durable {
                    reply.error = Some(WriteRefusal::Disk {
                        node: name,
                        message: e.to_string(),
                    });
                }
                let msg = NetMessage::WriteReply(reply);
                if from == me {
                    count.sent();
                    inbox.do_send(NodeMsg::Local {
                        from: me,
                        msg,
                        mem: None,
                    });
                } else {
                    network.send(me, from, &msg);
                }
            }),
        );
    }

    /// An event for the actor of query `query`, initiated here; `kind` names the message for
    /// the log when no such query runs here.
    fn query_event(&self, from: NodeId, kind: &str, query: QueryId, event: RemoteEvent) {
        if !self.router.event(query, event) {
            self.unknown_query(from, kind, query);
        }
    }

    /// The initiator closes a query's fragments here (all of them, or one).
    fn close(&mut self, from: NodeId, close: CloseMessage, ctx: &mut Context<Self>) {
        self.router.close(close.query);
        for ((q, f), a) in &self.fragments {
            if *q == close.query && close.fragment.is_none_or(|cf| cf == *f) {
                a.do_send(CloseFragment);
            }
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

    /// The client tells the node where its peers listen, and the workflow of its queries.
    fn join(&mut self, from: NodeId, join: Join) {
        for (peer, addr) in &join.peers {
            if *peer != self.shared.id && !self.membership.add_peer(*peer, addr) {
                tracing::warn!(
                    "{}: cannot connect to node {peer} at {addr:?} (from node {from})",
                    self.shared.name
                );
            }
        }
        let members: Vec<NodeId> = join.peers.iter().map(|(peer, _)| *peer).collect();
        self.membership.join(&members, join.log_index);
        self.protocol = join.protocol;
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
        if self.router.is_closed(query) {
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
            self.shared.inbox.sent();
            ctx.notify(NodeMsg::Local {
                from: to,
                msg,
                mem: None,
            });
        } else {
            self.network.send(self.shared.id, to, &msg);
        }
    }

    fn start_fragment(&mut self, from: NodeId, req: StartRequest, ctx: &mut Context<Self>) {
        // A start request of a query that has closed here starts nothing.
        if self.router.is_closed(req.query) {
            return;
        }
        let (query, fragment, planned_at) = (req.query, req.fragment, req.catalog_epoch);
        let respond = |error: Option<String>, plan_missing: bool| {
            NetMessage::QueryStartResponse(StartResponse {
                query,
                fragment,
                error,
                plan_missing,
                catalog_epoch: 0,
                read_refused: false,
            })
        };
        match self.starts.take(req, self.protocol, &self.counters) {
            Start::Duplicate => {}
            Start::PlanMissing => self.send(from, respond(None, true), ctx),
            Start::Refused(why) => self.send(from, respond(Some(why), false), ctx),
            Start::Run(spec) => {
                let lease_wait = Instant::now() + LEASE_WAIT;
                self.run_fragment(from, spec, planned_at, lease_wait, ctx);
            }
        }
    }

    /// Starts fragment `spec` of a query planned at catalog epoch `planned_at`, unless this
    /// node must not read for it: a table it scans changed since (the client plans the query
    /// again), or a copy it would read is one the node cannot vouch for. Without a read
    /// lease, the start waits (until `lease_wait`) for one, asking for it at once: a lease
    /// being renewed, or a leader being elected, delays the query rather than fails it.
    fn run_fragment(
        &mut self,
        from: NodeId,
        spec: Box<FragmentSpec>,
        planned_at: u64,
        lease_wait: Instant,
        ctx: &mut Context<Self>,
    ) {
        let (query, fragment) = (spec.query, spec.fragment);
        if self.router.is_closed(query) {
            return;
        }
        let respond = |error: Option<String>, catalog_epoch: u64, read_refused: bool| {
            NetMessage::QueryStartResponse(StartResponse {
                query,
                fragment,
                error,
                plan_missing: false,
                catalog_epoch,
                read_refused,
            })
        };
        if let Some((epoch, why)) = self.membership.check_scans(&spec.plan, planned_at) {
            self.send(from, respond(Some(why), epoch, false), ctx);
            return;
        }
        match self
            .membership
            .check_reads(&spec.plan, spec.partitions.as_ref(), self.shared.id)
        {
            ReadCheck::Allowed => {}
            ReadCheck::NoLease(_) if Instant::now() < lease_wait => {
                self.membership.renew_lease();
                ctx.run_later(LEASE_POLL, move |act, ctx| {
                    act.run_fragment(from, spec, planned_at, lease_wait, ctx)
                });
                return;
            }
            ReadCheck::NoLease(why) | ReadCheck::CopyBehind(why) => {
                self.send(from, respond(Some(why), 0, true), ctx);
                return;
            }
        }
        let addr = FragmentActor::new(*spec, self.handle_of(ctx), self.router.clone()).start();
        self.fragments.insert((query, fragment), addr);
        if self.protocol == Protocol::Legacy {
            self.send(from, respond(None, 0, false), ctx);
        }
    }
}

impl Actor for NodeActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        // Every actor of this thread is of this node's cluster: the thread evaluates under
        // its limit.
        weir_operators::limits::set_max_value_bytes(self.max_value_bytes);
        ctx.run_interval(Duration::from_secs(1), |act, _| {
            act.router.expire(PARKED_HORIZON);
            act.installs.expire();
            let expired = act.prepared.expire(&act.shared);
            act.counters
                .expired_writes
                .fetch_add(expired, Ordering::Relaxed);
        });
    }
}

impl Handler<NodeMsg> for NodeActor {
    type Result = ();

    fn handle(&mut self, msg: NodeMsg, ctx: &mut Context<Self>) {
        match msg {
            NodeMsg::Deliver(d) => {
                if self.shared.is_up() {
                    self.deliver(d, ctx);
                }
                self.shared.inbox.handled();
            }
            NodeMsg::Local { from, msg, mem } => {
                if self.shared.is_up() {
                    self.dispatch(from, msg, mem, ctx);
                }
                self.shared.inbox.handled();
            }
            NodeMsg::FragmentFinished { query, fragment } => {
                self.fragments.remove(&(query, fragment));
            }
            NodeMsg::Crash { out_of_memory } => self.crash(out_of_memory),
            NodeMsg::Restart => self.restart(ctx),
            NodeMsg::SetClient(client) => self.client = Some(client),
            NodeMsg::NodeCrashed(node) => self.router.node_down(node),
        }
    }
}
