//! Subquery decorrelation: every [`LogicalPlan::Apply`] the binder left becomes a join.
//!
//! - `WHERE ... AND [NOT] EXISTS (q)` → a semi (anti) join of the rows with `q`, on `q`'s
//!   correlated conjuncts.
//! - `WHERE ... AND x IN (q)` → a semi join on `x = q.col` and the correlated conjuncts;
//!   `x NOT IN (q)` → a null-aware anti join when `q` is uncorrelated, else an anti join whose
//!   condition counts an unknown comparison as a match (SQL's NULL rule).
//! - A scalar `(q)`: uncorrelated, a cross join with `q` forced to exactly one row;
//!   correlated by equalities on an aggregate (`SELECT agg(..) FROM .. WHERE inner = outer`),
//!   a left join with `q` grouped by the inner side of those equalities, where an unmatched
//!   row gets the aggregate of no rows (COUNT is 0, the others NULL).
//!
//! The correlated conjuncts are pulled up from the subquery's filters through projections
//! (which are widened to keep the columns they read). A subquery of any other shape (an
//! inequality under an aggregate, GROUP BY, LIMIT, outer references in its select list, ...)
//! is unnested in general by `super::unnest`.

use super::rule::Rule;
use super::unnest;
use crate::error::PlanError;
use crate::logical::{
    and_all, columns_of, conjuncts, has_outer, strip_for_exists, ApplyKind, JoinKind, LogicalPlan,
};
use weir_operators::plan::{AggFunc, AggregateExpr};
use weir_operators::{DataType, Expr, Field, ScalarFunc, Value};

/// `Filter(.. AND [NOT] mark, Apply EXISTS|IN)` → semi or anti join.
pub(crate) struct DecorrelateExistsIn;

/// `Filter(p, SemiJoin(l, r))` → `SemiJoin(Filter(p, l), r)` (also anti joins): brings the
/// next Apply under its filter.
pub(crate) struct FilterIntoSemiJoin;

/// `Apply scalar` → cross join with a single row, or left join with a grouped aggregate.
pub(crate) struct DecorrelateScalar;

impl Rule for DecorrelateExistsIn {
    fn rewrite(&self, plan: &LogicalPlan) -> Result<Option<LogicalPlan>, PlanError> {
        let LogicalPlan::Filter { input, predicate } = plan else {
            return Ok(None);
        };
        let LogicalPlan::Apply {
            input: rows,
            subquery,
            kind,
            field,
            position,
        } = input.as_ref()
        else {
            return Ok(None);
        };
        if matches!(kind, ApplyKind::Scalar | ApplyKind::Lateral { .. }) {
            return Ok(None);
        }
        let mark = rows.width();
        let mut rest = Vec::new();
        conjuncts(predicate.clone(), &mut rest);
        let Some(at) = rest.iter().position(|c| mark_test(c, mark).is_some()) else {
            return Ok(None);
        };
        let negated = mark_test(&rest.remove(at), mark).expect("found above");
        if rest.iter().any(|c| columns_of(c).contains(&mark)) {
            return Ok(None);
        }
        // The shapes the semi join above does not take are unnested in general.
        let join = match semi_join((**rows).clone(), (**subquery).clone(), kind, negated) {
            Err(PlanError::Unsupported { .. }) => {
                unnest::semi_join((**rows).clone(), (**subquery).clone(), kind, negated)
            }
            done => done,
        }
        .map_err(|e| e.or_at(position))?;
        // The mark column stays, as the constant the filter required, so the rewritten node
        // keeps the Apply's width: a join above it (TPC-H Q21's NOT EXISTS over its EXISTS)
        // addresses its right side's columns after this node's, and must not see them shift.
        // The rest of the filter reads only columns before the mark, so it goes below the
        // projection, straight onto the join (where a further EXISTS' Apply can meet it).
        // Pruning drops the constant when nothing reads it.
        let mut fields = rows.schema().fields;
        fields.push(field.clone());
        let exprs = (0..mark)
            .map(Expr::Column)
            .chain(std::iter::once(Expr::Literal(Value::Bool(!negated))))
            .collect();
        Ok(Some(LogicalPlan::Project {
            input: Box::new(join.filter_all(rest)),
            exprs,
            fields,
        }))
    }
}

