//! Vectorized expression evaluation: an [`Expr`] over a whole [`Batch`] at a time.
//!
//! Evaluation is recursive over the expression tree. Every intermediate result is either a
//! column (borrowed from the batch when the expression is a plain column reference) or a
//! scalar (literals, parameters and anything computed only from them). Binary operators
//! special-case column-versus-scalar operands so that comparing a column against a constant
//! never materializes a repeated column. Each operator matches on the column types once per
//! batch and then runs a tight typed loop over slices.
//!
//! SQL semantics: NULL propagates through arithmetic and comparisons, `AND`/`OR`/`NOT` use
//! three-valued logic, `IN` yields NULL when nothing matched and the value or a candidate is
//! NULL, and errors (overflow, division by zero, bad casts) are raised only for rows that are
//! not NULL.
//!
//! This file holds the entry points ([`evaluate`], [`evaluate_borrowed`],
//! [`evaluate_predicate`], [`evaluate_scalar`]) and the recursive dispatcher over the
//! expression tree; each expression family is a file below it, and none of them imports this
//! one (CASE gets the entry points it recurses through as arguments):
//!
//! - `val`: the intermediate result `Val` (a column or a scalar) and its helpers;
//! - `side`: operands as typed slices or scalars, for the binary kernels;
//! - `compare`, `logic` (AND, OR, NOT), `in_list`, `like`: comparisons and predicates;
//! - `arith` (BIGINT and DOUBLE, negation), `decimal`, `date`: arithmetic;
//! - `cast`, `case` (CASE and NULLIF), `function` (calls of [`crate::functions`]).

mod arith;
mod case;
mod cast;
mod compare;
mod date;
mod decimal;
mod function;
mod in_list;
mod like;
mod logic;
mod side;
#[cfg(test)]
mod testing;
mod val;

pub(crate) use cast::cast_column;
pub use date::temporal_arithmetic_type;
pub(crate) use val::broadcast;

use crate::batch::Batch;
use crate::column::Column;
use crate::error::{Error, Result};
use crate::expr::{BinaryOp, Expr};
use crate::functions::ScalarFunc;
use crate::types::DataType;
use crate::value::Value;
use arith::{arithmetic, negate};
use case::{case, nullif};
use cast::cast;
use compare::compare;
use in_list::in_list;
use like::like;
use logic::{logic, not};
use std::borrow::Cow;
use val::{column_to_mask, lift, owned, scalar, to_scalar, Val};

/// Evaluates `expr` over every row of `batch`, producing a column of `batch.num_rows()` rows.
///
/// A bare untyped `NULL` literal evaluates to a `BIGINT` column of NULLs; wrap it in a
/// `CAST` to choose another type.
pub fn evaluate(expr: &Expr, batch: &Batch, params: &[Value]) -> Result<Column> {
    let n = batch.num_rows();
    match eval(expr, batch, params)? {
        Val::Col(c) => Ok(c.into_owned()),
        Val::Scalar(v, dt) => Ok(broadcast(&v, dt.unwrap_or(DataType::Int64), n)),
    }
}

/// Evaluates `expr` over `batch` like [`evaluate`], but borrows the batch's column when the
/// expression is a plain column reference, instead of copying it.
///
/// ```
/// use std::borrow::Cow;
/// use weir_operators::{eval::evaluate_borrowed, Batch, Column, Expr};
/// let batch = Batch::try_new(vec![Column::from_i64(vec![1, 2, 3])]).unwrap();
/// let col = evaluate_borrowed(&Expr::col(0), &batch, &[]).unwrap();
/// assert!(matches!(col, Cow::Borrowed(_)));
/// ```
pub fn evaluate_borrowed<'a>(
    expr: &Expr,
    batch: &'a Batch,
    params: &[Value],
) -> Result<Cow<'a, Column>> {
    let n = batch.num_rows();
    match eval(expr, batch, params)? {
        Val::Col(c) => Ok(c),
        Val::Scalar(v, dt) => Ok(Cow::Owned(broadcast(&v, dt.unwrap_or(DataType::Int64), n))),
    }
}

