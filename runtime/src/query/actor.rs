//! The per-query actor on the initiator: sends the start requests, runs the root fragment
//! locally, streams result batches to the caller's channel (the root's edge ends there: a
//! batch's credit, and its bytes, come back when the caller takes it), and ends the query:
//! closes what still runs, reports errors, frees everything.

use crate::dispatch::fragment::{FragmentActor, FragmentSink, FragmentSpec};
use crate::dispatch::messages::CloseFragment;
use crate::error::Error;
use crate::error::ErrorKind;
use crate::exchange::messages::RemoteEvent;
use crate::exchange::router::Router;
use crate::exec::edge::{EdgeRegistry, Window};
use crate::exec::flow::Downstream;
use crate::exec::messages::{Attach, Cancel, Credit, Item, Push, Upstream};
use crate::memory::admission::{Admission, Demand, Place};
use crate::memory::breaker::{BreakerConfig, BreakerCounters};
use crate::memory::estimate::BuildEstimate;
use crate::memory::pool::Wake;
use crate::node::handle::NodeHandle;
use crate::node::state::{LiveGuard, NodeShared};
use crate::query::channel::ResultSender;
use crate::query::channel::StreamItem;
use crate::query::messages::{AdmissionReady, CancelQuery, ConsumerCredit};
use crate::query::profile::Profile;
use crate::query::stats::QueryStats;
use crate::wire::counters::MessageCounters;
use crate::wire::ids::{NodeId, QueryId};
use crate::wire::messages::{
    CloseMessage, ExchangeInput, NetMessage, OutputTarget, PlanPayload, Protocol, StartRequest,
};
use crate::wire::partition_map::PartitionMap;
use actix::prelude::*;
use rand::rngs::StdRng;
use rand::SeedableRng;
use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use weir_operators::{PhysicalPlan, Value};
use weir_planner::QueryPlan;

/// Everything a query actor needs.
pub struct QuerySetup {
    /// Query id.
    pub id: QueryId,
    /// The plan.
    pub plan: Arc<QueryPlan>,
    /// Bound parameters.
    pub params: Arc<Vec<Value>>,
    /// Nodes running each fragment (indexed like `plan.fragments`).
    pub instances: Vec<Vec<NodeId>>,
    /// Partition assignment of each fragment's scans.
    pub partitions: Vec<Option<Arc<PartitionMap>>>,
    /// Whether each node already holds each fragment's plan (send only the key then).
    pub cached: Vec<Vec<bool>>,
    /// Display names of nodes, by id.
    pub node_names: Arc<Vec<String>>,
    /// Workflow.
    pub protocol: Protocol,
    /// Rows per batch.
    pub batch_size: usize,
    /// Credit window per edge, in batches.
    pub window: usize,
    /// Credit window per edge, in bytes of rows.
    pub window_bytes: usize,
    /// Give up after this long.
    pub timeout: Duration,
    /// The caller's channel (capacity `window + 1`: a terminal item always fits).
    pub tx: ResultSender,
    /// This query's message counters.
    pub counters: Arc<MessageCounters>,
    /// Edges of the initiator's fragments.
    pub edges: Arc<EdgeRegistry>,
    /// Every node of the cluster (breaker state and liveness).
    pub nodes: Arc<Vec<Arc<NodeShared>>>,
    /// The initiator's router, which the query enters to hear of its fragments.
    pub router: Arc<Router>,
    /// Breaker and backoff settings.
    pub breaker: BreakerConfig,
    /// Cluster-wide breaker counters.
    pub breaker_counters: Arc<BreakerCounters>,
    /// The cluster's admission queue.
    pub admission: Arc<Admission>,
    /// The build memory of the plan's joins, predicted from table sizes.
    pub builds: Arc<BuildEstimate>,
    /// Source of query ids (a retried query runs under a new id).
    pub ids: Arc<AtomicU64>,
    /// Seed of the backoff jitter.
    pub seed: u64,
    /// Maps the plan onto the live nodes again (after a node was lost).
    pub reschedule: Arc<Rescheduler>,
    /// Shared with the caller's stream: `attempt × 2 + taken`, where `taken` says the caller
    /// has seen rows of that attempt (which then can no longer be retried).
    pub epoch: Arc<AtomicU64>,
    /// The epoch of the catalog the query was planned on (a client of data nodes of other
    /// processes; 0 in process).
    pub catalog_epoch: u64,
    /// Raised to a data node's catalog epoch when it refused a fragment because the query's
    /// catalog is behind (the client fetches the catalog again before it plans next).
    pub catalog_behind: Arc<AtomicU64>,
    /// EXPLAIN ANALYZE: every fragment instance reports what its operators output, and the
    /// query ends once all have (see `query::profile`).
    pub analyze: bool,
}

