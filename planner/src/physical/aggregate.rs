//! Lowering a grouping (GROUP BY, DISTINCT, and the counting that INTERSECT and EXCEPT are
//! planned as) into its phases and the fragments they run in.
//!
//! Where the input is one instance, the aggregation runs there in one phase; where the input
//! is already spread so that each group is whole on one instance (a hash exchange on some of
//! the group keys feeds it), it runs in one phase on every instance. Otherwise a partial
//! phase runs where the rows are, and its states are merged by a final phase:
//! - after a gather on the initiator, when few groups are expected (the final phase is
//!   cheap, and the rows take one hop);
//! - on every data node after a hash exchange on the group keys, when many are
//!   ([`SPREAD_FINAL_MIN_GROUPS`]): the final phase's work and memory are split over the
//!   nodes instead of falling on the initiator alone, and what the groups feed (a filter, a
//!   join, a broadcast) runs there too.

use super::fragments::{Frags, Input, Spread};
use super::sort::sort_once;
use crate::logical::{LogicalPlan, SetOpKind};
use crate::statement::Placement;
use weir_operators::plan::{AggFunc, AggMode, AggregateExpr, Distribution};
use weir_operators::{BinaryOp, DataType, Expr, Field, PhysicalPlan, Schema};

/// Estimated groups from which the final phase runs on every data node after a hash exchange
/// rather than on the initiator after a gather. Below it the final phase stays on the
/// initiator: the exchange between the nodes would add a hop and its messages to every such
/// query (the seed benchmark's GROUP BY queries, 10,000 groups estimated, keep their 6
/// messages), for a merge that one instance does alone.
pub(crate) const SPREAD_FINAL_MIN_GROUPS: f64 = 100_000.0;

/// Grouping `input` by `group_by` (of types `group_types`) and computing `aggs`, with
/// `groups` estimated groups: in one phase where each group is whole on one instance, else
/// partial where the rows are and final after a gather or a hash exchange (see the module
/// comment).
pub(super) fn aggregate(
    input: Input,
    group_by: Vec<Expr>,
    group_types: Vec<DataType>,
    aggs: Vec<AggregateExpr>,
    (schema, groups): (Schema, f64),
    fr: &mut Frags,
) -> Input {
    // An aggregate that needs a group's values all at once (PERCENTILE_CONT) or in an order
    // (STRING_AGG ... ORDER BY) has no partial state: the rows are gathered, sorted in that
    // order (the binder gives every ordered aggregate of one aggregation the same), and
    // aggregated in one place, where each group takes its rows in the order they come.
    let order = aggs.iter().find(|a| !a.order_by.is_empty());
    let input = match order {
        Some(a) => sort_once(input, a.order_by.clone(), fr),
        None if aggs.iter().any(AggregateExpr::is_holistic) && !input.is_single() => {
            fr.gather(input)
        }
        None => input,
    };
    let spread = spread_by(&input, &group_by);
    if input.is_single() || spread.is_some() {
        let plan = PhysicalPlan::HashAggregate {
            input: Box::new(input.plan.clone()),
            group_by,
            group_types,
            aggs,
            mode: AggMode::Single,
        };
        return Input {
            hashed: spread.map_or_else(Spread::default, Spread::by),
            ..input.wrap(plan, schema)
        };
    }
    let input_names = crate::explain::names(&input.plan);
    let mut fields: Vec<Field> = group_by
        .iter()
        .zip(&group_types)
        .map(|(g, t)| Field::new(crate::explain::fmt_expr(g, &input_names), *t))
        .collect();
    for a in &aggs {
        for (name, t) in crate::explain::state_names(a, &input_names)
            .into_iter()
            .zip(a.state_types())
        {
            fields.push(Field::new(name, t));
        }
    }
    let k = group_by.len();
    let partial = PhysicalPlan::HashAggregate {
        input: Box::new(input.plan.clone()),
        group_by,
        group_types: group_types.clone(),
        aggs: aggs.clone(),
        mode: AggMode::Partial,
    };
    let partial = input.wrap(partial, Schema::new(fields));
    let keys: Vec<Expr> = (0..k).map(Expr::Column).collect();
    let merged = if k > 0 && groups >= SPREAD_FINAL_MIN_GROUPS {
        let id = fr.alloc();
        let schema = partial.schema.clone();
        let exchange = fr.emit(partial, id, Distribution::Hash(keys.clone()));
        Input {
            plan: exchange,
            schema,
            placement: Placement::AllDataNodes,
            fragment: Some(id),
            // The final phase's output starts with the group keys, as its input does.
            hashed: Spread::by(keys.clone()),
        }
    } else {
        fr.gather(partial)
    };
    let plan = PhysicalPlan::HashAggregate {
        input: Box::new(merged.plan.clone()),
        group_by: keys,
        group_types,
        aggs,
        mode: AggMode::Final,
    };
    merged.wrap(plan, schema)
}

