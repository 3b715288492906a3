//! Where the catalog goes after a schema change: to the client node's log when the cluster has
//! a data directory (durably, before the statement returns), and to the data nodes' catalog
//! log in a cluster of processes ([`super::proposals`]); and changes every node of this
//! process makes with it (DDL on the stored tables).

use super::Cluster;
use crate::error::{Error, Result};
use crate::node::storage::Change;
use crate::replication::catalog_bytes::encode_catalog;
use std::sync::atomic::Ordering;
use weir_planner::Catalog;

impl Cluster {
    /// Publishes `catalog` after a schema change: it is proposed to the data nodes' catalog
    /// log (a connected cluster: refused with [`Error::CatalogChanged`] when another client
    /// changed the catalog first, `catalog` then being the log's), and logged on the client
    /// node (with a data directory).
    pub(super) fn publish(&self, catalog: &mut Catalog) -> Result<()> {
        if self.inner.remote.is_some() {
            self.inner.propose_catalog(catalog)?;
        }
        let client = &self.inner.nodes[self.client() as usize];
        if client.journal.is_some()
            && self
                .inner
                .logged_schema
                .swap(catalog.version(), Ordering::SeqCst)
                != catalog.version()
        {
            let change = Change::Catalog {
                epoch: catalog.version(),
                catalog: encode_catalog(&catalog.snapshot()),
            };
            client.change_durably(change).map_err(|e| Error::Disk {
                node: client.name.clone(),
                message: e.to_string(),
            })?;
        }
        Ok(())
    }

    /// Makes `change` on every node of this process, durably (DDL on the stored tables).
    pub(super) fn change_every_node(&self, change: Change) -> Result<()> {
        for node in self.inner.nodes.iter() {
            node.change_durably(change.clone())
                .map_err(|e| Error::Disk {
                    node: node.name.clone(),
                    message: e.to_string(),
                })?;
        }
        Ok(())
    }
}
