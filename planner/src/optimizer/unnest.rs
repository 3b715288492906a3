//! General subquery unnesting: a correlated subquery of any shape becomes joins, as Neumann and
//! Kemper's "Unnesting Arbitrary Queries" (and DuckDB) do it. The rewrites of `decorrelate`
//! come first and take the common shapes (correlation by equalities, in filters) more
//! cheaply; this module takes what they leave: inequalities and disjunctions under an
//! aggregate, GROUP BY, LIMIT, DISTINCT, UNION, windows, joins, outer references in a select
//! list, nested subqueries.
//!
//! For an Apply whose subquery reads the outer columns `c1..ck` of its input:
//! 1. the *domain* `D` is the distinct values of `(c1..ck)` in the input (read below the
//!    input's projections and other Applies, which keep its rows one for one);
//! 2. the domain is pushed down the subquery ([`Domain::push`]): every node is rewritten to
//!    compute its rows for each domain row at once, with the domain's columns appended. Where
//!    a subtree no longer reads an outer column, it is joined with `D` (a cross join, which the
//!    filters above it then turn into an equi or theta join); a filter or projection reads the
//!    outer columns from the domain's columns; an aggregate groups by them too (an aggregate
//!    without GROUP BY is left-joined to `D`, so that each domain row gets the aggregate of no
//!    rows: COUNT 0, the others NULL); a LIMIT becomes a `ROW_NUMBER()` per domain row; a join
//!    takes the domain on the side that reads it (on both sides, joined on it, when both do);
//! 3. the result is joined back to the input on the correlated columns, with equality that
//!    holds between NULLs ([`null_safe_keys`]): a left join for a scalar subquery (with a check
//!    that no outer row gets more than one row, where the subquery's shape does not promise
//!    it), a semi or anti join for `[NOT] EXISTS` and `[NOT] IN` in a WHERE conjunct.
//!
//! A `LATERAL` subquery ([`lateral`]) is pushed the same way and joined back (inner, or left
//! with its ON condition) with all its columns.
//!
//! EXISTS and IN used as values become counts first (`mark`), which are scalar subqueries.
//! What cannot be pushed (an uncorrelated scalar subquery or NOT IN whose own subquery reads
//! the outer columns, which the binder does not produce) is an error naming the construct;
//! the caller adds its position.

use crate::error::PlanError;
use crate::logical::{and_all, strip_for_exists, ApplyKind, JoinKind, LogicalPlan};
use std::collections::BTreeSet;
use weir_operators::plan::{AggFunc, AggregateExpr, SortKey, WindowExpr, WindowFunc};
use weir_operators::{BinaryOp, DataType, Expr, Field, ScalarFunc, Value};

/// The outer columns `plan` reads at its own level: in every node's expressions, but not in
/// the subqueries of nested Applies (their outer references are their Apply's input's).
pub(crate) fn outer_columns(plan: &LogicalPlan) -> BTreeSet<usize> {
    let mut out = BTreeSet::new();
    collect_outer(plan, &mut out);
    out
}

fn collect_outer(plan: &LogicalPlan, out: &mut BTreeSet<usize>) {
    for e in plan.exprs() {
        e.transform(&mut |x| {
            if let Expr::OuterColumn(c) = x {
                out.insert(*c);
            }
            None
        });
    }
    match plan {
        LogicalPlan::Apply { input, .. } => collect_outer(input, out),
        other => other
            .inputs()
            .into_iter()
            .for_each(|i| collect_outer(i, out)),
    }
}

