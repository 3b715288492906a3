//! Cluster-level properties of joins: random small tables with few distinct keys, duplicates
//! on both sides and NULL keys (which never match), on 1, 3 and 5 nodes, with batches of 16
//! rows so that a long probe side spans many credit windows. Counts, sums, grouped results and
//! (when small) the matched pairs must equal a nested-loop join of the generated rows,
//! compared without regard to order.
//!
//! The join exchange sends a row to join instance `hash(key) % nodes`; some cases pick keys
//! that all hash to one instance, so every other node gets no row of either side.
//!
//! Reproducible: proptest runs from a fixed seed (`PROPTEST_RNG_SEED=n` picks another,
//! `PROPTEST_CASES=n` runs more cases) and rows come from a seeded generator. Every query runs
//! under a watchdog of [`LIMIT`].

use crate::common;

use common::{sorted_rows, TestCluster};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use std::collections::BTreeMap;
use std::time::Duration;
use weir::operators::hashing::mix64;
use weir::{Cluster, DataType, Value};

/// How long one query may take: each answer takes well under a second.
const LIMIT: Duration = Duration::from_secs(5);

/// Query timeout of the cases' clusters: above [`LIMIT`], so a hang shows as a hang.
const TIMEOUT: Duration = Duration::from_secs(15);

/// Rows per batch: a probe side of a few thousand rows is hundreds of batches, many credit
/// windows (4 batches) long.
const BATCH: usize = 16;

/// Pairs are compared one by one only up to this many.
const MAX_PAIRS: usize = 3000;

/// Proptest's seed unless `PROPTEST_RNG_SEED` says otherwise.
const PROPTEST_SEED: u64 = 0x701_5EED;

/// Which keys a case draws from.
#[derive(Debug, Clone, PartialEq)]
enum Keys {
    /// `0..distinct` on both sides.
    Few(i64),
    /// `distinct` keys that all hash to join instance `target`: no other node gets a row.
    OneNode { target: u64, distinct: usize },
    /// Left keys even, right keys odd: nothing matches.
    Disjoint(i64),
}

/// One generated case.
#[derive(Debug, Clone)]
struct Case {
    nodes: usize,
    keys: Keys,
    /// Percent of rows with a NULL key.
    null_pct: u64,
    /// Rows of `l` and `r`.
    left: usize,
    right: usize,
    /// Seed of the rows.
    seed: u64,
}

/// One row of `l(id, k, v)` or `r(id, k, w)`.
#[derive(Debug, Clone)]
struct Row {
    id: i64,
    k: Option<i64>,
    v: Option<i64>,
}

/// SplitMix64, so that a case's rows follow from its seed alone.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn chance(&mut self, pct: u64) -> bool {
        self.below(100) < pct
    }
}

/// The join instance a non-NULL BIGINT key is sent to (the exchange hashes it with `mix64`).
fn instance_of(k: i64, nodes: usize) -> u64 {
    mix64(k as u64) % nodes as u64
}

/// The first `distinct` non-negative keys that hash to instance `target`.
fn keys_on(target: u64, distinct: usize, nodes: usize) -> Vec<i64> {
    (0i64..)
        .filter(|&k| instance_of(k, nodes) == target)
        .take(distinct)
        .collect()
}

impl Case {
    /// The key pools of the left and the right side.
    fn pools(&self) -> (Vec<i64>, Vec<i64>) {
        match &self.keys {
            Keys::Few(n) => ((0..*n).collect(), (0..*n).collect()),
            Keys::OneNode { target, distinct } => {
                let keys = keys_on(*target % self.nodes as u64, *distinct, self.nodes);
                (keys.clone(), keys)
            }
            Keys::Disjoint(n) => (
                (0..*n).map(|k| 2 * k).collect(),
                (0..*n).map(|k| 2 * k + 1).collect(),
            ),
        }
    }

    /// The rows of `l` and `r`.
    fn rows(&self) -> (Vec<Row>, Vec<Row>) {
        let mut rng = Rng(self.seed);
        let (lp, rp) = self.pools();
        let mut side = |n: usize, pool: &[i64]| -> Vec<Row> {
            (0..n as i64)
                .map(|id| {
                    let k = (!rng.chance(self.null_pct))
                        .then(|| pool[rng.below(pool.len() as u64) as usize]);
                    let v = (!rng.chance(10)).then(|| rng.below(101) as i64 - 50);
                    Row { id, k, v }
                })
                .collect()
        };
        let l = side(self.left, &lp);
        let r = side(self.right, &rp);
        (l, r)
    }
}

