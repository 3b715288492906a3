//! Foreign keys (`REFERENCES`, `FOREIGN KEY ... REFERENCES`): a statement that would leave a
//! row referencing a row that is not there is refused, naming the key, and stores nothing;
//! a referenced table cannot be dropped; keys that cannot be enforced are refused when the
//! table is made. (What `ON DELETE` actions do: `foreign_key_actions`.)

use crate::common::{assert_idle, cluster, cluster_builder, first_ints, ints};
use weir::planner::PlanError;
use weir::{Cluster, Error, Value};

/// The ids of `table`'s rows, in order.
fn ids(c: &Cluster, table: &str) -> Vec<i64> {
    let r = c
        .query(&format!("SELECT id FROM {table} ORDER BY id"), &[])
        .unwrap();
    first_ints(&r.rows())
}

/// The error of `sql`, which must be a foreign key violation of `constraint`; its message.
fn violation(c: &Cluster, sql: &str, constraint: &str) -> String {
    match c.execute(sql) {
        Err(e @ Error::ForeignKey { .. }) => {
            let Error::ForeignKey {
                constraint: got, ..
            } = &e
            else {
                unreachable!()
            };
            assert_eq!(got, constraint, "{e}");
            e.to_string()
        }
        other => panic!("{sql}: expected a foreign key violation, got {other:?}"),
    }
}

#[test]
fn a_row_must_reference_a_row_that_is_there() {
    let c = cluster(3);
    c.execute("CREATE TABLE author (id BIGINT PRIMARY KEY, name VARCHAR)")
        .unwrap();
    c.execute(
        "CREATE TABLE book (id BIGINT PRIMARY KEY, title VARCHAR, \
         author_id BIGINT REFERENCES author (id))",
    )
    .unwrap();
    c.execute("INSERT INTO author VALUES (1, 'Ann'), (2, 'Bo')")
        .unwrap();
    c.execute("INSERT INTO book VALUES (10, 'x', 1), (11, 'y', 2), (12, 'z', NULL)")
        .unwrap();
    // One row of three references an author that is not there: nothing is stored.
    let e = violation(
        &c,
        "INSERT INTO book VALUES (13, 'a', 1), (14, 'b', 7), (15, 'c', 2)",
        "book_author_id_fkey",
    );
    assert!(
        e.contains("key (author_id) = (7) is not present in table author"),
        "{e}"
    );
    assert_eq!(ids(&c, "book"), vec![10, 11, 12]);
    // INSERT ... SELECT and prepared inserts are checked alike.
    violation(
        &c,
        "INSERT INTO book SELECT id + 100, name, id + 5 FROM author",
        "book_author_id_fkey",
    );
    assert!(matches!(
        c.execute_with("INSERT INTO book VALUES (16, 'p', ?)", &[Value::Int(3)]),
        Err(Error::ForeignKey { .. })
    ));
    c.execute_with("INSERT INTO book VALUES (16, 'p', ?)", &[Value::Int(2)])
        .unwrap();
    // An UPDATE of the referencing column is checked; one to an author that is there passes.
    violation(
        &c,
        "UPDATE book SET author_id = 9 WHERE id = 10",
        "book_author_id_fkey",
    );
    c.execute("UPDATE book SET author_id = 2 WHERE id = 10")
        .unwrap();
    assert_eq!(
        ints(
            &c.query(
                "SELECT id, author_id FROM book WHERE author_id IS NOT NULL ORDER BY id",
                &[]
            )
            .unwrap()
            .rows()
        ),
        vec![vec![10, 2], vec![11, 2], vec![16, 2]]
    );
    assert_idle(&c);
}

#[test]
fn a_referenced_row_cannot_be_deleted_or_lose_its_key() {
    let c = cluster(3);
    c.execute("CREATE TABLE author (id BIGINT PRIMARY KEY, name VARCHAR)")
        .unwrap();
    c.execute(
        "CREATE TABLE book (id BIGINT PRIMARY KEY, \
         author_id BIGINT, FOREIGN KEY (author_id) REFERENCES author)",
    )
    .unwrap();
    c.execute("INSERT INTO author VALUES (1, 'Ann'), (2, 'Bo'), (3, 'Cy')")
        .unwrap();
    c.execute("INSERT INTO book VALUES (10, 1), (11, 1), (12, 2)")
        .unwrap();
    let e = violation(
        &c,
        "DELETE FROM author WHERE id <= 2",
        "book_author_id_fkey",
    );
    assert!(
        e.contains("key (id) = (1) is still referenced from table book")
            || e.contains("key (id) = (2) is still referenced from table book"),
        "{e}"
    );
    violation(
        &c,
        "UPDATE author SET id = id + 10 WHERE id = 2",
        "book_author_id_fkey",
    );
    assert_eq!(ids(&c, "author"), vec![1, 2, 3]);
    // What no row references goes; so does a change that keeps the key.
    c.execute("DELETE FROM author WHERE id = 3").unwrap();
    c.execute("UPDATE author SET name = 'Anna' WHERE id = 1")
        .unwrap();
    c.execute("UPDATE author SET id = id WHERE id = 1").unwrap();
    // Once the referencing rows are gone, so may the referenced.
    c.execute("DELETE FROM book WHERE author_id = 2").unwrap();
    c.execute("DELETE FROM author WHERE id = 2").unwrap();
    assert_eq!(ids(&c, "author"), vec![1]);
    assert_idle(&c);
}

