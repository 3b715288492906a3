//! Text made for SQL, as PostgreSQL makes it: `format(template, args...)` and the quoting
//! functions `quote_ident`, `quote_literal` and `quote_nullable` (every argument arrives as
//! text: the planner casts the others).
//!
//! A template's `%s` writes an argument as text (NULL as nothing), `%I` as an identifier
//! (quoted when it must be, an error for NULL), `%L` as a literal (quoted, NULL as `NULL`),
//! `%%` a percent sign. A specifier may pick its argument (`%2$s`), set a width (`%10s`, `%-10s`
//! to pad on the right, `%*s` to take the width from the next argument, `%*3$s` from
//! argument 3); later specifiers without a position take the arguments after the last one
//! used, as in PostgreSQL.

use super::catalogue::ScalarFunc;
use super::support::{s, TextOut};
use crate::column::Column;
use crate::error::{Error, Result};
use crate::limits::{check_value, max_value_bytes};

/// Words PostgreSQL's `quote_ident` quotes although they are written as identifiers: its
/// keywords other than the unreserved ones.
const KEYWORDS: &[&str] = &[
    "all",
    "analyse",
    "analyze",
    "and",
    "any",
    "array",
    "as",
    "asc",
    "asymmetric",
    "authorization",
    "between",
    "bigint",
    "binary",
    "bit",
    "boolean",
    "both",
    "case",
    "cast",
    "char",
    "character",
    "check",
    "coalesce",
    "collate",
    "collation",
    "column",
    "concurrently",
    "constraint",
    "create",
    "cross",
    "current_catalog",
    "current_date",
    "current_role",
    "current_schema",
    "current_time",
    "current_timestamp",
    "current_user",
    "dec",
    "decimal",
    "default",
    "deferrable",
    "desc",
    "distinct",
    "do",
    "else",
    "end",
    "except",
    "exists",
    "extract",
    "false",
    "fetch",
    "float",
    "for",
    "foreign",
    "freeze",
    "from",
    "full",
    "grant",
    "greatest",
    "group",
    "grouping",
    "having",
    "ilike",
    "in",
    "initially",
    "inner",
    "inout",
    "int",
    "integer",
    "intersect",
    "interval",
    "into",
    "is",
    "isnull",
    "join",
    "lateral",
    "leading",
    "least",
    "left",
    "like",
    "limit",
    "localtime",
    "localtimestamp",
    "national",
    "natural",
    "nchar",
    "none",
    "normalize",
    "not",
    "notnull",
    "null",
    "nullif",
    "numeric",
    "offset",
    "on",
    "only",
    "or",
    "order",
    "out",
    "outer",
    "overlaps",
    "overlay",
    "placing",
    "position",
    "precision",
    "primary",
    "real",
    "references",
    "returning",
    "right",
    "row",
    "select",
    "session_user",
    "setof",
    "similar",
    "smallint",
    "some",
    "substring",
    "symmetric",
    "system_user",
    "table",
    "tablesample",
    "then",
    "time",
    "timestamp",
    "to",
    "trailing",
    "treat",
    "trim",
    "true",
    "union",
    "unique",
    "user",
    "using",
    "values",
    "varchar",
    "variadic",
    "verbose",
    "when",
    "where",
    "window",
    "with",
];

/// `s` as PostgreSQL's `quote_ident` writes it: as it is when it is a plain lower-case
/// identifier and no keyword, else in double quotes (a quote doubled).
pub(super) fn quote_ident(s: &str) -> String {
    let plain = s
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '$')
        && !KEYWORDS.contains(&s);
    if plain {
        s.to_string()
    } else {
        format!("\"{}\"", s.replace('"', "\"\""))
    }
}

/// `s` as PostgreSQL's `quote_literal` writes it: in single quotes (a quote doubled), with
/// `E` before it and backslashes doubled when it has one.
pub(super) fn quote_literal(s: &str) -> String {
    let quoted = s.replace('\'', "''");
    if s.contains('\\') {
        format!("E'{}'", quoted.replace('\\', "\\\\"))
    } else {
        format!("'{quoted}'")
    }
}

/// `quote_ident`, `quote_literal`, `quote_nullable` or `format` over `n` rows of `args`.
pub(super) fn call(func: ScalarFunc, args: &[Column], n: usize) -> Result<Column> {
    let mut out = TextOut::new(func, n);
    let mut buf = String::new();
    let max = max_value_bytes();
    for i in 0..n {
        let text = |k: usize| args[k].is_valid(i).then(|| s(&args[k], i));
        let value = match func {
            ScalarFunc::QuoteIdent => text(0).map(quote_ident),
            ScalarFunc::QuoteLiteral => text(0).map(quote_literal),
            ScalarFunc::QuoteNullable => {
                Some(text(0).map_or_else(|| "NULL".to_string(), quote_literal))
            }
            ScalarFunc::Format => match text(0) {
                None => None,
                Some(template) => {
                    let values: Vec<Option<&str>> = (1..args.len()).map(text).collect();
                    format(template, &values, &mut buf, max)?;
                    Some(std::mem::take(&mut buf))
                }
            },
            other => {
                return Err(Error::Internal(format!(
                    "{} is not a function of format.rs",
                    other.name()
                )))
            }
        };
        match value {
            Some(v) => {
                out.fits(v.len())?;
                out.push(&v)?;
            }
            None => out.push_null(),
        }
    }
    Ok(out.finish())
}

/// The error for a template PostgreSQL refuses.
fn bad(what: impl Into<String>) -> Error {
    Error::Arithmetic(what.into())
}

