//! `generate_series(start, stop [, step])` in FROM: the integers from `start` to `stop`,
//! `step` (1 when left out) apart, as PostgreSQL's. Its arguments are constant expressions
//! (literals, parameters, arithmetic on them); a call whose arguments read columns of other
//! FROM items (LATERAL) or of an outer query is refused, naming it.

use super::relations::rename_columns;
use super::*;
use crate::logical::has_outer;
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
        let mut bound = Vec::with_capacity(3);
        for arg in args {
            let sql::FunctionArg::Unnamed(sql::FunctionArgExpr::Expr(e)) = arg else {
                return Err(unsupported("this argument of generate_series", span));
            };
            // Bound with no FROM item in scope: another item's column is unknown here.
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
            match b.ty {
                None | Some(DataType::Int64) => {}
                Some(t) => {
                    return Err(PlanError::Type(format!(
                        "generate_series takes integers, got {t} in '{e}'{}",
                        at(span)
                    )))
                }
            }
            bound.push(self.coerce(b, DataType::Int64));
        }
        let step = bound.get(2).cloned().unwrap_or_else(|| Expr::lit(1));
        let column = match alias {
            Some(a) => a.name.value.to_lowercase(),
            None => "generate_series".to_string(),
        };
        let mut fields = vec![Field::new(&column, DataType::Int64)];
        if let Some(a) = alias {
            rename_columns(&mut fields, a, span)?;
        }
        scope.add(fields.clone(), column, span)?;
        let mut bound = bound.into_iter();
        Ok(LogicalPlan::Series {
            schema: Schema::new(fields),
            start: bound.next().expect("a start"),
            stop: bound.next().expect("a stop"),
            step,
        })
    }
}
