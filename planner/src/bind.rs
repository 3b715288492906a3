//! Name resolution and type checking: a sqlparser `SELECT` becomes a [`BoundSelect`] whose
//! expressions are typed [`Expr`]s over positional columns.
//!
//! Columns of the `FROM` tables are numbered globally: table 0's columns first, then table
//! 1's, and so on (the "combined row"). WHERE/ON conjuncts, group keys and aggregate arguments
//! refer to the combined row. In an aggregating query, HAVING, the select list and ORDER BY
//! refer to the aggregation output instead: group keys followed by aggregate results.

use crate::catalog::Catalog;
use crate::error::PlanError;
use crate::logical::{ApplyKind, LogicalPlan};
use hashbrown::HashMap;
use sqlparser::ast::{self as sql, Spanned};
use sqlparser::tokenizer::{Span, Token, TokenWithSpan};
use std::ops::ControlFlow;
use weir_operators::plan::{AggFunc, AggregateExpr, SortKey};
use weir_operators::{BinaryOp, DataType, Expr, Field, ScalarFunc, Value};

mod agg_filter;
mod datetime;
mod distinct_on;
mod limits;
mod quantified;
mod recursive;
mod relations;
mod row_values;
mod scalar;
mod select;
mod special_calls;
mod subquery;
mod system_views;
mod table_functions;
mod window;
mod window_scope;

pub(crate) use window_scope::{contains_window, WindowScope};

pub(crate) use crate::error::{pos, unsupported};

/// Bound parameter values, the placeholder numbering, and the inferred parameter types.
pub(crate) struct Params<'a> {
    values: &'a [Value],
    qmarks: HashMap<(u64, u64), usize>,
    qmark_count: usize,
    next_fallback: usize,
    /// Number of parameters the statement needs.
    pub expected: usize,
    /// Inferred expected type per parameter.
    pub types: Vec<Option<DataType>>,
}

impl<'a> Params<'a> {
    /// Numbers the placeholders of `sql` (`?` left to right, `$n` as `n - 1`).
    #[cfg(test)]
    pub fn scan(
        sql_text: &str,
        dialect: &dyn sqlparser::dialect::Dialect,
        values: &'a [Value],
    ) -> Result<Self, PlanError> {
        let tokens = sqlparser::tokenizer::Tokenizer::new(dialect, sql_text)
            .tokenize_with_location()
            .map_err(|e| PlanError::Syntax(e.to_string()))?;
        Self::from_tokens(&tokens, values)
    }

    /// Numbers the placeholders of tokenized SQL (`?` left to right, `$n` as `n - 1`); fails
    /// when more parameters are named than `values` holds.
    pub fn from_tokens(tokens: &[TokenWithSpan], values: &'a [Value]) -> Result<Self, PlanError> {
        let mut qmarks = HashMap::new();
        let mut qmark_count = 0usize;
        let mut max_dollar = 0usize;
        for t in tokens {
            if let Token::Placeholder(s) = &t.token {
                if s == "?" {
                    qmarks.insert((t.span.start.line, t.span.start.column), qmark_count);
                    qmark_count += 1;
                } else if let Some(n) = dollar_index(s) {
                    max_dollar = max_dollar.max(n + 1);
                } else {
                    return Err(unsupported(format!("named parameter '{s}'"), t.span));
                }
            }
        }
        let expected = qmark_count.max(max_dollar);
        if expected > values.len() {
            // Fail before sizing anything by the placeholder count: `$4000000000` must not
            // allocate gigabytes (or overflow) on its way to this error.
            return Err(PlanError::ParamCount {
                expected,
                got: values.len(),
            });
        }
        Ok(Params {
            values,
            qmarks,
            qmark_count,
            next_fallback: 0,
            expected,
            types: vec![None; expected],
        })
    }

    /// Fails with [`PlanError::ParamCount`] unless as many values as placeholders were given.
    pub fn check_count(&self) -> Result<(), PlanError> {
        if self.values.len() != self.expected {
            return Err(PlanError::ParamCount {
                expected: self.expected,
                got: self.values.len(),
            });
        }
        Ok(())
    }

    /// The parameter index of a placeholder token.
    pub fn index_of(&mut self, s: &str, span: Span) -> Result<usize, PlanError> {
        let i = if s == "?" {
            match self.qmarks.get(&(span.start.line, span.start.column)) {
                Some(&i) => i,
                None => {
                    let i = self.next_fallback.min(self.qmark_count.saturating_sub(1));
                    self.next_fallback += 1;
                    i
                }
            }
        } else if let Some(n) = dollar_index(s) {
            n
        } else {
            return Err(unsupported(format!("named parameter '{s}'"), span));
        };
        if i >= self.expected {
            return Err(PlanError::ParamCount {
                expected: self.expected.max(i + 1),
                got: self.values.len(),
            });
        }
        Ok(i)
    }

    /// The type of the value given for parameter `i` (`None` for NULL or missing).
    pub fn given_type(&self, i: usize) -> Option<DataType> {
        self.values.get(i).and_then(Value::data_type)
    }

    /// The value given for parameter `i`.
    pub fn value(&self, i: usize) -> Option<&Value> {
        self.values.get(i)
    }

    /// The values given for the parameters, in order.
    pub fn values(&self) -> &[Value] {
        self.values
    }

    /// Records that parameter `i` must have type `t` (the first expectation wins).
    pub fn expect(&mut self, i: usize, t: DataType) {
        if let Some(slot) = self.types.get_mut(i) {
            if slot.is_none() {
                *slot = Some(t);
            }
        }
    }

    /// Checks every given value against the inferred types: NULL fits anything, an integer
    /// fits a DOUBLE parameter.
    pub fn check_types(&self) -> Result<(), PlanError> {
        for (i, expected) in self.types.iter().enumerate() {
            let (Some(expected), Some(got)) = (*expected, self.given_type(i)) else {
                continue;
            };
            if !param_fits(expected, got) {
                return Err(PlanError::ParamType {
                    index: i,
                    expected,
                    got,
                });
            }
        }
        Ok(())
    }
}

/// Whether a parameter value of type `got` can stand where `expected` is needed: the same
/// type, or one that widens to it exactly enough (an integer or decimal for a DOUBLE or
/// DECIMAL, a DATE for a TIMESTAMP).
pub(crate) fn param_fits(expected: DataType, got: DataType) -> bool {
    use DataType as T;
    expected == got
        || matches!(
            (expected, got),
            (T::Float64, T::Int64 | T::Decimal { .. })
                | (T::Decimal { .. }, T::Int64 | T::Decimal { .. } | T::Float64)
                | (T::Timestamp, T::Date)
                | (T::Date | T::Timestamp, T::Utf8)
        )
}

/// Whether a value of type `from` converts to `to` implicitly (PostgreSQL's widening:
/// BIGINT → DECIMAL → DOUBLE, DATE → TIMESTAMP, and text to a DATE or TIMESTAMP).
pub(crate) fn implicit_cast(from: DataType, to: DataType) -> bool {
    use DataType as T;
    matches!(
        (from, to),
        (T::Int64, T::Float64 | T::Decimal { .. })
            | (T::Decimal { .. }, T::Decimal { .. } | T::Float64)
            | (T::Date, T::Timestamp)
            | (T::Utf8, T::Date | T::Timestamp)
    )
}

/// The type comparison operands of types `a` and `b` meet at, if any: numeric types widen
/// (BIGINT → DECIMAL → DOUBLE), DATE meets TIMESTAMP as TIMESTAMP, and text meets a DATE or
/// TIMESTAMP as that type (the text is parsed).
pub(crate) fn common_supertype(a: DataType, b: DataType) -> Option<DataType> {
    use DataType as T;
    if a == b {
        return Some(a);
    }
    if let Some(t) = DataType::numeric_union(a, b) {
        return Some(t);
    }
    match (a, b) {
        (T::Date, T::Timestamp) | (T::Timestamp, T::Date) => Some(T::Timestamp),
        (T::Utf8, t) | (t, T::Utf8) if t.is_temporal() => Some(t),
        _ => None,
    }
}

fn dollar_index(s: &str) -> Option<usize> {
    let n: usize = s.strip_prefix('$')?.parse().ok()?;
    n.checked_sub(1)
}

/// One relation of the FROM clause: a table, a view, a CTE or a derived table.
#[derive(Debug, Clone)]
pub(crate) struct ScopeTable {
    /// Its columns.
    pub fields: Vec<Field>,
    /// Name it is referred to by (alias, or table name), lowercase.
    pub alias: String,
    /// Position of its first column in the combined row.
    pub offset: usize,
    /// Columns (local positions) merged into an earlier table's by `JOIN ... USING`: an
    /// unqualified name and `*` mean the earlier one.
    pub merged: Vec<usize>,
}

impl ScopeTable {
    fn index_of(&self, name: &str) -> Option<usize> {
        self.fields
            .iter()
            .position(|f| f.name.eq_ignore_ascii_case(name))
    }
}

/// The relations in scope and the combined row's column types.
#[derive(Debug, Clone, Default)]
pub(crate) struct Scope {
    /// Relations in FROM order.
    pub tables: Vec<ScopeTable>,
    /// Combined-row column types.
    pub types: Vec<DataType>,
    /// Combined-row column names.
    pub names: Vec<String>,
}

impl Scope {
    pub(crate) fn add(
        &mut self,
        fields: Vec<Field>,
        alias: String,
        span: Span,
    ) -> Result<(), PlanError> {
        if self.tables.iter().any(|t| t.alias == alias) {
            return Err(PlanError::Invalid(format!(
                "table name '{alias}' specified more than once{}",
                at(span)
            )));
        }
        let offset = self.types.len();
        for f in &fields {
            self.types.push(f.data_type);
            self.names.push(f.name.clone());
        }
        self.tables.push(ScopeTable {
            fields,
            alias,
            offset,
            merged: Vec::new(),
        });
        Ok(())
    }

