//! POSIX-style regular expressions, as PostgreSQL's `~`, `~*`, `!~`, `!~*`, `regexp_like`,
//! `regexp_replace` and `substring(s FROM pattern)` use them, on the `regex` crate's syntax (which covers what patterns
//! commonly use: classes, anchors, repetition, groups, alternation; not back references in
//! a pattern nor look-around). A pattern is compiled once per run of rows that share it
//! (the usual case: one constant pattern), with the crate's limits on a pattern's size and
//! nesting, so a hostile pattern is an error, not a hang.

use super::catalogue::ScalarFunc;
use super::support::{all_valid, s, type_err, TextOut};
use crate::column::{Column, ColumnBuilder};
use crate::error::{Error, Result};
use crate::types::DataType;
use regex::{Regex, RegexBuilder};

/// The error for a pattern or flags PostgreSQL would refuse.
fn invalid(what: String) -> Error {
    Error::Arithmetic(format!("invalid regular expression: {what}"))
}

/// The last line of the `regex` crate's message (a parse error draws the pattern and a
/// caret above it), without its `error: ` prefix.
fn last_line(message: &str) -> String {
    let line = message
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .unwrap_or(message);
    line.strip_prefix("error: ").unwrap_or(line).to_string()
}

/// What a function's flags ask for: `i` (case-insensitive) or `c` (case-sensitive, the
/// default; the later wins), and `g` (every match, `regexp_replace` only).
#[derive(Clone, Copy, Default, PartialEq)]
pub(super) struct Flags {
    /// `i`.
    pub(super) insensitive: bool,
    /// `g`.
    pub(super) global: bool,
}

impl Flags {
    pub(super) fn parse(text: &str, allow_global: bool) -> Result<Flags> {
        let mut flags = Flags::default();
        for c in text.chars() {
            match c {
                'i' => flags.insensitive = true,
                'c' => flags.insensitive = false,
                'g' if allow_global => flags.global = true,
                other => {
                    return Err(Error::Arithmetic(format!(
                        "invalid regular expression option: \"{other}\""
                    )))
                }
            }
        }
        Ok(flags)
    }
}

/// The last pattern compiled, kept while the rows' pattern and flags stay the same.
#[derive(Default)]
pub(super) struct Compiled {
    key: Option<(String, bool)>,
    regex: Option<Regex>,
}

impl Compiled {
    pub(super) fn get(&mut self, pattern: &str, insensitive: bool) -> Result<&Regex> {
        let same = self
            .key
            .as_ref()
            .is_some_and(|(p, i)| p == pattern && *i == insensitive);
        if !same {
            let regex = RegexBuilder::new(pattern)
                .case_insensitive(insensitive)
                .build()
                .map_err(|e| invalid(last_line(&e.to_string())))?;
            self.regex = Some(regex);
            self.key = Some((pattern.to_string(), insensitive));
        }
        Ok(self.regex.as_ref().expect("compiled above"))
    }
}

/// A piece of a replacement: literal text, or a group of the match (0: the whole match).
enum Piece {
    Text(String),
    Group(usize),
}

/// PostgreSQL's replacement text: `\1` to `\9` are the groups, `\&` the whole match, `\\` a
/// backslash; any other character (and a backslash before another one) is itself.
fn template(replacement: &str) -> Vec<Piece> {
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut chars = replacement.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            text.push(c);
            continue;
        }
        let group = match chars.peek() {
            Some(d @ '1'..='9') => Some(*d as usize - '0' as usize),
            Some('&') => Some(0),
            Some('\\') => {
                chars.next();
                text.push('\\');
                continue;
            }
            _ => None,
        };
        match group {
            Some(g) => {
                chars.next();
                if !text.is_empty() {
                    pieces.push(Piece::Text(std::mem::take(&mut text)));
                }
                pieces.push(Piece::Group(g));
            }
            None => text.push('\\'),
        }
    }
    if !text.is_empty() {
        pieces.push(Piece::Text(text));
    }
    pieces
}

/// `t` with the first match of `regex` (every match with `global`) replaced by `pieces`, into
/// `buf`; `fits` is asked after each match whether the text so far may grow on (a result
/// past the maximum value size fails before it is all built).
fn replace(
    regex: &Regex,
    t: &str,
    pieces: &[Piece],
    global: bool,
    buf: &mut String,
    fits: impl Fn(usize) -> Result<()>,
) -> Result<()> {
    buf.clear();
    let mut last = 0;
    for caps in regex.captures_iter(t) {
        let whole = caps.get(0).expect("group 0 is the match");
        buf.push_str(&t[last..whole.start()]);
        for p in pieces {
            match p {
                Piece::Text(x) => buf.push_str(x),
                Piece::Group(g) => buf.push_str(caps.get(*g).map_or("", |m| m.as_str())),
            }
        }
        last = whole.end();
        fits(buf.len())?;
        if !global {
            break;
        }
    }
    buf.push_str(&t[last..]);
    Ok(())
}

