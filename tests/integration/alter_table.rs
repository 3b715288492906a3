//! `ALTER TABLE` on a cluster: the rows every node stores change with the catalog, survive a
//! restart (from the log, and from a checkpoint written between changes), and a table's
//! sequences and keys carry on under its new names. The SQL itself is in
//! `tests/slt/alter_table.slt`.

use crate::common::{assert_idle, cluster_builder, sorted_rows};
use std::path::Path;
use weir::{Cluster, Durability, Value};

fn open(dir: &Path) -> Cluster {
    cluster_builder()
        .nodes(3)
        .backups(1)
        .data_dir(dir)
        .durability(Durability::Fsync)
        .build()
        .unwrap()
}

fn rows(c: &Cluster, sql: &str) -> Vec<Vec<Value>> {
    sorted_rows(c.query(sql, &[]).unwrap().rows())
}

/// A DECIMAL(12, 2) of `cents` hundredths.
fn dec(cents: i128) -> Value {
    Value::Decimal(cents, 2)
}

fn s(text: &str) -> Value {
    Value::Str(text.to_string())
}

#[test]
fn altered_tables_read_back_after_a_restart_from_the_log_and_from_a_checkpoint() {
    for checkpoint in [false, true] {
        let tmp = tempfile::tempdir().unwrap();
        {
            let c = open(tmp.path());
            c.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, name VARCHAR, x BIGINT)")
                .unwrap();
            let values: Vec<String> = (1..=200)
                .map(|i| format!("({i}, 'n{i}', {})", i * 10))
                .collect();
            c.execute(&format!("INSERT INTO t VALUES {}", values.join(", ")))
                .unwrap();
            c.execute("ALTER TABLE t ADD COLUMN flag BOOLEAN DEFAULT true")
                .unwrap();
            c.execute("ALTER TABLE t DROP COLUMN name").unwrap();
            if checkpoint {
                c.checkpoint().unwrap();
            }
            // Replayed from the log, on top of the checkpoint when there is one.
            c.execute("ALTER TABLE t RENAME COLUMN x TO amount")
                .unwrap();
            c.execute("ALTER TABLE t ADD COLUMN note VARCHAR DEFAULT 'old'")
                .unwrap();
            c.execute("ALTER TABLE t RENAME TO ledger").unwrap();
            c.execute("ALTER TABLE ledger ALTER COLUMN amount TYPE DECIMAL(12, 2)")
                .unwrap();
            c.execute("INSERT INTO ledger (id, amount, note) VALUES (201, 5, 'new')")
                .unwrap();
            assert_idle(&c);
        } // dropped without a shutdown
        let c = open(tmp.path());
        let when = if checkpoint { "checkpoint" } else { "log" };
        assert_eq!(
            rows(
                &c,
                "SELECT id, amount, flag, note FROM ledger WHERE id IN (1, 200, 201)"
            ),
            vec![
                vec![Value::Int(1), dec(1000), Value::Bool(true), s("old")],
                vec![Value::Int(200), dec(200_000), Value::Bool(true), s("old")],
                vec![Value::Int(201), dec(500), Value::Bool(true), s("new")],
            ],
            "after a restart from the {when}"
        );
        assert_eq!(
            rows(&c, "SELECT COUNT(*), SUM(amount) FROM ledger"),
            vec![vec![Value::Int(201), dec(20_100_500)]],
            "after a restart from the {when}"
        );
        assert!(c.query("SELECT * FROM t", &[]).is_err());
        assert!(c.query("SELECT name FROM ledger", &[]).is_err());
        // The key holds across the change and the restart; the table takes new rows.
        assert!(c.execute("INSERT INTO ledger (id) VALUES (7)").is_err());
        c.execute("INSERT INTO ledger (id) VALUES (202)").unwrap();
        assert_eq!(
            rows(&c, "SELECT amount, flag, note FROM ledger WHERE id = 202"),
            vec![vec![Value::Null, Value::Bool(true), s("old")]]
        );
        assert_idle(&c);
    }
}

#[test]
fn a_renamed_table_keeps_handing_out_its_sequence_and_a_failed_change_changes_nothing() {
    let c = cluster_builder().nodes(3).backups(1).build().unwrap();
    c.execute("CREATE TABLE orders (id SERIAL PRIMARY KEY, item VARCHAR)")
        .unwrap();
    c.execute("INSERT INTO orders (item) VALUES ('a'), ('b'), ('c')")
        .unwrap();
    c.execute("ALTER TABLE orders RENAME TO purchases").unwrap();
    c.execute("ALTER TABLE purchases RENAME COLUMN item TO product")
        .unwrap();
    c.execute("INSERT INTO purchases (product) VALUES ('d'), ('e')")
        .unwrap();
    let ids: Vec<Value> = rows(&c, "SELECT id FROM purchases")
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
    let distinct: std::collections::BTreeSet<String> =
        ids.iter().map(|v| format!("{v:?}")).collect();
    assert_eq!(ids.len(), 5);
    assert_eq!(
        distinct.len(),
        5,
        "no sequence value handed out twice: {ids:?}"
    );
    // A change refused on the stored rows leaves the table as it was.
    c.execute("INSERT INTO purchases (product) VALUES (NULL)")
        .unwrap();
    let err = c
        .execute("ALTER TABLE purchases ALTER COLUMN product SET NOT NULL")
        .unwrap_err();
    assert!(err.to_string().contains("contains NULL values"), "{err}");
    // Still nullable: the refused change did not reach the catalog.
    c.execute("INSERT INTO purchases (product) VALUES (NULL)")
        .unwrap();
    assert_eq!(
        rows(&c, "SELECT COUNT(*) FROM purchases WHERE product IS NULL"),
        vec![vec![Value::Int(2)]]
    );
    assert_idle(&c);
}
