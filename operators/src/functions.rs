//! Scalar functions: the [`ScalarFunc`] catalogue (`catalogue`) and its column kernels, here
//! and, by kind, in `strings` (cutting, splitting and joining text), `regex` (regular
//! expressions), `math` (logarithms, trigonometry), `dates` (dates made from numbers) and
//! `compare` (`greatest`, `least`).
//!
//! The planner checks argument counts and types and inserts casts, so a kernel receives
//! arguments of the types it expects, all of one length (scalars broadcast). Every kernel
//! writes through a [`ColumnBuilder`], reading strings as slices of the input buffers, so no
//! row allocates. NULL arguments give NULL results except where noted (`concat` skips NULLs,
//! `coalesce` picks the first non-NULL argument). A function that can make text longer than
//! its input sizes each result before it builds it, and fails past the maximum value size or
//! a 4 GiB column ([`crate::limits`]).

use crate::column::{Column, ColumnBuilder, ColumnData};
use crate::error::{Error, Result};
use crate::types::DataType;
use crate::{decimal, temporal};
use support::{all_valid, datetime_at, s, type_err, TextOut};

mod catalogue;
mod compare;
mod dates;
mod format;
mod math;
mod numbers;
mod regex;
mod regex_find;
mod similar;
mod split;
mod strings;
mod support;
mod to_char;
mod to_char_number;
mod to_date;
mod to_number;

pub use catalogue::{MathFunc, ScalarFunc};
pub use split::{DelimitedParts, PatternParts, Patterns};
pub use to_number::result_decimals as to_number_decimals;

/// `a` shifted left `n` bits (right for a negative `n`), as SQLite.
fn shift_left(a: i64, n: i64) -> i64 {
    match n {
        n if n < 0 => shift_right(a, n.checked_neg().unwrap_or(i64::MAX)),
        n if n >= 64 => 0,
        n => ((a as u64) << n) as i64,
    }
}

/// `a` shifted right `n` bits keeping the sign (left for a negative `n`), as SQLite.
fn shift_right(a: i64, n: i64) -> i64 {
    match n {
        n if n < 0 => shift_left(a, n.checked_neg().unwrap_or(i64::MAX)),
        n if n >= 64 => {
            if a < 0 {
                -1
            } else {
                0
            }
        }
        n => a >> n,
    }
}

/// Applies `f` to the numbers of row `i` of a one-argument numeric function.
fn numeric1(
    func: ScalarFunc,
    args: &[Column],
    n: usize,
    fi: impl Fn(i64) -> Result<i64>,
    ff: impl Fn(f64) -> f64,
) -> Result<Column> {
    let x = &args[0];
    match &x.data {
        ColumnData::Int64(v) => {
            let mut b = ColumnBuilder::new(DataType::Int64, n);
            for (i, &a) in v.iter().enumerate() {
                if x.is_valid(i) {
                    b.push_i64(fi(a)?);
                } else {
                    b.push_null();
                }
            }
            Ok(b.finish())
        }
        ColumnData::Float64(v) => {
            let mut b = ColumnBuilder::new(DataType::Float64, n);
            for (i, &a) in v.iter().enumerate() {
                if x.is_valid(i) {
                    b.push_f64(ff(a));
                } else {
                    b.push_null();
                }
            }
            Ok(b.finish())
        }
        _ => Err(type_err(func, args)),
    }
}

/// `x` cut to `d` decimal digits (`d` may be negative) by `to_whole` (`f64::round`: halves
/// away from zero; `f64::trunc`: toward zero).
fn to_digits(x: f64, d: i64, to_whole: fn(f64) -> f64) -> f64 {
    if d == 0 {
        return to_whole(x);
    }
    let m = 10f64.powi(d.clamp(-30, 30) as i32);
    let r = to_whole(x * m) / m;
    if r.is_finite() {
        r
    } else {
        x
    }
}

/// Integer `x` truncated toward zero to `d` digits (only a negative `d` changes it).
fn trunc_i(x: i64, d: i64) -> Result<i64> {
    if d >= 0 {
        return Ok(x);
    }
    if d < -18 {
        return Ok(0);
    }
    let m = 10i64.pow((-d) as u32);
    Ok(x - x % m)
}

/// Integer `x` rounded half away from zero to `d` digits (only negative `d` changes it).
fn round_i(x: i64, d: i64) -> Result<i64> {
    if d >= 0 {
        return Ok(x);
    }
    if d < -18 {
        return Ok(0);
    }
    let m = 10i64.pow((-d) as u32);
    let rem = x % m;
    let base = x - rem;
    let r = if rem.abs() * 2 >= m {
        base.checked_add(m * rem.signum())
    } else {
        Some(base)
    };
    r.ok_or_else(|| Error::Overflow(format!("BIGINT overflow in round({x}, {d})")))
}

/// Characters to strip for trim functions: `chars` or a space.
fn strip<'a>(mode: ScalarFunc, text: &'a str, chars: &str) -> &'a str {
    let set = |c: char| chars.contains(c);
    match mode {
        ScalarFunc::LTrim => text.trim_start_matches(set),
        ScalarFunc::RTrim => text.trim_end_matches(set),
        _ => text.trim_matches(set),
    }
}

