//! Sequences made by `CREATE SEQUENCE` ([`NamedSequence`]), beside the sequences of `SERIAL`
//! and identity columns ([`super::SequenceState`]), and how the name a call gives
//! (`nextval('name')`) finds either ([`SequenceName`], [`Catalog::resolve_sequence`]).
//!
//! A sequence's state is the next value no client has reserved: clients reserve values in
//! blocks and hand them out from their block, so values are never handed out twice and may
//! skip, as the values of PostgreSQL's sequences with a cache may.

use super::{Catalog, NamedSequence, SequenceChanges, SequenceName};
use crate::error::PlanError;

impl NamedSequence {
    /// Up to `n` values from `self.next` on, as (first value, count): fewer when the
    /// sequence reaches its bound; `None` when no value is left.
    pub fn available(&self, n: i64) -> Option<(i64, i64)> {
        if self.next < self.min || self.next > self.max {
            return None;
        }
        let room = if self.increment > 0 {
            (i128::from(self.max) - i128::from(self.next)) / i128::from(self.increment)
        } else {
            (i128::from(self.next) - i128::from(self.min)) / -i128::from(self.increment)
        };
        let count = (room + 1).min(i128::from(n.max(1)));
        Some((self.next, count as i64))
    }

    /// The value after `count` values from `first` (saturating: past the bound either way).
    pub fn after(&self, first: i64, count: i64) -> i64 {
        let end = i128::from(first) + i128::from(count) * i128::from(self.increment);
        end.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
    }

    /// The error for a sequence with no value left, in PostgreSQL's words.
    pub fn exhausted(&self) -> String {
        if self.increment > 0 {
            format!(
                "nextval: reached maximum value of sequence \"{}\" ({})",
                self.name, self.max
            )
        } else {
            format!(
                "nextval: reached minimum value of sequence \"{}\" ({})",
                self.name, self.min
            )
        }
    }
}

impl std::fmt::Display for SequenceName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SequenceName::Column { table, column } => write!(f, "{table}_{column}_seq"),
            SequenceName::Named(name) => f.write_str(name),
        }
    }
}

impl Catalog {
    /// The sequence made by `CREATE SEQUENCE` named `name`.
    pub fn named_sequence(&self, name: &str) -> Option<&NamedSequence> {
        self.named_sequences.get(&name.to_lowercase())
    }

    /// The sequences made by `CREATE SEQUENCE`, by name.
    pub fn named_sequences(&self) -> impl Iterator<Item = &NamedSequence> {
        self.named_sequences.values()
    }

    /// Every sequence, by name: those made by `CREATE SEQUENCE`, and those of `SERIAL` and
    /// identity columns as if made so (named `<table>_<column>_seq`, from 1 up by 1).
    pub fn all_sequences(&self) -> Vec<NamedSequence> {
        let mut all: Vec<NamedSequence> = self.named_sequences.values().cloned().collect();
        all.extend(self.sequences.values().map(|s| NamedSequence {
            name: format!("{}_{}_seq", s.table, s.column),
            next: s.next,
            start: 1,
            increment: 1,
            min: 1,
            max: i64::MAX,
            made: s.made,
            owner: Some(super::SequenceOwner {
                table: s.table.clone(),
                column: s.column.clone(),
            }),
        }));
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all
    }

    /// The sequence `name` stands for: one made by `CREATE SEQUENCE`, or the sequence of a
    /// `SERIAL` or identity column by its PostgreSQL name, `<table>_<column>_seq`.
    pub fn resolve_sequence(&self, name: &str) -> Result<SequenceName, PlanError> {
        let key = name.to_lowercase();
        if self.named_sequences.contains_key(&key) {
            return Ok(SequenceName::Named(key));
        }
        self.sequences
            .keys()
            .find(|(table, column)| format!("{table}_{column}_seq") == key)
            .map(|(table, column)| SequenceName::Column {
                table: table.clone(),
                column: column.clone(),
            })
            .ok_or(PlanError::UnknownSequence(name.to_string()))
    }

