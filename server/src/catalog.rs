//! The little of `pg_catalog` weir answers: psql's relation lists (`\d`, `\dt`, `\dv`, with
//! or without a name pattern), recognized by the query psql sends for them (its `\d NAME`,
//! and the drivers' catalog questions, are [`crate::describe`]'s). Any other query of `pg_catalog` is refused with 0A000 and a message
//! that says so, rather than "unknown table". (`information_schema`'s `tables`, `columns`,
//! `views` and `schemata` are the planner's, answered as any query.)

use pgwire::error::PgWireResult;
use sqlparser::tokenizer::{Token, TokenWithSpan};

use crate::errors::user_error;

/// What psql's relation list asks for: tables (relkind `r`), views (`v`), and the names
/// matching a pattern (psql's `^(name)$` regular expression; `.*` as a wildcard).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RelationList {
    /// Tables are listed.
    pub tables: bool,
    /// Views are listed.
    pub views: bool,
    /// The pattern of `\d PATTERN`, as psql wrote it (`None`: every relation).
    pub pattern: Option<String>,
}

/// The columns psql's relation list shows.
pub const RELATION_COLUMNS: [&str; 4] = ["Schema", "Name", "Type", "Owner"];

/// Whether `sql` is the query of psql's `\d` / `\dt` (without `+`).
pub fn psql_relation_list(sql: &str) -> Option<RelationList> {
    let looks_like = sql.contains("FROM pg_catalog.pg_class c")
        && sql.contains("as \"Schema\"")
        && sql.contains("as \"Name\"")
        && sql.contains("as \"Type\"")
        && sql.contains("as \"Owner\"")
        && !sql.contains("as \"Size\"")
        && !sql.contains("as \"Description\"")
        && !sql.contains("as \"Persistence\"");
    if !looks_like {
        return None;
    }
    let kinds = sql.split("c.relkind IN (").nth(1)?.split(')').next()?;
    let pattern = sql
        .split("OPERATOR(pg_catalog.~) '")
        .nth(1)
        .and_then(|p| p.split('\'').next())
        .map(str::to_string);
    Some(RelationList {
        tables: kinds.contains("'r'"),
        views: kinds.contains("'v'"),
        pattern,
    })
}

/// Whether a relation name matches psql's pattern: `^(name)$`, with `.*` for any text and
/// `|` between alternatives (names compare case-insensitively, as weir's names do).
pub fn matches(pattern: &str, name: &str) -> bool {
    let p = pattern
        .trim_start_matches('^')
        .trim_end_matches('$')
        .trim_start_matches('(')
        .trim_end_matches(')');
    p.split('|')
        .any(|alt| wildcard(&alt.to_lowercase(), &name.to_lowercase()))
}

/// `pattern` with `.*` standing for any text.
fn wildcard(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split(".*").collect();
    if parts.len() == 1 {
        return pattern == name;
    }
    let mut rest = name;
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            match rest.strip_prefix(part) {
                Some(r) => rest = r,
                None => return false,
            }
        } else if i == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            match rest.find(part) {
                Some(at) => rest = &rest[at + part.len()..],
                None => return false,
            }
        }
    }
    true
}

/// The error for a query of the system catalogs weir does not answer: one naming
/// `pg_catalog.` something.
pub fn refuse_catalog_query(tokens: &[TokenWithSpan]) -> PgWireResult<()> {
    let code: Vec<&Token> = tokens
        .iter()
        .map(|t| &t.token)
        .filter(|t| !matches!(t, Token::Whitespace(_)))
        .collect();
    let names_catalog = code.windows(2).any(|w| match (w[0], w[1]) {
        (Token::Word(word), Token::Period) => word.value.eq_ignore_ascii_case("pg_catalog"),
        _ => false,
    });
    if names_catalog {
        return Err(user_error(
            "0A000",
            "pg_catalog is not available in weir: psql's \\d commands and SQLAlchemy's \
             reflection are answered, and information_schema.tables, .columns, .views and \
             .schemata describe the relations",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const DT: &str = "SELECT n.nspname as \"Schema\",\n  c.relname as \"Name\",\n  CASE c.relkind \
        WHEN 'r' THEN 'table' END as \"Type\",\n  pg_catalog.pg_get_userbyid(c.relowner) as \
        \"Owner\"\nFROM pg_catalog.pg_class c\n     LEFT JOIN pg_catalog.pg_namespace n ON n.oid \
        = c.relnamespace\nWHERE c.relkind IN ('r','p','')\n  AND c.relname OPERATOR(pg_catalog.~) \
        '^(k.*)$' COLLATE pg_catalog.default\nORDER BY 1,2;";

    #[test]
    fn psql_lists_are_recognized() {
        let l = psql_relation_list(DT).unwrap();
        assert!(l.tables);
        assert!(!l.views, "\\dt lists no views");
        assert_eq!(l.pattern.as_deref(), Some("^(k.*)$"));
        assert!(psql_relation_list("SELECT * FROM pg_catalog.pg_class").is_none());
        let refused = |sql: &str| refuse_catalog_query(&crate::split::tokenize(sql).unwrap());
        assert!(refused("SELECT * FROM pg_catalog.pg_type").is_err());
        assert!(refused("SELECT * FROM information_schema.tables").is_ok());
        assert!(refused("SELECT 'pg_catalog.x' FROM t").is_ok());
    }

    #[test]
    fn patterns_match_names() {
        assert!(matches("^(kv)$", "KV"));
        assert!(!matches("^(kv)$", "kv2"));
        assert!(matches("^(k.*)$", "kv2"));
        assert!(matches("^(.*v)$", "kv"));
        assert!(matches("^(a|kv)$", "kv"));
    }
}
