//! Hash join kernel, for every [`JoinType`](crate::plan::JoinType) and either build side.
//!
//! The build side (either input, see [`JoinSide`]) is received completely first: its batches
//! are accounted in the reservation, concatenated into one columnar build table, and indexed by
//! a chained hash table (`heads: hash → first row`, `next: row → next row`).
//!
//! Probing is resumable. A pushed probe batch is held (accounted in the reservation) with its
//! evaluated keys and [`hash_rows`] hashes and a cursor: the probe row and the position in that
//! row's chain. Each `next_output` call walks the chains from the cursor, matching with an
//! exact key comparison, until it has `batch_size` candidate pairs, joins them (residual
//! filter, match flags, see [`JoinCore::resolve`]) and stops there; the next call resumes
//! exactly where it stopped. So one probe batch against many duplicate build keys yields its
//! (possibly huge) output one batch per call, and what is pending is never more than the probe
//! batch and the cursor. After its last chain, a probe batch's unmatched rows follow (outer
//! and anti joins probing the left side), and after the probe input ends, the build rows
//! whose match flag says so (outer joins keeping the build side, semi and anti joins building
//! the left side). Probe batches fed before the build side ended wait (accounted) and are
//! probed one at a time after it. NULL keys never match; a null-aware anti join applies the
//! `NOT IN` rules on top (see [`JoinType::Anti`](crate::plan::JoinType::Anti)).
//!
//! Refused memory with a spill space in its context, the join becomes a grace hash join
//! (module `grace`): it hands what it holds, and every later input batch, to a `GraceJoin`
//! that partitions both sides to disk and joins them partition by partition. Until then
//! nothing of it runs.

use super::grace::{GraceJoin, MakeJoin};
use super::index::{BuildIndex, Cursor, Matches, ProbeKeys, NONE};
use super::keys::{null_key_rows, KeyColumns};
use super::output::JoinCore;
use super::spec::JoinSpec;
use crate::kernels::hash::hash_rows;
use crate::kernels::key_filter::KeyFilter;
use crate::kernels::operator::{output_pending, revoked, ExecContext, InputOrder, Operator};
use crate::plan::{JoinSide, JoinType};
use crate::{Batch, Column, DataType, Error, Expr, Reservation, Result};
use std::collections::VecDeque;
use std::sync::Arc;

/// Hash join.
pub struct HashJoinOp {
    left_keys: Vec<Expr>,
    right_keys: Vec<Expr>,
    core: JoinCore,
    ctx: ExecContext,
    reservation: Reservation,
    /// Build batches received so far.
    build_batches: Vec<Batch>,
    /// Probe batches received before the build side ended (only if fed out of order), each
    /// accounted in the reservation until it is probed.
    early_probe: VecDeque<Batch>,
    /// The build table, once the build side ended.
    table: Option<BuildTable>,
    /// The probe batch being joined, if any.
    probe: Option<Probe>,
    /// The probe input ended.
    probe_ended: bool,
    /// What a null-aware anti join has seen.
    null_aware: NullAware,
    /// Scratch space for hashes (reused by successive probe batches).
    hashes: Vec<u64>,
    /// Scratch space for the candidate row pairs of one output batch.
    probe_idx: Vec<u32>,
    build_idx: Vec<u32>,
    /// A probe batch was opened (build match flags may be set).
    probed: bool,
    /// The build batches end with a BOOLEAN column of match flags (those of a join that
    /// spilled after it had probed), taken off when the build side ends.
    flags_column: bool,
    /// The partitioning level this join spills at (0 for a plan's join, more for the join
    /// of a spilled partition).
    spill_level: u32,
    /// Once the join spilled: the grace hash join that does the rest.
    grace: Option<Box<GraceJoin>>,
    /// The filter of the build keys, made when the build side ended (for a join whose probe
    /// rows without a match produce nothing), until the runtime takes it.
    key_filter: Option<KeyFilter>,
    /// The build keys' filter the probe rows are tested against before their lookup (a build
    /// side of [`PREFILTER_MIN_ROWS`] rows or more), with its bytes accounted.
    prefilter: Option<Prefilter>,
}

/// A build side this large has a table that no longer fits the cache next to a core: probe
/// rows are first tested against a filter of its keys (a tenth of its size), so that those
/// without a match skip the lookup that misses the cache.
pub const PREFILTER_MIN_ROWS: usize = 50_000;

/// Probe rows tested before a prefilter is judged: one that rules out less than a fifth of
/// them is let go (nearly every row matches; the test only adds work).
const PREFILTER_TRIAL_ROWS: usize = 65_536;

/// The filter probe rows are tested against before their lookup, and how it fares.
struct Prefilter {
    filter: KeyFilter,
    tested: usize,
    ruled_out: usize,
    /// Scratch for the probe keys' hashes when the index does not use them.
    hashes: Vec<u64>,
}

impl Prefilter {
    /// The rows of a probe batch (key hashes `hashes`) that cannot match: NULL keys
    /// (`null_rows`) and keys the filter rules out.
    fn rule_out(&mut self, hashes: &[u64], null_rows: Option<&[bool]>) -> Vec<bool> {
        let mut skip: Vec<bool> = hashes
            .iter()
            .map(|&h| !self.filter.may_contain(h))
            .collect();
        self.tested += skip.len();
        self.ruled_out += skip.iter().filter(|&&s| s).count();
        if let Some(nulls) = null_rows {
            skip.iter_mut().zip(nulls).for_each(|(s, &n)| *s |= n);
        }
        skip
    }

    /// Whether it has been tried long enough and rules out too few rows to pay.
    fn not_worth_it(&self) -> bool {
        self.tested >= PREFILTER_TRIAL_ROWS && self.ruled_out * 5 < self.tested
    }
}

/// The state of a null-aware anti join (`NOT IN`).
#[derive(Default)]
struct NullAware {
    /// Some right row has a NULL key: no output at all.
    right_null: bool,
    /// Right rows seen (when the right side is the probe side).
    right_rows: usize,
}