/// `text` padded (or cut) to `len` characters with `fill` repeated, on the left or the
/// right, into `buf` (PostgreSQL's `lpad`/`rpad`); the result's size is checked by `out`
/// before it is built.
fn pad(
    out: &TextOut,
    buf: &mut String,
    text: &str,
    len: i64,
    fill: &str,
    left: bool,
) -> Result<()> {
    buf.clear();
    let len = usize::try_from(len).unwrap_or(0);
    let have = text.chars().count();
    if have >= len || fill.is_empty() {
        let cut = text.char_indices().nth(len).map_or(text.len(), |(b, _)| b);
        buf.push_str(&text[..cut]);
        return Ok(());
    }
    let missing = len - have;
    let fill_chars = fill.chars().count();
    let (whole, part) = (missing / fill_chars, missing % fill_chars);
    let part_bytes = fill.char_indices().nth(part).map_or(fill.len(), |(b, _)| b);
    let bytes = whole
        .checked_mul(fill.len())
        .and_then(|b| b.checked_add(part_bytes + text.len()))
        .unwrap_or(usize::MAX);
    out.fits(bytes)?;
    buf.reserve(bytes);
    if !left {
        buf.push_str(text);
    }
    for _ in 0..whole {
        buf.push_str(fill);
    }
    buf.push_str(&fill[..part_bytes]);
    if left {
        buf.push_str(text);
    }
    Ok(())
}

