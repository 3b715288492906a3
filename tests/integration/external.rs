//! External tables (`CREATE EXTERNAL TABLE ... STORED AS PARQUET|CSV LOCATION ...`): files
//! queried where they lie, on 1 and 3 nodes, answering as the same rows loaded into a table;
//! columns taken from the files; files skipped by their statistics (the rows read are
//! counted); the table read-only; missing and malformed files named in the error; memory
//! back to zero and actors stopped after every query.

use crate::common::{assert_idle, cluster, cluster_builder, sorted_rows, TestCluster};
use std::path::{Path, PathBuf};
use weir::Value;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("weir-ext-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Loads `src (k BIGINT, grp VARCHAR, price DECIMAL(10,2), day DATE)` with 400 rows and writes
/// it out as four Parquet files of 100 rows each, `k` in order.
fn write_parquet(c: &TestCluster, d: &Path) {
    c.execute("CREATE TABLE src (k BIGINT, grp VARCHAR, price DECIMAL(10,2), day DATE)")
        .unwrap();
    let values: Vec<String> = (0..400)
        .map(|k| {
            let grp = if k % 7 == 0 {
                "NULL".to_string()
            } else {
                format!("'g{}'", k % 5)
            };
            let day = chrono::NaiveDate::from_ymd_opt(2024, 1, 1).unwrap()
                + chrono::Duration::days(k / 4);
            format!("({k}, {grp}, {}.{:02}, DATE '{day}')", k % 50, k % 100)
        })
        .collect();
    c.execute(&format!("INSERT INTO src VALUES {}", values.join(", ")))
        .unwrap();
    for f in 0..4 {
        let path = d.join(format!("part-{f}.parquet"));
        c.execute(&format!(
            "COPY (SELECT * FROM src WHERE k >= {} AND k < {} ORDER BY k) TO '{}'",
            f * 100,
            (f + 1) * 100,
            path.display()
        ))
        .unwrap();
    }
}

fn rows(c: &TestCluster, sql: &str) -> Vec<Vec<Value>> {
    sorted_rows(
        c.query(sql, &[])
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
            .rows(),
    )
}

fn rows_read(c: &TestCluster) -> u64 {
    c.stats().nodes.iter().map(|n| n.external_rows_read).sum()
}

#[test]
fn parquet_files_answer_as_the_loaded_table_on_one_and_three_nodes() {
    for nodes in [1, 3] {
        let d = dir(&format!("parquet-{nodes}"));
        let c = cluster(nodes);
        write_parquet(&c, &d);
        c.execute(&format!(
            "CREATE EXTERNAL TABLE ext STORED AS PARQUET LOCATION '{}'",
            d.display()
        ))
        .unwrap();
        // The columns and their types come from the files.
        let r = c.query("SELECT * FROM ext LIMIT 1", &[]).unwrap();
        let names: Vec<&str> = r.schema.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["k", "grp", "price", "day"]);
        for sql in [
            "SELECT k, grp, price, day FROM {t}",
            "SELECT grp, COUNT(*), SUM(price), MIN(day), MAX(k) FROM {t} GROUP BY grp",
            "SELECT k FROM {t} WHERE price > 40 AND day >= DATE '2024-03-01'",
            "SELECT COUNT(*) FROM {t}",
            "SELECT a.k, b.k FROM {t} a JOIN src b ON a.k = b.k + 1 WHERE a.k < 20",
            "SELECT grp, k FROM {t} WHERE grp IS NULL",
            "SELECT k FROM {t} ORDER BY price DESC, k LIMIT 5",
        ] {
            assert_eq!(
                rows(&c, &sql.replace("{t}", "ext")),
                rows(&c, &sql.replace("{t}", "src")),
                "{sql} on {nodes} nodes"
            );
        }
        // Every file is read by one node: a full scan reads each row once.
        let before = rows_read(&c);
        assert_eq!(
            rows(&c, "SELECT COUNT(*) FROM ext"),
            vec![vec![Value::Int(400)]]
        );
        assert_eq!(rows_read(&c) - before, 400);
        // k >= 350 lies in the last file only: the other three are skipped by their
        // statistics, and a parameter is bound before they are tested.
        let before = rows_read(&c);
        let skipped_before: u64 = c
            .stats()
            .nodes
            .iter()
            .map(|n| n.external_row_groups_skipped)
            .sum();
        let r = c
            .query("SELECT COUNT(*) FROM ext WHERE k >= ?", &[Value::Int(350)])
            .unwrap();
        assert_eq!(r.rows(), vec![vec![Value::Int(50)]]);
        assert_eq!(rows_read(&c) - before, 100);
        let skipped: u64 = c
            .stats()
            .nodes
            .iter()
            .map(|n| n.external_row_groups_skipped)
            .sum();
        assert_eq!(skipped - skipped_before, 3);
        if nodes == 3 {
            // The files are spread over the nodes.
            let readers = c
                .stats()
                .nodes
                .iter()
                .filter(|n| n.external_row_groups_read > 0)
                .count();
            assert_eq!(readers, 3);
        }
        let plan = c.explain("SELECT k FROM ext WHERE k < 3", &[]).unwrap();
        assert!(plan.contains("FileScan ext (PARQUET '"), "{plan}");
        assert_idle(&c);
        // Dropping the table leaves the files.
        c.execute("DROP TABLE ext").unwrap();
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 4);
        std::fs::remove_dir_all(&d).unwrap();
    }
}

