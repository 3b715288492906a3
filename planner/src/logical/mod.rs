//! The logical plan: relational algebra between binding and physical planning.
//!
//! The binder produces a [`LogicalPlan`]; the rule-based optimizer (`crate::optimizer`)
//! rewrites it; physical planning (`crate::physical`) cuts it into distributed fragments.
//!
//! Every node has a schema ([`LogicalPlan::schema`]). Expressions are resolved to positions:
//! a node's expressions read the columns of its input (a join's: the left input's columns,
//! then the right input's). Inside a subquery that [`LogicalPlan::Apply`] evaluates per input
//! row, [`Expr::OuterColumn`] reads a column of that row.

mod display;

use crate::catalog::TableDef;
use weir_operators::plan::{AggregateExpr, FrameBound, SortKey, TableFunction, WindowExpr};
use weir_operators::{Expr, Field, Schema, Value};

/// How the rows of a join's two inputs combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JoinKind {
    /// Pairs that satisfy the condition.
    Inner,
    /// Inner pairs, plus each unmatched left row with NULLs for the right columns.
    Left,
    /// Inner pairs, plus each unmatched right row with NULLs for the left columns.
    Right,
    /// Inner pairs plus the unmatched rows of both sides.
    Full,
    /// Left rows that have at least one match (left columns only).
    Semi,
    /// Left rows that have no match (left columns only).
    Anti,
    /// `left.k NOT IN (right.k)` with SQL's NULL rules: like [`JoinKind::Anti`] on one key, but
    /// no row survives if the right side holds a NULL key, and a NULL left key survives only
    /// if the right side is empty.
    AntiNullAware,
}

impl JoinKind {
    /// Whether the join outputs the right input's columns.
    pub fn outputs_right(self) -> bool {
        !matches!(
            self,
            JoinKind::Semi | JoinKind::Anti | JoinKind::AntiNullAware
        )
    }

    /// The operators' join type that runs this kind.
    pub fn join_type(self) -> weir_operators::plan::JoinType {
        use weir_operators::plan::JoinType;
        match self {
            JoinKind::Inner => JoinType::Inner,
            JoinKind::Left => JoinType::Left,
            JoinKind::Right => JoinType::Right,
            JoinKind::Full => JoinType::Full,
            JoinKind::Semi => JoinType::Semi,
            JoinKind::Anti => JoinType::Anti { null_aware: false },
            JoinKind::AntiNullAware => JoinType::Anti { null_aware: true },
        }
    }

    /// The SQL-ish name, for EXPLAIN.
    pub fn name(self) -> &'static str {
        match self {
            JoinKind::Inner => "INNER",
            JoinKind::Left => "LEFT",
            JoinKind::Right => "RIGHT",
            JoinKind::Full => "FULL",
            JoinKind::Semi => "SEMI",
            JoinKind::Anti => "ANTI",
            JoinKind::AntiNullAware => "ANTI (NOT IN)",
        }
    }
}

/// What an [`LogicalPlan::Apply`] computes from its subquery for each input row.
#[derive(Debug, Clone, PartialEq)]
pub enum ApplyKind {
    /// `EXISTS (subquery)`: a BOOLEAN, never NULL.
    Exists,
    /// `expr IN (subquery)` over the input row: TRUE, FALSE or NULL as SQL defines it.
    In(Expr),
    /// `(subquery)` as a value: its single column of its single row; NULL without rows.
    Scalar,
    /// `LATERAL (subquery)` joined to the input: each input row with each of the rows the
    /// subquery has for it, the subquery's columns appended (all of them: the Apply's `field`
    /// is not used).
    Lateral {
        /// `LEFT JOIN LATERAL`: an input row that has no row satisfying `on` is kept, with
        /// NULLs for the subquery's columns.
        left: bool,
        /// The join condition, over the input's columns followed by the subquery's.
        on: Option<Expr>,
    },
}

/// Set operations other than `UNION ALL` (which is [`LogicalPlan::Union`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetOpKind {
    /// Distinct rows of the left input that the right input has too.
    Intersect,
    /// Distinct rows of the left input that the right input lacks.
    Except,
    /// `INTERSECT ALL`: a row `min(l, r)` times, where the left input has it `l` times and
    /// the right `r` times.
    IntersectAll,
    /// `EXCEPT ALL`: a row `l - r` times (when positive).
    ExceptAll,
}