impl Rule for FilterIntoSemiJoin {
    fn rewrite(&self, plan: &LogicalPlan) -> Result<Option<LogicalPlan>, PlanError> {
        let LogicalPlan::Filter { input, predicate } = plan else {
            return Ok(None);
        };
        let LogicalPlan::Join {
            left,
            right,
            kind: kind @ (JoinKind::Semi | JoinKind::Anti | JoinKind::AntiNullAware),
            on,
            filter,
        } = input.as_ref()
        else {
            return Ok(None);
        };
        Ok(Some(LogicalPlan::Join {
            left: Box::new(LogicalPlan::Filter {
                input: left.clone(),
                predicate: predicate.clone(),
            }),
            right: right.clone(),
            kind: *kind,
            on: on.clone(),
            filter: filter.clone(),
        }))
    }
}

impl Rule for DecorrelateScalar {
    fn rewrite(&self, plan: &LogicalPlan) -> Result<Option<LogicalPlan>, PlanError> {
        let LogicalPlan::Apply {
            input,
            subquery,
            kind: ApplyKind::Scalar,
            field,
            position,
        } = plan
        else {
            return Ok(None);
        };
        if !subquery.is_correlated() {
            return Ok(Some(LogicalPlan::Join {
                left: input.clone(),
                right: Box::new(LogicalPlan::SingleRow {
                    input: subquery.clone(),
                }),
                kind: JoinKind::Inner,
                on: vec![],
                filter: None,
            }));
        }
        // The shapes the grouped left join does not take are unnested in general.
        match correlated_scalar((**input).clone(), (**subquery).clone(), field.clone()) {
            Err(PlanError::Unsupported { .. }) => {
                unnest::scalar((**input).clone(), (**subquery).clone(), field.clone())
            }
            done => done,
        }
        .map(Some)
        .map_err(|e| e.or_at(position))
    }
}

/// `Some(negated)` when `c` is `mark` or `NOT mark`.
fn mark_test(c: &Expr, mark: usize) -> Option<bool> {
    match c {
        Expr::Column(i) if *i == mark => Some(false),
        Expr::Not(x) if **x == Expr::Column(mark) => Some(true),
        _ => None,
    }
}

/// A correlated conjunct of the subquery rewritten over the join's row: outer columns are
/// the left input's, the subquery's columns follow them from `width` on.
fn over_join_row(c: &Expr, width: usize) -> Expr {
    c.transform(&mut |e| match e {
        Expr::OuterColumn(o) => Some(Expr::Column(*o)),
        Expr::Column(i) => Some(Expr::Column(width + i)),
        _ => None,
    })
}