/// Writes `template` with `values` (the arguments after it) into `out` (cleared first); a
/// result longer than `max` bytes (a huge width) is an error before it is made.
fn format(template: &str, values: &[Option<&str>], out: &mut String, max: usize) -> Result<()> {
    out.clear();
    // The next argument a specifier without a position takes.
    let mut next = 0usize;
    let mut chars = template.chars().peekable();
    let take = |k: usize| {
        values
            .get(k)
            .copied()
            .ok_or_else(|| bad("too few arguments for format()"))
    };
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'%') {
            chars.next();
            out.push('%');
            continue;
        }
        // `%[n$][-][width|*|*n$]type`.
        let number = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>| {
            let mut n: Option<usize> = None;
            while let Some(d) = chars.peek().and_then(|c| c.to_digit(10)) {
                chars.next();
                n = Some(n.unwrap_or(0).saturating_mul(10).saturating_add(d as usize));
            }
            n
        };
        let mut position = None;
        let mut left = false;
        let mut width = None;
        let first = number(&mut chars);
        if chars.peek() == Some(&'$') {
            chars.next();
            position = Some(first.filter(|&p| p > 0).ok_or_else(|| {
                bad("format specifies argument 0, but arguments are numbered from 1")
            })?);
        } else {
            width = first;
        }
        if width.is_none() {
            if chars.peek() == Some(&'-') {
                chars.next();
                left = true;
            }
            if chars.peek() == Some(&'*') {
                chars.next();
                let from = match number(&mut chars) {
                    Some(p) if chars.peek() == Some(&'$') => {
                        chars.next();
                        p.checked_sub(1).ok_or_else(|| {
                            bad("format specifies argument 0, but arguments are numbered from 1")
                        })?
                    }
                    Some(_) => return Err(bad("unterminated format() type specifier")),
                    None => {
                        next += 1;
                        next - 1
                    }
                };
                let w = take(from)?.unwrap_or("0");
                let w: i64 = w
                    .trim()
                    .parse()
                    .map_err(|_| bad(format!("invalid width \"{w}\" for format()")))?;
                left |= w < 0;
                width = Some(w.unsigned_abs() as usize);
            } else {
                width = number(&mut chars);
            }
        }
        let kind = chars
            .next()
            .ok_or_else(|| bad("unterminated format() type specifier"))?;
        let k = match position {
            Some(p) => p - 1,
            None => next,
        };
        next = k + 1;
        let value = take(k)?;
        let written = match kind {
            's' => value.unwrap_or("").to_string(),
            'I' => quote_ident(
                value.ok_or_else(|| bad("null values cannot be formatted as an SQL identifier"))?,
            ),
            'L' => value.map_or_else(|| "NULL".to_string(), quote_literal),
            other => {
                return Err(bad(format!(
                    "unrecognized format() type specifier \"{other}\""
                )))
            }
        };
        let pad = width.unwrap_or(0).saturating_sub(written.chars().count());
        let grown = out.len().saturating_add(pad).saturating_add(written.len());
        check_value("format", grown, max)?;
        if !left {
            out.extend(std::iter::repeat_n(' ', pad));
        }
        out.push_str(&written);
        if left {
            out.extend(std::iter::repeat_n(' ', pad));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(template: &str, values: &[Option<&str>]) -> Result<String> {
        let mut out = String::new();
        format(template, values, &mut out, 1 << 20).map(|()| out)
    }

    #[test]
    fn templates_are_written_as_postgresql_writes_them() {
        let v = [Some("World"), Some("a b"), None, Some("it's")];
        assert_eq!(f("Hello %s", &v).unwrap(), "Hello World");
        assert_eq!(f("%2$s %1$s %s", &v).unwrap(), "a b World a b");
        assert_eq!(f("%I, %L", &v[1..]).unwrap(), "\"a b\", NULL");
        assert_eq!(f("[%10s] [%-6s]", &v).unwrap(), "[     World] [a b   ]");
        assert_eq!(f("[%*s]", &[Some("4"), Some("x")]).unwrap(), "[   x]");
        assert_eq!(f("[%*s]", &[Some("-4"), Some("x")]).unwrap(), "[x   ]");
        assert_eq!(f("%s%%", &v).unwrap(), "World%");
        assert_eq!(f("%L", &v[3..]).unwrap(), "'it''s'");
        assert_eq!(f("%s|%s", &[None, Some("b")]).unwrap(), "|b");
        for (template, error) in [
            ("%s %s %s %s %s", "too few arguments"),
            ("%x", "unrecognized format() type specifier \"x\""),
            ("%", "unterminated"),
            ("%0$s", "numbered from 1"),
            ("%3$I", "cannot be formatted as an SQL identifier"),
            // A width past the maximum value size is refused before any padding is made.
            ("%99999999999s", "more than the maximum value size"),
        ] {
            let e = f(template, &v).unwrap_err().to_string();
            assert!(e.contains(error), "{template}: {e}");
        }
    }

    #[test]
    fn identifiers_and_literals_are_quoted_when_they_must_be() {
        assert_eq!(quote_ident("abc_1"), "abc_1");
        assert_eq!(quote_ident("Abc"), "\"Abc\"");
        assert_eq!(quote_ident("select"), "\"select\"");
        assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
        assert_eq!(quote_ident(""), "\"\"");
        assert_eq!(quote_literal("O'Reilly"), "'O''Reilly'");
        assert_eq!(quote_literal("a\\b"), "E'a\\\\b'");
    }
}
