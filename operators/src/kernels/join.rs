//! Inner hash join kernel.
//!
//! The build side (either input, see [`JoinSide`]) is received completely first: its batches
//! are accounted in the reservation, concatenated into one columnar build table, and indexed by
//! a chained hash table (`heads: hash → first row`, `next: row → next row`).
//!
//! Probing is resumable. A pushed probe batch is held (accounted in the reservation) with its
//! evaluated keys and [`hash_rows`] hashes and a cursor: the probe row and the position in that
//! row's chain. Each `next_output` call walks the chains from the cursor, matching with an
//! exact key comparison, until it has `batch_size` matching row pairs, gathers them into one
//! output batch and stops there; the next call resumes exactly where it stopped. So one probe
//! batch against many duplicate build keys yields its (possibly huge) output one batch per
//! call, and what is pending is never more than the probe batch and the cursor. Probe batches
//! fed before the build side ended wait (accounted) and are probed one at a time after it.
//! NULL keys never match. Output columns are always the left input's followed by the right's.

use super::hash::{hash_rows, rows_equal, IdentityBuild};
use super::{output_pending, ExecContext, InputOrder, Operator};
use crate::column::ColumnData;
use crate::eval::{cast_column, evaluate};
use crate::plan::JoinSide;
use crate::{Batch, Column, DataType, Error, Expr, Reservation, Result};
use hashbrown::HashMap;
use std::collections::VecDeque;

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
    /// Probe batches received before the build side ended (only if fed out of order), each
    /// accounted in the reservation until it is probed.
    early_probe: VecDeque<Batch>,
    /// The build table, once the build side ended.
    table: Option<BuildTable>,
    /// The probe batch being joined, if any.
    probe: Option<Probe>,
    /// Scratch space for hashes (reused by successive probe batches).
    hashes: Vec<u64>,
    /// Scratch space for the matching row pairs of one output batch.
    probe_idx: Vec<u32>,
    build_idx: Vec<u32>,
}

/// A probe batch being joined and where its output stopped.
struct Probe {
    batch: Batch,
    keys: Vec<Column>,
    hashes: Vec<u64>,
    null_rows: Option<Vec<bool>>,
    /// The probe row whose matches are being gathered.
    row: usize,
    /// The next build row to compare in `row`'s chain, or [`NONE`] if `row`'s chain has not
    /// been looked up yet.
    chain: u32,
    /// Bytes accounted in the reservation for this probe (the batch and its key columns).
    accounted: usize,
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
            early_probe: VecDeque::new(),
            table: None,
            probe: None,
            hashes: Vec::new(),
            probe_idx: Vec::new(),
            build_idx: Vec::new(),
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

    /// Makes `batch` the current probe, `accounted` bytes of it already in the reservation:
    /// evaluates and hashes its keys and accounts them. Batches that cannot match (empty, or
    /// an empty build side) are dropped at once.
    fn start_probe(&mut self, batch: Batch, mut accounted: usize) -> Result<()> {
        let keys = match &self.table {
            None => Err(Error::Internal("hash join probed before its build".into())),
            Some(t) if batch.is_empty() || t.heads.is_empty() => Ok(None),
            Some(t) => self.probe_key_columns(t, &batch).map(Some),
        };
        let keys = keys.and_then(|keys| {
            let Some(keys) = keys else {
                return Ok(None);
            };
            let key_bytes: usize = keys.iter().map(Column::memory_size).sum();
            self.reservation.try_grow(key_bytes)?;
            Ok(Some((keys, key_bytes)))
        });
        let (keys, key_bytes) = match keys {
            Ok(Some(k)) => k,
            other => {
                // Nothing can match, or it failed: the batch goes now.
                self.reservation.shrink(accounted);
                return other.map(|_| ());
            }
        };
        accounted += key_bytes;
        let n = batch.num_rows();
        let mut hashes = std::mem::take(&mut self.hashes);
        hash_rows(&keys, &mut hashes);
        let null_rows = null_key_rows(&keys, n);
        self.probe = Some(Probe {
            batch,
            keys,
            hashes,
            null_rows,
            row: 0,
            chain: NONE,
            accounted,
        });
        Ok(())
    }

