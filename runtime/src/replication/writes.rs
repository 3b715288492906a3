//! Replicated writes: how rows reach every copy of their partitions, and how a copy that
//! missed writes catches up before it serves reads again.
//!
//! A write travels as messages through the (simulated, possibly faulty) network in two
//! phases, coordinated by the client node while it holds the catalog's write lock (so writes
//! are serialized):
//! 1. [`WritePrepare`] to every node holding a live, current copy of a written partition: the
//!    node checks the change against its copy (duplicate keys, NULL keys), that its copy is
//!    at the version before this write and that no other undecided write holds the partition
//!    (a write of another client: a conflict, [`WriteRefusal::Conflict`]), then holds it. Any
//!    refusal aborts the write on every node ([`WriteAbort`]): a multi-row INSERT, UPDATE or
//!    DELETE is all or nothing.
//! 2. [`WriteCommit`]: every prepared node applies the change and sets each copy's version.
//!    The write is acknowledged once every copy that is still live has applied it.
//!
//! A change to a partition deletes rows by key, then inserts rows ([`PartitionWrite`]); a
//! change to a table without a key rewrites whole rows ([`Rewrite`]) in every partition.
//!
//! Every partition has a committed version (its write sequence) on the client, and every copy
//! the version of the last write it applied. A copy that missed a write (its node was down, or
//! went down mid-write) is *stale*: queries do not read it, and when its node restarts (or
//! when a node holding a newer copy does) it is refreshed from a live copy at the committed
//! version before it serves. A partition with no live current copy cannot be read or written:
//! queries and writes fail naming a node that holds it.

use crate::error::{Error, Result};
use crate::node::state::{ChangeError, NodeShared};
use crate::node::storage::{new_partition, Change};
use crate::wire::ids::NodeId;
use crate::wire::messages::{
    NetMessage, PartitionWrite, Rewrite, TableLayout, WriteAbort, WriteCommit, WritePhase,
    WritePrepare, WriteRefusal, WriteReply,
};
use crate::wire::network::Network;
use crossbeam_channel::Receiver;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use weir_operators::table_store::TableStore;

/// Replies to writes in progress, which the client node hands to the waiting writer (by
/// write id).
pub type WriteReplies = crate::replication::waiters::Waiters<WriteReply>;

/// The client's record of partition versions: the committed version of every written
/// partition, and which copies are stale (behind it).
#[derive(Debug, Default)]
pub struct ReplicaBook {
    committed: HashMap<String, HashMap<u32, u64>>,
    stale: HashMap<String, HashSet<(u32, NodeId)>>,
}

impl ReplicaBook {
    /// Committed version of `table`'s partition `p` (0 before any write).
    pub fn committed(&self, table: &str, p: u32) -> u64 {
        self.committed
            .get(table)
            .and_then(|t| t.get(&p))
            .copied()
            .unwrap_or(0)
    }

    /// Whether node `n`'s copy of `table`'s partition `p` is behind the committed version.
    pub fn is_stale(&self, table: &str, p: u32, n: NodeId) -> bool {
        self.stale.get(table).is_some_and(|s| s.contains(&(p, n)))
    }

    /// Stale copies by table (lowercase name), for placement.
    pub fn stale_copies(&self) -> &HashMap<String, HashSet<(u32, NodeId)>> {
        &self.stale
    }

    /// Forgets a dropped table.
    pub fn drop_table(&mut self, table: &str) {
        self.committed.remove(table);
        self.stale.remove(table);
    }

    /// Keeps what is known of `table` under its new name `to` (`ALTER TABLE ... RENAME TO`).
    pub fn rename_table(&mut self, table: &str, to: &str) {
        if let Some(versions) = self.committed.remove(table) {
            self.committed.insert(to.to_string(), versions);
        }
        if let Some(stale) = self.stale.remove(table) {
            self.stale.insert(to.to_string(), stale);
        }
    }

    /// Sets the committed version of `table`'s partition `p` (learnt from the copies' versions
    /// on data nodes of other processes).
    pub fn set_committed(&mut self, table: &str, p: u32, version: u64) {
        if version > 0 {
            self.committed
                .entry(table.to_string())
                .or_default()
                .insert(p, version);
        } else if let Some(versions) = self.committed.get_mut(table) {
            versions.remove(&p);
        }
    }

