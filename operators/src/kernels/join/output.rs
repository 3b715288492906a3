//! What both join kernels share once candidate row pairs are found: the residual filter, the
//! "has a match" flags, and the output batches (matching pairs, probe rows without a match,
//! and the build rows emitted after the probe input), each gathered by index vectors and at
//! most `batch_size` rows. Only the output columns the join emits ([`JoinSpec::output`]) are
//! gathered; the residual filter still sees whole pairs.

use super::spec::{port_of, JoinSpec, Roles};
use crate::eval::evaluate_predicate;
use crate::kernels::filter::apply_mask;
use crate::plan::JoinSide;
use crate::{Batch, Column, DataType, Result, Value};
use std::sync::Arc;

/// The type-dependent half of a join: its build rows, their match flags and what to output.
pub(crate) struct JoinCore {
    /// The join's type, filter, build side and input types.
    pub spec: JoinSpec,
    /// What the type means for this build side.
    pub roles: Roles,
    params: Arc<Vec<Value>>,
    /// Rows per output batch (at least 1).
    pub batch_size: usize,
    /// Whether the types of each input (left, right) were taken from a batch yet.
    typed: [bool; 2],
    /// The build side, once it ended.
    pub build_batch: Batch,
    /// "Has a match" per build row (when `roles.track_build`), accounted by the kernel.
    pub build_matched: Vec<bool>,
    /// The next build row the final phase looks at.
    final_row: usize,
    /// Scratch: rows of one output batch.
    idx: Vec<u32>,
}

impl JoinCore {
    /// The core of a join as `spec` describes, with the parameters and batch size given.
    pub fn new(spec: JoinSpec, params: Arc<Vec<Value>>, batch_size: usize) -> Self {
        let roles = Roles::of(spec.join_type, spec.build);
        JoinCore {
            spec,
            roles,
            params,
            batch_size: batch_size.max(1),
            typed: [false; 2],
            build_batch: Batch::empty(&[]),
            build_matched: Vec::new(),
            final_row: 0,
            idx: Vec::new(),
        }
    }

    /// The build side's port.
    pub fn build_port(&self) -> usize {
        port_of(self.spec.build)
    }

    /// Whether the probe side is the left input.
    fn probe_is_left(&self) -> bool {
        self.spec.build == JoinSide::Right
    }

    /// Takes input `port`'s column types from its first batch (empty or not).
    pub fn observe(&mut self, port: usize, batch: &Batch) {
        if port < 2 && !self.typed[port] {
            self.typed[port] = true;
            let types = batch.types();
            if port == 0 {
                self.spec.left_types = types;
            } else {
                self.spec.right_types = types;
            }
        }
    }

    /// Installs the complete build side; returns the bytes of the match flags to account
    /// (already allocated).
    pub fn set_build(&mut self, batch: Batch) -> usize {
        let n = batch.num_rows();
        if batch.num_columns() > 0 || n > 0 {
            let port = self.build_port();
            if !self.typed[port] {
                self.observe(port, &batch);
            }
        }
        self.build_batch = batch;
        if self.roles.track_build {
            self.build_matched = vec![false; n];
        }
        self.build_matched.capacity()
    }

    /// Rows of the build side.
    pub fn build_rows(&self) -> usize {
        self.build_batch.num_rows()
    }

    fn build_types(&self) -> &[DataType] {
        match self.spec.build {
            JoinSide::Left => &self.spec.left_types,
            JoinSide::Right => &self.spec.right_types,
        }
    }

    fn probe_types(&self) -> &[DataType] {
        match self.spec.build {
            JoinSide::Left => &self.spec.right_types,
            JoinSide::Right => &self.spec.left_types,
        }
    }

    /// The output positions where the probe side's columns and the build side's begin, for
    /// sides `probe_width` and `build_width` columns wide.
    fn offsets(&self, probe_width: usize, build_width: usize) -> (usize, usize) {
        if self.probe_is_left() {
            (0, probe_width)
        } else {
            (build_width, 0)
        }
    }