/// A correlated scalar subquery `(subquery)` over `input`'s rows: `input`'s columns followed
/// by the subquery's value (`field`), NULL where it has no row, an error where it has more
/// than one.
pub(crate) fn scalar(
    input: LogicalPlan,
    subquery: LogicalPlan,
    field: Field,
) -> Result<LogicalPlan, PlanError> {
    let domain = Domain::new(&input, &subquery);
    let k = domain.k();
    let one_row = yields_one_row(&subquery);
    let body = domain.push(subquery)?;
    // The value, [the number of rows,] the domain.
    let (body, d_at) = if one_row {
        (body, 1)
    } else {
        let value_type = body.schema().fields[0].data_type;
        let counted = LogicalPlan::Aggregate {
            input: Box::new(body),
            groups: domain.columns_at(1),
            group_fields: domain.fields.clone(),
            aggs: vec![
                AggregateExpr {
                    func: AggFunc::Min,
                    arg: Some(Expr::Column(0)),
                    input_type: value_type,
                    param: None,
                    order_by: Vec::new(),
                },
                AggregateExpr {
                    func: AggFunc::CountStar,
                    arg: None,
                    input_type: DataType::Int64,
                    param: None,
                    order_by: Vec::new(),
                },
            ],
            agg_names: vec!["__value".to_string(), "__rows".to_string()],
        };
        let mut fields = vec![
            Field::new("__value", value_type),
            Field::new("__rows", DataType::Int64),
        ];
        fields.extend(domain.fields.iter().cloned());
        let exprs = [k, k + 1]
            .into_iter()
            .chain(0..k)
            .map(Expr::Column)
            .collect();
        (counted.project(exprs, fields), 2)
    };
    let w = input.width();
    let mut fields = input.schema().fields;
    let on = domain.null_safe_on(domain.outer_exprs(), domain.columns_at(d_at));
    let joined = LogicalPlan::Join {
        left: Box::new(input),
        right: Box::new(body),
        kind: JoinKind::Left,
        on,
        filter: None,
    };
    // The check for more than one row runs on the joined rows only: a domain value that no
    // row of the input keeps (its Applies' rows are one per input row) raises nothing.
    let value = if one_row {
        Expr::Column(w)
    } else {
        Expr::Case {
            operand: None,
            branches: vec![(
                Expr::col(w + 1).binary(BinaryOp::Gt, Expr::lit(1i64)),
                Expr::Function {
                    func: ScalarFunc::TooManyRows,
                    args: vec![Expr::Column(w)],
                },
            )],
            else_result: Some(Box::new(Expr::Column(w))),
        }
    };
    let mut exprs: Vec<Expr> = (0..w).map(Expr::Column).collect();
    exprs.push(value);
    fields.push(field);
    Ok(joined.project(exprs, fields))
}

/// `[NOT] EXISTS (subquery)` or `x [NOT] IN (subquery)` tested by a WHERE conjunct over
/// `rows`: a semi or anti join of `rows` with the subquery evaluated per domain value, on the
/// correlated columns (`IN` also on `x`; `NOT IN` counts an unknown comparison as a match).
pub(crate) fn semi_join(
    rows: LogicalPlan,
    subquery: LogicalPlan,
    kind: &ApplyKind,
    negated: bool,
) -> Result<LogicalPlan, PlanError> {
    let body = match kind {
        ApplyKind::Exists => strip_for_exists(subquery),
        _ => subquery,
    };
    let domain = Domain::new(&rows, &body);
    let ws = body.width();
    let body = domain.push(body)?;
    let w = rows.width();
    let on = domain.null_safe_on(domain.outer_exprs(), domain.columns_at(ws));
    let (kind, filter) = match kind {
        ApplyKind::Exists if negated => (JoinKind::Anti, None),
        ApplyKind::Exists => (JoinKind::Semi, None),
        ApplyKind::In(x) if !negated => (JoinKind::Semi, Some(x.clone().eq(Expr::Column(w)))),
        ApplyKind::In(x) => (
            JoinKind::Anti,
            Some(Expr::Function {
                func: ScalarFunc::Coalesce,
                args: vec![
                    x.clone().eq(Expr::Column(w)),
                    Expr::Literal(Value::Bool(true)),
                ],
            }),
        ),
        ApplyKind::Scalar | ApplyKind::Lateral { .. } => {
            return Err(PlanError::Invalid(
                "a scalar or LATERAL subquery is not a semi join".to_string(),
            ))
        }
    };
    Ok(LogicalPlan::Join {
        left: Box::new(rows),
        right: Box::new(body),
        kind,
        on,
        filter,
    })
}

