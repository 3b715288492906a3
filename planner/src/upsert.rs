//! `INSERT ... ON CONFLICT (target) DO UPDATE SET ... [WHERE ...]`, an upsert: a proposed
//! row whose values in the target's columns (the primary key's, or a unique index's) a
//! stored row holds updates that row instead of being inserted. The `SET` and `WHERE`
//! expressions read the stored row by the table's name and the proposed row as `excluded`,
//! as in PostgreSQL.
//!
//! They are planned as what they mean, an `UPDATE t SET ... FROM (VALUES <the clashing
//! rows>) AS excluded(<t's columns>) WHERE <t's target = excluded's> [AND <WHERE>]`: checked
//! here with one row of NULLs (so that a wrong column or type fails the INSERT when it is
//! planned), and planned again by the runtime with the rows that do clash, whose query gives
//! the stored rows' identities and new values. The statement's parameters in `SET` and
//! `WHERE` are written into that text as values.

use crate::bind::{unsupported, Binder, Params};
use crate::catalog::{Catalog, TableDef};
use crate::error::PlanError;
use crate::statement::{ConflictUpdate, Statement};
use sqlparser::ast::{self as sql, Spanned};
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;
use std::ops::ControlFlow;
use weir_operators::{Batch, DataType, Value};

/// `stmt`, the INSERT `ins` planned, with its `ON CONFLICT ... DO UPDATE` (if it has one).
pub(crate) fn with_conflict_update(
    mut stmt: Statement,
    ins: &sql::Insert,
    catalog: &Catalog,
    binder: &mut Binder<'_>,
) -> Result<Statement, PlanError> {
    let Some(sql::OnInsert::OnConflict(sql::OnConflict {
        conflict_target,
        action: sql::OnConflictAction::DoUpdate(update),
    })) = &ins.on
    else {
        return Ok(stmt);
    };
    let (Statement::Insert {
        table,
        update_conflicts,
        ..
    }
    | Statement::InsertSelect {
        table,
        update_conflicts,
        ..
    }) = &mut stmt
    else {
        return Ok(stmt);
    };
    let t = catalog
        .table(table)
        .ok_or_else(|| PlanError::UnknownTable(table.clone()))?;
    if conflict_target.is_none() {
        return Err(PlanError::Invalid(
            "ON CONFLICT DO UPDATE needs a conflict target: the columns of the primary key or of a unique index, or ON CONSTRAINT name".into(),
        ));
    }
    let target = crate::ddl::conflict_sets(t, conflict_target.as_ref())?
        .pop()
        .unwrap_or_default();
    *update_conflicts = Some(Box::new(conflict_update(
        t, target, update, catalog, binder,
    )?));
    Ok(stmt)
}

/// The [`ConflictUpdate`] of `INSERT INTO t ... ON CONFLICT <target> DO UPDATE <update>`,
/// where `target` are the target's columns (resolved as `DO NOTHING`'s are).
fn conflict_update(
    t: &TableDef,
    target: Vec<usize>,
    update: &sql::DoUpdate,
    catalog: &Catalog,
    binder: &mut Binder<'_>,
) -> Result<ConflictUpdate, PlanError> {
    let at = update
        .assignments
        .first()
        .map_or(sqlparser::tokenizer::Span::empty(), |a| a.span());
    if !t.has_key() {
        return Err(unsupported(
            "ON CONFLICT ... DO UPDATE into a table without a primary key",
            at,
        ));
    }
    let quote = |name: &str| format!("\"{}\"", name.replace('"', "\"\""));
    let table = quote(&t.name);
    let mut assignments = Vec::with_capacity(update.assignments.len());
    for a in &update.assignments {
        let mut value = a.value.clone();
        inline_params(&mut value, binder)?;
        assignments.push(format!("{} = {value}", a.target));
    }
    let columns: Vec<String> = t.schema.fields.iter().map(|f| quote(&f.name)).collect();
    let mut condition: Vec<String> = target
        .iter()
        .map(|&c| format!("{table}.{0} = excluded.{0}", columns[c]))
        .collect();
    if let Some(selection) = &update.selection {
        let mut selection = selection.clone();
        inline_params(&mut selection, binder)?;
        condition.push(format!("({selection})"));
    }
    let update = ConflictUpdate {
        target,
        head: format!(
            "UPDATE {table} SET {} FROM (VALUES ",
            assignments.join(", ")
        ),
        tail: format!(
            ") AS excluded({}) WHERE {}",
            columns.join(", "),
            condition.join(" AND ")
        ),
    };
    // Planned once now, with a row of NULLs, for its errors.
    let nulls = Batch::from_rows(&t.schema.types(), &[vec![Value::Null; t.schema.len()]])
        .map_err(|e| PlanError::Type(e.to_string()))?;
    plan_update(&update.sql(&nulls), catalog)?;
    Ok(update)
}

