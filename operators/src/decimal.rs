//! Exact fixed-point numbers: the helpers behind `DECIMAL(p, s)`.
//!
//! A decimal value is an unscaled `i128` plus the scale of its type: `12.50` in a
//! `DECIMAL(5,2)` column is `1250`. Arithmetic is done on the unscaled integers after bringing
//! both operands to a common scale; every step is checked, so an overflow is an error and
//! never a wrong answer. Rounding, wherever a scale shrinks, is half away from zero.

use crate::types::MAX_DECIMAL_PRECISION;

/// `10^n` as an `i128`, or `None` past `10^38`.
pub fn pow10(n: u8) -> Option<i128> {
    10i128.checked_pow(u32::from(n))
}

/// `v` at scale `from` converted to scale `to`: multiplied up exactly (`None` on overflow)
/// or divided down rounding half away from zero.
pub fn rescale(v: i128, from: u8, to: u8) -> Option<i128> {
    if to >= from {
        return v.checked_mul(pow10(to - from)?);
    }
    let Some(m) = pow10(from - to) else {
        // Shrinking by more than 38 digits: every i128 rounds to 0.
        return Some(0);
    };
    let q = v / m;
    let r = v % m;
    if r.unsigned_abs() * 2 >= m.unsigned_abs() {
        q.checked_add(v.signum())
    } else {
        Some(q)
    }
}

/// Whether unscaled `v` has at most `precision` digits.
pub fn fits(v: i128, precision: u8) -> bool {
    match pow10(precision) {
        Some(limit) => v.unsigned_abs() < limit.unsigned_abs(),
        None => true,
    }
}

/// The number of decimal digits of `v` (1 for 0).
pub fn digits(v: i128) -> u8 {
    let mut n = 1u8;
    let mut x = v.unsigned_abs() / 10;
    while x > 0 {
        n += 1;
        x /= 10;
    }
    n
}

/// A decimal numeral split into its parts: sign, digits and the count of them after the
/// point. Accepts `[+-]digits[.digits]` and `[+-].digits`, surrounding spaces ignored.
struct Numeral<'a> {
    negative: bool,
    int: &'a str,
    frac: &'a str,
}

fn split(text: &str) -> Option<Numeral<'_>> {
    let t = text.trim();
    let (negative, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let (int, frac) = t.split_once('.').unwrap_or((t, ""));
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (int.is_empty() && frac.is_empty()) || !all_digits(int) || !all_digits(frac) {
        return None;
    }
    Some(Numeral {
        negative,
        int,
        frac,
    })
}

/// Parses a numeral to an unscaled value at `scale`, rounding extra fraction digits half
/// away from zero. `None` if the text is not a plain decimal numeral or does not fit an
/// `i128`.
pub fn parse(text: &str, scale: u8) -> Option<i128> {
    let n = split(text)?;
    // Rounding half away from zero needs only the first dropped digit.
    let keep = n.frac.len().min(usize::from(scale) + 1);
    let frac = &n.frac[..keep];
    let mut v: i128 = 0;
    for b in n.int.bytes().chain(frac.bytes()) {
        v = v.checked_mul(10)?.checked_add(i128::from(b - b'0'))?;
    }
    let written = u8::try_from(frac.len()).ok()?;
    let v = if n.negative { -v } else { v };
    rescale(v, written, scale)
}

/// Parses a numeral to `(unscaled, precision, scale)` with the scale it was written with
/// (`0.060` has scale 3), as a SQL literal is typed. `None` if it is not a plain numeral or
/// needs more than 38 digits.
pub fn parse_literal(text: &str) -> Option<(i128, u8, u8)> {
    let n = split(text)?;
    let scale = u8::try_from(n.frac.len()).ok()?;
    if scale > MAX_DECIMAL_PRECISION {
        return None;
    }
    let v = parse(text, scale)?;
    let int_digits = n.int.trim_start_matches('0').len();
    let precision = u8::try_from(int_digits).ok()?.checked_add(scale)?.max(1);
    (precision <= MAX_DECIMAL_PRECISION).then_some((v, precision, scale))
}

/// Formats unscaled `v` at `scale` with exactly `scale` fraction digits (`1250`, 2 →
/// `12.50`).
pub fn format(v: i128, scale: u8) -> String {
    let digits = v.unsigned_abs().to_string();
    let sign = if v < 0 { "-" } else { "" };
    let s = usize::from(scale);
    if s == 0 {
        return format!("{sign}{digits}");
    }
    let padded = if digits.len() <= s {
        format!("{}{digits}", "0".repeat(s + 1 - digits.len()))
    } else {
        digits
    };
    let (int, frac) = padded.split_at(padded.len() - s);
    format!("{sign}{int}.{frac}")
}

/// The value as the nearest `f64`.
pub fn to_f64(v: i128, scale: u8) -> f64 {
    if scale == 0 {
        return v as f64;
    }
    // Exact for |v| < 2^53 and scale <= 22 (both operands exact, one rounding); otherwise
    // the shortest round trip through text is the correctly rounded answer.
    if v.unsigned_abs() < (1u128 << 53) && scale <= 22 {
        return v as f64 / 10f64.powi(i32::from(scale));
    }
    format(v, scale).parse().unwrap_or(f64::NAN)
}

