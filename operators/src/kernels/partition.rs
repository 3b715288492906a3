//! Hash partitioning: splits a batch into one part per target by the hash of its key
//! expressions, as a hash exchange sends rows to the nodes that join or group them.
//!
//! Equal keys go to the same target on every sender (the hash is [`hash_rows`]'s, the same on
//! every node). A key that is a plain column is hashed in place, not copied; each row's target
//! comes from a multiply and a shift rather than a division, and the parts' row lists are
//! sized by a counting pass before they are filled.

use std::borrow::Cow;

use super::hash::hash_rows;
use super::key_filter::KeyFilter;
use crate::eval::evaluate_borrowed;
use crate::{Batch, Column, Expr, Result, Value};

/// Hashes every row of `batch` by key expressions `keys` into `out`, as [`hash_rows`] over
/// their columns would; a key that names a column of `batch` is read in place.
pub fn hash_keys(keys: &[Expr], batch: &Batch, params: &[Value], out: &mut Vec<u64>) -> Result<()> {
    let cols = keys
        .iter()
        .map(|k| evaluate_borrowed(k, batch, params))
        .collect::<Result<Vec<Cow<'_, Column>>>>()?;
    hash_rows(&cols, out);
    Ok(())
}

/// The target in `0..targets` of a row whose key hashes to `hash`: its low 32 bits scaled to
/// the range. The target so depends on the hash's bits 24 to 31 above all, which are neither
/// the top bits a hash table downstream keeps as tags nor the low bits that place a key in a
/// table of fewer than 2^24 slots: the rows one target receives still spread over its tables
/// (`hash % targets` fixed the low bit of every hash a node received, for an even count).
#[inline(always)]
fn target_of(hash: u64, targets: usize) -> usize {
    (((hash & 0xFFFF_FFFF) * targets as u64) >> 32) as usize
}

/// Splits `batch` into parts by the hash of `keys`: `(target, rows)` for every target in
/// `0..targets` that gets rows, in target order. A batch whose rows all go to one target is
/// moved, not copied. `hashes` is scratch space, kept by the caller between calls.
pub fn hash_partition(
    batch: Batch,
    keys: &[Expr],
    params: &[Value],
    targets: usize,
    hashes: &mut Vec<u64>,
) -> Result<Vec<(usize, Batch)>> {
    Ok(hash_partition_filtered(batch, keys, params, targets, &[], hashes)?.0)
}

