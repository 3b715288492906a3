//! A partitioned window refused memory with a spill space spills its rows by partition key
//! and evaluates each file alone: the rows and their window values are those of the same
//! window on an unbounded pool (in another order: by file, input order within each); memory
//! and files come back; a window without partitions, or without a spill space, fails as
//! before.

use std::sync::Arc;
use weir_operators::kernels::window::WindowOp;
use weir_operators::kernels::{drain, ExecContext, Operator};
use weir_operators::plan::{AggFunc, SortKey, WindowExpr, WindowFrame, WindowFunc};
use weir_operators::spill::SpillSpace;
use weir_operators::{Batch, Column, DataType, Error, Expr, Reservation, UnboundedPool, Value};

/// `n` rows of `(g, o, v)`: `groups` partitions, an order key with ties, a value.
fn input(n: i64, groups: i64) -> Vec<Batch> {
    let g: Vec<i64> = (0..n).map(|i| (i * 7919) % groups).collect();
    let o: Vec<i64> = (0..n).map(|i| (i * 31) % 97).collect();
    let v: Vec<Value> = (0..n)
        .map(|i| {
            if i % 13 == 0 {
                Value::Null
            } else {
                Value::Int(i % 1000)
            }
        })
        .collect();
    Batch::try_new(vec![
        Column::from_i64(g),
        Column::from_i64(o),
        Column::from_values(DataType::Int64, &v).unwrap(),
    ])
    .unwrap()
    .split(700)
}

fn functions() -> Vec<WindowExpr> {
    let f = |func, args: Vec<Expr>| WindowExpr {
        func,
        args,
        output_type: DataType::Int64,
        frame: WindowFrame::default(),
    };
    vec![
        f(WindowFunc::RowNumber, vec![]),
        f(WindowFunc::Rank, vec![]),
        f(WindowFunc::Aggregate(AggFunc::Sum), vec![Expr::col(2)]),
        f(
            WindowFunc::Lag,
            vec![
                Expr::col(2),
                Expr::lit(Value::Int(1)),
                Expr::lit(Value::Null),
            ],
        ),
    ]
}

fn window(
    partitioned: bool,
    pool: &Arc<UnboundedPool>,
    space: Option<&Arc<SpillSpace>>,
) -> WindowOp {
    let mut ctx = ExecContext::new(vec![]);
    ctx.batch_size = 500;
    ctx.spill = space.cloned();
    let order = SortKey {
        expr: Expr::col(1),
        descending: false,
        nulls_first: false,
    };
    let partition_by = if partitioned {
        vec![Expr::col(0)]
    } else {
        vec![]
    };
    WindowOp::new(
        partition_by,
        vec![order],
        functions(),
        None,
        ctx,
        Reservation::new(pool.clone()),
    )
}

fn run(op: &mut WindowOp, input: Vec<Batch>) -> weir_operators::Result<Vec<Vec<Value>>> {
    let mut out = Vec::new();
    for b in input {
        op.push(0, b)?;
        drain(op, &mut out)?;
    }
    op.finish(0)?;
    drain(op, &mut out)?;
    let mut rows: Vec<Vec<Value>> = out.iter().flat_map(Batch::rows).collect();
    rows.sort_by(|a, b| Value::cmp_rows(a, b));
    Ok(rows)
}

#[test]
fn a_partitioned_window_refused_memory_spills_by_partition_and_computes_the_same() {
    let unbounded = UnboundedPool::new();
    let expected = run(&mut window(true, &unbounded, None), input(30_000, 3_000)).unwrap();
    assert_eq!(expected.len(), 30_000);
    // Rows tie on (g, o) with different values: a tie's LAG depends on input order, which a
    // spill keeps within each file, so the rows still match.
    for limit in [400_000, 100_000] {
        let space = SpillSpace::temporary("window", 1 << 30).unwrap();
        let pool = UnboundedPool::with_limit(limit);
        let mut op = window(true, &pool, Some(&space));
        let got = run(&mut op, input(30_000, 3_000)).unwrap();
        assert_eq!(got, expected, "limit {limit}");
        assert!(pool.peak() <= limit);
        assert!(space.stats().snapshot().spills == 1, "{:?}", space.stats());
        drop(op);
        assert_eq!((pool.used(), space.used()), (0, 0));
        assert_eq!(std::fs::read_dir(space.dir()).unwrap().count(), 0);
    }
}

#[test]
fn a_window_revoked_spills_and_computes_the_same() {
    let unbounded = UnboundedPool::new();
    let expected = run(&mut window(true, &unbounded, None), input(10_000, 500)).unwrap();
    let space = SpillSpace::temporary("window", 1 << 30).unwrap();
    let pool = UnboundedPool::new();
    let mut op = window(true, &pool, Some(&space));
    let mut batches = input(10_000, 500);
    let rest = batches.split_off(5);
    for b in batches {
        op.push(0, b).unwrap();
    }
    assert!(op.revocable() > 0);
    op.revoke().unwrap();
    assert_eq!(op.memory_size(), 0);
    let got = run(&mut op, rest).unwrap();
    assert_eq!(got, expected);
}

#[test]
fn an_unpartitioned_window_or_one_without_a_spill_space_fails_as_before() {
    let space = SpillSpace::temporary("window", 1 << 30).unwrap();
    let pool = UnboundedPool::with_limit(100_000);
    let err = run(
        &mut window(false, &pool, Some(&space)),
        input(30_000, 3_000),
    )
    .unwrap_err();
    assert!(matches!(err, Error::Memory(_)), "{err:?}");
    let pool = UnboundedPool::with_limit(100_000);
    let err = run(&mut window(true, &pool, None), input(30_000, 3_000)).unwrap_err();
    assert!(matches!(err, Error::Memory(_)), "{err:?}");
    assert_eq!(space.stats().snapshot().spills, 0);
}
