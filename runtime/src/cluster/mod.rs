//! The client API: build a cluster of nodes simulated in one process, run SQL on it, look at
//! its statistics, and shut it down.
//!
//! [`Cluster`] is a thin facade; each job has its module: [`builder`] (configuration),
//! `bootstrap` (starting the actors), `statements` (SQL, DDL, EXPLAIN), `analyze` (EXPLAIN
//! ANALYZE), [`copy`] (COPY to and from
//! files), `writes` (loading and INSERT), `queries` (running queries), `asynchronous` (the same for async callers), [`stats`] (figures and health) and `recovery`
//! (crashes, restarts, faults).

mod alter;
mod analyze;
mod asynchronous;
mod bootstrap;
pub mod builder;
mod cascade;
mod catalog;
mod connection;
pub mod copy;
pub mod data_node;
mod external;
mod lost;
mod not_null;
pub mod prepared;
mod proposals;
mod queries;
mod recovery;
mod references;
pub mod remote;
pub(crate) mod restore;
mod sequence_blocks;
pub mod sequences;
pub mod session;
mod statements;
pub mod stats;
mod system;
mod truncate;
mod unique;
mod update_cascade;
mod upsert;
mod writes;

use builder::ClusterBuilder;
use connection::Remote;

use crate::dispatch::counters::NodeCounters;
use crate::dispatch::node_actor::NodeActor;
use crate::error::{Error, Result};
use crate::exchange::router::Router;
use crate::memory::breaker::BreakerCounters;
use crate::memory::pool::Pools;
use crate::memory::view::NodeView;
use crate::node::state::NodeShared;
use crate::query::placement::{self, ClusterView};
use crate::replication::copies;
use crate::replication::writes::{ReplicaBook, WriteReplies};
use crate::wire::ids::NodeId;
use crate::wire::network::Network;
use actix::prelude::*;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use weir_operators::Value;
use weir_planner::{Catalog, PlanCache, QueryPlan};

/// The copies of every partition of a table, primary first (shared by the plans).
type Placement = Arc<Vec<Vec<NodeId>>>;

impl Inner {
    fn copies(&self, partitions: u32) -> Arc<Vec<Vec<NodeId>>> {
        let mut cache = self.copies.lock().unwrap_or_else(|e| e.into_inner());
        let data = self.config.nodes as u32;
        let backups = self
            .remote
            .as_ref()
            .map_or(self.config.backups, |r| r.backups.load(Ordering::SeqCst))
            .min(self.config.nodes - 1);
        cache
            .entry((partitions, backups))
            .or_insert_with(|| Arc::new(copies::copies(partitions, data, backups)))
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
        let external = |t: &str| catalog.table(t).is_some_and(|d| d.external.is_some());
        let book = self.replicas.lock().unwrap_or_else(|e| e.into_inner());
        let view = ClusterView {
            client: self.client,
            live: &live,
            names: &self.names,
            copies: &copies,
            table_partitions: &table_partitions,
            external: &external,
            stale: book.stale_copies(),
            whole_tables: &self.whole_tables,
        };
        placement::schedule(plan, params, &view)
    }
}

struct Inner {
    config: ClusterBuilder,
    /// The client node's id: the number of data nodes in process; that plus a slot when
    /// connected to data nodes in other processes (see [`remote`]).
    client: NodeId,
    /// Where the client's actors are in `addrs`, `routers` and `arbiters`.
    local: usize,
    /// The connections to data nodes in other processes, when connected.
    remote: Option<Remote>,
    /// Every node of the cluster, by id (stand-ins for nodes of other processes).
    nodes: Arc<Vec<Arc<NodeShared>>>,
    /// The actors of the nodes in this process.
    addrs: Vec<Addr<NodeActor>>,
    /// The routers of the nodes in this process.
    routers: Vec<Arc<Router>>,
    counters: Vec<Arc<NodeCounters>>,
    arbiters: Vec<ArbiterHandle>,
    names: Arc<Vec<String>>,
    network: Arc<Network>,
    /// The pools of the nodes in this process.
    pools: Arc<Pools>,
    catalog: RwLock<Catalog>,
    plans: PlanCache,
    next_query: AtomicU64,
    copies: Mutex<HashMap<(u32, usize), Placement>>,
    whole_tables: placement::WholeTableMaps,
    known_plans: Mutex<HashSet<(NodeId, u64)>>,
    max_high_water: AtomicUsize,
    down: AtomicBool,
    breaker: Arc<BreakerCounters>,
    admission: Arc<crate::memory::admission::Admission>,
    ids: Arc<AtomicU64>,
    replicas: Mutex<ReplicaBook>,
    write_replies: Arc<WriteReplies>,
    /// Held by every statement that writes, from reading the rows it changes to the end of
    /// its write, so that no other write slips in between.
    writer: Mutex<()>,
    /// Held while a schema change of this client is proposed to the data nodes' catalog log
    /// (one at a time; see [`Cluster::change_schema`]).
    schema_changes: Mutex<()>,
    /// This client's blocks of sequence values ([`sequences`]).
    sequence_blocks: Mutex<sequence_blocks::Blocks>,
    /// The highest catalog epoch a data node named in refusing a fragment of a query planned
    /// on an older catalog: the catalog is fetched again before the next statement is
    /// planned.
    catalog_behind: Arc<AtomicU64>,
    /// The schema version last logged on the client node (a cluster with a data directory).
    logged_schema: AtomicU64,
}

