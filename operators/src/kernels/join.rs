//! Inner hash join kernel.
//!
//! The build side (either input, see [`JoinSide`]) is received completely first: its batches
//! are accounted in the reservation, concatenated into one columnar build table, and indexed by
//! a chained hash table (`heads: hash → first row`, `next: row → next row`). Probe batches are
//! then hashed with [`hash_rows`], matched against the chains with an exact key comparison,
//! and the matching row pairs are gathered into output batches of at most `batch_size` rows.
//! NULL keys never match. Output columns are always the left input's followed by the right's.

use super::hash::{hash_rows, rows_equal, IdentityBuild};
use super::{ExecContext, InputOrder, Operator};
use crate::column::ColumnData;
use crate::eval::{cast_column, evaluate};
use crate::plan::JoinSide;
use crate::{Batch, Column, DataType, Error, Expr, Reservation, Result};
use hashbrown::HashMap;

/// End of a hash chain.
const NONE: u32 = u32::MAX;

/// Inner hash join.
pub struct HashJoinOp {
    left_keys: Vec<Expr>,
    right_keys: Vec<Expr>,
    build: JoinSide,
    ctx: ExecContext,
    reservation: Reservation,
    /// Build batches received so far.
    build_batches: Vec<Batch>,
    /// Probe batches received before the build side ended (only if fed out of order).
    early_probe: Vec<Batch>,
    /// The build table, once the build side ended.
    table: Option<BuildTable>,
    /// Scratch space for probe hashes.
    hashes: Vec<u64>,
}

/// The finished build side.
struct BuildTable {
    batch: Batch,
    keys: Vec<Column>,
    heads: HashMap<u64, u32, IdentityBuild>,
    next: Vec<u32>,
}

impl HashJoinOp {
    /// An inner equi-join on `left_keys[i] = right_keys[i]`, building a hash table from the
    /// `build` side. Port 0 is the left input, port 1 the right input; the build side's port
    /// (see [`HashJoinOp::build_port`]) must be fed completely first.
    pub fn new(
        left_keys: Vec<Expr>,
        right_keys: Vec<Expr>,
        build: JoinSide,
        ctx: ExecContext,
        reservation: Reservation,
    ) -> Self {
        HashJoinOp {
            left_keys,
            right_keys,
            build,
            ctx,
            reservation,
            build_batches: Vec::new(),
            early_probe: Vec::new(),
            table: None,
            hashes: Vec::new(),
        }
    }

    /// The input port of the build side (0 for the left input, 1 for the right).
    pub fn build_port(&self) -> usize {
        match self.build {
            JoinSide::Left => 0,
            JoinSide::Right => 1,
        }
    }

    fn build_keys(&self) -> &[Expr] {
        match self.build {
            JoinSide::Left => &self.left_keys,
            JoinSide::Right => &self.right_keys,
        }
    }

    fn probe_keys(&self) -> &[Expr] {
        match self.build {
            JoinSide::Left => &self.right_keys,
            JoinSide::Right => &self.left_keys,
        }
    }

    /// Builds the hash table from the buffered build batches.
    ///
    /// Memory is accounted before it is allocated, from an estimate that follows hashbrown's
    /// sizing, and then corrected to the real heap sizes (capacities, not lengths) of what is
    /// kept: the build batch, its key columns, the hash table and the chains.
    fn finish_build(&mut self) -> Result<()> {
        let batches = std::mem::take(&mut self.build_batches);
        let batch = match batches.len() {
            0 => Batch::empty(&[]),
            1 => batches
                .into_iter()
                .next()
                .unwrap_or_else(|| Batch::empty(&[])),
            _ => {
                // The concatenated copy is accounted before it is made; the parts are released
                // after, and the reservation then holds the copy's real size.
                let parts: usize = batches.iter().map(Batch::memory_size).sum();
                self.reservation.try_grow(parts)?;
                let b = Batch::concat(&batches)?;
                drop(batches);
                self.reservation.shrink(parts);
                self.adjust(parts, b.memory_size())?;
                b
            }
        };
        let n = batch.num_rows();
        let keys = if n == 0 {
            Vec::new()
        } else {
            self.build_keys()
                .iter()
                .map(|e| evaluate(e, &batch, &self.ctx.params))
                .collect::<Result<Vec<_>>>()?
        };
        let key_bytes: usize = keys.iter().map(Column::memory_size).sum();
        // The chains, the hash table, and the row hashes and NULL mask used while building.
        let estimate = key_bytes
            + n * std::mem::size_of::<u32>()
            + hash_table_bytes(n, std::mem::size_of::<(u64, u32)>())
            + n * (std::mem::size_of::<u64>() + 1);
        self.reservation.try_grow(estimate)?;
        let mut heads: HashMap<u64, u32, IdentityBuild> =
            HashMap::with_capacity_and_hasher(n, IdentityBuild::default());
        let mut next = vec![NONE; n];
        if n > 0 {
            hash_rows(&keys, &mut self.hashes);
            let null_rows = null_key_rows(&keys, n);
            // Insert in reverse so chains list rows in input order.
            for row in (0..n).rev() {
                if null_rows.as_ref().is_some_and(|m| m[row]) {
                    continue;
                }
                let h = self.hashes[row];
                let head = heads.entry(h).or_insert(NONE);
                next[row] = *head;
                *head = row as u32;
            }
        }
        // The build-sized scratch is not needed for probing (probe batches are small).
        self.hashes = Vec::new();
        let kept =
            key_bytes + heads.allocation_size() + next.capacity() * std::mem::size_of::<u32>();
        self.adjust(estimate, kept)?;
        self.table = Some(BuildTable {
            batch,
            keys,
            heads,
            next,
        });
        Ok(())
    }

