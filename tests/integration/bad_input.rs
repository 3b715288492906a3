//! Bad input gets a clear error, and the cluster stays usable.

use crate::common;

use common::{assert_idle, cluster};
use weir::{Error, Value};

#[test]
fn bad_statements_get_clear_errors() {
    let c = cluster(3);
    c.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, name VARCHAR, x BIGINT)")
        .unwrap();
    c.execute("INSERT INTO t VALUES (1, 'a', 10), (2, 'b', 20)")
        .unwrap();

    let msg = |sql: &str, params: &[Value]| c.query(sql, params).unwrap_err().to_string();

    let e = msg("SELEC name FROM t", &[]);
    assert!(
        e.to_lowercase().contains("syntax") || e.contains("Expected"),
        "{e}"
    );
    let e = msg("SELECT name FROM nosuch", &[]);
    assert!(e.contains("nosuch"), "{e}");
    let e = msg("SELECT nosuchcol FROM t", &[]);
    assert!(e.contains("nosuchcol"), "{e}");
    let e = msg(
        "SELECT name FROM t FULL JOIN LATERAL (SELECT t.x) y ON TRUE",
        &[],
    );
    assert!(e.contains("unsupported") && e.contains("line 1"), "{e}");
    // Once refused (an outer reference below an aggregate), now unnested.
    let r = c
        .query(
            "SELECT name FROM t WHERE x = 10 OR EXISTS (SELECT count(*) FROM t u WHERE u.id < t.id HAVING count(*) > 0)",
            &[],
        )
        .unwrap();
    assert_eq!(
        common::sorted_rows(r.rows()),
        vec![vec![Value::from("a")], vec![Value::from("b")]]
    );
    let e = msg("SELECT name FROM t WHERE x = ?", &[]);
    assert!(e.contains('1') && e.contains('0'), "wrong count: {e}");
    let e = msg("SELECT name FROM t WHERE x = ?", &[Value::from("ten")]);
    assert!(
        e.contains("VARCHAR") || e.contains("type"),
        "wrong type: {e}"
    );
    let e = msg("SELECT name + 1 FROM t", &[]);
    assert!(e.to_lowercase().contains("type"), "{e}");

    let err = c.execute("INSERT INTO t VALUES (1, 'dup', 0)").unwrap_err();
    assert_eq!(
        err,
        Error::DuplicateKey {
            table: "t".into(),
            column: "id".into(),
            value: Value::Int(1)
        }
    );
    assert_eq!(err.to_string(), "duplicate primary key id = 1 in table t");
    let err = c
        .execute("CREATE TABLE t (id BIGINT PRIMARY KEY)")
        .unwrap_err();
    assert!(err.to_string().contains('t'), "{err}");

    // Still usable, and nothing half-inserted.
    let r = c.query("SELECT COUNT(*), SUM(x) FROM t", &[]).unwrap();
    assert_eq!(r.rows(), vec![vec![Value::Int(2), Value::Int(30)]]);
    assert_idle(&c);
}
