//! Boolean logic: `NOT`, and three-valued `AND` and `OR`, where a constant operand decides
//! the result or passes the other side through.

use super::val::{null_of, owned, scalar, to_scalar, Val};
use crate::bitmap::Bitmap;
use crate::column::{Column, ColumnData};
use crate::error::{Error, Result};
use crate::types::DataType;
use crate::value::Value;

/// An error unless `v` is BOOLEAN (or an untyped NULL); `what` names the operator.
fn expect_bool(v: &Val<'_>, what: &str) -> Result<()> {
    match v.dt() {
        None | Some(DataType::Boolean) => Ok(()),
        Some(t) => Err(Error::Type(format!(
            "{what} needs BOOLEAN operands, got {t}"
        ))),
    }
}

/// Three-valued NOT: NULL stays NULL.
pub(super) fn not<'a>(v: Val<'a>) -> Result<Val<'a>> {
    expect_bool(&v, "NOT")?;
    Ok(match v {
        Val::Scalar(Value::Bool(b), dt) => Val::Scalar(Value::Bool(!b), dt),
        Val::Scalar(_, _) => null_of(Some(DataType::Boolean)),
        Val::Col(c) => {
            let c = c.into_owned();
            let Column { data, validity } = c;
            let ColumnData::Boolean(mut values) = data else {
                return Err(Error::Internal("NOT of a non-boolean column".into()));
            };
            values.iter_mut().for_each(|b| *b = !*b);
            owned(Column::with_validity(ColumnData::Boolean(values), validity))
        }
    })
}

/// Three-valued AND (`is_and`) or OR.
pub(super) fn logic<'a>(is_and: bool, l: Val<'a>, r: Val<'a>, n: usize) -> Result<Val<'a>> {
    let what = if is_and { "AND" } else { "OR" };
    expect_bool(&l, what)?;
    expect_bool(&r, what)?;
    let both_scalar = l.is_scalar() && r.is_scalar();
    let len = if both_scalar { 1 } else { n };
    // A constant operand decides the result or passes the other side through.
    let konst = |v: &Val<'_>| match v {
        Val::Scalar(Value::Bool(s), _) => Some(*s),
        _ => None,
    };
    let (lk, rk) = (konst(&l), konst(&r));
    for k in [lk, rk].into_iter().flatten() {
        if k != is_and {
            // FALSE AND x = FALSE; TRUE OR x = TRUE.
            return Ok(scalar(Value::Bool(k)));
        }
    }
    // TRUE AND x = x; FALSE OR x = x.
    if lk.is_some() && !r.is_scalar() {
        return Ok(r);
    }
    if rk.is_some() && !l.is_scalar() {
        return Ok(l);
    }
    let lc = l.into_column(len, DataType::Boolean);
    let rc = r.into_column(len, DataType::Boolean);
    let (a, b) = (lc.as_bool().unwrap_or(&[]), rc.as_bool().unwrap_or(&[]));
    let col = match (&lc.validity, &rc.validity) {
        (None, None) => {
            let values = if is_and {
                a.iter().zip(b).map(|(x, y)| *x && *y).collect()
            } else {
                a.iter().zip(b).map(|(x, y)| *x || *y).collect()
            };
            Column::from_bools(values)
        }
        _ => {
            let mut values = Vec::with_capacity(len);
            let mut valid = Bitmap::new(len, true);
            for i in 0..len {
                let (av, bv) = (lc.is_valid(i), rc.is_valid(i));
                let (x, y) = (a[i], b[i]);
                let (value, ok) = if is_and {
                    if (av && !x) || (bv && !y) {
                        (false, true)
                    } else {
                        (true, av && bv)
                    }
                } else if (av && x) || (bv && y) {
                    (true, true)
                } else {
                    (false, av && bv)
                };
                values.push(value && ok);
                if !ok {
                    valid.set(i, false);
                }
            }
            Column::with_validity(ColumnData::Boolean(values), Some(valid))
        }
    };
    Ok(if both_scalar {
        to_scalar(owned(col))
    } else {
        owned(col)
    })
}

#[cfg(test)]
mod tests {
    use crate::eval::testing::vals;
    use crate::{BinaryOp, Expr, Value};

    #[test]
    fn logic_is_three_valued() {
        // NULL AND FALSE = FALSE; NULL OR TRUE = TRUE.
        let e = Expr::col(3).and(Expr::lit(false));
        assert_eq!(vals(&e), vec![false.into(); 4]);
        let e = Expr::col(3).binary(BinaryOp::Or, Expr::col(0).eq(Expr::lit(4)));
        assert_eq!(
            vals(&e),
            vec![true.into(), false.into(), Value::Null, true.into()]
        );
        let e = Expr::Not(Box::new(Expr::col(3)));
        assert_eq!(
            vals(&e),
            vec![false.into(), true.into(), Value::Null, false.into()]
        );
    }
}