/// A probe batch being joined and where its output stopped.
struct Probe {
    batch: Batch,
    keys: KeyColumns,
    hashes: Vec<u64>,
    null_rows: Option<Vec<bool>>,
    /// Rows that cannot match: NULL keys, and keys the prefilter rules out (`None`: see
    /// `null_rows`).
    skip: Option<Vec<bool>>,
    /// Where the walk of the build index stands.
    cursor: Cursor,
    /// "Has a match" per row, when the join type records it.
    matched: Vec<bool>,
    /// Once every chain is walked: the next row to look at for unmatched output.
    tail: Option<usize>,
    /// Bytes accounted in the reservation for this probe (the batch, its key columns and
    /// its match flags).
    accounted: usize,
}

/// The finished build side's index (the rows themselves are in the [`JoinCore`]).
struct BuildTable {
    /// The build batch's key columns.
    keys: KeyColumns,
    /// Their types (the probe keys are converted to them).
    key_types: Vec<DataType>,
    index: BuildIndex,
    /// NULL-key rows, kept only by a null-aware anti join building the left side.
    null_rows: Option<Vec<bool>>,
}

impl HashJoinOp {
    /// An inner equi-join on `left_keys[i] = right_keys[i]`, building a hash table from the
    /// `build` side. Port 0 is the left input, port 1 the right input; the build side's port
    /// (see [`HashJoinOp::build_port`]) must be fed completely first.
    pub fn new(
        left_keys: Vec<Expr>,
        right_keys: Vec<Expr>,
        build: JoinSide,
        ctx: ExecContext,
        reservation: Reservation,
    ) -> Self {
        Self::build_op(
            left_keys,
            right_keys,
            JoinSpec::inner(build),
            ctx,
            reservation,
        )
    }

    /// An equi-join on `left_keys[i] = right_keys[i]` as `spec` describes (type, residual
    /// filter, build side, input types). Fails on a plan it cannot run: no keys, key lists
    /// of different lengths, a null-aware anti join with more than one key or a residual
    /// filter, or an outer join without the types of the side it pads with NULLs.
    pub fn with_spec(
        left_keys: Vec<Expr>,
        right_keys: Vec<Expr>,
        spec: JoinSpec,
        ctx: ExecContext,
        reservation: Reservation,
    ) -> Result<Self> {
        if left_keys.is_empty() || left_keys.len() != right_keys.len() {
            return Err(Error::Internal(format!(
                "hash join needs as many left keys as right keys, at least one (got {} and {})",
                left_keys.len(),
                right_keys.len()
            )));
        }
        if spec.null_aware() && (left_keys.len() != 1 || spec.filter.is_some()) {
            return Err(Error::Internal(
                "a null-aware anti join takes exactly one key and no residual filter".into(),
            ));
        }
        // The side an outer join pads with NULLs has at least its key columns.
        let (pads_left, pads_right) = match spec.join_type {
            JoinType::Left => (false, true),
            JoinType::Right => (true, false),
            JoinType::Full => (true, true),
            _ => (false, false),
        };
        if (pads_left && spec.left_types.is_empty()) || (pads_right && spec.right_types.is_empty())
        {
            return Err(Error::Internal(format!(
                "a {} hash join needs the column types of the side it pads with NULLs",
                spec.join_type.name()
            )));
        }
        Ok(Self::build_op(
            left_keys,
            right_keys,
            spec,
            ctx,
            reservation,
        ))
    }

    fn build_op(
        left_keys: Vec<Expr>,
        right_keys: Vec<Expr>,
        spec: JoinSpec,
        ctx: ExecContext,
        reservation: Reservation,
    ) -> Self {
        let core = JoinCore::new(spec, ctx.params.clone(), ctx.batch_size);
        HashJoinOp {
            left_keys,
            right_keys,
            core,
            ctx,
            reservation,
            build_batches: Vec::new(),
            early_probe: VecDeque::new(),
            table: None,
            probe: None,
            probe_ended: false,
            null_aware: NullAware::default(),
            hashes: Vec::new(),
            probe_idx: Vec::new(),
            build_idx: Vec::new(),
            probed: false,
            flags_column: false,
            spill_level: 0,
            grace: None,
            key_filter: None,
            prefilter: None,
        }
    }

    /// The join of one spilled partition (see module `grace`): spilling, if its context
    /// allows, at partitioning `level`; its build batches end with a column of match flags
    /// when `flags`.
    pub(super) fn partition(
        left_keys: Vec<Expr>,
        right_keys: Vec<Expr>,
        spec: JoinSpec,
        ctx: ExecContext,
        reservation: Reservation,
        level: u32,
        flags: bool,
    ) -> Self {
        let mut op = Self::build_op(left_keys, right_keys, spec, ctx, reservation);
        op.spill_level = level;
        op.flags_column = flags;
        op
    }

    /// Answers the refusal `e` by spilling: when `e` is a refused reservation and the join
    /// has a spill space, everything it holds (and the `refused` batch, with its port) goes
    /// to a new [`GraceJoin`] that does the rest, and the reservation is freed; the build
    /// rows' match flags, if set, go along as a last column. Otherwise returns `e`.
    fn spill(&mut self, e: Error, refused: Option<(usize, Batch)>) -> Result<()> {
        self.spill_keeping(e, refused, true)
    }

