//! Typed operand sides: one operand of a binary kernel as a slice of its column's values or
//! as a scalar ([`Side`], [`StrSide`]), converted once per batch to the type the kernel works
//! in, and [`arith_sides`], the checked element-wise loop the arithmetic families share.

use super::val::Val;
use crate::bitmap::Bitmap;
use crate::column::ColumnData;
use crate::types::DataType;
use crate::value::Value;
use crate::{decimal, temporal};
use std::borrow::Cow;

/// One operand of a typed binary kernel: a slice or a scalar.
pub(super) enum Side<'a, T: Clone> {
    Col(Cow<'a, [T]>),
    Scalar(T),
}

impl<T: Copy> Side<'_, T> {
    #[inline]
    pub(super) fn at(&self, i: usize) -> T {
        match self {
            Side::Col(c) => c[i],
            Side::Scalar(s) => *s,
        }
    }
}

/// A BIGINT operand as `i64`s.
pub(super) fn i64_side<'b>(v: &'b Val<'_>) -> Side<'b, i64> {
    match v {
        Val::Col(c) => Side::Col(Cow::Borrowed(c.as_i64().unwrap_or(&[]))),
        Val::Scalar(v, _) => Side::Scalar(v.as_i64().unwrap_or(0)),
    }
}

/// A numeric operand as `f64`s (integers and decimals converted).
pub(super) fn f64_side<'b>(v: &'b Val<'_>) -> Side<'b, f64> {
    match v {
        Val::Col(c) => match &c.data {
            ColumnData::Float64(f) => Side::Col(Cow::Borrowed(f)),
            ColumnData::Int64(i) => Side::Col(Cow::Owned(i.iter().map(|&x| x as f64).collect())),
            ColumnData::Decimal { values, scale, .. } => Side::Col(Cow::Owned(
                values.iter().map(|&x| decimal::to_f64(x, *scale)).collect(),
            )),
            _ => Side::Col(Cow::Owned(Vec::new())),
        },
        Val::Scalar(v, _) => Side::Scalar(v.as_f64().unwrap_or(0.0)),
    }
}

/// An exact numeric operand (integer or decimal) as unscaled values at `scale`; `Err(i)`
/// names a non-NULL row that does not fit an `i128` there.
pub(super) fn i128_side<'b>(
    v: &'b Val<'_>,
    scale: u8,
) -> std::result::Result<Side<'b, i128>, usize> {
    match v {
        Val::Col(c) => {
            let up = |x: i128, from: u8, i: usize| match decimal::rescale(x, from, scale) {
                Some(y) => Ok(y),
                None if c.is_valid(i) => Err(i),
                None => Ok(0),
            };
            match &c.data {
                ColumnData::Decimal {
                    values, scale: s, ..
                } if *s == scale => Ok(Side::Col(Cow::Borrowed(values))),
                ColumnData::Decimal {
                    values, scale: s, ..
                } => Ok(Side::Col(Cow::Owned(
                    values
                        .iter()
                        .enumerate()
                        .map(|(i, &x)| up(x, *s, i))
                        .collect::<std::result::Result<_, _>>()?,
                ))),
                ColumnData::Int64(values) => Ok(Side::Col(Cow::Owned(
                    values
                        .iter()
                        .enumerate()
                        .map(|(i, &x)| up(i128::from(x), 0, i))
                        .collect::<std::result::Result<_, _>>()?,
                ))),
                _ => Ok(Side::Col(Cow::Owned(Vec::new()))),
            }
        }
        Val::Scalar(v, _) => v.as_decimal(scale).map(Side::Scalar).ok_or(0),
    }
}

/// A DATE or TIMESTAMP operand as microseconds (dates at midnight).
pub(super) fn ts_side<'b>(v: &'b Val<'_>) -> Side<'b, i64> {
    match v {
        Val::Col(c) => match &c.data {
            ColumnData::Timestamp(t) => Side::Col(Cow::Borrowed(t)),
            ColumnData::Date(d) => Side::Col(Cow::Owned(
                d.iter().map(|&x| temporal::date_to_timestamp(x)).collect(),
            )),
            _ => Side::Col(Cow::Owned(Vec::new())),
        },
        Val::Scalar(Value::Timestamp(t), _) => Side::Scalar(*t),
        Val::Scalar(Value::Date(d), _) => Side::Scalar(temporal::date_to_timestamp(*d)),
        Val::Scalar(..) => Side::Scalar(0),
    }
}

