//! Vectorized row hashing for hash joins and aggregations.
//!
//! Each key column is hashed in one typed loop and combined into the running per-row hash.
//! Integer and float columns do not hash alike (the planner casts join keys to one type);
//! NULL hashes to a fixed value (callers decide what NULL keys mean).

use crate::column::ColumnData;
use crate::hashing::{hash_bytes, hash_f64, hash_i128, mix64};
use crate::Column;
use std::borrow::Borrow;

/// Hash of a NULL key.
const NULL_HASH: u64 = 0x5151_5151_5151_5151;

#[inline]
fn combine(h: u64, v: u64) -> u64 {
    (h.rotate_left(27) ^ v).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// Hashes the key columns of each row into `out` (one u64 per row); equal keys (including
/// integer/float columns holding equal values of the same type) hash equally.
///
/// `out` is cleared and resized to the number of rows; with no key columns every row gets
/// the same hash.
pub fn hash_rows<C: Borrow<Column>>(keys: &[C], out: &mut Vec<u64>) {
    out.clear();
    let Some(first) = keys.first() else {
        return;
    };
    let n = first.borrow().len();
    out.resize(n, 0);
    for (k, col) in keys.iter().enumerate() {
        let col: &Column = col.borrow();
        let n = n.min(col.len());
        let out = &mut out[..n];
        let valid = col.validity.as_ref();
        macro_rules! apply {
            ($iter:expr) => {
                match (k == 0, valid) {
                    (true, None) => {
                        for (o, v) in out.iter_mut().zip($iter) {
                            *o = v;
                        }
                    }
                    (false, None) => {
                        for (o, v) in out.iter_mut().zip($iter) {
                            *o = combine(*o, v);
                        }
                    }
                    (first, Some(valid)) => {
                        for (i, (o, v)) in out.iter_mut().zip($iter).enumerate() {
                            let v = if valid.get(i) { v } else { NULL_HASH };
                            *o = if first { v } else { combine(*o, v) };
                        }
                    }
                }
            };
        }
        match &col.data {
            ColumnData::Int64(v) => apply!(v.iter().map(|&x| mix64(x as u64))),
            ColumnData::Float64(v) => apply!(v.iter().map(|&x| hash_f64(x))),
            ColumnData::Boolean(v) => apply!(v.iter().map(|&x| mix64(x as u64 + 1))),
            ColumnData::Decimal { values, .. } => apply!(values.iter().map(|&x| hash_i128(x))),
            ColumnData::Date(v) => apply!(v.iter().map(|&x| mix64(i64::from(x) as u64))),
            ColumnData::Timestamp(v) => apply!(v.iter().map(|&x| mix64(x as u64))),
            ColumnData::Utf8 { offsets, bytes } => apply!(offsets
                .windows(2)
                .map(|w| hash_bytes(&bytes[w[0] as usize..w[1] as usize]))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DataType, Value};

    #[test]
    fn equal_keys_hash_equally() {
        let a = Column::from_values(
            DataType::Int64,
            &[Value::Int(1), Value::Null, Value::Int(1), Value::Null],
        )
        .unwrap();
        // NULL slots holding different garbage still hash alike.
        let mut b = Column::from_strs(&["x", "y", "x", "z"]);
        b.validity = Some(crate::Bitmap::from_bools(&[true, false, true, false]));
        let mut h = Vec::new();
        hash_rows(&[a.clone(), b], &mut h);
        assert_eq!(h[0], h[2]);
        assert_eq!(h[1], h[3]);
        assert_ne!(h[0], h[1]);
        let mut h2 = Vec::new();
        hash_rows(&[a], &mut h2);
        assert_eq!(h2[0], h2[2]);
        hash_rows::<Column>(&[], &mut h2);
        assert!(h2.is_empty());
    }

    #[test]
    fn decimal_date_and_timestamp_keys_hash_and_compare_by_value() {
        let dec = Column::from_values(
            DataType::decimal(10, 2),
            &[
                Value::Decimal(150, 2),
                Value::Decimal(-150, 2),
                Value::Decimal(15, 1),
                Value::Null,
            ],
        )
        .unwrap();
        let dates = Column::from_values(
            DataType::Date,
            &[Value::Date(1), Value::Date(2), Value::Date(1), Value::Null],
        )
        .unwrap();
        let mut h = Vec::new();
        hash_rows(&[dec.clone(), dates.clone()], &mut h);
        // 1.5 pushed as 15 at scale 1 is stored as 150 at scale 2: equal to row 0.
        assert_eq!(h[0], h[2]);
        assert_ne!(h[0], h[1]);
        let keys = [dec, dates];
        assert!(rows_equal(&keys, 0, &keys, 2));
        assert!(!rows_equal(&keys, 0, &keys, 1));
        assert!(rows_equal(&keys, 3, &keys, 3));
        let ts = Column::from_values(DataType::Timestamp, &[Value::Timestamp(5)]).unwrap();
        let ts2 = Column::from_values(DataType::Timestamp, &[Value::Timestamp(6)]).unwrap();
        let ts = [ts];
        assert!(!rows_equal(&ts, 0, &[ts2], 0));
        assert!(rows_equal(&ts, 0, &ts, 0));
    }
}

/// Whether row `i` of key columns `a` equals row `j` of key columns `b` (same types column by
/// column). NULL equals NULL here (grouping semantics); joins drop NULL keys beforehand.
/// Floats compare by value, with all NaNs equal.
#[inline]
pub(crate) fn rows_equal(a: &[Column], i: usize, b: &[Column], j: usize) -> bool {
    a.iter().zip(b).all(|(x, y)| {
        let (xv, yv) = (x.is_valid(i), y.is_valid(j));
        if !xv || !yv {
            return xv == yv;
        }
        match (&x.data, &y.data) {
            (ColumnData::Int64(p), ColumnData::Int64(q)) => p[i] == q[j],
            (ColumnData::Float64(p), ColumnData::Float64(q)) => {
                p[i] == q[j] || (p[i].is_nan() && q[j].is_nan())
            }
            (ColumnData::Boolean(p), ColumnData::Boolean(q)) => p[i] == q[j],
            (
                ColumnData::Decimal {
                    values: p,
                    scale: s,
                    ..
                },
                ColumnData::Decimal {
                    values: q,
                    scale: t,
                    ..
                },
            ) => s == t && p[i] == q[j],
            (ColumnData::Date(p), ColumnData::Date(q)) => p[i] == q[j],
            (ColumnData::Timestamp(p), ColumnData::Timestamp(q)) => p[i] == q[j],
            (
                ColumnData::Utf8 { offsets, bytes },
                ColumnData::Utf8 {
                    offsets: o2,
                    bytes: b2,
                },
            ) => {
                bytes[offsets[i] as usize..offsets[i + 1] as usize]
                    == b2[o2[j] as usize..o2[j + 1] as usize]
            }
            _ => false,
        }
    })
}

/// A hasher that passes an already well-mixed `u64` through unchanged.
#[derive(Default, Clone, Copy)]
pub(crate) struct IdentityHasher(u64);

impl std::hash::Hasher for IdentityHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | b as u64;
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

/// Builds [`IdentityHasher`]s.
pub(crate) type IdentityBuild = std::hash::BuildHasherDefault<IdentityHasher>;