    pub(crate) fn resolve(&self, parts: &[sql::Ident], span: Span) -> Result<usize, PlanError> {
        let full = parts
            .iter()
            .map(|p| p.value.as_str())
            .collect::<Vec<_>>()
            .join(".");
        let unknown = || PlanError::UnknownColumn {
            name: full.clone(),
            position: pos(span),
        };
        match parts {
            [c] => {
                let mut found = None;
                for t in &self.tables {
                    if let Some(i) = t.index_of(&c.value) {
                        if t.merged.contains(&i) {
                            continue;
                        }
                        if found.is_some() {
                            return Err(PlanError::AmbiguousColumn(c.value.clone()));
                        }
                        found = Some(t.offset + i);
                    }
                }
                found.ok_or_else(unknown)
            }
            [.., q, c] => {
                let q = q.value.to_lowercase();
                let t = self
                    .tables
                    .iter()
                    .find(|t| t.alias == q)
                    .ok_or_else(unknown)?;
                let i = t.index_of(&c.value).ok_or_else(unknown)?;
                Ok(t.offset + i)
            }
            [] => Err(unknown()),
        }
    }
}

pub(crate) use crate::error::at;

/// A typed expression; `ty` is `None` for NULL and for parameters whose type is not yet known.
#[derive(Debug, Clone)]
pub(crate) struct B {
    pub expr: Expr,
    pub ty: Option<DataType>,
}

impl B {
    fn new(expr: Expr, ty: Option<DataType>) -> Self {
        B { expr, ty }
    }
}

/// Aggregation being bound: group keys (over the combined row) and aggregates found so far.
#[derive(Debug, Default)]
pub(crate) struct AggCtx {
    groups: Vec<B>,
    /// With GROUPING SETS, ROLLUP or CUBE: the number `k` of grouping expressions, which are
    /// the first `k` of `groups`; the next `k` are their GROUPING flags (1 where a set leaves
    /// the expression out), markers that match no expression.
    grouping: Option<usize>,
    aggs: Vec<AggregateExpr>,
    /// Whether each aggregate is over distinct values (`COUNT(DISTINCT x)`).
    distinct: Vec<bool>,
}

/// Whether an expression reads any column.
pub(crate) fn has_columns(e: &Expr) -> bool {
    let mut any = false;
    e.visit_columns(&mut |_| any = true);
    any
}

/// Maps a SQL type to a weir type.
pub(crate) fn map_type(t: &sql::DataType, span: Span) -> Result<DataType, PlanError> {
    use sql::DataType as T;
    Ok(match t {
        T::BigInt(_)
        | T::Int(_)
        | T::Integer(_)
        | T::SmallInt(_)
        | T::TinyInt(_)
        | T::MediumInt(_)
        | T::Int2(_)
        | T::Int4(_)
        | T::Int8(_)
        | T::Int16
        | T::Int32
        | T::Int64 => DataType::Int64,
        T::Double(_)
        | T::DoublePrecision
        | T::Float(_)
        | T::Float4
        | T::Float8
        | T::Float32
        | T::Float64
        | T::Real => DataType::Float64,
        T::Varchar(_)
        | T::Nvarchar(_)
        | T::Text
        | T::String(_)
        | T::Char(_)
        | T::Character(_)
        | T::CharVarying(_)
        | T::CharacterVarying(_) => DataType::Utf8,
        T::Boolean | T::Bool => DataType::Boolean,
        T::Decimal(info) | T::Numeric(info) | T::Dec(info) => decimal_type(info, t, span)?,
        T::Date => DataType::Date,
        T::Timestamp(_, sql::TimezoneInfo::None | sql::TimezoneInfo::WithoutTimeZone)
        | T::Datetime(_) => DataType::Timestamp,
        other => return Err(unsupported(format!("data type {other}"), span)),
    })
}

/// The precision and scale DECIMAL without them means: `DECIMAL(18,3)`.
pub const DEFAULT_DECIMAL: (u8, u8) = (18, 3);

/// `DECIMAL`, `DECIMAL(p)` (scale 0) or `DECIMAL(p,s)`, checked: 1 <= p <= 38, 0 <= s <= p.
fn decimal_type(
    info: &sql::ExactNumberInfo,
    t: &sql::DataType,
    span: Span,
) -> Result<DataType, PlanError> {
    let (p, s) = match info {
        sql::ExactNumberInfo::None => {
            return Ok(DataType::decimal(DEFAULT_DECIMAL.0, DEFAULT_DECIMAL.1))
        }
        sql::ExactNumberInfo::Precision(p) => (*p, 0),
        sql::ExactNumberInfo::PrecisionAndScale(p, s) => (*p, *s),
    };
    let max = u64::from(weir_operators::types::MAX_DECIMAL_PRECISION);
    if !(1..=max).contains(&p) || s < 0 || s as u64 > p {
        return Err(PlanError::Invalid(format!(
            "invalid type {t}: DECIMAL precision must be 1 to {max} and the scale 0 to the precision{}",
            at(span)
        )));
    }
    Ok(DataType::decimal(p as u8, s as u8))
}

/// `(descending, nulls_first)` of an ORDER BY item (NULLs sort as the largest value).
pub(crate) fn sort_options(o: &sql::OrderByExpr) -> Result<(bool, bool), PlanError> {
    if o.with_fill.is_some() {
        return Err(unsupported("WITH FILL", o.expr.span()));
    }
    let descending = match &o.options.sort {
        None | Some(sql::OrderBySort::Asc) => false,
        Some(sql::OrderBySort::Desc) => true,
        Some(sql::OrderBySort::Using(_)) => {
            return Err(unsupported("ORDER BY ... USING", o.expr.span()))
        }
    };
    Ok((descending, o.options.nulls_first.unwrap_or(descending)))
}

/// The aggregate a call of `f` is, by its name.
fn agg_func(f: &sql::Function) -> Option<AggFunc> {
    match f.name.0.as_slice() {
        [sql::ObjectNamePart::Identifier(id)] => aggregate_named(&id.value.to_uppercase()),
        _ => None,
    }
}

/// The aggregate an upper-case function name stands for (`COUNT` is [`AggFunc::Count`]: the
/// caller tells `COUNT(*)` by its argument).
pub(crate) fn aggregate_named(name: &str) -> Option<AggFunc> {
    Some(match name {
        "COUNT" => AggFunc::Count,
        "SUM" => AggFunc::Sum,
        "AVG" => AggFunc::Avg,
        "MIN" => AggFunc::Min,
        "MAX" => AggFunc::Max,
        "TOTAL" => AggFunc::Total,
        // Over BOOLEANs (checked when bound), FALSE is the smaller.
        "BOOL_AND" | "EVERY" => AggFunc::Min,
        "BOOL_OR" => AggFunc::Max,
        "STRING_AGG" | "GROUP_CONCAT" => AggFunc::StringAgg,
        "MEDIAN" | "PERCENTILE_CONT" => AggFunc::PercentileCont,
        "VAR_SAMP" | "VARIANCE" => AggFunc::VarSamp,
        "VAR_POP" => AggFunc::VarPop,
        "STDDEV_SAMP" | "STDDEV" => AggFunc::StddevSamp,
        "STDDEV_POP" => AggFunc::StddevPop,
        _ => return None,
    })
}

