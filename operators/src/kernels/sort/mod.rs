//! Sort and top-k kernel.
//!
//! Input batches are buffered together with their evaluated sort key columns (accounted in the
//! reservation); a key that names an input column is read from the batches, not copied. At the
//! end, when every buffered batch is sorted already (a gather of sorted fragments) and they
//! are large (8 MiB, `MERGE_MIN_BYTES`), the batches are merged (module `merge`). Otherwise the
//! buffer is concatenated and a row permutation is sorted (module `order`): a numeric or
//! boolean leading key (and a second one) is encoded inline into order-preserving u64s,
//! radix-sorted when they decide the order (module `radix`), or, for a gather of sorted
//! fragments, regrouped by sender and merged (module `sorted_runs`); other keys are compared
//! over typed key views (matched once, not per cell). Then each `next_output` call
//! gathers the next `batch_size` rows of the permutation into one output batch. With a `limit`
//! the buffer is periodically sorted and truncated to the first `limit` rows, so memory stays
//! O(limit).
//!
//! A sort without a limit that is refused memory and has a spill space spills (module
//! `spilled`): what it holds is sorted and written as a run, and the runs are merged at the end.

mod merge;
pub(crate) mod order;
mod radix;
mod sorted_runs;
mod spilled;

use super::operator::{ExecContext, Operator};
use crate::eval::evaluate;
use crate::plan::SortKey;
use crate::spill::{SpillFile, SpillSpace, SpillWriter};
use crate::{Batch, Column, Error, Reservation, Result};
use merge::Merge;
use order::{key_columns, sort_indices};
use spilled::RunMerge;
use std::sync::Arc;

/// Bytes of buffered input from which batches that came sorted are merged rather than
/// concatenated and permuted. Below it the input fits the caches, and the permutation's sort
/// of u64 keys and random gather beat a merge's choice per row (on 100,000 gathered rows of
/// `Item`, 3.9 against 5.0 ms); above it the gather's cache misses and the concatenation's
/// copy dominate (on 1,000,000 rows of four columns, 150 against 80 ms), and the merge also
/// frees each batch as its last row leaves, where the permutation holds the input twice while
/// it concatenates and then whole until its last row leaves.
pub const MERGE_MIN_BYTES: usize = 8 << 20;

/// Sort and top-k.
pub struct SortOp {
    keys: Vec<SortKey>,
    limit: Option<usize>,
    ctx: ExecContext,
    reservation: Reservation,
    /// For each key, the input column it names (`None` for other expressions): such a key is
    /// read from the buffered batch, not evaluated into a copy.
    inputs: Vec<Option<usize>>,
    /// Buffered input and, per batch, its evaluated key columns (`None` for keys read from
    /// the batch).
    batches: Vec<Batch>,
    key_cols: Vec<Vec<Option<Column>>>,
    rows: usize,
    finished: bool,
    /// After the input ended: the sorted rows being emitted.
    sorted: Option<Sorted>,
    /// Sorted runs written to disk, in input order (when memory was refused).
    runs: Vec<SpillFile>,
    /// Rows per batch of the smallest-batched run (what merged runs are written in).
    run_rows: usize,
}

/// The sorted rows being emitted: a permutation of the concatenated input, or a merge of
/// batches that came sorted.
enum Sorted {
    Permuted(Permuted),
    Merged(Merge),
    Spilled(RunMerge),
}

/// The concatenated input, its sorted permutation, and how much of it has been emitted.
struct Permuted {
    batch: Batch,
    idx: Vec<u32>,
    pos: usize,
}

