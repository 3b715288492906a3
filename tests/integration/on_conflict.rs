//! `INSERT ... ON CONFLICT [target] DO NOTHING`: a row that clashes on the primary key or a
//! unique index, with a stored row or an earlier row of the statement, is skipped instead of
//! failing the statement; the target names the key or index whose clashes are skipped (a
//! clash on another still fails), and one that names none is an error. `ON CONFLICT (target)
//! DO UPDATE SET ... [WHERE ...]` updates the stored row instead, reading the proposed one as
//! `excluded`.

use crate::common::{assert_idle, cluster, ints};
use weir::{Error, Value};

#[test]
fn clashing_rows_are_skipped_and_the_rest_inserted() {
    let c = cluster(3);
    c.execute("CREATE TABLE u (id BIGINT PRIMARY KEY, email VARCHAR UNIQUE, n BIGINT)")
        .unwrap();
    c.execute("INSERT INTO u VALUES (1, 'a', 0), (2, 'b', 0)")
        .unwrap();
    // A stored key, a stored email, a key repeated in the statement, a NULL email (never
    // clashes), and new rows.
    let r = c
        .query(
            "INSERT INTO u VALUES (1, 'x', 1), (3, 'b', 1), (4, 'c', 1), (4, 'd', 1), \
             (5, NULL, 1), (6, NULL, 1) ON CONFLICT DO NOTHING RETURNING id",
            &[],
        )
        .unwrap();
    assert_eq!(ints(&r.rows()), vec![vec![4], vec![5], vec![6]]);
    assert_eq!(
        c.execute("INSERT INTO u VALUES (1, 'y', 2) ON CONFLICT DO NOTHING")
            .unwrap(),
        0
    );
    // INSERT ... SELECT skips the same way (key 6 is stored: only 7 goes in).
    assert_eq!(
        c.execute(
            "INSERT INTO u SELECT id + 5, email || '2', 3 FROM u WHERE id <= 2 \
             ON CONFLICT (id) DO NOTHING"
        )
        .unwrap(),
        1
    );
    let stored = c.query("SELECT id, email FROM u ORDER BY id", &[]).unwrap();
    assert_eq!(
        stored.rows(),
        vec![
            vec![1.into(), "a".into()],
            vec![2.into(), "b".into()],
            vec![4.into(), "c".into()],
            vec![5.into(), Value::Null],
            vec![6.into(), Value::Null],
            vec![7.into(), "b2".into()],
        ]
    );
    assert_idle(&c);
}

#[test]
fn a_target_skips_only_its_own_clashes() {
    let c = cluster(2);
    c.execute("CREATE TABLE u (id BIGINT PRIMARY KEY, email VARCHAR UNIQUE)")
        .unwrap();
    c.execute("INSERT INTO u VALUES (1, 'a')").unwrap();
    // A clash on the key, skipped by name of the key or of its constraint.
    for target in ["(id)", "ON CONSTRAINT u_pkey"] {
        let sql = format!("INSERT INTO u VALUES (1, 'z') ON CONFLICT {target} DO NOTHING");
        assert_eq!(c.execute(&sql).unwrap(), 0, "{sql}");
    }
    assert_eq!(
        c.execute("INSERT INTO u VALUES (7, 'a') ON CONFLICT (email) DO NOTHING")
            .unwrap(),
        0
    );
    // A clash on the other unique index is an error, as without ON CONFLICT.
    assert!(matches!(
        c.execute("INSERT INTO u VALUES (8, 'a') ON CONFLICT (id) DO NOTHING"),
        Err(Error::DuplicateUnique { .. })
    ));
    let e = c
        .execute("INSERT INTO u VALUES (9, 'q') ON CONFLICT (id, email) DO NOTHING")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("no primary key or unique index on (id, email)"),
        "{e}"
    );
    assert_eq!(
        c.query("SELECT COUNT(*) FROM u", &[]).unwrap().rows(),
        vec![vec![Value::Int(1)]]
    );
    assert_idle(&c);
}

/// The rows of `kv`, in key order.
fn kv(c: &weir::Cluster) -> Vec<Vec<Value>> {
    c.query("SELECT id, v, n FROM kv ORDER BY id", &[])
        .unwrap()
        .rows()
}

fn row(id: i64, v: &str, n: i64) -> Vec<Value> {
    vec![id.into(), v.into(), n.into()]
}

