//! PostgreSQL's `WITH name AS [NOT] MATERIALIZED (...)`, which the SQL parser reads only in
//! its PostgreSQL dialect: before parsing, the hint's words are taken out of the statement's
//! tokens. weir plans every CTE its own way (a CTE is bound where it is read), so the hint
//! changes no answer, only, in PostgreSQL, whether a CTE is computed once.

use sqlparser::tokenizer::{Token, TokenWithSpan};

/// Whether token `t` is the unquoted word `w` (upper case).
fn is_word(t: &TokenWithSpan, w: &str) -> bool {
    matches!(&t.token, Token::Word(word) if word.quote_style.is_none()
        && word.value.eq_ignore_ascii_case(w))
}

/// `tokens` without the words of `AS [NOT] MATERIALIZED (` hints (`AS (` left), or `None`
/// when there are none.
pub(crate) fn strip(tokens: &[TokenWithSpan]) -> Option<Vec<TokenWithSpan>> {
    if !tokens.iter().any(|t| is_word(t, "MATERIALIZED")) {
        return None;
    }
    // The indices of the tokens that are not whitespace.
    let sig: Vec<usize> = (0..tokens.len())
        .filter(|&i| !matches!(tokens[i].token, Token::Whitespace(_)))
        .collect();
    let mut removed = vec![false; tokens.len()];
    for k in 0..sig.len() {
        if !is_word(&tokens[sig[k]], "AS") {
            continue;
        }
        let not = sig.get(k + 1).is_some_and(|&i| is_word(&tokens[i], "NOT"));
        let hint = k + 1 + usize::from(not);
        let opens = sig
            .get(hint + 1)
            .is_some_and(|&i| tokens[i].token == Token::LParen);
        if opens
            && sig
                .get(hint)
                .is_some_and(|&i| is_word(&tokens[i], "MATERIALIZED"))
        {
            for &i in &sig[k + 1..=hint] {
                removed[i] = true;
            }
        }
    }
    removed.iter().any(|&r| r).then(|| {
        tokens
            .iter()
            .zip(&removed)
            .filter(|(_, &r)| !r)
            .map(|(t, _)| t.clone())
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::dialect::GenericDialect;
    use sqlparser::tokenizer::Tokenizer;

    fn stripped(sql: &str) -> Option<String> {
        let tokens = Tokenizer::new(&GenericDialect {}, sql)
            .tokenize_with_location()
            .unwrap();
        strip(&tokens).map(|t| t.iter().map(|t| t.token.to_string()).collect())
    }

    #[test]
    fn only_the_hints_of_ctes_are_taken_out() {
        assert_eq!(
            stripped("WITH x AS MATERIALIZED (SELECT 1) SELECT * FROM x").as_deref(),
            Some("WITH x AS  (SELECT 1) SELECT * FROM x")
        );
        assert_eq!(
            stripped("WITH x AS NOT MATERIALIZED (SELECT 1), y AS (SELECT 2) SELECT 1").as_deref(),
            Some("WITH x AS   (SELECT 1), y AS (SELECT 2) SELECT 1")
        );
        // A column named materialized, and no hint at all.
        assert_eq!(stripped("SELECT a AS materialized FROM t"), None);
        assert_eq!(stripped("WITH x AS (SELECT 1) SELECT 1"), None);
    }
}
