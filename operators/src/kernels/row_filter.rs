//! Which rows of a stored chunk a scan keeps: its filter, split into conjuncts, evaluated into
//! a selection vector (ascending row numbers) that each conjunct narrows in turn.
//!
//! A conjunct that compares a column with a constant (`l_quantity < 24`, `d BETWEEN 0.05 AND
//! 0.07`, `s >= DATE '1994-01-01'`, `name = 'x'`) runs as a typed loop over the column's
//! values (BIGINT, DATE, DECIMAL as unscaled integers at the column's scale, DOUBLE, text as
//! bytes) that writes the passing row numbers without a branch per row; the first such
//! conjunct reads every row, the next only the rows still selected. Any other conjunct goes
//! through the expression evaluator, over the whole chunk, and narrows the selection by its
//! result. NULLs never pass, as a WHERE clause wants.

use crate::column::{Column, ColumnData};
use crate::decimal;
use crate::eval::{evaluate_predicate, evaluate_scalar};
use crate::{Batch, BinaryOp, Expr, Result, Value};

/// One conjunct of a scan's filter.
#[derive(Debug, Clone)]
pub(super) enum Conjunct {
    /// `column op value`, `value` a constant.
    Compare {
        column: usize,
        op: BinaryOp,
        value: Value,
        /// The conjunct as written, for chunks whose column type has no typed loop here.
        expr: Expr,
    },
    /// Anything else, through the evaluator.
    General(Expr),
}

/// How a scan decides which rows of a chunk it keeps.
#[derive(Debug, Clone)]
pub(super) enum RowFilter {
    /// Every row.
    All,
    /// No row (a conjunct compares with NULL, which is never TRUE).
    Nothing,
    /// The conjunction of these, in order.
    Conjuncts(Vec<Conjunct>),
}

/// Whether `e` is a constant evaluated once per scan: a literal or parameter, possibly cast.
fn is_constant(e: &Expr) -> bool {
    match e {
        Expr::Literal(_) | Expr::Param(_) => true,
        Expr::Cast { expr, .. } => is_constant(expr),
        _ => false,
    }
}

/// `k op column` as `column op' k`.
fn mirrored(op: BinaryOp) -> Option<BinaryOp> {
    Some(match op {
        BinaryOp::Eq | BinaryOp::NotEq => op,
        BinaryOp::Lt => BinaryOp::Gt,
        BinaryOp::LtEq => BinaryOp::GtEq,
        BinaryOp::Gt => BinaryOp::Lt,
        BinaryOp::GtEq => BinaryOp::LtEq,
        _ => return None,
    })
}

/// `column op constant` (either way round), with the constant's value; `None` otherwise.
fn comparison(
    op: BinaryOp,
    left: &Expr,
    right: &Expr,
    params: &[Value],
) -> Option<(usize, BinaryOp, Value)> {
    if !op.is_comparison() {
        return None;
    }
    let (column, constant, op) = match (left, right) {
        (Expr::Column(c), k) => (*c, k, op),
        (k, Expr::Column(c)) => (*c, k, mirrored(op)?),
        _ => return None,
    };
    if !is_constant(constant) {
        return None;
    }
    Some((column, op, evaluate_scalar(constant, params).ok()?))
}

/// Appends the conjuncts of `e` to `out`.
fn split(e: &Expr, params: &[Value], out: &mut Vec<Conjunct>) {
    for c in e.conjuncts() {
        conjunct(c, params, out);
    }
}

/// Appends conjunct `e` (not itself an AND) to `out`: a BETWEEN on a column as its two
/// comparisons.
fn conjunct(e: &Expr, params: &[Value], out: &mut Vec<Conjunct>) {
    match e {
        Expr::Binary { op, left, right } if *op != BinaryOp::And => {
            match comparison(*op, left, right, params) {
                Some((column, op, value)) => out.push(Conjunct::Compare {
                    column,
                    op,
                    value,
                    expr: e.clone(),
                }),
                None => out.push(Conjunct::General(e.clone())),
            }
        }
        Expr::Between {
            expr,
            low,
            high,
            negated: false,
        } if matches!(expr.as_ref(), Expr::Column(_)) && is_constant(low) && is_constant(high) => {
            let lo = Expr::Binary {
                op: BinaryOp::GtEq,
                left: expr.clone(),
                right: low.clone(),
            };
            let hi = Expr::Binary {
                op: BinaryOp::LtEq,
                left: expr.clone(),
                right: high.clone(),
            };
            conjunct(&lo, params, out);
            conjunct(&hi, params, out);
        }
        _ => out.push(Conjunct::General(e.clone())),
    }
}

