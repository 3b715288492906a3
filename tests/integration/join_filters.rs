//! Join key filters: a hash join whose build side is selective sends a filter of its build
//! keys to its probe side: repartitioned, to the senders, which drop the probe rows that
//! cannot match before they cross the exchange; broadcast, to the scan below it, which drops
//! them before it copies them. Checked on a 3-node cluster against the same cluster
//! with the filters off: the same answers for every join type (those whose unmatched probe
//! rows are output take no filter), far fewer rows and bytes sent, and the cluster idle after.

use crate::common;

use common::{assert_idle, cluster_builder, sorted_rows, TestCluster};
use weir::{Batch, Column, Value};

const ROWS: i64 = 60_000;
const B_ROWS: i64 = 150_000;

/// `a(id, k, v)`, 60,000 rows, and `b(id, k, w)`, 150,000 rows: `a.k` spreads over 30,000
/// keys, `b.k` over 150,000, and `b.w < 40000` holds for 400 rows of `b` (the planner expects
/// 30% of `b`, 45,000 rows, too many to broadcast: both sides are repartitioned).
fn cluster(filters: bool) -> TestCluster {
    // Small batches: the probe side's senders stop after a few (their credit windows), long
    // before the probe side is sent, and wait for the build side to end.
    let c = cluster_builder()
        .nodes(3)
        .batch_size(128)
        .join_filters(filters)
        .build()
        .expect("cluster starts");
    c.execute("CREATE TABLE a (id BIGINT PRIMARY KEY, k BIGINT, v BIGINT)")
        .unwrap();
    c.execute("CREATE TABLE b (id BIGINT PRIMARY KEY, k BIGINT, w BIGINT)")
        .unwrap();
    let ids: Vec<i64> = (0..ROWS).collect();
    let a = Batch::try_new(vec![
        Column::from_i64(ids.clone()),
        Column::from_i64(ids.iter().map(|i| (i * 7) % 30_000).collect()),
        Column::from_i64(ids.iter().map(|i| i % 100).collect()),
    ])
    .unwrap();
    let ids: Vec<i64> = (0..B_ROWS).collect();
    let b = Batch::try_new(vec![
        Column::from_i64(ids.clone()),
        Column::from_i64(ids.iter().map(|i| (i * 13) % B_ROWS).collect()),
        Column::from_i64(ids.iter().map(|&i| w(i)).collect()),
    ])
    .unwrap();
    c.load("a", a).unwrap();
    c.load("b", b).unwrap();
    TestCluster::new(c)
}

/// `b.w` of row `i`.
fn w(i: i64) -> i64 {
    let spread = (i * 7919) % B_ROWS;
    if spread < SELECTED {
        spread
    } else {
        50_000 + i % 10_000
    }
}

/// Rows of `b` with `w < 40000`.
const SELECTED: i64 = 400;

fn filtered_rows(c: &TestCluster) -> u64 {
    c.stats().nodes.iter().map(|n| n.join_filtered_rows).sum()
}

