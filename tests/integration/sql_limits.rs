//! SQL cannot take its host down: text that functions grow stops at the maximum value size
//! with a typed error (at run time on columns, and while the planner folds constants on the
//! caller's thread), huge LIMIT and OFFSET neither wrap nor panic, and COPY reaches only the
//! directories it is allowed. After each, the cluster's memory is back to zero and its
//! actors stopped.

use crate::common;

use common::{assert_idle, TestCluster};
use std::time::{Duration, Instant};
use weir::{Cluster, Error, Value};

/// Rows of `t`.
const ROWS: i64 = 300;

fn cluster_with(max_value: Option<usize>, copy_dirs: Option<&[std::path::PathBuf]>) -> TestCluster {
    let mut b = Cluster::builder()
        .nodes(3)
        .partitions(16)
        .query_timeout(Duration::from_secs(30));
    if let Some(max) = max_value {
        b = b.max_value_size(max);
    }
    if let Some(dirs) = copy_dirs {
        b = b.copy_dirs(dirs.iter().cloned());
    }
    let c = TestCluster::new(b.build().unwrap());
    c.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, name VARCHAR)")
        .unwrap();
    let values: Vec<String> = (0..ROWS).map(|i| format!("({i}, 'name{i}')")).collect();
    c.execute(&format!("INSERT INTO t VALUES {}", values.join(", ")))
        .unwrap();
    c
}