    /// Corrects an accounted `estimate` to the `actual` size.
    fn adjust(&mut self, estimate: usize, actual: usize) -> Result<()> {
        if actual > estimate {
            self.reservation.try_grow(actual - estimate)
        } else {
            self.reservation.shrink(estimate - actual);
            Ok(())
        }
    }

    /// Probes one batch against the finished build table.
    fn probe(&mut self, batch: Batch, out: &mut Vec<Batch>) -> Result<()> {
        let Some(table) = &self.table else {
            return Err(Error::Internal("hash join probed before its build".into()));
        };
        if batch.is_empty() || table.heads.is_empty() {
            return Ok(());
        }
        let mut keys = self
            .probe_keys()
            .iter()
            .map(|e| evaluate(e, &batch, &self.ctx.params))
            .collect::<Result<Vec<_>>>()?;
        for (k, b) in keys.iter_mut().zip(&table.keys) {
            align_key(k, b.data_type())?;
        }
        let n = batch.num_rows();
        hash_rows(&keys, &mut self.hashes);
        let null_rows = null_key_rows(&keys, n);
        let size = self.ctx.batch_size.max(1);
        let mut probe_idx: Vec<u32> = Vec::with_capacity(size.min(n));
        let mut build_idx: Vec<u32> = Vec::with_capacity(size.min(n));
        for (i, &h) in self.hashes.iter().enumerate() {
            if null_rows.as_ref().is_some_and(|m| m[i]) {
                continue;
            }
            let Some(&head) = table.heads.get(&h) else {
                continue;
            };
            let mut j = head;
            while j != NONE {
                if rows_equal(&keys, i, &table.keys, j as usize) {
                    probe_idx.push(i as u32);
                    build_idx.push(j);
                    if probe_idx.len() == size {
                        out.push(self.gather(table, &batch, &probe_idx, &build_idx)?);
                        probe_idx.clear();
                        build_idx.clear();
                    }
                }
                j = table.next[j as usize];
            }
        }
        if !probe_idx.is_empty() {
            out.push(self.gather(table, &batch, &probe_idx, &build_idx)?);
        }
        Ok(())
    }

    /// Output rows: left columns then right columns.
    fn gather(
        &self,
        table: &BuildTable,
        probe: &Batch,
        probe_idx: &[u32],
        build_idx: &[u32],
    ) -> Result<Batch> {
        let p = probe.columns().iter().map(|c| c.take(probe_idx));
        let b = table.batch.columns().iter().map(|c| c.take(build_idx));
        let cols: Vec<Column> = match self.build {
            JoinSide::Left => b.chain(p).collect(),
            JoinSide::Right => p.chain(b).collect(),
        };
        Batch::with_row_count(cols, probe_idx.len())
    }
}

/// Heap bytes of a hashbrown table with room for `capacity` entries of `entry` bytes: a
/// power-of-two number of buckets at up to 7/8 load, each an entry plus one control byte,
/// plus one group of trailing control bytes.
pub(crate) fn hash_table_bytes(capacity: usize, entry: usize) -> usize {
    if capacity == 0 {
        return 0;
    }
    let buckets = if capacity < 4 {
        4
    } else if capacity < 8 {
        8
    } else {
        (capacity.saturating_mul(8) / 7).next_power_of_two()
    };
    buckets * (entry + 1) + 16
}

