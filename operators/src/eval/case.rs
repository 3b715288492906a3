//! `CASE` (searched and simple) and `NULLIF`. A CASE evaluates each branch only on the rows
//! it decides, through the entry points its caller passes in (`evaluate_predicate` and
//! `evaluate`: this file sits below the dispatcher in [`super`] that calls it).

use super::compare::compare;
use super::val::{column_to_mask, owned, to_scalar, Val};
use crate::batch::Batch;
use crate::bitmap::Bitmap;
use crate::column::{Column, ColumnBuilder};
use crate::error::{Error, Result};
use crate::expr::{BinaryOp, Expr};
use crate::types::DataType;
use crate::value::Value;
use std::borrow::Cow;

/// `NULLIF(a, b)`: `a`, NULL where `a = b` is TRUE.
pub(super) fn nullif<'a>(a: Val<'a>, b: Val<'a>, n: usize) -> Result<Val<'a>> {
    let eq = compare(BinaryOp::Eq, &a, &b, n)?;
    let both_scalar = a.is_scalar() && b.is_scalar();
    let len = if both_scalar { 1 } else { n };
    let dt = a.dt().or(b.dt()).unwrap_or(DataType::Int64);
    let eq = eq.into_column(len, DataType::Boolean);
    let hit = column_to_mask(Cow::Owned(eq))?;
    let col = a.into_column(len, dt);
    let mut valid = col
        .validity
        .clone()
        .unwrap_or_else(|| Bitmap::new(len, true));
    for (i, h) in hit.iter().enumerate() {
        if *h {
            valid.set(i, false);
        }
    }
    let col = Column::with_validity(col.data, Some(valid));
    Ok(if both_scalar {
        to_scalar(owned(col))
    } else {
        owned(col)
    })
}

/// `CASE`: each WHEN is evaluated on the rows no earlier branch took, each THEN only on the
/// rows its WHEN took, ELSE on the rest; the pieces are then gathered back into row order.
/// Conditions and results are evaluated with `evaluate_predicate` and `evaluate` (the
/// module's entry points of the same names).
pub(super) fn case<'a>(
    operand: Option<&Expr>,
    branches: &[(Expr, Expr)],
    else_result: Option<&Expr>,
    batch: &'a Batch,
    params: &[Value],
    evaluate_predicate: impl Fn(&Expr, &Batch, &[Value]) -> Result<Vec<bool>>,
    evaluate: impl Fn(&Expr, &Batch, &[Value]) -> Result<Column>,
) -> Result<Val<'a>> {
    let n = batch.num_rows();
    // Rows of `batch` still undecided, and that sub-batch (borrowed while it is all rows).
    let mut undecided: Vec<u32> = (0..n as u32).collect();
    let mut sub: Cow<'_, Batch> = Cow::Borrowed(batch);
    // Per output row: (piece, row within the piece); u32::MAX piece means NULL.
    let mut picks: Vec<(u32, u32)> = vec![(u32::MAX, 0); n];
    let mut pieces: Vec<Column> = Vec::new();
    let mut out_type: Option<DataType> = None;
    let mut take_piece = |col: Column, rows: &[u32], picks: &mut Vec<(u32, u32)>| {
        let k = pieces.len() as u32;
        for (j, &r) in rows.iter().enumerate() {
            picks[r as usize] = (k, j as u32);
        }
        out_type = out_type.or(Some(col.data_type()));
        pieces.push(col);
    };
    for (when, then) in branches {
        if undecided.is_empty() {
            break;
        }
        let cond = match operand {
            Some(op) => op.clone().eq(when.clone()),
            None => when.clone(),
        };
        let mask = evaluate_predicate(&cond, &sub, params)?;
        let (mut hit, mut miss) = (Vec::new(), Vec::new());
        for (j, &m) in mask.iter().enumerate() {
            if m {
                hit.push(j as u32);
            } else {
                miss.push(j as u32);
            }
        }
        if hit.is_empty() {
            continue;
        }
        let then_col = if miss.is_empty() {
            evaluate(then, &sub, params)?
        } else {
            evaluate(then, &sub.take(&hit), params)?
        };
        let rows: Vec<u32> = hit.iter().map(|&j| undecided[j as usize]).collect();
        take_piece(then_col, &rows, &mut picks);
        if !miss.is_empty() {
            sub = Cow::Owned(sub.take(&miss));
        }
        undecided = miss.iter().map(|&j| undecided[j as usize]).collect();
    }
    if let (Some(e), false) = (else_result, undecided.is_empty()) {
        let col = evaluate(e, &sub, params)?;
        take_piece(col, &undecided, &mut picks);
    }
    // Where no row took a result, its type is that of a result evaluated over no rows (a
    // NULL literal says nothing): a CASE of DOUBLE results is DOUBLE also when all its rows
    // are NULL.
    let dt = out_type.unwrap_or_else(|| {
        let none = batch.take(&[]);
        branches
            .iter()
            .map(|(_, then)| then)
            .chain(else_result)
            .filter(|e| !matches!(e, Expr::Literal(Value::Null)))
            .find_map(|e| evaluate(e, &none, params).ok())
            .map_or(DataType::Int64, |c| c.data_type())
    });
    if pieces.len() == 1 && pieces[0].len() == n {
        return Ok(owned(pieces.pop().expect("one piece")));
    }
    let mut b = ColumnBuilder::new(dt, n);
    for &(k, j) in &picks {
        match pieces.get(k as usize) {
            Some(c) if c.is_null(j as usize) => b.push_null(),
            Some(c) if c.data_type() == dt => b.push_from(c, j as usize),
            Some(c) => {
                return Err(Error::Type(format!(
                    "CASE branches have types {dt} and {}",
                    c.data_type()
                )))
            }
            None => b.push_null(),
        }
    }
    Ok(owned(b.finish()))
}

