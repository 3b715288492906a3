//! Sequences made by `CREATE SEQUENCE`: `nextval` never hands a value out twice, not to
//! concurrent callers and not after a restart; a column's `DEFAULT nextval('s')` fills what
//! an INSERT or a COPY leaves out; `setval`, `ALTER SEQUENCE` and the sequences themselves
//! survive a restart; a data directory written before the catalog held such sequences still
//! opens.

use crate::common::{assert_idle, durable_cluster, first_ints, ints};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use weir::{Cluster, Session, Value};

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

#[test]
fn currval_and_lastval_read_what_the_session_was_given_and_no_other_sessions() {
    let c = Arc::new(Cluster::builder().nodes(3).partitions(8).build().unwrap());
    c.execute("CREATE TABLE parent (id SERIAL PRIMARY KEY, name VARCHAR)")
        .unwrap();
    c.execute("CREATE TABLE child (id BIGINT PRIMARY KEY, parent BIGINT REFERENCES parent (id))")
        .unwrap();
    c.execute("CREATE SEQUENCE s START WITH 100 INCREMENT BY 10")
        .unwrap();
    let first = |session: &Session, sql: &str| -> i64 {
        let r = session.run(|| c.query(sql, &[])).unwrap();
        first_ints(&r.rows())[0]
    };
    let a = Session::new();
    let b = Session::new();
    // Nothing handed to a session yet: PostgreSQL's error, typed.
    let err = a
        .run(|| c.query("SELECT currval('parent_id_seq')", &[]))
        .unwrap_err();
    assert!(matches!(err, weir::Error::SequenceUndefined(_)), "{err:?}");
    assert!(
        err.to_string().contains("not yet defined in this session"),
        "{err}"
    );
    assert!(a.run(|| c.query("SELECT lastval()", &[])).is_err());
    // A's insert takes key 1, B's the next keys from another block or the same one: each
    // session reads its own, and uses it for the child row it inserts.
    a.run(|| c.execute("INSERT INTO parent (name) VALUES ('a')"))
        .unwrap();
    b.run(|| c.execute("INSERT INTO parent (name) VALUES ('b1'), ('b2')"))
        .unwrap();
    let a_key = first(&a, "SELECT currval('parent_id_seq')");
    let b_key = first(&b, "SELECT currval('parent_id_seq')");
    let name_of = |key: i64| {
        c.query("SELECT name FROM parent WHERE id = $1", &[Value::Int(key)])
            .unwrap()
            .rows()[0][0]
            .clone()
    };
    assert_eq!(name_of(a_key), Value::Str("a".into()));
    assert_eq!(
        name_of(b_key),
        Value::Str("b2".into()),
        "the last of B's rows"
    );
    // As a value of INSERT ... VALUES, the pattern of scripts that insert a parent, then its
    // children: each session's children reference its own parent.
    a.run(|| c.execute("INSERT INTO child VALUES (1, currval('parent_id_seq'))"))
        .unwrap();
    b.run(|| {
        c.execute(
            "INSERT INTO child VALUES (2, currval('parent_id_seq')), (3, currval('parent_id_seq'))",
        )
    })
    .unwrap();
    assert_eq!(
        c.query("SELECT id, parent FROM child ORDER BY id", &[])
            .unwrap()
            .rows(),
        vec![
            vec![Value::Int(1), Value::Int(a_key)],
            vec![Value::Int(2), Value::Int(b_key)],
            vec![Value::Int(3), Value::Int(b_key)],
        ]
    );
    // Outside a session there is no value to insert: the INSERT fails, inserting nothing.
    assert!(c
        .execute("INSERT INTO child VALUES (4, currval('parent_id_seq'))")
        .is_err());
    // With a nextval of the same sequence in the same INSERT, PostgreSQL reads currval
    // row by row after it: refused rather than answered otherwise.
    c.execute("CREATE TABLE pair (a BIGINT, b BIGINT)").unwrap();
    let err = a
        .run(|| c.execute("INSERT INTO pair VALUES (nextval('s'), currval('s'))"))
        .unwrap_err();
    assert!(err.to_string().contains("also takes values of s"), "{err}");
    // lastval follows the last nextval of any sequence; setval moves currval, not lastval.
    assert_eq!(first(&a, "SELECT nextval('s')"), 100);
    assert_eq!(first(&a, "SELECT lastval()"), 100);
    assert_eq!(first(&a, "SELECT currval('parent_id_seq')"), a_key);
    a.run(|| c.query("SELECT setval('parent_id_seq', 500)", &[]))
        .unwrap();
    assert_eq!(first(&a, "SELECT currval('parent_id_seq')"), 500);
    assert_eq!(first(&a, "SELECT lastval()"), 100);
    // B never touched `s`; outside any session nothing is defined.
    assert!(b.run(|| c.query("SELECT currval('s')", &[])).is_err());
    assert!(c.query("SELECT currval('parent_id_seq')", &[]).is_err());
    // A sequence dropped after its last value: lastval says so.
    b.run(|| c.query("SELECT nextval('s')", &[])).unwrap();
    c.execute("DROP SEQUENCE s").unwrap();
    let err = b.run(|| c.query("SELECT lastval()", &[])).unwrap_err();
    assert!(err.to_string().contains("dropped"), "{err}");
    assert_idle(&c);
}
