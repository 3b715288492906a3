//! `EXISTS` and `IN (SELECT ...)` used as values: inside `OR`, `CASE`, a select list or any
//! other expression, where no semi or anti join can stand for them.
//!
//! Such an Apply (a *mark*: one BOOLEAN per row) becomes counts of the subquery's rows,
//! which the scalar decorrelation then turns into joins:
//! - `EXISTS (q)` is `(SELECT count(*) FROM q) > 0`; an uncorrelated `q` is cut to its first
//!   row first.
//! - `x IN (q)` follows SQL's three-valued rule from three counts: the rows of `q` equal to
//!   `x` (TRUE if any), all rows (FALSE if none), and the NULLs of `q` (NULL if `x` is NULL or
//!   there is any, else FALSE). The first is correlated on `q.col = x`, so an uncorrelated
//!   `IN` costs a grouped count joined on the value, not a subquery per row.
//!
//! These run after the semi-join rewrites have taken every mark that a WHERE conjunct tests,
//! so only the marks that need a value are left for them.

use super::rule::Rule;
use crate::error::PlanError;
use crate::logical::{has_outer, ApplyKind, LogicalPlan};
use weir_operators::plan::{AggFunc, AggregateExpr};
use weir_operators::{BinaryOp, DataType, Expr, Field, Value};

/// `Apply EXISTS|IN` → scalar Applies of counts and a projection computing the mark.
pub(crate) struct MarkAsCounts;

impl Rule for MarkAsCounts {
    fn rewrite(&self, plan: &LogicalPlan) -> Result<Option<LogicalPlan>, PlanError> {
        let LogicalPlan::Apply {
            input,
            subquery,
            kind,
            field,
            position,
        } = plan
        else {
            return Ok(None);
        };
        let width = input.width();
        let (counts, mark) = match kind {
            ApplyKind::Scalar | ApplyKind::Lateral { .. } => return Ok(None),
            ApplyKind::Exists => {
                let body = crate::logical::strip_for_exists((**subquery).clone());
                let body = if body.is_correlated() {
                    body
                } else {
                    LogicalPlan::Limit {
                        input: Box::new(body),
                        offset: 0,
                        limit: Some(1),
                    }
                };
                let mark = Expr::col(width).binary(BinaryOp::Gt, Expr::lit(0));
                (vec![body], mark)
            }
            ApplyKind::In(x) => {
                // `x` reads this Apply's input; an outer column in it belongs to a query
                // further out, which the subquery cannot name. Left for the error.
                if has_outer(x) {
                    return Ok(None);
                }
                let x_outside = x.transform(&mut |e| match e {
                    Expr::Column(c) => Some(Expr::OuterColumn(*c)),
                    _ => None,
                });
                let equal = subquery
                    .as_ref()
                    .clone()
                    .filter_all(vec![Expr::col(0).eq(x_outside)]);
                let nulls = subquery.as_ref().clone().filter_all(vec![Expr::IsNull {
                    expr: Box::new(Expr::col(0)),
                    negated: false,
                }]);
                let (matched, rows, null_rows) = (width, width + 1, width + 2);
                let positive = |c: usize| Expr::col(c).binary(BinaryOp::Gt, Expr::lit(0));
                let is_null = |e: Expr| Expr::IsNull {
                    expr: Box::new(e),
                    negated: false,
                };
                let mark = Expr::Case {
                    operand: None,
                    branches: vec![
                        (positive(matched), Expr::Literal(Value::Bool(true))),
                        (
                            Expr::col(rows).eq(Expr::lit(0)),
                            Expr::Literal(Value::Bool(false)),
                        ),
                        (
                            is_null(x.clone()).binary(BinaryOp::Or, positive(null_rows)),
                            Expr::Cast {
                                expr: Box::new(Expr::Literal(Value::Null)),
                                to: DataType::Boolean,
                            },
                        ),
                    ],
                    else_result: Some(Box::new(Expr::Literal(Value::Bool(false)))),
                };
                // Appended in this order: `matched`, `rows`, `null_rows`.
                (vec![equal, (**subquery).clone(), nulls], mark)
            }
        };
        let applied = counts
            .into_iter()
            .fold((**input).clone(), |rows, body| LogicalPlan::Apply {
                input: Box::new(rows),
                subquery: Box::new(count_star(body)),
                kind: ApplyKind::Scalar,
                field: Field::new("__count", DataType::Int64),
                position: position.clone(),
            });
        let mut exprs: Vec<Expr> = (0..width).map(Expr::Column).collect();
        exprs.push(mark);
        let mut fields = input.schema().fields;
        fields.push(field.clone());
        Ok(Some(applied.project(exprs, fields)))
    }
}

/// `SELECT count(*) FROM rows`.
fn count_star(rows: LogicalPlan) -> LogicalPlan {
    LogicalPlan::Aggregate {
        input: Box::new(rows),
        groups: vec![],
        group_fields: vec![],
        aggs: vec![AggregateExpr {
            func: AggFunc::CountStar,
            arg: None,
            input_type: DataType::Int64,
            param: None,
            order_by: Vec::new(),
        }],
        agg_names: vec!["count".to_string()],
    }
}
