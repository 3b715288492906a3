//! The window operator ([`WindowOp`]): buffers its whole input (a pipeline breaker, like a
//! sort), then sorts a permutation of the rows once by partition keys and ORDER BY keys with
//! the sort kernel's comparisons and encodings, finds the partitions and peer groups once,
//! evaluates every function over the sorted rows, and puts the results back in input order.
//!
//! Output is **in input order**: each buffered input batch leaves as it came (moved, not
//! copied; one longer than the batch size in slices), with the functions' columns appended.
//! Only the key and argument columns are ever sorted, never the rows themselves, so the
//! input is held once, and each batch's bytes go back to the pool as it leaves.
//!
//! With `keep` (top-N per partition) the operator drops rows it can tell will not be among
//! the first `keep` of their partition as it goes: when the buffer has doubled since it was
//! last cut, it is sorted and cut to the first `keep` rows of each partition, so it holds
//! O(partitions · keep) rows, not its whole input.
//!
//! Everything held is accounted in the operator's reservation: the buffered batches and
//! evaluated keys as they arrive, and before the evaluation the sorted keys and arguments,
//! the permutation, the layout, the frames and the results.
//!
//! A partitioned window without `keep` that is refused memory and has a spill space spills:
//! the rows it holds, and every later one, go to [`SpillPartitions`] by the hash of their
//! partition keys, so that each of the window's partitions lies whole in one file; at the end
//! each file is evaluated alone by a window of its own (which spills again, one level deeper,
//! if it must, up to [`MAX_LEVEL`]). The output is then in input order within each file, the
//! files one after the other. (An unpartitioned window is one partition: it does not spill.)

use super::aggregates;
use super::frame::Frames;
use super::functions::Window;
use super::layout::Layout;
use crate::eval::evaluate;
use crate::kernels::operator::{output_pending, ExecContext, Operator};
use crate::kernels::sort::order::sort_indices;
use crate::plan::{SortKey, WindowExpr, WindowFunc};
use crate::spill::{SpillFile, SpillPartitions};
use crate::types::row_bytes;
use crate::{Batch, Column, Error, Expr, Reservation, Result};
use std::collections::VecDeque;

/// The deepest spill level: a window's partition that still does not fit after the rows are
/// split 16⁴ ways is one partition (or hash collisions) larger than the memory.
pub(crate) const MAX_LEVEL: u32 = 3;

/// Rows a top-N window buffers at least before it first cuts its buffer.
const MIN_COMPACT_ROWS: usize = 1024;

/// The window operator.
pub struct WindowOp {
    /// How many of the first `exprs` are partition keys.
    partitions: usize,
    order_by: Vec<SortKey>,
    functions: Vec<WindowExpr>,
    keep: Option<usize>,
    ctx: ExecContext,
    reservation: Reservation,
    /// What the operator reads of each row: partition keys, ORDER BY keys, then every
    /// function's arguments.
    exprs: Vec<Expr>,
    /// For each of `exprs`, the input column it names (read from the batch, not copied).
    inputs: Vec<Option<usize>>,
    /// Where each function's arguments begin among `exprs`.
    arg_at: Vec<usize>,
    /// Buffered input, and per batch its evaluated expressions (`None` for those read from
    /// the batch).
    batches: Vec<Batch>,
    evaluated: Vec<Vec<Option<Column>>>,
    rows: usize,
    /// With `keep`: the buffered rows past which the buffer is cut again.
    compact_at: usize,
    finished: bool,
    out: Option<Output>,
    /// How deep a spill this window evaluates (0: it reads the query's rows).
    level: u32,
    /// Refused memory: the files its rows are spilled to.
    spilling: Option<SpillPartitions>,
    /// After the input ended, the spilled files still to evaluate.
    spilled: VecDeque<SpillFile>,
    /// The window evaluating the file being emitted.
    merging: Option<Box<WindowOp>>,
}

/// The evaluated window being emitted.
struct Output {
    /// The input batches not yet (wholly) emitted, in order.
    batches: VecDeque<Batch>,
    /// The row (among all input rows) where `batches.front()` begins, and the next row of it
    /// to emit.
    base: usize,
    pos: usize,
    /// The functions' columns over all rows, in input order.
    results: Vec<Column>,
    /// With `keep`: which rows are output.
    keep: Option<Vec<bool>>,
}

