//! A slow consumer holds the producers back: no edge ever holds more batches than its
//! window, and the cluster does not run ahead of the reader.

use crate::common;

use common::{assert_idle, TestCluster};
use std::time::Duration;
use weir::{Cluster, MessageKind};

#[test]
fn slow_consumer_bounds_every_edge() {
    let window = 2;
    let c = TestCluster::new(
        Cluster::builder()
            .nodes(3)
            .partitions(64)
            .batch_size(256)
            .window(window)
            .build()
            .unwrap(),
    );
    let n = 60_000i64;
    common::load_t(&c, n, |i| i);
    let total_batches = n as u64 / 256;
    let before = c.stats().messages.count(MessageKind::QueryBatch);

    let mut stream = c
        .query_stream("SELECT id, v + 1 FROM t WHERE v >= 0", &[])
        .unwrap();
    let first = stream.next().unwrap().unwrap();
    assert!(first.num_rows() > 0);
    // Give the producers every chance to run ahead while the reader sleeps.
    std::thread::sleep(Duration::from_millis(300));
    let sent = c.stats().messages.count(MessageKind::QueryBatch) - before;
    assert!(
        sent < total_batches / 4,
        "producers ran ahead of a paused reader: {sent} of {total_batches} batches sent"
    );

    let mut rows = first.num_rows();
    for b in stream.by_ref() {
        rows += b.unwrap().num_rows();
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(rows, n as usize);
    let stats = stream.stats().unwrap().clone();
    assert!(!stats.edges.is_empty());
    for (edge, hw) in &stats.edges {
        assert!(
            *hw <= window,
            "edge {edge} held {hw} batches, window is {window}"
        );
    }
    // The window is actually used: the paused reader let at least one edge fill up.
    assert!(
        stats.edges.iter().any(|(_, hw)| *hw == window),
        "{:?}",
        stats.edges
    );
    assert_idle(&c);
    for node in c.stats().nodes {
        assert!(
            node.edge_high_water <= window,
            "{}: {}",
            node.name,
            node.edge_high_water
        );
    }
}
