//! Placement: which partition a row belongs to. A table with a primary key places each row
//! by a stable hash of its key ([`partition_of`], [`partition_of_key`], vectorized over
//! columns by [`partition_rows`] and [`partition_key_rows`]); a table without one by a hidden
//! row id ([`assign_partitions`] places the rows of a load either way). The hashes are
//! [`crate::hashing`]'s, so a key lands in the same partition on every run and machine.

use crate::batch::Batch;
use crate::column::{Column, ColumnData};
use crate::error::{Error, Result};
use crate::hashing::{hash_bytes, hash_decimal, hash_f64, mix64};
use crate::value::Value;

/// The stable hash of one non-NULL key value (`None` for NULL), as [`partition_rows`] computes
/// it for a column.
fn hash_value(v: &Value) -> Option<u64> {
    Some(match v {
        Value::Null => return None,
        Value::Int(v) => mix64(*v as u64),
        Value::Float(f) => hash_f64(*f),
        Value::Str(s) => hash_bytes(s.as_bytes()),
        Value::Bool(b) => mix64(*b as u64),
        Value::Decimal(v, s) => hash_decimal(*v, *s),
        Value::Date(d) => mix64(i64::from(*d) as u64),
        Value::Timestamp(t) => mix64(*t as u64),
    })
}

/// Folds the hash of the next column of a composite key into `acc`.
#[inline]
fn combine(acc: u64, h: u64) -> u64 {
    mix64(acc.rotate_left(23) ^ h)
}

/// The partition (0..partitions) that owns primary key `key`. Stable across runs and machines.
/// NULL keys (and `partitions == 0`) map to partition 0.
pub fn partition_of(key: &Value, partitions: u32) -> u32 {
    partition_of_key(std::slice::from_ref(key), partitions)
}

/// The partition that owns the (possibly composite) primary key whose column values are
/// `key`, in key order. A one-column key is placed as [`partition_of`] places it; a key with
/// a NULL part maps to partition 0.
pub fn partition_of_key(key: &[Value], partitions: u32) -> u32 {
    if partitions <= 1 {
        return 0;
    }
    let mut acc = None;
    for v in key {
        let Some(h) = hash_value(v) else {
            return 0;
        };
        acc = Some(acc.map_or(h, |a| combine(a, h)));
    }
    acc.map_or(0, |h| (h % partitions as u64) as u32)
}

/// The stable hash of every row of `col` into `out` (cleared first); NULL rows hash to 0.
fn hash_column(col: &Column, out: &mut Vec<u64>) {
    out.clear();
    match &col.data {
        ColumnData::Int64(v) => out.extend(v.iter().map(|&x| mix64(x as u64))),
        ColumnData::Float64(v) => out.extend(v.iter().map(|&x| hash_f64(x))),
        ColumnData::Boolean(v) => out.extend(v.iter().map(|&x| mix64(x as u64))),
        ColumnData::Decimal { values, scale, .. } => {
            out.extend(values.iter().map(|&x| hash_decimal(x, *scale)))
        }
        ColumnData::Date(v) => out.extend(v.iter().map(|&x| mix64(i64::from(x) as u64))),
        ColumnData::Timestamp(v) => out.extend(v.iter().map(|&x| mix64(x as u64))),
        ColumnData::Utf8 { offsets, bytes } => out.extend(
            offsets
                .windows(2)
                .map(|w| hash_bytes(&bytes[w[0] as usize..w[1] as usize])),
        ),
    }
}

/// Computes [`partition_of`] for every row of `col` into `out` (cleared first), vectorized.
pub fn partition_rows(col: &Column, partitions: u32, out: &mut Vec<u32>) {
    partition_key_rows(&[col], partitions, out);
}

/// Computes [`partition_of_key`] for every row of the key columns `cols` (in key order) into
/// `out` (cleared first), vectorized.
pub fn partition_key_rows(cols: &[&Column], partitions: u32, out: &mut Vec<u32>) {
    out.clear();
    let n = cols.first().map_or(0, |c| c.len());
    if partitions <= 1 || cols.is_empty() {
        out.resize(n, 0);
        return;
    }
    let p = partitions as u64;
    let mut acc = Vec::new();
    hash_column(cols[0], &mut acc);
    let mut next = Vec::new();
    for col in &cols[1..] {
        hash_column(col, &mut next);
        for (a, &h) in acc.iter_mut().zip(&next) {
            *a = combine(*a, h);
        }
    }
    out.extend(acc.iter().map(|&h| (h % p) as u32));
    for col in cols {
        if let Some(valid) = &col.validity {
            for (i, o) in out.iter_mut().enumerate() {
                if !valid.get(i) {
                    *o = 0;
                }
            }
        }
    }
}

