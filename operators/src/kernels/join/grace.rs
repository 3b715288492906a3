//! The hash join past its memory: a grace hash join over spill files.
//!
//! A `HashJoinOp` whose context has a spill space becomes a grace hash join the first time
//! it is refused memory: while receiving its build side (a build batch, or the hash table at
//! the build's end), or at a probe batch (the batches probed before were joined with the
//! whole build side and are done). It then hands everything it holds to a [`GraceJoin`],
//! frees its reservation, and records one spill in the space (a partition spilled again is
//! not counted again). A join that records build matches (outer joins keeping the build
//! side, semi and anti joins building the left side) and already probed hands its build rows
//! over with their match flags as a last BOOLEAN column, which every partition's join takes
//! off into its own flags when its build side ends.
//!
//! The grace join partitions by key hash ([`SpillPartitions`], 16 files per side): the build
//! rows it was given and every later build row, then the probe rows, each side's keys
//! evaluated as the in-memory join does (probe keys converted to the build keys' types with
//! `align_key` before hashing), so that rows with equal keys land in partitions of the same
//! number. Probe rows fed before the build side ended and before any build row showed the key
//! types wait unpartitioned in a spill file of their own. Rows with a NULL key never match:
//! they go to no partition but to a file per side, kept only when the join type outputs that
//! side's unmatched rows, and are output at the end as the probe rows of a join of the same
//! type against an empty build side (the other input). A null-aware anti join (`NOT IN`)
//! counts the right rows and stops at the first NULL right key, after which it outputs
//! nothing; its NULL left keys are output only when the right side turned out empty. Within a
//! partition there are then no NULL keys, and the `NOT IN` rules of the partition's join
//! agree with the whole join's.
//!
//! Once both inputs ended, the partitions are joined one at a time, each by a fresh
//! in-memory `HashJoinOp` of the same spec (made by the join's [`MakeJoin`]), fed the partition's build file then its probe
//! file one batch at a time, its output handed on batch by batch: at most one partition's
//! build side is in memory. A partition that has no rows on one side is skipped unless the
//! join type outputs the other side's unmatched rows. A partition's join that is refused
//! memory spills in turn, at the next level (its rows split again by a re-mixed hash), up to
//! level [`MAX_LEVEL`]. A partition still refused past it (one key, or keys whose hashes
//! collide, with more build rows than the memory holds) is not joined in chunks: the join
//! fails with an `Error::Unspillable` saying so (not retried: running it again cannot help).
//!
//! **Hybrid hashing**: a join refused memory (not one whose memory the breaker revoked, which
//! asked for all of it) keeps the first [`RESIDENT_PARTITIONS`] of the 16 partitions in
//! memory: their build rows go to a join of their own (made by the same [`MakeJoin`], one
//! level deeper, so that it spills in turn if even a quarter is refused), their probe rows
//! are joined as they come, one batch between two outputs, and that join's output leads; only
//! the other partitions reach the disk. The kept partitions' rows among those the spilling
//! join held wait until it freed its memory, so that the join in memory is not refused for
//! memory about to be given back. The spill files' buffers are accounted in the join's pool
//! (granted, or the files go unbuffered: [`crate::spill`]). Every file is owned by the join (the partition writers, the finished files
//! waiting to be joined, the one being read), so dropping the join, finished, failed or
//! cancelled, removes them all; the reservations of the partitions' joins go with them.

use super::keys::{null_key_rows, KeyColumns};
use super::spec::{port_of, JoinSpec, Roles};
use crate::kernels::hash::hash_rows;
use crate::kernels::operator::{ExecContext, Operator};
use crate::plan::JoinSide;
use crate::spill::{SpillFile, SpillPartitions, SpillReader, SpillSpace, SpillWriter};
use crate::{Batch, Column, DataType, Error, Expr, Reservation, Result};
use std::collections::VecDeque;
use std::sync::Arc;

/// The deepest partitioning level: the join of a partition at this level that is refused
/// memory fails instead of spilling again (16⁴ partitions of the first spill's input by then).
pub(super) const MAX_LEVEL: u32 = 3;

/// Partitions of a spill a hybrid hash join keeps in memory (of
/// [`SpillPartitions::FANOUT`]): their rows go to a join in memory rather than to disk.
pub(super) const RESIDENT_PARTITIONS: usize = 4;

/// Most rows of an input batch partitioned at once (a build side held whole is partitioned in
/// slices, so that its keys are evaluated a slice at a time).
const SLICE_ROWS: usize = 1 << 16;