/// `input` joined with `LATERAL (subquery)`: the subquery evaluated per domain value and
/// joined back on the correlated columns (inner, or left for `left`, with the condition `on`
/// over the input's columns followed by the subquery's), its domain columns dropped.
pub(crate) fn lateral(
    input: LogicalPlan,
    subquery: LogicalPlan,
    left: bool,
    on: Option<Expr>,
) -> Result<LogicalPlan, PlanError> {
    let kind = if left {
        JoinKind::Left
    } else {
        JoinKind::Inner
    };
    if !subquery.is_correlated() {
        return Ok(LogicalPlan::Join {
            left: Box::new(input),
            right: Box::new(subquery),
            kind,
            on: vec![],
            filter: on,
        });
    }
    let domain = Domain::new(&input, &subquery);
    let (w, ws) = (input.width(), subquery.width());
    let body = domain.push(subquery)?;
    let keys = domain.null_safe_on(domain.outer_exprs(), domain.columns_at(ws));
    let joined = LogicalPlan::Join {
        left: Box::new(input),
        right: Box::new(body),
        kind,
        on: keys,
        filter: on,
    };
    let fields = joined.schema().fields;
    Ok(joined.project(
        (0..w + ws).map(Expr::Column).collect(),
        fields[..w + ws].to_vec(),
    ))
}

/// Whether `plan` has at most one row for each value of its outer columns: an aggregate
/// without GROUP BY (under filters and projections) or a LIMIT of one row.
fn yields_one_row(plan: &LogicalPlan) -> bool {
    match plan {
        LogicalPlan::Project { input, .. }
        | LogicalPlan::SubqueryAlias { input, .. }
        | LogicalPlan::Sort { input, .. }
        | LogicalPlan::Filter { input, .. } => yields_one_row(input),
        LogicalPlan::Aggregate { groups, .. } => groups.is_empty(),
        LogicalPlan::Limit { limit, .. } => limit.is_some_and(|l| l <= 1),
        _ => false,
    }
}

/// The distinct values of the outer columns a subquery reads: the rows it is evaluated for.
struct Domain {
    /// The outer columns, ascending: outer column `columns[i]` is the domain's column `i`.
    columns: Vec<usize>,
    /// Their names and types.
    fields: Vec<Field>,
    /// The distinct values.
    plan: LogicalPlan,
}

impl Domain {
    /// The domain of `subquery`'s outer references into `input`.
    fn new(input: &LogicalPlan, subquery: &LogicalPlan) -> Domain {
        let columns: Vec<usize> = outer_columns(subquery).into_iter().collect();
        let input_fields = input.schema().fields;
        let fields: Vec<Field> = columns.iter().map(|&c| input_fields[c].clone()).collect();
        let (source, at) = domain_source(input, &columns);
        let values = source
            .clone()
            .project(at.into_iter().map(Expr::Column).collect(), fields.clone());
        Domain {
            columns,
            fields,
            plan: LogicalPlan::Distinct {
                input: Box::new(values),
            },
        }
    }

    /// The number of correlated columns.
    fn k(&self) -> usize {
        self.columns.len()
    }

    /// The domain's columns where they start at `base`.
    fn columns_at(&self, base: usize) -> Vec<Expr> {
        (base..base + self.k()).map(Expr::Column).collect()
    }

    /// The correlated columns of the Apply's input.
    fn outer_exprs(&self) -> Vec<Expr> {
        self.columns.iter().map(|&c| Expr::Column(c)).collect()
    }

    /// `e` with its outer references read from the domain's columns, which start at `base`.
    fn bind(&self, e: &Expr, base: usize) -> Expr {
        e.transform(&mut |x| match x {
            Expr::OuterColumn(c) => {
                let i = self
                    .columns
                    .binary_search(c)
                    .expect("the domain holds every outer column");
                Some(Expr::Column(base + i))
            }
            _ => None,
        })
    }

