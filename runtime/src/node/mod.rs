//! Per-node state shared between the node's actors and the client API: identity, stored
//! partitions, memory pool and live-actor count; and the handle actors use to reach their node.

pub mod inbox;

use crate::dispatch::node_actor::NodeActor;
use crate::memory::pool::NodePool;
use crate::memory::supervisor::{RunningJoins, SupervisorActor};
use crate::node::inbox::LocalMessage;
use crate::wire::messages::{NetMessage, NodeId};
use crate::wire::network::Network;
use actix::Addr;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use weir_operators::table_store::TableStore;
use weir_operators::Reservation;

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

/// What an actor needs to talk to its node and to other nodes.
#[derive(Clone)]
pub struct NodeHandle {
    /// The node's state.
    pub shared: Arc<NodeShared>,
    /// The node's actor (message router).
    pub addr: Addr<NodeActor>,
    /// The network.
    pub network: Arc<Network>,
    /// The node's memory circuit breaker.
    pub supervisor: Addr<SupervisorActor>,
}

impl NodeHandle {
    /// This node's id.
    pub fn id(&self) -> NodeId {
        self.shared.id
    }

    /// Sends a protocol message to node `to`: moved when `to` is this node, serialized over
    /// the network otherwise.
    pub fn send(&self, to: NodeId, msg: NetMessage) {
        self.send_with(to, msg, None);
    }

    /// [`NodeHandle::send`] with a batch's reservation on node `to`, which travels with the
    /// message (see [`Network::send_with`]).
    pub fn send_with(&self, to: NodeId, msg: NetMessage, mem: Option<Reservation>) {
        if to == self.id() {
            self.addr.do_send(LocalMessage { from: to, msg, mem });
        } else {
            self.network.send_with(self.id(), to, &msg, mem);
        }
    }
}
