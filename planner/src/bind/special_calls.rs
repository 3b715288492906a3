//! Calls whose arguments are bound their own way rather than by a fixed signature:
//! `width_bucket` (three values that meet at one numeric type, and a count),
//! `num_nulls`/`num_nonnulls` (arguments of any types, only their NULLs counted) and
//! `pg_typeof` (the type's name, known when the call is bound), `to_number` (whose result's
//! decimals its constant template decides).

use super::{at, system_views, type_name, Binder, B};
use crate::error::PlanError;
use sqlparser::ast::{self as sql, Spanned};
use weir_operators::{DataType, Expr, ScalarFunc, Value};

impl Binder<'_> {
    /// `width_bucket(x, low, high, count)`: `x` and the bounds at the numeric type they meet
    /// at (exact buckets for integers and decimals), the count a BIGINT.
    pub(super) fn width_bucket(&mut self, args: Vec<B>, e: &sql::Expr) -> Result<B, PlanError> {
        let func = ScalarFunc::WidthBucket;
        let name = func.name();
        let t = self.common_type(&args[..3], &format!("function {name}"), e)?;
        let t = t.unwrap_or(DataType::Float64);
        let wrong = |i: usize, what: &str, b: &B| {
            PlanError::Type(format!(
                "function {name} needs {what} argument {}, got {} in '{e}'{}",
                i + 1,
                type_name(b.ty),
                at(e.span())
            ))
        };
        if !t.is_numeric() {
            let (i, b) = args[..3]
                .iter()
                .enumerate()
                .find(|(_, b)| b.ty.is_some_and(|t| !t.is_numeric()))
                .expect("a type that is not numeric came from an argument");
            return Err(wrong(i, "a numeric", b));
        }
        if args[3].ty.is_some_and(|t| t != DataType::Int64) {
            return Err(wrong(3, "an integer", &args[3]));
        }
        let mut exprs = Vec::with_capacity(4);
        for (i, b) in args.into_iter().enumerate() {
            exprs.push(self.typed(b, if i < 3 { t } else { DataType::Int64 }));
        }
        Ok(B::new(
            Expr::Function { func, args: exprs },
            Some(DataType::Int64),
        ))
    }

    /// `to_number(text, template)`: a DECIMAL with as many decimals as the template, which
    /// must be a constant (a NULL template gives NULL).
    pub(super) fn bind_to_number(&mut self, args: Vec<B>, e: &sql::Expr) -> Result<B, PlanError> {
        for (i, b) in args.iter().enumerate() {
            if b.ty.is_some_and(|t| t != DataType::Utf8) {
                return Err(PlanError::Type(format!(
                    "function to_number needs a VARCHAR argument {}, got {} in '{e}'{}",
                    i + 1,
                    type_name(b.ty),
                    at(e.span())
                )));
            }
        }
        let scale = match &args[1].expr {
            Expr::Literal(Value::Str(template)) => {
                weir_operators::functions::to_number_decimals(template).map_err(|err| {
                    let message = match err {
                        weir_operators::Error::Type(m) => m,
                        other => other.to_string(),
                    };
                    PlanError::Type(format!("{message}{}", at(e.span())))
                })?
            }
            Expr::Literal(Value::Null) => 0,
            _ => {
                return Err(super::unsupported(
                    "to_number with a template that is not a constant (its decimals make the \
                     result's type)",
                    e.span(),
                ))
            }
        };
        let func = ScalarFunc::ToNumber(scale);
        let exprs = args
            .into_iter()
            .map(|b| self.typed(b, DataType::Utf8))
            .collect();
        Ok(B::new(
            Expr::Function { func, args: exprs },
            Some(func.result_type(&[])),
        ))
    }

    /// `num_nulls(...)` or `num_nonnulls(...)`: the arguments as they are, of any types.
    pub(super) fn count_nulls(func: ScalarFunc, args: Vec<B>) -> B {
        let exprs = args.into_iter().map(|b| b.expr).collect();
        B::new(Expr::Function { func, args: exprs }, Some(DataType::Int64))
    }

    /// `pg_typeof(x)`: the name PostgreSQL gives `x`'s type, as text (`bigint`, `numeric`,
    /// `character varying`, ...; `unknown` for an untyped NULL). weir's integers are all
    /// BIGINT.
    pub(super) fn type_of(args: Vec<B>, e: &sql::Expr) -> Result<B, PlanError> {
        let [x] = <[B; 1]>::try_from(args).map_err(|args| {
            PlanError::Invalid(format!(
                "function pg_typeof takes 1 argument, got {}{}",
                args.len(),
                at(e.span())
            ))
        })?;
        let name = x.ty.map_or("unknown", system_views::type_name);
        Ok(B::new(
            Expr::Literal(Value::Str(name.to_string())),
            Some(DataType::Utf8),
        ))
    }
}