#[cfg(test)]
mod tests {
    use crate::eval::testing::vals;
    use crate::eval::{evaluate, evaluate_scalar};
    use crate::{Batch, BinaryOp, DataType, Expr, Value};

    fn case(operand: Option<Expr>, branches: Vec<(Expr, Expr)>, els: Option<Expr>) -> Expr {
        Expr::Case {
            operand: operand.map(Box::new),
            branches,
            else_result: els.map(Box::new),
        }
    }

    #[test]
    fn case_both_forms() {
        // Searched, with ELSE; a NULL condition falls through.
        let e = case(
            None,
            vec![
                (
                    Expr::col(0).binary(BinaryOp::Gt, Expr::lit(3)),
                    Expr::lit("big"),
                ),
                (
                    Expr::col(0).binary(BinaryOp::Gt, Expr::lit(1)),
                    Expr::col(2),
                ),
            ],
            Some(Expr::lit("small")),
        );
        assert_eq!(
            vals(&e),
            vec![
                "small".into(),
                "banana".into(),
                "small".into(),
                "big".into()
            ]
        );
        // Simple, without ELSE: no match (and a NULL operand) gives NULL.
        let e = case(
            Some(Expr::col(0)),
            vec![(Expr::lit(1), Expr::lit(10)), (Expr::lit(4), Expr::lit(40))],
            None,
        );
        assert_eq!(
            vals(&e),
            vec![10.into(), Value::Null, Value::Null, 40.into()]
        );
        // A branch's result is evaluated only on its rows: the cast fails on row 1 only.
        let e = case(
            None,
            vec![(
                Expr::col(0).eq(Expr::lit(1)),
                Expr::Cast {
                    expr: Box::new(Expr::col(2)),
                    to: DataType::Int64,
                },
            )],
            Some(Expr::lit(0)),
        );
        let b = Batch::from_rows(
            &[DataType::Int64, DataType::Float64, DataType::Utf8],
            &[
                vec![1.into(), Value::Null, "7".into()],
                vec![2.into(), Value::Null, "x".into()],
            ],
        )
        .unwrap();
        let c = evaluate(&e, &b, &[]).unwrap();
        assert_eq!((c.value(0), c.value(1)), (7.into(), 0.into()));
        // No row takes a result: the column still has the results' type.
        let e = case(
            None,
            vec![(Expr::col(0).eq(Expr::lit(99)), Expr::col(1))],
            None,
        );
        let b = Batch::from_rows(
            &[DataType::Int64, DataType::Float64],
            &[vec![1.into(), 1.5.into()], vec![2.into(), Value::Null]],
        )
        .unwrap();
        let c = evaluate(&e, &b, &[]).unwrap();
        assert_eq!(c.data_type(), DataType::Float64);
        assert_eq!((c.value(0), c.value(1)), (Value::Null, Value::Null));
        // Scalar CASE, and a NULL branch result.
        let e = case(None, vec![(Expr::lit(false), Expr::lit(1))], None);
        assert_eq!(evaluate_scalar(&e, &[]).unwrap(), Value::Null);
        let e = case(
            None,
            vec![(Expr::col(3), Expr::lit(Value::Null))],
            Some(Expr::col(0)),
        );
        assert_eq!(
            vals(&e),
            vec![Value::Null, 2.into(), Value::Null, Value::Null]
        );
        // Empty input.
        let empty = Batch::empty(&[DataType::Int64]);
        let e = case(
            None,
            vec![(Expr::col(0).eq(Expr::lit(1)), Expr::lit(1))],
            None,
        );
        assert_eq!(evaluate(&e, &empty, &[]).unwrap().len(), 0);
    }
}
