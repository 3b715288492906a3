//! The catalog: table definitions, their indexes and partition counts, plus row-count hints
//! used by the planner's cost decisions.

use crate::error::PlanError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use weir_operators::Schema;

pub mod alter;
pub mod sequences;

/// A table definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableDef {
    /// Table name as written in `CREATE TABLE` (lookups are case-insensitive).
    pub name: String,
    /// Columns, in order.
    pub schema: Schema,
    /// Positions of the declared primary-key columns, in key order (one for `id BIGINT PRIMARY
    /// KEY`, several for `PRIMARY KEY (a, b)`): rows are hash-partitioned on the whole key, and
    /// a duplicate key or a NULL in a key column is refused. Empty when the table declares no
    /// key: every row is kept, and rows are placed by a hidden row id (see
    /// [`Catalog::reserve_row_ids`]).
    pub primary_key: Vec<usize>,
    /// Secondary indexes.
    pub indexes: Vec<IndexDef>,
    /// Columns declared `NOT NULL` (besides the primary key, which never is NULL): a row with
    /// NULL there is refused.
    #[serde(default)]
    pub not_null: Vec<usize>,
    /// Number of hash partitions.
    pub partitions: u32,
    /// For an external table (`CREATE EXTERNAL TABLE`), the files its rows are read from in
    /// place; such a table is read-only and has no key or index.
    #[serde(default)]
    pub external: Option<weir_operators::external::ExternalSource>,
    /// What an INSERT puts in the columns it gives no value for, where that is not NULL
    /// (`DEFAULT expr`, `SERIAL`, `GENERATED ... AS IDENTITY`), by column.
    pub defaults: Vec<ColumnDefault>,
    /// Its foreign keys (`REFERENCES`, `FOREIGN KEY ... REFERENCES`): the values rows of this
    /// table give those columns exist in the referenced table.
    pub foreign_keys: Vec<ForeignKey>,
    /// Its `CHECK` constraints: every row written makes each condition true or NULL.
    pub checks: Vec<CheckConstraint>,
    /// What `COMMENT ON TABLE` and `COMMENT ON COLUMN` said of it.
    pub comments: Comments,
}

/// The comments of a table and its columns (`COMMENT ON`), as psql's `\d+` and `\dt+` and
/// the drivers' reflection show them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Comments {
    /// The table's.
    pub table: Option<String>,
    /// The columns', by position, in column order.
    pub columns: Vec<(usize, String)>,
}

impl Comments {
    /// The comment of column `c`, if it has one.
    pub fn of_column(&self, c: usize) -> Option<&str> {
        self.columns
            .iter()
            .find(|(k, _)| *k == c)
            .map(|(_, text)| text.as_str())
    }
}

/// A `CHECK (condition)` of a table: a row for which the condition is false is refused
/// (true or NULL pass, as in PostgreSQL).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckConstraint {
    /// The constraint's name (given, or PostgreSQL's: `{table}_{column}_check` for one a
    /// column declares, `{table}_check` for one of the table).
    pub name: String,
    /// The condition as written, over the table's columns by name (bound where it is
    /// checked, as a view's query is).
    pub condition: String,
}

/// A foreign key: a row whose columns `columns` are all non-NULL holds values that a row of
/// table `parent` has in `parent_columns` (its primary key or a unique index's columns), as
/// PostgreSQL's default `MATCH SIMPLE` has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForeignKey {
    /// The constraint's name (given, or `{table}_{columns}_fkey` as PostgreSQL names it).
    pub name: String,
    /// Positions of the referencing columns, in the key's order.
    pub columns: Vec<usize>,
    /// The referenced table's name as stored in the catalog.
    pub parent: String,
    /// Positions of the referenced columns in `parent`, one per referencing column.
    pub parent_columns: Vec<usize>,
    /// What deleting a referenced row does.
    pub on_delete: ReferentialAction,
    /// What changing a referenced row's key does.
    pub on_update: ReferentialAction,
}

