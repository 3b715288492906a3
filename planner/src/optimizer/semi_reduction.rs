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

impl Reducer<'_> {
    /// `plan` with an aggregation reached from its column `col` through projections,
    /// filters, aliases and inner-join equalities reduced; `None` when there is none to reduce.
    fn through_joins(&self, plan: &LogicalPlan, col: usize) -> Option<LogicalPlan> {
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
                    input: Box::new(self.through_joins(input, *inner)?),
                    exprs: exprs.clone(),
                    fields: fields.clone(),
                })
            }
            LogicalPlan::Filter { input, predicate } => Some(LogicalPlan::Filter {
                input: Box::new(self.through_joins(input, col)?),
                predicate: predicate.clone(),
            }),
            LogicalPlan::SubqueryAlias { input, alias } => Some(LogicalPlan::SubqueryAlias {
                input: Box::new(self.through_joins(input, col)?),
                alias: alias.clone(),
            }),
            LogicalPlan::Join {
                left,
                right,
                kind: JoinKind::Inner,
                on,
                filter,
            } => {
                let left_width = left.width();
                let rebuilt = |l: LogicalPlan, r: LogicalPlan| LogicalPlan::Join {
                    left: Box::new(l),
                    right: Box::new(r),
                    kind: JoinKind::Inner,
                    on: on.clone(),
                    filter: filter.clone(),
                };
                if col < left_width {
                    // An equality of the key with a column of the right side reaches it.
                    for (l, r) in on {
                        if let (Expr::Column(c), Expr::Column(other)) = (l, r) {
                            if *c == col {
                                if let Some(reduced) = self.reduce_aggregate(right, *other) {
                                    return Some(rebuilt(left.as_ref().clone(), reduced));
                                }
                            }
                        }
                    }
                    let reduced = self.through_joins(left, col)?;
                    Some(rebuilt(reduced, right.as_ref().clone()))
                } else {
                    let col = col - left_width;
                    for (l, r) in on {
                        if let (Expr::Column(other), Expr::Column(c)) = (l, r) {
                            if *c == col {
                                if let Some(reduced) = self.reduce_aggregate(left, *other) {
                                    return Some(rebuilt(reduced, right.as_ref().clone()));
                                }
                            }
                        }
                    }
                    let reduced = self.through_joins(right, col)?;
                    Some(rebuilt(left.as_ref().clone(), reduced))
                }
            }
            _ => None,
        }
    }

    /// `plan` with the aggregation whose group key is its column `col` (through
    /// projections, filters and aliases) reading only the rows the semi join keeps; `None` when
    /// there is no such aggregation, it is reduced already, or the subquery is estimated to
    /// be no smaller than what the aggregation reads.
    fn reduce_aggregate(&self, plan: &LogicalPlan, col: usize) -> Option<LogicalPlan> {
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
                    input: Box::new(self.reduce_aggregate(input, *inner)?),
                    exprs: exprs.clone(),
                    fields: fields.clone(),
                })
            }
            LogicalPlan::Filter { input, predicate } => Some(LogicalPlan::Filter {
                input: Box::new(self.reduce_aggregate(input, col)?),
                predicate: predicate.clone(),
            }),
            LogicalPlan::SubqueryAlias { input, alias } => Some(LogicalPlan::SubqueryAlias {
                input: Box::new(self.reduce_aggregate(input, col)?),
                alias: alias.clone(),
            }),
            LogicalPlan::Aggregate {
                input,
                groups,
                group_fields,
                aggs,
                agg_names,
            } => {
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
            _ => None,
        }
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
