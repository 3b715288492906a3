//! Group keys packed into one fixed-width code per row: for one or two key columns whose
//! values fit 64 bits each (text of at most 7 bytes, dates, booleans, and BIGINT, DECIMAL or
//! TIMESTAMP without NULLs), a row's keys become one `u128`, looked up in a hash map of codes
//! instead of hashing the row and comparing it key by key (TPC-H Q1 groups 6 million rows
//! by two one-letter columns).
//!
//! A column's code depends only on its value (and its type, fixed per key column), never on
//! the batch, so codes of different batches agree; a batch that does not fit (a longer text,
//! a NULL where the code has no room for one) takes the general path.

use crate::column::{Column, ColumnData};

/// Most key columns packed into one code.
pub(crate) const MAX_PACKED: usize = 2;

/// One column's 64-bit code of row `i`, or `None` when this column's values of the batch do
/// not all fit (then the batch is not packed).
fn column_codes(col: &Column, n: usize, lane: u32, out: &mut [u128]) -> bool {
    let nulls = col.null_count() > 0;
    let mut put = |i: usize, code: u64| out[i] |= u128::from(code) << lane;
    match &col.data {
        ColumnData::Utf8 { offsets, bytes } => {
            for i in 0..n {
                let (a, b) = (offsets[i] as usize, offsets[i + 1] as usize);
                if nulls && col.is_null(i) {
                    continue; // code 0: a text's code is never 0 (its length + 1 is in it)
                }
                let len = b - a;
                if len > 7 {
                    return false;
                }
                // The text's bytes, low first, and its length + 1 in the top byte.
                let word = match bytes.get(a..a + 8) {
                    Some(w) => {
                        let w = u64::from_le_bytes(w.try_into().unwrap_or_default());
                        w & ((1u64 << (8 * len)) - 1)
                    }
                    None => {
                        let mut w = [0u8; 8];
                        w[..len].copy_from_slice(&bytes[a..b]);
                        u64::from_le_bytes(w)
                    }
                };
                put(i, word | ((len as u64 + 1) << 56));
            }
            true
        }
        ColumnData::Date(v) => {
            for (i, &d) in v.iter().enumerate().take(n) {
                if !(nulls && col.is_null(i)) {
                    put(i, (1 << 32) | u64::from(d as u32));
                }
            }
            true
        }
        ColumnData::Boolean(v) => {
            for (i, &b) in v.iter().enumerate().take(n) {
                if !(nulls && col.is_null(i)) {
                    put(i, 1 + u64::from(b));
                }
            }
            true
        }
        ColumnData::Int64(v) | ColumnData::Timestamp(v) if !nulls => {
            for (i, &x) in v.iter().enumerate().take(n) {
                put(i, x as u64);
            }
            true
        }
        ColumnData::Decimal { values, .. } if !nulls => {
            for (i, &x) in values.iter().enumerate().take(n) {
                match i64::try_from(x) {
                    Ok(x) => put(i, x as u64),
                    Err(_) => return false,
                }
            }
            true
        }
        _ => false,
    }
}

/// Packs the first `n` rows of `keys` (at most [`MAX_PACKED`] columns) into `out`; false when
/// they do not fit (then `out` holds nothing meaningful).
pub(crate) fn pack(keys: &[&Column], n: usize, out: &mut Vec<u128>) -> bool {
    if keys.is_empty() || keys.len() > MAX_PACKED {
        return false;
    }
    out.clear();
    out.resize(n, 0);
    keys.iter()
        .enumerate()
        .all(|(k, col)| col.len() >= n && column_codes(col, n, 64 * k as u32, out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DataType, Value};

    fn col(dt: DataType, values: &[Value]) -> Column {
        Column::from_values(dt, values).unwrap()
    }

    #[test]
    fn equal_keys_pack_alike_and_different_keys_apart() {
        let s = col(
            DataType::Utf8,
            &["A".into(), "".into(), Value::Null, "A".into(), "AB".into()],
        );
        let d = col(
            DataType::Date,
            &[
                Value::Date(0),
                Value::Date(0),
                Value::Date(0),
                Value::Date(0),
                Value::Null,
            ],
        );
        let mut out = Vec::new();
        assert!(pack(&[&s, &d], 5, &mut out));
        assert_eq!(out[0], out[3]);
        let distinct: std::collections::HashSet<u128> = out.iter().copied().collect();
        assert_eq!(distinct.len(), 4, "'' and NULL and 'A' and 'AB' differ");
    }

    #[test]
    fn what_does_not_fit_is_not_packed() {
        let long = col(DataType::Utf8, &["12345678".into()]);
        let int_null = col(DataType::Int64, &[Value::Null]);
        let mut out = Vec::new();
        assert!(!pack(&[&long], 1, &mut out));
        assert!(!pack(&[&int_null], 1, &mut out));
        let three = col(DataType::Boolean, &[true.into()]);
        assert!(!pack(&[&three, &three, &three], 1, &mut out));
    }
}