/// Evaluates a boolean predicate; the mask is `true` only where the predicate is TRUE
/// (FALSE and NULL rows are dropped, as in SQL WHERE).
pub fn evaluate_predicate(expr: &Expr, batch: &Batch, params: &[Value]) -> Result<Vec<bool>> {
    let n = batch.num_rows();
    match eval(expr, batch, params)? {
        Val::Scalar(Value::Bool(b), _) => Ok(vec![b; n]),
        Val::Scalar(Value::Null, _) => Ok(vec![false; n]),
        Val::Scalar(v, _) => Err(Error::Type(format!(
            "predicate must be BOOLEAN, got {}",
            v.data_type().map_or("NULL".to_string(), |t| t.to_string())
        ))),
        Val::Col(c) => column_to_mask(c),
    }
}

/// Evaluates an expression that reads no columns (literals, parameters, arithmetic on them).
pub fn evaluate_scalar(expr: &Expr, params: &[Value]) -> Result<Value> {
    let one = Batch::with_row_count(Vec::new(), 1)?;
    match eval(expr, &one, params)? {
        Val::Scalar(v, _) => Ok(v),
        Val::Col(c) => Ok(c.value(0)),
    }
}

/// Evaluates `expr` over `batch` recursively: the operands first, then the expression's
/// family (a column reference borrows the batch's column). Each level takes a few KiB of
/// stack, so a deep expression (the planner allows 1,000 levels, a decoded one
/// [`MAX_DECODE_DEPTH`](crate::decode::MAX_DECODE_DEPTH)) goes on on a new stack segment
/// when the thread's runs short, instead of overflowing it.
fn eval<'a>(expr: &Expr, batch: &'a Batch, params: &[Value]) -> Result<Val<'a>> {
    stacker::maybe_grow(
        crate::decode::STACK_RED_ZONE,
        crate::decode::STACK_SEGMENT,
        || eval_node(expr, batch, params),
    )
}

/// One level of [`eval`].
fn eval_node<'a>(expr: &Expr, batch: &'a Batch, params: &[Value]) -> Result<Val<'a>> {
    let n = batch.num_rows();
    match expr {
        Expr::Column(i) => {
            if *i >= batch.num_columns() {
                return Err(Error::Internal(format!(
                    "column #{i} out of range: input has {} columns",
                    batch.num_columns()
                )));
            }
            Ok(Val::Col(Cow::Borrowed(batch.column(*i))))
        }
        Expr::Literal(v) => Ok(scalar(v.clone())),
        Expr::Param(i) => params
            .get(*i)
            .map(|v| scalar(v.clone()))
            .ok_or(Error::MissingParameter(i + 1)),
        Expr::OuterColumn(i) => Err(Error::Internal(format!(
            "outer column #{i} reached execution (a correlated subquery was not decorrelated)"
        ))),
        Expr::Binary { op, left, right } => {
            let l = eval(left, batch, params)?;
            let r = eval(right, batch, params)?;
            binary(*op, l, r, n)
        }
        Expr::Not(e) => {
            let v = eval(e, batch, params)?;
            not(v)
        }
        Expr::Negate(e) => {
            let v = eval(e, batch, params)?;
            if v.is_scalar() {
                return Ok(to_scalar(negate(lift(v))?));
            }
            negate(v)
        }
        Expr::IsNull { expr, negated } => {
            let v = eval(expr, batch, params)?;
            Ok(match v {
                Val::Scalar(v, _) => scalar(Value::Bool(v.is_null() != *negated)),
                Val::Col(c) => {
                    let values = match &c.validity {
                        None => vec![*negated; n],
                        Some(b) => (0..n).map(|i| b.get(i) == *negated).collect(),
                    };
                    owned(Column::from_bools(values))
                }
            })
        }
        Expr::InList {
            expr,
            list,
            negated,
        } => {
            let x = eval(expr, batch, params)?;
            let items = list
                .iter()
                .map(|e| eval(e, batch, params))
                .collect::<Result<Vec<_>>>()?;
            let res = in_list(x, &items, n)?;
            if *negated {
                not(res)
            } else {
                Ok(res)
            }
        }
        Expr::Between {
            expr,
            low,
            high,
            negated,
        } => {
            let x = eval(expr, batch, params)?;
            let lo = eval(low, batch, params)?;
            let hi = eval(high, batch, params)?;
            let ge = compare(BinaryOp::GtEq, &x, &lo, n)?;
            let le = compare(BinaryOp::LtEq, &x, &hi, n)?;
            let res = logic(true, ge, le, n)?;
            if *negated {
                not(res)
            } else {
                Ok(res)
            }
        }
        Expr::Like {
            expr,
            pattern,
            negated,
            escape,
        } => {
            let x = eval(expr, batch, params)?;
            let p = eval(pattern, batch, params)?;
            let res = like(x, p, *escape, n)?;
            if *negated {
                not(res)
            } else {
                Ok(res)
            }
        }
        Expr::Cast { expr, to } => {
            let v = eval(expr, batch, params)?;
            cast(v, *to)
        }
        Expr::Case {
            operand,
            branches,
            else_result,
        } => case(
            operand.as_deref(),
            branches,
            else_result.as_deref(),
            batch,
            params,
            evaluate_predicate,
            evaluate,
        ),
        Expr::Function {
            func: ScalarFunc::NullIf,
            args,
        } => {
            let [a, b] = args.as_slice() else {
                return Err(Error::Internal("nullif takes two arguments".into()));
            };
            let a = eval(a, batch, params)?;
            let b = eval(b, batch, params)?;
            nullif(a, b, n)
        }
        Expr::Function { func, args } => {
            let vals = args
                .iter()
                .map(|e| eval(e, batch, params))
                .collect::<Result<Vec<_>>>()?;
            function::call(*func, vals, n)
        }
    }
}

