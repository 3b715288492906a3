//! DDL and DML statements: `CREATE TABLE`, `CREATE INDEX`, `DROP TABLE` and
//! `INSERT ... VALUES`.

use crate::bind::{constant_value, map_type, unsupported, Binder};
use crate::catalog::{Catalog, TableDef};
use crate::error::PlanError;
use crate::statement::Statement;
use sqlparser::ast::{self as sql, Spanned};
use weir_operators::{Batch, Field, Schema, Value};

fn object_name(n: &sql::ObjectName) -> Result<String, PlanError> {
    match n.0.last() {
        Some(sql::ObjectNamePart::Identifier(id)) => Ok(id.value.clone()),
        _ => Err(unsupported(format!("name {n}"), n.span())),
    }
}

fn index_column(c: &sql::IndexColumn, schema: &Schema, table: &str) -> Result<usize, PlanError> {
    match &c.column.expr {
        sql::Expr::Identifier(id) => {
            schema
                .index_of(&id.value)
                .ok_or_else(|| PlanError::UnknownColumn {
                    name: id.value.clone(),
                    position: crate::bind::pos(id.span),
                })
        }
        other => Err(unsupported(
            format!("index on expression '{other}' of table '{table}'"),
            other.span(),
        )),
    }
}

/// `CREATE TABLE`. A table without a declared primary key has none: it keeps every row and
/// places rows by a hidden row id.
pub(crate) fn create_table(
    ct: &sql::CreateTable,
    catalog: &Catalog,
    partitions: u32,
) -> Result<Statement, PlanError> {
    let name = object_name(&ct.name)?;
    if ct.query.is_some() {
        return Err(unsupported("CREATE TABLE ... AS SELECT", ct.name.span()));
    }
    if let Some(existing) = catalog.table(&name) {
        if ct.if_not_exists {
            return Ok(Statement::CreateTable(existing.clone()));
        }
        return Err(PlanError::TableExists(name));
    }
    if ct.columns.is_empty() {
        return Err(PlanError::Invalid(format!("table '{name}' has no columns")));
    }
    let mut fields: Vec<Field> = Vec::new();
    let mut pk: Option<usize> = None;
    for (i, c) in ct.columns.iter().enumerate() {
        if fields
            .iter()
            .any(|f| f.name.eq_ignore_ascii_case(&c.name.value))
        {
            return Err(PlanError::Invalid(format!(
                "column '{}' specified more than once",
                c.name.value
            )));
        }
        let t = map_type(&c.data_type, c.span())?;
        fields.push(Field::new(c.name.value.clone(), t));
        for o in &c.options {
            match &o.option {
                sql::ColumnOption::PrimaryKey(_) => {
                    if pk.is_some() {
                        return Err(PlanError::Invalid(format!(
                            "table '{name}' has more than one primary key"
                        )));
                    }
                    pk = Some(i);
                }
                sql::ColumnOption::Null | sql::ColumnOption::NotNull => {}
                sql::ColumnOption::Unique(_) => {}
                _ => return Err(unsupported("column option", o.span())),
            }
        }
    }
    let schema = Schema::new(fields);
    for c in &ct.constraints {
        match c {
            sql::TableConstraint::PrimaryKey(p) => {
                if pk.is_some() {
                    return Err(PlanError::Invalid(format!(
                        "table '{name}' has more than one primary key"
                    )));
                }
                let [col] = p.columns.as_slice() else {
                    return Err(unsupported("composite primary keys", c.span()));
                };
                pk = Some(index_column(col, &schema, &name)?);
            }
            _ => return Err(unsupported("table constraint", c.span())),
        }
    }
    Ok(Statement::CreateTable(TableDef {
        name,
        schema,
        primary_key: pk,
        indexes: Vec::new(),
        partitions: partitions.max(1),
    }))
}

