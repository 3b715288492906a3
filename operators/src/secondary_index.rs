//! A node-wide secondary index: one ordered set of `(key, partition, row)` entries over every
//! partition of a table that a node stores, so that a lookup costs one probe per node rather
//! than one per partition (a node holds hundreds of partitions of a table).
//!
//! The index knows nothing of which partitions a query reads: a lookup returns the matching
//! `(partition, row)` pairs of the partitions the caller keeps, in partition then row order.

use crate::column::Column;
use crate::error::Result;
use crate::eval::evaluate_scalar;
use crate::index_key::{eq_probe, key_at, range_bound, range_is_empty, IdxKey, Probe};
use crate::plan::IndexLookup;
use crate::storage::PartitionData;
use crate::types::DataType;
use crate::value::Value;
use std::collections::BTreeSet;
use std::ops::Bound;

/// One entry: a key, the partition and the row id within that partition.
type Entry = (IdxKey, u32, u32);

/// An ordered index on one column over many partitions.
#[derive(Debug, Clone)]
pub struct SecondaryIndex {
    column: usize,
    data_type: DataType,
    entries: BTreeSet<Entry>,
    /// Heap bytes of string keys.
    key_bytes: usize,
}

impl SecondaryIndex {
    /// An empty index on `column`, whose values are of `data_type`.
    pub fn new(column: usize, data_type: DataType) -> Self {
        SecondaryIndex {
            column,
            data_type,
            entries: BTreeSet::new(),
            key_bytes: 0,
        }
    }

    /// The indexed column.
    pub fn column(&self) -> usize {
        self.column
    }

    /// Moves the indexed column one position left when `dropped`, a column before it, goes
    /// (`ALTER TABLE ... DROP COLUMN`).
    pub fn column_dropped(&mut self, dropped: usize) {
        if self.column > dropped {
            self.column -= 1;
        }
    }

    /// Number of entries (non-NULL values indexed).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is indexed.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Indexes the rows of `col` (the indexed column of rows appended to `partition`), whose
    /// first row has row id `first_row`. NULLs are not indexed.
    pub fn add_rows(&mut self, partition: u32, first_row: u32, col: &Column) {
        for i in 0..col.len() {
            if let Some(k) = key_at(col, i) {
                self.key_bytes += k.heap_size();
                self.entries.insert((k, partition, first_row + i as u32));
            }
        }
    }

    /// Indexes every row of `part`, stored as `partition`.
    pub fn add_partition(&mut self, partition: u32, part: &PartitionData) {
        let mut row = 0u32;
        for chunk in part.chunks() {
            self.add_rows(partition, row, chunk.column(self.column));
            row += chunk.num_rows() as u32;
        }
    }

    /// Forgets the entries of `part`, stored as `partition` (before it is replaced or dropped).
    pub fn remove_partition(&mut self, partition: u32, part: &PartitionData) {
        let mut row = 0u32;
        for chunk in part.chunks() {
            let col = chunk.column(self.column);
            for i in 0..col.len() {
                if let Some(k) = key_at(col, i) {
                    let bytes = k.heap_size();
                    if self.entries.remove(&(k, partition, row + i as u32)) {
                        self.key_bytes -= bytes;
                    }
                }
            }
            row += chunk.num_rows() as u32;
        }
    }

    /// Heap bytes held, roughly (a B-tree entry plus its share of node overhead).
    pub fn memory_size(&self) -> usize {
        self.entries.len() * std::mem::size_of::<Entry>() * 3 / 2 + self.key_bytes
    }

