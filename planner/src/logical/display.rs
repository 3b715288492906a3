//! Text rendering of logical plans ([`LogicalPlan::display_indent`]): one node per line,
//! inputs indented below, expressions shown over the input's column names.

use super::{ApplyKind, LogicalPlan, SetOpKind};
use crate::explain::{fmt_expr, fmt_sort_key, fmt_table_function, fmt_window_fn};
use std::fmt::Write;
use weir_operators::plan::AggregateExpr;

impl LogicalPlan {
    /// An indented rendering, one node per line, for `EXPLAIN VERBOSE` and tests.
    pub fn display_indent(&self) -> String {
        let mut out = String::new();
        node(self, 0, &mut out);
        out
    }
}

fn names(plan: &LogicalPlan) -> Vec<String> {
    plan.schema().fields.into_iter().map(|f| f.name).collect()
}

fn agg(a: &AggregateExpr, n: &[String]) -> String {
    let call = a.call_text(a.arg.as_ref().map(|arg| fmt_expr(arg, n)).as_deref());
    if a.order_by.is_empty() {
        return call;
    }
    let keys: Vec<String> = a
        .order_by
        .iter()
        .map(|k| {
            format!(
                "{}{}",
                fmt_expr(&k.expr, n),
                if k.descending { " DESC" } else { "" }
            )
        })
        .collect();
    format!("{call} ORDER BY {}", keys.join(", "))
}

fn list(exprs: &[weir_operators::Expr], n: &[String]) -> String {
    exprs
        .iter()
        .map(|e| fmt_expr(e, n))
        .collect::<Vec<_>>()
        .join(", ")
}

fn node(plan: &LogicalPlan, depth: usize, out: &mut String) {
    let pad = "  ".repeat(depth);
    let input_names = |i: usize| plan.inputs().get(i).map(|p| names(p)).unwrap_or_default();
    let line = match plan {
        LogicalPlan::Scan {
            table,
            projection,
            filters,
        } => {
            let all: Vec<String> = table.schema.fields.iter().map(|f| f.name.clone()).collect();
            let cols: Vec<&str> = projection.iter().map(|&c| all[c].as_str()).collect();
            let mut s = format!("Scan {} [{}]", table.name, cols.join(", "));
            if !filters.is_empty() {
                let _ = write!(s, " filter={}", list(filters, &all));
            }
            s
        }
        LogicalPlan::Values { rows, .. } => format!("Values ({} rows)", rows.len()),
        LogicalPlan::RecursiveCte { name, distinct, .. } => format!(
            "RecursiveCte {name} UNION{}",
            if *distinct { "" } else { " ALL" }
        ),
        LogicalPlan::WorkTable { name, .. } => format!("WorkTable {name}"),
        LogicalPlan::TableFunction {
            function,
            ordinality,
            ..
        } => format!("Series {}", fmt_table_function(function, *ordinality, &[])),
        LogicalPlan::Expand {
            function,
            ordinality,
            ..
        } => {
            let n = input_names(0);
            format!("Expand {}", fmt_table_function(function, *ordinality, &n))
        }
        LogicalPlan::Filter { predicate, .. } => {
            format!("Filter {}", fmt_expr(predicate, &input_names(0)))
        }
        LogicalPlan::Project { exprs, .. } => {
            format!("Project {}", list(exprs, &input_names(0)))
        }
        LogicalPlan::Join {
            kind, on, filter, ..
        } => {
            let mut n = input_names(0);
            let left = n.clone();
            let right = input_names(1);
            n.extend(right.iter().cloned());
            let keys: Vec<String> = on
                .iter()
                .map(|(l, r)| format!("{} = {}", fmt_expr(l, &left), fmt_expr(r, &right)))
                .collect();
            let mut s = format!("Join {}", kind.name());
            if !keys.is_empty() {
                let _ = write!(s, " on {}", keys.join(" AND "));
            }
            if let Some(f) = filter {
                let _ = write!(s, " filter={}", fmt_expr(f, &n));
            }
            s
        }
        LogicalPlan::Aggregate { groups, aggs, .. } => {
            let n = input_names(0);
            let a: Vec<String> = aggs.iter().map(|x| agg(x, &n)).collect();
            format!(
                "Aggregate groups=[{}] aggs=[{}]",
                list(groups, &n),
                a.join(", ")
            )
        }
        LogicalPlan::Distinct { .. } => "Distinct".to_string(),
        LogicalPlan::Sort { keys, .. } => {
            let n = input_names(0);
            let k: Vec<String> = keys
                .iter()
                .map(|k| {
                    format!(
                        "{}{}",
                        fmt_expr(&k.expr, &n),
                        if k.descending { " DESC" } else { "" }
                    )
                })
                .collect();
            format!("Sort {}", k.join(", "))
        }
        LogicalPlan::Limit { offset, limit, .. } => match limit {
            Some(l) => format!("Limit {l} offset {offset}"),
            None => format!("Limit offset {offset}"),
        },
        LogicalPlan::Union { .. } => "Union ALL".to_string(),
        LogicalPlan::SetOp { kind, .. } => match kind {
            SetOpKind::Intersect => "Intersect".to_string(),
            SetOpKind::Except => "Except".to_string(),
            SetOpKind::IntersectAll => "Intersect all".to_string(),
            SetOpKind::ExceptAll => "Except all".to_string(),
        },
        LogicalPlan::SubqueryAlias { alias, .. } => format!("SubqueryAlias {alias}"),
        LogicalPlan::Apply { kind, field, .. } => match kind {
            ApplyKind::Exists => format!("Apply EXISTS as {}", field.name),
            ApplyKind::In(e) => format!(
                "Apply {} IN as {}",
                fmt_expr(e, &input_names(0)),
                field.name
            ),
            ApplyKind::Scalar => format!("Apply scalar as {}", field.name),
            ApplyKind::Lateral { left, on } => {
                let join = if *left { "LEFT" } else { "INNER" };
                match on {
                    Some(e) => format!("Apply LATERAL {join} on {}", fmt_expr(e, &names(plan))),
                    None => format!("Apply LATERAL {join}"),
                }
            }
        },
        LogicalPlan::SingleRow { .. } => "SingleRow".to_string(),
        LogicalPlan::Window {
            partition_by,
            order_by,
            functions,
            keep,
            ..
        } => {
            let n = input_names(0);
            let keys: Vec<String> = order_by.iter().map(|k| fmt_sort_key(k, &n)).collect();
            let calls: Vec<String> = functions.iter().map(|f| fmt_window_fn(f, &n)).collect();
            let mut s = format!(
                "Window partition=[{}] order=[{}] functions=[{}]",
                list(partition_by, &n),
                keys.join(", "),
                calls.join(", ")
            );
            if let Some(k) = keep {
                let _ = write!(s, " keep={k}");
            }
            s
        }
    };
    let _ = writeln!(out, "{pad}{line}");
    for i in plan.inputs() {
        node(i, depth + 1, out);
    }
}
