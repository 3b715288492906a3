//! What a node stores, and every change made to it.
//!
//! [`NodeStorage`] is a node's whole state that outlives a query: its partition copies with
//! their versions and node-wide indexes, the writes it has prepared and not yet committed or
//! aborted, the writes it finished lately, and its copy of the cluster's catalog (a node of a
//! cluster of processes). It changes only through [`NodeStorage::apply`] of a [`Change`], the
//! same function whether the change is made now or replayed from the node's log at start
//! ([`crate::node::journal`]), so what a node recovers is what it held.

use crate::node::recent::RecentSet;
use crate::wire::messages::{CatalogBytes, TableLayout, WritePrepare};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap};
use weir_operators::storage::PartitionData;
use weir_operators::table_store::TableStore;
use weir_operators::{Batch, DataType, Field, Value};

/// A change to a node's storage: what the node's log records, one record per change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Change {
    /// Phase one of a write: its rows held until it is committed or aborted.
    Prepared(WritePrepare),
    /// A prepared write is applied: its rows and its copies' versions.
    Committed {
        /// The write.
        write: u64,
    },
    /// A prepared write is given up.
    Aborted {
        /// The write.
        write: u64,
    },
    /// A partition copy is replaced whole (a resync or a repair), or emptied (`rows: None`).
    Install {
        /// Table name (lowercase).
        table: String,
        /// The partition.
        partition: u32,
        /// The copy's version after the change.
        version: u64,
        /// Its rows, with the table's layout (secondary indexes included).
        rows: Option<(TableLayout, Vec<Batch>)>,
    },
    /// A table is dropped: its rows and versions go.
    DropTable {
        /// Table name (lowercase).
        table: String,
    },
    /// A secondary index is built on a stored table.
    AddIndex {
        /// Table name (lowercase).
        table: String,
        /// The column.
        column: usize,
        /// Its type.
        data_type: DataType,
    },
    /// The node keeps a copy of the cluster's catalog (published at `epoch`).
    Catalog {
        /// Orders the copies: higher is newer.
        epoch: u64,
        /// The catalog.
        catalog: CatalogBytes,
    },
    /// `ALTER TABLE ... ADD COLUMN`: a last column, `fill` in every row stored.
    AddColumn {
        /// Table name (lowercase).
        table: String,
        /// The column's position (the table's width before).
        column: usize,
        /// The column.
        field: Field,
        /// The value of the rows stored.
        fill: Value,
    },
    /// `ALTER TABLE ... DROP COLUMN`: the column and its values go.
    DropColumn {
        /// Table name (lowercase).
        table: String,
        /// The column's position.
        column: usize,
        /// The table's width before.
        width: usize,
    },
    /// `ALTER TABLE ... RENAME COLUMN`.
    RenameColumn {
        /// Table name (lowercase).
        table: String,
        /// The column's position.
        column: usize,
        /// Its new name.
        name: String,
    },
    /// `ALTER TABLE ... ALTER COLUMN ... TYPE`: the column's values cast to the type.
    SetColumnType {
        /// Table name (lowercase).
        table: String,
        /// The column's position.
        column: usize,
        /// The new type.
        data_type: DataType,
    },
    /// `DROP INDEX`: the node-wide secondary index on a column goes.
    DropIndex {
        /// Table name (lowercase).
        table: String,
        /// The column.
        column: usize,
    },
    /// `ALTER TABLE ... RENAME TO`: the rows and versions are kept under the new name.
    RenameTable {
        /// Table name (lowercase).
        table: String,
        /// The new name (lowercase).
        to: String,
    },
}

/// The partitions of every table that a node stores, and the writes under way on it.
#[derive(Debug, Default)]
pub struct NodeStorage {
    /// Table name (lowercase) → its partitions stored here, with their node-wide indexes.
    pub tables: HashMap<String, TableStore>,
    /// Table name (lowercase) → partition id → version of this copy: the write sequence
    /// number of the last write it applied (see [`crate::replication::writes`]).
    versions: HashMap<String, HashMap<u32, u64>>,
    /// Writes prepared here and not yet committed or aborted, by write id (the pieces of a
    /// write cut in pieces merged into one).
    prepared: HashMap<u64, WritePrepare>,
    /// The pieces held of each prepared write.
    pieces: HashMap<u64, BTreeSet<u32>>,
    /// Writes committed here lately (a retransmitted message is answered, not applied twice;
    /// a node that restarts with a write in doubt learns the decision from them).
    committed: RecentSet<u64>,
    /// Writes aborted here lately.
    aborted: RecentSet<u64>,
    /// The catalog copy this node keeps, with its epoch (a cluster of processes).
    catalog: Option<(u64, CatalogBytes)>,
    /// Tables a write made here, by the epoch of its writer's catalog: a writer whose
    /// catalog is ahead of this node's writes a table before the node's catalog has it (see
    /// [`NodeStorage::made_at`]).
    made_by_writes: HashMap<String, u64>,
}