/// Marks rows where any key is NULL (`None` when no key has NULLs).
fn null_key_rows(keys: &[Column], n: usize) -> Option<Vec<bool>> {
    if keys.iter().all(|k| k.validity.is_none()) {
        return None;
    }
    let mut m = vec![false; n];
    for k in keys {
        if let Some(v) = &k.validity {
            for (i, x) in m.iter_mut().enumerate() {
                *x |= !v.get(i);
            }
        }
    }
    Some(m)
}

/// Converts probe key `k` to the build key type `to` so that equal values hash equally.
/// A float probe against integer build keys keeps only integral values (others cannot match).
fn align_key(k: &mut Column, to: DataType) -> Result<()> {
    let from = k.data_type();
    if from == to {
        return Ok(());
    }
    match (from, to) {
        (DataType::Float64, DataType::Int64) => {
            let ColumnData::Float64(v) = &k.data else {
                return Ok(());
            };
            let mut valid: Vec<bool> = (0..v.len()).map(|i| k.is_valid(i)).collect();
            let ints: Vec<i64> = v
                .iter()
                .zip(valid.iter_mut())
                .map(|(&f, ok)| {
                    if f.fract() == 0.0 && f.abs() < 9.2e18 {
                        f as i64
                    } else {
                        *ok = false;
                        0
                    }
                })
                .collect();
            *k = Column::with_validity(
                ColumnData::Int64(ints),
                Some(crate::Bitmap::from_bools(&valid)),
            );
            Ok(())
        }
        (DataType::Int64, DataType::Float64) => {
            *k = cast_column(k, to)?;
            Ok(())
        }
        _ => Err(Error::Type(format!(
            "cannot join {from} keys with {to} keys"
        ))),
    }
}

