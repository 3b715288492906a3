//! Physical planning: an optimized [`LogicalPlan`] becomes distributed fragments connected by
//! exchanges.
//!
//! Lowering walks the plan bottom up, growing the operator tree of the fragment currently
//! being built (an [`Input`]) and cutting it where rows must move:
//! - a scan starts a fragment on the nodes that own the table's partitions (with the index,
//!   partition pruning and filters chosen in [`scan`]);
//! - a join sends a small input whole to where the other one is (a broadcast join), or
//!   hash-distributes both inputs on their keys into a join fragment on every data node,
//!   building the side estimated smaller (estimates from `crate::optimizer::estimate`);
//! - an aggregation runs a partial phase where its input is and a final phase after gathering,
//!   or, when many groups are expected, on every data node after a hash exchange on the group
//!   keys ([`aggregate`]; DISTINCT is an aggregation on every column);
//! - a sort keeps each node's top rows under a limit, then merges after gathering; a full
//!   sort of a large input sorts on each node and merges the gathered streams, of a smaller
//!   one sorts the gathered rows once; a limit limits each node, then the gathered rows;
//! - unions gather every input into one fragment; INTERSECT and EXCEPT are planned as a union
//!   counted by an aggregation; a recursive query runs in one fragment on the initiator
//!   ([`recursive`]);
//! - a partitioned window hash-distributes its input on the partition keys into a window
//!   fragment on every data node, an unpartitioned one gathers it; a top-N window keeps its
//!   first rows per partition where the rows are, before they move.
//!
//! What runs on the initiator at the top becomes the root fragment (id 0).

mod aggregate;
mod fragments;
mod recursive;
pub(crate) mod scan;
mod sort;

use aggregate::{aggregate, set_op_as_aggregate};
use fragments::{Frags, Input, Spread};
use sort::{limit_rows, sort, sort_once};

use crate::catalog::Catalog;
use crate::error::PlanError;
use crate::logical::{JoinKind, LogicalPlan, SetOpKind};
use crate::optimizer::estimate::estimate;
use crate::statement::{Fragment, Placement, Pruning, QueryPlan};
use weir_operators::kernels::sort::MERGE_MIN_BYTES;
use weir_operators::plan::Distribution;
use weir_operators::plan::{JoinSide, SortKey, TableFunction, WindowExpr};
use weir_operators::types::row_bytes;
use weir_operators::{DataType, Expr, Field, PhysicalPlan, Schema};

fn is_identity(exprs: &[Expr], width: usize) -> bool {
    exprs.len() == width && exprs.iter().enumerate().all(|(i, e)| *e == Expr::Column(i))
}

/// Folds a projection `exprs` into the hash join `plan` when it only keeps some of the join's
/// columns in order (plain column references, ascending) and the join emits all of them yet:
/// the join then gathers only those. Returns whether it did.
fn fold_into_join(plan: &mut PhysicalPlan, exprs: &[Expr]) -> bool {
    let PhysicalPlan::HashJoin { output, .. } = plan else {
        return false;
    };
    let Some(cols) = exprs
        .iter()
        .map(Expr::column_index)
        .collect::<Option<Vec<_>>>()
    else {
        return false;
    };
    if output.is_some() || cols.windows(2).any(|w| w[0] >= w[1]) {
        return false;
    }
    *output = Some(cols);
    true
}

