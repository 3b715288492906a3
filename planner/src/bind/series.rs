//! `generate_series(start, stop [, step])` in FROM: the integers from `start` to `stop`,
//! `step` (1 when left out) apart, or the timestamps from `start` to `stop` an `INTERVAL`
//! apart, as PostgreSQL's. Its arguments are constant expressions
//! (literals, parameters, arithmetic on them); a call whose arguments read columns of other
//! FROM items (LATERAL) or of an outer query is refused, naming it.

use super::datetime::interval_parts;
use super::relations::rename_columns;
use super::*;
use crate::logical::has_outer;
use weir_operators::plan::SeriesStep;
use weir_operators::Schema;

impl Binder<'_> {
    /// Binds the call `name(args)` in FROM, aliased by `alias`, and adds its one column to
    /// `scope` (named `generate_series`, or as the alias says: `AS g` names the column `g`
    /// as PostgreSQL does, `AS g(i)` names it `i`).
    pub(super) fn series(
        &mut self,
        args: &[sql::FunctionArg],
        alias: Option<&sql::TableAlias>,
        span: Span,
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
                let step = self.series_arg(e, DataType::Int64, span)?;
                (DataType::Int64, SeriesStep::Integer(step))
            }
            None => (DataType::Int64, SeriesStep::Integer(Expr::lit(1))),
        };
        let start = self.series_arg(asts[0], ty, span)?;
        let stop = self.series_arg(asts[1], ty, span)?;
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

    /// One argument of `generate_series`, bound with no FROM item in scope and made of type
    /// `ty`: a BIGINT for a series of integers, a TIMESTAMP (from a DATE, a TIMESTAMP or a
    /// quoted literal) for one of timestamps.
    fn series_arg(&mut self, e: &sql::Expr, ty: DataType, span: Span) -> Result<Expr, PlanError> {
        // Another FROM item's column is unknown here.
        let b = self
            .expr(e, &Scope::default(), None)
            .map_err(|err| match err {
                PlanError::UnknownColumn { name, .. } => unsupported(
                    format!(
                        "generate_series reading column '{name}' (its arguments must be \
                     constants: a LATERAL call is not supported)"
                    ),
                    span,
                ),
                other => other,
            })?;
        if has_outer(&b.expr) {
            return Err(unsupported(
                "generate_series reading a column of an outer query",
                span,
            ));
        }
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