    /// Join keys matching `left[i]` with `right[i]` (the domain's column `i` on each side)
    /// when equal or both NULL.
    fn null_safe_on(&self, left: Vec<Expr>, right: Vec<Expr>) -> Vec<(Expr, Expr)> {
        left.into_iter()
            .zip(right)
            .zip(&self.fields)
            .flat_map(|((l, r), f)| null_safe_keys(l, r, f.data_type))
            .collect()
    }

    /// `plan` evaluated for every row of the domain: its columns followed by the domain's,
    /// the rows it has for each domain row with its outer references read from that row.
    fn push(&self, plan: LogicalPlan) -> Result<LogicalPlan, PlanError> {
        if !plan.is_correlated() {
            return Ok(LogicalPlan::Join {
                left: Box::new(plan),
                right: Box::new(self.plan.clone()),
                kind: JoinKind::Inner,
                on: vec![],
                filter: None,
            });
        }
        let k = self.k();
        Ok(match plan {
            // A filter right over Applies stays right over them (where it tests an EXISTS or
            // IN, the semi-join rewrite finds it there): the domain's columns sit between
            // the Applies' input and their results until the filter is done.
            LogicalPlan::Filter { input, predicate } if is_stacked_apply(&input) => {
                let (applies, w) = self.push_applies(*input)?;
                let shifted = predicate.map_columns(&|c| if c >= w { c + k } else { c });
                let filter = LogicalPlan::Filter {
                    predicate: self.bind(&shifted, w),
                    input: Box::new(applies),
                };
                domain_last(filter, w, k)
            }
            LogicalPlan::Filter { input, predicate } => {
                let input = self.push(*input)?;
                let w = input.width() - k;
                LogicalPlan::Filter {
                    predicate: self.bind(&predicate, w),
                    input: Box::new(input),
                }
            }
            LogicalPlan::Project {
                input,
                exprs,
                mut fields,
            } => {
                let input = self.push(*input)?;
                let w = input.width() - k;
                let mut exprs: Vec<Expr> = exprs.iter().map(|e| self.bind(e, w)).collect();
                exprs.extend(self.columns_at(w));
                fields.extend(self.fields.iter().cloned());
                input.project(exprs, fields)
            }
            LogicalPlan::Aggregate {
                input,
                groups,
                group_fields,
                aggs,
                agg_names,
            } => self.push_aggregate(*input, groups, group_fields, aggs, agg_names)?,
            LogicalPlan::Distinct { input } => LogicalPlan::Distinct {
                input: Box::new(self.push(*input)?),
            },
            // Without a LIMIT above it (which takes it with it), the order of a subquery's
            // rows does not matter.
            LogicalPlan::Sort { input, .. } => self.push(*input)?,
            LogicalPlan::Limit {
                input,
                offset,
                limit,
            } => self.push_limit(*input, offset, limit)?,
            LogicalPlan::SubqueryAlias { input, alias } => LogicalPlan::SubqueryAlias {
                input: Box::new(self.push(*input)?),
                alias,
            },
            LogicalPlan::Union { inputs } => LogicalPlan::Union {
                inputs: inputs
                    .into_iter()
                    .map(|i| self.push(i))
                    .collect::<Result<_, _>>()?,
            },
            // The domain's columns are part of the rows compared.
            LogicalPlan::SetOp { left, right, kind } => LogicalPlan::SetOp {
                left: Box::new(self.push(*left)?),
                right: Box::new(self.push(*right)?),
                kind,
            },
            LogicalPlan::Join {
                left,
                right,
                kind,
                on,
                filter,
            } => self.push_join(*left, *right, kind, on, filter)?,
            LogicalPlan::Window {
                input,
                partition_by,
                order_by,
                functions,
                names,
                keep,
            } => {
                let input = self.push(*input)?;
                let w = input.width() - k;
                let mut partition = self.columns_at(w);
                partition.extend(partition_by.iter().map(|e| self.bind(e, w)));
                let window = LogicalPlan::Window {
                    input: Box::new(input),
                    partition_by: partition,
                    order_by: self.bind_keys(order_by, w),
                    functions: functions
                        .into_iter()
                        .map(|f| WindowExpr {
                            args: f.args.iter().map(|a| self.bind(a, w)).collect(),
                            ..f
                        })
                        .collect(),
                    names,
                    keep,
                };
                domain_last(window, w, k)
            }
            apply @ LogicalPlan::Apply { .. } => {
                let (applies, w) = self.push_applies(apply)?;
                domain_last(applies, w, k)
            }
            // Filters in a scan are the optimizer's, which pushes them later; taken out all
            // the same.
            LogicalPlan::Scan {
                table,
                projection,
                filters,
            } => {
                let fields = projection
                    .iter()
                    .map(|&c| table.schema.fields[c].clone())
                    .collect();
                let exprs = projection.iter().map(|&c| Expr::Column(c)).collect();
                let all = (0..table.schema.len()).collect();
                let scan = LogicalPlan::Scan {
                    table,
                    projection: all,
                    filters: vec![],
                };
                self.push(scan.filter_all(filters).project(exprs, fields))?
            }
            // A table function reading outer columns: each domain row expanded by its own
            // call, the values first.
            LogicalPlan::TableFunction {
                schema,
                function,
                ordinality,
            } => {
                let expand = LogicalPlan::Expand {
                    input: Box::new(self.plan.clone()),
                    function: function.map_args(&mut |e| self.bind(e, 0)),
                    ordinality,
                    fields: schema.fields,
                };
                domain_last(expand, 0, k)
            }
            LogicalPlan::Expand {
                input,
                function,
                ordinality,
                fields,
            } => {
                let input = self.push(*input)?;
                let w = input.width() - k;
                let expand = LogicalPlan::Expand {
                    input: Box::new(input),
                    function: function.map_args(&mut |e| self.bind(e, w)),
                    ordinality,
                    fields,
                };
                domain_last(expand, w, k)
            }
            LogicalPlan::SingleRow { .. } | LogicalPlan::Values { .. } => {
                return Err(PlanError::unsupported(
                    "a correlated subquery inside a scalar subquery that is not correlated",
                    "",
                ))
            }
            LogicalPlan::RecursiveCte { .. } | LogicalPlan::WorkTable { .. } => {
                return Err(PlanError::unsupported("a correlated recursive query", ""))
            }
        })
    }

