//! What a DELETE does to the rows that reference the rows it deletes, through the `ON
//! DELETE` actions of foreign keys: `CASCADE` deletes them too (and, through their own
//! references, what references them), `SET NULL` and `SET DEFAULT` change their referencing
//! columns, and `NO ACTION` and `RESTRICT` fail the statement while a row the statement does
//! not delete still references a deleted row. Everything is found and checked before
//! anything is written; the statement then writes every table it touches as one write
//! (`crate::replication::multi_table`), so it is all or nothing across tables.

use super::not_null::check_not_null;
use super::references::{distinct, key_text};
use super::unique::key_of;
use super::Cluster;
use crate::error::{Error, Result};
use std::collections::{HashMap, HashSet, VecDeque};
use weir_operators::{Batch, Value};
use weir_planner::{
    column_fill, identity_columns, ColumnFill, ForeignKey, ReferentialAction, TableDef,
};

/// What a DELETE does to one table.
pub(super) struct TableEffect {
    /// The table.
    pub def: TableDef,
    /// The identities of the rows it deletes ([`identity_columns`] of each).
    pub deleted: Vec<Vec<Value>>,
    deleted_keys: HashSet<Vec<String>>,
    /// The rows it changes: each one's identity and new values (all columns).
    pub changed: Vec<(Vec<Value>, Vec<Value>)>,
    changed_at: HashMap<Vec<String>, usize>,
    /// The columns it changes.
    pub assigned: Vec<usize>,
}

impl TableEffect {
    pub(super) fn new(def: TableDef) -> Self {
        TableEffect {
            def,
            deleted: Vec::new(),
            deleted_keys: HashSet::new(),
            changed: Vec::new(),
            changed_at: HashMap::new(),
            assigned: Vec::new(),
        }
    }

    /// Deletes the row with identity `id`; whether it was not deleted already.
    fn delete(&mut self, id: Vec<Value>) -> bool {
        let fresh = self.deleted_keys.insert(key_of(&id));
        if fresh {
            self.deleted.push(id);
        }
        fresh
    }

    /// The new values of the row with identity `id`, if the effect changes it.
    pub(super) fn changed_row(&self, id: &[Value]) -> Option<&[Value]> {
        let at = *self.changed_at.get(&key_of(id))?;
        Some(&self.changed[at].1)
    }

    /// Whether the row with identity key `key` is deleted.
    fn is_deleted(&self, key: &[String]) -> bool {
        self.deleted_keys.contains(key)
    }

    /// Sets columns `columns` of the row with identity `id` (whose values are `row`, or
    /// those an earlier change gave it) to `values`.
    pub(super) fn change(
        &mut self,
        id: Vec<Value>,
        row: Vec<Value>,
        columns: &[usize],
        values: &[Value],
    ) {
        let key = key_of(&id);
        let at = match self.changed_at.get(&key) {
            Some(&at) => at,
            None => {
                self.changed.push((id, row));
                self.changed_at.insert(key, self.changed.len() - 1);
                self.changed.len() - 1
            }
        };
        for (&c, v) in columns.iter().zip(values) {
            self.changed[at].1[c] = v.clone();
            if !self.assigned.contains(&c) {
                self.assigned.push(c);
            }
        }
    }

    /// The changed rows the statement does not delete: their identities and new values, as
    /// batches (`None` when there are none).
    pub fn changed_batches(&self) -> Result<Option<(Batch, Batch)>> {
        let kept: Vec<&(Vec<Value>, Vec<Value>)> = self
            .changed
            .iter()
            .filter(|(id, _)| !self.is_deleted(&key_of(id)))
            .collect();
        if kept.is_empty() {
            return Ok(None);
        }
        let ids: Vec<Vec<Value>> = kept.iter().map(|(id, _)| id.clone()).collect();
        let rows: Vec<Vec<Value>> = kept.iter().map(|(_, row)| row.clone()).collect();
        Ok(Some((
            identities(&self.def, &ids)?,
            Batch::from_rows(&self.def.schema.types(), &rows)
                .map_err(|e| Error::Invalid(e.to_string()))?,
        )))
    }

    /// The identities of the deleted rows, as a batch.
    pub fn deleted_batch(&self) -> Result<Batch> {
        identities(&self.def, &self.deleted)
    }
}