/// A binary operator over evaluated operands: logic, comparison or arithmetic.
fn binary<'a>(op: BinaryOp, l: Val<'a>, r: Val<'a>, n: usize) -> Result<Val<'a>> {
    match op {
        BinaryOp::And | BinaryOp::Or => logic(op == BinaryOp::And, l, r, n),
        op if op.is_comparison() => compare(op, &l, &r, n),
        op => arithmetic(op, l, r, n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::testing::{batch, vals};

    #[test]
    fn evaluate_borrowed_borrows_column_references_and_computes_the_rest() {
        let batch = Batch::try_new(vec![Column::from_i64(vec![1, 2, 3])]).unwrap();
        let col = evaluate_borrowed(&Expr::col(0), &batch, &[]).unwrap();
        assert!(matches!(&col, Cow::Borrowed(c) if std::ptr::eq(*c, batch.column(0))));
        let doubled = Expr::col(0).binary(BinaryOp::Mul, Expr::lit(2));
        let col = evaluate_borrowed(&doubled, &batch, &[]).unwrap();
        assert!(matches!(col, Cow::Owned(_)));
        assert_eq!(col.as_i64().unwrap(), &[2, 4, 6]);
        let lit = evaluate_borrowed(&Expr::lit(7), &batch, &[]).unwrap();
        assert_eq!(lit.len(), 3);
        assert!(evaluate_borrowed(&Expr::col(1), &batch, &[]).is_err());
    }

    #[test]
    fn scalars() {
        let e = Expr::Param(0).binary(BinaryOp::Add, Expr::lit(1.5));
        assert_eq!(
            evaluate_scalar(&e, &[Value::Int(1)]).unwrap(),
            Value::Float(2.5)
        );
        let e = Expr::Negate(Box::new(Expr::Param(0)));
        assert_eq!(
            evaluate_scalar(&e, &[Value::Int(1)]).unwrap(),
            Value::Int(-1)
        );
        assert!(matches!(
            evaluate_scalar(&Expr::col(0), &[]),
            Err(Error::Internal(_))
        ));
        let b = batch();
        let col = evaluate(&Expr::lit("x"), &b, &[]).unwrap();
        assert_eq!(col.len(), 4);
        assert_eq!(col.value(3), Value::from("x"));
    }

    #[test]
    fn is_not_null() {
        let e = Expr::IsNull {
            expr: Box::new(Expr::col(1)),
            negated: true,
        };
        assert_eq!(
            vals(&e),
            vec![true.into(), false.into(), true.into(), true.into()]
        );
    }
}
