//! `ALTER TABLE` on the catalog: what one change does to a table's definition and to what
//! refers to it (its keys, indexes, defaults, foreign keys of other tables, sequences, row
//! hints). The rows are changed by the runtime; this module only keeps the catalog right.

use super::*;
use weir_operators::{DataType, Field, Value};

/// One change `ALTER TABLE` makes to a table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum TableChange {
    /// `ADD [COLUMN] name type [DEFAULT expr] [NOT NULL]`: a last column; the rows stored
    /// take `fill`.
    AddColumn {
        /// The column.
        field: Field,
        /// Its `DEFAULT`, for later INSERTs.
        default: Option<DefaultValue>,
        /// Declared `NOT NULL`.
        not_null: bool,
        /// The value the rows stored take (the default's value, evaluated once, or NULL).
        fill: Value,
    },
    /// `DROP [COLUMN] name`: the column and its values go; the columns after it move one
    /// position left.
    DropColumn {
        /// The column's position.
        column: usize,
    },
    /// `RENAME [COLUMN] name TO new`.
    RenameColumn {
        /// The column's position.
        column: usize,
        /// The new name.
        to: String,
    },
    /// `RENAME TO new`.
    RenameTable {
        /// The new name.
        to: String,
    },
    /// `ADD [CONSTRAINT name] FOREIGN KEY (cols) REFERENCES parent [(cols)]` (the rows stored
    /// were checked against it).
    AddForeignKey(ForeignKey),
    /// `ADD [CONSTRAINT name] CHECK (condition)` (the rows stored were checked against it).
    AddCheck(CheckConstraint),
    /// `DROP CONSTRAINT name` of a `CHECK` constraint.
    DropCheck {
        /// The constraint's name.
        name: String,
    },
    /// `DROP CONSTRAINT name` of a foreign key.
    DropForeignKey {
        /// The key's name.
        name: String,
    },
    /// `DROP INDEX name`.
    DropIndex {
        /// The index's name.
        name: String,
    },
    /// `ALTER [COLUMN] name SET DEFAULT expr` (`Some`) or `DROP DEFAULT` (`None`).
    SetDefault {
        /// The column's position.
        column: usize,
        /// The new default.
        default: Option<DefaultValue>,
    },
    /// `ALTER [COLUMN] name [SET DATA] TYPE type`: the values stored are cast to the type
    /// (the runtime checks first that they all convert).
    SetType {
        /// The column's position.
        column: usize,
        /// The new type.
        to: DataType,
    },
    /// `ADD [CONSTRAINT name] PRIMARY KEY (cols)` to a table without one, which holds no rows
    /// (the runtime checks): rows are placed by their key from then on.
    AddPrimaryKey {
        /// The key's columns, in key order.
        columns: Vec<usize>,
    },
    /// `ALTER [COLUMN] name ADD GENERATED {ALWAYS | BY DEFAULT} AS IDENTITY`: the column
    /// takes its values from its sequence (`<table>_<column>_seq`), whose next value is
    /// `start`; it refuses NULL from then on (the runtime checks the rows stored have none).
    AddIdentity {
        /// The column's position.
        column: usize,
        /// `GENERATED ALWAYS`: an INSERT may not give the column a value.
        always: bool,
        /// The sequence's first value.
        start: i64,
    },
    /// `COMMENT ON TABLE` (`column` `None`) or `COMMENT ON COLUMN`: the comment, or none
    /// (`IS NULL`, or an empty text, as PostgreSQL takes it).
    SetComment {
        /// The column's position, for a column's comment.
        column: Option<usize>,
        /// The comment.
        text: Option<String>,
    },
    /// `ALTER [COLUMN] name SET NOT NULL` (`true`) or `DROP NOT NULL` (`false`).
    SetNotNull {
        /// The column's position.
        column: usize,
        /// Whether the column refuses NULL from now on.
        not_null: bool,
    },
}

