//! `CHECK (condition)` constraints: read from `CREATE TABLE` (on a column or of the table),
//! kept as their text in the table's definition ([`CheckConstraint`]), and bound over the
//! table's columns where rows are checked ([`check_conditions`]). A condition is a BOOLEAN
//! expression of the row's own columns: no subquery, aggregate, window function or parameter,
//! and nothing that changes from one evaluation to the next (`random()`, the clock), so that a
//! row that passed stays valid.

use crate::bind::{
    contains_agg, contains_subquery, contains_window, unsupported, Binder, Params, Scope,
};
use crate::catalog::{Catalog, CheckConstraint, TableDef};
use crate::error::PlanError;
use sqlparser::ast::{self as sql, Spanned};
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;
use weir_operators::{DataType, Expr, Schema};

/// Binds `condition` (of the constraint `name`) over a row of `schema` (table `table`), as a
/// BOOLEAN expression of its columns; an error names what it may not hold.
fn bind(
    table: &str,
    schema: &Schema,
    name: &str,
    condition: &sql::Expr,
    catalog: &Catalog,
) -> Result<Expr, PlanError> {
    let refuse = |what: &str| {
        unsupported(
            format!("{what} in CHECK constraint \"{name}\" of table '{table}'"),
            condition.span(),
        )
    };
    if contains_subquery(condition) {
        return Err(refuse("a subquery"));
    }
    if contains_agg(condition) || contains_window(condition) {
        return Err(refuse("an aggregate or window function"));
    }
    let params = Params::from_tokens(&[], &[])?;
    let mut binder = Binder::new(params, catalog);
    let mut scope = Scope::default();
    scope.add(
        schema.fields.clone(),
        table.to_lowercase(),
        condition.span(),
    )?;
    let b = binder.expr(condition, &scope, None)?;
    if binder.params.expected > 0 || !binder.params.types.is_empty() {
        return Err(refuse("a parameter"));
    }
    if binder.clock.is_some() || binder.calls_volatile {
        return Err(refuse(
            "a value that changes between evaluations (the clock, random())",
        ));
    }
    if b.ty.is_some_and(|t| t != DataType::Boolean) {
        return Err(PlanError::Type(format!(
            "CHECK constraint \"{name}\" of table '{table}' must be BOOLEAN: '{condition}'"
        )));
    }
    Ok(b.expr)
}

/// The `CHECK` constraint `name` on `condition` of table `table` (columns `schema`), checked
/// to bind.
pub(crate) fn check_constraint(
    table: &str,
    schema: &Schema,
    name: String,
    condition: &sql::Expr,
    catalog: &Catalog,
) -> Result<CheckConstraint, PlanError> {
    bind(table, schema, &name, condition, catalog)?;
    Ok(CheckConstraint {
        name,
        condition: condition.to_string(),
    })
}

/// The conditions of `def`'s `CHECK` constraints, bound over its rows (as written to it,
/// every column in table order), each with its name.
pub fn check_conditions(
    def: &TableDef,
    catalog: &Catalog,
) -> Result<Vec<(String, Expr)>, PlanError> {
    def.checks
        .iter()
        .map(|c| {
            let e = Parser::new(&GenericDialect {})
                .try_with_sql(&c.condition)
                .and_then(|mut p| p.parse_expr())
                .map_err(|e| PlanError::Syntax(format!("CHECK constraint \"{}\": {e}", c.name)))?;
            Ok((
                c.name.clone(),
                bind(&def.name, &def.schema, &c.name, &e, catalog)?,
            ))
        })
        .collect()
}

/// The name PostgreSQL gives a `CHECK` constraint of table `table` declared without one:
/// `{table}_{column}_check` for one that reads one column (`column`), else `{table}_check`,
/// numbered from 1 when `taken` has it already.
pub(crate) fn default_name(table: &str, column: Option<&str>, taken: &[CheckConstraint]) -> String {
    let base = match column {
        Some(c) => format!("{table}_{c}_check"),
        None => format!("{table}_check"),
    }
    .to_lowercase();
    let free = |n: &String| !taken.iter().any(|c| c.name.eq_ignore_ascii_case(n));
    std::iter::once(base.clone())
        .chain((1..).map(|i| format!("{base}{i}")))
        .find(free)
        .unwrap_or(base)
}

/// The columns (by name, lowercase) `condition` reads.
pub(crate) fn columns_read(condition: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(e) = Parser::new(&GenericDialect {})
        .try_with_sql(condition)
        .and_then(|mut p| p.parse_expr())
    {
        let _ = sql::visit_expressions(&e, |x| {
            match x {
                sql::Expr::Identifier(id) => out.push(id.value.to_lowercase()),
                sql::Expr::CompoundIdentifier(parts) => {
                    if let Some(last) = parts.last() {
                        out.push(last.value.to_lowercase())
                    }
                }
                _ => {}
            }
            std::ops::ControlFlow::<()>::Continue(())
        });
    }
    out
}

/// `condition` with column `old` named `new` (with `table`, the table: `old.c` becomes
/// `new.c`), so that a constraint follows a rename, as PostgreSQL's does.
pub(crate) fn renamed(condition: &str, old: &str, new: &str, table: bool) -> String {
    let Ok(mut e) = Parser::new(&GenericDialect {})
        .try_with_sql(condition)
        .and_then(|mut p| p.parse_expr())
    else {
        return condition.to_string();
    };
    let _ = sql::visit_expressions_mut(&mut e, |x| {
        match x {
            sql::Expr::Identifier(id) if !table && id.value.eq_ignore_ascii_case(old) => {
                *id = sql::Ident::new(new)
            }
            sql::Expr::CompoundIdentifier(parts) => {
                let at = if table {
                    parts.len().checked_sub(2)
                } else {
                    parts.len().checked_sub(1)
                };
                if let Some(part) = at.and_then(|i| parts.get_mut(i)) {
                    if part.value.eq_ignore_ascii_case(old) {
                        *part = sql::Ident::new(new);
                    }
                }
            }
            _ => {}
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    e.to_string()
}
