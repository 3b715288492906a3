//! `greatest` and `least`: per row, the largest or smallest non-NULL argument, compared in
//! the type the planner made all arguments meet at (NULL only when every argument is).

use super::catalogue::ScalarFunc;
use super::support::type_err;
use crate::column::{Column, ColumnBuilder, ColumnData};
use crate::error::Result;
use crate::types::DataType;
use std::cmp::Ordering;

/// Row `i` of `a` against row `i` of `b`, both valid and of one type.
fn cmp_at(a: &Column, b: &Column, i: usize) -> Ordering {
    match (&a.data, &b.data) {
        (ColumnData::Int64(x), ColumnData::Int64(y))
        | (ColumnData::Timestamp(x), ColumnData::Timestamp(y)) => x[i].cmp(&y[i]),
        (ColumnData::Float64(x), ColumnData::Float64(y)) => x[i].total_cmp(&y[i]),
        (ColumnData::Boolean(x), ColumnData::Boolean(y)) => x[i].cmp(&y[i]),
        (ColumnData::Utf8 { .. }, ColumnData::Utf8 { .. }) => a.str_at(i).cmp(b.str_at(i)),
        (ColumnData::Decimal { values: x, .. }, ColumnData::Decimal { values: y, .. }) => {
            x[i].cmp(&y[i])
        }
        (ColumnData::Date(x), ColumnData::Date(y)) => x[i].cmp(&y[i]),
        _ => a.value(i).sort_cmp(&b.value(i)),
    }
}

/// `greatest` or `least` of `args` (each of type `out`) over `n` rows.
pub(super) fn call(func: ScalarFunc, args: &[Column], n: usize, out: DataType) -> Result<Column> {
    if args.iter().any(|c| c.data_type() != out) {
        return Err(type_err(func, args));
    }
    let wanted = if func == ScalarFunc::Least {
        Ordering::Less
    } else {
        Ordering::Greater
    };
    let mut b = ColumnBuilder::new(out, n);
    for i in 0..n {
        let mut best: Option<&Column> = None;
        for c in args.iter().filter(|c| c.is_valid(i)) {
            if best.is_none_or(|best| cmp_at(c, best, i) == wanted) {
                best = Some(c);
            }
        }
        match best {
            Some(c) => b.push_from(c, i),
            None => b.push_null(),
        }
    }
    Ok(b.finish())
}
