//! Arithmetic (`+`, `-`, `*`, `/`, `%`) and negation: the result type of the operands, then
//! checked BIGINT loops (an overflow on a non-NULL row is an error), DOUBLE loops, and the
//! DECIMAL ([`super::decimal`]) and DATE ([`super::date`]) cases. Division by zero gives NULL.

use super::date::{date_arithmetic, temporal_arithmetic_type};
use super::decimal::decimal_arithmetic;
use super::side::{arith_sides, f64_side, i64_side, Side};
use super::val::{and_validity, lift, null_of, owned, to_scalar, type_name, Val};
use crate::bitmap::Bitmap;
use crate::column::{Column, ColumnData};
use crate::error::{Error, Result};
use crate::expr::BinaryOp;
use crate::types::DataType;
use crate::value::Value;

/// BIGINT `+` (`add`) or `-` over every row in one branch-free pass: wrapping results, with
/// the rows' overflow bits ORed together. `None` when any row overflowed (NULL rows
/// included: the caller then looks for a non-NULL one).
fn add_sub_i64(add: bool, n: usize, l: &Side<i64>, r: &Side<i64>) -> Option<Vec<i64>> {
    // Overflow iff the result's sign differs from both addends' (for `a - b`: from `a`'s and
    // from `-b`'s); the sign bit of the flag is then set.
    #[inline(always)]
    fn step(add: bool, a: i64, b: i64) -> (i64, i64) {
        if add {
            let r = a.wrapping_add(b);
            (r, (a ^ r) & (b ^ r))
        } else {
            let r = a.wrapping_sub(b);
            (r, (a ^ b) & (a ^ r))
        }
    }
    fn run(n: usize, f: impl Fn(usize) -> (i64, i64)) -> (Vec<i64>, i64) {
        let mut out = vec![0i64; n];
        let mut flags = 0i64;
        for (i, o) in out.iter_mut().enumerate() {
            let (r, f) = f(i);
            *o = r;
            flags |= f;
        }
        (out, flags)
    }
    let short = |c: &[i64]| c.len() < n;
    let (out, flags) = match (l, r) {
        (Side::Col(a), _) if short(a) => return None,
        (_, Side::Col(b)) if short(b) => return None,
        (Side::Col(a), Side::Col(b)) => run(n, |i| step(add, a[i], b[i])),
        (Side::Col(a), Side::Scalar(s)) => run(n, |i| step(add, a[i], *s)),
        (Side::Scalar(s), Side::Col(b)) => run(n, |i| step(add, *s, b[i])),
        (Side::Scalar(a), Side::Scalar(b)) => {
            let (r, f) = step(add, *a, *b);
            (vec![r; n], f)
        }
    };
    (flags >= 0).then_some(out)
}

/// Float operations; a zero divisor's row is NULL (the caller clears its validity).
fn f64_op(op: BinaryOp) -> fn(f64, f64) -> Option<f64> {
    match op {
        BinaryOp::Add => |a, b| Some(a + b),
        BinaryOp::Sub => |a, b| Some(a - b),
        BinaryOp::Mul => |a, b| Some(a * b),
        BinaryOp::Div => |a, b| Some(if b == 0.0 { 0.0 } else { a / b }),
        _ => |a, b| Some(if b == 0.0 { 0.0 } else { a % b }),
    }
}