/// Plans an optimized logical plan into fragments; `fields` are the result columns as users
/// see them.
pub(crate) fn plan_query(
    plan: LogicalPlan,
    fields: Vec<Field>,
    catalog: &Catalog,
    param_types: Vec<Option<DataType>>,
) -> Result<QueryPlan, PlanError> {
    let mut fr = Frags {
        fragments: Vec::new(),
        next_id: 1,
        next_exchange: 0,
        data_nodes: catalog.data_nodes(),
    };
    let top = lower(plan, catalog, &mut fr)?;
    let top = fr.single(top);
    let root_id = top.fragment;
    fr.fragments.push(Fragment {
        id: 0,
        plan: top.plan,
        placement: Placement::Initiator,
        output: None,
    });
    // The top's pre-assigned id (a gather target) becomes the root's; then ids are made
    // consecutive in the order they were given.
    if let Some(id) = root_id {
        for f in &mut fr.fragments {
            if let Some(o) = &mut f.output {
                if o.target == id {
                    o.target = 0;
                }
            }
        }
    }
    fr.fragments.sort_by_key(|f| f.id);
    let renumber: std::collections::HashMap<u32, u32> = fr
        .fragments
        .iter()
        .enumerate()
        .map(|(new, f)| (f.id, new as u32))
        .collect();
    for f in &mut fr.fragments {
        f.id = renumber[&f.id];
        if let Some(o) = &mut f.output {
            o.target = renumber[&o.target];
        }
    }
    let mut plan = QueryPlan {
        fragments: fr.fragments,
        output_schema: Schema::new(fields),
        param_types,
        verbose: None,
        fragment_keys: Vec::new(),
        single_use: false,
    };
    plan.seal();
    Ok(plan)
}