/// Whether an AST expression contains an aggregate call (outside of subqueries).
pub(crate) fn contains_agg(e: &sql::Expr) -> bool {
    use sql::Expr as E;
    match e {
        E::Function(f) => {
            let in_args = match &f.args {
                sql::FunctionArguments::List(l) => l.args.iter().any(|a| match a {
                    sql::FunctionArg::Unnamed(sql::FunctionArgExpr::Expr(x)) => contains_agg(x),
                    _ => false,
                }),
                _ => false,
            };
            match &f.over {
                // A window function is no aggregate of its SELECT, but its arguments and its
                // window may hold some (`SUM(COUNT(*)) OVER (ORDER BY MAX(x))`).
                Some(sql::WindowType::WindowSpec(w)) => in_args || window_contains_agg(w),
                Some(sql::WindowType::NamedWindow(_)) => in_args,
                None => in_args || agg_func(f).is_some(),
            }
        }
        E::BinaryOp { left, right, .. } => contains_agg(left) || contains_agg(right),
        E::UnaryOp { expr, .. }
        | E::Nested(expr)
        | E::IsNull(expr)
        | E::IsNotNull(expr)
        | E::Cast { expr, .. } => contains_agg(expr),
        E::In { expr, target, .. } => {
            contains_agg(expr)
                || matches!(target, sql::InTarget::List(l) if l.iter().any(contains_agg))
        }
        E::Between {
            expr, low, high, ..
        } => contains_agg(expr) || contains_agg(low) || contains_agg(high),
        E::Like { expr, pattern, .. } | E::ILike { expr, pattern, .. } => {
            contains_agg(expr) || contains_agg(pattern)
        }
        E::Case {
            operand,
            conditions,
            else_result,
            ..
        } => {
            operand.as_deref().is_some_and(contains_agg)
                || conditions
                    .iter()
                    .any(|c| contains_agg(&c.condition) || contains_agg(&c.result))
                || else_result.as_deref().is_some_and(contains_agg)
        }
        E::Substring {
            expr,
            substring_from,
            substring_for,
            ..
        } => {
            contains_agg(expr)
                || substring_from.as_deref().is_some_and(contains_agg)
                || substring_for.as_deref().is_some_and(contains_agg)
        }
        E::Trim {
            expr, trim_what, ..
        } => contains_agg(expr) || trim_what.as_deref().is_some_and(contains_agg),
        E::Position { expr, r#in } => contains_agg(expr) || contains_agg(r#in),
        E::Ceil { expr, .. } | E::Floor { expr, .. } => contains_agg(expr),
        _ => false,
    }
}

/// Whether a window's PARTITION BY or ORDER BY holds an aggregate call.
pub(crate) fn window_contains_agg(w: &sql::WindowSpec) -> bool {
    w.partition_by.iter().any(contains_agg) || w.order_by.iter().any(|o| contains_agg(&o.expr))
}

/// `NOT e` when `negated`.
pub(crate) fn negate_if(e: Expr, negated: bool) -> Expr {
    if negated {
        Expr::Not(Box::new(e))
    } else {
        e
    }
}

/// Whether an AST expression holds a subquery anywhere.
pub(crate) fn contains_subquery(e: &sql::Expr) -> bool {
    sql::visit_expressions(e, |x| match x {
        sql::Expr::Subquery(_)
        | sql::Expr::Exists { .. }
        | sql::Expr::In {
            target: sql::InTarget::Subquery(_),
            ..
        } => ControlFlow::Break(()),
        _ => ControlFlow::Continue(()),
    })
    .is_break()
}

fn type_name(t: Option<DataType>) -> String {
    t.map_or_else(|| "NULL".to_string(), |t| t.to_string())
}

/// Placeholder columns for subquery results: an expression bound over a SELECT's FROM row
/// refers to its `k`-th subquery as `Column(PRE_APPLY + k)`, one bound over its aggregation
/// output as `Column(POST_APPLY + k)`, until the subqueries are placed (see
/// [`Binder::place_subqueries`]).
pub(crate) const PRE_APPLY: usize = usize::MAX / 4;
/// See [`PRE_APPLY`].
pub(crate) const POST_APPLY: usize = usize::MAX / 2;

/// A subquery met in an expression, waiting to be placed over its SELECT's rows.
#[derive(Debug)]
pub(crate) struct PendingApply {
    pub subquery: LogicalPlan,
    pub kind: ApplyKind,
    pub field: Field,
    /// The subquery's position in the statement.
    pub position: String,
}

/// The subqueries met while binding one SELECT: over its FROM row (`pre`) and over its
/// aggregation output (`post`).
#[derive(Debug, Default)]
pub(crate) struct SubqueryFrame {
    pub pre: Vec<PendingApply>,
    pub post: Vec<PendingApply>,
    /// The columns of the query around this SELECT that its subqueries read through its FROM
    /// row (see [`OuterScope::passed`]).
    pub passed: Vec<(usize, DataType)>,
}

/// The row of an enclosing query as the subqueries inside it see it: its FROM scope, and the
/// columns of the query further out that subqueries deeper in read, passed through it.
#[derive(Debug, Clone)]
pub(crate) struct OuterScope {
    /// The row's columns.
    pub scope: Scope,
    /// Pass-through column `j` is the row's column `scope.types.len() + j`: an
    /// [`Expr::OuterColumn`] `passed[j].0` of the row (a column of the query around it, of
    /// type `passed[j].1`), which whoever owns the row appends to it before placing the
    /// subqueries over it ([`pass_through`]).
    pub passed: Vec<(usize, DataType)>,
}

/// `plan` (a query's row, as wide as its scope) with the pass-through columns `passed`
/// appended (see [`OuterScope::passed`]).
pub(crate) fn pass_through(plan: LogicalPlan, passed: &[(usize, DataType)]) -> LogicalPlan {
    if passed.is_empty() {
        return plan;
    }
    let mut fields = plan.schema().fields;
    let mut exprs: Vec<Expr> = (0..fields.len()).map(Expr::Column).collect();
    for (j, &(c, t)) in passed.iter().enumerate() {
        exprs.push(Expr::OuterColumn(c));
        fields.push(Field::new(format!("__outer{j}"), t));
    }
    plan.project(exprs, fields)
}

/// A bound query: its logical plan and the columns users see (the plan's output).
#[derive(Debug, Clone)]
pub(crate) struct BoundQuery {
    pub plan: LogicalPlan,
    pub fields: Vec<Field>,
}

/// Binds expressions and queries; owns the parameter bookkeeping.
pub(crate) struct Binder<'a> {
    /// Parameters.
    pub params: Params<'a>,
    /// Tables and views.
    pub catalog: &'a Catalog,
    /// The FROM scope of each enclosing query, innermost last (for a `LATERAL` subquery, the
    /// FROM items left of it); `None` where a subquery may not refer to what is further out
    /// (CTEs, views). A subquery reads the columns of every level out to the first `None`.
    pub outer: Vec<Option<OuterScope>>,
    /// Subqueries met per SELECT being bound, innermost last.
    pub frames: Vec<SubqueryFrame>,
    /// Common table expressions in scope, innermost last.
    pub ctes: Vec<(String, BoundQuery)>,
    /// Views being expanded, innermost last (a view that reaches itself is an error).
    pub views: Vec<String>,
    /// The window functions of each SELECT being bound, innermost last.
    pub windows: Vec<WindowScope>,
    /// The statement's `EXCLUDE` clauses of window frames (which the parser does not read;
    /// see [`crate::frame_exclude`]), by the position of the window they belong to.
    pub exclusions: crate::frame_exclude::Exclusions,
    /// The statement is planned for its parameters' values, not kept for others (a write,
    /// which is never cached): a `VALUES` list may hold parameters, evaluated now.
    pub params_are_constants: bool,
    /// The statement's time (`now()`, `CURRENT_TIMESTAMP`, `CURRENT_DATE`): read when first
    /// asked, then the same for the whole statement, as PostgreSQL's is for a transaction.
    /// A query that reads it is not kept for another run ([`crate::QueryPlan::single_use`]).
    pub clock: Option<i64>,
    /// The statement calls a volatile function (`random()`, `clock_timestamp()`): a VALUES
    /// list computes its values when it is bound, so such a query is not kept for another
    /// run either.
    pub calls_volatile: bool,
    /// The text of the table function call in the list of the SELECT being bound, and the
    /// column of the SELECT's row that holds its values (the call the SELECT is over when
    /// it has no FROM, else the expansion of its FROM rows): the call reads that column.
    pub select_table_call: Option<(String, usize)>,
}

impl<'a> Binder<'a> {
    /// A binder for one statement over `catalog`.
    pub fn new(params: Params<'a>, catalog: &'a Catalog) -> Self {
        Binder {
            params,
            catalog,
            outer: Vec::new(),
            frames: Vec::new(),
            ctes: Vec::new(),
            views: Vec::new(),
            windows: Vec::new(),
            exclusions: Default::default(),
            params_are_constants: false,
            clock: None,
            calls_volatile: false,
            select_table_call: None,
        }
    }

    /// The statement's time, in microseconds since 1970-01-01 00:00:00 UTC (weir's
    /// TIMESTAMP has no time zone: the clock is read in UTC).
    pub fn statement_time(&mut self) -> i64 {
        *self
            .clock
            .get_or_insert_with(weir_operators::temporal::now_micros)
    }

    /// Converts `b` to `target`, inserting a cast from BIGINT to DOUBLE where needed and
    /// recording the expected type of an untyped parameter.
    fn coerce(&mut self, b: B, target: DataType) -> Expr {
        match b.ty {
            Some(t) if t == target => b.expr,
            Some(DataType::Int64) if target == DataType::Float64 => match b.expr {
                Expr::Literal(Value::Int(v)) => Expr::Literal(Value::Float(v as f64)),
                e => Expr::Cast {
                    expr: Box::new(e),
                    to: DataType::Float64,
                },
            },
            Some(t) if implicit_cast(t, target) => cast_expr(b.expr, target),
            Some(_) => b.expr,
            None => match b.expr {
                Expr::Param(i) => {
                    self.params.expect(i, target);
                    match self.params.given_type(i) {
                        Some(got) if got != target && param_fits(target, got) => Expr::Cast {
                            expr: Box::new(Expr::Param(i)),
                            to: target,
                        },
                        _ => Expr::Param(i),
                    }
                }
                e => e,
            },
        }
    }

    /// Converts an operand of a comparison (`=`, `<`, `BETWEEN`, `IN`, ...) to the type the
    /// operands meet at, `target`: as [`Binder::coerce`], except that a DECIMAL operand of
    /// `target`'s scale is left as it is (only the precision would change, and the values
    /// would not: the comparison kernels compare exact numbers of any precision, so a
    /// column is not copied row by row for nothing).
    fn coerce_compared(&mut self, b: B, target: DataType) -> Expr {
        match (b.ty, target) {
            (Some(DataType::Decimal { scale: s, .. }), DataType::Decimal { scale: t, .. })
                if s == t =>
            {
                b.expr
            }
            _ => self.coerce(b, target),
        }
    }

    /// The type of an expression that must have one (an output or group column): an untyped
    /// parameter takes its given value's type, a bare NULL is BIGINT.
    fn settle(&mut self, b: &B) -> DataType {
        if let Some(t) = b.ty {
            return t;
        }
        if let Expr::Param(i) = b.expr {
            if let Some(t) = self.params.given_type(i) {
                return t;
            }
        }
        DataType::Int64
    }

    /// The separator of `STRING_AGG(x, separator)` or `GROUP_CONCAT(x, separator)`: a text
    /// constant. SQLite refuses `GROUP_CONCAT(DISTINCT x, separator)`; so does weir (PostgreSQL's
    /// `STRING_AGG(DISTINCT x, separator)` is taken).
    fn separator(
        &mut self,
        f: &sql::Function,
        arg: &sql::FunctionArg,
        scope: &Scope,
        distinct: bool,
        span: Span,
    ) -> Result<String, PlanError> {
        if distinct && f.name.to_string().eq_ignore_ascii_case("group_concat") {
            return Err(PlanError::Invalid(format!(
                "DISTINCT aggregates must have exactly one argument: {}(DISTINCT ...) takes no \
                 separator{}",
                f.name,
                at(span)
            )));
        }
        let sql::FunctionArg::Unnamed(sql::FunctionArgExpr::Expr(x)) = arg else {
            return Err(unsupported(format!("separator of {}", f.name), span));
        };
        let b = self.expr(x, scope, None)?;
        match b.expr {
            Expr::Literal(Value::Str(s)) => Ok(s),
            _ => Err(unsupported(
                format!(
                    "a separator of {} that is not a text constant ('{x}')",
                    f.name
                ),
                span,
            )),
        }
    }

    fn boolean(&mut self, b: B, what: &dyn std::fmt::Display) -> Result<Expr, PlanError> {
        match b.ty {
            None | Some(DataType::Boolean) => Ok(self.coerce(b, DataType::Boolean)),
            Some(t) => Err(PlanError::Type(format!(
                "expected a BOOLEAN expression, got {t} in '{what}'"
            ))),
        }
    }

