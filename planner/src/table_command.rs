//! PostgreSQL's `TABLE name`, short for `SELECT * FROM name`: as a statement of its own
//! (`TABLE t ORDER BY a LIMIT 3`, also after `EXPLAIN`), in a set operation (`SELECT ...
//! UNION TABLE t`), in a CTE or a derived table. The SQL parser reads `TABLE name` inside a query but not at the start
//! of a statement, so there `TABLE` is written `SELECT * FROM` among the tokens before
//! parsing; elsewhere the binder reads it as the SELECT it is short for.

use sqlparser::ast as sql;
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace};

/// Whether `t` is a token the parser skips.
fn is_space(t: &TokenWithSpan) -> bool {
    matches!(t.token, Token::Whitespace(_))
}

/// `tokens` with a leading `TABLE` (after `EXPLAIN [VERBOSE]` too) written `SELECT * FROM`, or
/// `None` when the statement does not start with `TABLE name`.
pub(crate) fn rewrite_leading(tokens: &[TokenWithSpan]) -> Option<Vec<TokenWithSpan>> {
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
    // After `EXPLAIN [VERBOSE]`, the command is rewritten alike.
    let mut first = 0;
    if word(0, Some("EXPLAIN")) {
        first = if word(1, Some("VERBOSE")) { 2 } else { 1 };
    }
    if !word(first, Some("TABLE")) || !word(first + 1, None) {
        return None;
    }
    let (at, span) = (sig[first], tokens[sig[first]].span);
    let token = |token: Token| TokenWithSpan { token, span };
    let space = || token(Token::Whitespace(Whitespace::Space));
    let mut out = Vec::with_capacity(tokens.len() + 5);
    out.extend_from_slice(&tokens[..at]);
    out.extend([
        token(Token::make_keyword("SELECT")),
        space(),
        token(Token::Mul),
        space(),
        token(Token::make_keyword("FROM")),
    ]);
    out.extend_from_slice(&tokens[at + 1..]);
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

    fn rewritten(sql: &str) -> Option<String> {
        let tokens = Tokenizer::new(&GenericDialect {}, sql)
            .tokenize_with_location()
            .unwrap();
        rewrite_leading(&tokens).map(|t| t.iter().map(|t| t.token.to_string()).collect())
    }

    #[test]
    fn a_leading_table_command_is_put_in_parentheses() {
        assert_eq!(rewritten("TABLE t").as_deref(), Some("SELECT * FROM t"));
        assert_eq!(
            rewritten("  table s.\"T\" ORDER BY 1").as_deref(),
            Some("  SELECT * FROM s.\"T\" ORDER BY 1")
        );
        assert_eq!(
            rewritten("EXPLAIN TABLE t").as_deref(),
            Some("EXPLAIN SELECT * FROM t")
        );
        assert_eq!(
            rewritten("explain verbose table t").as_deref(),
            Some("explain verbose SELECT * FROM t")
        );
        assert_eq!(rewritten("SELECT * FROM t"), None);
        assert_eq!(rewritten("TABLE"), None);
        assert_eq!(rewritten("CREATE TABLE t (a INT)"), None);
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
