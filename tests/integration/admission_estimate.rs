//! Admission predicts a query's join memory from table sizes, so that it holds queries back
//! from a node's first query on, not only once joins have finished there: a burst of joins on
//! a fresh cluster waits its turn instead of tripping the breaker.

use crate::common;

use common::{assert_idle, BoundedStream, TestCluster};
use std::time::Duration;
use weir::runtime::{BreakerConfig, JoinMode};
use weir::{Batch, Cluster, Column, Error, Value};

const MIB: usize = 1024 * 1024;

/// Rows of `small`, the build side.
const SMALL: i64 = 20_000;
/// Rows of `big`, the probe side.
const BIG: i64 = 60_000;

/// A fresh cluster of `nodes` data nodes with `budget` bytes each and the reset mark at
/// `reset` of the budget, holding `big (id, k)` and `small (id, w)`; no query has run yet.
fn fresh(nodes: usize, budget: usize, reset: f64) -> TestCluster {
    let c = Cluster::builder()
        .nodes(nodes)
        .partitions(32)
        .node_memory(budget)
        .join_mode(JoinMode::Guarded)
        .breaker(BreakerConfig {
            reset,
            base: Duration::from_millis(10),
            cap: Duration::from_millis(200),
            ..BreakerConfig::default()
        })
        .seed(11)
        .query_timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    c.execute("CREATE TABLE big (id BIGINT PRIMARY KEY, k BIGINT)")
        .unwrap();
    c.execute("CREATE TABLE small (id BIGINT PRIMARY KEY, w BIGINT)")
        .unwrap();
    c.load(
        "big",
        Batch::try_new(vec![
            Column::from_i64((0..BIG).collect()),
            Column::from_i64((0..BIG).map(|i| i % SMALL).collect()),
        ])
        .unwrap(),
    )
    .unwrap();
    c.load(
        "small",
        Batch::try_new(vec![
            Column::from_i64((0..SMALL).collect()),
            Column::from_i64((0..SMALL).collect()),
        ])
        .unwrap(),
    )
    .unwrap();
    TestCluster::new(c)
}

fn drain(s: BoundedStream) -> Result<usize, Error> {
    let mut rows = 0;
    for b in s {
        rows += b?.num_rows();
    }
    Ok(rows)
}

#[test]
fn the_first_join_on_a_fresh_cluster_is_admitted_with_a_non_zero_estimate() {
    let c = fresh(2, 64 * MIB, 0.7);
    // Every join row travels to the client, whose channel holds a few batches: the query
    // stays admitted (running) until the stream is read.
    let mut stream = c
        .query_stream(
            "SELECT big.id, small.w FROM big JOIN small ON big.k = small.id",
            &[],
        )
        .unwrap();
    // Its first rows: it was admitted and runs.
    let first = stream.next().expect("a first batch").unwrap().num_rows();
    let s = c.stats();
    let data: Vec<_> = s.nodes.iter().filter(|n| n.is_data).collect();
    // Each data node builds its share of `small`: 10,000 rows of two BIGINTs, at least
    // 16 bytes a row, predicted before any join ran anywhere.
    for n in &data {
        assert!(
            n.admitted_memory >= 10_000 * 16,
            "{}: {} bytes admitted",
            n.name,
            n.admitted_memory
        );
        assert!(n.admitted_memory < 64 * MIB, "{n:?}");
    }
    assert_eq!(drain(stream).map(|rest| first + rest), Ok(BIG as usize));
    // The query gave back what it was admitted with.
    assert!(c.stats().nodes.iter().all(|n| n.admitted_memory == 0));
    assert_idle(&c);
}

#[test]
fn a_burst_of_joins_on_a_fresh_cluster_waits_its_turn_instead_of_tripping_the_breaker() {
    // One data node of 12 MiB; each join builds about 1 MiB there. Admission fills up to
    // the reset mark (set at 40%, 4.8 MiB: four or five joins at a time), well under the
    // limit (85%, 10.2 MiB) where the breaker trips; sixteen joins at once would pass it.
    let budget = 12 * MIB;
    let c = fresh(1, budget, 0.4);
    let join = "SELECT COUNT(*) FROM big JOIN small ON big.k = small.id";
    let streams: Vec<BoundedStream> = (0..16)
        .map(|_| c.query_stream(join, &[]).unwrap())
        .collect();
    let outcomes: Vec<Result<Vec<Vec<Value>>, Error>> = streams
        .into_iter()
        .map(|s| s.collect_all().map(|r| r.rows()))
        .collect();
    for o in &outcomes {
        assert_eq!(o, &Ok(vec![vec![Value::Int(BIG)]]));
    }
    let s = c.stats();
    eprintln!(
        "breaker {:?}; node-0 peak {} of {budget}",
        s.breaker, s.nodes[0].memory_peak
    );
    assert!(
        s.breaker.rejections > 0,
        "some joins had to wait: {:?}",
        s.breaker
    );
    assert_eq!(
        (s.nodes[0].trips, s.breaker.kills),
        (0, 0),
        "the breaker never tripped: {:?}, peak {} of {budget}",
        s.breaker,
        s.nodes[0].memory_peak
    );
    assert!(s.nodes.iter().all(|n| n.memory_peak <= n.memory_budget));
    assert_idle(&c);
}
