//! `TRUNCATE`: every row of the tables the planner lists goes in one write to all of them
//! (each table's share prepared on its copies before any commits, so all go or none), and
//! with `RESTART IDENTITY` their `SERIAL` and identity columns start at 1 again.

use super::unique::quote;
use super::writes::TableRows;
use super::Cluster;
use crate::error::{Error, Result};
use weir_operators::Batch;
use weir_planner::{identity_columns, DefaultValue, SequenceChanges, SequenceName};

impl Cluster {
    /// Empties `tables` (catalog names) as one write; with `restart_identity`, their
    /// sequences start at 1 again. Returns 0 (PostgreSQL counts no rows for a TRUNCATE).
    pub(super) fn truncate_tables(&self, tables: &[String], restart_identity: bool) -> Result<u64> {
        let _writing = self.writing();
        let mut rows = Vec::with_capacity(tables.len());
        let mut sequences = Vec::new();
        for table in tables {
            let def = self.table_def(table)?;
            if restart_identity {
                for d in &def.defaults {
                    if matches!(
                        d.value,
                        DefaultValue::Serial | DefaultValue::Identity { .. }
                    ) {
                        sequences.push(SequenceName::Column {
                            table: def.name.to_lowercase(),
                            column: def.schema.fields[d.column].name.to_lowercase(),
                        });
                    }
                }
            }
            let columns: Vec<String> = identity_columns(&def)
                .iter()
                .map(|&c| quote(&def.schema.fields[c].name))
                .collect();
            let sql = format!("SELECT {} FROM {}", columns.join(", "), quote(&def.name));
            let result = self.query(&sql, &[]).map_err(|e| self.table_gone(e))?;
            let deleted = match result.batches.len() {
                0 => continue,
                _ => Batch::concat(&result.batches).map_err(|e| Error::Invalid(e.to_string()))?,
            };
            if deleted.num_rows() > 0 {
                rows.push(TableRows {
                    table: def.name.clone(),
                    deleted,
                    changed: None,
                });
            }
        }
        if !rows.is_empty() {
            self.write_tables(rows)?;
        }
        let restart = SequenceChanges {
            restart: Some(None),
            ..SequenceChanges::default()
        };
        for sequence in sequences {
            self.alter_sequence(&sequence, &restart)?;
        }
        Ok(0)
    }
}
