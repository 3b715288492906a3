//! Filter pushdown: conjuncts move as close to the scans as they can go.
//!
//! - [`PushDownFilters`]: a filter moves below projections (with its columns substituted),
//!   sorts, aliases, DISTINCT, unions, Applies and series expansions; merges with a filter below; enters a
//!   scan; splits over a join's sides (inner joins take the conjuncts over both sides as
//!   their condition; outer joins only let conjuncts into their preserved side); moves
//!   below an aggregation when it reads only group keys, and below a window when it reads
//!   only partition keys.
//! - [`JoinConditions`]: a join's condition is split into equality keys (`left = right`),
//!   conjuncts that go into one side, and a residual filter.
//! - [`OuterToInner`]: an outer join under a filter that rejects the NULLs it would add
//!   becomes an inner (or less outer) join.

use super::rule::Rule;
use crate::error::PlanError;
use crate::logical::{and_all, chain, columns_of, conjuncts, has_outer, JoinKind, LogicalPlan};
use weir_operators::{BinaryOp, Expr};

/// Moves filters down.
pub(crate) struct PushDownFilters;

/// Splits join conditions into keys, pushed conjuncts and a residual.
pub(crate) struct JoinConditions;

/// Turns outer joins into inner ones where a filter above rejects their NULL rows.
pub(crate) struct OuterToInner;

fn split(e: &Expr) -> Vec<Expr> {
    let mut v = Vec::new();
    conjuncts(e.clone(), &mut v);
    v.into_iter().flat_map(factor_or).collect()
}

/// The disjuncts of `e`'s top-level ORs.
fn disjuncts(e: Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::Binary {
            op: BinaryOp::Or,
            left,
            right,
        } => {
            disjuncts(*left, out);
            disjuncts(*right, out);
        }
        other => out.push(other),
    }
}

/// `(a AND b) OR (a AND c)` → `[a, b OR c]`: the conjuncts every disjunct of an OR shares
/// become conjuncts of their own (so a join key repeated in each branch, as in TPC-H Q19,
/// becomes a key). AND distributes over OR in SQL's three-valued logic too, so this is
/// exact. When some disjunct is nothing but shared conjuncts, the rest of the OR is implied
/// and goes.
fn factor_or(e: Expr) -> Vec<Expr> {
    if !matches!(
        e,
        Expr::Binary {
            op: BinaryOp::Or,
            ..
        }
    ) {
        return vec![e];
    }
    let mut branches = Vec::new();
    disjuncts(e.clone(), &mut branches);
    let branches: Vec<Vec<Expr>> = branches
        .into_iter()
        .map(|b| {
            let mut v = Vec::new();
            conjuncts(b, &mut v);
            v
        })
        .collect();
    let common: Vec<Expr> = branches[0]
        .iter()
        .filter(|c| branches[1..].iter().all(|b| b.contains(c)))
        .fold(Vec::new(), |mut acc, c| {
            if !acc.contains(c) {
                acc.push(c.clone());
            }
            acc
        });
    if common.is_empty() {
        return vec![e];
    }
    let rests: Vec<Vec<Expr>> = branches
        .into_iter()
        .map(|b| b.into_iter().filter(|c| !common.contains(c)).collect())
        .collect();
    let mut out = common;
    if rests.iter().all(|r| !r.is_empty()) {
        let or = chain(
            BinaryOp::Or,
            rests.into_iter().filter_map(and_all).collect(),
        );
        out.extend(or);
    }
    out
}

fn shift(e: &Expr, by: isize) -> Expr {
    e.map_columns(&|c| (c as isize + by) as usize)
}

/// Which sides of a join of left width `lw` a conjunct reads.
#[derive(PartialEq)]
enum Sides {
    None,
    Left,
    Right,
    Both,
}

fn sides(e: &Expr, lw: usize) -> Sides {
    let cols = columns_of(e);
    let l = cols.iter().any(|&c| c < lw);
    let r = cols.iter().any(|&c| c >= lw);
    match (l, r) {
        (false, false) => Sides::None,
        (true, false) => Sides::Left,
        (false, true) => Sides::Right,
        (true, true) => Sides::Both,
    }
}

