//! The order of a sort's rows: comparisons of key columns (typed views matched once, not per
//! cell), their encoding into order-preserving u64s, and [`sort_indices`], which sorts a
//! permutation of the rows by them (a radix sort, a merge of sorted runs, or a comparison
//! sort, as the keys and the input allow).

use super::{radix, sorted_runs};
use crate::column::ColumnData;
use crate::plan::SortKey;
use crate::{Batch, Column};
use std::cmp::Ordering;

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
    // The general path: a permutation sorted by comparing rows key by key.
    let mut idx: Vec<u32> = (0..n as u32).collect();
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
    // A key evaluates to one type in every batch; should two differ, they compare as values.
    let o = a.cmp_valid(i, b, j);
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
