//! Limits on how deeply a statement nests, and the stack to plan deep statements on.
//!
//! A statement may nest [`MAX_EXPR_DEPTH`] levels (SQLite's limit): every parenthesis,
//! subquery, function call, `CASE`, `CAST`, prefix or postfix operator and binary operator
//! is a level, except that a chain of `AND`s (or of `OR`s) is one level however long it is —
//! the binder makes it a shallow tree — so `x = 1 OR x = 2 OR ... OR x = 5000` plans. A chain
//! of set operations counts its length. [`check_nesting`] measures the parsed statement and
//! refuses a deeper one with an error naming the limit and where it was crossed.
//!
//! Before parsing, [`tree_bound`] bounds from the tokens how deep the syntax tree can be (the
//! parser builds a chain of infix operators in a loop into a left-deep tree of any depth).
//! Every pass after the parser recurses over that tree — spans, the nesting check, binding,
//! dropping — so a statement whose bound passes [`SHALLOW`] is planned on a thread with a
//! stack of [`DEEP_STACK`] bytes ([`on_deep_stack`]), and one whose bound passes
//! [`MAX_TREE_DEPTH`] is refused outright. The bound counts operator tokens; within
//! parentheses, brackets and `CASE ... END` only the deepest comma- or clause-separated part
//! counts (so a long `IN` list or select list is fine), plus one level for the enclosing node.

use crate::bind::at;
use crate::error::PlanError;
use sqlparser::ast::{self as sql, Spanned, Visit, Visitor};
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Token, TokenWithSpan};
use std::ops::ControlFlow;

/// Levels of nesting a statement may hold.
pub const MAX_EXPR_DEPTH: usize = 1000;

/// The deepest syntax tree (by the token bound) planned at all.
pub(crate) const MAX_TREE_DEPTH: usize = 200_000;

/// Token bounds up to this are planned on the caller's stack.
pub(crate) const SHALLOW: usize = 100;

/// The stack of the thread that plans deeper statements (reserved address space; only the
/// pages a statement uses are touched).
pub(crate) const DEEP_STACK: usize = 1 << 30;

/// The parser's own recursion limit: above [`MAX_EXPR_DEPTH`], which [`check_nesting`]
/// applies exactly (the parser spends more than one unit on some levels).
pub(crate) const PARSER_RECURSION_LIMIT: usize = 4 * MAX_EXPR_DEPTH;

/// The error for a statement nested deeper than [`MAX_EXPR_DEPTH`].
pub(crate) fn too_deep(where_: &str) -> PlanError {
    PlanError::Syntax(format!(
        "statement nested too deeply: more than {MAX_EXPR_DEPTH} levels{where_} (at most {MAX_EXPR_DEPTH} levels of parentheses, subqueries, function calls and operators are allowed)"
    ))
}

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

/// Upper bounds from the tokens: of the depth of the syntax tree, and of the length of the
/// longest chain of set operations.
pub(crate) struct Bound {
    /// The syntax tree's depth.
    pub tree: usize,
    /// Set operations in the statement.
    pub set_ops: usize,
    /// A lower bound of the nesting (open brackets and prefix operators in a row), so that
    /// the parser never recurses through more levels than are allowed.
    pub nesting: usize,
    /// The token at which `nesting` passes [`MAX_EXPR_DEPTH`], if it does.
    pub crossed_at: Option<sqlparser::tokenizer::Span>,
}

