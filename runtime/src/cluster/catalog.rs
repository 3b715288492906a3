//! How a schema change is made: on the client's catalog, logged on the client node when the
//! cluster has a data directory (durably, before the statement returns), or, in a cluster of
//! processes, proposed to the data nodes' catalog log first ([`super::proposals`]); and
//! changes every node of this process makes with it (DDL on the stored tables).

use super::Cluster;
use crate::error::{Error, Result};
use crate::node::storage::Change;
use crate::replication::catalog_bytes::encode_catalog;
use std::sync::atomic::Ordering;
use weir_planner::Catalog;

impl Cluster {
    /// Makes a schema change. `change` edits a catalog and returns what the statement
    /// learns from it, or `None` when there is nothing to change (`IF EXISTS` of something
    /// absent); `effects` then makes what goes with it on the nodes of this process.
    ///
    /// In process, both run under the catalog's write lock and the catalog is logged on the
    /// client node (with a data directory). Connected to data nodes of other processes,
    /// `change` edits a copy of the client's catalog, the copy is proposed to the catalog log
    /// (refused with [`Error::CatalogChanged`] when another client changed it first), and
    /// only once the log took it is `change` made on the client's catalog (unless the client
    /// learnt the log's newer catalog meanwhile) and `effects` run: queries and the rejoin of
    /// a node that came back do not wait while the log decides. One schema change of a
    /// client is proposed at a time.
    pub(super) fn change_schema<T>(
        &self,
        change: impl Fn(&mut Catalog) -> Result<Option<T>>,
        effects: impl FnOnce(&T) -> Result<()>,
    ) -> Result<Option<T>> {
        let inner = &self.inner;
        let Some(remote) = inner.remote.as_ref() else {
            let mut catalog = inner.catalog.write().unwrap_or_else(|e| e.into_inner());
            let Some(out) = change(&mut catalog)? else {
                return Ok(None);
            };
            effects(&out)?;
            self.log_schema(&catalog)?;
            return Ok(Some(out));
        };
        let _one = inner
            .schema_changes
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let (mut draft, expected) = {
            let catalog = inner.catalog.read().unwrap_or_else(|e| e.into_inner());
            (catalog.clone(), remote.epoch.load(Ordering::SeqCst))
        };
        let Some(out) = change(&mut draft)? else {
            return Ok(None);
        };
        let epoch = inner.propose_schema(&draft, expected)?;
        let mut catalog = inner.catalog.write().unwrap_or_else(|e| e.into_inner());
        // A catalog learnt meanwhile at this epoch or later holds the change already.
        if remote.epoch.load(Ordering::SeqCst) < epoch {
            change(&mut catalog)?;
            remote.epoch.store(epoch, Ordering::SeqCst);
        }
        effects(&out)?;
        self.log_schema(&catalog)?;
        Ok(Some(out))
    }

    /// Logs `catalog` on the client node after a schema change (a cluster with a data
    /// directory; once per schema version).
    fn log_schema(&self, catalog: &Catalog) -> Result<()> {
        if self
            .inner
            .logged_schema
            .swap(catalog.version(), Ordering::SeqCst)
            != catalog.version()
        {
            self.log_catalog(catalog)?;
        }
        Ok(())
    }

    /// Logs `catalog` on the client node, durably (a cluster with a data directory; else
    /// nothing): after a schema change, or a sequence's reservation.
    pub(super) fn log_catalog(&self, catalog: &Catalog) -> Result<()> {
        let client = &self.inner.nodes[self.client() as usize];
        if client.journal.is_none() {
            return Ok(());
        }
        let change = Change::Catalog {
            epoch: catalog.version(),
            catalog: encode_catalog(&catalog.snapshot()),
        };
        client.change_durably(change).map_err(|e| Error::Disk {
            node: client.name.clone(),
            message: e.to_string(),
        })
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
