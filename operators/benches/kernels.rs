//! Criterion benchmarks of the batch kernels on 1,000,000 generated rows: hash join build and
//! probe (inner, left and anti), hash aggregation (also a decimal SUM over 250,000 groups), sort and top-k, filter and projection, a
//! hash exchange's split of batches for 10 nodes, and windows (a running sum, a sliding MIN
//! over 201 rows, a top 3 per partition).
//! Throughput is reported in rows. Inputs are generated once with a seeded RNG and split into
//! default-size batches. A second group sorts what the initiator gets for the seed's
//! `queryOrderByFull` (100,000 rows).

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use rand::{rngs::StdRng, RngExt, SeedableRng};
use std::hint::black_box;
use std::time::Duration;
use weir_operators::kernels::aggregate::HashAggregateOp;
use weir_operators::kernels::filter::FilterOp;
use weir_operators::kernels::join::{HashJoinOp, JoinSpec};
use weir_operators::kernels::partition::hash_partition;
use weir_operators::kernels::project::ProjectOp;
use weir_operators::kernels::sort::SortOp;
use weir_operators::kernels::window::WindowOp;
use weir_operators::kernels::{drain, ExecContext, Operator};
use weir_operators::plan::{
    AggFunc, AggMode, AggregateExpr, FrameBound, FrameExclude, FrameUnits, JoinSide, JoinType,
    SortKey, WindowExpr, WindowFrame, WindowFunc,
};
use weir_operators::{
    Batch, BinaryOp, Column, ColumnBuilder, DataType, Expr, Reservation, Value, DEFAULT_BATCH_SIZE,
};

const ROWS: usize = 1_000_000;

/// Columns: 0 id (shuffled-ish i64 in 0..ROWS), 1 group key (i64 in 0..10_000),
/// 2 value (f64 in 0..1), 3 label (one of 1000 short strings).
fn generate(rows: usize, seed: u64) -> Vec<Batch> {
    let mut rng = StdRng::seed_from_u64(seed);
    let ids: Vec<i64> = (0..rows)
        .map(|_| rng.random_range(0..rows as i64))
        .collect();
    let groups: Vec<i64> = (0..rows).map(|_| rng.random_range(0..10_000i64)).collect();
    let values: Vec<f64> = (0..rows).map(|_| rng.random::<f64>()).collect();
    let labels: Vec<String> = (0..rows)
        .map(|_| format!("label-{}", rng.random_range(0..1000u32)))
        .collect();
    let batch = Batch::try_new(vec![
        Column::from_i64(ids),
        Column::from_i64(groups),
        Column::from_f64(values),
        Column::from_strs(&labels),
    ])
    .expect("equal lengths");
    batch.split(DEFAULT_BATCH_SIZE)
}

fn ctx() -> ExecContext {
    ExecContext::new(vec![])
}

/// Pushes `input` into `port`, pulling the output after each batch, and counts output rows.
/// Times a single-phase aggregation of `rows` grouped by column `key` (of type `ty`).
fn time_aggregate(
    b: &mut criterion::Bencher,
    rows: &[Batch],
    key: usize,
    ty: DataType,
    aggs: &[AggregateExpr],
) {
    b.iter_batched(
        || rows.to_vec(),
        |batches| {
            let mut op = HashAggregateOp::new(
                vec![Expr::col(key)],
                vec![ty],
                aggs.to_vec(),
                AggMode::Single,
                ctx(),
                Reservation::unbounded(),
            )
            .expect("aggregate");
            black_box(run(&mut op, 0, batches))
        },
        BatchSize::PerIteration,
    )
}

fn run(op: &mut dyn Operator, port: usize, input: Vec<Batch>) -> usize {
    let mut out = Vec::new();
    let mut rows = 0;
    for b in input {
        op.push(port, b).expect("push");
        drain(op, &mut out).expect("pull");
        rows += out.drain(..).map(|b| b.num_rows()).sum::<usize>();
    }
    op.finish(port).expect("finish");
    drain(op, &mut out).expect("pull");
    rows + out.iter().map(Batch::num_rows).sum::<usize>()
}

/// The batches of `streams` as a gather receives them: one of each stream in turn.
fn in_turn(streams: &[Vec<Batch>]) -> Vec<Batch> {
    (0..streams.iter().map(Vec::len).max().unwrap_or(0))
        .flat_map(|i| streams.iter().filter_map(move |s| s.get(i).cloned()))
        .collect()
}

