//! Vectorized expression evaluation: an [`Expr`] over a whole [`Batch`] at a time.

use crate::batch::Batch;
use crate::column::Column;
use crate::error::Result;
use crate::expr::Expr;
use crate::value::Value;

/// Evaluates `expr` over every row of `batch`, producing a column of `batch.num_rows()` rows.
pub fn evaluate(expr: &Expr, batch: &Batch, params: &[Value]) -> Result<Column> {
    let _ = (expr, batch, params);
    unimplemented!("evaluate")
}

/// Evaluates a boolean predicate; the mask is `true` only where the predicate is TRUE
/// (FALSE and NULL rows are dropped, as in SQL WHERE).
pub fn evaluate_predicate(expr: &Expr, batch: &Batch, params: &[Value]) -> Result<Vec<bool>> {
    let _ = (expr, batch, params);
    unimplemented!("evaluate_predicate")
}

/// Evaluates an expression that reads no columns (literals, parameters, arithmetic on them).
pub fn evaluate_scalar(expr: &Expr, params: &[Value]) -> Result<Value> {
    let _ = (expr, params);
    unimplemented!("evaluate_scalar")
}
