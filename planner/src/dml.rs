//! `UPDATE` and `DELETE`: each is planned as a query over the target table that finds the
//! affected rows (with whatever WHERE the SELECT path supports, subqueries included) and gives,
//! per row, what the write needs: the row's identity (its primary-key columns, or every column
//! for a table without a key) and, for an UPDATE, the row's new values.

use crate::bind::{contains_window, implicit_cast, unsupported, Binder, BoundQuery};
use crate::catalog::{Catalog, TableDef};
use crate::ddl::object_name;
use crate::error::PlanError;
use crate::statement::Statement;
use sqlparser::ast::{self as sql, Spanned};
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::Span;
use weir_operators::{DataType, Expr, Field, Value};

/// The columns that identify a stored row of `t`: its primary key, or every column when it
/// has none (rows equal in every column are indistinguishable, so they change together).
pub fn identity_columns(t: &TableDef) -> Vec<usize> {
    if t.has_key() {
        t.primary_key.clone()
    } else {
        (0..t.schema.len()).collect()
    }
}

/// The table a DML statement writes: a plain table name, maybe aliased, without joins.
fn target<'c>(
    twj: &sql::TableWithJoins,
    what: &str,
    catalog: &'c Catalog,
) -> Result<&'c TableDef, PlanError> {
    if let Some(j) = twj.joins.first() {
        return Err(unsupported(
            format!("{what} with a JOIN"),
            j.relation.span(),
        ));
    }
    let sql::TableFactor::Table { name, args, .. } = &twj.relation else {
        return Err(unsupported(
            format!("{what} of '{}' (only a table)", twj.relation),
            twj.relation.span(),
        ));
    };
    if args.is_some() {
        return Err(unsupported(
            format!("{what} of a table function"),
            name.span(),
        ));
    }
    let tname = object_name(name)?;
    match catalog.table(&tname) {
        Some(t) => t.refuse_external(what).map(|()| t),
        None if catalog.view(&tname).is_some() => Err(unsupported(
            format!("{what} of view '{tname}'"),
            name.span(),
        )),
        None => Err(PlanError::UnknownTable(tname)),
    }
}

/// A quoted column reference, so that any column name resolves as written; qualified by the
/// target table's name or alias where other tables are in scope (`UPDATE ... FROM`).
fn column_ref(name: &str, table: Option<&str>) -> sql::Expr {
    let column = sql::Ident::with_quote('"', name);
    match table {
        Some(t) => sql::Expr::CompoundIdentifier(vec![sql::Ident::with_quote('"', t), column]),
        None => sql::Expr::Identifier(column),
    }
}

/// The alias the target table `twj` is given in its statement, if any.
fn table_alias(twj: &sql::TableWithJoins) -> Option<&sql::TableAlias> {
    match &twj.relation {
        sql::TableFactor::Table { alias, .. } => alias.as_ref(),
        _ => None,
    }
}

/// The name the target table `twj` goes by in its statement: its alias, else its name.
fn target_name(twj: &sql::TableWithJoins) -> Result<String, PlanError> {
    match &twj.relation {
        sql::TableFactor::Table { alias: Some(a), .. } => Ok(a.name.value.clone()),
        sql::TableFactor::Table { name, .. } => object_name(name),
        other => Err(unsupported(format!("DML of '{other}'"), other.span())),
    }
}

/// Binds `SELECT items FROM twj [WHERE selection]` (the statement's own table and WHERE, so
/// errors point into the statement).
fn bind_select(
    items: Vec<sql::Expr>,
    twj: &sql::TableWithJoins,
    selection: Option<&sql::Expr>,
    binder: &mut Binder<'_>,
) -> Result<BoundQuery, PlanError> {
    let q = select_query(items, vec![twj.clone()], selection)?;
    binder.query(&q)
}

/// The query `SELECT items FROM from [WHERE selection]`.
fn select_query(
    items: Vec<sql::Expr>,
    from: Vec<sql::TableWithJoins>,
    selection: Option<&sql::Expr>,
) -> Result<sql::Query, PlanError> {
    let template = Parser::parse_sql(&GenericDialect {}, "SELECT 1 FROM t")
        .ok()
        .and_then(|mut v| v.pop());
    let Some(sql::Statement::Query(mut q)) = template else {
        return Err(PlanError::Invalid(
            "cannot build the query of a DML statement".into(),
        ));
    };
    let sql::SetExpr::Select(select) = q.body.as_mut() else {
        return Err(PlanError::Invalid(
            "cannot build the query of a DML statement".into(),
        ));
    };
    select.projection = items
        .into_iter()
        .map(sql::SelectItem::UnnamedExpr)
        .collect();
    select.from = from;
    select.selection = selection.cloned();
    Ok(*q)
}

