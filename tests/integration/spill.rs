//! Queries larger than a node's memory: sorts, aggregations and hash joins refused memory
//! spill to disk and answer as a cluster with memory to spare does; past the spill quota a
//! query fails with a typed error; either way memory, actors and spill files are gone after.

use crate::common;

use common::{assert_idle, sorted_rows, TestCluster};
use weir::{Batch, Cluster, Column, Error, Value};

const MIB: usize = 1024 * 1024;

/// Rows of `t (id, v, s)`: `v` scatters 0..n, `s` a short text.
const ROWS: i64 = 200_000;

fn cluster(memory: usize, quota: Option<u64>) -> TestCluster {
    let mut builder = Cluster::builder()
        .nodes(3)
        .partitions(16)
        .node_memory(memory)
        .seed(11);
    if let Some(q) = quota {
        builder = builder.spill_quota(q);
    }
    let c = builder.build().unwrap();
    load(&c);
    TestCluster::new(c)
}

fn load(c: &Cluster) {
    c.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, v BIGINT, s VARCHAR)")
        .unwrap();
    let ids: Vec<i64> = (0..ROWS).collect();
    let v: Vec<i64> = ids.iter().map(|i| (i * 7919) % ROWS).collect();
    let s: Vec<String> = ids.iter().map(|i| format!("text-{}", i % 977)).collect();
    c.load(
        "t",
        Batch::try_new(vec![
            Column::from_i64(ids),
            Column::from_i64(v),
            Column::from_strs(&s),
        ])
        .unwrap(),
    )
    .unwrap();
}

fn spills(c: &Cluster) -> u64 {
    c.stats().nodes.iter().map(|n| n.spills).sum()
}

/// Nothing left of the queries: actors, memory, and bytes in spill files.
fn assert_clean(c: &Cluster) {
    assert_idle(c);
    let stats = c.stats();
    for n in &stats.nodes {
        assert_eq!(n.spill_bytes, 0, "{}: spill files left", n.name);
    }
}

const QUERIES: &[&str] = &[
    "SELECT v, id, s FROM t ORDER BY v DESC, id",
    "SELECT v % 50000 AS g, COUNT(*), SUM(id), MIN(s), MAX(v), AVG(id) FROM t GROUP BY v % 50000 ORDER BY g",
    "SELECT s, COUNT(DISTINCT v) FROM t GROUP BY s ORDER BY s",
    "SELECT a.id % 1000 AS g, COUNT(*), MIN(b.s), SUM(b.v) FROM t a JOIN t b ON a.v = b.id GROUP BY a.id % 1000 ORDER BY g",
    "SELECT a.id, b.s FROM t a LEFT JOIN t b ON a.v = b.id + 100000 ORDER BY a.id",
];

#[test]
fn sorts_and_aggregations_larger_than_memory_spill_and_answer_as_with_memory_to_spare() {
    let roomy = cluster(1 << 30, None);
    let tight = cluster(3 * MIB, None);
    for sql in QUERIES {
        let expected = roomy.query(sql, &[]).unwrap();
        let before = spills(&tight);
        let got = tight
            .query(sql, &[])
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        assert_eq!(got.rows(), expected.rows(), "{sql}");
        assert!(spills(&tight) > before, "{sql} did not spill");
        assert_clean(&tight);
    }
    let stats = tight.stats();
    assert!(
        stats
            .nodes
            .iter()
            .map(|n| n.spill_bytes_written)
            .sum::<u64>()
            > 0
    );
    assert!(
        stats.nodes.iter().all(|n| n.memory_peak <= n.memory_budget),
        "{:?}",
        stats.nodes
    );
}

#[test]
fn a_hash_join_whose_build_side_is_larger_than_memory_spills_instead_of_being_killed() {
    // A global aggregate over the join: only the join can spill.
    let sql = "SELECT COUNT(*), SUM(b.v), MIN(b.s), MAX(a.id) FROM t a JOIN t b ON a.v = b.id";
    let roomy = cluster(1 << 30, None);
    let tight = cluster(3 * MIB, None);
    let expected = roomy.query(sql, &[]).unwrap();
    let got = tight.query(sql, &[]).unwrap();
    assert_eq!(got.rows(), expected.rows());
    assert_eq!(got.rows()[0][0], Value::Int(ROWS));
    let stats = tight.stats();
    assert!(spills(&tight) > 0, "the join spilled: {:?}", stats.nodes);
    assert_eq!(stats.breaker.kills, 0, "{:?}", stats.breaker);
    assert_clean(&tight);
}

#[test]
fn past_its_spill_quota_a_query_fails_with_a_typed_error_and_leaves_nothing() {
    let c = cluster(3 * MIB, Some(64 * 1024));
    let err = c.query(QUERIES[0], &[]).unwrap_err();
    assert!(matches!(err, Error::SpillQuota { .. }), "{err:?}");
    assert_eq!(err.kind(), "spill_quota");
    assert!(err.to_string().contains("spill quota"), "{err}");
    assert_clean(&c);
    // The node goes on: a query that fits answers.
    let rows = c.query("SELECT COUNT(*) FROM t", &[]).unwrap();
    assert_eq!(rows.rows()[0][0], Value::Int(ROWS));
}

