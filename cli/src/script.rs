//! SQL scripts: text split into statements with sqlparser's tokenizer (so a `;` inside a
//! string, a quoted name or a comment never ends a statement), each statement's kind (a
//! query returns rows, anything else a count), and whether a shell's buffer holds a whole
//! statement yet.

use sqlparser::ast::Statement;
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

/// The statements of `sql`, in order, each without its closing `;`; pieces holding only
/// whitespace and comments are dropped. Fails on text the tokenizer cannot read (an
/// unterminated string or quoted name), naming the line and column.
pub fn split_statements(sql: &str) -> Result<Vec<String>, String> {
    let tokens = tokenize(sql)?;
    let offsets = LineOffsets::new(sql);
    let mut out = Vec::new();
    let mut start = 0usize;
    let mut has_code = false;
    for t in &tokens {
        match &t.token {
            Token::SemiColon => {
                let end = offsets.byte(t.span.start.line, t.span.start.column);
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

/// Whether a shell's `buffer` is ready to run: its last token (past whitespace and
/// comments) is a `;`. Text that does not tokenize yet (an open string) is not ready.
pub fn is_complete(buffer: &str) -> bool {
    match tokenize(buffer) {
        Ok(tokens) => tokens
            .iter()
            .rev()
            .find(|t| !matches!(t.token, Token::Whitespace(_) | Token::EOF))
            .is_some_and(|t| t.token == Token::SemiColon),
        Err(_) => false,
    }
}

/// Whether `stmt` returns rows: a query (SELECT, WITH, VALUES, EXPLAIN) or a write with
/// `RETURNING`. Text
/// sqlparser cannot parse counts as a query, so the planner reports what is wrong with it.
pub fn is_query(stmt: &str) -> bool {
    match Parser::parse_sql(&GenericDialect {}, stmt) {
        Ok(stmts) => stmts.iter().all(|s| {
            matches!(
                s,
                Statement::Query(_) | Statement::Explain { .. } | Statement::ExplainTable { .. }
            ) || match s {
                Statement::Insert(i) => i.returning.is_some(),
                Statement::Update(u) => u.returning.is_some(),
                Statement::Delete(d) => d.returning.is_some(),
                _ => false,
            }
        }),
        Err(_) => true,
    }
}

fn tokenize(sql: &str) -> Result<Vec<TokenWithSpan>, String> {
    Tokenizer::new(&GenericDialect {}, sql)
        .tokenize_with_location()
        .map_err(|e| e.to_string())
}

/// Byte offsets of (line, column) positions, both from 1, columns counted in characters.
struct LineOffsets<'a> {
    text: &'a str,
    starts: Vec<usize>,
}

impl<'a> LineOffsets<'a> {
    fn new(text: &'a str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineOffsets { text, starts }
    }

    fn byte(&self, line: u64, column: u64) -> usize {
        let start = self
            .starts
            .get((line.max(1) - 1) as usize)
            .copied()
            .unwrap_or(self.text.len());
        self.text[start..]
            .char_indices()
            .nth((column.max(1) - 1) as usize)
            .map_or(self.text.len(), |(i, _)| start + i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn semicolons_in_strings_names_and_comments_do_not_split() {
        let sql = "CREATE TABLE t (a VARCHAR);\n-- a comment; still a comment\n\
                   INSERT INTO t VALUES ('x;y'), ('é;');\nSELECT \"a;\" FROM t /* ; */;\n;  \n";
        assert_eq!(
            split_statements(sql).unwrap(),
            vec![
                "CREATE TABLE t (a VARCHAR)",
                "-- a comment; still a comment\nINSERT INTO t VALUES ('x;y'), ('é;')",
                "SELECT \"a;\" FROM t /* ; */",
            ]
        );
        assert_eq!(split_statements("SELECT 1").unwrap(), vec!["SELECT 1"]);
        assert!(split_statements("SELECT 'open").is_err());
    }

    #[test]
    fn a_buffer_is_complete_at_a_closing_semicolon() {
        assert!(is_complete("SELECT 1;"));
        assert!(is_complete("SELECT 1; -- done"));
        assert!(!is_complete("SELECT 'a;"));
        assert!(!is_complete("SELECT 1"));
        assert!(is_query("SELECT 1") && is_query("EXPLAIN SELECT 1"));
        assert!(!is_query("COPY t FROM 'x'") && !is_query("CREATE TABLE t (a INT)"));
    }
}
