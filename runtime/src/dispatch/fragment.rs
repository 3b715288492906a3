//! The actor that owns one fragment instance: it turns the fragment's operator tree into
//! actors, watches them, reports a failure to the initiator, and closes them on request.

use crate::dispatch::messages::CloseFragment;
use crate::error::ErrorKind;
use crate::exchange::receiver::ExchangeRecvActor;
use crate::exchange::router::{Links, Router};
use crate::exchange::sender::{ExchangeSendActor, SenderSpec};
use crate::exec::edge::{EdgeRegistry, EdgeStat, Window};
use crate::exec::flow::{Downstream, Output};
use crate::exec::messages::Cancel;
use crate::exec::messages::{FragmentLink, OpFailed, OpStopped};
use crate::exec::operator::OperatorActor;
use crate::exec::source::{SourceActor, SourceKind};
use crate::memory::pool::SpillingStatePool;
use crate::node::handle::NodeHandle;
use crate::node::inbox::NodeMsg;
use crate::node::state::LiveGuard;
use crate::wire::ids::{NodeId, QueryId};
use crate::wire::messages::{ErrorMessage, ExchangeInput, NetMessage, OutputTarget, Protocol};
use crate::wire::messages::{OperatorCounts, ProfileMessage};
use crate::wire::partition_map::PartitionMap;
use actix::prelude::*;
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use weir_io::external::{ExternalScan, Share};
use weir_operators::kernels::series::SeriesSource;
use weir_operators::kernels::{create_operator, ExecContext, ScanSource};
use weir_operators::storage::ScanChunk;
use weir_operators::{Batch, Error as OpError, PhysicalPlan, Reservation, Value};

/// Where a fragment's output goes.
pub enum FragmentSink {
    /// Over an exchange to other fragments.
    Exchange(OutputTarget),
    /// To input `port` of a local actor (the query's result sink, for the root fragment).
    Local(Downstream, usize),
}

/// Everything needed to run a fragment instance.
pub struct FragmentSpec {
    /// Query.
    pub query: QueryId,
    /// Fragment id.
    pub fragment: u32,
    /// Node that started the query (failures are reported there).
    pub initiator: NodeId,
    /// Operator tree (shared with the node's fragment cache).
    pub plan: Arc<PhysicalPlan>,
    /// Bound parameters.
    pub params: Arc<Vec<Value>>,
    /// Output.
    pub sink: FragmentSink,
    /// Exchanges read by this instance.
    pub inputs: Vec<ExchangeInput>,
    /// Which node reads which partition (`None`: every local partition).
    pub partitions: Option<PartitionMap>,
    /// Rows per batch.
    pub batch_size: usize,
    /// Credit window per edge and exchange channel.
    pub window: Window,
    /// Message workflow.
    pub protocol: Protocol,
    /// Where edges are registered for stats.
    pub edges: Arc<EdgeRegistry>,
    /// The query's timeout: a fragment still running this long after it started (plus a
    /// grace period) closes itself.
    pub timeout: std::time::Duration,
    /// EXPLAIN ANALYZE: when the instance stops, it reports to the initiator what each of its
    /// operators output.
    pub analyze: bool,
}

/// Owns a fragment instance's actors.
pub struct FragmentActor {
    node: NodeHandle,
    /// The node's router, which the fragment's exchange ends enter.
    router: Arc<Router>,
    spec: Option<FragmentSpec>,
    query: QueryId,
    fragment: u32,
    initiator: NodeId,
    actors: Vec<Recipient<Cancel>>,
    running: usize,
    failed: bool,
    edges: Arc<EdgeRegistry>,
    /// With EXPLAIN ANALYZE, the output edge of each operator, in the order of a pre-order
    /// walk of the plan (the numbering the report uses).
    operators: Option<Vec<Arc<EdgeStat>>>,
    /// The `fragment` span (query id, fragment id, node).
    span: tracing::Span,
    _live: LiveGuard,
}

impl FragmentActor {
    /// A fragment actor for `spec` on `node`, whose messages `router` routes.
    pub fn new(spec: FragmentSpec, node: NodeHandle, router: Arc<Router>) -> Self {
        let live = LiveGuard::new(&node.shared);
        let span = tracing::debug_span!(
            parent: None,
            "fragment",
            query = spec.query,
            fragment = spec.fragment,
            node = %node.shared.name
        );
        FragmentActor {
            span,
            edges: spec.edges.clone(),
            operators: spec.analyze.then(Vec::new),
            query: spec.query,
            fragment: spec.fragment,
            initiator: spec.initiator,
            spec: Some(spec),
            node,
            router,
            actors: Vec::new(),
            running: 0,
            failed: false,
            _live: live,
        }
    }

