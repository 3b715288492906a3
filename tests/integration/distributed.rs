//! Joins, aggregates, ordering and limits give the same answers on 1, 3 and 5 nodes, on one
//! actor thread for all nodes, one per node or in between, and match a direct computation
//! over the generated data.

use crate::common;

use common::{assert_idle, cluster_builder, ints, TestCluster};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::collections::BTreeMap;
use weir::{Batch, Cluster, Column, Value};

struct Data {
    /// a(id, k, v)
    a: Vec<(i64, i64, i64)>,
    /// b(id, grp)
    b: Vec<(i64, i64)>,
}

fn data() -> Data {
    let mut rng = StdRng::seed_from_u64(7);
    let a = (0..5000)
        .map(|id| {
            (
                id,
                rng.random_range(0..300i64),
                rng.random_range(-50..1000i64),
            )
        })
        .collect();
    let b = (0..250).map(|id| (id, id % 7)).collect();
    Data { a, b }
}

fn load(c: &Cluster, d: &Data) {
    c.execute("CREATE TABLE a (id BIGINT PRIMARY KEY, k BIGINT, v BIGINT)")
        .unwrap();
    c.execute("CREATE TABLE b (id BIGINT PRIMARY KEY, grp BIGINT)")
        .unwrap();
    c.load(
        "a",
        Batch::try_new(vec![
            Column::from_i64(d.a.iter().map(|r| r.0).collect()),
            Column::from_i64(d.a.iter().map(|r| r.1).collect()),
            Column::from_i64(d.a.iter().map(|r| r.2).collect()),
        ])
        .unwrap(),
    )
    .unwrap();
    c.load(
        "b",
        Batch::try_new(vec![
            Column::from_i64(d.b.iter().map(|r| r.0).collect()),
            Column::from_i64(d.b.iter().map(|r| r.1).collect()),
        ])
        .unwrap(),
    )
    .unwrap();
}

fn expected_join(d: &Data) -> Vec<Vec<i64>> {
    let grp: BTreeMap<i64, i64> = d.b.iter().copied().collect();
    let mut acc: BTreeMap<i64, (i64, i64)> = BTreeMap::new();
    for &(_, k, v) in &d.a {
        if let Some(g) = grp.get(&k) {
            let e = acc.entry(*g).or_default();
            e.0 += 1;
            e.1 += v;
        }
    }
    acc.into_iter().map(|(g, (n, s))| vec![g, n, s]).collect()
}

#[test]
fn same_answers_on_1_3_and_5_nodes_and_any_thread_count() {
    let d = data();
    let mut by_k: BTreeMap<i64, (i64, i64)> = BTreeMap::new();
    for &(_, k, v) in &d.a {
        let e = by_k.entry(k).or_default();
        e.0 += 1;
        e.1 += v;
    }
    let group_expected: Vec<Vec<i64>> = by_k.iter().map(|(k, (n, s))| vec![*k, *n, *s]).collect();
    let having_expected: Vec<Vec<i64>> = by_k
        .iter()
        .filter(|(_, (n, _))| *n > 20)
        .map(|(k, (n, _))| vec![*k, *n])
        .collect();
    let filtered: Vec<i64> = d.a.iter().map(|r| r.2).filter(|v| *v > 10).collect();
    let totals = vec![vec![
        filtered.len() as i64,
        filtered.iter().sum(),
        *filtered.iter().min().unwrap(),
        *filtered.iter().max().unwrap(),
    ]];
    let mut sorted: Vec<(i64, i64)> = d.a.iter().map(|r| (r.2, r.0)).collect();
    sorted.sort_by(|x, y| y.0.cmp(&x.0).then(x.1.cmp(&y.1)));
    let top: Vec<Vec<i64>> = sorted
        .iter()
        .skip(5)
        .take(10)
        .map(|(v, id)| vec![*id, *v])
        .collect();

    for (nodes, threads) in [(1, 2), (3, 1), (3, usize::MAX), (5, 2)] {
        let builder = cluster_builder().nodes(nodes).threads(threads);
        assert_eq!(builder.node_threads(), threads.min(nodes + 1));
        let c = TestCluster::new(builder.build().expect("cluster starts"));
        load(&c, &d);
        let q = |sql: &str| ints(&c.query(sql, &[]).unwrap().rows());
        assert_eq!(
            q("SELECT COUNT(*), SUM(v), MIN(v), MAX(v) FROM a WHERE v > 10"),
            totals,
            "{nodes} nodes on {threads} threads"
        );
        assert_eq!(
            q("SELECT k, COUNT(*), SUM(v) FROM a GROUP BY k ORDER BY k"),
            group_expected
        );
        assert_eq!(
            q("SELECT k, COUNT(*) AS n FROM a GROUP BY k HAVING COUNT(*) > 20 ORDER BY k"),
            having_expected
        );
        assert_eq!(
            q("SELECT b.grp, COUNT(*), SUM(a.v) FROM a JOIN b ON a.k = b.id GROUP BY b.grp ORDER BY b.grp"),
            expected_join(&d),
            "{nodes} nodes on {threads} threads"
        );
        assert_eq!(
            q("SELECT b.grp, COUNT(*), SUM(a.v) FROM b INNER JOIN a ON b.id = a.k GROUP BY b.grp ORDER BY 1"),
            expected_join(&d)
        );
        assert_eq!(
            q("SELECT id, v FROM a ORDER BY v DESC, id LIMIT 10 OFFSET 5"),
            top
        );
        let r = c
            .query("SELECT id FROM a WHERE id = ?", &[Value::Int(4321)])
            .unwrap();
        assert_eq!(ints(&r.rows()), vec![vec![4321]]);
        assert_idle(&c);
    }
}

