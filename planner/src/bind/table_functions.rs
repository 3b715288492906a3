//! Table functions in FROM and in select lists: `generate_series(start, stop [, step])`
//! (the integers from `start` to `stop`, `step` (1 when left out) apart, or the timestamps
//! from `start` to `stop` an `INTERVAL` apart), `string_to_table(text, delimiter [,
//! null_string])` and `regexp_split_to_table(text, pattern [, flags])`, as PostgreSQL's, with
//! `WITH ORDINALITY`. Their arguments are expressions over parameters, the columns of the
//! FROM items before them (a function in FROM is LATERAL, as in PostgreSQL: the binder makes
//! such a call a LATERAL join), the columns of an outer query (a correlated subquery), or, in
//! a select list over a FROM clause, the FROM clause's columns.

use super::datetime::interval_parts;
use super::relations::rename_columns;
use super::*;
use weir_operators::plan::{SeriesStep, TableFunction};
use weir_operators::Schema;

/// The table functions weir has, by their SQL names.
pub(super) const TABLE_FUNCTIONS: [&str; 3] = [
    "generate_series",
    "string_to_table",
    "regexp_split_to_table",
];

/// Whether `name` (lowercase) is one of [`TABLE_FUNCTIONS`].
pub(super) fn is_table_function(name: &str) -> bool {
    TABLE_FUNCTIONS.contains(&name)
}

/// A call of a table function: its name (lowercase), its arguments, its alias, and whether
/// it asks `WITH ORDINALITY`.
pub(super) struct TableCall<'a> {
    /// One of [`TABLE_FUNCTIONS`].
    pub(super) name: String,
    pub(super) args: &'a [sql::FunctionArg],
    pub(super) alias: Option<&'a sql::TableAlias>,
    pub(super) ordinality: bool,
}

