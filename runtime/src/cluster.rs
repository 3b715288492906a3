//! The client API: build a cluster of nodes simulated in one process, run SQL on it, look at
//! its statistics, and shut it down.

use crate::actors::node::{NodeActor, NodeCounters, NodeSetup, Restart, SetClient};
use crate::actors::query::{QueryActor, QuerySetup, StreamItem};
use crate::actors::supervisor::SupervisorActor;
use crate::breaker::{BreakerConfig, BreakerCounters, BreakerTotals, Health, JoinMode, KillPolicy};
use crate::error::{Error, Result};
use crate::flow::EdgeRegistry;
use crate::memory::{NodePool, DEFAULT_NODE_MEMORY};
use crate::messages::{NodeId, Protocol, TableLayout};
use crate::network::{MessageStats, Network};
use crate::node::{NodeHandle, NodeShared, NodeStorage};
use crate::placement::{self, ClusterView};
use crate::replication::{self, Coordinator, ReplicaBook, WriteReplies};
use crate::result::{QueryResult, QueryStream};
use actix::prelude::*;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use weir_operators::storage::{assign_partitions, PartitionData};
use weir_operators::{Batch, Column, DataType, Field, Schema, Value};
use weir_planner::{CachedStatement, Catalog, PlanCache, QueryPlan, Statement};

/// The node-side cache key of a fragment plan: a hash of its encoded bytes.
fn fragment_key(plan: &weir_operators::PhysicalPlan) -> u64 {
    let bytes = crate::codec::encode(plan).unwrap_or_default();
    // FNV-1a: stable across processes, unlike the standard library's seeded hashers.
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ *b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Most `(node, fragment plan)` pairs the client remembers as sent.
const KNOWN_PLANS_LIMIT: usize = 1 << 16;

/// Configures and starts a [`Cluster`].
#[derive(Debug, Clone)]
pub struct ClusterBuilder {
    nodes: usize,
    partitions: u32,
    batch_size: usize,
    window: usize,
    protocol: Protocol,
    node_memory: usize,
    query_timeout: Duration,
    plan_cache: usize,
    fragment_cache: usize,
    join_mode: JoinMode,
    breaker: BreakerConfig,
    seed: u64,
    backups: usize,
}

impl Default for ClusterBuilder {
    fn default() -> Self {
        ClusterBuilder {
            nodes: 3,
            partitions: 1024,
            batch_size: weir_operators::DEFAULT_BATCH_SIZE,
            window: 4,
            protocol: Protocol::Lean,
            node_memory: DEFAULT_NODE_MEMORY,
            query_timeout: Duration::from_secs(30),
            plan_cache: 1024,
            fragment_cache: crate::actors::node::DEFAULT_FRAGMENT_CACHE,
            join_mode: JoinMode::Guarded,
            breaker: BreakerConfig::default(),
            seed: 0x5eed,
            backups: 0,
        }
    }
}

impl ClusterBuilder {
    /// Number of data nodes (default 3). A client node that holds no data is always added.
    pub fn nodes(mut self, n: usize) -> Self {
        self.nodes = n.max(1);
        self
    }

    /// Partitions per table (default 1024).
    pub fn partitions(mut self, p: u32) -> Self {
        self.partitions = p.max(1);
        self
    }

    /// Rows per batch (default 1024).
    pub fn batch_size(mut self, rows: usize) -> Self {
        self.batch_size = rows.max(1);
        self
    }

    /// Credit window: batches a producer may have unconsumed on an edge (default 4).
    pub fn window(mut self, batches: usize) -> Self {
        self.window = batches.max(1);
        self
    }

    /// Message workflow (default [`Protocol::Lean`]).
    pub fn protocol(mut self, protocol: Protocol) -> Self {
        self.protocol = protocol;
        self
    }

    /// Memory budget of each node in bytes (default 512 MiB).
    pub fn node_memory(mut self, bytes: usize) -> Self {
        self.node_memory = bytes;
        self
    }

    /// A query that has not finished after this long fails (default 30 s).
    pub fn query_timeout(mut self, timeout: Duration) -> Self {
        self.query_timeout = timeout;
        self
    }

    /// Plans kept in the plan cache (default 1024).
    pub fn plan_cache(mut self, entries: usize) -> Self {
        self.plan_cache = entries;
        self
    }

    /// Fragment plans each node keeps, by key (default 1024). A node may evict any of them:
    /// a query naming an evicted plan is started again with the full plan.
    pub fn fragment_cache(mut self, entries: usize) -> Self {
        self.fragment_cache = entries;
        self
    }

    /// How hash joins treat memory (default [`JoinMode::Guarded`]).
    pub fn join_mode(mut self, mode: JoinMode) -> Self {
        self.join_mode = mode;
        self
    }

    /// Memory circuit breaker settings.
    pub fn breaker(mut self, config: BreakerConfig) -> Self {
        self.breaker = config;
        self
    }

    /// Which joins a breaker trip kills (default [`KillPolicy::RandomHalf`]).
    pub fn kill_policy(mut self, policy: KillPolicy) -> Self {
        self.breaker.kill_policy = policy;
        self
    }

    /// Whether queries whose join was killed are re-enqueued (default true).
    pub fn retry_killed(mut self, retry: bool) -> Self {
        self.breaker.retry_killed = retry;
        self
    }

    /// Backup copies of every partition, on distinct nodes (default 0). Writes go to every
    /// copy; queries read the first live one.
    pub fn backups(mut self, n: usize) -> Self {
        self.backups = n;
        self
    }

    /// Seed of every random choice (kill victims, backoff jitter).
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Starts the actor system on background threads and the nodes on it.
    pub fn build(self) -> Result<Cluster> {
        Cluster::start(self)
    }
}

/// One node's figures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeStats {
    /// Display name.
    pub name: String,
    /// Whether it stores data (the client node does not).
    pub is_data: bool,
    /// Whether it is up.
    pub up: bool,
    /// Actors alive on it.
    pub live_actors: usize,
    /// Bytes accounted now.
    pub memory_reserved: usize,
    /// Most bytes accounted at once.
    pub memory_peak: usize,
    /// Budget.
    pub memory_budget: usize,
    /// Rows stored.
    pub rows_stored: usize,
    /// Highest number of batches ever queued on one edge (or exchange channel) of this node.
    pub edge_high_water: usize,
    /// Messages that failed to decode.
    pub decode_errors: u64,
    /// Start requests served from the node's fragment cache.
    pub fragment_cache_hits: u64,
    /// Start requests that named a fragment the node did not hold.
    pub fragment_cache_misses: u64,
    /// Whether the node's memory circuit breaker is open.
    pub breaker_open: bool,
    /// Times the breaker opened.
    pub trips: u64,
    /// Whether the node ran out of memory (and was not restarted).
    pub out_of_memory: bool,
}

