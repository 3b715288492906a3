//! Join kernels of every type against a row-at-a-time nested-loop reference: hash joins and
//! nested-loop joins, both build sides, with and without a residual filter, NULL keys, empty
//! sides, duplicate keys and tiny output batches; the null-aware anti join's `NOT IN` rules;
//! the single-row kernel; and memory accounting.

use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use std::sync::Arc;
use weir_operators::kernels::join::{HashJoinOp, JoinSpec, NestedLoopJoinOp};
use weir_operators::kernels::single_row::SingleRowOp;
use weir_operators::kernels::{create_operator, drain, ExecContext, Operator};
use weir_operators::plan::{JoinSide, JoinType};
use weir_operators::{
    Batch, BinaryOp, DataType, Error, Expr, PhysicalPlan, Reservation, Schema, UnboundedPool, Value,
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

/// The residual filter `l.v < r.w` over the concatenated row `(l.k, l.v, r.s, r.k, r.w)`.
fn v_lt_w() -> Expr {
    Expr::col(1).binary(BinaryOp::Lt, Expr::col(4))
}

/// The reference's view of [`v_lt_w`]: NULL is false.
fn ref_v_lt_w(l: &Row, r: &Row) -> bool {
    match (&l[1], &r[2]) {
        (Value::Int(v), Value::Int(w)) => v < w,
        _ => false,
    }
}

/// Whether the keys `l.k = r.k` match (NULL never does).
fn ref_keys(l: &Row, r: &Row) -> bool {
    !l[0].is_null() && l[0] == r[1]
}

/// The reference join: every left row against every right row.
fn reference(
    jt: JoinType,
    left: &[Row],
    right: &[Row],
    matches: &dyn Fn(&Row, &Row) -> bool,
) -> Vec<Row> {
    let nulls = |n: usize| vec![Value::Null; n];
    let mut out = Vec::new();
    if jt == (JoinType::Anti { null_aware: true }) {
        if right.iter().any(|r| r[1].is_null()) {
            return out;
        }
        for l in left {
            let keep = if l[0].is_null() {
                right.is_empty()
            } else {
                !right.iter().any(|r| matches(l, r))
            };
            if keep {
                out.push(l.clone());
            }
        }
        return out;
    }
    let mut right_hit = vec![false; right.len()];
    for l in left {
        let mut hit = false;
        for (j, r) in right.iter().enumerate() {
            if matches(l, r) {
                hit = true;
                right_hit[j] = true;
                if !jt.left_only() {
                    out.push(l.iter().chain(r).cloned().collect());
                }
            }
        }
        match jt {
            JoinType::Semi if hit => out.push(l.clone()),
            JoinType::Anti { .. } if !hit => out.push(l.clone()),
            JoinType::Left | JoinType::Full if !hit => {
                out.push(l.iter().cloned().chain(nulls(3)).collect())
            }
            _ => {}
        }
    }
    if matches!(jt, JoinType::Right | JoinType::Full) {
        for (r, hit) in right.iter().zip(right_hit) {
            if !hit {
                out.push(nulls(2).into_iter().chain(r.iter().cloned()).collect());
            }
        }
    }
    out
}

/// How the kernel is fed and pulled.
#[derive(Debug, Clone, Copy)]
struct Feed {
    /// Rows per pushed input batch.
    chunk: usize,
    /// Rows per output batch.
    batch_size: usize,
}

fn spec(jt: JoinType, build: JoinSide, filter: Option<Expr>) -> JoinSpec {
    JoinSpec::new(jt, build)
        .with_filter(filter)
        .with_types(LEFT_TYPES.to_vec(), RIGHT_TYPES.to_vec())
}

fn ctx(batch_size: usize) -> ExecContext {
    let mut c = ExecContext::new(vec![]);
    c.batch_size = batch_size;
    c
}

fn hash_join(spec: JoinSpec, batch_size: usize, reservation: Reservation) -> HashJoinOp {
    HashJoinOp::with_spec(
        vec![Expr::col(0)],
        vec![Expr::col(1)],
        spec,
        ctx(batch_size),
        reservation,
    )
    .expect("valid hash join")
}

/// Feeds the build port then the probe port in `feed.chunk`-row pieces (pulling after every
/// push and finish, as the runtime does) and returns the output rows; checks that every
/// output batch has 1..=batch_size rows, the output's column types, and that nothing is
/// output after the join reported [`Operator::is_done`].
fn run_join(
    op: &mut dyn Operator,
    left: &[Row],
    right: &[Row],
    feed: Feed,
    jt: JoinType,
) -> Vec<Row> {
    run_join_emitting(op, left, right, feed, jt, None)
}

/// [`run_join`] for a join that emits only the output columns at `output` (all when `None`).
fn run_join_emitting(
    op: &mut dyn Operator,
    left: &[Row],
    right: &[Row],
    feed: Feed,
    jt: JoinType,
    output: Option<&[usize]>,
) -> Vec<Row> {
    let lb = Batch::from_rows(&LEFT_TYPES, left).unwrap();
    let rb = Batch::from_rows(&RIGHT_TYPES, right).unwrap();
    let first = op.first_port();
    let mut out = Vec::new();
    let mut done_at = None;
    for port in [first, 1 - first] {
        let b = if port == 0 { &lb } else { &rb };
        let mut start = 0;
        while start < b.num_rows() {
            let len = feed.chunk.min(b.num_rows() - start);
            op.push(port, b.slice(start, len)).unwrap();
            drain(op, &mut out).unwrap();
            done_at = done_at.or(op.is_done().then_some(out.len()));
            start += len;
        }
        op.finish(port).unwrap();
        drain(op, &mut out).unwrap();
        done_at = done_at.or(op.is_done().then_some(out.len()));
    }
    assert!(!op.has_output());
    // Once a join says it is done (the runtime then cancels its inputs), nothing follows.
    if let Some(n) = done_at {
        assert_eq!(out.len(), n, "{jt:?} output after is_done");
    }
    let width = if jt.left_only() { 2 } else { 5 };
    let all_types: Vec<DataType> = LEFT_TYPES
        .iter()
        .chain(&RIGHT_TYPES)
        .copied()
        .take(width)
        .collect();
    let want_types: Vec<DataType> = match output {
        Some(cols) => cols.iter().map(|&c| all_types[c]).collect(),
        None => all_types,
    };
    for b in &out {
        assert!(
            !b.is_empty() && b.num_rows() <= feed.batch_size,
            "{} rows",
            b.num_rows()
        );
        assert_eq!(b.types(), want_types);
    }
    out.iter().flat_map(|b| b.rows()).collect()
}

fn sorted(mut rows: Vec<Row>) -> Vec<Row> {
    rows.sort_by_key(|r| format!("{r:?}"));
    rows
}

/// Checks the hash join of `jt` (keys `l.k = r.k`, optional `l.v < r.w`) against the
/// reference for both build sides.
fn check_hash(jt: JoinType, filtered: bool, left: &[Row], right: &[Row], feed: Feed) {
    if jt == (JoinType::Anti { null_aware: true }) && filtered {
        return;
    }
    let matches = |l: &Row, r: &Row| ref_keys(l, r) && (!filtered || ref_v_lt_w(l, r));
    let want = sorted(reference(jt, left, right, &matches));
    for build in [JoinSide::Left, JoinSide::Right] {
        let filter = filtered.then(v_lt_w);
        let mut op = hash_join(
            spec(jt, build, filter),
            feed.batch_size,
            Reservation::unbounded(),
        );
        let got = sorted(run_join(&mut op, left, right, feed, jt));
        assert_eq!(
            got, want,
            "{jt:?} build {build:?} filtered {filtered} {feed:?}"
        );
        // Emitting some of the output columns gives the same rows cut down to them.
        let selections: &[&[usize]] = if jt.left_only() {
            &[&[], &[1], &[0, 1]]
        } else {
            &[&[], &[1, 4], &[0, 2, 3], &[3]]
        };
        for &cols in selections {
            let mut op = hash_join(
                spec(jt, build, filtered.then(v_lt_w)).with_output(Some(cols.to_vec())),
                feed.batch_size,
                Reservation::unbounded(),
            );
            let got = sorted(run_join_emitting(
                &mut op,
                left,
                right,
                feed,
                jt,
                Some(cols),
            ));
            let cut = want
                .iter()
                .map(|row| cols.iter().map(|&c| row[c].clone()).collect())
                .collect();
            assert_eq!(
                got,
                sorted(cut),
                "{jt:?} build {build:?} filtered {filtered} {feed:?} emitting {cols:?}"
            );
        }
    }
}

/// Checks the nested-loop join of `jt` with predicate `l.v < r.w` (or none: a cross join)
/// against the reference for both build sides.
fn check_nested(jt: JoinType, filtered: bool, left: &[Row], right: &[Row], feed: Feed) {
    let matches = |l: &Row, r: &Row| !filtered || ref_v_lt_w(l, r);
    let want = sorted(reference(jt, left, right, &matches));
    for build in [JoinSide::Left, JoinSide::Right] {
        let filter = filtered.then(v_lt_w);
        let mut op = NestedLoopJoinOp::new(
            spec(jt, build, filter),
            ctx(feed.batch_size),
            Reservation::unbounded(),
        )
        .unwrap();
        let got = sorted(run_join(&mut op, left, right, feed, jt));
        assert_eq!(
            got, want,
            "{jt:?} build {build:?} filtered {filtered} {feed:?}"
        );
    }
}

fn l(k: Option<i64>, v: Option<i64>) -> Row {
    vec![Value::from(k), Value::from(v)]
}

fn r(s: &str, k: Option<i64>, w: Option<i64>) -> Row {
    vec![Value::from(s), Value::from(k), Value::from(w)]
}

/// Duplicate keys on both sides, NULL keys and NULL filter values on both sides.
fn sample() -> (Vec<Row>, Vec<Row>) {
    let left = vec![
        l(Some(1), Some(5)),
        l(Some(2), Some(1)),
        l(Some(2), Some(9)),
        l(None, Some(0)),
        l(Some(3), None),
        l(Some(4), Some(4)),
        l(Some(2), Some(3)),
    ];
    let right = vec![
        r("a", Some(2), Some(4)),
        r("b", Some(2), Some(8)),
        r("c", None, Some(9)),
        r("d", Some(3), Some(7)),
        r("e", Some(5), Some(1)),
        r("f", Some(1), None),
        r("g", Some(2), Some(2)),
    ];
    (left, right)
}

const FEEDS: [Feed; 4] = [
    Feed {
        chunk: 100,
        batch_size: 1024,
    },
    Feed {
        chunk: 3,
        batch_size: 3,
    },
    Feed {
        chunk: 1,
        batch_size: 1,
    },
    Feed {
        chunk: 2,
        batch_size: 5,
    },
];

#[test]
fn hash_join_every_type_matches_reference() {
    let (left, right) = sample();
    let no_null_right: Vec<Row> = right.iter().filter(|r| !r[1].is_null()).cloned().collect();
    for jt in ALL_TYPES {
        for filtered in [false, true] {
            for feed in FEEDS {
                check_hash(jt, filtered, &left, &right, feed);
                check_hash(jt, filtered, &left, &no_null_right, feed);
                check_hash(jt, filtered, &left, &[], feed);
                check_hash(jt, filtered, &[], &right, feed);
                check_hash(jt, filtered, &[], &[], feed);
            }
        }
    }
}

#[test]
fn nested_loop_join_every_type_matches_reference() {
    let (left, right) = sample();
    for jt in &ALL_TYPES[..6] {
        for filtered in [false, true] {
            for feed in FEEDS {
                check_nested(*jt, filtered, &left, &right, feed);
                check_nested(*jt, filtered, &left, &[], feed);
                check_nested(*jt, filtered, &[], &right, feed);
                check_nested(*jt, filtered, &[], &[], feed);
            }
        }
    }
}

#[test]
fn left_join_pads_unmatched_rows_with_nulls() {
    let (left, right) = sample();
    for build in [JoinSide::Left, JoinSide::Right] {
        let mut op = hash_join(
            spec(JoinType::Left, build, None),
            2,
            Reservation::unbounded(),
        );
        let got = sorted(run_join(
            &mut op,
            &left,
            &right,
            Feed {
                chunk: 2,
                batch_size: 2,
            },
            JoinType::Left,
        ));
        // Key 4 and the NULL key have no match.
        assert!(got.contains(&vec![
            Value::Int(4),
            Value::Int(4),
            Value::Null,
            Value::Null,
            Value::Null
        ]));
        assert!(got.contains(&vec![
            Value::Null,
            Value::Int(0),
            Value::Null,
            Value::Null,
            Value::Null
        ]));
        // Key 2: three left rows × three right rows.
        assert_eq!(got.iter().filter(|r| r[0] == Value::Int(2)).count(), 9);
        // Keys 1 and 3 once each, and the two unmatched rows.
        assert_eq!(got.len(), 9 + 1 + 1 + 2);
    }
}

#[test]
fn null_aware_anti_join_follows_not_in() {
    let na = JoinType::Anti { null_aware: true };
    let left = vec![l(Some(1), Some(0)), l(None, Some(1)), l(Some(7), Some(2))];
    let feed = Feed {
        chunk: 1,
        batch_size: 2,
    };
    for build in [JoinSide::Left, JoinSide::Right] {
        let run = |right: &[Row]| {
            let mut op = hash_join(spec(na, build, None), 2, Reservation::unbounded());
            sorted(run_join(&mut op, &left, right, feed, na))
        };
        // A NULL on the right: `k NOT IN (.., NULL)` is never true.
        assert_eq!(
            run(&[r("a", Some(1), None), r("b", None, None)]),
            Vec::<Row>::new()
        );
        // Empty right: every row, the NULL key too.
        assert_eq!(run(&[]), sorted(left.clone()));
        // Non-empty right without NULLs: the NULL key is unknown, so dropped.
        assert_eq!(
            run(&[r("a", Some(1), None), r("b", Some(5), None)]),
            vec![l(Some(7), Some(2))]
        );
        // The plain anti join keeps the NULL-key row.
        let mut op = hash_join(
            spec(JoinType::Anti { null_aware: false }, build, None),
            2,
            Reservation::unbounded(),
        );
        let plain = sorted(run_join(
            &mut op,
            &left,
            &[r("a", Some(1), None), r("b", None, None)],
            feed,
            na,
        ));
        assert_eq!(plain, sorted(vec![l(None, Some(1)), l(Some(7), Some(2))]));
    }
}

#[test]
fn nested_loop_cross_join_counts_and_theta_join() {
    let left: Vec<Row> = (0..7).map(|i| l(Some(i), Some(i))).collect();
    let right: Vec<Row> = (0..5).map(|i| r("x", Some(i), Some(i))).collect();
    for build in [JoinSide::Left, JoinSide::Right] {
        let mut op = NestedLoopJoinOp::new(
            spec(JoinType::Inner, build, None),
            ctx(4),
            Reservation::unbounded(),
        )
        .unwrap();
        let got = run_join(
            &mut op,
            &left,
            &right,
            Feed {
                chunk: 3,
                batch_size: 4,
            },
            JoinType::Inner,
        );
        assert_eq!(got.len(), 7 * 5);
        // l.v < r.w: pairs (i, j) with i < j among 0..7 × 0..5.
        let mut op = NestedLoopJoinOp::new(
            spec(JoinType::Inner, build, Some(v_lt_w())),
            ctx(4),
            Reservation::unbounded(),
        )
        .unwrap();
        let got = run_join(
            &mut op,
            &left,
            &right,
            Feed {
                chunk: 3,
                batch_size: 4,
            },
            JoinType::Inner,
        );
        assert_eq!(got.len(), 4 + 3 + 2 + 1);
        assert!(got
            .iter()
            .all(|row| matches!((&row[1], &row[4]), (Value::Int(v), Value::Int(w)) if v < w)));
    }
    let na = spec(JoinType::Anti { null_aware: true }, JoinSide::Right, None);
    assert!(matches!(
        NestedLoopJoinOp::new(na, ctx(4), Reservation::unbounded()),
        Err(Error::Internal(_))
    ));
}

#[test]
fn join_plans_build_their_kernels() {
    let input = || {
        Box::new(PhysicalPlan::Values {
            schema: Schema::new(vec![]),
            rows: vec![],
        })
    };
    let hj = PhysicalPlan::HashJoin {
        left: input(),
        right: input(),
        left_keys: vec![Expr::col(0)],
        right_keys: vec![Expr::col(1)],
        join_type: JoinType::Full,
        filter: Some(v_lt_w()),
        build: JoinSide::Left,
        left_types: LEFT_TYPES.to_vec(),
        right_types: RIGHT_TYPES.to_vec(),
        output: None,
    };
    let nl = PhysicalPlan::NestedLoopJoin {
        left: input(),
        right: input(),
        join_type: JoinType::Left,
        filter: Some(v_lt_w()),
        build: JoinSide::Right,
        left_types: LEFT_TYPES.to_vec(),
        right_types: RIGHT_TYPES.to_vec(),
    };
    let (left, right) = sample();
    let feed = Feed {
        chunk: 3,
        batch_size: 3,
    };
    for (plan, jt, keyed) in [(hj, JoinType::Full, true), (nl, JoinType::Left, false)] {
        assert_eq!(plan.children().len(), 2);
        assert!(plan.holds_build_side());
        let mut op = create_operator(&plan, &ctx(3), Reservation::unbounded()).unwrap();
        assert_eq!(op.name(), plan.name());
        let got = sorted(run_join(op.as_mut(), &left, &right, feed, jt));
        let matches = |l: &Row, r: &Row| (!keyed || ref_keys(l, r)) && ref_v_lt_w(l, r);
        assert_eq!(got, sorted(reference(jt, &left, &right, &matches)));
    }
    let single = PhysicalPlan::SingleRow {
        input: input(),
        types: vec![DataType::Int64],
    };
    assert_eq!(single.name(), "SingleRow");
    let mut op = create_operator(&single, &ctx(3), Reservation::unbounded()).unwrap();
    op.finish(0).unwrap();
    assert_eq!(
        op.next_output().unwrap().unwrap().rows(),
        vec![vec![Value::Null]]
    );
}

#[test]
fn single_row_outputs_one_row_or_fails() {
    let types = vec![DataType::Int64];
    let run = |batches: Vec<Batch>| -> Result<Vec<Row>, Error> {
        let mut op = SingleRowOp::new(types.clone());
        let mut out = Vec::new();
        for b in batches {
            op.push(0, b)?;
            drain(&mut op, &mut out)?;
        }
        op.finish(0)?;
        drain(&mut op, &mut out)?;
        Ok(out.iter().flat_map(|b| b.rows()).collect())
    };
    let one = |v: i64| Batch::from_rows(&types, &[vec![Value::Int(v)]]).unwrap();
    assert_eq!(run(vec![]).unwrap(), vec![vec![Value::Null]]);
    assert_eq!(
        run(vec![Batch::empty(&types)]).unwrap(),
        vec![vec![Value::Null]]
    );
    assert_eq!(
        run(vec![Batch::empty(&types), one(4)]).unwrap(),
        vec![vec![Value::Int(4)]]
    );
    let e = run(vec![one(1), one(2)]).unwrap_err();
    assert_eq!(e.to_string(), "scalar subquery returned more than one row");
    let two = Batch::from_rows(&types, &[vec![Value::Int(1)], vec![Value::Int(2)]]).unwrap();
    assert!(matches!(run(vec![two]), Err(Error::Cardinality(_))));
}

/// Rows whose build side needs more memory than the pool has fail with `Error::Memory`, and
/// a join's memory goes back to the pool when it is dropped, whatever its type.
#[test]
fn joins_account_memory_and_release_it() {
    let build: Vec<Row> = (0..2000)
        .map(|i| r("some text", Some(i % 50), Some(i)))
        .collect();
    let probe: Vec<Row> = (0..500).map(|i| l(Some(i % 70), Some(i))).collect();
    let rb = Batch::from_rows(&RIGHT_TYPES, &build).unwrap();
    for jt in ALL_TYPES {
        for nested in [false, true] {
            if nested && jt == (JoinType::Anti { null_aware: true }) {
                continue;
            }
            let make = |pool: &Arc<UnboundedPool>| -> Box<dyn Operator> {
                let na = jt == (JoinType::Anti { null_aware: true });
                let s = spec(jt, JoinSide::Right, (!na).then(v_lt_w));
                let res = Reservation::new(pool.clone());
                if nested {
                    Box::new(NestedLoopJoinOp::new(s, ctx(64), res).unwrap())
                } else {
                    Box::new(hash_join(s, 64, res))
                }
            };
            // A small limit refuses the build side.
            let small = UnboundedPool::with_limit(rb.memory_size() / 2);
            let mut op = make(&small);
            let err = op
                .push(1, rb.slice(0, 1000))
                .and_then(|_| op.push(1, rb.slice(1000, 1000)));
            let err = err.and_then(|_| op.finish(1));
            assert!(
                matches!(err, Err(Error::Memory(_))),
                "{jt:?} nested {nested}: {err:?}"
            );
            drop(op);
            assert_eq!(small.used(), 0);
            // Unlimited: it runs, holds memory while running, and returns it all.
            let pool = UnboundedPool::new();
            let mut op = make(&pool);
            let out = run_join(
                op.as_mut(),
                &probe,
                &build,
                Feed {
                    chunk: 100,
                    batch_size: 64,
                },
                jt,
            );
            assert!(pool.peak() >= rb.memory_size(), "{jt:?}");
            assert!(op.memory_size() > 0);
            drop(op);
            assert_eq!(pool.used(), 0, "{jt:?} nested {nested}");
            let _ = out;
        }
    }
}

fn row_strategy() -> impl Strategy<Value = (Vec<Row>, Vec<Row>)> {
    let key = || proptest::option::weighted(0.85, 0i64..6);
    let val = || proptest::option::weighted(0.9, 0i64..10);
    let left = proptest::collection::vec((key(), val()).prop_map(|(k, v)| l(k, v)), 0..25);
    let right = proptest::collection::vec(
        ("[a-c]{0,2}", key(), val()).prop_map(|(s, k, w)| r(&s, k, w)),
        0..25,
    );
    (left, right)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 200,
        rng_seed: RngSeed::Fixed(0x5eed_1010),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn generated_joins_match_reference(
        (left, right) in row_strategy(),
        jt in proptest::sample::select(ALL_TYPES.to_vec()),
        filtered in any::<bool>(),
        chunk in 1usize..9,
        batch_size in 1usize..7,
    ) {
        let feed = Feed { chunk, batch_size };
        check_hash(jt, filtered, &left, &right, feed);
        if jt != (JoinType::Anti { null_aware: true }) {
            check_nested(jt, filtered, &left, &right, feed);
        }
    }
}

/// Probe batches that arrive before the build side ended wait and give the same rows.
#[test]
fn probe_batches_before_the_build_side_give_the_same_rows() {
    let (left, right) = sample();
    let lb = Batch::from_rows(&LEFT_TYPES, &left).unwrap();
    let rb = Batch::from_rows(&RIGHT_TYPES, &right).unwrap();
    for jt in ALL_TYPES {
        for nested in [false, true] {
            if nested && jt == (JoinType::Anti { null_aware: true }) {
                continue;
            }
            for build in [JoinSide::Left, JoinSide::Right] {
                let na = jt == (JoinType::Anti { null_aware: true });
                let s = spec(jt, build, (!na).then(v_lt_w));
                let mut op: Box<dyn Operator> = if nested {
                    Box::new(NestedLoopJoinOp::new(s, ctx(2), Reservation::unbounded()).unwrap())
                } else {
                    Box::new(hash_join(s, 2, Reservation::unbounded()))
                };
                let (bp, pp) = (op.first_port(), 1 - op.first_port());
                let (bb, pb) = if bp == 0 { (&lb, &rb) } else { (&rb, &lb) };
                let mut out = Vec::new();
                // Probe side first, in pieces, then the build side.
                for start in (0..pb.num_rows()).step_by(3) {
                    op.push(pp, pb.slice(start, 3.min(pb.num_rows() - start)))
                        .unwrap();
                    assert!(!op.has_output());
                }
                op.finish(pp).unwrap();
                op.push(bp, bb.clone()).unwrap();
                op.finish(bp).unwrap();
                drain(op.as_mut(), &mut out).unwrap();
                assert!(!op.has_output());
                let got = sorted(out.iter().flat_map(|b| b.rows()).collect());
                let matches =
                    |l: &Row, r: &Row| (nested || ref_keys(l, r)) && (na || ref_v_lt_w(l, r));
                let want = sorted(reference(jt, &left, &right, &matches));
                assert_eq!(got, want, "{jt:?} nested {nested} build {build:?}");
            }
        }
    }
}