/// `f` as an unscaled value at `scale`, rounded half away from zero; `None` for NaN,
/// infinities and values that do not fit an `i128`.
pub fn from_f64(f: f64, scale: u8) -> Option<i128> {
    if !f.is_finite() {
        return None;
    }
    // Rust prints the shortest text that reads back as `f`; parsing it is exact.
    // Display never uses an exponent, so this is a plain numeral.
    parse(&format!("{f}"), scale)
}

/// Unscaled `v` at `scale` rounded to `digits` fraction digits (negative rounds left of the
/// point), staying at `scale`: `round(12.345, 1)` at scale 3 is `12.300`. `None` on
/// overflow.
pub fn round_to(v: i128, scale: u8, digits: i64) -> Option<i128> {
    if digits >= i64::from(scale) {
        return Some(v);
    }
    let drop = i64::from(scale) - digits;
    let Ok(drop) = u8::try_from(drop) else {
        return Some(0);
    };
    if drop > MAX_DECIMAL_PRECISION {
        return Some(0);
    }
    let r = rescale(v, drop, 0)?;
    r.checked_mul(pow10(drop)?)
}

/// Unscaled `v` at `scale` truncated toward zero to `digits` fraction digits (negative cuts
/// left of the point), staying at `scale`: `trunc(12.345, 1)` at scale 3 is `12.300`.
pub fn trunc_to(v: i128, scale: u8, digits: i64) -> i128 {
    if digits >= i64::from(scale) {
        return v;
    }
    let drop = i64::from(scale) - digits;
    match u8::try_from(drop).ok().and_then(pow10) {
        Some(m) => v - v % m,
        None => 0,
    }
}

/// `floor` (`up == false`) or `ceil` of unscaled `v` at `scale`, as an unscaled value at
/// scale 0.
pub fn floor_ceil(v: i128, scale: u8, up: bool) -> i128 {
    let Some(m) = pow10(scale) else {
        return 0;
    };
    let q = v / m;
    let r = v % m;
    match (r == 0, up, v < 0) {
        (true, _, _) => q,
        (false, true, false) => q + 1,
        (false, false, true) => q - 1,
        _ => q,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_format_keep_the_scale() {
        assert_eq!(parse("12.5", 2), Some(1250));
        assert_eq!(format(1250, 2), "12.50");
        assert_eq!(format(-5, 2), "-0.05");
        assert_eq!(format(7, 0), "7");
        assert_eq!(parse(" -0.005 ", 2), Some(-1), "half away from zero");
        assert_eq!(parse("0.004", 2), Some(0));
        assert_eq!(parse(".5", 1), Some(5));
        assert_eq!(parse("1.", 0), Some(1));
        assert_eq!(parse("abc", 2), None);
        assert_eq!(parse("1e3", 2), None);
        assert_eq!(parse("", 2), None);
        assert_eq!(parse("-", 2), None);
        assert_eq!(parse_literal("0.06"), Some((6, 2, 2)));
        assert_eq!(parse_literal("123.450"), Some((123450, 6, 3)));
        assert_eq!(parse_literal("1".repeat(39).as_str()), None);
    }

    #[test]
    fn rescaling_rounds_half_away_from_zero_and_checks_overflow() {
        assert_eq!(rescale(125, 2, 1), Some(13));
        assert_eq!(rescale(-125, 2, 1), Some(-13));
        assert_eq!(rescale(124, 2, 1), Some(12));
        assert_eq!(rescale(12, 1, 3), Some(1200));
        assert_eq!(rescale(i128::MAX / 10, 0, 2), None);
        assert!(fits(99999, 5));
        assert!(!fits(100000, 5));
        assert!(fits(-99999, 5));
        assert_eq!(digits(0), 1);
        assert_eq!(digits(-12345), 5);
    }

    #[test]
    fn float_conversions() {
        assert_eq!(to_f64(1250, 2), 12.5);
        assert_eq!(to_f64(1, 1), 0.1);
        assert_eq!(from_f64(0.1, 2), Some(10));
        assert_eq!(from_f64(2.675, 2), Some(268), "2.675 is written 2.675");
        assert_eq!(from_f64(f64::NAN, 2), None);
        assert_eq!(from_f64(1e300, 2), None);
        assert_eq!(from_f64(1e-300, 2), Some(0));
    }

    #[test]
    fn rounding_helpers() {
        assert_eq!(round_to(12345, 3, 1), Some(12300));
        assert_eq!(round_to(12355, 3, 2), Some(12360));
        assert_eq!(round_to(123456, 2, -2), Some(120000));
        assert_eq!(round_to(12345, 3, 5), Some(12345));
        assert_eq!(floor_ceil(-125, 2, false), -2);
        assert_eq!(floor_ceil(-125, 2, true), -1);
        assert_eq!(floor_ceil(125, 2, true), 2);
        assert_eq!(floor_ceil(200, 2, true), 2);
    }

    #[test]
    fn exact_sum_that_floats_get_wrong() {
        // 0.1 + 0.2 is 0.30000000000000004 in f64, exactly 0.3 here.
        let a = parse("0.1", 1).unwrap_or_default();
        let b = parse("0.2", 1).unwrap_or_default();
        assert_eq!(format(a + b, 1), "0.3");
        assert_ne!(0.1f64 + 0.2, 0.3);
    }
}
