//! Exact message counts of the Lean and Legacy workflows, the same answers under both, and
//! the plan caches.

use crate::common;

use common::{assert_idle, cluster_with, TestCluster};
use std::time::{Duration, Instant};
use weir::demo::{load_item, SEED_QUERIES};
use weir::runtime::replication::copies::owners;
use weir::runtime::wire::partition_map::encoded_sizes;
use weir::runtime::FaultPlan;
use weir::{Batch, Cluster, Column, Error, MessageKind as K, MessageStats, Protocol, Value};

fn counts(s: &MessageStats) -> [u64; 6] {
    [
        s.count(K::QueryStartRequest),
        s.count(K::QueryStartResponse),
        s.count(K::QueryBatch),
        s.count(K::QueryBatchAck),
        s.count(K::QueryClose),
        s.count(K::QueryError),
    ]
}

fn item_cluster(protocol: Protocol) -> TestCluster {
    let c = cluster_with(3, protocol);
    load_item(&c, 10_000).unwrap();
    c
}

#[test]
fn point_query_costs_2_messages_lean_and_6_legacy() {
    for (protocol, expected) in [
        (Protocol::Lean, [1, 0, 1, 0, 0, 0]),
        (Protocol::Legacy, [1, 1, 1, 1, 1, 1]),
    ] {
        let c = item_cluster(protocol);
        for key in [5i64, 777, 9_999] {
            let r = c
                .query("SELECT name FROM Item WHERE id = ?", &[Value::Int(key)])
                .unwrap();
            assert_eq!(r.rows(), vec![vec![Value::Str(format!("name{key}"))]]);
            assert_eq!(counts(&r.stats.messages), expected, "{protocol:?}");
            assert_eq!(r.stats.messages.total, expected.iter().sum::<u64>());
        }
        assert_idle(&c);
    }
}

#[test]
fn one_batch_per_node_costs_6_lean_and_18_legacy() {
    for (protocol, total) in [(Protocol::Lean, 6), (Protocol::Legacy, 18)] {
        let c = item_cluster(protocol);
        for q in [
            "SELECT name FROM Item WHERE fld = ?",
            "SELECT name FROM Item WHERE fldIdx = ?",
        ] {
            let r = c.query(q, &[Value::Int(4242)]).unwrap();
            assert_eq!(r.num_rows(), 1);
            assert_eq!(
                r.stats.messages.total, total,
                "{protocol:?} {q}: {:?}",
                r.stats.messages
            );
            assert_eq!(r.stats.messages.count(K::QueryBatch), 3);
        }
        assert_idle(&c);
    }
}

#[test]
fn multi_batch_results_ack_all_but_the_last_batch_under_lean() {
    let c = TestCluster::new(
        Cluster::builder()
            .nodes(3)
            .partitions(64)
            .batch_size(100)
            .build()
            .unwrap(),
    );
    c.execute("CREATE TABLE t (id BIGINT PRIMARY KEY)").unwrap();
    c.load(
        "t",
        Batch::try_new(vec![Column::from_i64((0..3000).collect())]).unwrap(),
    )
    .unwrap();
    let per_node: Vec<u64> = c
        .stats()
        .nodes
        .iter()
        .filter(|n| n.is_data)
        .map(|n| (n.rows_stored as u64).div_ceil(100))
        .collect();
    let batches: u64 = per_node.iter().sum();
    let r = c.query("SELECT id FROM t", &[]).unwrap();
    assert_eq!(r.num_rows(), 3000);
    let m = &r.stats.messages;
    assert_eq!(counts(m), [3, 0, batches, batches - 3, 0, 0], "{m:?}");
    assert_idle(&c);
}