/// One input's spilled rows.
struct Side {
    /// Whether this is the left input.
    left: bool,
    /// Its rows with a key, by key hash (`None` once finished).
    parts: Option<SpillPartitions>,
    /// Its rows with a NULL key, when the join outputs them.
    nulls: Option<SpillWriter>,
    /// Whether the join outputs this side's NULL-key (unmatched) rows.
    keep_nulls: bool,
    /// Its batches end with a column of match flags (taken off NULL-key rows, which are
    /// never matched).
    flags: bool,
    /// Empty, in the join's pool: its files' buffers are accounted beside it.
    memory: Reservation,
}

impl Side {
    fn new(
        space: &Arc<SpillSpace>,
        level: u32,
        spec: &JoinSpec,
        (left, flags): (bool, bool),
        memory: &Reservation,
    ) -> Self {
        // This side's rows against an empty other side, as probe rows.
        let other = if left {
            JoinSide::Right
        } else {
            JoinSide::Left
        };
        Side {
            left,
            parts: Some(SpillPartitions::new(space, level, memory)),
            nulls: None,
            keep_nulls: Roles::of(spec.join_type, other).probe_unmatched,
            flags,
            memory: memory.new_empty(),
        }
    }

    /// Writes `batch` (key hashes `hashes`, NULL-key rows marked in `nulls`) to its files,
    /// except the rows with a key of partitions `0..keep`, which it returns.
    fn write(
        &mut self,
        space: &Arc<SpillSpace>,
        batch: &Batch,
        hashes: &[u64],
        nulls: Option<&[bool]>,
        keep: usize,
    ) -> Result<Option<Batch>> {
        let Some(parts) = &mut self.parts else {
            return Err(Error::Internal("hash join input after its end".into()));
        };
        let Some(nulls) = nulls.filter(|m| m.contains(&true)) else {
            return parts.write_keeping(batch, hashes, keep);
        };
        let (mut keyed, mut null) = (Vec::new(), Vec::new());
        for (i, &is_null) in nulls.iter().enumerate() {
            if is_null {
                null.push(i as u32);
            } else {
                keyed.push(i as u32);
            }
        }
        let mut kept = None;
        if !keyed.is_empty() {
            let h: Vec<u64> = keyed.iter().map(|&i| hashes[i as usize]).collect();
            kept = parts.write_keeping(&batch.take(&keyed), &h, keep)?;
        }
        if self.keep_nulls {
            let w = match &mut self.nulls {
                Some(w) => w,
                slot => slot.insert(SpillWriter::new(space, &self.memory)?),
            };
            let mut rows = batch.take(&null);
            if self.flags {
                let n = rows.num_rows();
                let mut cols = rows.into_columns();
                cols.pop();
                rows = Batch::with_row_count(cols, n)?;
            }
            w.write(&rows)?;
        }
        Ok(kept)
    }

    /// Ends the files: one per partition (`None` for an empty one), and the NULL-key rows.
    fn finish(&mut self) -> Result<(Vec<Option<SpillFile>>, Option<SpillFile>)> {
        let mut files = match self.parts.take() {
            Some(p) => p.finish()?,
            None => Vec::new(),
        };
        files.resize_with(SpillPartitions::FANOUT, || None);
        let nulls = self.nulls.take().map(SpillWriter::finish).transpose()?;
        Ok((files, nulls))
    }
}

/// A spill file's batches, read back joined into batches of at least `rows` rows (the
/// partitions of one input batch are small; joined, they cost less memory per row).
struct Coalesced {
    reader: SpillReader,
    rows: usize,
}

impl Iterator for Coalesced {
    type Item = Result<Batch>;

    fn next(&mut self) -> Option<Result<Batch>> {
        let mut parts = Vec::new();
        let mut rows = 0;
        while rows < self.rows {
            match self.reader.next() {
                Some(Ok(b)) => {
                    rows += b.num_rows();
                    parts.push(b);
                }
                Some(Err(e)) => return Some(Err(e)),
                None => break,
            }
        }
        match parts.len() {
            0 => None,
            1 => parts.pop().map(Ok),
            _ => Some(Batch::concat(&parts)),
        }
    }
}

/// Rows to join once both inputs ended.
enum Task {
    /// One partition: its build rows and its probe rows.
    Pair {
        build: Option<SpillFile>,
        probe: Option<SpillFile>,
    },
    /// NULL-key rows of one side (the left one when `left`): probe rows of an empty build.
    Alone { rows: SpillFile, left: bool },
}

