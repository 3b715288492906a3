//! What an UPDATE that changes referenced key values does to the rows that reference them,
//! through the `ON UPDATE` actions of foreign keys: `CASCADE` gives them the key's new
//! values (and, where those columns are themselves a key referenced further, passes the
//! change on), `SET NULL` and `SET DEFAULT` change their referencing columns, and `NO
//! ACTION` and `RESTRICT` fail the statement while a stored row still references a value it
//! takes away. As for a DELETE's actions (`super::cascade`), everything is found and checked
//! before anything is written, and every table touched is written as one write.

use super::cascade::{effect_of, TableEffect};
use super::not_null::check_not_null;
use super::references::distinct;
use super::unique::key_of;
use super::Cluster;
use crate::error::Result;
use std::collections::{HashMap, HashSet, VecDeque};
use weir_operators::{Batch, Value};
use weir_planner::{identity_columns, ForeignKey, ReferentialAction, TableDef};

/// Rows a statement changes: each one's identity, its values before, and after.
type ChangedRows = Vec<(Vec<Value>, Vec<Value>, Vec<Value>)>;

/// Whether `action` does something to the referencing rows (not `NO ACTION`/`RESTRICT`).
fn acts(action: ReferentialAction) -> bool {
    !matches!(
        action,
        ReferentialAction::NoAction | ReferentialAction::Restrict
    )
}

impl Cluster {
    /// Whether an UPDATE of `def` that assigns columns `assigned` may change rows of other
    /// tables: a foreign key referencing one of those columns has an `ON UPDATE` action.
    pub(super) fn updates_act(&self, def: &TableDef, assigned: &[usize]) -> bool {
        let catalog = self.inner.catalog.read().unwrap_or_else(|e| e.into_inner());
        let found = def.referenced_by(&catalog).any(|(_, fk)| {
            acts(fk.on_update) && fk.parent_columns.iter().any(|c| assigned.contains(c))
        });
        found
    }

