//! Row values, `(a, b, ...)`, where SQL compares them: `(a, b) = (c, d)` and the other five
//! comparisons, `(a, b) [NOT] IN ((c, d), ...)`, `(a, b) [NOT] IN (SELECT c, d ...)` (and its
//! spellings `= ANY` and `<> ALL`), `(a, b) IS [NOT] NULL`. Each is written again without
//! row values before it is bound, by PostgreSQL's rules:
//! - `=` is the AND of the pairs' equalities, `<>` the OR of their inequalities;
//! - `<`, `<=`, `>`, `>=` compare the pairs left to right: the first unequal pair decides,
//!   and a NULL in the pair that would decide makes the answer NULL
//!   (`a < c OR (a = c AND b < d)`);
//! - `IN` a list is the OR of the rows' equalities; `IN` a subquery is true when a row of the
//!   subquery equals, else NULL when one might (a comparison is NULL), else false, as
//!   correlated EXISTS tests; a conjunct of WHERE that is such an IN needs only the first
//!   test (a NULL and a false both drop the row), which the unnesting makes a semi join;
//! - a row compared with a subquery (`(a, b) = (SELECT c, d ...)`) compares with the one row
//!   the subquery returns, each entry read by a scalar subquery (NULL without rows, an error
//!   with more than one);
//! - `IS NULL` holds when every entry is NULL, `IS NOT NULL` when none is.

use crate::error::{at, unsupported, PlanError};
use sqlparser::ast::{self as sql, Spanned};

/// The name the rows of a subquery of a row `IN` are read under (a name no query writes);
/// [`super::rename_columns`] checks that the subquery has exactly the row's width.
pub(super) const ROW_IN: &str = "__row_in";

/// The entries of `e` when it is a row value `(a, b, ...)` inside any parentheses.
fn row(e: &sql::Expr) -> Option<&[sql::Expr]> {
    match e {
        sql::Expr::Nested(inner) => row(inner),
        sql::Expr::Tuple(items) => Some(items),
        _ => None,
    }
}

/// `l op r`, in parentheses.
fn binary(l: sql::Expr, op: sql::BinaryOperator, r: sql::Expr) -> sql::Expr {
    sql::Expr::Nested(Box::new(sql::Expr::BinaryOp {
        left: Box::new(l),
        op,
        right: Box::new(r),
    }))
}

/// `items` joined by `op` (AND or OR); `None` for none.
fn joined(
    items: impl IntoIterator<Item = sql::Expr>,
    op: sql::BinaryOperator,
) -> Option<sql::Expr> {
    items.into_iter().reduce(|a, b| binary(a, op.clone(), b))
}

/// `NOT (e)`.
fn not(e: sql::Expr) -> sql::Expr {
    sql::Expr::UnaryOp {
        op: sql::UnaryOperator::Not,
        expr: Box::new(sql::Expr::Nested(Box::new(e))),
    }
}

/// The error of rows of different widths.
fn unequal(e: &sql::Expr) -> PlanError {
    PlanError::Invalid(format!(
        "unequal number of entries in row expressions in '{e}'{}",
        at(e.span())
    ))
}

/// `l op r` for rows of one width, by the rules of the module comment.
fn compare_rows(
    l: &[sql::Expr],
    op: &sql::BinaryOperator,
    r: &[sql::Expr],
    e: &sql::Expr,
) -> Result<sql::Expr, PlanError> {
    use sql::BinaryOperator as Op;
    if l.len() != r.len() {
        return Err(unequal(e));
    }
    let pair = |k: usize, op: Op| binary(l[k].clone(), op, r[k].clone());
    let strict = match op {
        Op::Eq | Op::NotEq => {
            let join = if *op == Op::Eq { Op::And } else { Op::Or };
            return joined((0..l.len()).map(|k| pair(k, op.clone())), join).ok_or_else(|| {
                PlanError::Invalid(format!("an empty row in '{e}'{}", at(e.span())))
            });
        }
        Op::Lt | Op::LtEq => Op::Lt,
        Op::Gt | Op::GtEq => Op::Gt,
        other => {
            return Err(unsupported(
                format!("the operator {other} on row values"),
                e.span(),
            ))
        }
    };
    // From the last pair back: p_k op' q_k OR (p_k = q_k AND <the rest>).
    let last = l
        .len()
        .checked_sub(1)
        .ok_or_else(|| PlanError::Invalid(format!("an empty row in '{e}'{}", at(e.span()))))?;
    let mut acc = pair(last, op.clone());
    for k in (0..last).rev() {
        let rest = binary(pair(k, Op::Eq), Op::And, acc);
        acc = binary(pair(k, strict.clone()), Op::Or, rest);
    }
    Ok(acc)
}

