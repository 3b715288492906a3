//! `TRUNCATE` beyond the answers `tests/slt/truncate.slt` checks: tables spread over nodes
//! with copies, several tables in one write, kept empty across a restart, and no actor or
//! memory left behind.

use crate::common::{assert_idle, cluster_builder, ints};
use weir::Cluster;

fn count(c: &Cluster, table: &str) -> i64 {
    let r = c
        .query(&format!("SELECT count(*) FROM {table}"), &[])
        .unwrap();
    ints(&r.rows())[0][0]
}

#[test]
fn truncated_tables_stay_empty_across_a_restart_and_take_rows_again() {
    let tmp = tempfile::tempdir().unwrap();
    let open = || {
        cluster_builder()
            .nodes(3)
            .backups(1)
            .data_dir(tmp.path())
            .build()
            .unwrap()
    };
    let c = open();
    c.execute("CREATE TABLE p (id BIGSERIAL PRIMARY KEY, v BIGINT)")
        .unwrap();
    c.execute("CREATE TABLE ch (id BIGINT PRIMARY KEY, p_id BIGINT REFERENCES p)")
        .unwrap();
    c.execute("CREATE TABLE bag (v BIGINT)").unwrap();
    c.execute("INSERT INTO p (v) SELECT g FROM generate_series(1, 5000) AS s(g)")
        .unwrap();
    c.execute("INSERT INTO ch SELECT g, g FROM generate_series(1, 2000) AS s(g)")
        .unwrap();
    c.execute("INSERT INTO bag SELECT g % 7 FROM generate_series(1, 3000) AS s(g)")
        .unwrap();
    assert_eq!(
        c.execute("TRUNCATE p, ch, bag RESTART IDENTITY").unwrap(),
        0
    );
    for t in ["p", "ch", "bag"] {
        assert_eq!(count(&c, t), 0, "{t}");
    }
    assert_idle(&c);
    c.shutdown();
    let c = open();
    for t in ["p", "ch", "bag"] {
        assert_eq!(count(&c, t), 0, "{t} after the restart");
    }
    // The tables take rows again, keys from 1.
    c.execute("INSERT INTO p (v) VALUES (7)").unwrap();
    c.execute("INSERT INTO ch VALUES (1, 1)").unwrap();
    let r = c.query("SELECT id, v FROM p", &[]).unwrap();
    assert_eq!(ints(&r.rows()), vec![vec![1, 7]]);
    assert_idle(&c);
}