#[test]
fn do_update_updates_the_stored_row_and_inserts_the_others() {
    let c = cluster(3);
    c.execute("CREATE TABLE kv (id BIGINT PRIMARY KEY, v VARCHAR NOT NULL, n BIGINT)")
        .unwrap();
    c.execute("INSERT INTO kv VALUES (1, 'a', 10), (2, 'b', 20)")
        .unwrap();
    // 1 clashes and is updated from the stored row and the proposed one; 3 goes in.
    let r = c
        .query(
            "INSERT INTO kv VALUES (1, 'x', 1), (3, 'c', 30) ON CONFLICT (id) \
             DO UPDATE SET v = excluded.v, n = kv.n + excluded.n RETURNING id, v, n",
            &[],
        )
        .unwrap();
    let mut returned = r.rows();
    returned.sort_by(|a, b| Value::cmp_rows(a, b));
    assert_eq!(returned, vec![row(1, "x", 11), row(3, "c", 30)]);
    assert_eq!(
        kv(&c),
        vec![row(1, "x", 11), row(2, "b", 20), row(3, "c", 30)]
    );
    // The count is of the rows inserted and updated; WHERE leaves a stored row alone (and
    // out of the count).
    assert_eq!(
        c.execute(
            "INSERT INTO kv VALUES (1, 'y', 0), (2, 'y', 0), (4, 'd', 40) ON CONFLICT (id) \
             DO UPDATE SET v = excluded.v WHERE kv.n < 15"
        )
        .unwrap(),
        2
    );
    assert_eq!(
        kv(&c),
        vec![
            row(1, "y", 11),
            row(2, "b", 20),
            row(3, "c", 30),
            row(4, "d", 40)
        ]
    );
    // Parameters, in the rows and in SET, run after run.
    let sql =
        "INSERT INTO kv VALUES ($1, $2, 1) ON CONFLICT (id) DO UPDATE SET v = $2, n = kv.n + $3";
    for _ in 0..2 {
        c.execute_with(sql, &[5.into(), "e".into(), 100.into()])
            .unwrap();
    }
    assert_eq!(kv(&c)[4], row(5, "e", 101));
    // INSERT ... SELECT: every row clashes.
    assert_eq!(
        c.execute(
            "INSERT INTO kv SELECT id, v, n FROM kv WHERE id <= 2 ON CONFLICT ON CONSTRAINT kv_pkey \
             DO UPDATE SET n = excluded.n * 2"
        )
        .unwrap(),
        2
    );
    assert_eq!(kv(&c)[..2], [row(1, "y", 22), row(2, "b", 40)]);
    assert_idle(&c);
}

#[test]
fn do_update_on_a_unique_index_and_what_it_refuses() {
    let c = cluster(2);
    c.execute(
        "CREATE TABLE u (id BIGINT PRIMARY KEY, email VARCHAR UNIQUE, name VARCHAR NOT NULL)",
    )
    .unwrap();
    c.execute("INSERT INTO u VALUES (1, 'a@x', 'Ann')").unwrap();
    // A clash on the email updates the row it names (its key stays).
    c.execute(
        "INSERT INTO u VALUES (9, 'a@x', 'Anna') ON CONFLICT (email) DO UPDATE SET name = excluded.name",
    )
    .unwrap();
    assert_eq!(
        c.query("SELECT id, name FROM u", &[]).unwrap().rows(),
        vec![vec![1.into(), "Anna".into()]]
    );
    let stored = || {
        c.query("SELECT id, email, name FROM u ORDER BY id", &[])
            .unwrap()
            .rows()
    };
    let before = stored();
    let refused = |sql: &str| {
        let e = c.execute(sql).unwrap_err();
        assert_eq!(stored(), before, "{sql} stored something");
        e.to_string()
    };
    // Two proposed rows for one stored row; an update that breaks NOT NULL; a target
    // missing; a SET naming no column: nothing of the statement is stored.
    let e = refused(
        "INSERT INTO u VALUES (2, 'b@x', 'B'), (1, 'a@x', 'C'), (3, 'a@x', 'D') \
         ON CONFLICT (email) DO UPDATE SET name = excluded.name",
    );
    assert!(e.contains("a second time"), "{e}");
    let e = refused(
        "INSERT INTO u VALUES (2, 'b@x', 'B'), (1, 'a@x', 'C') ON CONFLICT (id) DO UPDATE SET name = NULL",
    );
    assert!(e.contains("NOT NULL"), "{e}");
    let e = refused("INSERT INTO u VALUES (2, 'b@x', 'B') ON CONFLICT DO UPDATE SET name = 'x'");
    assert!(e.contains("conflict target"), "{e}");
    let e = refused("INSERT INTO u VALUES (2, 'b@x', 'B') ON CONFLICT (id) DO UPDATE SET nope = 1");
    assert!(e.contains("nope"), "{e}");
    // A table without a primary key has no rows to update by identity.
    c.execute("CREATE TABLE bag (v BIGINT UNIQUE, w BIGINT)")
        .unwrap();
    assert!(matches!(
        c.execute("INSERT INTO bag VALUES (1, 1) ON CONFLICT (v) DO UPDATE SET w = 2"),
        Err(Error::Plan(weir::planner::PlanError::Unsupported { .. }))
    ));
    assert_idle(&c);
}

#[test]
fn concurrent_upserts_of_one_counter_lose_no_increment() {
    let c = cluster(3);
    c.execute("CREATE TABLE hits (page BIGINT PRIMARY KEY, n BIGINT NOT NULL)")
        .unwrap();
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..25 {
                    c.execute(
                        "INSERT INTO hits VALUES (7, 1) ON CONFLICT (page) DO UPDATE SET n = hits.n + 1",
                    )
                    .unwrap();
                }
            });
        }
    });
    assert_eq!(
        c.query("SELECT page, n FROM hits", &[]).unwrap().rows(),
        vec![vec![Value::Int(7), Value::Int(100)]]
    );
    assert_idle(&c);
}