    /// A stack of Applies over a base plan (an Apply's input below a LATERAL one, whose
    /// subquery reads all of its input), evaluated for every domain row, with the domain's
    /// columns right after the base's: there the nested subqueries, which read the base's
    /// columns, still find them. Only the IN operands and the LATERAL conditions change.
    /// Returns the plan and the base's width.
    fn push_applies(&self, plan: LogicalPlan) -> Result<(LogicalPlan, usize), PlanError> {
        let k = self.k();
        let LogicalPlan::Apply {
            input,
            subquery,
            kind,
            field,
            position,
        } = plan
        else {
            let base = self.push(plan)?;
            let w = base.width() - k;
            return Ok((base, w));
        };
        // A LATERAL subquery reads all of its input: the domain goes after it.
        let lateral = matches!(kind, ApplyKind::Lateral { .. });
        let (input, w) = if is_stacked_apply(&input) && !lateral {
            self.push_applies(*input)?
        } else {
            let base = self.push(*input)?;
            let w = base.width() - k;
            (base, w)
        };
        let shift = |e: &Expr| self.bind(&e.map_columns(&|c| if c >= w { c + k } else { c }), w);
        let kind = match kind {
            ApplyKind::In(x) => ApplyKind::In(shift(&x)),
            ApplyKind::Lateral { left, on } => ApplyKind::Lateral {
                left,
                on: on.as_ref().map(shift),
            },
            other => other,
        };
        let apply = LogicalPlan::Apply {
            input: Box::new(input),
            subquery,
            kind,
            field,
            position,
        };
        Ok((apply, w))
    }

