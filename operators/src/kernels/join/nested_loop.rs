//! Nested-loop join kernel: joins without equality keys (cross joins, theta joins such as
//! `l.a < r.b`), for every [`JoinType`](crate::plan::JoinType) except the null-aware anti
//! join, and either build side.
//!
//! The build side is received completely first, accounted, and concatenated into one batch.
//! Each probe batch is then compared with every build row, block by block: a block is up to
//! `batch_size` (probe row, build row) pairs in row-major order, built as two index vectors,
//! gathered into one batch of left then right columns, and filtered by one evaluation of the
//! predicate. So the work per `next_output` call and the memory it needs are bounded by one
//! block, whatever the sizes of the two sides. Which matches are recorded and what is output
//! (pairs, unmatched probe rows after each probe batch, build rows after the probe input) is
//! shared with the hash join (see [`JoinCore`]).

use super::output::JoinCore;
use super::spec::JoinSpec;
use crate::kernels::operator::{output_pending, ExecContext, InputOrder, Operator};
use crate::{Batch, Error, Reservation, Result};
use std::collections::VecDeque;

/// Nested-loop join.
pub struct NestedLoopJoinOp {
    core: JoinCore,
    reservation: Reservation,
    /// Build batches received so far.
    build_batches: Vec<Batch>,
    /// Whether the build side ended.
    built: bool,
    /// Probe batches received before the build side ended (accounted).
    early_probe: VecDeque<Batch>,
    /// The probe batch being joined, if any.
    probe: Option<Probe>,
    /// The probe input ended.
    probe_ended: bool,
    /// Scratch space for the pairs of one block.
    probe_idx: Vec<u32>,
    build_idx: Vec<u32>,
}

/// A probe batch being joined and where it stopped.
struct Probe {
    batch: Batch,
    /// The probe row of the next pair.
    row: usize,
    /// The build row of the next pair.
    col: usize,
    /// "Has a match" per row, when the join type records it.
    matched: Vec<bool>,
    /// Once every pair is joined: the next row to look at for unmatched output.
    tail: Option<usize>,
    /// Bytes accounted in the reservation for this probe (the batch and its match flags).
    accounted: usize,
}

impl NestedLoopJoinOp {
    /// A nested-loop join as `spec` describes; `spec.filter` is the join predicate (`None`:
    /// every pair matches). Port 0 is the left input, port 1 the right input; the build side
    /// must be fed completely first. Fails for a null-aware anti join, which needs keys.
    pub fn new(spec: JoinSpec, ctx: ExecContext, reservation: Reservation) -> Result<Self> {
        if spec.null_aware() {
            return Err(Error::Internal(
                "a nested-loop join cannot be a null-aware anti join".into(),
            ));
        }
        Ok(NestedLoopJoinOp {
            core: JoinCore::new(spec, ctx.params.clone(), ctx.batch_size),
            reservation,
            build_batches: Vec::new(),
            built: false,
            early_probe: VecDeque::new(),
            probe: None,
            probe_ended: false,
            probe_idx: Vec::new(),
            build_idx: Vec::new(),
        })
    }

    /// The input port of the build side (0 for the left input, 1 for the right).
    pub fn build_port(&self) -> usize {
        self.core.build_port()
    }

    /// Concatenates the build batches (accounting the copy before it is made) and installs
    /// the build side with its match flags.
    fn finish_build(&mut self) -> Result<()> {
        let batches = std::mem::take(&mut self.build_batches);
        let parts: usize = batches.iter().map(Batch::memory_size).sum();
        let batch = if batches.len() <= 1 {
            batches
                .into_iter()
                .next()
                .unwrap_or_else(|| Batch::empty(&[]))
        } else {
            // The copy is accounted before it is made; the parts are released after, and the
            // reservation then holds the copy's real size.
            self.reservation.try_grow(parts)?;
            let b = Batch::concat(&batches);
            drop(batches);
            self.reservation.shrink(parts);
            let b = b?;
            self.reservation.shrink(parts);
            self.reservation.try_grow(b.memory_size())?;
            b
        };
        let flags = if self.core.roles.track_build {
            batch.num_rows()
        } else {
            0
        };
        self.reservation.try_grow(flags)?;
        self.core.set_build(batch);
        self.built = true;
        Ok(())
    }

    /// Makes `batch` the current probe (its `accounted` bytes already reserved), or drops
    /// it when it cannot produce output.
    fn start_probe(&mut self, batch: Batch, accounted: usize) -> Result<()> {
        let n = batch.num_rows();
        let m = self.core.build_rows();
        if n == 0 || (m == 0 && !self.core.roles.probe_alone()) {
            self.reservation.shrink(accounted);
            return Ok(());
        }
        let flags = if self.core.roles.track_probe { n } else { 0 };
        if let Err(e) = self.reservation.try_grow(flags) {
            self.reservation.shrink(accounted);
            return Err(e);
        }
        self.probe = Some(Probe {
            batch,
            row: if m == 0 { n } else { 0 },
            col: 0,
            matched: vec![false; flags],
            tail: None,
            accounted: accounted + flags,
        });
        Ok(())
    }

