//! Sequences made by `CREATE SEQUENCE`: `nextval` never hands a value out twice, not to
//! concurrent callers and not after a restart; a column's `DEFAULT nextval('s')` fills what
//! an INSERT or a COPY leaves out; `setval`, `ALTER SEQUENCE` and the sequences themselves
//! survive a restart; a data directory written before the catalog held such sequences still
//! opens.

use crate::common::{assert_idle, durable_cluster, first_ints, ints};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use weir::{Cluster, Value};

fn nextval(c: &Cluster, sequence: &str) -> i64 {
    let r = c
        .query(&format!("SELECT nextval('{sequence}')"), &[])
        .unwrap();
    ints(&r.rows())[0][0]
}

#[test]
fn nextval_hands_each_value_out_once_to_concurrent_callers_and_after_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let handed: BTreeSet<i64> = {
        let c = Arc::new(durable_cluster(tmp.path()));
        c.execute("CREATE SEQUENCE s START WITH 1 INCREMENT BY 50")
            .unwrap();
        let callers: Vec<_> = (0..4)
            .map(|_| {
                let c = c.clone();
                std::thread::spawn(move || (0..25).map(|_| nextval(&c, "s")).collect::<Vec<_>>())
            })
            .collect();
        let values: Vec<i64> = callers
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect();
        let distinct: BTreeSet<i64> = values.iter().copied().collect();
        assert_eq!(distinct.len(), 100, "a value was handed out twice");
        assert!(
            distinct.iter().all(|v| v % 50 == 1),
            "values off the sequence's steps: {distinct:?}"
        );
        distinct
        // Dropped without a shutdown.
    };
    let c = durable_cluster(tmp.path());
    let after = nextval(&c, "s");
    assert!(
        after > *handed.last().unwrap(),
        "{after} handed out again after the restart"
    );
    assert_eq!(after % 50, 1);
    // setval is kept across a restart too.
    c.query("SELECT setval('s', 1000000)", &[]).unwrap();
    c.shutdown();
    let c = durable_cluster(tmp.path());
    assert_eq!(nextval(&c, "s"), 1_000_050);
    // So is ALTER SEQUENCE.
    c.execute("ALTER SEQUENCE s RESTART WITH 7 INCREMENT BY 3")
        .unwrap();
    c.shutdown();
    let c = durable_cluster(tmp.path());
    assert_eq!((nextval(&c, "s"), nextval(&c, "s")), (7, 10));
    assert_idle(&c);
}

#[test]
fn a_default_of_nextval_fills_what_inserts_and_copies_leave_out() {
    let tmp = tempfile::tempdir().unwrap();
    let c = durable_cluster(tmp.path());
    c.execute("CREATE SEQUENCE order_ids START WITH 100")
        .unwrap();
    c.execute(
        "CREATE TABLE orders (id BIGINT PRIMARY KEY DEFAULT nextval('order_ids'), item VARCHAR)",
    )
    .unwrap();
    c.execute("INSERT INTO orders (item) VALUES ('bolt'), ('nut')")
        .unwrap();
    let r = c
        .query(
            "INSERT INTO orders (item) VALUES ('gear') RETURNING id",
            &[],
        )
        .unwrap();
    assert_eq!(ints(&r.rows()), vec![vec![102]]);
    let csv = tmp.path().join("items.csv");
    std::fs::write(&csv, "item\naxle\ncam\n").unwrap();
    c.execute(&format!(
        "COPY orders (item) FROM '{}' (FORMAT csv, HEADER true)",
        csv.display()
    ))
    .unwrap();
    c.shutdown();
    let c = durable_cluster(tmp.path());
    c.execute("INSERT INTO orders (item) VALUES ('pin')")
        .unwrap();
    let ids = first_ints(
        &c.query("SELECT id FROM orders ORDER BY id", &[])
            .unwrap()
            .rows(),
    );
    assert_eq!(&ids[..5], &[100, 101, 102, 103, 104]);
    assert!(ids[5] > 104, "{ids:?}");
    assert_idle(&c);
}

/// `tests/fixtures/format-3-data-dir` was written by `weir sql --nodes 2 --data-dir` of the
/// build before `CREATE SEQUENCE` (1b6e82e): `t (id SERIAL PRIMARY KEY, name VARCHAR NOT NULL
/// DEFAULT 'anon', x BIGINT UNIQUE)` with rows (1, 'anon', 10), (2, 'b', 20), and `r (id BIGINT
/// PRIMARY KEY, t_id BIGINT REFERENCES t)` with (1, 2).
#[test]
fn a_data_directory_of_the_third_catalog_format_opens() {
    let tmp = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/format-3-data-dir");
    crate::common::copy_dir(&fixture, tmp.path());
    let c = durable_cluster(tmp.path());
    let rows = |c: &Cluster, sql: &str| c.query(sql, &[]).unwrap().rows();
    assert_eq!(
        rows(&c, "SELECT id, name, x FROM t ORDER BY id"),
        vec![
            vec![1.into(), "anon".into(), 10.into()],
            vec![2.into(), "b".into(), 20.into()]
        ]
    );
    assert!(c.execute("DELETE FROM t WHERE id = 2").is_err());
    // Its SERIAL sequence goes on by its PostgreSQL name; a sequence of today's format is
    // kept beside the old catalog's across a restart.
    assert!(nextval(&c, "t_id_seq") > 2);
    c.execute("CREATE SEQUENCE s START WITH 7").unwrap();
    assert_eq!(nextval(&c, "s"), 7);
    c.shutdown();
    let c = durable_cluster(tmp.path());
    assert!(nextval(&c, "s") > 7);
    assert_eq!(
        rows(&c, "SELECT COUNT(*) FROM r"),
        vec![vec![Value::Int(1)]]
    );
    assert_idle(&c);
}