/// Evaluates `func` over argument columns of `n` rows each; `out` is the result type the
/// planner derived.
pub fn call(func: ScalarFunc, args: &[Column], n: usize, out: DataType) -> Result<Column> {
    use ScalarFunc as F;
    let arity_ok = match func {
        F::Abs | F::Floor | F::Ceil | F::Sqrt | F::Sign | F::Lower | F::Upper | F::Length => {
            args.len() == 1
        }
        F::Round | F::Trim | F::LTrim | F::RTrim => (1..=2).contains(&args.len()),
        F::Substring => (2..=3).contains(&args.len()),
        F::Mod | F::Power | F::StrPos | F::ConcatOp | F::StartsWith | F::NullIf => args.len() == 2,
        F::Replace => args.len() == 3,
        F::Extract | F::ExtractSeconds | F::ExtractMilliseconds | F::DateTrunc => args.len() == 2,
        F::AddInterval => args.len() == 4,
        F::Concat | F::Coalesce => !args.is_empty(),
        F::TooManyRows => args.len() == 1,
        F::Repeat => args.len() == 2,
        F::LPad | F::RPad => (2..=3).contains(&args.len()),
        F::BitAnd | F::BitOr | F::ShiftLeft | F::ShiftRight => args.len() == 2,
        F::BitNot => args.len() == 1,
        F::Left | F::Right => args.len() == 2,
        F::SplitPart => args.len() == 3,
        F::InitCap | F::Reverse | F::Md5 => args.len() == 1,
        F::ToChar | F::ToDate | F::ToTimestampText | F::ToNumber(_) => args.len() == 2,
        F::Format => !args.is_empty(),
        F::QuoteIdent | F::QuoteLiteral | F::QuoteNullable => args.len() == 1,
        F::Gcd | F::Lcm => args.len() == 2,
        F::ToHex => args.len() == 1,
        F::WidthBucket => args.len() == 4,
        F::NumNulls | F::NumNonNulls => !args.is_empty(),
        F::Overlay => (3..=4).contains(&args.len()),
        F::Random | F::ClockTimestamp => args.is_empty(),
        F::ConcatWs => args.len() >= 2,
        F::Greatest | F::Least => !args.is_empty(),
        F::Trunc => (1..=2).contains(&args.len()),
        F::Math(m) => {
            let (fewest, most) = m.arity();
            (fewest..=most).contains(&args.len())
        }
        F::Ascii | F::Chr | F::OctetLength => args.len() == 1,
        F::Translate => args.len() == 3,
        F::RegexpLike => (2..=3).contains(&args.len()),
        F::RegexpReplace => (3..=4).contains(&args.len()),
        F::SimilarToEscape => (1..=2).contains(&args.len()),
        F::RegexpSubstring => args.len() == 2,
        F::RegexpCount => (2..=4).contains(&args.len()),
        F::RegexpSubstr => (2..=6).contains(&args.len()),
        F::RegexpInstr => (2..=7).contains(&args.len()),
        F::MakeDate => args.len() == 3,
        F::MakeTimestamp => args.len() == 6,
        F::ToTimestamp => args.len() == 1,
    };
    if !arity_ok || args.iter().any(|c| c.len() != n) {
        return Err(Error::Internal(format!(
            "function {} called with {} arguments",
            func.name(),
            args.len()
        )));
    }
    // Text, a count, and (padding) text.
    let sized_text = matches!(func, F::Repeat | F::LPad | F::RPad);
    let text = |c: &Column| c.data_type() == DataType::Utf8;
    if sized_text && (!text(&args[0]) || args.get(2).is_some_and(|c| !text(c))) {
        return Err(type_err(func, args));
    }
    let text_args = matches!(
        func,
        F::Lower
            | F::Upper
            | F::Length
            | F::Trim
            | F::LTrim
            | F::RTrim
            | F::Replace
            | F::StrPos
            | F::ConcatOp
            | F::StartsWith
            | F::Concat
            | F::InitCap
            | F::Reverse
            | F::Md5
            | F::ConcatWs
            | F::Ascii
            | F::OctetLength
            | F::Translate
            | F::Format
            | F::QuoteIdent
            | F::QuoteLiteral
            | F::QuoteNullable
    );
    let text_first = matches!(func, F::Left | F::Right | F::SplitPart | F::Overlay);
    if text_first && args[0].data_type() != DataType::Utf8
        || matches!(func, F::SplitPart | F::Overlay) && args[1].data_type() != DataType::Utf8
    {
        return Err(type_err(func, args));
    }
    if text_args && args.iter().any(|c| c.data_type() != DataType::Utf8) {
        return Err(type_err(func, args));
    }
    if let Some((values, scale)) = args.first().and_then(Column::as_decimal) {
        if let Some(col) = decimal_call(func, args, values, scale, n, out)? {
            return Ok(col);
        }
    }
    match func {
        F::Extract | F::ExtractSeconds | F::ExtractMilliseconds | F::DateTrunc => {
            date_part(func, args, n)
        }
        F::AddInterval => add_interval(args, n),
        F::Abs => numeric1(
            func,
            args,
            n,
            |x| {
                x.checked_abs()
                    .ok_or_else(|| Error::Overflow(format!("BIGINT overflow in abs({x})")))
            },
            f64::abs,
        ),
        F::Floor => numeric1(func, args, n, Ok, f64::floor),
        F::Ceil => numeric1(func, args, n, Ok, f64::ceil),
        F::Sign => numeric1(
            func,
            args,
            n,
            |x| Ok(x.signum()),
            |x| {
                if x == 0.0 || x.is_nan() {
                    x
                } else {
                    x.signum()
                }
            },
        ),
        F::Round if args.len() == 1 => numeric1(func, args, n, Ok, f64::round),
        F::Trunc if args.len() == 1 => numeric1(func, args, n, Ok, f64::trunc),
        F::Round | F::Trunc => {
            let whole_i: fn(i64, i64) -> Result<i64> =
                if func == F::Round { round_i } else { trunc_i };
            let whole_f: fn(f64) -> f64 = if func == F::Round {
                f64::round
            } else {
                f64::trunc
            };
            let d = args[1].as_i64().ok_or_else(|| type_err(func, args))?;
            let x = &args[0];
            let mut b = ColumnBuilder::new(x.data_type(), n);
            for i in 0..n {
                if !all_valid(args, i) {
                    b.push_null();
                    continue;
                }
                match &x.data {
                    ColumnData::Int64(v) => b.push_i64(whole_i(v[i], d[i])?),
                    ColumnData::Float64(v) => b.push_f64(to_digits(v[i], d[i], whole_f)),
                    _ => return Err(type_err(func, args)),
                }
            }
            Ok(b.finish())
        }
        F::BitAnd | F::BitOr | F::ShiftLeft | F::ShiftRight | F::BitNot => {
            let a = args[0].as_i64().ok_or_else(|| type_err(func, args))?;
            let b = match args.get(1) {
                Some(c) => Some(c.as_i64().ok_or_else(|| type_err(func, args))?),
                None => None,
            };
            let op: fn(i64, i64) -> i64 = match func {
                F::BitAnd => |a, b| a & b,
                F::BitOr => |a, b| a | b,
                F::ShiftLeft => shift_left,
                F::ShiftRight => shift_right,
                _ => |a, _| !a,
            };
            let mut out = ColumnBuilder::new(DataType::Int64, n);
            for i in 0..n {
                if all_valid(args, i) {
                    out.push_i64(op(a[i], b.map_or(0, |b| b[i])));
                } else {
                    out.push_null();
                }
            }
            Ok(out.finish())
        }
        F::Mod => match (&args[0].data, &args[1].data) {
            (ColumnData::Int64(a), ColumnData::Int64(d)) => {
                let mut b = ColumnBuilder::new(DataType::Int64, n);
                for i in 0..n {
                    if !all_valid(args, i) || d[i] == 0 {
                        b.push_null();
                    } else {
                        // i64::MIN % -1 is 0 mathematically.
                        b.push_i64(a[i].checked_rem(d[i]).unwrap_or(0));
                    }
                }
                Ok(b.finish())
            }
            (ColumnData::Float64(a), ColumnData::Float64(d)) => {
                let mut b = ColumnBuilder::new(DataType::Float64, n);
                for i in 0..n {
                    if !all_valid(args, i) || d[i] == 0.0 {
                        b.push_null();
                    } else {
                        b.push_f64(a[i] % d[i]);
                    }
                }
                Ok(b.finish())
            }
            _ => Err(type_err(func, args)),
        },
        F::Power | F::Sqrt => {
            let a = args[0].as_f64().ok_or_else(|| type_err(func, args))?;
            let e = match args.get(1) {
                Some(c) => Some(c.as_f64().ok_or_else(|| type_err(func, args))?),
                None => None,
            };
            let mut b = ColumnBuilder::new(DataType::Float64, n);
            for i in 0..n {
                if !all_valid(args, i) {
                    b.push_null();
                    continue;
                }
                let x = a[i];
                let r = match e {
                    None if x < 0.0 => {
                        return Err(Error::Arithmetic(
                            "cannot take square root of a negative number".into(),
                        ))
                    }
                    None => x.sqrt(),
                    Some(e) => {
                        if x == 0.0 && e[i] < 0.0 {
                            return Err(Error::DivisionByZero(
                                "zero raised to a negative power is undefined".into(),
                            ));
                        }
                        if x < 0.0 && e[i].fract() != 0.0 {
                            return Err(Error::Arithmetic(
                                "a negative number raised to a non-integer power yields a complex result".into(),
                            ));
                        }
                        x.powf(e[i])
                    }
                };
                if !r.is_finite() && x.is_finite() {
                    return Err(Error::Overflow(format!(
                        "DOUBLE overflow in {}",
                        func.name()
                    )));
                }
                b.push_f64(r);
            }
            Ok(b.finish())
        }
        F::Lower | F::Upper => {
            // Changing case can make a character longer (at most three times), so each
            // result is checked as it is pushed.
            let x = &args[0];
            let mut b = TextOut::new(func, n);
            let mut buf = String::new();
            for i in 0..n {
                if !x.is_valid(i) {
                    b.push_null();
                    continue;
                }
                let t = s(x, i);
                if t.is_ascii() {
                    buf.clear();
                    buf.push_str(t);
                    if func == F::Lower {
                        buf.make_ascii_lowercase();
                    } else {
                        buf.make_ascii_uppercase();
                    }
                    b.push(&buf)?;
                } else if func == F::Lower {
                    b.push(&t.to_lowercase())?;
                } else {
                    b.push(&t.to_uppercase())?;
                }
            }
            Ok(b.finish())
        }
        F::Length => {
            let x = &args[0];
            let mut b = ColumnBuilder::new(DataType::Int64, n);
            for i in 0..n {
                if x.is_valid(i) {
                    b.push_i64(s(x, i).chars().count() as i64);
                } else {
                    b.push_null();
                }
            }
            Ok(b.finish())
        }
        F::Substring => {
            if args[0].data_type() != DataType::Utf8 {
                return Err(type_err(func, args));
            }
            let from = args[1].as_i64().ok_or_else(|| type_err(func, args))?;
            let count = match args.get(2) {
                Some(c) => Some(c.as_i64().ok_or_else(|| type_err(func, args))?),
                None => None,
            };
            let mut b = ColumnBuilder::new(DataType::Utf8, n);
            for i in 0..n {
                if !all_valid(args, i) {
                    b.push_null();
                    continue;
                }
                b.push_str(strings::substring(
                    s(&args[0], i),
                    from[i],
                    count.map(|c| c[i]),
                )?);
            }
            Ok(b.finish())
        }
        F::Trim | F::LTrim | F::RTrim => {
            let mut b = ColumnBuilder::new(DataType::Utf8, n);
            for i in 0..n {
                if !all_valid(args, i) {
                    b.push_null();
                    continue;
                }
                let chars = args.get(1).map_or(" ", |c| s(c, i));
                b.push_str(strip(func, s(&args[0], i), chars));
            }
            Ok(b.finish())
        }
        F::Replace => {
            let mut b = TextOut::new(func, n);
            let mut buf = String::new();
            for i in 0..n {
                if !all_valid(args, i) {
                    b.push_null();
                    continue;
                }
                let (t, from, to) = (s(&args[0], i), s(&args[1], i), s(&args[2], i));
                if from.is_empty() || !t.contains(from) {
                    b.push(t)?;
                    continue;
                }
                if to.len() > from.len() {
                    // It grows: its size, before it is built.
                    let matches = t.matches(from).count();
                    let grown = (to.len() - from.len())
                        .checked_mul(matches)
                        .and_then(|g| g.checked_add(t.len()))
                        .unwrap_or(usize::MAX);
                    b.fits(grown)?;
                }
                buf.clear();
                let mut last = 0;
                for (at, _) in t.match_indices(from) {
                    buf.push_str(&t[last..at]);
                    buf.push_str(to);
                    last = at + from.len();
                }
                buf.push_str(&t[last..]);
                b.push(&buf)?;
            }
            Ok(b.finish())
        }
        F::Repeat => {
            let times = args[1].as_i64().ok_or_else(|| type_err(func, args))?;
            let mut b = TextOut::new(func, n);
            let mut buf = String::new();
            for (i, &k) in times.iter().enumerate() {
                if !all_valid(args, i) {
                    b.push_null();
                    continue;
                }
                let (t, k) = (s(&args[0], i), usize::try_from(k).unwrap_or(0));
                b.fits(t.len().saturating_mul(k))?;
                buf.clear();
                buf.reserve(t.len() * k);
                for _ in 0..k {
                    buf.push_str(t);
                }
                b.push(&buf)?;
            }
            Ok(b.finish())
        }
        F::LPad | F::RPad => {
            let lens = args[1].as_i64().ok_or_else(|| type_err(func, args))?;
            let mut b = TextOut::new(func, n);
            let mut buf = String::new();
            for (i, &len) in lens.iter().enumerate() {
                if !all_valid(args, i) {
                    b.push_null();
                    continue;
                }
                let fill = args.get(2).map_or(" ", |c| s(c, i));
                pad(&b, &mut buf, s(&args[0], i), len, fill, func == F::LPad)?;
                b.push(&buf)?;
            }
            Ok(b.finish())
        }
        F::StrPos => {
            let mut b = ColumnBuilder::new(DataType::Int64, n);
            for i in 0..n {
                if !all_valid(args, i) {
                    b.push_null();
                    continue;
                }
                let (t, sub) = (s(&args[0], i), s(&args[1], i));
                let p = t
                    .find(sub)
                    .map_or(0, |at| t[..at].chars().count() as i64 + 1);
                b.push_i64(p);
            }
            Ok(b.finish())
        }
        F::StartsWith => {
            let mut b = ColumnBuilder::new(DataType::Boolean, n);
            for i in 0..n {
                if all_valid(args, i) {
                    b.push_bool(s(&args[0], i).starts_with(s(&args[1], i)));
                } else {
                    b.push_null();
                }
            }
            Ok(b.finish())
        }
        F::ConcatOp | F::Concat => {
            let mut b = TextOut::new(func, n);
            let mut buf = String::new();
            for i in 0..n {
                if func == F::ConcatOp && !all_valid(args, i) {
                    b.push_null();
                    continue;
                }
                let parts = || args.iter().filter(|c| c.is_valid(i)).map(|c| s(c, i));
                b.fits(parts().map(str::len).fold(0, usize::saturating_add))?;
                buf.clear();
                parts().for_each(|p| buf.push_str(p));
                b.push(&buf)?;
            }
            Ok(b.finish())
        }
        F::Coalesce => {
            if args.iter().any(|c| c.data_type() != out) {
                return Err(type_err(func, args));
            }
            let mut b = ColumnBuilder::new(out, n);
            for i in 0..n {
                match args.iter().find(|c| c.is_valid(i)) {
                    Some(c) => b.push_from(c, i),
                    None => b.push_null(),
                }
            }
            Ok(b.finish())
        }
        F::NullIf => Err(Error::Internal(
            "nullif is evaluated by the expression evaluator".into(),
        )),
        F::TooManyRows if n > 0 => Err(Error::Cardinality(crate::error::TOO_MANY_ROWS.into())),
        F::TooManyRows => Ok(Column::nulls(out, 0)),
        F::Left | F::Right | F::SplitPart | F::InitCap | F::Reverse | F::Md5 | F::ConcatWs => {
            strings::call(func, args, n)
        }
        F::Greatest | F::Least => compare::call(func, args, n, out),
        F::Ascii | F::Chr | F::OctetLength | F::Translate => strings::call(func, args, n),
        F::RegexpLike | F::RegexpReplace | F::RegexpSubstring => regex::call(func, args, n),
        F::SimilarToEscape => similar::call(args, n),
        F::RegexpCount | F::RegexpSubstr | F::RegexpInstr => regex_find::call(func, args, n),
        F::Math(m) => math::call(m, args, n),
        F::MakeDate | F::MakeTimestamp | F::ToTimestamp => dates::call(func, args, n),
        F::ToChar => to_char::call(args, n),
        F::ToDate | F::ToTimestampText => to_date::call(func, args, n),
        F::Format | F::QuoteIdent | F::QuoteLiteral | F::QuoteNullable => {
            format::call(func, args, n)
        }
        F::Gcd | F::Lcm | F::ToHex | F::WidthBucket => numbers::call(func, args, n),
        F::Overlay => strings::call(func, args, n),
        F::ToNumber(_) => to_number::call(args, n, out),
        F::NumNulls | F::NumNonNulls => {
            let nulls = func == F::NumNulls;
            let counts = (0..n)
                .map(|i| args.iter().filter(|c| c.is_valid(i) != nulls).count() as i64)
                .collect();
            Ok(Column::from_i64(counts))
        }
        F::ClockTimestamp => {
            let mut b = ColumnBuilder::new(DataType::Timestamp, n);
            for _ in 0..n {
                b.push_timestamp(crate::temporal::now_micros());
            }
            Ok(b.finish())
        }
        F::Random => {
            // Not seeded by the query: as PostgreSQL's, a new draw each time.
            use rand::RngExt;
            let mut rng = rand::rng();
            let values = (0..n).map(|_| rng.random::<f64>()).collect();
            Ok(Column::from_f64(values))
        }
    }
}