/// `l op r` for an arithmetic operator over `n` rows: DATE arithmetic when an operand is
/// temporal, exact DECIMAL when one is a decimal, else BIGINT or DOUBLE by the operand types.
pub(super) fn arithmetic<'a>(op: BinaryOp, l: Val<'a>, r: Val<'a>, n: usize) -> Result<Val<'a>> {
    let (lt, rt) = (l.dt(), r.dt());
    if let Some(out) = temporal_arithmetic_type(op, lt, rt)? {
        return date_arithmetic(op, l, r, n, out);
    }
    for t in [lt, rt].into_iter().flatten() {
        if !t.is_numeric() {
            return Err(Error::Type(format!(
                "operator {} needs numeric operands, got {} and {}",
                op.symbol(),
                type_name(lt),
                type_name(rt)
            )));
        }
    }
    let result_type = match (lt, rt) {
        (Some(a), Some(b)) => op.arithmetic_result(a, b),
        (Some(DataType::Decimal { .. }), None) | (None, Some(DataType::Decimal { .. }))
            if op == BinaryOp::Div =>
        {
            Some(DataType::Float64)
        }
        (a, b) => a.or(b),
    };
    if l.is_null_scalar() || r.is_null_scalar() {
        return Ok(null_of(result_type));
    }
    if l.is_scalar() && r.is_scalar() {
        return Ok(to_scalar(arithmetic(op, lift(l), lift(r), 1)?));
    }
    let mut validity = and_validity(l.validity(), r.validity());
    let divides = matches!(op, BinaryOp::Div | BinaryOp::Mod);
    if divides {
        // Division by zero gives NULL (as SQLite and MySQL do).
        let zero = |i: usize| match &r {
            Val::Col(c) => match &c.data {
                ColumnData::Int64(v) => v[i] == 0,
                ColumnData::Float64(v) => v[i] == 0.0,
                ColumnData::Decimal { values, .. } => values[i] == 0,
                _ => false,
            },
            Val::Scalar(v, _) => v.as_f64() == Some(0.0),
        };
        if (0..n).any(zero) {
            let mut v = validity.unwrap_or_else(|| Bitmap::new(n, true));
            for i in (0..n).filter(|&i| zero(i)) {
                v.set(i, false);
            }
            validity = Some(v);
        }
    }
    let data = if let Some(out @ DataType::Decimal { .. }) = result_type {
        decimal_arithmetic(op, &l, &r, n, out, validity.as_ref())?
    } else if result_type == Some(DataType::Int64) {
        let (ls, rs) = (i64_side(&l), i64_side(&r));
        let v = validity.as_ref();
        let res = match op {
            BinaryOp::Add | BinaryOp::Sub => match add_sub_i64(op == BinaryOp::Add, n, &ls, &rs) {
                Some(v) => Ok(v),
                // Some row overflowed: find the first one that is not NULL, if any.
                None if op == BinaryOp::Add => arith_sides(n, &ls, &rs, v, i64::checked_add),
                None => arith_sides(n, &ls, &rs, v, i64::checked_sub),
            },
            BinaryOp::Mul => arith_sides(n, &ls, &rs, v, i64::checked_mul),
            BinaryOp::Div => arith_sides(n, &ls, &rs, v, |a, b| {
                if b == 0 {
                    Some(0)
                } else {
                    a.checked_div(b)
                }
            }),
            // i64::MIN % -1 is 0 mathematically.
            _ => arith_sides(n, &ls, &rs, v, |a, b| {
                Some(if b == 0 {
                    0
                } else {
                    a.checked_rem(b).unwrap_or(0)
                })
            }),
        };
        match res {
            Ok(v) => ColumnData::Int64(v),
            Err(i) => {
                let (a, b) = (ls.at(i), rs.at(i));
                return Err(Error::Overflow(format!(
                    "BIGINT overflow in {a} {} {b}",
                    op.symbol()
                )));
            }
        }
    } else {
        let (ls, rs) = (f64_side(&l), f64_side(&r));
        match arith_sides(n, &ls, &rs, validity.as_ref(), f64_op(op)) {
            Ok(v) => ColumnData::Float64(v),
            Err(_) => return Err(Error::Internal("float arithmetic failed".into())),
        }
    };
    Ok(owned(Column::with_validity(data, validity)))
}