fn semi_join(
    rows: LogicalPlan,
    subquery: LogicalPlan,
    kind: &ApplyKind,
    negated: bool,
) -> Result<LogicalPlan, PlanError> {
    let width = rows.width();
    let join = |right, kind, on, filter| LogicalPlan::Join {
        left: Box::new(rows.clone()),
        right: Box::new(right),
        kind,
        on,
        filter,
    };
    match kind {
        ApplyKind::Exists => {
            let (body, conds) = pull_correlated(strip_for_exists(subquery))?;
            let filter = and_all(conds.iter().map(|c| over_join_row(c, width)).collect());
            let kind = if negated {
                JoinKind::Anti
            } else {
                JoinKind::Semi
            };
            Ok(join(body, kind, vec![], filter))
        }
        ApplyKind::In(x) => {
            let (body, conds) = pull_correlated(subquery)?;
            let mut filter: Vec<Expr> = conds.iter().map(|c| over_join_row(c, width)).collect();
            let matches = x.clone().eq(Expr::Column(width));
            if !negated {
                filter.insert(0, matches);
                return Ok(join(body, JoinKind::Semi, vec![], and_all(filter)));
            }
            if filter.is_empty() {
                let on = vec![(x.clone(), Expr::Column(0))];
                return Ok(join(body, JoinKind::AntiNullAware, on, None));
            }
            // A row survives NOT IN only if every comparison is FALSE: an unknown one counts
            // as a match.
            let unknown_or_true = Expr::Function {
                func: ScalarFunc::Coalesce,
                args: vec![matches, Expr::Literal(Value::Bool(true))],
            };
            filter.insert(0, unknown_or_true);
            Ok(join(body, JoinKind::Anti, vec![], and_all(filter)))
        }
        ApplyKind::Scalar | ApplyKind::Lateral { .. } => Err(PlanError::Invalid(
            "a scalar or LATERAL subquery is not a semi join".to_string(),
        )),
    }
}

/// What `plan` is, in words, for errors (`"a table scan"`, `"ORDER BY"`).
pub(crate) fn node_name(plan: &LogicalPlan) -> &'static str {
    match plan {
        LogicalPlan::Scan { .. } => "a table scan",
        LogicalPlan::Values { .. } => "VALUES",
        LogicalPlan::TableFunction { .. } | LogicalPlan::Expand { .. } => "a table function",
        LogicalPlan::Filter { .. } => "a filter",
        LogicalPlan::Project { .. } => "a projection",
        LogicalPlan::Join { .. } => "a join (outer reference in ON)",
        LogicalPlan::Aggregate { .. } => "GROUP BY or an aggregate",
        LogicalPlan::Distinct { .. } => "DISTINCT",
        LogicalPlan::Sort { .. } => "ORDER BY",
        LogicalPlan::Limit { .. } => "LIMIT",
        LogicalPlan::Union { .. } => "UNION",
        LogicalPlan::SetOp { .. } => "INTERSECT or EXCEPT",
        LogicalPlan::SubqueryAlias { .. } => "a derived table",
        LogicalPlan::Apply { .. } => "a nested subquery",
        LogicalPlan::SingleRow { .. } => "a scalar subquery",
        LogicalPlan::Window { .. } => "a window function",
        LogicalPlan::RecursiveCte { .. } | LogicalPlan::WorkTable { .. } => "a recursive query",
    }
}

/// Takes the correlated conjuncts out of `plan`'s filters: returns the plan without them and
/// the conjuncts, over the returned plan's columns (and outer columns).
fn pull_correlated(plan: LogicalPlan) -> Result<(LogicalPlan, Vec<Expr>), PlanError> {
    if !plan.is_correlated() {
        return Ok((plan, vec![]));
    }
    match plan {
        LogicalPlan::Filter { input, predicate } => {
            let (input, mut conds) = pull_correlated(*input)?;
            let mut all = Vec::new();
            conjuncts(predicate, &mut all);
            let (outer, local): (Vec<Expr>, Vec<Expr>) = all.into_iter().partition(has_outer);
            conds.extend(outer);
            Ok((input.filter_all(local), conds))
        }
        LogicalPlan::Project {
            input,
            mut exprs,
            mut fields,
        } => {
            if exprs.iter().any(has_outer) {
                return Err(PlanError::unsupported(
                    "outer references in the select list of a correlated subquery",
                    "",
                ));
            }
            let (input, conds) = pull_correlated(*input)?;
            let schema = input.schema();
            let mut moved = std::collections::BTreeMap::new();
            for c in conds.iter().flat_map(columns_of) {
                moved.entry(c).or_insert_with(|| {
                    exprs.push(Expr::Column(c));
                    fields.push(schema.fields[c].clone());
                    exprs.len() - 1
                });
            }
            let conds = conds
                .iter()
                .map(|e| e.map_columns(&|c| moved[&c]))
                .collect();
            Ok((
                LogicalPlan::Project {
                    input: Box::new(input),
                    exprs,
                    fields,
                },
                conds,
            ))
        }
        LogicalPlan::SubqueryAlias { input, alias } => {
            let (input, conds) = pull_correlated(*input)?;
            Ok((
                LogicalPlan::SubqueryAlias {
                    input: Box::new(input),
                    alias,
                },
                conds,
            ))
        }
        LogicalPlan::Distinct { input } => {
            let (input, conds) = pull_correlated(*input)?;
            Ok((
                LogicalPlan::Distinct {
                    input: Box::new(input),
                },
                conds,
            ))
        }
        other => Err(PlanError::unsupported(
            format!(
                "a correlated subquery with {} between its outer reference and its result",
                node_name(&other)
            ),
            "",
        )),
    }
}

