//! The `EXCLUDE` clause of window frames (`ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING
//! EXCLUDE CURRENT ROW`), which the SQL parser does not read: before parsing, each one is
//! found in the statement's tokens and taken out of them, and kept under the position of the
//! window it belongs to, its owner: the function name of an `f(...) OVER (...)`, or the name
//! of a `WINDOW w AS (...)` definition. The binder finds it there by the same position.

use crate::error::PlanError;
use hashbrown::HashMap;
use sqlparser::tokenizer::{Token, TokenWithSpan};
use weir_operators::plan::FrameExclude;

/// The EXCLUDE clauses of a statement, by the `(line, column)` of their window's owner.
pub type Exclusions = HashMap<(u64, u64), FrameExclude>;

/// The upper-case word of token `t`, if it is a word.
fn word(t: &TokenWithSpan) -> Option<String> {
    match &t.token {
        Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
        _ => None,
    }
}

/// `tokens` without their frames' EXCLUDE clauses, and the clauses; `None` when the
/// statement has no EXCLUDE word at all (the tokens are then parsed as they are).
pub(crate) fn take_exclusions(
    tokens: &[TokenWithSpan],
) -> Result<Option<(Vec<TokenWithSpan>, Exclusions)>, PlanError> {
    if !tokens.iter().any(|t| word(t).as_deref() == Some("EXCLUDE")) {
        return Ok(None);
    }
    // The indices of the tokens that are not whitespace (comments included).
    let sig: Vec<usize> = (0..tokens.len())
        .filter(|&i| !matches!(tokens[i].token, Token::Whitespace(_)))
        .collect();
    let at = |k: usize| &tokens[sig[k]];
    let word_at = |k: Option<usize>| k.and_then(|k| word(at(k)));
    let mut exclusions = Exclusions::new();
    let mut removed = vec![false; tokens.len()];
    // Open parentheses: their index among `sig` and the owner of the window they open.
    let mut open: Vec<(usize, Option<(u64, u64)>)> = Vec::new();
    // Each `)` closed so far: the `(` it closes (indices among `sig`).
    let mut matching: HashMap<usize, usize> = HashMap::new();
    let mut k = 0;
    while k < sig.len() {
        let before = k.checked_sub(1);
        match &at(k).token {
            Token::LParen => {
                let owner = match word_at(before).as_deref() {
                    // `f(...) OVER (`: the owner is `f`.
                    Some("OVER") => before
                        .and_then(|b| b.checked_sub(1))
                        .filter(|&c| at(c).token == Token::RParen)
                        .and_then(|c| matching.get(&c).copied())
                        .and_then(|o| o.checked_sub(1))
                        .filter(|&n| word(at(n)).is_some()),
                    // `WINDOW w AS (`: the owner is `w`.
                    Some("AS") => before
                        .and_then(|b| b.checked_sub(1))
                        .filter(|&n| word(at(n)).is_some()),
                    _ => None,
                };
                let owner = owner.map(|n| {
                    let s = at(n).span.start;
                    (s.line, s.column)
                });
                open.push((k, owner));
            }
            Token::RParen => {
                if let Some((o, _)) = open.pop() {
                    matching.insert(k, o);
                }
            }
            _ => {}
        }
        let ends_a_frame = matches!(
            word_at(before).as_deref(),
            Some("ROW" | "PRECEDING" | "FOLLOWING")
        );
        let owner = open.last().and_then(|(_, owner)| *owner);
        if word_at(Some(k)).as_deref() != Some("EXCLUDE") || !ends_a_frame {
            k += 1;
            continue;
        }
        let Some(owner) = owner else {
            k += 1;
            continue;
        };
        let next = |n: usize| word_at(Some(k + n).filter(|&i| i < sig.len()));
        let (exclude, words) = match (next(1).as_deref(), next(2).as_deref()) {
            (Some("CURRENT"), Some("ROW")) => (FrameExclude::CurrentRow, 3),
            (Some("GROUP"), _) => (FrameExclude::Group, 2),
            (Some("TIES"), _) => (FrameExclude::Ties, 2),
            (Some("NO"), Some("OTHERS")) => (FrameExclude::NoOthers, 3),
            _ => {
                let s = at(k).span.start;
                return Err(PlanError::Syntax(format!(
                    "EXCLUDE must be followed by CURRENT ROW, GROUP, TIES or NO OTHERS at line {}, column {}",
                    s.line, s.column
                )));
            }
        };
        for n in 0..words {
            removed[sig[k + n]] = true;
        }
        exclusions.insert(owner, exclude);
        k += words;
    }
    let kept = tokens
        .iter()
        .zip(&removed)
        .filter(|(_, &r)| !r)
        .map(|(t, _)| t.clone())
        .collect();
    Ok(Some((kept, exclusions)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::dialect::GenericDialect;
    use sqlparser::tokenizer::Tokenizer;

    /// The clauses found, by their owner's position, in order.
    type Found = Vec<((u64, u64), FrameExclude)>;

    /// The statement's text without its clauses (whitespace collapsed), and the clauses.
    fn take(sql: &str) -> Option<(String, Found)> {
        let tokens = Tokenizer::new(&GenericDialect {}, sql)
            .tokenize_with_location()
            .unwrap();
        let (kept, ex) = take_exclusions(&tokens).unwrap()?;
        let text: String = kept.iter().map(|t| t.token.to_string()).collect();
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let mut ex: Vec<_> = ex.into_iter().collect();
        ex.sort_by_key(|(k, _)| *k);
        Some((text, ex))
    }

    #[test]
    fn clauses_are_taken_out_and_kept_by_their_owner() {
        let (text, ex) = take(
            "SELECT sum(x) OVER (ORDER BY x ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING EXCLUDE CURRENT ROW), \
             count(*) OVER w FROM t WINDOW w AS (ORDER BY x GROUPS CURRENT ROW exclude ties)",
        )
        .unwrap();
        assert!(!text.to_uppercase().contains("EXCLUDE"), "{text}");
        assert!(text.contains("1 FOLLOWING )"), "{text}");
        // `sum` at column 8; `w` of the WINDOW clause at column 125.
        assert_eq!(
            ex,
            [
                ((1, 8), FrameExclude::CurrentRow),
                ((1, 125), FrameExclude::Ties)
            ]
        );
        // No EXCLUDE: nothing to do.
        assert!(take("SELECT 1").is_none());
        // Another EXCLUDE (a wildcard option) is left to the parser.
        let (text, ex) = take("SELECT * EXCLUDE (a) FROM t").unwrap();
        assert!(text.contains("EXCLUDE"));
        assert!(ex.is_empty());
    }

    #[test]
    fn an_unknown_exclusion_is_a_syntax_error() {
        let tokens = Tokenizer::new(
            &GenericDialect {},
            "SELECT sum(x) OVER (ROWS CURRENT ROW EXCLUDE NOTHING) FROM t",
        )
        .tokenize_with_location()
        .unwrap();
        let err = take_exclusions(&tokens).unwrap_err();
        assert!(
            err.to_string().contains("EXCLUDE must be followed"),
            "{err}"
        );
    }
}