/// Pushes `input` into port 0, finishes it and collects every output batch into `out`.
fn run_into(op: &mut dyn Operator, input: Vec<Batch>, out: &mut Vec<Batch>) {
    for b in input {
        op.push(0, b).expect("push");
        drain(op, out).expect("pull");
    }
    op.finish(0).expect("finish");
    drain(op, out).expect("pull");
}

fn bench_kernels(c: &mut Criterion) {
    let input = generate(ROWS, 42);
    let mut g = c.benchmark_group("kernels");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Elements(ROWS as u64));

    g.bench_function("filter", |b| {
        let pred = Expr::col(2)
            .binary(BinaryOp::Lt, Expr::lit(0.5))
            .and(Expr::col(1).binary(BinaryOp::GtEq, Expr::lit(100)));
        b.iter_batched(
            || input.clone(),
            |batches| {
                let mut op = FilterOp::new(pred.clone(), ctx());
                black_box(run(&mut op, 0, batches))
            },
            BatchSize::PerIteration,
        )
    });

    g.bench_function("project", |b| {
        let exprs = vec![
            Expr::col(0),
            Expr::col(1)
                .binary(BinaryOp::Mul, Expr::lit(2))
                .binary(BinaryOp::Add, Expr::lit(1)),
            Expr::col(2).binary(BinaryOp::Mul, Expr::lit(100.0)),
        ];
        b.iter_batched(
            || input.clone(),
            |batches| {
                let mut op = ProjectOp::new(exprs.clone(), ctx());
                black_box(run(&mut op, 0, batches))
            },
            BatchSize::PerIteration,
        )
    });

    g.bench_function("hash_partition_10", |b| {
        // A hash exchange's split of each batch for 10 nodes, keyed on the group column.
        let keys = [Expr::col(1)];
        let mut hashes = Vec::new();
        b.iter_batched(
            || input.clone(),
            |batches| {
                let mut rows = 0;
                for batch in batches {
                    let parts = hash_partition(batch, &keys, &[], 10, &mut hashes);
                    rows += parts
                        .expect("split")
                        .iter()
                        .map(|(_, p)| p.num_rows())
                        .sum::<usize>();
                }
                black_box(rows)
            },
            BatchSize::PerIteration,
        )
    });

    g.bench_function("hash_join_build", |b| {
        b.iter_batched(
            || input.clone(),
            |batches| {
                let mut op = HashJoinOp::new(
                    vec![Expr::col(0)],
                    vec![Expr::col(0)],
                    JoinSide::Left,
                    ctx(),
                    Reservation::unbounded(),
                );
                black_box(run(&mut op, 0, batches))
            },
            BatchSize::PerIteration,
        )
    });

    g.bench_function("hash_join_probe", |b| {
        // Build: 100,000 distinct ids; probe: the 1,000,000 input rows (~10% match).
        let build = Batch::try_new(vec![Column::from_i64((0..100_000).collect())])
            .expect("build batch")
            .split(DEFAULT_BATCH_SIZE);
        let mut op = HashJoinOp::new(
            vec![Expr::col(0)],
            vec![Expr::col(0)],
            JoinSide::Right,
            ctx(),
            Reservation::unbounded(),
        );
        run(&mut op, 1, build);
        b.iter_batched(
            || input.clone(),
            |batches| {
                let mut out = Vec::new();
                let mut rows = 0;
                for b in batches {
                    op.push(0, b).expect("probe");
                    drain(&mut op, &mut out).expect("pull");
                    rows += out.drain(..).map(|b| b.num_rows()).sum::<usize>();
                }
                black_box(rows)
            },
            BatchSize::PerIteration,
        )
    });

    for (name, join_type) in [
        ("hash_join_probe_left", JoinType::Left),
        ("hash_join_probe_anti", JoinType::Anti { null_aware: false }),
    ] {
        // As `hash_join_probe`, but every probe row without a match is output too.
        g.bench_function(name, |b| {
            let build = Batch::try_new(vec![Column::from_i64((0..100_000).collect())])
                .expect("build batch")
                .split(DEFAULT_BATCH_SIZE);
            let spec = JoinSpec::new(join_type, JoinSide::Right)
                .with_types(input[0].types(), vec![DataType::Int64]);
            let mut op = HashJoinOp::with_spec(
                vec![Expr::col(0)],
                vec![Expr::col(0)],
                spec,
                ctx(),
                Reservation::unbounded(),
            )
            .expect("join");
            run(&mut op, 1, build);
            b.iter_batched(
                || input.clone(),
                |batches| {
                    let mut out = Vec::new();
                    let mut rows = 0;
                    for b in batches {
                        op.push(0, b).expect("probe");
                        drain(&mut op, &mut out).expect("pull");
                        rows += out.drain(..).map(|b| b.num_rows()).sum::<usize>();
                    }
                    black_box(rows)
                },
                BatchSize::PerIteration,
            )
        });
    }

    let aggs = vec![
        AggregateExpr {
            func: AggFunc::CountStar,
            arg: None,
            input_type: DataType::Int64,
            param: None,
            order_by: Vec::new(),
        },
        AggregateExpr {
            func: AggFunc::Sum,
            arg: Some(Expr::col(0)),
            input_type: DataType::Int64,
            param: None,
            order_by: Vec::new(),
        },
        AggregateExpr {
            func: AggFunc::Avg,
            arg: Some(Expr::col(2)),
            input_type: DataType::Float64,
            param: None,
            order_by: Vec::new(),
        },
    ];
    // The input with its group key column divided by 100: 100 groups, as in `queryGroupBy`.
    let hundred_groups: Vec<Batch> = input
        .iter()
        .map(|b| {
            let mut cols = b.columns().to_vec();
            let keys = cols[1].as_i64().expect("BIGINT keys");
            cols[1] = Column::from_i64(keys.iter().map(|k| k / 100).collect());
            Batch::try_new(cols).expect("same lengths")
        })
        .collect();
    for (name, key, ty, rows) in [
        (
            "hash_aggregate_int_10k_groups",
            1usize,
            DataType::Int64,
            &input,
        ),
        (
            "hash_aggregate_int_100_groups",
            1,
            DataType::Int64,
            &hundred_groups,
        ),
        ("hash_aggregate_str_1k_groups", 3, DataType::Utf8, &input),
    ] {
        g.bench_function(name, |b| time_aggregate(b, rows, key, ty, &aggs));
    }

    // TPC-H Q18's inner aggregation on one node: a SUM of a DECIMAL(15,2) by a BIGINT key,
    // about four rows per group in random order (250,000 groups: tables and accumulators far
    // larger than the caches).
    let decimal_sums: Vec<Batch> = {
        let mut rng = StdRng::seed_from_u64(7);
        let keys: Vec<i64> = (0..ROWS)
            .map(|_| rng.random_range(0..(ROWS / 4) as i64))
            .collect();
        let mut quantities = ColumnBuilder::new(DataType::decimal(15, 2), ROWS);
        for _ in 0..ROWS {
            quantities.push_decimal(rng.random_range(100..5_000i128));
        }
        Batch::try_new(vec![Column::from_i64(keys), quantities.finish()])
            .expect("equal lengths")
            .split(DEFAULT_BATCH_SIZE)
    };
    g.bench_function("hash_aggregate_decimal_sum_250k_groups", |b| {
        let sum = AggregateExpr {
            func: AggFunc::Sum,
            arg: Some(Expr::col(1)),
            input_type: DataType::decimal(15, 2),
            param: None,
            order_by: Vec::new(),
        };
        time_aggregate(
            b,
            &decimal_sums,
            0,
            DataType::Int64,
            std::slice::from_ref(&sum),
        )
    });

    // TPC-H Q1's aggregation on one node: SUMs and AVGs of DECIMAL(15,2) columns over four
    // groups in random order (consecutive rows often update the same accumulator).
    let few_groups: Vec<Batch> = {
        let mut rng = StdRng::seed_from_u64(11);
        let keys: Vec<i64> = (0..ROWS).map(|_| rng.random_range(0..4)).collect();
        let mut prices = ColumnBuilder::new(DataType::decimal(15, 2), ROWS);
        let mut quantities = ColumnBuilder::new(DataType::decimal(15, 2), ROWS);
        for _ in 0..ROWS {
            prices.push_decimal(rng.random_range(90_000..10_000_000i128));
            quantities.push_decimal(rng.random_range(100..5_000i128));
        }
        Batch::try_new(vec![
            Column::from_i64(keys),
            prices.finish(),
            quantities.finish(),
        ])
        .expect("equal lengths")
        .split(DEFAULT_BATCH_SIZE)
    };
    g.bench_function("hash_aggregate_decimal_sums_4_groups", |b| {
        let agg = |func, col| AggregateExpr {
            func,
            arg: Some(Expr::col(col)),
            input_type: DataType::decimal(15, 2),
            param: None,
            order_by: Vec::new(),
        };
        let aggs = vec![
            agg(AggFunc::Sum, 1),
            agg(AggFunc::Sum, 2),
            agg(AggFunc::Avg, 1),
            agg(AggFunc::Avg, 2),
        ];
        time_aggregate(b, &few_groups, 0, DataType::Int64, &aggs)
    });

    // TPC-H Q1's two products: SUM(p * (1 - d)) and SUM(p * (1 - d) * (1 + d)) by four
    // groups, over the same rows (the product both arguments share is computed once).
    g.bench_function("hash_aggregate_shared_products_4_groups", |b| {
        let dec = |v: i128| Expr::Literal(Value::Decimal(v, 2));
        let discounted =
            Expr::col(1).binary(BinaryOp::Mul, dec(100).binary(BinaryOp::Sub, Expr::col(2)));
        let charged = discounted
            .clone()
            .binary(BinaryOp::Mul, dec(100).binary(BinaryOp::Add, Expr::col(2)));
        let sum = |e: Expr| AggregateExpr {
            func: AggFunc::Sum,
            arg: Some(e),
            input_type: DataType::decimal(38, 6),
            param: None,
            order_by: Vec::new(),
        };
        let aggs = vec![sum(discounted), sum(charged)];
        time_aggregate(b, &few_groups, 0, DataType::Int64, &aggs)
    });

    let sort_op = |limit: Option<usize>| {
        SortOp::new(
            vec![
                SortKey {
                    expr: Expr::col(1),
                    descending: true,
                    nulls_first: false,
                },
                SortKey {
                    expr: Expr::col(2),
                    descending: false,
                    nulls_first: false,
                },
            ],
            limit,
            ctx(),
            Reservation::unbounded(),
        )
    };
    // What a gather of sorted fragments hands the initiator's sort: each batch sorted on its
    // own, the batches interleaved.
    let sorted_runs: Vec<Batch> = input
        .iter()
        .map(|b| {
            let mut out = Vec::new();
            let mut op = sort_op(None);
            op.push(0, b.clone()).expect("push");
            op.finish(0).expect("finish");
            drain(&mut op, &mut out).expect("pull");
            Batch::concat(&out).expect("concat")
        })
        .collect();
    // What the initiator's sort gets from a gather of three nodes' sorted fragments: three
    // sorted streams of batches, their batches interleaved in turn.
    let streams: Vec<Vec<Batch>> = (0..3)
        .map(|s| {
            let part: Vec<Batch> = input.iter().skip(s).step_by(3).cloned().collect();
            let mut out = Vec::new();
            let mut op = sort_op(None);
            run_into(&mut op, part, &mut out);
            out
        })
        .collect();
    let gathered = in_turn(&streams);
    for (name, limit, batches) in [
        ("sort", None, &input),
        ("sort_top_100", Some(100), &input),
        ("sort_sorted_runs", None, &sorted_runs),
        ("sort_gather_3_streams", None, &gathered),
    ] {
        g.bench_function(name, |b| {
            b.iter_batched(
                || batches.clone(),
                |batches| black_box(run(&mut sort_op(limit), 0, batches)),
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
    bench_gathered_item_sort(c);
    bench_windows(c, &input);
}

/// Windows over the 1,000,000 rows, partitioned by the group key (10,000 partitions) and
/// ordered by id: a running SUM (the default frame), a sliding MIN over 201 rows (a segment
/// tree), and the top 3 rows of each partition by value.
fn bench_windows(c: &mut Criterion, input: &[Batch]) {
    let mut g = c.benchmark_group("windows");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(5))
        .throughput(Throughput::Elements(ROWS as u64));
    let key = |col: usize, descending: bool| SortKey {
        expr: Expr::col(col),
        descending,
        nulls_first: false,
    };
    let function = |func: AggFunc, frame: WindowFrame| WindowExpr {
        func: WindowFunc::Aggregate(func),
        args: vec![Expr::col(2)],
        output_type: DataType::Float64,
        frame,
    };
    let sliding = WindowFrame {
        units: FrameUnits::Rows,
        start: FrameBound::Preceding(Expr::lit(100)),
        end: FrameBound::Following(Expr::lit(100)),
        exclude: FrameExclude::NoOthers,
    };
    let row_number = WindowExpr {
        func: WindowFunc::RowNumber,
        args: vec![],
        output_type: DataType::Int64,
        frame: WindowFrame::default(),
    };
    for (name, order, f, keep) in [
        (
            "window_running_sum",
            key(0, false),
            function(AggFunc::Sum, WindowFrame::default()),
            None,
        ),
        (
            "window_sliding_min_201",
            key(0, false),
            function(AggFunc::Min, sliding.clone()),
            None,
        ),
        ("window_top_3", key(2, true), row_number.clone(), Some(3)),
    ] {
        g.bench_function(name, |b| {
            b.iter_batched(
                || input.to_vec(),
                |batches| {
                    let mut op = WindowOp::new(
                        vec![Expr::col(1)],
                        vec![order.clone()],
                        vec![f.clone()],
                        keep,
                        ctx(),
                        Reservation::unbounded(),
                    );
                    black_box(run(&mut op, 0, batches))
                },
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

/// The initiator's sort of `SELECT name, fld FROM Item ORDER BY fld DESC` on three nodes:
/// 100,000 rows with unique keys spread at random over three streams, each sorted, their
/// batches interleaved in turn.
fn bench_gathered_item_sort(c: &mut Criterion) {
    const ITEMS: usize = 100_000;
    let mut rng = StdRng::seed_from_u64(7);
    let mut streams: Vec<Vec<i64>> = vec![Vec::new(); 3];
    for id in 0..ITEMS as i64 {
        streams[rng.random_range(0..3usize)].push(id);
    }
    let batches: Vec<Vec<Batch>> = streams
        .into_iter()
        .map(|mut ids| {
            ids.reverse();
            let names: Vec<String> = ids.iter().map(|i| format!("name{i}")).collect();
            Batch::try_new(vec![Column::from_strs(&names), Column::from_i64(ids)])
                .expect("equal lengths")
                .split(DEFAULT_BATCH_SIZE)
        })
        .collect();
    let gathered = in_turn(&batches);
    let mut g = c.benchmark_group("kernels_100k");
    g.sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Elements(ITEMS as u64));
    g.bench_function("sort_gathered_item", |b| {
        b.iter_batched(
            || gathered.clone(),
            |batches| {
                let key = SortKey {
                    expr: Expr::col(1),
                    descending: true,
                    nulls_first: false,
                };
                let mut op = SortOp::new(vec![key], None, ctx(), Reservation::unbounded());
                black_box(run(&mut op, 0, batches))
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

/// A partition taking writes as a node commits them: each batch checked at prepare, then
/// inserted at commit (100 batches of 100 rows with BIGINT keys).
fn bench_partition_writes(c: &mut Criterion) {
    use weir_operators::storage::PartitionData;
    use weir_operators::{Field, Schema};
    let schema = Schema::new(vec![
        Field::new("id", DataType::Int64),
        Field::new("v", DataType::Int64),
    ]);
    let batches: Vec<Batch> = (0..100i64)
        .map(|b| {
            Batch::try_new(vec![
                Column::from_i64((b * 100..b * 100 + 100).collect()),
                Column::from_i64((0..100).collect()),
            ])
            .unwrap()
        })
        .collect();
    let mut g = c.benchmark_group("partition");
    g.throughput(Throughput::Elements(10_000));
    g.bench_function("prepare_and_commit_10k_keyed_rows", |b| {
        b.iter(|| {
            let mut p = PartitionData::new(schema.clone(), &[0]);
            for batch in &batches {
                p.check_insert(batch).unwrap();
                p.insert(batch).unwrap();
            }
            black_box(p.num_rows())
        })
    });
    g.finish();
}

criterion_group!(benches, bench_kernels, bench_partition_writes);
criterion_main!(benches);