    /// Unifies comparable operand types (equal, or both numeric), naming `e` on failure.
    fn unify(
        &self,
        types: &[Option<DataType>],
        e: &sql::Expr,
    ) -> Result<Option<DataType>, PlanError> {
        let mut acc: Option<DataType> = None;
        for t in types.iter().flatten() {
            acc = Some(match acc {
                None => *t,
                Some(a) => match common_supertype(a, *t) {
                    Some(u) => u,
                    None => {
                        return Err(PlanError::Type(format!(
                            "cannot compare {a} with {t} in '{e}'"
                        )))
                    }
                },
            });
        }
        Ok(acc)
    }

    fn literal(&mut self, v: &sql::ValueWithSpan, negate: bool) -> Result<B, PlanError> {
        use sql::Value as V;
        let span = v.span;
        Ok(match &v.value {
            V::Number(s, _) => {
                let text = if negate { format!("-{s}") } else { s.clone() };
                let is_float = s.contains(['.', 'e', 'E']);
                // A numeral with a point and no exponent is an exact DECIMAL of the scale it
                // is written with (as PostgreSQL); one with an exponent is a DOUBLE.
                let exact = if s.contains(['e', 'E']) {
                    None
                } else {
                    weir_operators::decimal::parse_literal(&text)
                };
                match (is_float, text.parse::<i64>()) {
                    (false, Ok(i)) => B::new(Expr::Literal(Value::Int(i)), Some(DataType::Int64)),
                    _ if exact.is_some() => {
                        let (v, _, scale) = exact.unwrap_or_default();
                        let lit = Value::Decimal(v, scale);
                        let ty = lit.data_type();
                        B::new(Expr::Literal(lit), ty)
                    }
                    _ => match text.parse::<f64>() {
                        Ok(f) => B::new(Expr::Literal(Value::Float(f)), Some(DataType::Float64)),
                        Err(_) => {
                            return Err(PlanError::Syntax(format!(
                                "invalid number '{s}'{}",
                                at(span)
                            )))
                        }
                    },
                }
            }
            V::SingleQuotedString(s)
            | V::EscapedStringLiteral(s)
            | V::NationalStringLiteral(s)
            | V::TripleSingleQuotedString(s)
            | V::UnicodeStringLiteral(s) => {
                B::new(Expr::Literal(Value::Str(s.clone())), Some(DataType::Utf8))
            }
            // `$$text$$` / `$tag$text$tag$`: PostgreSQL's dollar quoting.
            V::DollarQuotedString(d) => B::new(
                Expr::Literal(Value::Str(d.value.clone())),
                Some(DataType::Utf8),
            ),
            V::Boolean(b) => B::new(Expr::Literal(Value::Bool(*b)), Some(DataType::Boolean)),
            V::Null => B::new(Expr::Literal(Value::Null), None),
            V::Placeholder(s) => {
                let i = self.params.index_of(s, span)?;
                B::new(Expr::Param(i), None)
            }
            other => return Err(unsupported(format!("literal {other}"), span)),
        })
    }

    /// Binds an expression. With `agg`, sub-expressions equal to a group key become references
    /// to it, aggregate calls become references to aggregate results, and other column
    /// references are errors.
    pub fn expr(
        &mut self,
        e: &sql::Expr,
        scope: &Scope,
        mut agg: Option<&mut AggCtx>,
    ) -> Result<B, PlanError> {
        use sql::Expr as E;
        if let E::Function(f) = e {
            if f.over.is_some() {
                return self.window_call(f, e, scope, agg);
            }
        }
        if let Some(ctx) = agg.as_deref_mut() {
            if let E::Function(f) = e {
                if f.name.to_string().eq_ignore_ascii_case("grouping") {
                    return self.grouping_call(f, e, scope, ctx);
                }
                if agg_func(f).is_some() {
                    return self.aggregate(f, e, scope, ctx);
                }
            }
            let trial = if contains_subquery(e) || contains_window(e) {
                None
            } else {
                self.expr(e, scope, None).ok()
            };
            if let Some(b) = trial {
                if let Some(i) = ctx.groups.iter().position(|g| g.expr == b.expr) {
                    return Ok(B::new(Expr::Column(i), ctx.groups[i].ty));
                }
                if !has_columns(&b.expr) {
                    return Ok(b);
                }
                if matches!(e, E::Identifier(_) | E::CompoundIdentifier(_)) {
                    return Err(PlanError::Invalid(format!(
                        "column '{e}' must appear in the GROUP BY clause or be used in an aggregate function{}",
                        at(e.span())
                    )));
                }
            }
        }
        if let Some(written) = row_values::expand(e)? {
            return self.expr(&written, scope, agg);
        }
        if let E::BinaryOp {
            op: op @ (sql::BinaryOperator::And | sql::BinaryOperator::Or),
            ..
        } = e
        {
            return self.logical_chain(e, op, scope, agg);
        }
        let span = e.span();
        match e {
            E::Identifier(id) => self.column(std::slice::from_ref(id), id.span, scope),
            E::CompoundIdentifier(ids) => self.column(ids, span, scope),
            E::Nested(inner) => self.expr(inner, scope, agg),
            E::AnyOp { .. } | E::AllOp { .. } => self.quantified(e, scope, agg),
            E::Collate { expr, collation } if crate::collation::is_byte_order(collation) => {
                self.expr(expr, scope, agg)
            }
            E::Collate { collation, .. } => Err(crate::collation::unsupported(collation, "", span)),
            E::Value(v) => self.literal(v, false),
            E::TypedString(ts) => self.typed_string(ts),
            E::Interval(_) => Err(PlanError::Invalid(format!(
                "an INTERVAL can only be added to or subtracted from a DATE or TIMESTAMP{}",
                at(span)
            ))),
            E::Extract { field, expr, .. } => {
                let x = self.expr(expr, scope, agg)?;
                self.extract(field, x, e)
            }
            E::UnaryOp { op, expr } => {
                if let (sql::UnaryOperator::Minus, E::Value(v)) = (op, expr.as_ref()) {
                    if matches!(v.value, sql::Value::Number(..)) {
                        return self.literal(v, true);
                    }
                }
                let b = self.expr(expr, scope, agg)?;
                match op {
                    // Unary plus is the identity on every type (SQLite allows it on text).
                    sql::UnaryOperator::Plus => Ok(b),
                    sql::UnaryOperator::Minus => {
                        if b.ty.is_some_and(|t| !t.is_numeric()) {
                            return Err(PlanError::Type(format!(
                                "operator '{op}' needs a numeric operand, got {} in '{e}'",
                                type_name(b.ty)
                            )));
                        }
                        Ok(B::new(Expr::Negate(Box::new(b.expr)), b.ty))
                    }
                    sql::UnaryOperator::Not => {
                        let x = self.boolean(b, e)?;
                        Ok(B::new(Expr::Not(Box::new(x)), Some(DataType::Boolean)))
                    }
                    sql::UnaryOperator::BitwiseNot => {
                        self.call(ScalarFunc::BitNot, "~", vec![b], e)
                    }
                    other => Err(unsupported(format!("operator {other}"), span)),
                }
            }
            E::BinaryOp { left, op, right } => self.binary(e, left, op, right, scope, agg),
            E::IsNull(x) | E::IsNotNull(x) => {
                let b = self.expr(x, scope, agg)?;
                Ok(B::new(
                    Expr::IsNull {
                        expr: Box::new(b.expr),
                        negated: matches!(e, E::IsNotNull(_)),
                    },
                    Some(DataType::Boolean),
                ))
            }
            E::In {
                expr,
                target,
                negated,
                ..
            } => {
                let list = match target {
                    sql::InTarget::List(l) => l,
                    sql::InTarget::Subquery(q) => {
                        return self.in_subquery(e, expr, q, *negated, scope, agg)
                    }
                    _ => return Err(unsupported("this IN form", span)),
                };
                let x = self.expr(expr, scope, agg.as_deref_mut())?;
                let mut items = Vec::with_capacity(list.len());
                for item in list {
                    items.push(self.expr(item, scope, agg.as_deref_mut())?);
                }
                let mut types = vec![x.ty];
                types.extend(items.iter().map(|b| b.ty));
                let t = self.unify(&types, e)?;
                let (x, list) = match t {
                    Some(t) => (
                        self.coerce_compared(x, t),
                        items
                            .into_iter()
                            .map(|b| self.coerce_compared(b, t))
                            .collect(),
                    ),
                    None => (x.expr, items.into_iter().map(|b| b.expr).collect()),
                };
                Ok(B::new(
                    Expr::InList {
                        expr: Box::new(x),
                        list,
                        negated: *negated,
                    },
                    Some(DataType::Boolean),
                ))
            }
            E::Between {
                expr,
                negated,
                low,
                high,
            } => {
                let x = self.expr(expr, scope, agg.as_deref_mut())?;
                let lo = self.expr(low, scope, agg.as_deref_mut())?;
                let hi = self.expr(high, scope, agg.as_deref_mut())?;
                let t = self.unify(&[x.ty, lo.ty, hi.ty], e)?;
                let (x, lo, hi) = match t {
                    Some(t) => (
                        self.coerce_compared(x, t),
                        self.coerce_compared(lo, t),
                        self.coerce_compared(hi, t),
                    ),
                    None => (x.expr, lo.expr, hi.expr),
                };
                Ok(B::new(
                    Expr::Between {
                        expr: Box::new(x),
                        low: Box::new(lo),
                        high: Box::new(hi),
                        negated: *negated,
                    },
                    Some(DataType::Boolean),
                ))
            }
            E::Like {
                negated,
                any,
                expr,
                pattern,
                escape_char,
            }
            | E::ILike {
                negated,
                any,
                expr,
                pattern,
                escape_char,
            } => {
                // ILIKE: LIKE of the lower-cased text and pattern, as PostgreSQL's compares.
                let insensitive = matches!(e, E::ILike { .. });
                let what = if insensitive { "ILIKE" } else { "LIKE" };
                if *any {
                    return Err(unsupported(format!("{what} ANY"), span));
                }
                let escape = match escape_char.as_deref() {
                    None => None,
                    Some(E::Value(sql::ValueWithSpan {
                        value: sql::Value::SingleQuotedString(c),
                        ..
                    })) if c.chars().count() == 1 => c.chars().next(),
                    Some(other) => {
                        return Err(PlanError::Invalid(format!(
                            "ESCAPE needs a one-character string literal, got {other}{}",
                            at(other.span())
                        )))
                    }
                };
                let x = self.expr(expr, scope, agg.as_deref_mut())?;
                let p = self.expr(pattern, scope, agg.as_deref_mut())?;
                for b in [&x, &p] {
                    if b.ty.is_some_and(|t| t != DataType::Utf8) {
                        return Err(PlanError::Type(format!(
                            "{what} needs VARCHAR operands, got {} in '{e}'",
                            type_name(b.ty)
                        )));
                    }
                }
                let mut x = self.coerce(x, DataType::Utf8);
                let mut p = self.coerce(p, DataType::Utf8);
                let mut escape = escape;
                if insensitive {
                    let lower = |e: Expr| Expr::Function {
                        func: ScalarFunc::Lower,
                        args: vec![e],
                    };
                    (x, p) = (lower(x), lower(p));
                    // The escape character as the lower-cased pattern has it.
                    escape = escape.map(|c| c.to_lowercase().next().unwrap_or(c));
                }
                Ok(B::new(
                    Expr::Like {
                        expr: Box::new(x),
                        pattern: Box::new(p),
                        negated: *negated,
                        escape,
                    },
                    Some(DataType::Boolean),
                ))
            }
            E::SimilarTo {
                negated,
                expr,
                pattern,
                escape_char,
            } => {
                // As PostgreSQL rewrites it: `s ~ similar_to_escape(pattern [, escape])`.
                let x = self.expr(expr, scope, agg.as_deref_mut())?;
                let mut translated = vec![self.expr(pattern, scope, agg.as_deref_mut())?];
                if let Some(escape) = escape_char {
                    translated.push(self.expr(escape, scope, agg.as_deref_mut())?);
                }
                let regex = self.call(ScalarFunc::SimilarToEscape, "SIMILAR TO", translated, e)?;
                let b = self.call(ScalarFunc::RegexpLike, "SIMILAR TO", vec![x, regex], e)?;
                Ok(if *negated {
                    B::new(Expr::Not(Box::new(b.expr)), Some(DataType::Boolean))
                } else {
                    b
                })
            }
            E::Cast {
                kind,
                expr,
                data_type,
                format,
            } => {
                if format.is_some() {
                    return Err(unsupported("CAST ... FORMAT", span));
                }
                if !matches!(kind, sql::CastKind::Cast | sql::CastKind::DoubleColon) {
                    return Err(unsupported(format!("{kind:?}"), span));
                }
                let to = map_type(data_type, span)?;
                let b = self.expr(expr, scope, agg)?;
                if b.ty == Some(to) {
                    return Ok(b);
                }
                Ok(B::new(
                    Expr::Cast {
                        expr: Box::new(b.expr),
                        to,
                    },
                    Some(to),
                ))
            }
            E::Function(f) => {
                if let Some(func) = agg_func(f) {
                    return Err(PlanError::Invalid(format!(
                        "aggregate function {} is not allowed here{}",
                        func.name(),
                        at(span)
                    )));
                }
                self.function(f, e, scope, agg)
            }
            E::Substring { .. }
            | E::Trim { .. }
            | E::Position { .. }
            | E::Overlay { .. }
            | E::Ceil { .. }
            | E::Floor { .. } => self.special(e, scope, agg),
            E::Subquery(q) => self.scalar_subquery(q, scope, agg.map(|a| a.groups.as_slice())),
            E::Exists { subquery, negated } => {
                let mark = self.subquery_apply(
                    subquery,
                    scope,
                    agg.map(|a| a.groups.as_slice()),
                    ApplyKind::Exists,
                    Field::new("exists", DataType::Boolean),
                )?;
                Ok(B::new(negate_if(mark, *negated), Some(DataType::Boolean)))
            }

            E::Case {
                operand,
                conditions,
                else_result,
                ..
            } => self.case(
                e,
                operand.as_deref(),
                conditions,
                else_result.as_deref(),
                scope,
                agg,
            ),
            E::IsTrue(x) | E::IsFalse(x) | E::IsNotTrue(x) | E::IsNotFalse(x) => {
                let b = self.expr(x, scope, agg)?;
                let x = self.boolean(b, e)?;
                // IS TRUE is `x` with NULL false; IS FALSE is `NOT x` with NULL false; the
                // NOT forms are their negations (NULL true).
                let (flip, negated) = match e {
                    E::IsTrue(_) => (false, false),
                    E::IsFalse(_) => (true, false),
                    E::IsNotTrue(_) => (false, true),
                    _ => (true, true),
                };
                let value = if flip {
                    Expr::Not(Box::new(x.clone()))
                } else {
                    x.clone()
                };
                let known = Expr::Case {
                    operand: None,
                    branches: vec![(
                        Expr::IsNull {
                            expr: Box::new(x),
                            negated: false,
                        },
                        Expr::Literal(Value::Bool(false)),
                    )],
                    else_result: Some(Box::new(value)),
                };
                let out = if negated {
                    Expr::Not(Box::new(known))
                } else {
                    known
                };
                Ok(B::new(out, Some(DataType::Boolean)))
            }
            E::IsDistinctFrom(a, b) | E::IsNotDistinctFrom(a, b) => {
                let distinct = matches!(e, E::IsDistinctFrom(..));
                let l = self.expr(a, scope, agg.as_deref_mut())?;
                let r = self.expr(b, scope, agg)?;
                let [l, r] = self.compared_operands(l, r, e)?;
                Ok(B::new(
                    distinct_from(l, r, distinct),
                    Some(DataType::Boolean),
                ))
            }
            E::Wildcard(_) | E::QualifiedWildcard(..) => {
                Err(unsupported("'*' in an expression", span))
            }
            other => {
                let mut text = other.to_string();
                if text.len() > 40 {
                    let mut cut = 40;
                    while !text.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    text.truncate(cut);
                    text.push_str("...");
                }
                Err(unsupported(format!("expression '{text}'"), span))
            }
        }
    }

