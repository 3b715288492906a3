//! EXPLAIN rendering ([`QueryPlan::explain`]): one indented operator tree per fragment, with
//! expressions shown over column names. The plan's types live in [`crate::statement`]; their
//! rendering lives here, so the statement module does not refer back to this one.

use crate::statement::{Fragment, Placement, Pruning, QueryPlan};
use std::fmt::Write;
use weir_operators::plan::Distribution;
use weir_operators::plan::{
    AggFunc, AggMode, AggregateExpr, FrameBound, IndexLookup, JoinSide, JoinType, SeriesStep,
    SortKey, TableFunction, WindowExpr, WindowFrame, WindowFunc,
};
use weir_operators::{Expr, PhysicalPlan};

/// Formats `e` with column references replaced by `names` (falling back to `#i`).
pub fn fmt_expr(e: &Expr, names: &[String]) -> String {
    e.render(&|i| names.get(i).cloned().unwrap_or_else(|| format!("#{i}")))
}

/// Formats an aggregate call with its argument over `names`.
pub(crate) fn fmt_agg(a: &AggregateExpr, names: &[String]) -> String {
    let call = a.call_text(a.arg.as_ref().map(|arg| fmt_expr(arg, names)).as_deref());
    if a.order_by.is_empty() {
        return call;
    }
    let keys: Vec<String> = a.order_by.iter().map(|k| fmt_sort_key(k, names)).collect();
    format!("{call} ORDER BY {}", keys.join(", "))
}

/// Names of the partial-state columns of an aggregate.
pub(crate) fn state_names(a: &AggregateExpr, names: &[String]) -> Vec<String> {
    let base = fmt_agg(a, names);
    match a.func {
        AggFunc::Avg => vec![format!("{base}.sum"), format!("{base}.count")],
        f if f.is_moment() => vec![
            format!("{base}.count"),
            format!("{base}.sum"),
            format!("{base}.m2"),
        ],
        _ => vec![base],
    }
}

/// A series' call: `generate_series(1, 10, 1)`, `generate_series(a, b, INTERVAL '1 mon 2
/// days')`.
pub(crate) fn fmt_series(start: &Expr, stop: &Expr, step: &SeriesStep, ordinality: bool) -> String {
    let series = TableFunction::Series {
        start: start.clone(),
        stop: stop.clone(),
        step: step.clone(),
    };
    fmt_table_function(&series, ordinality, &[])
}

/// A table function's call whose arguments read columns named `names` (an Expand's
/// input's): `string_to_table(s, ',') WITH ORDINALITY`.
pub(crate) fn fmt_table_function(
    function: &TableFunction,
    ordinality: bool,
    names: &[String],
) -> String {
    let mut args: Vec<String> = function
        .args()
        .into_iter()
        .map(|e| fmt_expr(e, names))
        .collect();
    if let TableFunction::Series {
        step:
            SeriesStep::Interval {
                months,
                days,
                micros,
            },
        ..
    } = function
    {
        args.push(format!("INTERVAL '{months} mons {days} days {micros} us'"));
    }
    let numbered = if ordinality { " WITH ORDINALITY" } else { "" };
    format!("{}({}){numbered}", function.name(), args.join(", "))
}

/// A sort key over `names`: `x DESC NULLS FIRST`.
pub(crate) fn fmt_sort_key(k: &SortKey, names: &[String]) -> String {
    format!(
        "{} {} NULLS {}",
        fmt_expr(&k.expr, names),
        if k.descending { "DESC" } else { "ASC" },
        if k.nulls_first { "FIRST" } else { "LAST" }
    )
}

/// A frame as SQL: `ROWS BETWEEN 1 PRECEDING AND CURRENT ROW EXCLUDE TIES`.
pub(crate) fn fmt_frame(f: &WindowFrame) -> String {
    let bound = |b: &FrameBound| match b {
        FrameBound::UnboundedPreceding => "UNBOUNDED PRECEDING".to_string(),
        FrameBound::Preceding(e) => format!("{} PRECEDING", fmt_expr(e, &[])),
        FrameBound::CurrentRow => "CURRENT ROW".to_string(),
        FrameBound::Following(e) => format!("{} FOLLOWING", fmt_expr(e, &[])),
        FrameBound::UnboundedFollowing => "UNBOUNDED FOLLOWING".to_string(),
    };
    let mut s = format!(
        "{} BETWEEN {} AND {}",
        f.units.name(),
        bound(&f.start),
        bound(&f.end)
    );
    if !f.exclude.sql().is_empty() {
        s.push(' ');
        s.push_str(f.exclude.sql());
    }
    s
}