impl SortOp {
    /// Sorts by `keys` (most significant first); with `limit`, outputs only the first `limit`
    /// rows and keeps only O(`limit`) rows buffered.
    pub fn new(
        keys: Vec<SortKey>,
        limit: Option<usize>,
        ctx: ExecContext,
        reservation: Reservation,
    ) -> Self {
        let inputs = keys.iter().map(|k| k.expr.column_index()).collect();
        SortOp {
            keys,
            limit,
            ctx,
            reservation,
            inputs,
            batches: Vec::new(),
            key_cols: Vec::new(),
            rows: 0,
            finished: false,
            sorted: None,
            runs: Vec::new(),
            run_rows: usize::MAX,
        }
    }

    /// The spill space, when this sort spills: it has one and no limit (a top-k holds
    /// O(limit) rows and never needs to).
    fn spill_space(&self) -> Option<Arc<SpillSpace>> {
        self.ctx.spill.clone().filter(|_| self.limit.is_none())
    }

    /// Sorts what is buffered, writes it to `space` as a run, and frees its memory.
    fn spill_run(&mut self, space: &Arc<SpillSpace>) -> Result<()> {
        if self.batches.is_empty() {
            return Ok(());
        }
        if self.runs.is_empty() {
            space.record_spill();
        }
        let (batch, keys) = self.consolidate()?;
        let idx = sort_indices(
            &key_columns(&batch, &keys, &self.inputs),
            &self.keys,
            batch.num_rows(),
            None,
            &[],
        );
        drop(keys);
        // The run is written in batches small enough that the merge, holding one of each of
        // up to `FAN_IN` runs, holds about half of what the sort held when it was refused.
        let rows = (idx.len() / (2 * spilled::FAN_IN)).clamp(16, self.ctx.batch_size.max(16));
        self.run_rows = self.run_rows.min(rows);
        let mut writer = SpillWriter::new(space, &self.reservation)?;
        for chunk in idx.chunks(rows) {
            writer.write(&batch.take(chunk))?;
        }
        self.runs.push(writer.finish()?);
        self.rows = 0;
        self.reservation.free();
        Ok(())
    }

    /// Concatenates the buffer into one batch with its evaluated key columns.
    fn consolidate(&mut self) -> Result<(Batch, Vec<Option<Column>>)> {
        let batches = std::mem::take(&mut self.batches);
        let key_cols = std::mem::take(&mut self.key_cols);
        if batches.len() == 1 {
            let b = batches
                .into_iter()
                .next()
                .unwrap_or_else(|| Batch::empty(&[]));
            let k = key_cols.into_iter().next().unwrap_or_default();
            return Ok((b, k));
        }
        let batch = Batch::concat(&batches)?;
        let keys = (0..self.keys.len())
            .map(|k| {
                let cols: Vec<&Column> = key_cols.iter().filter_map(|c| c[k].as_ref()).collect();
                match cols.is_empty() {
                    true => Ok(None),
                    false => Column::concat(&cols).map(Some),
                }
            })
            .collect::<Result<Vec<_>>>()?;
        Ok((batch, keys))
    }

    /// Sorts the buffer and keeps only the first `limit` rows.
    fn compact(&mut self, limit: usize) -> Result<()> {
        let (batch, keys) = self.consolidate()?;
        let idx = sort_indices(
            &key_columns(&batch, &keys, &self.inputs),
            &self.keys,
            batch.num_rows(),
            Some(limit),
            &[],
        );
        let batch = batch.take(&idx);
        let keys: Vec<Option<Column>> = keys.iter().map(|c| Some(c.as_ref()?.take(&idx))).collect();
        self.rows = batch.num_rows();
        self.reservation.resize(size_of(&batch, &keys))?;
        self.batches.push(batch);
        self.key_cols.push(keys);
        Ok(())
    }
}

fn size_of(batch: &Batch, keys: &[Option<Column>]) -> usize {
    batch.memory_size()
        + keys
            .iter()
            .flatten()
            .map(Column::memory_size)
            .sum::<usize>()
}

