//! The names of sequences as SQL writes them: the text a call of `nextval('name')` gives
//! (a quoted literal, perhaps cast to `regclass` and qualified by `public.`), read the same
//! way by the planner ([`crate::sequences`]) and by the catalog, which finds the sequence a
//! column's stored `DEFAULT` calls.

use crate::error::{unsupported, PlanError};
use sqlparser::ast as sql;
use sqlparser::ast::Spanned;

/// The function name of call `f` without a `pg_catalog.` qualifier, lowercase.
pub(crate) fn function_name(f: &sql::Function) -> String {
    let parts = &f.name.0;
    let last = parts.last().map(|p| p.to_string()).unwrap_or_default();
    last.trim_matches('"').to_lowercase()
}

/// The arguments of call `f`, when they are plain expressions.
pub(crate) fn plain_args(f: &sql::Function) -> Option<Vec<&sql::Expr>> {
    let sql::FunctionArguments::List(list) = &f.args else {
        return match &f.args {
            sql::FunctionArguments::None => None,
            _ => Some(Vec::new()),
        };
    };
    list.args
        .iter()
        .map(|a| match a {
            sql::FunctionArg::Unnamed(sql::FunctionArgExpr::Expr(e)) => Some(e),
            _ => None,
        })
        .collect()
}

/// The sequence name a call's first argument gives: a quoted literal, optionally cast to
/// `regclass` and qualified by `public.` (`'public.s'::regclass`, as `pg_dump` writes it).
pub(crate) fn sequence_text(e: &sql::Expr) -> Option<String> {
    match e {
        sql::Expr::Nested(x) => sequence_text(x),
        sql::Expr::Cast { expr, .. } => sequence_text(expr),
        sql::Expr::Value(v) => match &v.value {
            sql::Value::SingleQuotedString(s) => Some(unqualified(s)),
            _ => None,
        },
        _ => None,
    }
}

/// `name` without a `public.` schema and its double quotes, lowercase.
pub(crate) fn unqualified(name: &str) -> String {
    let name = name.trim();
    let last = match name.split_once('.') {
        Some((schema, rest)) if schema.trim_matches('"').eq_ignore_ascii_case("public") => rest,
        _ => name,
    };
    last.trim_matches('"').to_lowercase()
}

/// The sequence `nextval(...)` call `e` names, as written: `None` when `e` is not a call of
/// `nextval`; an error when it is one whose argument is not a sequence's name.
pub(crate) fn nextval_call(e: &sql::Expr) -> Option<Result<String, PlanError>> {
    call_naming_a_sequence(e, "nextval")
}

/// The sequence `e` reads the session's last value of, when it is `currval('name')`
/// (checked as [`nextval_call`]'s).
pub(crate) fn currval_call(e: &sql::Expr) -> Option<Result<String, PlanError>> {
    call_naming_a_sequence(e, "currval")
}

/// The sequence named by `e` when it is a call of `function` (`nextval`, `currval`) with
/// one quoted name.
fn call_naming_a_sequence(e: &sql::Expr, function: &str) -> Option<Result<String, PlanError>> {
    let sql::Expr::Function(f) = e else {
        return match e {
            sql::Expr::Nested(x) => call_naming_a_sequence(x, function),
            _ => None,
        };
    };
    if function_name(f) != function {
        return None;
    }
    Some(match plain_args(f).as_deref() {
        Some([arg]) => sequence_text(arg).ok_or_else(|| {
            unsupported(
                format!("{function}({arg}): the sequence must be named by a quoted literal"),
                arg.span(),
            )
        }),
        _ => Err(PlanError::Invalid(format!(
            "{function} takes one argument, the sequence's name: {e}"
        ))),
    })
}

/// The sequence a column's `DEFAULT` (as stored: the expression's text) takes its values
/// from, when it is `nextval('name')`.
pub(crate) fn default_sequence(text: &str) -> Option<String> {
    let e = sqlparser::parser::Parser::new(&sqlparser::dialect::GenericDialect {})
        .try_with_sql(text)
        .and_then(|mut p| p.parse_expr())
        .ok()?;
    nextval_call(&e)?.ok()
}
