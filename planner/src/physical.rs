//! From a bound query to distributed fragments, applying the planner's rules on the way:
//! filter pushdown into scans, projection pruning, index selection, partition pruning on
//! primary-key equality, join build-side choice, two-phase aggregation and top-k pushdown.
//!
//! Shapes: a single-table query is one `Table` fragment gathered into the root; a join
//! hash-distributes both sides (on the join keys) into an `AllDataNodes` join fragment, whose
//! output is gathered into the root or hash-distributed into the next join.

use crate::bind::{has_columns, BoundSelect};
use crate::catalog::{Catalog, TableDef};
use crate::error::PlanError;
use crate::statement::{Distribution, Fragment, FragmentOutput, Placement, Pruning, QueryPlan};
use hashbrown::HashMap;
use std::collections::BTreeSet;
use weir_operators::plan::{AggMode, AggregateExpr, IndexLookup, JoinSide, JoinType};
use weir_operators::{BinaryOp, DataType, Expr, Field, PhysicalPlan, Schema};

/// A partially built fragment: its operator tree so far and where its columns come from.
struct Input {
    plan: PhysicalPlan,
    schema: Schema,
    /// Combined-row column held at each output position.
    layout: Vec<usize>,
    placement: Placement,
    /// Pre-assigned fragment id (join fragments), if any.
    fragment: Option<u32>,
    /// Estimated output rows.
    estimate: f64,
    /// FROM tables joined in.
    tables: BTreeSet<usize>,
}

struct Frags {
    fragments: Vec<Fragment>,
    next_id: u32,
    next_exchange: u32,
}

impl Frags {
    fn alloc(&mut self) -> u32 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// Turns `input` into a fragment sending to `target`; returns the receiving leaf.
    fn emit(&mut self, input: Input, target: u32, distribution: Distribution) -> PhysicalPlan {
        let id = match input.fragment {
            Some(id) => id,
            None => self.alloc(),
        };
        let exchange = self.next_exchange;
        self.next_exchange += 1;
        self.fragments.push(Fragment {
            id,
            plan: input.plan,
            placement: input.placement,
            output: Some(FragmentOutput {
                exchange,
                target,
                distribution,
            }),
        });
        PhysicalPlan::Exchange {
            id: exchange,
            schema: input.schema,
        }
    }
}

/// Rewrites combined-row column references into positions of `layout`.
fn map_to(e: &Expr, layout: &[usize]) -> Expr {
    let pos: HashMap<usize, usize> = layout.iter().enumerate().map(|(i, g)| (*g, i)).collect();
    e.map_columns(&|g| pos.get(&g).copied().unwrap_or(g))
}

fn and_all(mut v: Vec<Expr>) -> Option<Expr> {
    let first = if v.is_empty() {
        return None;
    } else {
        v.remove(0)
    };
    Some(v.into_iter().fold(first, Expr::and))
}

fn tables_of(e: &Expr, bs: &BoundSelect) -> BTreeSet<usize> {
    let mut s = BTreeSet::new();
    e.visit_columns(&mut |g| {
        s.insert(bs.scope.table_of(g));
    });
    s
}

fn is_identity(exprs: &[Expr], width: usize) -> bool {
    exprs.len() == width && exprs.iter().enumerate().all(|(i, e)| *e == Expr::Column(i))
}

fn project(input: PhysicalPlan, exprs: Vec<Expr>, width: usize) -> PhysicalPlan {
    if is_identity(&exprs, width) {
        input
    } else {
        PhysicalPlan::Project {
            input: Box::new(input),
            exprs,
        }
    }
}