/// The EXPLAIN text of `sql` on `c`, one line per row.
fn explain(c: &TestCluster, sql: &str) -> String {
    c.query(&format!("EXPLAIN {sql}"), &[])
        .unwrap()
        .rows()
        .into_iter()
        .map(|r| match &r[0] {
            Value::Str(s) => s.clone(),
            other => panic!("EXPLAIN row is not one string: {other:?}"),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn many_groups_are_merged_on_the_data_nodes_and_answer_as_on_one_node() {
    // Grouping by the key makes 150,000 groups: their partial states are hash-exchanged to
    // every data node, which merges its share (a final phase on the initiator alone would
    // take all 150,000).
    const ROWS: i64 = 150_000;
    let value = |id: i64| (id * 7919) % 1000 - 300;
    let sqls = [
        "SELECT COUNT(*), SUM(s), MIN(s), MAX(s) FROM (SELECT id, SUM(v) + id AS s FROM t GROUP BY id) AS g",
        "SELECT id, SUM(v) AS s, COUNT(*) FROM t GROUP BY id HAVING SUM(v) > 690 ORDER BY s DESC, id LIMIT 7",
        "SELECT COUNT(*) FROM (SELECT DISTINCT id FROM t) AS d",
    ];
    let one = common::cluster(1);
    common::load_t(&one, ROWS, value);
    let three = common::cluster(3);
    common::load_t(&three, ROWS, value);
    let plan = explain(&three, sqls[1]);
    assert!(
        plan.contains("(hash(") && plan.contains("on all data nodes"),
        "{plan}"
    );
    let merged = plan
        .lines()
        .skip_while(|l| !l.contains("on all data nodes"))
        .take_while(|l| !l.starts_with("Fragment") || l.contains("on all data nodes"))
        .any(|l| l.contains("HashAggregate (final)"));
    assert!(merged, "{plan}");
    for sql in sqls {
        assert_eq!(
            three.query(sql, &[]).unwrap().rows(),
            one.query(sql, &[]).unwrap().rows(),
            "{sql}"
        );
    }
    // And as computed directly.
    let sums = (0..ROWS).map(|id| value(id) + id);
    assert_eq!(
        ints(&three.query(sqls[0], &[]).unwrap().rows()),
        vec![vec![
            ROWS,
            sums.clone().sum::<i64>(),
            sums.clone().min().unwrap(),
            sums.max().unwrap()
        ]]
    );
    let mut top: Vec<(i64, i64)> = (0..ROWS)
        .map(|id| (value(id), id))
        .filter(|(v, _)| *v > 690)
        .collect();
    top.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let expected: Vec<Vec<i64>> = top.iter().take(7).map(|&(v, id)| vec![id, v, 1]).collect();
    assert_eq!(ints(&three.query(sqls[1], &[]).unwrap().rows()), expected);
    assert_idle(&three);
    assert_idle(&one);
}