/// Longest a finished EXPLAIN ANALYZE waits for its instances' reports (one on a node that
/// died never comes).
const PROFILE_WAIT: Duration = Duration::from_secs(5);

/// Maps a plan onto the nodes that are live now.
pub type Rescheduler = dyn Fn(&QueryPlan, &[Value]) -> crate::error::Result<crate::query::placement::Schedule>
    + Send
    + Sync;

fn root_feeders(setup: &QuerySetup) -> Vec<(u32, NodeId)> {
    let root_id = setup.plan.fragments.first().map_or(0, |f| f.id);
    let mut feeders = Vec::new();
    for (i, f) in setup.plan.fragments.iter().enumerate() {
        if f.output.as_ref().is_some_and(|o| o.target == root_id) {
            for &n in &setup.instances[i] {
                feeders.push((f.id, n));
            }
        }
    }
    feeders
}

#[derive(Debug, PartialEq)]
enum State {
    Running,
    Closing,
    Done,
}

/// Drives one query on its initiator.
pub struct QueryActor {
    setup: QuerySetup,
    node: NodeHandle,
    root: Option<Addr<FragmentActor>>,
    upstream: Option<Upstream>,
    edge: Option<Arc<crate::exec::edge::EdgeStat>>,
    finished: HashSet<(u32, NodeId)>,
    root_feeders: Vec<(u32, NodeId)>,
    state: State,
    outcome: Option<Result<(), Error>>,
    awaiting_replies: usize,
    port: usize,
    attempt: u32,
    delays: Vec<Duration>,
    /// Its place in the admission queue, then its admission (given back when it ends).
    place: Option<Place>,
    /// Bumped whenever the query leaves the queue: older backoff timers are stale.
    generation: u64,
    /// When the query first asked for admission.
    asked: Option<Instant>,
    /// Whether the next entry into the queue is the re-run of a killed query.
    rerun: bool,
    /// Byte credits of each batch in the caller's channel, oldest first (the channel is FIFO,
    /// so each batch the caller takes gives back the front one).
    in_channel: VecDeque<usize>,
    /// EXPLAIN ANALYZE's counts of the current attempt.
    profile: Option<Profile>,
    rng: StdRng,
    /// The `query` span (its id): every event of the query is recorded in it.
    span: tracing::Span,
    _live: LiveGuard,
}