/// The partition of every row of `batch`, into `out` (cleared first).
///
/// A table with a primary key (`primary_key` holds its columns, in key order) places each row
/// by its key, as [`partition_key_rows`] does. A table without one (`primary_key` empty)
/// gives its rows hidden row ids, handed out consecutively and never reused (as SQLite's
/// rowid): row `i` of this batch has row id `first_row_id + i` and goes to
/// [`partition_of`]`(Value::Int(first_row_id + i))`, so rows that are equal in every column
/// are all kept and spread over the partitions.
///
/// Fails with [`Error::Internal`] when a key column is not a column of `batch`.
pub fn assign_partitions(
    batch: &Batch,
    primary_key: &[usize],
    first_row_id: u64,
    partitions: u32,
    out: &mut Vec<u32>,
) -> Result<()> {
    if primary_key.is_empty() {
        out.clear();
        let n = batch.num_rows() as u64;
        if partitions <= 1 {
            out.resize(n as usize, 0);
        } else {
            let p = partitions as u64;
            // As `partition_of(&Value::Int(id as i64))`: the same bits go to `mix64`.
            out.extend((0..n).map(|i| (mix64(first_row_id.wrapping_add(i)) % p) as u32));
        }
        return Ok(());
    }
    let mut cols = Vec::with_capacity(primary_key.len());
    for &k in primary_key {
        let Some(col) = batch.columns().get(k) else {
            return Err(Error::Internal(format!(
                "primary key column #{k} out of range for a batch of {} columns",
                batch.num_columns()
            )));
        };
        cols.push(col);
    }
    partition_key_rows(&cols, partitions, out);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::DataType;

    #[test]
    fn partition_function() {
        for v in [
            Value::Int(5),
            Value::from("abc"),
            Value::Float(1.5),
            Value::Bool(true),
        ] {
            let p = partition_of(&v, 7);
            assert!(p < 7);
            assert_eq!(p, partition_of(&v, 7));
        }
        assert_eq!(partition_of(&Value::Null, 7), 0);
        let col = Column::from_values(
            DataType::Utf8,
            &[
                Value::from("x"),
                Value::Null,
                Value::from("hello world, long"),
            ],
        )
        .unwrap();
        let mut out = Vec::new();
        partition_rows(&col, 5, &mut out);
        for (i, &p) in out.iter().enumerate() {
            assert_eq!(p, partition_of(&col.value(i), 5));
        }
        let ints = Column::from_i64((0..1000).collect());
        partition_rows(&ints, 4, &mut out);
        let mut counts = [0; 4];
        for (i, &p) in out.iter().enumerate() {
            assert_eq!(p, partition_of(&Value::Int(i as i64), 4));
            counts[p as usize] += 1;
        }
        assert!(counts.iter().all(|&c| c > 200), "{counts:?}");
    }

    #[test]
    fn composite_keys_are_placed_by_the_whole_key() {
        let types = [DataType::Int64, DataType::Utf8, DataType::Int64];
        let row = |a: i64, b: &str, v: i64| vec![Value::Int(a), Value::from(b), Value::Int(v)];
        let rows = vec![row(1, "x", 10), row(1, "y", 11), row(2, "x", 12)];
        // The whole key places a row: (1, 'x') and (1, 'y') may land apart.
        let keys: Vec<u32> = (0..50)
            .map(|i| partition_of_key(&[Value::Int(1), Value::Str(format!("k{i}"))], 16))
            .collect();
        assert!(keys.iter().any(|&p| p != keys[0]));
        let b = Batch::from_rows(&types, &rows).unwrap();
        let mut out = Vec::new();
        assign_partitions(&b, &[0, 1], 0, 16, &mut out).unwrap();
        for (i, r) in rows.iter().enumerate() {
            assert_eq!(out[i], partition_of_key(&r[..2], 16));
        }
        assert_eq!(
            partition_of_key(&[Value::Int(4)], 16),
            partition_of(&Value::Int(4), 16)
        );
    }

    #[test]
    fn a_decimal_key_is_placed_by_its_value() {
        // Partition placement does not depend on how a decimal key is written.
        assert_eq!(
            partition_of(&Value::Decimal(150, 2), 16),
            partition_of(&Value::Decimal(15, 1), 16)
        );
        assert_eq!(
            partition_of(&Value::Decimal(1000, 2), 16),
            partition_of(&Value::Int(10), 16)
        );
    }
}