/// A node of the logical plan.
#[derive(Debug, Clone, PartialEq)]
pub enum LogicalPlan {
    /// A table's rows: the `projection` columns of the table, after `filters` (conjuncts over
    /// the table's full schema, pushed down by the optimizer).
    Scan {
        /// The table.
        table: TableDef,
        /// Table columns output, in order.
        projection: Vec<usize>,
        /// Conjuncts over table columns.
        filters: Vec<Expr>,
    },
    /// Constant rows.
    Values {
        /// Their schema.
        schema: Schema,
        /// The rows.
        rows: Vec<Vec<Value>>,
    },
    /// Rows where `predicate` is TRUE.
    Filter {
        /// Input.
        input: Box<LogicalPlan>,
        /// Predicate over the input's columns.
        predicate: Expr,
    },
    /// One output column per expression.
    Project {
        /// Input.
        input: Box<LogicalPlan>,
        /// Expressions over the input's columns.
        exprs: Vec<Expr>,
        /// Name and type of each output column.
        fields: Vec<Field>,
    },
    /// A join; `on` holds equality keys `(left expr, right expr)` and `filter` the rest of
    /// the condition (over left then right columns). No keys and no filter: a cross join.
    Join {
        /// Left input.
        left: Box<LogicalPlan>,
        /// Right input.
        right: Box<LogicalPlan>,
        /// Join type.
        kind: JoinKind,
        /// Equality keys.
        on: Vec<(Expr, Expr)>,
        /// Residual condition.
        filter: Option<Expr>,
    },
    /// Grouping and aggregates: group keys followed by aggregate results.
    Aggregate {
        /// Input.
        input: Box<LogicalPlan>,
        /// Group key expressions over the input.
        groups: Vec<Expr>,
        /// Name and type of each group key.
        group_fields: Vec<Field>,
        /// Aggregates over the input.
        aggs: Vec<AggregateExpr>,
        /// Name of each aggregate's result.
        agg_names: Vec<String>,
    },
    /// Distinct rows.
    Distinct {
        /// Input.
        input: Box<LogicalPlan>,
    },
    /// Rows in key order.
    Sort {
        /// Input.
        input: Box<LogicalPlan>,
        /// Keys over the input's columns, most significant first.
        keys: Vec<SortKey>,
    },
    /// Skips `offset` rows, then passes at most `limit`.
    Limit {
        /// Input.
        input: Box<LogicalPlan>,
        /// Rows skipped.
        offset: usize,
        /// Rows passed after the offset (`None`: all).
        limit: Option<usize>,
    },
    /// `UNION ALL` of inputs with the same column types; names come from the first.
    Union {
        /// Inputs.
        inputs: Vec<LogicalPlan>,
    },
    /// `INTERSECT` or `EXCEPT`, distinct or `ALL` (NULLs compare equal).
    SetOp {
        /// Left input.
        left: Box<LogicalPlan>,
        /// Right input.
        right: Box<LogicalPlan>,
        /// Which operation.
        kind: SetOpKind,
    },
    /// A derived table or CTE: its input under a name (only names change).
    SubqueryAlias {
        /// Input.
        input: Box<LogicalPlan>,
        /// The alias.
        alias: String,
    },
    /// A dependent join: for each input row, evaluates `subquery` (whose
    /// [`Expr::OuterColumn`]s read that row) and appends one column, `field`. The optimizer
    /// turns it into joins; physical planning refuses what is left.
    Apply {
        /// Input.
        input: Box<LogicalPlan>,
        /// The subquery.
        subquery: Box<LogicalPlan>,
        /// What is appended.
        kind: ApplyKind,
        /// The appended column.
        field: Field,
        /// Where the subquery is in the statement (`"line L, column C"`, or empty), for the
        /// errors of the shapes decorrelation cannot turn into joins.
        position: String,
    },
    /// Exactly one row: the input's only row, or NULLs if it has none (more rows are an
    /// error at execution). An uncorrelated scalar subquery.
    SingleRow {
        /// Input.
        input: Box<LogicalPlan>,
    },
    /// Window functions of one window (partition keys and order): the input's columns
    /// followed by one column per function. A SELECT with windows of several specs stacks
    /// one node per spec.
    Window {
        /// Input.
        input: Box<LogicalPlan>,
        /// Partition keys over the input's columns.
        partition_by: Vec<Expr>,
        /// Order within a partition.
        order_by: Vec<SortKey>,
        /// The functions (each with its own frame).
        functions: Vec<WindowExpr>,
        /// Each function's column name.
        names: Vec<String>,
        /// Top-N per partition: only the first `keep` rows of each partition are needed
        /// above (set by the optimizer's top-N rule when every function reads only rows
        /// before its own).
        keep: Option<usize>,
    },
    /// `WITH RECURSIVE name AS (base UNION [ALL] step)`: the rows of `base`, then of `step`
    /// evaluated again and again over the rows the round before added (its
    /// [`LogicalPlan::WorkTable`]), until a round adds none. `distinct` (UNION) drops every
    /// row seen before. The columns are `base`'s; `step`'s have the same types.
    RecursiveCte {
        /// The query's name (the step's work table has it).
        name: String,
        /// The non-recursive term.
        base: Box<LogicalPlan>,
        /// The recursive term: reads the work table once, outside subqueries, aggregates and
        /// the nullable side of outer joins.
        step: Box<LogicalPlan>,
        /// UNION rather than UNION ALL.
        distinct: bool,
    },
    /// Inside the step of the [`LogicalPlan::RecursiveCte`] named `name`: the rows its last
    /// round added.
    WorkTable {
        /// The recursive query's name.
        name: String,
        /// Its columns.
        schema: Schema,
    },
    /// A table function in FROM (`generate_series(1, 10)`, `string_to_table(...)`): the
    /// values it makes of its arguments, which are constant expressions (literals,
    /// parameters) or an outer query's columns.
    TableFunction {
        /// Its column (named as the call's alias says), then the BIGINT ordinal with
        /// `ordinality`.
        schema: Schema,
        /// The function and its arguments.
        function: TableFunction,
        /// Whether each value is followed by its position, from 1 (`WITH ORDINALITY`).
        ordinality: bool,
    },
    /// Each row of `input` once per value of table function `function` evaluated on it, the
    /// value (and with `ordinality` its position among the row's values) appended as the
    /// last columns (`fields`); a row whose call makes no value is dropped. A table function
    /// in FROM that reads the FROM items before it (PostgreSQL's functions in FROM are
    /// LATERAL), or in a select list over a FROM clause.
    Expand {
        /// The rows expanded.
        input: Box<LogicalPlan>,
        /// The function, its arguments over the input's columns.
        function: TableFunction,
        /// Whether each value is followed by its position, from 1 (`WITH ORDINALITY`).
        ordinality: bool,
        /// The columns appended: the value's, then the ordinal's with `ordinality`.
        fields: Vec<Field>,
    },
}