/// The columns a subquery of a row IN is read under: `__c1`, `__c2`, ...
fn column(k: usize) -> String {
    format!("__c{}", k + 1)
}

/// `EXISTS (SELECT 1 FROM (q) AS __row_in(__c1, ...) WHERE cond)`, `cond` reading the
/// subquery's row through [`entry`].
pub(super) fn exists_row(
    q: &sql::Query,
    width: usize,
    cond: sql::Expr,
) -> Result<sql::Expr, PlanError> {
    let query = over_rows(q, width, "1", Some(cond))?;
    Ok(sql::Expr::Exists {
        subquery: Box::new(query),
        negated: false,
    })
}

/// The scalar subquery `(SELECT __c<k+1> FROM (q) AS __row_in(__c1, ...))`: entry `k` of the
/// one row `q` returns (NULL without rows, an error with more than one).
fn entry_of_row(q: &sql::Query, width: usize, k: usize) -> Result<sql::Expr, PlanError> {
    let query = over_rows(q, width, &column(k), None)?;
    Ok(sql::Expr::Subquery(Box::new(query)))
}

/// `SELECT item FROM (q) AS __row_in(__c1, ...) [WHERE cond]`.
fn over_rows(
    q: &sql::Query,
    width: usize,
    item: &str,
    cond: Option<sql::Expr>,
) -> Result<sql::Query, PlanError> {
    let columns: Vec<String> = (0..width).map(column).collect();
    let template = format!(
        "SELECT {item} FROM (SELECT 1) AS {ROW_IN}({})",
        columns.join(", ")
    );
    let parsed = sqlparser::parser::Parser::new(&sqlparser::dialect::GenericDialect {})
        .try_with_sql(&template)
        .and_then(|mut p| p.parse_query())
        .map_err(|e| PlanError::Invalid(format!("internal planner error: {e}")))?;
    let mut query = *parsed;
    if let sql::SetExpr::Select(select) = query.body.as_mut() {
        if let Some(sql::TableFactor::Derived { subquery, .. }) =
            select.from.first_mut().map(|t| &mut t.relation)
        {
            **subquery = q.clone();
        }
        select.selection = cond;
    }
    Ok(query)
}

/// Entry `k` of the subquery's row in [`exists_row`]'s condition (`__row_in.__c<k+1>`).
pub(super) fn entry(k: usize) -> sql::Expr {
    sql::Expr::CompoundIdentifier(vec![sql::Ident::new(ROW_IN), sql::Ident::new(column(k))])
}

/// The equality of row `l` with a row of the subquery (`a = __row_in.__c1 AND ...`).
fn equals_subquery_row(l: &[sql::Expr], e: &sql::Expr) -> Result<sql::Expr, PlanError> {
    let r: Vec<sql::Expr> = (0..l.len()).map(entry).collect();
    compare_rows(l, &sql::BinaryOperator::Eq, &r, e)
}

/// The literal TRUE, FALSE or (`None`) NULL.
pub(super) fn boolean(value: Option<bool>) -> sql::Expr {
    let v = match value {
        Some(b) => sql::Value::Boolean(b),
        None => sql::Value::Null,
    };
    sql::Expr::Value(v.with_empty_span())
}

/// `l IN (q)`: true, NULL or false by the module comment's rules.
fn in_subquery(l: &[sql::Expr], q: &sql::Query, e: &sql::Expr) -> Result<sql::Expr, PlanError> {
    let equal = equals_subquery_row(l, e)?;
    let unknown = sql::Expr::IsNull(Box::new(equal.clone()));
    Ok(sql::Expr::Case {
        case_token: sql::helpers::attached_token::AttachedToken::empty(),
        end_token: sql::helpers::attached_token::AttachedToken::empty(),
        operand: None,
        conditions: vec![
            sql::CaseWhen {
                condition: exists_row(q, l.len(), equal)?,
                result: boolean(Some(true)),
            },
            sql::CaseWhen {
                condition: exists_row(q, l.len(), unknown)?,
                result: boolean(None),
            },
        ],
        else_result: Some(Box::new(boolean(Some(false)))),
    })
}

/// The row and subquery of `e` when it is `row [NOT] IN (subquery)` or its `= ANY` / `<> ALL`
/// spellings, with whether it is negated.
fn row_in_subquery(e: &sql::Expr) -> Option<(&[sql::Expr], &sql::Query, bool)> {
    match e {
        sql::Expr::In {
            expr,
            target: sql::InTarget::Subquery(q),
            negated,
            ..
        } => Some((row(expr)?, q, *negated)),
        sql::Expr::AnyOp {
            left,
            compare_op: sql::BinaryOperator::Eq,
            right,
            ..
        } => Some((row(left)?, subquery(right)?, false)),
        sql::Expr::AllOp {
            left,
            compare_op: sql::BinaryOperator::NotEq,
            right,
        } => Some((row(left)?, subquery(right)?, true)),
        _ => None,
    }
}