/// The numeric functions on a DECIMAL first argument; `None` for other functions.
fn decimal_call(
    func: ScalarFunc,
    args: &[Column],
    values: &[i128],
    scale: u8,
    n: usize,
    out: DataType,
) -> Result<Option<Column>> {
    use ScalarFunc as F;

    let overflow = |v: i128| {
        Error::Overflow(format!(
            "DECIMAL overflow in {}({})",
            func.name(),
            decimal::format(v, scale)
        ))
    };
    let one = decimal::pow10(scale).unwrap_or(1);
    let f: Box<dyn Fn(usize, i128) -> Result<i128>> = match func {
        F::Abs => Box::new(|_, v| v.checked_abs().ok_or_else(|| overflow(v))),
        F::Sign => Box::new(move |_, v| Ok(v.signum() * one)),
        F::Floor | F::Ceil => {
            let up = func == F::Ceil;
            Box::new(move |_, v| Ok(decimal::floor_ceil(v, scale, up)))
        }
        F::Round if args.len() == 1 => {
            Box::new(move |_, v| decimal::rescale(v, scale, 0).ok_or_else(|| overflow(v)))
        }
        F::Round => {
            let d = args[1].as_i64().ok_or_else(|| type_err(func, args))?;
            Box::new(move |i, v| decimal::round_to(v, scale, d[i]).ok_or_else(|| overflow(v)))
        }
        // Integer division truncates toward zero.
        F::Trunc if args.len() == 1 => Box::new(move |_, v| Ok(v / one)),
        F::Trunc => {
            let d = args[1].as_i64().ok_or_else(|| type_err(func, args))?;
            Box::new(move |i, v| Ok(decimal::trunc_to(v, scale, d[i])))
        }
        F::Mod => {
            let (d, _) = args[1].as_decimal().ok_or_else(|| type_err(func, args))?;
            let mut b = ColumnBuilder::new(out, n);
            for i in 0..n {
                if !all_valid(args, i) || d[i] == 0 {
                    b.push_null();
                } else {
                    b.push_decimal(values[i].checked_rem(d[i]).unwrap_or(0));
                }
            }
            return Ok(Some(b.finish()));
        }
        _ => return Ok(None),
    };
    if !matches!(out, DataType::Decimal { .. }) {
        return Err(type_err(func, args));
    }
    let mut b = ColumnBuilder::new(out, n);
    for (i, &v) in values.iter().enumerate() {
        if all_valid(args, i) {
            b.push_decimal(f(i, v)?);
        } else {
            b.push_null();
        }
    }
    Ok(Some(b.finish()))
}

