//! Comparisons (`=`, `<>`, `<`, `<=`, `>`, `>=`) of two operands of comparable types: one
//! typed loop per type pair, integers and decimals compared exactly, strings by their bytes,
//! DATE against TIMESTAMP at midnight. NULL on either side gives NULL.

use super::side::{
    bool_side, date_side, exact_scale, f64_side, i128_side, i64_side, str_at, str_side, ts_side,
    Side, StrSide,
};
use super::val::{and_validity, null_of, owned, to_scalar, Val};
use crate::column::{Column, ColumnData};
use crate::error::{Error, Result};
use crate::expr::BinaryOp;
use crate::types::DataType;

/// `f` over the rows of two typed sides (`n` rows when both are scalars).
fn cmp_sides_f<T: Copy, F: Fn(T, T) -> bool>(
    n: usize,
    l: &Side<T>,
    r: &Side<T>,
    f: F,
) -> Vec<bool> {
    match (l, r) {
        (Side::Col(a), Side::Col(b)) => a.iter().zip(b.iter()).map(|(&x, &y)| f(x, y)).collect(),
        (Side::Col(a), Side::Scalar(s)) => a.iter().map(|&x| f(x, *s)).collect(),
        (Side::Scalar(s), Side::Col(b)) => b.iter().map(|&y| f(*s, y)).collect(),
        (Side::Scalar(a), Side::Scalar(b)) => vec![f(*a, *b); n],
    }
}

/// Comparison `op` over two typed sides.
fn cmp_sides<T: Copy + PartialOrd>(op: BinaryOp, n: usize, l: &Side<T>, r: &Side<T>) -> Vec<bool> {
    match op {
        BinaryOp::Eq => cmp_sides_f(n, l, r, |x, y| x == y),
        BinaryOp::NotEq => cmp_sides_f(n, l, r, |x, y| x != y),
        BinaryOp::Lt => cmp_sides_f(n, l, r, |x, y| x < y),
        BinaryOp::LtEq => cmp_sides_f(n, l, r, |x, y| x <= y),
        BinaryOp::Gt => cmp_sides_f(n, l, r, |x, y| x > y),
        _ => cmp_sides_f(n, l, r, |x, y| x >= y),
    }
}

/// `f` over the rows of two string sides, compared as bytes.
fn cmp_str_f<F: Fn(&[u8], &[u8]) -> bool>(n: usize, l: &StrSide, r: &StrSide, f: F) -> Vec<bool> {
    match (l, r) {
        (
            StrSide::Col { offsets, bytes },
            StrSide::Col {
                offsets: o2,
                bytes: b2,
            },
        ) => (0..n)
            .map(|i| f(str_at(offsets, bytes, i), str_at(o2, b2, i)))
            .collect(),
        (StrSide::Col { offsets, bytes }, StrSide::Scalar(s)) => offsets
            .windows(2)
            .map(|w| f(&bytes[w[0] as usize..w[1] as usize], s))
            .collect(),
        (StrSide::Scalar(s), StrSide::Col { offsets, bytes }) => offsets
            .windows(2)
            .map(|w| f(s, &bytes[w[0] as usize..w[1] as usize]))
            .collect(),
        (StrSide::Scalar(a), StrSide::Scalar(b)) => vec![f(a, b); n],
    }
}

/// Comparison `op` over two string sides.
fn cmp_str(op: BinaryOp, n: usize, l: &StrSide, r: &StrSide) -> Vec<bool> {
    match op {
        BinaryOp::Eq => cmp_str_f(n, l, r, |x, y| x == y),
        BinaryOp::NotEq => cmp_str_f(n, l, r, |x, y| x != y),
        BinaryOp::Lt => cmp_str_f(n, l, r, |x, y| x < y),
        BinaryOp::LtEq => cmp_str_f(n, l, r, |x, y| x <= y),
        BinaryOp::Gt => cmp_str_f(n, l, r, |x, y| x > y),
        _ => cmp_str_f(n, l, r, |x, y| x >= y),
    }
}

