//! The catalog's first wire form, written before catalogs carried a format version (weir up
//! to 2026-12-06): read so that a data directory, or a catalog log, written then still
//! starts, and converted to today's [`CatalogSnapshot`].
//!
//! Its types mirror the planner's of that time field for field (bincode encodes fields by
//! position, not by name): change nothing here.

use serde::Deserialize;
use weir_operators::external::ExternalSource;
use weir_operators::Schema;
use weir_planner::{CatalogSnapshot, IndexDef, TableDef, ViewDef};

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
    fn from(v1: CatalogSnapshotV1) -> Self {
        CatalogSnapshot {
            version: v1.version,
            tables: v1
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
                    defaults: Vec::new(),
                })
                .collect(),
            views: v1.views,
            row_counts: v1.row_counts,
            next_row_ids: v1.next_row_ids,
            sequences: Vec::new(),
        }
    }
}