/// `inner = outer` (either way round) as `(inner column, outer expression over the Apply's
/// input)`, when the inner side is a plain column and the outer side reads only outer columns.
fn correlation_key(c: &Expr) -> Option<(usize, Expr)> {
    let Expr::Binary {
        op: weir_operators::BinaryOp::Eq,
        left,
        right,
    } = c
    else {
        return None;
    };
    let outer_only = |e: &Expr| has_outer(e) && columns_of(e).is_empty();
    let (inner, outer) = match (left.as_ref(), right.as_ref()) {
        (Expr::Column(i), o) if outer_only(o) => (*i, o),
        (o, Expr::Column(i)) if outer_only(o) => (*i, o),
        _ => return None,
    };
    let outer = outer.transform(&mut |e| match e {
        Expr::OuterColumn(o) => Some(Expr::Column(*o)),
        _ => None,
    });
    Some((inner, outer))
}

fn correlated_scalar(
    input: LogicalPlan,
    subquery: LogicalPlan,
    field: Field,
) -> Result<LogicalPlan, PlanError> {
    let unsupported =
        |what: &str| PlanError::unsupported(format!("a correlated scalar subquery {what}"), "");
    let mut sub = subquery;
    while let LogicalPlan::SubqueryAlias { input, .. } = sub {
        sub = *input;
    }
    let (top, agg) = match sub {
        LogicalPlan::Project { input, exprs, .. }
            if matches!(*input, LogicalPlan::Aggregate { .. }) =>
        {
            (exprs, *input)
        }
        agg @ LogicalPlan::Aggregate { .. } => (vec![Expr::Column(0)], agg),
        rows => at_most_one_row(rows),
    };
    let LogicalPlan::Aggregate {
        input: body,
        groups,
        aggs,
        agg_names,
        ..
    } = agg
    else {
        unreachable!("matched an Aggregate above");
    };
    if !groups.is_empty() {
        return Err(unsupported("with GROUP BY"));
    }
    let (body, conds) = pull_correlated(*body)?;
    let schema = body.schema();
    let mut inner_keys = Vec::new();
    let mut outer_keys = Vec::new();
    for c in &conds {
        let Some((inner, outer)) = correlation_key(c) else {
            return Err(unsupported(
                "correlated by something other than `column = outer expression`",
            ));
        };
        inner_keys.push(inner);
        outer_keys.push(outer);
    }
    let k = inner_keys.len();
    let [value] = top.as_slice() else {
        return Err(unsupported("with more than one column"));
    };
    let value = value.map_columns(&|c| c + k);
    let count_like: Vec<bool> = aggs
        .iter()
        .map(|a| matches!(a.func, AggFunc::Count | AggFunc::CountStar))
        .collect();
    let agg_types: Vec<DataType> = aggs.iter().map(|a| a.output_type()).collect();
    let grouped = LogicalPlan::Aggregate {
        input: Box::new(body),
        groups: inner_keys.iter().map(|&c| Expr::Column(c)).collect(),
        group_fields: inner_keys
            .iter()
            .map(|&c| schema.fields[c].clone())
            .collect(),
        aggs,
        agg_names,
    };
    let mut exprs = vec![value.clone()];
    let mut fields = vec![field.clone()];
    for (i, &c) in inner_keys.iter().enumerate() {
        exprs.push(Expr::Column(i));
        fields.push(schema.fields[c].clone());
    }
    exprs.push(Expr::Literal(Value::Bool(true)));
    fields.push(Field::new("__matched", DataType::Boolean));
    let right = grouped.project(exprs, fields);
    let width = input.width();
    let in_fields = input.schema().fields;
    let joined = LogicalPlan::Join {
        left: Box::new(input),
        right: Box::new(right),
        kind: JoinKind::Left,
        on: outer_keys
            .into_iter()
            .enumerate()
            .map(|(i, o)| (o, Expr::Column(1 + i)))
            .collect(),
        filter: None,
    };
    // An unmatched row gets the value over no rows: COUNT is 0, every other aggregate NULL.
    let result = if count_like.iter().any(|c| *c) {
        let empty = value.transform(&mut |e| match e {
            Expr::Column(c) if *c >= k => Some(if count_like[c - k] {
                Expr::Literal(Value::Int(0))
            } else {
                Expr::Cast {
                    expr: Box::new(Expr::Literal(Value::Null)),
                    to: agg_types[c - k],
                }
            }),
            _ => None,
        });
        Expr::Case {
            operand: None,
            branches: vec![(
                Expr::IsNull {
                    expr: Box::new(Expr::Column(width + 1 + k)),
                    negated: false,
                },
                empty,
            )],
            else_result: Some(Box::new(Expr::Column(width))),
        }
    } else {
        Expr::Column(width)
    };
    let mut exprs: Vec<Expr> = (0..width).map(Expr::Column).collect();
    exprs.push(result);
    let mut fields = in_fields;
    fields.push(field);
    Ok(joined.project(exprs, fields))
}