    /// A chain of `AND`s (or of `OR`s) `e`: its terms are collected without recursion and
    /// bound one by one, and the result is a shallow tree (see [`crate::logical::chain`]), so
    /// that thousands of terms neither recurse deeply here nor make a deep expression.
    fn logical_chain(
        &mut self,
        e: &sql::Expr,
        op: &sql::BinaryOperator,
        scope: &Scope,
        mut agg: Option<&mut AggCtx>,
    ) -> Result<B, PlanError> {
        let mut terms = Vec::new();
        let mut pending = vec![e];
        while let Some(x) = pending.pop() {
            match x {
                sql::Expr::BinaryOp { left, op: o, right } if o == op => {
                    pending.push(right);
                    pending.push(left);
                }
                term => terms.push(term),
            }
        }
        let mut bound = Vec::with_capacity(terms.len());
        for t in terms {
            let b = self.expr(t, scope, agg.as_deref_mut())?;
            bound.push(self.boolean(b, e)?);
        }
        let bop = if *op == sql::BinaryOperator::And {
            BinaryOp::And
        } else {
            BinaryOp::Or
        };
        let expr = crate::logical::chain(bop, bound).expect("a chain has terms");
        Ok(B::new(expr, Some(DataType::Boolean)))
    }

    /// The operands of a comparison in `e`, each of the type they meet at (`None` when
    /// neither has one: two NULLs or parameters). Decimals of one scale and different
    /// precisions compare (and hash) alike as they are; any other mix is cast to the common
    /// type first, so join keys hash alike.
    fn compared_operands(&mut self, l: B, r: B, e: &sql::Expr) -> Result<[B; 2], PlanError> {
        let same_scale = l.ty.zip(r.ty).is_some_and(|(a, b)| {
            a != b
                && matches!(a, DataType::Decimal { .. })
                && matches!(b, DataType::Decimal { .. })
                && a.decimal_scale() == b.decimal_scale()
        });
        if same_scale {
            return Ok([l, r]);
        }
        let Some(t) = self.unify(&[l.ty, r.ty], e)? else {
            return Ok([l, r]);
        };
        // A decimal of the common type's scale stays as it is (see `coerce_compared`).
        let kept = |b: &B| match (b.ty, t) {
            (Some(d @ DataType::Decimal { scale: s, .. }), DataType::Decimal { scale, .. })
                if s == scale =>
            {
                d
            }
            _ => t,
        };
        let (lt, rt) = (kept(&l), kept(&r));
        let (le, re) = (self.coerce_compared(l, t), self.coerce_compared(r, t));
        Ok([B::new(le, Some(lt)), B::new(re, Some(rt))])
    }

