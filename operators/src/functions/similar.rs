//! `SIMILAR TO`'s patterns: `similar_to_escape(pattern [, escape])` turns the SQL pattern
//! into the regular expression that `regexp_like` then matches, as PostgreSQL rewrites
//! `s SIMILAR TO p` into `s ~ similar_to_escape(p)`. The translation follows PostgreSQL's:
//! the whole text must match (`^(?:...)$`), `%` is any text and `_` any one character, `|`,
//! `*`, `+`, `?`, `{m,n}`, groups and bracket expressions are the regular expression's, `.`,
//! `^` and `$` stand for themselves, and the escape character makes the next character
//! literal (or, before `"`, separates the parts that `substring` would return).

use super::catalogue::ScalarFunc;
use super::support::{all_valid, s, type_err, TextOut};
use crate::column::Column;
use crate::error::{Error, Result};
use crate::types::DataType;

/// The escape character an `escape` argument names: one character, none when empty.
fn escape_char(escape: &str) -> Result<Option<char>> {
    let mut chars = escape.chars();
    match (chars.next(), chars.next()) {
        (None, _) => Ok(None),
        (Some(c), None) => Ok(Some(c)),
        _ => Err(Error::Arithmetic(format!(
            "invalid escape string '{escape}': it must be empty or one character"
        ))),
    }
}

/// The regular expression that matches what SQL pattern `pattern` matches, with `escape` as
/// its escape character.
fn translate(pattern: &str, escape: Option<char>) -> Result<String> {
    let mut out = String::with_capacity(pattern.len() + 8);
    out.push_str("^(?:");
    let mut after_escape = false;
    let mut in_class = false;
    let mut separators = 0;
    for c in pattern.chars() {
        if after_escape {
            after_escape = false;
            if c == '"' && !in_class {
                out.push_str(match separators {
                    0 => "){1,1}?(",
                    1 => "){1,1}(?:",
                    _ => {
                        return Err(Error::Arithmetic(
                            "a SIMILAR TO pattern may not have more than two escape-double-quote \
                             separators"
                                .into(),
                        ))
                    }
                });
                separators += 1;
            } else {
                // Any character may be escaped, which keeps `\d` and the like usable.
                out.push('\\');
                out.push(c);
            }
        } else if Some(c) == escape {
            after_escape = true;
        } else if in_class {
            // Inside brackets the regular expression crate gives `[`, `&&`, `~~` meanings
            // PostgreSQL's classes do not have: they stand for themselves there.
            if matches!(c, '\\' | '[' | '&' | '~') {
                out.push('\\');
            }
            out.push(c);
            in_class = c != ']';
        } else {
            match c {
                '[' => {
                    out.push('[');
                    in_class = true;
                }
                '%' => out.push_str(".*"),
                '_' => out.push('.'),
                '(' => out.push_str("(?:"),
                '\\' | '.' | '^' | '$' => {
                    out.push('\\');
                    out.push(c);
                }
                _ => out.push(c),
            }
        }
    }
    if after_escape {
        // PostgreSQL ends the pattern there; the regular expression then fails to compile.
        out.push('\\');
    }
    out.push_str(")$");
    Ok(out)
}

/// Evaluates `similar_to_escape` over text `args` of `n` rows each, translating a run of
/// rows with the same pattern and escape once.
pub(super) fn call(args: &[Column], n: usize) -> Result<Column> {
    if args.iter().any(|c| c.data_type() != DataType::Utf8) {
        return Err(type_err(ScalarFunc::SimilarToEscape, args));
    }
    let mut out = TextOut::new(ScalarFunc::SimilarToEscape, n);
    let mut last: Option<(String, Option<char>, String)> = None;
    for i in 0..n {
        if !all_valid(args, i) {
            out.push_null();
            continue;
        }
        let pattern = s(&args[0], i);
        let escape = match args.get(1) {
            Some(e) => escape_char(s(e, i))?,
            None => Some('\\'),
        };
        let same = last
            .as_ref()
            .is_some_and(|(p, e, _)| p == pattern && *e == escape);
        if !same {
            last = Some((pattern.to_string(), escape, translate(pattern, escape)?));
        }
        out.push(&last.as_ref().expect("set above").2)?;
    }
    Ok(out.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use regex::Regex;

    fn similar(text: &str, pattern: &str) -> bool {
        let regex = Regex::new(&translate(pattern, Some('\\')).unwrap()).unwrap();
        regex.is_match(text)
    }

    #[test]
    fn patterns_translate_as_postgresql_translates_them() {
        assert_eq!(translate("a%b_", Some('\\')).unwrap(), "^(?:a.*b.)$");
        assert_eq!(
            translate("(a|b).c", Some('\\')).unwrap(),
            r"^(?:(?:a|b)\.c)$"
        );
        assert_eq!(translate(r"5\%", Some('\\')).unwrap(), r"^(?:5\%)$");
        assert_eq!(translate("a#_", Some('#')).unwrap(), r"^(?:a\_)$");
        assert_eq!(translate(r"a\b", None).unwrap(), r"^(?:a\\b)$");
        assert_eq!(
            translate(r#"a\"b\"c"#, Some('\\')).unwrap(),
            "^(?:a){1,1}?(b){1,1}(?:c)$"
        );
        assert!(translate(r#"\"a\"b\"c"#, Some('\\')).is_err());
    }

    #[test]
    fn the_whole_text_must_match() {
        assert!(similar("abc", "abc"));
        assert!(!similar("abc", "a"));
        assert!(similar("abc", "a%"));
        assert!(similar("abc", "_b_"));
        assert!(similar("abc", "%(b|d)%"));
        assert!(!similar("abc", "(b|c)%"));
        assert!(similar("aaab", "a*b"));
        assert!(similar("a.c", "a.c"));
        assert!(!similar("abc", "a.c"));
        assert!(similar("x1", "[a-z][0-9]"));
        assert!(similar("[", "[[]"));
        assert!(similar("a&&b", "a[&]+b"));
        assert!(similar("ab", "a|ab"));
    }

    #[test]
    fn an_escape_string_is_empty_or_one_character() {
        assert_eq!(escape_char("").unwrap(), None);
        assert_eq!(escape_char("#").unwrap(), Some('#'));
        assert!(escape_char("##").is_err());
    }
}
