//! In-memory partition storage: the rows of one table partition as immutable columnar chunks,
//! a primary-key index and ordered secondary indexes, plus the partition function.

use crate::batch::Batch;
use crate::error::Result;
use crate::plan::IndexLookup;
use crate::types::Schema;
use crate::value::Value;
use std::sync::Arc;

/// The partition (0..partitions) that owns primary key `key`. Stable across runs and machines.
pub fn partition_of(key: &Value, partitions: u32) -> u32 {
    let _ = (key, partitions);
    unimplemented!()
}

/// The rows of one partition of one table.
#[derive(Debug)]
pub struct PartitionData {
    _schema: Schema,
}

impl PartitionData {
    /// An empty partition for a table with `schema`, primary key column `primary_key`, and
    /// secondary indexes on `indexed` columns.
    pub fn new(schema: Schema, primary_key: usize, indexed: &[usize]) -> Self {
        let _ = (primary_key, indexed);
        PartitionData { _schema: schema }
    }

    /// Checks that `batch` could be inserted (types, non-NULL unique keys) without changing anything.
    pub fn check_insert(&self, batch: &Batch) -> Result<()> {
        let _ = batch;
        unimplemented!()
    }

    /// Inserts the rows of `batch`; all or nothing.
    pub fn insert(&mut self, batch: &Batch) -> Result<()> {
        let _ = batch;
        unimplemented!()
    }

    /// Adds a secondary index on `column`, indexing the rows present.
    pub fn add_index(&mut self, column: usize) {
        let _ = column;
        unimplemented!()
    }

    /// Whether `column` can be probed by [`PartitionData::index_lookup`].
    pub fn has_index(&self, column: usize) -> bool {
        let _ = column;
        unimplemented!()
    }

    /// Number of rows.
    pub fn num_rows(&self) -> usize {
        unimplemented!()
    }

    /// Heap bytes held (data and indexes).
    pub fn memory_size(&self) -> usize {
        unimplemented!()
    }

    /// The stored chunks (cheap: shares them).
    pub fn chunks(&self) -> Vec<Arc<Batch>> {
        unimplemented!()
    }

    /// Rows matching `lookup` on indexed `column`, as a batch of full table rows.
    pub fn index_lookup(&self, column: usize, lookup: &IndexLookup, params: &[Value]) -> Result<Batch> {
        let _ = (column, lookup, params);
        unimplemented!()
    }
}