/// `sql` fails, soon, with [`Error::ValueTooLarge`] naming `func`.
fn too_large(c: &TestCluster, sql: &str, func: &str) {
    let start = Instant::now();
    let e = c.query(sql, &[]).map(|r| r.num_rows()).unwrap_err();
    assert!(
        matches!(&e, Error::ValueTooLarge { .. }),
        "{}...: {e:?}",
        &sql[..60.min(sql.len())]
    );
    let text = e.to_string();
    assert!(
        text.contains(&format!("{func} would make")) && text.contains("maximum value size"),
        "{text}"
    );
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn growing_text_stops_at_the_maximum_value_size() {
    // The default maximum, 64 MiB.
    let c = cluster_with(None, None);
    // The statement: replace nested five times on a 100-character literal asks for
    // 100^6 = 10^12 bytes; the planner folds it on this thread and stops at the limit.
    let a100 = "a".repeat(100);
    let mut nested = format!("'{a100}'");
    for _ in 0..5 {
        nested = format!("replace({nested}, 'a', '{a100}')");
    }
    too_large(&c, &format!("SELECT {nested}"), "replace");
    too_large(
        &c,
        &format!("SELECT length({nested}) FROM t WHERE id = 1"),
        "replace",
    );
    // The same shapes over a column, at run time on the data nodes.
    let mut on_column = "name".to_string();
    for _ in 0..5 {
        on_column = format!("replace({on_column}, 'a', '{a100}')");
    }
    too_large(&c, &format!("SELECT {on_column} FROM t"), "replace");
    too_large(&c, "SELECT repeat(name, 100000000) FROM t", "repeat");
    too_large(&c, "SELECT repeat('ab', 9223372036854775807)", "repeat");
    too_large(&c, "SELECT lpad(name, 2000000000, 'xy') FROM t", "lpad");
    too_large(&c, "SELECT rpad('x', 9223372036854775807)", "rpad");
    too_large(
        &c,
        "SELECT lpad(lpad(lpad(name, 1000, 'é'), 1000000, name), 100000000) FROM t",
        "lpad",
    );
    // Under the limit the same functions answer.
    let r = c
        .query(
            "SELECT length(repeat(name, 1000)), length(lpad(name, 10000, 'xy')) FROM t WHERE id = 7",
            &[],
        )
        .unwrap();
    assert_eq!(r.rows(), vec![vec![Value::Int(5000), Value::Int(10000)]]);
    assert_idle(&c);
}

#[test]
fn the_maximum_value_size_is_a_cluster_setting() {
    let c = cluster_with(Some(1000), None);
    too_large(&c, "SELECT name || repeat('x', 996) FROM t", "||");
    too_large(&c, "SELECT concat(name, repeat('x', 996)) FROM t", "concat");
    too_large(
        &c,
        "SELECT upper(repeat(name, 201)) FROM t WHERE id = 1",
        "repeat",
    );
    // Folded on the caller's thread too, and in a plan too deep for the caller's stack.
    too_large(&c, "SELECT repeat('ab', 501)", "repeat");
    let deep = format!(
        "SELECT {}repeat('ab', 501){}",
        "(".repeat(200),
        ")".repeat(200)
    );
    too_large(&c, &deep, "repeat");
    let r = c.query("SELECT length(repeat(name, 100)) FROM t WHERE id = 1", &[]);
    assert_eq!(r.unwrap().rows(), vec![vec![Value::Int(500)]]);
    // A write stops at it too, and keeps nothing.
    let e = c
        .execute("UPDATE t SET name = repeat(name, 1000) WHERE id < 10")
        .unwrap_err();
    assert!(e.to_string().contains("maximum value size"), "{e}");
    let r = c.query("SELECT MAX(length(name)) FROM t", &[]).unwrap();
    assert_eq!(r.rows(), vec![vec![Value::Int(7)]]);
    assert_idle(&c);
}

#[test]
fn huge_limits_and_offsets_saturate() {
    let c = cluster_with(None, None);
    let max = u64::MAX;
    let count = |sql: &str| c.query(sql, &[]).unwrap().num_rows() as i64;
    for order in ["", "ORDER BY id"] {
        assert_eq!(
            count(&format!("SELECT id FROM t {order} LIMIT {max} OFFSET 1")),
            ROWS - 1
        );
        assert_eq!(
            count(&format!(
                "SELECT id FROM t {order} LIMIT {max} OFFSET {max}"
            )),
            0
        );
        assert_eq!(
            count(&format!("SELECT id FROM t {order} LIMIT 2 OFFSET {max}")),
            0
        );
        assert_eq!(
            count(&format!("SELECT id FROM t {order} LIMIT {max}")),
            ROWS
        );
    }
    assert_eq!(
        count(&format!(
            "SELECT id FROM (SELECT id FROM t ORDER BY id LIMIT {max} OFFSET 2) s \
             ORDER BY id LIMIT {max} OFFSET {}",
            max - 1
        )),
        0
    );
    let r = c
        .query(
            &format!("SELECT id FROM t ORDER BY id DESC LIMIT {max} OFFSET 1"),
            &[],
        )
        .unwrap();
    assert_eq!(r.rows()[0], vec![Value::Int(ROWS - 2)]);
    // Past 2^64 - 1 it is an error naming the clause.
    let e = c
        .query("SELECT id FROM t LIMIT 18446744073709551616", &[])
        .unwrap_err();
    assert!(
        matches!(e, Error::Plan(_)) && e.to_string().contains("LIMIT"),
        "{e}"
    );
    assert_idle(&c);
}

#[test]
fn copy_stays_inside_its_directories() {
    let root = std::env::temp_dir().join(format!("weir-copy-limits-{}", std::process::id()));
    let allowed = root.join("allowed");
    let outside = root.join("outside");
    std::fs::create_dir_all(&allowed).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.csv"), "1,the secret\n").unwrap();
    let c = cluster_with(None, Some(std::slice::from_ref(&allowed)));
    let refused = |sql: String| {
        let e = c.execute(&sql).unwrap_err();
        assert!(matches!(e, Error::Invalid(_)), "{sql}: {e:?}");
        let text = e.to_string();
        assert!(
            text.contains("outside the directories COPY may use") && text.contains("allowed"),
            "{text}"
        );
        assert!(!text.contains("the secret"), "{text}");
    };
    let o = outside.display();
    refused(format!("COPY t FROM '{o}/secret.csv'"));
    refused(format!(
        "COPY t FROM '{}/../outside/secret.csv'",
        allowed.display()
    ));
    refused(format!("COPY t TO '{o}/out.csv'"));
    refused(format!("COPY (SELECT * FROM t) TO '{o}/new/out.parquet'"));
    refused("COPY t FROM '/etc/passwd'".into());
    assert!(!outside.join("out.csv").exists());
    // Inside, both ways.
    let a = allowed.display();
    assert_eq!(
        c.execute(&format!("COPY t TO '{a}/t.csv'")).unwrap(),
        ROWS as u64
    );
    c.execute("CREATE TABLE u (id BIGINT PRIMARY KEY, name VARCHAR)")
        .unwrap();
    assert_eq!(
        c.execute(&format!("COPY u FROM '{a}/t.csv'")).unwrap(),
        ROWS as u64
    );
    // A cluster without the setting reaches any path, as before.
    let open = cluster_with(None, None);
    assert_eq!(
        open.execute(&format!("COPY t TO '{o}/out.csv'")).unwrap(),
        ROWS as u64
    );
    assert_idle(&c);
    assert_idle(&open);
    let _ = std::fs::remove_dir_all(&root);
}
