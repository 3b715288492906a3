//! Text functions that cut, split, join, translate and measure strings, as PostgreSQL has
//! them: `left`, `right`, `split_part`, `initcap`, `reverse`, `concat_ws`, `translate`,
//! `chr`, `ascii`, `octet_length`, `md5` and `overlay`. Each reads its arguments as slices
//! of the input columns and builds its result through [`TextOut`], so a result is checked
//! against the maximum value size before it is stored. [`substring`] cuts text by
//! character positions for `substring` and `overlay`.

use super::catalogue::ScalarFunc;
use super::support::{all_valid, s, type_err, TextOut};
use crate::column::{Column, ColumnBuilder};
use crate::error::{Error, Result};
use crate::types::DataType;
use md5::{Digest, Md5};
use std::fmt::Write;

/// PostgreSQL's `substring(s FROM start FOR count)`, on characters.
pub(super) fn substring(text: &str, start: i64, count: Option<i64>) -> Result<&str> {
    let end = match count {
        Some(c) if c < 0 => {
            return Err(Error::Arithmetic(
                "negative substring length not allowed".into(),
            ))
        }
        Some(c) => Some(start.saturating_add(c)),
        None => None,
    };
    let from = start.max(1) as usize - 1;
    let to = match end {
        Some(e) if e <= 1 => return Ok(""),
        Some(e) => Some(e as usize - 1),
        None => None,
    };
    let byte_at = |k: usize| text.char_indices().nth(k).map_or(text.len(), |(b, _)| b);
    let b0 = byte_at(from);
    let b1 = to.map_or(text.len(), |t| if t <= from { b0 } else { byte_at(t) });
    Ok(&text[b0..b1.max(b0)])
}

/// `t` with `count` characters from `start` replaced by `placed`, into `buf`, as
/// PostgreSQL's `overlay`: the text before `start` (an error for `start` below 1, whose
/// length would be negative), `placed`, and the text from `start + count` on.
fn overlay(t: &str, placed: &str, start: i64, count: i64, buf: &mut String) -> Result<()> {
    let resume = start
        .checked_add(count)
        .ok_or_else(|| Error::Overflow("integer out of range".into()))?;
    let before = substring(t, 1, Some(start.saturating_sub(1)))?;
    let after = substring(t, resume, None)?;
    buf.clear();
    buf.push_str(before);
    buf.push_str(placed);
    buf.push_str(after);
    Ok(())
}

/// The first `n` characters of `t` (all but the last `-n` when `n` is negative), or the last
/// `n` (all but the first `-n`) for `from_end`: PostgreSQL's `left` and `right`.
fn cut(t: &str, n: i64, from_end: bool) -> &str {
    let chars = t.chars().count() as i64;
    let keep = if n >= 0 {
        n.min(chars)
    } else {
        (chars + n).max(0)
    };
    let skip = if from_end { chars - keep } else { 0 };
    let start = t
        .char_indices()
        .nth(skip as usize)
        .map_or(t.len(), |(b, _)| b);
    let end = t
        .char_indices()
        .nth((skip + keep) as usize)
        .map_or(t.len(), |(b, _)| b);
    &t[start..end]
}

/// Field `n` (from 1; from the end when negative) of `t` split at `delim`, or "" when there
/// is no such field: PostgreSQL's `split_part` (an empty delimiter leaves `t` one field).
fn field<'a>(t: &'a str, delim: &str, n: i64) -> Result<&'a str> {
    if n == 0 {
        return Err(Error::Arithmetic(
            "split_part: field position must not be zero".into(),
        ));
    }
    if delim.is_empty() {
        return Ok(if n == 1 || n == -1 { t } else { "" });
    }
    let picked = if n > 0 {
        t.split(delim).nth((n - 1) as usize)
    } else {
        t.rsplit(delim).nth((-n - 1) as usize)
    };
    Ok(picked.unwrap_or(""))
}

/// `t` with the first letter of each word upper case and the others lower case (a word is
/// a run of letters and digits), into `buf`: PostgreSQL's `initcap`.
fn initcap(t: &str, buf: &mut String) {
    buf.clear();
    let mut in_word = false;
    for c in t.chars() {
        if in_word {
            buf.extend(c.to_lowercase());
        } else {
            buf.extend(c.to_uppercase());
        }
        in_word = c.is_alphanumeric();
    }
}

