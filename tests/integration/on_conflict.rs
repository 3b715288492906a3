//! `INSERT ... ON CONFLICT [target] DO NOTHING`: a row that clashes on the primary key or a
//! unique index, with a stored row or an earlier row of the statement, is skipped instead of
//! failing the statement; the target names the key or index whose clashes are skipped (a
//! clash on another still fails), and one that names none is an error.

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
    let e = c
        .execute("INSERT INTO u VALUES (9, 'q') ON CONFLICT (id) DO UPDATE SET email = 'w'")
        .unwrap_err()
        .to_string();
    assert!(e.contains("ON CONFLICT ... DO UPDATE"), "{e}");
    assert_eq!(
        c.query("SELECT COUNT(*) FROM u", &[]).unwrap().rows(),
        vec![vec![Value::Int(1)]]
    );
    assert_idle(&c);
}
