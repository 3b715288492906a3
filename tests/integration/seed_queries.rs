//! The nine queries of the Ignite benchmark on a 3-node cluster return exactly the right rows,
//! and self-joins of `Item` (the reported hang) return the counts the data implies.

use crate::common;

use common::{assert_idle, cluster, TestCluster};
use std::collections::HashMap;
use weir::demo::{item_batch, load_item, SEED_QUERIES};
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

/// `(fld, fldBatch)` of every `Item` row, from the demo's data definition.
fn item_keys() -> Vec<(i64, i64)> {
    item_batch(0..ROWS as i64)
        .rows()
        .iter()
        .map(|r| (r[2].as_i64().unwrap(), r[3].as_i64().unwrap()))
        .collect()
}

/// `COUNT(*)` of `Item a JOIN Item b ON key(a) = key(b) WHERE keep(a)`, by a hash join over
/// the generated rows.
fn self_join_count(
    left_key: impl Fn(&(i64, i64)) -> i64,
    right_key: impl Fn(&(i64, i64)) -> i64,
    keep: impl Fn(&(i64, i64)) -> bool,
) -> i64 {
    let rows = item_keys();
    let mut right: HashMap<i64, i64> = HashMap::new();
    for r in &rows {
        *right.entry(right_key(r)).or_default() += 1;
    }
    rows.iter()
        .filter(|r| keep(r))
        .map(|r| right.get(&left_key(r)).copied().unwrap_or(0))
        .sum()
}

fn check_self_join(sql: &str, want: i64) {
    let c = cluster(3);
    load_item(&c, ROWS).unwrap();
    let r = c.query(sql, &[]).unwrap_or_else(|e| panic!("{sql}: {e}"));
    assert_eq!(r.rows(), vec![vec![Value::Int(want)]], "{sql}");
    assert_idle(&c);
}

/// Regression (the reported hang): the build side is two rows, so some nodes' share of it is
/// empty; their joins must still wait for the probe side to end.
#[test]
fn self_join_of_two_keys_against_the_batch_column() {
    let want = self_join_count(|r| r.0, |r| r.1, |r| r.0 < 2);
    // fld 0 and 1 each match the 1000 rows of their batch.
    assert_eq!(want, 2000);
    check_self_join(
        "SELECT COUNT(*) FROM Item a JOIN Item b ON a.fld = b.fldBatch WHERE a.fld < 2",
        want,
    );
}

/// Regression (the reported hang): ten build rows, all with the same key, on one node.
#[test]
fn self_join_of_one_batch_key() {
    let want = self_join_count(|r| r.1, |r| r.1, |r| r.0 < 10);
    // Ten rows of batch 0, each matching the 1000 rows of batch 0.
    assert_eq!(want, 10_000);
    check_self_join(
        "SELECT COUNT(*) FROM Item a JOIN Item b ON a.fldBatch = b.fldBatch WHERE a.fld < 10",
        want,
    );
}