/// `(SELECT x FROM ...)` without an aggregate as one: `x` of the only row, NULL without rows,
/// and an error where a row of the outer query has more than one (`MIN(x)` and `COUNT(*)`
/// per correlation key tell which).
fn at_most_one_row(rows: LogicalPlan) -> (Vec<Expr>, LogicalPlan) {
    let input_type = rows.schema().fields[0].data_type;
    let agg = LogicalPlan::Aggregate {
        input: Box::new(rows),
        groups: vec![],
        group_fields: vec![],
        aggs: vec![
            AggregateExpr {
                func: AggFunc::Min,
                arg: Some(Expr::Column(0)),
                input_type,
                param: None,
                order_by: Vec::new(),
            },
            AggregateExpr {
                func: AggFunc::CountStar,
                arg: None,
                input_type: DataType::Int64,
                param: None,
                order_by: Vec::new(),
            },
        ],
        agg_names: vec!["__value".to_string(), "__rows".to_string()],
    };
    let value = Expr::Case {
        operand: None,
        branches: vec![(
            Expr::col(1).binary(weir_operators::BinaryOp::Gt, Expr::lit(1)),
            Expr::Function {
                func: ScalarFunc::TooManyRows,
                args: vec![Expr::Column(0)],
            },
        )],
        else_result: Some(Box::new(Expr::Column(0))),
    };
    (vec![value], agg)
}

/// The error for an Apply that no rule could turn into a join.
pub(crate) fn check_no_apply(plan: &LogicalPlan) -> Result<(), PlanError> {
    if let LogicalPlan::Apply { kind, position, .. } = plan {
        let what = match kind {
            ApplyKind::Exists => "this EXISTS subquery",
            ApplyKind::In(_) => "this IN (SELECT ...) subquery",
            ApplyKind::Scalar => "this scalar subquery",
            ApplyKind::Lateral { .. } => "this LATERAL subquery",
        };
        return Err(PlanError::unsupported(what, position.clone()));
    }
    plan.inputs().into_iter().try_for_each(check_no_apply)
}