/// What `substring(t FROM pattern)` gives: the text of the first group when the pattern has
/// groups (`None` when it took no part in the match), else the whole match.
fn matched_part<'t>(regex: &Regex, t: &'t str) -> Option<&'t str> {
    let caps = regex.captures(t)?;
    let group = if regex.captures_len() > 1 { 1 } else { 0 };
    caps.get(group).map(|m| m.as_str())
}

/// Evaluates `regexp_like`, `regexp_replace` or `substring`'s regular-expression form over
/// text `args` of `n` rows each.
pub(super) fn call(func: ScalarFunc, args: &[Column], n: usize) -> Result<Column> {
    if args.iter().any(|c| c.data_type() != DataType::Utf8) {
        return Err(type_err(func, args));
    }
    let mut compiled = Compiled::default();
    if func == ScalarFunc::RegexpSubstring {
        let mut out = TextOut::new(func, n);
        for i in 0..n {
            if !all_valid(args, i) {
                out.push_null();
                continue;
            }
            let regex = compiled.get(s(&args[1], i), false)?;
            match matched_part(regex, s(&args[0], i)) {
                Some(part) => out.push(part)?,
                None => out.push_null(),
            }
        }
        return Ok(out.finish());
    }
    if func == ScalarFunc::RegexpLike {
        let mut b = ColumnBuilder::new(DataType::Boolean, n);
        for i in 0..n {
            if !all_valid(args, i) {
                b.push_null();
                continue;
            }
            let flags = Flags::parse(args.get(2).map_or("", |c| s(c, i)), false)?;
            let regex = compiled.get(s(&args[1], i), flags.insensitive)?;
            b.push_bool(regex.is_match(s(&args[0], i)));
        }
        return Ok(b.finish());
    }
    let mut out = TextOut::new(func, n);
    let mut buf = String::new();
    let mut pieces: Option<(String, Vec<Piece>)> = None;
    for i in 0..n {
        if !all_valid(args, i) {
            out.push_null();
            continue;
        }
        let flags = Flags::parse(args.get(3).map_or("", |c| s(c, i)), true)?;
        let replacement = s(&args[2], i);
        if pieces.as_ref().is_none_or(|(r, _)| r != replacement) {
            pieces = Some((replacement.to_string(), template(replacement)));
        }
        let regex = compiled.get(s(&args[1], i), flags.insensitive)?;
        let template = &pieces.as_ref().expect("set above").1;
        replace(
            regex,
            s(&args[0], i),
            template,
            flags.global,
            &mut buf,
            |b| out.fits(b),
        )?;
        out.push(&buf)?;
    }
    Ok(out.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replaced(t: &str, pattern: &str, replacement: &str, global: bool) -> String {
        let regex = Regex::new(pattern).unwrap();
        let mut buf = String::new();
        replace(&regex, t, &template(replacement), global, &mut buf, |_| {
            Ok(())
        })
        .unwrap();
        buf
    }

    #[test]
    fn replacements_take_groups_the_whole_match_and_escaped_backslashes() {
        assert_eq!(replaced("foobarbaz", "b..", "X", false), "fooXbaz");
        assert_eq!(replaced("foobarbaz", "b..", "X", true), "fooXX");
        assert_eq!(replaced("foobarbaz", "b(..)", r"X\1Y", true), "fooXarYXazY");
        assert_eq!(replaced("abc", "b", r"[\&]", false), "a[b]c");
        assert_eq!(replaced("abc", "b", r"\\", false), r"a\c");
        assert_eq!(replaced("abc", "b", r"\q$1", false), r"a\q$1c");
        assert_eq!(replaced("abc", "(x)?b", r"<\1>", false), "a<>c");
    }

    #[test]
    fn substring_takes_the_first_group_or_the_whole_match() {
        let part = |t: &'static str, p: &str| matched_part(&Regex::new(p).unwrap(), t);
        assert_eq!(part("foobar", "o.b"), Some("oob"));
        assert_eq!(part("foobar", "o(.)(b)"), Some("o"));
        assert_eq!(part("foobar", "x"), None);
        // A group that took no part in the match is no text.
        assert_eq!(part("foobar", "o(x)?b"), None);
        assert_eq!(part("foobar", "(?:o)b"), Some("ob"));
    }

    #[test]
    fn flags_are_i_c_and_g_and_others_are_refused() {
        assert!(Flags::parse("ig", true).unwrap().insensitive);
        assert!(!Flags::parse("ic", true).unwrap().insensitive);
        assert!(Flags::parse("g", false).is_err());
        assert!(Flags::parse("x", true).is_err());
    }

    #[test]
    fn a_pattern_that_does_not_compile_is_an_error() {
        let mut compiled = Compiled::default();
        assert!(compiled.get("(", false).is_err());
        assert!(compiled.get("a{1000000}{1000000}", false).is_err());
        assert!(compiled.get("^a.c$", true).unwrap().is_match("ABC"));
    }
}