fn lower(plan: LogicalPlan, catalog: &Catalog, fr: &mut Frags) -> Result<Input, PlanError> {
    let schema = plan.schema();
    let estimated_groups = match plan {
        LogicalPlan::Aggregate { .. } | LogicalPlan::Distinct { .. } => {
            estimate(&plan, catalog).rows
        }
        _ => 0.0,
    };
    Ok(match plan {
        LogicalPlan::Scan {
            table,
            projection,
            filters,
        } => {
            // An external table's rows are not placed by its (declared) key, and it has no
            // index: every scan reads the files, filtering as it goes.
            let (pruning, index, rest) = if table.external.is_some() {
                (Pruning::All, None, filters)
            } else {
                let pruning = scan::pk_pruning(&filters, &table.primary_key);
                let (index, rest) = scan::choose_index(filters, &table);
                (pruning, index, rest)
            };
            Input {
                plan: PhysicalPlan::Scan {
                    table: table.name.clone(),
                    table_schema: table.schema.clone(),
                    index,
                    filter: crate::logical::and_all(rest),
                    projection,
                    external: table.external.clone().map(Box::new),
                },
                schema,
                placement: Placement::Table {
                    table: table.name.clone(),
                    pruning,
                },
                fragment: None,
                hashed: Spread::default(),
            }
        }
        LogicalPlan::Values { schema, rows } => Input {
            plan: PhysicalPlan::Values {
                schema: schema.clone(),
                rows,
            },
            schema,
            placement: Placement::Initiator,
            fragment: None,
            hashed: Spread::default(),
        },
        LogicalPlan::Filter { input, predicate } => {
            let input = lower(*input, catalog, fr)?;
            let plan = PhysicalPlan::Filter {
                input: Box::new(input.plan),
                predicate,
            };
            Input { plan, ..input }
        }
        LogicalPlan::Project { input, exprs, .. } => {
            let mut input = lower(*input, catalog, fr)?;
            if is_identity(&exprs, input.schema.len()) {
                return Ok(Input { schema, ..input });
            }
            if fold_into_join(&mut input.plan, &exprs) {
                let hashed = input.hashed.projected(&exprs);
                return Ok(Input {
                    schema,
                    hashed,
                    ..input
                });
            }
            let hashed = input.hashed.projected(&exprs);
            let plan = PhysicalPlan::Project {
                input: Box::new(input.plan),
                exprs,
            };
            Input {
                plan,
                schema,
                hashed,
                ..input
            }
        }
        LogicalPlan::SubqueryAlias { input, .. } => {
            let input = lower(*input, catalog, fr)?;
            Input { schema, ..input }
        }
        LogicalPlan::Join {
            left,
            right,
            kind,
            on,
            filter,
        } => {
            let sizes = (
                estimate(&left, catalog).rows,
                estimate(&right, catalog).rows,
            );
            let left = lower(*left, catalog, fr)?;
            let right = lower(*right, catalog, fr)?;
            join([left, right], sizes, kind, on, filter, schema, fr)
        }
        LogicalPlan::Aggregate {
            input,
            groups,
            group_fields,
            aggs,
            ..
        } => {
            let input = lower(*input, catalog, fr)?;
            let group_types: Vec<DataType> = group_fields.iter().map(|f| f.data_type).collect();
            aggregate(
                input,
                groups,
                group_types,
                aggs,
                (schema, estimated_groups),
                fr,
            )
        }
        LogicalPlan::Distinct { input } => {
            let input = lower(*input, catalog, fr)?;
            let n = input.schema.len();
            let keys = (0..n).map(Expr::Column).collect();
            let types = input.schema.types();
            aggregate(input, keys, types, vec![], (schema, estimated_groups), fr)
        }
        LogicalPlan::Sort { input, keys } => {
            let rows = estimate(&input, catalog).rows;
            let input = lower(*input, catalog, fr)?;
            let bytes = rows * row_bytes(&input.schema.types()) as f64;
            if bytes < MERGE_MIN_BYTES as f64 {
                sort_once(input, keys, fr)
            } else {
                sort(input, keys, None, fr)
            }
        }
        LogicalPlan::Limit {
            input,
            offset,
            limit,
        } => {
            // A limit right above a sort keeps only the top rows of the sort.
            let (input, keys) = match *input {
                LogicalPlan::Sort { input, keys } => (lower(*input, catalog, fr)?, Some(keys)),
                other => (lower(other, catalog, fr)?, None),
            };
            let input = match keys {
                Some(keys) => sort(input, keys, limit.map(|l| l.saturating_add(offset)), fr),
                None => input,
            };
            limit_rows(input, offset, limit, fr)
        }
        LogicalPlan::Union { inputs } => {
            let target = fr.alloc();
            let mut children = Vec::with_capacity(inputs.len());
            for i in inputs {
                let i = lower(i, catalog, fr)?;
                children.push(if i.is_single() && i.fragment.is_none() {
                    i.plan
                } else {
                    fr.emit(i, target, Distribution::Gather)
                });
            }
            Input {
                plan: PhysicalPlan::Union { inputs: children },
                schema,
                placement: Placement::Initiator,
                fragment: Some(target),
                hashed: Spread::default(),
            }
        }
        LogicalPlan::SetOp { left, right, kind } => {
            let counted = lower(set_op_as_aggregate(*left, *right, kind), catalog, fr)?;
            if matches!(kind, SetOpKind::IntersectAll | SetOpKind::ExceptAll) {
                let plan = PhysicalPlan::Repeat {
                    input: Box::new(counted.plan.clone()),
                };
                counted.wrap(plan, schema)
            } else {
                counted
            }
        }
        LogicalPlan::SingleRow { input } => {
            let input = lower(*input, catalog, fr)?;
            let input = fr.single(input);
            let types = input.schema.types();
            let plan = PhysicalPlan::SingleRow {
                input: Box::new(input.plan.clone()),
                types,
            };
            input.wrap(plan, schema)
        }
        LogicalPlan::Apply { position, .. } => {
            return Err(PlanError::unsupported("this subquery", position));
        }
        LogicalPlan::RecursiveCte {
            name,
            base,
            step,
            distinct,
        } => {
            let cte = recursive::RecursiveCte {
                name,
                distinct,
                max_iterations: catalog.max_recursion(),
            };
            recursive::lower_recursive(cte, [*base, *step], schema, catalog, fr, lower)?
        }
        LogicalPlan::Expand {
            input,
            function,
            ordinality,
            ..
        } => {
            // Row by row where its input's rows are: the columns stay in place.
            let input = lower(*input, catalog, fr)?;
            let expand = |input| PhysicalPlan::Expand {
                input: Box::new(input),
                function,
                ordinality,
            };
            input.top(expand, schema)
        }
        LogicalPlan::TableFunction {
            schema,
            function,
            ordinality,
        } => Input {
            plan: match function {
                // A series streams from a source of its own.
                TableFunction::Series { start, stop, step } => PhysicalPlan::Series {
                    schema: schema.clone(),
                    start,
                    stop,
                    step,
                    ordinality,
                },
                // The others make a bounded number of values: one row expanded.
                function => PhysicalPlan::Expand {
                    input: Box::new(PhysicalPlan::Values {
                        schema: Schema::new(vec![]),
                        rows: vec![vec![]],
                    }),
                    function,
                    ordinality,
                },
            },
            schema,
            placement: Placement::Initiator,
            fragment: None,
            hashed: Spread::default(),
        },
        LogicalPlan::WorkTable { name, .. } => {
            return Err(PlanError::Invalid(format!(
                "internal planner error: recursive query \"{name}\" read outside its step"
            )));
        }
        LogicalPlan::Window {
            input,
            partition_by,
            order_by,
            functions,
            keep,
            ..
        } => {
            let input = lower(*input, catalog, fr)?;
            let spec = WindowSpec {
                partition_by,
                order_by,
                keep,
            };
            window(input, spec, functions, schema, fr)
        }
    })
}