#[test]
fn cancelled_stream_closes_only_running_fragments() {
    let c = TestCluster::new(
        Cluster::builder()
            .nodes(3)
            .partitions(64)
            .batch_size(100)
            .window(2)
            .build()
            .unwrap(),
    );
    c.execute("CREATE TABLE t (id BIGINT PRIMARY KEY)").unwrap();
    c.load(
        "t",
        Batch::try_new(vec![Column::from_i64((0..30_000).collect())]).unwrap(),
    )
    .unwrap();
    let before = c.stats().messages;
    let mut s = c.query_stream("SELECT id FROM t", &[]).unwrap();
    s.next().unwrap().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(100));
    drop(s);
    assert_idle(&c);
    let after = c.stats().messages;
    // Every node still had batches to send: each gets one close, and under Lean no error
    // comes back for it.
    assert_eq!(after.count(K::QueryClose) - before.count(K::QueryClose), 3);
    assert_eq!(after.count(K::QueryError) - before.count(K::QueryError), 0);

    // A query whose fragments all finished needs no close at all.
    let r = c.query("SELECT COUNT(*) FROM t", &[]).unwrap();
    assert_eq!(r.rows(), vec![vec![Value::Int(30_000)]]);
    assert_eq!(r.stats.messages.count(K::QueryClose), 0);
}

#[test]
fn failing_fragment_fails_the_query_and_closes_the_rest() {
    // Only the row with fld = 1234 overflows (CASE evaluates a branch only on the rows that
    // take it): the error must name the node owning that row.
    let partition = weir::operators::placement::partition_of(&Value::Int(1234), 64);
    let owner = format!("node-{}", owners(64, 3)[partition as usize]);
    for protocol in [Protocol::Lean, Protocol::Legacy] {
        let c = item_cluster(protocol);
        let before = c.stats().messages;
        let err = c
            .query(
                "SELECT CASE WHEN fld = ? THEN fld + 9223372036854775807 ELSE 0 END FROM Item",
                &[Value::Int(1234)],
            )
            .unwrap_err();
        match &err {
            Error::Overflow { node, message } => {
                assert_eq!(node, &owner, "{err}");
                assert!(message.contains("overflow"), "{err}");
            }
            other => panic!("expected an overflow error, got {other}"),
        }
        assert_idle(&c);
        let after = c.stats().messages;
        let closes = after.count(K::QueryClose) - before.count(K::QueryClose);
        match protocol {
            // Legacy closes every remote fragment; Lean only those that had not finished.
            Protocol::Legacy => assert_eq!(closes, 3),
            Protocol::Lean => assert!(closes <= 3, "{closes} closes for 3 fragments"),
        }
        // The cluster still answers.
        let r = c.query("SELECT COUNT(*) FROM Item", &[]).unwrap();
        assert_eq!(r.rows(), vec![vec![Value::Int(10_000)]]);
    }
}

#[test]
fn both_protocols_give_the_same_answers() {
    let lean = item_cluster(Protocol::Lean);
    let legacy = item_cluster(Protocol::Legacy);
    for q in SEED_QUERIES {
        for key in [3i64, 5_432] {
            let a = lean.query(q.sql, &q.params(key)).unwrap();
            let b = legacy.query(q.sql, &q.params(key)).unwrap();
            let (mut ra, mut rb) = (a.rows(), b.rows());
            let sort = |r: &mut Vec<Vec<Value>>| {
                r.sort_by(|x, y| {
                    x.iter()
                        .zip(y)
                        .map(|(p, q)| p.sort_cmp(q))
                        .find(|o| o.is_ne())
                        .unwrap_or(std::cmp::Ordering::Equal)
                })
            };
            sort(&mut ra);
            sort(&mut rb);
            assert_eq!(ra, rb, "{}", q.name);
            assert!(
                b.stats.messages.total > a.stats.messages.total,
                "{}",
                q.name
            );
        }
    }
    assert_idle(&lean);
    assert_idle(&legacy);
}

