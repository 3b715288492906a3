//! The write path: rows of a load or INSERT are checked (NOT NULL columns, unique indexes:
//! `super::unique`, foreign keys: `super::references`), assigned to partitions (by key, or
//! by hidden row id for tables without one) and replicated to every copy through
//! [`crate::replication::writes`]; UPDATE and DELETE run their query for the affected rows, then
//! write deletes (by key) and inserts the same way, or, for a table without a key, rewrite
//! whole rows in every partition.

use super::cascade::TableEffect;
use super::not_null::check_not_null;
use super::Cluster;
use crate::error::{Error, Result};
use crate::replication::multi_table::TableWrite;
use crate::replication::writes::{Coordinator, WriteRecords};
use crate::wire::messages::{PartitionWrite, Rewrite, TableLayout};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard};
use weir_operators::placement::assign_partitions;
use weir_operators::Batch;
use weir_planner::{PlanError, QueryPlan, TableDef};

/// One table's share of a statement that writes several tables
/// ([`Cluster::write_tables`]).
pub(super) struct TableRows {
    /// The table.
    pub table: String,
    /// The identities ([`weir_planner::identity_columns`]) of the rows it deletes.
    pub deleted: Batch,
    /// The identities of the rows it changes, and their new values (all columns).
    pub changed: Option<(Batch, Batch)>,
}

/// What a write does to each partition, before versions are assigned.
#[derive(Default)]
struct Changes {
    /// Per partition: (keys to delete, rows to insert).
    parts: BTreeMap<u32, (Vec<Batch>, Vec<Batch>)>,
}

impl Changes {
    /// Groups the rows of `batch` by the partitions `of_row` gives them.
    fn split(batch: &Batch, of_row: &[u32]) -> Vec<(u32, Batch)> {
        let mut by_partition: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for (row, p) in of_row.iter().enumerate() {
            by_partition.entry(*p).or_default().push(row as u32);
        }
        by_partition
            .into_iter()
            .map(|(p, idx)| {
                let rows = if idx.len() == batch.num_rows() {
                    batch.clone()
                } else {
                    batch.take(&idx)
                };
                (p, rows)
            })
            .collect()
    }

    /// Adds to the write, unchanged, the partition each unique index's values of the rows
    /// it inserts hash to (rows with a NULL in them clash with none). Clients in other
    /// processes check unique indexes each on its own; two writes of equal values then meet
    /// on that partition, whose copies take one undecided write at a time and each at the
    /// version after their own: the second is refused as a conflict, and checked again
    /// once the first is decided. (A write that rewrites every partition meets any other.)
    fn guard_unique_values(&mut self, def: &TableDef) -> Result<()> {
        let mut guards = std::collections::BTreeSet::new();
        let mut of_row = Vec::new();
        for index in def.indexes.iter().filter(|i| i.unique) {
            let columns = index.columns();
            for (_, inserts) in self.parts.values() {
                for batch in inserts {
                    assign_partitions(batch, &columns, 0, def.partitions, &mut of_row)
                        .map_err(|e| Error::from_storage(&def.name, e))?;
                    for (row, &p) in of_row.iter().enumerate() {
                        if columns.iter().all(|&c| !batch.column(c).is_null(row)) {
                            guards.insert(p);
                        }
                    }
                }
            }
        }
        for p in guards {
            self.parts.entry(p).or_default();
        }
        Ok(())
    }

    /// Deletes the rows of keyed table `def` whose keys are `keys` (its key columns, in key
    /// order), in the partitions owning them.
    fn delete_keys(&mut self, def: &TableDef, keys: &Batch) -> Result<()> {
        let cols: Vec<usize> = (0..def.primary_key.len()).collect();
        let mut of_row = Vec::with_capacity(keys.num_rows());
        assign_partitions(keys, &cols, 0, def.partitions, &mut of_row)
            .map_err(|e| Error::from_storage(&def.name, e))?;
        for (p, keys) in Changes::split(keys, &of_row) {
            self.parts.entry(p).or_default().0.push(keys);
        }
        Ok(())
    }