/// What deleting or changing a referenced row does to the rows referencing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReferentialAction {
    /// `NO ACTION` (the default) and `RESTRICT`: the statement fails while a row still
    /// references the row (weir checks when the statement ends, so both mean the same).
    NoAction,
    /// `RESTRICT`, as written (it behaves as [`ReferentialAction::NoAction`]).
    Restrict,
    /// `CASCADE`: the referencing rows are deleted with the rows they reference (`ON
    /// DELETE` only).
    Cascade,
    /// `SET NULL`: the referencing columns of the referencing rows become NULL (`ON DELETE`
    /// only).
    SetNull,
    /// `SET DEFAULT`: the referencing columns of the referencing rows take their defaults
    /// (NULL for a column without one), which must reference a row still there (`ON DELETE`
    /// only).
    SetDefault,
}

impl ReferentialAction {
    /// The action as SQL writes it.
    pub fn sql(self) -> &'static str {
        match self {
            ReferentialAction::NoAction => "NO ACTION",
            ReferentialAction::Restrict => "RESTRICT",
            ReferentialAction::Cascade => "CASCADE",
            ReferentialAction::SetNull => "SET NULL",
            ReferentialAction::SetDefault => "SET DEFAULT",
        }
    }
}

/// What an INSERT puts in column `column` when it gives no value for it (or `DEFAULT`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ColumnDefault {
    /// The column's position.
    pub column: usize,
    /// Its default.
    pub value: DefaultValue,
}

/// A column's default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum DefaultValue {
    /// `DEFAULT expr`: the expression as written, evaluated by each INSERT that needs it (it
    /// names no column).
    Expr(String),
    /// `SERIAL` (`BIGSERIAL`, `SMALLSERIAL`): the next values of the column's sequence (1,
    /// 2, 3, ... as handed out; a client reserves them in blocks, so values may skip, as
    /// PostgreSQL's may).
    Serial,
    /// `GENERATED {ALWAYS | BY DEFAULT} AS IDENTITY`: the next values of the column's
    /// sequence, as for [`DefaultValue::Serial`]. `always`: an INSERT may not give the
    /// column a value.
    Identity {
        /// `GENERATED ALWAYS`.
        always: bool,
    },
}

/// A sequence made by `CREATE SEQUENCE`: values from its start, `increment` apart, within
/// `min..=max`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamedSequence {
    /// The name, lowercase.
    pub name: String,
    /// The next value no client has reserved (past `max`, or below `min`, once every value
    /// was reserved).
    pub next: i64,
    /// The first value (`START WITH`).
    pub start: i64,
    /// The step between values (not 0; negative for a descending sequence).
    pub increment: i64,
    /// The smallest value.
    pub min: i64,
    /// The largest value.
    pub max: i64,
    /// The schema version that made the sequence (one dropped and made again is another
    /// sequence: blocks of the old one are not handed out).
    pub made: u64,
    /// The column that owns it (`OWNED BY table.column`): dropping the column or its table
    /// drops the sequence, as in PostgreSQL.
    pub owner: Option<SequenceOwner>,
}

/// The column a sequence made by `CREATE SEQUENCE` is `OWNED BY`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SequenceOwner {
    /// The table, lowercase.
    pub table: String,
    /// The column, lowercase.
    pub column: String,
}

/// What `ALTER SEQUENCE` changes of a sequence (`None`: left as it is).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SequenceChanges {
    /// `AS type`: the smallest and largest values of the type (bounds beyond them are
    /// brought within).
    pub of_type: Option<(i64, i64)>,
    /// `INCREMENT [BY] n`.
    pub increment: Option<i64>,
    /// `MINVALUE n` (`Some(Some(n))`) or `NO MINVALUE` (`Some(None)`: the default for the
    /// direction).
    pub min: Option<Option<i64>>,
    /// `MAXVALUE n` or `NO MAXVALUE`, as `min`.
    pub max: Option<Option<i64>>,
    /// `START [WITH] n`: where a `RESTART` without a value starts.
    pub start: Option<i64>,
    /// `RESTART [[WITH] n]`: the next value handed out is `n`, or the start without one.
    pub restart: Option<Option<i64>>,
    /// `OWNED BY table.column` (`Some(Some(..))`) or `OWNED BY NONE` (`Some(None)`).
    pub owned_by: Option<Option<SequenceOwner>>,
}