    fn binary(
        &mut self,
        e: &sql::Expr,
        left: &sql::Expr,
        op: &sql::BinaryOperator,
        right: &sql::Expr,
        scope: &Scope,
        mut agg: Option<&mut AggCtx>,
    ) -> Result<B, PlanError> {
        use sql::BinaryOperator as O;
        if matches!(op, O::StringConcat) {
            let l = self.expr(left, scope, agg.as_deref_mut())?;
            let r = self.expr(right, scope, agg)?;
            return self.call(ScalarFunc::ConcatOp, "||", vec![l, r], e);
        }
        let bitwise = match op {
            O::BitwiseAnd => Some(ScalarFunc::BitAnd),
            O::BitwiseOr => Some(ScalarFunc::BitOr),
            O::PGBitwiseShiftLeft => Some(ScalarFunc::ShiftLeft),
            O::PGBitwiseShiftRight => Some(ScalarFunc::ShiftRight),
            _ => None,
        };
        if let Some(func) = bitwise {
            let l = self.expr(left, scope, agg.as_deref_mut())?;
            let r = self.expr(right, scope, agg)?;
            return self.call(func, func.name(), vec![l, r], e);
        }
        // `a ~ p` is `regexp_like(a, p)`; `~*` without case, `!~` and `!~*` their negations.
        let regex = match op {
            O::PGRegexMatch => Some((false, false)),
            O::PGRegexIMatch => Some((true, false)),
            O::PGRegexNotMatch => Some((false, true)),
            O::PGRegexNotIMatch => Some((true, true)),
            _ => None,
        };
        if let Some((insensitive, negated)) = regex {
            let l = self.expr(left, scope, agg.as_deref_mut())?;
            let r = self.expr(right, scope, agg)?;
            let mut args = vec![l, r];
            if insensitive {
                args.push(B::new(
                    Expr::Literal(Value::from("i")),
                    Some(DataType::Utf8),
                ));
            }
            let b = self.call(ScalarFunc::RegexpLike, &op.to_string(), args, e)?;
            return Ok(if negated {
                B::new(Expr::Not(Box::new(b.expr)), Some(DataType::Boolean))
            } else {
                b
            });
        }
        let bop = match op {
            O::Plus => BinaryOp::Add,
            O::Minus => BinaryOp::Sub,
            O::Multiply => BinaryOp::Mul,
            O::Divide => BinaryOp::Div,
            O::Modulo => BinaryOp::Mod,
            O::Eq => BinaryOp::Eq,
            O::NotEq => BinaryOp::NotEq,
            O::Lt => BinaryOp::Lt,
            O::LtEq => BinaryOp::LtEq,
            O::Gt => BinaryOp::Gt,
            O::GtEq => BinaryOp::GtEq,
            O::And => BinaryOp::And,
            O::Or => BinaryOp::Or,
            other => return Err(unsupported(format!("operator {other}"), e.span())),
        };
        if matches!(bop, BinaryOp::Add | BinaryOp::Sub) {
            if let sql::Expr::Interval(iv) = right {
                let x = self.expr(left, scope, agg)?;
                return self.add_interval(x, iv, bop == BinaryOp::Sub, e);
            }
            if let (sql::Expr::Interval(iv), BinaryOp::Add) = (left, bop) {
                let x = self.expr(right, scope, agg)?;
                return self.add_interval(x, iv, false, e);
            }
        }
        let l = self.expr(left, scope, agg.as_deref_mut())?;
        let r = self.expr(right, scope, agg)?;
        let temporal = [l.ty, r.ty].iter().flatten().any(|t| t.is_temporal());
        // Decimals of one scale and different precisions compare (and hash) alike as they
        // are; any other mix is cast to the common type first, so join keys hash alike.
        let (le, re, ty) = if bop.is_arithmetic() && temporal {
            self.date_arithmetic(bop, l, r, e)?
        } else if bop.is_arithmetic() {
            for b in [&l, &r] {
                if b.ty.is_some_and(|t| !t.is_numeric()) {
                    return Err(PlanError::Type(format!(
                        "operator '{}' needs numeric operands, got {} and {} in '{e}'",
                        bop.symbol(),
                        type_name(l.ty),
                        type_name(r.ty)
                    )));
                }
            }
            let t = match (l.ty, r.ty) {
                (Some(a), Some(b)) => bop.arithmetic_result(a, b),
                (Some(DataType::Decimal { .. }), None) | (None, Some(DataType::Decimal { .. }))
                    if bop == BinaryOp::Div =>
                {
                    Some(DataType::Float64)
                }
                (Some(a), _) => Some(a),
                (None, b) => b,
            };
            // Operands keep their own type where the result is a decimal or a division's
            // DOUBLE (the evaluator rescales); an untyped side takes the other's type.
            let keep = |t: Option<DataType>| matches!(t, Some(DataType::Decimal { .. }));
            if (keep(l.ty) || keep(r.ty)) && t != Some(DataType::Float64) {
                let lt = l.ty.or(r.ty).unwrap_or(DataType::Int64);
                let rt = r.ty.or(l.ty).unwrap_or(DataType::Int64);
                let (le, re) = (self.coerce(l, lt), self.coerce(r, rt));
                return Ok(B::new(
                    Expr::Binary {
                        op: bop,
                        left: Box::new(le),
                        right: Box::new(re),
                    },
                    t,
                ));
            }
            match t {
                Some(t) => (self.coerce(l, t), self.coerce(r, t), Some(t)),
                None => (l.expr, r.expr, None),
            }
        } else if bop.is_comparison() {
            let [l, r] = self.compared_operands(l, r, e)?;
            (l.expr, r.expr, Some(DataType::Boolean))
        } else {
            let le = self.boolean(l, e)?;
            let re = self.boolean(r, e)?;
            (le, re, Some(DataType::Boolean))
        };
        Ok(B::new(
            Expr::Binary {
                op: bop,
                left: Box::new(le),
                right: Box::new(re),
            },
            ty,
        ))
    }

    fn aggregate(
        &mut self,
        f: &sql::Function,
        e: &sql::Expr,
        scope: &Scope,
        ctx: &mut AggCtx,
    ) -> Result<B, PlanError> {
        let span = e.span();
        if let Some(plain) = agg_filter::without_filter(f) {
            return self.aggregate(&plain, e, scope, ctx);
        }
        let mut func = agg_func(f).expect("caller checked the aggregate name");
        if func == AggFunc::PercentileCont {
            let a = self.percentile(f, scope, span)?;
            return self.register_aggregate(a, false, ctx);
        }
        if !f.within_group.is_empty() {
            return Err(unsupported("WITHIN GROUP", span));
        }
        let list = match &f.args {
            sql::FunctionArguments::List(l) => l,
            _ => {
                return Err(PlanError::Invalid(format!(
                    "{} takes exactly one argument{}",
                    func.name(),
                    at(span)
                )))
            }
        };
        let distinct = matches!(
            list.duplicate_treatment,
            Some(sql::DuplicateTreatment::Distinct)
        );
        let order_by = match list.clauses.as_slice() {
            [] => Vec::new(),
            [sql::FunctionArgumentClause::OrderBy(keys)] if func == AggFunc::StringAgg => {
                if distinct {
                    return Err(unsupported(
                        format!("{}(DISTINCT ... ORDER BY ...)", f.name),
                        span,
                    ));
                }
                self.aggregate_order(keys, scope)?
            }
            _ => return Err(unsupported("aggregate function clauses", span)),
        };
        let (arg, separator) = match (func, list.args.as_slice()) {
            (AggFunc::StringAgg, [arg, separator]) => (
                arg,
                Some(self.separator(f, separator, scope, distinct, span)?),
            ),
            (AggFunc::StringAgg, [arg])
                if f.name.to_string().eq_ignore_ascii_case("group_concat") =>
            {
                (arg, Some(",".to_string()))
            }
            (AggFunc::StringAgg, _) => {
                return Err(PlanError::Invalid(format!(
                    "{} takes a value and a separator{}",
                    f.name,
                    at(span)
                )))
            }
            (_, [arg]) => (arg, None),
            _ => {
                return Err(PlanError::Invalid(format!(
                    "{} takes exactly one argument{}",
                    func.name(),
                    at(span)
                )))
            }
        };
        let (arg, input_type) = match arg {
            sql::FunctionArg::Unnamed(sql::FunctionArgExpr::Wildcard) if func == AggFunc::Count => {
                func = AggFunc::CountStar;
                (None, DataType::Int64)
            }
            sql::FunctionArg::Unnamed(sql::FunctionArgExpr::Expr(x)) => {
                let b = self.expr(x, scope, None)?;
                let name = f.name.to_string().to_uppercase();
                if matches!(name.as_str(), "BOOL_AND" | "BOOL_OR" | "EVERY")
                    && b.ty.is_some_and(|t| t != DataType::Boolean)
                {
                    return Err(PlanError::Type(format!(
                        "{name} needs a BOOLEAN argument, got {} in '{e}'",
                        type_name(b.ty)
                    )));
                }
                if (matches!(func, AggFunc::Sum | AggFunc::Avg | AggFunc::Total)
                    || func.is_moment())
                    && b.ty.is_some_and(|t| !t.is_numeric())
                {
                    return Err(PlanError::Type(format!(
                        "{name} needs a numeric argument, got {} in '{e}'",
                        type_name(b.ty)
                    )));
                }
                // TOTAL sums as DOUBLE, the variances take DOUBLEs; STRING_AGG joins the
                // values as text.
                let floats = func == AggFunc::Total || func.is_moment();
                let t = match func {
                    _ if floats => DataType::Float64,
                    AggFunc::StringAgg => DataType::Utf8,
                    _ => self.settle(&b),
                };
                let arg = match (func, b.ty) {
                    (AggFunc::StringAgg, Some(from)) if from != DataType::Utf8 => {
                        cast_expr(b.expr, DataType::Utf8)
                    }
                    (_, Some(from)) if floats && from != DataType::Float64 => {
                        cast_expr(b.expr, DataType::Float64)
                    }
                    _ => self.coerce(b, t),
                };
                (Some(arg), t)
            }
            _ => return Err(unsupported(format!("argument of {}", func.name()), span)),
        };
        let a = AggregateExpr {
            func,
            arg,
            input_type,
            param: separator.map(Value::Str),
            order_by,
        };
        if distinct && a.func == AggFunc::CountStar {
            return Err(PlanError::Invalid(format!(
                "COUNT(DISTINCT *) is not valid SQL{}",
                at(span)
            )));
        }
        self.register_aggregate(a, distinct, ctx)
    }