/// Plans a bound `SELECT` into fragments.
pub(crate) fn plan_select(
    bs: BoundSelect,
    catalog: &Catalog,
    param_types: Vec<Option<DataType>>,
) -> Result<QueryPlan, PlanError> {
    let mut fr = Frags {
        fragments: Vec::new(),
        next_id: 1,
        next_exchange: 0,
    };
    let mut all_fields = bs.visible.clone();
    for (i, t) in bs.output_types.iter().enumerate().skip(bs.visible.len()) {
        all_fields.push(Field::new(format!("__order{i}"), *t));
    }
    let outputs_schema = Schema::new(all_fields);

    let root = if bs.scope.tables.is_empty() {
        let (schema, rows) = match &bs.values {
            Some((fields, rows)) => (Schema::new(fields.clone()), rows.clone()),
            None => (Schema::default(), vec![vec![]]),
        };
        let width = schema.len();
        let mut plan = PhysicalPlan::Values { schema, rows };
        if let Some(p) = and_all(bs.conjuncts.clone()) {
            plan = PhysicalPlan::Filter {
                input: Box::new(plan),
                predicate: p,
            };
        }
        match &bs.agg {
            Some(agg) => {
                let plan = PhysicalPlan::HashAggregate {
                    input: Box::new(plan),
                    group_by: agg.groups.clone(),
                    group_types: agg.group_types.clone(),
                    aggs: agg.aggs.clone(),
                    mode: AggMode::Single,
                };
                post_aggregate(plan, &bs)
            }
            None => finish(project(plan, bs.outputs.clone(), width), &bs),
        }
    } else {
        let data = plan_from(&bs, catalog, &mut fr)?;
        match &bs.agg {
            Some(agg) => {
                let group_by: Vec<Expr> =
                    agg.groups.iter().map(|e| map_to(e, &data.layout)).collect();
                let aggs: Vec<AggregateExpr> = agg
                    .aggs
                    .iter()
                    .map(|a| AggregateExpr {
                        func: a.func,
                        arg: a.arg.as_ref().map(|e| map_to(e, &data.layout)),
                        input_type: a.input_type,
                    })
                    .collect();
                let mut fields: Vec<Field> = agg
                    .group_types
                    .iter()
                    .enumerate()
                    .map(|(i, t)| {
                        Field::new(
                            crate::explain::fmt_expr(
                                &group_by[i],
                                &crate::explain::names(&data.plan),
                            ),
                            *t,
                        )
                    })
                    .collect();
                let input_names = crate::explain::names(&data.plan);
                for a in &aggs {
                    for (name, t) in crate::explain::state_names(a, &input_names)
                        .into_iter()
                        .zip(a.state_types())
                    {
                        fields.push(Field::new(name, t));
                    }
                }
                let partial = PhysicalPlan::HashAggregate {
                    input: Box::new(data.plan),
                    group_by,
                    group_types: agg.group_types.clone(),
                    aggs: aggs.clone(),
                    mode: AggMode::Partial,
                };
                let ex = fr.emit(
                    Input {
                        plan: partial,
                        schema: Schema::new(fields),
                        ..data
                    },
                    0,
                    Distribution::Gather,
                );
                let final_agg = PhysicalPlan::HashAggregate {
                    input: Box::new(ex),
                    group_by: (0..agg.groups.len()).map(Expr::Column).collect(),
                    group_types: agg.group_types.clone(),
                    aggs,
                    mode: AggMode::Final,
                };
                post_aggregate(final_agg, &bs)
            }
            None => {
                let outputs: Vec<Expr> =
                    bs.outputs.iter().map(|e| map_to(e, &data.layout)).collect();
                let mut plan = project(data.plan, outputs, data.layout.len());
                if let Some(l) = bs.limit {
                    let k = bs.offset.saturating_add(l);
                    plan = if bs.order.is_empty() {
                        PhysicalPlan::Limit {
                            input: Box::new(plan),
                            offset: 0,
                            limit: Some(k),
                        }
                    } else {
                        PhysicalPlan::Sort {
                            input: Box::new(plan),
                            keys: bs.order.clone(),
                            limit: Some(k),
                        }
                    };
                }
                let ex = fr.emit(
                    Input {
                        plan,
                        schema: outputs_schema,
                        ..data
                    },
                    0,
                    Distribution::Gather,
                );
                finish(ex, &bs)
            }
        }
    };
    fr.fragments.push(Fragment {
        id: 0,
        plan: root,
        placement: Placement::Initiator,
        output: None,
    });
    fr.fragments.sort_by_key(|f| f.id);
    Ok(QueryPlan {
        fragments: fr.fragments,
        output_schema: Schema::new(bs.visible),
        param_types,
    })
}