/// `date_part` (EXTRACT) and `date_trunc`.
fn date_part(func: ScalarFunc, args: &[Column], n: usize) -> Result<Column> {
    let (names, x) = (&args[0], &args[1]);
    let dt = x.data_type();
    if names.data_type() != DataType::Utf8 || !dt.is_temporal() {
        return Err(type_err(func, args));
    }
    let exact = matches!(
        func,
        ScalarFunc::ExtractSeconds | ScalarFunc::ExtractMilliseconds
    );
    let out = match func {
        ScalarFunc::DateTrunc => dt,
        other => other.result_type(&[]),
    };
    let mut b = ColumnBuilder::new(out, n);
    // The part is nearly always one literal for every row: read again only when its text
    // changes.
    let mut last: Option<(&str, temporal::DatePart)> = None;
    for i in 0..n {
        if !all_valid(args, i) {
            b.push_null();
            continue;
        }
        let name = s(names, i);
        let part = match last {
            Some((text, part)) if text == name => part,
            _ => {
                let part = temporal::DatePart::from_name(name).ok_or_else(|| {
                    Error::Type(format!("{} does not know the field '{name}'", func.name()))
                })?;
                last = Some((name, part));
                part
            }
        };
        let t = datetime_at(x, i).ok_or_else(|| Error::Overflow(format!("{} out of range", dt)))?;
        if func == ScalarFunc::Extract {
            b.push_i64(temporal::extract(part, t));
            continue;
        }
        if exact {
            // Microseconds: at scale 6 the seconds, at scale 3 the milliseconds.
            let micros = match part {
                temporal::DatePart::Epoch => t.and_utc().timestamp_micros(),
                _ => temporal::extract(temporal::DatePart::Microsecond, t),
            };
            b.push_decimal(i128::from(micros));
            continue;
        }
        let t = temporal::trunc(part, t)
            .ok_or_else(|| Error::Type(format!("date_trunc does not take the field '{name}'")))?;
        let micros = temporal::from_datetime(t);
        if dt == DataType::Date {
            b.push_date(temporal::timestamp_to_date(micros).unwrap_or_default());
        } else {
            b.push_timestamp(micros);
        }
    }
    Ok(b.finish())
}

