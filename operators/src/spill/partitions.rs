//! Rows spilled by the hash of their keys over [`FANOUT`](SpillPartitions::FANOUT) files, so
//! that each file can later be processed alone (a grace hash join joins partition by
//! partition; a spilling aggregation merges groups partition by partition).
//!
//! The partition is taken from the row's key hash re-mixed with the spill's level, so that a
//! partition that must be spilled again (it still does not fit) splits over new partitions
//! instead of landing whole in one; and from bits other than those a hash exchange used to
//! send the row to this node.

use super::file::{SpillFile, SpillWriter};
use super::space::SpillSpace;
use crate::batch::Batch;
use crate::error::Result;
use crate::hashing::mix64;
use crate::kernels::hash::hash_rows;
use crate::memory::Reservation;
use std::sync::Arc;

/// The spill partition, in `0..SpillPartitions::FANOUT`, of a row whose key hashes to `hash`,
/// at recursion `level` (0 for the first spill of an operator).
#[inline]
pub fn spill_partition_of(hash: u64, level: u32) -> usize {
    let salt = 0x9e37_79b9_7f4a_7c15u64.wrapping_mul(level as u64 + 1);
    (mix64(hash ^ salt) >> (64 - SpillPartitions::FANOUT_BITS)) as usize
}

/// One writer per partition, made when its first row comes.
#[derive(Debug)]
pub struct SpillPartitions {
    space: Arc<SpillSpace>,
    /// An empty reservation in the spilling operator's pool, beside which each writer's
    /// buffer is accounted.
    memory: Reservation,
    level: u32,
    writers: Vec<Option<SpillWriter>>,
    /// Row numbers per partition (kept between batches).
    rows: Vec<Vec<u32>>,
    /// Key hashes of [`SpillPartitions::write_keyed`] (kept between batches).
    hashes: Vec<u64>,
}

impl SpillPartitions {
    /// Bits of the hash that choose the partition.
    pub const FANOUT_BITS: u32 = 4;
    /// Partitions a spill splits into.
    pub const FANOUT: usize = 1 << Self::FANOUT_BITS;

    /// Partitions in `space` at recursion `level`, their writers' buffers accounted beside
    /// `memory` (the spilling operator's reservation).
    pub fn new(space: &Arc<SpillSpace>, level: u32, memory: &Reservation) -> Self {
        SpillPartitions {
            space: space.clone(),
            memory: memory.new_empty(),
            level,
            writers: (0..Self::FANOUT).map(|_| None).collect(),
            rows: vec![Vec::new(); Self::FANOUT],
            hashes: Vec::new(),
        }
    }

    /// Writes each row of `batch` to its partition by the hash of its `keys` (columns of
    /// the batch's rows, hashed as [`hash_rows`] does).
    pub fn write_keyed<C: std::borrow::Borrow<crate::Column>>(
        &mut self,
        batch: &Batch,
        keys: &[C],
    ) -> Result<()> {
        let mut hashes = std::mem::take(&mut self.hashes);
        hash_rows(keys, &mut hashes);
        let written = self.write(batch, &hashes);
        self.hashes = hashes;
        written
    }

    /// Writes each row of `batch` to its partition; `hashes` holds the rows' key hashes.
    pub fn write(&mut self, batch: &Batch, hashes: &[u64]) -> Result<()> {
        self.write_keeping(batch, hashes, 0).map(|_| ())
    }

    /// [`SpillPartitions::write`], except for the rows of partitions `0..keep`, which are
    /// returned (in their order in `batch`) instead of written: the partitions a hybrid hash
    /// join keeps in memory. `None` when no row is kept.
    pub fn write_keeping(
        &mut self,
        batch: &Batch,
        hashes: &[u64],
        keep: usize,
    ) -> Result<Option<Batch>> {
        debug_assert_eq!(batch.num_rows(), hashes.len());
        for rows in &mut self.rows {
            rows.clear();
        }
        for (row, &h) in hashes.iter().enumerate() {
            self.rows[spill_partition_of(h, self.level)].push(row as u32);
        }
        let kept = self.kept_rows(batch, keep);
        for p in keep.min(Self::FANOUT)..Self::FANOUT {
            if self.rows[p].is_empty() {
                continue;
            }
            let part = if self.rows[p].len() == batch.num_rows() {
                None
            } else {
                Some(batch.take(&self.rows[p]))
            };
            let writer = match &mut self.writers[p] {
                Some(w) => w,
                slot => slot.insert(SpillWriter::new(&self.space, &self.memory)?),
            };
            writer.write(part.as_ref().unwrap_or(batch))?;
        }
        Ok(kept)
    }

    /// The rows of partitions `0..keep` of `batch` (as just sorted into `self.rows`).
    fn kept_rows(&self, batch: &Batch, keep: usize) -> Option<Batch> {
        let kept = &self.rows[..keep.min(Self::FANOUT)];
        let n: usize = kept.iter().map(Vec::len).sum();
        if n == 0 {
            return None;
        }
        if n == batch.num_rows() {
            return Some(batch.clone());
        }
        let mut rows: Vec<u32> = kept.iter().flatten().copied().collect();
        rows.sort_unstable();
        Some(batch.take(&rows))
    }

    /// Ends every partition's file: `None` for a partition that got no rows.
    pub fn finish(self) -> Result<Vec<Option<SpillFile>>> {
        self.writers
            .into_iter()
            .map(|w| w.map(SpillWriter::finish).transpose())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Column;

    #[test]
    fn equal_keys_share_a_partition_and_a_deeper_level_splits_one_again() {
        let space = SpillSpace::temporary("test", 1 << 30).unwrap();
        let keys: Vec<i64> = (0..10_000).map(|i| i % 3_000).collect();
        let batch = Batch::try_new(vec![Column::from_i64(keys.clone())]).unwrap();
        let mut hashes = Vec::new();
        hash_rows(&[batch.column(0)], &mut hashes);
        let mut parts = SpillPartitions::new(&space, 0, &Reservation::unbounded());
        parts.write(&batch, &hashes).unwrap();
        let files = parts.finish().unwrap();
        let mut seen = std::collections::HashMap::new();
        let mut total = 0;
        for (p, f) in files.iter().enumerate() {
            let f = f.as_ref().expect("3,000 keys reach every partition");
            for b in f.reader(&Reservation::unbounded()).unwrap() {
                let b = b.unwrap();
                total += b.num_rows();
                for v in b.column(0).as_i64().unwrap() {
                    assert_eq!(*seen.entry(*v).or_insert(p), p, "key {v} in two partitions");
                }
            }
        }
        assert_eq!(total, keys.len());
        // The keys of partition 0 at level 0 spread again at level 1.
        let zero: Vec<u64> = hashes
            .iter()
            .copied()
            .filter(|&h| spill_partition_of(h, 0) == 0)
            .collect();
        let spread: std::collections::HashSet<usize> =
            zero.iter().map(|&h| spill_partition_of(h, 1)).collect();
        assert!(spread.len() > SpillPartitions::FANOUT / 2, "{spread:?}");
    }
}