/// The bound column `i` converted to `f`'s type, or a type error naming the column.
fn convert(i: usize, given: DataType, f: &Field, t: &TableDef) -> Result<Expr, PlanError> {
    if given == f.data_type {
        Ok(Expr::Column(i))
    } else if (given.is_numeric() && f.data_type.is_numeric()) || implicit_cast(given, f.data_type)
    {
        Ok(Expr::Cast {
            expr: Box::new(Expr::Column(i)),
            to: f.data_type,
        })
    } else {
        Err(PlanError::Type(format!(
            "column '{}' of table '{}' is {} but UPDATE sets it to a {given} value",
            f.name, t.name, f.data_type
        )))
    }
}

fn is_null_literal(e: &sql::Expr) -> bool {
    matches!(e, sql::Expr::Value(v) if v.value == sql::Value::Null)
}

/// `DELETE FROM t [USING u, ...] [WHERE cond]`: a row of `t` is deleted when `cond` holds
/// for it and some row of the USING tables, as `WHERE EXISTS (SELECT 1 FROM u, ... WHERE
/// cond)` (which the optimizer unnests into a semi join).
pub(crate) fn delete(
    d: &sql::Delete,
    catalog: &Catalog,
    binder: &mut Binder<'_>,
) -> Result<Statement, PlanError> {
    let at = d.delete_token.0.span;
    let refuse = |what: &str| Err(unsupported(what, at));
    if !d.tables.is_empty() {
        return refuse("multi-table DELETE");
    }
    if d.output.is_some() {
        return refuse("OUTPUT");
    }
    if !d.order_by.is_empty() {
        return refuse("ORDER BY in DELETE");
    }
    if d.limit.is_some() {
        return refuse("LIMIT in DELETE");
    }
    if d.on_cluster.is_some() || d.settings.is_some() || !d.optimizer_hints.is_empty() {
        return refuse("this DELETE form (only DELETE FROM t [WHERE ...])");
    }
    let (sql::FromTable::WithFromKeyword(from) | sql::FromTable::WithoutKeyword(from)) = &d.from;
    let [twj] = from.as_slice() else {
        return refuse("DELETE from several tables");
    };
    let t = target(twj, "DELETE", catalog)?;
    let returning = match &d.returning {
        Some(items) => Some(Box::new(crate::ddl::returning(
            t,
            table_alias(twj),
            items,
            binder,
        )?)),
        None => None,
    };
    // With RETURNING, each row's identity and then the whole row.
    let whole: Vec<usize> = match returning {
        Some(_) => (0..t.schema.len()).collect(),
        None => Vec::new(),
    };
    let items = identity_columns(t)
        .iter()
        .chain(&whole)
        .map(|&c| column_ref(&t.schema.fields[c].name, None))
        .collect();
    let using = match &d.using {
        Some(using) => {
            let one = sql::Expr::value(sql::Value::Number("1".into(), false));
            let q = select_query(vec![one], using.clone(), d.selection.as_ref())?;
            Some(sql::Expr::Exists {
                subquery: Box::new(q),
                negated: false,
            })
        }
        None => None,
    };
    let selection = using.as_ref().or(d.selection.as_ref());
    let bound = bind_select(items, twj, selection, binder)?;
    let query = crate::query::plan_with_constants(bound, catalog, binder)?;
    Ok(Statement::Delete {
        table: t.name.clone(),
        query: Box::new(query),
        returning,
    })
}

/// The column an assignment sets.
fn assigned_column(a: &sql::Assignment, t: &TableDef) -> Result<usize, PlanError> {
    let name = match &a.target {
        sql::AssignmentTarget::ColumnName(n) => n,
        sql::AssignmentTarget::Tuple(_) => {
            return Err(unsupported(
                "assigning a tuple of columns in UPDATE",
                a.target.span(),
            ))
        }
    };
    let cname = object_name(name)?;
    t.schema
        .index_of(&cname)
        .ok_or_else(|| PlanError::UnknownColumn {
            name: cname,
            position: crate::bind::pos(name.span()),
        })
}

