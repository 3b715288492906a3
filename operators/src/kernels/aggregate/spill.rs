//! A hash aggregation larger than its memory: its groups' partial states spilled by the hash
//! of their keys.
//!
//! Refused memory, a single-phase or final aggregation writes every group it holds as partial
//! states (the form a partial aggregation sends to a final one) to [`SpillPartitions`], frees
//! its table and goes on. At the end it spills what it holds too, then merges the partitions
//! one by one, each in a final-mode aggregation of its own: a group's states all sit in one
//! partition, so each partition's groups are final when it has been read. A partition whose
//! groups still do not fit spills again one level deeper, over new partitions; past
//! [`MAX_LEVEL`] the aggregation fails. (A partial aggregation never spills: refused memory,
//! it sends what it holds downstream early and starts again.)

use crate::spill::{SpillFile, SpillPartitions, SpillSpace};
use crate::{Batch, Reservation, Result};
use std::collections::VecDeque;
use std::sync::Arc;

/// Deepest spill level: at 16 partitions a level, six levels split the groups 16^6 ways.
pub(super) const MAX_LEVEL: u32 = 6;

/// Partial states being spilled by the hash of their group keys.
pub(super) struct GroupSpill {
    parts: SpillPartitions,
    /// Key columns leading each batch.
    keys: usize,
}

impl GroupSpill {
    /// Spills at `level` of batches whose first `keys` columns are the group keys, the
    /// files' buffers accounted beside `memory`.
    pub(super) fn new(
        space: &Arc<SpillSpace>,
        level: u32,
        keys: usize,
        memory: &Reservation,
    ) -> GroupSpill {
        GroupSpill {
            parts: SpillPartitions::new(space, level, memory),
            keys,
        }
    }

    /// Writes the groups of `batch` (keys, then partial states) to their partitions.
    pub(super) fn write(&mut self, batch: &Batch) -> Result<()> {
        self.parts.write_keyed(batch, &batch.columns()[..self.keys])
    }