/// A DATE operand as day numbers.
pub(super) fn date_side<'b>(v: &'b Val<'_>) -> Side<'b, i32> {
    match v {
        Val::Col(c) => Side::Col(Cow::Borrowed(c.as_date().unwrap_or(&[]))),
        Val::Scalar(Value::Date(d), _) => Side::Scalar(*d),
        Val::Scalar(..) => Side::Scalar(0),
    }
}

/// The scale exact arithmetic or comparison of these operand types works at, if both are
/// exact numbers and at least one is a decimal.
pub(super) fn exact_scale(a: DataType, b: DataType) -> Option<u8> {
    let either_decimal =
        matches!(a, DataType::Decimal { .. }) || matches!(b, DataType::Decimal { .. });
    match (a.decimal_scale(), b.decimal_scale()) {
        (Some(x), Some(y)) if either_decimal => Some(x.max(y)),
        _ => None,
    }
}

/// A BOOLEAN operand as `bool`s.
pub(super) fn bool_side<'b>(v: &'b Val<'_>) -> Side<'b, bool> {
    match v {
        Val::Col(c) => Side::Col(Cow::Borrowed(c.as_bool().unwrap_or(&[]))),
        Val::Scalar(Value::Bool(b), _) => Side::Scalar(*b),
        Val::Scalar(..) => Side::Scalar(false),
    }
}

/// A string operand: a column's offsets and bytes, or a scalar.
pub(super) enum StrSide<'b> {
    Col { offsets: &'b [u32], bytes: &'b [u8] },
    Scalar(&'b [u8]),
}

/// A VARCHAR operand as its offsets and bytes.
pub(super) fn str_side<'b>(v: &'b Val<'_>) -> StrSide<'b> {
    match v {
        Val::Col(c) => match &c.data {
            ColumnData::Utf8 { offsets, bytes } => StrSide::Col { offsets, bytes },
            _ => StrSide::Scalar(&[]),
        },
        Val::Scalar(Value::Str(s), _) => StrSide::Scalar(s.as_bytes()),
        Val::Scalar(..) => StrSide::Scalar(&[]),
    }
}

#[inline]
pub(super) fn str_at<'b>(offsets: &[u32], bytes: &'b [u8], i: usize) -> &'b [u8] {
    &bytes[offsets[i] as usize..offsets[i + 1] as usize]
}

/// Runs `f` over the sides; `Err(i)` names the first non-NULL row where `f` failed.
pub(super) fn arith_sides<T: Copy + Default, F: Fn(T, T) -> Option<T>>(
    n: usize,
    l: &Side<T>,
    r: &Side<T>,
    validity: Option<&Bitmap>,
    f: F,
) -> std::result::Result<Vec<T>, usize> {
    let mut out = Vec::with_capacity(n);
    let fail = |i: usize| -> std::result::Result<T, usize> {
        if validity.is_none_or(|v| v.get(i)) {
            Err(i)
        } else {
            Ok(T::default())
        }
    };
    match (l, r) {
        (Side::Col(a), Side::Col(b)) => {
            for (i, (&x, &y)) in a.iter().zip(b.iter()).enumerate() {
                out.push(match f(x, y) {
                    Some(v) => v,
                    None => fail(i)?,
                });
            }
        }
        (Side::Col(a), Side::Scalar(s)) => {
            for (i, &x) in a.iter().enumerate() {
                out.push(match f(x, *s) {
                    Some(v) => v,
                    None => fail(i)?,
                });
            }
        }
        (Side::Scalar(s), Side::Col(b)) => {
            for (i, &y) in b.iter().enumerate() {
                out.push(match f(*s, y) {
                    Some(v) => v,
                    None => fail(i)?,
                });
            }
        }
        (Side::Scalar(a), Side::Scalar(b)) => match f(*a, *b) {
            Some(v) => out.resize(n, v),
            None if n > 0 => return Err(0),
            None => {}
        },
    }
    Ok(out)
}
