//! `ALTER TABLE` read from the statement: one change to a table, checked against the
//! catalog ([`plan_alter_table`]). The catalog takes it in [`crate::alter_catalog`].

use crate::bind::{constant_value, map_type, unsupported, Binder, Scope};
use crate::catalog::alter::TableChange;
use crate::catalog::{Catalog, DefaultValue, TableDef};
use crate::ddl::object_name;
use crate::error::PlanError;
use crate::sequences;
use crate::statement::Statement;
use sqlparser::ast::{self as sql, Spanned};
use weir_operators::{Field, Value};

/// `ALTER TABLE [IF EXISTS] name <one change>`: `ADD [COLUMN] [IF NOT EXISTS]`, `DROP
/// [COLUMN] [IF EXISTS]`, `RENAME [COLUMN] a TO b`, `RENAME TO`, `ALTER [COLUMN] c SET
/// DEFAULT`/`DROP DEFAULT`/`SET NOT NULL`/`DROP NOT NULL`. Anything else is refused naming it.
pub(crate) fn plan_alter_table(
    at: &sql::AlterTable,
    catalog: &Catalog,
    binder: &mut Binder<'_>,
) -> Result<Statement, PlanError> {
    let name = object_name(&at.name)?;
    if at.table_type.is_some() || at.on_cluster.is_some() || at.location.is_some() {
        return Err(unsupported("this ALTER TABLE form", at.name.span()));
    }
    let op = match at.operations.as_slice() {
        [op] => op,
        [] => return Err(PlanError::Syntax("ALTER TABLE without a change".into())),
        [_, second, ..] => {
            return Err(unsupported(
                "several changes in one ALTER TABLE (write one ALTER TABLE per change)",
                second.span(),
            ))
        }
    };
    if let sql::AlterTableOperation::OwnerTo { .. } = op {
        // weir has no roles: every relation is the one user's, and a new owner changes
        // nothing (as `pg_dump`'s scripts write it after each relation).
        let known = catalog.table(&name).is_some()
            || catalog.view(&name).is_some()
            || catalog
                .resolve_sequence(&crate::sequence_names::unqualified(&name))
                .is_ok();
        if !known && !at.if_exists {
            return Err(PlanError::UnknownTable(name));
        }
        return Ok(Statement::AlterTable {
            table: name,
            change: None,
        });
    }
    let Some(def) = catalog.table(&name) else {
        if at.if_exists {
            return Ok(Statement::AlterTable {
                table: name,
                change: None,
            });
        }
        if catalog.view(&name).is_some() {
            return Err(PlanError::Invalid(format!(
                "'{name}' is a view: ALTER TABLE changes tables (CREATE OR REPLACE VIEW changes a view)"
            )));
        }
        return Err(PlanError::UnknownTable(name));
    };
    if let sql::AlterTableOperation::AddConstraint {
        constraint: sql::TableConstraint::Unique(u),
        not_valid: false,
    } = op
    {
        return unique_constraint(u, def);
    }
    let change = table_change(op, def, catalog, binder)?;
    Ok(Statement::AlterTable {
        table: def.name.clone(),
        change,
    })
}