    /// Adds sequence `s` (its name lowercase). A table, view or sequence of that name (a
    /// column's sequence by its `<table>_<column>_seq` name too) is
    /// [`PlanError::RelationExists`], or, with `if_not_exists`, leaves the catalog as it was:
    /// returns whether the sequence was added. Bumps the version.
    pub fn add_sequence(
        &mut self,
        s: NamedSequence,
        if_not_exists: bool,
    ) -> Result<bool, PlanError> {
        let key = s.name.to_lowercase();
        let taken = self.tables.contains_key(&key)
            || self.views.contains_key(&key)
            || self.resolve_sequence(&key).is_ok();
        if taken {
            return match if_not_exists {
                true => Ok(false),
                false => Err(PlanError::RelationExists(key)),
            };
        }
        if let Some(owner) = &s.owner {
            self.check_owner(owner)?;
        }
        self.version += 1;
        let made = self.version;
        self.named_sequences.insert(
            key.clone(),
            NamedSequence {
                name: key,
                made,
                ..s
            },
        );
        Ok(true)
    }

    /// Refuses an `OWNED BY` column that no table has.
    fn check_owner(&self, owner: &super::SequenceOwner) -> Result<(), PlanError> {
        let t = self
            .tables
            .get(&owner.table)
            .ok_or_else(|| PlanError::UnknownTable(owner.table.clone()))?;
        if t.schema.index_of(&owner.column).is_none() {
            return Err(PlanError::UnknownColumn {
                name: format!("{}.{}", owner.table, owner.column),
                position: String::new(),
            });
        }
        Ok(())
    }

    /// Removes sequence `name` (made by `CREATE SEQUENCE`). A column's `DEFAULT` that calls
    /// it keeps it, as PostgreSQL's does without `CASCADE`: [`PlanError::Depended`] naming
    /// the column. Bumps the version.
    pub fn drop_sequence(&mut self, name: &str) -> Result<(), PlanError> {
        let key = name.to_lowercase();
        if !self.named_sequences.contains_key(&key) {
            return Err(PlanError::UnknownSequence(name.to_string()));
        }
        for t in self.tables.values() {
            for d in &t.defaults {
                let super::DefaultValue::Expr(text) = &d.value else {
                    continue;
                };
                if crate::sequence_names::default_sequence(text).as_deref() == Some(key.as_str()) {
                    return Err(PlanError::Depended(format!(
                        "cannot drop sequence {key}: the default of column '{}' of table '{}' calls it (drop the default first: ALTER TABLE {} ALTER COLUMN {} DROP DEFAULT)",
                        t.schema.fields[d.column].name, t.name, t.name, t.schema.fields[d.column].name
                    )));
                }
            }
        }
        self.named_sequences.remove(&key);
        self.version += 1;
        Ok(())
    }

    /// Records that the values of sequence `name` up to `next` (exclusive, in the
    /// sequence's direction) are reserved. A reservation the sequence is past already
    /// changes nothing, so that one can be recorded twice. Does not bump the version.
    pub fn reserve_named_sequence(&mut self, name: &str, next: i64) {
        if let Some(s) = self.named_sequences.get_mut(&name.to_lowercase()) {
            s.next = match s.increment > 0 {
                true => s.next.max(next),
                false => s.next.min(next),
            };
        }
    }

    /// `setval(sequence, value, called)`: the next value handed out is `value` (not
    /// `called`) or the one after it (`called`); `value` must lie within the sequence's
    /// bounds (a column's sequence: at least 1). Blocks clients reserved before keep
    /// their values, as sessions' cached values of a PostgreSQL sequence do. Does not bump
    /// the version.
    pub fn set_sequence(
        &mut self,
        sequence: &SequenceName,
        value: i64,
        called: bool,
    ) -> Result<(), PlanError> {
        let out_of_bounds = |min: i64, max: i64| {
            PlanError::Invalid(format!(
                "setval: value {value} is out of bounds for sequence \"{sequence}\" ({min}..{max})"
            ))
        };
        match sequence {
            SequenceName::Named(name) => {
                let s = self
                    .named_sequences
                    .get_mut(name)
                    .ok_or_else(|| PlanError::UnknownSequence(name.clone()))?;
                if value < s.min || value > s.max {
                    return Err(out_of_bounds(s.min, s.max));
                }
                s.next = match called {
                    true => value.saturating_add(s.increment),
                    false => value,
                };
            }
            SequenceName::Column { table, column } => {
                let s = self
                    .sequences
                    .get_mut(&(table.clone(), column.clone()))
                    .ok_or_else(|| PlanError::UnknownSequence(sequence.to_string()))?;
                if value < 1 {
                    return Err(out_of_bounds(1, i64::MAX));
                }
                s.next = match called {
                    true => value.saturating_add(1),
                    false => value,
                };
            }
        }
        Ok(())
    }
}