impl LogicalPlan {
    /// The output columns.
    pub fn schema(&self) -> Schema {
        match self {
            LogicalPlan::Scan {
                table, projection, ..
            } => Schema::new(
                projection
                    .iter()
                    .map(|&c| table.schema.fields[c].clone())
                    .collect(),
            ),
            LogicalPlan::Values { schema, .. }
            | LogicalPlan::WorkTable { schema, .. }
            | LogicalPlan::TableFunction { schema, .. } => schema.clone(),
            LogicalPlan::RecursiveCte { base, .. } => base.schema(),
            LogicalPlan::Filter { input, .. }
            | LogicalPlan::Distinct { input }
            | LogicalPlan::Sort { input, .. }
            | LogicalPlan::Limit { input, .. }
            | LogicalPlan::SubqueryAlias { input, .. }
            | LogicalPlan::SingleRow { input } => input.schema(),
            LogicalPlan::Window {
                input,
                functions,
                names,
                ..
            } => {
                let mut s = input.schema();
                for (f, name) in functions.iter().zip(names) {
                    s.fields.push(Field::new(name.clone(), f.output_type));
                }
                s
            }
            LogicalPlan::Project { fields, .. } => Schema::new(fields.clone()),
            LogicalPlan::Expand { input, fields, .. } => {
                let mut s = input.schema();
                s.fields.extend(fields.iter().cloned());
                s
            }
            LogicalPlan::Join {
                left, right, kind, ..
            } => {
                let mut fields = left.schema().fields;
                if kind.outputs_right() {
                    fields.extend(right.schema().fields);
                }
                Schema::new(fields)
            }
            LogicalPlan::Aggregate {
                group_fields,
                aggs,
                agg_names,
                ..
            } => {
                let mut fields = group_fields.clone();
                for (a, name) in aggs.iter().zip(agg_names) {
                    fields.push(Field::new(name.clone(), a.output_type()));
                }
                Schema::new(fields)
            }
            LogicalPlan::Union { inputs } => inputs.first().map(|i| i.schema()).unwrap_or_default(),
            LogicalPlan::SetOp { left, .. } => left.schema(),
            LogicalPlan::Apply {
                input,
                subquery,
                kind,
                field,
                ..
            } => {
                let mut s = input.schema();
                match kind {
                    ApplyKind::Lateral { .. } => s.fields.extend(subquery.schema().fields),
                    _ => s.fields.push(field.clone()),
                }
                s
            }
        }
    }