    /// The probe batch's key columns, converted to the build keys' types.
    fn probe_key_columns(&self, table: &BuildTable, batch: &Batch) -> Result<Vec<Column>> {
        let mut keys = self
            .probe_keys()
            .iter()
            .map(|e| evaluate(e, batch, &self.ctx.params))
            .collect::<Result<Vec<_>>>()?;
        for (k, b) in keys.iter_mut().zip(&table.keys) {
            align_key(k, b.data_type())?;
        }
        Ok(keys)
    }

    /// Drops the current probe, returning its bytes and keeping its hash buffer for reuse.
    fn end_probe(&mut self) {
        if let Some(p) = self.probe.take() {
            self.reservation.shrink(p.accounted);
            self.hashes = p.hashes;
        }
    }

    /// Gathers up to `batch_size` matches of the current probe from its cursor on. Returns
    /// `None`, and ends the probe, once it has no more matches.
    fn probe_next(&mut self) -> Result<Option<Batch>> {
        let (Some(table), Some(p)) = (&self.table, &mut self.probe) else {
            return Ok(None);
        };
        let size = self.ctx.batch_size.max(1);
        let n = p.batch.num_rows();
        let probe_idx = &mut self.probe_idx;
        let build_idx = &mut self.build_idx;
        probe_idx.clear();
        build_idx.clear();
        let mut i = p.row;
        let mut j = p.chain;
        let (keys, hashes, null_rows) = (&p.keys[..], &p.hashes[..n], p.null_rows.as_deref());
        let (heads, next, build_keys) = (&table.heads, &table.next[..], &table.keys[..]);
        let mut full = false;
        while i < n {
            if j == NONE {
                if null_rows.is_some_and(|m| m[i]) {
                    i += 1;
                    continue;
                }
                match heads.get(&hashes[i]) {
                    Some(&head) => j = head,
                    None => {
                        i += 1;
                        continue;
                    }
                }
            }
            while j != NONE {
                let cur = j;
                j = next[cur as usize];
                if rows_equal(keys, i, build_keys, cur as usize) {
                    probe_idx.push(i as u32);
                    build_idx.push(cur);
                    if probe_idx.len() == size {
                        full = true;
                        break;
                    }
                }
            }
            if j == NONE {
                // `i`'s chain is exhausted.
                i += 1;
            }
            if full {
                break;
            }
        }
        p.row = i;
        p.chain = j;
        let out = if probe_idx.is_empty() {
            None
        } else {
            Some(gather(self.build, table, &p.batch, probe_idx, build_idx)?)
        };
        if i >= n {
            self.end_probe();
        }
        Ok(out)
    }
}