/// The matched pairs of a nested-loop join: equal, non-NULL keys.
fn reference_pairs<'a>(l: &'a [Row], r: &'a [Row]) -> Vec<(&'a Row, &'a Row)> {
    let mut out = Vec::new();
    for a in l {
        for b in r {
            if a.k.is_some() && a.k == b.k {
                out.push((a, b));
            }
        }
    }
    out
}

fn sum(vals: impl Iterator<Item = Option<i64>>) -> Value {
    let mut total: Option<i64> = None;
    for v in vals.flatten() {
        total = Some(total.unwrap_or(0) + v);
    }
    total.into()
}

fn load(c: &Cluster, table: &str, rows: &[Row]) {
    let vals: Vec<Vec<Value>> = rows
        .iter()
        .map(|r| vec![Value::Int(r.id), r.k.into(), r.v.into()])
        .collect();
    let batch = weir::Batch::from_rows(&[DataType::Int64; 3], &vals).unwrap();
    assert_eq!(c.load(table, batch).unwrap(), rows.len());
}

/// Runs `case` on a fresh cluster and compares every answer with the reference.
fn check(case: &Case) -> Result<(), TestCaseError> {
    let (l, r) = case.rows();
    let c = TestCluster::new(
        Cluster::builder()
            .nodes(case.nodes)
            .partitions(32)
            .batch_size(BATCH)
            .query_timeout(TIMEOUT)
            .build()
            .expect("cluster starts"),
    )
    .with_limit(LIMIT);
    c.execute("CREATE TABLE l (id BIGINT PRIMARY KEY, k BIGINT, v BIGINT)")
        .unwrap();
    c.execute("CREATE TABLE r (id BIGINT PRIMARY KEY, k BIGINT, w BIGINT)")
        .unwrap();
    load(&c, "l", &l);
    load(&c, "r", &r);
    let pairs = reference_pairs(&l, &r);
    let run = |sql: &str| -> Vec<Vec<Value>> {
        c.query(sql, &[])
            .unwrap_or_else(|e| panic!("{sql} failed on {case:?}: {e}"))
            .rows()
    };

    let sql = "SELECT COUNT(*), SUM(l.v), SUM(r.w) FROM l JOIN r ON l.k = r.k";
    let want = vec![vec![
        Value::Int(pairs.len() as i64),
        sum(pairs.iter().map(|p| p.0.v)),
        sum(pairs.iter().map(|p| p.1.v)),
    ]];
    prop_assert_eq!(run(sql), want, "{}", sql);

    let sql = "SELECT l.k, COUNT(*), SUM(l.v), SUM(r.w) FROM l JOIN r ON l.k = r.k GROUP BY l.k";
    let mut groups: BTreeMap<i64, Vec<(&Row, &Row)>> = BTreeMap::new();
    for p in &pairs {
        groups.entry(p.0.k.unwrap()).or_default().push(*p);
    }
    let want: Vec<Vec<Value>> = groups
        .iter()
        .map(|(k, ps)| {
            vec![
                Value::Int(*k),
                Value::Int(ps.len() as i64),
                sum(ps.iter().map(|p| p.0.v)),
                sum(ps.iter().map(|p| p.1.v)),
            ]
        })
        .collect();
    prop_assert_eq!(sorted_rows(run(sql)), sorted_rows(want), "{}", sql);

    // A condition over both sides, applied after the join (NULL compares to nothing).
    let sql = "SELECT COUNT(*) FROM l JOIN r ON r.k = l.k WHERE l.v < r.w";
    let n = pairs
        .iter()
        .filter(|(a, b)| matches!((a.v, b.v), (Some(x), Some(y)) if x < y))
        .count();
    prop_assert_eq!(run(sql), vec![vec![Value::Int(n as i64)]], "{}", sql);

    if pairs.len() <= MAX_PAIRS {
        let sql = "SELECT l.id, r.id FROM l JOIN r ON l.k = r.k";
        let want: Vec<Vec<Value>> = pairs
            .iter()
            .map(|(a, b)| vec![Value::Int(a.id), Value::Int(b.id)])
            .collect();
        prop_assert_eq!(sorted_rows(run(sql)), sorted_rows(want), "{}", sql);
    }
    // Every query's actors stopped and its memory was returned.
    prop_assert!(
        c.wait_idle(Duration::from_secs(5)),
        "actors or memory left behind: {:?}",
        c.stats().nodes
    );
    Ok(())
}

fn config() -> ProptestConfig {
    ProptestConfig {
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(
            std::env::var("PROPTEST_RNG_SEED")
                .ok()
                .and_then(|n| n.parse().ok())
                .unwrap_or(PROPTEST_SEED),
        ),
        // A hung case costs the watchdog's limit per query: shrink briefly.
        max_shrink_time: 15_000,
        ..ProptestConfig::with_cases(
            std::env::var("PROPTEST_CASES")
                .ok()
                .and_then(|n| n.parse().ok())
                .unwrap_or(64),
        )
    }
}