/// A window function call over `names`, with its frame when it reads one:
/// `SUM(x) ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW`.
pub(crate) fn fmt_window_fn(f: &WindowExpr, names: &[String]) -> String {
    let args = match f.func {
        WindowFunc::Aggregate(AggFunc::CountStar) => "*".to_string(),
        _ => f
            .args
            .iter()
            .map(|a| fmt_expr(a, names))
            .collect::<Vec<_>>()
            .join(", "),
    };
    let call = format!("{}({args})", f.func.name());
    if f.func.uses_frame() {
        format!("{call} {}", fmt_frame(&f.frame))
    } else {
        call
    }
}

/// Output column names of a plan node.
pub(crate) fn names(plan: &PhysicalPlan) -> Vec<String> {
    match plan {
        PhysicalPlan::Scan {
            table_schema,
            projection,
            ..
        } => projection
            .iter()
            .map(|&c| {
                table_schema
                    .fields
                    .get(c)
                    .map_or_else(|| format!("#{c}"), |f| f.name.clone())
            })
            .collect(),
        PhysicalPlan::Filter { input, .. }
        | PhysicalPlan::Sort { input, .. }
        | PhysicalPlan::Limit { input, .. }
        | PhysicalPlan::SingleRow { input, .. } => names(input),
        PhysicalPlan::Repeat { input } => {
            let mut n = names(input);
            n.pop();
            n
        }
        PhysicalPlan::Expand {
            input,
            function,
            ordinality,
        } => {
            let mut n = names(input);
            n.push(function.name().to_string());
            if *ordinality {
                n.push("ordinality".to_string());
            }
            n
        }
        PhysicalPlan::Project { input, exprs } => {
            let n = names(input);
            exprs.iter().map(|e| fmt_expr(e, &n)).collect()
        }
        PhysicalPlan::HashJoin {
            left,
            right,
            join_type,
            output,
            ..
        } => {
            let all = joined_names(left, right, *join_type);
            match output {
                Some(cols) => cols.iter().map(|&c| column_name(&all, c)).collect(),
                None => all,
            }
        }
        PhysicalPlan::NestedLoopJoin {
            left,
            right,
            join_type,
            ..
        } => joined_names(left, right, *join_type),
        PhysicalPlan::HashAggregate {
            input,
            group_by,
            aggs,
            mode,
            ..
        } => {
            let n = names(input);
            match mode {
                AggMode::Partial => {
                    let mut out: Vec<String> = group_by.iter().map(|e| fmt_expr(e, &n)).collect();
                    for a in aggs {
                        out.extend(state_names(a, &n));
                    }
                    out
                }
                AggMode::Single => {
                    let mut out: Vec<String> = group_by.iter().map(|e| fmt_expr(e, &n)).collect();
                    out.extend(aggs.iter().map(|a| fmt_agg(a, &n)));
                    out
                }
                AggMode::Final => {
                    let k = group_by.len();
                    let mut out: Vec<String> = n.iter().take(k).cloned().collect();
                    let mut col = k;
                    for a in aggs {
                        // The first state's name without what it names of the state.
                        let state = [".sum", ".count"];
                        let name = n
                            .get(col)
                            .map(|s| {
                                let base = state.iter().find_map(|suffix| s.strip_suffix(suffix));
                                base.unwrap_or(s).to_string()
                            })
                            .unwrap_or_else(|| a.func.name().to_string());
                        out.push(name);
                        col += a.state_types().len();
                    }
                    out
                }
            }
        }
        PhysicalPlan::Exchange { schema, .. }
        | PhysicalPlan::Values { schema, .. }
        | PhysicalPlan::Series { schema, .. }
        | PhysicalPlan::StepInput { schema, .. } => {
            schema.fields.iter().map(|f| f.name.clone()).collect()
        }
        PhysicalPlan::RecursiveUnion { inputs, .. } => {
            inputs.first().map(names).unwrap_or_default()
        }
        PhysicalPlan::Union { inputs } => inputs.first().map(names).unwrap_or_default(),
        PhysicalPlan::Window {
            input, functions, ..
        } => {
            let mut n = names(input);
            let calls: Vec<String> = functions.iter().map(|f| fmt_window_fn(f, &n)).collect();
            n.extend(calls);
            n
        }
    }
}