    /// Number of output columns.
    pub fn width(&self) -> usize {
        self.schema().len()
    }

    /// The inputs, in order (a subquery of an Apply is its second input).
    pub fn inputs(&self) -> Vec<&LogicalPlan> {
        match self {
            LogicalPlan::Scan { .. }
            | LogicalPlan::Values { .. }
            | LogicalPlan::TableFunction { .. }
            | LogicalPlan::WorkTable { .. } => {
                vec![]
            }
            LogicalPlan::RecursiveCte { base, step, .. } => vec![base, step],
            LogicalPlan::Filter { input, .. }
            | LogicalPlan::Project { input, .. }
            | LogicalPlan::Aggregate { input, .. }
            | LogicalPlan::Distinct { input }
            | LogicalPlan::Sort { input, .. }
            | LogicalPlan::Limit { input, .. }
            | LogicalPlan::SubqueryAlias { input, .. }
            | LogicalPlan::SingleRow { input }
            | LogicalPlan::Expand { input, .. }
            | LogicalPlan::Window { input, .. } => vec![input],
            LogicalPlan::Join { left, right, .. } | LogicalPlan::SetOp { left, right, .. } => {
                vec![left, right]
            }
            LogicalPlan::Apply {
                input, subquery, ..
            } => vec![input, subquery],
            LogicalPlan::Union { inputs } => inputs.iter().collect(),
        }
    }

    /// The same node with each input replaced by `f` of it (in the order of
    /// [`inputs`](LogicalPlan::inputs)); stops at the first error.
    pub fn map_inputs<E>(
        self,
        f: &mut dyn FnMut(LogicalPlan) -> Result<LogicalPlan, E>,
    ) -> Result<LogicalPlan, E> {
        let mut b = |p: Box<LogicalPlan>| f(*p).map(Box::new);
        Ok(match self {
            leaf @ (LogicalPlan::Scan { .. }
            | LogicalPlan::Values { .. }
            | LogicalPlan::TableFunction { .. }
            | LogicalPlan::WorkTable { .. }) => leaf,
            LogicalPlan::RecursiveCte {
                name,
                base,
                step,
                distinct,
            } => LogicalPlan::RecursiveCte {
                name,
                base: b(base)?,
                step: b(step)?,
                distinct,
            },
            LogicalPlan::Filter { input, predicate } => LogicalPlan::Filter {
                input: b(input)?,
                predicate,
            },
            LogicalPlan::Project {
                input,
                exprs,
                fields,
            } => LogicalPlan::Project {
                input: b(input)?,
                exprs,
                fields,
            },
            LogicalPlan::Join {
                left,
                right,
                kind,
                on,
                filter,
            } => LogicalPlan::Join {
                left: b(left)?,
                right: b(right)?,
                kind,
                on,
                filter,
            },
            LogicalPlan::Aggregate {
                input,
                groups,
                group_fields,
                aggs,
                agg_names,
            } => LogicalPlan::Aggregate {
                input: b(input)?,
                groups,
                group_fields,
                aggs,
                agg_names,
            },
            LogicalPlan::Distinct { input } => LogicalPlan::Distinct { input: b(input)? },
            LogicalPlan::Sort { input, keys } => LogicalPlan::Sort {
                input: b(input)?,
                keys,
            },
            LogicalPlan::Limit {
                input,
                offset,
                limit,
            } => LogicalPlan::Limit {
                input: b(input)?,
                offset,
                limit,
            },
            LogicalPlan::Union { inputs } => LogicalPlan::Union {
                inputs: inputs.into_iter().map(&mut *f).collect::<Result<_, E>>()?,
            },
            LogicalPlan::SetOp { left, right, kind } => LogicalPlan::SetOp {
                left: b(left)?,
                right: b(right)?,
                kind,
            },
            LogicalPlan::SubqueryAlias { input, alias } => LogicalPlan::SubqueryAlias {
                input: b(input)?,
                alias,
            },
            LogicalPlan::Apply {
                input,
                subquery,
                kind,
                field,
                position,
            } => LogicalPlan::Apply {
                input: b(input)?,
                subquery: b(subquery)?,
                kind,
                field,
                position,
            },
            LogicalPlan::SingleRow { input } => LogicalPlan::SingleRow { input: b(input)? },
            LogicalPlan::Expand {
                input,
                function,
                ordinality,
                fields,
            } => LogicalPlan::Expand {
                input: b(input)?,
                function,
                ordinality,
                fields,
            },
            LogicalPlan::Window {
                input,
                partition_by,
                order_by,
                functions,
                names,
                keep,
            } => LogicalPlan::Window {
                input: b(input)?,
                partition_by,
                order_by,
                functions,
                names,
                keep,
            },
        })
    }

