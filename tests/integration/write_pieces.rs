//! Writes larger than one message: a node's share is cut by partition into pieces below the
//! message limit (`ClusterBuilder::write_piece_bytes` makes the pieces small here), held on
//! the node until all have come, and committed or aborted as one write.

use crate::common::{assert_idle, cluster_builder, TestCluster};
use std::time::Duration;
use weir::runtime::{FaultPlan, MessageKind};
use weir::{Batch, Cluster, Column, Error, Value};

/// 3 nodes, one backup, pieces of at most 4 KiB of rows.
fn cluster(nodes: usize, backups: usize) -> TestCluster {
    let c = cluster_builder()
        .nodes(nodes)
        .backups(backups)
        .write_piece_bytes(4 << 10)
        .build()
        .map(TestCluster::new)
        .unwrap();
    c.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, v BIGINT)")
        .unwrap();
    c
}

fn rows(ids: std::ops::Range<i64>) -> Batch {
    Batch::try_new(vec![
        Column::from_i64(ids.clone().collect()),
        Column::from_i64(ids.map(|i| i * 3).collect()),
    ])
    .unwrap()
}

fn ids(c: &Cluster) -> Vec<i64> {
    c.query("SELECT id FROM t ORDER BY id", &[])
        .unwrap()
        .rows()
        .into_iter()
        .map(|r| match r[0] {
            Value::Int(i) => i,
            ref v => panic!("{v:?}"),
        })
        .collect()
}

#[test]
fn a_write_larger_than_a_piece_arrives_in_pieces_and_commits_once() {
    let c = cluster(3, 1);
    let before = c.stats().messages;
    // 20,000 rows of 16 bytes: about 100 KiB per node, some 25 pieces each.
    c.load("t", rows(0..20_000)).unwrap();
    let after = c.stats().messages;
    let sent = |k| after.count(k) - before.count(k);
    assert!(sent(MessageKind::WritePrepare) > 30, "{after:?}");
    // One vote and one commit per node, however many pieces.
    assert_eq!(sent(MessageKind::WriteCommit), 3);
    assert_eq!(sent(MessageKind::WriteReply), 6);
    assert_eq!(ids(&c), (0..20_000).collect::<Vec<_>>());
    let sum = c.query("SELECT SUM(v) FROM t", &[]).unwrap().rows();
    assert_eq!(sum, vec![vec![Value::Int(3 * (0..20_000i64).sum::<i64>())]]);
    assert_idle(&c);
}

#[test]
fn a_refused_row_in_any_piece_aborts_the_whole_write() {
    let c = cluster(3, 1);
    c.load("t", rows(0..10)).unwrap();
    // Every piece but the ones holding id 5 is fine: nothing of the write may stay.
    let e = c.load("t", rows(5..20_000)).unwrap_err();
    assert!(matches!(e, Error::DuplicateKey { .. }), "{e}");
    assert_eq!(ids(&c), (0..10).collect::<Vec<_>>());
    // The nodes hold nothing of it either: the next write of those rows goes through.
    c.load("t", rows(10..20_000)).unwrap();
    assert_eq!(ids(&c).len(), 20_000);
    assert_idle(&c);
}

#[test]
fn one_node_in_pieces_votes_before_it_commits() {
    let c = cluster(1, 0);
    let before = c.stats().messages;
    c.load("t", rows(0..5_000)).unwrap();
    let after = c.stats().messages;
    let sent = |k| after.count(k) - before.count(k);
    assert!(sent(MessageKind::WritePrepare) > 1, "{after:?}");
    assert_eq!(sent(MessageKind::WriteCommit), 1, "{after:?}");
    assert_eq!(ids(&c), (0..5_000).collect::<Vec<_>>());
}

#[test]
fn pieces_lost_duplicated_and_reordered_on_the_way_are_held_once() {
    let c = cluster(3, 1);
    c.set_faults(Some(FaultPlan {
        seed: 7,
        drop: 0.1,
        duplicate: 0.3,
        delay: Some((Duration::ZERO, Duration::from_millis(3))),
        ..FaultPlan::default()
    }));
    c.load("t", rows(0..20_000)).unwrap();
    c.set_faults(None);
    assert_eq!(ids(&c), (0..20_000).collect::<Vec<_>>());
    assert_idle(&c);
}

#[test]
fn a_write_in_pieces_reads_back_from_the_log_after_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let open = || {
        cluster_builder()
            .nodes(3)
            .backups(1)
            .write_piece_bytes(4 << 10)
            .data_dir(tmp.path())
            .build()
            .unwrap()
    };
    let c = open();
    c.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, v BIGINT)")
        .unwrap();
    c.load("t", rows(0..20_000)).unwrap();
    drop(c);
    let c = open();
    assert_eq!(ids(&c), (0..20_000).collect::<Vec<_>>());
}
