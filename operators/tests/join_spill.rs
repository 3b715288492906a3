//! The hash join past its memory: refused memory with a spill space, it partitions both sides
//! to disk and joins partition by partition (a grace hash join). Every join type, both build
//! sides, NULL keys, duplicates and a residual filter give the rows of the same join on an
//! unbounded pool; a deeper recursion, probe batches refused memory, probe batches fed before
//! the build side, the deep-level failure, the disk quota; and every file and byte of memory
//! returned once the join is dropped.

use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use std::sync::Arc;
use weir_operators::kernels::join::{HashJoinOp, JoinSpec};
use weir_operators::kernels::{drain, ExecContext, Operator};
use weir_operators::plan::{JoinSide, JoinType};
use weir_operators::spill::{SpillCounts, SpillSpace};
use weir_operators::{
    Batch, BinaryOp, DataType, Error, Expr, MemoryPool, Reservation, UnboundedPool, Value,
};

type Row = Vec<Value>;

/// Left rows are `(k, v)`: INT key, INT value.
const LEFT_TYPES: [DataType; 2] = [DataType::Int64, DataType::Int64];
/// Right rows are `(s, k, w)`: TEXT, INT key, INT value.
const RIGHT_TYPES: [DataType; 3] = [DataType::Utf8, DataType::Int64, DataType::Int64];

const ALL_TYPES: [JoinType; 7] = [
    JoinType::Inner,
    JoinType::Left,
    JoinType::Right,
    JoinType::Full,
    JoinType::Semi,
    JoinType::Anti { null_aware: false },
    JoinType::Anti { null_aware: true },
];

const NOT_IN: JoinType = JoinType::Anti { null_aware: true };

/// The residual filter `l.v < r.w` over the concatenated row `(l.k, l.v, r.s, r.k, r.w)`.
fn v_lt_w() -> Expr {
    Expr::col(1).binary(BinaryOp::Lt, Expr::col(4))
}

fn spec(jt: JoinType, build: JoinSide, filtered: bool) -> JoinSpec {
    JoinSpec::new(jt, build)
        .with_filter(filtered.then(v_lt_w))
        .with_types(LEFT_TYPES.to_vec(), RIGHT_TYPES.to_vec())
}

/// How the join is fed.
#[derive(Debug, Clone, Copy)]
struct Feed {
    /// Rows per pushed input batch.
    chunk: usize,
    /// Rows per output batch.
    batch_size: usize,
    /// The probe side is pushed (and ended) before the build side.
    probe_first: bool,
    /// After its first chunk, the rest of the probe side comes in one batch.
    probe_rest: bool,
}

const FEED: Feed = Feed {
    chunk: 100,
    batch_size: 64,
    probe_first: false,
    probe_rest: false,
};

fn join(
    spec: JoinSpec,
    batch_size: usize,
    pool: &Arc<UnboundedPool>,
    space: Option<&Arc<SpillSpace>>,
) -> HashJoinOp {
    let mut ctx = ExecContext::new(vec![]);
    ctx.batch_size = batch_size;
    if let Some(space) = space {
        ctx = ctx.with_spill(space.clone());
    }
    HashJoinOp::with_spec(
        vec![Expr::col(0)],
        vec![Expr::col(1)],
        spec,
        ctx,
        Reservation::new(pool.clone() as Arc<dyn MemoryPool>),
    )
    .expect("valid hash join")
}