/// Unary minus of a numeric column (an untyped or numeric NULL scalar stays NULL; other
/// scalars are lifted to a one-row column by the caller). BIGINT overflow is an error.
pub(super) fn negate<'a>(v: Val<'a>) -> Result<Val<'a>> {
    match v {
        Val::Scalar(Value::Null, dt) => {
            if let Some(t) = dt.filter(|t| !t.is_numeric()) {
                return Err(Error::Type(format!("cannot negate {t}")));
            }
            Ok(null_of(dt))
        }
        Val::Scalar(..) => Err(Error::Internal("negate of a scalar".into())),
        Val::Col(c) => {
            let validity = c.validity.clone();
            let data = match &c.data {
                ColumnData::Int64(v) => {
                    let mut out = Vec::with_capacity(v.len());
                    for (i, &x) in v.iter().enumerate() {
                        match x.checked_neg() {
                            Some(y) => out.push(y),
                            None if c.is_valid(i) => {
                                return Err(Error::Overflow(format!("BIGINT overflow in -({x})")))
                            }
                            None => out.push(0),
                        }
                    }
                    ColumnData::Int64(out)
                }
                ColumnData::Float64(v) => ColumnData::Float64(v.iter().map(|x| -x).collect()),
                ColumnData::Decimal {
                    values,
                    precision,
                    scale,
                } => ColumnData::Decimal {
                    // i128::MIN never occurs: 38 digits stay far below it.
                    values: values.iter().map(|x| x.saturating_neg()).collect(),
                    precision: *precision,
                    scale: *scale,
                },
                _ => {
                    return Err(Error::Type(format!("cannot negate {}", c.data_type())));
                }
            };
            Ok(owned(Column::with_validity(data, validity)))
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::eval::testing::{batch, vals};
    use crate::eval::{evaluate, evaluate_scalar};
    use crate::{Batch, BinaryOp, DataType, Error, Expr, Value};

    #[test]
    fn arithmetic_and_nulls() {
        let e = Expr::col(0).binary(BinaryOp::Add, Expr::lit(10));
        assert_eq!(vals(&e), vec![11.into(), 12.into(), Value::Null, 14.into()]);
        let e = Expr::col(0).binary(BinaryOp::Mul, Expr::col(1));
        assert_eq!(
            vals(&e),
            vec![1.5.into(), Value::Null, Value::Null, (-4.0).into()]
        );
        let e = Expr::lit(7).binary(BinaryOp::Mod, Expr::Param(0));
        assert_eq!(vals(&e), vec![1.into(); 4]);
    }

    #[test]
    fn arithmetic_errors() {
        let b = batch();
        let e = Expr::col(0).binary(BinaryOp::Add, Expr::lit(i64::MAX));
        assert!(matches!(evaluate(&e, &b, &[]), Err(Error::Overflow(_))));
        let e = Expr::lit(i64::MIN).binary(BinaryOp::Div, Expr::lit(-1));
        assert!(matches!(evaluate_scalar(&e, &[]), Err(Error::Overflow(_))));
        let e = Expr::Param(3);
        assert_eq!(evaluate(&e, &b, &[]), Err(Error::MissingParameter(4)));
        let e = Expr::col(2).binary(BinaryOp::Add, Expr::lit(1));
        assert!(matches!(evaluate(&e, &b, &[]), Err(Error::Type(_))));
        let e = Expr::col(2).eq(Expr::lit(1));
        assert!(matches!(evaluate(&e, &b, &[]), Err(Error::Type(_))));
        // Division by zero on a NULL row is fine.
        let e = Expr::lit(1).binary(
            BinaryOp::Div,
            Expr::col(0).binary(BinaryOp::Mul, Expr::lit(0)),
        );
        let b2 = Batch::from_rows(&[DataType::Int64], &[vec![Value::Null]]).unwrap();
        assert_eq!(evaluate(&e, &b2, &[]).unwrap().value(0), Value::Null);
    }

    #[test]
    fn division_by_zero_is_null() {
        // Column / scalar zero, scalar / scalar zero, column / column with zeros; int and float.
        let e = Expr::col(0).binary(BinaryOp::Div, Expr::lit(0));
        assert_eq!(vals(&e), vec![Value::Null; 4]);
        let e = Expr::col(1).binary(BinaryOp::Mod, Expr::lit(0.0));
        assert_eq!(vals(&e), vec![Value::Null; 4]);
        assert_eq!(
            evaluate_scalar(&Expr::lit(1).binary(BinaryOp::Div, Expr::lit(0)), &[]).unwrap(),
            Value::Null
        );
        let d = Expr::col(0).binary(BinaryOp::Sub, Expr::lit(2));
        let e = Expr::lit(10).binary(BinaryOp::Div, d.clone());
        assert_eq!(
            vals(&e),
            vec![(-10).into(), Value::Null, Value::Null, 5.into()]
        );
        let e = Expr::lit(10).binary(BinaryOp::Mod, d);
        assert_eq!(vals(&e), vec![0.into(), Value::Null, Value::Null, 0.into()]);
    }
}
