//! Resync: refreshing a stale partition copy on a data node of another process from a live
//! copy at the committed version, by messages (a data node restarted with its id holds
//! nothing; its copies are stale until this brings them back).
//!
//! In one process a stale copy is refreshed by reading the source's storage directly
//! ([`crate::replication::writes::repair`]); across processes the client does it over the network,
//! one copy at a time, while it holds the catalog's write lock (no write slips in between):
//! 1. [`PartitionFetch`] to a node holding a live, current copy: the node answers with the
//!    copy's rows, its version and the table's secondary-indexed columns, in one or more
//!    [`PartitionRows`] pieces (each at most [`PIECE_BYTES`] of rows, well under the frame
//!    limit, [`codec::MAX_MESSAGE_BYTES`]; a single row too large for a message is an error
//!    reply). The copy must be at the committed version, or the resync of it fails.
//! 2. Every piece goes on to the node with the stale copy as a [`PartitionInstall`]: the node
//!    checks the table against its catalog copy and the rows against the table, stages the
//!    pieces, and on the last replaces its copy (rebuilding the secondary indexes) and sets
//!    its version. It answers [`PartitionInstalled`].
//! 3. Only then does the client count the copy current again.
//!
//! A failure (the source or the target goes away, an error reply, no answer within
//! [`IDLE_LIMIT`]) leaves the copy stale, logged as a warning; the client tries again when a
//! node rejoins or another client connects, and by itself every few seconds while a live
//! current copy exists (`cluster/remote.rs`). Nothing waits without a bound.
//!
//! A target that crashes mid-install loses what it staged; one whose pieces stop coming drops
//! them after [`STAGED_LIMIT`].
//!
//! This module holds the three sides: the source's [`pieces`], the target's [`Installs`], and
//! the client's [`Resync`] with the [`ResyncReplies`] its node actor hands the answers to.

use crate::node::recent::RecentSet;
use crate::node::state::NodeShared;
use crate::node::storage::{Change, NodeStorage};
use crate::replication::writes::ReplicaBook;
use crate::wire::codec;
use crate::wire::ids::NodeId;
use crate::wire::messages::{
    NetMessage, PartitionFetch, PartitionInstall, PartitionInstalled, PartitionRows, TableLayout,
};
use crate::wire::network::Network;
use crossbeam_channel::Receiver;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use weir_operators::storage::PartitionData;
use weir_operators::table_store::TableStore;
use weir_operators::Batch;
use weir_planner::TableDef;

/// Most bytes of rows ([`Batch::data_size`]) in one piece of a copy.
pub const PIECE_BYTES: usize = 8 << 20;

/// Largest piece that may be sent at all: a single row bigger than this cannot be resynced
/// (its message would not fit in a frame).
pub const MAX_PIECE_BYTES: usize = codec::MAX_MESSAGE_BYTES / 2;

/// Longest the client waits for the next answer of a copy's resync before it gives up on it.
pub const IDLE_LIMIT: Duration = Duration::from_secs(5);

/// Longest a target keeps the pieces of an install whose last piece has not come.
pub const STAGED_LIMIT: Duration = Duration::from_secs(60);

/// Cuts `chunks` (a copy's rows) into pieces of at most `piece_bytes` bytes of rows each (a
/// row bigger than that goes alone), failing when a row is bigger than `max_bytes`. Always at
/// least one piece (empty for no rows).
pub fn split(
    chunks: &[Arc<Batch>],
    piece_bytes: usize,
    max_bytes: usize,
) -> Result<Vec<Vec<Batch>>, String> {
    let mut pieces = Vec::new();
    let (mut piece, mut bytes) = (Vec::new(), 0usize);
    for chunk in chunks {
        let n = chunk.num_rows();
        let mut start = 0;
        while start < n {
            // Rows per slice from the chunk's mean row size, halved until the slice fits.
            let mean = chunk.data_size().div_ceil(n).max(1);
            let mut len = (piece_bytes / mean).clamp(1, n - start);
            let slice = loop {
                let slice = if start == 0 && len == n {
                    (**chunk).clone()
                } else {
                    chunk.slice(start, len)
                };
                if slice.data_size() <= piece_bytes.max(1) || len == 1 {
                    break slice;
                }
                len /= 2;
            };
            let size = slice.data_size();
            if size > max_bytes {
                return Err(format!(
                    "a row of {size} bytes is larger than a message may be ({max_bytes})"
                ));
            }
            if bytes + size > piece_bytes && !piece.is_empty() {
                pieces.push(std::mem::take(&mut piece));
                bytes = 0;
            }
            bytes += size;
            piece.push(slice);
            start += len;
        }
    }
    if !piece.is_empty() || pieces.is_empty() {
        pieces.push(piece);
    }
    Ok(pieces)
}

