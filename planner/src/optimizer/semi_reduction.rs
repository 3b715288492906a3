//! Semi-join reduction through a join key into an aggregation: [`ReduceAggregateBySemiJoin`].
//!
//! A semi join `(a ⋈ g) ⋉ s` on a column of `a` that the inner join equates with a group
//! key of an aggregation `g` keeps only the rows whose key is in `s`, and every joined row
//! has the same value in both columns; so only the groups whose key is in `s` can ever be
//! joined, and the aggregation may read only the rows whose key is in `s`:
//! `(a ⋈ γ(r)) ⋉ s = (a ⋈ γ(r ⋉ s)) ⋉ s`. The groups that remain are computed from the
//! same rows as before (a semi join on a group key removes whole groups), so their values do
//! not change.
//!
//! This is what a decorrelated subquery that aggregates per outer row needs when the outer
//! rows are filtered by a semi join above it (TPC-H Q20: `SUM(l_quantity)` per
//! `(ps_partkey, ps_suppkey)` of partsupp rows whose part is `LIKE 'forest%'`, 1 part in
//! 100): the aggregation reads the lineitem rows of those parts instead of a year of all
//! of lineitem, and its groups, gathered and broadcast to the join, are a hundredth as many.
//! The subquery `s` is then evaluated twice; the rule applies only where `s` is estimated to
//! have fewer rows than the aggregation reads.
//!
//! An inner join with a filtered table does the same to the aggregation on its other side:
//! `γ(r) ⋈ f = γ(r ⋉ f) ⋈ f` on a group key (TPC-H Q17: `AVG(l_quantity)` per part, joined
//! with the parts of one brand and container, 1 in 1,000, is computed for those parts only).
//! There the filtered table is read twice, so the rule takes only a filtered scan estimated at
//! a tenth or less of the rows the aggregation reads.

use super::estimate::estimate;
use super::rule::Rule;
use crate::catalog::Catalog;
use crate::error::PlanError;
use crate::logical::{JoinKind, LogicalPlan};
use weir_operators::Expr;

/// Adds a semi join's filter to the input of an aggregation its key reaches through an
/// inner join's equality (see the module comment).
pub(crate) struct ReduceAggregateBySemiJoin<'a> {
    /// The row counts behind the estimates.
    pub catalog: &'a Catalog,
}

/// How many times fewer rows than the aggregation reads a filtered table joined with it must
/// be estimated to hold for its scan to be read a second time as a semi join.
const INNER_JOIN_REDUCTION: f64 = 10.0;

impl Rule for ReduceAggregateBySemiJoin<'_> {
    fn rewrite(&self, plan: &LogicalPlan) -> Result<Option<LogicalPlan>, PlanError> {
        let LogicalPlan::Join {
            left,
            right,
            kind,
            on,
            filter,
        } = plan
        else {
            return Ok(None);
        };
        let rebuilt = |left: LogicalPlan, right: LogicalPlan| LogicalPlan::Join {
            left: Box::new(left),
            right: Box::new(right),
            kind: *kind,
            on: on.clone(),
            filter: filter.clone(),
        };
        match kind {
            JoinKind::Semi => {
                let [(Expr::Column(key), sub_key)] = on.as_slice() else {
                    return Ok(None);
                };
                if filter.is_some() {
                    return Ok(None);
                }
                let reducer = Reducer {
                    sub: right,
                    sub_key,
                    catalog: self.catalog,
                    ratio: 1.0,
                };
                Ok(reducer
                    .through_joins(left, *key)
                    .map(|reduced| rebuilt(reduced, right.as_ref().clone())))
            }
            JoinKind::Inner => {
                for (l, r) in on {
                    let (Expr::Column(a), Expr::Column(b)) = (l, r) else {
                        continue;
                    };
                    if filtered_scan(right) {
                        let reducer = Reducer {
                            sub: right,
                            sub_key: r,
                            catalog: self.catalog,
                            ratio: INNER_JOIN_REDUCTION,
                        };
                        if let Some(reduced) = reducer.reduce_aggregate(left, *a) {
                            return Ok(Some(rebuilt(reduced, right.as_ref().clone())));
                        }
                    }
                    if filtered_scan(left) {
                        let reducer = Reducer {
                            sub: left,
                            sub_key: l,
                            catalog: self.catalog,
                            ratio: INNER_JOIN_REDUCTION,
                        };
                        if let Some(reduced) = reducer.reduce_aggregate(right, *b) {
                            return Ok(Some(rebuilt(left.as_ref().clone(), reduced)));
                        }
                    }
                }
                Ok(None)
            }
            _ => Ok(None),
        }
    }
}

/// Whether `plan` is a scan with a filter, under projections and filters: cheap to read
/// again, and fewer rows than its table.
fn filtered_scan(plan: &LogicalPlan) -> bool {
    match plan {
        LogicalPlan::Project { input, .. } | LogicalPlan::SubqueryAlias { input, .. } => {
            filtered_scan(input)
        }
        LogicalPlan::Filter { input, .. } => {
            matches!(input.as_ref(), LogicalPlan::Scan { .. }) || filtered_scan(input)
        }
        LogicalPlan::Scan { filters, .. } => !filters.is_empty(),
        _ => false,
    }
}

/// The semi join being pushed: its subquery and the subquery's key.
struct Reducer<'a> {
    sub: &'a LogicalPlan,
    sub_key: &'a Expr,
    catalog: &'a Catalog,
    /// How many times fewer rows than the aggregation reads the subquery must be estimated
    /// to return.
    ratio: f64,
}