/// Makes the in-memory join of one partition: of the given spec (its build side may differ
/// from the spilled join's), context and reservation, spilling at the given level, its build
/// batches ending with a column of match flags when the flag says so. The hash join passes
/// itself (`HashJoinOp::partition`), so that this module does not name it.
pub(super) type MakeJoin =
    Arc<dyn Fn(JoinSpec, ExecContext, Reservation, u32, bool) -> Box<dyn Operator> + Send + Sync>;

/// The join of one task, under way.
struct PartJoin {
    op: Box<dyn Operator>,
    probe_port: usize,
    /// The probe rows (the file, removed when this is dropped, and its reader).
    probe: Option<(SpillFile, Coalesced)>,
    /// The probe input was reported ended to `op`.
    probe_ended: bool,
    /// `op` joins a partition and can no longer spill: a refusal is the deep-level error.
    too_deep: bool,
    /// Build rows of the partition (for that error).
    build_rows: usize,
}

impl PartJoin {
    /// `e`, said as the deep-level error when it is one.
    fn error(&self, e: Error) -> Error {
        match e {
            // A partition of a few build rows refused so deep is refused for memory held
            // elsewhere on the node: that refusal stands (the query is killed and run again).
            Error::Memory(m) if self.too_deep && self.build_rows > crate::DEFAULT_BATCH_SIZE => {
                Error::Unspillable(format!(
                    "a hash join's rows of one key do not fit in memory even spilled: a partition \
                 of {} build rows, split {} times by key hash, still needs more memory than \
                 there is (one key, or keys whose hashes collide, has too many rows): {m}",
                    self.build_rows,
                    MAX_LEVEL + 1
                ))
            }
            e => e,
        }
    }

    /// The next step of the join: an output batch, or `None` when the join is over.
    fn step(&mut self) -> Result<Option<Batch>> {
        loop {
            if let Some(b) = self.op.next_output()? {
                return Ok(Some(b));
            }
            if !self.op.is_done() {
                if let Some(b) = self.probe.as_mut().and_then(|(_, r)| r.next()) {
                    self.op.push(self.probe_port, b?)?;
                    continue;
                }
            }
            if self.probe_ended {
                return Ok(None);
            }
            self.probe_ended = true;
            self.probe = None;
            self.op.finish(self.probe_port)?;
        }
    }
}

/// The join of the partitions a hybrid hash join keeps in memory: fed their build rows as
/// they come, then their probe rows one batch at a time between outputs.
struct Resident {
    op: Box<dyn Operator>,
    build_port: usize,
    /// Probe rows of the kept partitions not pushed yet (pushed only when `op` has no
    /// output pending).
    queue: VecDeque<Batch>,
    /// The build input was reported ended to `op`.
    build_ended: bool,
    /// The probe input was reported ended to `op`.
    probe_ended: bool,
}

impl Resident {
    fn probe_port(&self) -> usize {
        1 - self.build_port
    }
}

/// A hash join that spilled: its inputs partitioned to disk, then joined partition by
/// partition (see the module's documentation).
pub(super) struct GraceJoin {
    space: Arc<SpillSpace>,
    /// The partitioning level of this join's files.
    level: u32,
    /// The left and the right key expressions.
    keys: [Vec<Expr>; 2],
    /// Makes the partitions' joins.
    make: MakeJoin,
    spec: JoinSpec,
    ctx: ExecContext,
    /// Empty; the partitions' joins take reservations against its pool.
    reservation: Reservation,
    /// The build keys' types, once known (empty: the build side had no rows, probe keys
    /// keep their own types).
    key_types: Option<Vec<DataType>>,
    build: Side,
    probe: Side,
    /// Probe batches received before the key types were known.
    stash: Option<SpillWriter>,
    /// Build batches end with a column of match flags (see [`MakeJoin`]).
    flags: bool,
    /// Right rows seen (null-aware anti join).
    right_rows: u64,
    /// A null-aware anti join saw a NULL right key: no output at all.
    blocked: bool,
    /// The build input ended, the probe input ended.
    ended: [bool; 2],
    /// Both inputs ended: the partitions are being joined.
    joining: bool,
    /// What is left to join, the next last.
    tasks: Vec<Task>,
    current: Option<PartJoin>,
    /// Scratch space for key hashes.
    hashes: Vec<u64>,
    /// Partitions `0..keep` stay in memory, joined by `resident` (hybrid hashing).
    keep: usize,
    resident: Option<Resident>,
    /// While the spilling join hands over what it held (its memory still accounted), the
    /// kept partitions' build rows wait here, to enter `resident` once it freed that memory.
    handover: Option<Vec<Batch>>,
}