/// A snapshot of the cluster's figures.
#[derive(Debug, Clone)]
pub struct ClusterStats {
    /// Per node (data nodes first, then the client).
    pub nodes: Vec<NodeStats>,
    /// Messages that crossed nodes since the start.
    pub messages: MessageStats,
    /// Plan cache hits.
    pub plan_cache_hits: u64,
    /// Plan cache misses.
    pub plan_cache_misses: u64,
    /// Statements parsed.
    pub parses: u64,
    /// Queries started.
    pub queries_started: u64,
    /// Highest edge high-water mark seen in any finished query.
    pub max_edge_high_water: usize,
    /// Memory circuit breaker totals.
    pub breaker: BreakerTotals,
    /// Cluster health.
    pub health: Health,
}

impl ClusterStats {
    /// Live actors over all nodes.
    pub fn live_actors(&self) -> usize {
        self.nodes.iter().map(|n| n.live_actors).sum()
    }

    /// Accounted bytes over all nodes.
    pub fn memory_reserved(&self) -> usize {
        self.nodes.iter().map(|n| n.memory_reserved).sum()
    }
}

impl Inner {
    fn copies(&self, partitions: u32) -> Arc<Vec<Vec<NodeId>>> {
        let mut cache = self.copies.lock().unwrap_or_else(|e| e.into_inner());
        let data = self.config.nodes as u32;
        let backups = self.config.backups.min(self.config.nodes - 1);
        cache
            .entry(partitions)
            .or_insert_with(|| Arc::new(placement::copies(partitions, data, backups)))
            .clone()
    }

    fn live(&self) -> Vec<bool> {
        self.nodes
            .iter()
            .take(self.config.nodes)
            .map(|n| n.up.load(Ordering::SeqCst))
            .collect()
    }

    fn schedule(&self, plan: &QueryPlan, params: &[Value]) -> Result<placement::Schedule> {
        let live = self.live();
        let catalog = self.catalog.read().unwrap_or_else(|e| e.into_inner());
        let copies = |p: u32| self.copies(p);
        let table_partitions = |t: &str| catalog.table(t).map(|d| d.partitions);
        let book = self.replicas.lock().unwrap_or_else(|e| e.into_inner());
        let view = ClusterView {
            client: self.config.nodes as NodeId,
            live: &live,
            names: &self.names,
            copies: &copies,
            table_partitions: &table_partitions,
            stale: book.stale_copies(),
        };
        placement::schedule(plan, params, &view)
    }
}

