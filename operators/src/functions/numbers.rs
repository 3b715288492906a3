//! Functions of numbers beyond arithmetic, as PostgreSQL has them: `gcd` and `lcm` of
//! integers, `to_hex` of an integer, and `width_bucket(x, low, high, count)`, the bucket of
//! `x` among `count` equal buckets between `low` and `high`. Integer and decimal buckets are
//! computed exactly (a value on a bucket's lower edge belongs to it, as PostgreSQL's numeric
//! version has it); DOUBLE ones in floating point.

use super::catalogue::ScalarFunc;
use super::support::{all_valid, type_err};
use crate::column::{Column, ColumnBuilder, ColumnData};
use crate::error::{Error, Result};
use crate::types::DataType;

/// Evaluates `gcd`, `lcm`, `to_hex` or `width_bucket` over `n` rows.
pub(super) fn call(func: ScalarFunc, args: &[Column], n: usize) -> Result<Column> {
    match func {
        ScalarFunc::Gcd | ScalarFunc::Lcm => {
            let (Some(a), Some(b)) = (args[0].as_i64(), args[1].as_i64()) else {
                return Err(type_err(func, args));
            };
            let f = if func == ScalarFunc::Gcd { gcd } else { lcm };
            let mut out = ColumnBuilder::new(DataType::Int64, n);
            for i in 0..n {
                if all_valid(args, i) {
                    out.push_i64(f(a[i], b[i])?);
                } else {
                    out.push_null();
                }
            }
            Ok(out.finish())
        }
        ScalarFunc::ToHex => {
            let a = args[0].as_i64().ok_or_else(|| type_err(func, args))?;
            let mut out = ColumnBuilder::new(DataType::Utf8, n);
            let mut buf = String::new();
            for (i, &v) in a.iter().enumerate() {
                if args[0].is_valid(i) {
                    use std::fmt::Write;
                    buf.clear();
                    // A negative value is written as its 64 bits (two's complement).
                    let _ = write!(buf, "{v:x}");
                    out.push_str(&buf);
                } else {
                    out.push_null();
                }
            }
            Ok(out.finish())
        }
        ScalarFunc::WidthBucket => width_bucket(args, n),
        _ => Err(type_err(func, args)),
    }
}

/// The error of a result past BIGINT.
fn out_of_range() -> Error {
    Error::Overflow("bigint out of range".into())
}

/// The greatest common divisor of `a` and `b`, never negative (`gcd(0, 0)` is 0).
fn gcd(a: i64, b: i64) -> Result<i64> {
    let (mut x, mut y) = (a.unsigned_abs(), b.unsigned_abs());
    while y != 0 {
        (x, y) = (y, x % y);
    }
    i64::try_from(x).map_err(|_| out_of_range())
}

/// The least common multiple of `a` and `b`, never negative (0 when either is).
fn lcm(a: i64, b: i64) -> Result<i64> {
    if a == 0 || b == 0 {
        return Ok(0);
    }
    let g = gcd(a, b)?;
    (a / g)
        .checked_mul(b)
        .and_then(i64::checked_abs)
        .ok_or_else(out_of_range)
}

/// `width_bucket(x, low, high, count)` over columns of one numeric type (the planner makes
/// the first three meet) and a BIGINT count.
fn width_bucket(args: &[Column], n: usize) -> Result<Column> {
    let func = ScalarFunc::WidthBucket;
    let counts = args[3].as_i64().ok_or_else(|| type_err(func, args))?;
    // The three values' rows, as integers of one scale or as doubles.
    let exact = |k: usize| Exact::of(&args[k]);
    let values = match (exact(0), exact(1), exact(2)) {
        (Some(x), Some(lo), Some(hi)) => Values::Exact([x, lo, hi]),
        _ => match (args[0].as_f64(), args[1].as_f64(), args[2].as_f64()) {
            (Some(x), Some(lo), Some(hi)) => Values::Float([x, lo, hi]),
            _ => return Err(type_err(func, args)),
        },
    };
    let mut out = ColumnBuilder::new(DataType::Int64, n);
    for (i, &count) in counts.iter().enumerate() {
        if !all_valid(args, i) {
            out.push_null();
            continue;
        }
        if count <= 0 {
            return Err(Error::Arithmetic("count must be greater than zero".into()));
        }
        let bucket = match &values {
            Values::Exact([x, lo, hi]) => exact_bucket(x.at(i), lo.at(i), hi.at(i), count)?,
            Values::Float([x, lo, hi]) => float_bucket(x[i], lo[i], hi[i], count)?,
        };
        out.push_i64(bucket);
    }
    Ok(out.finish())
}