impl NodeStorage {
    /// The catalog epoch of the writer whose write made `table` here, when a write did (not
    /// a catalog, a resync or a restart); 0 otherwise. A catalog older than that is older
    /// than the table: taking it must not drop the table.
    pub fn made_at(&self, table: &str) -> u64 {
        self.made_by_writes.get(table).copied().unwrap_or(0)
    }

    /// The version of this node's copy of `table`'s partition `p` (0 before any write).
    pub fn version(&self, table: &str, p: u32) -> u64 {
        self.versions
            .get(table)
            .and_then(|t| t.get(&p))
            .copied()
            .unwrap_or(0)
    }

    /// The versions of every copy this node holds, by table.
    pub fn versions(&self) -> impl Iterator<Item = (&str, &HashMap<u32, u64>)> {
        self.versions.iter().map(|(t, v)| (t.as_str(), v))
    }

    /// Whether write `write` is prepared here (some of its pieces at least).
    pub fn is_prepared(&self, write: u64) -> bool {
        self.prepared.contains_key(&write)
    }

    /// How many pieces of write `write` this node holds, and whether it holds `piece`.
    pub fn pieces_held(&self, write: u64, piece: u32) -> (usize, bool) {
        self.pieces
            .get(&write)
            .map_or((0, false), |held| (held.len(), held.contains(&piece)))
    }

    /// Whether write `write` was committed or aborted here lately.
    pub fn is_finished(&self, write: u64) -> bool {
        self.committed.contains(&write) || self.aborted.contains(&write)
    }

    /// Whether write `write` was committed here lately.
    pub fn is_committed(&self, write: u64) -> bool {
        self.committed.contains(&write)
    }

    /// The writes prepared here and not yet decided.
    pub fn prepared(&self) -> impl Iterator<Item = &WritePrepare> {
        self.prepared.values()
    }

    /// The writes committed here lately, and those aborted.
    pub fn finished(&self) -> (Vec<u64>, Vec<u64>) {
        (
            self.committed.iter().collect(),
            self.aborted.iter().collect(),
        )
    }

    /// The highest write id this node remembers (prepared, committed or aborted): a client
    /// that starts on this storage hands out ids above it, so that no new write is taken for
    /// one the node finished.
    pub fn last_write_id(&self) -> u64 {
        self.prepared
            .keys()
            .copied()
            .chain(self.committed.iter())
            .chain(self.aborted.iter())
            .max()
            .unwrap_or(0)
    }

    /// The catalog copy this node keeps, with its epoch.
    pub fn catalog(&self) -> Option<&(u64, CatalogBytes)> {
        self.catalog.as_ref()
    }

    /// The node crashed: the writes it had prepared are gone with its memory (the log still
    /// holds them: a node that restarts from its log finds them in doubt).
    pub fn forget_prepared(&mut self) {
        self.prepared.clear();
        self.pieces.clear();
    }