    /// Counts node `n`'s copy of `table`'s partition `p` stale, or current again.
    pub fn mark_stale(&mut self, table: &str, p: u32, n: NodeId, stale: bool) {
        self.set_stale(table, p, n, stale);
    }

    fn set_stale(&mut self, table: &str, p: u32, n: NodeId, stale: bool) {
        if stale {
            self.stale
                .entry(table.to_string())
                .or_default()
                .insert((p, n));
        } else if let Some(s) = self.stale.get_mut(table) {
            s.remove(&(p, n));
            if s.is_empty() {
                self.stale.remove(table);
            }
        }
    }
}

/// A data node's side of writes: the checks of phase one, and the changes each phase makes
/// to the node's storage ([`Change::Prepared`], [`Change::Committed`], [`Change::Aborted`]),
/// logged first on a node with a data directory. Each returns the reply and the LSN it must
/// wait for: the reply goes once the change is durable.
pub mod participant {
    use super::*;

    fn refusal(shared: &NodeShared, e: ChangeError) -> WriteRefusal {
        match e {
            ChangeError::Disk(e) => WriteRefusal::Disk {
                node: shared.name.clone(),
                message: e.to_string(),
            },
            ChangeError::Refused(why) => WriteRefusal::Other(format!("{}: {why}", shared.name)),
        }
    }

    /// Phase one on node `shared`: checks the rows against the node's copies and holds them;
    /// or, for a write with this node as its only participant (`req.commit`), checks and
    /// applies them at once, answering for the commit. A piece of a write cut in pieces is
    /// held with the others; the reply comes once every piece is held (`None` before), or at
    /// once for a piece refused.
    pub fn prepare(shared: &NodeShared, req: WritePrepare) -> (Option<WriteReply>, Option<u64>) {
        let write = req.write;
        let one_phase = req.commit;
        let (piece, pieces) = (req.piece, req.pieces as usize);
        let phase = if one_phase {
            WritePhase::Commit
        } else {
            WritePhase::Prepare
        };
        let reply = |error| WriteReply {
            write,
            phase,
            error,
        };
        {
            let storage = shared.storage.read().unwrap_or_else(|e| e.into_inner());
            if storage.is_finished(write) {
                return (Some(reply(None)), None);
            }
            let (held, duplicate) = storage.pieces_held(write, piece);
            if duplicate {
                return ((held == pieces).then(|| reply(None)), None);
            }
            let table = &req.layout.table;
            let empty = new_partition(&req.layout);
            // Partitions another undecided write holds (a write of another client).
            let held: HashSet<u32> = storage
                .prepared()
                .filter(|other| other.write != write && other.layout.table == *table)
                .flat_map(|other| other.parts.iter().map(|w| w.partition))
                .collect();
            for w in &req.parts {
                let p = w.partition;
                let have = storage.version(table, p);
                if have.checked_add(1) != Some(w.version) {
                    let why = format!(
                        "{}: copy of partition {p} of {table} is at version {have}, not {}",
                        shared.name,
                        w.version.wrapping_sub(1)
                    );
                    return (Some(reply(Some(WriteRefusal::Conflict(why)))), None);
                }
                if held.contains(&p) {
                    let why = format!(
                        "{}: partition {p} of {table} is held by another write not decided yet",
                        shared.name
                    );
                    return (Some(reply(Some(WriteRefusal::Conflict(why)))), None);
                }
                let part = storage
                    .tables
                    .get(table)
                    .and_then(|t| t.get(p))
                    .unwrap_or(&empty);
                let check = match &w.delete {
                    Some(keys) => part.check_replace(keys, &w.insert),
                    None => part.check_insert(&w.insert),
                };
                if let Err(e) = check {
                    return (Some(reply(Some(WriteRefusal::of(e)))), None);
                }
            }
            if let Some(r) = &req.rewrite {
                if let Err(e) = empty.check_rewrite(&r.old, r.new.as_ref()) {
                    return (Some(reply(Some(WriteRefusal::of(e)))), None);
                }
            }
        }
        match shared.change(Change::Prepared(req)) {
            Ok(_) if one_phase => {
                let (reply, lsn) = commit(shared, write);
                (Some(reply), lsn)
            }
            Ok(lsn) => {
                let storage = shared.storage.read().unwrap_or_else(|e| e.into_inner());
                let (held, _) = storage.pieces_held(write, piece);
                ((held == pieces).then(|| reply(None)), lsn)
            }
            Err(e) => (Some(reply(Some(refusal(shared, e)))), None),
        }
    }