    /// Inserts `rows` (full rows of keyed table `def`) into the partitions their keys hash
    /// to.
    fn insert_keyed(&mut self, def: &TableDef, rows: &Batch) -> Result<()> {
        let mut of_row = Vec::with_capacity(rows.num_rows());
        assign_partitions(rows, &def.primary_key, 0, def.partitions, &mut of_row)
            .map_err(|e| Error::from_storage(&def.name, e))?;
        for (p, part) in Changes::split(rows, &of_row) {
            self.parts.entry(p).or_default().1.push(part);
        }
        Ok(())
    }

    fn into_writes(self, def: &TableDef) -> Result<Vec<PartitionWrite>> {
        let types = def.schema.types();
        let concat = |mut b: Vec<Batch>| -> Result<Option<Batch>> {
            Ok(match b.len() {
                0 => None,
                1 => b.pop(),
                _ => Some(Batch::concat(&b).map_err(|e| Error::Invalid(e.to_string()))?),
            })
        };
        let mut out = Vec::with_capacity(self.parts.len());
        for (p, (delete, insert)) in self.parts {
            out.push(PartitionWrite {
                partition: p,
                version: 0,
                delete: concat(delete)?,
                insert: concat(insert)?.unwrap_or_else(|| Batch::empty(&types)),
            });
        }
        Ok(out)
    }
}

impl Cluster {
    /// Bulk-loads rows into `table`. The batch must have the table's column types, in order.
    /// All or nothing: a NULL or duplicate primary key rejects the whole batch
    /// ([`Error::NullKey`], [`Error::DuplicateKey`]). A table without a primary key keeps
    /// every row; its rows are placed by hidden row ids.
    pub fn load(&self, table: &str, batch: Batch) -> Result<usize> {
        let loaded = {
            let _writing = self.writing();
            self.load_locked(table, batch)
        };
        super::lost::hold_acknowledgement();
        loaded
    }

    /// Holds the write lock (see `Inner::writer`).
    pub(super) fn writing(&self) -> MutexGuard<'_, ()> {
        self.inner.writer.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// [`Cluster::load`], with the write lock held.
    pub(super) fn load_locked(&self, table: &str, batch: Batch) -> Result<usize> {
        self.load_all_locked(table, vec![batch])
    }

    /// Loads several batches into `table` as one write, all or nothing (a COPY's batches),
    /// with the write lock held.
    pub(super) fn load_all_locked(&self, table: &str, batches: Vec<Batch>) -> Result<usize> {
        self.check_up()?;
        self.check_unique_of(table, &batches)?;
        self.check_references_of(table, &batches)?;
        let mut catalog = self
            .inner
            .catalog
            .write()
            .unwrap_or_else(|e| e.into_inner());
        let def = catalog
            .table(table)
            .cloned()
            .ok_or_else(|| Error::Plan(PlanError::UnknownTable(table.into())))?;
        def.refuse_external("loading rows into it")?;
        let mut changes = Changes::default();
        let mut rows = 0;
        let mut parts_of_row = Vec::new();
        for batch in batches {
            if batch.types() != def.schema.types() {
                return Err(Error::Invalid(format!(
                    "rows for '{}' must have types {:?}, got {:?}",
                    def.name,
                    def.schema.types(),
                    batch.types()
                )));
            }
            check_not_null(&def, &batch)?;
            let n = batch.num_rows();
            parts_of_row.clear();
            let first_row_id = catalog.reserve_row_ids(&def.name, n as u64);
            assign_partitions(
                &batch,
                &def.primary_key,
                first_row_id,
                def.partitions,
                &mut parts_of_row,
            )
            .map_err(|e| Error::from_storage(&def.name, e))?;
            for (p, part) in Changes::split(&batch, &parts_of_row) {
                changes.parts.entry(p).or_default().1.push(part);
            }
            rows += n;
        }
        self.write_changes(&def, changes, None)?;
        let before = catalog.row_count(&def.name);
        catalog.set_row_count(&def.name, before + rows as u64);
        Ok(rows)
    }

