//! PostgreSQL 15's searches by regular expression: `regexp_count`, `regexp_substr` and
//! `regexp_instr`. Each search starts where the last match ended (one character further after
//! an empty match, so that an empty match right after another match counts, as in
//! PostgreSQL); positions are in characters, from 1; a pattern is compiled once per run of
//! rows that share it.

use super::catalogue::ScalarFunc;
use super::regex::{Compiled, Flags};
use super::support::{all_valid, s, type_err, TextOut};
use crate::column::{Column, ColumnBuilder};
use crate::error::{Error, Result};
use crate::types::DataType;
use regex::{Captures, Regex};

/// The error for a parameter out of its range, in PostgreSQL's words.
fn out_of_range(parameter: &str, value: i64) -> Error {
    Error::Arithmetic(format!(
        "invalid value for parameter \"{parameter}\": {value}"
    ))
}

/// The matches of `regex` in `t` from byte `from` on, as PostgreSQL finds them.
fn matches_from<'r, 't>(
    regex: &'r Regex,
    t: &'t str,
    from: usize,
) -> impl Iterator<Item = Captures<'t>> + use<'r, 't> {
    let mut at = Some(from);
    std::iter::from_fn(move || {
        let caps = regex.captures_at(t, at?)?;
        let whole = caps.get(0).expect("group 0 is the match");
        at = if whole.is_empty() {
            // One character further, or no more search past the end.
            t[whole.end()..]
                .chars()
                .next()
                .map(|c| whole.end() + c.len_utf8())
        } else {
            Some(whole.end())
        };
        Some(caps)
    })
}

/// The byte offset of character `start` (from 1) of `t`; `None` past its end.
fn byte_of(t: &str, start: i64) -> Option<usize> {
    let skip = usize::try_from(start - 1).ok()?;
    match t.char_indices().nth(skip) {
        Some((b, _)) => Some(b),
        None if t.chars().count() == skip => Some(t.len()),
        None => None,
    }
}

/// The character position (from 1) of byte offset `b` of `t`.
fn char_of(t: &str, b: usize) -> i64 {
    t[..b].chars().count() as i64 + 1
}

/// Row `i` of the integer argument `k` (`default` when the call has fewer arguments).
fn int_arg(args: &[Column], k: usize, i: usize, default: i64) -> i64 {
    args.get(k)
        .and_then(Column::as_i64)
        .map_or(default, |v| v[i])
}

/// Row `i` of the text argument `k` (empty when the call has fewer arguments).
fn text_arg(args: &[Column], k: usize, i: usize) -> &str {
    args.get(k).map_or("", |c| s(c, i))
}

/// The `N`-th match (from 1) of the row's pattern from its `start`, with the compiled
/// pattern; `None` when there are not that many.
fn nth_match<'t>(regex: &Regex, t: &'t str, start: i64, n: i64) -> Option<Captures<'t>> {
    let from = byte_of(t, start)?;
    matches_from(regex, t, from).nth(usize::try_from(n - 1).ok()?)
}

/// Evaluates `regexp_count`, `regexp_substr` or `regexp_instr` over `args` of `n` rows each.
pub(super) fn call(func: ScalarFunc, args: &[Column], n: usize) -> Result<Column> {
    // The positions of the text arguments (the string, the pattern and the flags).
    let (flags_at, texts): (usize, &[usize]) = match func {
        ScalarFunc::RegexpCount => (3, &[0, 1, 3]),
        ScalarFunc::RegexpSubstr => (4, &[0, 1, 4]),
        _ => (5, &[0, 1, 5]),
    };
    let typed = args.iter().enumerate().all(|(k, c)| {
        let want = if texts.contains(&k) {
            DataType::Utf8
        } else {
            DataType::Int64
        };
        c.data_type() == want
    });
    if !typed {
        return Err(type_err(func, args));
    }
    let mut compiled = Compiled::default();
    let mut ints = ColumnBuilder::new(DataType::Int64, n);
    let mut text = TextOut::new(func, n);
    for i in 0..n {
        if !all_valid(args, i) {
            match func {
                ScalarFunc::RegexpSubstr => text.push_null(),
                _ => ints.push_null(),
            }
            continue;
        }
        let t = s(&args[0], i);
        let start = int_arg(args, 2, i, 1);
        if start < 1 {
            return Err(out_of_range("start", start));
        }
        let flags = Flags::parse(text_arg(args, flags_at, i), false)?;
        let regex = compiled.get(s(&args[1], i), flags.insensitive)?;
        if func == ScalarFunc::RegexpCount {
            let count = byte_of(t, start).map_or(0, |from| matches_from(regex, t, from).count());
            ints.push_i64(count as i64);
            continue;
        }
        let nth = int_arg(args, 3, i, 1);
        if nth < 1 {
            return Err(out_of_range("n", nth));
        }
        let (end_option, group) = match func {
            ScalarFunc::RegexpSubstr => (0, int_arg(args, 5, i, 0)),
            _ => (int_arg(args, 4, i, 0), int_arg(args, 6, i, 0)),
        };
        if !(0..=1).contains(&end_option) {
            return Err(out_of_range("endoption", end_option));
        }
        let group = usize::try_from(group).map_err(|_| out_of_range("subexpr", group))?;
        let part = nth_match(regex, t, start, nth).and_then(|c| c.get(group));
        if func == ScalarFunc::RegexpSubstr {
            match part {
                Some(m) => text.push(m.as_str())?,
                None => text.push_null(),
            }
        } else {
            let at = part.map_or(0, |m| {
                char_of(t, if end_option == 1 { m.end() } else { m.start() })
            });
            ints.push_i64(at);
        }
    }
    Ok(match func {
        ScalarFunc::RegexpSubstr => text.finish(),
        _ => ints.finish(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(t: &str, p: &str) -> usize {
        matches_from(&Regex::new(p).unwrap(), t, 0).count()
    }

    #[test]
    fn empty_matches_count_as_postgresql_counts_them() {
        assert_eq!(count("abc", "x*"), 4);
        assert_eq!(count("abc", "b*"), 4);
        assert_eq!(count("ab", ""), 3);
        assert_eq!(count("abcabc", "a"), 2);
        assert_eq!(count("äöü", "."), 3);
    }

    #[test]
    fn positions_are_characters() {
        assert_eq!(byte_of("äbc", 1), Some(0));
        assert_eq!(byte_of("äbc", 2), Some(2));
        assert_eq!(byte_of("äbc", 4), Some(4));
        assert_eq!(byte_of("äbc", 5), None);
        assert_eq!(char_of("äbc", 3), 3);
    }
}
