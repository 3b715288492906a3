//! Join order: a tree of inner joins is rebuilt in the order that keeps the estimated
//! intermediate results small.
//!
//! A *cluster* is a maximal tree of inner joins and filters over them; everything else below
//! it (scans, aggregations, outer, semi and anti joins, projections) is one of its
//! *relations*, reordered on its own. The cluster becomes its relations plus the conjuncts of
//! every join condition and filter, over the cluster's columns. Then, greedily, the two
//! relations (or already joined groups) whose join is estimated smallest are joined, among the
//! pairs that share a condition — so no cross join appears while a connected pair is left —
//! with the larger input on the left (the probe side); each condition goes to the first join
//! that has all its columns, as an equality key where it is one. A projection on top puts the
//! columns back in the order the query had.
//!
//! Estimates come from [`super::estimate`]. Unlike the other rules this one runs once, after
//! pushdown has put every filter in place, rather than to a fixed point: reordering a
//! cluster it has just built would only repeat its own choices.

use super::estimate::{self, Estimate};
use crate::catalog::Catalog;
use crate::logical::{and_all, columns_of, conjuncts, has_outer, JoinKind, LogicalPlan};
use weir_operators::{BinaryOp, Expr};

/// Reorders every cluster of three or more relations in `plan`.
pub(crate) fn reorder(plan: LogicalPlan, catalog: &Catalog) -> LogicalPlan {
    if is_cluster(&plan) {
        let mut relations = Vec::new();
        let mut conds = Vec::new();
        flatten(plan.clone(), 0, &mut relations, &mut conds);
        if relations.len() >= 3 && !conds.iter().any(has_outer) {
            let relations: Vec<LogicalPlan> =
                relations.into_iter().map(|r| reorder(r, catalog)).collect();
            return rebuild(relations, conds, catalog);
        }
    }
    plan.map_inputs(&mut |i| Ok::<_, std::convert::Infallible>(reorder(i, catalog)))
        .unwrap_or_else(|never| match never {})
}

/// Whether `plan` is an inner join, or a filter over one.
fn is_cluster(plan: &LogicalPlan) -> bool {
    match plan {
        LogicalPlan::Join {
            kind: JoinKind::Inner,
            ..
        } => true,
        LogicalPlan::Filter { input, .. } => is_cluster(input),
        _ => false,
    }
}

fn shifted(e: &Expr, by: usize) -> Expr {
    e.map_columns(&|c| c + by)
}

/// Appends the relations of the cluster `plan` (whose first column is cluster column
/// `offset`) and its conjuncts over cluster columns.
fn flatten(
    plan: LogicalPlan,
    offset: usize,
    relations: &mut Vec<LogicalPlan>,
    conds: &mut Vec<Expr>,
) {
    if !is_cluster(&plan) {
        relations.push(plan);
        return;
    }
    match plan {
        LogicalPlan::Join {
            left,
            right,
            on,
            filter,
            ..
        } => {
            let lw = left.width();
            for (l, r) in on {
                conds.push(shifted(&l, offset).eq(shifted(&r, offset + lw)));
            }
            if let Some(f) = filter {
                conjuncts(shifted(&f, offset), conds);
            }
            flatten(*left, offset, relations, conds);
            flatten(*right, offset + lw, relations, conds);
        }
        LogicalPlan::Filter { input, predicate } => {
            conjuncts(shifted(&predicate, offset), conds);
            flatten(*input, offset, relations, conds);
        }
        _ => unreachable!("is_cluster holds only for joins and filters"),
    }
}

/// A relation or a group of already joined ones.
struct Group {
    plan: LogicalPlan,
    /// The cluster column of each output column.
    columns: Vec<usize>,
    /// Which relations it holds.
    members: Vec<bool>,
    estimate: Estimate,
}

impl Group {
    /// Where cluster column `c` is among this group's outputs.
    fn position(&self, c: usize) -> Option<usize> {
        self.columns.iter().position(|&x| x == c)
    }

    /// `e` (over cluster columns) over this group's outputs, if it reads only them.
    fn localize(&self, e: &Expr) -> Option<Expr> {
        let cols = columns_of(e);
        if cols.iter().all(|&c| self.position(c).is_some()) {
            Some(e.map_columns(&|c| self.position(c).unwrap_or(c)))
        } else {
            None
        }
    }
}

/// A condition and the relations it reads.
struct Cond {
    expr: Expr,
    relations: Vec<usize>,
    applied: bool,
}

/// The join of `l` and `r` with the conditions `conds` (indices into `all`) that become
/// applicable: equality keys and the rest.
fn join_parts(
    l: &Group,
    r: &Group,
    all: &[Cond],
    conds: &[usize],
) -> (Vec<(Expr, Expr)>, Vec<Expr>) {
    let mut on = Vec::new();
    let mut rest = Vec::new();
    let lw = l.columns.len();
    let both = |e: &Expr| {
        e.map_columns(&|c| {
            l.position(c)
                .or_else(|| r.position(c).map(|p| p + lw))
                .unwrap_or(c)
        })
    };
    for &i in conds {
        let e = &all[i].expr;
        if let Expr::Binary {
            op: BinaryOp::Eq,
            left,
            right,
        } = e
        {
            let key = match (l.localize(left), r.localize(right)) {
                (Some(a), Some(b))
                    if !columns_of(left).is_empty() && !columns_of(right).is_empty() =>
                {
                    Some((a, b))
                }
                _ => match (l.localize(right), r.localize(left)) {
                    (Some(a), Some(b))
                        if !columns_of(left).is_empty() && !columns_of(right).is_empty() =>
                    {
                        Some((a, b))
                    }
                    _ => None,
                },
            };
            if let Some(k) = key {
                on.push(k);
                continue;
            }
        }
        rest.push(both(e));
    }
    (on, rest)
}