    /// Runs a DELETE's `query` (the identity of every row to delete; with `whole`, followed
    /// by the whole row) and deletes the rows, all or nothing. Returns the number of rows
    /// deleted and, with `whole`, the rows as they were.
    pub(super) fn delete_rows(
        &self,
        table: &str,
        query: QueryPlan,
        whole: bool,
    ) -> Result<(u64, Option<Batch>)> {
        let _writing = self.writing();
        let Some(rows) = self.rows_of(query)? else {
            return Ok((0, None));
        };
        let n = rows.num_rows();
        let (ids, deleted) = if whole {
            let columns = self.table_schema(table)?.len();
            let k = rows.num_columns().saturating_sub(columns);
            let ids = rows.project(&(0..k).collect::<Vec<_>>());
            (
                ids,
                Some(rows.project(&(k..rows.num_columns()).collect::<Vec<_>>())),
            )
        } else {
            (rows, None)
        };
        let def = self.table_def(table)?;
        if self.deletes_act(&def) {
            let effects = self.delete_effects(&def, &ids)?;
            self.write_effects(effects)?;
            return Ok((n as u64, deleted));
        }
        self.check_not_referenced(&def, &ids, None)?;
        self.change(table, n, |def, changes| {
            if def.has_key() {
                changes.delete_keys(def, &ids)?;
                Ok(None)
            } else {
                Ok(Some(Rewrite {
                    old: ids,
                    new: None,
                }))
            }
        })?;
        Ok((n as u64, deleted))
    }

    /// Runs an UPDATE's `query` (per row: its identity, then its new values) and writes the
    /// changes, all or nothing. A row whose key changes moves to its new key's partition.
    /// Foreign keys are checked where the UPDATE `assigned` one of their columns.
    /// Returns the number of rows updated and, with `new_rows`, their new values.
    pub(super) fn update_rows(
        &self,
        table: &str,
        query: QueryPlan,
        new_rows: bool,
        assigned: &[usize],
    ) -> Result<(u64, Option<Batch>)> {
        let _writing = self.writing();
        let Some(rows) = self.rows_of(query)? else {
            return Ok((0, None));
        };
        let updated = if new_rows {
            // The new values are the last of each row's columns, one per table column.
            let columns = self.table_schema(table)?.len();
            let k = rows.num_columns().saturating_sub(columns);
            Some(rows.project(&(k..rows.num_columns()).collect::<Vec<_>>()))
        } else {
            None
        };
        let n = rows.num_rows();
        self.check_updated_once(table, &rows)?;
        // The new rows are checked against the table's unique indexes and foreign keys (a
        // key none of whose columns the UPDATE assigns keeps its values, and is not).
        let def = self.table_def(table)?;
        let id_len = weir_planner::identity_columns(&def).len();
        let ids = rows.project(&(0..id_len).collect::<Vec<_>>());
        let new = rows.project(&(id_len..rows.num_columns()).collect::<Vec<_>>());
        if new.types() == def.schema.types() {
            self.check_unique(&def, std::slice::from_ref(&new), Some(&ids))?;
            let mut assigned_keys = def.clone();
            assigned_keys
                .foreign_keys
                .retain(|fk| fk.columns.iter().any(|c| assigned.contains(c)));
            self.check_references(&assigned_keys, std::slice::from_ref(&new), Some(&ids))?;
            if self.updates_act(&def, assigned) {
                // `ON UPDATE` actions: every table they reach is written with this one.
                check_not_null(&def, &new)?;
                let effects = self.update_effects(&def, &ids, &new, assigned)?;
                self.write_effects(effects)?;
                return Ok((n as u64, updated));
            }
            self.check_not_referenced(&def, &ids, Some((&new, assigned)))?;
        }
        self.change(table, 0, |def, changes| {
            let id_len = weir_planner::identity_columns(def).len();
            let ids: Vec<usize> = (0..id_len).collect();
            let values: Vec<usize> = (id_len..rows.num_columns()).collect();
            let new = rows.project(&values);
            if new.types() != def.schema.types() {
                return Err(Error::Invalid(format!(
                    "the new rows of '{}' do not have its column types",
                    def.name
                )));
            }
            check_not_null(def, &new)?;
            if def.has_key() {
                changes.delete_keys(def, &rows.project(&ids))?;
                changes.insert_keyed(def, &new)?;
                Ok(None)
            } else {
                Ok(Some(Rewrite {
                    old: rows.project(&ids),
                    new: Some(new),
                }))
            }
        })?;
        Ok((n as u64, updated))
    }