struct Inner {
    config: ClusterBuilder,
    nodes: Vec<Arc<NodeShared>>,
    addrs: Vec<Addr<NodeActor>>,
    counters: Vec<Arc<NodeCounters>>,
    arbiters: Vec<ArbiterHandle>,
    names: Arc<Vec<String>>,
    network: Arc<Network>,
    catalog: RwLock<Catalog>,
    plans: PlanCache,
    next_query: AtomicU64,
    copies: Mutex<HashMap<u32, Arc<Vec<Vec<NodeId>>>>>,
    known_plans: Mutex<HashSet<(NodeId, u64)>>,
    max_high_water: AtomicUsize,
    down: AtomicBool,
    breaker: Arc<BreakerCounters>,
    waiting: Arc<AtomicUsize>,
    ids: Arc<AtomicU64>,
    shared_nodes: Arc<Vec<Arc<NodeShared>>>,
    supervisors: Vec<Addr<SupervisorActor>>,
    replicas: Mutex<ReplicaBook>,
    write_replies: Arc<WriteReplies>,
}

/// A cluster of data nodes plus one client node, simulated in this process.
///
/// ```
/// use weir_runtime::Cluster;
/// let cluster = Cluster::builder().nodes(3).partitions(64).build().unwrap();
/// cluster.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, x BIGINT)").unwrap();
/// cluster.execute("INSERT INTO t VALUES (1, 10), (2, 20), (3, 30)").unwrap();
/// let r = cluster.query("SELECT SUM(x) FROM t WHERE id >= ?", &[2.into()]).unwrap();
/// assert_eq!(r.rows(), vec![vec![50.into()]]);
/// cluster.shutdown();
/// ```
pub struct Cluster {
    inner: Arc<Inner>,
    system: Option<(actix::System, JoinHandle<()>)>,
}

impl Cluster {
    /// A builder with defaults: 3 data nodes, 1024 partitions, Lean protocol.
    pub fn builder() -> ClusterBuilder {
        ClusterBuilder::default()
    }

