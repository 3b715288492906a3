//! Joins whose input is already spread by their keys (a join or grouping on the same key
//! before them) run where the rows are, moving only the other side: on 3 nodes they answer
//! as on 1 for every join type after them, NULL keys and a grouping on the key included.

use crate::common;

use common::{assert_idle, cluster, sorted_rows};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use weir::{Batch, Cluster, Column, Value};

/// Tables `f`, `g` and `h` of 6,000, 5,000 and 4,000 rows (sizes alike, so that no side is
/// broadcast and every join hash-exchanges), each `(id, k, v)` with keys in 0..3000 and one
/// NULL key in 50.
fn load(c: &Cluster) {
    let mut rng = StdRng::seed_from_u64(11);
    for (name, rows) in [("f", 6000i64), ("g", 5000), ("h", 4000)] {
        c.execute(&format!(
            "CREATE TABLE {name} (id BIGINT PRIMARY KEY, k BIGINT, v BIGINT)"
        ))
        .unwrap();
        let keys: Vec<Value> = (0..rows)
            .map(|_| {
                if rng.random_range(0..50) == 0 {
                    Value::Null
                } else {
                    Value::Int(rng.random_range(0..3000i64))
                }
            })
            .collect();
        let batch = Batch::try_new(vec![
            Column::from_i64((0..rows).collect()),
            Column::from_values(weir::DataType::Int64, &keys).unwrap(),
            Column::from_i64((0..rows).map(|_| rng.random_range(-100..100i64)).collect()),
        ])
        .unwrap();
        c.load(name, batch).unwrap();
    }
}

/// Queries whose second join (or grouping) is on the key the first join spread its rows by.
const QUERIES: [&str; 13] = [
    "SELECT f.id, g.id, h.id FROM f JOIN g ON f.k = g.k JOIN h ON f.k = h.k",
    "SELECT f.id, g.id, h.id FROM f LEFT JOIN g ON f.k = g.k LEFT JOIN h ON f.k = h.k",
    "SELECT f.id, g.id, h.id FROM f JOIN g ON f.k = g.k RIGHT JOIN h ON f.k = h.k",
    "SELECT f.id, g.id, h.id FROM f JOIN g ON f.k = g.k FULL JOIN h ON f.k = h.k",
    "SELECT f.id, g.id FROM f JOIN g ON f.k = g.k WHERE EXISTS (SELECT 1 FROM h WHERE h.k = f.k)",
    "SELECT f.id, g.id FROM f JOIN g ON f.k = g.k WHERE NOT EXISTS (SELECT 1 FROM h WHERE h.k = f.k)",
    "SELECT f.k, COUNT(*), SUM(g.v) FROM f LEFT JOIN g ON f.k = g.k GROUP BY f.k",
    "SELECT x.k, x.n, h.id FROM (SELECT k, COUNT(*) AS n FROM f GROUP BY k) AS x \
     JOIN h ON x.k = h.k",
    // On the other side's key: the inner join's rows are spread by both.
    "SELECT f.id, g.id, h.id FROM f JOIN g ON f.k = g.k JOIN h ON g.k = h.k",
    "SELECT g.k, COUNT(*), SUM(f.v) FROM f JOIN g ON f.k = g.k GROUP BY g.k",
    // A left or right join spreads its rows by the kept side's key only.
    "SELECT f.id, g.id, h.id FROM f LEFT JOIN g ON f.k = g.k JOIN h ON g.k = h.k",
    "SELECT g.k, COUNT(*), COUNT(f.id) FROM f RIGHT JOIN g ON f.k = g.k GROUP BY g.k",
    "SELECT g.k, COUNT(*) FROM f LEFT JOIN g ON f.k = g.k GROUP BY g.k",
];

#[test]
fn joins_after_a_join_on_the_same_key_answer_on_three_nodes_as_on_one() {
    let one = cluster(1);
    let three = cluster(3);
    load(&one);
    load(&three);
    for sql in QUERIES {
        let want = sorted_rows(one.query(sql, &[]).unwrap().rows());
        let got = sorted_rows(three.query(sql, &[]).unwrap().rows());
        assert!(!want.is_empty(), "{sql}");
        assert_eq!(got.len(), want.len(), "{sql}");
        assert_eq!(got, want, "{sql}");
    }
    // The plans do join where the rows are: the first query moves each table once.
    let plan = three
        .query(&format!("EXPLAIN {}", QUERIES[0]), &[])
        .unwrap()
        .rows();
    let text: Vec<String> = plan
        .into_iter()
        .map(|r| match &r[0] {
            Value::Str(s) => s.clone(),
            other => format!("{other:?}"),
        })
        .collect();
    let hashed = text.iter().filter(|l| l.contains("(hash(")).count();
    assert_eq!(hashed, 3, "{}", text.join("\n"));
    assert_idle(&one);
    assert_idle(&three);
}
