//! The write path: rows of a load or INSERT are checked, assigned to partitions (by key, or
//! by hidden row id for tables without one) and replicated to every copy through
//! [`crate::replication`].

use super::Cluster;
use crate::error::{Error, Result};
use crate::messages::TableLayout;
use crate::replication::Coordinator;
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use weir_operators::storage::assign_partitions;
use weir_operators::Batch;

impl Cluster {
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
        for &c in &def.not_null {
            if batch.column(c).null_count() > 0 {
                return Err(Error::Plan(weir_planner::PlanError::Invalid(format!(
                    "column '{}' of table '{}' is NOT NULL and cannot take NULL",
                    def.schema.fields[c].name, def.name
                ))));
            }
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

    pub(super) fn coordinator(&self) -> Coordinator<'_> {
        Coordinator {
            network: &self.inner.network,
            client: self.client(),
            nodes: &self.inner.nodes,
            names: &self.inner.names,
            replies: &self.inner.write_replies,
            timeout: self.inner.config.query_timeout,
        }
    }
}