#[test]
fn with_spilling_off_a_query_larger_than_memory_fails_as_before() {
    // Not retried after its kill: a query that cannot fit would be retried until its deadline.
    let c = Cluster::builder()
        .nodes(3)
        .partitions(16)
        .node_memory(3 * MIB)
        .spill_quota(0)
        .retry_killed(false)
        .build()
        .unwrap();
    load(&c);
    let c = TestCluster::new(c);
    let err = c.query(QUERIES[0], &[]).unwrap_err();
    assert!(
        matches!(err, Error::Killed(_) | Error::OutOfMemory(_)),
        "{err:?}"
    );
    assert_eq!(spills(&c), 0);
    assert_clean(&c);
}

#[test]
fn with_a_data_directory_spill_files_live_in_it_and_a_crash_s_leftovers_go_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let spill = dir.path().join("node-0").join("spill");
    std::fs::create_dir_all(&spill).unwrap();
    std::fs::write(spill.join("3.spill"), b"left by a crash").unwrap();
    let c = Cluster::builder()
        .nodes(1)
        .partitions(4)
        .node_memory(3 * MIB)
        .data_dir(dir.path())
        .build()
        .unwrap();
    assert!(!spill.join("3.spill").exists(), "leftover removed at start");
    load(&c);
    let rows = c.query(QUERIES[0], &[]).unwrap();
    assert_eq!(rows.rows().len(), ROWS as usize);
    assert!(spills(&c) > 0);
    assert_clean(&c);
    assert!(spill.exists());
    assert_eq!(std::fs::read_dir(&spill).unwrap().count(), 0);
}

/// Tables `a (id, k, x)` and `b (id, k, y)` of `n` rows each: keys from a seeded generator with
/// NULLs and duplicates, so that every join type has matched and unmatched rows on both sides.
fn load_pair(c: &Cluster, n: i64, seed: u64) {
    use rand::rngs::StdRng;
    use rand::{RngExt, SeedableRng};
    let mut rng = StdRng::seed_from_u64(seed);
    for (t, other) in [("a", "x"), ("b", "y")] {
        c.execute(&format!(
            "CREATE TABLE {t} (id BIGINT PRIMARY KEY, k BIGINT, {other} VARCHAR)"
        ))
        .unwrap();
        let keys: Vec<Value> = (0..n)
            .map(|_| match rng.random_range(0..40) {
                0 => Value::Null,
                _ => Value::Int(rng.random_range(0..n / 2)),
            })
            .collect();
        let texts: Vec<String> = (0..n).map(|i| format!("{t}{}", i % 313)).collect();
        c.load(
            t,
            Batch::try_new(vec![
                Column::from_i64((0..n).collect()),
                Column::from_values(weir::DataType::Int64, &keys).unwrap(),
                Column::from_strs(&texts),
            ])
            .unwrap(),
        )
        .unwrap();
    }
}

/// Every join type, grouped and DISTINCT aggregations, sorts, windows and their combinations; rows are
/// compared as sorted lists where the query has no total order.
const COMBINED: &[&str] = &[
    "SELECT a.id, b.id FROM a JOIN b ON a.k = b.k",
    "SELECT a.id, b.id, b.y FROM a LEFT JOIN b ON a.k = b.k",
    "SELECT a.id, b.id FROM a RIGHT JOIN b ON a.k = b.k AND a.id < b.id",
    "SELECT a.id, b.id FROM a FULL JOIN b ON a.k = b.k",
    "SELECT a.id FROM a WHERE EXISTS (SELECT 1 FROM b WHERE b.k = a.k)",
    "SELECT a.id FROM a WHERE NOT EXISTS (SELECT 1 FROM b WHERE b.k = a.k)",
    "SELECT a.id FROM a WHERE a.k NOT IN (SELECT b.k FROM b WHERE b.id % 7 = 0)",
    "SELECT a.k, COUNT(*), COUNT(DISTINCT b.y), MIN(b.id), MAX(a.x) FROM a JOIN b ON a.k = b.k GROUP BY a.k",
    "SELECT DISTINCT a.k, b.y FROM a JOIN b ON a.k = b.k",
    "SELECT x FROM a UNION SELECT y FROM b",
    "SELECT a.id, a.x, b.y FROM a JOIN b ON a.k = b.k ORDER BY b.y, a.id DESC, b.id",
    "SELECT id, k, ROW_NUMBER() OVER (PARTITION BY k ORDER BY id), SUM(id) OVER (PARTITION BY k ORDER BY id), LAG(x) OVER (PARTITION BY k ORDER BY id) FROM a",
];