/// `UPDATE t SET col = expr [, ...] [FROM u, ...] [WHERE cond]`. With FROM, the rows of `t`
/// are joined with those of the FROM tables under `cond`, and the SET expressions read both;
/// a row of `t` that more than one row of them matches is an error (its key would be written
/// twice). A table without a primary key cannot be updated FROM other tables (its rows have
/// no identity that tells the matches of one row apart).
pub(crate) fn update(
    u: &sql::Update,
    catalog: &Catalog,
    binder: &mut Binder<'_>,
) -> Result<Statement, PlanError> {
    let at: Span = u.update_token.0.span;
    let refuse = |what: &str| Err(unsupported(what, at));
    if u.output.is_some() {
        return refuse("OUTPUT");
    }
    if let Some(or) = &u.or {
        return refuse(&format!("UPDATE {or}"));
    }
    if !u.order_by.is_empty() {
        return refuse("ORDER BY in UPDATE");
    }
    if u.limit.is_some() {
        return refuse("LIMIT in UPDATE");
    }
    if u.on_cluster.is_some() || u.settings.is_some() || !u.optimizer_hints.is_empty() {
        return refuse("this UPDATE form (only UPDATE t SET ... [WHERE ...])");
    }
    let t = target(&u.table, "UPDATE", catalog)?;
    let returning = match &u.returning {
        Some(items) => Some(Box::new(crate::ddl::returning(
            t,
            table_alias(&u.table),
            items,
            binder,
        )?)),
        None => None,
    };
    let from = match &u.from {
        Some(sql::UpdateTableFromKind::AfterSet(f) | sql::UpdateTableFromKind::BeforeSet(f)) => {
            if !t.has_key() {
                return refuse("UPDATE ... FROM of a table without a primary key");
            }
            Some(f.clone())
        }
        None => None,
    };
    // With FROM, the target's columns are named with its name (or alias).
    let qualifier = match from {
        Some(_) => Some(target_name(&u.table)?),
        None => None,
    };
    let qualifier = qualifier.as_deref();
    // The new value of every column: its assignment, or the column itself.
    let mut values: Vec<Option<&sql::Expr>> = vec![None; t.schema.len()];
    for a in &u.assignments {
        let c = assigned_column(a, t)?;
        if contains_window(&a.value) {
            // As PostgreSQL and SQLite: an UPDATE's rows have no window to number.
            return Err(PlanError::Invalid(format!(
                "window functions are not allowed in UPDATE{}",
                crate::bind::at(a.value.span())
            )));
        }
        // A column assigned more than once takes its last value, as SQLite and MySQL have it
        // (PostgreSQL refuses the statement).
        values[c] = Some(&a.value);
    }
    let identity = identity_columns(t);
    let mut items: Vec<sql::Expr> = identity
        .iter()
        .map(|&c| column_ref(&t.schema.fields[c].name, qualifier))
        .collect();
    for (c, v) in values.iter().enumerate() {
        items.push(match v {
            Some(e) if !is_null_literal(e) => (*e).clone(),
            _ => column_ref(&t.schema.fields[c].name, qualifier),
        });
    }
    let bound = match from {
        None => bind_select(items, &u.table, u.selection.as_ref(), binder)?,
        Some(from) => {
            let mut tables = vec![u.table.clone()];
            tables.extend(from);
            let q = select_query(items, tables, u.selection.as_ref())?;
            binder.query(&q)?
        }
    };
    let mut exprs = Vec::with_capacity(identity.len() + t.schema.len());
    let mut fields = Vec::with_capacity(identity.len() + t.schema.len());
    for (i, &c) in identity.iter().enumerate() {
        exprs.push(Expr::Column(i));
        fields.push(t.schema.fields[c].clone());
    }
    for (c, f) in t.schema.fields.iter().enumerate() {
        let i = identity.len() + c;
        let e = match values[c] {
            Some(v) if is_null_literal(v) => {
                if t.not_null.contains(&c) || t.primary_key.contains(&c) {
                    return Err(crate::ddl::null_in_not_null(t, c));
                }
                Expr::Cast {
                    expr: Box::new(Expr::Literal(Value::Null)),
                    to: f.data_type,
                }
            }
            _ => convert(i, bound.fields[i].data_type, f, t)?,
        };
        exprs.push(e);
        fields.push(f.clone());
    }
    let plan = bound.plan.project(exprs, fields.clone());
    let query = crate::query::plan_with_constants(BoundQuery { plan, fields }, catalog, binder)?;
    Ok(Statement::Update {
        table: t.name.clone(),
        query: Box::new(query),
        returning,
        assigned: (0..values.len()).filter(|&c| values[c].is_some()).collect(),
    })
}