    /// Writes an upsert's rows to table `def` as one write, all or nothing: `rows` (full
    /// rows: those inserted, then the updated rows' new values) in, the stored rows whose
    /// identities are `replaced` (the updated rows') out; the first `inserted` rows are new.
    /// Checked as any write is (types, NOT NULL, unique indexes, foreign keys both ways).
    pub(super) fn write_upserted(
        &self,
        def: &TableDef,
        rows: &[Batch],
        replaced: Option<&Batch>,
        inserted: usize,
    ) -> Result<()> {
        for batch in rows {
            if batch.types() != def.schema.types() {
                return Err(Error::Invalid(format!(
                    "the rows of an upsert into '{}' do not have its column types",
                    def.name
                )));
            }
            check_not_null(def, batch)?;
        }
        self.check_unique(def, rows, replaced)?;
        self.check_references(def, rows, replaced)?;
        if let Some(ids) = replaced {
            let written = Batch::concat(rows).map_err(|e| Error::Invalid(e.to_string()))?;
            let every: Vec<usize> = (0..def.schema.len()).collect();
            self.check_not_referenced(def, ids, Some((&written, &every)))?;
        }
        self.change(&def.name, 0, |def, changes| {
            if let Some(ids) = replaced {
                changes.delete_keys(def, ids)?;
            }
            for batch in rows {
                changes.insert_keyed(def, batch)?;
            }
            Ok(None)
        })?;
        let mut catalog = self
            .inner
            .catalog
            .write()
            .unwrap_or_else(|e| e.into_inner());
        let before = catalog.row_count(&def.name);
        catalog.set_row_count(&def.name, before + inserted as u64);
        Ok(())
    }

    /// Fails when an UPDATE's `rows` (identity, then new values) change a row of a keyed
    /// `table` more than once: `UPDATE ... FROM` where several rows of FROM match one.
    fn check_updated_once(&self, table: &str, rows: &Batch) -> Result<()> {
        let Some(def) = self.table_def(table).ok().filter(TableDef::has_key) else {
            return Ok(());
        };
        let k = def.primary_key.len();
        let mut seen = std::collections::HashSet::new();
        for r in 0..rows.num_rows() {
            let key: Vec<String> = (0..k)
                .map(|c| format!("{:?}", rows.column(c).value(r)))
                .collect();
            if !seen.insert(key) {
                let key: Vec<String> = (0..k).map(|c| rows.column(c).value(r).to_sql()).collect();
                return Err(Error::Plan(PlanError::Invalid(format!(
                    "UPDATE of table '{}' changes the row of key ({}) more than once (more than one row of FROM matches it)",
                    def.name,
                    key.join(", ")
                ))));
            }
        }
        Ok(())
    }

    /// The definition of table `name` as the catalog has it now.
    pub(super) fn table_def(&self, name: &str) -> Result<TableDef> {
        let catalog = self.inner.catalog.read().unwrap_or_else(|e| e.into_inner());
        catalog
            .table(name)
            .cloned()
            .ok_or_else(|| Error::Plan(weir_planner::PlanError::UnknownTable(name.to_string())))
    }

