//! Generated inputs, sorted and grouped with a memory limit far below what they need and a
//! spill space, give what the same operators give on an unbounded pool: the same rows in the
//! same order for a sort (ties in input order), the same groups for an aggregation; and every
//! byte of memory and disk comes back.

use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use std::sync::Arc;
use weir_operators::kernels::aggregate::HashAggregateOp;
use weir_operators::kernels::sort::SortOp;
use weir_operators::kernels::{drain, ExecContext, Operator};
use weir_operators::plan::{AggFunc, AggMode, AggregateExpr, SortKey};
use weir_operators::spill::SpillSpace;
use weir_operators::{Batch, Column, DataType, Expr, Reservation, UnboundedPool, Value};

/// Rows of `(k, v, s)`: a key with NULLs, an integer, a text.
fn rows_strategy() -> impl Strategy<Value = Vec<(Option<i64>, i64, String)>> {
    (1i64..5_000, 0usize..6_000).prop_flat_map(|(keys, n)| {
        proptest::collection::vec(
            (
                proptest::option::weighted(0.95, 0..keys),
                -1_000i64..1_000,
                "[a-e]{0,6}",
            ),
            n,
        )
    })
}

fn batches(rows: &[(Option<i64>, i64, String)], chunk: usize) -> Vec<Batch> {
    rows.chunks(chunk.max(1))
        .map(|c| {
            let k: Vec<Value> = c
                .iter()
                .map(|r| r.0.map_or(Value::Null, Value::Int))
                .collect();
            let s: Vec<&str> = c.iter().map(|r| r.2.as_str()).collect();
            Batch::try_new(vec![
                Column::from_values(DataType::Int64, &k).unwrap(),
                Column::from_i64(c.iter().map(|r| r.1).collect()),
                Column::from_strs(&s),
            ])
            .unwrap()
        })
        .collect()
}

fn run(op: &mut dyn Operator, input: Vec<Batch>) -> weir_operators::Result<Vec<Vec<Value>>> {
    let mut out = Vec::new();
    for b in input {
        op.push(0, b)?;
        drain(op, &mut out)?;
    }
    op.finish(0)?;
    drain(op, &mut out)?;
    Ok(out.iter().flat_map(Batch::rows).collect())
}

fn context(batch_size: usize, space: Option<&Arc<SpillSpace>>) -> ExecContext {
    let mut ctx = ExecContext::new(vec![]);
    ctx.batch_size = batch_size;
    ctx.spill = space.cloned();
    ctx
}

fn sort(
    rows: &[(Option<i64>, i64, String)],
    descending: bool,
    chunk: usize,
    pool: &Arc<UnboundedPool>,
    space: Option<&Arc<SpillSpace>>,
) -> weir_operators::Result<Vec<Vec<Value>>> {
    let keys = vec![
        SortKey {
            expr: Expr::col(0),
            descending,
            nulls_first: !descending,
        },
        SortKey {
            expr: Expr::col(2),
            descending: false,
            nulls_first: false,
        },
    ];
    let mut op = SortOp::new(
        keys,
        None,
        context(300, space),
        Reservation::new(pool.clone()),
    );
    run(&mut op, batches(rows, chunk))
}

fn group(
    rows: &[(Option<i64>, i64, String)],
    chunk: usize,
    pool: &Arc<UnboundedPool>,
    space: Option<&Arc<SpillSpace>>,
) -> weir_operators::Result<Vec<Vec<Value>>> {
    let agg = |func, arg: Option<usize>, input_type| AggregateExpr {
        func,
        arg: arg.map(Expr::col),
        input_type,
        param: None,
        order_by: Vec::new(),
    };
    let mut op = HashAggregateOp::new(
        vec![Expr::col(0)],
        vec![DataType::Int64],
        vec![
            agg(AggFunc::CountStar, None, DataType::Int64),
            agg(AggFunc::Sum, Some(1), DataType::Int64),
            agg(AggFunc::Min, Some(2), DataType::Utf8),
            agg(AggFunc::Max, Some(2), DataType::Utf8),
        ],
        AggMode::Single,
        context(300, space),
        Reservation::new(pool.clone()),
    )?;
    let mut out = run(&mut op, batches(rows, chunk))?;
    out.sort_by(|a, b| a[0].sort_cmp(&b[0]));
    Ok(out)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 64,
        rng_seed: RngSeed::Fixed(0x5911_5eed),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn generated_sorts_and_aggregations_spill_and_match_unbounded_ones(
        rows in rows_strategy(),
        descending in any::<bool>(),
        chunk in 1usize..1_500,
        limit in 40_000usize..200_000,
    ) {
        // The limit always holds a pushed batch and the merge's batches; below that, failing
        // is the right answer.
        let space = SpillSpace::temporary("property", 1 << 30).unwrap();
        let unbounded = UnboundedPool::new();
        let expected = sort(&rows, descending, chunk, &unbounded, None).unwrap();
        let pool = UnboundedPool::with_limit(limit);
        let got = sort(&rows, descending, chunk, &pool, Some(&space)).unwrap();
        prop_assert_eq!(got, expected);
        prop_assert!(pool.peak() <= limit);
        let input: usize = batches(&rows, chunk).iter().map(Batch::memory_size).sum();
        if input > limit {
            prop_assert!(space.stats().snapshot().spills > 0, "{} bytes in {}", input, limit);
        }
        let expected = group(&rows, chunk, &unbounded, None).unwrap();
        let got = group(&rows, chunk, &pool, Some(&space)).unwrap();
        prop_assert_eq!(got, expected);
        prop_assert_eq!((pool.used(), space.used()), (0, 0));
        prop_assert_eq!(std::fs::read_dir(space.dir()).unwrap().count(), 0);
    }
}