fn keys() -> impl Strategy<Value = Keys> {
    prop_oneof![
        3 => (1i64..=6).prop_map(Keys::Few),
        2 => (0u64..5, 1usize..=4).prop_map(|(target, distinct)| Keys::OneNode { target, distinct }),
        1 => (1i64..=4).prop_map(Keys::Disjoint),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop_oneof![Just(1usize), Just(3), Just(5)],
        keys(),
        prop_oneof![Just(0u64), 1u64..=40],
        0usize..=30,
        prop_oneof![0usize..=30, 1000usize..=3000],
        any::<bool>(),
        any::<u64>(),
    )
        .prop_map(|(nodes, keys, null_pct, small, other, swap, seed)| {
            let (left, right) = if swap { (other, small) } else { (small, other) };
            Case {
                nodes,
                keys,
                null_pct,
                left,
                right,
                seed,
            }
        })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn joins_match_a_nested_loop_join(case in case()) {
        check(&case)?;
    }
}

/// Rows of the long side in the fixed cases.
const LONG: usize = 2000;

/// A fixed shape on 1, 3 and 5 nodes; fails at the first node count that goes wrong.
fn shape(keys: Keys, null_pct: u64, left: usize, right: usize) {
    for nodes in [1usize, 3, 5] {
        let keys = match keys {
            // The last instance, whatever the node count.
            Keys::OneNode {
                target: u64::MAX,
                distinct,
            } => Keys::OneNode {
                target: nodes as u64 - 1,
                distinct,
            },
            ref k => k.clone(),
        };
        let case = Case {
            nodes,
            keys,
            null_pct,
            left,
            right,
            seed: 1000 + nodes as u64,
        };
        match std::panic::catch_unwind(|| check(&case)) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => panic!("{case:?}: {e}"),
            Err(p) => {
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                panic!("{case:?}: {msg}");
            }
        }
    }
}

#[test]
fn all_keys_on_one_node_with_a_long_probe_side() {
    shape(
        Keys::OneNode {
            target: 0,
            distinct: 3,
        },
        0,
        20,
        LONG,
    );
}

#[test]
fn one_key_on_the_last_node_with_a_long_left_side() {
    shape(
        Keys::OneNode {
            target: u64::MAX,
            distinct: 1,
        },
        0,
        LONG,
        20,
    );
}

#[test]
fn one_key_duplicated_on_both_sides() {
    shape(Keys::Few(1), 0, 25, LONG);
}

#[test]
fn null_keys_never_match() {
    shape(Keys::Few(3), 30, 25, LONG);
}

#[test]
fn only_null_keys_match_nothing() {
    shape(Keys::Few(3), 100, 25, LONG);
}

#[test]
fn empty_left_side() {
    shape(Keys::Few(4), 0, 0, LONG);
}

#[test]
fn empty_right_side() {
    shape(Keys::Few(4), 0, LONG, 0);
}

#[test]
fn disjoint_keys_match_nothing() {
    shape(Keys::Disjoint(3), 0, 25, LONG);
}

#[test]
fn small_sides_with_spread_keys() {
    shape(Keys::Few(5), 10, 12, 17);
}

/// The generator's promises hold: one-node keys all hash to their instance, and the rows
/// have duplicates and NULLs where asked.
#[test]
fn generator_makes_the_shapes_it_claims() {
    for nodes in [3usize, 5] {
        for target in 0..nodes as u64 {
            let keys = keys_on(target, 4, nodes);
            assert_eq!(keys.len(), 4);
            assert!(keys.iter().all(|&k| instance_of(k, nodes) == target));
        }
    }
    let case = Case {
        nodes: 3,
        keys: Keys::Few(2),
        null_pct: 30,
        left: 30,
        right: 2000,
        seed: 7,
    };
    let (l, r) = case.rows();
    assert_eq!((l.len(), r.len()), (30, 2000));
    for side in [&l, &r] {
        let nulls = side.iter().filter(|x| x.k.is_none()).count();
        assert!(nulls > 0 && nulls < side.len(), "{nulls} NULL keys");
        let zeros = side.iter().filter(|x| x.k == Some(0)).count();
        assert!(zeros > 1, "key 0 appears {zeros} times");
    }
    // A NULL key matches nothing, not even another NULL.
    let pairs = reference_pairs(&l, &r);
    assert!(pairs.iter().all(|(a, b)| a.k.is_some() && a.k == b.k));
}
