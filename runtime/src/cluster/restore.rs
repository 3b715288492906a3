//! A cluster started on a data directory: each node's storage read back from its own
//! directory, then what only the whole cluster can decide: writes that were prepared and not
//! decided when the cluster stopped (committed if any node committed them, aborted
//! otherwise), the catalog (from the client node's log), the row counts, and the copies'
//! versions (a copy behind the newest of its partition is stale until repaired).

use super::builder::ClusterBuilder;
use super::Cluster;
use crate::error::{Error, Result};
use crate::node::state::NodeShared;
use crate::node::storage::Change;
use crate::replication::catalog_bytes::decode_catalog;
use crate::replication::writes;
use crate::wire::ids::NodeId;
use std::collections::HashSet;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::Arc;
use weir_planner::Catalog;

/// The file that records the cluster's shape in its data directory.
const SHAPE_FILE: &str = "weir-cluster";

/// Locks the data directory, if any, for this cluster, and checks that it was made for a
/// cluster of this many data nodes (recording it in a new one). The lock is held as long as
/// the returned file is open: a second cluster (or process) on the same directory is refused.
pub(super) fn lock_data_dir(config: &ClusterBuilder) -> Result<Option<std::fs::File>> {
    match &config.data_dir {
        Some(dir) => lock_dir(dir, &format!("data nodes {}", config.nodes)).map(Some),
        None => Ok(None),
    }
}

/// Locks directory `dir` for one cluster or node, whose shape is `shape` (one line): a
/// directory in use, or made for another shape, is refused.
pub(super) fn lock_dir(dir: &Path, shape: &str) -> Result<std::fs::File> {
    let path = dir.join(SHAPE_FILE);
    let disk_error = |what: &str, e: std::io::Error| Error::Disk {
        node: "client".into(),
        message: format!("cannot {what} {}: {e}", path.display()),
    };
    std::fs::create_dir_all(dir).map_err(|e| disk_error("create the directory of", e))?;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| disk_error("open", e))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            return Err(Error::Invalid(format!(
                "{} is in use by another cluster or node",
                dir.display()
            )))
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(disk_error("lock", e)),
    }
    let shape = format!("{shape}\n");
    let mut found = String::new();
    file.read_to_string(&mut found)
        .map_err(|e| disk_error("read", e))?;
    if found.is_empty() {
        file.write_all(shape.as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(|e| disk_error("write", e))?;
    } else if found != shape {
        return Err(Error::Invalid(format!(
            "{} holds data of another shape ({}), not of {}",
            dir.display(),
            found.trim(),
            shape.trim()
        )));
    }
    Ok(file)
}

/// Node `id` named `name`: read back from its directory under the data directory, or new and
/// in memory without one.
pub(super) fn open_node(
    config: &ClusterBuilder,
    id: NodeId,
    name: &str,
    is_data: bool,
) -> Result<NodeShared> {
    let spill = config.spill_space(name)?;
    let Some(journal) = config.journal_config(name) else {
        let mut node = NodeShared::new(
            id,
            name,
            is_data,
            config.node_memory,
            config.join_mode,
            &config.breaker,
        );
        node.spill = spill;
        node.join_filters = config.join_filters.into();
        return Ok(node);
    };
    let (mut node, recovery) = NodeShared::open(
        id,
        name,
        is_data,
        config.node_memory,
        config.join_mode,
        &config.breaker,
        &journal,
    )
    .map_err(|e| Error::Disk {
        node: name.to_string(),
        message: e.to_string(),
    })?;
    node.spill = spill;
    node.join_filters = config.join_filters.into();
    if recovery.records > 0 || recovery.checkpoint_bytes > 0 {
        tracing::info!(
            node = name,
            checkpoint_bytes = recovery.checkpoint_bytes,
            records = recovery.records,
            refused = recovery.refused,
            ms = recovery.took.as_millis() as u64,
            "recovered from the data directory"
        );
    }
    Ok(node)
}