/// The position in `effects` of `table`'s effect, added (empty) when it has none yet.
pub(super) fn effect_of(effects: &mut Vec<TableEffect>, table: &TableDef) -> usize {
    match effects
        .iter()
        .position(|e| e.def.name.eq_ignore_ascii_case(&table.name))
    {
        Some(at) => at,
        None => {
            effects.push(TableEffect::new(table.clone()));
            effects.len() - 1
        }
    }
}

/// Rows of identities of `def` as a batch of its identity columns.
fn identities(def: &TableDef, rows: &[Vec<Value>]) -> Result<Batch> {
    let types: Vec<_> = identity_columns(def)
        .iter()
        .map(|&c| def.schema.fields[c].data_type)
        .collect();
    Batch::from_rows(&types, rows).map_err(|e| Error::Invalid(e.to_string()))
}

/// A referencing row that stays only if the statement deletes it: the error otherwise.
struct StillReferencing {
    table: usize,
    id: Vec<String>,
    error: Error,
}

impl Cluster {
    /// Whether deleting rows of `def` may do more than delete them: a foreign key
    /// referencing it has an `ON DELETE` action other than `NO ACTION`/`RESTRICT`.
    pub(super) fn deletes_act(&self, def: &TableDef) -> bool {
        let catalog = self.inner.catalog.read().unwrap_or_else(|e| e.into_inner());
        let acts = def.referenced_by(&catalog).any(|(_, fk)| {
            !matches!(
                fk.on_delete,
                ReferentialAction::NoAction | ReferentialAction::Restrict
            )
        });
        acts
    }

    /// Everything a DELETE of the rows of `def` whose identities are `ids` does, found
    /// through the `ON DELETE` actions of the foreign keys that reference them: the first
    /// effect is `def`'s own. Fails as the statement would, writing nothing: a row it does
    /// not delete still references a deleted row through a `NO ACTION` or `RESTRICT` key, a
    /// row it changes breaks a NOT NULL column, a unique index or a key of its own.
    pub(super) fn delete_effects(&self, def: &TableDef, ids: &Batch) -> Result<Vec<TableEffect>> {
        let mut effects = vec![TableEffect::new(def.clone())];
        let mut first = Vec::with_capacity(ids.num_rows());
        for r in 0..ids.num_rows() {
            let id = ids.row(r);
            if effects[0].delete(id.clone()) {
                first.push(id);
            }
        }
        let mut queue = VecDeque::from([(0usize, first)]);
        let mut pending: Vec<StillReferencing> = Vec::new();
        while let Some((t, rows)) = queue.pop_front() {
            let parent = effects[t].def.clone();
            let children: Vec<(TableDef, ForeignKey)> = {
                let catalog = self.inner.catalog.read().unwrap_or_else(|e| e.into_inner());
                parent
                    .referenced_by(&catalog)
                    .map(|(c, fk)| (c.clone(), fk.clone()))
                    .collect()
            };
            if children.is_empty() {
                continue;
            }
            let deleted = identities(&parent, &rows)?;
            let affected: HashSet<Vec<String>> = rows.iter().map(|r| key_of(r)).collect();
            for (child, fk) in children {
                let old = self.old_values(&parent, &deleted, &affected, &fk.parent_columns)?;
                let gone: HashSet<Vec<String>> = old.iter().map(|v| key_of(v)).collect();
                if gone.is_empty() {
                    continue;
                }
                let c = effect_of(&mut effects, &child);
                let defaults = self.set_defaults(&child, &fk)?;
                // A default that is itself a key the statement deletes references nothing.
                let default_gone = fk.on_delete == ReferentialAction::SetDefault
                    && gone.contains(&key_of(&defaults));
                let child_ids = identity_columns(&child);
                let all: Vec<usize> = (0..child.schema.len()).collect();
                let select: Vec<usize> = child_ids.iter().chain(&all).copied().collect();
                let firsts = distinct(old.iter().map(|k| k[0].clone()));
                let mut cascaded = Vec::new();
                for row in self.rows_with_values(&child, &select, fk.columns[0], &firsts)? {
                    let (id, values) = row.split_at(child_ids.len());
                    let key: Vec<Value> = fk.columns.iter().map(|&k| values[k].clone()).collect();
                    if !gone.contains(&key_of(&key)) {
                        continue;
                    }
                    match fk.on_delete {
                        ReferentialAction::NoAction | ReferentialAction::Restrict => {
                            pending.push(StillReferencing {
                                table: c,
                                id: key_of(id),
                                error: still_referenced(&parent, &fk, &child, &key),
                            })
                        }
                        ReferentialAction::Cascade => {
                            if effects[c].delete(id.to_vec()) {
                                cascaded.push(id.to_vec());
                            }
                        }
                        ReferentialAction::SetDefault if default_gone => {
                            return Err(Error::ForeignKey {
                                what: "insert or update",
                                table: child.name.clone(),
                                constraint: fk.name.clone(),
                                detail: format!(
                                    "key {} is not present in table {}",
                                    key_text(&child, &fk.columns, &defaults),
                                    parent.name
                                ),
                            })
                        }
                        ReferentialAction::SetNull | ReferentialAction::SetDefault => {
                            effects[c].change(id.to_vec(), values.to_vec(), &fk.columns, &defaults)
                        }
                    }
                }
                if !cascaded.is_empty() {
                    queue.push_back((c, cascaded));
                }
            }
        }
        if let Some(p) = pending
            .into_iter()
            .find(|p| !effects[p.table].is_deleted(&p.id))
        {
            return Err(p.error);
        }
        for effect in &effects {
            self.check_changed(effect)?;
        }
        Ok(effects)
    }

