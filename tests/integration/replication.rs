//! Replication keeps acknowledged writes: writes reach every live copy through the network
//! (faults included) before they are acknowledged, a copy that missed writes serves no reads
//! until it caught up from a copy at the newest version, and a seeded simulation of writes,
//! crashes and restarts under network faults loses no acknowledged row and duplicates none.

use crate::common;

use common::{assert_idle, TestCluster};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::collections::BTreeMap;
use std::time::Duration;
use weir::operators::placement::partition_of;
use weir::runtime::{FaultPlan, MessageKind};
use weir::{Cluster, Error, Value};

fn cluster(nodes: usize, backups: usize) -> TestCluster {
    let c = Cluster::builder()
        .nodes(nodes)
        .partitions(16)
        .backups(backups)
        .query_timeout(Duration::from_secs(10))
        .build()
        .map(TestCluster::new)
        .unwrap();
    c.execute("CREATE TABLE r (id BIGINT PRIMARY KEY, v BIGINT)")
        .unwrap();
    c
}

fn ids(c: &TestCluster) -> Result<Vec<i64>, Error> {
    let rows = c.query("SELECT id FROM r ORDER BY id", &[])?.rows();
    Ok(rows.iter().map(|r| r[0].as_i64().unwrap()).collect())
}

#[test]
fn an_acknowledged_insert_survives_both_copies_crashing_in_turn() {
    // The sequence that used to lose the row: the write reaches only node-1, node-1 crashes,
    // node-0 comes back with its old copy, then node-1 comes back.
    let c = cluster(2, 1);
    c.execute("INSERT INTO r VALUES (1, 10)").unwrap();
    c.crash_node(0).unwrap();
    assert_eq!(c.execute("INSERT INTO r VALUES (2, 20)").unwrap(), 1);
    c.crash_node(1).unwrap();
    c.restart_node(0).unwrap();
    // node-0's copy missed the write and no copy that has it is up: no stale answer.
    match ids(&c) {
        Err(Error::NodeDown(n)) => assert!(n.starts_with("node-"), "{n}"),
        other => panic!("a stale copy must not answer: {other:?}"),
    }
    // Nor can a write go to the stale copy alone: another key of id 2's partition.
    let p = partition_of(&Value::Int(2), 16);
    let same = (3..1000)
        .find(|&k| partition_of(&Value::Int(k), 16) == p)
        .unwrap();
    let e = c
        .execute(&format!("INSERT INTO r VALUES ({same}, 30)"))
        .unwrap_err();
    assert!(matches!(e, Error::NodeDown(_)), "{e}");
    c.restart_node(1).unwrap();
    assert_eq!(ids(&c).unwrap(), vec![1, 2]);
    // node-0 caught up from node-1: it answers alone.
    c.crash_node(1).unwrap();
    assert_eq!(ids(&c).unwrap(), vec![1, 2]);
    let mut on0 = c.stored_rows(0, "r");
    on0.sort_by_key(|r| r[0].as_i64());
    assert_eq!(
        on0,
        vec![
            vec![Value::Int(1), Value::Int(10)],
            vec![Value::Int(2), Value::Int(20)]
        ]
    );
    c.restart_node(1).unwrap();
    assert_idle(&c);
}

/// `(id, v)` of every row of `r`, by id.
fn rows(c: &TestCluster) -> Vec<(i64, i64)> {
    let r = c.query("SELECT id, v FROM r ORDER BY id", &[]).unwrap();
    r.rows()
        .iter()
        .map(|r| (r[0].as_i64().unwrap(), r[1].as_i64().unwrap()))
        .collect()
}

#[test]
fn deletes_and_updates_reach_the_backups_and_survive_a_crash() {
    let c = cluster(3, 1);
    let values: Vec<String> = (1..=40).map(|i| format!("({i}, {i})")).collect();
    c.execute(&format!("INSERT INTO r VALUES {}", values.join(", ")))
        .unwrap();
    assert_eq!(c.execute("DELETE FROM r WHERE id % 4 = 0").unwrap(), 10);
    assert_eq!(
        c.execute("UPDATE r SET v = v * 100 WHERE id % 4 = 1")
            .unwrap(),
        10
    );
    // A key change moves the row to another partition, on its copies there.
    assert_eq!(c.execute("UPDATE r SET id = 1000 WHERE id = 2").unwrap(), 1);
    let mut want: Vec<(i64, i64)> = (1..=40)
        .filter(|i| i % 4 != 0 && *i != 2)
        .map(|i| (i, if i % 4 == 1 { i * 100 } else { i }))
        .collect();
    want.push((1000, 2));
    assert_eq!(rows(&c), want);
    // Whichever node dies, the copies left show the deletes and the new values.
    for n in 0..3 {
        c.crash_node(n).unwrap();
        assert_eq!(rows(&c), want, "with node-{n} down");
        c.restart_node(n).unwrap();
    }
    // A write while a node is down reaches it when it comes back.
    c.crash_node(1).unwrap();
    assert_eq!(c.execute("DELETE FROM r WHERE id < 10").unwrap(), 6);
    assert_eq!(c.execute("UPDATE r SET v = -1 WHERE id = 1000").unwrap(), 1);
    want.retain(|&(id, _)| id >= 10);
    if let Some(last) = want.last_mut() {
        last.1 = -1;
    }
    c.restart_node(1).unwrap();
    c.crash_node(0).unwrap();
    assert_eq!(rows(&c), want);
    c.restart_node(0).unwrap();
    c.crash_node(2).unwrap();
    assert_eq!(rows(&c), want);
    c.restart_node(2).unwrap();
    // Every node holds only rows that still exist, with their new values.
    for n in 0..3 {
        for r in c.stored_rows(n, "r") {
            let row = (r[0].as_i64().unwrap(), r[1].as_i64().unwrap());
            assert!(want.contains(&row), "node-{n} still holds {row:?}");
        }
    }
    assert_idle(&c);
}

