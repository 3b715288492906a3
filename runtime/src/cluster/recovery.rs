//! Crashes, restarts and faults: crashing and restarting nodes (a restart repairs stale
//! copies before the node serves), injecting network faults, memory pressure from outside,
//! and looking at copies for tests of replication.

use super::Cluster;
use crate::dispatch::node_actor::NodeActor;
use crate::error::{Error, Result};
use crate::node::inbox::NodeMsg;
use crate::replication::writes;
use crate::wire::ids::NodeId;
use actix::prelude::*;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use weir_operators::Value;

impl Cluster {
    /// Writes a checkpoint of every node of this process that has a data directory, now: its
    /// partitions as files, and the log behind them removed. Nodes also do this by themselves
    /// as their logs grow ([`crate::ClusterBuilder::checkpoint_bytes`]); a checkpoint before
    /// copying a data directory makes the copy quick to start from.
    pub fn checkpoint(&self) -> Result<()> {
        for node in self.inner.nodes.iter() {
            node.checkpoint().map_err(|e| Error::Disk {
                node: node.name.clone(),
                message: e.to_string(),
            })?;
        }
        Ok(())
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
            writes::repair(&mut book, &self.inner.nodes, Some(i as NodeId), &tables);
        }
        addr.do_send(NodeMsg::Restart);
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

    pub(super) fn node_addr(&self, i: usize) -> Result<&Addr<NodeActor>> {
        self.local_node(i)?;
        self.inner
            .addrs
            .get(i)
            .ok_or_else(|| Error::Invalid(format!("no node {i}")))
    }

    /// Fails when node `i` runs in another process: what is asked of it cannot be done
    /// from here (its process is crashed, restarted or loaded by other means).
    fn local_node(&self, i: usize) -> Result<()> {
        if self.inner.remote.is_some() && i != self.inner.client as usize {
            return Err(Error::Invalid(format!(
                "node {i} runs in another process: stop or start its process instead"
            )));
        }
        Ok(())
    }

    /// The version of node `i`'s copy of `table`'s partition `p`, and whether the cluster
    /// counts it current (for tests of replication). `None` for a node of another process.
    pub fn copy_version(&self, i: usize, table: &str, p: u32) -> Option<(u64, bool)> {
        self.local_node(i).ok()?;
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
    /// replication. None for a node of another process.
    pub fn stored_rows(&self, i: usize, table: &str) -> Vec<Vec<Value>> {
        if self.local_node(i).is_err() {
            return Vec::new();
        }
        let Some(node) = self.inner.nodes.get(i) else {
            return Vec::new();
        };
        let storage = node.storage.read().unwrap_or_else(|e| e.into_inner());
        let mut rows = Vec::new();
        if let Some(store) = storage.tables.get(&table.to_lowercase()) {
            for (_, part) in store.partitions() {
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
        addr.do_send(NodeMsg::Crash {
            out_of_memory: false,
        });
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.inner.nodes[i].up.load(Ordering::SeqCst) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(())
    }

    /// Injects network faults from now on (`None` heals the network).
    pub fn set_faults(&self, plan: Option<crate::wire::faults::FaultPlan>) {
        self.inner.network.set_faults(plan);
    }

    /// Holds `bytes` of node `i`'s memory until the returned reservation is dropped: memory
    /// pressure from outside weir (and a way to exercise the breaker in tests). It is never
    /// refused, so it is the one thing that can push a node past its budget, in either mode
    /// (a Legacy node then runs out of memory; a Guarded one refuses all other growth until
    /// it is released).
    pub fn hold_memory(&self, i: usize, bytes: usize) -> Result<weir_operators::Reservation> {
        self.local_node(i)?;
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
}
