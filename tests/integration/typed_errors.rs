//! Execution errors are typed: a caller tells an overflow from a failed cast or a division
//! by zero with `matches!`, learns the node it happened on, and reads a message naming the
//! operation, while `Display` keeps the `execution failed on NODE: ...` shape.

use crate::common;

use common::{assert_idle, cluster, TestCluster};
use weir::{Error, Value};

/// A 3-node cluster with `t (id, i, s)`: ids 1..=20, `i = id - 1` (one zero), `s` a number
/// as text except for id 7 (`'seven'`).
fn setup() -> TestCluster {
    let c = cluster(3);
    c.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, i BIGINT, s VARCHAR)")
        .unwrap();
    for id in 1..=20i64 {
        let s = if id == 7 {
            "seven".to_string()
        } else {
            id.to_string()
        };
        c.execute_with(
            "INSERT INTO t VALUES (?, ?, ?)",
            &[id.into(), (id - 1).into(), s.into()],
        )
        .unwrap();
    }
    c
}

#[test]
fn overflow_is_typed_with_node_and_operation() {
    let c = setup();
    let err = c
        .query("SELECT id + 9223372036854775807 FROM t", &[])
        .unwrap_err();
    match &err {
        Error::Overflow { node, message } => {
            assert!(node.starts_with("node-"), "{err}");
            assert!(
                message.contains("BIGINT overflow in") && message.contains("9223372036854775807"),
                "{err}"
            );
        }
        other => panic!("expected an overflow, got {other:?}"),
    }
    assert!(err.node().is_some_and(|n| n.starts_with("node-")), "{err}");
    assert!(
        err.to_string().starts_with("execution failed on node-"),
        "{err}"
    );
    assert_eq!(err.kind(), "overflow");
    assert_idle(&c);

    // In an aggregate too (the partial sums on each node fit; the total does not).
    let err = c
        .query("SELECT SUM(id + 9223372036854775700) FROM t", &[])
        .unwrap_err();
    assert!(matches!(err, Error::Overflow { .. }), "{err:?}");
    assert!(err.to_string().contains("overflow"), "{err}");
    assert_idle(&c);
}

#[test]
fn failed_cast_is_typed() {
    let c = setup();
    let err = c.query("SELECT CAST(s AS BIGINT) FROM t", &[]).unwrap_err();
    assert!(matches!(err, Error::Cast { .. }), "{err:?}");
    assert!(err.to_string().contains("cannot cast 'seven'"), "{err}");
    assert!(err.node().is_some_and(|n| n.starts_with("node-")), "{err}");
    assert_eq!(err.kind(), "cast");
    // The rows that do convert are fine.
    let r = c
        .query("SELECT SUM(CAST(s AS BIGINT)) FROM t WHERE id <> 7", &[])
        .unwrap();
    assert_eq!(r.rows(), vec![vec![Value::Int((1..=20).sum::<i64>() - 7)]]);
    assert_idle(&c);
}

#[test]
fn division_by_zero_is_typed_where_it_is_an_error() {
    let c = setup();
    // Plain division by zero is NULL, not an error.
    let r = c.query("SELECT id / i FROM t WHERE id = 1", &[]).unwrap();
    assert_eq!(r.rows(), vec![vec![Value::Null]]);
    // Zero to a negative power has no answer.
    let err = c.query("SELECT power(i, -1) FROM t", &[]).unwrap_err();
    assert!(matches!(err, Error::DivisionByZero { .. }), "{err:?}");
    assert!(
        err.to_string().contains("zero raised to a negative power"),
        "{err}"
    );
    assert_eq!(err.kind(), "division_by_zero");
    assert_idle(&c);
}

#[test]
fn other_kernel_failures_stay_execution_errors() {
    let c = setup();
    let err = c.query("SELECT sqrt(i - 5.0) FROM t", &[]).unwrap_err();
    assert!(matches!(err, Error::Execution { .. }), "{err:?}");
    assert!(err.to_string().contains("square root"), "{err}");
    assert_idle(&c);
}

#[test]
fn duplicate_key_is_typed() {
    let c = setup();
    let err = c.execute("INSERT INTO t VALUES (3, 0, 'x')").unwrap_err();
    assert!(
        matches!(&err, Error::DuplicateKey { table, value, .. } if table == "t" && *value == Value::Int(3)),
        "{err:?}"
    );
    assert_eq!(err.kind(), "duplicate_key");
}