    fn report(&mut self, kind: ErrorKind, message: String) {
        if self.failed {
            return;
        }
        self.failed = true;
        match kind {
            ErrorKind::Killed => tracing::debug!(parent: &self.span, %message, "fragment killed"),
            _ => tracing::debug!(parent: &self.span, ?kind, %message, "fragment failed"),
        }
        self.node.send(
            self.initiator,
            NetMessage::QueryError(ErrorMessage {
                query: self.query,
                fragment: self.fragment,
                kind,
                message,
            }),
        );
    }

    fn links(&self) -> Links {
        Links {
            node: self.node.clone(),
            router: self.router.clone(),
        }
    }

    fn close_all(&mut self) {
        for a in &self.actors {
            a.do_send(Cancel);
        }
    }

    fn build(&mut self, spec: &FragmentSpec, ctx: &mut Context<Self>) -> Result<(), OpError> {
        let link = FragmentLink {
            stopped: ctx.address().recipient(),
            failed: ctx.address().recipient(),
        };
        let (downstream, port, label) = match &spec.sink {
            FragmentSink::Local(d, port) => (d.clone(), *port, "result".to_string()),
            FragmentSink::Exchange(target) => {
                let sender = ExchangeSendActor::new(
                    SenderSpec {
                        query: spec.query,
                        fragment: spec.fragment,
                        exchange: target.exchange,
                        distribution: target.distribution.clone(),
                        targets: target.targets.clone(),
                        params: spec.params.clone(),
                        window: spec.window,
                        protocol: spec.protocol,
                        batch_rows: spec.batch_size,
                        edges: spec.edges.clone(),
                    },
                    self.links(),
                    link.clone(),
                );
                let addr = sender.start();
                self.actors.push(addr.clone().recipient());
                self.running += 1;
                (
                    Downstream::of(&addr),
                    0,
                    format!("exchange {}", target.exchange),
                )
            }
        };
        self.spawn(spec, &spec.plan, downstream, port, &label, &link)
    }

    fn spawn(
        &mut self,
        spec: &FragmentSpec,
        plan: &PhysicalPlan,
        downstream: Downstream,
        port: usize,
        consumer: &str,
        link: &FragmentLink,
    ) -> Result<(), OpError> {
        let label = format!(
            "{}/f{}/{}:{} -> {}",
            self.node.shared.name,
            spec.fragment,
            plan.name(),
            self.running,
            consumer
        );
        let edge = spec.edges.edge(label.clone());
        if let Some(operators) = &mut self.operators {
            // Spawned parent first, then each input's subtree: a pre-order walk.
            operators.push(edge.clone());
        }
        let out = Output::new(
            downstream,
            port,
            edge,
            Some(self.node.shared.pool.clone()),
            spec.window,
        );
        let exec = ExecContext {
            params: spec.params.clone(),
            batch_size: spec.batch_size,
            spill: self.node.shared.spill.clone(),
        };
        let cancel: Recipient<Cancel> = match plan {
            PhysicalPlan::Scan { .. } => {
                let source = self.scan_source(spec, plan, &exec)?;
                let live = LiveGuard::new(&self.node.shared);
                SourceActor::new(source, out, link.clone(), live)
                    .start()
                    .recipient()
            }
            PhysicalPlan::Values { schema, rows } => {
                let batch = Batch::from_rows(&schema.types(), rows)?;
                let live = LiveGuard::new(&self.node.shared);
                SourceActor::new(
                    SourceKind::Batches(VecDeque::from(vec![batch])),
                    out,
                    link.clone(),
                    live,
                )
                .start()
                .recipient()
            }
            PhysicalPlan::Series {
                start,
                stop,
                step,
                ordinality,
                ..
            } => {
                let mut series =
                    SeriesSource::new(start, stop, step, &exec.params, exec.batch_size)?;
                if *ordinality {
                    series = series.numbered();
                }
                let live = LiveGuard::new(&self.node.shared);
                SourceActor::new(SourceKind::Series(series), out, link.clone(), live)
                    .start()
                    .recipient()
            }
            PhysicalPlan::Exchange { id, schema } => {
                let senders = spec
                    .inputs
                    .iter()
                    .find(|i| i.exchange == *id)
                    .map(|i| i.senders.clone())
                    .ok_or_else(|| OpError::Internal(format!("exchange {id} has no senders")))?;
                ExchangeRecvActor::new(
                    spec.query,
                    *id,
                    schema.len(),
                    &senders,
                    self.links(),
                    spec.protocol,
                    out,
                    link.clone(),
                )
                .start()
                .recipient()
            }
            other => {
                let guarded =
                    self.node.shared.pool.mode() == crate::memory::breaker::JoinMode::Guarded;
                // Joins may be killed; operators that can spill may be asked to, and take
                // their state only up to the breaker's limit.
                let spills = exec.spill.is_some()
                    && match other {
                        PhysicalPlan::Sort { limit, .. } => limit.is_none(),
                        PhysicalPlan::HashAggregate { .. } | PhysicalPlan::HashJoin { .. } => true,
                        PhysicalPlan::Window {
                            partition_by, keep, ..
                        } => !partition_by.is_empty() && keep.is_none(),
                        _ => false,
                    };
                let reservation = if guarded && spills {
                    Reservation::new(SpillingStatePool::new(self.node.shared.pool.clone()))
                } else {
                    Reservation::new(self.node.shared.pool.clone())
                };
                let op = create_operator(other, &exec, reservation)?;
                let children = other.children();
                let live = LiveGuard::new(&self.node.shared);
                let filters = self.node.shared.join_filters.load(Ordering::Relaxed);
                let mut actor =
                    OperatorActor::new(op, children.len(), out, spec.window, link.clone(), live)
                        .join_filters(filters);
                if guarded && (other.holds_build_side() || spills) {
                    // Only a join that cannot spill is ever killed.
                    let join = other.holds_build_side();
                    actor = actor.supervised(self.node.shared.clone(), join, join && !spills);
                }
                let addr = actor.start();
                self.actors.push(addr.clone().recipient());
                self.running += 1;
                let me = format!("{}:{}", other.name(), self.running - 1);
                for (i, child) in children.into_iter().enumerate() {
                    self.spawn(spec, child, Downstream::of(&addr), i, &me, link)?;
                }
                return Ok(());
            }
        };
        self.actors.push(cancel);
        self.running += 1;
        Ok(())
    }