/// Feeds both sides as `feed` says, pulling after every push and finish, and returns the
/// output rows sorted; checks the output batches' sizes and types.
fn run(
    op: &mut HashJoinOp,
    left: &[Row],
    right: &[Row],
    feed: Feed,
    jt: JoinType,
) -> Result<Vec<Row>, Error> {
    let lb = Batch::from_rows(&LEFT_TYPES, left).unwrap();
    let rb = Batch::from_rows(&RIGHT_TYPES, right).unwrap();
    let build = op.first_port();
    let ports = if feed.probe_first {
        [1 - build, build]
    } else {
        [build, 1 - build]
    };
    let mut out = Vec::new();
    for port in ports {
        let b = if port == 0 { &lb } else { &rb };
        let mut start = 0;
        while start < b.num_rows() {
            let rest = feed.probe_rest && port != build && start > 0;
            let len = if rest { b.num_rows() } else { feed.chunk }.min(b.num_rows() - start);
            op.push(port, b.slice(start, len))?;
            drain(op, &mut out)?;
            start += len;
        }
        op.finish(port)?;
        drain(op, &mut out)?;
    }
    assert!(!op.has_output());
    let width = if jt.left_only() { 2 } else { 5 };
    let types: Vec<DataType> = LEFT_TYPES
        .iter()
        .chain(&RIGHT_TYPES)
        .copied()
        .take(width)
        .collect();
    for b in &out {
        assert!(
            !b.is_empty() && b.num_rows() <= feed.batch_size,
            "{} rows",
            b.num_rows()
        );
        assert_eq!(b.types(), types);
    }
    let mut rows: Vec<Row> = out.iter().flat_map(|b| b.rows()).collect();
    rows.sort_by_key(|r| format!("{r:?}"));
    Ok(rows)
}

fn l(k: Option<i64>, v: i64) -> Row {
    vec![Value::from(k), Value::from(v)]
}

fn r(s: &str, k: Option<i64>, w: i64) -> Row {
    vec![Value::from(s), Value::from(k), Value::from(w)]
}

/// `n` rows per side with keys in `0..keys` (so duplicates), every `null_every`-th key NULL
/// (none when 0), values that make the residual filter pass about half the time.
fn sides(n: usize, keys: i64, null_every: usize) -> (Vec<Row>, Vec<Row>) {
    let key = |i: usize, salt: usize| {
        if null_every > 0 && i % null_every == salt % null_every {
            None
        } else {
            Some(((i * 7 + salt) as i64) % keys)
        }
    };
    let left = (0..n).map(|i| l(key(i, 1), (i % 10) as i64)).collect();
    let right = (0..n)
        .map(|i| r(&format!("right row {i}"), key(i, 3), ((i * 3) % 10) as i64))
        .collect();
    (left, right)
}

/// What the join's build side takes in memory, unspilled: the peak of the same join on an
/// unbounded pool.
fn unspilled(
    jt: JoinType,
    build: JoinSide,
    filtered: bool,
    left: &[Row],
    right: &[Row],
    feed: Feed,
) -> (Vec<Row>, usize) {
    let pool = UnboundedPool::new();
    let mut op = join(spec(jt, build, filtered), feed.batch_size, &pool, None);
    let rows = run(&mut op, left, right, feed, jt).unwrap();
    (rows, pool.peak())
}

/// Runs the join with a pool of `limit` bytes spilling into a fresh space, checks that it
/// spilled (`must_spill`) and left nothing behind, and returns its rows and what it spilled.
#[allow(clippy::too_many_arguments)]
fn spilled(
    jt: JoinType,
    build: JoinSide,
    filtered: bool,
    left: &[Row],
    right: &[Row],
    feed: Feed,
    limit: usize,
    must_spill: bool,
) -> (Vec<Row>, SpillCounts) {
    let space = SpillSpace::temporary("join test", 1 << 30).unwrap();
    let pool = UnboundedPool::with_limit(limit);
    let mut op = join(
        spec(jt, build, filtered),
        feed.batch_size,
        &pool,
        Some(&space),
    );
    let what = format!("{jt:?} build {build:?} filtered {filtered} {feed:?} limit {limit}");
    let rows = run(&mut op, left, right, feed, jt).unwrap_or_else(|e| panic!("{what}: {e}"));
    let counts = space.stats().snapshot();
    if must_spill {
        assert_eq!(counts.spills, 1, "{what}: one spill of the operator");
    }
    drop(op);
    assert_eq!(pool.used(), 0, "{what}");
    assert_eq!(space.used(), 0, "{what}");
    assert_eq!(std::fs::read_dir(space.dir()).unwrap().count(), 0, "{what}");
    (rows, counts)
}

