//! The text of a simple-protocol Query message split into its statements, and what the
//! tokens of one statement tell before it is planned: its leading keywords and the number
//! of parameters it names. Split with sqlparser's tokenizer (as `weir sql` splits a script),
//! so a `;` inside a string, a quoted name or a comment never ends a statement.

use sqlparser::dialect::GenericDialect;
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

/// The tokens of `sql`, or the tokenizer's complaint (an unterminated string).
pub fn tokenize(sql: &str) -> Result<Vec<TokenWithSpan>, String> {
    Tokenizer::new(&GenericDialect {}, sql)
        .tokenize_with_location()
        .map_err(|e| e.to_string())
}

/// The statements of `sql`, in order, without their closing `;`; pieces holding only
/// whitespace and comments are dropped.
pub fn split_statements(sql: &str) -> Result<Vec<String>, String> {
    let tokens = tokenize(sql)?;
    let starts = line_starts(sql);
    let mut out = Vec::new();
    let mut start = 0usize;
    let mut has_code = false;
    for t in &tokens {
        match &t.token {
            Token::SemiColon => {
                let end = byte_offset(sql, &starts, t.span.start.line, t.span.start.column);
                if has_code {
                    out.push(sql[start..end].trim().to_string());
                }
                start = end + 1;
                has_code = false;
            }
            Token::Whitespace(_) | Token::EOF => {}
            _ => has_code = true,
        }
    }
    if has_code {
        out.push(sql[start..].trim().to_string());
    }
    Ok(out)
}

/// The first `n` words of the statement (keywords or names, upper-cased), past whitespace
/// and comments.
pub fn leading_words(tokens: &[TokenWithSpan], n: usize) -> Vec<String> {
    tokens
        .iter()
        .filter(|t| !matches!(t.token, Token::Whitespace(_) | Token::EOF))
        .take(n)
        .map(|t| match &t.token {
            Token::Word(w) => w.value.to_ascii_uppercase(),
            other => other.to_string(),
        })
        .collect()
}

/// The number of parameters the statement names: its `?` placeholders, or the highest `$n`.
pub fn param_count(tokens: &[TokenWithSpan]) -> usize {
    let mut qmarks = 0usize;
    let mut dollars = 0usize;
    for t in tokens {
        if let Token::Placeholder(s) = &t.token {
            if s == "?" {
                qmarks += 1;
            } else if let Some(n) = s.strip_prefix('$').and_then(|n| n.parse::<usize>().ok()) {
                dollars = dollars.max(n);
            }
        }
    }
    qmarks.max(dollars)
}

/// Byte offsets of the starts of the lines of `text`.
fn line_starts(text: &str) -> Vec<usize> {
    std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect()
}

/// The byte offset of (line, column), both from 1, columns counted in characters.
fn byte_offset(text: &str, starts: &[usize], line: u64, column: u64) -> usize {
    let Some(&start) = starts.get((line as usize).saturating_sub(1)) else {
        return text.len();
    };
    text[start..]
        .char_indices()
        .nth((column as usize).saturating_sub(1))
        .map_or(text.len(), |(i, _)| start + i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_split_at_semicolons_outside_strings() {
        assert_eq!(
            split_statements("SELECT 1; SELECT ';' -- x;\n; ;SELECT 2").unwrap(),
            ["SELECT 1", "SELECT ';' -- x;", "SELECT 2"]
        );
        assert!(split_statements(" ; -- nothing\n").unwrap().is_empty());
        assert_eq!(
            split_statements("SELECT 'é';SELECT 3").unwrap()[1],
            "SELECT 3"
        );
    }

    #[test]
    fn parameters_are_counted() {
        assert_eq!(param_count(&tokenize("SELECT $1, $3").unwrap()), 3);
        assert_eq!(param_count(&tokenize("SELECT ?, ?").unwrap()), 2);
        assert_eq!(param_count(&tokenize("SELECT '$1'").unwrap()), 0);
    }
}