/// HAVING, select projection, then ORDER BY / LIMIT over an aggregation's output.
fn post_aggregate(mut plan: PhysicalPlan, bs: &BoundSelect) -> PhysicalPlan {
    let agg = bs.agg.as_ref().expect("aggregating query");
    if let Some(h) = &bs.having {
        plan = PhysicalPlan::Filter {
            input: Box::new(plan),
            predicate: h.clone(),
        };
    }
    let width = agg.groups.len() + agg.aggs.len();
    finish(project(plan, bs.outputs.clone(), width), bs)
}

/// Sort, limit and dropping hidden sort columns, over the select outputs.
fn finish(mut plan: PhysicalPlan, bs: &BoundSelect) -> PhysicalPlan {
    if !bs.order.is_empty() {
        plan = PhysicalPlan::Sort {
            input: Box::new(plan),
            keys: bs.order.clone(),
            limit: bs.limit.map(|l| bs.offset.saturating_add(l)),
        };
    }
    if bs.limit.is_some() || bs.offset > 0 {
        plan = PhysicalPlan::Limit {
            input: Box::new(plan),
            offset: bs.offset,
            limit: bs.limit,
        };
    }
    if bs.outputs.len() > bs.visible.len() {
        plan = PhysicalPlan::Project {
            input: Box::new(plan),
            exprs: (0..bs.visible.len()).map(Expr::Column).collect(),
        };
    }
    plan
}

