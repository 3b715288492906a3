//! Binding of date and time syntax: typed literals (`DATE '1998-12-01'`, `TIMESTAMP '...'`,
//! `DECIMAL '1.5'`), `x ± INTERVAL 'n' unit`, `date ± integer`, `date - date` and
//! `EXTRACT(field FROM x)`.
//!
//! An INTERVAL has no column type: it is only accepted as the right operand of `+` or `-`
//! (or the left of `+`) next to a DATE or TIMESTAMP, and becomes a call of
//! [`ScalarFunc::AddInterval`] with its months, days and microseconds. A DATE plus an interval
//! of whole days or months stays a DATE (PostgreSQL gives a TIMESTAMP); with hours, minutes
//! or seconds it becomes a TIMESTAMP.

use super::{at, map_type, type_name, Binder, B};
use crate::error::PlanError;
use sqlparser::ast::{self as sql, Spanned};
use weir_operators::temporal::DatePart;
use weir_operators::{BinaryOp, DataType, Expr, ScalarFunc, Value};

/// An interval literal: months, days and microseconds (each signed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Interval {
    months: i64,
    days: i64,
    micros: i64,
}

/// `n` of `unit` as an interval, `None` for units that are not supported or overflow.
fn unit_interval(n: i64, unit: &str) -> Option<Interval> {
    let unit = unit.trim().to_ascii_lowercase();
    let unit = unit.strip_suffix('s').unwrap_or(&unit);
    let micros = |m: i64| {
        Some(Interval {
            micros: n.checked_mul(m)?,
            ..Interval::default()
        })
    };
    match unit {
        "year" => Some(Interval {
            months: n.checked_mul(12)?,
            ..Interval::default()
        }),
        "month" => Some(Interval {
            months: n,
            ..Interval::default()
        }),
        "week" => Some(Interval {
            days: n.checked_mul(7)?,
            ..Interval::default()
        }),
        "day" => Some(Interval {
            days: n,
            ..Interval::default()
        }),
        "hour" => micros(3_600_000_000),
        "minute" => micros(60_000_000),
        "second" => micros(1_000_000),
        _ => None,
    }
}

/// Parses the interval text with its unit: `'90' DAY`, or `'3 months'` without a unit.
fn parse_interval(text: &str, unit: Option<&str>) -> Option<Interval> {
    let t = text.trim();
    let (n, unit) = match unit {
        Some(u) => (t, u),
        None => t.split_once(char::is_whitespace)?,
    };
    unit_interval(n.trim().parse().ok()?, unit)
}

/// The interval an `INTERVAL 'n' unit` literal is; other forms are an error naming it.
fn literal_interval(iv: &sql::Interval) -> Result<Interval, PlanError> {
    let span = iv.value.span();
    let bad = || {
        PlanError::Invalid(format!(
            "unsupported INTERVAL '{iv}': use INTERVAL 'n' YEAR, MONTH, WEEK, DAY, HOUR, MINUTE or SECOND{}",
            at(span)
        ))
    };
    if iv.last_field.is_some() {
        return Err(bad());
    }
    let text = match iv.value.as_ref() {
        sql::Expr::Value(v) => match &v.value {
            sql::Value::SingleQuotedString(s) => s.clone(),
            sql::Value::Number(n, _) => n.clone(),
            _ => return Err(bad()),
        },
        _ => return Err(bad()),
    };
    let unit = iv.leading_field.as_ref().map(|f| f.to_string());
    parse_interval(&text, unit.as_deref()).ok_or_else(bad)
}

/// An `INTERVAL 'n' unit` literal as its `(months, days, microseconds)`.
pub(super) fn interval_parts(iv: &sql::Interval) -> Result<(i64, i64, i64), PlanError> {
    let i = literal_interval(iv)?;
    Ok((i.months, i.days, i.micros))
}

/// A `RANGE` frame offset written as an INTERVAL, in the units of an ORDER BY key of type
/// `key`: days for a DATE (whole days only), microseconds for a TIMESTAMP. Months and years
/// are refused: their length varies.
pub(super) fn interval_offset(iv: &sql::Interval, key: DataType) -> Result<i64, PlanError> {
    let i = literal_interval(iv)?;
    let span = iv.value.span();
    if i.months != 0 {
        return Err(PlanError::unsupported(
            "RANGE offsets of months or years",
            super::pos(span),
        ));
    }
    let overflow = || PlanError::Invalid(format!("INTERVAL '{iv}' is too long{}", at(span)));
    match key {
        DataType::Date if i.micros == 0 => Ok(i.days),
        DataType::Date => Err(PlanError::Invalid(format!(
            "a RANGE offset over a DATE is a whole number of days, got INTERVAL '{iv}'{}",
            at(span)
        ))),
        DataType::Timestamp => i
            .days
            .checked_mul(86_400_000_000)
            .and_then(|d| d.checked_add(i.micros))
            .ok_or_else(overflow),
        other => Err(PlanError::Type(format!(
            "an INTERVAL frame offset needs a DATE or TIMESTAMP ORDER BY column, got {other}{}",
            at(span)
        ))),
    }
}