    /// `MEDIAN(x)`, and `PERCENTILE_CONT(f) WITHIN GROUP (ORDER BY x [ASC|DESC])` with a
    /// constant fraction `f` from 0 to 1 (descending takes `1 - f`): the value over DOUBLE.
    fn percentile(
        &mut self,
        f: &sql::Function,
        scope: &Scope,
        span: Span,
    ) -> Result<AggregateExpr, PlanError> {
        let name = f.name.to_string().to_uppercase();
        let sql::FunctionArguments::List(list) = &f.args else {
            return Err(PlanError::Invalid(format!(
                "{name} takes one argument{}",
                at(span)
            )));
        };
        if list.duplicate_treatment.is_some() || !list.clauses.is_empty() {
            return Err(unsupported(format!("DISTINCT or clauses in {name}"), span));
        }
        let one = |args: &[sql::FunctionArg]| match args {
            [sql::FunctionArg::Unnamed(sql::FunctionArgExpr::Expr(x))] => Some(x.clone()),
            _ => None,
        };
        let (value, fraction) = if name == "MEDIAN" {
            let Some(value) = one(&list.args).filter(|_| f.within_group.is_empty()) else {
                return Err(PlanError::Invalid(format!(
                    "MEDIAN takes one argument and no WITHIN GROUP{}",
                    at(span)
                )));
            };
            (value, 0.5)
        } else {
            let (Some(fraction), [order]) = (one(&list.args), f.within_group.as_slice()) else {
                return Err(PlanError::Invalid(format!(
                    "{name} takes a fraction and WITHIN GROUP (ORDER BY one expression){}",
                    at(span)
                )));
            };
            let b = self.expr(&fraction, scope, None)?;
            let fraction_value = match b.expr {
                Expr::Literal(Value::Int(i)) => Some(i as f64),
                Expr::Literal(Value::Float(x)) => Some(x),
                Expr::Literal(ref v @ Value::Decimal(..)) => v.as_f64(),
                _ => None,
            };
            let Some(p) = fraction_value.filter(|p| (0.0..=1.0).contains(p)) else {
                return Err(PlanError::Invalid(format!(
                    "the fraction of {name} must be a constant from 0 to 1, got '{fraction}'{}",
                    at(span)
                )));
            };
            let descending = matches!(order.options.sort, Some(sql::OrderBySort::Desc));
            (order.expr.clone(), if descending { 1.0 - p } else { p })
        };
        let b = self.expr(&value, scope, None)?;
        if b.ty.is_some_and(|t| !t.is_numeric()) {
            return Err(PlanError::Type(format!(
                "{name} needs a numeric argument, got {} in '{value}'",
                type_name(b.ty)
            )));
        }
        let arg = match b.ty {
            Some(t) if t != DataType::Float64 => cast_expr(b.expr, DataType::Float64),
            _ => self.coerce(b, DataType::Float64),
        };
        Ok(AggregateExpr {
            func: AggFunc::PercentileCont,
            arg: Some(arg),
            input_type: DataType::Float64,
            param: Some(Value::Float(fraction)),
            order_by: Vec::new(),
        })
    }

    /// The `ORDER BY` inside an aggregate call (`STRING_AGG(x, ',' ORDER BY y DESC)`), over
    /// the rows being aggregated (NULLs sort as the largest value).
    fn aggregate_order(
        &mut self,
        keys: &[sql::OrderByExpr],
        scope: &Scope,
    ) -> Result<Vec<SortKey>, PlanError> {
        keys.iter()
            .map(|k| {
                let (descending, nulls_first) = sort_options(k)?;
                let b = self.expr(&k.expr, scope, None)?;
                let t = self.settle(&b);
                Ok(SortKey {
                    expr: self.coerce(b, t),
                    descending,
                    nulls_first,
                })
            })
            .collect()
    }

    /// Adds aggregate `a` (over distinct values when `distinct`) to the query's aggregates,
    /// once however often it is written; the expression that reads its result. Ordered
    /// aggregates of one aggregation must share their order (they run over the rows sorted
    /// once).
    fn register_aggregate(
        &mut self,
        a: AggregateExpr,
        distinct: bool,
        ctx: &mut AggCtx,
    ) -> Result<B, PlanError> {
        if !a.order_by.is_empty()
            && ctx
                .aggs
                .iter()
                .any(|b| !b.order_by.is_empty() && b.order_by != a.order_by)
        {
            return Err(PlanError::Unsupported {
                what: "aggregates ordered differently in one SELECT".into(),
                position: String::new(),
            });
        }
        let out = a.output_type();
        let j = match (0..ctx.aggs.len()).find(|&j| ctx.aggs[j] == a && ctx.distinct[j] == distinct)
        {
            Some(j) => j,
            None => {
                ctx.aggs.push(a);
                ctx.distinct.push(distinct);
                ctx.aggs.len() - 1
            }
        };
        Ok(B::new(Expr::Column(ctx.groups.len() + j), Some(out)))
    }
}

/// Evaluates a constant INSERT value: literals, negative numbers, NULL, parameters, and casts
/// and parentheses around them. The result is checked against (and widened to) `target`.
pub(crate) fn constant_value(
    e: &sql::Expr,
    binder: &mut Binder<'_>,
    target: DataType,
    column: &str,
) -> Result<Value, PlanError> {
    let span = e.span();
    let v = match e {
        sql::Expr::Nested(x) => return constant_value(x, binder, target, column),
        sql::Expr::Value(v) => {
            let b = binder.literal(v, false)?;
            match b.expr {
                // A quoted literal has the type of where it goes, as PostgreSQL's literals of
                // unknown type have: '1' into a BIGINT column is 1.
                Expr::Literal(Value::Str(text))
                    if target.is_numeric() || target == DataType::Boolean =>
                {
                    cast_value(Value::Str(text.clone()), target).map_err(|why| {
                        PlanError::Type(format!(
                            "invalid {target} value '{text}' for column '{column}'{}: {why}",
                            at(span)
                        ))
                    })?
                }
                Expr::Literal(v) => v,
                Expr::Param(i) => {
                    binder.params.expect(i, target);
                    let v = binder.params.value(i).cloned().unwrap_or(Value::Null);
                    if let Some(got) = v.data_type() {
                        if !param_fits(target, got) && !implicit_cast(got, target) {
                            return Err(PlanError::ParamType {
                                index: i,
                                expected: target,
                                got,
                            });
                        }
                    }
                    v
                }
                _ => Value::Null,
            }
        }
        sql::Expr::UnaryOp {
            op: sql::UnaryOperator::Minus,
            expr,
        } => match expr.as_ref() {
            sql::Expr::Value(v) if matches!(v.value, sql::Value::Number(..)) => {
                match binder.literal(v, true)?.expr {
                    Expr::Literal(v) => v,
                    _ => Value::Null,
                }
            }
            _ => match constant_value(expr, binder, target, column)? {
                Value::Int(i) => Value::Int(
                    i.checked_neg()
                        .ok_or_else(|| PlanError::Type(format!("integer overflow in '{e}'")))?,
                ),
                Value::Float(f) => Value::Float(-f),
                Value::Decimal(v, s) => Value::Decimal(-v, s),
                Value::Null => Value::Null,
                other => return Err(PlanError::Type(format!("cannot negate {other} in '{e}'"))),
            },
        },
        sql::Expr::TypedString(ts) => match binder.typed_string(ts)?.expr {
            Expr::Literal(v) => v,
            _ => Value::Null,
        },
        sql::Expr::UnaryOp {
            op: sql::UnaryOperator::Plus,
            expr,
        } => constant_value(expr, binder, target, column)?,
        sql::Expr::Cast {
            expr, data_type, ..
        } => {
            let to = map_type(data_type, span)?;
            let v = constant_value_untyped(expr, binder)?;
            cast_value(v, to)
                .map_err(|why| PlanError::Type(format!("cannot cast '{expr}' to {to}: {why}")))?
        }
        _ => computed_value(e, binder)?,
    };
    fit(v, target, column, e)
}

/// An INSERT value computed from constants (`1 << 63`, `2 * 3`, `upper('a')`, parameters),
/// evaluated once as a query would; an expression that reads a column or a subquery is
/// refused.
fn computed_value(e: &sql::Expr, binder: &mut Binder<'_>) -> Result<Value, PlanError> {
    let refused = || unsupported("non-constant expressions in INSERT VALUES", e.span());
    if matches!(e, sql::Expr::Subquery(_) | sql::Expr::Exists { .. }) {
        return Err(refused());
    }
    let b = binder.expr(e, &Scope::default(), None)?;
    if b.expr
        .any(&|x| matches!(x, Expr::Column(_) | Expr::OuterColumn(_)))
    {
        return Err(refused());
    }
    let one = weir_operators::Batch::with_row_count(Vec::new(), 1)
        .map_err(|err| PlanError::Invalid(format!("cannot compute '{e}': {err}")))?;
    let column = weir_operators::eval::evaluate(&b.expr, &one, binder.params.values())
        .map_err(|err| PlanError::Type(format!("cannot compute '{e}': {err}")))?;
    Ok(column.value(0))
}

fn constant_value_untyped(e: &sql::Expr, binder: &mut Binder<'_>) -> Result<Value, PlanError> {
    match e {
        sql::Expr::Nested(x) => constant_value_untyped(x, binder),
        sql::Expr::Value(v) => match binder.literal(v, false)?.expr {
            Expr::Literal(v) => Ok(v),
            Expr::Param(i) => Ok(binder.params.value(i).cloned().unwrap_or(Value::Null)),
            _ => Ok(Value::Null),
        },
        sql::Expr::UnaryOp {
            op: sql::UnaryOperator::Minus,
            expr,
        } => match constant_value_untyped(expr, binder)? {
            Value::Int(i) => {
                Ok(Value::Int(i.checked_neg().ok_or_else(|| {
                    PlanError::Type(format!("integer overflow in '{e}'"))
                })?))
            }
            Value::Float(f) => Ok(Value::Float(-f)),
            Value::Decimal(v, s) => Ok(Value::Decimal(-v, s)),
            Value::Null => Ok(Value::Null),
            other => Err(PlanError::Type(format!("cannot negate {other} in '{e}'"))),
        },
        sql::Expr::TypedString(ts) => match binder.typed_string(ts)?.expr {
            Expr::Literal(v) => Ok(v),
            _ => Ok(Value::Null),
        },
        _ => Err(unsupported(
            "non-constant expressions in INSERT VALUES",
            e.span(),
        )),
    }
}

/// `CAST(v AS to)` of a constant, with the evaluator's semantics; the error says why not.
pub(crate) fn cast_value(v: Value, to: DataType) -> Result<Value, String> {
    let old = matches!(
        v,
        Value::Null | Value::Int(_) | Value::Float(_) | Value::Str(_) | Value::Bool(_)
    ) && matches!(
        to,
        DataType::Int64 | DataType::Float64 | DataType::Utf8 | DataType::Boolean
    );
    if old {
        return cast_value_basic(v, to).ok_or_else(|| format!("not a valid {to}"));
    }
    let e = Expr::Cast {
        expr: Box::new(Expr::Literal(v)),
        to,
    };
    weir_operators::eval::evaluate_scalar(&e, &[]).map_err(|e| e.to_string())
}