/// The character of code point `code`, or why there is none (as PostgreSQL words it).
fn character(code: i64) -> Result<char> {
    if code == 0 {
        return Err(Error::Arithmetic("null character not permitted".into()));
    }
    if code < 0 {
        return Err(Error::Arithmetic(
            "character number must be positive".into(),
        ));
    }
    u32::try_from(code)
        .ok()
        .and_then(char::from_u32)
        .ok_or_else(|| Error::Arithmetic(format!("requested character {code} is not a character")))
}

/// Evaluates one of this module's functions over `args` (types checked by the planner) of
/// `n` rows each.
pub(super) fn call(func: ScalarFunc, args: &[Column], n: usize) -> Result<Column> {
    use ScalarFunc as F;
    if matches!(func, F::Ascii | F::OctetLength) {
        let mut b = ColumnBuilder::new(DataType::Int64, n);
        for i in 0..n {
            if !args[0].is_valid(i) {
                b.push_null();
                continue;
            }
            let t = s(&args[0], i);
            b.push_i64(match func {
                F::Ascii => t.chars().next().map_or(0, |c| i64::from(u32::from(c))),
                _ => t.len() as i64,
            });
        }
        return Ok(b.finish());
    }
    let mut out = TextOut::new(func, n);
    let mut buf = String::new();
    match func {
        F::Left | F::Right => {
            let counts = args[1].as_i64().ok_or_else(|| type_err(func, args))?;
            for (i, &k) in counts.iter().enumerate() {
                if all_valid(args, i) {
                    out.push(cut(s(&args[0], i), k, func == F::Right))?;
                } else {
                    out.push_null();
                }
            }
        }
        F::SplitPart => {
            let fields = args[2].as_i64().ok_or_else(|| type_err(func, args))?;
            for (i, &k) in fields.iter().enumerate() {
                if all_valid(args, i) {
                    out.push(field(s(&args[0], i), s(&args[1], i), k)?)?;
                } else {
                    out.push_null();
                }
            }
        }
        F::InitCap | F::Reverse | F::Md5 => {
            for i in 0..n {
                if !args[0].is_valid(i) {
                    out.push_null();
                    continue;
                }
                let t = s(&args[0], i);
                buf.clear();
                match func {
                    F::InitCap => initcap(t, &mut buf),
                    F::Reverse => buf.extend(t.chars().rev()),
                    _ => {
                        for byte in Md5::digest(t.as_bytes()) {
                            // Writing to a String cannot fail.
                            let _ = write!(buf, "{byte:02x}");
                        }
                    }
                }
                out.push(&buf)?;
            }
        }
        F::Chr => {
            let codes = args[0].as_i64().ok_or_else(|| type_err(func, args))?;
            for (i, &code) in codes.iter().enumerate() {
                if !args[0].is_valid(i) {
                    out.push_null();
                    continue;
                }
                buf.clear();
                buf.push(character(code)?);
                out.push(&buf)?;
            }
        }
        F::Translate => {
            for i in 0..n {
                if !all_valid(args, i) {
                    out.push_null();
                    continue;
                }
                let (from, to) = (s(&args[1], i), s(&args[2], i));
                buf.clear();
                for c in s(&args[0], i).chars() {
                    match from.chars().position(|f| f == c) {
                        Some(k) => buf.extend(to.chars().nth(k)),
                        None => buf.push(c),
                    }
                }
                out.push(&buf)?;
            }
        }
        F::Overlay => {
            let starts = args[2].as_i64().ok_or_else(|| type_err(func, args))?;
            let counts = match args.get(3) {
                Some(c) => Some(c.as_i64().ok_or_else(|| type_err(func, args))?),
                None => None,
            };
            for (i, &start) in starts.iter().enumerate() {
                if !all_valid(args, i) {
                    out.push_null();
                    continue;
                }
                let (t, placed) = (s(&args[0], i), s(&args[1], i));
                let count = counts.map_or_else(|| placed.chars().count() as i64, |c| c[i]);
                overlay(t, placed, start, count, &mut buf)?;
                out.push(&buf)?;
            }
        }
        F::ConcatWs => {
            // A NULL separator gives NULL; NULL values are skipped.
            for i in 0..n {
                if !args[0].is_valid(i) {
                    out.push_null();
                    continue;
                }
                let sep = s(&args[0], i);
                let parts = || args[1..].iter().filter(|c| c.is_valid(i)).map(|c| s(c, i));
                let count = parts().count();
                let bytes = parts().map(str::len).fold(
                    sep.len().saturating_mul(count.saturating_sub(1)),
                    usize::saturating_add,
                );
                out.fits(bytes)?;
                buf.clear();
                for (k, p) in parts().enumerate() {
                    if k > 0 {
                        buf.push_str(sep);
                    }
                    buf.push_str(p);
                }
                out.push(&buf)?;
            }
        }
        _ => {
            return Err(Error::Internal(format!(
                "{} is not a text function of this module",
                func.name()
            )))
        }
    }
    Ok(out.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn left_and_right_count_characters_and_negative_counts_drop_from_the_other_end() {
        assert_eq!(cut("abcdef", 2, false), "ab");
        assert_eq!(cut("abcdef", -2, false), "abcd");
        assert_eq!(cut("abcdef", 2, true), "ef");
        assert_eq!(cut("abcdef", -2, true), "cdef");
        assert_eq!(cut("héllo", 2, false), "hé");
        assert_eq!(cut("héllo", 9, true), "héllo");
        assert_eq!(cut("ab", -5, false), "");
        assert_eq!(cut("", 3, true), "");
    }

    #[test]
    fn split_part_counts_fields_from_either_end_and_refuses_zero() {
        assert_eq!(field("a,b,c", ",", 2).unwrap(), "b");
        assert_eq!(field("a,b,c", ",", -1).unwrap(), "c");
        assert_eq!(field("a,b,c", ",", 4).unwrap(), "");
        assert_eq!(field("a,,c", ",", 2).unwrap(), "");
        assert_eq!(field("abc", "", 1).unwrap(), "abc");
        assert_eq!(field("abc", "", 2).unwrap(), "");
        assert_eq!(field("a--b", "--", 2).unwrap(), "b");
        assert!(field("a,b", ",", 0).is_err());
    }

    #[test]
    fn chr_refuses_zero_negative_numbers_and_surrogates() {
        assert_eq!(character(65).unwrap(), 'A');
        assert_eq!(character(0x1F600).unwrap(), '😀');
        assert!(character(0).is_err());
        assert!(character(-1).is_err());
        assert!(character(0xD800).is_err());
        assert!(character(i64::MAX).is_err());
    }

    #[test]
    fn substring_follows_postgres() {
        assert_eq!(substring("hello", 2, Some(3)).unwrap(), "ell");
        assert_eq!(substring("hello", 0, Some(3)).unwrap(), "he");
        assert_eq!(substring("hello", -5, Some(3)).unwrap(), "");
        assert_eq!(substring("hello", 4, None).unwrap(), "lo");
        assert_eq!(substring("hello", 9, None).unwrap(), "");
        assert_eq!(substring("héllo", 2, Some(2)).unwrap(), "él");
        assert!(substring("hello", 1, Some(-1)).is_err());
    }

    #[test]
    fn overlay_replaces_characters_from_a_position() {
        let mut buf = String::new();
        overlay("Txxxxas", "hom", 2, 4, &mut buf).unwrap();
        assert_eq!(buf, "Thomas");
        overlay("abc", "Z", 2, 1, &mut buf).unwrap();
        assert_eq!(buf, "aZc");
        overlay("héllo", "E", 2, 1, &mut buf).unwrap();
        assert_eq!(buf, "hEllo");
        // Past the end it appends; a negative count keeps the text again.
        overlay("abc", "Z", 9, 1, &mut buf).unwrap();
        assert_eq!(buf, "abcZ");
        overlay("abc", "Z", 2, -1, &mut buf).unwrap();
        assert_eq!(buf, "aZabc");
        assert!(overlay("abc", "Z", 0, 1, &mut buf).is_err());
        assert!(overlay("abc", "Z", i64::MAX, 1, &mut buf).is_err());
    }

    #[test]
    fn initcap_starts_each_word_upper_case() {
        let mut buf = String::new();
        initcap("hello wORLD 2nd-place o'neil", &mut buf);
        assert_eq!(buf, "Hello World 2nd-Place O'Neil");
    }
}
