//! Sort and top-k kernel.
//!
//! Input batches are buffered together with their evaluated sort key columns (accounted in the
//! reservation). At the end, when every buffered batch is sorted already (a gather of sorted
//! fragments) and they are large ([`MERGE_MIN_BYTES`]), the batches are merged (module
//! `merge`). Otherwise the buffer is concatenated and a row permutation is sorted: a
//! numeric or boolean leading key (and a second one) is encoded inline into order-preserving
//! u64s, radix-sorted when they decide the order (module `radix`), or, for a gather of sorted
//! fragments, regrouped by sender and merged (module `sorted_runs`); other keys are compared over
//! typed key views (matched once, not per cell). Then each `next_output` call
//! gathers the next `batch_size` rows of the permutation into one output batch. With a `limit`
//! the buffer is periodically sorted and truncated to the first `limit` rows, so memory stays
//! O(limit).

use super::merge::Merge;
use super::{radix, sorted_runs, ExecContext, Operator};
use crate::column::ColumnData;
use crate::eval::evaluate;
use crate::plan::SortKey;
use crate::{Batch, Column, Error, Reservation, Result};
use std::cmp::Ordering;

/// Bytes of buffered input from which batches that came sorted are merged rather than
/// concatenated and permuted. Below it the input fits the caches, and the permutation's sort
/// of u64 keys and random gather beat a merge's choice per row (on 100,000 gathered rows of
/// `Item`, 3.9 against 5.0 ms); above it the gather's cache misses and the concatenation's
/// copy dominate (on 1,000,000 rows of four columns, 150 against 80 ms), and the merge also
/// frees each batch as its last row leaves, where the permutation holds the input twice while
/// it concatenates and then whole until its last row leaves.
pub(crate) const MERGE_MIN_BYTES: usize = 8 << 20;

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
}

/// The sorted rows being emitted: a permutation of the concatenated input, or a merge of
/// batches that came sorted.
enum Sorted {
    Permuted(Permuted),
    Merged(Merge),
}

/// The concatenated input, its sorted permutation, and how much of it has been emitted.
struct Permuted {
    batch: Batch,
    idx: Vec<u32>,
    pos: usize,
}