/// [`hash_partition`], dropping the rows a target's [`KeyFilter`] says cannot match there:
/// `filters[t]`, when there is one, filters the rows bound for target `t` (a filter made for
/// keys of other types than `keys` is ignored). Returns the parts and the rows dropped.
pub fn hash_partition_filtered(
    batch: Batch,
    keys: &[Expr],
    params: &[Value],
    targets: usize,
    filters: &[Option<&KeyFilter>],
    hashes: &mut Vec<u64>,
) -> Result<(Vec<(usize, Batch)>, usize)> {
    let rows = batch.num_rows();
    if targets == 0 || rows == 0 {
        return Ok((Vec::new(), 0));
    }
    if targets == 1 && filters.iter().all(Option::is_none) {
        return Ok((vec![(0, batch)], 0));
    }
    let cols = keys
        .iter()
        .map(|k| evaluate_borrowed(k, &batch, params))
        .collect::<Result<Vec<Cow<'_, Column>>>>()?;
    let types: Vec<_> = cols.iter().map(|c| c.data_type()).collect();
    let live: Vec<Option<&KeyFilter>> = (0..targets)
        .map(|t| {
            filters
                .get(t)
                .copied()
                .flatten()
                .filter(|f| f.applies_to(&types))
        })
        .collect();
    let filtering = live.iter().any(Option::is_some);
    if targets == 1 && !filtering {
        return Ok((vec![(0, batch)], 0));
    }
    hash_rows(&cols, hashes);
    drop(cols);
    // Each row's hash becomes its target, or DROPPED.
    const DROPPED: u64 = u64::MAX;
    let mut counts = vec![0usize; targets];
    for h in hashes.iter_mut() {
        let t = target_of(*h, targets);
        if live[t].is_some_and(|f| !f.may_contain(*h)) {
            *h = DROPPED;
        } else {
            counts[t] += 1;
            *h = t as u64;
        }
    }
    let kept: usize = counts.iter().sum();
    if let Some(t) = counts.iter().position(|&c| c == rows) {
        return Ok((vec![(t, batch)], 0));
    }
    let mut parts: Vec<Vec<u32>> = counts.iter().map(|&c| Vec::with_capacity(c)).collect();
    for (row, &t) in hashes.iter().enumerate() {
        if t != DROPPED {
            parts[t as usize].push(row as u32);
        }
    }
    let parts = parts
        .into_iter()
        .enumerate()
        .filter(|(_, rows)| !rows.is_empty())
        .map(|(t, rows)| (t, batch.take(&rows)))
        .collect();
    Ok((parts, rows - kept))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::BinaryOp;
    use std::collections::HashMap;

    fn batch(keys: Vec<i64>) -> Batch {
        let names: Vec<String> = keys.iter().map(|k| format!("row{k}")).collect();
        Batch::try_new(vec![Column::from_i64(keys), Column::from_strs(&names)]).unwrap()
    }

    /// Every row lands in exactly one part, equal keys in the same one, rows keep their
    /// order within a part, and the rows spread over the targets.
    #[test]
    fn every_row_goes_to_one_target_by_its_key() {
        let keys: Vec<i64> = (0..3000).map(|i| (i * 7919) % 1000).collect();
        let mut hashes = Vec::new();
        for targets in [2, 3, 10] {
            let parts = hash_partition(
                batch(keys.clone()),
                &[Expr::col(0)],
                &[],
                targets,
                &mut hashes,
            )
            .unwrap();
            let mut seen_at: HashMap<i64, usize> = HashMap::new();
            let mut total = 0;
            for (t, part) in &parts {
                assert!(*t < targets);
                let ks = part.column(0).as_i64().unwrap();
                for (row, k) in ks.iter().enumerate() {
                    assert_eq!(*seen_at.entry(*k).or_insert(*t), *t, "key {k} split");
                    assert_eq!(part.row(row)[1], Value::Str(format!("row{k}")));
                }
                total += part.num_rows();
                // Each target gets its share, give or take.
                let share = keys.len() / targets;
                assert!(part.num_rows() > share / 2 && part.num_rows() < share * 2);
            }
            assert_eq!(total, keys.len());
            assert_eq!(parts.len(), targets);
        }
    }

    /// A key expression is evaluated (here `k + 0`, the same values as `k`): same parts as
    /// the plain column read in place.
    #[test]
    fn evaluated_keys_partition_as_columns_do() {
        let keys: Vec<i64> = (0..500).collect();
        let plus_zero = Expr::col(0).binary(BinaryOp::Add, Expr::lit(Value::Int(0)));
        let mut hashes = Vec::new();
        let by_col = hash_partition(batch(keys.clone()), &[Expr::col(0)], &[], 3, &mut hashes);
        let by_expr = hash_partition(batch(keys), &[plus_zero], &[], 3, &mut hashes);
        let shape = |parts: Vec<(usize, Batch)>| -> Vec<(usize, Vec<i64>)> {
            parts
                .into_iter()
                .map(|(t, b)| (t, b.column(0).as_i64().unwrap().to_vec()))
                .collect()
        };
        assert_eq!(shape(by_col.unwrap()), shape(by_expr.unwrap()));
    }

    #[test]
    fn one_target_or_no_rows_moves_the_batch() {
        let mut hashes = Vec::new();
        let one = hash_partition(batch(vec![1, 2, 3]), &[Expr::col(0)], &[], 1, &mut hashes);
        assert_eq!(one.unwrap()[0].1.num_rows(), 3);
        let none = hash_partition(batch(vec![]), &[Expr::col(0)], &[], 4, &mut hashes);
        assert!(none.unwrap().is_empty());
        // A batch of one key goes whole to one target: the same buffers, not a copy.
        let whole = batch(vec![7; 50]);
        let buffer = whole.column(0).as_i64().unwrap().as_ptr();
        let same = hash_partition(whole, &[Expr::col(0)], &[], 4, &mut hashes).unwrap();
        assert_eq!(same.len(), 1);
        assert_eq!(same[0].1.num_rows(), 50);
        assert_eq!(same[0].1.column(0).as_i64().unwrap().as_ptr(), buffer);
    }

    #[test]
    fn a_bad_key_is_an_error() {
        let mut hashes = Vec::new();
        let bad = hash_partition(batch(vec![1, 2]), &[Expr::col(5)], &[], 3, &mut hashes);
        assert!(bad.is_err());
    }

    /// A target's filter drops the rows bound there that it rules out, and only those; the
    /// other targets get what they would without it; a filter of other key types drops none.
    #[test]
    fn a_targets_filter_drops_its_rows_that_cannot_match() {
        let keys: Vec<i64> = (0..3000).collect();
        let mut hashes = Vec::new();
        let plain = hash_partition(batch(keys.clone()), &[Expr::col(0)], &[], 3, &mut hashes);
        let plain: HashMap<usize, Vec<i64>> = plain
            .unwrap()
            .into_iter()
            .map(|(t, b)| (t, b.column(0).as_i64().unwrap().to_vec()))
            .collect();
        // Target 1's build side holds the even keys it would get.
        let wanted: Vec<i64> = plain[&1].iter().copied().filter(|k| k % 2 == 0).collect();
        let filter = KeyFilter::of_columns(&[Column::from_i64(wanted.clone())], wanted.len());
        let filters = [None, Some(&filter), None];
        let (parts, dropped) = hash_partition_filtered(
            batch(keys.clone()),
            &[Expr::col(0)],
            &[],
            3,
            &filters,
            &mut hashes,
        )
        .unwrap();
        let got: HashMap<usize, Vec<i64>> = parts
            .into_iter()
            .map(|(t, b)| (t, b.column(0).as_i64().unwrap().to_vec()))
            .collect();
        assert_eq!(got[&0], plain[&0]);
        assert_eq!(got[&2], plain[&2]);
        // Every wanted key is kept; of the odd ones, few pass (the filter's false positives).
        assert!(wanted.iter().all(|k| got[&1].contains(k)));
        let false_positives = got[&1].len() - wanted.len();
        assert!(false_positives * 20 < plain[&1].len() - wanted.len());
        assert_eq!(dropped, plain[&1].len() - got[&1].len());
        // A filter of keys of another type is not used.
        let other = KeyFilter::of_hashes(vec![crate::DataType::Utf8], &[]);
        let (parts, dropped) = hash_partition_filtered(
            batch(keys),
            &[Expr::col(0)],
            &[],
            3,
            &[None, Some(&other), None],
            &mut hashes,
        )
        .unwrap();
        assert_eq!(dropped, 0);
        assert_eq!(parts.iter().map(|(_, b)| b.num_rows()).sum::<usize>(), 3000);
    }
}