#[test]
fn csv_files_with_declared_or_inferred_columns() {
    let d = dir("csv");
    std::fs::write(d.join("a.csv"), "id;city;temp\n1;Oslo;-3.5\n2;Lima;19\n").unwrap();
    std::fs::write(d.join("b.csv"), "id;city;temp\n3;Pune;31.25\n4;;\n").unwrap();
    let c = cluster(3);
    c.execute(&format!(
        "CREATE EXTERNAL TABLE w STORED AS CSV LOCATION '{}' OPTIONS ('has_header' 'true', 'delimiter' ';')",
        d.display()
    ))
    .unwrap();
    let r = c.query("SELECT * FROM w ORDER BY id", &[]).unwrap();
    let types: Vec<String> = r
        .schema
        .fields
        .iter()
        .map(|f| format!("{}", f.data_type))
        .collect();
    assert_eq!(types, ["BIGINT", "VARCHAR", "DOUBLE"]);
    assert_eq!(
        r.rows(),
        vec![
            vec![Value::Int(1), Value::from("Oslo"), Value::Float(-3.5)],
            vec![Value::Int(2), Value::from("Lima"), Value::Float(19.0)],
            vec![Value::Int(3), Value::from("Pune"), Value::Float(31.25)],
            vec![Value::Int(4), Value::Null, Value::Null],
        ]
    );
    // Declared columns, one file by its path.
    c.execute(&format!(
        "CREATE EXTERNAL TABLE w2 (n BIGINT, place VARCHAR, t DECIMAL(6,2)) STORED AS CSV WITH HEADER ROW DELIMITER ';' LOCATION '{}'",
        d.join("b.csv").display()
    ))
    .unwrap();
    assert_eq!(
        rows(&c, "SELECT n, t FROM w2 WHERE t IS NOT NULL"),
        vec![vec![Value::Int(3), Value::Decimal(3125, 2)]]
    );
    // IF NOT EXISTS keeps the table; OR REPLACE swaps its files, also for a query whose
    // plan was cached before.
    c.execute(&format!(
        "CREATE EXTERNAL TABLE IF NOT EXISTS w2 STORED AS CSV LOCATION '{}'",
        d.join("nothing.csv").display()
    ))
    .unwrap();
    assert_eq!(
        rows(&c, "SELECT COUNT(*) FROM w2"),
        vec![vec![Value::Int(2)]]
    );
    c.execute(&format!(
        "CREATE OR REPLACE EXTERNAL TABLE w2 (n BIGINT, place VARCHAR, t DECIMAL(6,2)) STORED AS CSV WITH HEADER ROW DELIMITER ';' LOCATION '{}/*.csv'",
        d.display()
    ))
    .unwrap();
    assert_eq!(
        rows(&c, "SELECT COUNT(*) FROM w2"),
        vec![vec![Value::Int(4)]]
    );
    // A declared key is not checked, and a lookup on it still reads the files (there is no
    // index and the rows are not placed by it).
    c.execute(&format!(
        "CREATE EXTERNAL TABLE k (PRIMARY KEY (id)) STORED AS CSV WITH HEADER ROW DELIMITER ';' LOCATION '{}'",
        d.display()
    ))
    .unwrap();
    let plan = c.explain("SELECT city FROM k WHERE id = 3", &[]).unwrap();
    assert!(
        plan.contains("FileScan k") && !plan.contains("IndexScan"),
        "{plan}"
    );
    assert!(plan.contains("all partitions"), "{plan}");
    assert_eq!(
        rows(&c, "SELECT city FROM k WHERE id = 3"),
        vec![vec![Value::from("Pune")]]
    );
    let e = c
        .execute(&format!(
            "CREATE EXTERNAL TABLE k2 (PRIMARY KEY (nope)) STORED AS CSV WITH HEADER ROW DELIMITER ';' LOCATION '{}'",
            d.display()
        ))
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown column 'nope'"), "{e}");
    assert_idle(&c);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn external_tables_are_read_only_and_bad_files_are_named() {
    let d = dir("errors");
    let c = cluster(2);
    let err = |sql: &str| {
        c.execute(sql)
            .err()
            .unwrap_or_else(|| panic!("{sql} succeeded"))
            .to_string()
    };
    // A location that does not exist, and a directory with nothing to take columns from.
    let e = err(&format!(
        "CREATE EXTERNAL TABLE x STORED AS PARQUET LOCATION '{}/missing'",
        d.display()
    ));
    assert!(e.contains("missing"), "{e}");
    let e = err(&format!(
        "CREATE EXTERNAL TABLE x STORED AS PARQUET LOCATION '{}'",
        d.display()
    ));
    assert!(e.contains("no PARQUET file"), "{e}");
    // A file that is not Parquet.
    std::fs::write(d.join("junk.parquet"), "no parquet here").unwrap();
    let e = err(&format!(
        "CREATE EXTERNAL TABLE x STORED AS PARQUET LOCATION '{}'",
        d.display()
    ));
    assert!(
        e.contains("junk.parquet") && e.contains("not a Parquet file"),
        "{e}"
    );
    std::fs::remove_file(d.join("junk.parquet")).unwrap();
    // A CSV value that is not of its column's type fails the query, naming file and line.
    std::fs::write(d.join("v.csv"), "1,a\n2,b\nthree,c\n").unwrap();
    c.execute(&format!(
        "CREATE EXTERNAL TABLE v (n BIGINT, s VARCHAR) STORED AS CSV LOCATION '{}'",
        d.join("v.csv").display()
    ))
    .unwrap();
    let e = c
        .query("SELECT SUM(n) FROM v", &[])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("v.csv") && e.contains("'three' is not a BIGINT"),
        "{e}"
    );
    assert_idle(&c);
    // The files are read when queried: mended, the table answers; removed, the query says
    // which file is missing.
    std::fs::write(d.join("v.csv"), "1,a\n").unwrap();
    assert_eq!(rows(&c, "SELECT n FROM v"), vec![vec![Value::Int(1)]]);
    std::fs::rename(d.join("v.csv"), d.join("v.moved")).unwrap();
    let e = c.query("SELECT n FROM v", &[]).unwrap_err().to_string();
    assert!(e.contains("v.csv"), "{e}");
    std::fs::rename(d.join("v.moved"), d.join("v.csv")).unwrap();
    assert_idle(&c);
    // Writes are refused, naming the table.
    for sql in [
        "INSERT INTO v VALUES (5, 'e')",
        "UPDATE v SET n = 2",
        "DELETE FROM v WHERE n = 1",
        "CREATE INDEX vi ON v (n)",
    ] {
        let e = err(sql);
        assert!(e.contains("external table"), "{sql}: {e}");
    }
    let copy_from = d.join("more.csv");
    std::fs::write(&copy_from, "7,g\n").unwrap();
    let e = err(&format!("COPY v FROM '{}'", copy_from.display()));
    assert!(e.contains("external table"), "{e}");
    // Its rows can be copied into a table that can be written.
    c.execute("CREATE TABLE v2 AS SELECT * FROM v").unwrap();
    c.execute("INSERT INTO v2 VALUES (9, 'z')").unwrap();
    assert_eq!(
        rows(&c, "SELECT COUNT(*) FROM v2"),
        vec![vec![Value::Int(2)]]
    );
    assert_idle(&c);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn locations_stay_inside_the_copy_directories() {
    let allowed = dir("allowed");
    let outside = dir("outside");
    std::fs::write(allowed.join("a.csv"), "1\n").unwrap();
    std::fs::write(outside.join("b.csv"), "2\n").unwrap();
    let c = TestCluster::new(
        cluster_builder()
            .nodes(1)
            .copy_dirs([allowed.clone()])
            .build()
            .unwrap(),
    );
    c.execute(&format!(
        "CREATE EXTERNAL TABLE a (n BIGINT) STORED AS CSV LOCATION '{}/*.csv'",
        allowed.display()
    ))
    .unwrap();
    assert_eq!(rows(&c, "SELECT n FROM a"), vec![vec![Value::Int(1)]]);
    let e = c
        .execute(&format!(
            "CREATE EXTERNAL TABLE b (n BIGINT) STORED AS CSV LOCATION '{}'",
            outside.join("b.csv").display()
        ))
        .unwrap_err()
        .to_string();
    assert!(e.contains("outside the directories"), "{e}");
    std::fs::remove_dir_all(&allowed).unwrap();
    std::fs::remove_dir_all(&outside).unwrap();
}

#[test]
fn the_live_nodes_share_the_files_when_one_is_down() {
    // With no backup copies, a stored table's partitions on a crashed node cannot be read;
    // an external table's files can be read by any node.
    let d = dir("down");
    let c = TestCluster::new(cluster_builder().nodes(3).backups(0).build().unwrap());
    write_parquet(&c, &d);
    c.execute(&format!(
        "CREATE EXTERNAL TABLE ext STORED AS PARQUET LOCATION '{}'",
        d.display()
    ))
    .unwrap();
    c.crash_node(1).unwrap();
    assert_eq!(
        rows(&c, "SELECT COUNT(*), SUM(k) FROM ext"),
        vec![vec![Value::Int(400), Value::Int(79_800)]]
    );
    let plan = c.explain("SELECT k FROM ext", &[]).unwrap();
    assert!(plan.contains("node-0, node-2"), "{plan}");
    assert!(c.query("SELECT COUNT(*) FROM src", &[]).is_err());
    std::fs::remove_dir_all(&d).unwrap();
}