    /// Makes `change`. An error leaves the storage as it was, except that a committed write
    /// that fails in a later partition keeps the partitions it changed before (as it did
    /// before the log: the write's reply carries the refusal).
    pub fn apply(&mut self, change: Change) -> Result<(), String> {
        match change {
            Change::Prepared(req) => {
                let held = self.pieces.entry(req.write).or_default();
                if !held.insert(req.piece) {
                    return Ok(());
                }
                match self.prepared.get_mut(&req.write) {
                    // A later piece of a write cut in pieces: its partitions join the others.
                    Some(first) => first.parts.extend(req.parts),
                    None => {
                        self.prepared.insert(req.write, req);
                    }
                }
                Ok(())
            }
            Change::Aborted { write } => {
                self.prepared.remove(&write);
                self.pieces.remove(&write);
                self.aborted.insert(write);
                Ok(())
            }
            Change::Committed { write } => {
                let req = self
                    .prepared
                    .remove(&write)
                    .ok_or_else(|| format!("write {write} was not prepared"))?;
                self.pieces.remove(&write);
                self.committed.insert(write);
                self.commit(req)
            }
            Change::Install {
                table,
                partition,
                version,
                rows,
            } => {
                match rows {
                    Some((layout, batches)) => {
                        let mut part = new_partition(&layout);
                        for b in &batches {
                            part.insert(b).map_err(|e| e.to_string())?;
                        }
                        let store = self
                            .tables
                            .entry(table.clone())
                            .or_insert_with(|| new_store(&layout));
                        let types = layout.schema.types();
                        for &c in &layout.indexed {
                            if let Some(&dt) = types.get(c) {
                                store.add_index(c, dt);
                            }
                        }
                        store.put(partition, part);
                    }
                    None => {
                        if let Some(store) = self.tables.get_mut(&table) {
                            store.remove(partition);
                        }
                    }
                }
                self.set_version(&table, partition, version);
                Ok(())
            }
            Change::DropTable { table } => {
                self.tables.remove(&table);
                self.versions.remove(&table);
                self.made_by_writes.remove(&table);
                Ok(())
            }
            Change::AddIndex {
                table,
                column,
                data_type,
            } => {
                if let Some(store) = self.tables.get_mut(&table) {
                    store.add_index(column, data_type);
                }
                Ok(())
            }
            Change::Catalog { epoch, catalog } => {
                self.catalog = Some((epoch, catalog));
                Ok(())
            }
            Change::AddColumn {
                table,
                column,
                field,
                fill,
            } => match self.tables.get_mut(&table) {
                Some(store) => store
                    .add_column(column, &field, &fill)
                    .map_err(|e| e.to_string()),
                None => Ok(()),
            },
            Change::DropColumn {
                table,
                column,
                width,
            } => match self.tables.get_mut(&table) {
                Some(store) => store.drop_column(column, width).map_err(|e| e.to_string()),
                None => Ok(()),
            },
            Change::RenameColumn {
                table,
                column,
                name,
            } => match self.tables.get_mut(&table) {
                Some(store) => store
                    .rename_column(column, &name)
                    .map_err(|e| e.to_string()),
                None => Ok(()),
            },
            Change::SetColumnType {
                table,
                column,
                data_type,
            } => match self.tables.get_mut(&table) {
                Some(store) => store
                    .set_column_type(column, data_type)
                    .map_err(|e| e.to_string()),
                None => Ok(()),
            },
            Change::DropIndex { table, column } => {
                if let Some(store) = self.tables.get_mut(&table) {
                    store.drop_index(column);
                }
                Ok(())
            }
            Change::RenameTable { table, to } => {
                if self.tables.contains_key(&to) || self.versions.contains_key(&to) {
                    return Err(format!("cannot rename {table} to {to}: {to} is stored"));
                }
                if let Some(store) = self.tables.remove(&table) {
                    self.tables.insert(to.clone(), store);
                }
                if let Some(versions) = self.versions.remove(&table) {
                    self.versions.insert(to.clone(), versions);
                }
                if let Some(epoch) = self.made_by_writes.remove(&table) {
                    self.made_by_writes.insert(to, epoch);
                }
                Ok(())
            }
        }
    }

    /// Applies the rows of prepared write `req` and sets its copies' versions.
    fn commit(&mut self, req: WritePrepare) -> Result<(), String> {
        let table = req.layout.table.clone();
        if !self.tables.contains_key(&table) {
            self.made_by_writes.insert(table.clone(), req.catalog_epoch);
        }
        for w in req.parts {
            let p = w.partition;
            let store = self
                .tables
                .entry(table.clone())
                .or_insert_with(|| new_store(&req.layout));
            let new = || new_partition(&req.layout);
            let applied = match (&w.delete, &req.rewrite) {
                (Some(keys), _) => {
                    store.modify(p, new, |part| part.replace(keys, &w.insert).map(|_| ()))
                }
                (None, Some(r)) => store.modify(p, new, |part| {
                    part.rewrite(&r.old, r.new.as_ref())
                        .and_then(|_| part.insert(&w.insert))
                }),
                (None, None) => store.insert(p, &w.insert, new),
            };
            applied.map_err(|e| e.to_string())?;
            self.set_version(&table, p, w.version);
        }
        Ok(())
    }

    /// Sets the version of this node's copy of `table`'s partition `p`.
    fn set_version(&mut self, table: &str, p: u32, version: u64) {
        self.versions
            .entry(table.to_string())
            .or_default()
            .insert(p, version);
    }

    /// Sets the version of this node's copy of `table`'s partition `p`, in memory only (tests
    /// and checkpoints read back; live changes go through [`NodeStorage::apply`]).
    pub(crate) fn restore_version(&mut self, table: &str, p: u32, version: u64) {
        self.set_version(table, p, version);
    }

    /// Puts back a write prepared before a checkpoint (read back from it).
    pub(crate) fn restore_prepared(&mut self, req: WritePrepare) {
        self.pieces.entry(req.write).or_default().insert(req.piece);
        self.prepared.insert(req.write, req);
    }

    /// Puts back the writes committed and aborted before a checkpoint (read back from it).
    pub(crate) fn restore_finished(&mut self, committed: Vec<u64>, aborted: Vec<u64>) {
        for w in committed {
            self.committed.insert(w);
        }
        for w in aborted {
            self.aborted.insert(w);
        }
    }
}

/// A new node-wide store for `layout`'s table, with its secondary indexes.
pub fn new_store(layout: &TableLayout) -> TableStore {
    TableStore::new(&layout.schema.types(), &layout.indexed)
}

/// A new partition copy: its primary-key index only. Secondary indexes are kept once per node
/// and table, across partitions, by the partition's [`TableStore`].
pub fn new_partition(layout: &TableLayout) -> PartitionData {
    PartitionData::new(layout.schema.clone(), &layout.primary_key)
}
