//! `COMMENT ON TABLE t IS '...'` and `COMMENT ON COLUMN t.c IS '...'` (as `pg_dump` writes
//! them, schema-qualified or not): a change to the table's definition, made as `ALTER TABLE`'s
//! are. Comments on other objects are refused naming the kind.

use crate::bind::unsupported;
use crate::catalog::alter::TableChange;
use crate::catalog::Catalog;
use crate::error::PlanError;
use crate::statement::Statement;
use sqlparser::ast::{self as sql, Spanned};

/// The identifiers of `name`, without a leading `public.` (weir's one schema).
fn parts(name: &sql::ObjectName) -> Result<Vec<&sql::Ident>, PlanError> {
    let mut ids = name
        .0
        .iter()
        .map(|p| match p {
            sql::ObjectNamePart::Identifier(id) => Ok(id),
            _ => Err(unsupported(format!("name {name}"), name.span())),
        })
        .collect::<Result<Vec<_>, _>>()?;
    if ids.len() > 1 && ids[0].value.eq_ignore_ascii_case("public") {
        ids.remove(0);
    }
    Ok(ids)
}

/// `COMMENT ON {TABLE | COLUMN} name IS {'text' | NULL}`.
pub(crate) fn plan_comment(
    object_type: sql::CommentObject,
    name: &sql::ObjectName,
    text: Option<&String>,
    if_exists: bool,
    catalog: &Catalog,
) -> Result<Statement, PlanError> {
    let ids = parts(name)?;
    let (table, column) = match (object_type, ids.as_slice()) {
        (sql::CommentObject::Table, [table]) => (*table, None),
        (sql::CommentObject::Column, [table, column]) => (*table, Some(*column)),
        (sql::CommentObject::Table | sql::CommentObject::Column, _) => {
            return Err(PlanError::Invalid(format!(
                "COMMENT ON {object_type} needs a name of the form {}, got {name}",
                if object_type == sql::CommentObject::Table {
                    "table"
                } else {
                    "table.column"
                }
            )))
        }
        (other, _) => {
            return Err(unsupported(
                format!("COMMENT ON {other} (weir keeps comments of tables and columns)"),
                name.span(),
            ))
        }
    };
    let Some(def) = catalog.table(&table.value) else {
        if if_exists {
            return Ok(Statement::AlterTable {
                table: table.value.clone(),
                change: None,
            });
        }
        return Err(match catalog.view(&table.value) {
            Some(_) => unsupported(
                format!("COMMENT ON {object_type} of view '{}'", table.value),
                name.span(),
            ),
            None => PlanError::UnknownTable(table.value.clone()),
        });
    };
    let column = column
        .map(|c| {
            def.schema
                .index_of(&c.value)
                .ok_or_else(|| PlanError::UnknownColumn {
                    name: format!("{}.{}", def.name, c.value),
                    position: crate::bind::pos(c.span),
                })
        })
        .transpose()?;
    Ok(Statement::AlterTable {
        table: def.name.clone(),
        change: Some(TableChange::SetComment {
            column,
            text: text.cloned(),
        }),
    })
}