    fn start(config: ClusterBuilder) -> Result<Cluster> {
        let total = config.nodes + 1;
        let names: Vec<String> = (0..config.nodes)
            .map(|i| format!("node-{i}"))
            .chain(std::iter::once("client".to_string()))
            .collect();
        let nodes: Vec<Arc<NodeShared>> = names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                Arc::new(NodeShared {
                    id: i as NodeId,
                    name: name.clone(),
                    is_data: i < config.nodes,
                    storage: RwLock::new(NodeStorage::default()),
                    pool: NodePool::new(
                        name.clone(),
                        config.node_memory,
                        config.join_mode,
                        &config.breaker,
                    ),
                    live_actors: AtomicUsize::new(0),
                    up: AtomicBool::new(true),
                    edge_high_water: AtomicUsize::new(0),
                })
            })
            .collect();
        let counters: Vec<Arc<NodeCounters>> = (0..total)
            .map(|_| Arc::new(NodeCounters::default()))
            .collect();
        let network = Network::new();
        let breaker = Arc::new(BreakerCounters::default());
        let write_replies = Arc::new(WriteReplies::default());
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = {
            let nodes = nodes.clone();
            let counters = counters.clone();
            let network = network.clone();
            let protocol = config.protocol;
            let breaker = breaker.clone();
            let breaker_config = config.breaker.clone();
            let seed = config.seed;
            let fragment_cache = config.fragment_cache;
            let write_replies = write_replies.clone();
            std::thread::Builder::new()
                .name("weir-system".into())
                .spawn(move || {
                    let sys = actix::System::new();
                    sys.block_on(async move {
                        let mut arbiters = Vec::new();
                        let mut addrs = Vec::new();
                        let mut supervisors = Vec::new();
                        for (node, counters) in nodes.into_iter().zip(counters) {
                            let arbiter = Arbiter::new();
                            let net = network.clone();
                            let (shared, cfg, totals) =
                                (node.clone(), breaker_config.clone(), breaker.clone());
                            let supervisor =
                                SupervisorActor::start_in_arbiter(&arbiter.handle(), move |_| {
                                    SupervisorActor::new(shared, cfg, totals, seed)
                                });
                            let totals = breaker.clone();
                            let sup = supervisor.clone();
                            let pool = node.pool.clone();
                            let replies = write_replies.clone();
                            let addr = NodeActor::start_in_arbiter(&arbiter.handle(), move |_| {
                                NodeActor::new(NodeSetup {
                                    shared: node,
                                    network: net,
                                    protocol,
                                    counters,
                                    supervisor: sup,
                                    breaker: totals,
                                    fragment_cache,
                                    write_replies: replies,
                                })
                            });
                            pool.connect(supervisor.clone().recipient(), addr.clone().recipient());
                            supervisors.push(supervisor);
                            arbiters.push(arbiter.handle());
                            addrs.push(addr);
                        }
                        let _ = tx.send((actix::System::current(), arbiters, addrs, supervisors));
                    });
                    let _ = sys.run();
                })
                .map_err(|e| Error::Invalid(format!("cannot start the actor system: {e}")))?
        };
        let (system, arbiters, addrs, supervisors) = rx
            .recv()
            .map_err(|_| Error::Invalid("the actor system failed to start".into()))?;
        for (i, addr) in addrs.iter().enumerate() {
            network.attach(i as NodeId, Some(addr.clone().recipient()));
            network.attach_crash(i as NodeId, addr.clone().recipient());
        }
        let client_addr: Addr<NodeActor> = addrs[config.nodes].clone();
        for addr in &addrs {
            addr.do_send(SetClient(client_addr.clone().recipient()));
        }
        let plans = PlanCache::new(config.plan_cache);
        let shared_nodes = Arc::new(nodes.clone());
        let cluster = Cluster {
            inner: Arc::new(Inner {
                config,
                nodes,
                addrs,
                counters,
                arbiters,
                names: Arc::new(names),
                network,
                catalog: RwLock::new(Catalog::new()),
                plans,
                next_query: AtomicU64::new(1),
                copies: Mutex::new(HashMap::new()),
                known_plans: Mutex::new(HashSet::new()),
                max_high_water: AtomicUsize::new(0),
                down: AtomicBool::new(false),
                breaker,
                waiting: Arc::new(AtomicUsize::new(0)),
                ids: Arc::new(AtomicU64::new(1)),
                shared_nodes,
                supervisors,
                replicas: Mutex::new(ReplicaBook::default()),
                write_replies,
            }),
            system: Some((system, thread)),
        };
        // Wait until every node actor runs, so the baseline is stable.
        let deadline = Instant::now() + Duration::from_secs(10);
        while cluster.stats().live_actors() < cluster.baseline_actors() && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(cluster)
    }

    /// Number of data nodes.
    pub fn data_nodes(&self) -> usize {
        self.inner.config.nodes
    }

    /// The configuration the cluster was built with.
    pub fn config(&self) -> &ClusterBuilder {
        &self.inner.config
    }

    /// Live actors when no query runs: a node actor and a supervisor per node.
    pub fn baseline_actors(&self) -> usize {
        2 * self.inner.nodes.len()
    }

    fn client(&self) -> NodeId {
        self.inner.config.nodes as NodeId
    }

    fn check_up(&self) -> Result<()> {
        if self.inner.down.load(Ordering::SeqCst) {
            Err(Error::Shutdown)
        } else {
            Ok(())
        }
    }

    /// Runs a statement: DDL (`CREATE TABLE`, `CREATE INDEX`, `DROP TABLE`), `INSERT`, or a
    /// query. Returns rows inserted, or rows returned by a query; 0 for DDL.
    pub fn execute(&self, sql: &str) -> Result<u64> {
        self.execute_with(sql, &[])
    }

    /// [`Cluster::execute`] with parameters.
    pub fn execute_with(&self, sql: &str, params: &[Value]) -> Result<u64> {
        self.check_up()?;
        let stmt = {
            let catalog = self.inner.catalog.read().unwrap_or_else(|e| e.into_inner());
            self.inner
                .plans
                .get_or_plan(sql, &catalog, params, self.inner.config.partitions)?
        };
        match stmt {
            CachedStatement::Query(plan) => {
                let r = self.run(plan, params)?.collect_all()?;
                Ok(r.num_rows() as u64)
            }
            CachedStatement::Explain(_) => Ok(0),
            CachedStatement::Other(s) => self.apply(s),
        }
    }

    fn apply(&self, stmt: Statement) -> Result<u64> {
        match stmt {
            Statement::CreateTable(def) => {
                let mut catalog = self
                    .inner
                    .catalog
                    .write()
                    .unwrap_or_else(|e| e.into_inner());
                catalog.add_table(def)?;
                Ok(0)
            }
            Statement::CreateIndex {
                name,
                table,
                column,
            } => {
                let mut catalog = self
                    .inner
                    .catalog
                    .write()
                    .unwrap_or_else(|e| e.into_inner());
                catalog.add_index(&table, weir_planner::IndexDef { name, column })?;
                for node in &self.inner.nodes {
                    let mut storage = node.storage.write().unwrap_or_else(|e| e.into_inner());
                    if let Some(parts) = storage.tables.get_mut(&table.to_lowercase()) {
                        for part in parts.values_mut() {
                            part.add_index(column);
                        }
                    }
                }
                Ok(0)
            }
            Statement::DropTable { name, if_exists } => {
                let mut catalog = self
                    .inner
                    .catalog
                    .write()
                    .unwrap_or_else(|e| e.into_inner());
                match catalog.drop_table(&name) {
                    Ok(def) => {
                        let key = def.name.to_lowercase();
                        for node in &self.inner.nodes {
                            let mut storage =
                                node.storage.write().unwrap_or_else(|e| e.into_inner());
                            storage.drop_table(&key);
                        }
                        self.inner
                            .replicas
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .drop_table(&key);
                        Ok(0)
                    }
                    Err(_) if if_exists => Ok(0),
                    Err(e) => Err(e.into()),
                }
            }
            Statement::Insert { table, batch } => self.load(&table, batch).map(|n| n as u64),
            Statement::Query(_) | Statement::Explain(_) => {
                Err(Error::Invalid("queries are run with query()".into()))
            }
        }
    }

    /// Bulk-loads rows into `table`. The batch must have the table's column types, in order.
    /// All or nothing: a NULL or duplicate primary key rejects the whole batch
    /// ([`Error::NullKey`], [`Error::DuplicateKey`]). A table without a primary key keeps
    /// every row; its rows are placed by hidden row ids.
    pub fn load(&self, table: &str, batch: Batch) -> Result<usize> {
        self.check_up()?;
        let mut catalog = self
            .inner
            .catalog
            .write()
            .unwrap_or_else(|e| e.into_inner());
        let def = catalog
            .table(table)
            .cloned()
            .ok_or_else(|| Error::Plan(weir_planner::PlanError::UnknownTable(table.into())))?;
        if batch.types() != def.schema.types() {
            return Err(Error::Invalid(format!(
                "rows for '{}' must have types {:?}, got {:?}",
                def.name,
                def.schema.types(),
                batch.types()
            )));
        }
        let rows = batch.num_rows();
        let mut parts_of_row = Vec::with_capacity(rows);
        let first_row_id = catalog.reserve_row_ids(&def.name, rows as u64);
        assign_partitions(
            &batch,
            def.primary_key,
            first_row_id,
            def.partitions,
            &mut parts_of_row,
        )
        .map_err(|e| Error::from_storage(&def.name, e))?;
        let mut by_partition: HashMap<u32, Vec<u32>> = HashMap::new();
        for (row, p) in parts_of_row.iter().enumerate() {
            by_partition.entry(*p).or_default().push(row as u32);
        }
        let mut parts: Vec<(u32, Batch)> = by_partition
            .into_iter()
            .map(|(p, idx)| (p, batch.take(&idx)))
            .collect();
        parts.sort_unstable_by_key(|(p, _)| *p);
        let layout = TableLayout {
            table: def.name.to_lowercase(),
            schema: def.schema.clone(),
            primary_key: def.primary_key,
            indexed: def.indexes.iter().map(|i| i.column).collect(),
        };
        let copies = self.inner.copies(def.partitions);
        let id = self.inner.ids.fetch_add(1, Ordering::Relaxed);
        let mut book = self
            .inner
            .replicas
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        self.coordinator()
            .write(&mut book, id, &layout, &copies, parts)?;
        drop(book);
        let before = catalog.row_count(&def.name);
        catalog.set_row_count(&def.name, before + rows as u64);
        Ok(rows)
    }

    fn coordinator(&self) -> Coordinator<'_> {
        Coordinator {
            network: &self.inner.network,
            client: self.client(),
            nodes: &self.inner.nodes,
            names: &self.inner.names,
            replies: &self.inner.write_replies,
            timeout: self.inner.config.query_timeout,
        }
    }

    /// Runs a query and returns all of its rows.
    pub fn query(&self, sql: &str, params: &[Value]) -> Result<QueryResult> {
        let result = self.query_stream(sql, params)?.collect_all()?;
        let hw = result.stats.edges.iter().map(|e| e.1).max().unwrap_or(0);
        self.inner.max_high_water.fetch_max(hw, Ordering::Relaxed);
        Ok(result)
    }

    /// Starts a query and returns its batches as they come. The consumer's pace holds the
    /// producers back; dropping the stream cancels the query.
    pub fn query_stream(&self, sql: &str, params: &[Value]) -> Result<QueryStream> {
        self.check_up()?;
        let stmt = {
            let catalog = self.inner.catalog.read().unwrap_or_else(|e| e.into_inner());
            self.inner
                .plans
                .get_or_plan(sql, &catalog, params, self.inner.config.partitions)?
        };
        match stmt {
            CachedStatement::Query(plan) => self.run(plan, params),
            CachedStatement::Explain(plan) => {
                let text = self.explain_plan(&plan, params);
                let lines: Vec<Vec<Value>> = text
                    .lines()
                    .map(|l| vec![Value::Str(l.to_string())])
                    .collect();
                let batch = Batch::from_rows(&[DataType::Utf8], &lines)
                    .map_err(|e| Error::Invalid(e.to_string()))?;
                let (tx, rx) = crossbeam_channel::bounded(2);
                let _ = tx.send(StreamItem::Batch(batch, None, 0));
                let _ = tx.send(StreamItem::Done(Default::default()));
                Ok(QueryStream {
                    rx,
                    query: None,
                    schema: Schema::new(vec![Field::new("plan", DataType::Utf8)]),
                    finished: false,
                    stats: None,
                    epoch: Arc::new(AtomicU64::new(0)),
                })
            }
            CachedStatement::Other(s) => {
                let n = self.apply(s)?;
                let batch = Batch::try_new(vec![Column::from_i64(vec![n as i64])])
                    .map_err(|e| Error::Invalid(e.to_string()))?;
                let (tx, rx) = crossbeam_channel::bounded(2);
                let _ = tx.send(StreamItem::Batch(batch, None, 0));
                let _ = tx.send(StreamItem::Done(Default::default()));
                Ok(QueryStream {
                    rx,
                    query: None,
                    schema: Schema::new(vec![Field::new("rows", DataType::Int64)]),
                    finished: false,
                    stats: None,
                    epoch: Arc::new(AtomicU64::new(0)),
                })
            }
        }
    }

    /// The plan of a query, with the nodes each fragment would run on.
    pub fn explain(&self, sql: &str, params: &[Value]) -> Result<String> {
        let stmt = {
            let catalog = self.inner.catalog.read().unwrap_or_else(|e| e.into_inner());
            self.inner
                .plans
                .get_or_plan(sql, &catalog, params, self.inner.config.partitions)?
        };
        match stmt {
            CachedStatement::Query(plan) | CachedStatement::Explain(plan) => {
                Ok(self.explain_plan(&plan, params))
            }
            CachedStatement::Other(_) => {
                Err(Error::Invalid("only queries can be explained".into()))
            }
        }
    }

    fn explain_plan(&self, plan: &QueryPlan, params: &[Value]) -> String {
        let schedule = self.schedule(plan, params).ok();
        let names = self.inner.names.clone();
        plan.explain(&|f| {
            let idx = plan.fragments.iter().position(|x| x.id == f.id);
            match (&schedule, idx) {
                (Some(s), Some(i)) => s.instances[i]
                    .iter()
                    .map(|&n| names[n as usize].clone())
                    .collect::<Vec<_>>()
                    .join(", "),
                _ => "?".into(),
            }
        })
    }

    fn schedule(&self, plan: &QueryPlan, params: &[Value]) -> Result<placement::Schedule> {
        self.inner.schedule(plan, params)
    }

    fn run(&self, plan: Arc<QueryPlan>, params: &[Value]) -> Result<QueryStream> {
        let schedule = self.schedule(&plan, params)?;
        let id = self.inner.ids.fetch_add(1, Ordering::Relaxed);
        self.inner.next_query.fetch_add(1, Ordering::Relaxed);
        let plan_keys: Vec<u64> = plan
            .fragments
            .iter()
            .map(|f| fragment_key(&f.plan))
            .collect();
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
                .zip(&plan_keys)
                .map(|(nodes, key)| nodes.iter().map(|&n| !known.insert((n, *key))).collect())
                .collect()
        };
        let window = self.inner.config.window;
        let (tx, rx) = crossbeam_channel::bounded(window + 1);
        let epoch = Arc::new(AtomicU64::new(0));
        let counters = self.inner.network.track_query(id);
        let client = self.client();
        let handle = NodeHandle {
            shared: self.inner.nodes[client as usize].clone(),
            addr: self.inner.addrs[client as usize].clone(),
            network: self.inner.network.clone(),
            supervisor: self.inner.supervisors[client as usize].clone(),
        };
        let setup = QuerySetup {
            id,
            plan: plan.clone(),
            params: Arc::new(params.to_vec()),
            instances: schedule.instances,
            partitions: schedule.partitions,
            plan_keys,
            cached,
            node_names: self.inner.names.clone(),
            protocol: self.inner.config.protocol,
            batch_size: self.inner.config.batch_size,
            window,
            timeout: self.inner.config.query_timeout,
            tx,
            counters,
            edges: Arc::new(EdgeRegistry::default()),
            nodes: self.inner.shared_nodes.clone(),
            breaker: self.inner.config.breaker.clone(),
            breaker_counters: self.inner.breaker.clone(),
            waiting: self.inner.waiting.clone(),
            ids: self.inner.ids.clone(),
            seed: self.inner.config.seed,
            epoch: epoch.clone(),
            reschedule: {
                let inner = self.inner.clone();
                Arc::new(move |plan: &QueryPlan, params: &[Value]| inner.schedule(plan, params))
            },
        };
        let addr = QueryActor::start_in_arbiter(&self.inner.arbiters[client as usize], move |_| {
            QueryActor::new(setup, handle)
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

    /// A snapshot of the cluster's figures.
    pub fn stats(&self) -> ClusterStats {
        let nodes = self
            .inner
            .nodes
            .iter()
            .zip(&self.inner.counters)
            .map(|(n, c)| NodeStats {
                name: n.name.clone(),
                is_data: n.is_data,
                up: n.up.load(Ordering::SeqCst),
                live_actors: n.live(),
                memory_reserved: n.pool.used(),
                memory_peak: n.pool.peak(),
                memory_budget: n.pool.budget(),
                rows_stored: n
                    .storage
                    .read()
                    .map(|s| {
                        s.tables
                            .values()
                            .flat_map(|t| t.values())
                            .map(PartitionData::num_rows)
                            .sum()
                    })
                    .unwrap_or(0),
                edge_high_water: n.edge_high_water.load(Ordering::Relaxed),
                decode_errors: c.decode_errors.load(Ordering::Relaxed),
                fragment_cache_hits: c.fragment_cache_hits.load(Ordering::Relaxed),
                fragment_cache_misses: c.fragment_cache_misses.load(Ordering::Relaxed),
                breaker_open: n.pool.is_open(),
                trips: n.pool.trips(),
                out_of_memory: n.pool.crashed(),
            })
            .collect();
        ClusterStats {
            nodes,
            messages: self.inner.network.totals(),
            plan_cache_hits: self.inner.plans.hits(),
            plan_cache_misses: self.inner.plans.misses(),
            parses: self.inner.plans.parses(),
            queries_started: self.inner.next_query.load(Ordering::Relaxed) - 1,
            max_edge_high_water: self.inner.max_high_water.load(Ordering::Relaxed),
            breaker: self.inner.breaker.totals(),
            health: self.health(),
        }
    }

    /// Green when every node is up; yellow when a data node is down but every partition is
    /// still readable; red when some partition is not.
    pub fn health(&self) -> Health {
        let data = self.inner.config.nodes;
        let up: Vec<bool> = self.inner.nodes[..data]
            .iter()
            .map(|n| n.up.load(Ordering::SeqCst))
            .collect();
        if up.iter().all(|u| *u) {
            return Health::Green;
        }
        let book = self
            .inner
            .replicas
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let readable = self.tables().iter().all(|t| {
            let key = t.name.to_lowercase();
            self.inner
                .copies(t.partitions)
                .iter()
                .enumerate()
                .all(|(p, c)| {
                    c.iter()
                        .any(|&n| up[n as usize] && !book.is_stale(&key, p as u32, n))
                })
        });
        if readable {
            Health::Yellow
        } else {
            Health::Red
        }
    }

    /// Brings data node `i` back after it crashed. Its queries' state is gone; its stored
    /// rows survive (as on disk). Before it serves, every copy it holds that missed writes is
    /// refreshed from a live copy at the newest version (a copy with no such source stays out
    /// of reads until one comes back), and so are other nodes' copies that this node's newer
    /// copies can now bring up to date. Writes wait meanwhile.
    pub fn restart_node(&self, i: usize) -> Result<()> {
        let addr = self.node_addr(i)?;
        // Holding the catalog serializes the repair with writes: none can slip in between.
        let catalog = self
            .inner
            .catalog
            .write()
            .unwrap_or_else(|e| e.into_inner());
        if i < self.inner.config.nodes && !self.inner.nodes[i].up.load(Ordering::SeqCst) {
            let tables: Vec<(String, Arc<Vec<Vec<NodeId>>>)> = catalog
                .tables()
                .map(|d| (d.name.to_lowercase(), self.inner.copies(d.partitions)))
                .collect();
            let mut book = self
                .inner
                .replicas
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            replication::repair(&mut book, &self.inner.nodes, Some(i as NodeId), &tables);
        }
        addr.do_send(Restart);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.inner.nodes[i].up.load(Ordering::SeqCst) {
            if Instant::now() > deadline {
                return Err(Error::NodeDown(self.inner.names[i].clone()));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        drop(catalog);
        Ok(())
    }

    fn node_addr(&self, i: usize) -> Result<&Addr<NodeActor>> {
        self.inner
            .addrs
            .get(i)
            .ok_or_else(|| Error::Invalid(format!("no node {i}")))
    }

    /// The version of node `i`'s copy of `table`'s partition `p`, and whether the cluster
    /// counts it current (for tests of replication).
    pub fn copy_version(&self, i: usize, table: &str, p: u32) -> Option<(u64, bool)> {
        let node = self.inner.nodes.get(i)?;
        let key = table.to_lowercase();
        let version = node
            .storage
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .version(&key, p);
        let book = self
            .inner
            .replicas
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        Some((version, !book.is_stale(&key, p, i as NodeId)))
    }

    /// Rows of `table` stored on node `i` (every copy it holds, current or not), for tests of
    /// replication.
    pub fn stored_rows(&self, i: usize, table: &str) -> Vec<Vec<Value>> {
        let Some(node) = self.inner.nodes.get(i) else {
            return Vec::new();
        };
        let storage = node.storage.read().unwrap_or_else(|e| e.into_inner());
        let mut rows = Vec::new();
        if let Some(parts) = storage.tables.get(&table.to_lowercase()) {
            for part in parts.values() {
                for chunk in part.chunks() {
                    rows.extend(chunk.rows());
                }
            }
        }
        rows
    }

    /// Crashes data node `i` now, as a fault would: its queries' state is gone and every query
    /// using it either moves to live copies or fails naming it. It stays down until
    /// [`Cluster::restart_node`].
    pub fn crash_node(&self, i: usize) -> Result<()> {
        let addr = self.node_addr(i)?;
        addr.do_send(crate::faults::CrashNode);
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.inner.nodes[i].up.load(Ordering::SeqCst) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(())
    }

    /// Injects network faults from now on (`None` heals the network).
    pub fn set_faults(&self, plan: Option<crate::faults::FaultPlan>) {
        self.inner.network.set_faults(plan);
    }

    /// Holds `bytes` of node `i`'s memory until the returned reservation is dropped: memory
    /// pressure from outside weir (and a way to exercise the breaker in tests).
    pub fn hold_memory(&self, i: usize, bytes: usize) -> Result<weir_operators::Reservation> {
        let node = self
            .inner
            .nodes
            .get(i)
            .ok_or_else(|| Error::Invalid(format!("no node {i}")))?;
        let pool: Arc<dyn weir_operators::MemoryPool> = node.pool.clone();
        let mut r = weir_operators::Reservation::new(pool);
        r.force_grow(bytes);
        Ok(r)
    }

    /// Waits until no query's actors are alive and no memory is accounted, or `timeout`
    /// passes. Returns whether the cluster became idle.
    pub fn wait_idle(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            let s = self.stats();
            if s.live_actors() == self.baseline_actors() && s.memory_reserved() == 0 {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// The catalog's table definitions.
    pub fn tables(&self) -> Vec<weir_planner::TableDef> {
        let catalog = self.inner.catalog.read().unwrap_or_else(|e| e.into_inner());
        catalog.tables().cloned().collect()
    }

    /// The simulated network (for fault tests and message statistics).
    pub fn network(&self) -> Arc<Network> {
        self.inner.network.clone()
    }

    /// Stops every actor and the actor system. Also done on drop.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.inner.down.store(true, Ordering::SeqCst);
        if let Some((system, thread)) = self.system.take() {
            for a in &self.inner.arbiters {
                a.stop();
            }
            system.stop();
            let _ = thread.join();
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop();
    }
}