/// The spilling join of every type, both build sides, with and without the filter, gives the
/// unbounded join's rows, under a pool of 1/`divisor` of the unspilled peak; returns what
/// each spilled.
fn check_all(
    left: &[Row],
    right: &[Row],
    feed: Feed,
    divisor: usize,
) -> Vec<(JoinType, JoinSide, SpillCounts)> {
    let mut spills = Vec::new();
    for jt in ALL_TYPES {
        for filtered in [false, true] {
            if jt == NOT_IN && filtered {
                continue;
            }
            for build in [JoinSide::Left, JoinSide::Right] {
                let (want, peak) = unspilled(jt, build, filtered, left, right, feed);
                let (got, counts) =
                    spilled(jt, build, filtered, left, right, feed, peak / divisor, true);
                spills.push((jt, build, counts));
                assert_eq!(
                    got.len(),
                    want.len(),
                    "{jt:?} build {build:?} filtered {filtered}"
                );
                assert_eq!(got, want, "{jt:?} build {build:?} filtered {filtered}");
            }
        }
    }
    spills
}

#[test]
fn every_join_type_spills_and_gives_the_same_rows() {
    let (left, right) = sides(3000, 400, 0);
    check_all(&left, &right, FEED, 3);
}

#[test]
fn a_refused_join_keeps_a_quarter_of_its_partitions_in_memory() {
    // Hybrid hashing: of the 16 partitions per side, the first four are joined in memory as
    // the rows come; only the other twelve of each side reach the disk.
    let (left, right) = sides(3000, 400, 0);
    for jt in [JoinType::Inner, JoinType::Full, JoinType::Semi] {
        for build in [JoinSide::Left, JoinSide::Right] {
            let (want, peak) = unspilled(jt, build, false, &left, &right, FEED);
            let (got, counts) = spilled(jt, build, false, &left, &right, FEED, peak / 2, true);
            assert_eq!(got, want, "{jt:?} build {build:?}");
            assert!(
                (1..=24).contains(&counts.files),
                "{jt:?} build {build:?}: {} files",
                counts.files
            );
        }
    }
}

#[test]
fn null_keys_on_both_sides_spill_apart() {
    // Every 5th key NULL, on both sides: a NULL right key blocks the `NOT IN` join.
    let (left, right) = sides(3000, 400, 5);
    check_all(&left, &right, FEED, 3);
    // NULL left keys only: `NOT IN` drops them (the right side is not empty).
    let (left, _) = sides(3000, 400, 5);
    let (_, right) = sides(3000, 400, 0);
    check_all(&left, &right, FEED, 3);
}

#[test]
fn an_empty_side_spills_too() {
    // The other side is built, and spills. With an empty right side, `NOT IN` outputs every
    // left row, NULL keys too.
    let (left, right) = sides(3000, 400, 4);
    for jt in ALL_TYPES {
        let (want, peak) = unspilled(jt, JoinSide::Left, false, &left, &[], FEED);
        let (got, _) = spilled(jt, JoinSide::Left, false, &left, &[], FEED, peak / 3, true);
        assert_eq!(got, want, "{jt:?} empty right");
        let (want, peak) = unspilled(jt, JoinSide::Right, false, &[], &right, FEED);
        let (got, _) = spilled(
            jt,
            JoinSide::Right,
            false,
            &[],
            &right,
            FEED,
            peak / 3,
            true,
        );
        assert_eq!(got, want, "{jt:?} empty left");
    }
}

#[test]
fn a_partition_too_big_spills_again_at_the_next_level() {
    // A pool of 1/60 of the build side: a first-level partition (1/16) does not fit.
    let (left, right) = sides(6000, 3000, 7);
    let feed = Feed {
        chunk: 50,
        batch_size: 100,
        probe_first: false,
        probe_rest: false,
    };
    for (jt, build, counts) in check_all(&left, &right, feed, 60) {
        // One level writes at most 16 partitions per side and a NULL-key file per side.
        if jt != NOT_IN {
            assert!(counts.files > 34, "{jt:?} build {build:?}: {counts:?}");
        }
    }
}