/// The subquery `e` is, inside any parentheses.
fn subquery(e: &sql::Expr) -> Option<&sql::Query> {
    match e {
        sql::Expr::Subquery(q) => Some(q),
        sql::Expr::Nested(inner) => subquery(inner),
        _ => None,
    }
}

/// `e` written without the row values at its top, or `None` when it has none there.
pub(super) fn expand(e: &sql::Expr) -> Result<Option<sql::Expr>, PlanError> {
    if let Some((l, q, negated)) = row_in_subquery(e) {
        let test = in_subquery(l, q, e)?;
        return Ok(Some(if negated { not(test) } else { test }));
    }
    Ok(Some(match e {
        sql::Expr::BinaryOp { left, op, right } => {
            let (l, r) = (row(left), row(right));
            if l.is_none() && r.is_none() {
                return Ok(None);
            }
            match (l, r) {
                (Some(l), Some(r)) => compare_rows(l, op, r, e)?,
                // A row subquery: its one row's entries, each a scalar subquery.
                (Some(l), None) if subquery(right).is_some() => {
                    let q = subquery(right).expect("matched");
                    let r = (0..l.len())
                        .map(|k| entry_of_row(q, l.len(), k))
                        .collect::<Result<Vec<_>, _>>()?;
                    compare_rows(l, op, &r, e)?
                }
                (None, Some(r)) if subquery(left).is_some() => {
                    let q = subquery(left).expect("matched");
                    let l = (0..r.len())
                        .map(|k| entry_of_row(q, r.len(), k))
                        .collect::<Result<Vec<_>, _>>()?;
                    compare_rows(&l, op, r, e)?
                }
                _ => {
                    return Err(PlanError::Type(format!(
                        "a row value can only be compared with a row value, in '{e}'{}",
                        at(e.span())
                    )))
                }
            }
        }
        sql::Expr::In {
            expr,
            target: sql::InTarget::List(items),
            negated,
            ..
        } => {
            let Some(l) = row(expr) else { return Ok(None) };
            let mut tests = Vec::with_capacity(items.len());
            for item in items {
                let r = row(item).ok_or_else(|| {
                    PlanError::Type(format!(
                        "a row value can only be compared with a row value, in '{e}'{}",
                        at(e.span())
                    ))
                })?;
                tests.push(compare_rows(l, &sql::BinaryOperator::Eq, r, e)?);
            }
            let any =
                joined(tests, sql::BinaryOperator::Or).unwrap_or_else(|| boolean(Some(false)));
            if *negated {
                not(any)
            } else {
                any
            }
        }
        sql::Expr::IsNull(x) | sql::Expr::IsNotNull(x) => {
            let Some(l) = row(x) else { return Ok(None) };
            let null = matches!(e, sql::Expr::IsNull(_));
            let test = |x: &sql::Expr| {
                let x = Box::new(x.clone());
                if null {
                    sql::Expr::IsNull(x)
                } else {
                    sql::Expr::IsNotNull(x)
                }
            };
            joined(l.iter().map(test), sql::BinaryOperator::And)
                .unwrap_or_else(|| boolean(Some(true)))
        }
        _ => return Ok(None),
    }))
}

/// A WHERE condition whose conjuncts `row IN (subquery)` are written as their first EXISTS
/// test alone (a NULL and a false both drop the row); `None` when it has none.
pub(super) fn where_form(e: &sql::Expr) -> Result<Option<sql::Expr>, PlanError> {
    fn conjuncts<'a>(e: &'a sql::Expr, out: &mut Vec<&'a sql::Expr>) {
        match e {
            sql::Expr::BinaryOp {
                left,
                op: sql::BinaryOperator::And,
                right,
            } => {
                conjuncts(left, out);
                conjuncts(right, out);
            }
            sql::Expr::Nested(inner)
                if matches!(
                    inner.as_ref(),
                    sql::Expr::BinaryOp {
                        op: sql::BinaryOperator::And,
                        ..
                    }
                ) =>
            {
                conjuncts(inner, out)
            }
            other => out.push(other),
        }
    }
    let mut parts = Vec::new();
    conjuncts(e, &mut parts);
    if !parts
        .iter()
        .any(|p| row_in_subquery(p).is_some_and(|(_, _, negated)| !negated))
    {
        return Ok(None);
    }
    let mut written = Vec::with_capacity(parts.len());
    for p in parts {
        written.push(match row_in_subquery(p) {
            Some((l, q, false)) => exists_row(q, l.len(), equals_subquery_row(l, p)?)?,
            _ => sql::Expr::Nested(Box::new(p.clone())),
        });
    }
    Ok(joined(written, sql::BinaryOperator::And))
}
