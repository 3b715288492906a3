//! The partitions of one table that one node stores, with the node-wide secondary indexes
//! over them. Every change to the partitions goes through [`TableStore`], so the indexes
//! always describe exactly the rows stored.

use crate::batch::Batch;
use crate::error::{Error, Result};
use crate::plan::IndexLookup;
use crate::secondary_index::SecondaryIndex;
use crate::storage::{PartitionData, ScanChunk};
use crate::types::{DataType, Field};
use crate::value::Value;
use hashbrown::HashMap;
use std::sync::Arc;

/// One table's partitions on one node, and its secondary indexes across them.
#[derive(Debug, Clone, Default)]
pub struct TableStore {
    partitions: HashMap<u32, PartitionData>,
    indexes: Vec<SecondaryIndex>,
}

impl TableStore {
    /// An empty store with secondary indexes on `indexed` columns, whose types are `types`
    /// (the table's column types).
    pub fn new(types: &[DataType], indexed: &[usize]) -> Self {
        let mut store = TableStore::default();
        for &c in indexed {
            if let Some(&dt) = types.get(c) {
                if !store.has_secondary(c) {
                    store.indexes.push(SecondaryIndex::new(c, dt));
                }
            }
        }
        store
    }

    /// Partition `p`, if this node stores it.
    pub fn get(&self, p: u32) -> Option<&PartitionData> {
        self.partitions.get(&p)
    }

    /// Every stored partition, in no particular order.
    pub fn partitions(&self) -> impl Iterator<Item = (u32, &PartitionData)> {
        self.partitions.iter().map(|(p, d)| (*p, d))
    }

    /// The ids of the stored partitions, sorted.
    pub fn partition_ids(&self) -> Vec<u32> {
        let mut ids: Vec<u32> = self.partitions.keys().copied().collect();
        ids.sort_unstable();
        ids
    }

    /// Columns with a node-wide secondary index.
    pub fn indexed_columns(&self) -> Vec<usize> {
        self.indexes.iter().map(SecondaryIndex::column).collect()
    }

    fn has_secondary(&self, column: usize) -> bool {
        self.indexes.iter().any(|i| i.column() == column)
    }

    /// Appends `rows` to partition `p` (made by `new` if this node has no copy yet); all or
    /// nothing, as [`PartitionData::insert`].
    pub fn insert(
        &mut self,
        p: u32,
        rows: &Batch,
        new: impl FnOnce() -> PartitionData,
    ) -> Result<()> {
        let part = self.partitions.entry(p).or_insert_with(new);
        let first_row = part.num_rows();
        part.insert(rows)?;
        if first_row > u32::MAX as usize {
            return Err(Error::Internal("partition row id overflow".into()));
        }
        for index in &mut self.indexes {
            index.add_rows(p, first_row as u32, rows.column(index.column()));
        }
        Ok(())
    }

    /// Changes partition `p` (made by `new` if this node has no copy yet) with `change`, which
    /// may delete and rewrite rows. All or nothing: `change` works on a copy (its chunks are
    /// shared, not copied), which replaces the partition, and its index entries, only when
    /// `change` succeeds; when it fails (or panics) the partition stays as it was, in the
    /// store.
    pub fn modify<R>(
        &mut self,
        p: u32,
        new: impl FnOnce() -> PartitionData,
        change: impl FnOnce(&mut PartitionData) -> Result<R>,
    ) -> Result<R> {
        let mut part = match self.partitions.get(&p) {
            Some(part) => part.clone(),
            None => new(),
        };
        let result = change(&mut part)?;
        self.put(p, part);
        Ok(result)
    }

    /// Replaces (or sets) partition `p` with `data`, as a repair copies a partition.
    pub fn put(&mut self, p: u32, data: PartitionData) {
        self.remove(p);
        for index in &mut self.indexes {
            index.add_partition(p, &data);
        }
        self.partitions.insert(p, data);
    }

    /// Drops partition `p`, returning it.
    pub fn remove(&mut self, p: u32) -> Option<PartitionData> {
        let old = self.partitions.remove(&p)?;
        for index in &mut self.indexes {
            index.remove_partition(p, &old);
        }
        Some(old)
    }

    /// Adds a secondary index on `column` (of type `data_type`), indexing the stored rows.
    pub fn add_index(&mut self, column: usize, data_type: DataType) {
        if self.has_secondary(column) {
            return;
        }
        let mut index = SecondaryIndex::new(column, data_type);
        for (&p, part) in &self.partitions {
            index.add_partition(p, part);
        }
        self.indexes.push(index);
    }

