//! Column pruning: every node keeps only the columns some node above it reads, so scans read
//! fewer columns and exchanges ship fewer bytes.
//!
//! One recursive pass from the root, which keeps all of its columns. Each node learns which
//! of its output columns are required, asks its inputs for the columns it needs for those,
//! and rewrites its expressions through the positions its inputs report back (a map from old
//! to new position). A node may output more than was required (a filter passes on what its
//! predicate read); the map says where everything went.

use crate::error::PlanError;
use crate::logical::{columns_of, LogicalPlan};
use std::collections::BTreeSet;
use weir_operators::{Expr, Field};

/// Old column position → new position (`None`: dropped).
type Map = Vec<Option<usize>>;

/// Prunes every node of `plan` to the columns used above it.
pub(crate) fn prune_columns(plan: LogicalPlan) -> Result<LogicalPlan, PlanError> {
    let all: BTreeSet<usize> = (0..plan.width()).collect();
    let (plan, _) = prune(plan, &all)?;
    Ok(plan)
}

fn remap(e: &Expr, map: &Map) -> Result<Expr, PlanError> {
    let mut missing = None;
    let out = e.map_columns(&|c| map.get(c).copied().flatten().unwrap_or(usize::MAX));
    out.visit_columns(&mut |c| {
        if c == usize::MAX {
            missing = Some(());
        }
    });
    match missing {
        None => Ok(out),
        Some(()) => Err(PlanError::Invalid(format!(
            "internal planner error: column pruning dropped a column that '{e}' reads"
        ))),
    }
}

fn identity(width: usize) -> Map {
    (0..width).map(Some).collect()
}

fn cols_of_all<'a>(exprs: impl IntoIterator<Item = &'a Expr>) -> BTreeSet<usize> {
    exprs.into_iter().flat_map(columns_of).collect()
}

/// Keeps the positions in `keep` (ascending) of a width-`width` row: the map from old to new.
fn keep_map(keep: &BTreeSet<usize>, width: usize) -> Map {
    let mut map = vec![None; width];
    for (new, &old) in keep.iter().enumerate() {
        map[old] = Some(new);
    }
    map
}

/// `join` (whose output columns the pruned join's `map` places) topped by a projection onto
/// the `req`uired columns of its old `width`, when it outputs more than those (its keys, or
/// what its residual filter read); the physical planner folds such a projection into the
/// hash join, which then never gathers the columns left out.
fn narrowed(
    join: LogicalPlan,
    req: &BTreeSet<usize>,
    map: Map,
    width: usize,
) -> Result<(LogicalPlan, Map), PlanError> {
    let fields = join.schema().fields;
    if req.len() >= fields.len() {
        return Ok((join, map));
    }
    let mut exprs = Vec::with_capacity(req.len());
    let mut kept = Vec::with_capacity(req.len());
    for &old in req {
        let Some((new, field)) = map
            .get(old)
            .copied()
            .flatten()
            .and_then(|new| Some((new, fields.get(new)?)))
        else {
            return Err(PlanError::Invalid(format!(
                "internal planner error: column pruning lost join output column {old}"
            )));
        };
        exprs.push(Expr::col(new));
        kept.push(field.clone());
    }
    let project = LogicalPlan::Project {
        input: Box::new(join),
        exprs,
        fields: kept,
    };
    Ok((project, keep_map(req, width)))
}

/// `plan` pruned to output exactly the columns `keep`, in order (projected onto them when it
/// would output more): what each input of a union must agree on.
fn prune_exactly(plan: LogicalPlan, keep: &BTreeSet<usize>) -> Result<LogicalPlan, PlanError> {
    let fields = plan.schema().fields;
    let (p, map) = prune(plan, keep)?;
    let exprs = keep
        .iter()
        .map(|&c| remap(&Expr::Column(c), &map))
        .collect::<Result<Vec<_>, _>>()?;
    let is_identity =
        p.width() == keep.len() && exprs.iter().enumerate().all(|(n, e)| *e == Expr::Column(n));
    Ok(if is_identity {
        p
    } else {
        p.project(exprs, keep.iter().map(|&c| fields[c].clone()).collect())
    })
}

