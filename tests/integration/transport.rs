//! The simulated network as a reliable transport over a lossy link: lost and corrupted
//! transmissions are sent again, so faults cost retransmissions, not failed queries, and
//! never change an answer.

use crate::common;

use common::{assert_idle, TestCluster};
use std::time::{Duration, Instant};
use weir::runtime::FaultPlan;
use weir::{Batch, Cluster, Column, Error, Value};

const ROWS: i64 = 20_000;

fn cluster(timeout: Duration) -> TestCluster {
    let c = Cluster::builder()
        .nodes(3)
        .partitions(64)
        .batch_size(512)
        .query_timeout(timeout)
        .build()
        .map(TestCluster::new)
        .unwrap();
    c.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, k BIGINT, v BIGINT)")
        .unwrap();
    c.execute("CREATE TABLE d (id BIGINT PRIMARY KEY, w BIGINT)")
        .unwrap();
    c.load(
        "t",
        Batch::try_new(vec![
            Column::from_i64((0..ROWS).collect()),
            Column::from_i64((0..ROWS).map(|i| i % 40).collect()),
            Column::from_i64((0..ROWS).map(|i| i * 3).collect()),
        ])
        .unwrap(),
    )
    .unwrap();
    c.load(
        "d",
        Batch::try_new(vec![
            Column::from_i64((0..40).collect()),
            Column::from_i64((0..40).map(|i| i * 10).collect()),
        ])
        .unwrap(),
    )
    .unwrap();
    c
}

const JOIN: &str =
    "SELECT d.w, COUNT(*), SUM(t.v) FROM t JOIN d ON t.k = d.id GROUP BY d.w ORDER BY d.w";

/// The join's answer computed from the generated rows.
fn join_answer() -> Vec<Vec<Value>> {
    (0..40)
        .map(|k| {
            let rows: Vec<i64> = (0..ROWS).filter(|i| i % 40 == k).collect();
            vec![
                Value::Int(k * 10),
                Value::Int(rows.len() as i64),
                Value::Int(rows.iter().map(|i| i * 3).sum()),
            ]
        })
        .collect()
}

#[test]
fn lost_and_corrupted_messages_are_retransmitted_and_every_query_answers() {
    // The timeout is far above what retransmissions cost: a query that needed it fails.
    let c = cluster(Duration::from_secs(20));
    let want = join_answer();
    let total = vec![vec![
        Value::Int(ROWS),
        Value::Int((0..ROWS).map(|i| i * 3).sum()),
    ]];
    c.set_faults(Some(FaultPlan {
        seed: 7,
        drop: 0.1,
        corrupt: 0.05,
        duplicate: 0.05,
        delay: Some((Duration::ZERO, Duration::from_millis(2))),
        ..FaultPlan::default()
    }));
    for i in 0..12 {
        let got = c
            .query(JOIN, &[])
            .unwrap_or_else(|e| panic!("join {i} failed under faults: {e}"));
        assert_eq!(got.rows(), want, "join {i}");
        let got = c
            .query("SELECT COUNT(*), SUM(v) FROM t", &[])
            .unwrap_or_else(|e| panic!("sum {i} failed under faults: {e}"));
        assert_eq!(got.rows(), total, "sum {i}");
    }
    let net = c.network();
    assert!(net.retransmits() > 0, "losses must have been retransmitted");
    assert_eq!(net.given_up(), 0);
    let corrupt: u64 = c.stats().nodes.iter().map(|n| n.decode_errors).sum();
    assert!(corrupt > 0, "corrupted copies are rejected on arrival");
    c.set_faults(None);
    assert_idle(&c);
}

#[test]
fn a_node_cut_off_ends_in_a_bounded_timeout_not_a_hang() {
    // A test of the timeout: retransmissions cannot reach a node that is cut off, so the
    // query fails with its 1 s timeout, within a bound.
    let c = cluster(Duration::from_secs(1));
    c.set_faults(Some(FaultPlan {
        cut_off: vec![1],
        ..FaultPlan::default()
    }));
    let t = Instant::now();
    let r = c.query("SELECT COUNT(*) FROM t", &[]);
    assert!(matches!(r, Err(Error::Timeout(_))), "{r:?}");
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    c.set_faults(None);
    assert_eq!(
        c.query("SELECT COUNT(*) FROM t", &[]).unwrap().rows(),
        vec![vec![Value::Int(ROWS)]]
    );
    assert_idle(&c);
}
