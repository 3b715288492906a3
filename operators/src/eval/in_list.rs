//! `IN (...)`: a hash-set probe for a column against many constants of its own type, and
//! otherwise `x = a OR x = b OR ...` with SQL's NULL rules.

use super::compare::compare;
use super::logic::logic;
use super::val::{owned, scalar, Val};
use crate::column::{Column, ColumnData};
use crate::error::Result;
use crate::expr::BinaryOp;
use crate::types::DataType;
use crate::value::Value;

/// `x IN (items)` over `n` rows: TRUE when an item equals `x`, NULL when none did and `x` or
/// an item is NULL, else FALSE.
pub(super) fn in_list<'a>(x: Val<'a>, items: &[Val<'a>], n: usize) -> Result<Val<'a>> {
    // Fast path: a column against many non-NULL constants of its own type.
    if let Val::Col(c) = &x {
        if items.len() > 4 && items.iter().all(|v| v.is_scalar() && !v.is_null_scalar()) {
            match &c.data {
                ColumnData::Int64(values)
                    if items.iter().all(|v| v.dt() == Some(DataType::Int64)) =>
                {
                    let set: hashbrown::HashSet<i64> = items
                        .iter()
                        .filter_map(|v| match v {
                            Val::Scalar(Value::Int(i), _) => Some(*i),
                            _ => None,
                        })
                        .collect();
                    let out = values.iter().map(|v| set.contains(v)).collect();
                    return Ok(owned(Column::with_validity(
                        ColumnData::Boolean(out),
                        c.validity.clone(),
                    )));
                }
                ColumnData::Utf8 { offsets, bytes }
                    if items.iter().all(|v| v.dt() == Some(DataType::Utf8)) =>
                {
                    let set: hashbrown::HashSet<&[u8]> = items
                        .iter()
                        .filter_map(|v| match v {
                            Val::Scalar(Value::Str(s), _) => Some(s.as_bytes()),
                            _ => None,
                        })
                        .collect();
                    let out = offsets
                        .windows(2)
                        .map(|w| set.contains(&bytes[w[0] as usize..w[1] as usize]))
                        .collect();
                    return Ok(owned(Column::with_validity(
                        ColumnData::Boolean(out),
                        c.validity.clone(),
                    )));
                }
                _ => {}
            }
        }
    }
    // General case: x = item1 OR x = item2 OR ...
    let mut acc: Val<'a> = scalar(Value::Bool(false));
    for item in items {
        let eq = compare(BinaryOp::Eq, &x, item, n)?;
        acc = logic(false, acc, eq, n)?;
    }
    // An empty list is vacuously FALSE (SQL forbids empty lists anyway).
    Ok(acc)
}

#[cfg(test)]
mod tests {
    use crate::eval::testing::vals;
    use crate::{Expr, Value};

    #[test]
    fn in_lists() {
        let e = Expr::InList {
            expr: Box::new(Expr::col(0)),
            list: vec![Expr::lit(1), Expr::lit(Value::Null)],
            negated: false,
        };
        assert_eq!(
            vals(&e),
            vec![true.into(), Value::Null, Value::Null, Value::Null]
        );
        let e = Expr::InList {
            expr: Box::new(Expr::col(0)),
            list: (0..10).map(|i| Expr::lit(i * 2)).collect(),
            negated: true,
        };
        assert_eq!(
            vals(&e),
            vec![true.into(), false.into(), Value::Null, false.into()]
        );
    }
}