impl Binder<'_> {
    /// Binds `DATE '...'`, `TIMESTAMP '...'` and other `TYPE 'text'` literals: the text is
    /// converted now, and text that is not a valid value of the type is an error naming it
    /// and its position.
    pub(super) fn typed_string(&mut self, ts: &sql::TypedString) -> Result<B, PlanError> {
        let span = ts.value.span;
        let to = map_type(&ts.data_type, span)?;
        let text = match &ts.value.value {
            sql::Value::SingleQuotedString(s) | sql::Value::DoubleQuotedString(s) => s.clone(),
            other => {
                return Err(PlanError::Invalid(format!(
                    "{} literal needs a quoted string, got {other}{}",
                    ts.data_type,
                    at(span)
                )))
            }
        };
        let v = super::cast_value(Value::Str(text.clone()), to).map_err(|_| {
            PlanError::Invalid(format!("invalid {to} literal '{text}'{}", at(span)))
        })?;
        Ok(B::new(
            if matches!(to, DataType::Decimal { .. }) {
                // Keep the declared precision on the type.
                Expr::Cast {
                    expr: Box::new(Expr::Literal(v)),
                    to,
                }
            } else {
                Expr::Literal(v)
            },
            Some(to),
        ))
    }

    /// Binds `x + interval` (or `x - interval` with `negate`).
    pub(super) fn add_interval(
        &mut self,
        x: B,
        iv: &sql::Interval,
        negate: bool,
        e: &sql::Expr,
    ) -> Result<B, PlanError> {
        let mut i = literal_interval(iv)?;
        if negate {
            i = Interval {
                months: -i.months,
                days: -i.days,
                micros: -i.micros,
            };
        }
        let ty = match x.ty {
            Some(DataType::Date) if i.micros == 0 => DataType::Date,
            Some(DataType::Date | DataType::Timestamp) => DataType::Timestamp,
            None => DataType::Date,
            Some(t) => {
                return Err(PlanError::Type(format!(
                    "an INTERVAL can only be added to a DATE or TIMESTAMP, got {t} in '{e}'"
                )))
            }
        };
        let x = self.coerce(x, ty);
        let lit = |v: i64| Expr::Literal(Value::Int(v));
        Ok(B::new(
            Expr::Function {
                func: ScalarFunc::AddInterval,
                args: vec![x, lit(i.months), lit(i.days), lit(i.micros)],
            },
            Some(ty),
        ))
    }

    /// Binds `date ± integer` (days) and `date - date` (days between, BIGINT).
    pub(super) fn date_arithmetic(
        &mut self,
        op: BinaryOp,
        l: B,
        r: B,
        e: &sql::Expr,
    ) -> Result<(Expr, Expr, Option<DataType>), PlanError> {
        let out = weir_operators::eval::temporal_arithmetic_type(op, l.ty, r.ty)
            .map_err(|err| PlanError::Type(format!("{} in '{e}'", strip_prefix(&err))))?;
        let side = |this: &mut Self, b: B, other: Option<DataType>| {
            let t = match (b.ty, other) {
                (Some(t), _) => t,
                (None, Some(DataType::Date)) if op == BinaryOp::Sub => DataType::Date,
                (None, _) => DataType::Int64,
            };
            this.coerce(b, t)
        };
        let (lt, rt) = (l.ty, r.ty);
        let le = side(self, l, rt);
        let re = side(self, r, lt);
        Ok((le, re, out))
    }

    /// Binds `EXTRACT(field FROM x)` as `date_part('field', x)`.
    pub(super) fn extract(
        &mut self,
        field: &sql::DateTimeField,
        x: B,
        e: &sql::Expr,
    ) -> Result<B, PlanError> {
        let name = field.to_string();
        let Some(part) = DatePart::from_name(&name) else {
            return Err(PlanError::Invalid(format!(
                "EXTRACT does not support the field {name}{}",
                at(e.span())
            )));
        };
        let part = B::new(
            Expr::Literal(Value::Str(part.name().to_string())),
            Some(DataType::Utf8),
        );
        self.call(ScalarFunc::Extract, "extract", vec![part, x], e)
    }

    /// Checks the arguments of `date_part` / `date_trunc`: a known field name as text and a
    /// DATE or TIMESTAMP. Gives the function to call (the seconds, milliseconds or epoch of a
    /// TIMESTAMP, named by a literal, keep their fraction: [`ScalarFunc::ExtractSeconds`],
    /// [`ScalarFunc::ExtractMilliseconds`]), its arguments and its result type.
    pub(super) fn date_part_args(
        &mut self,
        func: ScalarFunc,
        name: &str,
        args: Vec<B>,
        e: &sql::Expr,
    ) -> Result<(ScalarFunc, Vec<Expr>, DataType), PlanError> {
        let [field, x] = <[B; 2]>::try_from(args).map_err(|args| {
            PlanError::Invalid(format!(
                "function {name} takes 2 arguments, got {}{}",
                args.len(),
                at(e.span())
            ))
        })?;
        let mut literal_part = None;
        if let Expr::Literal(Value::Str(f)) = &field.expr {
            let known = DatePart::from_name(f);
            literal_part = known;
            let usable = match known {
                None => false,
                Some(part) => func != ScalarFunc::DateTrunc || part.is_unit(),
            };
            if !usable {
                return Err(PlanError::Invalid(format!(
                    "function {name} does not support the field '{f}'{}",
                    at(e.span())
                )));
            }
        } else if field.ty.is_some_and(|t| t != DataType::Utf8) {
            return Err(PlanError::Type(format!(
                "function {name} needs a field name as its first argument, got {} in '{e}'",
                type_name(field.ty)
            )));
        }
        let text_literal = matches!(x.expr, Expr::Literal(Value::Str(_)));
        let t = match x.ty {
            Some(t) if t.is_temporal() => t,
            // A quoted literal is read as a timestamp, as PostgreSQL does.
            Some(DataType::Utf8) if text_literal => DataType::Timestamp,
            None => DataType::Timestamp,
            Some(t) => {
                return Err(PlanError::Type(format!(
                    "function {name} needs a DATE or TIMESTAMP argument 2, got {t} in '{e}'"
                )))
            }
        };
        let field = self.coerce(field, DataType::Utf8);
        let x = self.coerce(x, t);
        let func = match (func, literal_part, t) {
            (
                ScalarFunc::Extract,
                Some(DatePart::Second | DatePart::Epoch),
                DataType::Timestamp,
            ) => ScalarFunc::ExtractSeconds,
            (ScalarFunc::Extract, Some(DatePart::Millisecond), DataType::Timestamp) => {
                ScalarFunc::ExtractMilliseconds
            }
            (func, _, _) => func,
        };
        let out = match func {
            ScalarFunc::DateTrunc => t,
            other => other.result_type(&[]),
        };
        Ok((func, vec![field, x], out))
    }
}