#[test]
fn writes_travel_as_messages_and_a_refused_row_writes_nothing() {
    let c = cluster(3, 1);
    let before = c.stats().messages;
    c.execute("INSERT INTO r VALUES (1, 1), (2, 2), (3, 3), (4, 4)")
        .unwrap();
    let after = c.stats().messages;
    let sent = |k| after.count(k) - before.count(k);
    assert!(sent(MessageKind::WritePrepare) >= 2, "{after:?}");
    assert_eq!(
        sent(MessageKind::WritePrepare),
        sent(MessageKind::WriteCommit)
    );
    assert_eq!(
        sent(MessageKind::WriteReply),
        2 * sent(MessageKind::WritePrepare)
    );
    // One duplicate among new rows: nothing of the statement is written, on any copy.
    let e = c
        .execute("INSERT INTO r VALUES (5, 5), (6, 6), (3, 30), (7, 7)")
        .unwrap_err();
    assert!(e.to_string().contains('3'), "{e}");
    assert_eq!(ids(&c).unwrap(), vec![1, 2, 3, 4]);
    for n in 0..3 {
        assert!(
            c.stored_rows(n, "r")
                .iter()
                .all(|r| r[0].as_i64().unwrap() <= 4),
            "node-{n} kept part of a refused write"
        );
    }
    assert_idle(&c);
}

/// A write whose rows all go to one node (no backups, one partition) needs no vote: it takes
/// one phase, a `WritePrepare` that commits and its reply. Refused, it writes nothing and the
/// next write goes on.
#[test]
fn a_write_with_one_participant_takes_one_phase() {
    let c = cluster(3, 0);
    let before = c.stats().messages;
    c.execute("INSERT INTO r VALUES (1, 1)").unwrap();
    let after = c.stats().messages;
    let sent = |k| after.count(k) - before.count(k);
    assert_eq!(sent(MessageKind::WritePrepare), 1, "{after:?}");
    assert_eq!(sent(MessageKind::WriteCommit), 0, "{after:?}");
    assert_eq!(sent(MessageKind::WriteReply), 1, "{after:?}");
    let e = c.execute("INSERT INTO r VALUES (1, 10)").unwrap_err();
    assert!(matches!(e, weir::Error::DuplicateKey { .. }), "{e}");
    c.execute("UPDATE r SET v = 2 WHERE id = 1").unwrap();
    c.execute("INSERT INTO r VALUES (2, 2)").unwrap();
    assert_eq!(ids(&c).unwrap(), vec![1, 2]);
    assert_eq!(
        c.query("SELECT v FROM r WHERE id = 1", &[]).unwrap().rows(),
        vec![vec![Value::Int(2)]]
    );
    assert_idle(&c);
}

#[test]
fn a_write_with_no_live_copy_fails_clearly() {
    let c = cluster(2, 0);
    c.crash_node(0).unwrap();
    c.crash_node(1).unwrap();
    let e = c.execute("INSERT INTO r VALUES (1, 1)").unwrap_err();
    assert!(matches!(e, Error::NodeDown(_)), "{e}");
    c.restart_node(0).unwrap();
    c.restart_node(1).unwrap();
    assert_eq!(ids(&c).unwrap(), Vec::<i64>::new());
}