    /// The items of one side (its columns, or anything made per column) whose output
    /// positions, counted from `offset`, the join emits.
    fn emitted<'a, I: IntoIterator + 'a>(
        &'a self,
        side: I,
        offset: usize,
    ) -> impl Iterator<Item = I::Item> + 'a {
        side.into_iter()
            .enumerate()
            .filter(move |(i, _)| self.spec.emits(offset + i))
            .map(|(_, c)| c)
    }

    /// Left columns then right columns, from the probe side's and the build side's.
    fn in_output_order(
        &self,
        probe: impl Iterator<Item = Column>,
        build: impl Iterator<Item = Column>,
    ) -> Vec<Column> {
        if self.probe_is_left() {
            probe.chain(build).collect()
        } else {
            build.chain(probe).collect()
        }
    }

    /// The rows at `idx` of `batch` when it alone is the output (the left input of a semi or
    /// anti join): its emitted columns, gathered.
    fn alone(&self, batch: &Batch, idx: &[u32]) -> Result<Batch> {
        let cols = self.emitted(batch.columns(), 0).map(|c| c.take(idx));
        Batch::with_row_count(cols.collect(), idx.len())
    }

    /// `batch`, laid out as the unprojected output, with only the columns the join emits.
    fn projected(&self, batch: Batch) -> Result<Batch> {
        if self.spec.output.is_none() {
            return Ok(batch);
        }
        let rows = batch.num_rows();
        let cols = self.emitted(batch.into_columns(), 0).collect();
        Batch::with_row_count(cols, rows)
    }

    /// The pairs `(probe_idx[k], build_idx[k])` as rows of left columns then right columns:
    /// every column (what the residual filter reads).
    fn pair_batch(&self, probe: &Batch, probe_idx: &[u32], build_idx: &[u32]) -> Result<Batch> {
        let p = probe.columns().iter().map(|c| c.take(probe_idx));
        let b = self.build_batch.columns().iter().map(|c| c.take(build_idx));
        Batch::with_row_count(self.in_output_order(p, b), probe_idx.len())
    }

    /// Whether a block of key-matching pairs outputs just those pairs and records nothing
    /// (an inner join without residual filter).
    pub fn pairs_only(&self) -> bool {
        self.spec.filter.is_none()
            && self.roles.pairs
            && !self.roles.track_probe
            && !self.roles.track_build
    }

    /// The emitted columns of the pairs `(probe_idx[k], build_idx[k])`.
    fn pair_output(&self, probe: &Batch, probe_idx: &[u32], build_idx: &[u32]) -> Result<Batch> {
        let build = self.build_batch.columns();
        let (po, bo) = self.offsets(probe.num_columns(), build.len());
        let p = self.emitted(probe.columns(), po).map(|c| c.take(probe_idx));
        let b = self.emitted(build, bo).map(|c| c.take(build_idx));
        Batch::with_row_count(self.in_output_order(p, b), probe_idx.len())
    }

    /// The emitted columns of the pairs `(row k of probe, build_idx[k])` for every row of
    /// `probe`, with the probe columns moved in, not gathered.
    pub fn pair_batch_moving(&self, probe: Batch, build_idx: &[u32]) -> Result<Batch> {
        let rows = probe.num_rows();
        let build = self.build_batch.columns();
        let (po, bo) = self.offsets(probe.num_columns(), build.len());
        let p = self.emitted(probe.into_columns(), po);
        let b = self.emitted(build, bo).map(|c| c.take(build_idx));
        Batch::with_row_count(self.in_output_order(p, b), rows)
    }

    /// Joins one block of candidate pairs (key matches, or any pairs for a nested-loop join):
    /// keeps those passing the residual filter, records their matches, and returns what the
    /// block outputs (the pairs, or probe rows at their first match), if anything. The index
    /// vectors are left holding the passing pairs.
    pub fn resolve(
        &mut self,
        probe: &Batch,
        probe_idx: &mut Vec<u32>,
        build_idx: &mut Vec<u32>,
        probe_matched: &mut [bool],
    ) -> Result<Option<Batch>> {
        let mut filtered = None;
        if let Some(f) = &self.spec.filter {
            let pairs = self.pair_batch(probe, probe_idx, build_idx)?;
            let mask = evaluate_predicate(f, &pairs, &self.params)?;
            retain_by(probe_idx, &mask);
            retain_by(build_idx, &mask);
            if self.roles.pairs {
                filtered = apply_mask(pairs, &mask)
                    .map(|b| self.projected(b))
                    .transpose()?;
            }
        }
        if probe_idx.is_empty() {
            return Ok(None);
        }
        if self.roles.track_build {
            for &j in build_idx.iter() {
                if let Some(m) = self.build_matched.get_mut(j as usize) {
                    *m = true;
                }
            }
        }
        if self.roles.probe_semi {
            self.idx.clear();
            for &i in probe_idx.iter() {
                if let Some(m) = probe_matched.get_mut(i as usize) {
                    if !*m {
                        *m = true;
                        self.idx.push(i);
                    }
                }
            }
            if self.idx.is_empty() {
                return Ok(None);
            }
            return self.alone(probe, &self.idx).map(Some);
        }
        if self.roles.track_probe {
            for &i in probe_idx.iter() {
                if let Some(m) = probe_matched.get_mut(i as usize) {
                    *m = true;
                }
            }
        }
        if !self.roles.pairs {
            return Ok(None);
        }
        match filtered {
            Some(b) => Ok(Some(b)),
            None => self.pair_output(probe, probe_idx, build_idx).map(Some),
        }
    }

    /// The next batch of probe rows without a match, from row `*cursor` on, skipping rows
    /// marked in `exclude`: padded with NULL build columns for outer joins, alone for anti
    /// joins. `None` once there are no more.
    pub fn unmatched_probe(
        &mut self,
        probe: &Batch,
        matched: &[bool],
        exclude: Option<&[bool]>,
        cursor: &mut usize,
    ) -> Result<Option<Batch>> {
        let n = probe.num_rows();
        self.idx.clear();
        while *cursor < n && self.idx.len() < self.batch_size {
            let i = *cursor;
            *cursor += 1;
            let hit = matched.get(i).copied().unwrap_or(false);
            let skip = exclude.is_some_and(|m| m.get(i).copied().unwrap_or(false));
            if !hit && !skip {
                self.idx.push(i as u32);
            }
        }
        if self.idx.is_empty() {
            return Ok(None);
        }
        if !self.roles.pairs {
            return self.alone(probe, &self.idx).map(Some);
        }
        let rows = self.idx.len();
        let build_types = self.build_types();
        let (po, bo) = self.offsets(probe.num_columns(), build_types.len());
        let p = self.emitted(probe.columns(), po).map(|c| c.take(&self.idx));
        let nulls = self.emitted(null_columns(build_types, rows), bo);
        Batch::with_row_count(self.in_output_order(p, nulls), rows).map(Some)
    }

    /// Whether the final phase (build rows after the probe input) has rows left to look at.
    pub fn final_pending(&self) -> bool {
        self.roles.build_final.is_some() && self.final_row < self.build_rows()
    }

    /// Ends the final phase without output.
    pub fn skip_final(&mut self) {
        self.final_row = self.build_rows();
    }

    /// The next batch of the final phase: build rows whose match flag is
    /// `roles.build_final`, skipping rows marked in `exclude`, padded with NULL probe columns
    /// for outer joins. `None` once there are no more.
    pub fn next_final(&mut self, exclude: Option<&[bool]>) -> Result<Option<Batch>> {
        let Some(want) = self.roles.build_final else {
            return Ok(None);
        };
        let n = self.build_rows();
        self.idx.clear();
        while self.final_row < n && self.idx.len() < self.batch_size {
            let j = self.final_row;
            self.final_row += 1;
            let hit = self.build_matched.get(j).copied().unwrap_or(false);
            let skip = exclude.is_some_and(|m| m.get(j).copied().unwrap_or(false));
            if hit == want && !skip {
                self.idx.push(j as u32);
            }
        }
        if self.idx.is_empty() {
            return Ok(None);
        }
        if !self.roles.pairs {
            return self.alone(&self.build_batch, &self.idx).map(Some);
        }
        let rows = self.idx.len();
        let probe_types = self.probe_types();
        let build = self.build_batch.columns();
        let (po, bo) = self.offsets(probe_types.len(), build.len());
        let b = self.emitted(build, bo).map(|c| c.take(&self.idx));
        let nulls = self.emitted(null_columns(probe_types, rows), po);
        Batch::with_row_count(self.in_output_order(nulls, b), rows).map(Some)
    }
}

/// All-NULL columns of the given types.
fn null_columns(types: &[DataType], rows: usize) -> impl Iterator<Item = Column> + '_ {
    types.iter().map(move |&t| Column::nulls(t, rows))
}

/// Keeps the entries of `v` whose mask entry is true.
fn retain_by(v: &mut Vec<u32>, mask: &[bool]) {
    let mut k = 0;
    v.retain(|_| {
        let keep = mask.get(k).copied().unwrap_or(false);
        k += 1;
        keep
    });
}