    /// [`HashJoinOp::spill`]; with `hybrid`, the grace join keeps some partitions in memory
    /// (not when the memory was revoked: the breaker asked for all of it).
    fn spill_keeping(
        &mut self,
        e: Error,
        refused: Option<(usize, Batch)>,
        hybrid: bool,
    ) -> Result<()> {
        let spillable = matches!(e, Error::Memory(_)) && self.grace.is_none();
        let Some(space) = self.ctx.spill.clone().filter(|_| spillable) else {
            return Err(e);
        };
        if self.spill_level == 0 {
            space.record_spill();
        }
        let flags = self.core.roles.track_build && (self.flags_column || self.probed);
        let build_ended = self.table.is_some();
        let key_types = self.table.take().map(|t| t.key_types);
        let mut build = std::mem::take(&mut self.build_batches);
        let table = std::mem::replace(&mut self.core.build_batch, Batch::empty(&[]));
        let matched = std::mem::take(&mut self.core.build_matched);
        if table.num_rows() > 0 {
            // The build table, its match flags as a last column when they go along.
            build.push(if flags {
                let rows = table.num_rows();
                let mut cols = table.into_columns();
                cols.push(Column::from_bools(matched));
                Batch::with_row_count(cols, rows)?
            } else {
                table
            });
        }
        self.hashes = Vec::new();
        // Its bytes go with the reservation's, below.
        self.prefilter = None;
        let (left, right) = (self.left_keys.clone(), self.right_keys.clone());
        let make: MakeJoin = Arc::new(move |spec, ctx, reservation, level, flags| {
            Box::new(HashJoinOp::partition(
                left.clone(),
                right.clone(),
                spec,
                ctx,
                reservation,
                level,
                flags,
            ))
        });
        let mut grace = GraceJoin::new(
            space,
            self.spill_level,
            [self.left_keys.clone(), self.right_keys.clone()],
            make,
            self.core.spec.clone(),
            self.ctx.clone(),
            self.reservation.new_empty(),
            key_types,
            flags,
            self.null_aware.right_rows as u64,
            hybrid,
        );
        for b in build {
            grace.push(true, &b)?;
        }
        for b in std::mem::take(&mut self.early_probe) {
            grace.push(false, &b)?;
        }
        if let Some((port, b)) = refused {
            grace.push(port == self.build_port(), &b)?;
        }
        self.reservation.free();
        grace.end_handover()?;
        if build_ended {
            grace.finish(true, &self.core.spec)?;
        }
        if self.probe_ended {
            grace.finish(false, &self.core.spec)?;
        }
        self.grace = Some(Box::new(grace));
        Ok(())
    }

    /// The input port of the build side (0 for the left input, 1 for the right).
    pub fn build_port(&self) -> usize {
        self.core.build_port()
    }

    fn build_side(&self) -> JoinSide {
        self.core.spec.build
    }

    fn build_keys(&self) -> &[Expr] {
        match self.build_side() {
            JoinSide::Left => &self.left_keys,
            JoinSide::Right => &self.right_keys,
        }
    }

    fn probe_keys(&self) -> &[Expr] {
        match self.build_side() {
            JoinSide::Left => &self.right_keys,
            JoinSide::Right => &self.left_keys,
        }
    }

    /// A null-aware anti join whose probe side is the right input.
    fn null_aware_probes_right(&self) -> bool {
        self.core.spec.null_aware() && self.build_side() == JoinSide::Left
    }

    /// A null-aware anti join that has seen a NULL right key: it outputs nothing.
    fn blocked(&self) -> bool {
        self.core.spec.null_aware() && self.null_aware.right_null
    }

    /// Whether a probe row without a match produces nothing (so a probe row whose key is
    /// not among the build keys may be dropped before it gets here).
    fn probe_rows_need_a_match(&self) -> bool {
        !self.core.roles.probe_alone() && !self.null_aware_probes_right()
    }

    /// Whether no build row can match (empty build side, or only NULL keys).
    fn unmatchable(&self) -> bool {
        self.table.as_ref().is_some_and(|t| t.index.is_empty())
    }

    /// Builds the hash table from the buffered build batches.
    ///
    /// Memory is accounted before it is allocated, from an estimate that follows hashbrown's
    /// sizing, and then corrected to the real heap sizes (capacities, not lengths) of what is
    /// kept: the build batch, its key columns, the hash table, the chains and the match flags.
    /// Refused memory, it leaves the build rows in `build_batches` or the core (to spill).
    fn finish_build(&mut self) -> Result<()> {
        let batch = self.concat_build()?;
        let n = batch.num_rows();
        let keys = if n == 0 {
            KeyColumns::Owned(Vec::new())
        } else {
            KeyColumns::of(self.build_keys(), &batch, &self.ctx.params, None)?
        };
        let key_bytes = keys.memory_size();
        // The index, the row hashes and NULL mask used while building, and the match flags.
        let estimate = key_bytes + BuildIndex::estimate(n) + n * (std::mem::size_of::<u64>() + 2);
        if let Err(e) = self.reservation.try_grow(estimate) {
            self.build_batches.push(batch);
            return Err(e);
        }
        let key_cols = keys.get(&batch);
        let key_types = key_cols.iter().map(Column::data_type).collect();
        let sent = self.spill_level == 0 && self.probe_rows_need_a_match();
        if (sent || n >= PREFILTER_MIN_ROWS) && !key_cols.is_empty() {
            let filter = KeyFilter::of_columns(key_cols, n);
            let kept =
                n >= PREFILTER_MIN_ROWS && self.reservation.try_grow(filter.memory_size()).is_ok();
            if kept {
                self.prefilter = Some(Prefilter {
                    filter: filter.clone(),
                    tested: 0,
                    ruled_out: 0,
                    hashes: Vec::new(),
                });
            }
            if sent {
                self.key_filter = Some(filter);
            }
        }
        let mut null_rows = null_key_rows(key_cols, n);
        let built = BuildIndex::build(key_cols, n, null_rows.as_deref(), &mut self.hashes);
        let index = match built {
            Ok(index) => index,
            Err(e) => {
                self.reservation.shrink(estimate);
                self.build_batches.push(batch);
                return Err(e);
            }
        };
        // The build-sized scratch is not needed for probing (probe batches are small).
        self.hashes = Vec::new();
        let any_null = null_rows.as_ref().is_some_and(|m| m.iter().any(|&x| x));
        if self.core.spec.null_aware() && self.build_side() == JoinSide::Right && any_null {
            self.null_aware.right_null = true;
        }
        if !self.null_aware_probes_right() {
            null_rows = None;
        }
        let flag_bytes = if self.flags_column {
            // The match flags carried along come off the rows, into the core's flags.
            let rows = batch.num_rows();
            let mut cols = batch.into_columns();
            let flags = cols.pop().and_then(|c| c.as_bool().map(<[bool]>::to_vec));
            let bytes = self.core.set_build(Batch::with_row_count(cols, rows)?);
            if let Some(f) = flags.filter(|_| self.core.roles.track_build) {
                self.core.build_matched = f;
            }
            bytes
        } else {
            self.core.set_build(batch)
        };
        let kept = key_bytes
            + index.memory_size()
            + null_rows.as_ref().map_or(0, Vec::capacity)
            + flag_bytes;
        self.adjust(estimate, kept)?;
        self.table = Some(BuildTable {
            keys,
            key_types,
            index,
            null_rows,
        });
        Ok(())
    }