/// The rows of `width_bucket`'s value and bounds.
enum Values<'a> {
    /// Integers, or decimals of one scale.
    Exact([Exact<'a>; 3]),
    /// Doubles.
    Float([&'a [f64]; 3]),
}

/// The rows of an integer or decimal column (decimals of one scale).
enum Exact<'a> {
    /// BIGINT values.
    Int(&'a [i64]),
    /// DECIMAL values, unscaled.
    Decimal(&'a [i128]),
}

impl<'a> Exact<'a> {
    /// The rows of `c`, when it holds integers or decimals.
    fn of(c: &'a Column) -> Option<Self> {
        match &c.data {
            ColumnData::Int64(v) => Some(Exact::Int(v)),
            _ => c.as_decimal().map(|(v, _)| Exact::Decimal(v)),
        }
    }

    /// Row `i` widened to 128 bits.
    fn at(&self, i: usize) -> i128 {
        match self {
            Exact::Int(v) => v[i].into(),
            Exact::Decimal(v) => v[i],
        }
    }
}

/// Where `x` falls when it is outside `low..high` (or `high..low` when the bounds are
/// reversed): 0 before the first bucket, `count + 1` after the last; `None` inside.
fn outside<T: PartialOrd>(x: T, low: T, high: T, count: i64) -> Option<Result<i64>> {
    let (before, after) = if low < high {
        (x < low, x >= high)
    } else {
        (x > low, x <= high)
    };
    if before {
        Some(Ok(0))
    } else if after {
        Some(count.checked_add(1).ok_or_else(out_of_range))
    } else {
        None
    }
}

/// The error of equal bounds.
fn equal_bounds() -> Error {
    Error::Arithmetic("lower bound cannot equal upper bound".into())
}

/// The bucket of `x` for integers or decimals of one scale, computed exactly.
fn exact_bucket(x: i128, low: i128, high: i128, count: i64) -> Result<i64> {
    if low == high {
        return Err(equal_bounds());
    }
    if let Some(edge) = outside(x, low, high, count) {
        return edge;
    }
    // Inside the range, both differences have the sign of (high - low): made positive.
    let (along, width) = if low < high {
        (x.checked_sub(low), high.checked_sub(low))
    } else {
        (low.checked_sub(x), low.checked_sub(high))
    };
    let exact = along
        .zip(width)
        .and_then(|(a, w)| Some(a.checked_mul(i128::from(count))? / w));
    match exact {
        // along < width, so the quotient is below count and fits.
        Some(q) => Ok(q as i64 + 1),
        // Past 128 bits: in floating point, kept inside the buckets.
        None => {
            let (a, w) = (along.unwrap_or(i128::MAX), width.unwrap_or(i128::MAX));
            let q = (a as f64 / w as f64 * count as f64) as i64;
            Ok(q.clamp(0, count - 1) + 1)
        }
    }
}

/// The bucket of `x` in DOUBLE.
fn float_bucket(x: f64, low: f64, high: f64, count: i64) -> Result<i64> {
    if x.is_nan() || low.is_nan() || high.is_nan() {
        return Err(Error::Arithmetic(
            "operand, lower bound, and upper bound cannot be NaN".into(),
        ));
    }
    if !low.is_finite() || !high.is_finite() {
        return Err(Error::Arithmetic(
            "lower and upper bounds must be finite".into(),
        ));
    }
    if low == high {
        return Err(equal_bounds());
    }
    if let Some(edge) = outside(x, low, high, count) {
        return edge;
    }
    // As PostgreSQL 15 computes it (the same buckets for the same doubles), halved when the
    // width overflows; rounding can reach `count` just below the upper bound.
    let part = |from: f64, to: f64, along: f64| {
        if (to - from).is_finite() {
            (along - from) / (to - from)
        } else {
            (along / 2.0 - from / 2.0) / (to / 2.0 - from / 2.0)
        }
    };
    let fraction = if low < high {
        part(low, high, x)
    } else {
        // Counted from `low` downwards: the same fraction of the mirrored range.
        part(-low, -high, -x)
    };
    let q = (count as f64 * fraction) as i64;
    Ok(q.clamp(0, count - 1) + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gcd_and_lcm_are_never_negative_and_overflow_is_an_error() {
        assert_eq!(gcd(12, 18), Ok(6));
        assert_eq!(gcd(-12, 0), Ok(12));
        assert_eq!(gcd(0, 0), Ok(0));
        assert_eq!(gcd(i64::MIN, 6), Ok(2));
        assert!(gcd(i64::MIN, 0).is_err());
        assert_eq!(lcm(4, -6), Ok(12));
        assert_eq!(lcm(0, 5), Ok(0));
        assert!(lcm(i64::MAX, i64::MAX - 1).is_err());
    }

    #[test]
    fn buckets_put_edges_in_the_bucket_they_open() {
        // 5 buckets of 2 over 0..10.
        assert_eq!(exact_bucket(2, 0, 10, 5), Ok(2));
        assert_eq!(exact_bucket(0, 0, 10, 5), Ok(1));
        assert_eq!(exact_bucket(-1, 0, 10, 5), Ok(0));
        assert_eq!(exact_bucket(10, 0, 10, 5), Ok(6));
        // Reversed bounds count from `low` downwards.
        assert_eq!(exact_bucket(5, 10, 0, 5), Ok(3));
        assert_eq!(exact_bucket(0, 10, 0, 5), Ok(6));
        assert_eq!(float_bucket(0.3, 0.0, 0.9, 3), Ok(2));
        assert!(exact_bucket(1, 3, 3, 2).is_err());
        assert!(float_bucket(f64::NAN, 0.0, 1.0, 2).is_err());
        assert_eq!(exact_bucket(i128::MAX, 0, i128::MAX, 4), Ok(5));
        assert_eq!(exact_bucket(i128::MAX - 1, i128::MIN, i128::MAX, 4), Ok(4));
    }
}
