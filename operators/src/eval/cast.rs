//! `CAST` between every pair of types that converts: numbers to and from each other and
//! text, DECIMAL at a precision and scale, DATE and TIMESTAMP from text and each other, and
//! anything to text. A value that does not convert is an error naming it.

use super::val::{lift, null_of, owned, to_scalar, Val};
use crate::column::{Column, ColumnData};
use crate::error::{Error, Result};
use crate::types::DataType;
use crate::value::Value;
use crate::{decimal, temporal};
use std::io::Write as _;

/// The error for a value that does not convert to `to`.
fn cast_err(value: impl std::fmt::Display, to: DataType) -> Error {
    Error::Cast {
        value: value.to_string(),
        to: to.to_string(),
    }
}

/// A float truncated to a BIGINT, or `None` when it is not finite or out of range.
fn f64_to_i64(f: f64) -> Option<i64> {
    // 2^63 as f64; the range check is exact at the boundaries.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    (f.is_finite() && (-LIMIT..LIMIT).contains(&f)).then(|| f.trunc() as i64)
}

/// Text as a BOOLEAN: `true`/`t`/`1`/`yes`/`y`/`on` and their opposites, in any case.
fn parse_bool(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "true" | "t" | "1" | "yes" | "y" | "on" => Some(true),
        "false" | "f" | "0" | "no" | "n" | "off" => Some(false),
        _ => None,
    }
}

/// Casts a single value (used by the column cast for string sources and by callers).
pub(super) fn cast<'a>(v: Val<'a>, to: DataType) -> Result<Val<'a>> {
    let from = v.dt();
    if from == Some(to) {
        return Ok(v);
    }
    match v {
        Val::Scalar(Value::Null, _) => Ok(null_of(Some(to))),
        Val::Scalar(..) => Ok(to_scalar(cast(lift(v), to)?)),
        Val::Col(c) => Ok(owned(cast_column(&c, to)?)),
    }
}

/// Converts every valid row of `src` with `f`; a row it rejects is an error naming the value
/// (NULL rows get `U::default()`).
fn convert<T: Copy + std::fmt::Debug, U: Default>(
    c: &Column,
    src: &[T],
    to: DataType,
    f: impl Fn(T) -> Option<U>,
) -> Result<Vec<U>> {
    src.iter()
        .enumerate()
        .map(|(i, &x)| match f(x) {
            Some(y) => Ok(y),
            None if c.is_valid(i) => Err(cast_err(c.value(i).to_sql(), to)),
            None => Ok(U::default()),
        })
        .collect()
}

/// Parses every valid row of a string column with `f`; a row it rejects is an error quoting
/// the text.
fn parse_strs<U: Default>(
    c: &Column,
    to: DataType,
    f: impl Fn(&str) -> Option<U>,
) -> Result<Vec<U>> {
    (0..c.len())
        .map(|i| {
            if !c.is_valid(i) {
                return Ok(U::default());
            }
            let s = c.str_at(i);
            f(s).ok_or_else(|| cast_err(format!("'{s}'"), to))
        })
        .collect()
}

/// Parses a DATE from text: `YYYY-MM-DD`, or a timestamp's date.
fn parse_date_text(s: &str) -> Option<i32> {
    temporal::parse_date(s).or_else(|| temporal::timestamp_to_date(temporal::parse_timestamp(s)?))
}

/// Casts to `DECIMAL(precision, scale)`: exact from integers and decimals (rounding half away
/// from zero when the scale shrinks), nearest from floats, parsed from text; a value with
/// more than `precision` digits is an error.
fn cast_to_decimal(c: &Column, to: DataType, precision: u8, scale: u8) -> Result<ColumnData> {
    let fit = |x: i128| decimal::fits(x, precision).then_some(x);
    let values = match &c.data {
        ColumnData::Int64(v) => convert(c, v, to, |x| {
            fit(decimal::rescale(i128::from(x), 0, scale)?)
        })?,
        ColumnData::Float64(v) => convert(c, v, to, |x| fit(decimal::from_f64(x, scale)?))?,
        ColumnData::Decimal {
            values, scale: s, ..
        } => convert(c, values, to, |x| fit(decimal::rescale(x, *s, scale)?))?,
        ColumnData::Utf8 { .. } => parse_strs(c, to, |t| fit(decimal::parse(t, scale)?))?,
        _ => return Err(cast_err(c.data_type(), to)),
    };
    Ok(ColumnData::Decimal {
        values,
        precision,
        scale,
    })
}

