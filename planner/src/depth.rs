//! A guard against statements whose syntax tree would be too deep to handle.
//!
//! sqlparser limits its own recursion (parentheses, prefix operators, subqueries), but it
//! parses a chain of infix operators (`1 + 1 + ... + 1`, `a = 1 OR a = 2 OR ...`, `x IS NULL
//! IS NULL ...`, `SELECT 1 UNION SELECT 1 UNION ...`) in a loop into a left-deep tree of any
//! depth. Everything after the parser walks that tree recursively: computing spans, binding,
//! dropping, displaying, serializing and evaluating the expression. A deep enough chain
//! overflows a thread's stack and aborts the whole process.
//!
//! So before parsing, [`check`] computes from the tokens an upper bound of every expression's
//! depth and refuses statements above [`MAX_EXPR_DEPTH`] with a clean [`PlanError`]. The bound
//! counts operator tokens; within parentheses, brackets and `CASE ... END` only the deepest
//! comma- or clause-separated part counts (so a long `IN` list or select list is fine), plus
//! one level for the enclosing node.

use crate::error::PlanError;
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Token, TokenWithSpan};

/// Deepest expression (by the token bound) a statement may hold.
pub const MAX_EXPR_DEPTH: usize = 256;

/// What a token does to the depth bound.
enum Role {
    /// A value or name: no depth of its own.
    Leaf,
    /// An operator: one more level in the current part.
    Operator,
    /// Ends a part of the current level (comma, clause keyword, `WHEN`/`THEN`/`ELSE`).
    Separator,
    /// Opens a level (`(`, `[`, `{`, `CASE`).
    Open,
    /// Closes a level.
    Close,
    /// A set operation (`UNION`, `EXCEPT`, `INTERSECT`): chains of them nest too.
    SetOperation,
}

fn role(t: &Token) -> Role {
    match t {
        Token::Word(w) => match w.keyword {
            Keyword::AND
            | Keyword::OR
            | Keyword::XOR
            | Keyword::NOT
            | Keyword::IS
            | Keyword::IN
            | Keyword::BETWEEN
            | Keyword::LIKE
            | Keyword::ILIKE
            | Keyword::SIMILAR
            | Keyword::RLIKE
            | Keyword::REGEXP
            | Keyword::COLLATE
            | Keyword::AT
            | Keyword::DIV
            | Keyword::ESCAPE
            | Keyword::OVERLAPS
            | Keyword::MEMBER => Role::Operator,
            Keyword::CASE => Role::Open,
            Keyword::END => Role::Close,
            Keyword::WHEN
            | Keyword::THEN
            | Keyword::ELSE
            | Keyword::SELECT
            | Keyword::FROM
            | Keyword::WHERE
            | Keyword::GROUP
            | Keyword::HAVING
            | Keyword::ORDER
            | Keyword::LIMIT
            | Keyword::OFFSET
            | Keyword::ON
            | Keyword::JOIN
            | Keyword::VALUES
            | Keyword::SET
            | Keyword::USING => Role::Separator,
            Keyword::UNION | Keyword::EXCEPT | Keyword::INTERSECT => Role::SetOperation,
            _ => Role::Leaf,
        },
        Token::EOF
        | Token::Whitespace(_)
        | Token::Number(..)
        | Token::Placeholder(_)
        | Token::SingleQuotedString(_)
        | Token::DoubleQuotedString(_)
        | Token::TripleSingleQuotedString(_)
        | Token::TripleDoubleQuotedString(_)
        | Token::DollarQuotedString(_)
        | Token::SingleQuotedByteStringLiteral(_)
        | Token::DoubleQuotedByteStringLiteral(_)
        | Token::TripleSingleQuotedByteStringLiteral(_)
        | Token::TripleDoubleQuotedByteStringLiteral(_)
        | Token::SingleQuotedRawStringLiteral(_)
        | Token::DoubleQuotedRawStringLiteral(_)
        | Token::TripleSingleQuotedRawStringLiteral(_)
        | Token::TripleDoubleQuotedRawStringLiteral(_)
        | Token::NationalStringLiteral(_)
        | Token::EscapedStringLiteral(_)
        | Token::UnicodeStringLiteral(_)
        | Token::HexStringLiteral(_) => Role::Leaf,
        // `a.b.c` is one compound name, not a chain of operators.
        Token::Period => Role::Leaf,
        Token::Comma | Token::SemiColon => Role::Separator,
        Token::LParen | Token::LBracket | Token::LBrace => Role::Open,
        Token::RParen | Token::RBracket | Token::RBrace => Role::Close,
        _ => Role::Operator,
    }
}