    /// Adds column `field` as column `column` (the last) of every partition stored that does
    /// not have it yet, each row stored holding `fill`.
    pub fn add_column(&mut self, column: usize, field: &Field, fill: &Value) -> Result<()> {
        for part in self.partitions.values_mut() {
            if part.schema().len() == column {
                part.add_column(field.clone(), fill)?;
            }
        }
        Ok(())
    }

    /// Drops column `column` of every partition stored (each `width` columns wide before),
    /// with its values; the indexes on later columns follow them one position left. A column
    /// with a secondary index is not dropped.
    pub fn drop_column(&mut self, column: usize, width: usize) -> Result<()> {
        if self.has_secondary(column) {
            return Err(Error::Internal(format!(
                "column {column} has a secondary index: it is not dropped"
            )));
        }
        for part in self.partitions.values_mut() {
            if part.schema().len() == width {
                part.drop_column(column)?;
            }
        }
        for index in &mut self.indexes {
            index.column_dropped(column);
        }
        Ok(())
    }

    /// Converts column `column` (without a secondary index) of every partition stored to
    /// type `to`; a value that does not convert is an error (partitions converted before it
    /// keep the new type: the caller checks the values first).
    pub fn set_column_type(&mut self, column: usize, to: DataType) -> Result<()> {
        if self.has_secondary(column) {
            return Err(Error::Internal(format!(
                "column {column} has a secondary index: its type does not change"
            )));
        }
        for part in self.partitions.values_mut() {
            part.set_column_type(column, to)?;
        }
        Ok(())
    }

    /// Names column `column` of every partition stored `name`.
    pub fn rename_column(&mut self, column: usize, name: &str) -> Result<()> {
        for part in self.partitions.values_mut() {
            part.rename_column(column, name)?;
        }
        Ok(())
    }

    /// Drops the secondary index on `column`, if there is one.
    pub fn drop_index(&mut self, column: usize) {
        self.indexes.retain(|i| i.column() != column);
    }

    /// Whether `column` can be probed by [`TableStore::lookup`]: a secondary index or every
    /// partition's primary key.
    pub fn has_index(&self, column: usize) -> bool {
        self.has_secondary(column) || self.partitions.values().all(|p| p.has_index(column))
    }

    /// Rows stored, over every partition.
    pub fn num_rows(&self) -> usize {
        self.partitions.values().map(PartitionData::num_rows).sum()
    }

    /// Heap bytes held (rows, per-partition and node-wide indexes), roughly.
    pub fn memory_size(&self) -> usize {
        let parts: usize = self.partitions.values().map(|p| p.memory_size()).sum();
        let indexes: usize = self.indexes.iter().map(|i| i.memory_size()).sum();
        parts + indexes
    }