/// `plan` rebuilt with `change` made where its column `col` comes from, followed down
/// through projections of plain columns, filters and aliases (which keep the column's
/// values); `change` gets the first other node and the column there. `None` when the column
/// is computed on the way, or `change` makes nothing.
fn along_column(
    plan: &LogicalPlan,
    col: usize,
    change: &dyn Fn(&LogicalPlan, usize) -> Option<LogicalPlan>,
) -> Option<LogicalPlan> {
    match plan {
        LogicalPlan::Project {
            input,
            exprs,
            fields,
        } => {
            let Some(Expr::Column(inner)) = exprs.get(col) else {
                return None;
            };
            Some(LogicalPlan::Project {
                input: Box::new(along_column(input, *inner, change)?),
                exprs: exprs.clone(),
                fields: fields.clone(),
            })
        }
        LogicalPlan::Filter { input, predicate } => Some(LogicalPlan::Filter {
            input: Box::new(along_column(input, col, change)?),
            predicate: predicate.clone(),
        }),
        LogicalPlan::SubqueryAlias { input, alias } => Some(LogicalPlan::SubqueryAlias {
            input: Box::new(along_column(input, col, change)?),
            alias: alias.clone(),
        }),
        other => change(other, col),
    }
}

impl Reducer<'_> {
    /// `plan` with an aggregation reached from its column `col` through projections,
    /// filters, aliases and inner-join equalities reduced; `None` when there is none to reduce.
    fn through_joins(&self, plan: &LogicalPlan, col: usize) -> Option<LogicalPlan> {
        along_column(plan, col, &|node, col| self.through_a_join(node, col))
    }

    /// [`Reducer::through_joins`] at an inner join: the aggregation on the other side of an
    /// equality with the column, or one further down the column's own side.
    fn through_a_join(&self, plan: &LogicalPlan, col: usize) -> Option<LogicalPlan> {
        let LogicalPlan::Join {
            left,
            right,
            kind: JoinKind::Inner,
            on,
            filter,
        } = plan
        else {
            return None;
        };
        let left_width = left.width();
        let rebuilt = |l: LogicalPlan, r: LogicalPlan| LogicalPlan::Join {
            left: Box::new(l),
            right: Box::new(r),
            kind: JoinKind::Inner,
            on: on.clone(),
            filter: filter.clone(),
        };
        let on_left = col < left_width;
        // The column of the other side each equality of the key with a column pairs it with.
        let partners = on.iter().filter_map(|pair| match pair {
            (Expr::Column(l), Expr::Column(r)) if on_left && *l == col => Some(*r),
            (Expr::Column(l), Expr::Column(r)) if !on_left && *r == col - left_width => Some(*l),
            _ => None,
        });
        for other in partners {
            if on_left {
                if let Some(reduced) = self.reduce_aggregate(right, other) {
                    return Some(rebuilt(left.as_ref().clone(), reduced));
                }
            } else if let Some(reduced) = self.reduce_aggregate(left, other) {
                return Some(rebuilt(reduced, right.as_ref().clone()));
            }
        }
        if on_left {
            Some(rebuilt(
                self.through_joins(left, col)?,
                right.as_ref().clone(),
            ))
        } else {
            let reduced = self.through_joins(right, col - left_width)?;
            Some(rebuilt(left.as_ref().clone(), reduced))
        }
    }

    /// `plan` with the aggregation whose group key is its column `col` (through
    /// projections, filters and aliases) reading only the rows the semi join keeps; `None`
    /// when there is no such aggregation, it is reduced already, or the subquery is not
    /// estimated [`Reducer::ratio`] times smaller than what the aggregation reads.
    fn reduce_aggregate(&self, plan: &LogicalPlan, col: usize) -> Option<LogicalPlan> {
        along_column(plan, col, &|node, col| self.reduce_here(node, col))
    }

    /// [`Reducer::reduce_aggregate`] at the aggregation itself.
    fn reduce_here(&self, plan: &LogicalPlan, col: usize) -> Option<LogicalPlan> {
        let LogicalPlan::Aggregate {
            input,
            groups,
            group_fields,
            aggs,
            agg_names,
        } = plan
        else {
            return None;
        };
        let Some(Expr::Column(read)) = groups.get(col) else {
            return None;
        };
        if reduced_on(input, *read)
            || estimate(self.sub, self.catalog).rows * self.ratio
                >= estimate(input, self.catalog).rows
        {
            return None;
        }
        Some(LogicalPlan::Aggregate {
            input: Box::new(LogicalPlan::Join {
                left: input.clone(),
                right: Box::new(self.sub.clone()),
                kind: JoinKind::Semi,
                on: vec![(Expr::Column(*read), self.sub_key.clone())],
                filter: None,
            }),
            groups: groups.clone(),
            group_fields: group_fields.clone(),
            aggs: aggs.clone(),
            agg_names: agg_names.clone(),
        })
    }
}

/// Whether `plan` is (through filters and projections of plain columns) a semi join on its
/// column `col`: an aggregation reduced already, whatever later rules made of the subquery.
fn reduced_on(plan: &LogicalPlan, col: usize) -> bool {
    match plan {
        LogicalPlan::Filter { input, .. } | LogicalPlan::SubqueryAlias { input, .. } => {
            reduced_on(input, col)
        }
        LogicalPlan::Project { input, exprs, .. } => match exprs.get(col) {
            Some(Expr::Column(inner)) => reduced_on(input, *inner),
            _ => false,
        },
        LogicalPlan::Join {
            kind: JoinKind::Semi,
            on,
            left,
            ..
        } => on.iter().any(|(l, _)| *l == Expr::Column(col)) || reduced_on(left, col),
        _ => false,
    }
}