/// Plans `UPDATE` statement `sql`, which has no parameters.
pub(crate) fn plan_update(sql: &str, catalog: &Catalog) -> Result<Statement, PlanError> {
    let mut parsed = Parser::parse_sql(&GenericDialect {}, sql)
        .map_err(|e| PlanError::Syntax(format!("{e} (in ON CONFLICT ... DO UPDATE)")))?;
    let Some(sql::Statement::Update(u)) = parsed.pop() else {
        return Err(PlanError::Invalid(
            "ON CONFLICT ... DO UPDATE is not one UPDATE".into(),
        ));
    };
    let mut binder = Binder::new(Params::from_tokens(&[], &[])?, catalog);
    crate::dml::update(&u, catalog, &mut binder)
}

impl ConflictUpdate {
    /// The `UPDATE` that updates the stored rows the proposed rows `clashing` (full rows of
    /// the table) clash with: its query gives each stored row's identity and new values.
    pub fn sql(&self, clashing: &Batch) -> String {
        let types = clashing.types();
        let mut out = self.head.clone();
        for row in 0..clashing.num_rows() {
            if row > 0 {
                out.push_str(", ");
            }
            out.push('(');
            for (c, t) in types.iter().enumerate() {
                if c > 0 {
                    out.push_str(", ");
                }
                out.push_str(&typed_literal(&clashing.column(c).value(row), *t));
            }
            out.push(')');
        }
        out.push_str(&self.tail);
        out
    }
}

/// `value` as SQL of type `t`: `CAST('text' AS t)`, which reads back the value exactly.
fn typed_literal(value: &Value, t: DataType) -> String {
    match value {
        Value::Null => format!("CAST(NULL AS {t})"),
        v => format!("CAST('{}' AS {t})", v.to_string().replace('\'', "''")),
    }
}

/// Replaces the parameters of `e` by their values (typed literals).
fn inline_params(e: &mut sql::Expr, binder: &mut Binder<'_>) -> Result<(), PlanError> {
    let mut failed = None;
    let _ = sql::visit_expressions_mut(e, |x| {
        let sql::Expr::Value(v) = x else {
            return ControlFlow::<()>::Continue(());
        };
        let sql::Value::Placeholder(p) = &v.value else {
            return ControlFlow::Continue(());
        };
        let span = v.span;
        let literal = binder.params.index_of(p, span).and_then(|i| {
            let value = binder.params.value(i).cloned().unwrap_or(Value::Null);
            let text = match value.data_type() {
                Some(t) => typed_literal(&value, t),
                None => "NULL".to_string(),
            };
            Parser::new(&GenericDialect {})
                .try_with_sql(&text)
                .and_then(|mut p| p.parse_expr())
                .map_err(|e| PlanError::Syntax(e.to_string()))
        });
        match literal {
            Ok(l) => {
                *x = l;
                ControlFlow::Continue(())
            }
            Err(e) => {
                failed = Some(e);
                ControlFlow::Break(())
            }
        }
    });
    failed.map_or(Ok(()), Err)
}