    /// The buffered build batches as one batch (their accounting moved to it).
    /// Refused memory, it leaves the build rows in `build_batches` (to spill).
    fn concat_build(&mut self) -> Result<Batch> {
        if self.build_batches.len() <= 1 {
            return Ok(self
                .build_batches
                .pop()
                .unwrap_or_else(|| Batch::empty(&[])));
        }
        // The concatenated copy is accounted before it is made; the parts are released
        // after, and the reservation then holds the copy's real size.
        let parts: usize = self.build_batches.iter().map(Batch::memory_size).sum();
        self.reservation.try_grow(parts)?;
        let b = Batch::concat(&self.build_batches)?;
        self.build_batches.clear();
        self.reservation.shrink(parts);
        if let Err(e) = self.adjust(parts, b.memory_size()) {
            self.build_batches.push(b);
            return Err(e);
        }
        Ok(b)
    }

    /// Corrects an accounted `estimate` to the `actual` size.
    fn adjust(&mut self, estimate: usize, actual: usize) -> Result<()> {
        if actual > estimate {
            self.reservation.try_grow(actual - estimate)
        } else {
            self.reservation.shrink(estimate - actual);
            Ok(())
        }
    }

    /// Makes `batch` the current probe, `accounted` bytes of it already in the reservation.
    /// Batches that cannot produce output are dropped at once.
    /// Refused memory, it spills if it can (see [`HashJoinOp::spill`]).
    fn start_probe(&mut self, batch: Batch, accounted: usize) -> Result<()> {
        match self.open_probe(&batch) {
            Ok(Some(mut p)) => {
                self.probed = true;
                p.batch = batch;
                p.accounted += accounted;
                self.probe = Some(p);
                Ok(())
            }
            Ok(None) => {
                // Nothing can come of it: the batch goes now.
                self.probed = true;
                self.reservation.shrink(accounted);
                Ok(())
            }
            Err(e) => {
                self.reservation.shrink(accounted);
                let port = 1 - self.build_port();
                self.spill(e, Some((port, batch)))
            }
        }
    }

    /// Evaluates, hashes and accounts the keys of probe `batch` (and its match flags), or
    /// returns `None` if the batch cannot produce output. The probe's batch is left empty
    /// for the caller to move `batch` in.
    fn open_probe(&mut self, batch: &Batch) -> Result<Option<Probe>> {
        let Some(table) = &self.table else {
            return Err(Error::Internal("hash join probed before its build".into()));
        };
        let n = batch.num_rows();
        let matchable = !table.index.is_empty();
        let counts_right = self.null_aware_probes_right();
        if n == 0 || self.blocked() || !(matchable || counts_right || self.core.roles.probe_alone())
        {
            return Ok(None);
        }
        let keys = if matchable || counts_right {
            let exprs = self.probe_keys();
            KeyColumns::of(exprs, batch, &self.ctx.params, Some(&table.key_types))?
        } else {
            KeyColumns::Owned(Vec::new())
        };
        let null_rows = null_key_rows(keys.get(batch), n);
        if counts_right {
            self.null_aware.right_rows += n;
            if null_rows.as_ref().is_some_and(|m| m.iter().any(|&x| x)) {
                self.null_aware.right_null = true;
                return Ok(None);
            }
        }
        if !matchable && !self.core.roles.probe_alone() {
            return Ok(None);
        }
        let matched = if self.core.roles.track_probe {
            vec![false; n]
        } else {
            Vec::new()
        };
        let skip_bytes = if self.prefilter.is_some() { n } else { 0 };
        let bytes = keys.memory_size() + matched.capacity() + skip_bytes;
        self.reservation.try_grow(bytes)?;
        let mut hashes = std::mem::take(&mut self.hashes);
        hashes.clear();
        if table.index.needs_hashes() {
            hash_rows(keys.get(batch), &mut hashes);
        }
        let skip = match &mut self.prefilter {
            Some(pre) if matchable => {
                if table.index.needs_hashes() {
                    Some(pre.rule_out(&hashes, null_rows.as_deref()))
                } else {
                    let mut own = std::mem::take(&mut pre.hashes);
                    hash_rows(keys.get(batch), &mut own);
                    let skip = pre.rule_out(&own, null_rows.as_deref());
                    pre.hashes = own;
                    Some(skip)
                }
            }
            _ => None,
        };
        if self.prefilter.as_ref().is_some_and(Prefilter::not_worth_it) {
            let pre = self.prefilter.take().expect("a prefilter");
            self.reservation.shrink(pre.filter.memory_size());
        }
        Ok(Some(Probe {
            batch: Batch::empty(&[]),
            keys,
            hashes,
            null_rows,
            skip,
            cursor: Cursor {
                row: if matchable { 0 } else { n },
                chain: NONE,
            },
            matched,
            tail: None,
            accounted: bytes,
        }))
    }

    /// Drops the current probe, returning its bytes and keeping its hash buffer for reuse.
    fn end_probe(&mut self) {
        if let Some(p) = self.probe.take() {
            self.reservation.shrink(p.accounted);
            self.hashes = p.hashes;
        }
    }