/// Casts a DECIMAL column to another type.
fn cast_from_decimal(c: &Column, values: &[i128], scale: u8, to: DataType) -> Result<ColumnData> {
    Ok(match to {
        DataType::Int64 => ColumnData::Int64(convert(c, values, to, |x| {
            i64::try_from(decimal::rescale(x, scale, 0)?).ok()
        })?),
        DataType::Float64 => {
            ColumnData::Float64(values.iter().map(|&x| decimal::to_f64(x, scale)).collect())
        }
        DataType::Boolean => ColumnData::Boolean(values.iter().map(|&x| x != 0).collect()),
        _ => return Err(cast_err(c.data_type(), to)),
    })
}

/// Casts to DATE or TIMESTAMP.
fn cast_to_temporal(c: &Column, to: DataType) -> Result<ColumnData> {
    Ok(match (&c.data, to) {
        (ColumnData::Utf8 { .. }, DataType::Date) => {
            ColumnData::Date(parse_strs(c, to, parse_date_text)?)
        }
        (ColumnData::Utf8 { .. }, _) => {
            ColumnData::Timestamp(parse_strs(c, to, temporal::parse_timestamp)?)
        }
        (ColumnData::Date(v), DataType::Timestamp) => {
            ColumnData::Timestamp(v.iter().map(|&d| temporal::date_to_timestamp(d)).collect())
        }
        (ColumnData::Timestamp(v), DataType::Date) => {
            ColumnData::Date(convert(c, v, to, temporal::timestamp_to_date)?)
        }
        _ => return Err(cast_err(c.data_type(), to)),
    })
}

/// Casts a column of text to a BIGINT, DOUBLE or BOOLEAN.
fn cast_from_text(c: &Column, to: DataType) -> Result<ColumnData> {
    Ok(match to {
        DataType::Int64 => ColumnData::Int64(parse_strs(c, to, |s| s.trim().parse().ok())?),
        DataType::Float64 => ColumnData::Float64(parse_strs(c, to, |s| s.trim().parse().ok())?),
        DataType::Boolean => ColumnData::Boolean(parse_strs(c, to, parse_bool)?),
        _ => c.data.clone(),
    })
}

/// Renders every valid row as text (decimals with their scale, dates as `YYYY-MM-DD`).
fn cast_to_text(c: &Column) -> ColumnData {
    let n = c.len();
    let mut offsets = Vec::with_capacity(n + 1);
    let mut bytes: Vec<u8> = Vec::with_capacity(n * 8);
    offsets.push(0u32);
    for i in 0..n {
        if c.is_valid(i) {
            // Writing into a Vec<u8> cannot fail.
            let _ = match &c.data {
                ColumnData::Int64(v) => write!(bytes, "{}", v[i]),
                ColumnData::Float64(v) => write!(bytes, "{}", v[i]),
                ColumnData::Boolean(v) => write!(bytes, "{}", v[i]),
                ColumnData::Utf8 { .. } => write!(bytes, "{}", c.str_at(i)),
                ColumnData::Decimal { .. } | ColumnData::Date(_) | ColumnData::Timestamp(_) => {
                    write!(bytes, "{}", c.value(i))
                }
            };
        }
        offsets.push(bytes.len() as u32);
    }
    ColumnData::Utf8 { offsets, bytes }
}

/// Casts every row of `c` to `to` (NULL rows stay NULL); a valid row that does not convert
/// is an error naming its value.
pub(crate) fn cast_column(c: &Column, to: DataType) -> Result<Column> {
    let validity = c.validity.clone();
    let from = c.data_type();
    let data = match (&c.data, to) {
        _ if from == to => c.data.clone(),
        (_, DataType::Utf8) => cast_to_text(c),
        (_, DataType::Decimal { precision, scale }) => cast_to_decimal(c, to, precision, scale)?,
        (ColumnData::Decimal { values, scale, .. }, _) => cast_from_decimal(c, values, *scale, to)?,
        (_, DataType::Date | DataType::Timestamp) => cast_to_temporal(c, to)?,
        (ColumnData::Utf8 { .. }, _) => cast_from_text(c, to)?,
        (ColumnData::Int64(v), DataType::Float64) => {
            ColumnData::Float64(v.iter().map(|&x| x as f64).collect())
        }
        (ColumnData::Int64(v), DataType::Boolean) => {
            ColumnData::Boolean(v.iter().map(|&x| x != 0).collect())
        }
        (ColumnData::Float64(v), DataType::Int64) => {
            ColumnData::Int64(convert(c, v, to, f64_to_i64)?)
        }
        (ColumnData::Float64(v), DataType::Boolean) => {
            ColumnData::Boolean(v.iter().map(|&x| x != 0.0).collect())
        }
        (ColumnData::Boolean(v), DataType::Int64) => {
            ColumnData::Int64(v.iter().map(|&x| x as i64).collect())
        }
        (ColumnData::Boolean(v), DataType::Float64) => {
            ColumnData::Float64(v.iter().map(|&x| x as i64 as f64).collect())
        }
        _ => return Err(cast_err(from, to)),
    };
    Ok(Column::with_validity(data, validity))
}