impl TableChange {
    /// Whether the change rewrites the rows stored (or where they are kept), and not only
    /// the catalog and the names the rows go by.
    pub fn changes_storage(&self) -> bool {
        matches!(
            self,
            TableChange::AddColumn { .. }
                | TableChange::DropColumn { .. }
                | TableChange::RenameTable { .. }
                | TableChange::SetType { .. }
                | TableChange::AddPrimaryKey { .. }
        )
    }
}

/// Refuses a column `name` that `fields` (the columns declared before it) already has.
pub(crate) fn check_new_column(fields: &[Field], name: &str) -> Result<(), PlanError> {
    if fields.iter().any(|f| f.name.eq_ignore_ascii_case(name)) {
        return Err(PlanError::Invalid(format!(
            "column '{name}' specified more than once"
        )));
    }
    Ok(())
}

/// Moves a column position past a dropped column `dropped` one left.
fn shift(c: &mut usize, dropped: usize) {
    if *c > dropped {
        *c -= 1;
    }
}

impl Catalog {
    /// Makes `change` to table `table`'s definition (and to what refers to it), bumping the
    /// schema version. A change that would leave the catalog inconsistent (a column named
    /// twice, a key or an index or a foreign key left on a dropped column, a name taken) is
    /// refused and changes nothing.
    pub fn alter_table(&mut self, table: &str, change: &TableChange) -> Result<(), PlanError> {
        let key = table.to_lowercase();
        let def = self
            .tables
            .get(&key)
            .ok_or_else(|| PlanError::UnknownTable(table.to_string()))?;
        if def.external.is_some() {
            return Err(PlanError::Invalid(format!(
                "table '{}' is an external table: ALTER TABLE cannot change it (make it again)",
                def.name
            )));
        }
        let column_name = |c: usize| def.schema.fields.get(c).map(|f| f.name.clone());
        if let TableChange::DropColumn { column: c }
        | TableChange::RenameColumn { column: c, .. }
        | TableChange::SetDefault { column: c, .. }
        | TableChange::SetType { column: c, .. }
        | TableChange::AddIdentity { column: c, .. }
        | TableChange::SetNotNull { column: c, .. }
        | TableChange::SetComment {
            column: Some(c), ..
        } = change
        {
            if column_name(*c).is_none() {
                return Err(PlanError::Invalid(format!(
                    "no column #{c} in table '{}'",
                    def.name
                )));
            }
        }
        match change {
            TableChange::AddColumn {
                field,
                default,
                not_null,
                ..
            } => {
                check_new_column(&def.schema.fields, &field.name)?;
                let c = def.schema.len();
                let t = self.tables.get_mut(&key).expect("checked above");
                t.schema.fields.push(field.clone());
                if let Some(value) = default {
                    t.defaults.push(ColumnDefault {
                        column: c,
                        value: value.clone(),
                    });
                }
                if *not_null {
                    t.not_null.push(c);
                }
            }
            TableChange::DropColumn { column } => {
                let c = *column;
                self.check_droppable(def, c)?;
                let name = def.schema.fields[c].name.to_lowercase();
                let t = self.tables.get_mut(&key).expect("checked above");
                t.schema.fields.remove(c);
                t.primary_key.iter_mut().for_each(|k| shift(k, c));
                for index in &mut t.indexes {
                    shift(&mut index.column, c);
                    index.further.iter_mut().for_each(|k| shift(k, c));
                }
                t.not_null.retain(|&k| k != c);
                t.not_null.iter_mut().for_each(|k| shift(k, c));
                t.defaults.retain(|d| d.column != c);
                t.defaults.iter_mut().for_each(|d| shift(&mut d.column, c));
                t.comments.columns.retain(|(k, _)| *k != c);
                t.comments.columns.iter_mut().for_each(|(k, _)| shift(k, c));
                for fk in &mut t.foreign_keys {
                    fk.columns.iter_mut().for_each(|k| shift(k, c));
                }
                for other in self.tables.values_mut() {
                    for fk in &mut other.foreign_keys {
                        if fk.parent.eq_ignore_ascii_case(&key) {
                            fk.parent_columns.iter_mut().for_each(|k| shift(k, c));
                        }
                    }
                }
                // The sequences the column owns go with it.
                self.named_sequences.retain(|_, s| {
                    s.owner
                        .as_ref()
                        .is_none_or(|o| o.table != key || o.column != name)
                });
                self.sequences.remove(&(key.clone(), name));
            }
            TableChange::RenameColumn { column, to } => {
                let c = *column;
                let others: Vec<Field> = def
                    .schema
                    .fields
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i != c)
                    .map(|(_, f)| f.clone())
                    .collect();
                check_new_column(&others, to)?;
                let old = def.schema.fields[c].name.to_lowercase();
                let t = self.tables.get_mut(&key).expect("checked above");
                t.schema.fields[c].name = to.clone();
                for check in &mut t.checks {
                    check.condition = crate::checks::renamed(&check.condition, &old, to, false);
                }
                for s in self.named_sequences.values_mut() {
                    if let Some(o) = s
                        .owner
                        .as_mut()
                        .filter(|o| o.table == key && o.column == old)
                    {
                        o.column = to.to_lowercase();
                    }
                }
                if let Some(mut s) = self.sequences.remove(&(key.clone(), old)) {
                    s.column = to.to_lowercase();
                    self.sequences.insert((key.clone(), s.column.clone()), s);
                }
            }
            TableChange::RenameTable { to } => {
                let new_key = to.to_lowercase();
                if new_key != key
                    && (self.tables.contains_key(&new_key) || self.views.contains_key(&new_key))
                {
                    return Err(PlanError::TableExists(to.clone()));
                }
                let mut t = self.tables.remove(&key).expect("checked above");
                t.name = to.clone();
                for check in &mut t.checks {
                    check.condition = crate::checks::renamed(&check.condition, &key, to, true);
                }
                for fk in &mut t.foreign_keys {
                    if fk.parent.eq_ignore_ascii_case(&key) {
                        fk.parent = to.clone();
                    }
                }
                for other in self.tables.values_mut() {
                    for fk in &mut other.foreign_keys {
                        if fk.parent.eq_ignore_ascii_case(&key) {
                            fk.parent = to.clone();
                        }
                    }
                }
                self.tables.insert(new_key.clone(), t);
                if let Some(n) = self.row_counts.remove(&key) {
                    self.row_counts.insert(new_key.clone(), n);
                }
                if let Some(n) = self.next_row_ids.remove(&key) {
                    self.next_row_ids.insert(new_key.clone(), n);
                }
                for s in self.named_sequences.values_mut() {
                    if let Some(o) = s.owner.as_mut().filter(|o| o.table == key) {
                        o.table = new_key.clone();
                    }
                }
                let moved: Vec<(String, String)> = self
                    .sequences
                    .keys()
                    .filter(|(t, _)| *t == key)
                    .cloned()
                    .collect();
                for old in moved {
                    if let Some(mut s) = self.sequences.remove(&old) {
                        s.table = new_key.clone();
                        self.sequences
                            .insert((new_key.clone(), s.column.clone()), s);
                    }
                }
            }
            TableChange::AddForeignKey(fk) => {
                def.check_constraint_name(&fk.name)?;
                let t = self.tables.get_mut(&key).expect("checked above");
                t.foreign_keys.push(fk.clone());
            }
            TableChange::DropForeignKey { name } => {
                let t = self.tables.get_mut(&key).expect("checked above");
                let before = t.foreign_keys.len();
                t.foreign_keys
                    .retain(|k| !k.name.eq_ignore_ascii_case(name));
                if t.foreign_keys.len() == before {
                    return Err(PlanError::Invalid(format!(
                        "table '{}' has no foreign key named '{name}'",
                        t.name
                    )));
                }
            }
            TableChange::DropIndex { name } => {
                let index = def
                    .indexes
                    .iter()
                    .find(|i| i.name.eq_ignore_ascii_case(name))
                    .ok_or_else(|| {
                        PlanError::Invalid(format!(
                            "table '{}' has no index named '{name}'",
                            def.name
                        ))
                    })?;
                let mut columns = index.columns();
                columns.sort_unstable();
                let mut pk = def.primary_key.clone();
                pk.sort_unstable();
                let other_unique = def.indexes.iter().any(|i| {
                    let mut c = i.columns();
                    c.sort_unstable();
                    i.unique && c == columns && !i.name.eq_ignore_ascii_case(name)
                });
                if index.unique && pk != columns && !other_unique {
                    let needs = def.referenced_by(self).find(|(_, fk)| {
                        let mut p = fk.parent_columns.clone();
                        p.sort_unstable();
                        p == columns
                    });
                    if let Some((child, fk)) = needs {
                        return Err(PlanError::Depended(format!(
                            "cannot drop index '{}': foreign key '{}' of table '{}' references its columns",
                            index.name, fk.name, child.name
                        )));
                    }
                }
                let index_name = index.name.clone();
                let t = self.tables.get_mut(&key).expect("checked above");
                t.indexes.retain(|i| i.name != index_name);
            }
            TableChange::SetType { column, to } => {
                let c = *column;
                self.check_retypable(def, c)?;
                let t = self.tables.get_mut(&key).expect("checked above");
                t.schema.fields[c].data_type = *to;
            }
            TableChange::SetDefault { column, default } => {
                let c = *column;
                if let Some(DefaultValue::Serial | DefaultValue::Identity { .. }) =
                    def.default_of(c)
                {
                    return Err(PlanError::Invalid(format!(
                        "column '{}' of table '{}' takes its values from a sequence (SERIAL or identity): its default cannot change",
                        def.schema.fields[c].name, def.name
                    )));
                }
                let t = self.tables.get_mut(&key).expect("checked above");
                t.defaults.retain(|d| d.column != c);
                if let Some(value) = default {
                    t.defaults.push(ColumnDefault {
                        column: c,
                        value: value.clone(),
                    });
                    t.defaults.sort_by_key(|d| d.column);
                }
            }
            TableChange::SetNotNull { column, not_null } => {
                let c = *column;
                if !*not_null && def.primary_key.contains(&c) {
                    return Err(PlanError::Invalid(format!(
                        "column '{}' is in the primary key of table '{}': it cannot take NULL",
                        def.schema.fields[c].name, def.name
                    )));
                }
                let in_key = def.primary_key.contains(&c);
                let t = self.tables.get_mut(&key).expect("checked above");
                t.not_null.retain(|&k| k != c);
                if *not_null && !in_key {
                    t.not_null.push(c);
                    t.not_null.sort_unstable();
                }
            }
            TableChange::AddCheck(check) => {
                def.check_constraint_name(&check.name)?;
                let t = self.tables.get_mut(&key).expect("checked above");
                t.checks.push(check.clone());
            }
            TableChange::DropCheck { name } => {
                let t = self.tables.get_mut(&key).expect("checked above");
                t.checks.retain(|k| !k.name.eq_ignore_ascii_case(name));
            }
            TableChange::AddIdentity {
                column,
                always,
                start,
            } => {
                let c = *column;
                let name = def.schema.fields[c].name.clone();
                if def.default_of(c).is_some() {
                    return Err(PlanError::Invalid(format!(
                        "column '{name}' of table '{}' has a default already: it cannot be an identity column (drop the default first)",
                        def.name
                    )));
                }
                let in_key = def.primary_key.contains(&c);
                let t = self.tables.get_mut(&key).expect("checked above");
                t.defaults.push(ColumnDefault {
                    column: c,
                    value: DefaultValue::Identity { always: *always },
                });
                t.defaults.sort_by_key(|d| d.column);
                if !in_key && !t.not_null.contains(&c) {
                    t.not_null.push(c);
                    t.not_null.sort_unstable();
                }
                let column = name.to_lowercase();
                let state = super::SequenceState {
                    table: key.clone(),
                    column: column.clone(),
                    next: *start,
                    made: self.version + 1,
                };
                self.sequences.insert((key.clone(), column), state);
            }
            TableChange::SetComment { column, text } => {
                let text = text.clone().filter(|t| !t.is_empty());
                let comments = &mut self.tables.get_mut(&key).expect("checked above").comments;
                match column {
                    None => comments.table = text,
                    Some(c) => {
                        comments.columns.retain(|(k, _)| k != c);
                        if let Some(text) = text {
                            comments.columns.push((*c, text));
                            comments.columns.sort_by_key(|(k, _)| *k);
                        }
                    }
                }
            }
            TableChange::AddPrimaryKey { columns } => {
                if !def.primary_key.is_empty() {
                    return Err(PlanError::Invalid(format!(
                        "multiple primary keys for table '{}' are not allowed",
                        def.name
                    )));
                }
                let repeated = columns
                    .iter()
                    .enumerate()
                    .any(|(i, c)| columns[..i].contains(c));
                if columns.is_empty()
                    || repeated
                    || columns.iter().any(|&c| column_name(c).is_none())
                {
                    return Err(PlanError::Invalid(format!(
                        "a primary key of table '{}' names each of its columns once",
                        def.name
                    )));
                }
                let t = self.tables.get_mut(&key).expect("checked above");
                t.primary_key = columns.clone();
                // The key's columns never hold NULL; the list holds the others.
                t.not_null.retain(|c| !columns.contains(c));
            }
        }
        self.version += 1;
        Ok(())
    }

    /// What keeps column `c` of `def` as it is, if anything (its values are held by type
    /// and position there): the primary key, an index, a foreign key of the table or one
    /// that references it.
    fn needed_by(&self, def: &TableDef, c: usize) -> Option<String> {
        if def.primary_key.contains(&c) {
            return Some("it is in the primary key".into());
        }
        if let Some(index) = def.indexes.iter().find(|i| i.columns().contains(&c)) {
            return Some(format!("index '{}' is on it", index.name));
        }
        if let Some(fk) = def.foreign_keys.iter().find(|fk| fk.columns.contains(&c)) {
            return Some(format!("foreign key '{}' is on it", fk.name));
        }
        let column = def.schema.fields[c].name.to_lowercase();
        if let Some(check) = def
            .checks
            .iter()
            .find(|k| crate::checks::columns_read(&k.condition).contains(&column))
        {
            return Some(format!("CHECK constraint '{}' reads it", check.name));
        }
        def.referenced_by(self)
            .find(|(_, fk)| fk.parent_columns.contains(&c))
            .map(|(child, fk)| {
                format!(
                    "foreign key '{}' of table '{}' references it",
                    fk.name, child.name
                )
            })
    }

    /// Refuses changing the type of column `c` of `def` while something needs it
    /// ([`Catalog::needed_by`]) or a sequence gives its values.
    fn check_retypable(&self, def: &TableDef, c: usize) -> Result<(), PlanError> {
        let sequence = matches!(
            def.default_of(c),
            Some(DefaultValue::Serial | DefaultValue::Identity { .. })
        );
        let why = self
            .needed_by(def, c)
            .or_else(|| sequence.then(|| "a sequence gives its values".to_string()));
        match why {
            None => Ok(()),
            Some(why) => Err(PlanError::Depended(format!(
                "cannot change the type of column '{}' of table '{}': {why}",
                def.schema.fields[c].name, def.name
            ))),
        }
    }

    /// Refuses dropping column `c` of `def` while something needs it
    /// ([`Catalog::needed_by`]), as PostgreSQL refuses it without `CASCADE`, or when it is
    /// the table's only column.
    fn check_droppable(&self, def: &TableDef, c: usize) -> Result<(), PlanError> {
        let only = def.schema.len() == 1;
        let why = if only {
            Some("it is the table's only column (drop the table)".to_string())
        } else {
            self.needed_by(def, c)
        };
        match why {
            None => Ok(()),
            Some(why) => Err(PlanError::Depended(format!(
                "cannot drop column '{}' of table '{}': {why}",
                def.schema.fields[c].name, def.name
            ))),
        }
    }
}