/// The source's answer to `fetch`: the rows of its copy in `storage`, in pieces (see
/// [`split`]), or one error piece.
pub fn pieces(storage: &NodeStorage, fetch: &PartitionFetch) -> Vec<PartitionRows> {
    let (table, p) = (fetch.table.as_str(), fetch.partition);
    let version = storage.version(table, p);
    let store = storage.tables.get(table);
    let error = |message: String| PartitionRows {
        request: fetch.request,
        version,
        indexed: Vec::new(),
        piece: 0,
        last: true,
        rows: Vec::new(),
        error: Some(message),
    };
    if store.is_none() && version == 0 {
        return vec![error(format!("no copy of partition {p} of {table} here"))];
    }
    let chunks = store
        .and_then(|s| s.get(p))
        .map(PartitionData::chunks)
        .unwrap_or_default();
    let indexed = store.map(TableStore::indexed_columns).unwrap_or_default();
    match split(&chunks, PIECE_BYTES, MAX_PIECE_BYTES) {
        Ok(split) => {
            let last = split.len() - 1;
            split
                .into_iter()
                .enumerate()
                .map(|(i, rows)| PartitionRows {
                    request: fetch.request,
                    version,
                    indexed: indexed.clone(),
                    piece: i as u32,
                    last: i == last,
                    rows,
                    error: None,
                })
                .collect()
        }
        Err(e) => vec![error(format!("partition {p} of {table}: {e}"))],
    }
}

/// A copy being installed: the pieces so far, checked and inserted.
#[derive(Debug)]
struct Staged {
    since: Instant,
    next: u32,
    layout: TableLayout,
    partition: u32,
    version: u64,
    part: PartitionData,
}

/// A data node's side of resyncs: the pieces of copies being installed, and the requests it
/// refused (their later pieces are dropped without another answer).
#[derive(Debug, Default)]
pub struct Installs {
    staged: HashMap<u64, Staged>,
    refused: RecentSet<u64>,
}

impl Installs {
    /// Takes one piece of an install on node `shared`, whose catalog copy defines the table
    /// as `def` (`None`: it knows no such table). Returns the answer to send, when there is
    /// one: at the last piece, or at the first refused.
    pub fn take(
        &mut self,
        shared: &NodeShared,
        def: Option<&TableDef>,
        msg: PartitionInstall,
    ) -> Option<PartitionInstalled> {
        let request = msg.request;
        if self.refused.contains(&request) {
            return None;
        }
        let result = self.stage(shared, def, msg);
        let answer = |error| PartitionInstalled {
            request,
            version: 0,
            error,
        };
        match result {
            Err(e) => {
                self.staged.remove(&request);
                self.refused.insert(request);
                tracing::warn!("{}: refused a resync: {e}", shared.name);
                Some(answer(Some(format!("{}: {e}", shared.name))))
            }
            Ok(false) => None,
            Ok(true) => {
                let staged = self.staged.remove(&request)?;
                Some(match install(shared, staged) {
                    Ok(version) => PartitionInstalled {
                        version,
                        ..answer(None)
                    },
                    Err(e) => answer(Some(e)),
                })
            }
        }
    }