#[test]
fn a_table_may_reference_itself() {
    let c = cluster(2);
    c.execute(
        "CREATE TABLE node (id BIGINT PRIMARY KEY, parent BIGINT REFERENCES node, name VARCHAR)",
    )
    .unwrap();
    // A statement's rows may reference each other.
    c.execute("INSERT INTO node VALUES (1, NULL, 'root'), (2, 1, 'a'), (3, 2, 'b')")
        .unwrap();
    violation(
        &c,
        "INSERT INTO node VALUES (4, 5, 'c')",
        "node_parent_fkey",
    );
    violation(&c, "DELETE FROM node WHERE id = 2", "node_parent_fkey");
    // A row that references itself, and a delete of a row with the rows referencing it.
    c.execute("INSERT INTO node VALUES (5, 5, 'loop')").unwrap();
    c.execute("DELETE FROM node WHERE id = 5").unwrap();
    c.execute("DELETE FROM node WHERE id >= 2").unwrap();
    assert_eq!(ids(&c, "node"), vec![1]);
    c.execute("INSERT INTO node VALUES (2, 1, 'a')").unwrap();
    c.execute("DELETE FROM node").unwrap();
    assert_eq!(ids(&c, "node"), Vec::<i64>::new());
    assert_idle(&c);
}

#[test]
fn a_key_may_reference_a_unique_constraint_of_several_columns() {
    let c = cluster(3);
    // The parent's key is `id`; the child references (code, year), a unique constraint.
    c.execute(
        "CREATE TABLE edition (id BIGINT PRIMARY KEY, code VARCHAR, year BIGINT, \
         UNIQUE (code, year))",
    )
    .unwrap();
    c.execute(
        "CREATE TABLE copy (id BIGINT PRIMARY KEY, code VARCHAR, year BIGINT, \
         CONSTRAINT copy_edition FOREIGN KEY (year, code) REFERENCES edition (year, code))",
    )
    .unwrap();
    c.execute("INSERT INTO edition VALUES (1, 'a', 2020), (2, 'a', 2021)")
        .unwrap();
    c.execute("INSERT INTO copy VALUES (10, 'a', 2020), (11, 'b', NULL)")
        .unwrap();
    let e = violation(
        &c,
        "INSERT INTO copy VALUES (12, 'b', 2020)",
        "copy_edition",
    );
    assert!(e.contains("key (year, code) = (2020, 'b')"), "{e}");
    // Changing a referenced pair (not the parent's key) is refused; another row's is not.
    violation(
        &c,
        "UPDATE edition SET year = 2019 WHERE id = 1",
        "copy_edition",
    );
    c.execute("UPDATE edition SET year = 2022 WHERE id = 2")
        .unwrap();
    violation(&c, "DELETE FROM edition", "copy_edition");
    assert_eq!(ids(&c, "edition"), vec![1, 2]);
    assert_idle(&c);
}

#[test]
fn a_table_without_a_primary_key_may_be_referenced_through_a_unique_column() {
    let c = cluster(2);
    c.execute("CREATE TABLE tag (name VARCHAR UNIQUE, colour VARCHAR)")
        .unwrap();
    c.execute("CREATE TABLE tagged (id BIGINT PRIMARY KEY, tag VARCHAR REFERENCES tag (name))")
        .unwrap();
    c.execute("INSERT INTO tag VALUES ('red', 'r'), ('blue', 'b')")
        .unwrap();
    c.execute("INSERT INTO tagged VALUES (1, 'red')").unwrap();
    violation(
        &c,
        "INSERT INTO tagged VALUES (2, 'green')",
        "tagged_tag_fkey",
    );
    violation(&c, "DELETE FROM tag WHERE name = 'red'", "tagged_tag_fkey");
    violation(
        &c,
        "UPDATE tag SET name = 'crimson' WHERE name = 'red'",
        "tagged_tag_fkey",
    );
    c.execute("UPDATE tag SET colour = 'rr' WHERE name = 'red'")
        .unwrap();
    c.execute("DELETE FROM tag WHERE name = 'blue'").unwrap();
    assert_eq!(
        c.query("SELECT name, colour FROM tag", &[]).unwrap().rows(),
        vec![vec!["red".into(), "rr".into()]]
    );
    assert_idle(&c);
}

