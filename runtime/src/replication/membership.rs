//! What a node of a cluster of processes knows beyond its own partitions: how to reach its
//! peers, its part of the catalog log and the catalog it has taken from it, and (on a client)
//! where the answers to its catalog requests, proposals and resyncs
//! ([`crate::replication::resync`]) go.
//!
//! In one process the catalog lives only on the client and every node sees every other; over
//! TCP a data node learns its peers' addresses from a client's
//! [`Join`](crate::wire::messages::Join), and the data nodes keep the catalog in a replicated
//! log ([`crate::replication::catalog_log`]) that clients propose changes to and fetch it
//! from ([`CatalogRequest`](crate::wire::messages::CatalogRequest), [`CatalogReply`]). The
//! node actor hands these messages here.

use crate::node::state::NodeShared;
use crate::node::storage::{Change, NodeStorage};
use crate::replication::catalog_bytes::{decode_catalog, encode_catalog};
use crate::replication::catalog_log::types::CatalogState;
use crate::replication::catalog_log::CatalogLog;
use crate::replication::resync::ResyncReplies;
use crate::wire::ids::NodeId;
use crate::wire::messages::{
    CatalogBytes, CatalogDecided, CatalogReply, LostCopies, TableLayout, TableVersions,
    WriteRefusal,
};
use crate::wire::partition_map::PartitionMap;
use crossbeam_channel::Receiver;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use weir_operators::plan::PhysicalPlan;
use weir_operators::Schema;
use weir_planner::{CatalogSnapshot, TableDef};

/// How a node connects to a peer at an address (a data node's TCP endpoint).
pub type Connect = Box<dyn Fn(NodeId, SocketAddr) + Send + Sync>;

/// The peers a node is connected to now.
pub type PeersUp = Box<dyn Fn() -> Vec<NodeId> + Send + Sync>;

/// A node's view of the cluster of processes it belongs to (see the module comment).
#[derive(Default)]
pub struct Membership {
    connect: Option<Connect>,
    peers_up: Option<PeersUp>,
    catalog: Mutex<Option<(u64, CatalogSnapshot)>>,
    /// The epoch from which the held catalog's schema is as it is (a change that leaves the
    /// schema version alone, a sequence's reservation, does not move it): a writer whose
    /// catalog is older checked its write by an older schema (see [`Membership::check_layout`]).
    schema_since: AtomicU64,
    replies: crate::replication::waiters::Waiters<CatalogReply>,
    decisions: crate::replication::waiters::Waiters<CatalogDecided>,
    resyncs: ResyncReplies,
    log: OnceLock<Arc<CatalogLog>>,
    fresh_start: OnceLock<u64>,
}

/// What a data node's copy of the catalog log says about lost copies, taken before the node's
/// storage is locked (the log applies entries holding its own lock and then changes the
/// storage, so the two are never taken the other way round).
#[derive(Debug, Clone, Default)]
pub struct LogView {
    state: Option<CatalogState>,
    index: u64,
}

impl std::fmt::Debug for Membership {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Membership")
            .field("connects", &self.connect.is_some())
            .finish_non_exhaustive()
    }
}

impl Membership {
    /// A data node's membership: it reaches its peers with `connect`, and `peers_up` tells
    /// which it is connected to.
    pub fn data_node(connect: Connect, peers_up: PeersUp) -> Self {
        Membership {
            connect: Some(connect),
            peers_up: Some(peers_up),
            ..Default::default()
        }
    }

    /// Connects to `peer` at `addr` (text, as sent); false when the address does not parse
    /// or this node does not connect to peers (a client).
    pub fn add_peer(&self, peer: NodeId, addr: &str) -> bool {
        match (&self.connect, addr.parse::<SocketAddr>()) {
            (Some(connect), Ok(addr)) => {
                connect(peer, addr);
                true
            }
            _ => false,
        }
    }

    /// Sets the node's part of the catalog log (a data node).
    pub fn set_log(&self, log: Arc<CatalogLog>) {
        let _ = self.log.set(log);
    }

    /// The node's part of the catalog log (a data node).
    pub fn log(&self) -> Option<&Arc<CatalogLog>> {
        self.log.get()
    }