impl WindowOp {
    /// A window partitioned by `partition_by` and ordered by `order_by`, computing
    /// `functions`; with `keep`, only the first `keep` rows of each partition (in window
    /// order) are output.
    pub fn new(
        partition_by: Vec<Expr>,
        order_by: Vec<SortKey>,
        functions: Vec<WindowExpr>,
        keep: Option<usize>,
        ctx: ExecContext,
        reservation: Reservation,
    ) -> Self {
        let partitions = partition_by.len();
        let mut exprs = partition_by;
        exprs.extend(order_by.iter().map(|k| k.expr.clone()));
        let mut arg_at = Vec::with_capacity(functions.len());
        for f in &functions {
            arg_at.push(exprs.len());
            exprs.extend(f.args.iter().cloned());
        }
        let inputs = exprs.iter().map(Expr::column_index).collect();
        let compact_at = MIN_COMPACT_ROWS.max(ctx.batch_size);
        WindowOp {
            partitions,
            order_by,
            functions,
            keep,
            ctx,
            reservation,
            exprs,
            inputs,
            arg_at,
            batches: Vec::new(),
            evaluated: Vec::new(),
            rows: 0,
            compact_at,
            finished: false,
            out: None,
            level: 0,
            spilling: None,
            spilled: VecDeque::new(),
            merging: None,
        }
    }

    /// Whether refused memory makes it spill: it has a spill space, partition keys, no
    /// `keep` (a top-N holds little), and levels left.
    fn can_spill(&self) -> bool {
        self.ctx.spill.is_some()
            && self.partitions > 0
            && self.keep.is_none()
            && self.level < MAX_LEVEL
    }

    /// Writes `batch` (with its evaluated expressions) to the spill files by the hash of
    /// its partition keys.
    fn spill_batch(&mut self, batch: &Batch, evaluated: &[Option<Column>]) -> Result<()> {
        let keys: Vec<&Column> = (0..self.partitions)
            .map(|k| part(batch, evaluated, k, &self.inputs))
            .collect();
        self.spilling
            .as_mut()
            .expect("spilling")
            .write_keyed(batch, &keys)
    }

    /// Starts spilling (if it has not): everything buffered goes to the spill files, and its
    /// memory back to the pool.
    fn spill(&mut self) -> Result<()> {
        if self.spilling.is_none() {
            let space = self.ctx.spill.clone().expect("a spill space");
            if self.level == 0 {
                space.record_spill();
            }
            self.spilling = Some(SpillPartitions::new(&space, self.level, &self.reservation));
        }
        let batches = std::mem::take(&mut self.batches);
        let evaluated = std::mem::take(&mut self.evaluated);
        for (b, ev) in batches.iter().zip(&evaluated) {
            self.spill_batch(b, ev)?;
        }
        self.rows = 0;
        self.reservation.free();
        Ok(())
    }

    /// The next batch of the spilled files' windows, each file evaluated alone one level
    /// deeper.
    fn next_spilled(&mut self) -> Result<Option<Batch>> {
        loop {
            if let Some(window) = &mut self.merging {
                if let Some(batch) = window.next_output()? {
                    return Ok(Some(batch));
                }
                self.merging = None;
            }
            let Some(file) = self.spilled.pop_front() else {
                return Ok(None);
            };
            let mut window = WindowOp::new(
                self.exprs[..self.partitions].to_vec(),
                self.order_by.clone(),
                self.functions.clone(),
                None,
                self.ctx.clone(),
                self.reservation.new_empty(),
            );
            window.level = self.level + 1;
            for batch in file.reader(&self.reservation)? {
                window.push(0, batch?)?;
            }
            window.finish(0)?;
            self.merging = Some(Box::new(window));
        }
    }

    /// How many of `exprs` are keys (partition and ORDER BY).
    fn keys(&self) -> usize {
        self.partitions + self.order_by.len()
    }

    /// The sort specs of the keys: partition keys ascending (any fixed order groups them),
    /// then the ORDER BY.
    fn specs(&self) -> Vec<SortKey> {
        let mut specs: Vec<SortKey> = self.exprs[..self.partitions]
            .iter()
            .map(|e| SortKey {
                expr: e.clone(),
                descending: false,
                nulls_first: false,
            })
            .collect();
        specs.extend(self.order_by.iter().cloned());
        specs
    }