#[test]
fn a_referenced_table_cannot_be_dropped_before_the_tables_referencing_it() {
    let c = cluster(2);
    c.execute("CREATE TABLE p (id BIGINT PRIMARY KEY)").unwrap();
    c.execute("CREATE TABLE ch (id BIGINT PRIMARY KEY, p_id BIGINT REFERENCES p)")
        .unwrap();
    match c.execute("DROP TABLE p") {
        Err(Error::Plan(PlanError::Depended(m))) => {
            assert!(m.contains("ch_p_id_fkey") && m.contains("'ch'"), "{m}")
        }
        other => panic!("{other:?}"),
    }
    c.execute("DROP TABLE ch").unwrap();
    c.execute("DROP TABLE p").unwrap();
    // A table that references itself drops as any other.
    c.execute("CREATE TABLE s (id BIGINT PRIMARY KEY, up BIGINT REFERENCES s)")
        .unwrap();
    c.execute("DROP TABLE s").unwrap();
    assert_idle(&c);
}

#[test]
fn a_key_that_cannot_be_enforced_is_refused_when_the_table_is_made() {
    let c = cluster(2);
    c.execute("CREATE TABLE p (id BIGINT PRIMARY KEY, code VARCHAR, n BIGINT)")
        .unwrap();
    c.execute("CREATE TABLE bag (v BIGINT)").unwrap();
    let refused = |sql: &str| -> Error {
        let e = c.execute(sql).unwrap_err();
        assert!(
            c.query("SELECT 1 FROM ch", &[]).is_err(),
            "{sql} made the table"
        );
        e
    };
    let cases = [
        // An unknown table, or column.
        ("CREATE TABLE ch (x BIGINT REFERENCES nope)", "nope"),
        ("CREATE TABLE ch (x BIGINT REFERENCES p (nope))", "nope"),
        (
            "CREATE TABLE ch (x BIGINT, FOREIGN KEY (y) REFERENCES p)",
            "y",
        ),
        // Columns that are neither the key nor unique; a table without a key.
        (
            "CREATE TABLE ch (x BIGINT REFERENCES p (n))",
            "no primary key or unique",
        ),
        (
            "CREATE TABLE ch (x BIGINT REFERENCES bag)",
            "has no primary key",
        ),
        // Another type, another number of columns.
        ("CREATE TABLE ch (x VARCHAR REFERENCES p)", "VARCHAR"),
        (
            "CREATE TABLE ch (x BIGINT, y BIGINT, FOREIGN KEY (x, y) REFERENCES p)",
            "2 column(s) but references 1",
        ),
    ];
    for (sql, says) in cases {
        let e = refused(sql).to_string();
        assert!(e.contains(says), "{sql}: {e}");
    }
    // What weir does not enforce is refused by name.
    for (sql, says) in [
        (
            "CREATE TABLE ch (x BIGINT, y BIGINT, FOREIGN KEY (x) REFERENCES p MATCH FULL)",
            "MATCH FULL",
        ),
        (
            "CREATE TABLE ch (x BIGINT REFERENCES p DEFERRABLE)",
            "DEFERRABLE",
        ),
    ] {
        match refused(sql) {
            Error::Plan(PlanError::Unsupported { what, .. }) => {
                assert!(what.contains(says), "{sql}: {what}")
            }
            other => panic!("{sql}: {other:?}"),
        }
    }
    // RESTRICT and NO ACTION are what weir does.
    c.execute("CREATE TABLE ch (x BIGINT REFERENCES p ON DELETE RESTRICT ON UPDATE NO ACTION)")
        .unwrap();
    assert_idle(&c);
}

#[test]
fn foreign_keys_are_kept_across_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let open = || {
        cluster_builder()
            .nodes(2)
            .data_dir(tmp.path())
            .build()
            .unwrap()
    };
    let c = open();
    c.execute("CREATE TABLE p (id BIGINT PRIMARY KEY)").unwrap();
    c.execute("CREATE TABLE ch (id BIGINT PRIMARY KEY, p_id BIGINT REFERENCES p)")
        .unwrap();
    c.execute("INSERT INTO p VALUES (1)").unwrap();
    c.execute("INSERT INTO ch VALUES (1, 1)").unwrap();
    c.shutdown();
    let c = open();
    violation(&c, "INSERT INTO ch VALUES (2, 2)", "ch_p_id_fkey");
    violation(&c, "DELETE FROM p", "ch_p_id_fkey");
    assert!(matches!(
        c.execute("DROP TABLE p"),
        Err(Error::Plan(PlanError::Depended(_)))
    ));
    assert_idle(&c);
}