    /// The node started without its data, as process `incarnation` (a data node without a
    /// data directory, or with an empty one): until the catalog log records it, clients do
    /// not take its copies' versions (see [`Proposal::Started`](crate::wire::messages::Proposal::Started)).
    pub fn set_fresh_start(&self, incarnation: u64) {
        let _ = self.fresh_start.set(incarnation);
    }

    /// What this node's copy of the catalog log says now (empty on a node without one). Take
    /// it before locking the node's storage.
    pub fn log_view(&self) -> LogView {
        match self.log.get() {
            Some(log) => {
                let (state, index) = log.applied();
                LogView {
                    state: Some(state),
                    index,
                }
            }
            None => LogView::default(),
        }
    }

    /// A client's `Join` names the data nodes `members`: they are the catalog log's
    /// (`log_index`: the highest index of the log the client has seen, see
    /// [`CatalogLog::join`]).
    pub fn join(&self, members: &[NodeId], log_index: u64) {
        if let Some(log) = self.log.get() {
            log.join(members, log_index);
        }
    }

    /// Takes back the catalog copy node `shared` recovered from its data directory.
    pub fn restore(&self, shared: &NodeShared) {
        let storage = shared.storage.read().unwrap_or_else(|e| e.into_inner());
        if let Some((epoch, bytes)) = storage.catalog() {
            match decode_catalog(bytes) {
                Ok(catalog) => {
                    // A catalog is logged when its schema changes: it is as it is since then.
                    self.schema_since.store(*epoch, Ordering::SeqCst);
                    *self.catalog.lock().unwrap_or_else(|e| e.into_inner()) =
                        Some((*epoch, catalog))
                }
                Err(e) => tracing::warn!("{}: its catalog copy does not decode: {e}", shared.name),
            }
        }
    }

