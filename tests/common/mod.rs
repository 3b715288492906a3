//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::time::Duration;
use weir::{Cluster, Protocol, Value};

/// A cluster with `nodes` data nodes and 64 partitions per table.
pub fn cluster(nodes: usize) -> Cluster {
    Cluster::builder()
        .nodes(nodes)
        .partitions(64)
        .build()
        .expect("cluster starts")
}

/// A cluster with the given protocol.
pub fn cluster_with(nodes: usize, protocol: Protocol) -> Cluster {
    Cluster::builder()
        .nodes(nodes)
        .partitions(64)
        .protocol(protocol)
        .build()
        .expect("cluster starts")
}

/// Asserts that every query actor has stopped and every reservation was returned.
pub fn assert_idle(cluster: &Cluster) {
    let idle = cluster.wait_idle(Duration::from_secs(10));
    let s = cluster.stats();
    assert!(
        idle,
        "cluster not idle: live actors {} (baseline {}), reserved {} bytes: {:?}",
        s.live_actors(),
        cluster.baseline_actors(),
        s.memory_reserved(),
        s.nodes
    );
}

/// Rows as integers (panics on other values).
pub fn ints(rows: &[Vec<Value>]) -> Vec<Vec<i64>> {
    rows.iter()
        .map(|r| {
            r.iter()
                .map(|v| {
                    v.as_i64()
                        .unwrap_or_else(|| panic!("not an integer: {v:?}"))
                })
                .collect()
        })
        .collect()
}
