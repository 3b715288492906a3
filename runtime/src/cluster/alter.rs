//! `ALTER TABLE` on a cluster: the change checked against the rows it meets (a `NOT NULL`
//! on a column that holds NULL is refused), made to the catalog, and made to the rows every
//! node stores (logged on each, with a data directory) under the write lock, so no write
//! comes between the catalog and the rows.

use super::unique::quote;
use super::Cluster;
use crate::error::{Error, Result};
use crate::node::storage::Change;
use weir_operators::{DataType, Value};
use weir_planner::{PlanError, TableChange, TableDef};

impl Cluster {
    /// Makes `change` to table `table` (`None`: nothing to do). Connected to data nodes of
    /// other processes, only changes that leave the rows as they are (renaming a column,
    /// defaults, `NOT NULL`, constraints, comments, `DROP INDEX`) are made, and the data nodes take
    /// them from the catalog log; adding, dropping or retyping a column, or renaming the
    /// table, is refused ([`TableChange::changes_storage`]).
    pub(super) fn alter_table(&self, table: &str, change: Option<TableChange>) -> Result<()> {
        let Some(change) = change else {
            return Ok(());
        };
        if self.inner.remote.is_some() && change.changes_storage() {
            return Err(Error::Plan(PlanError::unsupported(
                "ALTER TABLE ... ADD COLUMN, DROP COLUMN, ALTER COLUMN ... TYPE, RENAME TO or ADD PRIMARY KEY on data nodes of other processes (renaming a column, defaults, NOT NULL, constraints, comments and DROP INDEX are supported)",
                "",
            )));
        }
        // No write comes between the check of the stored rows, the catalog and the rows.
        let _writing = self.writing();
        let def = self
            .inner
            .catalog
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .table(table)
            .cloned()
            .ok_or_else(|| Error::Plan(PlanError::UnknownTable(table.to_string())))?;
        self.check_not_null(&def, &change)?;
        if let TableChange::AddForeignKey(fk) = &change {
            self.check_stored_references(&def, fk)?;
        }
        if let TableChange::SetType { column, to } = &change {
            self.check_castable(&def, *column, *to)?;
        }
        if let TableChange::AddPrimaryKey { .. } = &change {
            self.check_empty(&def)?;
        }
        if let TableChange::AddCheck(check) = &change {
            if self.holds_a_row(&def, &format!(" WHERE NOT ({})", check.condition))? {
                return Err(Error::CheckViolation {
                    table: def.name.clone(),
                    constraint: check.name.clone(),
                });
            }
        }
        let key = def.name.to_lowercase();
        let stored = stored_change(&def, &change);
        self.change_schema(
            |catalog| {
                weir_planner::alter_catalog(catalog, &def.name, &change)?;
                Ok(Some(()))
            },
            |_| {
                if let Some(stored) = stored {
                    self.change_every_node(stored)?;
                }
                let mut replicas = self
                    .inner
                    .replicas
                    .lock()
                    .unwrap_or_else(|e| e.into_inner());
                match &change {
                    TableChange::RenameTable { to } => {
                        replicas.rename_table(&key, &to.to_lowercase())
                    }
                    // The table starts anew, placed by its key.
                    TableChange::AddPrimaryKey { .. } => replicas.drop_table(&key),
                    _ => {}
                }
                Ok(())
            },
        )?;
        Ok(())
    }

    /// Refuses a column made `NOT NULL` (by `SET NOT NULL`, or added without a default) when
    /// a row stored holds NULL there, in PostgreSQL's words.
    fn check_not_null(&self, def: &TableDef, change: &TableChange) -> Result<()> {
        let (column, condition) = match change {
            TableChange::AddColumn {
                field,
                not_null: true,
                fill: Value::Null,
                ..
            } => (field.name.clone(), String::new()),
            TableChange::SetNotNull {
                column,
                not_null: true,
            }
            | TableChange::AddIdentity { column, .. } => {
                let name = def.schema.fields[*column].name.clone();
                let condition = format!(" WHERE {} IS NULL", quote(&name));
                (name, condition)
            }
            _ => return Ok(()),
        };
        if !self.holds_a_row(def, &condition)? {
            return Ok(());
        }
        Err(Error::Plan(PlanError::Invalid(format!(
            "column '{column}' of table '{}' contains NULL values: it cannot be NOT NULL",
            def.name
        ))))
    }
}