impl Operator for HashJoinOp {
    fn name(&self) -> &'static str {
        "HashJoin"
    }

    fn input_order(&self) -> InputOrder {
        InputOrder::Sequential
    }

    fn first_port(&self) -> usize {
        self.build_port()
    }

    fn push(&mut self, port: usize, batch: Batch, out: &mut Vec<Batch>) -> Result<()> {
        if port > 1 {
            return Err(Error::Internal(format!("hash join has no input {port}")));
        }
        if port == self.build_port() {
            if self.table.is_some() {
                return Err(Error::Internal(
                    "hash join build input after its end".into(),
                ));
            }
            if batch.is_empty() {
                return Ok(());
            }
            self.reservation.try_grow(batch.memory_size())?;
            self.build_batches.push(batch);
            return Ok(());
        }
        if self.table.is_none() {
            // Fed out of order: hold the probe batch until the build side ends.
            self.reservation.try_grow(batch.memory_size())?;
            self.early_probe.push(batch);
            return Ok(());
        }
        self.probe(batch, out)
    }

    fn finish(&mut self, port: usize, out: &mut Vec<Batch>) -> Result<()> {
        if port == self.build_port() && self.table.is_none() {
            self.finish_build()?;
            for b in std::mem::take(&mut self.early_probe) {
                let size = b.memory_size();
                self.probe(b, out)?;
                self.reservation.shrink(size);
            }
        }
        Ok(())
    }

    fn is_done(&self) -> bool {
        // An empty build side means no output at all.
        self.table
            .as_ref()
            .is_some_and(|t| t.heads.is_empty() && self.early_probe.is_empty())
    }

    fn memory_size(&self) -> usize {
        self.reservation.size()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{UnboundedPool, Value};
    use std::sync::Arc;

    fn run(build: JoinSide, left: &[Batch], right: &[Batch], batch_size: usize) -> Vec<Vec<Value>> {
        let mut ctx = ExecContext::new(vec![]);
        ctx.batch_size = batch_size;
        let mut op = HashJoinOp::new(
            vec![Expr::col(0)],
            vec![Expr::col(1)],
            build,
            ctx,
            Reservation::unbounded(),
        );
        let mut out = Vec::new();
        let (first, second) = if op.first_port() == 0 {
            ((0, left), (1, right))
        } else {
            ((1, right), (0, left))
        };
        for (port, batches) in [first, second] {
            for b in batches {
                op.push(port, b.clone(), &mut out).unwrap();
            }
            op.finish(port, &mut out).unwrap();
        }
        assert!(out
            .iter()
            .all(|b| b.num_rows() <= batch_size && !b.is_empty()));
        let mut rows: Vec<Vec<Value>> = out.iter().flat_map(|b| b.rows()).collect();
        rows.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
        rows
    }

    #[test]
    fn joins_both_build_sides() {
        let types = [DataType::Int64, DataType::Utf8];
        let left = Batch::from_rows(
            &types,
            &[
                vec![1.into(), "a".into()],
                vec![2.into(), "b".into()],
                vec![Value::Null, "n".into()],
                vec![2.into(), "b2".into()],
            ],
        )
        .unwrap();
        let rtypes = [DataType::Utf8, DataType::Int64];
        let right = Batch::from_rows(
            &rtypes,
            &[
                vec!["x".into(), 2.into()],
                vec!["y".into(), Value::Null],
                vec!["z".into(), 2.into()],
                vec!["w".into(), 3.into()],
            ],
        )
        .unwrap();
        let expect = run(
            JoinSide::Left,
            std::slice::from_ref(&left),
            std::slice::from_ref(&right),
            1,
        );
        assert_eq!(expect.len(), 4);
        assert_eq!(expect[0], vec![2.into(), "b".into(), "x".into(), 2.into()]);
        let other = run(JoinSide::Right, &[left], &[right], 3);
        assert_eq!(expect, other);
    }

    #[test]
    fn memory_limit_refuses() {
        let pool = UnboundedPool::with_limit(1000);
        let mut op = HashJoinOp::new(
            vec![Expr::col(0)],
            vec![Expr::col(0)],
            JoinSide::Left,
            ExecContext::new(vec![]),
            Reservation::new(pool.clone() as Arc<dyn crate::MemoryPool>),
        );
        let big = Batch::try_new(vec![Column::from_i64((0..1000).collect())]).unwrap();
        let mut out = Vec::new();
        assert!(matches!(op.push(0, big, &mut out), Err(Error::Memory(_))));
        drop(op);
        assert_eq!(pool.used(), 0);
    }

    #[test]
    fn hash_table_estimate_matches_hashbrown() {
        for n in [1, 3, 4, 7, 8, 14, 15, 100, 1000, 100_000] {
            let m: HashMap<u64, u32, IdentityBuild> =
                HashMap::with_capacity_and_hasher(n, IdentityBuild::default());
            assert_eq!(
                hash_table_bytes(n, std::mem::size_of::<(u64, u32)>()),
                m.allocation_size(),
                "capacity {n}"
            );
        }
        assert_eq!(hash_table_bytes(0, 16), 0);
    }

    #[test]
    fn accounts_real_heap_sizes() {
        let pool = UnboundedPool::new();
        let mut op = HashJoinOp::new(
            vec![Expr::col(0)],
            vec![Expr::col(0)],
            JoinSide::Left,
            ExecContext::new(vec![]),
            Reservation::new(pool.clone() as Arc<dyn crate::MemoryPool>),
        );
        let mut out = Vec::new();
        let mut batch_bytes = 0;
        for start in (0..10_000i64).step_by(1000) {
            let b =
                Batch::try_new(vec![Column::from_i64((start..start + 1000).collect())]).unwrap();
            batch_bytes += b.memory_size();
            op.push(0, b, &mut out).unwrap();
        }
        op.finish(0, &mut out).unwrap();
        let t = op.table.as_ref().unwrap();
        let expected = t.batch.memory_size()
            + t.keys.iter().map(Column::memory_size).sum::<usize>()
            + t.heads.allocation_size()
            + t.next.capacity() * 4;
        assert_eq!(pool.used(), expected);
        // The hash table alone is bigger than the 10,000 keys (the old estimate missed that
        // entries are padded to 16 bytes).
        assert!(t.heads.allocation_size() > 10_000 * 16);
        assert!(pool.used() > batch_bytes);
        drop(op);
        assert_eq!(pool.used(), 0);
    }

    #[test]
    fn empty_build_is_done() {
        let mut op = HashJoinOp::new(
            vec![Expr::col(0)],
            vec![Expr::col(0)],
            JoinSide::Right,
            ExecContext::new(vec![]),
            Reservation::unbounded(),
        );
        let mut out = Vec::new();
        op.finish(1, &mut out).unwrap();
        assert!(op.is_done());
        let b = Batch::try_new(vec![Column::from_i64(vec![1])]).unwrap();
        op.push(0, b, &mut out).unwrap();
        assert!(out.is_empty());
    }
}