    /// Expression `k` over all buffered rows (the batches' parts concatenated).
    fn whole(&self, k: usize) -> Result<Column> {
        let parts: Vec<&Column> = self
            .batches
            .iter()
            .zip(&self.evaluated)
            .map(|(b, ev)| part(b, ev, k, &self.inputs))
            .collect();
        if parts.is_empty() {
            return Err(Error::Internal("a window evaluated no rows".into()));
        }
        Column::concat(&parts)
    }

    /// Bytes of expression `k` over all buffered rows.
    fn whole_bytes(&self, k: usize) -> usize {
        self.batches
            .iter()
            .zip(&self.evaluated)
            .map(|(b, ev)| part(b, ev, k, &self.inputs).memory_size())
            .sum()
    }

    /// Where each buffered batch begins among the rows.
    fn batch_starts(&self) -> Vec<usize> {
        self.batches
            .iter()
            .scan(0, |row, b| {
                let start = *row;
                *row += b.num_rows();
                Some(start)
            })
            .collect()
    }

    /// The sorted permutation of the buffered rows, and the keys it sorted (in input order).
    fn sort(&self) -> Result<(Vec<u32>, Vec<Column>)> {
        let keys = (0..self.keys())
            .map(|k| self.whole(k))
            .collect::<Result<Vec<_>>>()?;
        let refs: Vec<&Column> = keys.iter().collect();
        let idx = sort_indices(&refs, &self.specs(), self.rows, None, &self.batch_starts());
        Ok((idx, keys))
    }

    /// Which of the rows (in input order) are among the first `keep` of their partition,
    /// given the sorted permutation `idx` and the sorted rows' layout.
    fn kept(keep: usize, idx: &[u32], layout: &Layout) -> Vec<bool> {
        let mut mask = vec![false; idx.len()];
        for (ps, pe) in layout.partitions() {
            for &row in &idx[ps..pe.min(ps.saturating_add(keep))] {
                mask[row as usize] = true;
            }
        }
        mask
    }

    /// A top-N window's buffer cut to the first `keep` rows of each partition, and
    /// concatenated into one batch.
    fn compact(&mut self, keep: usize) -> Result<()> {
        // The keys, the sort and the copies of the rows kept take at most as much again as
        // the buffer while they run.
        self.reservation
            .try_grow(self.reservation.size() + self.rows * 32)?;
        let (idx, keys) = self.sort()?;
        let sorted: Vec<Column> = keys[..self.partitions]
            .iter()
            .map(|c| c.take(&idx))
            .collect();
        let refs: Vec<&Column> = sorted.iter().collect();
        let mask = WindowOp::kept(keep, &idx, &Layout::new(&refs, &[], idx.len()));
        drop((idx, keys, sorted));
        let mut row = 0;
        let mut batches = Vec::with_capacity(self.batches.len());
        let mut evaluated = Vec::with_capacity(self.batches.len());
        for (b, ev) in self.batches.iter().zip(&self.evaluated) {
            let m = &mask[row..row + b.num_rows()];
            row += b.num_rows();
            if m.iter().any(|&k| k) {
                batches.push(b.filter(m));
                evaluated.push(ev.iter().map(|c| c.as_ref().map(|c| c.filter(m))).collect());
            }
        }
        self.batches.clear();
        self.evaluated.clear();
        self.rows = mask.iter().filter(|&&k| k).count();
        if batches.len() > 1 {
            let all: Vec<Option<Column>> = (0..self.exprs.len())
                .map(|k| {
                    let parts: Vec<&Column> = evaluated
                        .iter()
                        .filter_map(|ev: &Vec<Option<Column>>| ev[k].as_ref())
                        .collect();
                    match parts.is_empty() {
                        true => Ok(None),
                        false => Column::concat(&parts).map(Some),
                    }
                })
                .collect::<Result<_>>()?;
            batches = vec![Batch::concat(&batches)?];
            evaluated = vec![all];
        }
        let size = batches
            .iter()
            .zip(&evaluated)
            .map(|(b, ev)| size_of(b, ev))
            .sum();
        self.batches = batches;
        self.evaluated = evaluated;
        self.compact_at = (2 * self.rows).max(MIN_COMPACT_ROWS.max(self.ctx.batch_size));
        self.reservation.resize(size)
    }

