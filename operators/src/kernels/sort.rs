//! Sort and top-k kernel.
//!
//! Input batches are buffered together with their evaluated sort key columns (accounted in the
//! reservation). At the end the buffer is concatenated and a row permutation is sorted: a
//! numeric or boolean leading key (and a second one) is encoded inline into order-preserving
//! u64s, radix-sorted when they decide the order (module `radix`), or, for a gather of sorted
//! fragments, regrouped by sender and merged (module `sorted_runs`); other keys are compared over
//! typed key views (matched once, not per cell). Then each `next_output` call
//! gathers the next `batch_size` rows of the permutation into one output batch. With a `limit`
//! the buffer is periodically sorted and truncated to the first `limit` rows, so memory stays
//! O(limit).

use super::{radix, sorted_runs, ExecContext, Operator};
use crate::column::ColumnData;
use crate::eval::evaluate;
use crate::plan::SortKey;
use crate::{Batch, Column, Error, Reservation, Result};
use std::cmp::Ordering;

/// Sort and top-k.
pub struct SortOp {
    keys: Vec<SortKey>,
    limit: Option<usize>,
    ctx: ExecContext,
    reservation: Reservation,
    /// Buffered input and its key columns.
    batches: Vec<Batch>,
    key_cols: Vec<Vec<Column>>,
    rows: usize,
    finished: bool,
    /// After the input ended: the sorted rows being emitted.
    sorted: Option<Sorted>,
}

/// The concatenated input, its sorted permutation, and how much of it has been emitted.
struct Sorted {
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
    keys: &[Column],
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
        let encode = encoder(first);
        if let Some(encode) = encode {
            // The second key joins the inline encoding when it has no NULLs.
            let second = cmps.get(1).filter(|k| !k.has_nulls).and_then(encoder);
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
            let mut starts = batch_starts.iter().copied().peekable();
            for i in 0..n {
                while starts.next_if(|&s| s <= i).is_some() {
                    piece_starts.push(pairs.len());
                }
                if first.has_nulls && first.col.is_null(i) {
                    nulls.push(i as u32);
                } else {
                    let e2 = second.as_ref().map_or(0, |f| f(i));
                    pairs.push((encode(i), e2, i as u32));
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
                // A stable sort: it finds and merges the sorted runs its input holds.
                pairs.sort_by(pcmp);
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

/// An order-preserving u64 encoding of a numeric or boolean key's values (direction applied);
/// `None` for strings. NULL rows are not encoded meaningfully.
#[allow(clippy::type_complexity)]
fn encoder<'a>(k: &KeyCmp<'a>) -> Option<Box<dyn Fn(usize) -> u64 + 'a>> {
    let flip = if k.descending { u64::MAX } else { 0 };
    match k.view {
        KeyView::Int(v) => Some(Box::new(move |i| ((v[i] as u64) ^ (1 << 63)) ^ flip)),
        KeyView::Float(v) => Some(Box::new(move |i| {
            let b = v[i].to_bits();
            (if b >> 63 == 1 { !b } else { b | (1 << 63) }) ^ flip
        })),
        KeyView::Bool(v) => Some(Box::new(move |i| (v[i] as u64) ^ flip)),
        KeyView::Date(v) => Some(Box::new(move |i| {
            ((i64::from(v[i]) as u64) ^ (1 << 63)) ^ flip
        })),
        KeyView::Str(_) | KeyView::Wide(_) => None,
    }
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
        SortOp {
            keys,
            limit,
            ctx,
            reservation,
            batches: Vec::new(),
            key_cols: Vec::new(),
            rows: 0,
            finished: false,
            sorted: None,
        }
    }

    /// Concatenates the buffer into one batch with its key columns.
    fn consolidate(&mut self) -> Result<(Batch, Vec<Column>)> {
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
                let cols: Vec<&Column> = key_cols.iter().map(|c| &c[k]).collect();
                Column::concat(&cols)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok((batch, keys))
    }

    /// Sorts the buffer and keeps only the first `limit` rows.
    fn compact(&mut self, limit: usize) -> Result<()> {
        let (batch, keys) = self.consolidate()?;
        let idx = sort_indices(&keys, &self.keys, batch.num_rows(), Some(limit), &[]);
        let batch = batch.take(&idx);
        let keys: Vec<Column> = keys.iter().map(|c| c.take(&idx)).collect();
        self.rows = batch.num_rows();
        self.reservation.resize(size_of(&batch, &keys))?;
        self.batches.push(batch);
        self.key_cols.push(keys);
        Ok(())
    }
}

fn size_of(batch: &Batch, keys: &[Column]) -> usize {
    batch.memory_size() + keys.iter().map(Column::memory_size).sum::<usize>()
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
            .map(|k| evaluate(&k.expr, &batch, &self.ctx.params))
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
        let idx = sort_indices(&keys, &self.keys, n, self.limit, &batch_starts);
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
        self.sorted = Some(Sorted { batch, idx, pos: 0 });
        Ok(())
    }

    fn next_output(&mut self) -> Result<Option<Batch>> {
        let Some(s) = &mut self.sorted else {
            return Ok(None);
        };
        let size = self.ctx.batch_size.max(1);
        let end = (s.pos + size).min(s.idx.len());
        let out = s.batch.take(&s.idx[s.pos..end]);
        s.pos = end;
        if s.pos == s.idx.len() {
            self.sorted = None;
            self.reservation.free();
        }
        Ok(Some(out))
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