/// An expression cast to `to`; a text literal that parses as a DATE or TIMESTAMP, and a
/// decimal literal made a DOUBLE, are folded into a literal of that type.
pub(crate) fn cast_expr(e: Expr, to: DataType) -> Expr {
    let foldable = match (&e, to) {
        (Expr::Literal(Value::Str(_)), t) => t.is_temporal(),
        (Expr::Literal(Value::Decimal(..) | Value::Int(_)), DataType::Float64) => true,
        _ => false,
    };
    if let (Expr::Literal(v), true) = (&e, foldable) {
        if let Ok(folded) = cast_value(v.clone(), to) {
            return Expr::Literal(folded);
        }
    }
    Expr::Cast {
        expr: Box::new(e),
        to,
    }
}

fn cast_value_basic(v: Value, to: DataType) -> Option<Value> {
    Some(match (v, to) {
        (Value::Null, _) => Value::Null,
        (Value::Int(i), DataType::Int64) => Value::Int(i),
        (Value::Int(i), DataType::Float64) => Value::Float(i as f64),
        (Value::Int(i), DataType::Utf8) => Value::Str(i.to_string()),
        (Value::Int(i), DataType::Boolean) => Value::Bool(i != 0),
        (Value::Float(f), DataType::Int64)
            if f.is_finite() && f >= i64::MIN as f64 && f < i64::MAX as f64 =>
        {
            Value::Int(f.trunc() as i64)
        }
        (Value::Float(f), DataType::Float64) => Value::Float(f),
        (Value::Float(f), DataType::Utf8) => Value::Str(f.to_string()),
        (Value::Str(s), DataType::Utf8) => Value::Str(s),
        (Value::Str(s), DataType::Int64) => Value::Int(s.trim().parse().ok()?),
        (Value::Str(s), DataType::Float64) => Value::Float(s.trim().parse().ok()?),
        (Value::Str(s), DataType::Boolean) => match s.trim().to_lowercase().as_str() {
            "true" | "t" | "1" => Value::Bool(true),
            "false" | "f" | "0" => Value::Bool(false),
            _ => return None,
        },
        (Value::Bool(b), DataType::Boolean) => Value::Bool(b),
        (Value::Bool(b), DataType::Int64) => Value::Int(b as i64),
        (Value::Bool(b), DataType::Utf8) => Value::Str(b.to_string()),
        _ => return None,
    })
}

fn fit(v: Value, target: DataType, column: &str, e: &sql::Expr) -> Result<Value, PlanError> {
    use DataType as T;
    let assignable = matches!(
        (&v, target),
        (
            Value::Int(_) | Value::Float(_) | Value::Decimal(..) | Value::Str(_),
            T::Decimal { .. }
        ) | (Value::Decimal(..), T::Float64)
            | (Value::Str(_) | Value::Date(_), T::Date | T::Timestamp)
            | (Value::Timestamp(_), T::Timestamp)
    );
    match (&v, target) {
        (Value::Null, _) => Ok(v),
        (Value::Int(i), DataType::Float64) => Ok(Value::Float(*i as f64)),
        // A whole number written with a fraction (`4.0`, `1e3`) fits a BIGINT column, as
        // PostgreSQL's assignment cast takes it; a fraction that is not zero does not.
        (Value::Decimal(..) | Value::Float(_), T::Int64) if whole(&v).is_some() => {
            Ok(Value::Int(whole(&v).expect("checked above")))
        }
        _ if assignable => cast_value(v, target).map_err(|_| {
            PlanError::Type(format!(
                "value '{e}' does not fit {target} column '{column}'"
            ))
        }),
        (v2, t) if v2.data_type() == Some(t) => Ok(v),
        (v2, t) => Err(PlanError::Type(format!(
            "cannot insert {} value '{e}' into {t} column '{column}'",
            type_name(v2.data_type())
        ))),
    }
}

/// The BIGINT `v` (a DECIMAL or DOUBLE) is, when it is a whole number in range.
fn whole(v: &Value) -> Option<i64> {
    match v {
        Value::Decimal(m, s) => {
            let unit = 10i128.checked_pow(u32::from(*s))?;
            (m % unit == 0).then(|| i64::try_from(m / unit).ok())?
        }
        Value::Float(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => Some(*f as i64),
        _ => None,
    }
}

impl Binder<'_> {
    /// `GROUPING(a [, b ...])` over grouped rows: per argument (a grouping expression), 1 where
    /// the row's grouping set leaves it out, else 0, read as binary digits (the first argument
    /// the most significant). 0 without GROUPING SETS, ROLLUP or CUBE.
    fn grouping_call(
        &mut self,
        f: &sql::Function,
        e: &sql::Expr,
        scope: &Scope,
        ctx: &AggCtx,
    ) -> Result<B, PlanError> {
        let args: Vec<&sql::Expr> = match &f.args {
            sql::FunctionArguments::List(l) if l.duplicate_treatment.is_none() => l
                .args
                .iter()
                .map(|a| match a {
                    sql::FunctionArg::Unnamed(sql::FunctionArgExpr::Expr(x)) => Ok(x),
                    _ => Err(unsupported("this argument of GROUPING", e.span())),
                })
                .collect::<Result<_, _>>()?,
            _ => vec![],
        };
        if args.is_empty() || f.over.is_some() || f.filter.is_some() {
            return Err(PlanError::Invalid(format!(
                "GROUPING takes grouping expressions{}",
                at(e.span())
            )));
        }
        let keys = ctx.grouping.unwrap_or(ctx.groups.len());
        let mut value: Option<Expr> = None;
        for a in args {
            let b = self.expr(a, scope, None)?;
            let Some(i) = ctx.groups[..keys].iter().position(|g| g.expr == b.expr) else {
                return Err(PlanError::Invalid(format!(
                    "arguments to GROUPING must be grouping expressions of the associated query level{}",
                    at(a.span())
                )));
            };
            let bit = match ctx.grouping {
                Some(k) => Expr::Column(k + i),
                None => Expr::lit(0i64),
            };
            value = Some(match value {
                None => bit,
                Some(v) => v
                    .binary(BinaryOp::Mul, Expr::lit(2i64))
                    .binary(BinaryOp::Add, bit),
            });
        }
        Ok(B::new(
            value.expect("at least one argument"),
            Some(DataType::Int64),
        ))
    }
}

/// `a IS [NOT] DISTINCT FROM b` over the bound operands (each bound once, of the type they
/// meet at), so that two NULLs are not distinct and a NULL and a value are. Typed operands
/// give `(a IS NULL) = (b IS NULL) AND COALESCE(a, v) = COALESCE(b, v)` (`v` any value of
/// the type; under `NOT` for IS DISTINCT FROM): two equalities, which a join takes as hash
/// keys. Untyped ones (NULLs, parameters) give `CASE WHEN a IS NULL THEN b IS [NOT] NULL
/// WHEN b IS NULL THEN TRUE (FALSE) ELSE a <> b (a = b) END`.
fn distinct_from(a: B, b: B, distinct: bool) -> Expr {
    if let (Some(at), Some(bt)) = (a.ty, b.ty) {
        let [nulls, values] = crate::optimizer::unnest::null_safe_pair(a.expr, at, b.expr, bt);
        let same = nulls
            .0
            .eq(nulls.1)
            .binary(BinaryOp::And, values.0.eq(values.1));
        return negate_if(same, distinct);
    }
    let (a, b) = (a.expr, b.expr);
    let is_null = |x: &Expr, negated| Expr::IsNull {
        expr: Box::new(x.clone()),
        negated,
    };
    let op = if distinct {
        BinaryOp::NotEq
    } else {
        BinaryOp::Eq
    };
    Expr::Case {
        operand: None,
        branches: vec![
            (is_null(&a, false), is_null(&b, distinct)),
            (is_null(&b, false), Expr::Literal(Value::Bool(distinct))),
        ],
        else_result: Some(Box::new(a.binary(op, b))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::dialect::GenericDialect;

    #[test]
    fn placeholders_are_numbered_by_position() {
        let values = [Value::Int(1), Value::Int(2)];
        let p = Params::scan("SELECT ? , ?", &GenericDialect {}, &values).unwrap();
        assert_eq!(p.expected, 2);
        assert_eq!(p.qmarks.get(&(1, 8)), Some(&0));
        assert_eq!(p.qmarks.get(&(1, 12)), Some(&1));
        let p = Params::scan("SELECT $2, $1", &GenericDialect {}, &values).unwrap();
        assert_eq!(p.expected, 2);
        assert!(p.check_count().is_ok());
        let e = Params::scan("SELECT $3, $1", &GenericDialect {}, &values).err();
        assert_eq!(
            e,
            Some(PlanError::ParamCount {
                expected: 3,
                got: 2
            })
        );
    }

    #[test]
    fn huge_placeholder_numbers_fail_without_allocating() {
        for (sql, expected) in [
            ("SELECT $4000000000", 4_000_000_000usize),
            ("SELECT $18446744073709551615", usize::MAX),
        ] {
            assert_eq!(
                Params::scan(sql, &GenericDialect {}, &[]).err(),
                Some(PlanError::ParamCount { expected, got: 0 }),
                "{sql}"
            );
        }
        assert!(matches!(
            Params::scan("SELECT $99999999999999999999999", &GenericDialect {}, &[]),
            Err(PlanError::Unsupported { .. })
        ));
    }

    #[test]
    fn param_type_check() {
        let values = [Value::Int(1), Value::Null, Value::Str("x".into())];
        let mut p = Params::scan("? ? ?", &GenericDialect {}, &values).unwrap();
        p.expect(0, DataType::Float64);
        p.expect(1, DataType::Utf8);
        assert!(p.check_types().is_ok());
        p.expect(2, DataType::Int64);
        assert_eq!(
            p.check_types(),
            Err(PlanError::ParamType {
                index: 2,
                expected: DataType::Int64,
                got: DataType::Utf8
            })
        );
    }
}