impl Cluster {
    /// Refuses a primary key added to `def` when it holds rows: rows are placed by their key,
    /// and a table's rows are not moved to new places (they would be lost to a crash halfway).
    fn check_empty(&self, def: &TableDef) -> Result<()> {
        if !self.holds_a_row(def, "")? {
            return Ok(());
        }
        Err(Error::Plan(PlanError::unsupported(
            format!(
                "ALTER TABLE ... ADD PRIMARY KEY on table '{}', which holds rows (weir places a \
                 table's rows by its key: declare the key in CREATE TABLE, or add it before the \
                 rows are loaded; a pg_dump script restores in two steps, its --schema-only \
                 part, then its --data-only part)",
                def.name
            ),
            "",
        )))
    }

    /// Whether table `def` holds a row (that meets `condition`, a ` WHERE ...` clause, when
    /// it is not empty).
    fn holds_a_row(&self, def: &TableDef, condition: &str) -> Result<bool> {
        let sql = format!("SELECT 1 FROM {}{condition} LIMIT 1", quote(&def.name));
        Ok(!self.query(&sql, &[])?.rows().is_empty())
    }

    /// Refuses a new type `to` for column `column` of `def` that a value stored does not
    /// convert to, with the cast's own error (every value is cast once here, so the change to
    /// the rows, logged before it is made, cannot fail halfway).
    fn check_castable(&self, def: &TableDef, column: usize, to: DataType) -> Result<()> {
        let name = quote(&def.schema.fields[column].name);
        let sql = format!(
            "SELECT COUNT(CAST({name} AS {to})) FROM {}",
            quote(&def.name)
        );
        self.query(&sql, &[]).map(|_| ())
    }
}

/// What `change` to `def` does to the rows each node stores, if anything.
fn stored_change(def: &TableDef, change: &TableChange) -> Option<Change> {
    let table = def.name.to_lowercase();
    match change {
        TableChange::AddColumn { field, fill, .. } => Some(Change::AddColumn {
            table,
            column: def.schema.len(),
            field: field.clone(),
            fill: fill.clone(),
        }),
        TableChange::DropColumn { column } => Some(Change::DropColumn {
            table,
            column: *column,
            width: def.schema.len(),
        }),
        TableChange::RenameColumn { column, to } => Some(Change::RenameColumn {
            table,
            column: *column,
            name: to.clone(),
        }),
        // The nodes index a column while some index starts with it.
        TableChange::DropIndex { name } => {
            let index = def
                .indexes
                .iter()
                .find(|i| i.name.eq_ignore_ascii_case(name))?;
            let column = index.column;
            let kept = def
                .indexes
                .iter()
                .any(|i| i.column == column && !i.name.eq_ignore_ascii_case(name));
            (!kept).then_some(Change::DropIndex { table, column })
        }
        TableChange::SetType { column, to } => Some(Change::SetColumnType {
            table,
            column: *column,
            data_type: *to,
        }),
        TableChange::RenameTable { to } => Some(Change::RenameTable {
            table,
            to: to.to_lowercase(),
        }),
        // The table holds no rows: its storage starts anew, laid out by the key.
        TableChange::AddPrimaryKey { .. } => Some(Change::DropTable { table }),
        TableChange::SetDefault { .. }
        | TableChange::AddCheck(_)
        | TableChange::DropCheck { .. }
        | TableChange::AddIdentity { .. }
        | TableChange::SetComment { .. }
        | TableChange::SetNotNull { .. }
        | TableChange::AddForeignKey(_)
        | TableChange::DropForeignKey { .. } => None,
    }
}
