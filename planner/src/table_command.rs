//! PostgreSQL's `TABLE name`, short for `SELECT * FROM name`: as a statement of its own
//! (`TABLE t ORDER BY a LIMIT 3`), in a set operation (`SELECT ... UNION TABLE t`), in a CTE
//! or a derived table. The SQL parser reads `TABLE name` inside a query but not at the start
//! of a statement, so there the name is put in parentheses among the tokens before parsing
//! (`(TABLE t) ORDER BY a`, which means the same); the binder then reads it as the SELECT it
//! is short for.

use sqlparser::ast as sql;
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, TokenWithSpan};

/// Whether `t` is a token the parser skips.
fn is_space(t: &TokenWithSpan) -> bool {
    matches!(t.token, Token::Whitespace(_))
}

/// `tokens` with the name after a leading `TABLE` in parentheses, or `None` when the
/// statement does not start with `TABLE name`.
pub(crate) fn wrap(tokens: &[TokenWithSpan]) -> Option<Vec<TokenWithSpan>> {
    let sig: Vec<usize> = (0..tokens.len())
        .filter(|&i| !is_space(&tokens[i]))
        .collect();
    let word = |k: usize, keyword: Option<&str>| {
        sig.get(k).is_some_and(|&i| match &tokens[i].token {
            Token::Word(w) => {
                keyword.is_none_or(|kw| w.quote_style.is_none() && w.value.eq_ignore_ascii_case(kw))
            }
            _ => false,
        })
    };
    if !word(0, Some("TABLE")) || !word(1, None) {
        return None;
    }
    // The name: words joined by periods.
    let mut last = 1;
    while sig
        .get(last + 1)
        .is_some_and(|&i| tokens[i].token == Token::Period)
        && word(last + 2, None)
    {
        last += 2;
    }
    let (start, end) = (sig[0], sig[last]);
    let paren = |token: Token, at: &TokenWithSpan| TokenWithSpan {
        token,
        span: at.span,
    };
    let mut out = Vec::with_capacity(tokens.len() + 2);
    out.extend_from_slice(&tokens[..start]);
    out.push(paren(Token::LParen, &tokens[start]));
    out.extend_from_slice(&tokens[start..=end]);
    out.push(paren(Token::RParen, &tokens[end]));
    out.extend_from_slice(&tokens[end + 1..]);
    Some(out)
}

/// The query `TABLE name` is short for, `SELECT * FROM name` (`None` for `TABLE` without a
/// name).
pub(crate) fn as_select(table: &sql::Table) -> Option<sql::Query> {
    let name = table.table_name.as_ref()?;
    let full = match &table.schema_name {
        Some(schema) => format!("{schema}.{name}"),
        None => name.to_string(),
    };
    // Identifiers print as they were written (quoted when they were), so this parses.
    Parser::new(&GenericDialect {})
        .try_with_sql(&format!("SELECT * FROM {full}"))
        .and_then(|mut p| p.parse_query())
        .ok()
        .map(|q| *q)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::tokenizer::Tokenizer;

    fn wrapped(sql: &str) -> Option<String> {
        let tokens = Tokenizer::new(&GenericDialect {}, sql)
            .tokenize_with_location()
            .unwrap();
        wrap(&tokens).map(|t| t.iter().map(|t| t.token.to_string()).collect())
    }

    #[test]
    fn a_leading_table_command_is_put_in_parentheses() {
        assert_eq!(wrapped("TABLE t").as_deref(), Some("(TABLE t)"));
        assert_eq!(
            wrapped("  table s.\"T\" ORDER BY 1").as_deref(),
            Some("  (table s.\"T\") ORDER BY 1")
        );
        assert_eq!(wrapped("SELECT * FROM t"), None);
        assert_eq!(wrapped("TABLE"), None);
        assert_eq!(wrapped("CREATE TABLE t (a INT)"), None);
    }

    #[test]
    fn the_command_is_short_for_select_star() {
        let q = Parser::new(&GenericDialect {})
            .try_with_sql("(TABLE s.\"T\")")
            .unwrap()
            .parse_query()
            .unwrap();
        let sql::SetExpr::Query(inner) = q.body.as_ref() else {
            panic!("{q:?}")
        };
        let sql::SetExpr::Table(t) = inner.body.as_ref() else {
            panic!("{inner:?}")
        };
        assert_eq!(as_select(t).unwrap().to_string(), "SELECT * FROM s.\"T\"");
    }
}
