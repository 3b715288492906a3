//! DECIMAL arithmetic: exact, in unscaled `i128` loops at the result's scale, every step
//! checked (an overflow is an error naming the operands).

use super::side::{arith_sides, i128_side, Side};
use super::val::Val;
use crate::bitmap::Bitmap;
use crate::column::ColumnData;
use crate::decimal;
use crate::error::{Error, Result};
use crate::expr::BinaryOp;
use crate::types::DataType;

/// Exact arithmetic where at least one operand is a DECIMAL: unscaled `i128` loops at the
/// result's scale, every step checked.
pub(super) fn decimal_arithmetic<'a>(
    op: BinaryOp,
    l: &Val<'a>,
    r: &Val<'a>,
    n: usize,
    out: DataType,
    validity: Option<&Bitmap>,
) -> Result<ColumnData> {
    let DataType::Decimal { precision, scale } = out else {
        return Err(Error::Internal(format!("decimal arithmetic giving {out}")));
    };
    let (lt, rt) = (l.dt().unwrap_or(out), r.dt().unwrap_or(out));
    // Multiplication keeps each side's scale (the result's is their sum); the other
    // operators first bring both sides to the result's scale.
    let (ls, rs) = if op == BinaryOp::Mul {
        (
            lt.decimal_scale().unwrap_or(0),
            rt.decimal_scale().unwrap_or(0),
        )
    } else {
        (scale, scale)
    };
    let overflow = || Error::Overflow(format!("DECIMAL overflow in {} {} {}", lt, op.symbol(), rt));
    let a = i128_side(l, ls).map_err(|_| overflow())?;
    let b = i128_side(r, rs).map_err(|_| overflow())?;
    let res = match op {
        BinaryOp::Add => arith_sides(n, &a, &b, validity, i128::checked_add),
        BinaryOp::Sub => arith_sides(n, &a, &b, validity, i128::checked_sub),
        // Factors that fit 64 bits multiply into 128 without overflow: one widening multiply
        // a row instead of a checked 128-bit one.
        BinaryOp::Mul if fits_i64(&a) && fits_i64(&b) => {
            arith_sides(n, &a, &b, validity, |x, y| {
                Some(i128::from(x as i64) * i128::from(y as i64))
            })
        }
        BinaryOp::Mul => arith_sides(n, &a, &b, validity, i128::checked_mul),
        _ => arith_sides(n, &a, &b, validity, |x, y| {
            Some(if y == 0 {
                0
            } else {
                x.checked_rem(y).unwrap_or(0)
            })
        }),
    };
    match res {
        Ok(values) => Ok(ColumnData::Decimal {
            values,
            precision,
            scale,
        }),
        Err(i) => Err(Error::Overflow(format!(
            "DECIMAL overflow in {} {} {}",
            decimal::format(a.at(i), ls),
            op.symbol(),
            decimal::format(b.at(i), rs)
        ))),
    }
}

/// Whether every value of `side` fits in an `i64`.
fn fits_i64(side: &Side<'_, i128>) -> bool {
    let fits = |x: i128| i64::try_from(x).is_ok();
    match side {
        Side::Col(v) => v.iter().all(|&x| fits(x)),
        Side::Scalar(x) => fits(*x),
    }
}

#[cfg(test)]
mod tests {
    use crate::eval::evaluate;
    use crate::eval::testing::{dec, run};
    use crate::{Batch, BinaryOp, Column, DataType, Error, Expr, Value};