/// `DROP INDEX [IF EXISTS] name [ON table]`: the index of that name, on whichever table has
/// it (index names are per table in weir: a name on several tables needs `ON table`).
pub(crate) fn drop_index(
    names: &[sql::ObjectName],
    on: Option<&sql::ObjectName>,
    if_exists: bool,
    catalog: &Catalog,
) -> Result<Statement, PlanError> {
    let [name] = names else {
        return Err(unsupported(
            "dropping several indexes at once",
            names
                .get(1)
                .map_or(sqlparser::tokenizer::Span::empty(), |n| n.span()),
        ));
    };
    let name = object_name(name)?;
    let on = on.map(object_name).transpose()?;
    let holders: Vec<&TableDef> = catalog
        .tables()
        .filter(|t| on.as_ref().is_none_or(|o| t.name.eq_ignore_ascii_case(o)))
        .filter(|t| t.indexes.iter().any(|i| i.name.eq_ignore_ascii_case(&name)))
        .collect();
    match holders.as_slice() {
        [t] => Ok(Statement::AlterTable {
            table: t.name.clone(),
            change: Some(TableChange::DropIndex { name }),
        }),
        [] if if_exists => Ok(Statement::AlterTable {
            table: on.unwrap_or_default(),
            change: None,
        }),
        [] => Err(PlanError::Invalid(format!("no index named '{name}'"))),
        several => Err(PlanError::Invalid(format!(
            "index name '{name}' is on tables {}: write DROP INDEX {name} ON table",
            several
                .iter()
                .map(|t| t.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// The position of column `id` in `def`, or the error naming it.
fn column_of(def: &TableDef, id: &sql::Ident) -> Result<usize, PlanError> {
    def.schema
        .index_of(&id.value)
        .ok_or_else(|| PlanError::UnknownColumn {
            name: format!("{}.{}", def.name, id.value),
            position: crate::bind::pos(id.span),
        })
}

/// What `op` changes in `def` (`None`: nothing, for `IF [NOT] EXISTS`).
fn table_change(
    op: &sql::AlterTableOperation,
    def: &TableDef,
    catalog: &Catalog,
    binder: &mut Binder<'_>,
) -> Result<Option<TableChange>, PlanError> {
    use sql::AlterTableOperation as Op;
    let change = match op {
        Op::AddConstraint {
            constraint: sql::TableConstraint::ForeignKey(fk),
            not_valid: false,
        } => TableChange::AddForeignKey(foreign_key(fk, def, catalog)?),
        Op::AddConstraint {
            constraint: sql::TableConstraint::PrimaryKey(pk),
            not_valid: false,
        } if crate::ddl::plain_primary_key(pk) => {
            if !def.primary_key.is_empty() {
                return Err(PlanError::Invalid(format!(
                    "multiple primary keys for table '{}' are not allowed",
                    def.name
                )));
            }
            TableChange::AddPrimaryKey {
                columns: pk
                    .columns
                    .iter()
                    .map(|c| crate::ddl::index_column(c, &def.schema, &def.name))
                    .collect::<Result<_, _>>()?,
            }
        }
        Op::DropConstraint {
            if_exists,
            name,
            drop_behavior,
        } => {
            if matches!(drop_behavior, Some(sql::DropBehavior::Cascade)) {
                return Err(unsupported("DROP CONSTRAINT ... CASCADE", op.span()));
            }
            let fk = def
                .foreign_keys
                .iter()
                .find(|k| k.name.eq_ignore_ascii_case(&name.value));
            let check = def
                .checks
                .iter()
                .find(|k| k.name.eq_ignore_ascii_case(&name.value));
            match (fk, check) {
                (Some(fk), _) => TableChange::DropForeignKey {
                    name: fk.name.clone(),
                },
                (None, Some(check)) => TableChange::DropCheck {
                    name: check.name.clone(),
                },
                (None, None) if *if_exists => return Ok(None),
                (None, None) => {
                    return Err(PlanError::Invalid(format!(
                    "table '{}' has no foreign key or CHECK constraint named '{}' (DROP CONSTRAINT drops those)",
                    def.name, name.value
                )))
                }
            }
        }
        Op::AddConstraint {
            constraint: sql::TableConstraint::Check(check),
            not_valid: false,
        } if !check.no_inherit && check.enforced != Some(false) => {
            let read = crate::checks::columns_read(&check.expr.to_string());
            let name = match &check.name {
                Some(n) => n.value.clone(),
                None => crate::checks::default_name(
                    &def.name,
                    match read.as_slice() {
                        [only] => Some(only.as_str()),
                        _ => None,
                    },
                    &def.checks,
                ),
            };
            TableChange::AddCheck(crate::checks::check_constraint(
                &def.name,
                &def.schema,
                name,
                &check.expr,
                catalog,
            )?)
        }
        Op::AddColumn {
            if_not_exists,
            column_def,
            column_position: None,
            ..
        } => {
            if *if_not_exists && def.schema.index_of(&column_def.name.value).is_some() {
                return Ok(None);
            }
            added_column(column_def, def, binder)?
        }
        Op::DropColumn {
            column_names,
            if_exists,
            drop_behavior,
            ..
        } => {
            if matches!(drop_behavior, Some(sql::DropBehavior::Cascade)) {
                return Err(unsupported("DROP COLUMN ... CASCADE", op.span()));
            }
            let [id] = column_names.as_slice() else {
                return Err(unsupported(
                    "dropping several columns at once (one DROP COLUMN per ALTER TABLE)",
                    op.span(),
                ));
            };
            if *if_exists && def.schema.index_of(&id.value).is_none() {
                return Ok(None);
            }
            TableChange::DropColumn {
                column: column_of(def, id)?,
            }
        }
        Op::RenameColumn {
            old_column_name,
            new_column_name,
        } => TableChange::RenameColumn {
            column: column_of(def, old_column_name)?,
            to: new_column_name.value.clone(),
        },
        Op::RenameTable {
            table_name: sql::RenameTableNameKind::To(to) | sql::RenameTableNameKind::As(to),
        } => TableChange::RenameTable {
            to: object_name(to)?,
        },
        Op::AlterColumn { column_name, op } => {
            let column = column_of(def, column_name)?;
            match op {
                sql::AlterColumnOperation::SetNotNull => TableChange::SetNotNull {
                    column,
                    not_null: true,
                },
                sql::AlterColumnOperation::DropNotNull => TableChange::SetNotNull {
                    column,
                    not_null: false,
                },
                sql::AlterColumnOperation::SetDefault { value } => {
                    let field = &def.schema.fields[column];
                    let (name, ty) = (&field.name, field.data_type);
                    let default = match sequences::checked_default_sequence(
                        value,
                        name,
                        ty,
                        binder.catalog,
                    )? {
                        // `nextval('s')`: each INSERT takes the sequence's next values.
                        Some(_) => DefaultValue::Expr(value.to_string()),
                        None => checked_default(value, field, binder)?.0,
                    };
                    TableChange::SetDefault {
                        column,
                        default: Some(default),
                    }
                }
                sql::AlterColumnOperation::DropDefault => TableChange::SetDefault {
                    column,
                    default: None,
                },
                sql::AlterColumnOperation::SetDataType {
                    data_type,
                    using: None,
                    ..
                } => {
                    let to = map_type(data_type, column_name.span)?;
                    let field = &def.schema.fields[column];
                    // The default must still give a value of the column's type.
                    if let Some(DefaultValue::Expr(text)) = def.default_of(column) {
                        let e = parse_default(text, &field.name)?;
                        let catalog = binder.catalog;
                        if sequences::checked_default_sequence(&e, &field.name, to, catalog)?
                            .is_none()
                        {
                            checked_default(&e, &Field::new(field.name.clone(), to), binder)?;
                        }
                    }
                    TableChange::SetType { column, to }
                }
                other => {
                    return Err(unsupported(
                        format!(
                            "ALTER COLUMN ... {other} (only SET/DROP DEFAULT, SET/DROP NOT NULL and TYPE without USING)"
                        ),
                        column_name.span,
                    ))
                }
            }
        }
        other => {
            return Err(unsupported(
                format!("{} in ALTER TABLE", first_words(&other.to_string())),
                other.span(),
            ))
        }
    };
    Ok(Some(change))
}

/// `ADD [CONSTRAINT name] UNIQUE (cols)`: a unique index (named as PostgreSQL names the
/// constraint when no name is given), built as `CREATE UNIQUE INDEX` builds one.
fn unique_constraint(u: &sql::UniqueConstraint, def: &TableDef) -> Result<Statement, PlanError> {
    if !crate::ddl::plain_unique(u) {
        return Err(unsupported(
            format!("{u} in ALTER TABLE (only UNIQUE (cols))"),
            u.span(),
        ));
    }
    let mut columns = Vec::with_capacity(u.columns.len());
    for c in &u.columns {
        let i = crate::ddl::index_column(c, &def.schema, &def.name)?;
        if columns.contains(&i) {
            return Err(PlanError::Invalid(format!(
                "column '{}' appears twice in a UNIQUE constraint of table '{}'",
                def.schema.fields[i].name, def.name
            )));
        }
        columns.push(i);
    }
    let Some((&first, further)) = columns.split_first() else {
        return Err(PlanError::Syntax("UNIQUE without columns".into()));
    };
    let names: Vec<&str> = columns
        .iter()
        .map(|&c| def.schema.fields[c].name.as_str())
        .collect();
    let name = u
        .name
        .as_ref()
        .map(|n| n.value.clone())
        .unwrap_or_else(|| format!("{}_{}_key", def.name, names.join("_")));
    Ok(Statement::CreateIndex {
        table: def.name.clone(),
        index: crate::catalog::IndexDef {
            name,
            column: first,
            further: further.to_vec(),
            unique: true,
        },
    })
}

/// `ADD [CONSTRAINT name] FOREIGN KEY (cols) REFERENCES parent [(cols)]` on `def`, resolved
/// as `CREATE TABLE` resolves one.
fn foreign_key(
    fk: &sql::ForeignKeyConstraint,
    def: &TableDef,
    catalog: &Catalog,
) -> Result<crate::catalog::ForeignKey, PlanError> {
    let mut columns = Vec::with_capacity(fk.columns.len());
    for col in &fk.columns {
        let i = column_of(def, col)?;
        if columns.contains(&i) {
            return Err(PlanError::Invalid(format!(
                "column '{}' appears twice in a FOREIGN KEY of table '{}'",
                def.schema.fields[i].name, def.name
            )));
        }
        columns.push(i);
    }
    let table = crate::foreign_key::NewTable {
        name: &def.name,
        schema: &def.schema,
        primary_key: &def.primary_key,
        indexes: &def.indexes,
    };
    let parent = object_name(&fk.foreign_table)?;
    crate::foreign_key::resolve(fk, parent, columns, &table, catalog, &def.foreign_keys)
}

/// The first words of an operation as written (up to four, none from a parenthesis on), to
/// name it in an error.
fn first_words(text: &str) -> String {
    text.split_whitespace()
        .take_while(|w| !w.starts_with('('))
        .take(4)
        .collect::<Vec<_>>()
        .join(" ")
        .to_uppercase()
}

/// `ADD COLUMN name type [DEFAULT expr] [NOT NULL | NULL]`. Keys, `UNIQUE`, references,
/// sequences and generated columns are refused (declare them in `CREATE TABLE`).
fn added_column(
    c: &sql::ColumnDef,
    def: &TableDef,
    binder: &mut Binder<'_>,
) -> Result<TableChange, PlanError> {
    crate::catalog::alter::check_new_column(&def.schema.fields, &c.name.value)?;
    if crate::ddl::is_serial(&c.data_type) {
        return Err(unsupported(
            format!(
                "adding SERIAL column '{}' (declare it in CREATE TABLE)",
                c.name.value
            ),
            c.name.span,
        ));
    }
    let field = Field::new(c.name.value.clone(), map_type(&c.data_type, c.span())?);
    let mut default = None;
    let mut fill = Value::Null;
    let mut not_null = false;
    for o in &c.options {
        match &o.option {
            sql::ColumnOption::Default(e) => {
                if default.is_some() {
                    return Err(PlanError::Invalid(format!(
                        "column '{}' has more than one DEFAULT",
                        c.name.value
                    )));
                }
                if crate::sequence_names::nextval_call(e).is_some() {
                    return Err(unsupported(
                        format!("ADD COLUMN with DEFAULT {e} (every stored row would take its own value): add the column, then ALTER COLUMN ... SET DEFAULT"),
                        e.span(),
                    ));
                }
                let (d, v) = checked_default(e, &field, binder)?;
                default = Some(d);
                fill = v;
            }
            sql::ColumnOption::Null => {}
            sql::ColumnOption::NotNull => not_null = true,
            other => {
                return Err(unsupported(
                    format!("{other} on a column ALTER TABLE adds (declare it in CREATE TABLE)"),
                    c.name.span,
                ))
            }
        }
    }
    Ok(TableChange::AddColumn {
        field,
        default,
        not_null,
        fill,
    })
}

/// A stored `DEFAULT` expression of column `column`, parsed again.
fn parse_default(text: &str, column: &str) -> Result<sql::Expr, PlanError> {
    sqlparser::parser::Parser::new(&sqlparser::dialect::GenericDialect {})
        .try_with_sql(text)
        .and_then(|mut p| p.parse_expr())
        .map_err(|e| {
            PlanError::Invalid(format!(
                "the DEFAULT of column '{column}' ({text}) does not parse: {e}"
            ))
        })
}

/// `DEFAULT e` of column `field`: checked as `CREATE TABLE` checks it (a constant of the
/// column's type, no parameter), and its value now. A default that draws a new value per row
/// (`random()`) is refused: the rows stored would all take one draw.
fn checked_default(
    e: &sql::Expr,
    field: &Field,
    binder: &mut Binder<'_>,
) -> Result<(DefaultValue, Value), PlanError> {
    let params = binder.params.types.len();
    let bound = binder.expr(e, &Scope::default(), None)?;
    if bound.expr.is_volatile() {
        return Err(unsupported(
            format!("a DEFAULT that gives each row its own value ({e}) in ALTER TABLE"),
            e.span(),
        ));
    }
    let value = constant_value(e, binder, field.data_type, &field.name)?;
    if binder.params.types.len() != params {
        return Err(unsupported(
            format!("a parameter in the DEFAULT of column '{}'", field.name),
            e.span(),
        ));
    }
    Ok((DefaultValue::Expr(e.to_string()), value))
}