    fn end_probe(&mut self) {
        if let Some(p) = self.probe.take() {
            self.reservation.shrink(p.accounted);
        }
    }

    /// One step of the current probe: joins the next block of pairs, or emits the next
    /// batch of its unmatched rows, or ends it. `None` when the step produced no rows.
    fn probe_step(&mut self) -> Result<Option<Batch>> {
        let Some(p) = &mut self.probe else {
            return Ok(None);
        };
        if p.row < p.batch.num_rows() {
            self.fill_block();
            let Some(p) = &mut self.probe else {
                return Ok(None);
            };
            if self.probe_idx.is_empty() {
                return Ok(None);
            }
            let (pi, bi) = (&mut self.probe_idx, &mut self.build_idx);
            return self.core.resolve(&p.batch, pi, bi, &mut p.matched);
        }
        if self.core.roles.probe_unmatched {
            let cursor = p.tail.get_or_insert(0);
            let out = self
                .core
                .unmatched_probe(&p.batch, &p.matched, None, cursor)?;
            if out.is_some() {
                return Ok(out);
            }
        }
        self.end_probe();
        Ok(None)
    }

    /// Collects the next block of up to `batch_size` pairs of the current probe, skipping
    /// probe rows (semi and anti joins probing the left side) or build rows (building it)
    /// that already have their match. Without a predicate, one pair per probe row is enough
    /// for those joins.
    fn fill_block(&mut self) {
        let Some(p) = &mut self.probe else {
            return;
        };
        let roles = self.core.roles;
        let one = self.core.spec.filter.is_none() && roles.probe_first_only;
        let size = self.core.batch_size;
        let m = self.core.build_rows();
        let n = p.batch.num_rows();
        let built = &self.core.build_matched;
        let (pi, bi) = (&mut self.probe_idx, &mut self.build_idx);
        pi.clear();
        bi.clear();
        while p.row < n && pi.len() < size {
            if roles.probe_first_only && p.matched.get(p.row).copied().unwrap_or(false) {
                p.row += 1;
                p.col = 0;
                continue;
            }
            let i = p.row as u32;
            while p.col < m && pi.len() < size {
                let j = p.col;
                p.col += 1;
                if roles.skip_matched_build && built.get(j).copied().unwrap_or(false) {
                    continue;
                }
                pi.push(i);
                bi.push(j as u32);
                if one {
                    p.col = m;
                }
            }
            if p.col >= m {
                p.row += 1;
                p.col = 0;
            }
        }
    }

    /// Whether the build rows' final output is due.
    fn final_due(&self) -> bool {
        self.probe_ended
            && self.built
            && self.probe.is_none()
            && self.early_probe.is_empty()
            && self.core.final_pending()
    }
}

impl Operator for NestedLoopJoinOp {
    fn name(&self) -> &'static str {
        "NestedLoopJoin"
    }

    fn input_order(&self) -> InputOrder {
        InputOrder::Sequential
    }

    fn first_port(&self) -> usize {
        self.build_port()
    }

    fn push(&mut self, port: usize, batch: Batch) -> Result<()> {
        if port > 1 {
            return Err(Error::Internal(format!(
                "nested-loop join has no input {port}"
            )));
        }
        if self.has_output() {
            return Err(output_pending(self.name()));
        }
        self.core.observe(port, &batch);
        if port == self.build_port() {
            if self.built {
                return Err(Error::Internal(
                    "nested-loop join build input after its end".into(),
                ));
            }
            if batch.is_empty() {
                return Ok(());
            }
            self.reservation.try_grow(batch.memory_size())?;
            self.build_batches.push(batch);
            return Ok(());
        }
        if batch.is_empty() || self.is_done() {
            return Ok(());
        }
        let size = batch.memory_size();
        self.reservation.try_grow(size)?;
        if !self.built {
            self.early_probe.push_back(batch);
            return Ok(());
        }
        self.start_probe(batch, size)
    }

    fn finish(&mut self, port: usize) -> Result<()> {
        if port == self.build_port() {
            if !self.built {
                self.finish_build()?;
            }
        } else if port < 2 {
            self.probe_ended = true;
        }
        Ok(())
    }

    fn next_output(&mut self) -> Result<Option<Batch>> {
        loop {
            if self.probe.is_some() {
                if let Some(out) = self.probe_step()? {
                    return Ok(Some(out));
                }
                continue;
            }
            if !self.built {
                return Ok(None);
            }
            if let Some(b) = self.early_probe.pop_front() {
                let size = b.memory_size();
                self.start_probe(b, size)?;
                continue;
            }
            if self.final_due() {
                if let Some(out) = self.core.next_final(None)? {
                    return Ok(Some(out));
                }
                continue;
            }
            return Ok(None);
        }
    }

    fn has_output(&self) -> bool {
        self.probe.is_some() || (self.built && !self.early_probe.is_empty()) || self.final_due()
    }

    fn is_done(&self) -> bool {
        // An empty build side leaves nothing to output unless probe rows are output alone.
        self.built
            && self.probe.is_none()
            && self.early_probe.is_empty()
            && self.core.build_rows() == 0
            && !self.core.roles.probe_alone()
    }

    fn memory_size(&self) -> usize {
        self.reservation.size()
    }
}
