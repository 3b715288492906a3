//! The planner's entry point: one SQL statement's text in, a planned [`Statement`] out. The
//! text is tokenized and its depth checked ([`crate::depth`]), parsed, and dispatched by
//! kind: queries to [`crate::query`], DDL to `ddl`, DML to `dml`.

use crate::bind::{unsupported, Binder, Params};
use crate::catalog::Catalog;
use crate::error::PlanError;
use crate::explain_options::ExplainOptions;
use crate::query::{plan_query, plan_query_explained};
use crate::statement::Statement;
use crate::{
    add_identity, alter, ddl, depth, dml, external, frame_exclude, sequence_alter, sequences,
    truncate, upsert,
};
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
    if external::is_create_external(tokens) {
        return external::create_external_table(tokens.to_vec());
    }
    if sequence_alter::is_alter_sequence(tokens) {
        return sequence_alter::alter_sequence(tokens, catalog);
    }
    if add_identity::is_add_identity(tokens) {
        return add_identity::add_identity(tokens, catalog);
    }
    let dialect = GenericDialect {};
    // The parser reads neither the EXCLUDE clause of window frames nor `AS [NOT]
    // MATERIALIZED` in WITH: both are taken out of the tokens first. Nor a statement that
    // starts with `TABLE name`: its `TABLE` is written `SELECT * FROM`.
    let mut unhinted = crate::cte_hints::strip(tokens);
    let leading = crate::table_command::rewrite_leading(unhinted.as_deref().unwrap_or(tokens));
    if let Some(rewritten) = leading {
        unhinted = Some(rewritten);
    }
    let parse_tokens = |kept: Vec<sqlparser::tokenizer::TokenWithSpan>| {
        Parser::new(&dialect)
            .with_recursion_limit(depth::PARSER_RECURSION_LIMIT)
            .with_tokens_with_locations(kept)
            .parse_statements()
    };
    let (parsed, exclusions) =
        match frame_exclude::take_exclusions(unhinted.as_deref().unwrap_or(tokens))? {
            Some((kept, exclusions)) => (parse_tokens(kept), exclusions),
            None if unhinted.is_some() => (
                parse_tokens(unhinted.unwrap_or_default()),
                Default::default(),
            ),
            None => (
                Parser::new(&dialect)
                    .with_recursion_limit(depth::PARSER_RECURSION_LIMIT)
                    .try_with_sql(sql)
                    .and_then(|mut p| p.parse_statements()),
                Default::default(),
            ),
        };
    let mut stmts = parsed.map_err(|e| match e {
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
    binder.exclusions = exclusions;
    match &stmt {
        sql::Statement::Query(q) if select_into_of(q).is_some() => {
            let into = select_into_of(q).expect("matched");
            ddl::select_into(q, into, catalog, &mut binder, partitions_default)
        }
        sql::Statement::Query(q) => match sequences::sequence_calls(q, catalog, &mut binder)? {
            Some(calls) => Ok(calls),
            None => Ok(Statement::Query(plan_query(q, catalog, &mut binder)?)),
        },
        sql::Statement::CreateSequence { .. } => sequences::create_sequence(&stmt),
        sql::Statement::Truncate(t) => truncate::truncate(t, catalog),
        sql::Statement::Drop {
            object_type: sql::ObjectType::Sequence,
            if_exists,
            names,
            cascade: false,
            ..
        } => sequences::drop_sequence(names, *if_exists, catalog),
        sql::Statement::Explain {
            statement,
            analyze,
            verbose,
            estimate,
            format,
            options,
            ..
        } => {
            let asked = ExplainOptions::read(
                *analyze,
                *verbose,
                *estimate,
                format.as_ref(),
                options.as_deref(),
                stmt.span(),
            )?;
            match statement.as_ref() {
                sql::Statement::Query(q) => {
                    let plan = plan_query_explained(q, catalog, &mut binder, asked.verbose)?;
                    Ok(if asked.analyze {
                        Statement::ExplainAnalyze(plan)
                    } else {
                        Statement::Explain(plan)
                    })
                }
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
        sql::Statement::Insert(ins) => {
            let stmt = ddl::insert(ins, catalog, &mut binder)?;
            upsert::with_conflict_update(stmt, ins, catalog, &mut binder)
        }
        sql::Statement::Update(u) => dml::update(u, catalog, &mut binder),
        sql::Statement::Delete(d) => dml::delete(d, catalog, &mut binder),
        sql::Statement::Drop {
            object_type: sql::ObjectType::Table,
            if_exists,
            names,
            ..
        } => ddl::drop_table(names, *if_exists, catalog),
        sql::Statement::Drop {
            object_type: sql::ObjectType::Index,
            if_exists,
            names,
            table,
            cascade: false,
            ..
        } => alter::drop_index(names, table.as_ref(), *if_exists, catalog),
        sql::Statement::CreateView(cv) => ddl::create_view(cv, catalog, &mut binder),
        sql::Statement::AlterTable(at) => alter::plan_alter_table(at, catalog, &mut binder),
        sql::Statement::Comment {
            object_type,
            object_name,
            comment,
            if_exists,
        } => crate::comment::plan_comment(
            *object_type,
            object_name,
            comment.as_ref(),
            *if_exists,
            catalog,
        ),
        sql::Statement::Drop {
            object_type: sql::ObjectType::View,
            if_exists,
            names,
            ..
        } => ddl::drop_view(names, *if_exists, catalog),
        other => Err(unsupported(statement_kind(other), other.span())),
    }
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

/// The INTO clause of `SELECT ... INTO name FROM ...` (a query whose body is one SELECT).
fn select_into_of(q: &sql::Query) -> Option<&sql::SelectInto> {
    match q.body.as_ref() {
        sql::SetExpr::Select(select) => select.into.as_ref(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    //! The nesting limits of [`crate::depth`] as a whole statement meets them.

    use super::*;
    use crate::depth::MAX_EXPR_DEPTH;

    fn plan(sql: &str) -> Result<Statement, PlanError> {
        plan_statement(sql, &Catalog::new(), &[], 4)
    }

    fn assert_too_deep(sql: &str) {
        let e = plan(sql).unwrap_err();
        assert!(
            matches!(&e, PlanError::Syntax(m) if m.contains("nested too deeply")
                && m.contains(&MAX_EXPR_DEPTH.to_string())),
            "{e}"
        );
    }

    #[test]
    fn nesting_is_counted_up_to_the_limit() {
        let parens = |n: usize| format!("SELECT {}1{}", "(".repeat(n), ")".repeat(n));
        plan(&parens(MAX_EXPR_DEPTH)).unwrap();
        assert_too_deep(&parens(MAX_EXPR_DEPTH + 1));
        let calls = |n: usize| format!("SELECT {}1{}", "abs(".repeat(n), ")".repeat(n));
        plan(&calls(MAX_EXPR_DEPTH)).unwrap();
        assert_too_deep(&calls(MAX_EXPR_DEPTH + 1));
        // A chain of n terms is n - 1 operators deep.
        let sum = |n: usize| format!("SELECT {}", vec!["1"; n].join(" + "));
        plan(&sum(MAX_EXPR_DEPTH + 1)).unwrap();
        assert_too_deep(&sum(MAX_EXPR_DEPTH + 2));
        let subqueries = |n: usize| format!("SELECT {}1{}", "(SELECT ".repeat(n), ")".repeat(n));
        plan(&subqueries(MAX_EXPR_DEPTH / 2)).unwrap();
        assert_too_deep(&subqueries(MAX_EXPR_DEPTH + 1));
        // The error says where: the innermost levels are at the end of the line.
        let e = plan(&parens(MAX_EXPR_DEPTH + 1)).unwrap_err().to_string();
        assert!(e.contains("line 1, column"), "{e}");
    }

    #[test]
    fn and_or_chains_are_one_level() {
        let ors: Vec<String> = (0..20_000).map(|i| format!("{i} = 1")).collect();
        plan(&format!("SELECT 1 WHERE {}", ors.join(" OR "))).unwrap();
        let ands = vec!["TRUE"; 20_000].join(" AND ");
        plan(&format!("SELECT 1 WHERE ({ands}) OR ({ands})")).unwrap();
    }

    #[test]
    fn huge_chains_and_set_operations_are_refused_before_parsing() {
        assert_too_deep(&format!("SELECT {}", vec!["1"; 300_000].join(" + ")));
        assert_too_deep(&("SELECT 1 UNION ".repeat(MAX_EXPR_DEPTH + 1) + "SELECT 1"));
    }
}
