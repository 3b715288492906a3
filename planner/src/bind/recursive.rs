//! Binding of a recursive CTE, `WITH RECURSIVE r(cols) AS (base UNION [ALL] step)`, as
//! PostgreSQL and SQLite define it.
//!
//! The base term is bound first, without `r` in scope; its columns (renamed by the column
//! list) are `r`'s. Then the step is bound with `r` as a [`LogicalPlan::WorkTable`] (the rows
//! the round before added) and its columns cast to the base's types. The step may read `r`
//! once, and not inside a subquery, an aggregate or window, the nullable side of an outer
//! join, INTERSECT or EXCEPT: each of those is an error naming the construct, in
//! PostgreSQL's words.

use super::relations::{rename_columns, union_all};
use super::*;
use crate::bind::BoundQuery;
use crate::logical::{JoinKind, LogicalPlan};
use weir_operators::Schema;

/// Whether `query` names the table `name` anywhere (so that, under `WITH RECURSIVE`, the CTE
/// `name` of that query is a recursive one).
pub(super) fn refers_to(query: &sql::Query, name: &str) -> bool {
    names(query, name)
}

/// Whether `node` names the table `name` anywhere.
fn names<V: sql::Visit>(node: &V, name: &str) -> bool {
    sql::visit_relations(node, |rel| match rel.0.last() {
        Some(sql::ObjectNamePart::Identifier(id)) if id.value.to_lowercase() == name => {
            ControlFlow::Break(())
        }
        _ => ControlFlow::Continue(()),
    })
    .is_break()
}

/// The error of a recursive query that breaks one of the rules of its form.
fn invalid(message: String, span: Span) -> PlanError {
    PlanError::Invalid(format!("{message}{}", at(span)))
}

impl Binder<'_> {
    /// The recursive CTE `cte`, named `name` (lowercase), which names itself.
    pub(super) fn recursive_cte(
        &mut self,
        cte: &sql::Cte,
        name: &str,
    ) -> Result<BoundQuery, PlanError> {
        let q = &cte.query;
        let span = cte.alias.name.span;
        if q.order_by.is_some() {
            return Err(unsupported("ORDER BY in a recursive query", span));
        }
        if q.limit_clause.is_some() || q.fetch.is_some() {
            return Err(unsupported("LIMIT or OFFSET in a recursive query", span));
        }
        let sql::SetExpr::SetOperation {
            op: sql::SetOperator::Union,
            set_quantifier,
            left,
            right,
        } = q.body.as_ref()
        else {
            return Err(invalid(
                format!(
                    "recursive query \"{name}\" does not have the form non-recursive-term UNION [ALL] recursive-term"
                ),
                span,
            ));
        };
        let distinct = match set_quantifier {
            sql::SetQuantifier::All => false,
            sql::SetQuantifier::Distinct | sql::SetQuantifier::None => true,
            other => return Err(unsupported(format!("UNION {other}"), span)),
        };
        if names(left.as_ref(), name) {
            return Err(invalid(
                format!(
                    "recursive reference to query \"{name}\" must not appear within its non-recursive term"
                ),
                span,
            ));
        }
        // The CTE's own WITH list, if any, is in scope of both terms; outer columns are not.
        let ctes_before = self.ctes.len();
        self.outer.push(None);
        let bound = self
            .with_clause(q)
            .and_then(|()| self.recursive_terms(cte, name, distinct, left, right));
        self.outer.pop();
        self.ctes.truncate(ctes_before);
        bound
    }

    /// [`Binder::recursive_cte`] once its WITH list is bound: `left UNION [ALL] right`.
    fn recursive_terms(
        &mut self,
        cte: &sql::Cte,
        name: &str,
        distinct: bool,
        left: &sql::SetExpr,
        right: &sql::SetExpr,
    ) -> Result<BoundQuery, PlanError> {
        let span = cte.alias.name.span;
        let mut base = self.set_expr(left)?;
        rename_columns(&mut base.fields, &cte.alias, span)?;
        let work_table = BoundQuery {
            plan: LogicalPlan::WorkTable {
                name: name.to_string(),
                schema: Schema::new(base.fields.clone()),
            },
            fields: base.fields.clone(),
        };
        self.ctes.push((name.to_string(), work_table));
        let step = self.set_expr(right);
        self.ctes.pop();
        let step = step?;
        if step.fields.len() != base.fields.len() {
            return Err(invalid(
                format!(
                    "each UNION query must have the same number of columns ({} and {})",
                    base.fields.len(),
                    step.fields.len()
                ),
                span,
            ));
        }
        let types: Vec<DataType> = base.fields.iter().map(|f| f.data_type).collect();
        for (i, (t, f)) in types.iter().zip(&step.fields).enumerate() {
            let u = f.data_type;
            if u != *t && DataType::numeric_union(*t, u).is_none() && !implicit_cast(u, *t) {
                return Err(PlanError::Type(format!(
                    "recursive query \"{name}\" column {} has type {t} in its non-recursive term but type {u} in its recursive term{}",
                    i + 1,
                    at(span)
                )));
            }
        }
        let step = self.cast_columns(step, &types);
        let uses = check_step(&step, name, span)?;
        let plan = match uses {
            // Only a CTE of the same name inside the step was named: no recursion.
            0 => {
                let union = union_all(base.plan, step);
                if distinct {
                    LogicalPlan::Distinct {
                        input: Box::new(union),
                    }
                } else {
                    union
                }
            }
            1 => LogicalPlan::RecursiveCte {
                name: name.to_string(),
                base: Box::new(base.plan),
                step: Box::new(step),
                distinct,
            },
            _ => {
                return Err(invalid(
                    format!(
                        "recursive reference to query \"{name}\" must not appear more than once"
                    ),
                    span,
                ))
            }
        };
        Ok(BoundQuery {
            plan,
            fields: base.fields,
        })
    }
}