    /// One step of the current probe: joins the next block of candidate pairs, or emits the
    /// next batch of its unmatched rows, or ends it. `None` when the step produced no rows.
    fn probe_step(&mut self) -> Result<Option<Batch>> {
        let (Some(table), Some(p)) = (&self.table, &mut self.probe) else {
            return Ok(None);
        };
        let n = p.batch.num_rows();
        if p.cursor.row < n {
            let first_only = self.core.roles.probe_first_only;
            let c = &mut p.cursor;
            if first_only && c.chain != NONE && p.matched.get(c.row).copied().unwrap_or(false) {
                // Resuming inside the chain of a row that already has its match.
                c.chain = NONE;
                c.row += 1;
            }
            let skip_build = self.core.roles.skip_matched_build;
            let (pi, bi) = (&mut self.probe_idx, &mut self.build_idx);
            let keys = ProbeKeys {
                keys: p.keys.get(&p.batch),
                hashes: &p.hashes,
                null_rows: p.skip.as_deref().or(p.null_rows.as_deref()),
            };
            let m = Matches {
                size: self.core.batch_size,
                build_matched: &self.core.build_matched,
                probe_idx: &mut *pi,
                build_idx: &mut *bi,
            };
            let (index, bk) = (&table.index, table.keys.get(&self.core.build_batch));
            match (first_only && self.core.spec.filter.is_none(), skip_build) {
                (false, false) => index.find_matches::<false, false>(c, &keys, bk, m),
                (true, false) => index.find_matches::<true, false>(c, &keys, bk, m),
                (false, true) => index.find_matches::<false, true>(c, &keys, bk, m),
                (true, true) => index.find_matches::<true, true>(c, &keys, bk, m),
            }
            if pi.is_empty() {
                return Ok(None);
            }
            let whole =
                c.row == n && pi.len() == n && pi.iter().enumerate().all(|(k, &i)| i as usize == k);
            if whole && self.core.pairs_only() {
                // Every probe row matched once, in order, and nothing reads the batch after
                // this: its columns move into the output.
                let batch = std::mem::replace(&mut p.batch, Batch::empty(&[]));
                return self.core.pair_batch_moving(batch, bi).map(Some);
            }
            return self.core.resolve(&p.batch, pi, bi, &mut p.matched);
        }
        if self.core.roles.probe_unmatched {
            // A null-aware anti join drops NULL-key rows unless the right side is empty.
            let exclude = if self.core.spec.null_aware() && self.core.build_rows() > 0 {
                p.null_rows.as_deref()
            } else {
                None
            };
            let cursor = p.tail.get_or_insert(0);
            let out = self
                .core
                .unmatched_probe(&p.batch, &p.matched, exclude, cursor)?;
            if out.is_some() {
                return Ok(out);
            }
        }
        self.end_probe();
        Ok(None)
    }

    /// Whether the build rows' final output is due: the probe input ended and was joined.
    fn final_due(&self) -> bool {
        self.probe_ended
            && self.table.is_some()
            && self.probe.is_none()
            && self.early_probe.is_empty()
            && self.core.final_pending()
    }

    /// The next batch of build rows emitted after the probe input.
    fn final_step(&mut self) -> Result<Option<Batch>> {
        if self.blocked() {
            self.core.skip_final();
            return Ok(None);
        }
        // A null-aware anti join (left side built) drops NULL-key rows unless the right side
        // is empty.
        let exclude = match &self.table {
            Some(t) if self.null_aware.right_rows > 0 => t.null_rows.as_deref(),
            _ => None,
        };
        self.core.next_final(exclude)
    }
}