    /// Phase two on node `shared`: applies the held rows and sets the copies' versions.
    pub fn commit(shared: &NodeShared, write: u64) -> (WriteReply, Option<u64>) {
        let reply = |error| WriteReply {
            write,
            phase: WritePhase::Commit,
            error,
        };
        {
            let storage = shared.storage.read().unwrap_or_else(|e| e.into_inner());
            if storage.is_finished(write) {
                return (reply(None), None);
            }
            if !storage.is_prepared(write) {
                let why = format!("{}: write {write} was not prepared", shared.name);
                return (reply(Some(WriteRefusal::Other(why))), None);
            }
        }
        match shared.change(Change::Committed { write }) {
            Ok(lsn) => (reply(None), lsn),
            Err(e) => (reply(Some(refusal(shared, e))), None),
        }
    }

    /// Drops the rows held for `write`.
    pub fn abort(shared: &NodeShared, write: u64) {
        if let Err(e) = shared.change(Change::Aborted { write }) {
            tracing::warn!("{}: {e}", shared.name);
        }
    }

    /// When each write prepared on a node was prepared, so that one its coordinator never
    /// decides (a client that died between the phases) does not hold its rows for ever.
    #[derive(Debug)]
    pub struct PreparedSince {
        since: HashMap<u64, Instant>,
        ttl: Duration,
    }

    impl PreparedSince {
        /// Writes undecided for longer than `ttl` expire.
        pub fn new(ttl: Duration) -> Self {
            PreparedSince {
                since: HashMap::new(),
                ttl,
            }
        }

        /// Write `write` was prepared (now).
        pub fn prepared(&mut self, write: u64) {
            self.since.entry(write).or_insert_with(Instant::now);
        }

        /// Write `write` was committed or aborted.
        pub fn decided(&mut self, write: u64) {
            self.since.remove(&write);
        }

        /// Aborts on node `shared` every write still prepared there that is older than the
        /// time to live; returns how many. A commit that comes later is refused ("not
        /// prepared"), and its coordinator counts this copy stale.
        pub fn expire(&mut self, shared: &NodeShared) -> u64 {
            let ttl = self.ttl;
            let old: Vec<u64> = self
                .since
                .iter()
                .filter(|(_, at)| at.elapsed() >= ttl)
                .map(|(w, _)| *w)
                .collect();
            let mut expired = 0;
            for write in old {
                self.since.remove(&write);
                let held = {
                    let storage = shared.storage.read().unwrap_or_else(|e| e.into_inner());
                    storage.is_prepared(write)
                };
                if held {
                    tracing::warn!(
                        "{}: write {write} prepared {ttl:?} ago and not decided: aborted",
                        shared.name
                    );
                    abort(shared, write);
                    expired += 1;
                }
            }
            expired
        }
    }
}

/// Cuts a node's share of a write into pieces of at most `piece_bytes` bytes of rows, whole
/// partitions each (a partition's rows are checked together, duplicates included); an error
/// when one partition's change is too large for any message.
fn cut(
    parts: Vec<PartitionWrite>,
    piece_bytes: usize,
    table: &str,
) -> Result<Vec<Vec<PartitionWrite>>> {
    let max = crate::wire::codec::MAX_MESSAGE_BYTES / 2;
    let mut pieces = Vec::new();
    let (mut piece, mut bytes) = (Vec::new(), 0usize);
    for w in parts {
        let size = w.insert.data_size() + w.delete.as_ref().map_or(0, |d| d.data_size());
        if size > max {
            return Err(Error::Invalid(format!(
                "a write of {size} bytes to partition {} of {table} is larger than a message \
                 may carry ({max} bytes); write it in smaller statements",
                w.partition
            )));
        }
        if bytes + size > piece_bytes && !piece.is_empty() {
            pieces.push(std::mem::take(&mut piece));
            bytes = 0;
        }
        bytes += size;
        piece.push(w);
    }
    if !piece.is_empty() || pieces.is_empty() {
        pieces.push(piece);
    }
    Ok(pieces)
}

/// What [`Coordinator::gather`] heard in one phase.
struct Heard {
    /// The nodes that answered, with their refusals.
    answered: Vec<(NodeId, Option<WriteRefusal>)>,
    /// Whether the deadline passed before every live node answered.
    timed_out: bool,
}

