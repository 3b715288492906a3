//! What a DELETE or an UPDATE does through the `ON DELETE` and `ON UPDATE` actions of the
//! foreign keys referencing its rows (`CASCADE`, `SET NULL`, `SET DEFAULT`), beyond the
//! answers `tests/slt/foreign_key_actions.slt` checks: the typed error of a statement a key
//! stops, tables without a primary key, actions kept across a restart, and no actor or
//! memory left behind.

use crate::common::{assert_idle, cluster, durable_cluster, ints};
use weir::{Cluster, Error};

/// The rows of `sql`, as integers (NULL as -1).
fn rows(c: &Cluster, sql: &str) -> Vec<Vec<i64>> {
    let r = c.query(sql, &[]).unwrap().rows();
    let r: Vec<Vec<_>> = r
        .into_iter()
        .map(|row| {
            row.into_iter()
                .map(|v| match v {
                    weir::Value::Null => weir::Value::Int(-1),
                    v => v,
                })
                .collect()
        })
        .collect();
    ints(&r)
}

#[test]
fn a_key_that_stops_a_cascade_fails_the_statement_with_its_name_and_keeps_every_row() {
    let c = cluster(3);
    c.execute("CREATE TABLE a (id BIGINT PRIMARY KEY)").unwrap();
    c.execute("CREATE TABLE b (id BIGINT PRIMARY KEY, a_id BIGINT REFERENCES a ON DELETE CASCADE)")
        .unwrap();
    c.execute(
        "CREATE TABLE k (id BIGINT PRIMARY KEY, b_id BIGINT REFERENCES b ON DELETE RESTRICT)",
    )
    .unwrap();
    c.execute("INSERT INTO a SELECT * FROM generate_series(1, 50)")
        .unwrap();
    c.execute("INSERT INTO b SELECT g, g % 50 + 1 FROM generate_series(1, 500) AS s(g)")
        .unwrap();
    c.execute("INSERT INTO k VALUES (1, 58)").unwrap(); // book 58 is by author 9
    match c.execute("DELETE FROM a WHERE id < 10") {
        Err(Error::ForeignKey {
            table, constraint, ..
        }) => assert_eq!((table.as_str(), constraint.as_str()), ("b", "k_b_id_fkey")),
        other => panic!("expected k_b_id_fkey to stop the delete, got {other:?}"),
    }
    assert_eq!(rows(&c, "SELECT count(*) FROM a"), vec![vec![50]]);
    assert_eq!(rows(&c, "SELECT count(*) FROM b"), vec![vec![500]]);
    assert_idle(&c);
    // Without the row that stopped it, the cascade goes through: 9 authors, 90 books.
    c.execute("DELETE FROM k").unwrap();
    let deleted = c.execute("DELETE FROM a WHERE id < 10").unwrap();
    assert_eq!(deleted, 9);
    assert_eq!(rows(&c, "SELECT count(*) FROM a"), vec![vec![41]]);
    assert_eq!(rows(&c, "SELECT count(*) FROM b"), vec![vec![410]]);
    assert_eq!(
        rows(&c, "SELECT count(*) FROM b WHERE a_id < 10"),
        vec![vec![0]]
    );
    assert_idle(&c);
}

#[test]
fn rows_of_a_table_without_a_primary_key_are_deleted_or_changed() {
    let c = cluster(2);
    c.execute("CREATE TABLE p (id BIGINT PRIMARY KEY)").unwrap();
    c.execute("CREATE TABLE gone (p_id BIGINT REFERENCES p ON DELETE CASCADE, n BIGINT)")
        .unwrap();
    c.execute("CREATE TABLE kept (p_id BIGINT REFERENCES p ON DELETE SET NULL, n BIGINT)")
        .unwrap();
    c.execute("INSERT INTO p VALUES (1), (2)").unwrap();
    // Equal rows twice: both go, both change.
    c.execute("INSERT INTO gone VALUES (1, 10), (1, 10), (2, 20)")
        .unwrap();
    c.execute("INSERT INTO kept VALUES (1, 10), (1, 10), (2, 20)")
        .unwrap();
    c.execute("DELETE FROM p WHERE id = 1").unwrap();
    assert_eq!(
        rows(&c, "SELECT p_id, n FROM gone ORDER BY n"),
        vec![vec![2, 20]]
    );
    assert_eq!(
        rows(&c, "SELECT p_id, n FROM kept ORDER BY n, p_id"),
        vec![vec![-1, 10], vec![-1, 10], vec![2, 20]]
    );
    // Row counts follow (the planner's estimates read them).
    assert_eq!(rows(&c, "SELECT count(*) FROM gone"), vec![vec![1]]);
    assert_idle(&c);
}

