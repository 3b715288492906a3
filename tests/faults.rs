//! Replicas and injected faults: a lost node loses no data with one backup, queries either
//! finish correctly on the copies or fail naming the node, lost or duplicated or corrupted
//! messages never change an answer, and nothing leaks.

mod common;

use common::assert_idle;
use std::time::{Duration, Instant};
use weir::runtime::{FaultPlan, Health};
use weir::{Batch, Cluster, Column, Error, Value};

const ROWS: i64 = 30_000;

fn cluster(backups: usize, timeout: Duration) -> Cluster {
    let c = Cluster::builder()
        .nodes(3)
        .partitions(64)
        .batch_size(256)
        .backups(backups)
        .query_timeout(timeout)
        .build()
        .unwrap();
    c.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, k BIGINT, v BIGINT)")
        .unwrap();
    c.execute("CREATE TABLE d (id BIGINT PRIMARY KEY, name VARCHAR)")
        .unwrap();
    c.load(
        "t",
        Batch::try_new(vec![
            Column::from_i64((0..ROWS).collect()),
            Column::from_i64((0..ROWS).map(|i| i % 100).collect()),
            Column::from_i64((0..ROWS).map(|i| i * 3).collect()),
        ])
        .unwrap(),
    )
    .unwrap();
    let names: Vec<String> = (0..100).map(|i| format!("d{i}")).collect();
    c.load(
        "d",
        Batch::try_new(vec![
            Column::from_i64((0..100).collect()),
            Column::from_strs(&names),
        ])
        .unwrap(),
    )
    .unwrap();
    c
}

fn total(c: &Cluster) -> Result<Vec<Vec<Value>>, Error> {
    c.query("SELECT COUNT(*), SUM(v) FROM t", &[])
        .map(|r| r.rows())
}

fn expected_total(extra: i64) -> Vec<Vec<Value>> {
    let n = ROWS + extra;
    vec![vec![Value::Int(n), Value::Int((0..n).map(|i| i * 3).sum())]]
}

const JOIN: &str =
    "SELECT d.name, COUNT(*), SUM(t.v) FROM t JOIN d ON t.k = d.id GROUP BY d.name ORDER BY d.name";

#[test]
fn one_backup_survives_a_dead_node_and_resyncs_it() {
    let c = cluster(1, Duration::from_secs(30));
    let join_before = c.query(JOIN, &[]).unwrap().rows();
    c.crash_node(1).unwrap();
    assert_eq!(c.health(), Health::Yellow);
    assert_eq!(total(&c).unwrap(), expected_total(0));
    assert_eq!(c.query(JOIN, &[]).unwrap().rows(), join_before);
    // Writes while node-1 is down go to the live copies...
    c.execute(&format!("INSERT INTO t VALUES ({ROWS}, 0, {})", ROWS * 3))
        .unwrap();
    assert_eq!(total(&c).unwrap(), expected_total(1));
    // ...and node-1 gets them back when it restarts.
    c.restart_node(1).unwrap();
    assert_eq!(c.health(), Health::Green);
    c.crash_node(0).unwrap();
    c.crash_node(2).unwrap_or(());
    // With two of three nodes down some partitions have no copy left.
    assert_eq!(c.health(), Health::Red);
    c.restart_node(2).unwrap();
    assert_eq!(c.health(), Health::Yellow);
    assert_eq!(total(&c).unwrap(), expected_total(1));
    assert!(c.wait_idle(Duration::from_secs(10)));
    c.restart_node(0).unwrap();
    assert_idle(&c);
}

#[test]
fn node_lost_mid_query_reruns_on_copies_or_fails_naming_it() {
    let c = cluster(1, Duration::from_secs(30));
    let expected = c.query(JOIN, &[]).unwrap().rows();
    // Nothing was returned yet (the result is sorted at the end): the query reruns.
    c.set_faults(Some(FaultPlan {
        crash_after: Some((1, 3)),
        ..FaultPlan::default()
    }));
    assert_eq!(c.query(JOIN, &[]).unwrap().rows(), expected);
    assert!(!c.stats().nodes[1].up);
    c.set_faults(None);
    c.restart_node(1).unwrap();
    assert_idle(&c);

    // Rows already reached the caller: the query fails, naming the node.
    let c = cluster(0, Duration::from_secs(30));
    let mut s = c.query_stream("SELECT id FROM t", &[]).unwrap();
    let first = s.next().unwrap().unwrap();
    assert!(first.num_rows() > 0);
    c.crash_node(2).unwrap();
    let err = s.find_map(|b| b.err()).expect("the stream fails");
    assert_eq!(err, Error::NodeDown("node-2".into()));
    assert_idle(&c);
}

#[test]
fn lost_duplicated_delayed_and_corrupted_messages_never_change_an_answer() {
    let c = cluster(0, Duration::from_secs(2));
    let join = c.query(JOIN, &[]).unwrap().rows();
    // Duplicates and delays: always the right answer.
    c.set_faults(Some(FaultPlan {
        seed: 1,
        duplicate: 0.5,
        delay: Some((Duration::ZERO, Duration::from_millis(3))),
        ..FaultPlan::default()
    }));
    for _ in 0..5 {
        assert_eq!(total(&c).unwrap(), expected_total(0));
        assert_eq!(c.query(JOIN, &[]).unwrap().rows(), join);
    }
    // Losses and corruption: the right answer, or a clear error within the timeout.
    c.set_faults(Some(FaultPlan {
        seed: 2,
        drop: 0.05,
        corrupt: 0.05,
        ..FaultPlan::default()
    }));
    let (mut ok, mut failed) = (0, 0);
    for _ in 0..6 {
        let t = Instant::now();
        match c.query(JOIN, &[]) {
            Ok(r) => {
                assert_eq!(r.rows(), join);
                ok += 1;
            }
            Err(e) => {
                assert!(matches!(e, Error::Timeout(_)), "{e}");
                assert!(t.elapsed() < Duration::from_secs(10));
                failed += 1;
            }
        }
    }
    assert_eq!(ok + failed, 6);
    assert!(c.stats().nodes.iter().map(|n| n.decode_errors).sum::<u64>() > 0 || failed == 0);
    // A node cut off: a clear timeout, and afterwards everything works again.
    c.set_faults(Some(FaultPlan {
        cut_off: vec![1],
        ..FaultPlan::default()
    }));
    assert!(matches!(total(&c), Err(Error::Timeout(_))));
    c.set_faults(None);
    assert_eq!(total(&c).unwrap(), expected_total(0));
    assert!(c.stats().nodes.iter().all(|n| n.up));
    assert_idle(&c);
}

#[test]
fn forged_messages_are_rejected_and_counted() {
    let c = cluster(0, Duration::from_secs(30));
    let net = c.network();
    // Garbage, a forged huge length, and a truncated message.
    net.send_raw(3, 0, vec![1, 2, 3]);
    net.send_raw(3, 0, vec![0xFF; 64]);
    let mut forged = vec![0u8; 16];
    forged[0] = 0xFD;
    net.send_raw(3, 1, forged);
    let deadline = Instant::now() + Duration::from_secs(5);
    while c.stats().nodes.iter().map(|n| n.decode_errors).sum::<u64>() < 3
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(
        c.stats().nodes.iter().map(|n| n.decode_errors).sum::<u64>(),
        3
    );
    assert!(c.stats().nodes.iter().all(|n| n.up));
    assert_eq!(total(&c).unwrap(), expected_total(0));
    assert_idle(&c);
}