/// A write's messages by node: each node's partitions, and each partition's copies that take
/// it ([`Coordinator::route`]).
pub(super) struct Routed {
    /// Each node's share of the write.
    pub per_node: BTreeMap<NodeId, Vec<PartitionWrite>>,
    /// Each written partition with the copies that take it.
    pub targets_of: Vec<(u32, Vec<NodeId>)>,
}

impl Routed {
    /// The nodes taking part.
    pub fn nodes(&self) -> HashSet<NodeId> {
        self.per_node.keys().copied().collect()
    }
}

/// The partitions of `targets_of` that `table` has never written (their first write is
/// recorded before it commits).
pub(super) fn first_writes(
    book: &ReplicaBook,
    table: &str,
    targets_of: &[(u32, Vec<NodeId>)],
) -> Vec<u32> {
    targets_of
        .iter()
        .map(|(p, _)| *p)
        .filter(|&p| book.committed(table, p) == 0)
        .collect()
}

/// What a writer needs to reach the data nodes.
pub struct Coordinator<'a> {
    /// The network writes travel on.
    pub network: &'a Network,
    /// The node writes are sent from (the client).
    pub client: NodeId,
    /// Every node (liveness).
    pub nodes: &'a [Arc<NodeShared>],
    /// Display names.
    pub names: &'a [String],
    /// Where the client node puts replies.
    pub replies: &'a WriteReplies,
    /// A write not finished after this long fails.
    pub timeout: Duration,
    /// Most bytes of rows in one [`WritePrepare`] (see
    /// [`MAX_WRITE_PIECE_BYTES`](crate::wire::messages::MAX_WRITE_PIECE_BYTES)).
    pub piece_bytes: usize,
    /// The epoch of the writer's catalog ([`WritePrepare::catalog_epoch`]).
    pub catalog_epoch: u64,
    /// Where a cluster of processes records what writes do to the copies (its catalog
    /// log); `None` in one process.
    pub records: Option<&'a dyn WriteRecords>,
}

/// What a cluster of processes records of its writes in its catalog log, so that any client,
/// connecting at any time, knows which copies hold their partitions' rows.
pub trait WriteRecords {
    /// `partitions` of `table` take their first write (recorded before it can commit): a
    /// copy of them a restarted node no longer holds is lost, not empty.
    fn first_writes(&self, table: &str, partitions: &[u32]) -> Result<()>;
    /// The copies `(node, partition, version)` of `table` missed a committed write, which
    /// gave the partition `version` (recorded before the write is acknowledged): they are
    /// stale until repaired to that version or a later one, whoever connects.
    fn missed(&self, table: &str, copies: &[(NodeId, u32, u64)]) -> Result<()>;
}

