//! The ranking functions: ROW_NUMBER, RANK, DENSE_RANK, PERCENT_RANK, CUME_DIST and NTILE,
//! each one pass over the layout's partitions and peer groups (they ignore the frame).

use super::layout::Layout;
use crate::bitmap::Bitmap;
use crate::column::ColumnData;
use crate::{Column, Error, Result};

/// Each row's position in its partition, from 1.
pub(crate) fn row_number(layout: &Layout) -> Column {
    let mut out = vec![0i64; layout.rows()];
    for (ps, pe) in layout.partitions() {
        for (k, o) in out[ps..pe].iter_mut().enumerate() {
            *o = k as i64 + 1;
        }
    }
    Column::from_i64(out)
}

/// 1 plus the rows of its partition before each row's peer group.
pub(crate) fn rank(layout: &Layout) -> Column {
    let mut out = vec![0i64; layout.rows()];
    for (ps, pe) in layout.partitions() {
        for (i, o) in out.iter_mut().enumerate().take(pe).skip(ps) {
            let (gs, _) = layout.group_rows(layout.group(i));
            *o = (gs - ps) as i64 + 1;
        }
    }
    Column::from_i64(out)
}

/// Each row's peer group's position in its partition, from 1.
pub(crate) fn dense_rank(layout: &Layout) -> Column {
    let mut out = vec![0i64; layout.rows()];
    for (ps, pe) in layout.partitions() {
        let first = layout.group(ps);
        for (i, o) in out.iter_mut().enumerate().take(pe).skip(ps) {
            *o = (layout.group(i) - first) as i64 + 1;
        }
    }
    Column::from_i64(out)
}

/// `(rank - 1) / (partition rows - 1)`, 0 in a partition of one row.
pub(crate) fn percent_rank(layout: &Layout) -> Column {
    let mut out = vec![0f64; layout.rows()];
    for (ps, pe) in layout.partitions() {
        if pe - ps <= 1 {
            continue;
        }
        let denominator = (pe - ps - 1) as f64;
        for (i, o) in out.iter_mut().enumerate().take(pe).skip(ps) {
            let (gs, _) = layout.group_rows(layout.group(i));
            *o = (gs - ps) as f64 / denominator;
        }
    }
    Column::from_f64(out)
}

/// The rows of its partition up to the end of each row's peer group, over the partition's
/// rows.
pub(crate) fn cume_dist(layout: &Layout) -> Column {
    let mut out = vec![0f64; layout.rows()];
    for (ps, pe) in layout.partitions() {
        let total = (pe - ps) as f64;
        for (i, o) in out.iter_mut().enumerate().take(pe).skip(ps) {
            let (_, ge) = layout.group_rows(layout.group(i));
            *o = (ge - ps) as f64 / total;
        }
    }
    Column::from_f64(out)
}

/// Each row's bucket (from 1) of `buckets` (a BIGINT read at each partition's first row)
/// buckets as equal as they can be, the first ones a row larger when the rows do not divide
/// evenly; NULL for a partition whose count is NULL.
pub(crate) fn ntile(layout: &Layout, buckets: &Column) -> Result<Column> {
    let n = layout.rows();
    let counts = match &buckets.data {
        ColumnData::Int64(v) => v,
        _ => {
            return Err(Error::Type(format!(
                "NTILE needs a BIGINT argument, got {}",
                buckets.data_type()
            )))
        }
    };
    let mut out = vec![0i64; n];
    let mut valid: Option<Bitmap> = None;
    for (ps, pe) in layout.partitions() {
        if buckets.is_null(ps) {
            let v = valid.get_or_insert_with(|| Bitmap::new(n, true));
            (ps..pe).for_each(|i| v.set(i, false));
            continue;
        }
        let b = counts[ps];
        if b <= 0 {
            return Err(Error::Arithmetic(
                "argument of ntile must be greater than zero".into(),
            ));
        }
        let rows = (pe - ps) as i64;
        let (size, extra) = (rows / b, rows % b);
        // The first `extra` buckets hold `size + 1` rows, the others `size`.
        let big = extra * (size + 1);
        for (r, o) in out[ps..pe].iter_mut().enumerate() {
            let r = r as i64;
            *o = if r < big {
                r / (size + 1) + 1
            } else {
                extra + (r - big) / size + 1
            };
        }
    }
    Ok(Column::with_validity(ColumnData::Int64(out), valid))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Value;

    fn ints(c: &Column) -> Vec<Value> {
        (0..c.len()).map(|i| c.value(i)).collect()
    }

    #[test]
    fn ranks_over_peers() {
        // Partitions [a a b] [c]: keys 1 1 2 | 5.
        let p = Column::from_strs(&["x", "x", "x", "y"]);
        let o = Column::from_i64(vec![1, 1, 2, 5]);
        let l = Layout::new(&[&p], &[&o], 4);
        let v = |c: Column| ints(&c);
        assert_eq!(v(row_number(&l)), [1.into(), 2.into(), 3.into(), 1.into()]);
        assert_eq!(v(rank(&l)), [1.into(), 1.into(), 3.into(), 1.into()]);
        assert_eq!(v(dense_rank(&l)), [1.into(), 1.into(), 2.into(), 1.into()]);
        assert_eq!(
            v(percent_rank(&l)),
            [0.0.into(), 0.0.into(), 1.0.into(), 0.0.into()]
        );
        let third = 2.0 / 3.0;
        assert_eq!(
            v(cume_dist(&l)),
            [third.into(), third.into(), 1.0.into(), 1.0.into()]
        );
    }

    #[test]
    fn ntile_spreads_the_remainder_over_the_first_buckets() {
        let l = Layout::new(&[], &[], 7);
        let three = Column::from_i64(vec![3; 7]);
        let got: Vec<Value> = ints(&ntile(&l, &three).unwrap());
        let want: Vec<Value> = [1, 1, 1, 2, 2, 3, 3].map(Value::Int).to_vec();
        assert_eq!(got, want);
        // More buckets than rows: one row each.
        let ten = Column::from_i64(vec![10; 7]);
        let got: Vec<Value> = ints(&ntile(&l, &ten).unwrap());
        assert_eq!(got, (1..=7).map(Value::Int).collect::<Vec<_>>());
        let zero = Column::from_i64(vec![0; 7]);
        assert!(ntile(&l, &zero).is_err());
        let null = Column::nulls(crate::DataType::Int64, 7);
        assert_eq!(ntile(&l, &null).unwrap().null_count(), 7);
    }
}
