//! Where the catalog goes after a change: to the client node's log when the cluster has a data
//! directory (a new schema, durably, before the statement returns), and to every data node of
//! a cluster of processes; and changes every node of this process makes with it (DDL on the
//! stored tables).

use super::Cluster;
use crate::error::{Error, Result};
use crate::node::storage::Change;
use crate::replication::membership::{catalog_put, encode_catalog};
use crate::wire::ids::NodeId;
use crate::wire::messages::NetMessage;
use std::sync::atomic::Ordering;
use weir_planner::Catalog;

impl Cluster {
    /// Publishes `catalog` after a change: a new schema is logged on the client node (with a
    /// data directory), and the catalog is sent to every data node that is up (a connected
    /// cluster).
    pub(super) fn publish(&self, catalog: &Catalog) -> Result<()> {
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
        if let Some(remote) = &self.inner.remote {
            let epoch = remote.epoch.fetch_add(1, Ordering::SeqCst) + 1;
            let put = catalog_put(epoch, &catalog.snapshot());
            for i in 0..self.inner.config.nodes {
                if self.inner.nodes[i].up.load(Ordering::SeqCst) {
                    let msg = NetMessage::CatalogPut(Box::new(put.clone()));
                    self.inner
                        .network
                        .send(self.inner.client, i as NodeId, &msg);
                }
            }
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