/// The output names of a join of `left` and `right` before any output selection: the left
/// input's, then the right input's unless the join outputs the left alone.
fn joined_names(left: &PhysicalPlan, right: &PhysicalPlan, join_type: JoinType) -> Vec<String> {
    let mut n = names(left);
    if !join_type.left_only() {
        n.extend(names(right));
    }
    n
}

/// The name of column `c` among `names` (`#c` when there is none).
fn column_name(names: &[String], c: usize) -> String {
    names.get(c).cloned().unwrap_or_else(|| format!("#{c}"))
}

fn fmt_lookup(col: &str, l: &IndexLookup, names: &[String]) -> String {
    match l {
        IndexLookup::Eq(v) => format!("{col} = {}", fmt_expr(v, names)),
        IndexLookup::In(list) => format!(
            "{col} IN ({})",
            list.iter()
                .map(|e| fmt_expr(e, names))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        IndexLookup::Range { low, high } => {
            let mut parts = Vec::new();
            if let Some((v, inc)) = low {
                parts.push(format!(
                    "{col} {} {}",
                    if *inc { ">=" } else { ">" },
                    fmt_expr(v, names)
                ));
            }
            if let Some((v, inc)) = high {
                parts.push(format!(
                    "{col} {} {}",
                    if *inc { "<=" } else { "<" },
                    fmt_expr(v, names)
                ));
            }
            parts.join(" AND ")
        }
        IndexLookup::Key { columns, values } => {
            let cols: Vec<&str> = columns
                .iter()
                .map(|&c| names.get(c).map_or("?", |s| s.as_str()))
                .collect();
            let vals: Vec<String> = values.iter().map(|e| fmt_expr(e, names)).collect();
            format!("({}) = ({})", cols.join(", "), vals.join(", "))
        }
    }
}

fn fmt_distribution(d: &Distribution, names: &[String]) -> String {
    match d {
        Distribution::Gather => "gather".to_string(),
        Distribution::Broadcast => "broadcast".to_string(),
        Distribution::Hash(keys) => format!(
            "hash({})",
            keys.iter()
                .map(|e| fmt_expr(e, names))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// What an operator's line of EXPLAIN ANALYZE ends with (`rows=3 ...`), asked by the
/// operator's number in a pre-order walk of its fragment's plan (the numbers
/// [`QueryPlan::explain_analyzed`] documents); `None` adds nothing.
pub type Annotate<'a> = &'a dyn Fn(u32) -> Option<String>;

/// The numbering of a fragment's operators as the walk meets them, and what to add to their
/// lines.
struct Notes<'a> {
    next: u32,
    annotate: Option<Annotate<'a>>,
}

fn node(plan: &PhysicalPlan, qp: &QueryPlan, depth: usize, out: &mut String, notes: &mut Notes) {
    let pad = "  ".repeat(depth + 1);
    let line = match plan {
        PhysicalPlan::Scan {
            table,
            table_schema,
            index,
            filter,
            projection,
            external,
        } => {
            let all: Vec<String> = table_schema.fields.iter().map(|f| f.name.clone()).collect();
            let mut s = format!("{} {table}", plan.name());
            if let Some(source) = external {
                let _ = write!(s, " ({source})");
            }
            if let Some((col, lookup)) = index {
                let cname = all.get(*col).cloned().unwrap_or_else(|| format!("#{col}"));
                let iname = match lookup {
                    IndexLookup::Key { .. } => "PRIMARY KEY".to_string(),
                    _ => qp_index_name(table_schema, *col, qp),
                };
                let _ = write!(
                    s,
                    " using index {iname} ({})",
                    fmt_lookup(&cname, lookup, &all)
                );
            }
            if let Some(f) = filter {
                let _ = write!(s, " filter: {}", fmt_expr(f, &all));
            }
            let cols: Vec<&str> = projection
                .iter()
                .map(|&c| all.get(c).map_or("?", |s| s.as_str()))
                .collect();
            let _ = write!(s, " columns: [{}]", cols.join(", "));
            s
        }
        PhysicalPlan::Filter { input, predicate } => {
            format!("Filter {}", fmt_expr(predicate, &names(input)))
        }
        PhysicalPlan::Project { input, exprs } => {
            let n = names(input);
            format!(
                "Project [{}]",
                exprs
                    .iter()
                    .map(|e| fmt_expr(e, &n))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
        PhysicalPlan::HashJoin {
            left,
            right,
            left_keys,
            right_keys,
            join_type,
            filter,
            build,
            output,
            ..
        } => {
            let (ln, rn) = (names(left), names(right));
            let conds: Vec<String> = left_keys
                .iter()
                .zip(right_keys)
                .map(|(l, r)| format!("{} = {}", fmt_expr(l, &ln), fmt_expr(r, &rn)))
                .collect();
            let emits = match output {
                Some(_) => format!(" output: [{}]", names(plan).join(", ")),
                None => String::new(),
            };
            format!(
                "HashJoin{} on {}{} build: {}{emits}",
                fmt_join_type(*join_type),
                conds.join(" AND "),
                fmt_join_filter(filter.as_ref(), ln, rn, " filter: "),
                fmt_side(*build)
            )
        }
        PhysicalPlan::NestedLoopJoin {
            left,
            right,
            join_type,
            filter,
            build,
            ..
        } => {
            let (ln, rn) = (names(left), names(right));
            let on = match filter {
                Some(_) => fmt_join_filter(filter.as_ref(), ln, rn, " on "),
                None => " cross".to_string(),
            };
            format!(
                "NestedLoopJoin{}{on} build: {}",
                fmt_join_type(*join_type),
                fmt_side(*build)
            )
        }
        PhysicalPlan::SingleRow { .. } => "SingleRow".to_string(),
        PhysicalPlan::Repeat { .. } => "Repeat (by count)".to_string(),
        PhysicalPlan::Expand {
            input,
            function,
            ordinality,
        } => format!(
            "Expand {}",
            fmt_table_function(function, *ordinality, &names(input))
        ),
        PhysicalPlan::HashAggregate {
            input,
            group_by,
            aggs,
            mode,
            ..
        } => {
            let n = names(input);
            let mode_s = match mode {
                AggMode::Single => "single",
                AggMode::Partial => "partial",
                AggMode::Final => "final",
            };
            let groups: Vec<String> = match mode {
                AggMode::Final => n.iter().take(group_by.len()).cloned().collect(),
                _ => group_by.iter().map(|e| fmt_expr(e, &n)).collect(),
            };
            let aggs_s: Vec<String> = match mode {
                AggMode::Final => names(plan).into_iter().skip(group_by.len()).collect(),
                _ => aggs.iter().map(|a| fmt_agg(a, &n)).collect(),
            };
            format!(
                "HashAggregate ({mode_s}) group by: [{}] aggregates: [{}]",
                groups.join(", "),
                aggs_s.join(", ")
            )
        }
        PhysicalPlan::Sort { input, keys, limit } => {
            let n = names(input);
            let ks: Vec<String> = keys.iter().map(|k| fmt_sort_key(k, &n)).collect();
            match limit {
                Some(l) => format!("Sort (top-{l}) [{}]", ks.join(", ")),
                None => format!("Sort [{}]", ks.join(", ")),
            }
        }
        PhysicalPlan::Limit { offset, limit, .. } => match limit {
            Some(l) => format!("Limit {l} offset {offset}"),
            None => format!("Limit all offset {offset}"),
        },
        PhysicalPlan::Exchange { id, .. } => {
            let from: Vec<String> = qp
                .fragments
                .iter()
                .filter(|f| f.output.as_ref().is_some_and(|o| o.exchange == *id))
                .map(|f| format!("fragment {}", f.id))
                .collect();
            format!("Exchange #{id} from {}", from.join(", "))
        }
        PhysicalPlan::Values { rows, .. } => format!("Values ({} row(s))", rows.len()),
        PhysicalPlan::Series {
            start,
            stop,
            step,
            ordinality,
            ..
        } => format!("Series {}", fmt_series(start, stop, step, *ordinality)),
        PhysicalPlan::Union { inputs } => format!("Union ({} inputs)", inputs.len()),
        PhysicalPlan::RecursiveUnion {
            name,
            distinct,
            max_iterations,
            ..
        } => format!(
            "RecursiveUnion {name} (UNION{}, at most {max_iterations} iterations; the base, then what the step reads)",
            if *distinct { "" } else { " ALL" }
        ),
        PhysicalPlan::StepInput { port: 0, .. } => "StepInput (the working table)".to_string(),
        PhysicalPlan::StepInput { port, .. } => format!("StepInput (input {port})"),
        PhysicalPlan::Window {
            input,
            partition_by,
            order_by,
            functions,
            keep,
        } => {
            let n = names(input);
            let list = |v: Vec<String>| v.join(", ");
            let mut s = format!(
                "Window partition by: [{}] order by: [{}] functions: [{}]",
                list(partition_by.iter().map(|e| fmt_expr(e, &n)).collect()),
                list(order_by.iter().map(|k| fmt_sort_key(k, &n)).collect()),
                list(functions.iter().map(|f| fmt_window_fn(f, &n)).collect()),
            );
            if let Some(k) = keep {
                let _ = write!(s, " keep: first {k} per partition");
            }
            s
        }
    };
    let number = notes.next;
    notes.next += 1;
    match notes.annotate.and_then(|a| a(number)) {
        Some(note) => {
            let _ = writeln!(out, "{pad}{line} ({note})");
        }
        None => {
            let _ = writeln!(out, "{pad}{line}");
        }
    }
    for c in plan.children() {
        node(c, qp, depth + 1, out, notes);
    }
    if let PhysicalPlan::RecursiveUnion { step, .. } = plan {
        // The step runs inside the recursive union's kernel: no operators of its own.
        let _ = writeln!(out, "{pad}  step, each round:");
        let mut unnumbered = Notes {
            next: 0,
            annotate: None,
        };
        node(step, qp, depth + 2, out, &mut unnumbered);
    }
}

/// ` (LEFT)` and the like; nothing for an inner join.
fn fmt_join_type(t: JoinType) -> String {
    match t {
        JoinType::Inner => String::new(),
        other => format!(" ({})", other.name()),
    }
}

/// A join's residual filter over left then right column names, after `prefix`; nothing
/// without one.
fn fmt_join_filter(
    filter: Option<&Expr>,
    mut ln: Vec<String>,
    rn: Vec<String>,
    prefix: &str,
) -> String {
    match filter {
        Some(f) => {
            ln.extend(rn);
            format!("{prefix}{}", fmt_expr(f, &ln))
        }
        None => String::new(),
    }
}

fn fmt_side(side: JoinSide) -> &'static str {
    match side {
        JoinSide::Left => "left",
        JoinSide::Right => "right",
    }
}

fn qp_index_name(schema: &weir_operators::Schema, col: usize, _qp: &QueryPlan) -> String {
    schema
        .fields
        .get(col)
        .map_or_else(|| format!("#{col}"), |f| format!("on {}", f.name))
}

fn fmt_placement(p: &Placement) -> String {
    match p {
        Placement::Initiator => "initiator".to_string(),
        Placement::AllDataNodes => "all data nodes".to_string(),
        Placement::Table { table, pruning } => match pruning {
            Pruning::All => format!("table {table}, all partitions"),
            Pruning::Keys(keys) => format!(
                "table {table}, partitions of keys ({})",
                keys.iter()
                    .map(|k| fmt_expr(k, &[]))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Pruning::Key(values) => format!(
                "table {table}, partition of key ({})",
                values
                    .iter()
                    .map(|k| fmt_expr(k, &[]))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        },
    }
}

impl QueryPlan {
    /// Renders the plan as an indented operator tree per fragment, with placement, the nodes
    /// `nodes_of` reports for each fragment, exchange ids, filters and index usage.
    pub fn explain(&self, nodes_of: &dyn Fn(&Fragment) -> String) -> String {
        self.explain_analyzed(nodes_of, &|_, _| None)
    }

    /// [`QueryPlan::explain`] with each operator's line ending with what `annotate` says of it
    /// (EXPLAIN ANALYZE's counts), asked by fragment id and the operator's number in its
    /// fragment: a pre-order walk of the fragment's plan, the root 0, then each input's
    /// subtree in port order (a recursive union's step is not numbered: it runs inside the
    /// union's kernel).
    pub fn explain_analyzed(
        &self,
        nodes_of: &dyn Fn(&Fragment) -> String,
        annotate: &dyn Fn(u32, u32) -> Option<String>,
    ) -> String {
        let mut out = self.verbose.clone().unwrap_or_default();
        for f in &self.fragments {
            let _ = write!(
                out,
                "Fragment {} on {} [nodes: {}]",
                f.id,
                fmt_placement(&f.placement),
                nodes_of(f)
            );
            if let Some(o) = &f.output {
                let _ = write!(
                    out,
                    " -> exchange #{} to fragment {} ({})",
                    o.exchange,
                    o.target,
                    fmt_distribution(&o.distribution, &names(&f.plan))
                );
            }
            out.push('\n');
            let of_fragment = |operator: u32| annotate(f.id, operator);
            let mut notes = Notes {
                next: 0,
                annotate: Some(&of_fragment),
            };
            node(&f.plan, self, 0, &mut out, &mut notes);
        }
        out
    }
}
