//! `COPY t (col, ...) FROM 'file'`: the file holds the listed columns, in the listed order;
//! the table's other columns take their defaults (NULL without one; a SERIAL column its
//! sequence's next values). Unknown or repeated names and a missing key are clear
//! errors, and a failed COPY keeps nothing.

use crate::common;

use common::{assert_idle, cluster};
use std::path::PathBuf;
use weir::{Error, Value};

/// A fresh directory for one test's files.
fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("weir-copy-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const CREATE: &str = "CREATE TABLE t (id BIGINT PRIMARY KEY, name VARCHAR, x DOUBLE, day DATE)";

#[test]
fn listed_columns_load_in_file_order_and_the_rest_are_null() {
    let dir = temp_dir("csv");
    let csv = dir.join("t.csv");
    std::fs::write(&csv, "name,id\n\"a, b\",2\nc,1\n,3\n").unwrap();
    let c = cluster(2);
    c.execute(CREATE).unwrap();
    // The table named with its schema, as pg_dump names it.
    let n = c
        .execute(&format!(
            "COPY public.t (name, id) FROM '{}' (FORMAT csv, HEADER true)",
            csv.display()
        ))
        .unwrap();
    assert_eq!(n, 3);
    let r = c.query("SELECT * FROM t ORDER BY id", &[]).unwrap();
    assert_eq!(
        r.rows(),
        vec![
            vec![Value::Int(1), "c".into(), Value::Null, Value::Null],
            vec![Value::Int(2), "a, b".into(), Value::Null, Value::Null],
            vec![Value::Int(3), Value::Null, Value::Null, Value::Null],
        ]
    );

    // Parquet: the file's columns are the listed ones.
    let pq = dir.join("u.parquet");
    c.execute("UPDATE t SET x = 0.5 WHERE id = 1").unwrap();
    c.execute(&format!(
        "COPY (SELECT id + 10 AS id, x FROM t WHERE id = 1) TO '{}'",
        pq.display()
    ))
    .unwrap();
    assert_eq!(
        c.execute(&format!("COPY t (id, x) FROM '{}'", pq.display()))
            .unwrap(),
        1
    );
    let r = c
        .query("SELECT id, name, x, day FROM t WHERE id = 11", &[])
        .unwrap();
    assert_eq!(
        r.rows(),
        vec![vec![
            Value::Int(11),
            Value::Null,
            Value::Float(0.5),
            Value::Null
        ]]
    );
    assert_idle(&c);
}

#[test]
fn a_bad_column_list_is_a_clear_error_and_keeps_nothing() {
    let dir = temp_dir("bad");
    let csv = dir.join("t.csv");
    std::fs::write(&csv, "1,a\n2,b\n").unwrap();
    let c = cluster(2);
    c.execute(CREATE).unwrap();
    let copy = |cols: &str| c.execute(&format!("COPY t ({cols}) FROM '{}'", csv.display()));

    let err = copy("id, nope").unwrap_err();
    assert!(err.to_string().contains("no column nope"), "{err}");
    let err = copy("id, ID").unwrap_err();
    assert!(err.to_string().contains("listed twice"), "{err}");
    // Leaving out the primary key leaves it NULL: refused, nothing kept.
    let err = copy("x, name").unwrap_err();
    assert!(matches!(err, Error::NullKey { .. }), "{err:?}");
    // A file with more fields than the list names.
    let err = copy("id").unwrap_err();
    assert!(err.to_string().contains("t.csv"), "{err}");
    let r = c.query("SELECT COUNT(*) FROM t", &[]).unwrap();
    assert_eq!(r.rows(), vec![vec![Value::Int(0)]]);

    // The same file with a matching list loads.
    assert_eq!(copy("id, name").unwrap(), 2);
    assert_idle(&c);
}

/// The rows COPY has read are accounted on the client node until they are written: a file
/// larger than its memory fails with a clear error, keeps nothing and leaves no memory held;
/// a file that fits loads.
#[test]
fn a_file_larger_than_the_clients_memory_is_refused_clearly_and_keeps_nothing() {
    let dir = temp_dir("big");
    let big = dir.join("big.csv");
    let body: String = (0..100_000)
        .map(|i| format!("{i},name-{i},{i}.5,2024-01-01\n"))
        .collect();
    std::fs::write(&big, body).unwrap();
    let c = common::TestCluster::new(
        common::cluster_builder()
            .nodes(2)
            .node_memory(1 << 20)
            .build()
            .unwrap(),
    );
    c.execute(CREATE).unwrap();
    let e = c
        .execute(&format!("COPY t FROM '{}'", big.display()))
        .unwrap_err();
    assert!(matches!(e, Error::OutOfMemory(_)), "{e}");
    assert!(e.to_string().contains("COPY t FROM"), "{e}");
    let n = c.query("SELECT COUNT(*) FROM t", &[]).unwrap().rows();
    assert_eq!(n, vec![vec![Value::Int(0)]]);
    assert_idle(&c);
    let small = dir.join("small.csv");
    std::fs::write(&small, "1,a,1.5,2024-01-02\n").unwrap();
    assert_eq!(
        c.execute(&format!("COPY t FROM '{}'", small.display()))
            .unwrap(),
        1
    );
}

#[test]
fn unlisted_columns_take_their_defaults_and_generated_keys() {
    let dir = temp_dir("defaults");
    let csv = dir.join("names.csv");
    std::fs::write(&csv, "name\nann\nbob\ncy\n").unwrap();
    let c = cluster(2);
    c.execute(
        "CREATE TABLE people (id SERIAL PRIMARY KEY, name VARCHAR, team VARCHAR DEFAULT 'blue')",
    )
    .unwrap();
    c.execute("INSERT INTO people (name) VALUES ('first')")
        .unwrap();
    let copy = format!(
        "COPY people (name) FROM '{}' (FORMAT csv, HEADER true)",
        csv.display()
    );
    assert_eq!(c.execute(&copy).unwrap(), 3);
    let r = c
        .query("SELECT id, name, team FROM people ORDER BY id", &[])
        .unwrap();
    assert_eq!(
        r.rows(),
        vec![
            vec![Value::Int(1), "first".into(), "blue".into()],
            vec![Value::Int(2), "ann".into(), "blue".into()],
            vec![Value::Int(3), "bob".into(), "blue".into()],
            vec![Value::Int(4), "cy".into(), "blue".into()],
        ]
    );
    assert_idle(&c);
}