    /// Whether any expression of this node or below reads an outer column (the plan is a
    /// correlated subquery body).
    /// The outer references of an Apply's subquery belong to that Apply's input, so they
    /// do not count.
    pub fn is_correlated(&self) -> bool {
        if self.exprs().into_iter().any(has_outer) {
            return true;
        }
        match self {
            LogicalPlan::Apply { input, .. } => input.is_correlated(),
            other => other.inputs().iter().any(|i| i.is_correlated()),
        }
    }

    /// The expressions this node holds (not those of its inputs).
    pub fn exprs(&self) -> Vec<&Expr> {
        match self {
            LogicalPlan::Scan { filters, .. } => filters.iter().collect(),
            LogicalPlan::Filter { predicate, .. } => vec![predicate],
            LogicalPlan::Project { exprs, .. } => exprs.iter().collect(),
            LogicalPlan::Join { on, filter, .. } => on
                .iter()
                .flat_map(|(l, r)| [l, r])
                .chain(filter.iter())
                .collect(),
            LogicalPlan::Aggregate { groups, aggs, .. } => groups
                .iter()
                .chain(aggs.iter().filter_map(|a| a.arg.as_ref()))
                .chain(aggs.iter().flat_map(|a| a.order_by.iter().map(|k| &k.expr)))
                .collect(),
            LogicalPlan::Sort { keys, .. } => keys.iter().map(|k| &k.expr).collect(),
            LogicalPlan::Apply {
                kind: ApplyKind::In(e),
                ..
            }
            | LogicalPlan::Apply {
                kind: ApplyKind::Lateral { on: Some(e), .. },
                ..
            } => vec![e],
            LogicalPlan::Window {
                partition_by,
                order_by,
                functions,
                ..
            } => {
                let offsets = functions.iter().flat_map(|f| {
                    [&f.frame.start, &f.frame.end]
                        .into_iter()
                        .filter_map(|b| match b {
                            FrameBound::Preceding(e) | FrameBound::Following(e) => Some(e),
                            _ => None,
                        })
                });
                partition_by
                    .iter()
                    .chain(order_by.iter().map(|k| &k.expr))
                    .chain(functions.iter().flat_map(|f| f.args.iter()))
                    .chain(offsets)
                    .collect()
            }
            LogicalPlan::TableFunction { function, .. } | LogicalPlan::Expand { function, .. } => {
                function.args()
            }
            _ => vec![],
        }
    }

    /// The same node (inputs untouched) with every expression it holds replaced by `f` of it.
    pub fn map_exprs(&self, f: &mut dyn FnMut(&Expr) -> Expr) -> LogicalPlan {
        let mut node = self.clone();
        match &mut node {
            LogicalPlan::Scan { filters, .. } => filters.iter_mut().for_each(|e| *e = f(e)),
            LogicalPlan::Filter { predicate, .. } => *predicate = f(predicate),
            LogicalPlan::Project { exprs, .. } => exprs.iter_mut().for_each(|e| *e = f(e)),
            LogicalPlan::Join { on, filter, .. } => {
                for (l, r) in on.iter_mut() {
                    *l = f(l);
                    *r = f(r);
                }
                if let Some(x) = filter {
                    *x = f(x);
                }
            }
            LogicalPlan::Aggregate { groups, aggs, .. } => {
                groups.iter_mut().for_each(|e| *e = f(e));
                for a in aggs.iter_mut() {
                    if let Some(x) = &mut a.arg {
                        *x = f(x);
                    }
                    for key in &mut a.order_by {
                        key.expr = f(&key.expr);
                    }
                }
            }
            LogicalPlan::Sort { keys, .. } => keys.iter_mut().for_each(|k| k.expr = f(&k.expr)),
            LogicalPlan::Apply {
                kind: ApplyKind::In(e),
                ..
            }
            | LogicalPlan::Apply {
                kind: ApplyKind::Lateral { on: Some(e), .. },
                ..
            } => *e = f(e),
            LogicalPlan::Window {
                partition_by,
                order_by,
                functions,
                ..
            } => {
                partition_by.iter_mut().for_each(|e| *e = f(e));
                order_by.iter_mut().for_each(|k| k.expr = f(&k.expr));
                for w in functions.iter_mut() {
                    w.args.iter_mut().for_each(|e| *e = f(e));
                    for b in [&mut w.frame.start, &mut w.frame.end] {
                        if let FrameBound::Preceding(e) | FrameBound::Following(e) = b {
                            *e = f(e);
                        }
                    }
                }
            }
            LogicalPlan::TableFunction { function, .. } | LogicalPlan::Expand { function, .. } => {
                *function = function.map_args(f);
            }
            _ => {}
        }
        node
    }