/// Bounds the syntax tree the tokens can parse into.
pub(crate) fn tree_bound(tokens: &[TokenWithSpan]) -> Bound {
    // Per open level: (operators in the current part, deepest finished part).
    let mut stack: Vec<(usize, usize)> = vec![(0, 0)];
    let mut deepest = 0usize;
    let mut set_ops = 0usize;
    // Open brackets plus the prefix operators in a row before them: levels for certain.
    let mut prefix_run = 0usize;
    let mut after_operand = false;
    let mut nesting = 0usize;
    let mut crossed_at = None;
    for t in tokens {
        if matches!(t.token, Token::Whitespace(_)) {
            continue;
        }
        let prefix = match &t.token {
            Token::Word(w) => w.keyword == Keyword::NOT,
            Token::Minus | Token::Plus => !after_operand,
            _ => false,
        };
        match role(&t.token) {
            _ if prefix => prefix_run += 1,
            Role::Open => {}
            _ => prefix_run = 0,
        }
        after_operand = matches!(role(&t.token), Role::Leaf | Role::Close);
        nesting = nesting.max(stack.len() - 1 + prefix_run);
        if nesting > MAX_EXPR_DEPTH && crossed_at.is_none() {
            crossed_at = Some(t.span);
        }
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
    nesting = nesting.max(stack.len() - 1 + prefix_run);
    Bound {
        tree: deepest.max(open).max(set_ops),
        set_ops,
        nesting,
        crossed_at,
    }
}

/// Refuses, before parsing, a statement whose syntax tree could be too deep to plan at all,
/// or that chains more set operations than the nesting limit; returns the tree bound.
pub(crate) fn check_tokens(tokens: &[TokenWithSpan]) -> Result<usize, PlanError> {
    let bound = tree_bound(tokens);
    if bound.set_ops > MAX_EXPR_DEPTH {
        return Err(too_deep(&format!(" ({} set operations)", bound.set_ops)));
    }
    if bound.nesting > MAX_EXPR_DEPTH {
        return Err(too_deep(&bound.crossed_at.map(at).unwrap_or_default()));
    }
    if bound.tree > MAX_TREE_DEPTH {
        return Err(too_deep(&format!(" (about {} operators)", bound.tree)));
    }
    Ok(bound.tree)
}

/// Runs `f` on a thread with a [`DEEP_STACK`]-byte stack and returns what it returns; the
/// thread folds constants under the caller's value limit ([`weir_operators::limits`]).
pub(crate) fn on_deep_stack<T: Send>(
    f: impl FnOnce() -> Result<T, PlanError> + Send,
) -> Result<T, PlanError> {
    let max_value = weir_operators::limits::max_value_bytes();
    std::thread::scope(|s| {
        let handle = std::thread::Builder::new()
            .name("weir-plan-deep".into())
            .stack_size(DEEP_STACK)
            .spawn_scoped(s, move || {
                weir_operators::limits::with_max_value_bytes(max_value, f)
            })
            .map_err(|e| {
                PlanError::Invalid(format!(
                    "cannot start a thread to plan a deep statement: {e}"
                ))
            })?;
        handle
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// Measures how deeply a parsed statement nests (see the module comment).
#[derive(Default)]
struct Nesting {
    /// Per expression or query being visited: whether it counts as a level, and the chain
    /// operator (`AND`/`OR`) it continues, if any.
    open: Vec<(bool, Option<bool>)>,
    depth: usize,
    /// Where the limit was crossed, once it is.
    crossed_at: Option<sqlparser::tokenizer::Span>,
}

impl Nesting {
    fn enter(&mut self, counts: bool, chain: Option<bool>) -> ControlFlow<()> {
        self.open.push((counts, chain));
        if counts {
            self.depth += 1;
        }
        if self.depth > MAX_EXPR_DEPTH {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }

    fn leave(&mut self) -> ControlFlow<()> {
        if let Some((true, _)) = self.open.pop() {
            self.depth -= 1;
        }
        ControlFlow::Continue(())
    }
}

/// `Some(true)` for AND, `Some(false)` for OR, `None` for anything else.
fn chain_op(e: &sql::Expr) -> Option<bool> {
    match e {
        sql::Expr::BinaryOp {
            op: sql::BinaryOperator::And,
            ..
        } => Some(true),
        sql::Expr::BinaryOp {
            op: sql::BinaryOperator::Or,
            ..
        } => Some(false),
        _ => None,
    }
}

impl Visitor for Nesting {
    type Break = ();

    fn pre_visit_query(&mut self, _q: &sql::Query) -> ControlFlow<()> {
        // The statement's own query is no level; every nested one is.
        let nested = !self.open.is_empty();
        self.enter(nested, None)
    }

    fn post_visit_query(&mut self, _q: &sql::Query) -> ControlFlow<()> {
        self.leave()
    }

    fn pre_visit_expr(&mut self, e: &sql::Expr) -> ControlFlow<()> {
        use sql::Expr as E;
        let chain = chain_op(e);
        let leaf = matches!(
            e,
            E::Identifier(_) | E::CompoundIdentifier(_) | E::Value(_) | E::TypedString(_)
        );
        let continues_chain =
            chain.is_some() && self.open.last().is_some_and(|&(_, parent)| parent == chain);
        let r = self.enter(!leaf && !continues_chain, chain);
        if r.is_break() && self.crossed_at.is_none() {
            self.crossed_at = Some(leftmost(e).span());
        }
        r
    }

    fn post_visit_expr(&mut self, _e: &sql::Expr) -> ControlFlow<()> {
        self.leave()
    }
}

/// Refuses a statement nested deeper than [`MAX_EXPR_DEPTH`] levels, naming where.
pub(crate) fn check_nesting(stmt: &sql::Statement) -> Result<(), PlanError> {
    let mut n = Nesting::default();
    if stmt.visit(&mut n).is_break() {
        let where_ = n.crossed_at.map(at).unwrap_or_default();
        return Err(too_deep(&where_));
    }
    Ok(())
}

/// The first leaf at the left end of `e`'s chains (its span is cheap and marks where `e`
/// starts closely enough).
fn leftmost(e: &sql::Expr) -> &sql::Expr {
    let mut e = e;
    loop {
        e = match e {
            sql::Expr::BinaryOp { left, .. } => left,
            sql::Expr::Nested(x) | sql::Expr::UnaryOp { expr: x, .. } => x,
            _ => return e,
        };
    }
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
        tree_bound(&tokens).tree
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
