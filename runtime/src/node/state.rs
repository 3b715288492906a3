//! Per-node state shared between the node's actors and the client API: identity, stored
//! partitions and their versions, memory pool, running joins and live-actor count.

use crate::memory::breaker::{BreakerConfig, JoinMode};
use crate::memory::joins::RunningJoins;
use crate::memory::pool::NodePool;
use crate::memory::view::NodeView;
use crate::wire::ids::NodeId;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use weir_operators::table_store::TableStore;

/// The partitions of every table that a node stores.
#[derive(Debug, Default)]
pub struct NodeStorage {
    /// Table name (lowercase) → its partitions stored here, with their node-wide indexes.
    pub tables: HashMap<String, TableStore>,
    /// Table name (lowercase) → partition id → version of this copy: the write sequence
    /// number of the last write it applied (see [`crate::replication::writes`]).
    versions: HashMap<String, HashMap<u32, u64>>,
}

impl NodeStorage {
    /// The version of this node's copy of `table`'s partition `p` (0 before any write).
    pub fn version(&self, table: &str, p: u32) -> u64 {
        self.versions
            .get(table)
            .and_then(|t| t.get(&p))
            .copied()
            .unwrap_or(0)
    }

    /// Sets the version of this node's copy of `table`'s partition `p`.
    pub fn set_version(&mut self, table: &str, p: u32, version: u64) {
        self.versions
            .entry(table.to_string())
            .or_default()
            .insert(p, version);
    }

    /// The versions of every copy this node holds, by table.
    pub fn versions(&self) -> impl Iterator<Item = (&str, &HashMap<u32, u64>)> {
        self.versions.iter().map(|(t, v)| (t.as_str(), v))
    }

    /// Forgets a dropped table's rows and versions.
    pub fn drop_table(&mut self, table: &str) {
        self.tables.remove(table);
        self.versions.remove(table);
    }
}

/// State of one node, shared by its actors and the cluster handle.
#[derive(Debug)]
pub struct NodeShared {
    /// Node index.
    pub id: NodeId,
    /// Display name (`node-0`, ..., `client`).
    pub name: String,
    /// Whether the node holds data.
    pub is_data: bool,
    /// Stored partitions.
    pub storage: RwLock<NodeStorage>,
    /// Accounted memory.
    pub pool: Arc<NodePool>,
    /// Actors alive on the node now.
    pub live_actors: AtomicUsize,
    /// Whether the node is up.
    pub up: AtomicBool,
    /// Highest high-water mark of any edge of a finished fragment on this node.
    pub edge_high_water: AtomicUsize,
    /// The hash joins running on the node under its memory circuit breaker.
    pub joins: RunningJoins,
}

impl NodeShared {
    /// The state of node `id` named `name` as it starts: up, empty, with a pool of `budget`
    /// bytes under `mode` and `breaker`.
    pub fn new(
        id: NodeId,
        name: &str,
        is_data: bool,
        budget: usize,
        mode: JoinMode,
        breaker: &BreakerConfig,
    ) -> Self {
        NodeShared {
            id,
            name: name.to_string(),
            is_data,
            storage: RwLock::new(NodeStorage::default()),
            pool: NodePool::new(name.to_string(), budget, mode, breaker),
            live_actors: AtomicUsize::new(0),
            up: AtomicBool::new(true),
            edge_high_water: AtomicUsize::new(0),
            joins: RunningJoins::default(),
        }
    }

    /// Whether the node is up.
    pub fn is_up(&self) -> bool {
        self.up.load(Ordering::SeqCst)
    }

    /// Live actors now.
    pub fn live(&self) -> usize {
        self.live_actors.load(Ordering::SeqCst)
    }
}

/// Counts an actor as alive on its node from creation until it is dropped.
#[derive(Debug)]
pub struct LiveGuard(Arc<NodeShared>);

impl LiveGuard {
    /// Counts one more live actor on `node`.
    pub fn new(node: &Arc<NodeShared>) -> Self {
        node.live_actors.fetch_add(1, Ordering::SeqCst);
        LiveGuard(node.clone())
    }
}

impl Drop for LiveGuard {
    fn drop(&mut self) {
        self.0.live_actors.fetch_sub(1, Ordering::SeqCst);
    }
}

impl NodeView for NodeShared {
    fn id(&self) -> NodeId {
        self.id
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn pool(&self) -> &Arc<NodePool> {
        &self.pool
    }

    fn joins(&self) -> &RunningJoins {
        &self.joins
    }

    fn is_up(&self) -> bool {
        NodeShared::is_up(self)
    }
}
