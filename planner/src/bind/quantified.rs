//! `x op ANY (...)`, `x op SOME (...)` and `x op ALL (...)`, PostgreSQL's quantified
//! comparisons, over a list written `ARRAY[a, b, ...]` or over a subquery of one column.
//!
//! Over `ARRAY[...]` they are the comparisons joined by OR (ANY) or AND (ALL), which have
//! their NULL rules: `x = ANY(ARRAY[1, NULL])` is NULL unless `x` is 1. Over a subquery,
//! `= ANY` is `IN` and `<> ALL` is `NOT IN` (a semi- or anti-join); the other comparisons
//! become correlated EXISTS tests that the unnesting turns into joins:
//! `x > ANY (q)` is true when some value of `q` makes `x > v` true, else NULL when some
//! makes it NULL, else false (no rows: false), and `ALL` the other way round.

use super::row_values::{boolean, entry, exists_row};
use super::*;

impl Binder<'_> {
    /// Binds `e`, an ANY/SOME or ALL comparison.
    pub(super) fn quantified(
        &mut self,
        e: &sql::Expr,
        scope: &Scope,
        agg: Option<&mut AggCtx>,
    ) -> Result<B, PlanError> {
        use sql::BinaryOperator as Op;
        let span = e.span();
        let (left, op, right, any) = match e {
            sql::Expr::AnyOp {
                left,
                compare_op,
                right,
                ..
            } => (left, compare_op, right, true),
            sql::Expr::AllOp {
                left,
                compare_op,
                right,
            } => (left, compare_op, right, false),
            _ => {
                return Err(PlanError::Invalid(format!(
                    "internal planner error: '{e}' is not ANY or ALL"
                )))
            }
        };
        if !matches!(
            op,
            Op::Eq | Op::NotEq | Op::Lt | Op::LtEq | Op::Gt | Op::GtEq
        ) {
            return Err(super::unsupported(
                format!("the operator {op} with ANY or ALL"),
                span,
            ));
        }
        let compare = |right: sql::Expr| sql::Expr::BinaryOp {
            left: left.clone(),
            op: op.clone(),
            right: Box::new(right),
        };
        let mut right = right.as_ref();
        while let sql::Expr::Nested(inner) = right {
            right = inner;
        }
        match right {
            sql::Expr::Array(array) => {
                let joiner = if any { Op::Or } else { Op::And };
                let joined = array
                    .elem
                    .iter()
                    .map(|item| compare(item.clone()))
                    .reduce(|a, b| sql::Expr::BinaryOp {
                        left: Box::new(a),
                        op: joiner.clone(),
                        right: Box::new(b),
                    })
                    .ok_or_else(|| {
                        PlanError::Invalid(format!(
                            "cannot determine the type of an empty ARRAY[] in '{e}'{}",
                            at(span)
                        ))
                    })?;
                self.expr(&sql::Expr::Nested(Box::new(joined)), scope, agg)
            }
            sql::Expr::Subquery(q) => {
                if let sql::SetExpr::Select(select) = q.body.as_ref() {
                    let wildcard = select.projection.iter().any(|item| {
                        matches!(
                            item,
                            sql::SelectItem::Wildcard(_) | sql::SelectItem::QualifiedWildcard(..)
                        )
                    });
                    if !wildcard && select.projection.len() != 1 {
                        return Err(PlanError::Invalid(format!(
                            "subquery has too many columns in '{e}'{}",
                            at(span)
                        )));
                    }
                }
                match (any, op) {
                    (true, Op::Eq) => return self.in_subquery(e, left, q, false, scope, agg),
                    (false, Op::NotEq) => return self.in_subquery(e, left, q, true, scope, agg),
                    _ => {}
                }
                // Over the subquery's rows, read as a row of one entry.
                let holds = compare(entry(0));
                let unknown = sql::Expr::IsNull(Box::new(holds.clone()));
                // ANY is decided (true) by a row that makes the comparison true, ALL (false)
                // by one that makes it false.
                let decides = if any {
                    holds
                } else {
                    sql::Expr::UnaryOp {
                        op: sql::UnaryOperator::Not,
                        expr: Box::new(sql::Expr::Nested(Box::new(holds))),
                    }
                };
                let case = sql::Expr::Case {
                    case_token: sql::helpers::attached_token::AttachedToken::empty(),
                    end_token: sql::helpers::attached_token::AttachedToken::empty(),
                    operand: None,
                    conditions: vec![
                        sql::CaseWhen {
                            condition: exists_row(q, 1, decides)?,
                            result: boolean(Some(any)),
                        },
                        sql::CaseWhen {
                            condition: exists_row(q, 1, unknown)?,
                            result: boolean(None),
                        },
                    ],
                    else_result: Some(Box::new(boolean(Some(!any)))),
                };
                self.expr(&case, scope, agg)
            }
            _ => Err(super::unsupported(
                format!(
                    "ANY or ALL over '{right}' (over a subquery or ARRAY[...] only: weir has \
                     no array values)"
                ),
                span,
            )),
        }
    }
}