    /// Checks and stages one piece; true when it was the last.
    fn stage(
        &mut self,
        shared: &NodeShared,
        def: Option<&TableDef>,
        msg: PartitionInstall,
    ) -> Result<bool, String> {
        let table = &msg.layout.table;
        let staged = match self.staged.get_mut(&msg.request) {
            Some(s) => s,
            None => {
                if msg.piece != 0 {
                    return Err(format!(
                        "piece {} of an install of {table} whose first piece never came",
                        msg.piece
                    ));
                }
                check_layout(&msg.layout, msg.partition, def)?;
                let have = shared
                    .storage
                    .read()
                    .unwrap_or_else(|e| e.into_inner())
                    .version(table, msg.partition);
                if have > msg.version {
                    return Err(format!(
                        "copy of partition {} of {table} is at version {have}, newer than {}",
                        msg.partition, msg.version
                    ));
                }
                let part = PartitionData::new(msg.layout.schema.clone(), &msg.layout.primary_key);
                self.staged.entry(msg.request).or_insert(Staged {
                    since: Instant::now(),
                    next: 0,
                    layout: msg.layout.clone(),
                    partition: msg.partition,
                    version: msg.version,
                    part,
                })
            }
        };
        if msg.piece != staged.next
            || msg.partition != staged.partition
            || msg.version != staged.version
            || msg.layout.table != staged.layout.table
        {
            return Err(format!(
                "piece {} of an install of {table} out of order (expected {})",
                msg.piece, staged.next
            ));
        }
        staged.next += 1;
        staged.since = Instant::now();
        for rows in &msg.rows {
            staged
                .part
                .insert(rows)
                .map_err(|e| format!("partition {} of {table}: {e}", msg.partition))?;
        }
        Ok(msg.last)
    }

    /// Drops installs whose pieces stopped coming more than [`STAGED_LIMIT`] ago.
    pub fn expire(&mut self) {
        self.staged.retain(|_, s| s.since.elapsed() < STAGED_LIMIT);
    }

    /// The node crashed: what it staged is gone.
    pub fn crashed(&mut self) {
        self.staged.clear();
    }

    /// Installs being staged now.
    pub fn staged(&self) -> usize {
        self.staged.len()
    }
}

/// Checks an install's layout against the node's catalog copy of the table.
fn check_layout(
    layout: &TableLayout,
    partition: u32,
    def: Option<&TableDef>,
) -> Result<(), String> {
    let table = &layout.table;
    let Some(def) = def else {
        return Err(format!("unknown table {table}"));
    };
    if def.name.to_lowercase() != *table
        || def.schema.types() != layout.schema.types()
        || def.primary_key != layout.primary_key
    {
        return Err(format!(
            "the install's layout of {table} does not match the catalog's"
        ));
    }
    if partition >= def.partitions {
        return Err(format!(
            "{table} has {} partitions, not partition {partition}",
            def.partitions
        ));
    }
    Ok(())
}

/// Replaces the node's copy by the staged one, with the layout's secondary indexes (logged
/// and durable first on a node with a data directory); returns the copy's version.
fn install(shared: &NodeShared, staged: Staged) -> Result<u64, String> {
    let Staged {
        layout,
        partition,
        version,
        part,
        ..
    } = staged;
    let rows = part.chunks().iter().map(|b| b.as_ref().clone()).collect();
    let change = Change::Install {
        table: layout.table.clone(),
        partition,
        version,
        rows: Some((layout, rows)),
    };
    shared
        .change_durably(change)
        .map_err(|e| format!("{}: {e}", shared.name))?;
    Ok(version)
}

/// An answer to a resync: a piece of rows from the source, or the target's install answer.
#[derive(Debug)]
pub enum ResyncReply {
    /// From the source.
    Rows(Box<PartitionRows>),
    /// From the target.
    Installed(PartitionInstalled),
}

/// Answers to resyncs in progress, which the client node hands to the waiting client (by
/// request id).
pub type ResyncReplies = crate::replication::waiters::Waiters<ResyncReply>;

/// What the client needs to resync copies.
pub struct Resync<'a> {
    /// The network the messages travel on.
    pub network: &'a Network,
    /// The node they are sent from (the client).
    pub client: NodeId,
    /// Whether a data node is up and reachable now.
    pub up: &'a dyn Fn(NodeId) -> bool,
    /// Where the client node puts the answers.
    pub replies: &'a ResyncReplies,
    /// Request ids (the client's sequence of query and write ids).
    pub ids: &'a AtomicU64,
    /// Display names.
    pub names: &'a [String],
}

/// What a resync did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ResyncOutcome {
    /// Copies made current.
    pub refreshed: usize,
    /// Stale copies on live nodes that stay stale (no live current copy, or every try
    /// failed).
    pub failed: usize,
}

