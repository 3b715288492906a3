//! `generate_series(start, stop [, step])` in FROM: the integers from `start` to `stop`,
//! `step` (1 when left out) apart, or the timestamps from `start` to `stop` an `INTERVAL`
//! apart, as PostgreSQL's. Its arguments are expressions over parameters, the columns of the
//! FROM items before it (a function in FROM is LATERAL, as in PostgreSQL: the binder makes
//! such a call a LATERAL join), the columns of an outer query (a correlated subquery), or, in
//! a select list over a FROM clause, the FROM clause's columns.

use super::datetime::interval_parts;
use super::relations::rename_columns;
use super::*;
use weir_operators::plan::SeriesStep;
use weir_operators::Schema;

impl Binder<'_> {
    /// Binds the call `generate_series(args)`, aliased by `alias`, its arguments over
    /// `args_scope`'s columns, and adds its one column to `scope` (named `generate_series`, or
    /// as the alias says: `AS g` names the column `g` as PostgreSQL does, `AS g(i)` names it
    /// `i`). Returns a [`LogicalPlan::Series`].
    pub(super) fn series(
        &mut self,
        args: &[sql::FunctionArg],
        alias: Option<&sql::TableAlias>,
        span: Span,
        args_scope: &Scope,
        scope: &mut Scope,
    ) -> Result<LogicalPlan, PlanError> {
        if !(2..=3).contains(&args.len()) {
            return Err(PlanError::Invalid(format!(
                "generate_series takes a start, a stop and an optional step, got {} arguments{}",
                args.len(),
                at(span)
            )));
        }
        let mut asts = Vec::with_capacity(3);
        for arg in args {
            let sql::FunctionArg::Unnamed(sql::FunctionArgExpr::Expr(e)) = arg else {
                return Err(unsupported("this argument of generate_series", span));
            };
            asts.push(e);
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
                let step = self.series_arg(e, DataType::Int64, args_scope, span)?;
                (DataType::Int64, SeriesStep::Integer(step))
            }
            None => (DataType::Int64, SeriesStep::Integer(Expr::lit(1))),
        };
        let start = self.series_arg(asts[0], ty, args_scope, span)?;
        let stop = self.series_arg(asts[1], ty, args_scope, span)?;
        let column = match alias {
            Some(a) => a.name.value.to_lowercase(),
            None => "generate_series".to_string(),
        };
        let mut fields = vec![Field::new(&column, ty)];
        if let Some(a) = alias {
            rename_columns(&mut fields, a, span)?;
        }
        scope.add(fields.clone(), column, span)?;
        Ok(LogicalPlan::Series {
            schema: Schema::new(fields),
            start,
            stop,
            step,
        })
    }

    /// One argument of `generate_series`, bound over `scope` and made of type `ty`: a BIGINT
    /// for a series of integers, a TIMESTAMP (from a DATE, a TIMESTAMP or a quoted literal)
    /// for one of timestamps.
    fn series_arg(
        &mut self,
        e: &sql::Expr,
        ty: DataType,
        scope: &Scope,
        span: Span,
    ) -> Result<Expr, PlanError> {
        let b = self.expr(e, scope, None)?;
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