fn prune(plan: LogicalPlan, req: &BTreeSet<usize>) -> Result<(LogicalPlan, Map), PlanError> {
    let width = plan.width();
    Ok(match plan {
        LogicalPlan::Scan {
            table,
            projection,
            filters,
        } => {
            let kept: Vec<usize> = req.iter().map(|&i| projection[i]).collect();
            (
                LogicalPlan::Scan {
                    table,
                    projection: kept,
                    filters,
                },
                keep_map(req, width),
            )
        }
        LogicalPlan::Filter { input, predicate } => {
            let mut need = req.clone();
            need.extend(columns_of(&predicate));
            let (input, map) = prune(*input, &need)?;
            let predicate = remap(&predicate, &map)?;
            (
                LogicalPlan::Filter {
                    input: Box::new(input),
                    predicate,
                },
                map,
            )
        }
        LogicalPlan::Project {
            input,
            exprs,
            fields,
        } => {
            let need = cols_of_all(req.iter().map(|&i| &exprs[i]));
            let (input, map) = prune(*input, &need)?;
            let mut new_exprs = Vec::with_capacity(req.len());
            let mut new_fields: Vec<Field> = Vec::with_capacity(req.len());
            for &i in req {
                new_exprs.push(remap(&exprs[i], &map)?);
                new_fields.push(fields[i].clone());
            }
            (
                LogicalPlan::Project {
                    input: Box::new(input),
                    exprs: new_exprs,
                    fields: new_fields,
                },
                keep_map(req, width),
            )
        }
        LogicalPlan::Join {
            left,
            right,
            kind,
            on,
            filter,
        } => {
            let lw = left.width();
            let mut need_l: BTreeSet<usize> = req.iter().copied().filter(|&c| c < lw).collect();
            let mut need_r: BTreeSet<usize> = if kind.outputs_right() {
                req.iter().filter(|&&c| c >= lw).map(|c| c - lw).collect()
            } else {
                BTreeSet::new()
            };
            need_l.extend(cols_of_all(on.iter().map(|(l, _)| l)));
            need_r.extend(cols_of_all(on.iter().map(|(_, r)| r)));
            for c in filter.iter().flat_map(columns_of) {
                if c < lw {
                    need_l.insert(c);
                } else {
                    need_r.insert(c - lw);
                }
            }
            let (left, ml) = prune(*left, &need_l)?;
            let (right, mr) = prune(*right, &need_r)?;
            let new_lw = left.width();
            let mut joined: Map = ml.clone();
            joined.extend(mr.iter().map(|m| m.map(|c| new_lw + c)));
            let on = on
                .iter()
                .map(|(l, r)| Ok((remap(l, &ml)?, remap(r, &mr)?)))
                .collect::<Result<Vec<_>, PlanError>>()?;
            let filter = filter.as_ref().map(|f| remap(f, &joined)).transpose()?;
            let map = if kind.outputs_right() { joined } else { ml };
            let keyed = !on.is_empty();
            let join = LogicalPlan::Join {
                left: Box::new(left),
                right: Box::new(right),
                kind,
                on,
                filter,
            };
            if keyed {
                narrowed(join, req, map, width)?
            } else {
                (join, map)
            }
        }
        LogicalPlan::Aggregate {
            input,
            groups,
            group_fields,
            aggs,
            agg_names,
        } => {
            let k = groups.len();
            let mut kept: Vec<usize> = (0..aggs.len()).filter(|j| req.contains(&(k + j))).collect();
            if kept.is_empty() && k == 0 && !aggs.is_empty() {
                kept.push(0);
            }
            let mut need = cols_of_all(&groups);
            need.extend(cols_of_all(
                kept.iter().filter_map(|&j| aggs[j].arg.as_ref()),
            ));
            need.extend(cols_of_all(
                kept.iter()
                    .flat_map(|&j| aggs[j].order_by.iter().map(|k| &k.expr)),
            ));
            let (input, map) = prune(*input, &need)?;
            let groups = groups
                .iter()
                .map(|g| remap(g, &map))
                .collect::<Result<Vec<_>, _>>()?;
            let mut new_aggs = Vec::with_capacity(kept.len());
            let mut new_names = Vec::with_capacity(kept.len());
            let mut out = identity(k);
            out.resize(width, None);
            for (n, &j) in kept.iter().enumerate() {
                let mut a = aggs[j].clone();
                a.arg = a.arg.as_ref().map(|e| remap(e, &map)).transpose()?;
                for key in &mut a.order_by {
                    key.expr = remap(&key.expr, &map)?;
                }
                new_aggs.push(a);
                new_names.push(agg_names[j].clone());
                out[k + j] = Some(k + n);
            }
            (
                LogicalPlan::Aggregate {
                    input: Box::new(input),
                    groups,
                    group_fields,
                    aggs: new_aggs,
                    agg_names: new_names,
                },
                out,
            )
        }
        LogicalPlan::Distinct { input } => {
            let all: BTreeSet<usize> = (0..width).collect();
            let (input, map) = prune(*input, &all)?;
            (
                LogicalPlan::Distinct {
                    input: Box::new(input),
                },
                map,
            )
        }
        LogicalPlan::Sort { input, keys } => {
            let mut need = req.clone();
            need.extend(cols_of_all(keys.iter().map(|k| &k.expr)));
            let (input, map) = prune(*input, &need)?;
            let keys = keys
                .into_iter()
                .map(|mut k| {
                    k.expr = remap(&k.expr, &map)?;
                    Ok(k)
                })
                .collect::<Result<Vec<_>, PlanError>>()?;
            (
                LogicalPlan::Sort {
                    input: Box::new(input),
                    keys,
                },
                map,
            )
        }
        LogicalPlan::Limit {
            input,
            offset,
            limit,
        } => {
            let (input, map) = prune(*input, req)?;
            (
                LogicalPlan::Limit {
                    input: Box::new(input),
                    offset,
                    limit,
                },
                map,
            )
        }
        LogicalPlan::SubqueryAlias { input, alias } => {
            let (input, map) = prune(*input, req)?;
            (
                LogicalPlan::SubqueryAlias {
                    input: Box::new(input),
                    alias,
                },
                map,
            )
        }
        LogicalPlan::SingleRow { input } => {
            let (input, map) = prune(*input, req)?;
            (
                LogicalPlan::SingleRow {
                    input: Box::new(input),
                },
                map,
            )
        }
        LogicalPlan::Union { inputs } => {
            // Every input must end up with the same columns: exactly the required ones.
            let keep = if req.is_empty() && width > 0 {
                BTreeSet::from([0])
            } else {
                req.clone()
            };
            let pruned = inputs
                .into_iter()
                .map(|i| prune_exactly(i, &keep))
                .collect::<Result<Vec<_>, _>>()?;
            (
                LogicalPlan::Union { inputs: pruned },
                keep_map(&keep, width),
            )
        }
        LogicalPlan::SetOp { left, right, kind } => {
            // Set operations compare whole rows.
            let all: BTreeSet<usize> = (0..width).collect();
            let (left, _) = prune(*left, &all)?;
            let (right, _) = prune(*right, &all)?;
            (
                LogicalPlan::SetOp {
                    left: Box::new(left),
                    right: Box::new(right),
                    kind,
                },
                identity(width),
            )
        }
        LogicalPlan::Expand {
            input,
            function,
            ordinality,
            fields,
        } => {
            // The function's columns stay: their rows are what the expansion makes.
            let w = input.width();
            let mut need: BTreeSet<usize> = req.iter().copied().filter(|&c| c < w).collect();
            need.extend(cols_of_all(function.args()));
            let (input, mut map) = prune(*input, &need)?;
            map.resize(w, None);
            map.extend((0..fields.len()).map(|k| Some(input.width() + k)));
            let function = function.try_map_args(|e| remap(e, &map))?;
            (
                LogicalPlan::Expand {
                    input: Box::new(input),
                    function,
                    ordinality,
                    fields,
                },
                map,
            )
        }
        LogicalPlan::Window {
            input,
            partition_by,
            order_by,
            functions,
            names,
            keep,
        } => {
            let w = input.width();
            let kept: Vec<usize> = (0..functions.len())
                .filter(|j| req.contains(&(w + j)))
                .collect();
            let mut need: BTreeSet<usize> = req.iter().copied().filter(|&c| c < w).collect();
            if kept.is_empty() && keep.is_none() {
                // Nothing above reads a function of this window: it goes.
                let (input, mut map) = prune(*input, &need)?;
                map.resize(width, None);
                return Ok((input, map));
            }
            need.extend(cols_of_all(&partition_by));
            need.extend(cols_of_all(order_by.iter().map(|k| &k.expr)));
            need.extend(cols_of_all(kept.iter().flat_map(|&j| &functions[j].args)));
            let (input, map) = prune(*input, &need)?;
            let new_w = input.width();
            let partition_by = partition_by
                .iter()
                .map(|e| remap(e, &map))
                .collect::<Result<Vec<_>, _>>()?;
            let order_by = order_by
                .into_iter()
                .map(|mut k| {
                    k.expr = remap(&k.expr, &map)?;
                    Ok(k)
                })
                .collect::<Result<Vec<_>, PlanError>>()?;
            let mut out = map;
            out.resize(width, None);
            let mut new_functions = Vec::with_capacity(kept.len());
            let mut new_names = Vec::with_capacity(kept.len());
            for (n, &j) in kept.iter().enumerate() {
                let mut f = functions[j].clone();
                f.args = f
                    .args
                    .iter()
                    .map(|a| remap(a, &out))
                    .collect::<Result<Vec<_>, _>>()?;
                new_functions.push(f);
                new_names.push(names[j].clone());
                out[w + j] = Some(new_w + n);
            }
            (
                LogicalPlan::Window {
                    input: Box::new(input),
                    partition_by,
                    order_by,
                    functions: new_functions,
                    names: new_names,
                    keep,
                },
                out,
            )
        }
        LogicalPlan::RecursiveCte {
            name,
            base,
            step,
            distinct,
        } => {
            // Each round feeds every column to the next: the terms keep them all.
            let all: BTreeSet<usize> = (0..width).collect();
            let cte = LogicalPlan::RecursiveCte {
                name,
                base: Box::new(prune_exactly(*base, &all)?),
                step: Box::new(prune_exactly(*step, &all)?),
                distinct,
            };
            (cte, identity(width))
        }
        other @ (LogicalPlan::Values { .. }
        | LogicalPlan::TableFunction { .. }
        | LogicalPlan::Apply { .. }
        | LogicalPlan::WorkTable { .. }) => {
            // Values are tiny and Applies are gone by now.
            (other, identity(width))
        }
    })
}