impl RowFilter {
    /// The filter of a scan (`None`: every row).
    pub(super) fn new(filter: Option<Expr>, params: &[Value]) -> Self {
        let Some(filter) = filter else {
            return RowFilter::All;
        };
        let mut conjuncts = Vec::new();
        split(&filter, params, &mut conjuncts);
        let never = conjuncts.iter().any(|c| {
            matches!(
                c,
                Conjunct::Compare {
                    value: Value::Null,
                    ..
                }
            )
        });
        if never {
            return RowFilter::Nothing;
        }
        RowFilter::Conjuncts(conjuncts)
    }

    /// Fills `sel` with the rows of `chunk` to keep, ascending, out of `pre` (the rows an
    /// index lookup found) or out of every row; returns false for "every row" (leaving `sel`
    /// empty).
    pub(super) fn select(
        &self,
        chunk: &Batch,
        pre: Option<&[u32]>,
        params: &[Value],
        sel: &mut Vec<u32>,
    ) -> Result<bool> {
        sel.clear();
        let conjuncts = match self {
            RowFilter::All => {
                sel.extend(pre.unwrap_or_default());
                return Ok(pre.is_some());
            }
            RowFilter::Nothing => return Ok(true),
            RowFilter::Conjuncts(c) => c,
        };
        // Until a conjunct has run, every row (or the index's rows) is selected.
        let mut all = match pre {
            Some(pre) => {
                sel.extend(pre);
                false
            }
            None => true,
        };
        for conjunct in conjuncts {
            if !all && sel.is_empty() {
                break;
            }
            let typed = match conjunct {
                Conjunct::Compare {
                    column, op, value, ..
                } if *column < chunk.num_columns() => {
                    select_compare(chunk.column(*column), *op, value, all, sel)
                }
                _ => false,
            };
            if !typed {
                let expr = match conjunct {
                    Conjunct::Compare { expr, .. } | Conjunct::General(expr) => expr,
                };
                let mask = evaluate_predicate(expr, chunk, params)?;
                if all {
                    sel.extend(
                        mask.iter()
                            .enumerate()
                            .filter_map(|(i, &m)| m.then_some(i as u32)),
                    );
                } else {
                    sel.retain(|&i| mask[i as usize]);
                }
            }
            all = false;
        }
        Ok(!all)
    }
}

/// Narrows `sel` (or, with `all`, fills it from every row) to the rows of `col` where
/// `pass(value)` holds and the row is not NULL, without a branch per row.
fn narrow<T: Copy>(
    col: &Column,
    values: &[T],
    all: bool,
    sel: &mut Vec<u32>,
    pass: impl Fn(T) -> bool,
) {
    let nulls = col.null_count() > 0;
    let keep = |i: usize| pass(values[i]) & !(nulls && col.is_null(i));
    if all {
        sel.clear();
        sel.resize(values.len(), 0);
        let mut k = 0;
        for i in 0..values.len() {
            sel[k] = i as u32;
            k += keep(i) as usize;
        }
        sel.truncate(k);
    } else {
        let mut k = 0;
        for j in 0..sel.len() {
            let i = sel[j];
            sel[k] = i;
            k += keep(i as usize) as usize;
        }
        sel.truncate(k);
    }
}

/// `x op v` for ordered values.
#[inline(always)]
fn holds<T: PartialOrd>(op: BinaryOp, x: T, v: T) -> bool {
    match op {
        BinaryOp::Eq => x == v,
        BinaryOp::NotEq => x != v,
        BinaryOp::Lt => x < v,
        BinaryOp::LtEq => x <= v,
        BinaryOp::Gt => x > v,
        _ => x >= v,
    }
}

/// Applies `column op value` to `col` with a typed loop; false when the column's type and the
/// constant's have none here (the caller evaluates the conjunct instead).
fn select_compare(
    col: &Column,
    op: BinaryOp,
    value: &Value,
    all: bool,
    sel: &mut Vec<u32>,
) -> bool {
    macro_rules! run {
        ($values:expr, $v:expr) => {{
            let v = $v;
            match op {
                BinaryOp::Eq => narrow(col, $values, all, sel, |x| x == v),
                BinaryOp::NotEq => narrow(col, $values, all, sel, |x| x != v),
                BinaryOp::Lt => narrow(col, $values, all, sel, |x| x < v),
                BinaryOp::LtEq => narrow(col, $values, all, sel, |x| x <= v),
                BinaryOp::Gt => narrow(col, $values, all, sel, |x| x > v),
                _ => narrow(col, $values, all, sel, |x| x >= v),
            }
            true
        }};
    }
    match (&col.data, value) {
        (ColumnData::Int64(values), Value::Int(v)) => run!(values, *v),
        (ColumnData::Date(values), Value::Date(v)) => run!(values, *v),
        (ColumnData::Timestamp(values), Value::Timestamp(v)) => run!(values, *v),
        (ColumnData::Float64(values), Value::Float(v)) => run!(values, *v),
        (ColumnData::Decimal { values, scale, .. }, _) => {
            let (v, from) = match value {
                Value::Decimal(v, s) => (*v, *s),
                Value::Int(v) => (i128::from(*v), 0),
                _ => return false,
            };
            // Only a constant exact at the column's scale compares as an unscaled integer.
            match exact_at(v, from, *scale) {
                Some(v) => run!(values, v),
                None => false,
            }
        }
        (ColumnData::Utf8 { offsets, bytes }, Value::Str(v)) => {
            let v = v.as_bytes();
            let nulls = col.null_count() > 0;
            let keep = |i: usize| {
                let x = &bytes[offsets[i] as usize..offsets[i + 1] as usize];
                holds(op, x, v) && !(nulls && col.is_null(i))
            };
            if all {
                sel.extend((0..col.len()).filter(|&i| keep(i)).map(|i| i as u32));
            } else {
                sel.retain(|&i| keep(i as usize));
            }
            true
        }
        _ => false,
    }
}

