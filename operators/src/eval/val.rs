//! What evaluation computes between operators: [`Val`], a column (borrowed from the batch
//! when the expression is a plain column reference) or a scalar, and the helpers every
//! expression family shares to build, broadcast and combine them.

use crate::bitmap::Bitmap;
use crate::column::{Column, ColumnData};
use crate::error::{Error, Result};
use crate::temporal;
use crate::types::DataType;
use crate::value::Value;
use std::borrow::Cow;

/// An intermediate result: a column or a scalar with its (possibly unknown, for NULL) type.
#[derive(Debug)]
pub(super) enum Val<'a> {
    /// A column of the batch's length, borrowed from the batch or computed.
    Col(Cow<'a, Column>),
    /// One value for every row, with its type (`None` for an untyped NULL).
    Scalar(Value, Option<DataType>),
}

impl Val<'_> {
    /// The value's type (`None` for an untyped NULL).
    pub(super) fn dt(&self) -> Option<DataType> {
        match self {
            Val::Col(c) => Some(c.data_type()),
            Val::Scalar(_, dt) => *dt,
        }
    }

    /// Whether this is a scalar rather than a column.
    pub(super) fn is_scalar(&self) -> bool {
        matches!(self, Val::Scalar(..))
    }

    /// Whether this is a NULL scalar.
    pub(super) fn is_null_scalar(&self) -> bool {
        matches!(self, Val::Scalar(Value::Null, _))
    }

    /// A column's validity bitmap (`None`: every row is valid, or a scalar).
    pub(super) fn validity(&self) -> Option<&Bitmap> {
        match self {
            Val::Col(c) => c.validity.as_ref(),
            Val::Scalar(..) => None,
        }
    }

    /// The value as a column of `n` rows (broadcasting scalars).
    pub(super) fn into_column(self, n: usize, default: DataType) -> Column {
        match self {
            Val::Col(c) => c.into_owned(),
            Val::Scalar(v, dt) => broadcast(&v, dt.unwrap_or(default), n),
        }
    }
}

/// A scalar of `v`'s own type.
pub(super) fn scalar<'a>(v: Value) -> Val<'a> {
    let dt = v.data_type();
    Val::Scalar(v, dt)
}

/// A NULL scalar of type `dt`.
pub(super) fn null_of<'a>(dt: Option<DataType>) -> Val<'a> {
    Val::Scalar(Value::Null, dt)
}

/// A computed column.
pub(super) fn owned<'a>(c: Column) -> Val<'a> {
    Val::Col(Cow::Owned(c))
}

/// Turns a one-row result back into a scalar.
pub(super) fn to_scalar<'a>(v: Val<'_>) -> Val<'a> {
    match v {
        Val::Scalar(v, dt) => Val::Scalar(v, dt),
        Val::Col(c) => Val::Scalar(c.value(0), Some(c.data_type())),
    }
}

/// Broadcasts a scalar to a one-row column (so scalar-only expressions reuse column kernels).
pub(super) fn lift<'a>(v: Val<'_>) -> Val<'a> {
    match v {
        Val::Scalar(v, dt) => owned(broadcast(&v, dt.unwrap_or(DataType::Int64), 1)),
        Val::Col(c) => owned(c.into_owned()),
    }
}

/// A column of `n` copies of `v` of type `dt`.
pub(crate) fn broadcast(v: &Value, dt: DataType, n: usize) -> Column {
    let data = match (v, dt) {
        (Value::Null, _) => {
            let data = match dt {
                DataType::Int64 => ColumnData::Int64(vec![0; n]),
                DataType::Float64 => ColumnData::Float64(vec![0.0; n]),
                DataType::Boolean => ColumnData::Boolean(vec![false; n]),
                DataType::Utf8 => ColumnData::Utf8 {
                    offsets: vec![0; n + 1],
                    bytes: Vec::new(),
                },
                DataType::Decimal { precision, scale } => ColumnData::Decimal {
                    values: vec![0; n],
                    precision,
                    scale,
                },
                DataType::Date => ColumnData::Date(vec![0; n]),
                DataType::Timestamp => ColumnData::Timestamp(vec![0; n]),
            };
            return Column::with_validity(data, Some(Bitmap::new(n, false)));
        }
        (Value::Int(_) | Value::Decimal(..), DataType::Decimal { precision, scale }) => {
            match v.as_decimal(scale) {
                Some(x) => ColumnData::Decimal {
                    values: vec![x; n],
                    precision,
                    scale,
                },
                None => return broadcast(&Value::Null, dt, n),
            }
        }
        (Value::Decimal(x, s), _) => ColumnData::Decimal {
            values: vec![*x; n],
            precision: crate::types::MAX_DECIMAL_PRECISION,
            scale: *s,
        },
        (Value::Date(d), DataType::Timestamp) => {
            ColumnData::Timestamp(vec![temporal::date_to_timestamp(*d); n])
        }
        (Value::Date(d), _) => ColumnData::Date(vec![*d; n]),
        (Value::Timestamp(t), _) => ColumnData::Timestamp(vec![*t; n]),
        (Value::Int(i), DataType::Float64) => ColumnData::Float64(vec![*i as f64; n]),
        (Value::Int(i), _) => ColumnData::Int64(vec![*i; n]),
        (Value::Float(f), _) => ColumnData::Float64(vec![*f; n]),
        (Value::Bool(b), _) => ColumnData::Boolean(vec![*b; n]),
        (Value::Str(s), _) => {
            let len = s.len() as u32;
            ColumnData::Utf8 {
                offsets: (0..=n as u32).map(|i| i * len).collect(),
                bytes: s.as_bytes().repeat(n),
            }
        }
    };
    Column::new(data)
}

/// A type's name in error messages (`NULL` for an untyped NULL).
pub(super) fn type_name(dt: Option<DataType>) -> String {
    dt.map_or_else(|| "NULL".to_string(), |t| t.to_string())
}

/// AND of two optional validity bitmaps.
pub(super) fn and_validity(a: Option<&Bitmap>, b: Option<&Bitmap>) -> Option<Bitmap> {
    match (a, b) {
        (None, None) => None,
        (Some(a), None) => Some(a.clone()),
        (None, Some(b)) => Some(b.clone()),
        (Some(a), Some(b)) => Some(a.and(b)),
    }
}

/// Converts a boolean column into a TRUE-only mask.
pub(super) fn column_to_mask(c: Cow<'_, Column>) -> Result<Vec<bool>> {
    let c = c.into_owned();
    let Column { data, validity } = c;
    let ColumnData::Boolean(mut values) = data else {
        return Err(Error::Type(format!(
            "predicate must be BOOLEAN, got {}",
            Column::new(data).data_type()
        )));
    };
    if let Some(v) = validity {
        for (i, b) in values.iter_mut().enumerate() {
            *b &= v.get(i);
        }
    }
    Ok(values)
}
