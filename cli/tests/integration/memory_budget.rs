//! In Guarded mode accounted memory never exceeds a node's budget: batches in flight wait for
//! room instead of being forced in, and every answer is still right. An edge's byte window
//! holds a producer back when rows are wide, whatever its batch window allows.

use crate::common;

use common::{assert_idle, sorted_rows};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use weir::runtime::{BreakerConfig, JoinMode};
use weir::{Batch, Cluster, Column, Value};
use weir_cli::bench::overload::{JoinData, CUSTOMERS, DEFAULT_NODE_MEMORY, ORDERS, OVERLOAD_QUERY};

/// `weir bench overload` in small: 10 nodes of 8 MiB, the join of orders and customers
/// grouped by region, many closed-loop clients for a few seconds, Guarded mode, with as many
/// joins at once as memory allows (not one per thread), so that memory is what holds them.
#[test]
fn guarded_overload_stays_within_every_budget_and_answers_right() {
    let data = JoinData::generate(CUSTOMERS, ORDERS, 42);
    let c = Cluster::builder()
        .nodes(10)
        .partitions(64)
        .node_memory(DEFAULT_NODE_MEMORY)
        .join_mode(JoinMode::Guarded)
        .breaker(BreakerConfig {
            joins_per_node: Some(usize::MAX),
            ..BreakerConfig::default()
        })
        .seed(42)
        // Queries wait their turn in the admission queue: the deadline is far enough for a
        // slow test build on a loaded machine; reaching it would fail the test below.
        .query_timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    data.load(&c).unwrap();
    let healthy = sorted_rows(c.query(OVERLOAD_QUERY, &[]).unwrap().rows());
    assert_eq!(healthy.len(), 8);

    let clients = 128;
    let deadline = Instant::now() + Duration::from_secs(3);
    let outcomes: Vec<BTreeMap<String, u64>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..clients)
            .map(|_| {
                let (c, healthy) = (&c, &healthy);
                std::thread::Builder::new()
                    .stack_size(256 * 1024)
                    .spawn_scoped(s, move || {
                        let mut seen = BTreeMap::new();
                        while Instant::now() < deadline {
                            let key = match c.query(OVERLOAD_QUERY, &[]) {
                                Ok(r) if sorted_rows(r.rows()) == *healthy => "ok".to_string(),
                                Ok(r) => format!("wrong answer: {:?}", r.rows()),
                                Err(e) => {
                                    let e = e.to_string();
                                    e.split(':').next().unwrap_or("").to_string()
                                }
                            };
                            *seen.entry(key).or_insert(0u64) += 1;
                        }
                        seen
                    })
                    .unwrap()
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut all: BTreeMap<String, u64> = BTreeMap::new();
    for o in outcomes {
        for (k, n) in o {
            *all.entry(k).or_default() += n;
        }
    }
    let s = c.stats();
    let peaks: Vec<(String, usize)> = s
        .nodes
        .iter()
        .map(|n| (n.name.clone(), n.memory_peak))
        .collect();
    eprintln!("outcomes {all:?}\nbreaker {:?}\npeaks {peaks:?}", s.breaker);
    assert!(
        all.keys().all(|k| !k.starts_with("wrong")),
        "wrong answers: {all:?}"
    );
    let ok = all.get("ok").copied().unwrap_or(0);
    let total: u64 = all.values().sum();
    assert_eq!(ok, total, "every query is answered, none fails: {all:?}");
    for n in &s.nodes {
        assert!(
            n.memory_peak <= n.memory_budget,
            "{}: peak {} over its budget of {}",
            n.name,
            n.memory_peak,
            n.memory_budget
        );
    }
    // The load was real: the data nodes came close to their budgets.
    let highest = s.nodes.iter().map(|n| n.memory_peak).max().unwrap_or(0);
    assert!(
        highest > DEFAULT_NODE_MEMORY / 2,
        "highest peak {highest}: no pressure"
    );
    assert!(s.nodes.iter().all(|n| n.up && !n.out_of_memory));
    assert_idle(&c);
}

/// 2,048 rows of about 1 KB in one partition: every batch has 64 rows (about 65 KB).
fn wide_cluster(window_bytes: Option<usize>) -> Cluster {
    let mut b = Cluster::builder()
        .nodes(2)
        .partitions(1)
        .batch_size(64)
        .window(8);
    if let Some(bytes) = window_bytes {
        b = b.window_bytes(bytes);
    }
    let c = b.build().unwrap();
    c.execute("CREATE TABLE w (id BIGINT PRIMARY KEY, pad VARCHAR)")
        .unwrap();
    let n = ROWS as i64;
    let pads: Vec<String> = (0..n).map(|i| format!("{i:0>1000}")).collect();
    c.load(
        "w",
        Batch::try_new(vec![
            Column::from_i64((0..n).collect()),
            Column::from_strs(&pads),
        ])
        .unwrap(),
    )
    .unwrap();
    c
}

/// Reads the wide rows with a pause after the first batch (so that every edge fills up to
/// what its credits allow); returns the rows read and the query's stats.
const ROWS: usize = 2_048;

fn read_wide(c: &Cluster) -> (usize, weir::QueryStats) {
    let mut stream = c.query_stream("SELECT id, pad FROM w", &[]).unwrap();
    let first = stream.next().unwrap().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let mut rows = first.num_rows();
    for b in stream.by_ref() {
        let b = b.unwrap();
        assert!(b
            .rows()
            .iter()
            .all(|r| matches!(&r[1], Value::Str(s) if s.len() == 1000)));
        rows += b.num_rows();
    }
    (rows, stream.stats().unwrap().clone())
}

#[test]
fn byte_window_holds_back_wide_rows() {
    // A batch of 64 rows of 1,000 bytes is about 65 KB of rows.
    let batch_bytes = 64 * 1000;

    // The batch window alone (8 batches; 8 MiB by default) lets edges fill with 8 batches.
    let c = wide_cluster(None);
    let (rows, _) = read_wide(&c);
    assert_eq!(rows, ROWS);
    let most = c.stats().nodes.iter().map(|n| n.edge_high_water).max();
    assert!(most.unwrap_or(0) >= 4, "{most:?}");
    assert_idle(&c);

    // A byte window of 100 KB holds every edge and channel to one wide batch at a time,
    // though the batch window would allow 8.
    let c = wide_cluster(Some(100_000));
    let (rows, stats) = read_wide(&c);
    assert_eq!(rows, ROWS);
    for n in c.stats().nodes {
        assert!(n.edge_high_water <= 1, "{}: {}", n.name, n.edge_high_water);
    }
    for (edge, bytes) in &stats.edge_bytes {
        assert!(*bytes <= 100_000, "{edge}: {bytes} bytes queued");
    }
    assert!(
        stats.edge_bytes.iter().any(|(_, b)| *b >= batch_bytes),
        "{:?}",
        stats.edge_bytes
    );
    assert_idle(&c);

    // A byte window smaller than one batch: each batch goes alone, nothing stalls.
    let c = wide_cluster(Some(10_000));
    let (rows, stats) = read_wide(&c);
    assert_eq!(rows, ROWS);
    for n in c.stats().nodes {
        assert!(n.edge_high_water <= 1, "{}: {}", n.name, n.edge_high_water);
    }
    assert!(
        stats.edges.iter().all(|(_, hw)| *hw <= 1),
        "{:?}",
        stats.edges
    );
    assert_idle(&c);
}

/// A paused reader with windows wide enough for the whole result: in Guarded mode the batches
/// in flight fill what room the nodes have left and then wait for it, instead of being forced
/// past the budget; the query still completes.
#[test]
fn batches_in_flight_wait_for_room_instead_of_passing_the_budget() {
    let budget = 16 << 20;
    let c = Cluster::builder()
        .nodes(1)
        .partitions(1)
        .batch_size(64)
        .window(256)
        .window_bytes(64 << 20)
        .node_memory(budget)
        .join_mode(JoinMode::Guarded)
        .build()
        .unwrap();
    c.execute("CREATE TABLE w (id BIGINT PRIMARY KEY, pad VARCHAR)")
        .unwrap();
    let n = 8_192i64;
    let pads: Vec<String> = (0..n).map(|i| format!("{i:0>1000}")).collect();
    c.load(
        "w",
        Batch::try_new(vec![
            Column::from_i64((0..n).collect()),
            Column::from_strs(&pads),
        ])
        .unwrap(),
    )
    .unwrap();
    // Pressure from outside weir, under the breaker's limit: about 2.5 MiB left on the data
    // node and on the client, against 8 MB of rows.
    let held: Vec<_> = (0..2)
        .map(|i| c.hold_memory(i, budget * 84 / 100).unwrap())
        .collect();
    let mut stream = c.query_stream("SELECT id, pad FROM w", &[]).unwrap();
    let first = stream.next().unwrap().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let s = c.stats();
    for node in &s.nodes {
        assert!(
            node.memory_reserved <= budget,
            "{}: {} accounted",
            node.name,
            node.memory_reserved
        );
    }
    let mut rows = first.num_rows();
    let mut ids = Vec::new();
    ids.extend(first.column(0).as_i64().unwrap().iter().copied());
    for b in stream.by_ref() {
        let b = b.unwrap();
        rows += b.num_rows();
        ids.extend(b.column(0).as_i64().unwrap().iter().copied());
    }
    assert_eq!(rows, n as usize);
    ids.sort_unstable();
    assert_eq!(ids, (0..n).collect::<Vec<_>>());
    for node in c.stats().nodes {
        assert!(
            node.memory_peak <= node.memory_budget,
            "{}: peak {} over its budget of {}",
            node.name,
            node.memory_peak,
            node.memory_budget
        );
        // The rows did fill the room that was left.
        assert!(
            node.memory_peak > budget * 90 / 100,
            "{}: peak {}",
            node.name,
            node.memory_peak
        );
    }
    drop(held);
    assert_idle(&c);
}
