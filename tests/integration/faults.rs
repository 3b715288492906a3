//! Replicas and injected faults: a lost node loses no data with one backup, queries either
//! finish correctly on the copies or fail naming the node, lost or duplicated or corrupted
//! messages never change an answer, and nothing leaks.
//!
//! Every query runs under the watchdog of `common`; the tests that expect query timeouts say
//! so in their names and bound each query by the timeout plus a margin.

use crate::common;

use common::{assert_idle, run_bounded, TestCluster, QUERY_LIMIT};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use weir::runtime::{FaultPlan, Health};
use weir::{Batch, Cluster, Column, Error, Value};

const ROWS: i64 = 30_000;

/// How much longer than its query timeout a query that is expected to time out may take.
const TIMEOUT_MARGIN: Duration = Duration::from_secs(5);

fn cluster(backups: usize, timeout: Duration) -> TestCluster {
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
    // With a query timeout below the watchdog's limit, a query may wait for its timeout but
    // must end soon after it.
    let limit = if timeout < QUERY_LIMIT {
        timeout + TIMEOUT_MARGIN
    } else {
        QUERY_LIMIT
    };
    TestCluster::new(c).with_limit(limit)
}

const TOTAL: &str = "SELECT COUNT(*), SUM(v) FROM t";

fn total(c: &TestCluster) -> Result<Vec<Vec<Value>>, Error> {
    c.query(TOTAL, &[]).map(|r| r.rows())
}

fn expected_total(extra: i64) -> Vec<Vec<Value>> {
    let n = ROWS + extra;
    vec![vec![Value::Int(n), Value::Int((0..n).map(|i| i * 3).sum())]]
}

/// A join of `t` with itself on its key: the same answer as [`TOTAL`], over two large inputs.
const SELF_JOIN: &str = "SELECT COUNT(*), SUM(a.v) FROM t a JOIN t b ON a.id = b.id";

const JOIN: &str =
    "SELECT d.name, COUNT(*), SUM(t.v) FROM t JOIN d ON t.k = d.id GROUP BY d.name ORDER BY d.name";

/// The join's answer computed from the loaded rows: `t.k = id % 100` matches `d.id`.
fn expected_join() -> Vec<Vec<Value>> {
    let mut groups: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    for id in 0..ROWS {
        let g = groups.entry(format!("d{}", id % 100)).or_default();
        g.0 += 1;
        g.1 += id * 3;
    }
    groups
        .into_iter()
        .map(|(name, (n, sum))| vec![Value::Str(name), Value::Int(n), Value::Int(sum)])
        .collect()
}

fn decode_errors(c: &Cluster) -> u64 {
    c.stats().nodes.iter().map(|n| n.decode_errors).sum()
}

#[test]
fn one_backup_survives_a_dead_node_and_resyncs_it() {
    let c = cluster(1, Duration::from_secs(30));
    let join = expected_join();
    assert_eq!(c.query(JOIN, &[]).unwrap().rows(), join);
    c.crash_node(1).unwrap();
    assert_eq!(c.health(), Health::Yellow);
    assert_eq!(total(&c).unwrap(), expected_total(0));
    assert_eq!(c.query(JOIN, &[]).unwrap().rows(), join);
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
    let expected = expected_join();
    assert_eq!(c.query(JOIN, &[]).unwrap().rows(), expected);
    // Nothing was returned yet (the result is sorted at the end): the query reruns on the
    // copies and returns the whole answer.
    c.set_faults(Some(FaultPlan {
        crash_after: Some((1, 3)),
        ..FaultPlan::default()
    }));
    assert_eq!(c.query(JOIN, &[]).unwrap().rows(), expected);
    assert!(!c.stats().nodes[1].up, "the planned crash happened");
    c.set_faults(None);
    c.restart_node(1).unwrap();
    assert_idle(&c);

    // Rows already reached the caller: the query fails, naming the node.
    let c = cluster(0, Duration::from_secs(30));
    let mut s = c.query_stream("SELECT id FROM t", &[]).unwrap();
    let first = s.next().unwrap().unwrap();
    assert!(first.num_rows() > 0);
    c.crash_node(2).unwrap();
    let mut rows = first.num_rows();
    let err = loop {
        match s.next() {
            Some(Ok(b)) => rows += b.num_rows(),
            Some(Err(e)) => break e,
            None => panic!("the stream ended without an error after {rows} rows"),
        }
    };
    assert_eq!(err, Error::NodeDown("node-2".into()));
    assert!(rows < ROWS as usize, "{rows} rows before the error");
    drop(s);
    assert_idle(&c);
}

#[test]
fn duplicated_and_delayed_messages_never_change_an_answer() {
    let c = cluster(0, Duration::from_secs(30));
    let join = expected_join();
    assert_eq!(c.query(JOIN, &[]).unwrap().rows(), join);
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
    c.set_faults(None);
    assert_idle(&c);
}