/// The sequence a call or a fill names.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum SequenceName {
    /// The sequence of a `SERIAL` or identity column (named `<table>_<column>_seq`, as
    /// PostgreSQL names it): lowercase table and column names.
    Column {
        /// The table.
        table: String,
        /// The column.
        column: String,
    },
    /// A sequence made by `CREATE SEQUENCE`, lowercase.
    Named(String),
}

/// A sequence's state in the catalog: the next value no client has reserved yet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SequenceState {
    /// Table name, lowercase.
    pub table: String,
    /// Column name, lowercase.
    pub column: String,
    /// The next value not yet reserved.
    pub next: i64,
    /// The schema version that made the table (a sequence of a table dropped and made again
    /// is another sequence).
    pub made: u64,
}

impl TableDef {
    /// Refuses a new constraint `name` that one of the table's constraints has already: its
    /// CHECK constraints, foreign keys and unique indexes (its UNIQUE constraints) share one
    /// set of names, as in PostgreSQL.
    pub(crate) fn check_constraint_name(&self, name: &str) -> Result<(), PlanError> {
        let taken = self
            .checks
            .iter()
            .map(|c| &c.name)
            .chain(self.foreign_keys.iter().map(|k| &k.name))
            .chain(self.indexes.iter().filter(|i| i.unique).map(|i| &i.name))
            .any(|n| n.eq_ignore_ascii_case(name));
        if taken {
            return Err(PlanError::Invalid(format!(
                "constraint \"{name}\" of table '{}' already exists",
                self.name
            )));
        }
        Ok(())
    }

    /// Whether `column` can be probed by an index on it alone: a one-column primary key or a
    /// secondary index.
    pub fn is_indexed(&self, column: usize) -> bool {
        self.primary_key == [column] || self.indexes.iter().any(|i| i.column == column)
    }

    /// The error for writing to, or indexing, an external table (`what` is the statement).
    pub fn refuse_external(&self, what: &str) -> Result<(), PlanError> {
        match &self.external {
            None => Ok(()),
            Some(source) => Err(PlanError::Invalid(format!(
                "table '{}' is an external table (read in place from {source}): {what} is not possible; CREATE TABLE ... AS SELECT copies its rows into a table that is",
                self.name
            ))),
        }
    }

    /// Whether the table declares a primary key.
    pub fn has_key(&self) -> bool {
        !self.primary_key.is_empty()
    }

    /// The default of `column`, if it has one besides NULL.
    pub fn default_of(&self, column: usize) -> Option<&DefaultValue> {
        self.defaults
            .iter()
            .find(|d| d.column == column)
            .map(|d| &d.value)
    }

    /// The columns an INSERT fills from their sequences (`SERIAL`, identity), in order.
    pub fn sequence_columns(&self) -> impl Iterator<Item = usize> + '_ {
        self.defaults
            .iter()
            .filter(|d| {
                matches!(
                    d.value,
                    DefaultValue::Serial | DefaultValue::Identity { .. }
                )
            })
            .map(|d| d.column)
    }

    /// The foreign keys of the tables of `catalog` that reference this table, with the
    /// referencing table (this table's own, when it references itself, included).
    pub fn referenced_by<'c>(
        &self,
        catalog: &'c Catalog,
    ) -> impl Iterator<Item = (&'c TableDef, &'c ForeignKey)> + 'c {
        let name = self.name.clone();
        catalog.tables().flat_map(move |t| {
            let name = name.clone();
            t.foreign_keys
                .iter()
                .filter(move |fk| fk.parent.eq_ignore_ascii_case(&name))
                .map(move |fk| (t, fk))
        })
    }

    /// Name of the index on `column` (`"PRIMARY KEY"` for a one-column key), if any.
    pub fn index_name(&self, column: usize) -> Option<&str> {
        if let Some(i) = self.indexes.iter().find(|i| i.column == column) {
            Some(&i.name)
        } else if self.primary_key == [column] {
            Some("PRIMARY KEY")
        } else {
            None
        }
    }
}