/// `add_interval(x, months, days, micros)`.
fn add_interval(args: &[Column], n: usize) -> Result<Column> {
    let func = ScalarFunc::AddInterval;
    let x = &args[0];
    let parts: Vec<&[i64]> = args[1..]
        .iter()
        .map(|c| c.as_i64().ok_or_else(|| type_err(func, args)))
        .collect::<Result<_>>()?;
    let (months, days, micros) = (parts[0], parts[1], parts[2]);
    let out = x.data_type();
    let range = || Error::Overflow(format!("{out} out of range in date arithmetic"));
    let mut b = ColumnBuilder::new(out, n);
    for i in 0..n {
        if !all_valid(args, i) {
            b.push_null();
            continue;
        }
        match &x.data {
            ColumnData::Date(v) if micros[i] == 0 => {
                let d = temporal::add_interval_date(v[i], months[i], days[i]).ok_or_else(range)?;
                b.push_date(d);
            }
            ColumnData::Timestamp(v) => {
                let t = temporal::add_interval_ts(v[i], months[i], days[i], micros[i])
                    .ok_or_else(range)?;
                b.push_timestamp(t);
            }
            _ => return Err(type_err(func, args)),
        }
    }
    Ok(b.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Value;

    fn col(dt: DataType, v: &[Value]) -> Column {
        Column::from_values(dt, v).unwrap()
    }

    fn vals(c: &Column) -> Vec<Value> {
        (0..c.len()).map(|i| c.value(i)).collect()
    }

    #[test]
    fn date_part_reads_each_rows_field_name() {
        let day = |s: &str| Value::Date(crate::temporal::parse_date(s).unwrap());
        let names = col(
            DataType::Utf8,
            &[
                Value::Str("year".into()),
                Value::Str("Month".into()),
                Value::Str("month".into()),
                Value::Null,
                Value::Str("day".into()),
            ],
        );
        let dates = col(
            DataType::Date,
            &[
                day("2024-02-29"),
                day("2024-02-29"),
                day("1999-12-31"),
                day("1999-12-31"),
                day("1999-12-31"),
            ],
        );
        let out = call(
            ScalarFunc::Extract,
            &[names.clone(), dates.clone()],
            5,
            DataType::Int64,
        )
        .unwrap();
        assert_eq!(
            vals(&out),
            [
                Value::Int(2024),
                Value::Int(2),
                Value::Int(12),
                Value::Null,
                Value::Int(31)
            ]
        );
        let wrong = col(
            DataType::Utf8,
            &[Value::Str("year".into()), Value::Str("fortnight".into())],
        );
        let err = call(
            ScalarFunc::Extract,
            &[wrong, dates.slice(0, 2)],
            2,
            DataType::Int64,
        )
        .unwrap_err();
        assert!(err.to_string().contains("fortnight"), "{err}");
    }

    #[test]
    fn rounding() {
        assert_eq!(to_digits(2.5, 0, f64::round), 3.0);
        assert_eq!(to_digits(-2.5, 0, f64::round), -3.0);
        assert_eq!(to_digits(1.2345, 2, f64::round), 1.23);
        assert_eq!(to_digits(1250.0, -2, f64::round), 1300.0);
        assert_eq!(to_digits(-1.2399, 2, f64::trunc), -1.23);
        assert_eq!(to_digits(1299.0, -2, f64::trunc), 1200.0);
        assert_eq!(trunc_i(-1299, -2).unwrap(), -1200);
        assert_eq!(trunc_i(1299, 1).unwrap(), 1299);
        assert_eq!(round_i(1250, -2).unwrap(), 1300);
        assert_eq!(round_i(-1250, -2).unwrap(), -1300);
        assert_eq!(round_i(1249, -2).unwrap(), 1200);
        assert_eq!(round_i(7, 2).unwrap(), 7);
        assert_eq!(round_i(7, -19).unwrap(), 0);
        assert!(round_i(i64::MAX, -1).is_err());
    }

    #[test]
    fn kernels_with_nulls() {
        let s = col(
            DataType::Utf8,
            &["  Hi  ".into(), Value::Null, "".into(), "xxaxx".into()],
        );
        let x = call(
            ScalarFunc::Trim,
            std::slice::from_ref(&s),
            4,
            DataType::Utf8,
        )
        .unwrap();
        assert_eq!(
            vals(&x),
            vec!["Hi".into(), Value::Null, "".into(), "xxaxx".into()]
        );
        let chars = col(DataType::Utf8, &vec!["x".into(); 4]);
        let x = call(ScalarFunc::LTrim, &[s.clone(), chars], 4, DataType::Utf8).unwrap();
        assert_eq!(vals(&x)[3], "axx".into());
        let x = call(
            ScalarFunc::Length,
            std::slice::from_ref(&s),
            4,
            DataType::Int64,
        )
        .unwrap();
        assert_eq!(vals(&x), vec![6.into(), Value::Null, 0.into(), 5.into()]);
        let x = call(
            ScalarFunc::Upper,
            std::slice::from_ref(&s),
            4,
            DataType::Utf8,
        )
        .unwrap();
        assert_eq!(vals(&x)[0], "  HI  ".into());
        let ab = col(
            DataType::Utf8,
            &["a".into(), "b".into(), Value::Null, "x".into()],
        );
        let x = call(
            ScalarFunc::Concat,
            &[s.clone(), ab.clone()],
            4,
            DataType::Utf8,
        )
        .unwrap();
        assert_eq!(
            vals(&x),
            vec!["  Hi  a".into(), "b".into(), "".into(), "xxaxxx".into()]
        );
        let x = call(
            ScalarFunc::ConcatOp,
            &[s.clone(), ab.clone()],
            4,
            DataType::Utf8,
        )
        .unwrap();
        assert_eq!(
            vals(&x),
            vec!["  Hi  a".into(), Value::Null, Value::Null, "xxaxxx".into()]
        );
        let x = call(
            ScalarFunc::StrPos,
            &[s.clone(), ab.clone()],
            4,
            DataType::Int64,
        )
        .unwrap();
        assert_eq!(vals(&x), vec![0.into(), Value::Null, Value::Null, 1.into()]);
        let to = col(DataType::Utf8, &vec!["-".into(); 4]);
        let x = call(
            ScalarFunc::Replace,
            &[s.clone(), ab.clone(), to],
            4,
            DataType::Utf8,
        )
        .unwrap();
        assert_eq!(vals(&x)[3], "--a--".into());
        let x = call(
            ScalarFunc::StartsWith,
            &[s.clone(), ab],
            4,
            DataType::Boolean,
        )
        .unwrap();
        assert_eq!(
            vals(&x),
            vec![false.into(), Value::Null, Value::Null, true.into()]
        );
        let from = col(
            DataType::Int64,
            &[3.into(), 1.into(), Value::Null, 2.into()],
        );
        let x = call(ScalarFunc::Substring, &[s, from], 4, DataType::Utf8).unwrap();
        assert_eq!(
            vals(&x),
            vec!["Hi  ".into(), Value::Null, Value::Null, "xaxx".into()]
        );
    }

    #[test]
    fn numeric_kernels() {
        let i = col(
            DataType::Int64,
            &[(-3).into(), Value::Null, 0.into(), 7.into()],
        );
        let f = col(
            DataType::Float64,
            &[(-2.5).into(), Value::Null, 0.0.into(), 2.25.into()],
        );
        let x = call(
            ScalarFunc::Abs,
            std::slice::from_ref(&i),
            4,
            DataType::Int64,
        )
        .unwrap();
        assert_eq!(vals(&x), vec![3.into(), Value::Null, 0.into(), 7.into()]);
        let x = call(
            ScalarFunc::Sign,
            std::slice::from_ref(&f),
            4,
            DataType::Float64,
        )
        .unwrap();
        assert_eq!(
            vals(&x),
            vec![(-1.0).into(), Value::Null, 0.0.into(), 1.0.into()]
        );
        let x = call(
            ScalarFunc::Floor,
            std::slice::from_ref(&f),
            4,
            DataType::Float64,
        )
        .unwrap();
        assert_eq!(vals(&x)[0], (-3.0).into());
        let x = call(
            ScalarFunc::Ceil,
            std::slice::from_ref(&f),
            4,
            DataType::Float64,
        )
        .unwrap();
        assert_eq!(vals(&x)[0], (-2.0).into());
        let x = call(
            ScalarFunc::Round,
            std::slice::from_ref(&f),
            4,
            DataType::Float64,
        )
        .unwrap();
        assert_eq!(vals(&x)[0], (-3.0).into());
        let three = col(DataType::Int64, &vec![3.into(); 4]);
        let x = call(
            ScalarFunc::Mod,
            &[three.clone(), i.clone()],
            4,
            DataType::Int64,
        )
        .unwrap();
        assert_eq!(vals(&x), vec![0.into(), Value::Null, Value::Null, 3.into()]);
        let x = call(
            ScalarFunc::Sqrt,
            std::slice::from_ref(&f),
            4,
            DataType::Float64,
        );
        assert!(matches!(x, Err(Error::Arithmetic(_))));
        let two = col(DataType::Float64, &vec![2.0.into(); 4]);
        let x = call(ScalarFunc::Power, &[f, two], 4, DataType::Float64).unwrap();
        assert_eq!(
            vals(&x),
            vec![6.25.into(), Value::Null, 0.0.into(), 5.0625.into()]
        );
        let m = col(DataType::Int64, &[i64::MIN.into()]);
        assert!(call(ScalarFunc::Abs, &[m], 1, DataType::Int64).is_err());
        assert!(matches!(
            call(ScalarFunc::Lower, &[i], 4, DataType::Utf8),
            Err(Error::Type(_))
        ));
    }

    #[test]
    fn names_round_trip() {
        for f in [
            ScalarFunc::Abs,
            ScalarFunc::Ceil,
            ScalarFunc::StrPos,
            ScalarFunc::NullIf,
        ] {
            assert_eq!(ScalarFunc::from_name(f.name()), Some(f));
        }
        assert_eq!(ScalarFunc::from_name("CEILING"), Some(ScalarFunc::Ceil));
        assert_eq!(ScalarFunc::from_name("nope"), None);
    }

    #[test]
    fn repeat_and_padding_follow_postgres() {
        let text = |v: &[&str]| {
            col(
                DataType::Utf8,
                &v.iter().map(|&s| s.into()).collect::<Vec<_>>(),
            )
        };
        let ints = |v: &[i64]| Column::from_i64(v.to_vec());
        let s = text(&["ab", "ab", "ab", "héllo", "x"]);
        let r = call(
            ScalarFunc::Repeat,
            &[s.clone(), ints(&[3, 0, -1, 2, 1])],
            5,
            DataType::Utf8,
        );
        let want: Vec<Value> = ["ababab", "", "", "héllohéllo", "x"]
            .map(Value::from)
            .to_vec();
        assert_eq!(vals(&r.unwrap()), want);
        let lens = ints(&[5, 1, 0, 7, 4]);
        let fill = text(&["xy", "xy", "xy", "é", ""]);
        let l = call(
            ScalarFunc::LPad,
            &[s.clone(), lens.clone(), fill.clone()],
            5,
            DataType::Utf8,
        );
        let want: Vec<Value> = ["xyxab", "a", "", "ééhéllo", "x"].map(Value::from).to_vec();
        assert_eq!(vals(&l.unwrap()), want);
        let r = call(
            ScalarFunc::RPad,
            &[s.clone(), lens.clone(), fill],
            5,
            DataType::Utf8,
        );
        let want: Vec<Value> = ["abxyx", "a", "", "hélloéé", "x"].map(Value::from).to_vec();
        assert_eq!(vals(&r.unwrap()), want);
        let spaces = call(ScalarFunc::LPad, &[s, lens], 5, DataType::Utf8).unwrap();
        assert_eq!(spaces.value(0), Value::from("   ab"));
    }

    #[test]
    fn growing_text_stops_at_the_maximum_value_size() {
        use crate::limits::with_max_value_bytes;
        let one = |v: &str| col(DataType::Utf8, &[v.into()]);
        let big = Column::from_i64(vec![i64::MAX]);
        let too_large = |r: Result<Column>| match r {
            Err(Error::ValueTooLarge(m)) => m,
            other => panic!("{other:?}"),
        };
        // Sized before anything is built: a count of i64::MAX allocates nothing.
        let m = too_large(call(
            ScalarFunc::Repeat,
            &[one("ab"), big.clone()],
            1,
            DataType::Utf8,
        ));
        assert!(m.starts_with("repeat would make a value of"), "{m}");
        too_large(call(
            ScalarFunc::LPad,
            &[one("ab"), big.clone(), one("é")],
            1,
            DataType::Utf8,
        ));
        too_large(call(ScalarFunc::RPad, &[one("ab"), big], 1, DataType::Utf8));
        with_max_value_bytes(10, || {
            let r = call(
                ScalarFunc::Replace,
                &[one("aaaa"), one("a"), one("xyz")],
                1,
                DataType::Utf8,
            );
            assert!(too_large(r).contains("12 bytes"));
            let r = call(
                ScalarFunc::Replace,
                &[one("aaaa"), one("a"), one("xy")],
                1,
                DataType::Utf8,
            );
            assert_eq!(r.unwrap().value(0), Value::from("xyxyxyxy"));
            let r = call(
                ScalarFunc::ConcatOp,
                &[one("abcdef"), one("ghijk")],
                1,
                DataType::Utf8,
            );
            too_large(r);
            let r = call(
                ScalarFunc::Concat,
                &[one("abcdef"), one("ghij")],
                1,
                DataType::Utf8,
            );
            assert_eq!(r.unwrap().value(0), Value::from("abcdefghij"));
            // Changing case can grow a value too: 'ß' (2 bytes) is 'SS'... and 'ΐ' grows.
            let r = call(ScalarFunc::Upper, &[one("ΐΐΐΐ")], 1, DataType::Utf8);
            too_large(r);
        });
    }
}
