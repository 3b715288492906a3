//! The client's side of the connections to data nodes in other processes: what a client of
//! `weir node` processes holds (see [`super::remote`] for what it does with it).

use crate::replication::membership::Membership;
use crate::wire::ids::NodeId;
use crate::wire::tcp::TcpTransport;
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

/// One lost copy: node, table, partition (see `super::lost`).
pub(super) type LostCopy = (NodeId, String, u32);

/// The client's side of the connections to data nodes in other processes.
pub struct Remote {
    /// The client's TCP endpoint.
    pub(super) transport: Arc<TcpTransport>,
    /// Catalog replies and resync answers waited for.
    pub(super) membership: Arc<Membership>,
    /// Where each data node listens, by node id.
    pub(super) addrs: Vec<SocketAddr>,
    /// Epoch of the newest catalog this client had accepted by the catalog log or fetched.
    pub(super) epoch: AtomicU64,
    /// The data node the client last found leading the catalog log.
    pub(super) leader: AtomicU32,
    /// Set when the client shuts down: the watcher ends.
    pub(super) stop: Arc<AtomicBool>,
    /// The thread that watches the connections (see [`super::remote`]).
    pub(super) watcher: Mutex<Option<JoinHandle<()>>>,
    /// The copies lost by data nodes that started without their data or that missed writes,
    /// as last learnt from the catalog log ([`super::lost`]), with when this client first
    /// knew each of them (a write that misses one is acknowledged no sooner than
    /// [`crate::replication::catalog_log::lease::MISSED_ACK_DELAY`] after).
    pub(super) lost: Mutex<HashMap<LostCopy, Instant>>,
    /// The backups per partition: the builder's until the catalog log names the cluster's
    /// (fixed by the first schema change of any client).
    pub(super) backups: AtomicUsize,
    /// The incarnation of every data node that started without its data, as learnt from it
    /// (sent with the first writes, [`crate::wire::messages::Proposal::Written`]).
    pub(super) incarnations: Mutex<BTreeMap<NodeId, u64>>,
    /// The highest index of the catalog log a data node reported applied or decided (sent
    /// with every `Join`, [`crate::wire::messages::Join::log_index`]).
    pub(super) log_index: AtomicU64,
}

impl Remote {
    /// Closes the connections and stops watching them.
    pub(super) fn close(&self) {
        self.stop.store(true, Ordering::SeqCst);
        self.transport.close();
        let watcher = self
            .watcher
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(w) = watcher.filter(|w| w.thread().id() != std::thread::current().id()) {
            let _ = w.join();
        }
    }

    /// The client's TCP endpoint (wire counters, connections).
    pub fn transport(&self) -> &Arc<TcpTransport> {
        &self.transport
    }
}