    /// The `(partition, row)` pairs matching `lookup` (bounds evaluated against `params`; a
    /// NULL bound matches nothing) in partitions for which `keep` holds, sorted by partition
    /// then row.
    pub fn lookup(
        &self,
        lookup: &IndexLookup,
        params: &[Value],
        keep: impl Fn(u32) -> bool,
    ) -> Result<Vec<(u32, u32)>> {
        let mut hits: Vec<(u32, u32)> = Vec::new();
        let mut push_range = |lo: Bound<Entry>, hi: Bound<Entry>| {
            hits.extend(
                self.entries
                    .range((lo, hi))
                    .filter(|(_, p, _)| keep(*p))
                    .map(|(_, p, r)| (*p, *r)),
            );
        };
        let mut probe_eq = |v: &Value| -> Result<()> {
            if let Probe::Key(k) = eq_probe(v, self.data_type)? {
                push_range(
                    Bound::Included((k.clone(), 0, 0)),
                    Bound::Included((k, u32::MAX, u32::MAX)),
                );
            }
            Ok(())
        };
        match lookup {
            IndexLookup::Eq(e) => probe_eq(&evaluate_scalar(e, params)?)?,
            IndexLookup::In(list) => {
                let mut values = Vec::with_capacity(list.len());
                for e in list {
                    values.push(evaluate_scalar(e, params)?);
                }
                // Probe each distinct value once.
                values.sort_by(|a, b| a.sort_cmp(b));
                values.dedup_by(|a, b| a.sort_cmp(b).is_eq());
                for v in &values {
                    probe_eq(v)?;
                }
            }
            IndexLookup::Key { .. } => {
                return Err(crate::Error::Internal(
                    "a primary-key lookup sent to a secondary index".into(),
                ))
            }
            IndexLookup::Range { low, high } => {
                let bound = |b: &Option<(crate::Expr, bool)>, is_low: bool| -> Result<_> {
                    match b {
                        None => Ok(Some(Bound::Unbounded)),
                        Some((e, incl)) => {
                            let v = evaluate_scalar(e, params)?;
                            range_bound(&v, *incl, self.data_type, is_low)
                        }
                    }
                };
                let (Some(lo), Some(hi)) = (bound(low, true)?, bound(high, false)?) else {
                    return Ok(Vec::new());
                };
                if range_is_empty(&lo, &hi) {
                    return Ok(Vec::new());
                }
                let lo = match lo {
                    Bound::Included(k) => Bound::Included((k, 0, 0)),
                    Bound::Excluded(k) => Bound::Excluded((k, u32::MAX, u32::MAX)),
                    Bound::Unbounded => Bound::Unbounded,
                };
                let hi = match hi {
                    Bound::Included(k) => Bound::Included((k, u32::MAX, u32::MAX)),
                    Bound::Excluded(k) => Bound::Excluded((k, 0, 0)),
                    Bound::Unbounded => Bound::Unbounded,
                };
                push_range(lo, hi);
            }
        }
        hits.sort_unstable();
        Ok(hits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Field, Schema};
    use crate::{Batch, Expr};

    fn partition(values: &[Option<i64>]) -> PartitionData {
        let schema = Schema::new(vec![Field::new("v", DataType::Int64)]);
        let mut p = PartitionData::new(schema, &[]);
        let values: Vec<Value> = values
            .iter()
            .map(|v| v.map_or(Value::Null, Value::Int))
            .collect();
        let col = Column::from_values(DataType::Int64, &values).unwrap();
        p.insert(&Batch::try_new(vec![col]).unwrap()).unwrap();
        p
    }

    fn eq(v: i64) -> IndexLookup {
        IndexLookup::Eq(Expr::Literal(Value::Int(v)))
    }

    #[test]
    fn finds_rows_across_partitions_in_partition_order() {
        let mut idx = SecondaryIndex::new(0, DataType::Int64);
        idx.add_partition(7, &partition(&[Some(5), None, Some(5)]));
        idx.add_partition(2, &partition(&[Some(1), Some(5)]));
        assert_eq!(idx.len(), 4, "NULL is not indexed");
        assert_eq!(
            idx.lookup(&eq(5), &[], |_| true).unwrap(),
            vec![(2, 1), (7, 0), (7, 2)]
        );
        assert_eq!(
            idx.lookup(&eq(5), &[], |p| p == 7).unwrap(),
            vec![(7, 0), (7, 2)]
        );
        assert!(idx.lookup(&eq(9), &[], |_| true).unwrap().is_empty());
        let null = IndexLookup::Eq(Expr::Literal(Value::Null));
        assert!(idx.lookup(&null, &[], |_| true).unwrap().is_empty());
    }

    #[test]
    fn ranges_and_in_lists() {
        let mut idx = SecondaryIndex::new(0, DataType::Int64);
        idx.add_partition(0, &partition(&[Some(1), Some(2), Some(3), Some(4)]));
        let lit = |v| Expr::Literal(Value::Int(v));
        let range = IndexLookup::Range {
            low: Some((lit(2), false)),
            high: Some((lit(4), true)),
        };
        assert_eq!(
            idx.lookup(&range, &[], |_| true).unwrap(),
            vec![(0, 2), (0, 3)]
        );
        let empty = IndexLookup::Range {
            low: Some((lit(4), true)),
            high: Some((lit(2), true)),
        };
        assert!(idx.lookup(&empty, &[], |_| true).unwrap().is_empty());
        let list = IndexLookup::In(vec![lit(4), lit(1), lit(4)]);
        assert_eq!(
            idx.lookup(&list, &[], |_| true).unwrap(),
            vec![(0, 0), (0, 3)]
        );
    }

    #[test]
    fn removing_a_partition_forgets_only_its_entries() {
        let mut idx = SecondaryIndex::new(0, DataType::Int64);
        let a = partition(&[Some(5), Some(6)]);
        idx.add_partition(1, &a);
        idx.add_partition(2, &partition(&[Some(5)]));
        idx.remove_partition(1, &a);
        assert_eq!(idx.lookup(&eq(5), &[], |_| true).unwrap(), vec![(2, 0)]);
        assert_eq!(idx.len(), 1);
    }
}