impl GraceJoin {
    /// A grace join of `spec` on `keys` (left, right) spilling into `space` at `level`;
    /// `key_types` are the build keys' types when already known; build batches end with a
    /// column of match flags when `flags`; `right_rows` right rows were already joined (a
    /// null-aware anti join probing the right side). With `hybrid`, a quarter of the
    /// partitions ([`RESIDENT_PARTITIONS`]) is joined in memory instead of spilled.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        space: Arc<SpillSpace>,
        level: u32,
        keys: [Vec<Expr>; 2],
        make: MakeJoin,
        spec: JoinSpec,
        ctx: ExecContext,
        reservation: Reservation,
        key_types: Option<Vec<DataType>>,
        flags: bool,
        right_rows: u64,
        hybrid: bool,
    ) -> Self {
        let build_left = spec.build == JoinSide::Left;
        // Hybrid hashing: a quarter of the partitions is joined in memory, by a join that
        // spills in turn (one level deeper) if even that is refused. Not for a null-aware
        // anti join, whose NULL right keys decide the whole output.
        let resident = (hybrid && level < MAX_LEVEL && !spec.null_aware()).then(|| {
            let mut ctx = ctx.clone();
            ctx.spill = Some(space.clone());
            Resident {
                op: make(spec.clone(), ctx, reservation.new_empty(), level + 1, flags),
                build_port: port_of(spec.build),
                queue: VecDeque::new(),
                build_ended: false,
                probe_ended: false,
            }
        });
        GraceJoin {
            handover: resident.as_ref().map(|_| Vec::new()),
            keep: if resident.is_some() {
                RESIDENT_PARTITIONS
            } else {
                0
            },
            resident,
            build: Side::new(&space, level, &spec, (build_left, flags), &reservation),
            probe: Side::new(&space, level, &spec, (!build_left, false), &reservation),
            space,
            level,
            keys,
            make,
            spec,
            ctx,
            reservation,
            key_types,
            stash: None,
            flags,
            right_rows,
            blocked: false,
            ended: [false; 2],
            joining: false,
            tasks: Vec::new(),
            current: None,
            hashes: Vec::new(),
        }
    }

    /// Takes a batch of the build input (`build`) or of the probe input.
    pub fn push(&mut self, build: bool, batch: &Batch) -> Result<()> {
        if self.blocked || batch.is_empty() {
            return Ok(());
        }
        if self.joining || self.ended[usize::from(!build)] {
            return Err(Error::Internal("hash join input after its end".into()));
        }
        if !build && self.key_types.is_none() {
            let stash = match &mut self.stash {
                Some(w) => w,
                slot => slot.insert(SpillWriter::new(&self.space, &self.reservation)?),
            };
            return stash.write(batch);
        }
        let n = batch.num_rows();
        if n <= SLICE_ROWS {
            return self.write(build, batch);
        }
        for start in (0..n).step_by(SLICE_ROWS) {
            self.write(build, &batch.slice(start, SLICE_ROWS))?;
        }
        Ok(())
    }

    /// Partitions `batch` of the build input (`build`) or of the probe input.
    fn write(&mut self, build: bool, batch: &Batch) -> Result<()> {
        if self.blocked {
            return Ok(());
        }
        let left = if build {
            self.build.left
        } else {
            self.probe.left
        };
        let exprs = &self.keys[usize::from(!left)];
        let want = match &self.key_types {
            Some(t) if !build && !t.is_empty() => Some(t.as_slice()),
            _ => None,
        };
        let keys = KeyColumns::of(exprs, batch, &self.ctx.params, want)?;
        let cols = keys.get(batch);
        let n = batch.num_rows();
        let nulls = null_key_rows(cols, n);
        if !left && self.spec.null_aware() {
            self.right_rows += n as u64;
            if nulls.as_ref().is_some_and(|m| m.contains(&true)) {
                self.block();
                return Ok(());
            }
        }
        let first_build = build && self.key_types.is_none();
        if first_build {
            self.key_types = Some(cols.iter().map(Column::data_type).collect());
        }
        hash_rows(cols, &mut self.hashes);
        let side = if build {
            &mut self.build
        } else {
            &mut self.probe
        };
        let kept = side.write(
            &self.space,
            batch,
            &self.hashes,
            nulls.as_deref(),
            self.keep,
        )?;
        if let (Some(kept), Some(r)) = (kept, &mut self.resident) {
            match (&mut self.handover, build) {
                (Some(waiting), true) => waiting.push(kept),
                // Before its build side ends, the join in memory has no output.
                (None, true) => r.op.push(r.build_port, kept)?,
                (_, false) => r.queue.push_back(kept),
            }
        }
        if first_build {
            self.drain_stash()?;
        }
        Ok(())
    }

    /// The spilling join freed the memory it held: the kept partitions' build rows it handed
    /// over enter the join in memory (which spills them in turn if refused).
    pub fn end_handover(&mut self) -> Result<()> {
        let Some(waiting) = self.handover.take() else {
            return Ok(());
        };
        if let Some(r) = &mut self.resident {
            for b in waiting {
                r.op.push(r.build_port, b)?;
            }
        }
        Ok(())
    }

    /// Partitions the probe batches that waited for the key types.
    fn drain_stash(&mut self) -> Result<()> {
        let Some(stash) = self.stash.take() else {
            return Ok(());
        };
        let file = stash.finish()?;
        for b in file.reader(&self.reservation)? {
            self.write(false, &b?)?;
        }
        Ok(())
    }

    /// A NULL right key of a null-aware anti join: nothing will be output, nothing is kept.
    fn block(&mut self) {
        self.blocked = true;
        self.resident = None;
        self.handover = None;
        self.build.parts = None;
        self.build.nulls = None;
        self.probe.parts = None;
        self.probe.nulls = None;
        self.stash = None;
    }

    /// The build input (`build`) or the probe input ended; `spec` is the join's, with the
    /// input types it saw. Once both ended, the partitions are joined by
    /// [`next_output`](GraceJoin::next_output).
    pub fn finish(&mut self, build: bool, spec: &JoinSpec) -> Result<()> {
        self.ended[usize::from(!build)] = true;
        if build {
            // No build row: nothing to convert probe keys to.
            self.key_types.get_or_insert_with(Vec::new);
            self.drain_stash()?;
            self.end_handover()?;
            if let Some(r) = &mut self.resident {
                if !r.build_ended {
                    r.build_ended = true;
                    r.op.finish(r.build_port)?;
                }
            }
        }
        if self.ended == [true; 2] && !self.joining {
            self.spec = spec.clone();
            self.start_joining()?;
        }
        Ok(())
    }

    /// Ends the partition files and lists what to join.
    fn start_joining(&mut self) -> Result<()> {
        self.joining = true;
        if self.blocked {
            return Ok(());
        }
        let roles = Roles::of(self.spec.join_type, self.spec.build);
        let (build_parts, build_nulls) = self.build.finish()?;
        let (probe_parts, probe_nulls) = self.probe.finish()?;
        let mut tasks = Vec::new();
        for (build, probe) in build_parts.into_iter().zip(probe_parts) {
            let needed = match (&build, &probe) {
                (None, None) => false,
                (Some(_), None) => roles.build_alone(),
                (None, Some(_)) => roles.probe_alone(),
                (Some(_), Some(_)) => true,
            };
            if needed {
                tasks.push(Task::Pair { build, probe });
            }
        }
        // A null-aware anti join outputs its NULL left keys only if the right side is empty.
        let nulls_out = !self.spec.null_aware() || self.right_rows == 0;
        for (rows, left) in [
            (build_nulls, self.build.left),
            (probe_nulls, self.probe.left),
        ] {
            if let Some(rows) = rows.filter(|_| nulls_out) {
                tasks.push(Task::Alone { rows, left });
            }
        }
        tasks.reverse();
        self.tasks = tasks;
        Ok(())
    }

    /// Reads `file` back in batches of about the batch size.
    fn read(&self, file: &SpillFile) -> Result<Coalesced> {
        Ok(Coalesced {
            reader: file.reader(&self.reservation)?,
            rows: self.ctx.batch_size,
        })
    }

    /// Starts the join of `task`: reads its build rows into a fresh join (which spills at
    /// the next level if it must and still may).
    fn open(&self, task: Task) -> Result<PartJoin> {
        let level = self.level + 1;
        let mut ctx = self.ctx.clone();
        match task {
            Task::Pair { build, probe } => {
                let can_spill = level <= MAX_LEVEL;
                ctx.spill = can_spill.then(|| self.space.clone());
                let op = (self.make)(
                    self.spec.clone(),
                    ctx,
                    self.reservation.new_empty(),
                    level,
                    self.flags,
                );
                let build_port = port_of(self.spec.build);
                let mut part = PartJoin {
                    op,
                    probe_port: 1 - build_port,
                    probe: None,
                    probe_ended: false,
                    too_deep: !can_spill,
                    build_rows: build.as_ref().map_or(0, SpillFile::rows),
                };
                if let Some(file) = build {
                    for b in self.read(&file)? {
                        part.op.push(build_port, b?).map_err(|e| part.error(e))?;
                    }
                }
                part.op.finish(build_port).map_err(|e| part.error(e))?;
                part.probe = probe.map(|f| self.read(&f).map(|r| (f, r))).transpose()?;
                Ok(part)
            }
            Task::Alone { rows, left } => {
                let empty = if left {
                    JoinSide::Right
                } else {
                    JoinSide::Left
                };
                let mut spec = self.spec.clone();
                spec.build = empty;
                ctx.spill = None;
                let mut op = (self.make)(spec, ctx, self.reservation.new_empty(), level, false);
                op.finish(port_of(empty))?;
                let reader = self.read(&rows)?;
                Ok(PartJoin {
                    op,
                    probe_port: 1 - port_of(empty),
                    probe: Some((rows, reader)),
                    probe_ended: false,
                    too_deep: false,
                    build_rows: 0,
                })
            }
        }
    }

    /// The next output of the partitions kept in memory: their probe rows pushed as the
    /// join in memory takes them, its input ended after the probe input ended. The join is
    /// dropped (its memory freed) once it has output everything.
    fn resident_output(&mut self) -> Result<Option<Batch>> {
        let probe_ended = self.ended[1];
        let Some(r) = &mut self.resident else {
            return Ok(None);
        };
        loop {
            if let Some(b) = r.op.next_output()? {
                return Ok(Some(b));
            }
            if !r.build_ended {
                return Ok(None);
            }
            if let Some(b) = r.queue.pop_front() {
                let port = r.probe_port();
                r.op.push(port, b)?;
                continue;
            }
            if probe_ended && !r.probe_ended {
                r.probe_ended = true;
                let port = r.probe_port();
                r.op.finish(port)?;
                continue;
            }
            break;
        }
        if r.probe_ended && !r.op.has_output() {
            self.resident = None;
        }
        Ok(None)
    }

    /// Whether the join of the partitions kept in memory has output to give, or input to
    /// take that may give some.
    fn resident_pending(&self) -> bool {
        self.resident.as_ref().is_some_and(|r| {
            r.op.has_output()
                || (r.build_ended && (!r.queue.is_empty() || (self.ended[1] && !r.probe_ended)))
        })
    }

    /// The next output batch: the kept partitions' as their probe rows come, then, once
    /// both inputs ended, the spilled partitions', one after the other.
    pub fn next_output(&mut self) -> Result<Option<Batch>> {
        if let Some(b) = self.resident_output()? {
            return Ok(Some(b));
        }
        if !self.joining || self.resident.is_some() {
            return Ok(None);
        }
        loop {
            if let Some(part) = &mut self.current {
                match part.step() {
                    Ok(Some(b)) => return Ok(Some(b)),
                    Ok(None) => self.current = None,
                    Err(e) => return Err(part.error(e)),
                }
                continue;
            }
            let Some(task) = self.tasks.pop() else {
                return Ok(None);
            };
            self.current = Some(self.open(task)?);
        }
    }

    /// Whether output is pending.
    pub fn has_output(&self) -> bool {
        self.resident_pending()
            || (self.joining
                && (self.resident.is_some() || self.current.is_some() || !self.tasks.is_empty()))
    }

    /// Whether no output can come any more (a null-aware anti join saw a NULL right key).
    pub fn is_done(&self) -> bool {
        self.blocked
    }

    /// Bytes held in memory by the partitions kept in memory and the partition being joined.
    pub fn memory_size(&self) -> usize {
        let resident = self.resident.as_ref().map_or(0, |r| {
            r.op.memory_size() + r.queue.iter().map(Batch::memory_size).sum::<usize>()
        });
        let waiting: usize = self.handover.iter().flatten().map(Batch::memory_size).sum();
        resident + waiting + self.current.as_ref().map_or(0, |p| p.op.memory_size())
    }
}