/// Whether values of these types compare: the same type, two numbers or two temporals.
fn comparable(a: DataType, b: DataType) -> bool {
    a == b || (a.is_numeric() && b.is_numeric()) || (a.is_temporal() && b.is_temporal())
}

/// `l op r` for a comparison operator over `n` rows: NULL where either side is NULL; an
/// error when the types do not compare.
pub(super) fn compare<'a>(op: BinaryOp, l: &Val<'_>, r: &Val<'_>, n: usize) -> Result<Val<'a>> {
    let (lt, rt) = (l.dt(), r.dt());
    if let (Some(a), Some(b)) = (lt, rt) {
        if !comparable(a, b) {
            return Err(Error::Type(format!(
                "cannot compare {a} with {b} using {}",
                op.symbol()
            )));
        }
    }
    if l.is_null_scalar() || r.is_null_scalar() {
        return Ok(null_of(Some(DataType::Boolean)));
    }
    let (Some(lt), Some(rt)) = (lt, rt) else {
        return Ok(null_of(Some(DataType::Boolean)));
    };
    let len = if l.is_scalar() && r.is_scalar() { 1 } else { n };
    let values = match (lt, rt) {
        (DataType::Int64, DataType::Int64) => cmp_sides(op, len, &i64_side(l), &i64_side(r)),
        (DataType::Utf8, _) => cmp_str(op, len, &str_side(l), &str_side(r)),
        (DataType::Boolean, _) => cmp_sides(op, len, &bool_side(l), &bool_side(r)),
        (DataType::Date, DataType::Date) => cmp_sides(op, len, &date_side(l), &date_side(r)),
        (a, _) if a.is_temporal() => cmp_sides(op, len, &ts_side(l), &ts_side(r)),
        (a, b) => match exact_scale(a, b) {
            Some(scale) => match (i128_side(l, scale), i128_side(r, scale)) {
                (Ok(x), Ok(y)) => cmp_sides(op, len, &x, &y),
                // A value too large to rescale exactly: compare as floats.
                _ => cmp_sides(op, len, &f64_side(l), &f64_side(r)),
            },
            None => cmp_sides(op, len, &f64_side(l), &f64_side(r)),
        },
    };
    let validity = and_validity(l.validity(), r.validity());
    let col = Column::with_validity(ColumnData::Boolean(values), validity);
    if l.is_scalar() && r.is_scalar() {
        Ok(to_scalar(owned(col)))
    } else {
        Ok(owned(col))
    }
}

#[cfg(test)]
mod tests {
    use crate::eval::evaluate_predicate;
    use crate::eval::testing::{batch, dec, run, vals};
    use crate::{BinaryOp, Expr, Value};

    #[test]
    fn comparisons() {
        let b = batch();
        let e = Expr::col(0).binary(BinaryOp::Gt, Expr::lit(1.5));
        assert_eq!(
            evaluate_predicate(&e, &b, &[]).unwrap(),
            vec![false, true, false, true]
        );
        let e = Expr::col(2).binary(BinaryOp::Lt, Expr::lit("banana"));
        assert_eq!(
            vals(&e),
            vec![true.into(), false.into(), Value::Null, false.into()]
        );
    }

    #[test]
    fn between() {
        let e = Expr::Between {
            expr: Box::new(Expr::col(1)),
            low: Box::new(Expr::lit(0)),
            high: Box::new(Expr::lit(3)),
            negated: false,
        };
        assert_eq!(
            vals(&e),
            vec![true.into(), Value::Null, true.into(), false.into()]
        );
    }

    #[test]
    fn decimal_comparisons_across_scales_and_types() {
        let t = |e: Expr| run(&e).unwrap();
        assert_eq!(t(dec(150, 2).eq(dec(15, 1))), Value::Bool(true));
        assert_eq!(
            t(dec(150, 2).binary(BinaryOp::Lt, Expr::lit(2))),
            Value::Bool(true)
        );
        assert_eq!(
            t(dec(150, 2).binary(BinaryOp::Gt, Expr::lit(1.49))),
            Value::Bool(true)
        );
        assert_eq!(
            t(dec(-1, 2).binary(BinaryOp::Lt, dec(0, 0))),
            Value::Bool(true)
        );
    }
}