#[test]
fn plan_cache_skips_parsing_and_ddl_invalidates() {
    let c = item_cluster(Protocol::Lean);
    let sql = "SELECT name FROM Item WHERE fldIdx = ?";
    c.query(sql, &[Value::Int(1)]).unwrap();
    let s1 = c.stats();
    let r = c.query(sql, &[Value::Int(2)]).unwrap();
    assert_eq!(r.rows(), vec![vec![Value::from("name2")]]);
    let s2 = c.stats();
    assert_eq!(s2.parses, s1.parses, "a repeated query must not be parsed");
    assert_eq!(s2.plan_cache_hits, s1.plan_cache_hits + 1);
    // Different parameter types do not share a plan.
    let r = c.query(sql, &[Value::Null]).unwrap();
    assert_eq!(r.num_rows(), 0, "x = NULL matches nothing");
    assert_eq!(c.stats().plan_cache_misses, s2.plan_cache_misses + 1);
    // DDL invalidates.
    c.execute("CREATE TABLE other (id BIGINT PRIMARY KEY)")
        .unwrap();
    let s3 = c.stats();
    c.query(sql, &[Value::Int(4)]).unwrap();
    assert_eq!(c.stats().parses, s3.parses + 1);
    // Nodes keep the fragments they were sent: a repeated query sends only the key.
    let r = c.query(sql, &[Value::Int(5)]).unwrap();
    let hits: u64 = c.stats().nodes.iter().map(|n| n.fragment_cache_hits).sum();
    assert!(hits >= 3, "fragment cache hits: {hits}");
    assert_eq!(r.rows(), vec![vec![Value::from("name5")]]);
    assert_idle(&c);
}

/// Expects one timeout (bounded by the 2 s timeout plus a margin): a query first run while
/// node-1 is cut off never reaches node-1 with its plan. Once the network is whole again the
/// same query must be answered: node-1, missing the plan, must be sent it again.
#[test]
fn a_plan_lost_on_the_way_is_sent_again() {
    let timeout = Duration::from_secs(2);
    let c = TestCluster::new(
        Cluster::builder()
            .nodes(3)
            .partitions(64)
            .query_timeout(timeout)
            .build()
            .unwrap(),
    )
    .with_limit(timeout + Duration::from_secs(5));
    let n = 3000i64;
    common::load_t(&c, n, |i| i * 2);
    let sql = "SELECT COUNT(*), SUM(v) FROM t";
    let want = vec![vec![Value::Int(n), Value::Int(n * (n - 1))]];
    c.set_faults(Some(FaultPlan {
        cut_off: vec![1],
        ..FaultPlan::default()
    }));
    let t = Instant::now();
    assert_eq!(c.query(sql, &[]).unwrap_err(), Error::Timeout(timeout));
    assert!(t.elapsed() >= timeout);
    c.set_faults(None);
    for attempt in 0..2 {
        let r = c.query(sql, &[]);
        assert_eq!(
            r.map(|r| r.rows()),
            Ok(want.clone()),
            "run {attempt} after the network healed"
        );
    }
    assert_idle(&c);
}

/// A node keeps a bounded number of plans (1024) and forgets them all when it is full. A
/// long-running service runs more distinct queries than that: a query whose plan a node
/// forgot must still be answered (the node asks for the plan, and must be sent it).
#[test]
fn a_node_that_forgot_its_plans_is_sent_them_again() {
    let c = TestCluster::new(Cluster::builder().nodes(3).partitions(64).build().unwrap());
    let n = 3000i64;
    common::load_t(&c, n, |i| i);
    // Distinct literals make distinct plans.
    let sql = |i: i64| format!("SELECT COUNT(*) FROM t WHERE v >= {i}");
    let distinct = 1100;
    for i in 0..distinct {
        let r = c.query(&sql(i), &[]).unwrap();
        assert_eq!(r.rows(), vec![vec![Value::Int(n - i)]], "{}", sql(i));
    }
    let misses: u64 = c
        .stats()
        .nodes
        .iter()
        .map(|s| s.fragment_cache_misses)
        .sum();
    assert_eq!(misses, 0, "every plan was sent in full the first time");
    // The first plans were forgotten when the nodes' caches filled up.
    for i in [0, 1, distinct - 1] {
        let r = c.query(&sql(i), &[]);
        assert_eq!(
            r.map(|r| r.rows()),
            Ok(vec![vec![Value::Int(n - i)]]),
            "{} again",
            sql(i)
        );
    }
    assert_idle(&c);
}

#[test]
fn compact_start_request_is_a_twentieth_of_the_list() {
    let assigned: Vec<Option<u32>> = owners(1024, 3).into_iter().map(Some).collect();
    let (compact, list) = encoded_sizes(&assigned);
    assert!(compact * 20 <= list, "compact {compact}, list {list}");
}
