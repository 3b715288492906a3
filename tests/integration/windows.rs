//! Window functions on a cluster: the same answers on one node and on several (partitions
//! whole on one node after the hash exchange, unpartitioned windows gathered), answers a
//! user can check by arithmetic on a larger input, frame offsets as parameters, and after a
//! window query finishes, fails (an error in the kernel, memory refused) or is cancelled,
//! its actors stop and its memory returns to zero.

use crate::common;

use common::{assert_idle, cluster, ints, TestCluster};
use weir::{Batch, Cluster, Column, Error, Value};

/// `t (id, g, v)` with `n` rows: `g = id % groups`, `v = (id * 7919) % 1000`.
fn load(c: &Cluster, n: i64, groups: i64) {
    c.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, g BIGINT, v BIGINT)")
        .unwrap();
    c.load(
        "t",
        Batch::try_new(vec![
            Column::from_i64((0..n).collect()),
            Column::from_i64((0..n).map(|i| i % groups).collect()),
            Column::from_i64((0..n).map(|i| (i * 7919) % 1000).collect()),
        ])
        .unwrap(),
    )
    .unwrap();
}

const QUERIES: &[&str] = &[
    "SELECT id, ROW_NUMBER() OVER (PARTITION BY g ORDER BY v, id), RANK() OVER (PARTITION BY g ORDER BY v) FROM t ORDER BY id",
    "SELECT id, SUM(v) OVER (PARTITION BY g ORDER BY id ROWS BETWEEN 3 PRECEDING AND 2 FOLLOWING), MIN(v) OVER (ORDER BY id ROWS BETWEEN 5 PRECEDING AND CURRENT ROW EXCLUDE CURRENT ROW) FROM t ORDER BY id",
    "SELECT id, LAG(v, 2, -1) OVER (PARTITION BY g ORDER BY id), COUNT(*) OVER (PARTITION BY g ORDER BY v RANGE BETWEEN 10 PRECEDING AND 10 FOLLOWING) FROM t ORDER BY id",
    "SELECT g, id, v FROM (SELECT g, id, v, ROW_NUMBER() OVER (PARTITION BY g ORDER BY v DESC, id) AS rn FROM t) AS s WHERE rn <= 2 ORDER BY g, id",
    "SELECT g, SUM(COUNT(*)) OVER (ORDER BY g), RANK() OVER (ORDER BY MAX(v) DESC, g) FROM t GROUP BY g ORDER BY g",
];

#[test]
fn one_node_and_four_give_the_same_answers() {
    let one = cluster(1);
    let four = cluster(4);
    for c in [&one, &four] {
        load(c, 3000, 13);
    }
    for sql in QUERIES {
        let a = one.query(sql, &[]).unwrap().rows();
        let b = four.query(sql, &[]).unwrap().rows();
        assert!(!a.is_empty(), "{sql}");
        assert_eq!(a, b, "{sql}");
    }
    assert_idle(&one);
    assert_idle(&four);
}

#[test]
fn answers_that_arithmetic_checks_on_a_larger_input() {
    let c = cluster(3);
    let n = 20_000i64;
    load(&c, n, 7);
    // Each of the 7 groups numbers its rows 1..=size: the sum of the numbers is known.
    let rows = c
        .query(
            "SELECT g, COUNT(*), SUM(rn), MAX(rn) FROM (SELECT g, ROW_NUMBER() OVER (PARTITION BY g ORDER BY v, id) AS rn FROM t) AS s GROUP BY g ORDER BY g",
            &[],
        )
        .unwrap()
        .rows();
    let got = ints(&rows);
    assert_eq!(got.len(), 7);
    for (g, row) in got.iter().enumerate() {
        let size = (n - g as i64 + 6) / 7;
        assert_eq!(
            row,
            &[g as i64, size, size * (size + 1) / 2, size],
            "group {g}"
        );
    }
    // A running count over the ids ends at n; an unpartitioned top 3 is the ids 0, 1, 2.
    let rows = c
        .query(
            "SELECT MAX(c), SUM(c) FROM (SELECT COUNT(*) OVER (ORDER BY id) AS c FROM t) AS s",
            &[],
        )
        .unwrap()
        .rows();
    assert_eq!(ints(&rows), [[n, n * (n + 1) / 2]]);
    let rows = c
        .query(
            "SELECT id FROM t QUALIFY ROW_NUMBER() OVER (ORDER BY id) <= 3 ORDER BY id",
            &[],
        )
        .unwrap()
        .rows();
    assert_eq!(ints(&rows), [[0], [1], [2]]);
    assert_idle(&c);
}

