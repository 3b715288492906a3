//! Scalar values: literals, parameters, and result cells handed to users.
//!
//! Batches never store `Value`s; they are used only at the edges (SQL literals, bound
//! parameters, rows returned to a caller) and in reference evaluators for tests.

use crate::types::{DataType, MAX_DECIMAL_PRECISION};
use crate::{decimal, temporal};
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::fmt;

/// A single SQL value. A decoded decimal is checked ([`crate::decode`]): its scale is at most
/// 38.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub enum Value {
    /// SQL `NULL`.
    Null,
    /// A 64-bit integer.
    Int(i64),
    /// A 64-bit float.
    Float(f64),
    /// A string.
    Str(String),
    /// A boolean.
    Bool(bool),
    /// An exact decimal: the unscaled value and the scale (`Decimal(1250, 2)` is `12.50`).
    /// Its [`Value::data_type`] is `DECIMAL(38, scale)`: a value carries no declared precision
    /// (a column's precision is checked when the value is stored or cast).
    Decimal(i128, u8),
    /// A date: days since 1970-01-01.
    Date(i32),
    /// A timestamp: microseconds since 1970-01-01 00:00:00.
    Timestamp(i64),
}

crate::decode::checked_serde!(Value);

impl crate::decode::Checked for Value {
    fn check(&self) -> Result<(), String> {
        match self {
            Value::Decimal(_, scale) if *scale > MAX_DECIMAL_PRECISION => Err(format!(
                "a DECIMAL value of scale {scale}, above {MAX_DECIMAL_PRECISION}"
            )),
            _ => Ok(()),
        }
    }
}

impl Value {
    /// The type of this value, or `None` for `NULL`.
    pub fn data_type(&self) -> Option<DataType> {
        match self {
            Value::Null => None,
            Value::Int(_) => Some(DataType::Int64),
            Value::Float(_) => Some(DataType::Float64),
            Value::Str(_) => Some(DataType::Utf8),
            Value::Bool(_) => Some(DataType::Boolean),
            Value::Decimal(_, s) => Some(DataType::decimal(MAX_DECIMAL_PRECISION, *s)),
            Value::Date(_) => Some(DataType::Date),
            Value::Timestamp(_) => Some(DataType::Timestamp),
        }
    }