    #[test]
    fn decimal_arithmetic_is_exact_and_rescales() {
        // 1.50 + 0.005 = 1.505 (scale 3), 1.50 * 0.2 = 0.300 (scale 3), 1.5 - 2 = -0.5.
        let add = dec(150, 2).binary(BinaryOp::Add, dec(5, 3));
        assert_eq!(run(&add).unwrap(), Value::Decimal(1505, 3));
        let mul = dec(150, 2).binary(BinaryOp::Mul, dec(2, 1));
        assert_eq!(run(&mul).unwrap(), Value::Decimal(300, 3));
        let sub = dec(15, 1).binary(BinaryOp::Sub, Expr::lit(2));
        assert_eq!(run(&sub).unwrap(), Value::Decimal(-5, 1));
        let rem = dec(75, 1).binary(BinaryOp::Mod, dec(25, 1));
        assert_eq!(run(&rem).unwrap(), Value::Decimal(0, 1));
        // Division gives a DOUBLE; by zero it is NULL.
        let div = dec(1000, 2).binary(BinaryOp::Div, Expr::lit(4));
        assert_eq!(run(&div).unwrap(), Value::Float(2.5));
        let div0 = dec(1000, 2).binary(BinaryOp::Div, dec(0, 1));
        assert_eq!(run(&div0).unwrap(), Value::Null);
        // Mixed with a DOUBLE the result is a DOUBLE.
        let f = dec(15, 1).binary(BinaryOp::Add, Expr::lit(0.25));
        assert_eq!(run(&f).unwrap(), Value::Float(1.75));
        // A column: 0.1 added ten times is exactly 1.0 (f64 gives 0.9999999999999999).
        let col =
            Column::from_values(DataType::decimal(10, 1), &vec![Value::Decimal(1, 1); 10]).unwrap();
        let b = Batch::try_new(vec![col]).unwrap();
        let sum = (0..9).fold(Expr::col(0), |acc, _| {
            acc.binary(BinaryOp::Add, Expr::col(0))
        });
        let out = evaluate(&sum, &b, &[]).unwrap();
        assert_eq!(out.value(0), Value::Decimal(10, 1));
    }

    /// Products of factors that fit 64 bits (the widening multiply) and of larger ones (the
    /// checked one) are both exact, and a product past 128 bits is still an overflow.
    #[test]
    fn decimal_products_are_exact_on_both_paths() {
        let col = |values: &[i128]| {
            let vals: Vec<Value> = values.iter().map(|&v| Value::Decimal(v, 0)).collect();
            Batch::try_new(vec![
                Column::from_values(DataType::decimal(38, 0), &vals).unwrap()
            ])
            .unwrap()
        };
        let times = |b: &Batch, k: i128| {
            let e = Expr::col(0).binary(BinaryOp::Mul, dec(k, 0));
            evaluate(&e, b, &[])
        };
        let small = col(&[i64::MAX as i128, i64::MIN as i128, -3, 0]);
        let out = times(&small, 4).unwrap();
        assert_eq!(out.value(0), Value::Decimal(i64::MAX as i128 * 4, 0));
        assert_eq!(out.value(1), Value::Decimal(i64::MIN as i128 * 4, 0));
        assert_eq!(out.value(2), Value::Decimal(-12, 0));
        let large = col(&[1i128 << 80, 7]);
        let out = times(&large, 3).unwrap();
        assert_eq!(out.value(0), Value::Decimal(3i128 << 80, 0));
        assert_eq!(out.value(1), Value::Decimal(21, 0));
        assert!(matches!(
            times(&large, 1i128 << 60),
            Err(Error::Overflow(_))
        ));
    }

    #[test]
    fn decimal_overflow_is_an_error() {
        let big = dec(10i128.pow(37), 0);
        let e = big.clone().binary(BinaryOp::Mul, Expr::lit(100));
        let err = run(&e).unwrap_err();
        assert!(matches!(err, Error::Overflow(_)), "{err:?}");
        assert!(err.to_string().contains("DECIMAL overflow"), "{err}");
        let e = dec(i128::MAX / 2, 0).binary(BinaryOp::Add, dec(i128::MAX / 2 + 2, 0));
        assert!(run(&e).is_err());
        // Rescaling an operand past i128 is an overflow too.
        let e = big.binary(BinaryOp::Add, dec(1, 5));
        assert!(run(&e).unwrap_err().to_string().contains("overflow"));
    }
}