    /// A series' step with its outer references read from the domain's columns at `base`.
    fn bind_keys(&self, keys: Vec<SortKey>, base: usize) -> Vec<SortKey> {
        keys.into_iter()
            .map(|k| SortKey {
                expr: self.bind(&k.expr, base),
                ..k
            })
            .collect()
    }

    /// An aggregate per domain row: grouped by the domain's columns too. Without GROUP BY,
    /// every domain row has one, the aggregate of no rows where none of its rows reach it
    /// (the grouped result left-joined to the domain: COUNT 0, the others NULL).
    fn push_aggregate(
        &self,
        input: LogicalPlan,
        groups: Vec<Expr>,
        mut group_fields: Vec<Field>,
        aggs: Vec<AggregateExpr>,
        agg_names: Vec<String>,
    ) -> Result<LogicalPlan, PlanError> {
        let k = self.k();
        let input = self.push(input)?;
        let w = input.width() - k;
        let mut groups: Vec<Expr> = groups.iter().map(|e| self.bind(e, w)).collect();
        let aggs: Vec<AggregateExpr> = aggs
            .into_iter()
            .map(|a| AggregateExpr {
                arg: a.arg.as_ref().map(|x| self.bind(x, w)),
                order_by: a
                    .order_by
                    .iter()
                    .map(|k| SortKey {
                        expr: self.bind(&k.expr, w),
                        ..k.clone()
                    })
                    .collect(),
                ..a
            })
            .collect();
        let g = groups.len();
        if g > 0 {
            groups.extend(self.columns_at(w));
            group_fields.extend(self.fields.iter().cloned());
            let grouped = LogicalPlan::Aggregate {
                input: Box::new(input),
                groups,
                group_fields,
                aggs,
                agg_names,
            };
            return Ok(domain_last(grouped, g, k));
        }
        let counts: Vec<bool> = aggs
            .iter()
            .map(|a| matches!(a.func, AggFunc::Count | AggFunc::CountStar))
            .collect();
        let mut fields: Vec<Field> = aggs
            .iter()
            .zip(&agg_names)
            .map(|(a, n)| Field::new(n.clone(), a.output_type()))
            .collect();
        let grouped = LogicalPlan::Aggregate {
            input: Box::new(input),
            groups: self.columns_at(w),
            group_fields: self.fields.clone(),
            aggs,
            agg_names,
        };
        let on = self.null_safe_on(self.columns_at(0), self.columns_at(0));
        // The domain, the grouped domain, the aggregates.
        let joined = LogicalPlan::Join {
            left: Box::new(self.plan.clone()),
            right: Box::new(grouped),
            kind: JoinKind::Left,
            on,
            filter: None,
        };
        let mut exprs: Vec<Expr> = counts
            .iter()
            .enumerate()
            .map(|(j, &count)| {
                let c = Expr::Column(2 * k + j);
                if count {
                    Expr::Function {
                        func: ScalarFunc::Coalesce,
                        args: vec![c, Expr::lit(0i64)],
                    }
                } else {
                    c
                }
            })
            .collect();
        exprs.extend(self.columns_at(0));
        fields.extend(self.fields.iter().cloned());
        Ok(joined.project(exprs, fields))
    }

    /// `LIMIT` (after `ORDER BY`) per domain row: the rows numbered in each domain row's
    /// partition, in the sort's order, and those in the window kept.
    fn push_limit(
        &self,
        input: LogicalPlan,
        offset: usize,
        limit: Option<usize>,
    ) -> Result<LogicalPlan, PlanError> {
        let k = self.k();
        let (input, keys) = match input {
            LogicalPlan::Sort { input, keys } => (*input, keys),
            other => (other, vec![]),
        };
        let input = self.push(input)?;
        let w = input.width() - k;
        let fields = input.schema().fields;
        let numbered = LogicalPlan::Window {
            input: Box::new(input),
            partition_by: self.columns_at(w),
            order_by: self.bind_keys(keys, w),
            functions: vec![WindowExpr::numbering(WindowFunc::RowNumber)],
            names: vec!["__row".to_string()],
            keep: None,
        };
        let row = Expr::Column(w + k);
        let count = |n: usize| Expr::lit(i64::try_from(n).unwrap_or(i64::MAX));
        let mut keep = Vec::new();
        if offset > 0 {
            keep.push(row.clone().binary(BinaryOp::Gt, count(offset)));
        }
        if let Some(l) = limit {
            keep.push(row.binary(BinaryOp::LtEq, count(offset.saturating_add(l))));
        }
        Ok(numbered
            .filter_all(keep)
            .project((0..w + k).map(Expr::Column).collect(), fields))
    }