    /// Takes the catalog `bytes` of `epoch` the catalog log applied, unless the copy held is
    /// newer (the log replaying entries a node's storage already has after a restart), and
    /// makes what it changes to node `shared`'s storage: tables it has not are dropped (but
    /// one a write from a writer with a newer catalog made here), secondary indexes it names
    /// are built and those it no longer names dropped, renamed columns take their names, and
    /// a new schema is kept in the node's storage (logged, on a node with a data directory).
    /// Returns whether it was taken.
    pub fn take_catalog(&self, epoch: u64, bytes: &CatalogBytes, shared: &NodeShared) -> bool {
        let catalog = match decode_catalog(bytes) {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!("refused a catalog that does not decode: {e}");
                return false;
            }
        };
        // The lock on the copy held is not kept while the storage changes: the node actor
        // takes the two the other way round (the storage, then the copy, to answer a
        // catalog request), and the catalog log calls this from a thread of its own.
        let schema_changed = {
            let held = self.catalog.lock().unwrap_or_else(|e| e.into_inner());
            if held.as_ref().is_some_and(|(held, _)| *held > epoch) {
                return false;
            }
            held.as_ref()
                .is_none_or(|(_, c)| c.version != catalog.version)
        };
        let mut changes = Vec::new();
        {
            let storage = shared.storage.read().unwrap_or_else(|e| e.into_inner());
            let names: Vec<String> = catalog
                .tables
                .iter()
                .map(|t| t.name.to_lowercase())
                .collect();
            // Dropped: the tables this catalog has not, but for one a write made here from a
            // writer whose catalog is newer than this one (see `check_layout`): the log has
            // not reached its CREATE yet, and an older catalog must not drop its acknowledged
            // rows.
            let dropped = |t: &&String| !names.contains(t) && storage.made_at(t) <= epoch;
            for table in storage.tables.keys().filter(dropped) {
                changes.push(Change::DropTable {
                    table: table.clone(),
                });
            }
            for def in &catalog.tables {
                let table = def.name.to_lowercase();
                if let Some(store) = storage.tables.get(&table) {
                    // A column renamed (`ALTER TABLE ... RENAME COLUMN`): the stored rows
                    // take the catalog's names.
                    if let Some((_, part)) = store.partitions().next() {
                        let stored = &part.schema().fields;
                        if stored.len() == def.schema.len() {
                            for (c, (s, d)) in stored.iter().zip(&def.schema.fields).enumerate() {
                                if s.name != d.name && s.data_type == d.data_type {
                                    changes.push(Change::RenameColumn {
                                        table: table.clone(),
                                        column: c,
                                        name: d.name.clone(),
                                    });
                                }
                            }
                        }
                    }
                    // An index dropped (`DROP INDEX`): no index of the catalog starts with
                    // its column any more.
                    for column in store.indexed_columns() {
                        if !def.indexes.iter().any(|i| i.column == column) {
                            changes.push(Change::DropIndex {
                                table: table.clone(),
                                column,
                            });
                        }
                    }
                    for index in &def.indexes {
                        if let Some(field) = def.schema.fields.get(index.column) {
                            if !store.indexed_columns().contains(&index.column) {
                                changes.push(Change::AddIndex {
                                    table: table.clone(),
                                    column: index.column,
                                    data_type: field.data_type,
                                });
                            }
                        }
                    }
                }
            }
        }
        if schema_changed {
            self.schema_since.store(epoch, Ordering::SeqCst);
            changes.push(Change::Catalog {
                epoch,
                catalog: bytes.clone(),
            });
        }
        for change in changes {
            if let Err(e) = shared.change(change) {
                tracing::warn!("{}: a catalog change was not made: {e}", shared.name);
            }
        }
        *self.catalog.lock().unwrap_or_else(|e| e.into_inner()) = Some((epoch, catalog));
        true
    }

    /// On a data node of the catalog log: why a write laid out as `layout` by a writer whose
    /// catalog is at `writer_epoch` does not match the catalog this node has taken from the
    /// log (the table dropped, or made again with other columns or another key); `None` when
    /// it matches, when the writer's catalog is newer than this node's (the node is behind
    /// the log and takes the writer's layout), or on a node that keeps no catalog log (a
    /// node of one process, whose client holds the only catalog).
    pub fn check_layout(&self, layout: &TableLayout, writer_epoch: u64) -> Option<WriteRefusal> {
        self.log.get()?;
        let held = self.catalog.lock().unwrap_or_else(|e| e.into_inner());
        let epoch = held.as_ref().map_or(0, |(epoch, _)| *epoch);
        if epoch < writer_epoch {
            return None;
        }
        // The writer checked its rows against the keys, indexes and foreign keys of an older
        // schema (another client's CREATE TABLE ... REFERENCES, CREATE UNIQUE INDEX, ...):
        // it plans the statement again on this one.
        let since = self.schema_since.load(Ordering::SeqCst);
        if writer_epoch < since {
            return Some(WriteRefusal::CatalogChanged {
                epoch,
                message: format!(
                    "the schema changed at epoch {since}, after the writer's catalog (epoch \
                     {writer_epoch})"
                ),
            });
        }
        let def = held.as_ref().and_then(|(_, c)| {
            c.tables
                .iter()
                .find(|t| t.name.eq_ignore_ascii_case(&layout.table))
        });
        let message = match def {
            None => format!("no table {} in the catalog at epoch {epoch}", layout.table),
            Some(def) if def.schema != layout.schema || def.primary_key != layout.primary_key => {
                format!(
                    "table {} has other columns or another key in the catalog at epoch {epoch}",
                    layout.table
                )
            }
            Some(_) => return None,
        };
        Some(WriteRefusal::CatalogChanged { epoch, message })
    }

    /// On a data node of the catalog log: why a fragment `plan` of a query planned on the
    /// catalog of epoch `planned_at` must not run here: a table it scans was dropped, or made
    /// again with other columns, in the catalog this node has taken from the log since. Gives
    /// this node's epoch with the reason; `None` when the plan's tables are as they were,
    /// when the query's catalog is not behind this node's, or on a node that keeps no catalog
    /// log.
    pub fn check_scans(&self, plan: &PhysicalPlan, planned_at: u64) -> Option<(u64, String)> {
        self.log.get()?;
        let held = self.catalog.lock().unwrap_or_else(|e| e.into_inner());
        let (epoch, catalog) = held.as_ref()?;
        if *epoch <= planned_at {
            return None;
        }
        let mut scans = Vec::new();
        scanned_tables(plan, &mut scans);
        scans.into_iter().find_map(|(table, schema)| {
            let def = catalog
                .tables
                .iter()
                .find(|t| t.name.eq_ignore_ascii_case(table));
            let what = match def {
                None => "was dropped",
                Some(def) if def.schema != *schema => "was made again with other columns",
                Some(_) => return None,
            };
            Some((
                *epoch,
                format!(
                    "table {table} {what} after the query was planned (catalog epoch \
                     {planned_at}, now {epoch})"
                ),
            ))
        })
    }

    /// On a data node of the catalog log: whether this node (`me`) may run fragment `plan`,
    /// which reads its copies of the partitions `partitions` assigns it (all it holds when
    /// `None`): it must hold a fresh read lease, and the log must not count one of those
    /// copies lost or behind ([`CatalogLog::check_lease`], [`CatalogLog::check_copies`]).
    /// Allowed when the plan scans no table the node holds, and on a node that keeps no
    /// catalog log.
    pub fn check_reads(
        &self,
        plan: &PhysicalPlan,
        partitions: Option<&PartitionMap>,
        me: NodeId,
    ) -> ReadCheck {
        let Some(log) = self.log.get() else {
            return ReadCheck::Allowed;
        };
        let mut scans = Vec::new();
        stored_scans(plan, &mut scans);
        if scans.is_empty() {
            return ReadCheck::Allowed;
        }
        if let Err(why) = log.check_lease() {
            return ReadCheck::NoLease(why);
        }
        let mine = partitions.map(|map| map.partitions_of(me));
        match scans.into_iter().find_map(|table| {
            log.check_copies(&table.to_lowercase(), mine.as_deref())
                .err()
        }) {
            Some(why) => ReadCheck::CopyBehind(why),
            None => ReadCheck::Allowed,
        }
    }

    /// Asks the catalog log to renew the node's read lease now (a read waits for it).
    pub fn renew_lease(&self) {
        if let Some(log) = self.log.get() {
            log.renew_lease();
        }
    }

    /// The definition of `table` (any case) in the catalog copy held, if any.
    pub fn table(&self, table: &str) -> Option<TableDef> {
        let held = self.catalog.lock().unwrap_or_else(|e| e.into_inner());
        held.as_ref()?
            .1
            .tables
            .iter()
            .find(|t| t.name.eq_ignore_ascii_case(table))
            .cloned()
    }

    /// Where the answers to this client's resyncs go.
    pub fn resyncs(&self) -> &ResyncReplies {
        &self.resyncs
    }

    /// The answer to catalog request `request`: the copy held, the versions of the
    /// partition copies in `storage`, and what the catalog log (`log`) says of this node's
    /// start and of lost copies.
    pub fn reply(&self, request: u64, storage: &NodeStorage, log: LogView) -> CatalogReply {
        let held = self.catalog.lock().unwrap_or_else(|e| e.into_inner());
        let (epoch, catalog) = match held.as_ref() {
            Some((e, c)) => (*e, Some(encode_catalog(c))),
            None => (0, None),
        };
        let mut versions: Vec<TableVersions> = storage
            .versions()
            .map(|(table, parts)| {
                let mut partitions: Vec<(u32, u64)> = parts.iter().map(|(p, v)| (*p, *v)).collect();
                partitions.sort_unstable();
                TableVersions {
                    table: table.to_string(),
                    partitions,
                }
            })
            .collect();
        versions.sort_by(|a, b| a.table.cmp(&b.table));
        let fresh_start = self.fresh_start.get().copied();
        let state = log.state.unwrap_or_default();
        let backups = state.backups;
        let start_recorded = match (fresh_start, self.log.get()) {
            (Some(incarnation), Some(log)) => state.starts.get(&log.id()) == Some(&incarnation),
            _ => true,
        };
        let emptied = &state.emptied;
        let lost = state
            .lost
            .iter()
            .flat_map(|(&node, tables)| {
                tables.iter().map(move |(table, partitions)| {
                    let emptied = emptied.get(&node).and_then(|t| t.get(table));
                    LostCopies {
                        node,
                        table: table.clone(),
                        partitions: partitions.iter().copied().collect(),
                        emptied: partitions
                            .iter()
                            .copied()
                            .filter(|p| emptied.is_some_and(|e| e.contains(p)))
                            .collect(),
                    }
                })
            })
            .collect();
        CatalogReply {
            request,
            epoch,
            catalog,
            versions,
            peers: self.peers_up.as_ref().map(|f| f()).unwrap_or_default(),
            fresh_start,
            start_recorded,
            log_index: log.index,
            backups,
            lost,
        }
    }

    /// Waits for the replies to catalog request `request` (a client).
    pub fn expect(&self, request: u64) -> Receiver<(NodeId, CatalogReply)> {
        self.replies.register(request)
    }

    /// Stops waiting for replies to `request`.
    pub fn forget(&self, request: u64) {
        self.replies.unregister(request);
    }

    /// Hands `reply` from node `from` to whoever waits for it; false when nobody does.
    pub fn deliver(&self, from: NodeId, reply: CatalogReply) -> bool {
        self.replies.deliver(reply.request, from, reply)
    }

    /// Waits for the decision on proposal `request` (a client).
    pub fn expect_decision(&self, request: u64) -> Receiver<(NodeId, CatalogDecided)> {
        self.decisions.register(request)
    }

    /// Stops waiting for the decision on `request`.
    pub fn forget_decision(&self, request: u64) {
        self.decisions.unregister(request);
    }

    /// Hands `decided` from node `from` to whoever waits for it; false when nobody does.
    pub fn deliver_decision(&self, from: NodeId, decided: CatalogDecided) -> bool {
        self.decisions.deliver(decided.request, from, decided)
    }
}