    /// Everything an UPDATE giving the rows of `def` whose identities are `ids` the new
    /// values `new` does through the `ON UPDATE` actions of the keys that reference them: the
    /// first effect is `def`'s own. Fails as the statement would, writing nothing (the new
    /// rows themselves are checked by the caller).
    pub(super) fn update_effects(
        &self,
        def: &TableDef,
        ids: &Batch,
        new: &Batch,
        assigned: &[usize],
    ) -> Result<Vec<TableEffect>> {
        let id_columns = identity_columns(def);
        let all: Vec<usize> = (0..def.schema.len()).collect();
        let select: Vec<usize> = id_columns.iter().chain(&all).copied().collect();
        let firsts = distinct((0..ids.num_rows()).map(|r| ids.column(0).value(r)));
        let mut before: HashMap<Vec<String>, Vec<Value>> = HashMap::new();
        for row in self.rows_with_values(def, &select, id_columns[0], &firsts)? {
            let (id, values) = row.split_at(id_columns.len());
            before.insert(key_of(id), values.to_vec());
        }
        let mut effects = vec![TableEffect::new(def.clone())];
        let mut first: ChangedRows = Vec::with_capacity(ids.num_rows());
        for r in 0..ids.num_rows() {
            let id = ids.row(r);
            let Some(old) = before.get(&key_of(&id)) else {
                continue;
            };
            let row = new.row(r);
            effects[0].change(id.clone(), row.clone(), &[], &[]);
            first.push((id, old.clone(), row));
        }
        effects[0].assigned = assigned.to_vec();
        // The keys each change comes through, whose new values reference the parent's new
        // key (written by the same statement): not checked against the stored parents.
        let mut through: HashMap<usize, HashSet<String>> = HashMap::new();
        // The rows each key changed already (a key that references its own table's changing
        // columns would otherwise find the same stored rows again, round after round).
        let mut reached: HashSet<(String, Vec<String>)> = HashSet::new();
        let mut queue = VecDeque::from([(0usize, first, assigned.to_vec())]);
        while let Some((t, rows, changed_columns)) = queue.pop_front() {
            let parent = effects[t].def.clone();
            let children: Vec<(TableDef, ForeignKey)> = {
                let catalog = self.inner.catalog.read().unwrap_or_else(|e| e.into_inner());
                parent
                    .referenced_by(&catalog)
                    .filter(|(_, fk)| acts(fk.on_update))
                    .filter(|(_, fk)| {
                        fk.parent_columns
                            .iter()
                            .any(|c| changed_columns.contains(c))
                    })
                    .map(|(c, fk)| (c.clone(), fk.clone()))
                    .collect()
            };
            for (child, fk) in children {
                // Each old key value, and the new one its row takes.
                let mut moved: HashMap<Vec<String>, Vec<Value>> = HashMap::new();
                for (_, old, new) in &rows {
                    let old_key: Vec<Value> =
                        fk.parent_columns.iter().map(|&c| old[c].clone()).collect();
                    let new_key: Vec<Value> =
                        fk.parent_columns.iter().map(|&c| new[c].clone()).collect();
                    if old_key.iter().any(|v| matches!(v, Value::Null)) || old_key == new_key {
                        continue;
                    }
                    moved.insert(key_of(&old_key), new_key);
                }
                if moved.is_empty() {
                    continue;
                }
                let c = effect_of(&mut effects, &child);
                let values = self.action_values(&child, &fk, fk.on_update, "UPDATE")?;
                let child_ids = identity_columns(&child);
                let all: Vec<usize> = (0..child.schema.len()).collect();
                let select: Vec<usize> = child_ids.iter().chain(&all).copied().collect();
                let firsts = distinct(
                    rows.iter()
                        .map(|(_, old, _)| old[fk.parent_columns[0]].clone()),
                );
                let mut passed_on: ChangedRows = Vec::new();
                for row in self.rows_with_values(&child, &select, fk.columns[0], &firsts)? {
                    let (id, stored) = row.split_at(child_ids.len());
                    let key: Vec<Value> = fk.columns.iter().map(|&k| stored[k].clone()).collect();
                    let Some(new_key) = moved.get(&key_of(&key)) else {
                        continue;
                    };
                    if !reached.insert((fk.name.clone(), key_of(id))) {
                        continue;
                    }
                    // A row the statement changes already (its own row, or one reached
                    // before) changes from its new values.
                    let current = effects[c]
                        .changed_row(id)
                        .map_or_else(|| stored.to_vec(), <[Value]>::to_vec);
                    let given = match fk.on_update {
                        ReferentialAction::Cascade => new_key.clone(),
                        _ => values.clone(),
                    };
                    let mut after = current.clone();
                    for (&k, v) in fk.columns.iter().zip(&given) {
                        after[k] = v.clone();
                    }
                    effects[c].change(id.to_vec(), current.clone(), &fk.columns, &given);
                    if fk.on_update == ReferentialAction::Cascade {
                        through.entry(c).or_default().insert(fk.name.clone());
                    }
                    passed_on.push((id.to_vec(), current, after));
                }
                if !passed_on.is_empty() {
                    queue.push_back((c, passed_on, fk.columns.clone()));
                }
            }
        }
        for (t, effect) in effects.iter().enumerate() {
            let skip = through.get(&t).cloned().unwrap_or_default();
            self.check_updated(effect, t == 0, &skip)?;
        }
        Ok(effects)
    }

    /// Checks the rows `effect` changes as an UPDATE of them would be: NOT NULL columns,
    /// unique indexes and the table's own foreign keys on the columns changed (but those in
    /// `through`, whose new values the statement writes in the parent, and for the
    /// statement's own table, which the caller checked), and the `NO ACTION` and `RESTRICT`
    /// keys that reference the values the rows give up.
    fn check_updated(
        &self,
        effect: &TableEffect,
        own: bool,
        through: &HashSet<String>,
    ) -> Result<()> {
        let Some((ids, new)) = effect.changed_batches()? else {
            return Ok(());
        };
        let def = &effect.def;
        if !own {
            check_not_null(def, &new)?;
            self.check_unique(def, std::slice::from_ref(&new), Some(&ids))?;
            let mut assigned_keys = def.clone();
            assigned_keys.foreign_keys.retain(|fk| {
                !through.contains(&fk.name)
                    && fk.columns.iter().any(|c| effect.assigned.contains(c))
            });
            self.check_references(&assigned_keys, std::slice::from_ref(&new), Some(&ids))?;
        }
        self.check_not_referenced_by(
            def,
            &ids,
            Some((&new, &effect.assigned)),
            &|fk: &ForeignKey| !acts(fk.on_update),
        )
    }
}