/// Puts `inputs` into one single-instance fragment on the initiator: an input that already
/// runs there without a fragment of its own is inlined, the first one with its own fragment
/// hosts the others, and the rest are gathered into it. Returns the plans in order and the
/// fragment's id.
fn single_fragment(inputs: Vec<Input>, fr: &mut Frags) -> (Vec<PhysicalPlan>, u32) {
    let host = inputs
        .iter()
        .position(|i| i.is_single() && i.fragment.is_some());
    let target = match host {
        Some(h) => inputs[h].fragment.expect("found above"),
        None => fr.alloc(),
    };
    let plans = inputs
        .into_iter()
        .enumerate()
        .map(|(n, i)| {
            if Some(n) == host || (i.is_single() && i.fragment.is_none()) {
                i.plan
            } else {
                fr.emit(i, target, Distribution::Gather)
            }
        })
        .collect();
    (plans, target)
}

/// A join input at most this big (estimated rows) is always broadcast to the other side's
/// fragment: sending it whole costs less than a repartition step (two shuffles and a
/// fragment of its own).
const BROADCAST_TINY_ROWS: f64 = 1_000.0;

/// A join input at most this big is broadcast when that moves no more rows than
/// repartitioning both inputs would (see [`broadcast_worthy`]).
pub(crate) const BROADCAST_ROWS: f64 = 50_000.0;

/// An input this many times smaller than the other is broadcast too, up to
/// [`BROADCAST_MAX_ROWS`] (and on more than `BROADCAST_RATIO + 1` data nodes, only when it
/// is at least `nodes - 1` times smaller).
const BROADCAST_RATIO: f64 = 8.0;

/// The most rows broadcast (each node holds them all).
const BROADCAST_MAX_ROWS: f64 = 1_000_000.0;

/// Whether an input of `small` rows joined with one of `big` rows is sent whole to `big`'s
/// fragment on `nodes` data nodes (`None`: not known).
///
/// Broadcasting sends `small` to each of the other `nodes - 1` nodes, and builds a hash table
/// over all of it on every node; repartitioning sends all but a `1 / nodes` share of both
/// inputs and builds one table split in `nodes` parts. So besides a tiny input, an input is
/// broadcast only when that moves fewer rows, `(nodes - 1) × small ≤ big`: on a large
/// cluster a build side of a few thousand rows is repartitioned when the other side is not
/// much bigger. Large inputs also need [`BROADCAST_RATIO`], since building big tables on
/// every node costs more than the rows it saves moving.
fn broadcast_worthy(small: f64, big: f64, nodes: Option<usize>) -> bool {
    let copies = nodes.map(|n| n.saturating_sub(1) as f64);
    let moves_less = copies.is_none_or(|c| small * c <= big);
    let ratio = copies.map_or(BROADCAST_RATIO, |c| c.max(BROADCAST_RATIO));
    small <= big
        && (small <= BROADCAST_TINY_ROWS
            || (small <= BROADCAST_ROWS && moves_less)
            || (small * ratio <= big && small <= BROADCAST_MAX_ROWS))
}

/// Which side of a join a hash or nested-loop join operator is given.
enum Strategy {
    /// Both inputs already on the initiator (or to be gathered there): one instance.
    Single,
    /// One side (`JoinSide`) sent whole to every instance of the other side's fragment.
    Broadcast(JoinSide),
    /// Both sides hash-distributed on their keys into a join fragment on every data node.
    Repartition,
}

