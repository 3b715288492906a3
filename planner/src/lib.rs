//! # weir-planner
//!
//! weir's SQL planner: SQL text (parsed by `sqlparser` with the generic dialect) is bound
//! against the [`Catalog`] (case-insensitive names, table aliases, qualified columns, `*`),
//! type-checked, optimized (filter pushdown, projection pruning, index selection, partition
//! pruning, join build side, two-phase aggregation, top-k) and cut into distributed
//! [`Fragment`]s connected by exchanges. A [`PlanCache`] keeps query plans per SQL text,
//! parameter types and catalog version.
//!
//! Supported: `SELECT [DISTINCT]` with expressions and aliases over one table or inner equi-joins,
//! `WHERE`, `GROUP BY` (expressions, aliases, ordinals), `COUNT/SUM/AVG/MIN/MAX`, `HAVING`,
//! `ORDER BY` (expressions, aliases, ordinals, `ASC/DESC`, `NULLS FIRST/LAST`), `LIMIT/OFFSET`,
//! `OFFSET n ROWS` and `FETCH FIRST n ROWS ONLY`, `VALUES (...), (...)` as a query,
//! `?` and `$n` parameters; `EXPLAIN`, `CREATE TABLE`, `CREATE INDEX`, `DROP TABLE`,
//! `INSERT ... VALUES`, `UPDATE` and `DELETE`. Anything else is a [`PlanError::Unsupported`] naming the construct and
//! its position.

#![warn(missing_docs)]

mod bind;
pub mod cache;
pub mod catalog;
mod ddl;
mod depth;
mod dml;
pub mod error;
pub mod explain;
pub mod logical;
pub mod optimizer;
mod physical;
pub mod statement;

pub use cache::{CachedStatement, PlanCache};
pub use catalog::{Catalog, CatalogSnapshot, IndexDef, TableDef, ViewDef};
pub use depth::MAX_EXPR_DEPTH;
pub use dml::identity_columns;
pub use error::PlanError;
pub use statement::{
    Distribution, Fragment, FragmentOutput, Placement, Pruning, QueryPlan, Statement,
};

use bind::{unsupported, Binder, Params};
use sqlparser::ast::{self as sql, Spanned};
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Tokenizer;
use weir_operators::Value;

/// Plans one SQL statement against `catalog` with bound parameter values `params`
/// (`?` placeholders are numbered left to right from 0; `$n` is parameter `n - 1`).
/// `partitions_default` is the partition count given to tables created by `CREATE TABLE`.
pub fn plan_statement(
    sql: &str,
    catalog: &Catalog,
    params: &[Value],
    partitions_default: u32,
) -> Result<Statement, PlanError> {
    let dialect = GenericDialect {};
    let tokens = Tokenizer::new(&dialect, sql)
        .tokenize_with_location()
        .map_err(|e| PlanError::Syntax(e.to_string()))?;
    // Before parsing: a long operator chain parses into a tree that every later pass recurses
    // over; a deep one is planned on a stack big enough for it.
    let bound = depth::check_tokens(&tokens)?;
    if bound <= depth::SHALLOW {
        plan_tokens(sql, &tokens, catalog, params, partitions_default)
    } else {
        depth::on_deep_stack(|| plan_tokens(sql, &tokens, catalog, params, partitions_default))
    }
}