#[test]
fn probe_batches_fed_first_are_spilled_with_the_build_side() {
    let (left, right) = sides(2000, 300, 6);
    let feed = Feed {
        chunk: 70,
        batch_size: 50,
        probe_first: true,
        probe_rest: false,
    };
    check_all(&left, &right, feed, 3);
}

#[test]
fn a_probe_batch_refused_memory_spills_the_built_table() {
    // A small build side that fits, and a probe side too big to join next to it: whole, or
    // after a first batch that fits (then the build rows' match flags go along).
    // (No NULL right key: `NOT IN` would not even probe.)
    let (small, _) = sides(300, 300, 9);
    let (_, big) = sides(4000, 300, 0);
    let (big_left, _) = sides(4000, 300, 9);
    let (_, small_right) = sides(300, 300, 0);
    for probe_rest in [false, true] {
        let feed = Feed {
            chunk: if probe_rest { 50 } else { 4000 },
            batch_size: 128,
            probe_first: false,
            probe_rest,
        };
        for jt in ALL_TYPES {
            for build in [JoinSide::Left, JoinSide::Right] {
                let (left, right) = match build {
                    JoinSide::Left => (&small, &big),
                    JoinSide::Right => (&big_left, &small_right),
                };
                let (want, _) = unspilled(jt, build, false, left, right, feed);
                let (build_rows, probe_rows) = match build {
                    JoinSide::Left => (left.as_slice(), &right[..50]),
                    JoinSide::Right => (&left[..50], right.as_slice()),
                };
                let (_, first_peak) = unspilled(jt, build, false, build_rows, probe_rows, feed);
                let (got, _) =
                    spilled(jt, build, false, left, right, feed, first_peak + 1000, true);
                assert_eq!(got, want, "{jt:?} build {build:?} {feed:?}");
            }
        }
    }
}

#[test]
fn rows_of_one_key_that_never_fit_fail_with_a_clear_error() {
    let left: Vec<Row> = (0..200).map(|i| l(Some(7), i)).collect();
    let right: Vec<Row> = (0..5000).map(|i| r("same key", Some(7), i)).collect();
    let space = SpillSpace::temporary("join test", 1 << 30).unwrap();
    let pool = UnboundedPool::with_limit(20_000);
    let mut op = join(
        spec(JoinType::Inner, JoinSide::Right, false),
        64,
        &pool,
        Some(&space),
    );
    let err = run(&mut op, &left, &right, FEED, JoinType::Inner).unwrap_err();
    assert!(matches!(err, Error::Unspillable(_)), "{err:?}");
    assert!(
        err.to_string()
            .contains("do not fit in memory even spilled"),
        "{err}"
    );
    drop(op);
    assert_eq!((pool.used(), space.used()), (0, 0));
    assert_eq!(std::fs::read_dir(space.dir()).unwrap().count(), 0);
}

#[test]
fn without_a_spill_space_a_refusal_is_still_an_error() {
    let (left, right) = sides(3000, 400, 0);
    let (_, peak) = unspilled(JoinType::Inner, JoinSide::Right, false, &left, &right, FEED);
    let pool = UnboundedPool::with_limit(peak / 3);
    let mut op = join(
        spec(JoinType::Inner, JoinSide::Right, false),
        64,
        &pool,
        None,
    );
    let err = run(&mut op, &left, &right, FEED, JoinType::Inner).unwrap_err();
    assert!(matches!(err, Error::Memory(_)), "{err:?}");
    drop(op);
    assert_eq!(pool.used(), 0);
}

