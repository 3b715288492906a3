//! Test helpers shared by the unit tests of every expression family: a small batch with a
//! column of each basic type, and shorthands to evaluate over it or over no row at all.

use super::{evaluate, evaluate_scalar};
use crate::batch::Batch;
use crate::error::Result;
use crate::expr::Expr;
use crate::types::DataType;
use crate::value::Value;

/// Four rows of a BIGINT, a DOUBLE, a VARCHAR and a BOOLEAN column, with NULLs.
pub(super) fn batch() -> Batch {
    Batch::from_rows(
        &[
            DataType::Int64,
            DataType::Float64,
            DataType::Utf8,
            DataType::Boolean,
        ],
        &[
            vec![1.into(), 1.5.into(), "apple".into(), true.into()],
            vec![2.into(), Value::Null, "banana".into(), false.into()],
            vec![Value::Null, 3.0.into(), Value::Null, Value::Null],
            vec![4.into(), (-1.0).into(), "cherry".into(), true.into()],
        ],
    )
    .unwrap()
}

/// `e` over [`batch`] with parameter `$1 = 2`, as values.
pub(super) fn vals(e: &Expr) -> Vec<Value> {
    let b = batch();
    let c = evaluate(e, &b, &[Value::Int(2)]).unwrap();
    (0..c.len()).map(|i| c.value(i)).collect()
}

/// A DECIMAL literal of unscaled value `v` at scale `s`.
pub(super) fn dec(v: i128, s: u8) -> Expr {
    Expr::lit(Value::Decimal(v, s))
}

/// `e` evaluated with no row and no parameter.
pub(super) fn run(e: &Expr) -> Result<Value> {
    evaluate_scalar(e, &[])
}