    fn scan_source(
        &self,
        spec: &FragmentSpec,
        plan: &PhysicalPlan,
        exec: &ExecContext,
    ) -> Result<SourceKind, OpError> {
        let PhysicalPlan::Scan {
            table,
            index,
            filter,
            projection,
            external,
            table_schema,
            ..
        } = plan
        else {
            return Err(OpError::Internal("not a scan".into()));
        };
        if let Some(source) = external {
            return self.file_source(spec, source, plan, exec);
        }
        let storage = self
            .node
            .shared
            .storage
            .read()
            .unwrap_or_else(|e| e.into_inner());
        let Some(store) = storage.tables.get(&table.to_lowercase()) else {
            return Ok(SourceKind::Batches(VecDeque::new()));
        };
        let ids: Vec<u32> = match &spec.partitions {
            Some(map) => map.partitions_of(self.node.id()),
            None => store.partition_ids(),
        };
        // A query planned before an `ALTER TABLE` that added or dropped a column would read
        // the columns at the wrong positions.
        if let Some(part) = ids.iter().find_map(|&p| store.get(p)) {
            let stored = &part.schema().fields;
            let same = stored.len() == table_schema.fields.len()
                && stored
                    .iter()
                    .zip(&table_schema.fields)
                    .all(|(s, p)| s.data_type == p.data_type);
            if !same {
                return Err(OpError::Type(format!(
                    "table {table} was altered after the query was planned: run it again"
                )));
            }
        }
        let chunks = match index {
            Some((column, lookup)) => store.lookup(*column, lookup, &spec.params, &ids)?,
            None => ids
                .iter()
                .filter_map(|&p| store.get(p))
                .flat_map(|part| part.chunks())
                .map(ScanChunk::from)
                .collect(),
        };
        Ok(SourceKind::Scan(Box::new(ScanSource::of_selections(
            chunks,
            filter.clone(),
            projection.clone(),
            exec.clone(),
        ))))
    }
}