#[test]
fn frame_offsets_and_arguments_may_be_parameters() {
    let c = cluster(3);
    load(&c, 100, 1);
    let sql = "SELECT id, SUM(id) OVER (ORDER BY id ROWS BETWEEN ? PRECEDING AND ? FOLLOWING), NTILE(?) OVER (ORDER BY id) FROM t WHERE id < 5 ORDER BY id";
    let rows = c
        .query(sql, &[Value::Int(1), Value::Int(0), Value::Int(2)])
        .unwrap()
        .rows();
    assert_eq!(
        ints(&rows),
        [[0, 0, 1], [1, 1, 1], [2, 3, 1], [3, 5, 2], [4, 7, 2]]
    );
    // The same plan (cached) with other values.
    let rows = c
        .query(sql, &[Value::Int(0), Value::Int(2), Value::Int(5)])
        .unwrap()
        .rows();
    assert_eq!(
        ints(&rows),
        [[0, 3, 1], [1, 6, 2], [2, 9, 3], [3, 7, 4], [4, 4, 5]]
    );
    // A negative offset is an error where the window runs.
    let err = c
        .query(sql, &[Value::Int(-1), Value::Int(0), Value::Int(2)])
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("frame starting offset must not be negative"),
        "{err}"
    );
    assert_idle(&c);
}

#[test]
fn a_window_query_leaves_nothing_behind_when_it_ends_fails_or_is_cancelled() {
    let c: TestCluster = cluster(3);
    load(&c, 50_000, 11);
    assert_idle(&c);
    let baseline = c.stats().live_actors();

    // Ends.
    let r = c
        .query(
            "SELECT id, SUM(v) OVER (PARTITION BY g ORDER BY id), ROW_NUMBER() OVER (ORDER BY v, id) FROM t",
            &[],
        )
        .unwrap();
    assert_eq!(r.num_rows(), 50_000);
    assert_idle(&c);

    // Fails in the kernel, on every data node (the partitioned window) and on the initiator.
    for sql in [
        "SELECT NTILE(g - 3) OVER (PARTITION BY g ORDER BY id) FROM t",
        "SELECT NTH_VALUE(v, g) OVER (ORDER BY id) FROM t",
    ] {
        let err = c.query(sql, &[]).unwrap_err();
        assert!(
            err.to_string().contains("must be greater than zero"),
            "{sql}: {err}"
        );
        assert_idle(&c);
    }
    let err = c
        .query(
            "SELECT SUM(v * 922337203685477580) OVER (PARTITION BY g) FROM t",
            &[],
        )
        .unwrap_err();
    assert!(matches!(err, Error::Overflow { .. }), "{err}");
    assert_idle(&c);

    // Cancelled: a stream dropped after its first batch, and one dropped before any.
    let mut s = c
        .query_stream(
            "SELECT id, RANK() OVER (PARTITION BY g ORDER BY v) FROM t",
            &[],
        )
        .unwrap();
    let _ = s.next().unwrap().unwrap();
    drop(s);
    assert_idle(&c);
    drop(
        c.query_stream("SELECT id, LAG(v) OVER (ORDER BY id) FROM t", &[])
            .unwrap(),
    );
    assert_idle(&c);
    assert_eq!(c.stats().live_actors(), baseline);
}

/// A window holds its whole input in its reservation, so a node's pool sees it. One that
/// needs more than its node has waits for memory, as a sort does (a batch on its way to it
/// waits for room on the node), until the query's deadline: then it fails and gives every
/// byte back. A top-N of the same rows keeps a few per node and runs.
#[test]
fn a_window_that_outgrows_its_nodes_memory_fails_and_returns_it() {
    let c = TestCluster::new(
        common::cluster_builder()
            .nodes(2)
            .node_memory(4 << 20)
            .query_timeout(std::time::Duration::from_secs(3))
            .build()
            .unwrap(),
    )
    .with_limit(std::time::Duration::from_secs(20));
    load(&c, 400_000, 3);
    assert_idle(&c);
    // One partition of every row: more than a node's 4 MiB.
    let err = c
        .query("SELECT id, ROW_NUMBER() OVER (ORDER BY v, id) FROM t", &[])
        .unwrap_err();
    assert!(
        matches!(err, Error::Timeout(_) | Error::OutOfMemory(_)),
        "{err:?}"
    );
    assert_idle(&c);
    let rows = c
        .query(
            "SELECT id FROM t QUALIFY ROW_NUMBER() OVER (ORDER BY v, id) <= 2 ORDER BY id",
            &[],
        )
        .unwrap()
        .rows();
    assert_eq!(rows.len(), 2);
    assert_idle(&c);
}