/// A join of two lowered inputs whose estimated rows are `sizes`.
///
/// With equality keys: a side that is small (see [`broadcast_worthy`]) and not preserved by
/// the join type goes whole to the other side's fragment, which does not move; otherwise
/// both sides are hash-distributed on their keys into a join fragment on every data node.
/// Without keys (or for NOT IN, whose NULL rule needs the whole right side in each place) the
/// smaller unpreserved side is broadcast the same way, or both sides meet on the initiator.
/// Two inputs already on the initiator join there. The hash table is built on the broadcast
/// side, else on the side estimated smaller.
fn join(
    [left, right]: [Input; 2],
    (left_rows, right_rows): (f64, f64),
    kind: JoinKind,
    on: Vec<(Expr, Expr)>,
    filter: Option<Expr>,
    schema: Schema,
    fr: &mut Frags,
) -> Input {
    let join_type = kind.join_type();
    let left_types = left.schema.types();
    let right_types = right.schema.types();
    let smaller = if right_rows <= left_rows {
        JoinSide::Right
    } else {
        JoinSide::Left
    };
    // A side can be sent whole to each instance of the other only when its rows just match:
    // each preserved or probing row must be seen exactly once.
    let right_may_go = matches!(
        kind,
        JoinKind::Inner
            | JoinKind::Left
            | JoinKind::Semi
            | JoinKind::Anti
            | JoinKind::AntiNullAware
    );
    let left_may_go = matches!(kind, JoinKind::Inner | JoinKind::Right);
    let keyed = !on.is_empty() && kind != JoinKind::AntiNullAware;
    let worthy = |small: f64, big: f64| {
        if keyed {
            broadcast_worthy(small, big, fr.data_nodes)
        } else {
            small <= big
        }
    };
    let strategy = if left.is_single() && right.is_single() {
        Strategy::Single
    } else if right_may_go && !left.is_single() && worthy(right_rows, left_rows) {
        Strategy::Broadcast(JoinSide::Right)
    } else if left_may_go && !right.is_single() && worthy(left_rows, right_rows) {
        Strategy::Broadcast(JoinSide::Left)
    } else if keyed {
        Strategy::Repartition
    } else {
        Strategy::Single
    };
    let (left_keys, right_keys): (Vec<Expr>, Vec<Expr>) = on.into_iter().unzip();
    let left_width = left.schema.len();
    // Where each side's rows are after the exchanges below (see `Spread`; over that side's
    // own columns): where they were when they stay, by their keys when hashed, nowhere known
    // when broadcast.
    let (l, r, build, placement, fragment, left_at, right_at) = match strategy {
        Strategy::Repartition if spread_on(&left, &left_keys) => {
            // The left rows are already where a hash of these keys puts them: the join runs
            // in their fragment, and only the right rows move, hashed the same way.
            let target = left.fragment.expect("a spread input has its fragment");
            let r = fr.emit(right, target, Distribution::Hash(right_keys.clone()));
            let right_at = Spread::by(right_keys.clone());
            (
                left.plan,
                r,
                smaller,
                left.placement,
                target,
                left.hashed,
                right_at,
            )
        }
        Strategy::Repartition if spread_on(&right, &right_keys) => {
            let target = right.fragment.expect("a spread input has its fragment");
            let l = fr.emit(left, target, Distribution::Hash(left_keys.clone()));
            let left_at = Spread::by(left_keys.clone());
            (
                l,
                right.plan,
                smaller,
                right.placement,
                target,
                left_at,
                right.hashed,
            )
        }
        Strategy::Repartition => {
            let join_id = fr.alloc();
            let l = fr.emit(left, join_id, Distribution::Hash(left_keys.clone()));
            let r = fr.emit(right, join_id, Distribution::Hash(right_keys.clone()));
            let (left_at, right_at) = (
                Spread::by(left_keys.clone()),
                Spread::by(right_keys.clone()),
            );
            (
                l,
                r,
                smaller,
                Placement::AllDataNodes,
                join_id,
                left_at,
                right_at,
            )
        }
        Strategy::Broadcast(JoinSide::Right) => {
            let target = left.fragment.unwrap_or_else(|| fr.alloc());
            let r = fr.emit(right, target, Distribution::Broadcast);
            let left_at = left.hashed;
            (
                left.plan,
                r,
                JoinSide::Right,
                left.placement,
                target,
                left_at,
                Spread::default(),
            )
        }
        Strategy::Broadcast(JoinSide::Left) => {
            let target = right.fragment.unwrap_or_else(|| fr.alloc());
            let l = fr.emit(left, target, Distribution::Broadcast);
            let right_at = right.hashed;
            (
                l,
                right.plan,
                JoinSide::Left,
                right.placement,
                target,
                Spread::default(),
                right_at,
            )
        }
        Strategy::Single => {
            let (mut plans, target) = single_fragment(vec![left, right], fr);
            let r = plans.pop().expect("two inputs");
            let l = plans.pop().expect("two inputs");
            let nowhere = Spread::default();
            (
                l,
                r,
                smaller,
                Placement::Initiator,
                target,
                nowhere.clone(),
                nowhere,
            )
        }
    };
    // The output is spread as a side is when every output row has that side's columns as its
    // rows had them: the left columns come first; an outer join's unmatched rows are NULL on
    // the other side, and a semi or anti join outputs the left only.
    let keeps_left = !matches!(kind, JoinKind::Right | JoinKind::Full);
    let keeps_right = matches!(kind, JoinKind::Inner | JoinKind::Right);
    let mut hashed = Spread::default();
    if keeps_left {
        hashed = hashed.and(left_at);
    }
    if keeps_right {
        hashed = hashed.and(right_at.shifted(left_width));
    }
    let (left, right) = (Box::new(l), Box::new(r));
    let plan = PhysicalPlan::join(
        left,
        right,
        left_keys,
        right_keys,
        join_type,
        filter,
        build,
        (left_types, right_types),
    );
    Input {
        plan,
        schema,
        placement,
        fragment: Some(fragment),
        hashed,
    }
}