/// [`plan_statement`] after tokenizing.
fn plan_tokens(
    sql: &str,
    tokens: &[sqlparser::tokenizer::TokenWithSpan],
    catalog: &Catalog,
    params: &[Value],
    partitions_default: u32,
) -> Result<Statement, PlanError> {
    let dialect = GenericDialect {};
    let mut stmts = Parser::new(&dialect)
        .with_recursion_limit(depth::PARSER_RECURSION_LIMIT)
        .try_with_sql(sql)
        .and_then(|mut p| p.parse_statements())
        .map_err(|e| match e {
            ParserError::ParserError(s) | ParserError::TokenizerError(s) => PlanError::Syntax(s),
            ParserError::RecursionLimitExceeded => depth::too_deep(""),
        })?;
    if let Some(first) = stmts.first() {
        depth::check_nesting(first)?;
    }
    if stmts.len() > 1 {
        return Err(unsupported("multiple statements", stmts[1].span()));
    }
    let Some(stmt) = stmts.pop() else {
        return Err(PlanError::Syntax("empty statement".to_string()));
    };
    let params = Params::from_tokens(tokens, params)?;
    params.check_count()?;
    let mut binder = Binder::new(params, catalog);
    match &stmt {
        sql::Statement::Query(q) => Ok(Statement::Query(plan_query(q, catalog, &mut binder)?)),
        sql::Statement::Explain {
            statement,
            analyze,
            verbose,
            ..
        } => {
            if *analyze {
                return Err(unsupported("EXPLAIN ANALYZE", stmt.span()));
            }
            match statement.as_ref() {
                sql::Statement::Query(q) => Ok(Statement::Explain(plan_query_explained(
                    q,
                    catalog,
                    &mut binder,
                    *verbose,
                )?)),
                other => Err(unsupported(
                    format!("EXPLAIN of {}", statement_kind(other)),
                    other.span(),
                )),
            }
        }
        sql::Statement::CreateTable(ct) => {
            ddl::create_table(ct, catalog, &mut binder, partitions_default)
        }
        sql::Statement::CreateIndex(ci) => ddl::create_index(ci, catalog),
        sql::Statement::Insert(ins) => ddl::insert(ins, catalog, &mut binder),
        sql::Statement::Update(u) => dml::update(u, catalog, &mut binder),
        sql::Statement::Delete(d) => dml::delete(d, catalog, &mut binder),
        sql::Statement::Drop {
            object_type: sql::ObjectType::Table,
            if_exists,
            names,
            ..
        } => ddl::drop_table(names, *if_exists, catalog),
        sql::Statement::CreateView(cv) => ddl::create_view(cv, catalog, &mut binder),
        sql::Statement::Drop {
            object_type: sql::ObjectType::View,
            if_exists,
            names,
            ..
        } => ddl::drop_view(names, *if_exists, catalog),
        other => Err(unsupported(statement_kind(other), other.span())),
    }
}

/// Optimizes and fragments a bound query whose parameters are bound into it as constants
/// (for statements that run a query once, as INSERT ... SELECT).
pub(crate) fn plan_with_constants(
    bound: bind::BoundQuery,
    catalog: &Catalog,
    binder: &mut Binder<'_>,
) -> Result<QueryPlan, PlanError> {
    binder.params.check_types()?;
    let values: Vec<Value> = (0..binder.params.types.len())
        .map(|i| binder.params.value(i).cloned().unwrap_or(Value::Null))
        .collect();
    let plan = logical::bind_parameters(bound.plan, &values);
    let optimized = optimizer::optimize(plan, catalog)?;
    physical::plan_query(optimized, bound.fields, catalog, Vec::new())
}

fn plan_query(
    q: &sql::Query,
    catalog: &Catalog,
    binder: &mut Binder<'_>,
) -> Result<QueryPlan, PlanError> {
    plan_query_explained(q, catalog, binder, false)
}

/// Binds, optimizes and fragments a query; `verbose` keeps the logical plans' text (for
/// `EXPLAIN VERBOSE`).
fn plan_query_explained(
    q: &sql::Query,
    catalog: &Catalog,
    binder: &mut Binder<'_>,
    verbose: bool,
) -> Result<QueryPlan, PlanError> {
    let bound = binder.query(q)?;
    binder.params.check_types()?;
    let logical = verbose.then(|| bound.plan.display_indent());
    let optimized = optimizer::optimize(bound.plan, catalog)?;
    let text = logical.map(|l| {
        format!(
            "Logical plan:\n{l}Optimized logical plan:\n{}Physical plan:\n",
            optimized.display_indent()
        )
    });
    let mut plan = physical::plan_query(
        optimized,
        bound.fields,
        catalog,
        binder.params.types.clone(),
    )?;
    plan.verbose = text;
    Ok(plan)
}

/// A short name for a statement kind, e.g. `UPDATE` or `DROP VIEW`.
fn statement_kind(s: &sql::Statement) -> String {
    let text = s.to_string();
    let mut words = text.split_whitespace();
    let first = words.next().unwrap_or("statement").to_uppercase();
    match first.as_str() {
        "CREATE" | "DROP" | "ALTER" => {
            let mut w: Vec<String> = vec![first];
            for x in words.take(3) {
                let u = x.to_uppercase();
                let stop = !matches!(u.as_str(), "OR" | "REPLACE" | "TEMPORARY" | "UNIQUE");
                w.push(u);
                if stop {
                    break;
                }
            }
            w.join(" ")
        }
        _ => first,
    }
}