#[test]
fn a_quota_too_small_is_a_quota_error_and_leaves_nothing() {
    let (left, right) = sides(3000, 400, 0);
    let (_, peak) = unspilled(JoinType::Full, JoinSide::Left, false, &left, &right, FEED);
    let space = SpillSpace::temporary("small disk", 4_000).unwrap();
    let pool = UnboundedPool::with_limit(peak / 3);
    let mut op = join(
        spec(JoinType::Full, JoinSide::Left, false),
        64,
        &pool,
        Some(&space),
    );
    let err = run(&mut op, &left, &right, FEED, JoinType::Full).unwrap_err();
    assert!(
        matches!(err, Error::SpillQuota { quota: 4_000, .. }),
        "{err:?}"
    );
    drop(op);
    assert_eq!((pool.used(), space.used()), (0, 0));
    assert_eq!(std::fs::read_dir(space.dir()).unwrap().count(), 0);
}

#[test]
fn a_join_dropped_while_spilled_removes_its_files() {
    let (left, right) = sides(3000, 400, 0);
    let (_, peak) = unspilled(JoinType::Left, JoinSide::Right, false, &left, &right, FEED);
    let space = SpillSpace::temporary("join test", 1 << 30).unwrap();
    let pool = UnboundedPool::with_limit(peak / 3);
    let mut op = join(
        spec(JoinType::Left, JoinSide::Right, false),
        64,
        &pool,
        Some(&space),
    );
    let lb = Batch::from_rows(&LEFT_TYPES, &left).unwrap();
    let rb = Batch::from_rows(&RIGHT_TYPES, &right).unwrap();
    op.push(1, rb).unwrap();
    op.finish(1).unwrap();
    op.push(0, lb).unwrap();
    op.finish(0).unwrap();
    // Cancelled halfway through the partitions' output.
    assert!(op.next_output().unwrap().is_some());
    assert!(space.used() > 0);
    assert_eq!(space.stats().snapshot().spills, 1);
    drop(op);
    assert_eq!((pool.used(), space.used()), (0, 0));
    assert_eq!(std::fs::read_dir(space.dir()).unwrap().count(), 0);
}

fn side_strategy() -> impl Strategy<Value = (Vec<Row>, Vec<Row>)> {
    (1i64..200, 0usize..800, 0usize..800).prop_flat_map(|(keys, nl, nr)| {
        let key = move || proptest::option::weighted(0.9, 0..keys);
        let left = proptest::collection::vec((key(), 0i64..10).prop_map(|(k, v)| l(k, v)), nl);
        let right = proptest::collection::vec(
            (key(), 0i64..10).prop_map(|(k, w)| r("some right text", k, w)),
            nr,
        );
        (left, right)
    })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 150,
        rng_seed: RngSeed::Fixed(0x5eed_5911),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn generated_spilling_joins_match_unbounded_ones(
        (left, right) in side_strategy(),
        jt in proptest::sample::select(ALL_TYPES.to_vec()),
        filtered in any::<bool>(),
        build_left in any::<bool>(),
        chunk in 1usize..200,
        batch_size in 1usize..100,
        probe_first in any::<bool>(),
        probe_rest in any::<bool>(),
        divisor in 2usize..12,
    ) {
        let filtered = filtered && jt != NOT_IN;
        let build = if build_left { JoinSide::Left } else { JoinSide::Right };
        let feed = Feed { chunk, batch_size, probe_first, probe_rest };
        let (want, peak) = unspilled(jt, build, filtered, &left, &right, feed);
        // Room at least for the rows of the most frequent key (else the join rightly fails).
        let key = |row: &Row, left: bool| match row[usize::from(!left)] {
            Value::Int(k) => Some(k),
            _ => None,
        };
        let mut counts = std::collections::HashMap::new();
        for row in if build_left { &left } else { &right } {
            *counts.entry(key(row, build_left)).or_insert(0) += 1;
        }
        let top = counts.into_iter().max_by_key(|(_, n)| *n).map(|(k, _)| k);
        let (lg, rg): (Vec<Row>, Vec<Row>) = (
            left.iter().filter(|r| Some(key(r, true)) == top).cloned().collect(),
            right.iter().filter(|r| Some(key(r, false)) == top).cloned().collect(),
        );
        let (_, group_peak) = unspilled(jt, build, filtered, &lg, &rg, feed);
        let limit = (peak / divisor).max(2 * group_peak + 4096);
        let (got, _) = spilled(jt, build, filtered, &left, &right, feed, limit, false);
        prop_assert_eq!(got, want);
    }
}

