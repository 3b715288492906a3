//! UNIQUE indexes (`CREATE UNIQUE INDEX`): a write that would leave two rows with equal values
//! in every column of one is refused with [`Error::DuplicateUnique`], and nothing of it is
//! stored; so is the index itself when the stored rows already clash.
//!
//! Rows are spread over partitions by their primary key, not by an index's columns, so the
//! check is the initiator's: with the write lock held (the writes through one `Cluster` are
//! serialised), before writing, it looks for equal values among the statement's rows and,
//! through the index on the first column, among the stored rows; a stored row the statement
//! itself replaces (as an UPDATE does) does not count. A NULL in any of the index's columns
//! never clashes, as in SQLite and PostgreSQL. Clients of nodes in other processes check
//! each on its own; their writes also take the partitions the new values hash to, so that
//! two writes of one value meet there and the second is checked again (`super::writes`).

use super::Cluster;
use crate::error::{Error, Result};
use std::collections::HashSet;
use weir_operators::{Batch, Value};
use weir_planner::{IndexDef, TableDef};

/// First-column values looked up in one query of the stored rows.
const LOOKUP_CHUNK: usize = 500;

impl Cluster {
    /// Fails with [`Error::DuplicateUnique`] when the rows of `new` (full rows of `def`) would
    /// clash on one of its unique indexes, among themselves or with a stored row whose
    /// identity (see [`weir_planner::identity_columns`]) is not in `replaced`.
    pub(super) fn check_unique(
        &self,
        def: &TableDef,
        new: &[Batch],
        replaced: Option<&Batch>,
    ) -> Result<()> {
        for index in def.indexes.iter().filter(|i| i.unique) {
            self.check_index(def, index, new, replaced)?;
        }
        Ok(())
    }

    fn check_index(
        &self,
        def: &TableDef,
        index: &IndexDef,
        new: &[Batch],
        replaced: Option<&Batch>,
    ) -> Result<()> {
        let cols = index.columns();
        let mut seen: HashSet<Vec<String>> = HashSet::new();
        let mut firsts: Vec<Value> = Vec::new();
        let mut first_seen: HashSet<String> = HashSet::new();
        for batch in new {
            for row in 0..batch.num_rows() {
                let values: Vec<Value> = cols.iter().map(|&c| batch.column(c).value(row)).collect();
                if values.iter().any(|v| matches!(v, Value::Null)) {
                    continue;
                }
                if !seen.insert(key_of(&values)) {
                    return Err(duplicate(def, index, &values));
                }
                if first_seen.insert(format!("{:?}", values[0])) {
                    firsts.push(values[0].clone());
                }
            }
        }
        if seen.is_empty() {
            return Ok(());
        }
        let replaced: HashSet<Vec<String>> = replaced
            .map(|b| (0..b.num_rows()).map(|r| key_of(&b.row(r))).collect())
            .unwrap_or_default();
        let ids = weir_planner::identity_columns(def);
        let select: Vec<String> = ids
            .iter()
            .chain(&cols)
            .map(|&c| quote(&def.schema.fields[c].name))
            .collect();
        for chunk in firsts.chunks(LOOKUP_CHUNK) {
            let marks = vec!["?"; chunk.len()].join(", ");
            let sql = format!(
                "SELECT {} FROM {} WHERE {} IN ({marks})",
                select.join(", "),
                quote(&def.name),
                quote(&def.schema.fields[cols[0]].name)
            );
            let stored = self.query(&sql, chunk)?;
            for row in stored.rows() {
                let (id, values) = row.split_at(ids.len());
                if !replaced.contains(&key_of(id)) && seen.contains(&key_of(values)) {
                    return Err(duplicate(def, index, values));
                }
            }
        }
        Ok(())
    }

    /// Fails with [`Error::DuplicateUnique`] when stored rows of `def` already clash on
    /// `index` (before it is created).
    pub(super) fn check_stored_unique(&self, def: &TableDef, index: &IndexDef) -> Result<()> {
        let cols: Vec<String> = index
            .columns()
            .iter()
            .map(|&c| quote(&def.schema.fields[c].name))
            .collect();
        let not_null: Vec<String> = cols.iter().map(|c| format!("{c} IS NOT NULL")).collect();
        let sql = format!(
            "SELECT {0} FROM {1} WHERE {2} GROUP BY {0} HAVING COUNT(*) > 1 LIMIT 1",
            cols.join(", "),
            quote(&def.name),
            not_null.join(" AND ")
        );
        match self.query(&sql, &[])?.rows().first() {
            Some(values) => Err(duplicate(def, index, values)),
            None => Ok(()),
        }
    }
}

/// A SQL identifier, quoted.
fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Values as a key that tells them apart (text is quoted).
fn key_of(values: &[Value]) -> Vec<String> {
    values.iter().map(|v| format!("{v:?}")).collect()
}

fn duplicate(def: &TableDef, index: &IndexDef, values: &[Value]) -> Error {
    let names: Vec<&str> = index
        .columns()
        .iter()
        .map(|&c| def.schema.fields[c].name.as_str())
        .collect();
    let key = match (names.as_slice(), values) {
        ([name], [value]) => format!("{name} = {}", value.to_sql()),
        _ => format!(
            "({}) = ({})",
            names.join(", "),
            values
                .iter()
                .map(Value::to_sql)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    Error::DuplicateUnique {
        table: def.name.clone(),
        index: index.name.clone(),
        key,
    }
}