impl Catalog {
    /// `ALTER SEQUENCE`: applies `changes` to `sequence`, checked as `CREATE SEQUENCE`
    /// checks its options (bounds in order, the start and a restart within them). A change
    /// that would leave the next value outside the bounds is refused: restart it within
    /// them. A `SERIAL` or identity column's sequence takes `RESTART` only. Blocks clients
    /// reserved before keep their values, as after `setval`. Does not bump the version.
    pub fn alter_sequence(
        &mut self,
        sequence: &SequenceName,
        changes: &SequenceChanges,
    ) -> Result<(), PlanError> {
        let name = sequence.to_string();
        let invalid = |what: String| PlanError::Invalid(format!("sequence {name}: {what}"));
        match sequence {
            SequenceName::Column { table, column } => {
                // Owned by its own column it is already (or, with `NONE`, as before).
                let own = match &changes.owned_by {
                    Some(Some(o)) if o.table == *table && o.column == *column => {
                        changes.owned_by.clone()
                    }
                    Some(None) => Some(None),
                    _ => None,
                };
                let only_restart = SequenceChanges {
                    restart: changes.restart,
                    owned_by: own,
                    ..SequenceChanges::default()
                };
                if *changes != only_restart {
                    return Err(invalid(format!(
                        "the sequence of column '{column}' of '{table}' counts 1, 2, 3, ...: \
                         ALTER SEQUENCE takes RESTART [WITH n] for it, no other option"
                    )));
                }
                let s = self
                    .sequences
                    .get_mut(&(table.clone(), column.clone()))
                    .ok_or_else(|| PlanError::UnknownSequence(name.clone()))?;
                if let Some(restart) = changes.restart {
                    let next = restart.unwrap_or(1);
                    if next < 1 {
                        return Err(invalid(format!(
                            "RESTART value ({next}) cannot be less than MINVALUE (1)"
                        )));
                    }
                    s.next = next;
                }
                Ok(())
            }
            SequenceName::Named(key) => {
                if let Some(Some(owner)) = &changes.owned_by {
                    self.check_owner(owner)?;
                }
                let s = self
                    .named_sequences
                    .get_mut(key)
                    .ok_or_else(|| PlanError::UnknownSequence(name.clone()))?;
                let mut n = s.clone();
                if let Some(owner) = &changes.owned_by {
                    n.owner = owner.clone();
                }
                let (type_min, type_max) = changes.of_type.unwrap_or((i64::MIN, i64::MAX));
                if changes.of_type.is_some() {
                    n.min = n.min.max(type_min);
                    n.max = n.max.min(type_max);
                }
                if let Some(increment) = changes.increment {
                    if increment == 0 {
                        return Err(invalid("INCREMENT must not be zero".into()));
                    }
                    n.increment = increment;
                }
                if let Some(min) = changes.min {
                    n.min = min.unwrap_or(if n.increment > 0 { 1 } else { type_min });
                }
                if let Some(max) = changes.max {
                    n.max = max.unwrap_or(if n.increment > 0 { type_max } else { -1 });
                }
                if let Some(start) = changes.start {
                    n.start = start;
                }
                if n.min > n.max || n.min < type_min || n.max > type_max {
                    return Err(invalid(format!(
                        "MINVALUE ({}) must be at most MAXVALUE ({}), both within the \
                         sequence's type",
                        n.min, n.max
                    )));
                }
                if n.start < n.min || n.start > n.max {
                    return Err(invalid(format!(
                        "START value ({}) must lie within MINVALUE ({}) and MAXVALUE ({})",
                        n.start, n.min, n.max
                    )));
                }
                match changes.restart {
                    Some(restart) => {
                        let next = restart.unwrap_or(n.start);
                        if next < n.min || next > n.max {
                            return Err(invalid(format!(
                                "RESTART value ({next}) must lie within MINVALUE ({}) and \
                                 MAXVALUE ({})",
                                n.min, n.max
                            )));
                        }
                        n.next = next;
                    }
                    // A sequence used up stays so; one with values left keeps its next
                    // value, which must lie within the new bounds.
                    None => {
                        let behind = match n.increment > 0 {
                            true => n.next < n.min,
                            false => n.next > n.max,
                        };
                        let used_up = s.available(1).is_none();
                        if behind || (!used_up && n.available(1).is_none()) {
                            return Err(invalid(format!(
                                "its next value ({}) would lie outside MINVALUE ({}) and \
                                 MAXVALUE ({}): RESTART it within them",
                                n.next, n.min, n.max
                            )));
                        }
                    }
                }
                *s = n;
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seq(next: i64, increment: i64, min: i64, max: i64) -> NamedSequence {
        NamedSequence {
            name: "s".into(),
            next,
            start: next,
            increment,
            min,
            max,
            made: 1,
            owner: None,
        }
    }

    #[test]
    fn a_block_stops_at_the_sequences_bound_in_its_direction() {
        assert_eq!(seq(1, 1, 1, 100).available(64), Some((1, 64)));
        assert_eq!(seq(90, 1, 1, 100).available(64), Some((90, 11)));
        assert_eq!(seq(101, 1, 1, 100).available(64), None);
        assert_eq!(seq(1, 50, 1, 120).available(64), Some((1, 3)));
        assert_eq!(seq(-1, -1, -3, -1).available(64), Some((-1, 3)));
        assert_eq!(seq(-4, -1, -3, -1).available(64), None);
        let s = seq(1, 50, 1, i64::MAX);
        assert_eq!(s.after(1, 2), 101);
        assert_eq!(
            s.after(i64::MAX - 10, 2),
            i64::MAX,
            "saturates past the bound"
        );
    }

    #[test]
    fn names_resolve_to_made_sequences_then_to_columns_sequences() {
        let mut c = Catalog::new();
        assert!(c.add_sequence(seq(1, 1, 1, 10), false).unwrap());
        assert_eq!(c.resolve_sequence("S"), Ok(SequenceName::Named("s".into())));
        assert!(matches!(
            c.add_sequence(seq(1, 1, 1, 10), false),
            Err(PlanError::RelationExists(_))
        ));
        assert!(!c.add_sequence(seq(1, 1, 1, 10), true).unwrap());
        assert!(matches!(
            c.resolve_sequence("t_id_seq"),
            Err(PlanError::UnknownSequence(_))
        ));
        c.sequences.insert(
            ("t".into(), "id".into()),
            super::super::SequenceState {
                table: "t".into(),
                column: "id".into(),
                next: 1,
                made: 1,
            },
        );
        assert_eq!(
            c.resolve_sequence("t_id_seq"),
            Ok(SequenceName::Column {
                table: "t".into(),
                column: "id".into()
            })
        );
        c.drop_sequence("s").unwrap();
        assert!(c.named_sequence("s").is_none());
    }

    #[test]
    fn setval_sets_the_next_value_within_the_bounds() {
        let mut c = Catalog::new();
        c.add_sequence(seq(1, 5, 1, 100), false).unwrap();
        let s = SequenceName::Named("s".into());
        c.set_sequence(&s, 20, true).unwrap();
        assert_eq!(c.named_sequence("s").map(|s| s.next), Some(25));
        c.set_sequence(&s, 20, false).unwrap();
        assert_eq!(c.named_sequence("s").map(|s| s.next), Some(20));
        assert!(c.set_sequence(&s, 101, true).is_err());
        // A reservation recorded again, or behind the sequence, changes nothing.
        c.reserve_named_sequence("s", 10);
        assert_eq!(c.named_sequence("s").map(|s| s.next), Some(20));
    }
}