/// Lost and corrupted messages are retransmitted by the transport: every query gives exactly
/// the right answer, well within its 2 s timeout; corrupted copies are recognised on arrival
/// and counted. A node cut off times out (bounded: the timeout plus a margin); afterwards
/// everything works again.
#[test]
fn lost_and_corrupted_messages_are_retransmitted_and_every_answer_is_right() {
    let timeout = Duration::from_secs(2);
    let c = cluster(0, timeout);
    let join = expected_join();
    assert_eq!(c.query(JOIN, &[]).unwrap().rows(), join);
    // The small side of JOIN is broadcast (a handful of messages); a join of two large sides
    // moves hundreds.
    let healthy = c.query(SELF_JOIN, &[]).unwrap();
    assert_eq!(healthy.rows(), expected_total(0));
    let messages = healthy.stats.messages.total;
    assert!(messages >= 100, "{messages} messages per self join");
    assert_eq!(total(&c).unwrap(), expected_total(0));
    assert_eq!(decode_errors(&c), 0);

    for (what, plan) in [
        (
            "corruption",
            FaultPlan {
                seed: 2,
                corrupt: 0.05,
                ..FaultPlan::default()
            },
        ),
        (
            "loss",
            FaultPlan {
                seed: 3,
                drop: 0.05,
                ..FaultPlan::default()
            },
        ),
    ] {
        let decode_before = decode_errors(&c);
        let resent_before = c.network().retransmits();
        c.set_faults(Some(plan.clone()));
        // Self joins (hundreds of messages: at 5 % nearly always hit), joins and totals (a few).
        for i in 0..11 {
            let (sql, want) = match i % 4 {
                0 => (JOIN, join.clone()),
                2 => (SELF_JOIN, expected_total(0)),
                _ => (TOTAL, expected_total(0)),
            };
            match c.query(sql, &[]) {
                Ok(r) => assert_eq!(r.rows(), want, "{what}: {sql}"),
                Err(e) => panic!("{what}: {sql}: a fault must cost a retransmission, not {e}"),
            }
        }
        c.set_faults(None);
        let rejected = decode_errors(&c) - decode_before;
        let resent = c.network().retransmits() - resent_before;
        eprintln!(
            "{what}: {resent} retransmissions, {rejected} messages rejected \
             ({messages} messages per healthy self join)"
        );
        assert!(resent >= 1, "{what}: the faults were never exercised");
        if plan.corrupt > 0.0 {
            // Every corrupted copy is recognised, and each was sent again.
            assert!(rejected >= 1, "{what}: nothing rejected");
            assert!(
                resent >= rejected,
                "{what}: {rejected} rejected, {resent} resent"
            );
        } else {
            assert_eq!(rejected, 0, "{what}: nothing was corrupted");
        }
        assert_eq!(c.query(JOIN, &[]).unwrap().rows(), join, "after {what}");
        assert_idle(&c);
    }

    // A node cut off: a timeout after the configured time, and afterwards everything works.
    c.set_faults(Some(FaultPlan {
        cut_off: vec![1],
        ..FaultPlan::default()
    }));
    let t = Instant::now();
    assert_eq!(total(&c), Err(Error::Timeout(timeout)));
    assert!(t.elapsed() >= timeout);
    c.set_faults(None);
    assert_eq!(total(&c).unwrap(), expected_total(0));
    assert!(c.stats().nodes.iter().all(|n| n.up));
    assert_idle(&c);
}

/// A well-formed message about a query that does not run anywhere (a confused or forged
/// sender) is dropped, logged and counted by the node it reaches; a query running meanwhile
/// is not disturbed.
#[test]
fn messages_for_an_unknown_query_are_dropped_and_counted_while_a_query_runs() {
    use weir::runtime::error::ErrorKind;
    use weir::runtime::wire::messages::{ErrorMessage, NetMessage};
    let c = cluster(0, Duration::from_secs(30));
    let mut stream = c.query_stream("SELECT id, v FROM t", &[]).unwrap();
    let mut rows = stream.next().unwrap().unwrap().num_rows();
    let stranger = NetMessage::QueryError(ErrorMessage {
        query: u64::MAX - 7,
        fragment: 1,
        kind: ErrorKind::Execution,
        message: "not yours".into(),
    });
    let net = c.network();
    // To a data node and to the client node (id 3), as if from data node 1.
    assert!(net.send(1, 0, &stranger));
    assert!(net.send(1, 3, &stranger));
    let unknown = |c: &Cluster| -> u64 {
        c.stats()
            .nodes
            .iter()
            .map(|n| n.unknown_query_messages)
            .sum()
    };
    let shared = c.shared();
    run_bounded(
        "two unknown-query messages counted",
        QUERY_LIMIT,
        move || {
            while unknown(&shared) < 2 {
                std::thread::sleep(Duration::from_millis(2));
            }
        },
    );
    for batch in stream {
        rows += batch.unwrap().num_rows();
    }
    assert_eq!(rows as i64, ROWS);
    assert_eq!(unknown(&c), 2);
    assert_eq!(total(&c).unwrap(), expected_total(0));
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
    let shared = c.shared();
    run_bounded("three forged messages counted", QUERY_LIMIT, move || {
        while decode_errors(&shared) < 3 {
            std::thread::sleep(Duration::from_millis(2));
        }
    });
    assert_eq!(decode_errors(&c), 3);
    assert!(c.stats().nodes.iter().all(|n| n.up));
    assert_eq!(total(&c).unwrap(), expected_total(0));
    assert_idle(&c);
}