    /// `table`'s definition when it has a unique index (whose writes are checked first).
    fn unique_indexed(&self, table: &str) -> Option<TableDef> {
        let catalog = self.inner.catalog.read().unwrap_or_else(|e| e.into_inner());
        catalog
            .table(table)
            .filter(|d| d.indexes.iter().any(|i| i.unique))
            .cloned()
    }

    /// [`Cluster::check_unique`] of rows inserted into `table`, when it has a unique index.
    fn check_unique_of(&self, table: &str, batches: &[Batch]) -> Result<()> {
        match self.unique_indexed(table) {
            Some(def) => self.check_unique(&def, batches, None),
            None => Ok(()),
        }
    }

    /// [`Cluster::check_references`] of rows inserted into `table`, when it has foreign keys
    /// (batches without the table's column types are left to the write, which refuses them).
    fn check_references_of(&self, table: &str, batches: &[Batch]) -> Result<()> {
        let def = {
            let catalog = self.inner.catalog.read().unwrap_or_else(|e| e.into_inner());
            catalog
                .table(table)
                .filter(|d| !d.foreign_keys.is_empty())
                .cloned()
        };
        match def {
            Some(def) if batches.iter().all(|b| b.types() == def.schema.types()) => {
                self.check_references(&def, batches, None)
            }
            _ => Ok(()),
        }
    }

    /// Runs `query` and returns its rows as one batch (`None` when there are none).
    pub(super) fn rows_of(&self, query: QueryPlan) -> Result<Option<Batch>> {
        let result = self.run(Arc::new(query), &[])?.collect_all()?;
        match result.batches.len() {
            0 => Ok(None),
            _ => {
                let b =
                    Batch::concat(&result.batches).map_err(|e| Error::Invalid(e.to_string()))?;
                Ok((b.num_rows() > 0).then_some(b))
            }
        }
    }

    /// Writes the changes `plan` makes to `table` (a rewrite of a table without a key touches
    /// every partition), under the catalog's write lock; `deleted` rows leave the row count.
    fn change(
        &self,
        table: &str,
        deleted: usize,
        plan: impl FnOnce(&TableDef, &mut Changes) -> Result<Option<Rewrite>>,
    ) -> Result<()> {
        self.check_up()?;
        let mut catalog = self
            .inner
            .catalog
            .write()
            .unwrap_or_else(|e| e.into_inner());
        let def = catalog
            .table(table)
            .cloned()
            .ok_or_else(|| Error::Plan(PlanError::UnknownTable(table.into())))?;
        let mut changes = Changes::default();
        let rewrite = plan(&def, &mut changes)?;
        if rewrite.is_some() {
            for p in 0..def.partitions {
                changes.parts.entry(p).or_default();
            }
        }
        self.write_changes(&def, changes, rewrite)?;
        let before = catalog.row_count(&def.name);
        catalog.set_row_count(&def.name, before.saturating_sub(deleted as u64));
        Ok(())
    }

    /// Replicates `changes` (and `rewrite`) of table `def` to every copy, as one write.
    fn write_changes(
        &self,
        def: &TableDef,
        changes: Changes,
        rewrite: Option<Rewrite>,
    ) -> Result<()> {
        let share = self.share(def, changes, rewrite)?;
        let mut book = self
            .inner
            .replicas
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        self.coordinator().write(
            &mut book,
            share.id,
            &share.layout,
            &share.copies,
            share.parts,
            share.rewrite,
        )
    }