    /// The values `SET NULL` or `SET DEFAULT` gives the columns of `fk` (NULLs for `NO
    /// ACTION`, `RESTRICT` and `CASCADE`, which give none).
    fn set_defaults(&self, child: &TableDef, fk: &ForeignKey) -> Result<Vec<Value>> {
        self.action_values(child, fk, fk.on_delete, "DELETE")
    }

    /// The values action `action` (`ON {what}` of `fk`) gives the columns of `fk`: NULLs for
    /// `SET NULL` (and the actions that give none), the columns' defaults for `SET DEFAULT`.
    pub(super) fn action_values(
        &self,
        child: &TableDef,
        fk: &ForeignKey,
        action: ReferentialAction,
        what: &str,
    ) -> Result<Vec<Value>> {
        if action != ReferentialAction::SetDefault {
            return Ok(vec![Value::Null; fk.columns.len()]);
        }
        let catalog = self.inner.catalog.read().unwrap_or_else(|e| e.into_inner());
        fk.columns
            .iter()
            .map(|&c| match column_fill(child, c, &catalog)? {
                ColumnFill::Null => Ok(Value::Null),
                ColumnFill::Value(v) => Ok(v),
                ColumnFill::Sequence(_) => Err(Error::Invalid(format!(
                    "ON {what} SET DEFAULT of foreign key {}: column '{}' of table '{}' takes \
                     its default from a sequence, which weir does not draw from here",
                    fk.name, child.schema.fields[c].name, child.name
                ))),
            })
            .collect()
    }

    /// Checks the rows `effect` changes (by `SET NULL` or `SET DEFAULT`), as an UPDATE of
    /// them would be: NOT NULL columns, unique indexes, the table's own foreign keys on the
    /// columns changed, and the rows that reference the values they give up.
    fn check_changed(&self, effect: &TableEffect) -> Result<()> {
        let Some((ids, new)) = effect.changed_batches()? else {
            return Ok(());
        };
        let def = &effect.def;
        check_not_null(def, &new)?;
        self.check_unique(def, std::slice::from_ref(&new), Some(&ids))?;
        let mut assigned_keys = def.clone();
        assigned_keys
            .foreign_keys
            .retain(|fk| fk.columns.iter().any(|c| effect.assigned.contains(c)));
        self.check_references(&assigned_keys, std::slice::from_ref(&new), Some(&ids))?;
        self.check_not_referenced(def, &ids, Some((&new, &effect.assigned)))
    }
}

/// The error of a delete from `parent` whose key `key` a row of `child` still references
/// through `fk`.
fn still_referenced(parent: &TableDef, fk: &ForeignKey, child: &TableDef, key: &[Value]) -> Error {
    Error::ForeignKey {
        what: "update or delete",
        table: parent.name.clone(),
        constraint: fk.name.clone(),
        detail: format!(
            "key {} is still referenced from table {}",
            key_text(parent, &fk.parent_columns, key),
            child.name
        ),
    }
}
