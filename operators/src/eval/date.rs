//! Date arithmetic: which operand types it takes ([`temporal_arithmetic_type`], also the
//! planner's check), `DATE ± integer days` and `DATE - DATE`. Intervals are functions
//! ([`crate::functions`]), not operators.

use super::side::{arith_sides, date_side, i64_side};
use super::val::{and_validity, lift, null_of, owned, to_scalar, type_name, Val};
use crate::column::{Column, ColumnData};
use crate::error::{Error, Result};
use crate::expr::BinaryOp;
use crate::types::DataType;

/// The result type of date arithmetic, or an error naming the operands; `None` when
/// neither operand is a DATE or TIMESTAMP.
pub fn temporal_arithmetic_type(
    op: BinaryOp,
    lt: Option<DataType>,
    rt: Option<DataType>,
) -> Result<Option<DataType>> {
    use DataType as T;
    if !lt.is_some_and(DataType::is_temporal) && !rt.is_some_and(DataType::is_temporal) {
        return Ok(None);
    }
    let int = |t: Option<DataType>| t.is_none_or(|t| t == T::Int64);
    let out = match (op, lt, rt) {
        (BinaryOp::Add | BinaryOp::Sub, Some(T::Date), r) if int(r) => Some(T::Date),
        (BinaryOp::Add, l, Some(T::Date)) if int(l) => Some(T::Date),
        (BinaryOp::Sub, Some(T::Date), Some(T::Date)) => Some(T::Int64),
        _ => None,
    };
    out.map(Some).ok_or_else(|| {
        Error::Type(format!(
            "operator {} does not take {} and {} (add or subtract an INTERVAL, or days to a DATE)",
            op.symbol(),
            type_name(lt),
            type_name(rt)
        ))
    })
}

/// `date ± integer days` and `date - date`.
pub(super) fn date_arithmetic<'a>(
    op: BinaryOp,
    l: Val<'a>,
    r: Val<'a>,
    n: usize,
    out: DataType,
) -> Result<Val<'a>> {
    if l.is_null_scalar() || r.is_null_scalar() {
        return Ok(null_of(Some(out)));
    }
    if l.is_scalar() && r.is_scalar() {
        return Ok(to_scalar(date_arithmetic(op, lift(l), lift(r), 1, out)?));
    }
    let validity = and_validity(l.validity(), r.validity());
    let v = validity.as_ref();
    let overflow = || Error::Overflow("DATE out of range".into());
    let data = if out == DataType::Int64 {
        let (a, b) = (date_side(&l), date_side(&r));
        let res = arith_sides(n, &a, &b, v, |x, y| x.checked_sub(y));
        ColumnData::Int64(
            res.map_err(|_| overflow())?
                .into_iter()
                .map(i64::from)
                .collect(),
        )
    } else {
        let (d, k) = if l.dt() == Some(DataType::Date) {
            (date_side(&l), i64_side(&r))
        } else {
            (date_side(&r), i64_side(&l))
        };
        let sub = op == BinaryOp::Sub;
        let days: Vec<i32> = (0..n)
            .map(|i| {
                let k = if sub {
                    k.at(i).checked_neg()
                } else {
                    Some(k.at(i))
                };
                let x = k
                    .and_then(|k| i32::try_from(k).ok())
                    .and_then(|k| d.at(i).checked_add(k));
                match x {
                    Some(x) => Ok(x),
                    None if v.is_none_or(|v| v.get(i)) => Err(overflow()),
                    None => Ok(0),
                }
            })
            .collect::<Result<_>>()?;
        ColumnData::Date(days)
    };
    Ok(owned(Column::with_validity(data, validity)))
}

#[cfg(test)]
mod tests {
    use crate::eval::testing::run;
    use crate::{BinaryOp, Expr, ScalarFunc, Value};

    #[test]
    fn date_arithmetic_and_comparisons() {
        let d = |s: &str| Expr::lit(Value::Date(crate::temporal::parse_date(s).unwrap()));
        let date = |s: &str| Value::Date(crate::temporal::parse_date(s).unwrap());
        let e = d("1994-01-01").binary(BinaryOp::Add, Expr::lit(31));
        assert_eq!(run(&e).unwrap(), date("1994-02-01"));
        let e = Expr::lit(1).binary(BinaryOp::Add, d("2024-02-28"));
        assert_eq!(run(&e).unwrap(), date("2024-02-29"), "leap day");
        let e = d("1995-01-01").binary(BinaryOp::Sub, d("1994-01-01"));
        assert_eq!(run(&e).unwrap(), Value::Int(365));
        let e = d("1994-01-01").binary(BinaryOp::Mul, Expr::lit(2));
        assert!(run(&e).is_err());
        let e = d("1994-01-01").binary(BinaryOp::Lt, d("1994-01-02"));
        assert_eq!(run(&e).unwrap(), Value::Bool(true));
        // A DATE compares with a TIMESTAMP at midnight.
        let ts = crate::temporal::parse_timestamp("1994-01-01 00:00:00").unwrap();
        let e = d("1994-01-01").eq(Expr::lit(Value::Timestamp(ts)));
        assert_eq!(run(&e).unwrap(), Value::Bool(true));
        let add = |x: Expr, months: i64| Expr::Function {
            func: ScalarFunc::AddInterval,
            args: vec![x, Expr::lit(months), Expr::lit(0), Expr::lit(0)],
        };
        assert_eq!(run(&add(d("2024-01-31"), 1)).unwrap(), date("2024-02-29"));
        assert_eq!(run(&add(d("2023-03-31"), -1)).unwrap(), date("2023-02-28"));
        assert_eq!(run(&add(Expr::lit(Value::Null), 1)).unwrap(), Value::Null);
    }
}
