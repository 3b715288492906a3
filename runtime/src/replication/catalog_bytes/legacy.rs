//! The catalog's earlier wire forms, read so that a data directory, or a catalog log, written
//! by an earlier build still starts, and converted to today's [`CatalogSnapshot`]: the first
//! (written before catalogs carried a format number, weir up to 2026-12-06), format 2
//! (column defaults and sequences, before foreign keys), format 3 (foreign keys, before
//! `CREATE SEQUENCE`), format 4 (`CREATE SEQUENCE`, before `OWNED BY` and `CHECK`
//! constraints) and format 5 (`OWNED BY` and `CHECK`, before `COMMENT ON`).
//!
//! Their types mirror the planner's of that time field for field (bincode encodes fields by
//! position, not by name): change nothing here.

use serde::Deserialize;
use weir_operators::external::ExternalSource;
use weir_operators::Schema;
use weir_planner::{
    CatalogSnapshot, CheckConstraint, ColumnDefault, ForeignKey, IndexDef, NamedSequence,
    SequenceState, TableDef, ViewDef,
};

/// A table definition of format 1.
#[derive(Deserialize)]
struct TableDefV1 {
    name: String,
    schema: Schema,
    primary_key: Vec<usize>,
    indexes: Vec<IndexDef>,
    not_null: Vec<usize>,
    partitions: u32,
    external: Option<ExternalSource>,
}

/// A catalog of format 1.
#[derive(Deserialize)]
pub(super) struct CatalogSnapshotV1 {
    version: u64,
    tables: Vec<TableDefV1>,
    views: Vec<ViewDef>,
    row_counts: Vec<(String, u64)>,
    next_row_ids: Vec<(String, u64)>,
}

impl From<CatalogSnapshotV1> for CatalogSnapshot {
    /// Through format 2, which added column defaults and sequences (none in format 1).
    fn from(v1: CatalogSnapshotV1) -> Self {
        CatalogSnapshotV2 {
            version: v1.version,
            tables: v1
                .tables
                .into_iter()
                .map(|t| TableDefV2 {
                    name: t.name,
                    schema: t.schema,
                    primary_key: t.primary_key,
                    indexes: t.indexes,
                    not_null: t.not_null,
                    partitions: t.partitions,
                    external: t.external,
                    defaults: Vec::new(),
                })
                .collect(),
            views: v1.views,
            row_counts: v1.row_counts,
            next_row_ids: v1.next_row_ids,
            sequences: Vec::new(),
        }
        .into()
    }
}

/// A table definition of format 2.
#[derive(Deserialize)]
struct TableDefV2 {
    name: String,
    schema: Schema,
    primary_key: Vec<usize>,
    indexes: Vec<IndexDef>,
    not_null: Vec<usize>,
    partitions: u32,
    external: Option<ExternalSource>,
    defaults: Vec<ColumnDefault>,
}

/// A catalog of format 2.
#[derive(Deserialize)]
pub(super) struct CatalogSnapshotV2 {
    version: u64,
    tables: Vec<TableDefV2>,
    views: Vec<ViewDef>,
    row_counts: Vec<(String, u64)>,
    next_row_ids: Vec<(String, u64)>,
    sequences: Vec<SequenceState>,
}

impl From<CatalogSnapshotV2> for CatalogSnapshot {
    fn from(v2: CatalogSnapshotV2) -> Self {
        CatalogSnapshot {
            version: v2.version,
            tables: v2
                .tables
                .into_iter()
                .map(|t| TableDef {
                    name: t.name,
                    schema: t.schema,
                    primary_key: t.primary_key,
                    indexes: t.indexes,
                    not_null: t.not_null,
                    partitions: t.partitions,
                    external: t.external,
                    defaults: t.defaults,
                    foreign_keys: Vec::new(),
                    checks: Vec::new(),
                    comments: Default::default(),
                })
                .collect(),
            views: v2.views,
            row_counts: v2.row_counts,
            next_row_ids: v2.next_row_ids,
            sequences: v2.sequences,
            named_sequences: Vec::new(),
        }
    }
}