/// A typed view of one key column for comparisons.
enum KeyView<'a> {
    Int(&'a [i64]),
    Float(&'a [f64]),
    Bool(&'a [bool]),
    Str(&'a Column),
    Wide(&'a [i128]),
    Date(&'a [i32]),
}

struct KeyCmp<'a> {
    view: KeyView<'a>,
    col: &'a Column,
    has_nulls: bool,
    descending: bool,
    nulls_first: bool,
}

impl KeyCmp<'_> {
    #[inline]
    fn cmp(&self, a: usize, b: usize) -> Ordering {
        if self.has_nulls {
            match (self.col.is_valid(a), self.col.is_valid(b)) {
                (true, true) => {}
                (false, false) => return Ordering::Equal,
                (false, true) => {
                    return if self.nulls_first {
                        Ordering::Less
                    } else {
                        Ordering::Greater
                    }
                }
                (true, false) => {
                    return if self.nulls_first {
                        Ordering::Greater
                    } else {
                        Ordering::Less
                    }
                }
            }
        }
        let o = match &self.view {
            KeyView::Int(v) => v[a].cmp(&v[b]),
            KeyView::Float(v) => v[a].total_cmp(&v[b]),
            KeyView::Bool(v) => v[a].cmp(&v[b]),
            KeyView::Str(c) => c.str_at(a).cmp(c.str_at(b)),
            KeyView::Wide(v) => v[a].cmp(&v[b]),
            KeyView::Date(v) => v[a].cmp(&v[b]),
        };
        if self.descending {
            o.reverse()
        } else {
            o
        }
    }
}

/// Whether `pairs` is mostly long ascending runs (fewer than one descent per 256 rows), as a
/// gather of sorted fragments is: a stable merge sort then merges the runs in a few passes.
fn has_long_runs(pairs: &[(u64, u64, u32)]) -> bool {
    let descents = pairs
        .windows(2)
        .filter(|w| (w[0].0, w[0].1) > (w[1].0, w[1].1))
        .count();
    descents < pairs.len() / 256
}

/// Sorts the rows of `keys` (parallel key columns) and returns the permutation, keeping only
/// the first `limit` entries when given. Ties keep input order. `batch_starts` are the rows
/// where the input's batches began (ascending; only a hint: a gather of sorted fragments has
/// each batch sorted, see module `sorted_runs`).
pub(crate) fn sort_indices(
    keys: &[&Column],
    specs: &[SortKey],
    n: usize,
    limit: Option<usize>,
    batch_starts: &[usize],
) -> Vec<u32> {
    let cmps: Vec<KeyCmp> = keys
        .iter()
        .zip(specs)
        .map(|(c, s)| KeyCmp {
            view: match &c.data {
                ColumnData::Int64(v) => KeyView::Int(v),
                ColumnData::Float64(v) => KeyView::Float(v),
                ColumnData::Boolean(v) => KeyView::Bool(v),
                ColumnData::Utf8 { .. } => KeyView::Str(c),
                ColumnData::Decimal { values, .. } => KeyView::Wide(values),
                ColumnData::Date(v) => KeyView::Date(v),
                ColumnData::Timestamp(v) => KeyView::Int(v),
            },
            col: c,
            has_nulls: c.null_count() > 0,
            descending: s.descending,
            nulls_first: s.nulls_first,
        })
        .collect();
    let mut idx: Vec<u32> = (0..n as u32).collect();
    let cmp = |a: &u32, b: &u32| {
        for k in &cmps {
            let o = k.cmp(*a as usize, *b as usize);
            if o != Ordering::Equal {
                return o;
            }
        }
        a.cmp(b)
    };
    // Fast path: the first key is numeric or boolean. Its non-NULL values are encoded into
    // order-preserving u64s sorted inline; only ties consult the remaining keys.
    if let Some(first) = cmps.first() {
        if let Some(lead) = encoded(first) {
            // The second key joins the inline encoding when it has no NULLs.
            let second = cmps.get(1).filter(|k| !k.has_nulls).and_then(encoded);
            let skip = if second.is_some() { 2 } else { 1 };
            let rest = |a: u32, b: u32| {
                for k in &cmps[skip.min(cmps.len())..] {
                    let o = k.cmp(a as usize, b as usize);
                    if o != Ordering::Equal {
                        return o;
                    }
                }
                a.cmp(&b)
            };
            let mut pairs: Vec<(u64, u64, u32)> = Vec::with_capacity(n);
            let mut nulls: Vec<u32> = Vec::new();
            // Where each input batch begins among `pairs`.
            let mut piece_starts = Vec::with_capacity(batch_starts.len());
            if !first.has_nulls {
                // Every row has a pair, at its own index: one pass per key.
                match &second {
                    Some(second) => pairs.extend(
                        lead.iter()
                            .zip(second)
                            .zip(0u32..)
                            .map(|((&l, &s), i)| (l, s, i)),
                    ),
                    None => pairs.extend(lead.iter().zip(0u32..).map(|(&l, i)| (l, 0, i))),
                }
                piece_starts.extend(batch_starts.iter().copied().filter(|&s| s < n));
            } else {
                let mut starts = batch_starts.iter().copied().peekable();
                for i in 0..n {
                    while starts.next_if(|&s| s <= i).is_some() {
                        piece_starts.push(pairs.len());
                    }
                    if first.col.is_null(i) {
                        nulls.push(i as u32);
                    } else {
                        let e2 = second.as_ref().map_or(0, |v| v[i]);
                        pairs.push((lead[i], e2, i as u32));
                    }
                }
            }
            let pcmp = |x: &(u64, u64, u32), y: &(u64, u64, u32)| {
                (x.0, x.1).cmp(&(y.0, y.1)).then_with(|| rest(x.2, y.2))
            };
            let k = limit.unwrap_or(n);
            if k == 0 {
                return Vec::new();
            }
            let in_row_order = k >= pairs.len();
            if !in_row_order {
                pairs.select_nth_unstable_by(k - 1, pcmp);
                pairs.truncate(k);
            }
            let runs = has_long_runs(&pairs);
            if skip >= cmps.len() && !runs {
                // The inline keys and the row number decide the order alone: a radix sort of
                // the keys (stable, with the rows in order) or an unstable sort of the tuples
                // is the stable order, and faster.
                if in_row_order && pairs.len() >= radix::MIN_ROWS {
                    radix::sort_keyed_rows(&mut pairs);
                } else {
                    pairs.sort_unstable();
                }
            } else {
                // A gather of sorted fragments interleaves their batches: regrouped by sender,
                // they are a few long runs that the stable sort merges in a pass or two.
                if runs {
                    if let Some(regrouped) = sorted_runs::regroup(&pairs, &piece_starts, pcmp) {
                        pairs = regrouped;
                    }
                }
                // A stable sort: it finds and merges the sorted runs its input holds. When the
                // inline keys and the row number decide the order alone, that order is the
                // tuples' own, which compares without a call per pair.
                if skip >= cmps.len() {
                    pairs.sort();
                } else {
                    pairs.sort_by(pcmp);
                }
            }
            // Rows whose first key is NULL tie on it: order them by every other key (the
            // inline-encoded second key included).
            let after_first = |a: &u32, b: &u32| {
                for k in &cmps[1..] {
                    let o = k.cmp(*a as usize, *b as usize);
                    if o != Ordering::Equal {
                        return o;
                    }
                }
                a.cmp(b)
            };
            if k < nulls.len() {
                nulls.select_nth_unstable_by(k - 1, after_first);
                nulls.truncate(k);
            }
            nulls.sort_unstable_by(after_first);
            let values = pairs.into_iter().map(|(_, _, i)| i);
            let mut out: Vec<u32> = if first.nulls_first {
                nulls.into_iter().chain(values).collect()
            } else {
                values.chain(nulls).collect()
            };
            out.truncate(k);
            return out;
        }
    }
    match limit {
        Some(k) if k < n => {
            if k == 0 {
                return Vec::new();
            }
            idx.select_nth_unstable_by(k - 1, cmp);
            idx.truncate(k);
            idx.sort_unstable_by(cmp);
        }
        _ => idx.sort_by(cmp),
    }
    idx
}

/// A numeric, boolean or temporal key's values encoded into order-preserving u64s, direction
/// applied, in one typed pass; `None` for strings and decimals. NULL rows are not encoded
/// meaningfully.
fn encoded(k: &KeyCmp) -> Option<Vec<u64>> {
    const SIGN: u64 = 1 << 63;
    let flip = if k.descending { u64::MAX } else { 0 };
    Some(match k.view {
        KeyView::Int(v) => v.iter().map(|&x| (x as u64) ^ SIGN ^ flip).collect(),
        KeyView::Float(v) => v
            .iter()
            .map(|x| {
                let b = x.to_bits();
                (if b & SIGN != 0 { !b } else { b | SIGN }) ^ flip
            })
            .collect(),
        KeyView::Bool(v) => v.iter().map(|&x| (x as u64) ^ flip).collect(),
        KeyView::Date(v) => v
            .iter()
            .map(|&x| (i64::from(x) as u64) ^ SIGN ^ flip)
            .collect(),
        KeyView::Str(_) | KeyView::Wide(_) => return None,
    })
}

/// Row `i` of key column `a` against row `j` of key column `b` (the same key, evaluated over
/// two batches), in the order `spec` asks for: as [`KeyCmp`] compares within a column.
pub(crate) fn cmp_cells(a: &Column, i: usize, b: &Column, j: usize, spec: &SortKey) -> Ordering {
    match (a.is_valid(i), b.is_valid(j)) {
        (true, true) => {}
        (false, false) => return Ordering::Equal,
        (false, true) if spec.nulls_first => return Ordering::Less,
        (false, true) => return Ordering::Greater,
        (true, false) if spec.nulls_first => return Ordering::Greater,
        (true, false) => return Ordering::Less,
    }
    let o = match (&a.data, &b.data) {
        (ColumnData::Int64(x), ColumnData::Int64(y))
        | (ColumnData::Timestamp(x), ColumnData::Timestamp(y)) => x[i].cmp(&y[j]),
        (ColumnData::Float64(x), ColumnData::Float64(y)) => x[i].total_cmp(&y[j]),
        (ColumnData::Boolean(x), ColumnData::Boolean(y)) => x[i].cmp(&y[j]),
        (ColumnData::Utf8 { .. }, ColumnData::Utf8 { .. }) => a.str_at(i).cmp(b.str_at(j)),
        (ColumnData::Decimal { values: x, .. }, ColumnData::Decimal { values: y, .. }) => {
            x[i].cmp(&y[j])
        }
        (ColumnData::Date(x), ColumnData::Date(y)) => x[i].cmp(&y[j]),
        // A key evaluates to one type in every batch; should two differ, compare the values.
        _ => a.value(i).sort_cmp(&b.value(j)),
    };
    if spec.descending {
        o.reverse()
    } else {
        o
    }
}

/// Key column `col` encoded row by row into order-preserving u64s in the order `spec` asks
/// for; `None` when it has NULLs or is not numeric, boolean or temporal.
pub(crate) fn lead_key(col: &Column, spec: &SortKey) -> Option<Vec<u64>> {
    if col.null_count() > 0 {
        return None;
    }
    let view = match &col.data {
        ColumnData::Int64(v) | ColumnData::Timestamp(v) => KeyView::Int(v),
        ColumnData::Float64(v) => KeyView::Float(v),
        ColumnData::Boolean(v) => KeyView::Bool(v),
        ColumnData::Date(v) => KeyView::Date(v),
        ColumnData::Utf8 { .. } | ColumnData::Decimal { .. } => return None,
    };
    let cmp = KeyCmp {
        view,
        col,
        has_nulls: false,
        descending: spec.descending,
        nulls_first: spec.nulls_first,
    };
    encoded(&cmp)
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
        }
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

/// The key columns of `batch`: each evaluated one of `keys`, or else the input column that
/// `inputs` says the key names.
pub(crate) fn key_columns<'a>(
    batch: &'a Batch,
    keys: &'a [Option<Column>],
    inputs: &[Option<usize>],
) -> Vec<&'a Column> {
    keys.iter()
        .zip(inputs)
        .map(|(k, i)| match (k, i) {
            (Some(k), _) => k,
            (None, Some(i)) => batch.column(*i),
            (None, None) => unreachable!("a key that names no input column is evaluated"),
        })
        .collect()
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
        self.reservation.try_grow(size_of(&batch, &keys))?;
        self.rows += batch.num_rows();
        self.batches.push(batch);
        self.key_cols.push(keys);
        if let Some(k) = self.limit {
            if self.rows > (2 * k).max(self.ctx.batch_size.max(1024)) {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::drain;
    use crate::{DataType, Expr, Value};

    fn key(col: usize, descending: bool, nulls_first: bool) -> SortKey {
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
            let got: Vec<(i64, i64)> = out
                .iter()
                .flat_map(|b| b.rows())
                .map(|r| match (&r[0], &r[1]) {
                    (Value::Int(a), Value::Int(b)) => (*a, *b),
                    other => panic!("{other:?}"),
                })
                .collect();
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
                let got: Vec<(i64, i64)> = out
                    .iter()
                    .flat_map(|b| b.rows())
                    .map(|r| match (&r[0], &r[1]) {
                        (Value::Int(k), Value::Int(i)) => (*k, *i),
                        other => panic!("{other:?}"),
                    })
                    .collect();
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
            let (k, n) = (b.column(0).as_i64().unwrap(), b.column(1).as_i64().unwrap());
            got.extend(k.iter().copied().zip(n.iter().copied()));
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