/// A secondary (ordered) index: on one column, or on several (`CREATE INDEX i ON t (a, b)`),
/// whose first column is the one the nodes index; `UNIQUE`, it refuses a second row with the
/// same values (rows with a NULL in one of them never clash).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexDef {
    /// Index name.
    pub name: String,
    /// Indexed column position (the first of a multi-column index).
    pub column: usize,
    /// The columns after the first of a multi-column index, in order.
    #[serde(default)]
    pub further: Vec<usize>,
    /// `CREATE UNIQUE INDEX`: no two rows have equal values in every column.
    #[serde(default)]
    pub unique: bool,
}

impl IndexDef {
    /// A plain index on one column.
    pub fn on(name: impl Into<String>, column: usize) -> IndexDef {
        IndexDef {
            name: name.into(),
            column,
            further: Vec::new(),
            unique: false,
        }
    }

    /// Every indexed column, in order.
    pub fn columns(&self) -> Vec<usize> {
        std::iter::once(self.column)
            .chain(self.further.iter().copied())
            .collect()
    }
}

/// A view: a named query, bound again wherever it is used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ViewDef {
    /// View name as written in `CREATE VIEW`.
    pub name: String,
    /// The query's SQL text.
    pub sql: String,
    /// Column names given in `CREATE VIEW v (a, b) AS ...` (empty: the query's names).
    pub columns: Vec<String>,
}

/// A catalog in a form that travels between processes (see [`Catalog::snapshot`]): every
/// table and view, the row-count hints, the next hidden row ids and the schema version.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CatalogSnapshot {
    /// The schema version.
    pub version: u64,
    /// Table definitions.
    pub tables: Vec<TableDef>,
    /// View definitions.
    pub views: Vec<ViewDef>,
    /// Row-count hints, by lowercase table name.
    pub row_counts: Vec<(String, u64)>,
    /// The next hidden row id, by lowercase table name.
    pub next_row_ids: Vec<(String, u64)>,
    /// The sequences of `SERIAL` and identity columns.
    pub sequences: Vec<SequenceState>,
    /// The sequences made by `CREATE SEQUENCE`.
    pub named_sequences: Vec<NamedSequence>,
}

/// All tables, by lowercase name. Every schema change bumps [`Catalog::version`], which keys
/// the plan cache; row-count hints and row ids do not.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    tables: BTreeMap<String, TableDef>,
    views: BTreeMap<String, ViewDef>,
    row_counts: BTreeMap<String, u64>,
    /// The next hidden row id of each table.
    next_row_ids: BTreeMap<String, u64>,
    /// The sequences of `SERIAL` and identity columns, by lowercase table and column name.
    sequences: BTreeMap<(String, String), SequenceState>,
    /// The sequences made by `CREATE SEQUENCE`, by lowercase name.
    named_sequences: BTreeMap<String, NamedSequence>,
    version: u64,
    /// Data nodes of the cluster the plans are for (see [`Catalog::set_data_nodes`]).
    data_nodes: Option<usize>,
    /// The most rounds of a recursive query's step (see [`Catalog::set_max_recursion`]).
    max_recursion: Option<usize>,
}

/// The most rounds a recursive query's step runs by default before the query fails.
pub const DEFAULT_MAX_RECURSION: usize = 10_000;

impl Catalog {
    /// An empty catalog at version 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// Everything the catalog holds, to send to another process.
    pub fn snapshot(&self) -> CatalogSnapshot {
        CatalogSnapshot {
            version: self.version,
            tables: self.tables.values().cloned().collect(),
            views: self.views.values().cloned().collect(),
            row_counts: self
                .row_counts
                .iter()
                .map(|(k, v)| (k.clone(), *v))
                .collect(),
            next_row_ids: self
                .next_row_ids
                .iter()
                .map(|(k, v)| (k.clone(), *v))
                .collect(),
            sequences: self.sequences.values().cloned().collect(),
            named_sequences: self.named_sequences.values().cloned().collect(),
        }
    }

