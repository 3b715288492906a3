//! The nine queries of the Ignite benchmark on a 3-node cluster return exactly the right rows.

mod common;

use common::{assert_idle, cluster, TestCluster};
use weir::demo::{load_item, SEED_QUERIES};
use weir::Value;

const ROWS: usize = 100_000;

fn run(c: &TestCluster, name: &str, key: i64) -> Vec<Vec<Value>> {
    let q = SEED_QUERIES.iter().find(|q| q.name == name).unwrap();
    let r = c.query(q.sql, &q.params(key)).unwrap();
    assert_eq!(r.num_rows(), q.expected_rows(ROWS), "{name}");
    r.rows()
}

#[test]
fn nine_seed_queries_return_the_right_values() {
    let c = cluster(3);
    load_item(&c, ROWS).unwrap();
    for key in [0i64, 12_345, 99_999] {
        for name in ["querySimpleUnique", "querySimpleUniqueIndexed"] {
            assert_eq!(
                run(&c, name, key),
                vec![vec![Value::Str(format!("name{key}"))]]
            );
        }
        let b = key / 1000;
        let mut expected: Vec<String> = (b * 1000..b * 1000 + 1000)
            .map(|v| format!("name{v}"))
            .collect();
        expected.sort();
        for name in ["querySimpleBatch", "querySimpleBatchIndexed"] {
            let mut got: Vec<String> = run(&c, name, key)
                .into_iter()
                .map(|r| r[0].as_str().unwrap().to_string())
                .collect();
            got.sort();
            assert_eq!(got, expected, "{name}");
        }
        let ordered = run(&c, "queryOrderByBatch", key);
        let want: Vec<Vec<Value>> = (b * 1000..b * 1000 + 1000)
            .rev()
            .map(|v| vec![Value::Str(format!("name{v}")), Value::Int(v)])
            .collect();
        assert_eq!(ordered, want);
    }
    for name in ["queryGroupBy", "queryGroupByIndexed"] {
        let mut rows = run(&c, name, 0);
        rows.sort_by(|a, b| a[0].sort_cmp(&b[0]));
        for (b, row) in rows.iter().enumerate() {
            assert_eq!(row[0], Value::Int(b as i64));
            assert_eq!(
                row[1].as_f64(),
                Some(b as f64 * 1000.0 + 499.5),
                "{name} group {b}"
            );
        }
    }
    let full = run(&c, "queryOrderByFull", 0);
    assert!(full
        .iter()
        .zip((0..ROWS as i64).rev())
        .all(|(r, v)| r[1] == Value::Int(v) && r[0] == Value::Str(format!("name{v}"))));
    assert_eq!(
        run(&c, "querySumIndexed", 0),
        vec![vec![Value::Int(4_999_950_000)]]
    );
    assert_idle(&c);
}