impl Binder<'_> {
    /// Checks the arguments of `to_char(x, template)`: `x` a DATE or TIMESTAMP (a quoted
    /// literal read as a TIMESTAMP), the template text. Numbers are refused, naming the call.
    pub(super) fn format_call_args(
        &mut self,
        args: Vec<B>,
        e: &sql::Expr,
    ) -> Result<Vec<Expr>, PlanError> {
        let mut args = args.into_iter();
        let (Some(x), Some(template)) = (args.next(), args.next()) else {
            return Err(PlanError::Invalid(format!(
                "function to_char takes 2 arguments{}",
                at(e.span())
            )));
        };
        let text_literal = matches!(x.expr, Expr::Literal(Value::Str(_)));
        let t = match x.ty {
            Some(t) if t.is_temporal() => t,
            Some(DataType::Utf8) if text_literal => DataType::Timestamp,
            None => DataType::Timestamp,
            Some(t) if t.is_numeric() => t,
            Some(t) => {
                return Err(PlanError::Type(format!(
                "function to_char needs a number, DATE or TIMESTAMP argument 1, got {t} in '{e}'"
            )))
            }
        };
        if template.ty.is_some_and(|t| t != DataType::Utf8) {
            return Err(PlanError::Type(format!(
                "function to_char needs a VARCHAR template, got {} in '{e}'",
                type_name(template.ty)
            )));
        }
        Ok(vec![
            self.coerce(x, t),
            self.coerce(template, DataType::Utf8),
        ])
    }
}

/// An evaluator error's message without its "type error: " prefix.
fn strip_prefix(e: &weir_operators::Error) -> String {
    let s = e.to_string();
    s.strip_prefix("type error: ").unwrap_or(&s).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_parse_with_and_without_a_unit() {
        let days = |d| Interval {
            days: d,
            ..Interval::default()
        };
        assert_eq!(parse_interval("90", Some("DAY")), Some(days(90)));
        assert_eq!(parse_interval("3 months", None).map(|i| i.months), Some(3));
        assert_eq!(
            parse_interval("1", Some("YEAR")).map(|i| i.months),
            Some(12)
        );
        assert_eq!(
            parse_interval("2", Some("hour")).map(|i| i.micros),
            Some(7_200_000_000)
        );
        assert_eq!(parse_interval("x", Some("DAY")), None);
        assert_eq!(parse_interval("1", Some("CENTURY")), None);
    }
}