/// A table definition of formats 3 and 4 (foreign keys, no `CHECK` constraints).
#[derive(Deserialize)]
pub(super) struct TableDefV4 {
    name: String,
    schema: Schema,
    primary_key: Vec<usize>,
    indexes: Vec<IndexDef>,
    not_null: Vec<usize>,
    partitions: u32,
    external: Option<ExternalSource>,
    defaults: Vec<ColumnDefault>,
    foreign_keys: Vec<ForeignKey>,
}

impl From<TableDefV4> for TableDef {
    fn from(t: TableDefV4) -> Self {
        TableDef {
            name: t.name,
            schema: t.schema,
            primary_key: t.primary_key,
            indexes: t.indexes,
            not_null: t.not_null,
            partitions: t.partitions,
            external: t.external,
            defaults: t.defaults,
            foreign_keys: t.foreign_keys,
            checks: Vec::new(),
            comments: Default::default(),
        }
    }
}

/// A catalog of formats 2 and 3 (format 3's tables have foreign keys).
#[derive(Deserialize)]
pub(super) struct CatalogSnapshotV3Of<T> {
    version: u64,
    tables: Vec<T>,
    views: Vec<ViewDef>,
    row_counts: Vec<(String, u64)>,
    next_row_ids: Vec<(String, u64)>,
    sequences: Vec<SequenceState>,
}

/// A catalog of format 3.
pub(super) type CatalogSnapshotV3 = CatalogSnapshotV3Of<TableDefV4>;

impl<T> From<CatalogSnapshotV3Of<T>> for CatalogSnapshot
where
    TableDef: From<T>,
{
    fn from(v3: CatalogSnapshotV3Of<T>) -> Self {
        CatalogSnapshot {
            version: v3.version,
            tables: v3.tables.into_iter().map(TableDef::from).collect(),
            views: v3.views,
            row_counts: v3.row_counts,
            next_row_ids: v3.next_row_ids,
            sequences: v3.sequences,
            named_sequences: Vec::new(),
        }
    }
}

/// A sequence made by `CREATE SEQUENCE` in format 4 (no owning column).
#[derive(Deserialize)]
pub(super) struct NamedSequenceV4 {
    name: String,
    next: i64,
    start: i64,
    increment: i64,
    min: i64,
    max: i64,
    made: u64,
}

impl From<NamedSequenceV4> for NamedSequence {
    fn from(s: NamedSequenceV4) -> Self {
        NamedSequence {
            name: s.name,
            next: s.next,
            start: s.start,
            increment: s.increment,
            min: s.min,
            max: s.max,
            made: s.made,
            owner: None,
        }
    }
}

/// A catalog of formats 4 and 5: format 3's fields, then the sequences of `CREATE SEQUENCE`
/// (format 4's without owners, format 5's tables with `CHECK` constraints). Bincode writes a
/// nested struct's fields in place, as if they were this one's.
#[derive(Deserialize)]
pub(super) struct CatalogSnapshotV5Of<T, S> {
    v3: CatalogSnapshotV3Of<T>,
    named_sequences: Vec<S>,
}

/// A catalog of format 4.
pub(super) type CatalogSnapshotV4 = CatalogSnapshotV5Of<TableDefV4, NamedSequenceV4>;

/// A catalog of format 5.
pub(super) type CatalogSnapshotV5 = CatalogSnapshotV5Of<TableDefV5, NamedSequence>;

impl<T, S> From<CatalogSnapshotV5Of<T, S>> for CatalogSnapshot
where
    TableDef: From<T>,
    NamedSequence: From<S>,
{
    fn from(v: CatalogSnapshotV5Of<T, S>) -> Self {
        CatalogSnapshot {
            named_sequences: v
                .named_sequences
                .into_iter()
                .map(NamedSequence::from)
                .collect(),
            ..v.v3.into()
        }
    }
}

/// A table definition of format 5: format 4's fields, then its `CHECK` constraints (no
/// comments). Bincode writes a nested struct's fields in place, as if they were this one's.
#[derive(Deserialize)]
pub(super) struct TableDefV5 {
    v4: TableDefV4,
    checks: Vec<CheckConstraint>,
}

impl From<TableDefV5> for TableDef {
    fn from(t: TableDefV5) -> Self {
        TableDef {
            checks: t.checks,
            ..TableDef::from(t.v4)
        }
    }
}