    /// The partitions that got groups.
    pub(super) fn finish(self) -> Result<VecDeque<SpillFile>> {
        Ok(self.parts.finish()?.into_iter().flatten().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::super::HashAggregateOp;
    use crate::kernels::operator::{drain, ExecContext, Operator};
    use crate::plan::{AggFunc, AggMode, AggregateExpr};
    use crate::spill::SpillSpace;
    use crate::{Batch, Column, DataType, Error, Expr, Reservation, UnboundedPool, Value};
    use rand::rngs::StdRng;
    use rand::{RngExt, SeedableRng};
    use std::sync::Arc;

    /// `n` rows of (key with NULLs, integer, integral double, text) in batches of 1,000.
    fn input(n: usize, keys: i64, seed: u64) -> Vec<Batch> {
        let mut rng = StdRng::seed_from_u64(seed);
        let key: Vec<Value> = (0..n)
            .map(|_| match rng.random_range(0..50) {
                0 => Value::Null,
                _ => Value::Int(rng.random_range(0..keys)),
            })
            .collect();
        let ints: Vec<i64> = (0..n).map(|_| rng.random_range(-1000..1000)).collect();
        let floats: Vec<f64> = ints.iter().map(|&i| (i * 3) as f64).collect();
        let texts: Vec<String> = ints.iter().map(|i| format!("t{i}")).collect();
        Batch::try_new(vec![
            Column::from_values(DataType::Int64, &key).unwrap(),
            Column::from_i64(ints),
            Column::from_f64(floats),
            Column::from_strs(&texts),
        ])
        .unwrap()
        .split(1_000)
    }

    fn aggs() -> Vec<AggregateExpr> {
        let agg = |func, arg: Option<usize>, input_type| AggregateExpr {
            func,
            arg: arg.map(Expr::col),
            input_type,
            param: None,
            order_by: Vec::new(),
        };
        vec![
            agg(AggFunc::CountStar, None, DataType::Int64),
            agg(AggFunc::Sum, Some(1), DataType::Int64),
            agg(AggFunc::Avg, Some(2), DataType::Float64),
            agg(AggFunc::Min, Some(3), DataType::Utf8),
            agg(AggFunc::Max, Some(1), DataType::Int64),
            agg(AggFunc::Count, Some(0), DataType::Int64),
        ]
    }

    fn ctx(space: Option<Arc<SpillSpace>>) -> ExecContext {
        let mut ctx = ExecContext::new(vec![]);
        ctx.batch_size = 500;
        ctx.spill = space;
        ctx
    }

    fn op(
        mode: AggMode,
        pool: &Arc<UnboundedPool>,
        space: Option<Arc<SpillSpace>>,
    ) -> HashAggregateOp {
        HashAggregateOp::new(
            vec![Expr::col(0)],
            vec![DataType::Int64],
            aggs(),
            mode,
            ctx(space),
            Reservation::new(pool.clone()),
        )
        .unwrap()
    }

    /// Runs `op` over `input` as a driver does (pulling output whenever some is pending).
    fn run(op: &mut HashAggregateOp, input: Vec<Batch>) -> crate::Result<Vec<Batch>> {
        let mut out = Vec::new();
        for b in input {
            op.push(0, b)?;
            drain(op, &mut out)?;
        }
        op.finish(0)?;
        drain(op, &mut out)?;
        Ok(out)
    }

    fn sorted_rows(out: &[Batch]) -> Vec<Vec<Value>> {
        let mut rows: Vec<Vec<Value>> = out.iter().flat_map(Batch::rows).collect();
        rows.sort_by(|a, b| a[0].sort_cmp(&b[0]));
        rows
    }

    fn assert_clean(space: &SpillSpace, pool: &UnboundedPool) {
        assert_eq!(pool.used(), 0);
        assert_eq!(space.used(), 0);
        assert_eq!(std::fs::read_dir(space.dir()).unwrap().count(), 0);
    }

    #[test]
    fn a_single_phase_aggregation_refused_memory_spills_and_gives_the_same_groups() {
        let rows = input(60_000, 20_000, 1);
        let unbounded = UnboundedPool::new();
        let expected =
            sorted_rows(&run(&mut op(AggMode::Single, &unbounded, None), rows.clone()).unwrap());
        assert!(expected.len() > 15_000);
        let space = SpillSpace::temporary("test", 1 << 30).unwrap();
        let pool = UnboundedPool::with_limit(400_000);
        let mut spilling = op(AggMode::Single, &pool, Some(space.clone()));
        let got = run(&mut spilling, rows).unwrap();
        assert!(got.iter().all(|b| b.num_rows() <= 500));
        assert_eq!(sorted_rows(&got), expected);
        assert!(pool.peak() <= 400_000);
        assert_eq!(space.stats().snapshot().spills, 1);
        drop(spilling);
        assert_clean(&space, &pool);
    }

    #[test]
    fn partitions_that_still_do_not_fit_spill_again_one_level_deeper() {
        let rows = input(60_000, 50_000, 2);
        let expected = sorted_rows(
            &run(
                &mut op(AggMode::Single, &UnboundedPool::new(), None),
                rows.clone(),
            )
            .unwrap(),
        );
        let space = SpillSpace::temporary("test", 1 << 30).unwrap();
        // Fewer groups fit than a sixteenth of them: partitions spill again.
        let pool = UnboundedPool::with_limit(120_000);
        let got = run(&mut op(AggMode::Single, &pool, Some(space.clone())), rows).unwrap();
        assert_eq!(sorted_rows(&got), expected);
        let counts = space.stats().snapshot();
        assert!(counts.spills > 1, "{counts:?}");
        assert_clean(&space, &pool);
    }

    #[test]
    fn a_partial_aggregation_refused_memory_sends_its_groups_early_and_a_final_one_spills() {
        let rows = input(60_000, 20_000, 3);
        let expected = sorted_rows(
            &run(
                &mut op(AggMode::Single, &UnboundedPool::new(), None),
                rows.clone(),
            )
            .unwrap(),
        );
        let space = SpillSpace::temporary("test", 1 << 30).unwrap();
        let pool = UnboundedPool::with_limit(400_000);
        let partial = run(&mut op(AggMode::Partial, &pool, Some(space.clone())), rows).unwrap();
        let groups: usize = partial.iter().map(Batch::num_rows).sum();
        assert!(
            groups > expected.len(),
            "sent early, groups repeat: {groups}"
        );
        assert_eq!(
            space.stats().snapshot().spills,
            0,
            "a partial aggregation does not spill"
        );
        let mut last = op(AggMode::Final, &pool, Some(space.clone()));
        let got = run(&mut last, partial).unwrap();
        assert_eq!(sorted_rows(&got), expected);
        assert_eq!(space.stats().snapshot().spills, 1);
        drop(last);
        assert_clean(&space, &pool);
    }

    /// A variance's state (count, sum, squared deviations) spills and merges: the spilled
    /// aggregation's variances are the one-pass ones up to rounding, NULL where they are.
    #[test]
    fn variances_spill_as_partial_states_and_merge_to_the_same_values() {
        let rows = input(60_000, 20_000, 6);
        let variance = |func| AggregateExpr::new(func, Some(Expr::col(2)), DataType::Float64);
        let aggregation = |pool: &Arc<UnboundedPool>, space| {
            HashAggregateOp::new(
                vec![Expr::col(0)],
                vec![DataType::Int64],
                vec![variance(AggFunc::VarSamp), variance(AggFunc::StddevPop)],
                AggMode::Single,
                ctx(space),
                Reservation::new(pool.clone()),
            )
            .unwrap()
        };
        let unbounded = UnboundedPool::new();
        let expected = sorted_rows(&run(&mut aggregation(&unbounded, None), rows.clone()).unwrap());
        let space = SpillSpace::temporary("test", 1 << 30).unwrap();
        let pool = UnboundedPool::with_limit(300_000);
        let got = sorted_rows(&run(&mut aggregation(&pool, Some(space.clone())), rows).unwrap());
        assert!(space.stats().snapshot().spills >= 1);
        assert_eq!(got.len(), expected.len());
        let mut nulls = 0;
        for (g, e) in got.iter().zip(&expected) {
            assert_eq!(g[0], e[0]);
            for k in 1..3 {
                match (&g[k], &e[k]) {
                    (Value::Float(a), Value::Float(b)) => {
                        assert!((a - b).abs() <= 1e-9 * b.abs().max(1.0), "{g:?} vs {e:?}")
                    }
                    (a, b) => {
                        assert_eq!(a, b);
                        nulls += 1;
                    }
                }
            }
        }
        assert!(nulls > 0, "groups of one value have no sample variance");
        assert_clean(&space, &pool);
    }

    /// A group's values all at once (PERCENTILE_CONT) have no partial state to spill: refused
    /// memory, the aggregation fails with the refusal, writes nothing and frees its memory.
    #[test]
    fn a_holistic_aggregation_refused_memory_fails_rather_than_spill() {
        let rows = input(60_000, 20_000, 5);
        let space = SpillSpace::temporary("test", 1 << 30).unwrap();
        let pool = UnboundedPool::with_limit(400_000);
        let median = AggregateExpr {
            func: AggFunc::PercentileCont,
            arg: Some(Expr::col(2)),
            input_type: DataType::Float64,
            param: Some(Value::Float(0.5)),
            order_by: Vec::new(),
        };
        let mut holistic = HashAggregateOp::new(
            vec![Expr::col(0)],
            vec![DataType::Int64],
            vec![median],
            AggMode::Single,
            ctx(Some(space.clone())),
            Reservation::new(pool.clone()),
        )
        .unwrap();
        assert_eq!(holistic.revocable(), 0);
        let err = run(&mut holistic, rows).unwrap_err();
        assert!(matches!(err, Error::Memory(_)), "{err:?}");
        assert_eq!(space.stats().snapshot().spills, 0);
        drop(holistic);
        assert_clean(&space, &pool);
    }

    #[test]
    fn without_a_spill_space_or_past_the_quota_a_refused_aggregation_fails() {
        let rows = input(60_000, 20_000, 4);
        let pool = UnboundedPool::with_limit(400_000);
        let err = run(&mut op(AggMode::Single, &pool, None), rows.clone()).unwrap_err();
        assert!(matches!(err, Error::Memory(_)), "{err:?}");
        let space = SpillSpace::temporary("test", 50_000).unwrap();
        let pool = UnboundedPool::with_limit(400_000);
        let mut spilling = op(AggMode::Single, &pool, Some(space.clone()));
        let err = run(&mut spilling, rows).unwrap_err();
        assert!(matches!(err, Error::SpillQuota { .. }), "{err:?}");
        drop(spilling);
        assert_clean(&space, &pool);
    }
}