#[test]
fn an_update_cascades_through_two_tables_or_a_restrict_key_stops_it_all() {
    let c = cluster(3);
    c.execute("CREATE TABLE a (id BIGINT PRIMARY KEY)").unwrap();
    c.execute("CREATE TABLE b (id BIGINT PRIMARY KEY, a_id BIGINT REFERENCES a ON UPDATE CASCADE)")
        .unwrap();
    // Keyless, and referenced by nothing: its rows are rewritten where they change.
    c.execute("CREATE TABLE log (a_id BIGINT REFERENCES a ON UPDATE CASCADE, n BIGINT)")
        .unwrap();
    c.execute(
        "CREATE TABLE k (id BIGINT PRIMARY KEY, a_id BIGINT REFERENCES a ON UPDATE RESTRICT)",
    )
    .unwrap();
    c.execute("INSERT INTO a SELECT * FROM generate_series(1, 50)")
        .unwrap();
    c.execute("INSERT INTO b SELECT g, g % 50 + 1 FROM generate_series(1, 500) AS s(g)")
        .unwrap();
    c.execute("INSERT INTO log SELECT g % 50 + 1, g FROM generate_series(1, 200) AS s(g)")
        .unwrap();
    c.execute("INSERT INTO k VALUES (1, 9)").unwrap();
    // Renumbering authors 1..9 is stopped by k's RESTRICT key on author 9: nothing moves.
    match c.execute("UPDATE a SET id = id + 1000 WHERE id < 10") {
        Err(Error::ForeignKey {
            table, constraint, ..
        }) => assert_eq!((table.as_str(), constraint.as_str()), ("a", "k_a_id_fkey")),
        other => panic!("expected k_a_id_fkey to stop the update, got {other:?}"),
    }
    assert_eq!(
        rows(&c, "SELECT count(*) FROM a WHERE id > 1000"),
        vec![vec![0]]
    );
    assert_eq!(
        rows(&c, "SELECT count(*) FROM b WHERE a_id > 1000"),
        vec![vec![0]]
    );
    assert_eq!(
        rows(&c, "SELECT count(*) FROM log WHERE a_id > 1000"),
        vec![vec![0]]
    );
    assert_idle(&c);
    // Without it, 9 authors move, with their 90 books and 36 log rows.
    c.execute("DELETE FROM k").unwrap();
    let updated = c
        .execute("UPDATE a SET id = id + 1000 WHERE id < 10")
        .unwrap();
    assert_eq!(updated, 9);
    assert_eq!(
        rows(&c, "SELECT count(*) FROM a WHERE id > 1000"),
        vec![vec![9]]
    );
    assert_eq!(
        rows(
            &c,
            "SELECT count(*), min(a_id), max(a_id) FROM b WHERE a_id > 1000"
        ),
        vec![vec![90, 1001, 1009]]
    );
    assert_eq!(
        rows(&c, "SELECT count(*) FROM b WHERE a_id < 10"),
        vec![vec![0]]
    );
    assert_eq!(
        rows(&c, "SELECT count(*), sum(n) FROM log WHERE a_id > 1000"),
        rows(
            &c,
            "SELECT count(*), sum(g) FROM generate_series(1, 200) AS s(g) WHERE g % 50 + 1 < 10"
        )
    );
    // Every book still finds its author.
    assert_eq!(
        rows(&c, "SELECT count(*) FROM b JOIN a ON b.a_id = a.id"),
        vec![vec![500]]
    );
    assert_eq!(rows(&c, "SELECT count(*) FROM log"), vec![vec![200]]);
    assert_idle(&c);
}

#[test]
fn delete_and_update_actions_are_kept_across_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let open = || durable_cluster(tmp.path());
    let c = open();
    c.execute("CREATE TABLE p (id BIGINT PRIMARY KEY)").unwrap();
    c.execute(
        "CREATE TABLE ch (id BIGINT PRIMARY KEY, \
         p_id BIGINT REFERENCES p ON DELETE CASCADE ON UPDATE CASCADE)",
    )
    .unwrap();
    c.execute(
        "CREATE TABLE lo (id BIGINT PRIMARY KEY, \
         p_id BIGINT REFERENCES p ON DELETE SET NULL ON UPDATE SET NULL)",
    )
    .unwrap();
    c.execute("INSERT INTO p VALUES (1), (2), (3)").unwrap();
    c.execute("INSERT INTO ch VALUES (1, 1), (2, 2), (3, 3)")
        .unwrap();
    c.execute("INSERT INTO lo VALUES (1, 1), (2, 2), (3, 3)")
        .unwrap();
    c.shutdown();
    // The actions were kept with the catalog; what they write to each table is durable.
    let c = open();
    c.execute("DELETE FROM p WHERE id = 1").unwrap();
    c.execute("UPDATE p SET id = 7 WHERE id = 2").unwrap();
    c.shutdown();
    let c = open();
    assert_eq!(
        rows(&c, "SELECT id FROM p ORDER BY id"),
        vec![vec![3], vec![7]]
    );
    assert_eq!(
        rows(&c, "SELECT id, p_id FROM ch ORDER BY id"),
        vec![vec![2, 7], vec![3, 3]]
    );
    assert_eq!(
        rows(&c, "SELECT id, p_id FROM lo ORDER BY id"),
        vec![vec![1, -1], vec![2, -1], vec![3, 3]]
    );
    assert_idle(&c);
}