/// Whether `plan` reads the work table of `name`.
fn reads(plan: &LogicalPlan, name: &str) -> bool {
    match plan {
        LogicalPlan::WorkTable { name: n, .. } => n == name,
        other => other.inputs().into_iter().any(|i| reads(i, name)),
    }
}

/// How many times the step `plan` of the recursive query `name` reads its work table, or
/// the error of a place where it may not.
fn check_step(plan: &LogicalPlan, name: &str, span: Span) -> Result<usize, PlanError> {
    let within = |what: &str| {
        invalid(
            format!("recursive reference to query \"{name}\" must not appear within {what}"),
            span,
        )
    };
    let not_allowed = |what: &str| {
        invalid(
            format!(
                "{what} are not allowed in a recursive query's recursive term (query \"{name}\")"
            ),
            span,
        )
    };
    Ok(match plan {
        LogicalPlan::WorkTable { name: n, .. } => usize::from(n == name),
        LogicalPlan::Apply {
            input, subquery, ..
        } => {
            if reads(subquery, name) {
                return Err(within("a subquery"));
            }
            check_step(input, name, span)?
        }
        LogicalPlan::Join {
            left, right, kind, ..
        } => {
            let (l, r) = (
                check_step(left, name, span)?,
                check_step(right, name, span)?,
            );
            let nullable = match kind {
                JoinKind::Left => r > 0,
                JoinKind::Right => l > 0,
                JoinKind::Full => l + r > 0,
                _ => false,
            };
            if nullable {
                return Err(within("an outer join"));
            }
            l + r
        }
        LogicalPlan::Aggregate { input, .. } if reads(input, name) => {
            return Err(not_allowed("aggregate functions and GROUP BY"))
        }
        LogicalPlan::Window { input, .. } if reads(input, name) => {
            return Err(not_allowed("window functions"))
        }
        LogicalPlan::SetOp { kind, .. } if reads(plan, name) => {
            return Err(within(match kind {
                crate::logical::SetOpKind::Intersect | crate::logical::SetOpKind::IntersectAll => {
                    "INTERSECT"
                }
                _ => "EXCEPT",
            }))
        }
        LogicalPlan::RecursiveCte { .. } if reads(plan, name) => {
            return Err(within("another recursive query"))
        }
        other => other
            .inputs()
            .into_iter()
            .map(|i| check_step(i, name, span))
            .sum::<Result<usize, _>>()?,
    })
}