/// What a cluster in process and the client of node processes start [`Inner`] with; the rest
/// of it (catalog, caches, counters, replica book) starts empty the same way for both.
struct InnerParts {
    config: ClusterBuilder,
    client: NodeId,
    local: usize,
    remote: Option<Remote>,
    nodes: Vec<Arc<NodeShared>>,
    addrs: Vec<Addr<NodeActor>>,
    routers: Vec<Arc<Router>>,
    counters: Vec<Arc<NodeCounters>>,
    arbiters: Vec<ArbiterHandle>,
    names: Vec<String>,
    network: Arc<Network>,
    pools: Arc<Pools>,
    breaker: Arc<BreakerCounters>,
    /// The first query (and write) id this client hands out.
    first_id: u64,
    write_replies: Arc<WriteReplies>,
}

impl Inner {
    fn new(p: InnerParts) -> Inner {
        let nodes = Arc::new(p.nodes);
        let views: Vec<Arc<dyn NodeView>> = nodes
            .iter()
            .map(|n| n.clone() as Arc<dyn NodeView>)
            .collect();
        let admission = crate::memory::admission::Admission::new(
            Arc::new(views),
            p.config.breaker.queue,
            p.config
                .breaker
                .joins_per_node
                .unwrap_or_else(|| p.config.node_threads()),
        );
        let mut catalog = Catalog::new();
        catalog.set_data_nodes(p.config.nodes);
        catalog.set_max_recursion(p.config.max_recursion);
        Inner {
            plans: PlanCache::new(p.config.plan_cache),
            client: p.client,
            local: p.local,
            remote: p.remote,
            config: p.config,
            nodes,
            addrs: p.addrs,
            routers: p.routers,
            counters: p.counters,
            arbiters: p.arbiters,
            names: Arc::new(p.names),
            network: p.network,
            pools: p.pools,
            catalog: RwLock::new(catalog),
            next_query: AtomicU64::new(1),
            copies: Mutex::new(HashMap::new()),
            whole_tables: Default::default(),
            known_plans: Mutex::new(HashSet::new()),
            max_high_water: AtomicUsize::new(0),
            down: AtomicBool::new(false),
            breaker: p.breaker,
            admission,
            ids: Arc::new(AtomicU64::new(p.first_id)),
            replicas: Mutex::new(ReplicaBook::default()),
            write_replies: p.write_replies,
            writer: Mutex::new(()),
            schema_changes: Mutex::new(()),
            sequence_blocks: Mutex::default(),
            catalog_behind: Arc::default(),
            logged_schema: AtomicU64::new(0),
        }
    }
}

/// A cluster of data nodes plus one client node, simulated in this process, or the client
/// node of data nodes running in other processes ([`ClusterBuilder::connect`]).
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
    /// The lock on the data directory, held while the cluster runs.
    lock: Option<std::fs::File>,
}

impl Cluster {
    /// A builder with defaults: 3 data nodes, 1024 partitions, Lean protocol.
    pub fn builder() -> ClusterBuilder {
        ClusterBuilder::default()
    }

    /// Number of data nodes.
    pub fn data_nodes(&self) -> usize {
        self.inner.config.nodes
    }

    /// The configuration the cluster was built with.
    pub fn config(&self) -> &ClusterBuilder {
        &self.inner.config
    }

    /// Live actors when no query runs: a node actor and a supervisor per node (of this
    /// process: only the client's when connected to data nodes elsewhere).
    pub fn baseline_actors(&self) -> usize {
        2 * self.inner.addrs.len()
    }

    /// The client node's id.
    pub fn client_id(&self) -> NodeId {
        self.inner.client
    }

    /// Whether the data nodes run in other processes ([`ClusterBuilder::connect`]).
    pub fn is_remote(&self) -> bool {
        self.inner.remote.is_some()
    }

    fn client(&self) -> NodeId {
        self.inner.client
    }

    fn check_up(&self) -> Result<()> {
        if self.inner.down.load(Ordering::SeqCst) {
            Err(Error::Shutdown)
        } else {
            Ok(())
        }
    }

    /// The catalog's table definitions.
    pub fn tables(&self) -> Vec<weir_planner::TableDef> {
        let catalog = self.inner.catalog.read().unwrap_or_else(|e| e.into_inner());
        catalog.tables().cloned().collect()
    }

    /// Every sequence of the catalog, by name: those made by `CREATE SEQUENCE` and those of
    /// `SERIAL` and identity columns (`<table>_<column>_seq`).
    pub fn sequences(&self) -> Vec<weir_planner::NamedSequence> {
        let catalog = self.inner.catalog.read().unwrap_or_else(|e| e.into_inner());
        catalog.all_sequences()
    }

    /// The catalog's view definitions (names and queries), ordered by lowercase name.
    pub fn views(&self) -> Vec<weir_planner::ViewDef> {
        let catalog = self.inner.catalog.read().unwrap_or_else(|e| e.into_inner());
        catalog.views().cloned().collect()
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
        if let Some(remote) = &self.inner.remote {
            remote.close();
        }
        if let Some((system, thread)) = self.system.take() {
            for a in &self.inner.arbiters {
                a.stop();
            }
            system.stop();
            let _ = thread.join();
        }
        // A node's background checkpoint ends before its directory can be opened again.
        for node in self.inner.nodes.iter() {
            node.finish_checkpoint();
        }
        self.lock = None;
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop();
    }
}