/// Scans and joins of the FROM tables, with every WHERE/ON conjunct applied.
fn plan_from(bs: &BoundSelect, catalog: &Catalog, fr: &mut Frags) -> Result<Input, PlanError> {
    let n = bs.scope.tables.len();
    let mut per_table: Vec<Vec<Expr>> = vec![Vec::new(); n];
    let mut multi: Vec<(Expr, BTreeSet<usize>)> = Vec::new();
    for c in &bs.conjuncts {
        let ts = tables_of(c, bs);
        match ts.len() {
            0 => per_table[0].push(c.clone()),
            1 => per_table[*ts.iter().next().expect("one table")].push(c.clone()),
            _ => multi.push((c.clone(), ts)),
        }
    }
    let mut needed = BTreeSet::new();
    let mut need = |e: &Expr| {
        e.visit_columns(&mut |g| {
            needed.insert(g);
        })
    };
    for (c, _) in &multi {
        need(c);
    }
    match &bs.agg {
        Some(agg) => {
            agg.groups.iter().for_each(&mut need);
            agg.aggs
                .iter()
                .filter_map(|a| a.arg.as_ref())
                .for_each(&mut need);
        }
        None => bs.outputs.iter().for_each(&mut need),
    }

    let mut per_table = per_table.into_iter();
    let mut cur = scan_input(
        bs,
        0,
        per_table.next().unwrap_or_default(),
        &needed,
        catalog,
    );
    for (k, filters) in (1..n).zip(per_table) {
        let right = scan_input(bs, k, filters, &needed, catalog);
        let mut left_keys = Vec::new();
        let mut right_keys = Vec::new();
        multi.retain(|(c, _)| {
            if let Expr::Binary {
                op: BinaryOp::Eq,
                left,
                right: r,
            } = c
            {
                let lt = tables_of(left, bs);
                let rt = tables_of(r, bs);
                let only_k = |s: &BTreeSet<usize>| s.len() == 1 && s.contains(&k);
                let within = |s: &BTreeSet<usize>| !s.is_empty() && s.is_subset(&cur.tables);
                if within(&lt) && only_k(&rt) {
                    left_keys.push(map_to(left, &cur.layout));
                    right_keys.push(map_to(r, &right.layout));
                    return false;
                }
                if within(&rt) && only_k(&lt) {
                    left_keys.push(map_to(r, &cur.layout));
                    right_keys.push(map_to(left, &right.layout));
                    return false;
                }
            }
            true
        });
        if left_keys.is_empty() {
            let names: Vec<&str> = cur
                .tables
                .iter()
                .map(|t| bs.scope.tables[*t].def.name.as_str())
                .collect();
            return Err(PlanError::unsupported(
                format!(
                    "join without an equality condition between {} and '{}' (cross join)",
                    names
                        .iter()
                        .map(|n| format!("'{n}'"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    bs.scope.tables[k].def.name
                ),
                "",
            ));
        }
        let join_id = fr.alloc();
        let build = if right.estimate <= cur.estimate {
            JoinSide::Right
        } else {
            JoinSide::Left
        };
        let estimate = cur.estimate.max(right.estimate);
        let mut tables = cur.tables.clone();
        tables.insert(k);
        let mut layout = cur.layout.clone();
        layout.extend(&right.layout);
        let mut fields = cur.schema.fields.clone();
        fields.extend(right.schema.fields.iter().cloned());
        let (left_types, right_types) = (cur.schema.types(), right.schema.types());
        let l_ex = fr.emit(cur, join_id, Distribution::Hash(left_keys.clone()));
        let r_ex = fr.emit(right, join_id, Distribution::Hash(right_keys.clone()));
        let mut plan = PhysicalPlan::HashJoin {
            left: Box::new(l_ex),
            right: Box::new(r_ex),
            left_keys,
            right_keys,
            join_type: JoinType::Inner,
            filter: None,
            build,
            left_types,
            right_types,
        };
        let mut ready = Vec::new();
        multi.retain(|(c, ts)| {
            if ts.is_subset(&tables) {
                ready.push(map_to(c, &layout));
                false
            } else {
                true
            }
        });
        if let Some(p) = and_all(ready) {
            plan = PhysicalPlan::Filter {
                input: Box::new(plan),
                predicate: p,
            };
        }
        cur = Input {
            plan,
            schema: Schema::new(fields),
            layout,
            placement: Placement::AllDataNodes,
            fragment: Some(join_id),
            estimate,
            tables,
        };
    }
    Ok(cur)
}

/// A table scan with pushed-down filters, index and partition choice, and pruned columns.
fn scan_input(
    bs: &BoundSelect,
    ti: usize,
    filters: Vec<Expr>,
    needed: &BTreeSet<usize>,
    catalog: &Catalog,
) -> Input {
    let t = &bs.scope.tables[ti];
    let off = t.offset;
    let def = &t.def;
    let local: Vec<Expr> = filters
        .iter()
        .map(|e| e.map_columns(&|g| g.saturating_sub(off)))
        .collect();
    let pruning = pk_pruning(&local, def.primary_key);
    let mut estimate = catalog.row_count(&def.name).max(1) as f64;
    for c in &local {
        estimate *= selectivity(c);
    }
    let (index, rest) = choose_index(local, def);
    let projection: Vec<usize> = needed
        .range(off..off + def.schema.len())
        .map(|g| g - off)
        .collect();
    let schema = Schema::new(
        projection
            .iter()
            .map(|&c| def.schema.fields[c].clone())
            .collect(),
    );
    Input {
        plan: PhysicalPlan::Scan {
            table: def.name.clone(),
            table_schema: def.schema.clone(),
            index,
            filter: and_all(rest),
            projection: projection.clone(),
        },
        schema,
        layout: projection.iter().map(|c| c + off).collect(),
        placement: Placement::Table {
            table: def.name.clone(),
            pruning,
        },
        fragment: None,
        estimate,
        tables: BTreeSet::from([ti]),
    }
}

/// Rough fraction of rows a conjunct keeps.
fn selectivity(c: &Expr) -> f64 {
    match c {
        Expr::Binary {
            op: BinaryOp::Eq, ..
        } => 0.1,
        Expr::InList {
            list,
            negated: false,
            ..
        } => (0.1 * list.len() as f64).min(1.0),
        Expr::Binary {
            op: BinaryOp::Lt | BinaryOp::LtEq | BinaryOp::Gt | BinaryOp::GtEq,
            ..
        }
        | Expr::Between { negated: false, .. } => 0.3,
        _ => 0.5,
    }
}

/// `col op constant` with the column on either side (the operator flipped accordingly).
fn column_cmp(c: &Expr) -> Option<(usize, BinaryOp, &Expr)> {
    let Expr::Binary { op, left, right } = c else {
        return None;
    };
    if !op.is_comparison() || *op == BinaryOp::NotEq {
        return None;
    }
    match (left.as_ref(), right.as_ref()) {
        (Expr::Column(col), v) if !has_columns(v) => Some((*col, *op, v)),
        (v, Expr::Column(col)) if !has_columns(v) => {
            let flipped = match op {
                BinaryOp::Lt => BinaryOp::Gt,
                BinaryOp::LtEq => BinaryOp::GtEq,
                BinaryOp::Gt => BinaryOp::Lt,
                BinaryOp::GtEq => BinaryOp::LtEq,
                o => *o,
            };
            Some((*col, flipped, v))
        }
        _ => None,
    }
}

fn in_list(c: &Expr) -> Option<(usize, &[Expr])> {
    match c {
        Expr::InList {
            expr,
            list,
            negated: false,
        } => match expr.as_ref() {
            Expr::Column(col) if list.iter().all(|e| !has_columns(e)) => Some((*col, list)),
            _ => None,
        },
        _ => None,
    }
}

/// `Pruning::Keys` from a `pk = v` or `pk IN (...)` conjunct. A table without a primary key
/// is never pruned: its rows are placed by a hidden row id, so any partition may hold any
/// value.
fn pk_pruning(conj: &[Expr], pk: Option<usize>) -> Pruning {
    let Some(pk) = pk else {
        return Pruning::All;
    };
    for c in conj {
        if let Some((col, BinaryOp::Eq, v)) = column_cmp(c) {
            if col == pk {
                return Pruning::Keys(vec![v.clone()]);
            }
        }
        if let Some((col, list)) = in_list(c) {
            if col == pk {
                return Pruning::Keys(list.to_vec());
            }
        }
    }
    Pruning::All
}

/// Picks the best index probe among the conjuncts (equality on the key, equality on a
/// secondary index, IN lists, then ranges) and returns it with the conjuncts it does not cover.
#[allow(clippy::type_complexity)]
fn choose_index(conj: Vec<Expr>, def: &TableDef) -> (Option<(usize, IndexLookup)>, Vec<Expr>) {
    // (score, column, lookup, consumed conjuncts); lower score is better
    let mut best: Option<(u8, usize, IndexLookup, Vec<usize>)> = None;
    let mut consider = |cand: (u8, usize, IndexLookup, Vec<usize>)| {
        if best.as_ref().is_none_or(|b| cand.0 < b.0) {
            best = Some(cand);
        }
    };
    let pk_bonus = |col: usize| u8::from(def.primary_key != Some(col));
    let mut ranges: Vec<(
        usize,
        Option<(Expr, bool)>,
        Option<(Expr, bool)>,
        Vec<usize>,
    )> = Vec::new();
    for (i, c) in conj.iter().enumerate() {
        if let Some((col, op, v)) = column_cmp(c) {
            if !def.is_indexed(col) {
                continue;
            }
            if op == BinaryOp::Eq {
                consider((pk_bonus(col), col, IndexLookup::Eq(v.clone()), vec![i]));
                continue;
            }
            let r = match ranges.iter_mut().find(|r| r.0 == col) {
                Some(r) => r,
                None => {
                    ranges.push((col, None, None, Vec::new()));
                    ranges.last_mut().expect("just pushed")
                }
            };
            match op {
                BinaryOp::Gt | BinaryOp::GtEq if r.1.is_none() => {
                    r.1 = Some((v.clone(), op == BinaryOp::GtEq));
                    r.3.push(i);
                }
                BinaryOp::Lt | BinaryOp::LtEq if r.2.is_none() => {
                    r.2 = Some((v.clone(), op == BinaryOp::LtEq));
                    r.3.push(i);
                }
                _ => {}
            }
        } else if let Some((col, list)) = in_list(c) {
            if def.is_indexed(col) {
                consider((
                    2 + pk_bonus(col),
                    col,
                    IndexLookup::In(list.to_vec()),
                    vec![i],
                ));
            }
        } else if let Expr::Between {
            expr,
            low,
            high,
            negated: false,
        } = c
        {
            if let Expr::Column(col) = expr.as_ref() {
                if def.is_indexed(*col) && !has_columns(low) && !has_columns(high) {
                    let col = *col;
                    let r = match ranges.iter_mut().find(|r| r.0 == col) {
                        Some(r) => r,
                        None => {
                            ranges.push((col, None, None, Vec::new()));
                            ranges.last_mut().expect("just pushed")
                        }
                    };
                    if r.1.is_none() && r.2.is_none() {
                        r.1 = Some(((**low).clone(), true));
                        r.2 = Some(((**high).clone(), true));
                        r.3.push(i);
                    }
                }
            }
        }
    }
    for (col, low, high, used) in ranges {
        if low.is_none() && high.is_none() {
            continue;
        }
        let score = if low.is_some() && high.is_some() {
            4
        } else {
            5
        };
        consider((score, col, IndexLookup::Range { low, high }, used));
    }
    match best {
        None => (None, conj),
        Some((_, col, lookup, used)) => {
            let rest = conj
                .into_iter()
                .enumerate()
                .filter(|(i, _)| !used.contains(i))
                .map(|(_, c)| c)
                .collect();
            (Some((col, lookup)), rest)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::IndexDef;
    use weir_operators::{Field, Schema};

    fn def() -> TableDef {
        TableDef {
            name: "t".into(),
            schema: Schema::new(vec![
                Field::new("id", DataType::Int64),
                Field::new("a", DataType::Int64),
                Field::new("b", DataType::Int64),
            ]),
            primary_key: Some(0),
            indexes: vec![IndexDef {
                name: "ia".into(),
                column: 1,
            }],
            partitions: 4,
        }
    }

    fn cmp(c: usize, op: BinaryOp, v: i64) -> Expr {
        Expr::Column(c).binary(op, Expr::lit(v))
    }

    #[test]
    fn prefers_key_equality() {
        let conj = vec![
            cmp(1, BinaryOp::Eq, 1),
            cmp(0, BinaryOp::Eq, 2),
            cmp(2, BinaryOp::Eq, 3),
        ];
        let (idx, rest) = choose_index(conj, &def());
        assert_eq!(idx, Some((0, IndexLookup::Eq(Expr::lit(2)))));
        assert_eq!(rest.len(), 2);
    }

    #[test]
    fn range_merges_bounds_and_keeps_extra_ones() {
        let conj = vec![
            cmp(1, BinaryOp::Gt, 1),
            cmp(1, BinaryOp::GtEq, 5),
            cmp(1, BinaryOp::LtEq, 9),
        ];
        let (idx, rest) = choose_index(conj, &def());
        assert_eq!(
            idx,
            Some((
                1,
                IndexLookup::Range {
                    low: Some((Expr::lit(1), false)),
                    high: Some((Expr::lit(9), true)),
                }
            ))
        );
        assert_eq!(rest, vec![cmp(1, BinaryOp::GtEq, 5)]);
    }

    #[test]
    fn unindexed_or_non_constant_is_not_an_index() {
        let conj = vec![
            cmp(2, BinaryOp::Eq, 1),
            Expr::Column(1).eq(Expr::Column(2)),
            cmp(1, BinaryOp::NotEq, 3),
        ];
        let (idx, rest) = choose_index(conj, &def());
        assert!(idx.is_none());
        assert_eq!(rest.len(), 3);
    }

    #[test]
    fn keyless_table_has_no_key_index() {
        let keyless = TableDef {
            primary_key: None,
            ..def()
        };
        let conj = vec![cmp(0, BinaryOp::Eq, 2), cmp(1, BinaryOp::Eq, 1)];
        let (idx, rest) = choose_index(conj, &keyless);
        assert_eq!(idx, Some((1, IndexLookup::Eq(Expr::lit(1)))));
        assert_eq!(rest, vec![cmp(0, BinaryOp::Eq, 2)]);
        let (idx, _) = choose_index(vec![cmp(0, BinaryOp::Eq, 2)], &keyless);
        assert!(idx.is_none());
    }

    #[test]
    fn pruning_from_key_conjuncts() {
        assert_eq!(
            pk_pruning(
                &[cmp(1, BinaryOp::Eq, 1), Expr::lit(4).eq(Expr::Column(0))],
                Some(0)
            ),
            Pruning::Keys(vec![Expr::lit(4)])
        );
        assert_eq!(
            pk_pruning(&[cmp(0, BinaryOp::Lt, 1)], Some(0)),
            Pruning::All
        );
        assert_eq!(pk_pruning(&[cmp(0, BinaryOp::Eq, 1)], None), Pruning::All);
    }
}
