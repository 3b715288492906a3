//! Foreign keys (`REFERENCES`): a write that would leave a row whose key's values no row of
//! the referenced table holds is refused with [`Error::ForeignKey`], and nothing of it is
//! stored. Two sides are checked, as PostgreSQL's `NO ACTION` has it, at the statement's end:
//! the rows a statement inserts or updates in a referencing table (their keys must be there,
//! among the stored rows or the statement's own when a table references itself), and the rows
//! it deletes or changes the key of in a referenced table (no stored row may still reference
//! a key that is gone; a row the statement itself deletes or changes does not count).
//!
//! As for unique indexes (`super::unique`), the check is the initiator's, with the write lock
//! held, through lookups on the referenced columns' first column: the writes through one
//! `Cluster` are serialised, so no two of them race. Clients of nodes in other processes check
//! each on its own, and a delete of a referenced row by one may race an insert of a row
//! referencing it by another (`docs/sql.md` says so).

use super::unique::{key_of, quote};
use super::Cluster;
use crate::error::{Error, Result};
use std::collections::HashSet;
use weir_operators::{Batch, Value};
use weir_planner::{identity_columns, ForeignKey, TableDef};

impl Cluster {
    /// Fails with [`Error::ForeignKey`] when a row of `new` (full rows of `def`) has, in the
    /// columns of one of `def`'s foreign keys, values no row of the referenced table holds.
    /// `replaced` are the identities of stored rows the statement replaces (an UPDATE's),
    /// which, when the table references itself, no longer count as referenced rows.
    pub(super) fn check_references(
        &self,
        def: &TableDef,
        new: &[Batch],
        replaced: Option<&Batch>,
    ) -> Result<()> {
        for fk in &def.foreign_keys {
            self.check_reference(def, fk, new, replaced)?;
        }
        Ok(())
    }