    /// A join whose sides or condition read outer columns. The domain goes to the side that
    /// reads them when the join type allows (the left side of an inner, left, semi or anti
    /// join; the right side of an inner or right join), else to both sides, joined on it (a
    /// full join then takes the domain of the side each row has).
    fn push_join(
        &self,
        left: LogicalPlan,
        right: LogicalPlan,
        kind: JoinKind,
        on: Vec<(Expr, Expr)>,
        filter: Option<Expr>,
    ) -> Result<LogicalPlan, PlanError> {
        let k = self.k();
        let (wl, wr) = (left.width(), right.width());
        let (lc, rc) = (left.is_correlated(), right.is_correlated());
        if kind == JoinKind::AntiNullAware {
            if rc {
                return Err(PlanError::unsupported(
                    "a NOT IN subquery inside a correlated subquery that reads the outer query's columns",
                    "",
                ));
            }
            let on = on
                .into_iter()
                .map(|(l, r)| (self.bind(&l, wl), r))
                .collect();
            return Ok(LogicalPlan::Join {
                left: Box::new(self.push(left)?),
                right: Box::new(right),
                kind,
                on,
                filter,
            });
        }
        // The keys as conditions over the joined row, with the rest of the condition.
        let mut conds: Vec<Expr> = on
            .into_iter()
            .map(|(l, r)| l.eq(r.map_columns(&|c| c + wl)))
            .collect();
        conds.extend(filter);
        let cond = and_all(conds);
        let shift_right = |e: &Expr| e.map_columns(&|c| if c >= wl { c + k } else { c });
        use JoinKind as J;
        if !rc && matches!(kind, J::Inner | J::Left | J::Semi | J::Anti) {
            let join = LogicalPlan::Join {
                left: Box::new(self.push(left)?),
                right: Box::new(right),
                kind,
                on: vec![],
                filter: cond.map(|c| self.bind(&shift_right(&c), wl)),
            };
            return Ok(if kind.outputs_right() {
                domain_last(join, wl, k)
            } else {
                join
            });
        }
        if !lc && matches!(kind, J::Inner | J::Right) {
            return Ok(LogicalPlan::Join {
                left: Box::new(left),
                right: Box::new(self.push(right)?),
                kind,
                on: vec![],
                filter: cond.map(|c| self.bind(&c, wl + wr)),
            });
        }
        // Left, its domain, right, its domain.
        let on = self.null_safe_on(self.columns_at(wl), self.columns_at(wr));
        let join = LogicalPlan::Join {
            left: Box::new(self.push(left)?),
            right: Box::new(self.push(right)?),
            kind,
            on,
            filter: cond.map(|c| self.bind(&shift_right(&c), wl)),
        };
        if !kind.outputs_right() {
            return Ok(join);
        }
        // The domain of the side every output row has; for a FULL JOIN the side the row
        // has (the other side's is NULL, or equal).
        let (dl, dr) = (wl, wl + k + wr);
        let domain: Vec<Expr> = (0..k)
            .map(|i| match kind {
                J::Right => Expr::Column(dr + i),
                J::Full => Expr::Function {
                    func: ScalarFunc::Coalesce,
                    args: vec![Expr::Column(dl + i), Expr::Column(dr + i)],
                },
                _ => Expr::Column(dl + i),
            })
            .collect();
        let fields = join.schema().fields;
        let mut exprs: Vec<Expr> = (0..wl)
            .chain(wl + k..wl + k + wr)
            .map(Expr::Column)
            .collect();
        let mut out: Vec<Field> = (0..wl)
            .chain(wl + k..wl + k + wr)
            .map(|c| fields[c].clone())
            .collect();
        exprs.extend(domain);
        out.extend(self.fields.iter().cloned());
        Ok(join.project(exprs, out))
    }
}

