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
        let select: Vec<usize> = ids.iter().chain(&cols).copied().collect();
        for row in self.rows_with_values(def, &select, cols[0], &firsts)? {
            let (id, values) = row.split_at(ids.len());
            if !replaced.contains(&key_of(id)) && seen.contains(&key_of(values)) {
                return Err(duplicate(def, index, values));
            }
        }
        Ok(())
    }

    /// Columns `select` of the stored rows of `def` whose column `first` holds one of
    /// `values` (looked up [`LOOKUP_CHUNK`] values a query).
    pub(super) fn rows_with_values(
        &self,
        def: &TableDef,
        select: &[usize],
        first: usize,
        values: &[Value],
    ) -> Result<Vec<Vec<Value>>> {
        let names: Vec<String> = select
            .iter()
            .map(|&c| quote(&def.schema.fields[c].name))
            .collect();
        let mut out = Vec::new();
        for chunk in values.chunks(LOOKUP_CHUNK) {
            let marks = vec!["?"; chunk.len()].join(", ");
            let sql = format!(
                "SELECT {} FROM {} WHERE {} IN ({marks})",
                names.join(", "),
                quote(&def.name),
                quote(&def.schema.fields[first].name)
            );
            let rows = self.query(&sql, chunk).map_err(|e| self.table_gone(e))?;
            out.extend(rows.rows());
        }
        Ok(out)
    }

    /// An error of a read a statement makes of a table its plan names (the rows a key
    /// references, a TRUNCATE's rows): connected to data nodes of other processes, a table
    /// unknown there was dropped by another client since the statement was planned, which
    /// is planned again ([`Error::CatalogChanged`]).
    pub(super) fn table_gone(&self, e: Error) -> Error {
        match e {
            Error::Plan(weir_planner::PlanError::UnknownTable(_))
                if self.inner.remote.is_some() =>
            {
                Error::CatalogChanged { epoch: 0 }
            }
            e => e,
        }
    }

    /// `batch` (full rows of `table`) without the rows an `ON CONFLICT DO NOTHING` skips:
    /// those that clash, on one of the column sets `sets` (the primary key's, a unique
    /// index's), with a stored row or with an earlier row of `batch` that is kept. Rows with
    /// a NULL in a set's columns never clash on it.
    pub(super) fn skip_conflicting(
        &self,
        table: &str,
        batch: Batch,
        sets: &[Vec<usize>],
    ) -> Result<Batch> {
        if sets.is_empty() || batch.num_rows() == 0 {
            return Ok(batch);
        }
        let def = {
            let catalog = self.inner.catalog.read().unwrap_or_else(|e| e.into_inner());
            catalog.table(table).cloned().ok_or_else(|| {
                Error::Plan(weir_planner::PlanError::UnknownTable(table.to_string()))
            })?
        };
        let n = batch.num_rows();
        // Each row's values of each set (`None`: a NULL among them).
        let keys: Vec<Vec<Option<Vec<String>>>> = sets
            .iter()
            .map(|cols| {
                (0..n)
                    .map(|row| {
                        let values: Vec<Value> =
                            cols.iter().map(|&c| batch.column(c).value(row)).collect();
                        (!values.iter().any(|v| matches!(v, Value::Null))).then(|| key_of(&values))
                    })
                    .collect()
            })
            .collect();
        // The values of each set that stored rows hold.
        let mut taken: Vec<HashSet<Vec<String>>> = Vec::with_capacity(sets.len());
        for cols in sets {
            let mut firsts: Vec<Value> = Vec::new();
            let mut first_seen: HashSet<String> = HashSet::new();
            for row in 0..n {
                let v = batch.column(cols[0]).value(row);
                if !matches!(v, Value::Null) && first_seen.insert(format!("{v:?}")) {
                    firsts.push(v);
                }
            }
            let stored = self.rows_with_values(&def, cols, cols[0], &firsts)?;
            taken.push(stored.iter().map(|row| key_of(row)).collect());
        }
        // In order: a row is kept when none of its values is taken, and then takes them.
        let mut keep = vec![true; n];
        for (row, kept) in keep.iter_mut().enumerate() {
            let clashes = keys
                .iter()
                .zip(&taken)
                .any(|(k, t)| k[row].as_ref().is_some_and(|k| t.contains(k)));
            if clashes {
                *kept = false;
                continue;
            }
            for (k, t) in keys.iter().zip(taken.iter_mut()) {
                if let Some(k) = &k[row] {
                    t.insert(k.clone());
                }
            }
        }
        Ok(batch.filter(&keep))
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
pub(super) fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Values as a key that tells them apart (text is quoted).
pub(super) fn key_of(values: &[Value]) -> Vec<String> {
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