impl QueryActor {
    /// A query actor on `node`, counted among its live actors by `live` (made by the caller
    /// when it asks for the actor, before the actor's arbiter creates it).
    pub fn new(setup: QuerySetup, node: NodeHandle, live: LiveGuard) -> Self {
        let root_feeders = root_feeders(&setup);
        let rng = StdRng::seed_from_u64(setup.seed ^ setup.id.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let span = tracing::debug_span!(parent: None, "query", id = setup.id);
        QueryActor {
            setup,
            node,
            root: None,
            upstream: None,
            edge: None,
            finished: HashSet::new(),
            root_feeders,
            state: State::Running,
            outcome: None,
            awaiting_replies: 0,
            port: 0,
            attempt: 0,
            delays: Vec::new(),
            place: None,
            generation: 0,
            asked: None,
            rerun: false,
            in_channel: VecDeque::new(),
            profile: None,
            rng,
            span,
            _live: live,
        }
    }

    fn involved(&self) -> Vec<NodeId> {
        let me = self.node.id();
        let mut nodes: Vec<NodeId> = self.setup.instances.iter().flatten().copied().collect();
        nodes.push(me);
        nodes.sort_unstable();
        nodes.dedup();
        nodes
    }

    /// Gives back the query's place in the queue, or its admission.
    fn leave_queue(&mut self) {
        self.generation += 1;
        self.place = None;
    }

    /// What the query asks of each node: the predicted build memory of its hash joins there
    /// (see [`crate::memory::admission::demand`]).
    fn demand(&self) -> Demand {
        crate::memory::admission::demand(
            &self.setup.builds,
            &self.setup.instances,
            self.node.id(),
            &self.involved(),
            &self.setup.nodes,
        )
    }

    /// Admission: enters the admission queue and runs the query once it is admitted on all
    /// of its nodes. While it waits it looks again after a binary exponential backoff (and at
    /// once whenever memory comes back); it fails only when the queue is full or its deadline
    /// passes.
    fn try_admit(&mut self, ctx: &mut Context<Self>) {
        if self.state != State::Running || self.root.is_some() {
            return;
        }
        let entering = self.place.is_none();
        if entering {
            self.asked.get_or_insert_with(Instant::now);
            let wake: Arc<dyn Wake> = Arc::new(ctx.address().recipient::<AdmissionReady>());
            let rerun = std::mem::take(&mut self.rerun);
            match self.setup.admission.enter(self.demand(), rerun, wake) {
                Ok(place) => self.place = Some(place),
                Err(full) => {
                    self.setup
                        .breaker_counters
                        .overloaded
                        .fetch_add(1, Ordering::Relaxed);
                    let e = Error::Overloaded(format!(
                        "admission queue full: {} queries already wait; refused at once,                          it would have been at position {}",
                        full.waiting,
                        full.waiting + 1
                    ));
                    self.finish(Err(e), false, ctx);
                    return;
                }
            }
        }
        if self.place.as_ref().is_some_and(Place::is_admitted) {
            self.launch(ctx);
            return;
        }
        if entering {
            tracing::debug!(parent: &self.span, "query waits for admission");
            // Refused on entry: it waits in the queue.
            self.setup
                .breaker_counters
                .rejections
                .fetch_add(1, Ordering::Relaxed);
        }
        self.retry_later(ctx);
    }

    /// Looks at the queue again after the next backoff delay (unless admitted before).
    fn retry_later(&mut self, ctx: &mut Context<Self>) {
        let delay = self.setup.breaker.backoff(self.attempt, &mut self.rng);
        self.attempt += 1;
        self.delays.push(delay);
        self.setup
            .breaker_counters
            .retries
            .fetch_add(1, Ordering::Relaxed);
        let generation = self.generation;
        ctx.run_later(delay, move |act, ctx| {
            if act.generation == generation && act.root.is_none() {
                act.setup.admission.pump();
                act.try_admit(ctx);
            }
        });
    }

    /// The error of a query whose deadline passed: where it waited, if it was waiting.
    fn deadline_error(&self) -> Error {
        match &self.place {
            Some(place) if self.root.is_none() && !place.is_admitted() => {
                self.setup
                    .breaker_counters
                    .retries_exhausted
                    .fetch_add(1, Ordering::Relaxed);
                let node = place
                    .blocker()
                    .map_or_else(|| "the cluster".to_string(), |n| self.node_name(n));
                Error::AdmissionTimeout {
                    node,
                    waited: self.asked.map_or(Duration::ZERO, |t| t.elapsed()),
                    position: place.position().unwrap_or(0),
                }
            }
            _ => Error::Timeout(self.setup.timeout),
        }
    }

    /// A node this attempt uses is gone: if the caller has seen no rows yet and the plan maps
    /// onto live copies, run the query again there. Returns whether it did.
    fn run_elsewhere(&mut self, ctx: &mut Context<Self>) -> bool {
        if self.port as u32 + 1 >= self.setup.breaker.attempts {
            return false;
        }
        let Ok(schedule) = (self.setup.reschedule)(&self.setup.plan, &self.setup.params) else {
            return false;
        };
        let attempt = self.port as u64;
        let unseen = self
            .setup
            .epoch
            .compare_exchange(
                attempt * 2,
                (attempt + 1) * 2,
                Ordering::SeqCst,
                Ordering::SeqCst,
            )
            .is_ok();
        if !unseen {
            return false;
        }
        self.abort_attempt();
        self.setup.cached = schedule
            .instances
            .iter()
            .map(|n| vec![false; n.len()])
            .collect();
        self.setup.instances = schedule.instances;
        self.setup.partitions = schedule.partitions;
        self.root_feeders = root_feeders(&self.setup);
        self.setup
            .breaker_counters
            .retries
            .fetch_add(1, Ordering::Relaxed);
        self.leave_queue();
        self.try_admit(ctx);
        true
    }

    /// Stops the current attempt's fragments and takes a new query id for the next one.
    fn abort_attempt(&mut self) {
        if let Some(root) = self.root.take() {
            root.do_send(CloseFragment);
        }
        if let Some(up) = self.upstream.take() {
            up.cancel.do_send(Cancel);
        }
        let to_close: Vec<(u32, NodeId)> = self
            .remote_instances()
            .into_iter()
            .filter(|i| !self.finished.contains(i))
            .filter(|(_, n)| self.setup.nodes[*n as usize].up.load(Ordering::SeqCst))
            .collect();
        for (fragment, node) in to_close {
            self.node.send(
                node,
                NetMessage::QueryClose(CloseMessage {
                    query: self.setup.id,
                    fragment: Some(fragment),
                }),
            );
        }
        self.setup.router.remove_query(self.setup.id);
        self.node.network.untrack_query(self.setup.id);
        self.setup.id = self.setup.ids.fetch_add(1, Ordering::Relaxed);
        self.port += 1;
        self.finished.clear();
        self.setup
            .cached
            .iter_mut()
            .flatten()
            .for_each(|c| *c = false);
    }

    fn index_of(&self, fragment: u32) -> Option<usize> {
        self.setup
            .plan
            .fragments
            .iter()
            .position(|f| f.id == fragment)
    }

    fn inputs_of(&self, plan: &PhysicalPlan) -> Vec<ExchangeInput> {
        let mut ids = Vec::new();
        collect_exchanges(plan, &mut ids);
        ids.into_iter()
            .map(|exchange| {
                let mut senders = Vec::new();
                for (i, f) in self.setup.plan.fragments.iter().enumerate() {
                    if f.output.as_ref().is_some_and(|o| o.exchange == exchange) {
                        senders.extend(&self.setup.instances[i]);
                    }
                }
                ExchangeInput { exchange, senders }
            })
            .collect()
    }

    fn start_request(&self, idx: usize, node: NodeId, full: bool) -> Option<StartRequest> {
        let f = &self.setup.plan.fragments[idx];
        let out = f.output.as_ref()?;
        let target_idx = self.index_of(out.target)?;
        let fragments_on_node = self
            .setup
            .instances
            .iter()
            .filter(|nodes| nodes.contains(&node))
            .count() as u32;
        let plan = if full {
            PlanPayload::Full {
                key: self.setup.plan.fragment_keys[idx],
                plan: Box::new(f.plan.clone()),
            }
        } else {
            PlanPayload::Cached(self.setup.plan.fragment_keys[idx])
        };
        Some(StartRequest {
            query: self.setup.id,
            fragment: f.id,
            initiator: self.node.id(),
            plan,
            params: self.setup.params.as_ref().clone(),
            output: Some(OutputTarget {
                exchange: out.exchange,
                distribution: out.distribution.clone(),
                targets: self.setup.instances[target_idx].clone(),
            }),
            inputs: self.inputs_of(&f.plan),
            partitions: self.setup.partitions[idx].as_deref().cloned(),
            fragments_on_node,
            batch_size: self.setup.batch_size as u32,
            window: self.setup.window as u32,
            window_bytes: self.setup.window_bytes as u64,
            timeout_ms: self.setup.timeout.as_millis() as u64,
            catalog_epoch: self.setup.catalog_epoch,
            analyze: self.setup.analyze,
        })
    }

    /// Sends the start requests and runs the root fragment.
    fn launch(&mut self, ctx: &mut Context<Self>) {
        for (idx, f) in self.setup.plan.fragments.iter().enumerate() {
            tracing::debug!(
                parent: &self.span,
                fragment = f.id,
                attempt = self.port,
                nodes = ?self.setup.instances[idx].iter().map(|&n| self.node_name(n)).collect::<Vec<_>>(),
                "fragment placed"
            );
        }
        self.node
            .network
            .track_query_as(self.setup.id, self.setup.counters.clone());
        self.setup
            .router
            .add_query(self.setup.id, ctx.address().recipient());
        if self.setup.analyze {
            // Every instance reports, the root's (on this node) too.
            let instances = self.setup.instances.iter().map(Vec::len).sum();
            self.profile = Some(Profile::expecting(instances));
        }
        // A node that crashed after the schedule was made but before the query entered the
        // router above: its crash notice went by unseen, so look now. (A crash after this
        // look finds the query in the router.)
        for node in self.involved() {
            if !self.setup.nodes[node as usize].up.load(Ordering::SeqCst) {
                ctx.notify(RemoteEvent::NodeDown { node });
            }
        }
        // Remote fragments first, so their rows start flowing at once.
        for idx in 1..self.setup.plan.fragments.len() {
            for (k, &node) in self.setup.instances[idx].clone().iter().enumerate() {
                let full = !self.setup.cached[idx].get(k).copied().unwrap_or(false);
                if let Some(req) = self.start_request(idx, node, full) {
                    self.node
                        .send(node, NetMessage::QueryStartRequest(Box::new(req)));
                }
            }
        }
        let root = &self.setup.plan.fragments[0];
        let spec = FragmentSpec {
            query: self.setup.id,
            fragment: root.id,
            initiator: self.node.id(),
            plan: Arc::new(root.plan.clone()),
            params: self.setup.params.clone(),
            sink: FragmentSink::Local(Downstream::of(&ctx.address()), self.port),
            inputs: self.inputs_of(&root.plan),
            partitions: self.setup.partitions[0].as_deref().cloned(),
            batch_size: self.setup.batch_size,
            window: self.window(),
            protocol: self.setup.protocol,
            edges: self.setup.edges.clone(),
            timeout: self.setup.timeout,
            analyze: self.setup.analyze,
        };
        self.root =
            Some(FragmentActor::new(spec, self.node.clone(), self.setup.router.clone()).start());
    }

    fn remote_instances(&self) -> Vec<(u32, NodeId)> {
        let me = self.node.id();
        let mut out = Vec::new();
        for (i, f) in self.setup.plan.fragments.iter().enumerate().skip(1) {
            for &n in &self.setup.instances[i] {
                if n != me {
                    out.push((f.id, n));
                }
            }
        }
        out
    }

    fn node_name(&self, id: NodeId) -> String {
        self.setup
            .node_names
            .get(id as usize)
            .cloned()
            .unwrap_or_else(|| format!("node-{id}"))
    }

    /// Ends the query with `outcome`: closes what may still run, then completes.
    fn finish(&mut self, outcome: Result<(), Error>, natural: bool, ctx: &mut Context<Self>) {
        if self.state != State::Running {
            return;
        }
        match &outcome {
            Ok(()) => {
                tracing::debug!(parent: &self.span, attempts = self.port + 1, "query finished")
            }
            Err(Error::Cancelled) => tracing::debug!(parent: &self.span, "query cancelled"),
            Err(e) => tracing::debug!(parent: &self.span, error = %e, "query failed"),
        }
        self.outcome = Some(outcome);
        self.leave_queue();
        if let Some(root) = &self.root {
            root.do_send(CloseFragment);
        }
        if let Some(up) = self.upstream.take() {
            if !natural {
                up.cancel.do_send(Cancel);
            }
        }
        let launched = self.root.is_some();
        let mut to_close: Vec<(u32, NodeId)> = match self.setup.protocol {
            _ if !launched => Vec::new(),
            Protocol::Legacy => self.remote_instances(),
            Protocol::Lean if natural => Vec::new(),
            Protocol::Lean => self
                .remote_instances()
                .into_iter()
                .filter(|i| !self.finished.contains(i))
                .collect(),
        };
        // A crashed node hears nothing and answers nothing.
        to_close.retain(|(_, n)| self.setup.nodes[*n as usize].up.load(Ordering::SeqCst));
        for &(fragment, node) in &to_close {
            self.node.send(
                node,
                NetMessage::QueryClose(CloseMessage {
                    query: self.setup.id,
                    fragment: Some(fragment),
                }),
            );
        }
        if self.setup.protocol == Protocol::Legacy && !to_close.is_empty() {
            self.awaiting_replies = to_close.len();
            self.state = State::Closing;
            // Replies from a dead node never come: do not wait for ever.
            ctx.run_later(Duration::from_secs(5), |act, ctx| act.complete(ctx));
        } else if self.awaits_profiles() {
            self.state = State::Closing;
            ctx.run_later(PROFILE_WAIT, |act, ctx| act.complete(ctx));
        } else {
            self.complete(ctx);
        }
    }

    /// Whether the query succeeded and some of its instances have not reported their counts
    /// yet (EXPLAIN ANALYZE).
    fn awaits_profiles(&self) -> bool {
        matches!(self.outcome, Some(Ok(())))
            && self.profile.as_ref().is_some_and(|p| !p.is_complete())
    }

    /// Completes a closing query once nothing it waits for is still to come.
    fn complete_when_closed(&mut self, ctx: &mut Context<Self>) {
        if self.state == State::Closing && self.awaiting_replies == 0 && !self.awaits_profiles() {
            self.complete(ctx);
        }
    }

    fn complete(&mut self, ctx: &mut Context<Self>) {
        if self.state == State::Done {
            return;
        }
        self.state = State::Done;
        let item = match self.outcome.take() {
            Some(Ok(())) | None => StreamItem::Done(QueryStats {
                messages: self.setup.counters.snapshot(),
                edges: self.setup.edges.high_waters(),
                edge_bytes: self.setup.edges.high_water_bytes(),
                attempts: self.port as u32 + 1,
                admission_delays: self.delays.clone(),
                profile: self
                    .profile
                    .as_ref()
                    .map_or_else(Vec::new, Profile::operators),
            }),
            Some(Err(Error::Cancelled)) => {
                // The caller is gone; nobody reads the channel.
                ctx.stop();
                return;
            }
            Some(Err(e)) => StreamItem::Failed(e),
        };
        let _ = self.setup.tx.try_send(item);
        ctx.stop();
    }
}

impl QueryActor {
    /// The credit window of every edge and channel of the query.
    fn window(&self) -> Window {
        Window::new(self.setup.window, self.setup.window_bytes)
    }
}

fn collect_exchanges(plan: &PhysicalPlan, out: &mut Vec<u32>) {
    if let PhysicalPlan::Exchange { id, .. } = plan {
        out.push(*id);
    }
    for c in plan.children() {
        collect_exchanges(c, out);
    }
}

impl Actor for QueryActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        if crate::exec::runtime_gone() {
            ctx.stop();
            return;
        }
        crate::exec::idle::note_work();
        tracing::debug!(
            parent: &self.span,
            fragments = self.setup.plan.fragments.len(),
            nodes = ?self.involved().iter().map(|&n| self.node_name(n)).collect::<Vec<_>>(),
            protocol = ?self.setup.protocol,
            "query started"
        );
        let timeout = self.setup.timeout;
        ctx.run_later(timeout, move |act, ctx| {
            let e = act.deadline_error();
            act.finish(Err(e), false, ctx)
        });
        self.try_admit(ctx);
    }

    fn stopped(&mut self, _ctx: &mut Self::Context) {
        self.leave_queue();
        self.setup.router.remove_query(self.setup.id);
        self.node.network.untrack_query(self.setup.id);
    }
}

