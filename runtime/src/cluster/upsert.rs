//! `INSERT ... ON CONFLICT (target) DO UPDATE`: the proposed rows that clash with a stored
//! row on the target's columns update it (by the planner's `UPDATE ... FROM (VALUES <the
//! clashing rows>) AS excluded`, whose query gives the stored rows' identities and new
//! values), the others are inserted, and both are written as one write, all or nothing,
//! checked as any write is (NOT NULL, keys, unique indexes, foreign keys).

use super::statements::{returned_rows, Applied};
use super::unique::key_of;
use super::Cluster;
use crate::error::{Error, Result};
use std::collections::HashSet;
use weir_operators::{Batch, Value};
use weir_planner::statement::ConflictUpdate;
use weir_planner::{identity_columns, CachedStatement, PlanError, Returning, Statement, TableDef};

impl Cluster {
    /// Inserts the rows of `batch` (full rows of `table`) that clash with no stored row on
    /// `update`'s target and updates the stored rows the others clash with, the write lock
    /// held; answers the `RETURNING` of the rows inserted (in order), then of those updated
    /// (their new values). The count is of both; a stored row the update's `WHERE` leaves
    /// alone is neither.
    pub(super) fn insert_updating(
        &self,
        table: &str,
        batch: Batch,
        update: &ConflictUpdate,
        returning: Option<Box<Returning>>,
    ) -> Result<Applied> {
        let def = self.table_def(table)?;
        let (fresh, clashing) = self.split_clashing(&def, batch, &update.target)?;
        let changed = match clashing.num_rows() {
            0 => None,
            _ => self.updated_rows(&update.sql(&clashing))?,
        };
        let (ids, new) = match changed {
            Some(rows) => {
                let k = identity_columns(&def).len();
                let ids = rows.project(&(0..k).collect::<Vec<_>>());
                let new = rows.project(&(k..rows.num_columns()).collect::<Vec<_>>());
                (Some(ids), Some(new))
            }
            None => (None, None),
        };
        let inserted = fresh.num_rows();
        let written: Vec<Batch> = [Some(fresh), new]
            .into_iter()
            .flatten()
            .filter(|b| b.num_rows() > 0)
            .collect();
        let rows: u64 = written.iter().map(|b| b.num_rows() as u64).sum();
        let returned = match &returning {
            Some(r) => Some(match written.len() {
                0 => (r.schema.clone(), Batch::empty(&r.schema.types())),
                _ => returned_rows(
                    r,
                    &Batch::concat(&written).map_err(|e| Error::Invalid(e.to_string()))?,
                )?,
            }),
            None => None,
        };
        if rows > 0 {
            self.write_upserted(&def, &written, ids.as_ref(), inserted)?;
            super::lost::hold_acknowledgement();
        }
        Ok(Applied { rows, returned })
    }

    /// `batch` split into the rows whose values in `target` no stored row of `def` holds
    /// (or that have a NULL there), and those a stored row holds. Two rows of `batch` with
    /// the same values there are an error, as in PostgreSQL: one statement may not change a
    /// row twice.
    fn split_clashing(
        &self,
        def: &TableDef,
        batch: Batch,
        target: &[usize],
    ) -> Result<(Batch, Batch)> {
        let n = batch.num_rows();
        let keys: Vec<Option<Vec<String>>> = (0..n)
            .map(|row| {
                let values: Vec<Value> =
                    target.iter().map(|&c| batch.column(c).value(row)).collect();
                (!values.iter().any(|v| matches!(v, Value::Null))).then(|| key_of(&values))
            })
            .collect();
        let mut seen = HashSet::new();
        if let Some(row) =
            (0..n).find(|&r| keys[r].as_ref().is_some_and(|k| !seen.insert(k.clone())))
        {
            let values: Vec<String> = target
                .iter()
                .map(|&c| batch.column(c).value(row).to_sql())
                .collect();
            return Err(Error::Plan(PlanError::Invalid(format!(
                "ON CONFLICT DO UPDATE of table '{}' would change the row of ({}) = ({}) a second time: two proposed rows have those values",
                def.name,
                target
                    .iter()
                    .map(|&c| def.schema.fields[c].name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                values.join(", ")
            ))));
        }
        let mut firsts = Vec::new();
        let mut first_seen = HashSet::new();
        for row in (0..n).filter(|&r| keys[r].is_some()) {
            let v = batch.column(target[0]).value(row);
            if first_seen.insert(key_of(std::slice::from_ref(&v))) {
                firsts.push(v);
            }
        }
        let stored: HashSet<Vec<String>> = self
            .rows_with_values(def, target, target[0], &firsts)?
            .iter()
            .map(|row| key_of(row))
            .collect();
        let clashes: Vec<bool> = keys
            .iter()
            .map(|k| k.as_ref().is_some_and(|k| stored.contains(k)))
            .collect();
        let fresh: Vec<bool> = clashes.iter().map(|c| !c).collect();
        Ok((batch.filter(&fresh), batch.filter(&clashes)))
    }

    /// The rows `UPDATE` statement `sql` would write (each stored row's identity, then its
    /// new values), or `None` when it writes none.
    fn updated_rows(&self, sql: &str) -> Result<Option<Batch>> {
        match self.plan_statement(sql, &[])? {
            CachedStatement::Other(s) => match *s {
                Statement::Update { query, .. } => self.rows_of(*query),
                _ => Err(Error::Invalid(
                    "ON CONFLICT DO UPDATE planned no UPDATE".into(),
                )),
            },
            _ => Err(Error::Invalid(
                "ON CONFLICT DO UPDATE planned no UPDATE".into(),
            )),
        }
    }
}