impl Resync<'_> {
    fn name(&self, n: NodeId) -> String {
        self.names
            .get(n as usize)
            .cloned()
            .unwrap_or_else(|| format!("node-{n}"))
    }

    /// Refreshes every stale copy on a live node of the tables `tables` (layout, copies per
    /// partition) from a live current copy, marking it current in `book` once its node
    /// installed it at the committed version. The caller holds the catalog's write lock.
    pub fn run(
        &self,
        book: &mut ReplicaBook,
        tables: &[(TableLayout, Arc<Vec<Vec<NodeId>>>)],
    ) -> ResyncOutcome {
        let mut outcome = ResyncOutcome::default();
        // Nodes that went down or stopped answering during this run are not asked again in
        // it: one silent node costs one [`IDLE_LIMIT`], not one per copy.
        let mut silent: HashSet<NodeId> = HashSet::new();
        for (layout, copies) in tables {
            let table = layout.table.as_str();
            for (p, holders) in copies.iter().enumerate() {
                let p = p as u32;
                let stale: Vec<NodeId> = holders
                    .iter()
                    .copied()
                    .filter(|&n| (self.up)(n) && book.is_stale(table, p, n))
                    .collect();
                if stale.is_empty() {
                    continue;
                }
                let sources: Vec<NodeId> = holders
                    .iter()
                    .copied()
                    .filter(|&n| (self.up)(n) && !book.is_stale(table, p, n))
                    .collect();
                let version = book.committed(table, p);
                for n in stale {
                    let mut done = false;
                    for &src in &sources {
                        if silent.contains(&n) || silent.contains(&src) {
                            continue;
                        }
                        match self.copy(layout, p, version, src, n) {
                            Ok(()) => {
                                done = true;
                                break;
                            }
                            Err(failure) => {
                                tracing::warn!(
                                    "resync of partition {p} of {table} on {} from {}: {}",
                                    self.name(n),
                                    self.name(src),
                                    failure.message
                                );
                                silent.extend(failure.silent);
                            }
                        }
                    }
                    if done {
                        book.mark_stale(table, p, n, false);
                        outcome.refreshed += 1;
                    } else {
                        if sources.is_empty() {
                            tracing::warn!(
                                "partition {p} of {table} on {} stays stale: no live current \
                                 copy",
                                self.name(n)
                            );
                        }
                        outcome.failed += 1;
                    }
                }
            }
        }
        outcome
    }

    /// Copies `src`'s copy of `layout.table`'s partition `p` (which must be at `version`) to
    /// node `dst`, waiting for its install.
    fn copy(
        &self,
        layout: &TableLayout,
        p: u32,
        version: u64,
        src: NodeId,
        dst: NodeId,
    ) -> Result<(), Failure> {
        let request = self.ids.fetch_add(1, Ordering::Relaxed);
        let rx = self.replies.register(request);
        let result = self.exchange(&rx, request, layout, p, version, src, dst);
        self.replies.unregister(request);
        result
    }

    #[allow(clippy::too_many_arguments)]
    fn exchange(
        &self,
        rx: &Receiver<(NodeId, ResyncReply)>,
        request: u64,
        layout: &TableLayout,
        p: u32,
        version: u64,
        src: NodeId,
        dst: NodeId,
    ) -> Result<(), Failure> {
        let fetch = PartitionFetch {
            request,
            table: layout.table.clone(),
            partition: p,
        };
        if !self
            .network
            .send(self.client, src, &NetMessage::PartitionFetch(fetch))
        {
            return Err(Failure::of(Some(src), "the fetch could not be sent"));
        }
        let mut deadline = Instant::now() + IDLE_LIMIT;
        let mut next_piece = 0u32;
        let mut all_sent = false;
        loop {
            for n in [src, dst] {
                // The source matters only until it sent every piece.
                if !(self.up)(n) && (n == dst || !all_sent) {
                    return Err(Failure::of(Some(n), format!("{} went down", self.name(n))));
                }
            }
            let now = Instant::now();
            if now >= deadline {
                let waited_for = if all_sent { dst } else { src };
                return Err(Failure::of(
                    Some(waited_for),
                    format!(
                        "no answer from {} within {IDLE_LIMIT:?}",
                        self.name(waited_for)
                    ),
                ));
            }
            let wait = (deadline - now).min(Duration::from_millis(20));
            let Ok((from, reply)) = rx.recv_timeout(wait) else {
                continue;
            };
            match reply {
                ResyncReply::Rows(rows) if from == src && !all_sent => {
                    if let Some(e) = rows.error {
                        return Err(Failure::of(None, e));
                    }
                    if rows.version != version {
                        return Err(Failure::of(
                            None,
                            format!(
                                "the source's copy is at version {}, not the committed \
                                 {version}",
                                rows.version
                            ),
                        ));
                    }
                    if rows.piece != next_piece {
                        return Err(Failure::of(
                            None,
                            format!("piece {} came where {next_piece} was due", rows.piece),
                        ));
                    }
                    next_piece += 1;
                    all_sent = rows.last;
                    let mut layout = layout.clone();
                    for c in rows.indexed {
                        if !layout.indexed.contains(&c) {
                            layout.indexed.push(c);
                        }
                    }
                    let install = PartitionInstall {
                        request,
                        layout,
                        partition: p,
                        version,
                        piece: rows.piece,
                        last: rows.last,
                        rows: rows.rows,
                    };
                    let msg = NetMessage::PartitionInstall(Box::new(install));
                    if !self.network.send(self.client, dst, &msg) {
                        return Err(Failure::of(Some(dst), "a piece could not be sent"));
                    }
                }
                ResyncReply::Installed(done) if from == dst => {
                    return match done.error {
                        Some(e) => Err(Failure::of(None, e)),
                        None if !all_sent => {
                            Err(Failure::of(None, "installed before its last piece"))
                        }
                        None if done.version != version => Err(Failure::of(
                            None,
                            format!("installed at version {}, not {version}", done.version),
                        )),
                        None => Ok(()),
                    };
                }
                _ => continue,
            }
            deadline = Instant::now() + IDLE_LIMIT;
        }
    }
}