/// `conds` split into those that read only the first `width` columns (an input's, which a
/// node that adds columns after them keeps in place) and the others.
fn of_input(conds: Vec<Expr>, width: usize) -> (Vec<Expr>, Vec<Expr>) {
    conds
        .into_iter()
        .partition(|c| columns_of(c).iter().all(|&x| x < width))
}

fn filtered(input: &LogicalPlan, conds: Vec<Expr>) -> Box<LogicalPlan> {
    Box::new(input.clone().filter_all(conds))
}

impl Rule for PushDownFilters {
    fn rewrite(&self, plan: &LogicalPlan) -> Result<Option<LogicalPlan>, PlanError> {
        let LogicalPlan::Filter { input, predicate } = plan else {
            return Ok(None);
        };
        let conds = split(predicate);
        // Correlated conjuncts stay where decorrelation left them (it reports them).
        if conds.iter().any(has_outer) {
            return Ok(None);
        }
        Ok(match input.as_ref() {
            LogicalPlan::Filter {
                input: inner,
                predicate: p2,
            } => {
                let mut all = split(p2);
                all.extend(conds);
                Some(inner.as_ref().clone().filter_all(all))
            }
            LogicalPlan::Project {
                input: inner,
                exprs,
                fields,
            } => {
                let substituted = conds
                    .iter()
                    .map(|c| {
                        c.transform(&mut |e| match e {
                            Expr::Column(i) => Some(exprs[*i].clone()),
                            _ => None,
                        })
                    })
                    .collect();
                Some(LogicalPlan::Project {
                    input: filtered(inner, substituted),
                    exprs: exprs.clone(),
                    fields: fields.clone(),
                })
            }
            LogicalPlan::Scan {
                table,
                projection,
                filters,
            } => {
                let mut filters = filters.clone();
                filters.extend(conds.iter().map(|c| c.map_columns(&|i| projection[i])));
                Some(LogicalPlan::Scan {
                    table: table.clone(),
                    projection: projection.clone(),
                    filters,
                })
            }
            LogicalPlan::Sort { input: inner, keys } => Some(LogicalPlan::Sort {
                input: filtered(inner, conds),
                keys: keys.clone(),
            }),
            LogicalPlan::SubqueryAlias {
                input: inner,
                alias,
            } => Some(LogicalPlan::SubqueryAlias {
                input: filtered(inner, conds),
                alias: alias.clone(),
            }),
            LogicalPlan::Distinct { input: inner } => Some(LogicalPlan::Distinct {
                input: filtered(inner, conds),
            }),
            LogicalPlan::Union { inputs } => Some(LogicalPlan::Union {
                inputs: inputs
                    .iter()
                    .map(|i| i.clone().filter_all(conds.clone()))
                    .collect(),
            }),
            LogicalPlan::Apply {
                input: inner,
                subquery,
                kind,
                field,
                position,
            } => {
                let (below, above) = of_input(conds, inner.width());
                if below.is_empty() {
                    return Ok(None);
                }
                Some(
                    LogicalPlan::Apply {
                        input: filtered(inner, below),
                        subquery: subquery.clone(),
                        kind: kind.clone(),
                        field: field.clone(),
                        position: position.clone(),
                    }
                    .filter_all(above),
                )
            }
            LogicalPlan::Aggregate {
                input: inner,
                groups,
                group_fields,
                aggs,
                agg_names,
            } => {
                let k = groups.len();
                let (below, above): (Vec<Expr>, Vec<Expr>) = conds.into_iter().partition(|c| {
                    !columns_of(c).is_empty() && columns_of(c).iter().all(|&i| i < k)
                });
                if below.is_empty() {
                    return Ok(None);
                }
                let below = below
                    .iter()
                    .map(|c| {
                        c.transform(&mut |e| match e {
                            Expr::Column(i) => Some(groups[*i].clone()),
                            _ => None,
                        })
                    })
                    .collect();
                Some(
                    LogicalPlan::Aggregate {
                        input: filtered(inner, below),
                        groups: groups.clone(),
                        group_fields: group_fields.clone(),
                        aggs: aggs.clone(),
                        agg_names: agg_names.clone(),
                    }
                    .filter_all(above),
                )
            }
            LogicalPlan::Join {
                left,
                right,
                kind,
                on,
                filter,
            } => push_into_join(left, right, *kind, on, filter, conds),
            LogicalPlan::Expand {
                input: inner,
                function,
                ordinality,
                fields,
            } => {
                // A conjunct that does not read the function's columns keeps or drops whole
                // input rows.
                let (below, above) = of_input(conds, inner.width());
                if below.is_empty() {
                    return Ok(None);
                }
                Some(
                    LogicalPlan::Expand {
                        input: filtered(inner, below),
                        function: function.clone(),
                        ordinality: *ordinality,
                        fields: fields.clone(),
                    }
                    .filter_all(above),
                )
            }
            LogicalPlan::Window {
                input: inner,
                partition_by,
                order_by,
                functions,
                names,
                keep,
            } => {
                // A conjunct over partition keys alone keeps or drops whole partitions: it
                // goes below, where it filters the rows before they are sorted.
                let keys: Vec<usize> = partition_by.iter().filter_map(Expr::column_index).collect();
                let (below, above): (Vec<Expr>, Vec<Expr>) = conds.into_iter().partition(|c| {
                    let cols = columns_of(c);
                    !cols.is_empty() && cols.iter().all(|i| keys.contains(i))
                });
                if below.is_empty() {
                    return Ok(None);
                }
                Some(
                    LogicalPlan::Window {
                        input: filtered(inner, below),
                        partition_by: partition_by.clone(),
                        order_by: order_by.clone(),
                        functions: functions.clone(),
                        names: names.clone(),
                        keep: *keep,
                    }
                    .filter_all(above),
                )
            }
            _ => None,
        })
    }
}