/// Output rows: left columns then right columns.
fn gather(
    build: JoinSide,
    table: &BuildTable,
    probe: &Batch,
    probe_idx: &[u32],
    build_idx: &[u32],
) -> Result<Batch> {
    let p = probe.columns().iter().map(|c| c.take(probe_idx));
    let b = table.batch.columns().iter().map(|c| c.take(build_idx));
    let cols: Vec<Column> = match build {
        JoinSide::Left => b.chain(p).collect(),
        JoinSide::Right => p.chain(b).collect(),
    };
    Batch::with_row_count(cols, probe_idx.len())
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
        // Decimals of one scale differ only in their declared precision: same unscaled values.
        (
            DataType::Decimal { scale: a, .. },
            DataType::Decimal {
                precision,
                scale: b,
            },
        ) if a == b => {
            if let ColumnData::Decimal { precision: p, .. } = &mut k.data {
                *p = precision;
            }
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

    fn push(&mut self, port: usize, batch: Batch) -> Result<()> {
        if port > 1 {
            return Err(Error::Internal(format!("hash join has no input {port}")));
        }
        if self.has_output() {
            return Err(output_pending(self.name()));
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
        if batch.is_empty() || self.is_done() {
            return Ok(());
        }
        // The probe batch is held, and accounted, until its last match has been emitted.
        let size = batch.memory_size();
        self.reservation.try_grow(size)?;
        if self.table.is_none() {
            // Fed out of order: hold the probe batch until the build side ends.
            self.early_probe.push_back(batch);
            return Ok(());
        }
        self.start_probe(batch, size)
    }

    fn finish(&mut self, port: usize) -> Result<()> {
        if port == self.build_port() && self.table.is_none() {
            self.finish_build()?;
            if self.table.as_ref().is_some_and(|t| t.heads.is_empty()) {
                // Nothing can match: the early probe batches go now.
                for b in std::mem::take(&mut self.early_probe) {
                    self.reservation.shrink(b.memory_size());
                }
            }
        }
        Ok(())
    }

    fn next_output(&mut self) -> Result<Option<Batch>> {
        loop {
            if self.probe.is_none() {
                if self.table.is_none() {
                    return Ok(None);
                }
                let Some(b) = self.early_probe.pop_front() else {
                    return Ok(None);
                };
                let size = b.memory_size();
                self.start_probe(b, size)?;
                continue;
            }
            if let Some(out) = self.probe_next()? {
                return Ok(Some(out));
            }
        }
    }

    fn has_output(&self) -> bool {
        self.probe.is_some() || (self.table.is_some() && !self.early_probe.is_empty())
    }

    fn is_done(&self) -> bool {
        // An empty build side means no output at all.
        self.table.as_ref().is_some_and(|t| t.heads.is_empty())
            && self.early_probe.is_empty()
            && self.probe.is_none()
    }

    fn memory_size(&self) -> usize {
        self.reservation.size()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::drain;
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
                op.push(port, b.clone()).unwrap();
                drain(&mut op, &mut out).unwrap();
            }
            op.finish(port).unwrap();
            drain(&mut op, &mut out).unwrap();
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
        assert!(matches!(op.push(0, big), Err(Error::Memory(_))));
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
        let mut batch_bytes = 0;
        for start in (0..10_000i64).step_by(1000) {
            let b =
                Batch::try_new(vec![Column::from_i64((start..start + 1000).collect())]).unwrap();
            batch_bytes += b.memory_size();
            op.push(0, b).unwrap();
        }
        op.finish(0).unwrap();
        assert!(!op.has_output());
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
        op.finish(1).unwrap();
        assert!(op.is_done());
        let b = Batch::try_new(vec![Column::from_i64(vec![1])]).unwrap();
        op.push(0, b).unwrap();
        assert!(!op.has_output());
        assert!(op.next_output().unwrap().is_none());
    }

    /// A join on column 0 of both sides, building the right one, with `batch_size` rows per
    /// output batch and its memory in a pool the test can read.
    fn counted_join(batch_size: usize) -> (Arc<UnboundedPool>, HashJoinOp) {
        let pool = UnboundedPool::new();
        let mut ctx = ExecContext::new(vec![]);
        ctx.batch_size = batch_size;
        let op = HashJoinOp::new(
            vec![Expr::col(0)],
            vec![Expr::col(0)],
            JoinSide::Right,
            ctx,
            Reservation::new(pool.clone() as Arc<dyn crate::MemoryPool>),
        );
        (pool, op)
    }

    /// A build side of `keys` distinct keys, each `dups` times: `(key, build row)`.
    fn dup_build(keys: i64, dups: i64) -> Batch {
        let k: Vec<i64> = (0..keys * dups).map(|i| i % keys).collect();
        let v: Vec<i64> = (0..keys * dups).collect();
        Batch::try_new(vec![Column::from_i64(k), Column::from_i64(v)]).unwrap()
    }

    #[test]
    fn exploding_probe_is_emitted_one_batch_at_a_time() {
        let (pool, mut op) = counted_join(100);
        // 4 distinct keys, 500 build rows each.
        op.push(1, dup_build(4, 500)).unwrap();
        op.finish(1).unwrap();
        let built = pool.used();
        // 1000 probe rows with keys 0..8: half match, each 500 times.
        let probe_keys: Vec<i64> = (0..1000).map(|i| i % 8).collect();
        let probe = Batch::try_new(vec![Column::from_i64(probe_keys.clone())]).unwrap();
        let probe_bytes = probe.memory_size();
        op.push(0, probe).unwrap();
        assert!(op.has_output());
        let held = pool.used();
        assert!(held >= built + probe_bytes);
        // A driver that obeys the contract cannot push more while output is pending.
        let extra = Batch::try_new(vec![Column::from_i64(vec![0])]).unwrap();
        assert!(op.push(0, extra).is_err());
        let mut total = 0;
        let mut calls = 0;
        let mut pairs = Vec::new();
        while let Some(b) = op.next_output().unwrap() {
            assert!(!b.is_empty() && b.num_rows() <= 100);
            // Memory does not grow with the output.
            assert_eq!(pool.used(), if op.has_output() { held } else { built });
            total += b.num_rows();
            calls += 1;
            let l = b.column(0).as_i64().unwrap();
            let r = b.column(2).as_i64().unwrap();
            pairs.extend(l.iter().zip(r).map(|(&k, &row)| (k, row)));
        }
        assert_eq!(total, 500 * 500);
        assert_eq!(calls, 500 * 500 / 100);
        assert!(!op.has_output());
        assert_eq!(pool.used(), built);
        // Every match exactly once, and in probe-row-then-chain order.
        let mut expect = Vec::new();
        for &k in &probe_keys {
            if k < 4 {
                expect.extend((0..500).map(|d| (k, d * 4 + k)));
            }
        }
        assert_eq!(pairs, expect);
        drop(op);
        assert_eq!(pool.used(), 0);
    }

    #[test]
    fn resumes_at_every_batch_size() {
        let types = [DataType::Int64];
        // `run` joins the left column 0 with the right column 1.
        let b = dup_build(3, 7);
        let build = Batch::try_new(vec![b.column(1).clone(), b.column(0).clone()]).unwrap();
        let probe = Batch::from_rows(
            &types,
            &[
                vec![0.into()],
                vec![Value::Null],
                vec![5.into()],
                vec![2.into()],
                vec![0.into()],
                vec![1.into()],
            ],
        )
        .unwrap();
        let want = run(
            JoinSide::Right,
            std::slice::from_ref(&probe),
            std::slice::from_ref(&build),
            1000,
        );
        assert_eq!(want.len(), 4 * 7);
        for size in [1, 2, 3, 6, 7, 8, 13, 27, 28, 29] {
            let got = run(
                JoinSide::Right,
                std::slice::from_ref(&probe),
                std::slice::from_ref(&build),
                size,
            );
            assert_eq!(got, want, "batch size {size}");
        }
    }

    #[test]
    fn early_probe_batches_are_probed_one_at_a_time() {
        let (pool, mut op) = counted_join(10);
        // Out of order: probe batches before the build ends.
        let mut probe_bytes = 0;
        for k in 0..3 {
            let b = Batch::try_new(vec![Column::from_i64(vec![k; 5])]).unwrap();
            probe_bytes += b.memory_size();
            op.push(0, b).unwrap();
            assert!(!op.has_output());
        }
        assert_eq!(pool.used(), probe_bytes);
        op.push(1, dup_build(2, 20)).unwrap();
        op.finish(1).unwrap();
        assert!(op.has_output());
        let mut out = Vec::new();
        drain(&mut op, &mut out).unwrap();
        // Keys 0 and 1 match 20 times for each of 5 probe rows; key 2 never.
        assert_eq!(out.iter().map(Batch::num_rows).sum::<usize>(), 2 * 5 * 20);
        assert!(out.iter().all(|b| b.num_rows() == 10));
        assert!(!op.has_output());
        op.finish(0).unwrap();
        assert!(op.next_output().unwrap().is_none());
        let table_bytes = op.memory_size();
        drop(op);
        assert_eq!(pool.used(), 0);
        assert!(table_bytes > 0);
    }
}