/// Why one copy's resync failed.
#[derive(Debug)]
struct Failure {
    /// A node that went down or did not answer (not asked again in this run).
    silent: Option<NodeId>,
    /// What happened.
    message: String,
}

impl Failure {
    fn of(silent: Option<NodeId>, message: impl Into<String>) -> Self {
        Failure {
            silent,
            message: message.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::breaker::{BreakerConfig, JoinMode};
    use std::sync::atomic::AtomicBool;
    use weir_operators::{Column, DataType, Field, Schema, Value};
    use weir_planner::IndexDef;

    fn schema() -> Schema {
        Schema::new(vec![
            Field::new("id", DataType::Int64),
            Field::new("x", DataType::Int64),
        ])
    }

    fn layout() -> TableLayout {
        TableLayout {
            table: "t".into(),
            schema: schema(),
            primary_key: vec![0],
            indexed: vec![1],
        }
    }

    fn def() -> TableDef {
        TableDef {
            name: "T".into(),
            schema: schema(),
            primary_key: vec![0],
            indexes: vec![IndexDef::on("t_x", 1)],
            not_null: vec![],
            partitions: 4,
            external: None,
            defaults: Vec::new(),
            foreign_keys: Vec::new(),
            checks: Vec::new(),
            comments: Default::default(),
        }
    }

    fn node() -> NodeShared {
        NodeShared::new(
            1,
            "node-1",
            true,
            1 << 30,
            JoinMode::Guarded,
            &BreakerConfig::default(),
        )
    }

    fn rows(ids: std::ops::Range<i64>) -> Batch {
        Batch::try_new(vec![
            Column::from_i64(ids.clone().collect()),
            Column::from_i64(ids.map(|i| i * 10).collect()),
        ])
        .unwrap()
    }

    fn piece(request: u64, piece: u32, last: bool, rows: Vec<Batch>) -> PartitionInstall {
        PartitionInstall {
            request,
            layout: layout(),
            partition: 2,
            version: 7,
            piece,
            last,
            rows,
        }
    }

    #[test]
    fn an_install_in_pieces_replaces_the_copy_and_builds_its_index() {
        let node = node();
        let mut installs = Installs::default();
        let def = def();
        assert!(installs
            .take(&node, Some(&def), piece(1, 0, false, vec![rows(0..5)]))
            .is_none());
        let done = installs
            .take(&node, Some(&def), piece(1, 1, true, vec![rows(5..8)]))
            .expect("an answer at the last piece");
        assert_eq!(done.error, None);
        assert_eq!(done.version, 7);
        assert_eq!(installs.staged(), 0);
        let storage = node.storage.read().unwrap();
        assert_eq!(storage.version("t", 2), 7);
        let store = &storage.tables["t"];
        assert_eq!(store.get(2).map(PartitionData::num_rows), Some(8));
        assert_eq!(store.indexed_columns(), vec![1]);
    }

    #[test]
    fn an_install_of_an_unknown_or_mismatched_table_is_refused_with_an_answer() {
        let node = node();
        let mut installs = Installs::default();
        let unknown = installs
            .take(&node, None, piece(1, 0, true, vec![rows(0..3)]))
            .expect("an answer");
        assert!(unknown.error.unwrap().contains("unknown table"));
        // Later pieces of a refused install are dropped without another answer.
        assert!(installs
            .take(&node, None, piece(1, 1, true, vec![]))
            .is_none());
        let mut other = def();
        other.schema = Schema::new(vec![Field::new("id", DataType::Int64)]);
        let mismatched = installs
            .take(&node, Some(&other), piece(2, 0, true, vec![rows(0..3)]))
            .expect("an answer");
        assert!(mismatched.error.unwrap().contains("does not match"));
        // Rows that break the key, a piece without its first, a partition out of range.
        let def = def();
        let dup = installs
            .take(
                &node,
                Some(&def),
                piece(3, 0, true, vec![rows(0..3), rows(2..4)]),
            )
            .expect("an answer");
        assert!(dup.error.is_some());
        let orphan = installs
            .take(&node, Some(&def), piece(4, 1, true, vec![]))
            .expect("an answer");
        assert!(orphan.error.is_some());
        let mut far = piece(5, 0, true, vec![]);
        far.partition = 9;
        assert!(installs
            .take(&node, Some(&def), far)
            .expect("an answer")
            .error
            .is_some());
        assert_eq!(installs.staged(), 0);
        assert!(node.storage.read().unwrap().tables.is_empty());
    }

    #[test]
    fn an_install_older_than_the_copy_is_refused() {
        let node = node();
        node.storage.write().unwrap().restore_version("t", 2, 9);
        let mut installs = Installs::default();
        let r = installs
            .take(&node, Some(&def()), piece(1, 0, true, vec![rows(0..3)]))
            .expect("an answer");
        assert!(r.error.unwrap().contains("newer"));
        assert_eq!(node.storage.read().unwrap().version("t", 2), 9);
    }

    #[test]
    fn a_copy_is_cut_into_pieces_that_fit_and_a_row_too_large_is_an_error() {
        let chunks: Vec<Arc<Batch>> = vec![Arc::new(rows(0..100)), Arc::new(rows(100..150))];
        let one = split(&chunks, 1 << 20, 1 << 30).unwrap();
        assert_eq!(one.len(), 1);
        let small = split(&chunks, 16 * 10, 1 << 30).unwrap();
        assert!(small.len() >= 15, "{} pieces", small.len());
        let mut ids = Vec::new();
        for p in &small {
            assert!(p.iter().map(Batch::data_size).sum::<usize>() <= 160);
            for b in p {
                ids.extend(b.rows().into_iter().map(|r| r[0].clone()));
            }
        }
        assert_eq!(ids, (0..150).map(Value::Int).collect::<Vec<_>>());
        assert_eq!(split(&[], 100, 100).unwrap(), vec![Vec::<Batch>::new()]);
        assert!(split(&chunks, 8, 8).is_err());
    }

    #[test]
    fn the_resync_messages_round_trip_through_the_codec_with_their_kinds() {
        use crate::wire::messages::MessageKind;
        let messages = [
            NetMessage::PartitionFetch(PartitionFetch {
                request: 11,
                table: "t".into(),
                partition: 2,
            }),
            NetMessage::PartitionRows(Box::new(PartitionRows {
                request: 12,
                version: 7,
                indexed: vec![1],
                piece: 0,
                last: true,
                rows: vec![rows(0..4)],
                error: None,
            })),
            NetMessage::PartitionInstall(Box::new(piece(13, 0, true, vec![rows(0..4)]))),
            NetMessage::PartitionInstalled(PartitionInstalled {
                request: 14,
                version: 7,
                error: Some("no".into()),
            }),
        ];
        let kinds = [
            MessageKind::PartitionFetch,
            MessageKind::PartitionRows,
            MessageKind::PartitionInstall,
            MessageKind::PartitionInstalled,
        ];
        for (i, (msg, kind)) in messages.iter().zip(kinds).enumerate() {
            let bytes = codec::encode(msg).unwrap();
            assert_eq!(&codec::decode::<NetMessage>(&bytes).unwrap(), msg);
            assert_eq!(msg.kind(), kind);
            assert_eq!(msg.query(), 11 + i as u64);
            assert!(MessageKind::ALL.contains(&kind));
            assert_eq!(kind.name(), format!("{kind:?}"));
        }
    }

    /// A node that takes every message and never answers.
    struct Silent;

    impl crate::wire::carrier::Inbox for Silent {
        fn deliver(&self, _: crate::wire::carrier::Deliver) {}

        fn is_open(&self) -> bool {
            true
        }

        fn crash(&self) {}
    }

    /// Resyncs node 1's stale copies of partitions 0 and 1 of `t` from node 0 on a network
    /// where every node takes messages and none answers; `up` says which nodes are up.
    /// Returns the outcome, whether both copies are still stale, and how long it took.
    fn resync_from_a_silent_source(up: &dyn Fn(NodeId) -> bool) -> (ResyncOutcome, bool, Duration) {
        let network = Network::new();
        for n in [0, 1, 9] {
            network.attach(n, Some(Arc::new(Silent)));
        }
        let replies = ResyncReplies::default();
        let ids = AtomicU64::new(1);
        let names = vec!["node-0".to_string(), "node-1".to_string()];
        let resync = Resync {
            network: &network,
            client: 9,
            up,
            replies: &replies,
            ids: &ids,
            names: &names,
        };
        let mut book = ReplicaBook::default();
        for p in 0..2 {
            book.set_committed("t", p, 3);
            book.mark_stale("t", p, 1, true);
        }
        let started = Instant::now();
        let copies = Arc::new(vec![vec![0, 1], vec![0, 1]]);
        let outcome = resync.run(&mut book, &[(layout(), copies)]);
        let took = started.elapsed();
        // Nothing is left waiting.
        assert_eq!(replies.waiting(), 0);
        let stale = book.is_stale("t", 0, 1) && book.is_stale("t", 1, 1);
        (outcome, stale, took)
    }

    const FAILED: ResyncOutcome = ResyncOutcome {
        refreshed: 0,
        failed: 2,
    };

    #[test]
    fn a_source_that_goes_down_mid_resync_leaves_the_copy_stale_without_waiting_out_the_limit() {
        let source_up = Arc::new(AtomicBool::new(true));
        {
            let source_up = source_up.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(100));
                source_up.store(false, Ordering::SeqCst);
            });
        }
        let up = |n: NodeId| n != 0 || source_up.load(Ordering::SeqCst);
        let (outcome, stale, took) = resync_from_a_silent_source(&up);
        assert_eq!((outcome, stale), (FAILED, true));
        assert!(took < IDLE_LIMIT, "{took:?}");
    }

    #[test]
    fn a_source_that_never_answers_times_out_once_and_the_copies_stay_stale() {
        let (outcome, stale, took) = resync_from_a_silent_source(&|_| true);
        assert_eq!((outcome, stale), (FAILED, true));
        assert!(
            took >= IDLE_LIMIT && took < IDLE_LIMIT + Duration::from_secs(2),
            "{took:?}"
        );
    }

    #[test]
    fn the_source_sends_its_rows_version_and_indexes() {
        let node = node();
        let mut installs = Installs::default();
        installs.take(&node, Some(&def()), piece(1, 0, true, vec![rows(0..8)]));
        let storage = node.storage.read().unwrap();
        let fetch = PartitionFetch {
            request: 5,
            table: "t".into(),
            partition: 2,
        };
        let out = pieces(&storage, &fetch);
        assert_eq!(out.len(), 1);
        assert_eq!(
            (out[0].version, out[0].last, out[0].indexed.clone()),
            (7, true, vec![1])
        );
        assert_eq!(out[0].rows.iter().map(Batch::num_rows).sum::<usize>(), 8);
        let missing = pieces(
            &storage,
            &PartitionFetch {
                table: "u".into(),
                ..fetch
            },
        );
        assert!(missing[0].error.is_some());
    }
}