/// Whether `plan` is an Apply whose subquery reads only its input's base (every kind but
/// LATERAL, whose subquery reads all of its input).
fn is_stacked_apply(plan: &LogicalPlan) -> bool {
    matches!(plan, LogicalPlan::Apply { kind, .. } if !matches!(kind, ApplyKind::Lateral { .. }))
}

/// `plan`, whose output holds the domain's `k` columns at `at` (its own columns around
/// them), with the domain's columns moved last.
fn domain_last(plan: LogicalPlan, at: usize, k: usize) -> LogicalPlan {
    let fields = plan.schema().fields;
    let n = fields.len();
    let order: Vec<usize> = (0..at).chain(at + k..n).chain(at..at + k).collect();
    let out = order.iter().map(|&c| fields[c].clone()).collect();
    plan.project(order.into_iter().map(Expr::Column).collect(), out)
}

/// Where the values of `columns` of `input` can be read with no more work than needed: below
/// projections that pass them on and below Applies other than LATERAL ones (both keep their
/// input's rows one for one). Returns that plan and the columns' positions in it.
fn domain_source<'a>(input: &'a LogicalPlan, columns: &[usize]) -> (&'a LogicalPlan, Vec<usize>) {
    let mut plan = input;
    let mut at = columns.to_vec();
    loop {
        match plan {
            LogicalPlan::Apply { input, kind, .. }
                if !matches!(kind, ApplyKind::Lateral { .. })
                    && at.iter().all(|&c| c < input.width()) =>
            {
                plan = input.as_ref();
            }
            LogicalPlan::SubqueryAlias { input, .. } => plan = input.as_ref(),
            LogicalPlan::Project { input, exprs, .. } => {
                let Some(next) = at
                    .iter()
                    .map(|&c| exprs[c].column_index())
                    .collect::<Option<Vec<_>>>()
                else {
                    break;
                };
                at = next;
                plan = input.as_ref();
            }
            _ => break,
        }
    }
    (plan, at)
}

/// Join keys under which `l` and `r` (of type `t`) match when they are equal or both NULL
/// (join keys never match NULL): whether each is NULL, and each with NULL replaced by a value
/// of its type.
pub(crate) fn null_safe_keys(l: Expr, r: Expr, t: DataType) -> [(Expr, Expr); 2] {
    null_safe_pair(l, t, r, t)
}

/// [`null_safe_keys`] of `l` (of type `lt`) and `r` (of type `rt`, which compares with `lt`
/// as it is: a decimal of another precision and the same scale).
pub(crate) fn null_safe_pair(l: Expr, lt: DataType, r: Expr, rt: DataType) -> [(Expr, Expr); 2] {
    let is_null = |e: &Expr| Expr::IsNull {
        expr: Box::new(e.clone()),
        negated: false,
    };
    let filled = |e: Expr, t: DataType| Expr::Function {
        func: ScalarFunc::Coalesce,
        args: vec![e, filler(t)],
    };
    [(is_null(&l), is_null(&r)), (filled(l, lt), filled(r, rt))]
}

/// A value of type `t` (which one does not matter).
fn filler(t: DataType) -> Expr {
    let v = match t {
        DataType::Int64 => Value::Int(0),
        DataType::Float64 => Value::Float(0.0),
        DataType::Utf8 => Value::Str(String::new()),
        DataType::Boolean => Value::Bool(false),
        DataType::Decimal { scale, .. } => {
            return Expr::Cast {
                expr: Box::new(Expr::Literal(Value::Decimal(0, scale))),
                to: t,
            }
        }
        DataType::Date => Value::Date(0),
        DataType::Timestamp => Value::Timestamp(0),
    };
    Expr::Literal(v)
}