    /// Table `def`'s share of a write: `changes` (and `rewrite`), with a write id, laid out
    /// for its copies.
    fn share(
        &self,
        def: &TableDef,
        mut changes: Changes,
        rewrite: Option<Rewrite>,
    ) -> Result<TableWrite> {
        if self.inner.remote.is_some() && rewrite.is_none() {
            changes.guard_unique_values(def)?;
        }
        Ok(TableWrite {
            id: self.inner.ids.fetch_add(1, Ordering::Relaxed),
            layout: TableLayout {
                table: def.name.to_lowercase(),
                schema: def.schema.clone(),
                primary_key: def.primary_key.clone(),
                indexed: def.indexes.iter().map(|i| i.column).collect(),
            },
            copies: self.inner.copies(def.partitions),
            parts: changes.into_writes(def)?,
            rewrite,
        })
    }

    /// Writes what a DELETE or an UPDATE does to every table it touches
    /// ([`Cluster::delete_effects`], [`Cluster::update_effects`]) as one write, all or
    /// nothing.
    fn write_effects(&self, effects: Vec<TableEffect>) -> Result<()> {
        let mut tables = Vec::with_capacity(effects.len());
        for effect in effects {
            tables.push(TableRows {
                deleted: effect.deleted_batch()?,
                changed: effect.changed_batches()?,
                table: effect.def.name,
            });
        }
        self.write_tables(tables)
    }

    /// Deletes and changes rows of several tables as one write, all or nothing, under the
    /// catalog's write lock (each table's share prepared on its copies before any commits).
    pub(super) fn write_tables(&self, tables: Vec<TableRows>) -> Result<()> {
        self.check_up()?;
        let mut catalog = self
            .inner
            .catalog
            .write()
            .unwrap_or_else(|e| e.into_inner());
        let mut shares = Vec::with_capacity(tables.len());
        let mut deleted = Vec::with_capacity(tables.len());
        for rows in tables {
            let def = catalog
                .table(&rows.table)
                .cloned()
                .ok_or_else(|| Error::Plan(PlanError::UnknownTable(rows.table.clone())))?;
            let gone = rows.deleted;
            let gone_rows = gone.num_rows() as u64;
            let mut changes = Changes::default();
            let rewrite = if def.has_key() {
                changes.delete_keys(&def, &gone)?;
                if let Some((ids, new)) = rows.changed {
                    changes.delete_keys(&def, &ids)?;
                    changes.insert_keyed(&def, &new)?;
                }
                None
            } else {
                let rewrite = match (gone_rows > 0, rows.changed) {
                    (true, Some(_)) => {
                        return Err(Error::Invalid(format!(
                            "this DELETE would both delete and change rows of table '{}' \
                             through foreign keys, which weir does for tables with a primary \
                             key only",
                            def.name
                        )))
                    }
                    (true, None) => Rewrite {
                        old: gone,
                        new: None,
                    },
                    (false, Some((old, new))) => Rewrite {
                        old,
                        new: Some(new),
                    },
                    (false, None) => continue,
                };
                for p in 0..def.partitions {
                    changes.parts.entry(p).or_default();
                }
                Some(rewrite)
            };
            if changes.parts.is_empty() {
                continue;
            }
            deleted.push((def.name.clone(), gone_rows));
            shares.push(self.share(&def, changes, rewrite)?);
        }
        {
            let mut book = self
                .inner
                .replicas
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            self.coordinator().write_together(&mut book, shares)?;
        }
        for (table, n) in deleted {
            let before = catalog.row_count(&table);
            catalog.set_row_count(&table, before.saturating_sub(n));
        }
        Ok(())
    }

    pub(super) fn coordinator(&self) -> Coordinator<'_> {
        Coordinator {
            network: &self.inner.network,
            client: self.client(),
            nodes: &self.inner.nodes,
            names: &self.inner.names,
            replies: &self.inner.write_replies,
            timeout: self.inner.config.query_timeout,
            piece_bytes: self.inner.config.write_piece_bytes,
            catalog_epoch: self
                .inner
                .remote
                .as_ref()
                .map_or(0, |r| r.epoch.load(Ordering::SeqCst)),
            records: self
                .inner
                .remote
                .as_ref()
                .map(|_| &*self.inner as &dyn WriteRecords),
        }
    }
}
