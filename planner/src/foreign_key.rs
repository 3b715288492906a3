//! Foreign keys as `CREATE TABLE` declares them (`col ... REFERENCES parent [(cols)]`, or
//! `[CONSTRAINT name] FOREIGN KEY (cols) REFERENCES parent [(cols)]`): resolved to column
//! positions and checked against the referenced table, which is an existing table or the new
//! table itself. The referenced columns are the parent's primary key, or the columns of one of
//! its unique indexes, as PostgreSQL requires; each pair of columns has one type. What weir
//! does not enforce (`MATCH FULL`, `DEFERRABLE`, ...) is an error naming it. The runtime
//! checks the rows of every write against these keys and carries out the `ON DELETE` and
//! `ON UPDATE` actions.

use crate::bind::unsupported;
use crate::catalog::{Catalog, ForeignKey, IndexDef, ReferentialAction};
use crate::error::PlanError;
use sqlparser::ast::{self as sql, Spanned};
use weir_operators::Schema;

/// The table a `CREATE TABLE` makes, as far as its foreign keys need it (a key may reference
/// the table itself).
pub(crate) struct NewTable<'a> {
    /// Its name.
    pub name: &'a str,
    /// Its columns.
    pub schema: &'a Schema,
    /// Its primary key's columns.
    pub primary_key: &'a [usize],
    /// Its indexes (the unique ones its UNIQUE constraints make).
    pub indexes: &'a [IndexDef],
}

/// The foreign key `fk` declares on columns `columns` of `table` (for a column's
/// `REFERENCES`, that column; else the constraint's own), checked; `parent_name` is the
/// name it references (`fk.foreign_table`'s). `taken` are the names of the table's keys
/// resolved before it.
pub(crate) fn resolve(
    fk: &sql::ForeignKeyConstraint,
    parent_name: String,
    columns: Vec<usize>,
    table: &NewTable<'_>,
    catalog: &Catalog,
    taken: &[ForeignKey],
) -> Result<ForeignKey, PlanError> {
    let at = fk.foreign_table.span();
    if fk.index_name.is_some() {
        return Err(unsupported("an index name on a FOREIGN KEY", at));
    }
    if let Some(
        kind @ (sql::ConstraintReferenceMatchKind::Full
        | sql::ConstraintReferenceMatchKind::Partial),
    ) = &fk.match_kind
    {
        return Err(unsupported(
            format!("{kind} on a foreign key (weir's keys are MATCH SIMPLE)"),
            at,
        ));
    }
    if let Some(c) = &fk.characteristics {
        return Err(unsupported(format!("{c} on a foreign key"), at));
    }
    let on_delete = action(fk.on_delete);
    let on_update = action(fk.on_update);
    let itself = parent_name.eq_ignore_ascii_case(table.name);
    let (parent, schema, primary_key, indexes) = if itself {
        (
            table.name.to_string(),
            table.schema,
            table.primary_key,
            table.indexes,
        )
    } else {
        let p = catalog
            .table(&parent_name)
            .ok_or_else(|| PlanError::UnknownTable(parent_name.clone()))?;
        (
            p.name.clone(),
            &p.schema,
            p.primary_key.as_slice(),
            p.indexes.as_slice(),
        )
    };
    let parent_columns: Vec<usize> = if fk.referred_columns.is_empty() {
        if primary_key.is_empty() {
            return Err(PlanError::Invalid(format!(
                "table '{parent}' has no primary key for a foreign key of table '{}' to reference: name the referenced columns",
                table.name
            )));
        }
        primary_key.to_vec()
    } else {
        fk.referred_columns
            .iter()
            .map(|c| {
                schema
                    .index_of(&c.value)
                    .ok_or_else(|| PlanError::UnknownColumn {
                        name: format!("{parent}.{}", c.value),
                        position: crate::bind::pos(c.span),
                    })
            })
            .collect::<Result<_, _>>()?
    };
    if parent_columns.len() != columns.len() {
        return Err(PlanError::Invalid(format!(
            "a foreign key of table '{}' has {} column(s) but references {} of table '{parent}'",
            table.name,
            columns.len(),
            parent_columns.len()
        )));
    }
    let mut wanted = parent_columns.clone();
    wanted.sort_unstable();
    let unique_on = |cols: &[usize]| {
        let mut cols = cols.to_vec();
        cols.sort_unstable();
        cols == wanted
    };
    if !(unique_on(primary_key) || indexes.iter().any(|i| i.unique && unique_on(&i.columns()))) {
        return Err(PlanError::Invalid(format!(
            "there is no primary key or unique constraint on column(s) ({}) of table '{parent}' for a foreign key of table '{}' to reference",
            names(schema, &parent_columns),
            table.name
        )));
    }
    for (&c, &p) in columns.iter().zip(&parent_columns) {
        let (child, referenced) = (&table.schema.fields[c], &schema.fields[p]);
        if child.data_type != referenced.data_type {
            return Err(PlanError::Invalid(format!(
                "foreign key column '{}' of table '{}' is {} but the column '{}' of table '{parent}' it references is {}",
                child.name, table.name, child.data_type, referenced.name, referenced.data_type
            )));
        }
    }
    let name = match &fk.name {
        Some(n) => n.value.clone(),
        None => format!(
            "{}_{}_fkey",
            table.name,
            names(table.schema, &columns).replace(", ", "_")
        ),
    };
    if taken.iter().any(|k| k.name.eq_ignore_ascii_case(&name)) {
        return Err(PlanError::Invalid(format!(
            "table '{}' has two foreign keys named '{name}'",
            table.name
        )));
    }
    Ok(ForeignKey {
        name,
        columns,
        parent,
        parent_columns,
        on_delete,
        on_update,
    })
}

/// The referential action of an `ON DELETE` or `ON UPDATE` clause (`NO ACTION` when not
/// given); weir carries out all five.
fn action(given: Option<sql::ReferentialAction>) -> ReferentialAction {
    match given {
        None | Some(sql::ReferentialAction::NoAction) => ReferentialAction::NoAction,
        Some(sql::ReferentialAction::Restrict) => ReferentialAction::Restrict,
        Some(sql::ReferentialAction::Cascade) => ReferentialAction::Cascade,
        Some(sql::ReferentialAction::SetNull) => ReferentialAction::SetNull,
        Some(sql::ReferentialAction::SetDefault) => ReferentialAction::SetDefault,
    }
}

/// The names of columns `columns` of `schema`, separated by commas.
fn names(schema: &Schema, columns: &[usize]) -> String {
    columns
        .iter()
        .map(|&c| schema.fields[c].name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}