/// An upper bound of the depth of the deepest expression the tokens can parse into, and of
/// the length of the longest chain of set operations.
pub(crate) fn depth_bound(tokens: &[TokenWithSpan]) -> usize {
    // Per open level: (operators in the current part, deepest finished part).
    let mut stack: Vec<(usize, usize)> = vec![(0, 0)];
    let mut deepest = 0usize;
    let mut set_ops = 0usize;
    for t in tokens {
        let Some(top) = stack.last_mut() else {
            break;
        };
        match role(&t.token) {
            Role::Leaf => {}
            Role::Operator => {
                top.0 += 1;
                deepest = deepest.max(top.0);
            }
            Role::Separator => {
                top.1 = top.1.max(top.0);
                top.0 = 0;
            }
            Role::Open => stack.push((0, 0)),
            Role::Close => {
                if stack.len() > 1 {
                    let (cur, max) = stack.pop().unwrap_or_default();
                    if let Some(parent) = stack.last_mut() {
                        parent.0 += cur.max(max) + 1;
                        deepest = deepest.max(parent.0);
                    }
                }
            }
            Role::SetOperation => set_ops += 1,
        }
    }
    // Levels left open (unbalanced input) still count.
    let open: usize = stack.iter().map(|&(cur, max)| cur.max(max)).sum::<usize>() + stack.len() - 1;
    deepest.max(open).max(set_ops)
}

/// Fails with a syntax error naming the limit when the statement nests too deeply.
pub(crate) fn check(tokens: &[TokenWithSpan]) -> Result<(), PlanError> {
    let depth = depth_bound(tokens);
    if depth > MAX_EXPR_DEPTH {
        return Err(PlanError::Syntax(format!(
            "expression nested too deeply (about {depth} levels; at most {MAX_EXPR_DEPTH} are allowed)"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::dialect::GenericDialect;
    use sqlparser::tokenizer::Tokenizer;

    fn bound(sql: &str) -> usize {
        let tokens = Tokenizer::new(&GenericDialect {}, sql)
            .tokenize_with_location()
            .unwrap();
        depth_bound(&tokens)
    }

    #[test]
    fn long_chains_are_refused_before_parsing() {
        // 100,000 terms used to become a tree whose span computation overflowed the stack.
        let catalog = crate::Catalog::new();
        for sql in [
            format!("SELECT {}", vec!["1"; 100_000].join(" + ")),
            format!("SELECT 1 WHERE {}", vec!["TRUE"; 100_000].join(" OR ")),
            "SELECT 1 UNION ".repeat(50_000) + "SELECT 1",
        ] {
            let e = crate::plan_statement(&sql, &catalog, &[], 4).unwrap_err();
            assert!(
                matches!(&e, PlanError::Syntax(m) if m.contains("nested too deeply")),
                "{e}"
            );
        }
        let ok = format!("SELECT {}", vec!["1"; MAX_EXPR_DEPTH + 1].join(" + "));
        assert!(crate::plan_statement(&ok, &catalog, &[], 4).is_ok());
    }

    #[test]
    fn chains_count_and_lists_do_not() {
        assert!(bound("SELECT 1") <= 2);
        assert_eq!(
            bound(&format!("SELECT {}", vec!["1"; 1000].join(" + "))),
            999
        );
        let list: Vec<String> = (0..10_000).map(|i| format!("-{i}")).collect();
        assert!(bound(&format!("SELECT x FROM t WHERE x IN ({})", list.join(", "))) < 10);
        let select: Vec<String> = (0..1000).map(|i| format!("a + {i}")).collect();
        assert!(bound(&format!("SELECT {} FROM t", select.join(", "))) < 10);
        assert!(bound("SELECT a FROM t WHERE a + 1 > 2 AND b = 3 ORDER BY a + b") < 10);
        assert_eq!(
            bound(&format!("SELECT {}", vec!["t.a"; 100].join(" + "))),
            99
        );
        assert!(bound(&format!("SELECT {}", "(".repeat(300))) >= 300);
        assert!(bound(&format!("SELECT {}1{}", "(".repeat(300), ")".repeat(300))) >= 300);
        assert!(bound(&"SELECT 1 UNION ".repeat(300)) >= 300);
        assert!(bound("CASE WHEN a THEN b ELSE c END END END ) ) ]") < 10);
    }
}
