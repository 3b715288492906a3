//! `greatest` and `least`: per row, the largest or smallest non-NULL argument, compared in
//! the type the planner made all arguments meet at (NULL only when every argument is).

use super::catalogue::ScalarFunc;
use super::support::type_err;
use crate::column::{Column, ColumnBuilder};
use crate::error::Result;
use crate::types::DataType;
use std::cmp::Ordering;

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
            if best.is_none_or(|best| c.cmp_valid(i, best, i) == wanted) {
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