impl Binder<'_> {
    /// Binds `call`, its arguments over `args_scope`'s columns, and adds its columns to
    /// `scope`: the value's (named as the function, or as the alias says: `AS g` names the
    /// column `g` as PostgreSQL does, `AS g(i)` names it `i`), then with `WITH ORDINALITY` a
    /// BIGINT `ordinality`. Returns a [`LogicalPlan::TableFunction`].
    pub(super) fn table_function(
        &mut self,
        call: &TableCall<'_>,
        span: Span,
        args_scope: &Scope,
        scope: &mut Scope,
    ) -> Result<LogicalPlan, PlanError> {
        let name = call.name.as_str();
        let function = self.call_function(call, span, args_scope, None)?;
        let column = match call.alias {
            Some(a) => a.name.value.to_lowercase(),
            None => name.to_string(),
        };
        let mut fields = vec![Field::new(&column, function.data_type())];
        if call.ordinality {
            fields.push(Field::new("ordinality", DataType::Int64));
        }
        if let Some(a) = call.alias {
            rename_columns(&mut fields, a, span)?;
        }
        scope.add(fields.clone(), column, span)?;
        Ok(LogicalPlan::TableFunction {
            schema: Schema::new(fields),
            function,
            ordinality: call.ordinality,
        })
    }

    /// The function `call` calls, its arguments bound over `args_scope`'s columns; with
    /// `agg`, over the groups of a grouped query (a call in its select list: group keys and
    /// aggregates, as [`Binder::expr`] binds them).
    pub(super) fn call_function(
        &mut self,
        call: &TableCall<'_>,
        span: Span,
        args_scope: &Scope,
        mut agg: Option<&mut AggCtx>,
    ) -> Result<TableFunction, PlanError> {
        let name = call.name.as_str();
        let mut asts = Vec::with_capacity(3);
        for arg in call.args {
            let sql::FunctionArg::Unnamed(sql::FunctionArgExpr::Expr(e)) = arg else {
                return Err(unsupported(format!("this argument of {name}"), span));
            };
            asts.push(e);
        }
        let mut bind = |b: &mut Self, e: &sql::Expr| b.expr(e, args_scope, agg.as_deref_mut());
        match name {
            "generate_series" => self.series(&asts, span, &mut bind),
            _ => self.split(name, &asts, span, &mut bind),
        }
    }

    /// `generate_series(args)`, its arguments bound by `bind`.
    fn series(
        &mut self,
        asts: &[&sql::Expr],
        span: Span,
        bind: &mut dyn FnMut(&mut Self, &sql::Expr) -> Result<B, PlanError>,
    ) -> Result<TableFunction, PlanError> {
        if !(2..=3).contains(&asts.len()) {
            return Err(PlanError::Invalid(format!(
                "generate_series takes a start, a stop and an optional step, got {} arguments{}",
                asts.len(),
                at(span)
            )));
        }
        // A series of timestamps steps by an interval; one of integers by an integer.
        let (ty, step) = match asts.get(2) {
            Some(sql::Expr::Interval(iv)) => {
                let (months, days, micros) = interval_parts(iv)?;
                let step = SeriesStep::Interval {
                    months,
                    days,
                    micros,
                };
                (DataType::Timestamp, step)
            }
            Some(e) => {
                let step = self.series_arg(e, DataType::Int64, span, bind)?;
                (DataType::Int64, SeriesStep::Integer(step))
            }
            None => (DataType::Int64, SeriesStep::Integer(Expr::lit(1))),
        };
        let start = self.series_arg(asts[0], ty, span, bind)?;
        let stop = self.series_arg(asts[1], ty, span, bind)?;
        Ok(TableFunction::Series { start, stop, step })
    }

    /// `string_to_table(text, delimiter [, null_string])` or `regexp_split_to_table(text,
    /// pattern [, flags])` (`name`), its text arguments bound by `bind`.
    fn split(
        &mut self,
        name: &str,
        asts: &[&sql::Expr],
        span: Span,
        bind: &mut dyn FnMut(&mut Self, &sql::Expr) -> Result<B, PlanError>,
    ) -> Result<TableFunction, PlanError> {
        let third = if name == "string_to_table" {
            "null string"
        } else {
            "flags"
        };
        if !(2..=3).contains(&asts.len()) {
            return Err(PlanError::Invalid(format!(
                "{name} takes a text, a separator and optional {third}, got {} arguments{}",
                asts.len(),
                at(span)
            )));
        }
        let mut args = Vec::with_capacity(asts.len());
        for e in asts {
            let b = bind(self, e)?;
            if b.ty.is_some_and(|t| t != DataType::Utf8) {
                return Err(PlanError::Type(format!(
                    "{name} takes text arguments, got {} in '{e}'{}",
                    type_name(b.ty),
                    at(span)
                )));
            }
            args.push(self.coerce(b, DataType::Utf8));
        }
        let mut args = args.into_iter();
        let (Some(text), Some(separator)) = (args.next(), args.next()) else {
            return Err(PlanError::Invalid(format!(
                "internal planner error: {name} bound without its arguments"
            )));
        };
        let last = args.next();
        Ok(if name == "string_to_table" {
            TableFunction::SplitText {
                text,
                delimiter: separator,
                null_string: last,
            }
        } else {
            TableFunction::SplitPattern {
                text,
                pattern: separator,
                flags: last,
            }
        })
    }

    /// One argument of `generate_series`, bound by `bind` and made of type `ty`: a BIGINT
    /// for a series of integers, a TIMESTAMP (from a DATE, a TIMESTAMP or a quoted literal)
    /// for one of timestamps.
    fn series_arg(
        &mut self,
        e: &sql::Expr,
        ty: DataType,
        span: Span,
        bind: &mut dyn FnMut(&mut Self, &sql::Expr) -> Result<B, PlanError>,
    ) -> Result<Expr, PlanError> {
        let b = bind(self, e)?;
        let text_literal = matches!(b.expr, Expr::Literal(Value::Str(_)));
        let fits = match (b.ty, ty) {
            (None, _) => true,
            (Some(t), DataType::Timestamp) => t.is_temporal() || text_literal,
            (Some(t), want) => t == want,
        };
        if !fits {
            let t = type_name(b.ty);
            let what = if ty == DataType::Timestamp {
                "dates or timestamps with an INTERVAL step"
            } else {
                "integers, or dates and timestamps with an INTERVAL step"
            };
            return Err(PlanError::Type(format!(
                "generate_series takes {what}, got {t} in '{e}'{}",
                at(span)
            )));
        }
        Ok(self.coerce(b, ty))
    }
}