fn push_into_join(
    left: &LogicalPlan,
    right: &LogicalPlan,
    kind: JoinKind,
    on: &[(Expr, Expr)],
    filter: &Option<Expr>,
    conds: Vec<Expr>,
) -> Option<LogicalPlan> {
    let lw = left.width();
    let mut to_left = Vec::new();
    let mut to_right = Vec::new();
    let mut to_join = Vec::new();
    let mut stay = Vec::new();
    for c in conds {
        match (kind, sides(&c, lw)) {
            (JoinKind::Semi | JoinKind::Anti | JoinKind::AntiNullAware, _) => to_left.push(c),
            (JoinKind::Inner | JoinKind::Left, Sides::Left | Sides::None) => to_left.push(c),
            (JoinKind::Inner | JoinKind::Right, Sides::Right) => {
                to_right.push(shift(&c, -(lw as isize)))
            }
            (JoinKind::Inner, Sides::Both) => to_join.push(c),
            _ => stay.push(c),
        }
    }
    if to_left.is_empty() && to_right.is_empty() && to_join.is_empty() {
        return None;
    }
    let mut residual: Vec<Expr> = filter.iter().cloned().collect();
    residual.extend(to_join);
    Some(
        LogicalPlan::Join {
            left: filtered(left, to_left),
            right: filtered(right, to_right),
            kind,
            on: on.to_vec(),
            filter: and_all(residual),
        }
        .filter_all(stay),
    )
}

impl Rule for JoinConditions {
    fn rewrite(&self, plan: &LogicalPlan) -> Result<Option<LogicalPlan>, PlanError> {
        let LogicalPlan::Join {
            left,
            right,
            kind,
            on,
            filter: Some(filter),
        } = plan
        else {
            return Ok(None);
        };
        let conds = split(filter);
        if conds.iter().any(has_outer) {
            return Ok(None);
        }
        let lw = left.width();
        let mut on = on.clone();
        let mut to_left = Vec::new();
        let mut to_right = Vec::new();
        let mut residual = Vec::new();
        let null_aware = *kind == JoinKind::AntiNullAware;
        for c in conds {
            if !null_aware {
                if let Some((l, r)) = equi_key(&c, lw) {
                    on.push((l, r));
                    continue;
                }
            }
            match (kind, sides(&c, lw)) {
                (JoinKind::Inner | JoinKind::Semi, Sides::Left) => to_left.push(c),
                (
                    JoinKind::Inner | JoinKind::Left | JoinKind::Semi | JoinKind::Anti,
                    Sides::Right,
                ) => to_right.push(shift(&c, -(lw as isize))),
                (JoinKind::Right, Sides::Left) => to_left.push(c),
                _ => residual.push(c),
            }
        }
        let moved = residual.len() < split(filter).len();
        Ok(moved.then(|| LogicalPlan::Join {
            left: filtered(left, to_left),
            right: filtered(right, to_right),
            kind: *kind,
            on,
            filter: and_all(residual),
        }))
    }
}