    /// The rows of partitions `partitions` (sorted ids) matching `lookup` on indexed `column`,
    /// as stored chunks with the matching rows selected, in partition order. A secondary index
    /// answers with one probe for the whole node; a primary key is probed per partition.
    pub fn lookup(
        &self,
        column: usize,
        lookup: &IndexLookup,
        params: &[Value],
        partitions: &[u32],
    ) -> Result<Vec<ScanChunk>> {
        let mut out = Vec::new();
        let secondary = match lookup {
            IndexLookup::Key { .. } => None,
            _ => self.indexes.iter().find(|i| i.column() == column),
        };
        if let Some(index) = secondary {
            let hits = index.lookup(lookup, params, |p| partitions.binary_search(&p).is_ok())?;
            let mut rows: Vec<u32> = Vec::new();
            let mut i = 0;
            while i < hits.len() {
                let p = hits[i].0;
                rows.clear();
                while i < hits.len() && hits[i].0 == p {
                    rows.push(hits[i].1);
                    i += 1;
                }
                let Some(part) = self.partitions.get(&p) else {
                    return Err(Error::Internal(format!(
                        "index entry for partition {p}, which is not stored"
                    )));
                };
                out.extend(part.locate(&rows)?);
            }
            return Ok(out);
        }
        for p in partitions {
            let Some(part) = self.partitions.get(p) else {
                continue;
            };
            let rows = part.index_lookup(column, lookup, params)?;
            if rows.num_rows() > 0 {
                out.push(ScanChunk::from(Arc::new(rows)));
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Field, Schema};
    use crate::{Column, Expr};

    fn schema() -> Schema {
        Schema::new(vec![
            Field::new("id", DataType::Int64),
            Field::new("g", DataType::Int64),
        ])
    }

    fn rows(ids: &[i64], g: i64) -> Batch {
        Batch::try_new(vec![
            Column::from_i64(ids.to_vec()),
            Column::from_i64(vec![g; ids.len()]),
        ])
        .unwrap()
    }

    fn new_part() -> PartitionData {
        PartitionData::new(schema(), &[0])
    }

    fn ids(chunks: &[ScanChunk]) -> Vec<Vec<Value>> {
        chunks
            .iter()
            .flat_map(|c| match &c.selection {
                Some(rows) => c.rows.take(rows).rows(),
                None => c.rows.rows(),
            })
            .collect()
    }

    #[test]
    fn secondary_lookups_see_inserts_repairs_and_drops() {
        let types = schema().types();
        let mut t = TableStore::new(&types, &[1]);
        t.insert(3, &rows(&[1, 2], 7), new_part).unwrap();
        t.insert(5, &rows(&[3], 7), new_part).unwrap();
        t.insert(3, &rows(&[4], 8), new_part).unwrap();
        let g = |v| IndexLookup::Eq(Expr::Literal(Value::Int(v)));
        let all = [3, 5];
        let found = ids(&t.lookup(1, &g(7), &[], &all).unwrap());
        let want: Vec<Vec<Value>> = [1, 2, 3]
            .iter()
            .map(|&i| vec![i.into(), 7.into()])
            .collect();
        assert_eq!(found, want);
        // Only the partitions asked for.
        assert_eq!(ids(&t.lookup(1, &g(7), &[], &[5]).unwrap()).len(), 1);
        // A repair replaces partition 3's rows; the index follows.
        let mut fresh = new_part();
        fresh.insert(&rows(&[9], 8)).unwrap();
        t.put(3, fresh);
        assert_eq!(ids(&t.lookup(1, &g(7), &[], &all).unwrap()).len(), 1);
        assert_eq!(
            ids(&t.lookup(1, &g(8), &[], &all).unwrap()),
            vec![vec![9.into(), 8.into()]]
        );
        t.remove(5);
        assert!(t.lookup(1, &g(7), &[], &all).unwrap().is_empty());
    }

    #[test]
    fn failed_insert_leaves_the_index_alone() {
        let types = schema().types();
        let mut t = TableStore::new(&types, &[1]);
        t.insert(0, &rows(&[1], 7), new_part).unwrap();
        assert!(
            t.insert(0, &rows(&[1], 9), new_part).is_err(),
            "duplicate key"
        );
        let g = IndexLookup::Eq(Expr::Literal(Value::Int(9)));
        assert!(t.lookup(1, &g, &[], &[0]).unwrap().is_empty());
    }

    #[test]
    fn index_added_later_covers_stored_rows_and_primary_keys_probe_partitions() {
        let types = schema().types();
        let mut t = TableStore::new(&types, &[]);
        t.insert(1, &rows(&[1, 2], 7), new_part).unwrap();
        t.add_index(1, DataType::Int64);
        let g = IndexLookup::Eq(Expr::Literal(Value::Int(7)));
        assert_eq!(ids(&t.lookup(1, &g, &[], &[1]).unwrap()).len(), 2);
        let pk = IndexLookup::Eq(Expr::Literal(Value::Int(2)));
        assert_eq!(
            ids(&t.lookup(0, &pk, &[], &[1]).unwrap()),
            vec![vec![2.into(), 7.into()]]
        );
    }

    #[test]
    fn a_failed_change_leaves_the_partition_and_its_index_as_they_were() {
        let types = schema().types();
        let mut t = TableStore::new(&types, &[1]);
        t.insert(0, &rows(&[1, 2], 7), new_part).unwrap();
        let g = |v| IndexLookup::Eq(Expr::Literal(Value::Int(v)));
        // A change that deletes a row, then fails: nothing of it is kept.
        let keys = Batch::try_new(vec![Column::from_i64(vec![1])]).unwrap();
        let e = t.modify(0, new_part, |part| {
            part.replace(&keys, &rows(&[], 0))?;
            part.insert(&rows(&[2], 9))
        });
        assert!(matches!(e, Err(Error::DuplicateKey { .. })), "{e:?}");
        assert_eq!(t.num_rows(), 2);
        assert_eq!(ids(&t.lookup(1, &g(7), &[], &[0]).unwrap()).len(), 2);
        // A batch whose columns disagree with the table is refused, the rows stay.
        let narrow = Batch::try_new(vec![Column::from_i64(vec![5])]).unwrap();
        assert!(t.modify(0, new_part, |part| part.insert(&narrow)).is_err());
        assert_eq!(t.num_rows(), 2);
        // One that succeeds replaces the partition and its index entries.
        t.modify(0, new_part, |part| part.replace(&keys, &rows(&[3], 8)))
            .unwrap();
        assert_eq!(ids(&t.lookup(1, &g(7), &[], &[0]).unwrap()).len(), 1);
        assert_eq!(ids(&t.lookup(1, &g(8), &[], &[0]).unwrap()).len(), 1);
        // A failed change of a partition the node does not hold leaves none.
        assert!(t.modify(9, new_part, |part| part.insert(&narrow)).is_err());
        assert!(t.get(9).is_none());
    }
}
