//! Result columns from chosen rows: a value function or MIN/MAX picks, for each row, another
//! row of a column (or none), and the result is that column gathered in one typed pass.

use crate::bitmap::Bitmap;
use crate::Column;

/// A row that picks no row (its result is NULL).
pub(crate) const NONE: u32 = u32::MAX;

/// `col` gathered at `rows`, NULL where a row is [`NONE`] (and where the picked value is).
pub(crate) fn take_or_null(col: &Column, rows: &[u32]) -> Column {
    if !rows.contains(&NONE) {
        return col.take(rows);
    }
    let safe: Vec<u32> = rows
        .iter()
        .map(|&r| if r == NONE { 0 } else { r })
        .collect();
    let mut out = if col.is_empty() {
        Column::nulls(col.data_type(), rows.len())
    } else {
        col.take(&safe)
    };
    let mut present = Bitmap::new(rows.len(), true);
    for (i, &r) in rows.iter().enumerate() {
        if r == NONE {
            present.set(i, false);
        }
    }
    let validity = match &out.validity {
        Some(v) => v.and(&present),
        None => present,
    };
    out = Column::with_validity(out.data, Some(validity));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DataType, Value};

    #[test]
    fn gathers_with_nulls_for_no_row() {
        let col =
            Column::from_values(DataType::Utf8, &["a".into(), Value::Null, "c".into()]).unwrap();
        let out = take_or_null(&col, &[2, NONE, 1, 0]);
        let values: Vec<Value> = (0..4).map(|i| out.value(i)).collect();
        assert_eq!(values, ["c".into(), Value::Null, Value::Null, "a".into()]);
        let all = take_or_null(&col, &[0, 2]);
        assert_eq!(all.null_count(), 0);
        let empty = Column::from_i64(vec![]);
        assert_eq!(take_or_null(&empty, &[NONE]).null_count(), 1);
    }
}