/// `l = r` with one side over the left input only and the other over the right only.
fn equi_key(c: &Expr, lw: usize) -> Option<(Expr, Expr)> {
    let Expr::Binary {
        op: BinaryOp::Eq,
        left,
        right,
    } = c
    else {
        return None;
    };
    match (sides(left, lw), sides(right, lw)) {
        (Sides::Left, Sides::Right) => Some(((**left).clone(), shift(right, -(lw as isize)))),
        (Sides::Right, Sides::Left) => Some(((**right).clone(), shift(left, -(lw as isize)))),
        _ => None,
    }
}

impl Rule for OuterToInner {
    fn rewrite(&self, plan: &LogicalPlan) -> Result<Option<LogicalPlan>, PlanError> {
        let LogicalPlan::Filter { input, predicate } = plan else {
            return Ok(None);
        };
        let LogicalPlan::Join {
            left,
            right,
            kind,
            on,
            filter,
        } = input.as_ref()
        else {
            return Ok(None);
        };
        let lw = left.width();
        let width = lw + right.width();
        let conds = split(predicate);
        let rejects =
            |range: std::ops::Range<usize>| conds.iter().any(|c| rejects_nulls(c, &range));
        let new_kind = match kind {
            JoinKind::Left if rejects(lw..width) => JoinKind::Inner,
            JoinKind::Right if rejects(0..lw) => JoinKind::Inner,
            JoinKind::Full => match (rejects(0..lw), rejects(lw..width)) {
                (true, true) => JoinKind::Inner,
                (true, false) => JoinKind::Left,
                (false, true) => JoinKind::Right,
                (false, false) => return Ok(None),
            },
            _ => return Ok(None),
        };
        Ok(Some(LogicalPlan::Filter {
            input: Box::new(LogicalPlan::Join {
                left: left.clone(),
                right: right.clone(),
                kind: new_kind,
                on: on.clone(),
                filter: filter.clone(),
            }),
            predicate: predicate.clone(),
        }))
    }
}

/// Whether `e` is NULL whenever its columns in `range` are all NULL.
fn strict_in(e: &Expr, range: &std::ops::Range<usize>) -> bool {
    match e {
        Expr::Column(c) => range.contains(c),
        Expr::Binary { op, left, right } if op.is_arithmetic() || op.is_comparison() => {
            strict_in(left, range) || strict_in(right, range)
        }
        Expr::Negate(x) | Expr::Cast { expr: x, .. } | Expr::Not(x) => strict_in(x, range),
        Expr::Like { expr, .. } => strict_in(expr, range),
        _ => false,
    }
}

/// Whether the conjunct `c` is not TRUE when the columns in `range` are all NULL.
fn rejects_nulls(c: &Expr, range: &std::ops::Range<usize>) -> bool {
    match c {
        Expr::IsNull {
            expr,
            negated: true,
        } => strict_in(expr, range),
        Expr::Binary {
            op: BinaryOp::Or,
            left,
            right,
        } => rejects_nulls(left, range) && rejects_nulls(right, range),
        Expr::Binary {
            op: BinaryOp::And,
            left,
            right,
        } => rejects_nulls(left, range) || rejects_nulls(right, range),
        Expr::Between { expr, .. } | Expr::InList { expr, .. } => strict_in(expr, range),
        other => strict_in(other, range),
    }
}