impl Handler<Attach> for QueryActor {
    type Result = ();

    fn handle(&mut self, msg: Attach, _ctx: &mut Context<Self>) {
        if self.state != State::Running || msg.port != self.port {
            msg.upstream.cancel.do_send(Cancel);
            return;
        }
        // Batches of an aborted attempt may still sit in the channel: grant only what is free.
        let window = self.window();
        let held: usize = self.in_channel.iter().sum();
        let free = Credit {
            batches: window.batches.saturating_sub(self.in_channel.len()),
            bytes: window.bytes.saturating_sub(held),
        };
        if free.batches > 0 || free.bytes > 0 {
            msg.upstream.credit.do_send(free);
        }
        self.upstream = Some(msg.upstream);
        self.edge = Some(msg.edge);
    }
}

impl Handler<Push> for QueryActor {
    type Result = ();

    fn handle(&mut self, msg: Push, ctx: &mut Context<Self>) {
        // Pushes from an aborted attempt's root arrive on an older port.
        if self.state != State::Running || msg.port != self.port {
            return;
        }
        match msg.item {
            Item::Batch(b) => {
                // Space is guaranteed: the root never has more than `window` batches
                // unconsumed, and the channel holds `window + 1`.
                self.in_channel.push_back(msg.bytes);
                let epoch = self.port as u64;
                let _ = self.setup.tx.try_send(StreamItem::Batch(b, msg.mem, epoch));
            }
            Item::End => {
                let natural = self.root_feeders.iter().all(|i| self.finished.contains(i));
                self.finish(Ok(()), natural, ctx);
            }
        }
    }
}