impl Coordinator<'_> {
    fn up(&self, n: NodeId) -> bool {
        self.nodes[n as usize].up.load(Ordering::SeqCst)
    }

    fn name(&self, n: NodeId) -> String {
        self.names
            .get(n as usize)
            .cloned()
            .unwrap_or_else(|| format!("node-{n}"))
    }

    fn send(&self, to: NodeId, msg: NetMessage) {
        self.network.send(self.client, to, &msg);
    }

    /// Records `partitions` of `table` as written ([`WriteRecords::first_writes`]).
    pub(super) fn record_first_writes(&self, table: &str, partitions: &[u32]) -> Result<()> {
        match self.records {
            Some(records) if !partitions.is_empty() => records.first_writes(table, partitions),
            _ => Ok(()),
        }
    }

    /// Waits for a reply of `phase` from every node in `pending`, dropping nodes that go down,
    /// until `deadline`. Returns the nodes that answered, with their refusals, and whether the
    /// deadline passed before every live node did. A reply that arrived before the deadline
    /// counts even when it is read after it (the writer may have been held up meanwhile).
    fn gather(
        &self,
        rx: &Receiver<(NodeId, WriteReply)>,
        phase: WritePhase,
        mut pending: HashSet<NodeId>,
        deadline: Instant,
    ) -> Heard {
        let mut answered = Vec::new();
        while !pending.is_empty() {
            pending.retain(|&n| self.up(n));
            if pending.is_empty() {
                break;
            }
            if let Ok((from, reply)) = rx.try_recv() {
                if reply.phase == phase && pending.remove(&from) {
                    answered.push((from, reply.error));
                }
                continue;
            }
            let now = Instant::now();
            if now >= deadline {
                return Heard {
                    answered,
                    timed_out: true,
                };
            }
            let wait = (deadline - now).min(Duration::from_millis(5));
            if let Ok((from, reply)) = rx.recv_timeout(wait) {
                if reply.phase == phase && pending.remove(&from) {
                    answered.push((from, reply.error));
                }
            }
        }
        Heard {
            answered,
            timed_out: false,
        }
    }

    /// Writes `parts` (the change to each partition; their versions are set here) of the
    /// table laid out as `layout`, and `rewrite` (a table without a key: applied in every
    /// partition of `parts`), to every live, current copy (`copies[p]`, primary first), as
    /// write `id`. All or nothing: a refusal by any copy aborts the write everywhere.
    pub fn write(
        &self,
        book: &mut ReplicaBook,
        id: u64,
        layout: &TableLayout,
        copies: &[Vec<NodeId>],
        parts: Vec<PartitionWrite>,
        rewrite: Option<Rewrite>,
    ) -> Result<()> {
        let routed = self.route(book, &layout.table, copies, parts)?;
        let rx = self.replies.register(id);
        let result = self.run(book, id, layout, routed, rewrite, copies, &rx);
        self.replies.unregister(id);
        result
    }

    /// Which live, current copies take each of `parts` of `table` (`copies[p]`, primary
    /// first), with the versions the parts give their partitions set.
    pub(super) fn route(
        &self,
        book: &ReplicaBook,
        table: &str,
        copies: &[Vec<NodeId>],
        parts: Vec<PartitionWrite>,
    ) -> Result<Routed> {
        let mut per_node: BTreeMap<NodeId, Vec<PartitionWrite>> = BTreeMap::new();
        let mut targets_of: Vec<(u32, Vec<NodeId>)> = Vec::with_capacity(parts.len());
        for mut w in parts {
            let p = w.partition;
            let copies = &copies[p as usize];
            let targets: Vec<NodeId> = copies
                .iter()
                .copied()
                .filter(|&n| self.up(n) && !book.is_stale(table, p, n))
                .collect();
            if targets.is_empty() {
                return Err(Error::NodeDown(self.name(copies[0])));
            }
            w.version = book.committed(table, p) + 1;
            // Every copy but the last gets a clone; the last takes the rows.
            let (&last, others) = targets.split_last().expect("targets is not empty");
            for &n in others {
                per_node.entry(n).or_default().push(w.clone());
            }
            per_node.entry(last).or_default().push(w);
            targets_of.push((p, targets));
        }
        Ok(Routed {
            per_node,
            targets_of,
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn run(
        &self,
        book: &mut ReplicaBook,
        id: u64,
        layout: &TableLayout,
        routed: Routed,
        rewrite: Option<Rewrite>,
        copies: &[Vec<NodeId>],
        rx: &Receiver<(NodeId, WriteReply)>,
    ) -> Result<()> {
        // Each phase waits for its replies at most the timeout from when its messages went
        // out: recording the first writes in the catalog log (a proposal, which may wait for
        // the log's leader) does not eat the commit's wait. A commit gathered against a
        // deadline already past would count every copy behind, though each applied it.
        let prepare_deadline = Instant::now() + self.timeout;
        let table = layout.table.as_str();
        let nodes = routed.nodes();
        let targets_of = routed.targets_of;
        let pieces = Self::pieces(routed.per_node, self.piece_bytes, table)?;
        // A write with one participant, in one piece, needs no vote: it commits in one phase.
        let one_phase = pieces.len() == 1 && pieces[0].1.len() == 1;
        let first_writes = first_writes(book, table, &targets_of);
        if one_phase {
            // Nothing is held yet: recorded first, or not written at all.
            self.record_first_writes(table, &first_writes)?;
        }
        self.send_prepares(id, layout, pieces, &rewrite, one_phase);
        if one_phase {
            let deadline = Instant::now() + self.timeout;
            return self.finish(book, layout, &targets_of, copies, rx, nodes, true, deadline);
        }
        let voted = self.votes(rx, &nodes, &targets_of, copies, table, prepare_deadline);
        let prepared = match voted {
            Ok(prepared) => prepared,
            Err(e) => {
                self.abort(id, &nodes);
                return Err(e);
            }
        };
        // Every copy agreed: the first writes are recorded before any can commit.
        if let Err(e) = self.record_first_writes(table, &first_writes) {
            self.abort(id, &nodes);
            return Err(e);
        }
        self.commit(id, &nodes, &prepared);
        let deadline = Instant::now() + self.timeout;
        self.finish(
            book,
            layout,
            &targets_of,
            copies,
            rx,
            prepared,
            false,
            deadline,
        )
    }

    /// Each node's share of a write cut into pieces ([`cut`]).
    pub(super) fn pieces(
        per_node: BTreeMap<NodeId, Vec<PartitionWrite>>,
        piece_bytes: usize,
        table: &str,
    ) -> Result<Vec<(NodeId, Vec<Vec<PartitionWrite>>)>> {
        per_node
            .into_iter()
            .map(|(n, parts)| Ok((n, cut(parts, piece_bytes, table)?)))
            .collect()
    }

    /// Sends write `id`'s pieces to their nodes: with `one_phase`, to apply at once.
    pub(super) fn send_prepares(
        &self,
        id: u64,
        layout: &TableLayout,
        pieces: Vec<(NodeId, Vec<Vec<PartitionWrite>>)>,
        rewrite: &Option<Rewrite>,
        one_phase: bool,
    ) {
        for (n, node_pieces) in pieces {
            let count = node_pieces.len() as u32;
            for (piece, parts) in node_pieces.into_iter().enumerate() {
                let msg = WritePrepare {
                    write: id,
                    layout: layout.clone(),
                    parts,
                    rewrite: rewrite.clone(),
                    commit: one_phase,
                    piece: piece as u32,
                    pieces: count,
                    catalog_epoch: self.catalog_epoch,
                };
                self.send(n, NetMessage::WritePrepare(Box::new(msg)));
            }
        }
    }

    /// Waits for the votes of `nodes` on a write of `table` until `deadline`: the nodes that
    /// prepared it, or the error that fails it (a refusal, a timeout, a partition none of
    /// whose copies prepared it). The caller aborts a failed write.
    pub(super) fn votes(
        &self,
        rx: &Receiver<(NodeId, WriteReply)>,
        nodes: &HashSet<NodeId>,
        targets_of: &[(u32, Vec<NodeId>)],
        copies: &[Vec<NodeId>],
        table: &str,
        deadline: Instant,
    ) -> Result<HashSet<NodeId>> {
        let heard = self.gather(rx, WritePhase::Prepare, nodes.clone(), deadline);
        if heard.timed_out {
            return Err(Error::Timeout(self.timeout));
        }
        let prepared = heard.answered;
        if let Some(refusal) = prepared.iter().find_map(|(_, e)| e.clone()) {
            return Err(refusal.into_error(table));
        }
        let prepared: HashSet<NodeId> = prepared.into_iter().map(|(n, _)| n).collect();
        // Every partition needs a prepared copy, or nothing is written.
        match targets_of
            .iter()
            .find(|(_, t)| !t.iter().any(|n| prepared.contains(n)))
        {
            Some((p, _)) => Err(Error::NodeDown(self.name(copies[*p as usize][0]))),
            None => Ok(prepared),
        }
    }

    /// Undoes write `id` on `nodes`. Every node sent a prepare is told, also one that went
    /// down meanwhile (it may only have been out of reach: it would hold its partitions until
    /// the prepared write expires).
    pub(super) fn abort(&self, id: u64, nodes: &HashSet<NodeId>) {
        for &n in nodes {
            self.send(n, NetMessage::WriteAbort(WriteAbort { write: id }));
        }
    }

    /// Commits write `id` on the `prepared` nodes. A node of `nodes` that did not vote takes
    /// no part: its prepare is undone (its copies miss the write, and are marked so when it
    /// is finished).
    pub(super) fn commit(&self, id: u64, nodes: &HashSet<NodeId>, prepared: &HashSet<NodeId>) {
        for &n in prepared {
            self.send(n, NetMessage::WriteCommit(WriteCommit { write: id }));
        }
        self.abort(id, &nodes.difference(prepared).copied().collect());
    }

    /// Waits for the commit replies of `committing`, counts the write in the copies' versions,
    /// and marks stale every copy that did not apply it, including those that did not answer
    /// in time (their state is unknown; the write is decided, so the versions move and the
    /// caller gets [`Error::Timeout`]). An error when a partition has no copy that applied it.
    /// In one phase (a single participant), a refusal means nothing was applied: the write
    /// fails and no version moves.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn finish(
        &self,
        book: &mut ReplicaBook,
        layout: &TableLayout,
        targets_of: &[(u32, Vec<NodeId>)],
        copies: &[Vec<NodeId>],
        rx: &Receiver<(NodeId, WriteReply)>,
        committing: HashSet<NodeId>,
        one_phase: bool,
        deadline: Instant,
    ) -> Result<()> {
        let table = layout.table.as_str();
        let heard = self.gather(rx, WritePhase::Commit, committing, deadline);
        let committed = heard.answered;
        if one_phase && !heard.timed_out {
            if let Some((_, Some(refusal))) = committed.first() {
                return Err(refusal.clone().into_error(table));
            }
        }
        // The write is decided (its commits went out): its versions move.
        for (p, _) in targets_of {
            let next = book.committed(table, *p) + 1;
            book.committed
                .entry(table.to_string())
                .or_default()
                .insert(*p, next);
        }
        let applied: HashSet<NodeId> = committed
            .iter()
            .filter(|(_, e)| e.is_none())
            .map(|(n, _)| *n)
            .collect();
        // Every copy that did not apply this write is behind now.
        let mut missed = Vec::new();
        for (p, _) in targets_of {
            for &n in &copies[*p as usize] {
                book.set_stale(table, *p, n, !applied.contains(&n));
                if !applied.contains(&n) {
                    missed.push((n, *p, book.committed(table, *p)));
                }
            }
        }
        let recorded = match self.records {
            Some(records) if !missed.is_empty() => records.missed(table, &missed),
            _ => Ok(()),
        };
        if heard.timed_out {
            return Err(Error::Timeout(self.timeout));
        }
        if let Err(e) = recorded {
            return Err(Error::NodeDown(format!(
                "the write to {table} was applied, but the catalog log did not record the \
                 copies that missed it: {e}"
            )));
        }
        match targets_of
            .iter()
            .find(|(_, t)| !t.iter().any(|n| applied.contains(n)))
        {
            Some((p, _)) => Err(Error::NodeDown(self.name(copies[*p as usize][0]))),
            None => Ok(()),
        }
    }
}

/// Brings copies up to date after node `restarting` comes back (it counts as live here, before
/// it serves): every copy of every partition in `tables` (name, copies per partition) on a
/// live node is compared with the committed version; one that is behind is refreshed from a
/// live copy at that version, or stays stale when no such copy is up.
pub fn repair(
    book: &mut ReplicaBook,
    nodes: &[Arc<NodeShared>],
    restarting: Option<NodeId>,
    tables: &[(String, Arc<Vec<Vec<NodeId>>>)],
) {
    let live = |n: NodeId| Some(n) == restarting || nodes[n as usize].up.load(Ordering::SeqCst);
    for (table, copies) in tables {
        for (p, holders) in copies.iter().enumerate() {
            let p = p as u32;
            let want = book.committed(table, p);
            let version = |n: NodeId| {
                nodes[n as usize]
                    .storage
                    .read()
                    .unwrap_or_else(|e| e.into_inner())
                    .version(table, p)
            };
            let current: Vec<NodeId> = holders
                .iter()
                .copied()
                .filter(|&n| live(n) && version(n) == want)
                .collect();
            for &n in holders {
                if !live(n) {
                    continue;
                }
                if current.contains(&n) {
                    book.set_stale(table, p, n, false);
                    continue;
                }
                let Some(&src) = current.first() else {
                    book.set_stale(table, p, n, true);
                    continue;
                };
                let rows = {
                    let source = nodes[src as usize]
                        .storage
                        .read()
                        .unwrap_or_else(|e| e.into_inner());
                    let store = source.tables.get(table);
                    store.and_then(|s| s.get(p)).map(|part| {
                        let layout = TableLayout {
                            table: table.clone(),
                            schema: part.schema().clone(),
                            primary_key: part.primary_key().to_vec(),
                            indexed: store.map(TableStore::indexed_columns).unwrap_or_default(),
                        };
                        let rows = part.chunks().iter().map(|b| b.as_ref().clone()).collect();
                        (layout, rows)
                    })
                };
                let install = Change::Install {
                    table: table.clone(),
                    partition: p,
                    version: want,
                    rows,
                };
                if let Err(e) = nodes[n as usize].change_durably(install) {
                    tracing::warn!(
                        "{}: repair of {table} partition {p}: {e}",
                        nodes[n as usize].name
                    );
                    book.set_stale(table, p, n, true);
                    continue;
                }
                book.set_stale(table, p, n, false);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::breaker::{BreakerConfig, JoinMode};
    use crate::wire::carrier::{Deliver, Inbox};
    use crate::wire::codec;
    use std::sync::Mutex;
    use weir_operators::{Batch, Column, DataType, Field, Schema};

    /// A data node that applies nothing and answers every prepare and commit at once.
    struct Answering {
        id: NodeId,
        replies: Arc<WriteReplies>,
    }

    impl Inbox for Answering {
        fn deliver(&self, msg: Deliver) {
            let bytes = codec::unseal(&msg.bytes).expect("a sealed frame");
            let (write, phase) = match codec::decode::<NetMessage>(bytes).expect("a message") {
                NetMessage::WritePrepare(m) => (m.write, WritePhase::Prepare),
                NetMessage::WriteCommit(m) => (m.write, WritePhase::Commit),
                _ => return,
            };
            let reply = WriteReply {
                write,
                phase,
                error: None,
            };
            self.replies.deliver(write, self.id, reply);
        }
        fn is_open(&self) -> bool {
            true
        }
        fn crash(&self) {}
    }

    /// A catalog log whose proposals take `delay` (a leader being elected), and which
    /// remembers the copies it was told missed a write.
    struct SlowLog {
        delay: Duration,
        missed: Mutex<Vec<(NodeId, u32, u64)>>,
    }

    impl WriteRecords for SlowLog {
        fn first_writes(&self, _table: &str, _partitions: &[u32]) -> Result<()> {
            std::thread::sleep(self.delay);
            Ok(())
        }
        fn missed(&self, _table: &str, copies: &[(NodeId, u32, u64)]) -> Result<()> {
            self.missed.lock().unwrap().extend_from_slice(copies);
            Ok(())
        }
    }

    fn node(id: NodeId) -> Arc<NodeShared> {
        Arc::new(NodeShared::new(
            id,
            &format!("node-{id}"),
            true,
            1 << 20,
            JoinMode::Guarded,
            &BreakerConfig::default(),
        ))
    }

    #[test]
    fn a_slow_record_of_the_first_write_leaves_the_commit_its_whole_wait() {
        let replies = Arc::new(WriteReplies::default());
        let network = Network::new();
        // Node 2 is the writer (a node that is not attached sends nothing).
        for id in [0, 1, 2] {
            let inbox = Answering {
                id,
                replies: replies.clone(),
            };
            network.attach(id, Some(Arc::new(inbox)));
        }
        let nodes: Vec<Arc<NodeShared>> = (0..3).map(node).collect();
        let names: Vec<String> = (0..3).map(|i| format!("node-{i}")).collect();
        let log = SlowLog {
            delay: Duration::from_millis(400),
            missed: Mutex::new(Vec::new()),
        };
        let coordinator = Coordinator {
            network: &network,
            client: 2,
            nodes: &nodes,
            names: &names,
            replies: &replies,
            timeout: Duration::from_millis(200),
            piece_bytes: 1 << 20,
            catalog_epoch: 1,
            records: Some(&log),
        };
        let schema = Schema::new(vec![Field::new("k", DataType::Int64)]);
        let layout = TableLayout {
            table: "t".into(),
            schema,
            primary_key: vec![0],
            indexed: vec![],
        };
        let write = PartitionWrite {
            partition: 0,
            version: 0,
            delete: None,
            insert: Batch::try_new(vec![Column::from_i64(vec![7])]).unwrap(),
        };
        let mut book = ReplicaBook::default();
        // Two copies: two participants, so the first write is recorded between the phases,
        // longer than the timeout; both copies answer the commit at once.
        let result = coordinator.write(&mut book, 1, &layout, &[vec![0, 1]], vec![write], None);
        assert!(result.is_ok(), "{result:?}");
        assert_eq!(book.committed("t", 0), 1);
        assert!(book.stale_copies().is_empty(), "{:?}", book.stale_copies());
        assert!(log.missed.lock().unwrap().is_empty());
    }
}