/// When every expression `input` is known to be spread by is one of `group_by` (so each
/// group's rows are on one instance): those expressions as columns of the aggregation's
/// output, whose first columns are the group keys.
fn spread_by(input: &Input, group_by: &[Expr]) -> Option<Vec<Expr>> {
    input
        .hashed
        .within(group_by)?
        .iter()
        .map(|h| group_by.iter().position(|g| g == h).map(Expr::Column))
        .collect()
}

/// `l INTERSECT r` / `l EXCEPT r` as `SELECT cols FROM (l tagged 1,0 UNION ALL r tagged 0,1)
/// GROUP BY cols HAVING ...`: grouping compares NULLs as equal, as set operations do.
pub(super) fn set_op_as_aggregate(l: LogicalPlan, r: LogicalPlan, kind: SetOpKind) -> LogicalPlan {
    let fields = l.schema().fields;
    let n = fields.len();
    let tagged = |p: LogicalPlan, in_left: bool| {
        let mut exprs: Vec<Expr> = (0..n).map(Expr::Column).collect();
        exprs.push(Expr::lit(i64::from(in_left)));
        exprs.push(Expr::lit(i64::from(!in_left)));
        let mut f = fields.clone();
        f.push(Field::new("__in_left", DataType::Int64));
        f.push(Field::new("__in_right", DataType::Int64));
        p.project(exprs, f)
    };
    let union = LogicalPlan::Union {
        inputs: vec![tagged(l, true), tagged(r, false)],
    };
    let sum = |c: usize| AggregateExpr {
        func: AggFunc::Sum,
        arg: Some(Expr::Column(c)),
        input_type: DataType::Int64,
        param: None,
        order_by: Vec::new(),
    };
    let counted = LogicalPlan::Aggregate {
        input: Box::new(union),
        groups: (0..n).map(Expr::Column).collect(),
        group_fields: fields.clone(),
        aggs: vec![sum(n), sum(n + 1)],
        agg_names: vec!["__left".into(), "__right".into()],
    };
    let positive = |c: usize| Expr::col(c).binary(BinaryOp::Gt, Expr::lit(0));
    let (left, right) = (Expr::col(n), Expr::col(n + 1));
    let keep = match kind {
        SetOpKind::Intersect => positive(n).and(positive(n + 1)),
        SetOpKind::Except => positive(n).and(right.eq(Expr::lit(0))),
        SetOpKind::IntersectAll | SetOpKind::ExceptAll => {
            // The rows with their number of copies last, for the Repeat above.
            let copies = if kind == SetOpKind::IntersectAll {
                Expr::Case {
                    operand: None,
                    branches: vec![(left.clone().binary(BinaryOp::Lt, right.clone()), left)],
                    else_result: Some(Box::new(right)),
                }
            } else {
                left.binary(BinaryOp::Sub, right)
            };
            let mut exprs: Vec<Expr> = (0..n).map(Expr::Column).collect();
            exprs.push(copies);
            let mut with_copies = fields;
            with_copies.push(Field::new("__copies", DataType::Int64));
            return counted.project(exprs, with_copies);
        }
    };
    let filtered = LogicalPlan::Filter {
        input: Box::new(counted),
        predicate: keep,
    };
    filtered.project((0..n).map(Expr::Column).collect(), fields)
}