/// `v` (unscaled at scale `from`) as an unscaled value at scale `to`, if exactly so.
fn exact_at(v: i128, from: u8, to: u8) -> Option<i128> {
    if from <= to {
        return decimal::rescale(v, from, to);
    }
    let down = decimal::rescale(v, from, to)?;
    (decimal::rescale(down, to, from)? == v).then_some(down)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::DataType;

    fn chunk() -> Batch {
        let d = |v: i128| Value::Decimal(v, 2);
        let rows = [
            (1, Some(500), "a"),
            (2, Some(600), "b"),
            (3, None, "c"),
            (4, Some(700), "b"),
            (5, Some(800), "a"),
            (6, Some(499), "c"),
        ];
        let rows: Vec<Vec<Value>> = rows
            .iter()
            .map(|&(k, v, s)| vec![Value::Int(k), v.map_or(Value::Null, d), s.into()])
            .collect();
        Batch::from_rows(
            &[DataType::Int64, DataType::decimal(15, 2), DataType::Utf8],
            &rows,
        )
        .unwrap()
    }

    fn rows(filter: Expr) -> Vec<u32> {
        let b = chunk();
        let mut sel = Vec::new();
        let f = RowFilter::new(Some(filter.clone()), &[]);
        let some = f.select(&b, None, &[], &mut sel).unwrap();
        // The general evaluator agrees, row for row.
        let mask = evaluate_predicate(&filter, &b, &[]).unwrap();
        let want: Vec<u32> = (0..b.num_rows() as u32)
            .filter(|&i| mask[i as usize])
            .collect();
        let got = if some {
            sel
        } else {
            (0..b.num_rows() as u32).collect()
        };
        assert_eq!(got, want, "{filter:?}");
        got
    }

    #[test]
    fn typed_conjuncts_narrow_in_turn_and_agree_with_the_evaluator() {
        let dec = |v: i128, s: u8| Expr::lit(Value::Decimal(v, s));
        // 5.00 <= d <= 7.00 (scale 2 and scale 1 bounds), NULL never passes.
        let between = Expr::Between {
            expr: Box::new(Expr::col(1)),
            low: Box::new(dec(500, 2)),
            high: Box::new(dec(70, 1)),
            negated: false,
        };
        assert_eq!(rows(between.clone()), [0, 1, 3]);
        // With an integer bound and a text conjunct.
        let e = between
            .clone()
            .and(Expr::col(1).binary(BinaryOp::Lt, Expr::lit(7)))
            .and(Expr::col(2).eq(Expr::lit("b")));
        assert_eq!(rows(e), [1]);
        // A constant not exact at the column's scale goes through the evaluator.
        assert_eq!(
            rows(Expr::col(1).binary(BinaryOp::Gt, dec(4995, 3))),
            [0, 1, 3, 4]
        );
        // Mirrored, and a conjunct of another shape.
        let e = Expr::lit(3).binary(BinaryOp::Lt, Expr::col(0)).and(
            Expr::col(0)
                .binary(BinaryOp::Add, Expr::lit(1))
                .binary(BinaryOp::NotEq, Expr::lit(6)),
        );
        assert_eq!(rows(e), [3, 5]);
        // A comparison with NULL keeps nothing.
        let f = RowFilter::new(Some(Expr::col(0).eq(Expr::lit(Value::Null))), &[]);
        let mut sel = Vec::new();
        assert!(f.select(&chunk(), None, &[], &mut sel).unwrap() && sel.is_empty());
    }

    #[test]
    fn an_index_selection_is_narrowed_not_replaced() {
        let f = RowFilter::new(Some(Expr::col(0).binary(BinaryOp::GtEq, Expr::lit(3))), &[]);
        let mut sel = Vec::new();
        assert!(f.select(&chunk(), Some(&[1, 2, 4]), &[], &mut sel).unwrap());
        assert_eq!(sel, [2, 4]);
    }
}
