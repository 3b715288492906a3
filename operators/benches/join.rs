//! Criterion benchmark of the hash join kernel's probe against a hand-written hashbrown loop
//! over the same columns, in one run so that the two figures are comparable.
//!
//! Build side: 100,000 rows `(k, v)` with unique shuffled `k`; probe side: 1,000,000 rows
//! `(k, v)` with `k` uniform over the build keys (every probe row matches once). Both
//! variants compute what `SELECT COUNT(*), SUM(probe.v + build.v) FROM probe JOIN build ON
//! probe.k = build.k` needs from the join: the kernel's output batches are consumed by summing
//! their value columns, the hand loop looks each probe key up and sums directly. The build
//! table is made once, outside the timing; throughput is in probe rows. Inputs come from a
//! seeded RNG and the probe side is split into default-size batches.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use hashbrown::HashMap;
use rand::{rngs::StdRng, seq::SliceRandom, RngExt, SeedableRng};
use std::hint::black_box;
use std::time::Duration;
use weir_operators::kernels::join::HashJoinOp;
use weir_operators::kernels::{drain, ExecContext, Operator};
use weir_operators::plan::JoinSide;
use weir_operators::{Batch, Column, Expr, Reservation, DEFAULT_BATCH_SIZE};

const BUILD: usize = 100_000;
const PROBE: usize = 1_000_000;

/// The two sides' columns: `(build keys, build values, probe keys, probe values)`.
struct Sides {
    build_k: Vec<i64>,
    build_v: Vec<i64>,
    probe_k: Vec<i64>,
    probe_v: Vec<i64>,
}

fn generate(seed: u64) -> Sides {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut build_k: Vec<i64> = (0..BUILD as i64).collect();
    build_k.shuffle(&mut rng);
    let build_v = (0..BUILD).map(|_| rng.random_range(0..1000i64)).collect();
    let probe_k = (0..PROBE)
        .map(|_| rng.random_range(0..BUILD as i64))
        .collect();
    let probe_v = (0..PROBE).map(|_| rng.random_range(0..1000i64)).collect();
    Sides {
        build_k,
        build_v,
        probe_k,
        probe_v,
    }
}

/// `(count, sum of probe.v + build.v)` over the join's output batches (probe columns first).
fn consume(out: &mut Vec<Batch>, acc: &mut (i64, i64)) {
    for b in out.drain(..) {
        let pv = b.column(1).as_i64().expect("probe v");
        let bv = b.column(3).as_i64().expect("build v");
        acc.0 += b.num_rows() as i64;
        acc.1 += pv.iter().zip(bv).map(|(a, b)| a + b).sum::<i64>();
    }
}

/// Probes `op` (build side already fed) with `batches`.
fn kernel_probe(op: &mut HashJoinOp, batches: Vec<Batch>) -> (i64, i64) {
    let mut out = Vec::new();
    let mut acc = (0, 0);
    for b in batches {
        op.push(0, b).expect("probe");
        drain(op, &mut out).expect("pull");
        consume(&mut out, &mut acc);
    }
    acc
}

/// The hand-written join: key → build row in a hashbrown map, one lookup per probe row.
fn hand_probe(map: &HashMap<i64, u32>, s: &Sides) -> (i64, i64) {
    let (mut count, mut sum) = (0i64, 0i64);
    for (k, v) in s.probe_k.iter().zip(&s.probe_v) {
        if let Some(&row) = map.get(k) {
            count += 1;
            sum += v + s.build_v[row as usize];
        }
    }
    (count, sum)
}

fn bench_join(c: &mut Criterion) {
    let s = generate(42);
    let build = Batch::try_new(vec![
        Column::from_i64(s.build_k.clone()),
        Column::from_i64(s.build_v.clone()),
    ])
    .expect("build batch")
    .split(DEFAULT_BATCH_SIZE);
    let probe = Batch::try_new(vec![
        Column::from_i64(s.probe_k.clone()),
        Column::from_i64(s.probe_v.clone()),
    ])
    .expect("probe batch")
    .split(DEFAULT_BATCH_SIZE);

    let mut op = HashJoinOp::new(
        vec![Expr::col(0)],
        vec![Expr::col(0)],
        JoinSide::Right,
        ExecContext::new(vec![]),
        Reservation::unbounded(),
    );
    for b in build {
        op.push(1, b).expect("build");
    }
    op.finish(1).expect("finish build");
    let map: HashMap<i64, u32> = s
        .build_k
        .iter()
        .enumerate()
        .map(|(row, &k)| (k, row as u32))
        .collect();
    // Both compute the same answer before either is timed.
    let want = hand_probe(&map, &s);
    assert_eq!(kernel_probe(&mut op, probe.clone()), want);
    assert_eq!(want.0, PROBE as i64);

    let mut g = c.benchmark_group("join");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Elements(PROBE as u64));
    g.bench_function("kernel_probe", |b| {
        b.iter_batched(
            || probe.clone(),
            |batches| black_box(kernel_probe(&mut op, batches)),
            BatchSize::PerIteration,
        )
    });
    g.bench_function("hand_probe", |b| b.iter(|| black_box(hand_probe(&map, &s))));
    g.finish();
}

criterion_group!(benches, bench_join);
criterion_main!(benches);