impl Operator for HashJoinOp {
    fn name(&self) -> &'static str {
        "HashJoin"
    }

    fn input_order(&self) -> InputOrder {
        InputOrder::Sequential
    }

    fn first_port(&self) -> usize {
        self.build_port()
    }

    fn push(&mut self, port: usize, batch: Batch) -> Result<()> {
        if port > 1 {
            return Err(Error::Internal(format!("hash join has no input {port}")));
        }
        if self.has_output() {
            return Err(output_pending(self.name()));
        }
        let build = port == self.build_port();
        if !(build && self.flags_column) {
            self.core.observe(port, &batch);
        }
        if let Some(grace) = &mut self.grace {
            return if batch.is_empty() {
                Ok(())
            } else {
                grace.push(build, &batch)
            };
        }
        if build {
            if self.table.is_some() {
                return Err(Error::Internal(
                    "hash join build input after its end".into(),
                ));
            }
            if batch.is_empty() {
                return Ok(());
            }
            if let Err(e) = self.reservation.try_grow(batch.memory_size()) {
                return self.spill(e, Some((port, batch)));
            }
            self.build_batches.push(batch);
            return Ok(());
        }
        if batch.is_empty() || self.is_done() {
            return Ok(());
        }
        // The probe batch is held, and accounted, until its last row has been joined.
        let size = batch.memory_size();
        if let Err(e) = self.reservation.try_grow(size) {
            return self.spill(e, Some((port, batch)));
        }
        if self.table.is_none() {
            // Fed out of order: hold the probe batch until the build side ends.
            self.early_probe.push_back(batch);
            return Ok(());
        }
        self.start_probe(batch, size)
    }

    fn finish(&mut self, port: usize) -> Result<()> {
        let build = port == self.build_port();
        if port > 1 {
            return Ok(());
        }
        if let Some(grace) = &mut self.grace {
            return grace.finish(build, &self.core.spec);
        }
        if build {
            if self.table.is_none() {
                if let Err(e) = self.finish_build() {
                    // Spilling takes what the build holds, and learns that it ended.
                    self.table = None;
                    self.spill(e, None)?;
                    if let Some(grace) = &mut self.grace {
                        return grace.finish(true, &self.core.spec);
                    }
                }
            }
        } else {
            self.probe_ended = true;
        }
        Ok(())
    }

    fn probe_filter(&mut self) -> Option<(KeyFilter, Vec<Expr>)> {
        let keys = self.probe_keys().to_vec();
        self.key_filter.take().map(|f| (f, keys))
    }

    fn next_output(&mut self) -> Result<Option<Batch>> {
        loop {
            if let Some(grace) = &mut self.grace {
                return grace.next_output();
            }
            if self.probe.is_some() {
                if let Some(out) = self.probe_step()? {
                    return Ok(Some(out));
                }
                continue;
            }
            if self.table.is_none() {
                return Ok(None);
            }
            if let Some(b) = self.early_probe.pop_front() {
                let size = b.memory_size();
                self.start_probe(b, size)?;
                continue;
            }
            if self.final_due() {
                if let Some(out) = self.final_step()? {
                    return Ok(Some(out));
                }
                continue;
            }
            return Ok(None);
        }
    }

    fn has_output(&self) -> bool {
        if let Some(grace) = &self.grace {
            return grace.has_output();
        }
        self.probe.is_some()
            || (self.table.is_some() && !self.early_probe.is_empty())
            || self.final_due()
    }

    fn is_done(&self) -> bool {
        if let Some(grace) = &self.grace {
            return grace.is_done();
        }
        // No more output can come, whatever else the probe side sends.
        let idle = self.table.is_some() && self.early_probe.is_empty() && self.probe.is_none();
        let roles = &self.core.roles;
        let build_rows_output = roles.build_alone() && self.core.build_rows() > 0;
        let may_output = roles.probe_alone() || self.null_aware_probes_right() || build_rows_output;
        let nothing_left = self.unmatchable() && !may_output;
        idle && (self.blocked() || nothing_left)
    }

    fn memory_size(&self) -> usize {
        self.reservation.size() + self.grace.as_ref().map_or(0, |g| g.memory_size())
    }

    fn revocable(&self) -> usize {
        let spills = self.ctx.spill.is_some()
            && self.grace.is_none()
            && !self.probe_ended
            && !self.has_output();
        if spills {
            self.reservation.size()
        } else {
            0
        }
    }

    fn revoke(&mut self) -> Result<()> {
        if self.revocable() == 0 {
            return Ok(());
        }
        self.spill_keeping(revoked(), None, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::drain;
    use crate::{DataType, UnboundedPool, Value};
    use std::sync::Arc;

    /// A `join_type` join on column 0 of each side, building `build`, over inputs of `types`
    /// (left, right).
    fn keyed_join(
        join_type: crate::plan::JoinType,
        build: JoinSide,
        types: (Vec<DataType>, Vec<DataType>),
    ) -> HashJoinOp {
        let spec = JoinSpec::new(join_type, build).with_types(types.0, types.1);
        HashJoinOp::with_spec(
            vec![Expr::col(0)],
            vec![Expr::col(0)],
            spec,
            ExecContext::new(vec![]),
            Reservation::unbounded(),
        )
        .unwrap()
    }

    fn run(build: JoinSide, left: &[Batch], right: &[Batch], batch_size: usize) -> Vec<Vec<Value>> {
        let mut ctx = ExecContext::new(vec![]);
        ctx.batch_size = batch_size;
        let mut op = HashJoinOp::new(
            vec![Expr::col(0)],
            vec![Expr::col(1)],
            build,
            ctx,
            Reservation::unbounded(),
        );
        let mut out = Vec::new();
        let (first, second) = if op.first_port() == 0 {
            ((0, left), (1, right))
        } else {
            ((1, right), (0, left))
        };
        for (port, batches) in [first, second] {
            for b in batches {
                op.push(port, b.clone()).unwrap();
                drain(&mut op, &mut out).unwrap();
            }
            op.finish(port).unwrap();
            drain(&mut op, &mut out).unwrap();
        }
        assert!(out
            .iter()
            .all(|b| b.num_rows() <= batch_size && !b.is_empty()));
        let mut rows: Vec<Vec<Value>> = out.iter().flat_map(|b| b.rows()).collect();
        rows.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
        rows
    }

    #[test]
    fn joins_both_build_sides() {
        let types = [DataType::Int64, DataType::Utf8];
        let left = Batch::from_rows(
            &types,
            &[
                vec![1.into(), "a".into()],
                vec![2.into(), "b".into()],
                vec![Value::Null, "n".into()],
                vec![2.into(), "b2".into()],
            ],
        )
        .unwrap();
        let rtypes = [DataType::Utf8, DataType::Int64];
        let right = Batch::from_rows(
            &rtypes,
            &[
                vec!["x".into(), 2.into()],
                vec!["y".into(), Value::Null],
                vec!["z".into(), 2.into()],
                vec!["w".into(), 3.into()],
            ],
        )
        .unwrap();
        let expect = run(
            JoinSide::Left,
            std::slice::from_ref(&left),
            std::slice::from_ref(&right),
            1,
        );
        assert_eq!(expect.len(), 4);
        assert_eq!(expect[0], vec![2.into(), "b".into(), "x".into(), 2.into()]);
        let other = run(JoinSide::Right, &[left], &[right], 3);
        assert_eq!(expect, other);
    }

    #[test]
    fn memory_limit_refuses() {
        let pool = UnboundedPool::with_limit(1000);
        let mut op = HashJoinOp::new(
            vec![Expr::col(0)],
            vec![Expr::col(0)],
            JoinSide::Left,
            ExecContext::new(vec![]),
            Reservation::new(pool.clone() as Arc<dyn crate::MemoryPool>),
        );
        let big = Batch::try_new(vec![Column::from_i64((0..1000).collect())]).unwrap();
        assert!(matches!(op.push(0, big), Err(Error::Memory(_))));
        drop(op);
        assert_eq!(pool.used(), 0);
    }

    #[test]
    fn accounts_real_heap_sizes() {
        let pool = UnboundedPool::new();
        let mut op = HashJoinOp::new(
            vec![Expr::col(0)],
            vec![Expr::col(0)],
            JoinSide::Left,
            ExecContext::new(vec![]),
            Reservation::new(pool.clone() as Arc<dyn crate::MemoryPool>),
        );
        let mut batch_bytes = 0;
        for start in (0..10_000i64).step_by(1000) {
            let b =
                Batch::try_new(vec![Column::from_i64((start..start + 1000).collect())]).unwrap();
            batch_bytes += b.memory_size();
            op.push(0, b).unwrap();
        }
        op.finish(0).unwrap();
        assert!(!op.has_output());
        let t = op.table.as_ref().unwrap();
        let expected =
            op.core.build_batch.memory_size() + t.keys.memory_size() + t.index.memory_size();
        assert_eq!(pool.used(), expected);
        // The index alone is bigger than the 10,000 keys (the old estimate missed that
        // hash table entries are padded to 16 bytes).
        assert!(t.index.memory_size() > 10_000 * 16);
        assert!(pool.used() > batch_bytes);
        drop(op);
        assert_eq!(pool.used(), 0);
    }

    /// A join whose probe rows need a match offers a filter of its build keys once the
    /// build side ended (once); one that outputs unmatched probe rows offers none.
    #[test]
    fn offers_a_filter_of_its_build_keys_when_probe_rows_need_a_match() {
        let build = || Batch::try_new(vec![Column::from_i64(vec![3, 5, 8])]).unwrap();
        let hash = |k: i64| {
            let mut h = Vec::new();
            hash_rows(&[Column::from_i64(vec![k])], &mut h);
            h[0]
        };
        let types = (vec![DataType::Int64], vec![DataType::Int64]);
        let cases = [
            (crate::plan::JoinType::Inner, JoinSide::Right, true),
            (crate::plan::JoinType::Semi, JoinSide::Right, true),
            (crate::plan::JoinType::Semi, JoinSide::Left, true),
            (crate::plan::JoinType::Left, JoinSide::Left, true),
            (crate::plan::JoinType::Left, JoinSide::Right, false),
            (
                crate::plan::JoinType::Anti { null_aware: false },
                JoinSide::Right,
                false,
            ),
            (
                crate::plan::JoinType::Anti { null_aware: true },
                JoinSide::Left,
                false,
            ),
        ];
        for (join_type, side, offers) in cases {
            let mut op = keyed_join(join_type, side, types.clone());
            let port = op.first_port();
            op.push(port, build()).unwrap();
            assert!(op.probe_filter().is_none(), "before the build side ended");
            op.finish(port).unwrap();
            let filter = op.probe_filter();
            assert_eq!(filter.is_some(), offers, "{join_type:?} building {side:?}");
            if let Some((f, keys)) = filter {
                assert_eq!(keys, vec![Expr::col(0)]);
                assert!([3, 5, 8].iter().all(|&k| f.may_contain(hash(k))));
                assert!(f.applies_to(&[DataType::Int64]));
                assert!(op.probe_filter().is_none(), "taken once");
            }
        }
    }

    /// With a build side large enough to be prefiltered, probe rows without a match are ruled
    /// out before their lookup; every join type still outputs what it must, unmatched probe
    /// rows and NULL keys included.
    #[test]
    fn a_prefiltered_probe_answers_every_join_type() {
        use crate::plan::JoinType;
        let rows = PREFILTER_MIN_ROWS as i64 + 10_000;
        // Build (right): the even keys. Probe (left): 0..3000 and a NULL key.
        let build =
            Batch::try_new(vec![Column::from_i64((0..rows).map(|k| k * 2).collect())]).unwrap();
        let probe_keys: Vec<Value> = (0..3000).map(Value::Int).chain([Value::Null]).collect();
        let probe = Batch::from_rows(
            &[DataType::Int64],
            &probe_keys
                .iter()
                .map(|k| vec![k.clone()])
                .collect::<Vec<_>>(),
        )
        .unwrap();
        let count = |join_type: JoinType| {
            let types = (vec![DataType::Int64], vec![DataType::Int64]);
            let mut op = keyed_join(join_type, JoinSide::Right, types);
            let mut out = Vec::new();
            op.push(1, build.clone()).unwrap();
            op.finish(1).unwrap();
            assert!(op.prefilter.is_some(), "{join_type:?}: prefiltered");
            op.push(0, probe.clone()).unwrap();
            drain(&mut op, &mut out).unwrap();
            op.finish(0).unwrap();
            drain(&mut op, &mut out).unwrap();
            let pre = op
                .prefilter
                .as_ref()
                .expect("still used: it rules out half");
            assert!(
                pre.ruled_out >= 1400,
                "{join_type:?}: {} ruled out",
                pre.ruled_out
            );
            out.iter().map(Batch::num_rows).sum::<usize>()
        };
        assert_eq!(count(JoinType::Inner), 1500);
        assert_eq!(count(JoinType::Semi), 1500);
        assert_eq!(count(JoinType::Left), 3001);
        assert_eq!(count(JoinType::Anti { null_aware: false }), 1501);
        // NOT IN: a NULL probe key is not output when the build side has rows.
        assert_eq!(count(JoinType::Anti { null_aware: true }), 1500);
    }

    #[test]
    fn empty_build_is_done() {
        let mut op = HashJoinOp::new(
            vec![Expr::col(0)],
            vec![Expr::col(0)],
            JoinSide::Right,
            ExecContext::new(vec![]),
            Reservation::unbounded(),
        );
        op.finish(1).unwrap();
        assert!(op.is_done());
        let b = Batch::try_new(vec![Column::from_i64(vec![1])]).unwrap();
        op.push(0, b).unwrap();
        assert!(!op.has_output());
        assert!(op.next_output().unwrap().is_none());
    }

    #[test]
    fn empty_build_of_a_left_join_is_not_done() {
        let types = (vec![DataType::Int64], vec![DataType::Utf8]);
        let mut op = keyed_join(crate::plan::JoinType::Left, JoinSide::Right, types);
        op.finish(1).unwrap();
        assert!(!op.is_done());
        let b = Batch::try_new(vec![Column::from_i64(vec![1, 2])]).unwrap();
        op.push(0, b).unwrap();
        let mut out = Vec::new();
        drain(&mut op, &mut out).unwrap();
        assert_eq!(
            out[0].rows(),
            vec![vec![1.into(), Value::Null], vec![2.into(), Value::Null]]
        );
        assert_eq!(out[0].types(), vec![DataType::Int64, DataType::Utf8]);
    }

    #[test]
    fn rejects_plans_it_cannot_run() {
        let ctx = ExecContext::new(vec![]);
        let na = JoinSpec::new(
            crate::plan::JoinType::Anti { null_aware: true },
            JoinSide::Right,
        );
        let two = vec![Expr::col(0), Expr::col(1)];
        assert!(HashJoinOp::with_spec(
            two.clone(),
            two,
            na.clone(),
            ctx.clone(),
            Reservation::unbounded()
        )
        .is_err());
        let filtered = na.with_filter(Some(Expr::lit(true)));
        let one = vec![Expr::col(0)];
        assert!(HashJoinOp::with_spec(
            one.clone(),
            one.clone(),
            filtered,
            ctx.clone(),
            Reservation::unbounded()
        )
        .is_err());
        let inner = JoinSpec::inner(JoinSide::Left);
        assert!(HashJoinOp::with_spec(
            vec![],
            vec![],
            inner,
            ctx.clone(),
            Reservation::unbounded()
        )
        .is_err());
        let untyped = JoinSpec::new(crate::plan::JoinType::Full, JoinSide::Left)
            .with_types(vec![DataType::Int64], vec![]);
        assert!(
            HashJoinOp::with_spec(one.clone(), one, untyped, ctx, Reservation::unbounded())
                .is_err()
        );
    }

    /// A join on column 0 of both sides, building the right one, with `batch_size` rows per
    /// output batch and its memory in a pool the test can read.
    fn counted_join(batch_size: usize) -> (Arc<UnboundedPool>, HashJoinOp) {
        let pool = UnboundedPool::new();
        let mut ctx = ExecContext::new(vec![]);
        ctx.batch_size = batch_size;
        let op = HashJoinOp::new(
            vec![Expr::col(0)],
            vec![Expr::col(0)],
            JoinSide::Right,
            ctx,
            Reservation::new(pool.clone() as Arc<dyn crate::MemoryPool>),
        );
        (pool, op)
    }

    /// A build side of `keys` distinct keys, each `dups` times: `(key, build row)`.
    fn dup_build(keys: i64, dups: i64) -> Batch {
        let k: Vec<i64> = (0..keys * dups).map(|i| i % keys).collect();
        let v: Vec<i64> = (0..keys * dups).collect();
        Batch::try_new(vec![Column::from_i64(k), Column::from_i64(v)]).unwrap()
    }

    #[test]
    fn exploding_probe_is_emitted_one_batch_at_a_time() {
        let (pool, mut op) = counted_join(100);
        // 4 distinct keys, 500 build rows each.
        op.push(1, dup_build(4, 500)).unwrap();
        op.finish(1).unwrap();
        let built = pool.used();
        // 1000 probe rows with keys 0..8: half match, each 500 times.
        let probe_keys: Vec<i64> = (0..1000).map(|i| i % 8).collect();
        let probe = Batch::try_new(vec![Column::from_i64(probe_keys.clone())]).unwrap();
        let probe_bytes = probe.memory_size();
        op.push(0, probe).unwrap();
        assert!(op.has_output());
        let held = pool.used();
        assert!(held >= built + probe_bytes);
        // A driver that obeys the contract cannot push more while output is pending.
        let extra = Batch::try_new(vec![Column::from_i64(vec![0])]).unwrap();
        assert!(op.push(0, extra).is_err());
        let mut total = 0;
        let mut calls = 0;
        let mut pairs = Vec::new();
        while let Some(b) = op.next_output().unwrap() {
            assert!(!b.is_empty() && b.num_rows() <= 100);
            // Memory does not grow with the output.
            assert_eq!(pool.used(), if op.has_output() { held } else { built });
            total += b.num_rows();
            calls += 1;
            let l = b.column(0).as_i64().unwrap();
            let r = b.column(2).as_i64().unwrap();
            pairs.extend(l.iter().zip(r).map(|(&k, &row)| (k, row)));
        }
        assert_eq!(total, 500 * 500);
        assert_eq!(calls, 500 * 500 / 100);
        assert!(!op.has_output());
        assert_eq!(pool.used(), built);
        // Every match exactly once, and in probe-row-then-chain order.
        let mut expect = Vec::new();
        for &k in &probe_keys {
            if k < 4 {
                expect.extend((0..500).map(|d| (k, d * 4 + k)));
            }
        }
        assert_eq!(pairs, expect);
        drop(op);
        assert_eq!(pool.used(), 0);
    }

    #[test]
    fn resumes_at_every_batch_size() {
        let types = [DataType::Int64];
        // `run` joins the left column 0 with the right column 1.
        let b = dup_build(3, 7);
        let build = Batch::try_new(vec![b.column(1).clone(), b.column(0).clone()]).unwrap();
        let probe = Batch::from_rows(
            &types,
            &[
                vec![0.into()],
                vec![Value::Null],
                vec![5.into()],
                vec![2.into()],
                vec![0.into()],
                vec![1.into()],
            ],
        )
        .unwrap();
        let want = run(
            JoinSide::Right,
            std::slice::from_ref(&probe),
            std::slice::from_ref(&build),
            1000,
        );
        assert_eq!(want.len(), 4 * 7);
        for size in [1, 2, 3, 6, 7, 8, 13, 27, 28, 29] {
            let got = run(
                JoinSide::Right,
                std::slice::from_ref(&probe),
                std::slice::from_ref(&build),
                size,
            );
            assert_eq!(got, want, "batch size {size}");
        }
    }

    #[test]
    fn early_probe_batches_are_probed_one_at_a_time() {
        let (pool, mut op) = counted_join(10);
        // Out of order: probe batches before the build ends.
        let mut probe_bytes = 0;
        for k in 0..3 {
            let b = Batch::try_new(vec![Column::from_i64(vec![k; 5])]).unwrap();
            probe_bytes += b.memory_size();
            op.push(0, b).unwrap();
            assert!(!op.has_output());
        }
        assert_eq!(pool.used(), probe_bytes);
        op.push(1, dup_build(2, 20)).unwrap();
        op.finish(1).unwrap();
        assert!(op.has_output());
        let mut out = Vec::new();
        drain(&mut op, &mut out).unwrap();
        // Keys 0 and 1 match 20 times for each of 5 probe rows; key 2 never.
        assert_eq!(out.iter().map(Batch::num_rows).sum::<usize>(), 2 * 5 * 20);
        assert!(out.iter().all(|b| b.num_rows() == 10));
        assert!(!op.has_output());
        op.finish(0).unwrap();
        assert!(op.next_output().unwrap().is_none());
        let table_bytes = op.memory_size();
        drop(op);
        assert_eq!(pool.used(), 0);
        assert!(table_bytes > 0);
    }
}