    fn check_reference(
        &self,
        def: &TableDef,
        fk: &ForeignKey,
        new: &[Batch],
        replaced: Option<&Batch>,
    ) -> Result<()> {
        // The keys the new rows need, in order (a NULL in any column needs none).
        let mut needed: Vec<Vec<Value>> = Vec::new();
        let mut missing: HashSet<Vec<String>> = HashSet::new();
        for batch in new {
            for values in rows_in(batch, &fk.columns) {
                if missing.insert(key_of(&values)) {
                    needed.push(values);
                }
            }
        }
        let itself = fk.parent.eq_ignore_ascii_case(&def.name);
        if itself {
            for batch in new {
                for values in rows_in(batch, &fk.parent_columns) {
                    missing.remove(&key_of(&values));
                }
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        let parent = self.table_def(&fk.parent)?;
        let replaced = match (itself, replaced) {
            (true, Some(ids)) => keys_of(ids),
            _ => HashSet::new(),
        };
        let ids = identity_columns(&parent);
        let select: Vec<usize> = ids.iter().chain(&fk.parent_columns).copied().collect();
        let firsts = distinct(
            needed
                .iter()
                .filter(|v| missing.contains(&key_of(v)))
                .map(|v| v[0].clone()),
        );
        for row in self.rows_with_values(&parent, &select, fk.parent_columns[0], &firsts)? {
            let (id, values) = row.split_at(ids.len());
            if !replaced.contains(&key_of(id)) {
                missing.remove(&key_of(values));
            }
        }
        match needed.iter().find(|v| missing.contains(&key_of(v))) {
            None => Ok(()),
            Some(values) => Err(not_present(def, fk, &parent, values)),
        }
    }

    /// Fails with [`Error::ForeignKey`] when a statement that deletes or changes the rows of
    /// `def` whose identities are `ids` would take away values in a referenced key that stored
    /// rows (other than those rows themselves) still reference. For a change, `changed` holds
    /// the rows' new values (full rows) and the columns the statement assigns: a key none of
    /// whose columns it assigns is not touched, and a value the new rows keep is not taken
    /// away.
    pub(super) fn check_not_referenced(
        &self,
        def: &TableDef,
        ids: &Batch,
        changed: Option<(&Batch, &[usize])>,
    ) -> Result<()> {
        self.check_not_referenced_by(def, ids, changed, &|_| true)
    }

    /// [`Cluster::check_not_referenced`] through the foreign keys `checked` picks only.
    pub(super) fn check_not_referenced_by(
        &self,
        def: &TableDef,
        ids: &Batch,
        changed: Option<(&Batch, &[usize])>,
        checked: &dyn Fn(&ForeignKey) -> bool,
    ) -> Result<()> {
        let children: Vec<(TableDef, ForeignKey)> = {
            let catalog = self.inner.catalog.read().unwrap_or_else(|e| e.into_inner());
            def.referenced_by(&catalog)
                .filter(|(_, fk)| checked(fk))
                .filter(|(_, fk)| {
                    changed.is_none_or(|(_, assigned)| {
                        fk.parent_columns.iter().any(|c| assigned.contains(c))
                    })
                })
                .map(|(t, fk)| (t.clone(), fk.clone()))
                .collect()
        };
        let new = changed.map(|(new, _)| new);
        if children.is_empty() || ids.num_rows() == 0 {
            return Ok(());
        }
        let affected = keys_of(ids);
        for (child, fk) in &children {
            let old = self.old_values(def, ids, &affected, &fk.parent_columns)?;
            let mut gone: HashSet<Vec<String>> = old.iter().map(|v| key_of(v)).collect();
            if let Some(new) = new {
                for values in rows_in(new, &fk.parent_columns) {
                    gone.remove(&key_of(&values));
                }
            }
            if gone.is_empty() {
                continue;
            }
            let itself = child.name.eq_ignore_ascii_case(&def.name);
            let child_ids = identity_columns(child);
            let select: Vec<usize> = child_ids.iter().chain(&fk.columns).copied().collect();
            let firsts = distinct(
                old.iter()
                    .filter(|v| gone.contains(&key_of(v)))
                    .map(|v| v[0].clone()),
            );
            for row in self.rows_with_values(child, &select, fk.columns[0], &firsts)? {
                let (id, values) = row.split_at(child_ids.len());
                if gone.contains(&key_of(values)) && !(itself && affected.contains(&key_of(id))) {
                    return Err(Error::ForeignKey {
                        what: "update or delete",
                        table: def.name.clone(),
                        constraint: fk.name.clone(),
                        detail: format!(
                            "key {} is still referenced from table {}",
                            key_text(def, &fk.parent_columns, values),
                            child.name
                        ),
                    });
                }
            }
        }
        Ok(())
    }

    /// The values in columns `columns` of the stored rows of `def` whose identities are
    /// `ids` (`affected`, as keys), those without a NULL: read from the identities when they
    /// hold the columns, else looked up.
    pub(super) fn old_values(
        &self,
        def: &TableDef,
        ids: &Batch,
        affected: &HashSet<Vec<String>>,
        columns: &[usize],
    ) -> Result<Vec<Vec<Value>>> {
        let identity = identity_columns(def);
        let within: Option<Vec<usize>> = columns
            .iter()
            .map(|c| identity.iter().position(|i| i == c))
            .collect();
        if let Some(at) = within {
            return Ok(rows_in(ids, &at).collect());
        }
        let select: Vec<usize> = identity.iter().chain(columns).copied().collect();
        let firsts = distinct((0..ids.num_rows()).map(|r| ids.column(0).value(r)));
        let mut out = Vec::new();
        for row in self.rows_with_values(def, &select, identity[0], &firsts)? {
            let (id, values) = row.split_at(identity.len());
            if affected.contains(&key_of(id)) && !values.iter().any(|v| matches!(v, Value::Null)) {
                out.push(values.to_vec());
            }
        }
        Ok(out)
    }

    /// Fails with [`Error::ForeignKey`] when a row `def` stores has, in the columns of `fk`
    /// (a key `ALTER TABLE` adds), values no row of the referenced table holds, naming the
    /// first such row's key as PostgreSQL does.
    pub(super) fn check_stored_references(&self, def: &TableDef, fk: &ForeignKey) -> Result<()> {
        let parent = self.table_def(&fk.parent)?;
        let child_col = |c: usize| format!("c.{}", quote(&def.schema.fields[c].name));
        let columns: Vec<String> = fk.columns.iter().map(|&c| child_col(c)).collect();
        let present: Vec<String> = columns.iter().map(|c| format!("{c} IS NOT NULL")).collect();
        let matched: Vec<String> = fk
            .columns
            .iter()
            .zip(&fk.parent_columns)
            .map(|(&c, &p)| {
                format!(
                    "p.{} = {}",
                    quote(&parent.schema.fields[p].name),
                    child_col(c)
                )
            })
            .collect();
        let sql = format!(
            "SELECT {} FROM {} AS c WHERE {} AND NOT EXISTS (SELECT 1 FROM {} AS p WHERE {}) LIMIT 1",
            columns.join(", "),
            quote(&def.name),
            present.join(" AND "),
            quote(&parent.name),
            matched.join(" AND ")
        );
        match self.query(&sql, &[])?.rows().first() {
            None => Ok(()),
            Some(values) => Err(not_present(def, fk, &parent, values)),
        }
    }
}

/// The error for a row of `def` whose key `fk` has `values`, which `parent` does not hold.
fn not_present(def: &TableDef, fk: &ForeignKey, parent: &TableDef, values: &[Value]) -> Error {
    Error::ForeignKey {
        what: "insert or update",
        table: def.name.clone(),
        constraint: fk.name.clone(),
        detail: format!(
            "key {} is not present in table {}",
            key_text(def, &fk.columns, values),
            parent.name
        ),
    }
}

/// The values of `batch` in columns `columns`, row by row, skipping rows with a NULL there.
fn rows_in<'b>(batch: &'b Batch, columns: &'b [usize]) -> impl Iterator<Item = Vec<Value>> + 'b {
    (0..batch.num_rows()).filter_map(move |r| {
        let values: Vec<Value> = columns.iter().map(|&c| batch.column(c).value(r)).collect();
        (!values.iter().any(|v| matches!(v, Value::Null))).then_some(values)
    })
}

/// Every row of `batch` (all its columns) as a key.
fn keys_of(batch: &Batch) -> HashSet<Vec<String>> {
    (0..batch.num_rows())
        .map(|r| key_of(&batch.row(r)))
        .collect()
}

/// `values` without repeats, in order.
pub(super) fn distinct(values: impl Iterator<Item = Value>) -> Vec<Value> {
    let mut seen = HashSet::new();
    values
        .filter(|v| seen.insert(key_of(std::slice::from_ref(v))))
        .collect()
}

/// `(a, b) = (1, 'x')`: columns `columns` of `def` and their `values`, as SQL text.
pub(super) fn key_text(def: &TableDef, columns: &[usize], values: &[Value]) -> String {
    let names: Vec<&str> = columns
        .iter()
        .map(|&c| def.schema.fields[c].name.as_str())
        .collect();
    let values: Vec<String> = values.iter().map(Value::to_sql).collect();
    format!("({}) = ({})", names.join(", "), values.join(", "))
}