    /// Whether this is `NULL`.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The value as an `i64`, if it is an integer.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(v) => Some(*v),
            _ => None,
        }
    }

    /// The value as an `f64`, if it is numeric.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(v) => Some(*v as f64),
            Value::Float(v) => Some(*v),
            Value::Decimal(v, s) => Some(decimal::to_f64(*v, *s)),
            _ => None,
        }
    }

    /// The value as an unscaled decimal at `scale`, if it is an integer or a decimal that
    /// fits an `i128` there (rounding half away from zero when the scale shrinks).
    pub fn as_decimal(&self, scale: u8) -> Option<i128> {
        match self {
            Value::Int(v) => decimal::rescale(i128::from(*v), 0, scale),
            Value::Decimal(v, s) => decimal::rescale(*v, *s, scale),
            _ => None,
        }
    }

    /// The value as a string slice, if it is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The value as a SQL literal, as it would be written in a statement: strings in single
    /// quotes (inner quotes doubled), `NULL`, numbers and booleans as they display.
    pub fn to_sql(&self) -> String {
        match self {
            Value::Str(s) => format!("'{}'", s.replace('\'', "''")),
            Value::Date(_) => format!("DATE '{self}'"),
            Value::Timestamp(_) => format!("TIMESTAMP '{self}'"),
            v => v.to_string(),
        }
    }

    /// Rows compared column by column in [`Value::sort_cmp`]'s order, then by length (to sort
    /// result rows for a comparison that ignores their order).
    ///
    /// ```
    /// use weir_operators::Value;
    /// let mut rows = vec![vec![Value::Int(2)], vec![Value::Null], vec![Value::Int(1)]];
    /// rows.sort_by(|a, b| Value::cmp_rows(a, b));
    /// assert_eq!(rows, vec![vec![Value::Null], vec![Value::Int(1)], vec![Value::Int(2)]]);
    /// ```
    pub fn cmp_rows(a: &[Value], b: &[Value]) -> Ordering {
        a.iter()
            .zip(b)
            .map(|(x, y)| x.sort_cmp(y))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
            .then(a.len().cmp(&b.len()))
    }

    /// SQL ordering for sorting: NULLs compare equal to each other and less than anything else;
    /// integers and floats compare numerically; floats use a total order.
    pub fn sort_cmp(&self, other: &Value) -> Ordering {
        match (self, other) {
            (Value::Null, Value::Null) => Ordering::Equal,
            (Value::Null, _) => Ordering::Less,
            (_, Value::Null) => Ordering::Greater,
            (Value::Int(a), Value::Int(b)) => a.cmp(b),
            (Value::Float(a), Value::Float(b)) => a.total_cmp(b),
            (Value::Int(a), Value::Float(b)) => (*a as f64).total_cmp(b),
            (Value::Float(a), Value::Int(b)) => a.total_cmp(&(*b as f64)),
            (Value::Str(a), Value::Str(b)) => a.cmp(b),
            (Value::Bool(a), Value::Bool(b)) => a.cmp(b),
            (Value::Date(a), Value::Date(b)) => a.cmp(b),
            (Value::Timestamp(a), Value::Timestamp(b)) => a.cmp(b),
            (Value::Date(a), Value::Timestamp(b)) => temporal::date_to_timestamp(*a).cmp(b),
            (Value::Timestamp(a), Value::Date(b)) => a.cmp(&temporal::date_to_timestamp(*b)),
            (Value::Decimal(..), Value::Decimal(..) | Value::Int(_))
            | (Value::Int(_), Value::Decimal(..)) => decimal_cmp(self, other),
            (Value::Decimal(..), Value::Float(_)) | (Value::Float(_), Value::Decimal(..)) => {
                let (a, b) = (self.as_f64().unwrap_or(0.0), other.as_f64().unwrap_or(0.0));
                a.total_cmp(&b)
            }
            (a, b) => type_rank(a).cmp(&type_rank(b)),
        }
    }
}

/// Compares two exact numbers (integers or decimals) at their common scale.
fn decimal_cmp(a: &Value, b: &Value) -> Ordering {
    let scale = |v: &Value| match v {
        Value::Decimal(_, s) => *s,
        _ => 0,
    };
    let s = scale(a).max(scale(b));
    match (a.as_decimal(s), b.as_decimal(s)) {
        (Some(x), Some(y)) => x.cmp(&y),
        // Past the range of an i128 at that scale: compare approximately.
        _ => a
            .as_f64()
            .unwrap_or(0.0)
            .total_cmp(&b.as_f64().unwrap_or(0.0)),
    }
}

fn type_rank(v: &Value) -> u8 {
    match v {
        Value::Null => 0,
        Value::Bool(_) => 1,
        Value::Int(_) | Value::Float(_) | Value::Decimal(..) => 2,
        Value::Str(_) => 3,
        Value::Date(_) | Value::Timestamp(_) => 4,
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("NULL"),
            Value::Int(v) => write!(f, "{v}"),
            Value::Float(v) => write!(f, "{v}"),
            Value::Str(s) => f.write_str(s),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Decimal(v, s) => f.write_str(&decimal::format(*v, *s)),
            Value::Date(d) => f.write_str(&temporal::format_date(*d)),
            Value::Timestamp(t) => f.write_str(&temporal::format_timestamp(*t)),
        }
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Int(v)
    }
}
impl From<i32> for Value {
    fn from(v: i32) -> Self {
        Value::Int(v as i64)
    }
}
impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::Float(v)
    }
}
impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Str(v.to_string())
    }
}
impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::Str(v)
    }
}
impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Value::Bool(v)
    }
}
impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Self {
        v.map_or(Value::Null, Into::into)
    }
}
