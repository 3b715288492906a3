//! The query path: a plan is mapped onto the live nodes and handed to a query actor on the
//! client node, whose batches the caller reads from a [`QueryStream`].

use super::Cluster;
use crate::error::{Error, Result};
use crate::exec::edge::EdgeRegistry;
use crate::memory::estimate::BuildEstimate;
use crate::node::handle::NodeHandle;
use crate::node::state::LiveGuard;
use crate::query::actor::{QueryActor, QuerySetup};
use crate::query::placement;
use crate::query::result::{QueryResult, QueryStream};
use actix::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use weir_operators::{Batch, Column, DataType, Field, Schema, Value};
use weir_planner::{CachedStatement, QueryPlan, Statement};

/// Longest a client tries again a read that data nodes refuse
/// ([`Cluster::retrying_refused_reads`]): long enough for the catalog log to elect a leader.
pub const READ_RETRY_LIMIT: Duration = Duration::from_secs(5);

/// Most `(node, fragment plan)` pairs the client remembers as sent.
const KNOWN_PLANS_LIMIT: usize = 1 << 16;

impl Cluster {
    /// Runs a query and returns all of its rows. `params` fill the `?` (or `$n`)
    /// placeholders in order.
    ///
    /// ```
    /// use weir_runtime::{Cluster, Value};
    /// let cluster = Cluster::builder().nodes(1).partitions(4).build().unwrap();
    /// cluster.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, name VARCHAR)").unwrap();
    /// cluster.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, NULL)").unwrap();
    /// let r = cluster.query("SELECT id, name FROM t WHERE id >= ? ORDER BY id", &[2.into()]).unwrap();
    /// assert_eq!(r.column_names(), ["id", "name"]);
    /// assert_eq!(r.rows(), vec![vec![Value::Int(2), "b".into()], vec![Value::Int(3), Value::Null]]);
    /// ```
    pub fn query(&self, sql: &str, params: &[Value]) -> Result<QueryResult> {
        let mut retries = 0;
        let result = self.retrying_refused_reads(|| loop {
            match self.query_stream(sql, params)?.collect_all() {
                // Planned on a catalog a data node knows changed since (a client of data
                // nodes of other processes): planned again on the new one.
                Err(Error::CatalogChanged { .. }) if retries < 3 => retries += 1,
                result => return result,
            }
        })?;
        self.note_high_water(&result);
        Ok(result)
    }