fn plan(c: &TestCluster, sql: &str) -> String {
    c.query(&format!("EXPLAIN {sql}"), &[])
        .unwrap()
        .rows()
        .into_iter()
        .map(|r| format!("{:?}", r[0]))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs `sql` on both clusters: the same rows; returns the rows the filters dropped and the
/// bytes each cluster sent between nodes for it.
fn both(on: &TestCluster, off: &TestCluster, sql: &str) -> (Vec<Vec<Value>>, u64, u64, u64) {
    let dropped = filtered_rows(on);
    let (bytes_on, bytes_off) = (on.stats().messages.bytes, off.stats().messages.bytes);
    let with = sorted_rows(on.query(sql, &[]).unwrap().rows());
    let without = sorted_rows(off.query(sql, &[]).unwrap().rows());
    assert_eq!(with, without, "{sql}");
    (
        with,
        filtered_rows(on) - dropped,
        on.stats().messages.bytes - bytes_on,
        off.stats().messages.bytes - bytes_off,
    )
}

#[test]
fn a_selective_build_side_filters_the_probe_rows_before_they_are_sent() {
    let on = cluster(true);
    let off = cluster(false);
    let sql = "SELECT a.id, a.v, b.w FROM a JOIN b ON a.k = b.k WHERE b.w < 40000";
    let explained = plan(&on, sql);
    assert!(
        explained.matches("hash(").count() >= 2,
        "both sides are repartitioned: {explained}"
    );
    let (rows, dropped, bytes_on, bytes_off) = both(&on, &off, sql);
    // Each of the 400 rows of b has a key that 0 or 2 rows of a hold (2 when below 30,000).
    let expected: usize = (0..B_ROWS)
        .filter(|&i| w(i) < 40_000)
        .map(|i| {
            let k = (i * 13) % B_ROWS;
            (0..ROWS).filter(|j| (j * 7) % 30_000 == k).count()
        })
        .sum();
    assert_eq!(rows.len(), expected);
    assert!(expected > 0);
    // Most of a's rows never travel: two thirds of them would cross nodes.
    assert!(dropped > ROWS as u64 / 2, "dropped {dropped}");
    assert!(
        bytes_on * 3 < bytes_off,
        "{bytes_on} bytes sent with filters, {bytes_off} without"
    );
    assert_idle(&on);
    assert_idle(&off);
}

#[test]
fn a_broadcast_build_side_filters_the_probe_sides_scan() {
    let on = cluster(true);
    let off = cluster(false);
    // `w <> 5` halves the estimate again: small enough to broadcast b to a's fragment.
    let sql = "SELECT a.id, b.w FROM a JOIN b ON a.k = b.k WHERE b.w < 40000 AND b.w <> 5";
    let explained = plan(&on, sql);
    assert!(explained.contains("(broadcast)"), "{explained}");
    let (rows, dropped, ..) = both(&on, &off, sql);
    assert!(!rows.is_empty());
    // a's rows never leave its nodes; its scans drop most of them before the join sees them.
    assert!(dropped > ROWS as u64 / 2, "dropped {dropped}");
    assert_idle(&on);
    assert_idle(&off);
}

#[test]
fn every_join_type_answers_as_without_filters() {
    let on = cluster(true);
    let off = cluster(false);
    let sqls = [
        // Probe rows need a match: filtered.
        "SELECT COUNT(*), SUM(a.v) FROM a JOIN b ON a.k = b.k WHERE b.w < 40000",
        "SELECT COUNT(*) FROM a WHERE a.k IN (SELECT k FROM b WHERE w < 40000)",
        "SELECT COUNT(*) FROM a WHERE EXISTS (SELECT 1 FROM b WHERE b.k = a.k AND b.w < 40000)",
        // Unmatched probe rows are output: no filter may drop them.
        "SELECT COUNT(*), COUNT(b.id) FROM a LEFT JOIN (SELECT * FROM b WHERE w < 40000) AS b ON a.k = b.k",
        "SELECT COUNT(*) FROM a WHERE NOT EXISTS (SELECT 1 FROM b WHERE b.k = a.k AND b.w < 40000)",
        "SELECT COUNT(*) FROM a WHERE a.k NOT IN (SELECT k FROM b WHERE w < 40000)",
        "SELECT COUNT(*), COUNT(a.id) FROM (SELECT * FROM b WHERE w < 40000) AS b FULL JOIN a ON a.k = b.k",
    ];
    for sql in sqls {
        let (rows, ..) = both(&on, &off, sql);
        assert!(!rows.is_empty(), "{sql}");
    }
    // The anti joins' counts, computed directly: rows of a whose key no selected b row has.
    let selected: std::collections::HashSet<i64> = (0..B_ROWS)
        .filter(|&i| w(i) < 40_000)
        .map(|i| (i * 13) % B_ROWS)
        .collect();
    let unmatched = (0..ROWS)
        .filter(|j| !selected.contains(&((j * 7) % 30_000)))
        .count() as i64;
    let rows = on.query(sqls[4], &[]).unwrap().rows();
    assert_eq!(rows, vec![vec![Value::Int(unmatched)]]);
    assert!(filtered_rows(&on) > 0);
    assert_eq!(filtered_rows(&off), 0);
    assert_idle(&on);
    assert_idle(&off);
}