impl Operator for SortOp {
    fn name(&self) -> &'static str {
        "Sort"
    }

    fn push(&mut self, _port: usize, batch: Batch) -> Result<()> {
        if self.finished {
            return Err(Error::Internal("sort input after its end".into()));
        }
        if batch.is_empty() || self.limit == Some(0) {
            return Ok(());
        }
        let keys = self
            .keys
            .iter()
            .zip(&self.inputs)
            .map(|(k, input)| match input {
                Some(i) if *i < batch.num_columns() => Ok(None),
                _ => evaluate(&k.expr, &batch, &self.ctx.params).map(Some),
            })
            .collect::<Result<Vec<_>>>()?;
        let size = size_of(&batch, &keys);
        let mut alone = false;
        if let Err(refused) = self.reservation.try_grow(size) {
            let Some(space) = self.spill_space() else {
                return Err(refused);
            };
            self.spill_run(&space)?;
            // A batch larger than what the pool grants even now becomes a run of its own.
            alone = self.reservation.try_grow(size).is_err();
        }
        self.rows += batch.num_rows();
        self.batches.push(batch);
        self.key_cols.push(keys);
        if alone {
            let space = self.spill_space().expect("spilling");
            self.spill_run(&space)?;
        }
        if let Some(k) = self.limit {
            if self.rows > k.saturating_mul(2).max(self.ctx.batch_size.max(1024)) {
                self.compact(k)?;
            }
        }
        Ok(())
    }

    fn finish(&mut self, _port: usize) -> Result<()> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        if let (Some(space), false) = (self.spill_space(), self.runs.is_empty()) {
            self.spill_run(&space)?;
            let keys = spilled::Keys {
                specs: self.keys.clone(),
                inputs: self.inputs.clone(),
                params: self.ctx.params.clone(),
            };
            let runs = std::mem::take(&mut self.runs);
            let merge = RunMerge::new(runs, keys, &space, self.run_rows, &self.reservation)?;
            // One batch per run, like any growth, may be refused: the sort then fails.
            self.reservation.resize(merge.memory_size())?;
            if merge.has_rows() {
                self.sorted = Some(Sorted::Spilled(merge));
            }
            return Ok(());
        }
        if self.batches.is_empty() {
            return Ok(());
        }
        let buffered: usize = self.batches.iter().map(Batch::memory_size).sum();
        if self.limit.is_none() && buffered >= MERGE_MIN_BYTES {
            // Batches that each came sorted are merged; `try_new` gives them back otherwise.
            let batches = std::mem::take(&mut self.batches);
            let keys = std::mem::take(&mut self.key_cols);
            match Merge::try_new(&self.keys, &self.inputs, batches, keys) {
                Ok(merge) => {
                    self.rows = 0;
                    // The encoded keys add to what the input reserved: like any growth, this
                    // may be refused, and the sort fails (its bytes are freed with it).
                    self.reservation.resize(merge.memory_size())?;
                    if merge.has_rows() {
                        self.sorted = Some(Sorted::Merged(merge));
                    }
                    return Ok(());
                }
                Err((batches, keys)) => {
                    self.batches = batches;
                    self.key_cols = keys;
                }
            }
        }
        let batch_starts: Vec<usize> = self
            .batches
            .iter()
            .scan(0, |row, b| {
                let start = *row;
                *row += b.num_rows();
                Some(start)
            })
            .collect();
        let (batch, keys) = self.consolidate()?;
        let n = batch.num_rows();
        let idx = sort_indices(
            &key_columns(&batch, &keys, &self.inputs),
            &self.keys,
            n,
            self.limit,
            &batch_starts,
        );
        drop(keys);
        self.rows = 0;
        if idx.is_empty() {
            self.reservation.free();
            return Ok(());
        }
        // While the rows are emitted the reservation holds the concatenated batch and the
        // permutation (the key columns are gone). It is released at the end, when the last
        // slice leaves: the batch cannot be freed piecewise. Usually this shrinks; when it
        // grows (boolean keys are smaller than the permutation) the growth may be refused like
        // any other, and the sort fails: its bytes are freed with it.
        let held = batch.memory_size() + idx.capacity() * std::mem::size_of::<u32>();
        self.reservation.resize(held)?;
        self.sorted = Some(Sorted::Permuted(Permuted { batch, idx, pos: 0 }));
        Ok(())
    }

    fn next_output(&mut self) -> Result<Option<Batch>> {
        let size = self.ctx.batch_size.max(1);
        let (out, more) = match &mut self.sorted {
            None => return Ok(None),
            Some(Sorted::Permuted(s)) => {
                let end = (s.pos + size).min(s.idx.len());
                let out = s.batch.take(&s.idx[s.pos..end]);
                s.pos = end;
                (Some(out), s.pos < s.idx.len())
            }
            Some(Sorted::Merged(m)) => {
                let out = m.next_batch(size)?;
                // The merge drops each batch whose last row left: the reservation follows.
                self.reservation
                    .shrink(self.reservation.size().saturating_sub(m.memory_size()));
                (out, m.has_rows())
            }
            Some(Sorted::Spilled(m)) => {
                let out = m.next_batch(size)?;
                // The merge holds one batch per run, whichever it is now.
                self.reservation.resize(m.memory_size())?;
                (out, m.has_rows())
            }
        };
        if !more {
            self.sorted = None;
            self.reservation.free();
        }
        Ok(out)
    }

    fn has_output(&self) -> bool {
        self.sorted.is_some()
    }

    fn memory_size(&self) -> usize {
        self.reservation.size()
    }

    fn revocable(&self) -> usize {
        match self.spill_space() {
            Some(_) if !self.finished => self.reservation.size(),
            _ => 0,
        }
    }

    fn revoke(&mut self) -> Result<()> {
        match self.spill_space() {
            Some(space) if !self.finished => self.spill_run(&space),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::drain;
    use crate::{DataType, Expr, Value};

    /// The first two columns (BIGINT) of `out`'s rows.
    fn int_pairs(out: &[Batch]) -> Vec<(i64, i64)> {
        out.iter()
            .flat_map(|b| {
                let (x, y) = (b.column(0).as_i64().unwrap(), b.column(1).as_i64().unwrap());
                x.iter().copied().zip(y.iter().copied()).collect::<Vec<_>>()
            })
            .collect()
    }

    /// A sort key on input column `col` (shared with the submodules' tests).
    pub(super) fn key(col: usize, descending: bool, nulls_first: bool) -> SortKey {
        SortKey {
            expr: Expr::col(col),
            descending,
            nulls_first,
        }
    }

    #[test]
    fn sorts_with_nulls_and_limit() {
        let b = Batch::from_rows(
            &[DataType::Int64, DataType::Utf8],
            &[
                vec![3.into(), "c".into()],
                vec![Value::Null, "n".into()],
                vec![1.into(), "a".into()],
                vec![3.into(), "b".into()],
                vec![2.into(), Value::Null],
            ],
        )
        .unwrap();
        let mut ctx = ExecContext::new(vec![]);
        ctx.batch_size = 2;
        let mut op = SortOp::new(
            vec![key(0, true, true), key(1, false, false)],
            None,
            ctx.clone(),
            Reservation::unbounded(),
        );
        let mut out = Vec::new();
        op.push(0, b.clone()).unwrap();
        op.finish(0).unwrap();
        drain(&mut op, &mut out).unwrap();
        assert_eq!(out.len(), 3);
        let firsts: Vec<Value> = out
            .iter()
            .flat_map(|b| b.rows())
            .map(|r| r[1].clone())
            .collect();
        assert_eq!(
            firsts,
            vec!["n".into(), "b".into(), "c".into(), Value::Null, "a".into()]
        );
        let mut op = SortOp::new(
            vec![key(0, false, false)],
            Some(2),
            ctx,
            Reservation::unbounded(),
        );
        let mut out = Vec::new();
        op.push(0, b.clone()).unwrap();
        op.push(0, b).unwrap();
        op.finish(0).unwrap();
        drain(&mut op, &mut out).unwrap();
        let rows: Vec<Vec<Value>> = out.iter().flat_map(|b| b.rows()).collect();
        assert_eq!(
            rows,
            vec![vec![1.into(), "a".into()], vec![1.into(), "a".into()]]
        );
    }

    /// Keys that are expressions are evaluated, keys that name a column are read from the
    /// batches; mixed, with a limit small enough to compact the buffer, the order is the same.
    #[test]
    fn evaluated_and_read_keys_sort_together() {
        let rows: Vec<Vec<Value>> = (0..3000i64)
            .map(|i| vec![((i * 7919) % 10).into(), ((i * 104_729) % 997).into()])
            .collect();
        let b = Batch::from_rows(&[DataType::Int64, DataType::Int64], &rows).unwrap();
        // col0 * -1 ascending is col0 descending; then col1 ascending.
        let negated = SortKey {
            expr: Expr::col(0).binary(crate::BinaryOp::Mul, Expr::lit(-1)),
            descending: false,
            nulls_first: false,
        };
        let mut want: Vec<(i64, i64)> = rows
            .iter()
            .map(|r| match (&r[0], &r[1]) {
                (Value::Int(a), Value::Int(b)) => (*a, *b),
                other => panic!("{other:?}"),
            })
            .collect();
        want.sort_by(|x, y| y.0.cmp(&x.0).then(x.1.cmp(&y.1)));
        for limit in [None, Some(25)] {
            let mut op = SortOp::new(
                vec![negated.clone(), key(1, false, false)],
                limit,
                ExecContext::new(vec![]),
                Reservation::unbounded(),
            );
            for part in b.clone().split(500) {
                op.push(0, part).unwrap();
            }
            op.finish(0).unwrap();
            let mut out = Vec::new();
            drain(&mut op, &mut out).unwrap();
            let got = int_pairs(&out);
            let n = limit.unwrap_or(want.len());
            assert_eq!(got, want[..n], "limit {limit:?}");
        }
    }

    #[test]
    fn ties_keep_input_order_in_random_input_and_in_sorted_runs() {
        // Keys with many ties; the second column numbers the rows. Once shuffled (the unstable
        // path), once as sorted runs (the stable merge path).
        let n = 5000i64;
        let shuffled: Vec<i64> = (0..n).map(|i| (i * 7919) % 13).collect();
        let mut runs: Vec<i64> = Vec::new();
        for r in 0..4 {
            runs.extend((0..n / 4).map(|i| (i * 13 / (n / 4)) + r % 2));
        }
        for (name, keys) in [("shuffled", shuffled), ("runs", runs)] {
            for descending in [false, true] {
                let rows: Vec<Vec<Value>> = keys
                    .iter()
                    .enumerate()
                    .map(|(i, &k)| vec![k.into(), (i as i64).into()])
                    .collect();
                let b = Batch::from_rows(&[DataType::Int64, DataType::Int64], &rows).unwrap();
                let mut op = SortOp::new(
                    vec![key(0, descending, false)],
                    None,
                    ExecContext::new(vec![]),
                    Reservation::unbounded(),
                );
                let mut out = Vec::new();
                op.push(0, b).unwrap();
                op.finish(0).unwrap();
                drain(&mut op, &mut out).unwrap();
                let got = int_pairs(&out);
                let mut want: Vec<(i64, i64)> = keys
                    .iter()
                    .enumerate()
                    .map(|(i, &k)| (k, i as i64))
                    .collect();
                want.sort_by(|a, b| {
                    let o = a.0.cmp(&b.0);
                    if descending {
                        o.reverse()
                    } else {
                        o
                    }
                });
                assert_eq!(got, want, "{name}, descending {descending}");
            }
        }
    }

    /// A gather of three sorted streams larger than [`MERGE_MIN_BYTES`]: merged, the output is
    /// every row in the stable order, and the memory held goes down as the batches empty.
    #[test]
    fn large_sorted_streams_are_merged_freeing_as_they_go() {
        let pool = crate::UnboundedPool::new();
        let mut op = SortOp::new(
            vec![key(0, true, false)],
            None,
            ExecContext::new(vec![]),
            Reservation::new(pool.clone() as std::sync::Arc<dyn crate::MemoryPool>),
        );
        // Three streams of keys that tie across streams (they repeat every 90,000), each
        // sorted descending, cut into batches of 1000 rows that arrive in turn. Column 1
        // numbers the rows in arrival order.
        let per_stream = MERGE_MIN_BYTES / 16 / 3 + 30_000;
        let streams: Vec<Vec<i64>> = (0..3)
            .map(|s| {
                let mut keys: Vec<i64> = (0..per_stream as i64)
                    .map(|j| (j * 3 + s) % 90_000)
                    .collect();
                keys.sort_unstable_by(|x, y| y.cmp(x));
                keys
            })
            .collect();
        let mut want: Vec<(i64, i64)> = Vec::new();
        let mut number = 0i64;
        for at in (0..per_stream).step_by(1000) {
            for stream in &streams {
                let keys = stream[at..(at + 1000).min(per_stream)].to_vec();
                let numbers: Vec<i64> = (number..number + keys.len() as i64).collect();
                number += keys.len() as i64;
                want.extend(keys.iter().copied().zip(numbers.iter().copied()));
                let batch = Batch::try_new(vec![Column::from_i64(keys), Column::from_i64(numbers)])
                    .unwrap();
                op.push(0, batch).unwrap();
            }
        }
        // The stable order: by key descending, ties in input order (the row number).
        want.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        op.finish(0).unwrap();
        assert!(matches!(op.sorted, Some(Sorted::Merged(_))));
        let held = pool.used();
        let mut got = Vec::new();
        let mut lowest = held;
        while let Some(b) = op.next_output().unwrap() {
            lowest = lowest.min(pool.used());
            got.extend(int_pairs(std::slice::from_ref(&b)));
        }
        assert_eq!(got, want);
        assert!(
            lowest < held / 2,
            "held {held}, lowest while emitting {lowest}"
        );
        assert_eq!(pool.used(), 0);
    }

    #[test]
    fn emits_one_batch_per_call_and_frees_at_the_end() {
        let pool = crate::UnboundedPool::new();
        let mut ctx = ExecContext::new(vec![]);
        ctx.batch_size = 64;
        let mut op = SortOp::new(
            vec![key(0, false, false)],
            None,
            ctx,
            Reservation::new(pool.clone() as std::sync::Arc<dyn crate::MemoryPool>),
        );
        for part in 0..10i64 {
            let v: Vec<i64> = (0..100).map(|i| (i * 37 + part * 11) % 1000).collect();
            op.push(0, Batch::try_new(vec![Column::from_i64(v)]).unwrap())
                .unwrap();
            assert!(!op.has_output());
        }
        op.finish(0).unwrap();
        assert!(op.has_output());
        let held = pool.used();
        assert!(held > 0);
        let mut all = Vec::new();
        let mut calls = 0;
        while let Some(b) = op.next_output().unwrap() {
            calls += 1;
            assert!(!b.is_empty() && b.num_rows() <= 64);
            // The held state does not grow while the output leaves; it goes at the end.
            assert_eq!(pool.used(), if op.has_output() { held } else { 0 });
            all.extend_from_slice(b.column(0).as_i64().unwrap());
        }
        assert_eq!(calls, 1000usize.div_ceil(64));
        assert_eq!(all.len(), 1000);
        assert!(all.windows(2).all(|w| w[0] <= w[1]));
        assert!(!op.has_output());
        assert_eq!(op.memory_size(), 0);
    }
}