    /// Bytes the evaluation needs at most besides the buffer: the keys and arguments over
    /// all rows twice (in input order and sorted), the permutation and its inverse, the
    /// sort's working pairs, the layout, and per function its frames, an aggregate's running
    /// sums and tree, and its result twice (sorted, then in input order).
    fn working_bytes(&self) -> usize {
        let n = self.rows;
        let columns: usize = (0..self.exprs.len()).map(|k| self.whole_bytes(k)).sum();
        let per_function: usize = self.functions.iter().map(|f| function_bytes(f, n)).sum();
        2 * columns + n * (4 + 4 + 24) + Layout::bytes_for(n) + per_function
    }

    /// Evaluates every function over the buffered rows.
    fn evaluate(&mut self) -> Result<Output> {
        let n = self.rows;
        self.reservation.try_grow(self.working_bytes())?;
        let (idx, keys) = self.sort()?;
        let mut sorted: Vec<Column> = keys.iter().map(|c| c.take(&idx)).collect();
        drop(keys);
        for k in self.keys()..self.exprs.len() {
            sorted.push(self.whole(k)?.take(&idx));
        }
        let (partition_keys, rest) = sorted.split_at(self.partitions);
        let order_keys = &rest[..self.order_by.len()];
        let p_refs: Vec<&Column> = partition_keys.iter().collect();
        let o_refs: Vec<&Column> = order_keys.iter().collect();
        let layout = Layout::new(&p_refs, &o_refs, n);
        let key = match (order_keys, self.order_by.as_slice()) {
            ([c], [spec]) => Some((c, spec)),
            _ => None,
        };
        let mut inverse = vec![0u32; n];
        for (j, &row) in idx.iter().enumerate() {
            inverse[row as usize] = j as u32;
        }
        let mut window = Window::new(&layout, &self.ctx.params, key);
        let mut results = Vec::with_capacity(self.functions.len());
        for (f, &at) in self.functions.iter().zip(&self.arg_at) {
            let args: Vec<&Column> = sorted[at..at + f.args.len()].iter().collect();
            results.push(window.evaluate(f, &args)?.take(&inverse));
        }
        let keep = self.keep.map(|k| WindowOp::kept(k, &idx, &layout));
        drop(window);
        let batches: VecDeque<Batch> = std::mem::take(&mut self.batches).into();
        self.evaluated.clear();
        let held = batches.iter().map(Batch::memory_size).sum::<usize>()
            + results.iter().map(Column::memory_size).sum::<usize>()
            + keep.as_ref().map_or(0, Vec::capacity);
        // Usually this shrinks; should the results be larger than predicted (long strings
        // picked by FIRST_VALUE), the growth may be refused like any other.
        self.reservation.resize(held)?;
        Ok(Output {
            batches,
            base: 0,
            pos: 0,
            results,
            keep,
        })
    }
}

/// Bytes `f` holds at most while it is computed over `n` rows, besides its arguments: its
/// frames, its own working state, and its result twice (sorted, then in input order).
fn function_bytes(f: &WindowExpr, n: usize) -> usize {
    let frames = if f.func.uses_frame() {
        Frames::bytes_for(n)
    } else {
        0
    };
    let state = match f.func {
        WindowFunc::Aggregate(func) => aggregates::bytes_for(func, n),
        // The rows picked (and, for LAG and LEAD, the runs they are copied in).
        WindowFunc::Lag | WindowFunc::Lead => n * 24,
        WindowFunc::FirstValue | WindowFunc::LastValue | WindowFunc::NthValue => n * 8,
        _ => 0,
    };
    frames + state + 2 * n * row_bytes(&[f.output_type])
}

/// Expression `k`'s column of one buffered batch: evaluated, or the input column it names.
fn part<'a>(
    batch: &'a Batch,
    evaluated: &'a [Option<Column>],
    k: usize,
    inputs: &[Option<usize>],
) -> &'a Column {
    match (&evaluated[k], inputs[k]) {
        (Some(c), _) => c,
        (None, Some(i)) => batch.column(i),
        (None, None) => unreachable!("an expression that names no input column is evaluated"),
    }
}

fn size_of(batch: &Batch, evaluated: &[Option<Column>]) -> usize {
    batch.memory_size()
        + evaluated
            .iter()
            .flatten()
            .map(Column::memory_size)
            .sum::<usize>()
}

