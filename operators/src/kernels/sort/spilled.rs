//! A sort larger than its memory: sorted runs on disk and a streaming k-way merge.
//!
//! When the sort is refused memory, it sorts what it holds and writes it to a spill file as
//! one run, frees the memory and goes on buffering. At the end the runs are merged: at most
//! [`FAN_IN`] at once (more are first merged into longer runs on disk, sixteen at a time), each
//! run read one batch at a time, so that the merge holds one batch per run. Key columns are
//! not stored: a key that names an input column is read from the batch, another is evaluated
//! again as each batch is read back.
//!
//! Ties keep input order, as the sort's in-memory paths do: runs are numbered in input
//! order, each sorted stably, and a tie between two runs goes to the earlier one.

use super::order::cmp_cells;
use crate::eval::evaluate;
use crate::plan::SortKey;
use crate::spill::{SpillFile, SpillReader, SpillSpace, SpillWriter};
use crate::{Batch, Column, Reservation, Result, Value};
use std::cmp::Ordering;
use std::sync::Arc;

/// Most runs merged at once.
pub(crate) const FAN_IN: usize = 16;

/// What the merge needs to know of the sort's keys.
#[derive(Clone)]
pub(crate) struct Keys {
    pub(crate) specs: Vec<SortKey>,
    /// For each key, the input column it names (`None`: evaluated).
    pub(crate) inputs: Vec<Option<usize>>,
    pub(crate) params: Arc<Vec<Value>>,
}

/// One run being read: its reader, the batch at hand with its key columns, and the next row.
struct Cursor {
    reader: SpillReader,
    batch: Batch,
    keys: Vec<Column>,
    pos: usize,
}

impl Cursor {
    /// A cursor on `file`'s first batch, its reader's buffer accounted beside `memory`;
    /// `None` when the run is empty.
    fn open(file: &SpillFile, keys: &Keys, memory: &Reservation) -> Result<Option<Cursor>> {
        let mut cursor = Cursor {
            reader: file.reader(memory)?,
            batch: Batch::empty(&[]),
            keys: Vec::new(),
            pos: 0,
        };
        Ok(cursor.advance(keys)?.then_some(cursor))
    }

    /// Loads the run's next non-empty batch; false at the run's end.
    fn advance(&mut self, keys: &Keys) -> Result<bool> {
        for batch in self.reader.by_ref() {
            let batch = batch?;
            if batch.is_empty() {
                continue;
            }
            self.keys = keys
                .specs
                .iter()
                .zip(&keys.inputs)
                .map(|(k, input)| match input {
                    Some(i) if *i < batch.num_columns() => Ok(batch.column(*i).clone()),
                    _ => evaluate(&k.expr, &batch, &keys.params),
                })
                .collect::<Result<_>>()?;
            self.batch = batch;
            self.pos = 0;
            return Ok(true);
        }
        Ok(false)
    }

    fn bytes(&self) -> usize {
        self.batch.memory_size() + self.keys.iter().map(Column::memory_size).sum::<usize>()
    }
}