impl FragmentActor {
    /// This node's share of a scan of an external table: the units whose number modulo the
    /// count of the fragment's nodes is this node's place among them (all of them when the
    /// fragment has no partition map).
    fn file_source(
        &self,
        spec: &FragmentSpec,
        source: &weir_operators::external::ExternalSource,
        plan: &PhysicalPlan,
        exec: &ExecContext,
    ) -> Result<SourceKind, OpError> {
        let PhysicalPlan::Scan {
            table_schema,
            filter,
            projection,
            ..
        } = plan
        else {
            return Err(OpError::Internal("not a scan".into()));
        };
        let share = match &spec.partitions {
            Some(map) => {
                let nodes = map.nodes();
                match nodes.iter().position(|&n| n == self.node.id()) {
                    Some(index) => Share {
                        index,
                        of: nodes.len(),
                    },
                    // Not one of the scanning nodes: nothing to read here.
                    None => return Ok(SourceKind::Batches(VecDeque::new())),
                }
            }
            None => Share::ALL,
        };
        let scan = ExternalScan::open(
            source,
            table_schema,
            filter.as_ref(),
            projection,
            exec.clone(),
            share,
            self.node.shared.external.clone(),
        )?
        .accounted(Reservation::new(self.node.shared.pool.clone()));
        Ok(SourceKind::Files(Box::new(scan)))
    }
}

impl Actor for FragmentActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        let Some(spec) = self.spec.take() else {
            return;
        };
        if crate::exec::runtime_gone() {
            ctx.stop();
            return;
        }
        tracing::debug!(parent: &self.span, "fragment started");
        let grace = spec.timeout + std::time::Duration::from_millis(500);
        ctx.run_later(grace, |act, ctx| {
            act.failed = true;
            act.close_all();
            if act.running == 0 {
                ctx.stop();
            }
        });
        if let Err(e) = self.build(&spec, ctx) {
            // A refused reservation while building is no kill: the query just fails.
            let kind = match error_kind(&e) {
                ErrorKind::Killed => ErrorKind::Execution,
                kind => kind,
            };
            self.report(kind, e.to_string());
            self.close_all();
        }
        if self.running == 0 {
            ctx.stop();
        }
    }

    fn stopped(&mut self, _ctx: &mut Self::Context) {
        tracing::debug!(parent: &self.span, "fragment stopped");
        let hw = self
            .edges
            .high_waters()
            .iter()
            .map(|e| e.1)
            .max()
            .unwrap_or(0);
        self.node
            .shared
            .edge_high_water
            .fetch_max(hw, std::sync::atomic::Ordering::Relaxed);
        self.node.inbox.do_send(NodeMsg::FragmentFinished {
            query: self.query,
            fragment: self.fragment,
        });
        if let Some(operators) = &self.operators {
            let operators = operators
                .iter()
                .enumerate()
                .map(|(i, edge)| {
                    let (rows, batches) = edge.sent_so_far();
                    let busy = edge.busy_so_far().as_nanos();
                    OperatorCounts {
                        operator: i as u32,
                        rows,
                        batches,
                        busy_nanos: u64::try_from(busy).unwrap_or(u64::MAX),
                    }
                })
                .collect();
            let report = ProfileMessage {
                query: self.query,
                fragment: self.fragment,
                operators,
            };
            self.node
                .send(self.initiator, NetMessage::QueryProfile(report));
        }
    }
}

impl Handler<OpStopped> for FragmentActor {
    type Result = ();

    fn handle(&mut self, _msg: OpStopped, ctx: &mut Context<Self>) {
        self.running = self.running.saturating_sub(1);
        if self.running == 0 {
            ctx.stop();
        }
    }
}

/// How the initiator is told of a kernel's failure `e`: typed where the user can tell the
/// kinds apart (overflow, division by zero, cast, a value too large), a kill for a refused
/// reservation.
fn error_kind(e: &OpError) -> ErrorKind {
    match e {
        OpError::Cancelled(_) | OpError::Memory(_) => ErrorKind::Killed,
        OpError::Overflow(_) => ErrorKind::Overflow,
        OpError::DivisionByZero(_) => ErrorKind::DivisionByZero,
        OpError::Cast { .. } => ErrorKind::Cast,
        OpError::ValueTooLarge(_) => ErrorKind::ValueTooLarge,
        OpError::Spill(_) => ErrorKind::Disk,
        OpError::SpillQuota { .. } => ErrorKind::SpillQuota,
        _ => ErrorKind::Execution,
    }
}

impl Handler<OpFailed> for FragmentActor {
    type Result = ();

    fn handle(&mut self, msg: OpFailed, _ctx: &mut Context<Self>) {
        self.report(error_kind(&msg.0), msg.0.to_string());
        self.close_all();
    }
}

impl Handler<CloseFragment> for FragmentActor {
    type Result = ();

    fn handle(&mut self, _msg: CloseFragment, ctx: &mut Context<Self>) {
        self.failed = true;
        self.close_all();
        if self.running == 0 {
            ctx.stop();
        }
    }
}