    /// Runs `attempt` (a read, or a statement that reads) again while a data node of another
    /// process refuses the read ([`Error::ReadRefused`]: it cannot vouch for its copies, a
    /// new leader of the catalog log is being elected, or the copy the client chose missed
    /// writes), learning the copies' state from the data nodes before each try, for up to
    /// [`READ_RETRY_LIMIT`]; then the refusal reaches the caller. A read that finds no
    /// current copy of a partition ([`Error::NoCurrentCopy`]) is tried once more after the
    /// client learnt the copies' state (a copy may have been repaired, or taken as current,
    /// since the client last looked).
    pub(super) fn retrying_refused_reads<T>(
        &self,
        mut attempt: impl FnMut() -> Result<T>,
    ) -> Result<T> {
        let deadline = Instant::now() + READ_RETRY_LIMIT;
        let mut pause = Duration::from_millis(20);
        let mut relearnt = false;
        loop {
            match attempt() {
                Err(Error::NoCurrentCopy { .. }) if !relearnt && self.inner.remote.is_some() => {
                    relearnt = true;
                    self.refresh_catalog()?;
                }
                Err(Error::ReadRefused { node, message }) if Instant::now() + pause < deadline => {
                    tracing::debug!("{node} refused a read ({message}): trying again");
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(400));
                    self.refresh_catalog()?;
                }
                done => return done,
            }
        }
    }

    /// Keeps the highest edge high-water mark a finished query saw, for the cluster's stats.
    pub(super) fn note_high_water(&self, result: &QueryResult) {
        let hw = result.stats.edges.iter().map(|e| e.1).max().unwrap_or(0);
        self.inner.max_high_water.fetch_max(hw, Ordering::Relaxed);
    }

    /// Starts a query and returns its batches as they come. The consumer's pace holds the
    /// producers back; dropping the stream cancels the query.
    ///
    /// ```
    /// use weir_runtime::Cluster;
    /// let cluster = Cluster::builder().nodes(1).partitions(4).batch_size(2).build().unwrap();
    /// cluster.execute("CREATE TABLE t (id BIGINT PRIMARY KEY)").unwrap();
    /// cluster.execute("INSERT INTO t VALUES (1), (2), (3), (4), (5)").unwrap();
    /// let mut rows = 0;
    /// for batch in cluster.query_stream("SELECT id FROM t", &[]).unwrap() {
    ///     rows += batch.unwrap().num_rows();
    /// }
    /// assert_eq!(rows, 5);
    /// // Dropping a stream part way cancels its query: its actors stop, its memory returns.
    /// let mut stream = cluster.query_stream("SELECT id FROM t", &[]).unwrap();
    /// let _first = stream.next().unwrap().unwrap();
    /// drop(stream);
    /// assert!(cluster.wait_idle(std::time::Duration::from_secs(5)));
    /// ```
    pub fn query_stream(&self, sql: &str, params: &[Value]) -> Result<QueryStream> {
        self.check_up()?;
        let stmt = self.plan_statement(sql, params)?;
        match stmt {
            CachedStatement::Query(plan) => self.run(plan, params),
            CachedStatement::Explain(_) | CachedStatement::ExplainAnalyze(_) => {
                let text = match &stmt {
                    CachedStatement::ExplainAnalyze(plan) => self.explain_analyzed(plan, params)?,
                    CachedStatement::Explain(plan) => self.explain_plan(plan, params),
                    _ => String::new(),
                };
                let lines: Vec<Vec<Value>> = text
                    .lines()
                    .map(|l| vec![Value::Str(l.to_string())])
                    .collect();
                let batch = Batch::from_rows(&[DataType::Utf8], &lines)
                    .map_err(|e| Error::Invalid(e.to_string()))?;
                let schema = Schema::new(vec![Field::new("plan", DataType::Utf8)]);
                Ok(QueryStream::of_batch(schema, batch))
            }
            CachedStatement::Other(s) => {
                let applied = self.apply_planned(sql, params, *s)?;
                if let Some((schema, batch)) = applied.returned {
                    return Ok(QueryStream::of_batch(schema, batch));
                }
                let n = applied.rows;
                let batch = Batch::try_new(vec![Column::from_i64(vec![n as i64])])
                    .map_err(|e| Error::Invalid(e.to_string()))?;
                let schema = Schema::new(vec![Field::new("rows", DataType::Int64)]);
                Ok(QueryStream::of_batch(schema, batch))
            }
        }
    }

    /// The columns statement `sql` answers when run with `params`, without running it: a
    /// query's, an EXPLAIN's (one text column, `plan`) or a write's `RETURNING`;
    /// `None` for a statement that answers a count of rows.
    ///
    /// ```
    /// use weir_runtime::Cluster;
    /// let cluster = Cluster::builder().nodes(1).partitions(4).build().unwrap();
    /// cluster.execute("CREATE TABLE t (id SERIAL PRIMARY KEY, name VARCHAR)").unwrap();
    /// let insert = "INSERT INTO t (name) VALUES ('a') RETURNING id";
    /// let columns = cluster.result_columns(insert, &[]).unwrap().unwrap();
    /// assert_eq!(columns.fields[0].name, "id");
    /// assert!(cluster.result_columns("DELETE FROM t", &[]).unwrap().is_none());
    /// assert_eq!(cluster.query(insert, &[]).unwrap().rows(), vec![vec![1.into()]]);
    /// ```
    pub fn result_columns(&self, sql: &str, params: &[Value]) -> Result<Option<Schema>> {
        Ok(match self.plan_statement(sql, params)? {
            CachedStatement::Query(plan) => Some(plan.output_schema.clone()),
            CachedStatement::Explain(_) | CachedStatement::ExplainAnalyze(_) => {
                Some(Schema::new(vec![Field::new("plan", DataType::Utf8)]))
            }
            CachedStatement::Other(s) => match *s {
                Statement::Insert {
                    returning: Some(r), ..
                }
                | Statement::InsertSelect {
                    returning: Some(r), ..
                }
                | Statement::Update {
                    returning: Some(r), ..
                }
                | Statement::Delete {
                    returning: Some(r), ..
                } => Some(r.schema),
                Statement::SequenceCalls { schema, .. } => Some(schema),
                _ => None,
            },
        })
    }

    /// Plans query `sql` without running it: the distributed plan that
    /// [`Cluster::run_plan`] runs. For tests and tools that adjust plans by hand.
    pub fn plan_query(&self, sql: &str, params: &[Value]) -> Result<QueryPlan> {
        match self.plan_statement(sql, params)? {
            CachedStatement::Query(plan) => Ok((*plan).clone()),
            _ => Err(Error::Invalid(format!("not a query: {sql}"))),
        }
    }

    /// Runs a distributed plan (from [`Cluster::plan_query`], possibly adjusted, or built by
    /// hand) and returns all of its rows.
    pub fn run_plan(&self, mut plan: QueryPlan, params: &[Value]) -> Result<QueryResult> {
        self.check_up()?;
        // The fragments may have been changed since the plan was made.
        plan.seal();
        self.run(Arc::new(plan), params)?.collect_all()
    }

    pub(super) fn schedule(
        &self,
        plan: &QueryPlan,
        params: &[Value],
    ) -> Result<placement::Schedule> {
        self.inner.schedule(plan, params)
    }

    pub(super) fn run(&self, plan: Arc<QueryPlan>, params: &[Value]) -> Result<QueryStream> {
        self.run_with(plan, params, false)
    }

    /// [`Cluster::run`], with the operators counting what they output when `analyze`
    /// (EXPLAIN ANALYZE: the counts are in the stream's [`QueryStats::profile`]).
    ///
    /// [`QueryStats::profile`]: crate::query::stats::QueryStats::profile
    pub(super) fn run_with(
        &self,
        mut plan: Arc<QueryPlan>,
        params: &[Value],
        analyze: bool,
    ) -> Result<QueryStream> {
        if !plan.is_sealed() {
            Arc::make_mut(&mut plan).seal();
        }
        let schedule = self.schedule(&plan, params)?;
        let id = self.inner.ids.fetch_add(1, Ordering::Relaxed);
        self.inner.next_query.fetch_add(1, Ordering::Relaxed);
        let cached: Vec<Vec<bool>> = {
            let mut known = self
                .inner
                .known_plans
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            // Only a hint (a node may have evicted the plan since): forget it all now and then
            // rather than grow without bound.
            if known.len() > KNOWN_PLANS_LIMIT {
                known.clear();
            }
            schedule
                .instances
                .iter()
                .zip(&plan.fragment_keys)
                .map(|(nodes, key)| nodes.iter().map(|&n| !known.insert((n, *key))).collect())
                .collect()
        };
        let builds = {
            let catalog = self.inner.catalog.read().unwrap_or_else(|e| e.into_inner());
            Arc::new(BuildEstimate::of(&plan, &schedule.instances, &|t| {
                catalog.row_count(t)
            }))
        };
        let window = self.inner.config.window;
        let (tx, rx) = crate::query::channel::bounded(window + 1, self.inner.config.idle_spin);
        let epoch = Arc::new(AtomicU64::new(0));
        let counters = self.inner.network.track_query(id);
        let client = self.client();
        let handle = NodeHandle {
            shared: self.inner.nodes[client as usize].clone(),
            inbox: self.inner.addrs[self.inner.local].clone().recipient(),
            network: self.inner.network.clone(),
            pools: self.inner.pools.clone(),
        };
        let setup = QuerySetup {
            id,
            plan: plan.clone(),
            params: Arc::new(params.to_vec()),
            instances: schedule.instances,
            partitions: schedule.partitions,
            cached,
            node_names: self.inner.names.clone(),
            protocol: self.inner.config.protocol,
            batch_size: self.inner.config.batch_size,
            window,
            window_bytes: self.inner.config.byte_window(),
            timeout: self.inner.config.query_timeout,
            tx,
            counters,
            edges: Arc::new(EdgeRegistry::default()),
            nodes: self.inner.nodes.clone(),
            router: self.inner.routers[self.inner.local].clone(),
            breaker: self.inner.config.breaker.clone(),
            breaker_counters: self.inner.breaker.clone(),
            admission: self.inner.admission.clone(),
            builds,
            ids: self.inner.ids.clone(),
            seed: self.inner.config.seed,
            epoch: epoch.clone(),
            catalog_epoch: self
                .inner
                .remote
                .as_ref()
                .map_or(0, |r| r.epoch.load(Ordering::SeqCst)),
            catalog_behind: self.inner.catalog_behind.clone(),
            analyze,
            reschedule: {
                let inner = self.inner.clone();
                Arc::new(move |plan: &QueryPlan, params: &[Value]| inner.schedule(plan, params))
            },
        };
        // Counted live from here, not from when its arbiter gets to create it: a stream
        // dropped at once must not let the cluster look idle before its query actor runs.
        let live = LiveGuard::new(&handle.shared);
        let addr =
            QueryActor::start_in_arbiter(&self.inner.arbiters[self.inner.local], move |_| {
                QueryActor::new(setup, handle, live)
            });
        Ok(QueryStream {
            rx,
            query: Some(addr),
            schema: plan.output_schema.clone(),
            finished: false,
            stats: None,
            epoch,
        })
    }
}