/// The conditions not applied yet that `l` and `r` joined together can apply.
fn applicable(l: &Group, r: &Group, conds: &[Cond]) -> Vec<usize> {
    (0..conds.len())
        .filter(|&i| {
            let c = &conds[i];
            !c.applied && c.relations.iter().all(|&m| l.members[m] || r.members[m])
        })
        .collect()
}

/// Builds the join tree of `relations` under `conds` (over cluster columns); the result's
/// columns are in cluster order.
fn rebuild(relations: Vec<LogicalPlan>, conds: Vec<Expr>, catalog: &Catalog) -> LogicalPlan {
    let n = relations.len();
    // Cluster column ranges of the relations.
    let mut starts = Vec::with_capacity(n);
    let mut width = 0;
    for r in &relations {
        starts.push(width);
        width += r.width();
    }
    let relation_of = |c: usize| starts.iter().rposition(|&s| s <= c).unwrap_or(0);
    let mut conds: Vec<Cond> = conds
        .into_iter()
        .map(|expr| {
            let mut relations: Vec<usize> =
                columns_of(&expr).into_iter().map(relation_of).collect();
            relations.dedup();
            Cond {
                expr,
                relations,
                applied: false,
            }
        })
        .collect();
    let mut groups: Vec<Group> = relations
        .into_iter()
        .enumerate()
        .map(|(i, plan)| {
            let w = plan.width();
            let mut members = vec![false; n];
            members[i] = true;
            let mut g = Group {
                columns: (starts[i]..starts[i] + w).collect(),
                members,
                estimate: estimate::estimate(&plan, catalog),
                plan,
            };
            // Conditions over this relation alone filter it.
            let own: Vec<Expr> = conds
                .iter_mut()
                .filter(|c| c.relations == [i])
                .map(|c| {
                    c.applied = true;
                    c.expr.clone()
                })
                .filter_map(|e| g.localize(&e))
                .collect();
            if !own.is_empty() {
                g.plan = g.plan.filter_all(own);
                g.estimate = estimate::estimate(&g.plan, catalog);
            }
            g
        })
        .collect();
    while groups.len() > 1 {
        // (estimated rows, i, j, connected)
        let mut best: Option<(f64, usize, usize, bool)> = None;
        for i in 0..groups.len() {
            for j in i + 1..groups.len() {
                let conds_ij: Vec<usize> = applicable(&groups[i], &groups[j], &conds)
                    .into_iter()
                    .filter(|&k| !conds[k].relations.is_empty())
                    .collect();
                let connected = !conds_ij.is_empty();
                let (on, rest) = join_parts(&groups[i], &groups[j], &conds, &conds_ij);
                let rows = estimate::join(
                    &groups[i].estimate,
                    &groups[j].estimate,
                    JoinKind::Inner,
                    &on,
                    &rest,
                )
                .rows;
                let better = match best {
                    None => true,
                    Some((b, _, _, bc)) => (connected && !bc) || (connected == bc && rows < b),
                };
                if better {
                    best = Some((rows, i, j, connected));
                }
            }
        }
        let Some((_, i, j, _)) = best else {
            break;
        };
        let b = groups.remove(j);
        let a = groups.remove(i);
        // The larger input probes; the smaller one builds.
        let (l, r) = if b.estimate.rows > a.estimate.rows {
            (b, a)
        } else {
            (a, b)
        };
        let picked: Vec<usize> = applicable(&l, &r, &conds)
            .into_iter()
            .filter(|&k| !conds[k].relations.is_empty())
            .collect();
        let (on, rest) = join_parts(&l, &r, &conds, &picked);
        for k in picked {
            conds[k].applied = true;
        }
        let estimate = estimate::join(&l.estimate, &r.estimate, JoinKind::Inner, &on, &rest);
        let mut columns = l.columns;
        columns.extend(r.columns);
        let members = l
            .members
            .iter()
            .zip(&r.members)
            .map(|(a, b)| *a || *b)
            .collect();
        let plan = LogicalPlan::Join {
            left: Box::new(l.plan),
            right: Box::new(r.plan),
            kind: JoinKind::Inner,
            on,
            filter: and_all(rest),
        };
        groups.insert(
            i,
            Group {
                plan,
                columns,
                members,
                estimate,
            },
        );
    }
    let top = groups.pop().expect("a cluster has relations");
    // Back to cluster column order, with the conditions over no relation (constants) on top.
    let positions: Vec<usize> = (0..width).map(|c| top.position(c).unwrap_or(c)).collect();
    let constants: Vec<Expr> = conds
        .iter()
        .filter(|c| !c.applied)
        .map(|c| c.expr.clone())
        .collect();
    let plan = top.plan.filter_all(constants);
    if positions.iter().enumerate().all(|(i, &p)| i == p) {
        return plan;
    }
    let fields = plan.schema().fields;
    let ordered_fields = positions.iter().map(|&p| fields[p].clone()).collect();
    plan.project(
        positions.into_iter().map(Expr::Column).collect(),
        ordered_fields,
    )
}