    /// A `SELECT`-style projection of `exprs` over `self` with output `fields`.
    pub fn project(self, exprs: Vec<Expr>, fields: Vec<Field>) -> LogicalPlan {
        LogicalPlan::Project {
            input: Box::new(self),
            exprs,
            fields,
        }
    }

    /// `self` filtered by the conjunction of `conjuncts` (unchanged when there are none).
    pub fn filter_all(self, conjuncts: Vec<Expr>) -> LogicalPlan {
        match and_all(conjuncts) {
            Some(predicate) => LogicalPlan::Filter {
                input: Box::new(self),
                predicate,
            },
            None => self,
        }
    }
}

/// `plan` with every parameter replaced by its value.
pub fn bind_parameters(plan: LogicalPlan, values: &[Value]) -> LogicalPlan {
    let node = plan.map_exprs(&mut |e| {
        e.transform(&mut |x| match x {
            Expr::Param(i) => Some(Expr::Literal(
                values.get(*i).cloned().unwrap_or(Value::Null),
            )),
            _ => None,
        })
    });
    node.map_inputs(&mut |i| Ok::<_, std::convert::Infallible>(bind_parameters(i, values)))
        .unwrap_or_else(|never| match never {})
}

/// The conjunction of `v` (`None` when empty), as [`chain`] builds it.
pub fn and_all(v: Vec<Expr>) -> Option<Expr> {
    chain(weir_operators::BinaryOp::And, v)
}

/// Chains up to this long are built left-deep, as written; longer ones are balanced.
const LEFT_DEEP_CHAIN: usize = 64;

/// `v` joined by the associative `op` (`AND` or `OR`; `None` when empty): left-deep as SQL
/// writes it when short, a balanced tree when long, so that a chain of thousands of terms is
/// only a few levels deep for the passes that recurse over expressions.
pub fn chain(op: weir_operators::BinaryOp, v: Vec<Expr>) -> Option<Expr> {
    if v.len() <= LEFT_DEEP_CHAIN {
        return v.into_iter().reduce(|a, b| a.binary(op, b));
    }
    fn build(op: weir_operators::BinaryOp, v: &mut Vec<Expr>, n: usize) -> Expr {
        if n == 1 {
            return v.pop().expect("n terms left");
        }
        // Terms come off the end: build the right half first.
        let right = build(op, v, n / 2);
        let left = build(op, v, n - n / 2);
        left.binary(op, right)
    }
    let n = v.len();
    let mut v = v;
    Some(build(op, &mut v, n))
}

/// Splits `e` into its top-level AND conjuncts, appending to `out`.
pub fn conjuncts(e: Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::Binary {
            op: weir_operators::BinaryOp::And,
            left,
            right,
        } => {
            conjuncts(*left, out);
            conjuncts(*right, out);
        }
        other => out.push(other),
    }
}

/// The part of an EXISTS subquery that decides whether it has rows: its select list,
/// ORDER BY and aliases do not matter.
pub(crate) fn strip_for_exists(plan: LogicalPlan) -> LogicalPlan {
    match plan {
        LogicalPlan::Project { input, exprs, .. } if !exprs.iter().any(has_outer) => {
            strip_for_exists(*input)
        }
        LogicalPlan::Sort { input, .. } | LogicalPlan::SubqueryAlias { input, .. } => {
            strip_for_exists(*input)
        }
        other => other,
    }
}

/// Whether `e` reads an outer column.
pub fn has_outer(e: &Expr) -> bool {
    e.any(&|x| matches!(x, Expr::OuterColumn(_)))
}

/// The column positions `e` reads.
pub fn columns_of(e: &Expr) -> std::collections::BTreeSet<usize> {
    let mut s = std::collections::BTreeSet::new();
    e.visit_columns(&mut |c| {
        s.insert(c);
    });
    s
}
