//! Constant folding: sub-expressions that read no column, parameter or outer row are
//! evaluated once at plan time (`DATE '1998-12-01' - INTERVAL '90' DAY` becomes a date), and
//! boolean connectives with a constant side are simplified. A filter that is always TRUE goes,
//! and a projection over a projection becomes one.

use super::rule::Rule;
use crate::error::PlanError;
use crate::logical::LogicalPlan;
use weir_operators::{Batch, BinaryOp, Expr, Value};

/// Folds constant expressions in every node.
pub(crate) struct FoldConstants;

/// `Project(Project(x))` → one projection over `x`, its expressions read through the lower
/// one.
pub(crate) struct MergeProjections;

impl Rule for MergeProjections {
    fn rewrite(&self, plan: &LogicalPlan) -> Result<Option<LogicalPlan>, PlanError> {
        let LogicalPlan::Project {
            input,
            exprs,
            fields,
        } = plan
        else {
            return Ok(None);
        };
        let LogicalPlan::Project {
            input: inner,
            exprs: below,
            ..
        } = input.as_ref()
        else {
            return Ok(None);
        };
        let exprs = exprs
            .iter()
            .map(|e| {
                e.transform(&mut |x| match x {
                    Expr::Column(i) => Some(below[*i].clone()),
                    _ => None,
                })
            })
            .collect();
        Ok(Some(LogicalPlan::Project {
            input: inner.clone(),
            exprs,
            fields: fields.clone(),
        }))
    }
}

impl Rule for FoldConstants {
    fn rewrite(&self, plan: &LogicalPlan) -> Result<Option<LogicalPlan>, PlanError> {
        if let LogicalPlan::Filter {
            input,
            predicate: Expr::Literal(Value::Bool(true)),
        } = plan
        {
            return Ok(Some((**input).clone()));
        }
        let mut changed = false;
        let folded = plan.map_exprs(&mut |e| {
            let f = fold(e);
            changed |= f != *e;
            f
        });
        Ok(changed.then_some(folded))
    }
}

/// Whether `e` has one value for every row and run: no columns, parameters nor volatile
/// calls (`random()`).
fn is_constant(e: &Expr) -> bool {
    !e.is_volatile()
        && !e.any(&|x| matches!(x, Expr::Column(_) | Expr::OuterColumn(_) | Expr::Param(_)))
}

/// `e` with its constant parts evaluated, bottom up.
pub(crate) fn fold(e: &Expr) -> Expr {
    let e = e.map_children(&mut |c| fold(c));
    if let Some(s) = simplify_boolean(&e) {
        return s;
    }
    if matches!(e, Expr::Literal(_)) || !is_constant(&e) {
        return e;
    }
    evaluate(&e).unwrap_or(e)
}

/// The value of a constant expression, when it evaluates without error to a non-NULL value of
/// the expression's own type (a NULL literal would lose its type).
fn evaluate(e: &Expr) -> Option<Expr> {
    let one = Batch::with_row_count(Vec::new(), 1).ok()?;
    let col = weir_operators::eval::evaluate(e, &one, &[]).ok()?;
    let v = col.value(0);
    (v.data_type() == Some(col.data_type())).then_some(Expr::Literal(v))
}

/// `TRUE AND x` → `x`, `FALSE AND x` → `FALSE`, `TRUE OR x` → `TRUE`, `FALSE OR x` → `x`.
fn simplify_boolean(e: &Expr) -> Option<Expr> {
    let Expr::Binary { op, left, right } = e else {
        return None;
    };
    let lit = |x: &Expr| match x {
        Expr::Literal(Value::Bool(b)) => Some(*b),
        _ => None,
    };
    let (constant, other) = match (lit(left), lit(right)) {
        (Some(c), _) => (c, right),
        (None, Some(c)) => (c, left),
        _ => return None,
    };
    match (op, constant) {
        (BinaryOp::And, true) | (BinaryOp::Or, false) => Some((**other).clone()),
        (BinaryOp::And, false) => Some(Expr::Literal(Value::Bool(false))),
        (BinaryOp::Or, true) => Some(Expr::Literal(Value::Bool(true))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_arithmetic_and_connectives() {
        let e = Expr::lit(2).binary(BinaryOp::Mul, Expr::lit(3));
        assert_eq!(fold(&e), Expr::lit(6));
        let x = Expr::col(0).eq(Expr::lit(1));
        let e = Expr::Literal(Value::Bool(true)).and(x.clone());
        assert_eq!(fold(&e), x);
        let e = x
            .clone()
            .binary(BinaryOp::Or, Expr::Literal(Value::Bool(true)));
        assert_eq!(fold(&e), Expr::Literal(Value::Bool(true)));
    }

    #[test]
    fn keeps_columns_parameters_and_errors() {
        let e = Expr::col(0).binary(BinaryOp::Add, Expr::lit(1));
        assert_eq!(fold(&e), e);
        let p = Expr::Param(0).binary(BinaryOp::Add, Expr::lit(1));
        assert_eq!(fold(&p), p);
        // Overflow is an execution error, not a plan-time one: left as it is.
        let o = Expr::lit(i64::MAX).binary(BinaryOp::Add, Expr::lit(1));
        assert_eq!(fold(&o), o);
    }
}