impl Cluster {
    /// Decides what the nodes read back left open, and takes the catalog, row counts and
    /// copies' versions from them (see the module docs). A no-op without a data directory.
    pub(super) fn restore(&self) -> Result<()> {
        if self.inner.config.data_dir.is_none() {
            return Ok(());
        }
        let nodes: &[Arc<NodeShared>] = &self.inner.nodes;
        // New writes take ids above every one the nodes remember.
        let last = nodes
            .iter()
            .map(|n| {
                n.storage
                    .read()
                    .unwrap_or_else(|e| e.into_inner())
                    .last_write_id()
            })
            .max()
            .unwrap_or(0);
        self.inner
            .ids
            .fetch_max(last + 1, std::sync::atomic::Ordering::SeqCst);
        self.decide_in_doubt(nodes)?;
        let client = &nodes[self.client() as usize];
        let snapshot = {
            let storage = client.storage.read().unwrap_or_else(|e| e.into_inner());
            match storage.catalog() {
                Some((_, bytes)) => Some(decode_catalog(bytes).map_err(|e| Error::Disk {
                    node: client.name.clone(),
                    message: format!("its catalog does not read back: {e}"),
                })?),
                None => None,
            }
        };
        let Some(snapshot) = snapshot else {
            return Ok(());
        };
        let mut catalog = self
            .inner
            .catalog
            .write()
            .unwrap_or_else(|e| e.into_inner());
        let version = snapshot.version;
        *catalog = Catalog::from_snapshot(snapshot, version);
        catalog.set_data_nodes(self.inner.config.nodes);
        catalog.set_max_recursion(self.inner.config.max_recursion);
        self.inner
            .logged_schema
            .store(catalog.version(), std::sync::atomic::Ordering::SeqCst);
        let mut book = self
            .inner
            .replicas
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let mut tables = Vec::new();
        let defs: Vec<(String, u32)> = catalog
            .tables()
            .map(|d| (d.name.clone(), d.partitions))
            .collect();
        for (name, partitions) in defs {
            let table = name.to_lowercase();
            let copies = self.inner.copies(partitions);
            let mut rows = 0u64;
            for (p, holders) in copies.iter().enumerate() {
                let p = p as u32;
                let held: Vec<(NodeId, u64, usize)> = holders
                    .iter()
                    .map(|&n| {
                        let storage = nodes[n as usize]
                            .storage
                            .read()
                            .unwrap_or_else(|e| e.into_inner());
                        let version = storage.version(&table, p);
                        let count = storage
                            .tables
                            .get(&table)
                            .and_then(|t| t.get(p))
                            .map_or(0, |part| part.num_rows());
                        (n, version, count)
                    })
                    .collect();
                let newest = held.iter().map(|h| h.1).max().unwrap_or(0);
                book.set_committed(&table, p, newest);
                for &(n, version, _) in &held {
                    book.mark_stale(&table, p, n, version < newest);
                }
                rows += held
                    .iter()
                    .find(|h| h.1 == newest)
                    .map_or(0, |h| h.2 as u64);
            }
            catalog.set_row_count(&name, rows);
            tables.push((table, copies));
        }
        // Copies left behind (a node that stopped in the middle of a write's commit) are
        // brought up to date from a current copy.
        writes::repair(&mut book, nodes, None, &tables);
        Ok(())
    }

    /// Commits on every node the writes some node committed, and aborts the others left
    /// prepared.
    fn decide_in_doubt(&self, nodes: &[Arc<NodeShared>]) -> Result<()> {
        let in_doubt: Vec<(usize, Vec<u64>)> = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let storage = n.storage.read().unwrap_or_else(|e| e.into_inner());
                (i, storage.prepared().map(|w| w.write).collect())
            })
            .collect();
        let committed: HashSet<u64> = in_doubt
            .iter()
            .flat_map(|(_, writes)| writes.iter().copied())
            .filter(|&w| {
                nodes.iter().any(|n| {
                    n.storage
                        .read()
                        .unwrap_or_else(|e| e.into_inner())
                        .is_committed(w)
                })
            })
            .collect();
        for (i, writes) in in_doubt {
            for write in writes {
                let change = if committed.contains(&write) {
                    Change::Committed { write }
                } else {
                    Change::Aborted { write }
                };
                nodes[i].change_durably(change).map_err(|e| Error::Disk {
                    node: nodes[i].name.clone(),
                    message: e.to_string(),
                })?;
            }
        }
        Ok(())
    }
}