#[cfg(test)]
mod tests {
    use crate::eval::evaluate_scalar;
    use crate::eval::testing::{dec, run, vals};
    use crate::{DataType, Error, Expr, Value};

    #[test]
    fn casts() {
        let c = |e: Expr, to| Expr::Cast {
            expr: Box::new(e),
            to,
        };
        assert_eq!(
            evaluate_scalar(&c(Expr::lit("42"), DataType::Int64), &[]).unwrap(),
            Value::Int(42)
        );
        assert!(matches!(
            evaluate_scalar(&c(Expr::lit("x"), DataType::Int64), &[]),
            Err(Error::Cast { .. })
        ));
        assert_eq!(
            evaluate_scalar(&c(Expr::lit(-2.7), DataType::Int64), &[]).unwrap(),
            Value::Int(-2)
        );
        assert_eq!(
            evaluate_scalar(&c(Expr::lit(3), DataType::Boolean), &[]).unwrap(),
            Value::Bool(true)
        );
        assert_eq!(
            evaluate_scalar(&c(Expr::lit(true), DataType::Int64), &[]).unwrap(),
            Value::Int(1)
        );
        assert_eq!(
            evaluate_scalar(&c(Expr::lit(2.5), DataType::Utf8), &[]).unwrap(),
            Value::from("2.5")
        );
        assert_eq!(
            vals(&c(Expr::col(0), DataType::Utf8)),
            vec!["1".into(), "2".into(), Value::Null, "4".into()]
        );
        assert_eq!(
            evaluate_scalar(&c(Expr::lit(Value::Null), DataType::Utf8), &[]).unwrap(),
            Value::Null
        );
    }

    #[test]
    fn casts_of_the_new_types() {
        let c = |e: Expr, to| {
            run(&Expr::Cast {
                expr: Box::new(e),
                to,
            })
        };
        let d52 = DataType::decimal(5, 2);
        assert_eq!(
            c(Expr::lit("12.345"), d52).unwrap(),
            Value::Decimal(1235, 2)
        );
        assert_eq!(
            c(Expr::lit("-12.345"), d52).unwrap(),
            Value::Decimal(-1235, 2)
        );
        assert_eq!(c(Expr::lit(3), d52).unwrap(), Value::Decimal(300, 2));
        assert_eq!(c(Expr::lit(0.125), d52).unwrap(), Value::Decimal(13, 2));
        assert_eq!(c(dec(25, 1), DataType::Int64).unwrap(), Value::Int(3));
        assert_eq!(c(dec(-25, 1), DataType::Int64).unwrap(), Value::Int(-3));
        assert_eq!(
            c(dec(125, 2), DataType::Float64).unwrap(),
            Value::Float(1.25)
        );
        assert_eq!(
            c(dec(1250, 2), DataType::Utf8).unwrap(),
            Value::from("12.50")
        );
        let err = c(Expr::lit("abc"), d52).unwrap_err();
        assert_eq!(err.to_string(), "cannot cast 'abc' to DECIMAL(5,2)");
        let err = c(dec(123456, 1), d52).unwrap_err();
        assert_eq!(err.to_string(), "cannot cast 12345.6 to DECIMAL(5,2)");
        let day = crate::temporal::parse_date("1998-12-01").unwrap();
        assert_eq!(
            c(Expr::lit("1998-12-01"), DataType::Date).unwrap(),
            Value::Date(day)
        );
        assert_eq!(
            c(Expr::lit("1998-12-01 10:00:00"), DataType::Date).unwrap(),
            Value::Date(day)
        );
        assert_eq!(
            c(Expr::lit(Value::Date(day)), DataType::Utf8).unwrap(),
            Value::from("1998-12-01")
        );
        let ts = c(Expr::lit(Value::Date(day)), DataType::Timestamp).unwrap();
        assert_eq!(ts.to_string(), "1998-12-01 00:00:00");
        assert_eq!(c(Expr::lit(ts), DataType::Date).unwrap(), Value::Date(day));
        let err = c(Expr::lit("1998-02-30"), DataType::Date).unwrap_err();
        assert_eq!(err.to_string(), "cannot cast '1998-02-30' to DATE");
        assert!(c(Expr::lit(Value::Date(day)), DataType::Int64).is_err());
    }
}