impl Handler<ConsumerCredit> for QueryActor {
    type Result = ();

    fn handle(&mut self, _msg: ConsumerCredit, _ctx: &mut Context<Self>) {
        crate::exec::idle::note_work();
        let bytes = self.in_channel.pop_front().unwrap_or(0);
        // The batch left the edge when the caller took it from the channel.
        if let Some(e) = &self.edge {
            e.dequeued(bytes);
        }
        if let Some(up) = &self.upstream {
            up.credit.do_send(Credit { batches: 1, bytes });
        }
    }
}

impl Handler<AdmissionReady> for QueryActor {
    type Result = ();

    fn handle(&mut self, _msg: AdmissionReady, ctx: &mut Context<Self>) {
        if self.root.is_none() && self.place.as_ref().is_some_and(Place::is_admitted) {
            self.generation += 1;
            self.launch(ctx);
        }
    }
}

impl Handler<CancelQuery> for QueryActor {
    type Result = ();

    fn handle(&mut self, _msg: CancelQuery, ctx: &mut Context<Self>) {
        self.finish(Err(Error::Cancelled), false, ctx);
    }
}

impl Handler<RemoteEvent> for QueryActor {
    type Result = ();

    fn handle(&mut self, msg: RemoteEvent, ctx: &mut Context<Self>) {
        // Events of an aborted attempt (an older query id) are stale.
        let current = match &msg {
            RemoteEvent::Finished { query, .. } => *query == self.setup.id,
            RemoteEvent::Started { resp, .. } => resp.query == self.setup.id,
            RemoteEvent::Error { err, .. } => err.query == self.setup.id,
            RemoteEvent::Profile { report } => report.query == self.setup.id,
            RemoteEvent::NodeDown { .. } => true,
        };
        if !current {
            return;
        }
        match msg {
            RemoteEvent::Finished { node, fragment, .. } => {
                self.finished.insert((fragment, node));
            }
            RemoteEvent::Profile { report } => {
                if let Some(p) = &mut self.profile {
                    p.add(&report);
                }
                self.complete_when_closed(ctx);
            }
            RemoteEvent::NodeDown { node } => {
                let uses = self.root.is_some() && self.involved().contains(&node);
                if uses && self.state == State::Running {
                    if self.run_elsewhere(ctx) {
                        return;
                    }
                    let name = self.node_name(node);
                    let e = if self.setup.nodes[node as usize].pool.crashed() {
                        Error::OutOfMemory(name)
                    } else {
                        Error::NodeDown(name)
                    };
                    self.finish(Err(e), false, ctx);
                } else if self.state == State::Closing {
                    self.complete(ctx);
                }
            }
            RemoteEvent::Started { node, resp } => {
                if resp.plan_missing {
                    if let Some(idx) = self.index_of(resp.fragment) {
                        if let Some(req) = self.start_request(idx, node, true) {
                            self.node
                                .send(node, NetMessage::QueryStartRequest(Box::new(req)));
                        }
                    }
                } else if resp.catalog_epoch > 0 {
                    let epoch = resp.catalog_epoch;
                    self.setup.catalog_behind.fetch_max(epoch, Ordering::SeqCst);
                    self.finish(Err(Error::CatalogChanged { epoch }), false, ctx);
                } else if let Some(message) = resp.error {
                    let node = self.node_name(node);
                    let e = if resp.read_refused {
                        Error::ReadRefused { node, message }
                    } else {
                        Error::Execution { node, message }
                    };
                    self.finish(Err(e), false, ctx);
                }
            }
            RemoteEvent::Error { node, err } => {
                if self.state == State::Closing && err.kind == ErrorKind::Cancelled {
                    self.awaiting_replies = self.awaiting_replies.saturating_sub(1);
                    self.complete_when_closed(ctx);
                    return;
                }
                if err.kind == ErrorKind::Cancelled {
                    return;
                }
                let attempt = self.port as u64;
                // Retry only if the caller has seen no rows of this attempt; the swap also
                // tells the stream to skip rows of this attempt still in the channel.
                let retry = self.setup.breaker.retry_killed
                    && err.kind == ErrorKind::Killed
                    && self.state == State::Running
                    && self
                        .setup
                        .epoch
                        .compare_exchange(
                            attempt * 2,
                            (attempt + 1) * 2,
                            Ordering::SeqCst,
                            Ordering::SeqCst,
                        )
                        .is_ok();
                if retry {
                    tracing::debug!(
                        parent: &self.span,
                        node = %self.node_name(node),
                        "hash join killed by the memory breaker; the query runs again"
                    );
                    // Re-enqueue, ahead of new queries: stop this attempt, give back its
                    // admission, and wait for a new one under a new id.
                    self.abort_attempt();
                    self.leave_queue();
                    self.rerun = true;
                    self.setup
                        .breaker_counters
                        .retries
                        .fetch_add(1, Ordering::Relaxed);
                    self.try_admit(ctx);
                    return;
                }
                let name = self.node_name(node);
                let e = Error::of_kind(err.kind, name, err.message);
                self.finish(Err(e), false, ctx);
            }
        }
    }
}