    /// The catalog of `snapshot`, at a schema version of at least `min_version` (so that a
    /// plan cache keyed by the version of the catalog it replaces never serves a stale plan).
    pub fn from_snapshot(snapshot: CatalogSnapshot, min_version: u64) -> Catalog {
        let key = |n: &str| n.to_lowercase();
        Catalog {
            tables: snapshot
                .tables
                .into_iter()
                .map(|t| (key(&t.name), t))
                .collect(),
            views: snapshot
                .views
                .into_iter()
                .map(|v| (key(&v.name), v))
                .collect(),
            row_counts: snapshot.row_counts.into_iter().collect(),
            next_row_ids: snapshot.next_row_ids.into_iter().collect(),
            sequences: snapshot
                .sequences
                .into_iter()
                .map(|s| ((s.table.clone(), s.column.clone()), s))
                .collect(),
            named_sequences: snapshot
                .named_sequences
                .into_iter()
                .map(|s| (s.name.to_lowercase(), s))
                .collect(),
            version: snapshot.version.max(min_version),
            data_nodes: None,
            max_recursion: None,
        }
    }

    /// The schema version; bumped by every table or index change.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The table named `name` (case-insensitive).
    pub fn table(&self, name: &str) -> Option<&TableDef> {
        self.tables.get(&name.to_lowercase())
    }

    /// All tables, ordered by lowercase name.
    pub fn tables(&self) -> impl Iterator<Item = &TableDef> {
        self.tables.values()
    }

    /// All views, ordered by lowercase name.
    pub fn views(&self) -> impl Iterator<Item = &ViewDef> {
        self.views.values()
    }

    /// The view named `name` (case-insensitive).
    pub fn view(&self, name: &str) -> Option<&ViewDef> {
        self.views.get(&name.to_lowercase())
    }

    /// Adds a view, or replaces one with `replace`. A table or (without `replace`) a view of
    /// that name is an error.
    pub fn add_view(&mut self, v: ViewDef, replace: bool) -> Result<(), PlanError> {
        let key = v.name.to_lowercase();
        if self.tables.contains_key(&key) || (!replace && self.views.contains_key(&key)) {
            return Err(PlanError::TableExists(v.name));
        }
        self.views.insert(key, v);
        self.version += 1;
        Ok(())
    }

    /// Removes a view and returns its definition.
    pub fn drop_view(&mut self, name: &str) -> Result<ViewDef, PlanError> {
        let v = self
            .views
            .remove(&name.to_lowercase())
            .ok_or_else(|| PlanError::UnknownTable(name.to_string()))?;
        self.version += 1;
        Ok(v)
    }

    /// Adds a table. Adding a table identical to an existing one is a no-op (so that
    /// `CREATE TABLE IF NOT EXISTS` plans can be applied); a different one fails with
    /// [`PlanError::TableExists`].
    pub fn add_table(&mut self, t: TableDef) -> Result<(), PlanError> {
        let key = t.name.to_lowercase();
        if let Some(existing) = self.tables.get(&key) {
            if *existing == t {
                return Ok(());
            }
            return Err(PlanError::TableExists(t.name));
        }
        if self.views.contains_key(&key) {
            return Err(PlanError::TableExists(t.name));
        }
        if let Some(pk) = t.primary_key.iter().find(|&&pk| pk >= t.schema.len()) {
            return Err(PlanError::Invalid(format!(
                "primary key column {pk} out of range for table '{}'",
                t.name
            )));
        }
        self.version += 1;
        for column in t.sequence_columns() {
            let column = t.schema.fields[column].name.to_lowercase();
            let state = SequenceState {
                table: key.clone(),
                column: column.clone(),
                next: 1,
                made: self.version,
            };
            self.sequences.insert((key.clone(), column), state);
        }
        self.tables.insert(key, t);
        Ok(())
    }

    /// Removes a table and returns its definition.
    pub fn drop_table(&mut self, name: &str) -> Result<TableDef, PlanError> {
        let key = name.to_lowercase();
        let t = self
            .tables
            .remove(&key)
            .ok_or_else(|| PlanError::UnknownTable(name.to_string()))?;
        self.row_counts.remove(&key);
        self.next_row_ids.remove(&key);
        self.sequences.retain(|(table, _), _| *table != key);
        // The sequences its columns own go with it.
        self.named_sequences
            .retain(|_, s| s.owner.as_ref().is_none_or(|o| o.table != key));
        self.version += 1;
        Ok(t)
    }