/// Whether a data node may serve a fragment's reads ([`Membership::check_reads`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadCheck {
    /// It may.
    Allowed,
    /// It holds no fresh read lease (why): it may once it renewed it.
    NoLease(String),
    /// The catalog log counts a copy it would read lost or behind (which).
    CopyBehind(String),
}

/// The tables held in memory that `plan` scans (not external ones, read from files).
fn stored_scans<'a>(plan: &'a PhysicalPlan, out: &mut Vec<&'a str>) {
    if let PhysicalPlan::Scan {
        table,
        external: None,
        ..
    } = plan
    {
        out.push(table);
    }
    for child in plan.children() {
        stored_scans(child, out);
    }
}

/// The tables `plan` scans, with the schema it read each with.
fn scanned_tables<'a>(plan: &'a PhysicalPlan, out: &mut Vec<(&'a str, &'a Schema)>) {
    if let PhysicalPlan::Scan {
        table,
        table_schema,
        ..
    } = plan
    {
        out.push((table, table_schema));
    }
    for child in plan.children() {
        scanned_tables(child, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::breaker::{BreakerConfig, JoinMode};
    use crate::node::storage::Change;
    use crate::replication::catalog_bytes::encode_catalog;
    use crate::wire::messages::{PartitionWrite, TableLayout, WritePrepare};
    use weir_operators::{Batch, Column, DataType, Field, Schema};
    use weir_planner::{CatalogSnapshot, TableDef};

    fn schema() -> Schema {
        Schema::new(vec![
            Field::new("id", DataType::Int64),
            Field::new("x", DataType::Int64),
        ])
    }

    /// A data node of one process, empty.
    fn data_node() -> NodeShared {
        NodeShared::new(
            0,
            "node-0",
            true,
            1 << 30,
            JoinMode::Guarded,
            &BreakerConfig::default(),
        )
    }

    /// Table `name` with `schema`, keyed on its first column, with `indexes`.
    fn table(name: &str, schema: Schema, indexes: Vec<weir_planner::IndexDef>) -> TableDef {
        TableDef {
            name: name.to_string(),
            schema,
            primary_key: vec![0],
            indexes,
            not_null: vec![],
            partitions: 4,
            external: None,
            defaults: Vec::new(),
            foreign_keys: Vec::new(),
            checks: Vec::new(),
            comments: Default::default(),
        }
    }

    /// The catalog of schema version `version` with `tables`.
    fn encoded(version: u64, tables: Vec<TableDef>) -> CatalogBytes {
        encode_catalog(&CatalogSnapshot {
            version,
            tables,
            ..Default::default()
        })
    }

    /// The catalog of schema version `version` with `tables`, each of [`schema`].
    fn catalog(version: u64, tables: &[&str]) -> CatalogBytes {
        let tables = tables.iter().map(|n| table(n, schema(), vec![])).collect();
        encoded(version, tables)
    }

    /// Writes three rows into partition 1 of `table` on `node`, as write `id` of a writer
    /// whose catalog is at `epoch`: prepared, then committed.
    fn write(node: &NodeShared, table: &str, id: u64, epoch: u64) {
        let layout = TableLayout {
            table: table.into(),
            schema: schema(),
            primary_key: vec![0],
            indexed: vec![],
        };
        let rows = Batch::try_new(vec![
            Column::from_i64(vec![1, 2, 3]),
            Column::from_i64(vec![10, 20, 30]),
        ])
        .unwrap();
        let prepare = WritePrepare {
            write: id,
            layout,
            parts: vec![PartitionWrite {
                partition: 1,
                version: 1,
                delete: None,
                insert: rows,
            }],
            rewrite: None,
            commit: false,
            piece: 0,
            pieces: 1,
            catalog_epoch: epoch,
        };
        node.change(Change::Prepared(prepare)).unwrap();
        node.change(Change::Committed { write: id }).unwrap();
    }

    fn rows_of(node: &NodeShared, table: &str) -> Option<usize> {
        let storage = node.storage.read().unwrap();
        storage
            .tables
            .get(table)
            .map(|t| t.get(1).map_or(0, |p| p.num_rows()))
    }

    #[test]
    fn a_table_written_ahead_of_the_log_outlives_older_catalogs_and_a_drop_still_drops() {
        let node = data_node();
        let membership = Membership::default();
        assert!(membership.take_catalog(1, &catalog(1, &["a"]), &node));
        write(&node, "a", 1, 1);
        // A writer whose catalog is at epoch 3 (it made `b` there) writes to `b` before this
        // node's copy of the log has reached the CREATE: the write makes the table here.
        write(&node, "b", 2, 3);
        // The log then applies an entry from before that CREATE (another table made): its
        // catalog lacks `b`, but is older than the write. `b` stays.
        assert!(membership.take_catalog(2, &catalog(2, &["a", "c"]), &node));
        assert_eq!(rows_of(&node, "b"), Some(3));
        assert!(membership.take_catalog(3, &catalog(3, &["a", "b", "c"]), &node));
        assert_eq!(rows_of(&node, "b"), Some(3));
        // A table a catalog as new as the write (or newer) has not is dropped, rows and all.
        assert!(membership.take_catalog(4, &catalog(4, &["b", "c"]), &node));
        assert_eq!(rows_of(&node, "a"), None);
        assert_eq!(rows_of(&node, "b"), Some(3));
        // A node that comes to a catalog after a DROP of a table a write made ahead of it
        // (the entries between taken at once): dropped too, so that a table made again
        // under the name does not find its rows.
        write(&node, "d", 3, 5);
        assert!(membership.take_catalog(6, &catalog(6, &["b", "c"]), &node));
        assert_eq!(rows_of(&node, "d"), None);
        // An older catalog than the one held is not taken.
        assert!(!membership.take_catalog(3, &catalog(3, &["a", "b", "c"]), &node));
    }

    /// The catalog of `version` with table `a`, an index on `x` when `indexed`, its second
    /// column named `second`.
    fn altered(version: u64, indexed: bool, second: &str) -> CatalogBytes {
        let schema = Schema::new(vec![
            Field::new("id", DataType::Int64),
            Field::new(second, DataType::Int64),
        ]);
        let indexes = if indexed {
            vec![weir_planner::IndexDef::on("a_x", 1)]
        } else {
            vec![]
        };
        encoded(version, vec![table("a", schema, indexes)])
    }

    #[test]
    fn a_node_builds_drops_and_renames_what_the_catalog_log_says() {
        let node = data_node();
        let membership = Membership::default();
        let indexed =
            |node: &NodeShared| node.storage.read().unwrap().tables["a"].indexed_columns();
        let second = |node: &NodeShared| {
            let storage = node.storage.read().unwrap();
            storage.tables["a"].get(1).unwrap().schema().fields[1]
                .name
                .clone()
        };
        assert!(membership.take_catalog(1, &altered(1, false, "x"), &node));
        write(&node, "a", 1, 1);
        assert!(membership.take_catalog(2, &altered(2, true, "x"), &node));
        assert_eq!(indexed(&node), [1]);
        // DROP INDEX, then RENAME COLUMN x TO y.
        assert!(membership.take_catalog(3, &altered(3, false, "x"), &node));
        assert!(indexed(&node).is_empty());
        assert!(membership.take_catalog(4, &altered(4, false, "y"), &node));
        assert_eq!(second(&node), "y");
        assert_eq!(rows_of(&node, "a"), Some(3));
    }
}