impl Operator for WindowOp {
    fn name(&self) -> &'static str {
        "Window"
    }

    fn push(&mut self, _port: usize, batch: Batch) -> Result<()> {
        if self.finished {
            return Err(Error::Internal("window input after its end".into()));
        }
        if self.out.is_some() {
            return Err(output_pending("Window"));
        }
        if batch.is_empty() || self.keep == Some(0) {
            return Ok(());
        }
        let evaluated = self
            .exprs
            .iter()
            .zip(&self.inputs)
            .map(|(e, input)| match input {
                Some(i) if *i < batch.num_columns() => Ok(None),
                _ => evaluate(e, &batch, &self.ctx.params).map(Some),
            })
            .collect::<Result<Vec<_>>>()?;
        if self.spilling.is_some() {
            return self.spill_batch(&batch, &evaluated);
        }
        if let Err(refused) = self.reservation.try_grow(size_of(&batch, &evaluated)) {
            if !self.can_spill() {
                return Err(refused);
            }
            self.spill()?;
            return self.spill_batch(&batch, &evaluated);
        }
        self.rows += batch.num_rows();
        self.batches.push(batch);
        self.evaluated.push(evaluated);
        if let Some(k) = self.keep {
            if self.rows > self.compact_at {
                self.compact(k)?;
            }
        }
        Ok(())
    }

    fn finish(&mut self, _port: usize) -> Result<()> {
        if self.finished {
            return Ok(());
        }
        if self.out.is_some() {
            return Err(output_pending("Window"));
        }
        self.finished = true;
        if self.spilling.is_none() && self.rows > 0 {
            match self.evaluate() {
                Ok(out) => {
                    self.out = Some(out);
                    return Ok(());
                }
                // Refused before it took the buffer: it spills instead.
                Err(Error::Memory(_)) if self.can_spill() && !self.batches.is_empty() => {}
                Err(e) => return Err(e),
            }
            self.spill()?;
        }
        // Once spilling, every row went to the files: nothing is buffered.
        if let Some(parts) = self.spilling.take() {
            self.spilled = parts.finish()?.into_iter().flatten().collect();
            return Ok(());
        }
        self.batches.clear();
        self.evaluated.clear();
        self.reservation.free();
        Ok(())
    }

    fn next_output(&mut self) -> Result<Option<Batch>> {
        if self.merging.is_some() || !self.spilled.is_empty() {
            return self.next_spilled();
        }
        let size = self.ctx.batch_size.max(1);
        loop {
            let Some(out) = &mut self.out else {
                return Ok(None);
            };
            let Some(front) = out.batches.front() else {
                self.out = None;
                self.reservation.free();
                return Ok(None);
            };
            let len = front.num_rows();
            let take = size.min(len - out.pos);
            let (lo, hi) = (out.base + out.pos, out.base + out.pos + take);
            let whole = out.pos == 0 && take == len;
            let mut columns = if whole {
                // The batch leaves as it came; its bytes go back to the pool.
                let b = out.batches.pop_front().expect("a front batch");
                self.reservation.shrink(b.memory_size());
                out.base += len;
                b.into_columns()
            } else {
                let b = front.slice(out.pos, take);
                out.pos += take;
                if out.pos == len {
                    let done = out.batches.pop_front().expect("a front batch");
                    self.reservation.shrink(done.memory_size());
                    out.base += len;
                    out.pos = 0;
                }
                b.into_columns()
            };
            columns.extend(out.results.iter().map(|r| r.slice(lo, take)));
            let mut batch = Batch::with_row_count(columns, take)?;
            if let Some(keep) = &out.keep {
                batch = batch.filter(&keep[lo..hi]);
            }
            if !batch.is_empty() {
                return Ok(Some(batch));
            }
        }
    }

    fn has_output(&self) -> bool {
        self.out.is_some() || self.merging.is_some() || !self.spilled.is_empty()
    }

    fn memory_size(&self) -> usize {
        self.reservation.size() + self.merging.as_ref().map_or(0, |w| w.memory_size())
    }

    fn revocable(&self) -> usize {
        match self.can_spill() && !self.finished && self.spilling.is_none() {
            true => self.reservation.size(),
            false => 0,
        }
    }

    fn revoke(&mut self) -> Result<()> {
        match self.revocable() {
            0 => Ok(()),
            _ => self.spill(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::drain;
    use crate::plan::{WindowFrame, WindowFunc};
    use crate::{MemoryPool, UnboundedPool};
    use std::sync::Arc;

    fn row_number() -> WindowExpr {
        WindowExpr {
            func: WindowFunc::RowNumber,
            args: vec![],
            output_type: crate::DataType::Int64,
            frame: WindowFrame::default(),
        }
    }

    fn by(col: usize) -> SortKey {
        SortKey {
            expr: Expr::col(col),
            descending: false,
            nulls_first: false,
        }
    }

    /// `n` rows `(i % partitions, n - i)` in batches of 1,000.
    fn input(n: i64, partitions: i64) -> Vec<Batch> {
        let b = Batch::try_new(vec![
            Column::from_i64((0..n).map(|i| i % partitions).collect()),
            Column::from_i64((0..n).map(|i| n - i).collect()),
        ])
        .unwrap();
        b.split(1000)
    }

    #[test]
    fn holds_its_input_in_its_reservation_and_frees_it_as_rows_leave() {
        let pool = UnboundedPool::new();
        let mut ctx = ExecContext::new(vec![]);
        ctx.batch_size = 500;
        let mut op = WindowOp::new(
            vec![Expr::col(0)],
            vec![by(1)],
            vec![row_number()],
            None,
            ctx,
            Reservation::new(pool.clone() as Arc<dyn MemoryPool>),
        );
        let batches = input(10_000, 7);
        let bytes: usize = batches.iter().map(Batch::memory_size).sum();
        for b in batches {
            op.push(0, b).unwrap();
        }
        assert!(pool.used() >= bytes, "{} < {bytes}", pool.used());
        op.finish(0).unwrap();
        let held = pool.used();
        assert!(
            pool.peak() > held,
            "the evaluation's working memory was accounted"
        );
        let mut rows = 0;
        let mut last = held;
        while let Some(b) = op.next_output().unwrap() {
            assert!(b.num_rows() <= 500);
            rows += b.num_rows();
            assert!(pool.used() <= last);
            last = pool.used();
        }
        assert_eq!(rows, 10_000);
        assert_eq!(pool.used(), 0);
    }

    #[test]
    fn a_refused_reservation_fails_the_window_and_returns_every_byte() {
        let pool = UnboundedPool::with_limit(200_000);
        let mut op = WindowOp::new(
            vec![],
            vec![by(1)],
            vec![row_number()],
            None,
            ExecContext::new(vec![]),
            Reservation::new(pool.clone() as Arc<dyn MemoryPool>),
        );
        let err = input(100_000, 3)
            .into_iter()
            .try_for_each(|b| op.push(0, b))
            .and_then(|()| op.finish(0))
            .unwrap_err();
        assert!(matches!(err, Error::Memory(_)), "{err}");
        drop(op);
        assert_eq!(pool.used(), 0);
    }

    #[test]
    fn a_top_n_window_holds_a_few_rows_per_partition_not_its_input() {
        let pool = UnboundedPool::new();
        let mut op = WindowOp::new(
            vec![Expr::col(0)],
            vec![by(1)],
            vec![row_number()],
            Some(2),
            ExecContext::new(vec![]),
            Reservation::new(pool.clone() as Arc<dyn MemoryPool>),
        );
        let batches = input(200_000, 10);
        let bytes: usize = batches.iter().map(Batch::memory_size).sum();
        for b in batches {
            op.push(0, b).unwrap();
        }
        op.finish(0).unwrap();
        assert!(
            pool.peak() < bytes / 5,
            "peak {} against {bytes} bytes of input",
            pool.peak()
        );
        let mut out = Vec::new();
        drain(&mut op, &mut out).unwrap();
        let mut rows: Vec<Vec<crate::Value>> = out.iter().flat_map(|b| b.rows()).collect();
        rows.sort_by(|a, b| a[0].sort_cmp(&b[0]).then(a[2].sort_cmp(&b[2])));
        // Each partition's two smallest values of column 1: n - i for its two last rows.
        assert_eq!(rows.len(), 20);
        assert_eq!(rows[0], vec![0.into(), 10.into(), 1.into()]);
        assert_eq!(rows[1], vec![0.into(), 20.into(), 2.into()]);
        assert_eq!(pool.used(), 0);
    }
}