/// `CREATE INDEX name ON table(column)`.
pub(crate) fn create_index(
    ci: &sql::CreateIndex,
    catalog: &Catalog,
) -> Result<Statement, PlanError> {
    let tname = object_name(&ci.table_name)?;
    let t = catalog
        .table(&tname)
        .ok_or_else(|| PlanError::UnknownTable(tname.clone()))?;
    if ci.predicate.is_some() {
        return Err(unsupported("partial indexes", ci.table_name.span()));
    }
    let [col] = ci.columns.as_slice() else {
        return Err(unsupported("multi-column indexes", ci.table_name.span()));
    };
    let column = index_column(col, &t.schema, &t.name)?;
    let name = match &ci.name {
        Some(n) => object_name(n)?,
        None => format!("{}_{}_idx", t.name, t.schema.fields[column].name),
    };
    if let Some(existing) = t
        .indexes
        .iter()
        .find(|i| i.name.eq_ignore_ascii_case(&name))
    {
        if !(ci.if_not_exists && existing.column == column) {
            return Err(PlanError::IndexExists(name));
        }
        return Ok(Statement::CreateIndex {
            name: existing.name.clone(),
            table: t.name.clone(),
            column,
        });
    }
    Ok(Statement::CreateIndex {
        name,
        table: t.name.clone(),
        column,
    })
}

/// `INSERT INTO t [(cols)] VALUES (...), ...`. The rows are only evaluated and type-checked
/// here: the storage refuses a NULL or duplicate primary key, for the whole statement.
pub(crate) fn insert(
    ins: &sql::Insert,
    catalog: &Catalog,
    binder: &mut Binder<'_>,
) -> Result<Statement, PlanError> {
    let tname = match &ins.table {
        sql::TableObject::TableName(n) => object_name(n)?,
        _ => {
            return Err(unsupported(
                "INSERT into a table function",
                ins.insert_token.0.span,
            ))
        }
    };
    let t = catalog
        .table(&tname)
        .ok_or_else(|| PlanError::UnknownTable(tname.clone()))?;
    if ins.on.is_some() || ins.returning.is_some() || ins.or.is_some() || ins.ignore {
        return Err(unsupported("INSERT clauses", ins.insert_token.0.span));
    }
    let targets: Vec<usize> = if ins.columns.is_empty() {
        (0..t.schema.len()).collect()
    } else {
        let mut v = Vec::new();
        for c in &ins.columns {
            let cname = object_name(c)?;
            let i = t
                .schema
                .index_of(&cname)
                .ok_or_else(|| PlanError::UnknownColumn {
                    name: cname.clone(),
                    position: crate::bind::pos(c.span()),
                })?;
            if v.contains(&i) {
                return Err(PlanError::Invalid(format!(
                    "column '{cname}' specified more than once"
                )));
            }
            v.push(i);
        }
        v
    };
    let source = ins
        .source
        .as_ref()
        .ok_or_else(|| unsupported("INSERT without VALUES", ins.insert_token.0.span))?;
    let values = match source.body.as_ref() {
        sql::SetExpr::Values(v) => v,
        other => return Err(unsupported("INSERT ... SELECT", other.span())),
    };
    let mut rows = Vec::with_capacity(values.rows.len());
    for row in &values.rows {
        let row = &row.content;
        if row.len() != targets.len() {
            return Err(PlanError::Invalid(format!(
                "INSERT into '{}' has {} target columns but {} values",
                t.name,
                targets.len(),
                row.len()
            )));
        }
        let mut full = vec![Value::Null; t.schema.len()];
        for (e, &c) in row.iter().zip(&targets) {
            let f = &t.schema.fields[c];
            full[c] = constant_value(e, binder, f.data_type, &f.name)?;
        }
        rows.push(full);
    }
    binder.params.check_types()?;
    let batch =
        Batch::from_rows(&t.schema.types(), &rows).map_err(|e| PlanError::Type(e.to_string()))?;
    Ok(Statement::Insert {
        table: t.name.clone(),
        batch,
    })
}

/// `DROP TABLE [IF EXISTS] name`.
pub(crate) fn drop_table(
    names: &[sql::ObjectName],
    if_exists: bool,
    catalog: &Catalog,
) -> Result<Statement, PlanError> {
    let [n] = names else {
        return Err(unsupported(
            "dropping several tables at once",
            names
                .first()
                .map(|n| n.span())
                .unwrap_or(sqlparser::tokenizer::Span::empty()),
        ));
    };
    let name = object_name(n)?;
    match catalog.table(&name) {
        Some(t) => Ok(Statement::DropTable {
            name: t.name.clone(),
            if_exists,
        }),
        None if if_exists => Ok(Statement::DropTable { name, if_exists }),
        None => Err(PlanError::UnknownTable(name)),
    }
}