/// Pushes `lb` and `rb` in `chunk`-row batches, the build side first, and returns the sorted
/// output rows.
fn run_batches(
    op: &mut HashJoinOp,
    lb: &Batch,
    rb: &Batch,
    chunk: usize,
) -> Result<Vec<Row>, Error> {
    let build = op.first_port();
    let mut out = Vec::new();
    for port in [build, 1 - build] {
        let b = if port == 0 { lb } else { rb };
        for start in (0..b.num_rows()).step_by(chunk) {
            op.push(port, b.slice(start, chunk))?;
            drain(op, &mut out)?;
        }
        op.finish(port)?;
        drain(op, &mut out)?;
    }
    let mut rows: Vec<Row> = out.iter().flat_map(|b| b.rows()).collect();
    rows.sort_by_key(|r| format!("{r:?}"));
    Ok(rows)
}

#[test]
fn keys_of_different_types_meet_in_the_same_partition() {
    // FLOAT left keys (some not integral, some NULL) against INT right keys, on their own
    // and with a second key: the probe keys are converted to the build keys' types before
    // they are hashed, whichever side is built.
    let n = 3000;
    let fk: Vec<Value> = (0..n)
        .map(|i| match i % 11 {
            0 => Value::Null,
            1 => Value::Float(i as f64 + 0.5),
            _ => Value::Float((i % 500) as f64),
        })
        .collect();
    let lv: Vec<Value> = (0..n).map(|i| Value::Int(i % 3)).collect();
    let left: Vec<Row> = fk.into_iter().zip(lv).map(|(k, v)| vec![k, v]).collect();
    let lb = Batch::from_rows(&[DataType::Float64, DataType::Int64], &left).unwrap();
    let rb = Batch::from_rows(&RIGHT_TYPES, &sides(n as usize, 500, 13).1).unwrap();
    let keys: [(Vec<Expr>, Vec<Expr>); 2] = [
        (vec![Expr::col(0)], vec![Expr::col(1)]),
        (
            vec![Expr::col(0), Expr::col(1)],
            vec![Expr::col(1), Expr::col(2)],
        ),
    ];
    for (lk, rk) in keys {
        for jt in [JoinType::Inner, JoinType::Full, JoinType::Semi, NOT_IN] {
            if jt == NOT_IN && lk.len() > 1 {
                continue;
            }
            for build in [JoinSide::Left, JoinSide::Right] {
                let spec = JoinSpec::new(jt, build).with_types(
                    vec![DataType::Float64, DataType::Int64],
                    RIGHT_TYPES.to_vec(),
                );
                let make = |pool: &Arc<UnboundedPool>, space: Option<&Arc<SpillSpace>>| {
                    let mut ctx = ExecContext::new(vec![]);
                    ctx.batch_size = 100;
                    if let Some(s) = space {
                        ctx = ctx.with_spill(s.clone());
                    }
                    let res = Reservation::new(pool.clone() as Arc<dyn MemoryPool>);
                    HashJoinOp::with_spec(lk.clone(), rk.clone(), spec.clone(), ctx, res).unwrap()
                };
                let pool = UnboundedPool::new();
                let want = run_batches(&mut make(&pool, None), &lb, &rb, 100).unwrap();
                let space = SpillSpace::temporary("join test", 1 << 30).unwrap();
                let small = UnboundedPool::with_limit(pool.peak() / 4);
                let mut op = make(&small, Some(&space));
                let got = run_batches(&mut op, &lb, &rb, 100).unwrap();
                let what = format!("{jt:?} build {build:?} {} keys", lk.len());
                assert!(jt == NOT_IN || !want.is_empty(), "{what}");
                assert_eq!(got, want, "{what}");
                assert_eq!(space.stats().snapshot().spills, 1, "{what}");
                drop(op);
                assert_eq!((small.used(), space.used()), (0, 0), "{what}");
            }
        }
    }
}
