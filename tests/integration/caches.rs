//! Caches never cost correctness: the plan cache on the client and the fragment caches on the
//! data nodes may evict anything at any time, and every statement still runs and answers
//! right, including the ones whose plans were evicted.

use crate::common;

use common::{assert_idle, TestCluster};
use std::time::Duration;
use weir::{Batch, Cluster, Column, Value};

const ROWS: i64 = 2_000;

fn cluster(plan_cache: usize, fragment_cache: usize) -> TestCluster {
    let c = Cluster::builder()
        .nodes(3)
        .partitions(64)
        .plan_cache(plan_cache)
        .fragment_cache(fragment_cache)
        // A hang fails the test with a timeout error instead of passing.
        .query_timeout(Duration::from_secs(10))
        .build()
        .map(TestCluster::new)
        .unwrap();
    c.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, k BIGINT, v BIGINT)")
        .unwrap();
    c.load(
        "t",
        Batch::try_new(vec![
            Column::from_i64((0..ROWS).collect()),
            Column::from_i64((0..ROWS).map(|i| i % 50).collect()),
            Column::from_i64((0..ROWS).map(|i| i * 7).collect()),
        ])
        .unwrap(),
    )
    .unwrap();
    c
}

/// Statement `i`: a distinct text and a distinct plan (the constant differs), with its answer.
fn statement(i: i64) -> (String, Vec<Vec<Value>>) {
    let sql = format!("SELECT COUNT(*), SUM(v) FROM t WHERE k = {}", i % 50);
    let sql = format!("{sql} AND id >= {i}");
    let rows: Vec<i64> = (0..ROWS).filter(|r| r % 50 == i % 50 && *r >= i).collect();
    let sum: i64 = rows.iter().map(|r| r * 7).sum();
    let want = vec![vec![
        Value::Int(rows.len() as i64),
        if rows.is_empty() {
            Value::Null
        } else {
            Value::Int(sum)
        },
    ]];
    (sql, want)
}

#[test]
fn statements_beyond_the_fragment_cache_run_again_after_eviction() {
    let c = cluster(1024, 8);
    // Five times the nodes' fragment cache in distinct statements, then the first ones again:
    // their plans were evicted on the nodes but the client still remembers sending them.
    for i in (0..40).chain(0..10) {
        let (sql, want) = statement(i);
        let got = c.query(&sql, &[]).unwrap_or_else(|e| panic!("{sql}: {e}"));
        assert_eq!(got.rows(), want, "{sql}");
    }
    let misses: u64 = c
        .stats()
        .nodes
        .iter()
        .map(|n| n.fragment_cache_misses)
        .sum();
    assert!(
        misses > 0,
        "the first statements again must have found their plans evicted"
    );
    assert_idle(&c);
}

#[test]
fn statements_beyond_both_caches_answer_right() {
    let c = cluster(4, 4);
    for i in (0..30).chain(0..30) {
        let (sql, want) = statement(i);
        let got = c.query(&sql, &[]).unwrap_or_else(|e| panic!("{sql}: {e}"));
        assert_eq!(got.rows(), want, "{sql}");
    }
    assert_idle(&c);
}

#[test]
fn no_fragment_cache_at_all_still_answers() {
    let c = cluster(1024, 0);
    for i in [3, 3, 4, 3] {
        let (sql, want) = statement(i);
        assert_eq!(c.query(&sql, &[]).unwrap().rows(), want, "{sql}");
    }
    assert_idle(&c);
}