/// Whether `input` runs on every data node with its rows spread by a hash of exactly `keys`
/// (in this order): a hash exchange on them fed it, so rows with equal keys are on one
/// instance, the one another hash exchange on equal values into its fragment reaches.
fn spread_on(input: &Input, keys: &[Expr]) -> bool {
    input.placement == Placement::AllDataNodes
        && input.fragment.is_some()
        && !keys.is_empty()
        && input.hashed.is_by(keys)
}

/// A window's partition keys, order and per-partition limit.
struct WindowSpec {
    partition_by: Vec<Expr>,
    order_by: Vec<SortKey>,
    keep: Option<usize>,
}

impl WindowSpec {
    /// The window operator computing `functions` over `input`, keeping `keep` rows.
    fn node(
        &self,
        input: PhysicalPlan,
        functions: Vec<WindowExpr>,
        keep: Option<usize>,
    ) -> PhysicalPlan {
        PhysicalPlan::Window {
            input: Box::new(input),
            partition_by: self.partition_by.clone(),
            order_by: self.order_by.clone(),
            functions,
            keep,
        }
    }
}

/// Window functions. Where the input is a single instance, there. Otherwise a partitioned
/// window runs on every data node after a hash exchange on its partition keys, so that each
/// partition is whole on one node (no exchange when the input is already spread by a subset
/// of them, as a window below on such keys leaves it); an unpartitioned one runs on the
/// initiator after a gather. A top-N window (`keep`) first keeps the first `keep` rows of
/// each partition where the rows are, so that only those move.
fn window(
    input: Input,
    spec: WindowSpec,
    functions: Vec<WindowExpr>,
    schema: Schema,
    fr: &mut Frags,
) -> Input {
    let spread = input.hashed.within(&spec.partition_by).is_some();
    if input.is_single() || spread {
        return input.top(|p| spec.node(p, functions, spec.keep), schema);
    }
    let input = match spec.keep {
        Some(k) => {
            let same = input.schema.clone();
            input.top(|p| spec.node(p, vec![], Some(k)), same)
        }
        None => input,
    };
    if spec.partition_by.is_empty() {
        let gathered = fr.gather(input);
        return gathered.top(|p| spec.node(p, functions, spec.keep), schema);
    }
    let id = fr.alloc();
    let exchange = fr.emit(input, id, Distribution::Hash(spec.partition_by.clone()));
    Input {
        plan: spec.node(exchange, functions, spec.keep),
        schema,
        placement: Placement::AllDataNodes,
        fragment: Some(id),
        hashed: Spread::by(spec.partition_by),
    }
}