#[test]
fn joins_of_every_type_aggregations_and_sorts_answer_alike_with_a_small_budget_on_one_and_three_nodes(
) {
    for nodes in [1, 3] {
        let make = |memory: usize| {
            let c = Cluster::builder()
                .nodes(nodes)
                .partitions(8)
                .node_memory(memory)
                .build()
                .unwrap();
            load_pair(&c, 40_000, 5);
            TestCluster::new(c)
        };
        let (roomy, tight) = (make(1 << 30), make(2 * MIB));
        for sql in COMBINED {
            let expected = roomy.query(sql, &[]).unwrap();
            let got = tight
                .query(sql, &[])
                .unwrap_or_else(|e| panic!("{nodes} nodes: {sql}: {e}"));
            // A query ordered as a whole (not only inside a window's OVER) compares in order.
            let tail = sql.rsplit_once(')').map_or(*sql, |(_, tail)| tail);
            if tail.contains("ORDER BY") {
                assert_eq!(got.rows(), expected.rows(), "{nodes} nodes: {sql}");
            } else {
                assert_eq!(
                    sorted_rows(got.rows()),
                    sorted_rows(expected.rows()),
                    "{nodes} nodes: {sql}"
                );
            }
            assert_clean(&tight);
        }
        let stats = tight.stats();
        assert!(spills(&tight) > 0, "{nodes} nodes: {:?}", stats.nodes);
        assert!(
            stats.nodes.iter().all(|n| n.memory_peak <= n.memory_budget),
            "{:?}",
            stats.nodes
        );
    }
}

#[test]
fn a_query_cancelled_while_it_reads_its_spilled_runs_leaves_no_file_and_no_memory() {
    let c = cluster(3 * MIB, None);
    let mut stream = c.query_stream(QUERIES[0], &[]).unwrap();
    let first = stream.next().expect("a first batch").unwrap();
    assert!(first.num_rows() > 0);
    let on_disk: u64 = c.stats().nodes.iter().map(|n| n.spill_bytes).sum();
    assert!(on_disk > 0, "the sort's runs are on disk while it merges");
    drop(stream);
    assert_clean(&c);
}

#[test]
fn a_join_whose_one_key_does_not_fit_even_spilled_fails_clearly_and_does_not_loop() {
    let c = Cluster::builder()
        .nodes(1)
        .partitions(4)
        .node_memory(2 * MIB)
        .retry_killed(false)
        .build()
        .unwrap();
    // `heavy` (the smaller side, built) holds one key 150,000 times; `light` other keys.
    c.execute("CREATE TABLE heavy (id BIGINT PRIMARY KEY, k BIGINT, s VARCHAR)")
        .unwrap();
    c.execute("CREATE TABLE light (id BIGINT PRIMARY KEY, k BIGINT)")
        .unwrap();
    let n = 150_000;
    c.load(
        "heavy",
        Batch::try_new(vec![
            Column::from_i64((0..n).collect()),
            Column::from_i64(vec![1; n as usize]),
            Column::from_strs(&vec!["a value of some length"; n as usize]),
        ])
        .unwrap(),
    )
    .unwrap();
    c.load(
        "light",
        Batch::try_new(vec![
            Column::from_i64((0..3 * n).collect()),
            Column::from_i64((0..3 * n).collect()),
        ])
        .unwrap(),
    )
    .unwrap();
    let c = TestCluster::new(c);
    let err = c
        .query(
            "SELECT COUNT(*), MAX(h.s) FROM light l JOIN heavy h ON l.k = h.k",
            &[],
        )
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("do not fit in memory even spilled"),
        "{err}"
    );
    assert_clean(&c);
}

#[test]
fn a_partitioned_window_larger_than_memory_spills_and_answers_as_with_memory_to_spare() {
    // A global aggregate over the window: only the window can spill.
    let sql = "SELECT COUNT(*), SUM(rn), SUM(running), MAX(prev) FROM (SELECT \
               ROW_NUMBER() OVER (PARTITION BY k ORDER BY id) AS rn, \
               SUM(id) OVER (PARTITION BY k ORDER BY id) AS running, \
               LAG(x) OVER (PARTITION BY k ORDER BY id) AS prev FROM a) AS w";
    let make = |memory: usize| {
        let c = Cluster::builder()
            .nodes(3)
            .partitions(8)
            .node_memory(memory)
            .build()
            .unwrap();
        load_pair(&c, 60_000, 9);
        TestCluster::new(c)
    };
    let (roomy, tight) = (make(1 << 30), make(2 * MIB));
    let expected = roomy.query(sql, &[]).unwrap();
    let got = tight.query(sql, &[]).unwrap();
    assert_eq!(got.rows(), expected.rows());
    assert_eq!(got.rows()[0][0], Value::Int(60_000));
    assert!(
        spills(&tight) > 0,
        "the window spilled: {:?}",
        tight.stats().nodes
    );
    assert_clean(&tight);
}