/// Seeded simulation: random inserts, crashes and restarts while the network loses,
/// duplicates, corrupts and delays messages. Afterwards every acknowledged row is on every
/// live current copy and answers queries, and no row appears twice.
#[test]
fn simulated_writes_crashes_and_restarts_under_faults_keep_every_acknowledged_row() {
    for seed in [1u64, 2, 3] {
        let nodes = 3;
        let c = cluster(nodes, 1);
        c.set_faults(Some(FaultPlan {
            seed,
            drop: 0.05,
            duplicate: 0.05,
            corrupt: 0.02,
            delay: Some((Duration::ZERO, Duration::from_millis(1))),
            ..FaultPlan::default()
        }));
        let mut rng = StdRng::seed_from_u64(seed);
        let mut acked: BTreeMap<i64, i64> = BTreeMap::new();
        let mut next = 0i64;
        let mut down: Vec<usize> = Vec::new();
        for _ in 0..120 {
            match rng.random_range(0..10u32) {
                0 if down.is_empty() => {
                    let n = rng.random_range(0..nodes);
                    c.crash_node(n).unwrap();
                    down.push(n);
                }
                1 if !down.is_empty() => {
                    let n = down.remove(0);
                    c.restart_node(n).unwrap();
                }
                _ => {
                    let k = rng.random_range(1..4);
                    let rows: Vec<(i64, i64)> = (0..k).map(|i| (next + i, seed as i64)).collect();
                    next += k;
                    let values: Vec<String> =
                        rows.iter().map(|(a, b)| format!("({a}, {b})")).collect();
                    let sql = format!("INSERT INTO r VALUES {}", values.join(", "));
                    match c.execute(&sql) {
                        Ok(n) => {
                            assert_eq!(n, k as u64);
                            acked.extend(rows);
                        }
                        // With one node down every partition keeps a live copy.
                        Err(e) => panic!("seed {seed}: {sql}: {e}"),
                    }
                }
            }
        }
        for n in down.drain(..) {
            c.restart_node(n).unwrap();
        }
        c.set_faults(None);
        let got = ids(&c).unwrap();
        let want: Vec<i64> = acked.keys().copied().collect();
        assert_eq!(got, want, "seed {seed}: answers");
        // Every copy holds exactly the acknowledged rows of its partitions: count rows per
        // node against what the copies should hold.
        let mut stored: Vec<i64> = (0..nodes)
            .flat_map(|n| c.stored_rows(n, "r"))
            .map(|r| r[0].as_i64().unwrap())
            .collect();
        stored.sort_unstable();
        let mut twice: Vec<i64> = want.iter().flat_map(|&k| [k, k]).collect();
        twice.sort_unstable();
        assert_eq!(
            stored, twice,
            "seed {seed}: each row on exactly its two copies"
        );
        assert_idle(&c);
    }
}

/// A commit that does not reach one node: the write times out (its outcome is unknown to the
/// caller), yet it is decided, so the copies that applied it are current and every copy on the
/// node that never heard the commit counts stale. That node gives the prepared write up after
/// its time to live (a bounded wait: the expiry runs once a second), and a restart repairs
/// its copies.
#[test]
fn a_commit_that_times_out_leaves_the_unanswered_copies_stale_and_the_node_drops_the_write() {
    let c = Cluster::builder()
        .nodes(3)
        .partitions(16)
        .backups(1)
        .query_timeout(Duration::from_millis(1000))
        .prepared_write_ttl(Duration::from_millis(1500))
        .build()
        .map(TestCluster::new)
        .unwrap();
    c.execute("CREATE TABLE r (id BIGINT PRIMARY KEY, v BIGINT)")
        .unwrap();
    c.set_faults(Some(FaultPlan {
        lose: vec![(1, MessageKind::WriteCommit)],
        ..FaultPlan::default()
    }));
    let values: Vec<String> = (0..100).map(|i| format!("({i}, {i})")).collect();
    let e = c
        .execute(&format!("INSERT INTO r VALUES {}", values.join(", ")))
        .unwrap_err();
    assert!(matches!(e, Error::Timeout(_)), "{e}");
    // Nodes 0 and 2 applied the write; every copy node 1 holds is behind and counted so.
    let stale_on_1 = (0..16)
        .filter(|&p| c.copy_version(1, "r", p) == Some((0, false)))
        .count();
    assert!(stale_on_1 > 0, "node 1 holds copies of some partitions");
    for p in 0..16 {
        for n in [0, 2] {
            let (version, current) = c.copy_version(n, "r", p).unwrap();
            assert!(current && version <= 1, "node {n} partition {p}: {version}");
        }
        let (version, _) = c.copy_version(1, "r", p).unwrap();
        assert_eq!(version, 0, "node 1 never committed partition {p}");
    }
    // Node 1 gives the undecided write up.
    let started = std::time::Instant::now();
    while c.stats().nodes[1].expired_writes == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the prepared write did not expire"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(c.stats().nodes[1].expired_writes, 1);
    c.set_faults(None);
    // Reads come from the current copies: every acknowledged-or-decided row is there once.
    assert_eq!(ids(&c).unwrap(), (0..100).collect::<Vec<_>>());
    // A restart repairs node 1's copies from the current ones.
    c.crash_node(1).unwrap();
    c.restart_node(1).unwrap();
    for p in 0..16 {
        let (_, current) = c.copy_version(1, "r", p).unwrap();
        assert!(current, "partition {p} repaired on node 1");
    }
    assert_eq!(ids(&c).unwrap(), (0..100).collect::<Vec<_>>());
    assert_idle(&c);
}
