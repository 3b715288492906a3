//! Queries larger than a node's memory: sorts, aggregations and hash joins refused memory
//! spill to disk and answer as a cluster with memory to spare does; past the spill quota a
//! query fails with a typed error; either way memory, actors and spill files are gone after.

use crate::common;

use common::{assert_idle, TestCluster};
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