/// Row `i` of cursor `a` against row `j` of cursor `b` by the sort's keys.
fn cmp_rows(a: &Cursor, i: usize, b: &Cursor, j: usize, keys: &Keys) -> Ordering {
    for (k, spec) in keys.specs.iter().enumerate() {
        let o = cmp_cells(&a.keys[k], i, &b.keys[k], j, spec);
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// A streaming merge of sorted runs (at most [`FAN_IN`]), given in input order.
pub(crate) struct RunMerge {
    keys: Keys,
    /// The runs' files, kept until the merge ends (dropping one removes it).
    _files: Vec<SpillFile>,
    /// One cursor per run not yet exhausted, in run order (`None` once it is).
    cursors: Vec<Option<Cursor>>,
}

impl RunMerge {
    /// A merge of `runs`, first merged on disk into at most [`FAN_IN`] runs (written in
    /// batches of `batch_size` rows) when there are more; the files' buffers are accounted
    /// beside `memory` (the sort's reservation).
    pub(crate) fn new(
        mut runs: Vec<SpillFile>,
        keys: Keys,
        space: &Arc<SpillSpace>,
        batch_size: usize,
        memory: &Reservation,
    ) -> Result<RunMerge> {
        while runs.len() > FAN_IN {
            let rest = runs.split_off(FAN_IN);
            let mut merge = RunMerge::open(runs, keys.clone(), memory)?;
            let mut writer = SpillWriter::new(space, memory)?;
            while let Some(b) = merge.next_batch(batch_size)? {
                writer.write(&b)?;
            }
            drop(merge);
            // The merged run holds the earliest input: it goes first, the others after it.
            runs = std::iter::once(writer.finish()?).chain(rest).collect();
        }
        RunMerge::open(runs, keys, memory)
    }

    fn open(files: Vec<SpillFile>, keys: Keys, memory: &Reservation) -> Result<RunMerge> {
        let cursors = files
            .iter()
            .map(|f| Cursor::open(f, &keys, memory))
            .collect::<Result<_>>()?;
        Ok(RunMerge {
            keys,
            _files: files,
            cursors,
        })
    }

    /// Bytes the merge holds in memory (one batch and its keys per run).
    pub(crate) fn memory_size(&self) -> usize {
        self.cursors.iter().flatten().map(Cursor::bytes).sum()
    }

    /// Whether rows remain.
    pub(crate) fn has_rows(&self) -> bool {
        self.cursors.iter().any(Option::is_some)
    }

    /// The run whose head comes first (`skip` excluded); ties go to the earlier run.
    fn first(&self, skip: Option<usize>) -> Option<usize> {
        let mut best: Option<usize> = None;
        for (r, c) in self.cursors.iter().enumerate() {
            let Some(c) = c else { continue };
            if Some(r) == skip {
                continue;
            }
            best = match best {
                Some(b) => {
                    let bc = self.cursors[b].as_ref().expect("live");
                    match cmp_rows(c, c.pos, bc, bc.pos, &self.keys) {
                        Ordering::Less => Some(r),
                        _ => Some(b),
                    }
                }
                None => Some(r),
            };
        }
        best
    }

    /// The next at most `size` rows in order; `None` once every run is exhausted.
    pub(crate) fn next_batch(&mut self, size: usize) -> Result<Option<Batch>> {
        let mut parts = Vec::new();
        let mut rows = 0;
        while rows < size {
            let Some(m) = self.first(None) else { break };
            let second = self.first(Some(m));
            let cursor = self.cursors[m].as_ref().expect("live");
            let end = (cursor.pos + size - rows).min(cursor.batch.num_rows());
            // Rows of run `m` go out while they come before the other runs' first head (a
            // tie with a later run goes to `m`, with an earlier one to that run).
            let mut take = cursor.pos + 1;
            if let Some(s) = second {
                let other = self.cursors[s].as_ref().expect("live");
                while take < end {
                    let o = cmp_rows(cursor, take, other, other.pos, &self.keys);
                    if o == Ordering::Greater || (o == Ordering::Equal && s < m) {
                        break;
                    }
                    take += 1;
                }
            } else {
                take = end;
            }
            let cursor = self.cursors[m].as_mut().expect("live");
            parts.push(cursor.batch.slice(cursor.pos, take - cursor.pos));
            rows += take - cursor.pos;
            cursor.pos = take;
            if cursor.pos == cursor.batch.num_rows() && !cursor.advance(&self.keys)? {
                self.cursors[m] = None;
            }
        }
        match parts.len() {
            0 => Ok(None),
            1 => Ok(parts.pop()),
            _ => Batch::concat(&parts).map(Some),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::SortOp;
    use super::FAN_IN;
    use crate::kernels::operator::{drain, ExecContext, Operator};
    use crate::plan::SortKey;
    use crate::spill::SpillSpace;
    use crate::{Batch, Column, DataType, Error, Expr, Reservation, UnboundedPool, Value};
    use rand::rngs::StdRng;
    use rand::{RngExt, SeedableRng};
    use std::sync::Arc;

    /// `n` rows in batches of 1,000: a key with NULLs and many ties, the row's number, a text.
    fn input(n: usize, seed: u64) -> Vec<Batch> {
        let mut rng = StdRng::seed_from_u64(seed);
        let keys: Vec<Value> = (0..n)
            .map(|_| match rng.random_range(0..20) {
                0 => Value::Null,
                _ => Value::Int(rng.random_range(-500..500)),
            })
            .collect();
        let batch = Batch::try_new(vec![
            Column::from_values(DataType::Int64, &keys).unwrap(),
            Column::from_i64((0..n as i64).collect()),
            Column::from_strs(&(0..n).map(|i| format!("text {i}")).collect::<Vec<_>>()),
        ])
        .unwrap();
        batch.split(1_000)
    }

    fn sort(
        keys: Vec<SortKey>,
        input: &[Batch],
        pool: Arc<UnboundedPool>,
        space: Option<Arc<SpillSpace>>,
    ) -> crate::Result<Vec<Vec<Value>>> {
        let mut ctx = ExecContext::new(vec![]);
        ctx.batch_size = 700;
        ctx.spill = space;
        let mut op = SortOp::new(keys, None, ctx, Reservation::new(pool));
        for b in input {
            op.push(0, b.clone())?;
        }
        op.finish(0)?;
        let mut out = Vec::new();
        drain(&mut op, &mut out)?;
        assert!(out.iter().all(|b| b.num_rows() <= 700));
        Ok(out.iter().flat_map(Batch::rows).collect())
    }

    fn keys_of(descending: bool, nulls_first: bool) -> Vec<SortKey> {
        vec![
            SortKey {
                expr: Expr::col(0),
                descending,
                nulls_first,
            },
            // An evaluated key: spilled runs evaluate it again as they are read back.
            SortKey {
                expr: Expr::Negate(Box::new(Expr::col(1))),
                descending: false,
                nulls_first,
            },
        ]
    }

    #[test]
    fn a_sort_refused_memory_spills_runs_and_merges_them_in_order() {
        let input = input(40_000, 7);
        for (descending, nulls_first) in [(false, false), (true, true)] {
            // The first key alone, ties in input order (the row number breaks none).
            for keys in [
                keys_of(descending, nulls_first)[..1].to_vec(),
                keys_of(descending, nulls_first),
            ] {
                let expected = sort(keys.clone(), &input, UnboundedPool::new(), None).unwrap();
                let space = SpillSpace::temporary("test", 1 << 30).unwrap();
                let pool = UnboundedPool::with_limit(60_000);
                let got = sort(keys, &input, pool.clone(), Some(space.clone())).unwrap();
                assert_eq!(got, expected);
                assert!(pool.peak() <= 60_000);
                assert_eq!(pool.used(), 0);
                let counts = space.stats().snapshot();
                assert_eq!(counts.spills, 1, "one spill counted per sort");
                assert!(
                    counts.files > FAN_IN as u64,
                    "{counts:?}: a merge in passes"
                );
                assert_eq!(space.used(), 0);
                assert_eq!(std::fs::read_dir(space.dir()).unwrap().count(), 0);
            }
        }
    }

    #[test]
    fn without_a_spill_space_a_refused_sort_fails_as_before() {
        let input = input(20_000, 8);
        let err = sort(
            keys_of(false, false),
            &input,
            UnboundedPool::with_limit(100_000),
            None,
        )
        .unwrap_err();
        assert!(matches!(err, Error::Memory(_)), "{err:?}");
    }

    #[test]
    fn a_spill_past_the_quota_fails_with_its_error_and_leaves_nothing() {
        let input = input(20_000, 9);
        let space = SpillSpace::temporary("node 1", 100_000).unwrap();
        let pool = UnboundedPool::with_limit(100_000);
        let err = sort(
            keys_of(false, false),
            &input,
            pool.clone(),
            Some(space.clone()),
        )
        .unwrap_err();
        assert!(matches!(err, Error::SpillQuota { .. }), "{err:?}");
        assert_eq!(pool.used(), 0);
        assert_eq!(space.used(), 0);
        assert_eq!(std::fs::read_dir(space.dir()).unwrap().count(), 0);
    }

    #[test]
    fn a_sort_dropped_while_merging_removes_its_runs() {
        let input = input(20_000, 10);
        let space = SpillSpace::temporary("test", 1 << 30).unwrap();
        let pool = UnboundedPool::with_limit(200_000);
        let mut ctx = ExecContext::new(vec![]);
        ctx.spill = Some(space.clone());
        let mut op = SortOp::new(
            keys_of(false, false),
            None,
            ctx,
            Reservation::new(pool.clone()),
        );
        for b in &input {
            op.push(0, b.clone()).unwrap();
        }
        op.finish(0).unwrap();
        assert!(op.next_output().unwrap().is_some());
        assert!(space.used() > 0);
        drop(op);
        assert_eq!((space.used(), pool.used()), (0, 0));
        assert_eq!(std::fs::read_dir(space.dir()).unwrap().count(), 0);
    }
}