    /// Adds a secondary index to `table`. Adding an identical index again is a no-op; another
    /// index with the same name fails with [`PlanError::IndexExists`].
    pub fn add_index(&mut self, table: &str, index: IndexDef) -> Result<(), PlanError> {
        let t = self
            .tables
            .get_mut(&table.to_lowercase())
            .ok_or_else(|| PlanError::UnknownTable(table.to_string()))?;
        if let Some(existing) = t
            .indexes
            .iter()
            .find(|i| i.name.eq_ignore_ascii_case(&index.name))
        {
            if *existing == index {
                return Ok(());
            }
            return Err(PlanError::IndexExists(index.name));
        }
        if index.unique {
            // A unique index is a UNIQUE constraint, whose name the others may not have.
            t.check_constraint_name(&index.name)?;
        }
        if let Some(c) = index.columns().into_iter().find(|&c| c >= t.schema.len()) {
            return Err(PlanError::Invalid(format!(
                "index column {c} out of range for table '{}'",
                t.name
            )));
        }
        t.indexes.push(index);
        self.version += 1;
        Ok(())
    }

    /// Records the (approximate) number of rows of `table`, used to pick join build sides.
    /// Does not bump the version.
    pub fn set_row_count(&mut self, table: &str, n: u64) {
        self.row_counts.insert(table.to_lowercase(), n);
    }

    /// Records how many data nodes the cluster has, which decides whether a join input is
    /// broadcast or both inputs are repartitioned (see the physical planner). A property of
    /// the cluster, not of the schema: it is not part of [`Catalog::snapshot`] and does not
    /// bump the version.
    pub fn set_data_nodes(&mut self, nodes: usize) {
        self.data_nodes = Some(nodes.max(1));
    }

    /// Plans a recursive query (`WITH RECURSIVE`) to fail when its step still adds rows
    /// after `rounds` rounds (default [`DEFAULT_MAX_RECURSION`]).
    pub fn set_max_recursion(&mut self, rounds: usize) {
        self.max_recursion = Some(rounds);
    }

    /// The most rounds of a recursive query's step (see [`Catalog::set_max_recursion`]).
    pub fn max_recursion(&self) -> usize {
        self.max_recursion.unwrap_or(DEFAULT_MAX_RECURSION)
    }

    /// The data nodes recorded by [`Catalog::set_data_nodes`], if any.
    pub fn data_nodes(&self) -> Option<usize> {
        self.data_nodes
    }

    /// The recorded row count of `table` (0 when never set).
    pub fn row_count(&self, table: &str) -> u64 {
        self.row_counts
            .get(&table.to_lowercase())
            .copied()
            .unwrap_or(0)
    }

    /// The sequence of column `column` of `table` (a `SERIAL` or identity column).
    pub fn sequence(&self, table: &str, column: &str) -> Option<&SequenceState> {
        self.sequences
            .get(&(table.to_lowercase(), column.to_lowercase()))
    }

    /// Records that the values of `column`'s sequence below `next` are reserved (a value
    /// below the sequence's own next changes nothing, so that the same reservation can be
    /// made twice). Does not bump the version.
    pub fn reserve_sequence(&mut self, table: &str, column: &str, next: i64) {
        if let Some(s) = self
            .sequences
            .get_mut(&(table.to_lowercase(), column.to_lowercase()))
        {
            s.next = s.next.max(next);
        }
    }

    /// Hands out `n` consecutive hidden row ids for rows about to be stored in `table` and
    /// returns the first. Ids are never handed out twice for a table (not even when the rows
    /// that got them were refused), until the table is dropped; they place the rows of a
    /// table without a primary key on partitions. Does not bump the version.
    pub fn reserve_row_ids(&mut self, table: &str, n: u64) -> u64 {
        let next = self.next_row_ids.entry(table.to_lowercase()).or_insert(0);
        let first = *next;
        *next = next.saturating_add(n);
        first
    }
}
