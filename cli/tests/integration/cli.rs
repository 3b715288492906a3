//! The `weir` command as a user runs it: `weir sql` on the demo data, on scripts (a file,
//! standard input) and on the user's own CSV and Parquet files through COPY, and `weir
//! shell` with a piped script.

use crate::common;

use common::{weir, weir_in, weir_with_env, weir_with_input};
use serde_json::Value as Json;
use std::path::PathBuf;
use std::process::Output;

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Every line of standard output as JSON.
fn json_lines(out: &Output) -> Vec<Json> {
    stdout(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// A fresh directory for one test's files.
fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("weir-cli-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn no_panic(out: &Output) {
    assert!(!stderr(out).contains("panicked"), "{}", stderr(out));
}

#[test]
fn sql_prints_json_and_tables() {
    let out = weir(&[
        "sql",
        "--demo",
        "--orders",
        "2000",
        "--format",
        "json",
        "SELECT fldBatch, COUNT(*) AS n FROM Item WHERE fldBatch < 3 GROUP BY fldBatch ORDER BY fldBatch",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Json = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["columns"], serde_json::json!(["fldBatch", "n"]));
    assert_eq!(
        v["rows"],
        serde_json::json!([[0, 1000], [1, 1000], [2, 1000]])
    );

    let out = weir(&[
        "sql",
        "--demo",
        "--orders",
        "2000",
        "--nodes",
        "2",
        "SELECT name FROM Item WHERE id = 7",
    ]);
    assert!(out.status.success());
    let text = stdout(&out);
    assert!(
        text.contains("name7") && text.contains("(1 rows)"),
        "{text}"
    );

    let out = weir(&["sql", "--demo", "--orders", "2000", "SELECT nope FROM Item"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("nope"));

    // Without --demo the cluster starts empty.
    let out = weir(&["sql", "SELECT COUNT(*) FROM Item"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).to_lowercase().contains("item"),
        "{}",
        stderr(&out)
    );
}

/// The rows the CSV tests write: (id, name, price, day, at, ok, score), `None` for NULL.
type Row = (
    i64,
    Option<&'static str>,
    Option<&'static str>,
    &'static str,
    &'static str,
    bool,
    f64,
);

const ROWS: &[Row] = &[
    (
        1,
        Some("plain"),
        Some("12.50"),
        "2024-02-29",
        "2024-02-29 10:11:12",
        true,
        0.5,
    ),
    (
        2,
        Some("comma, inside"),
        Some("-0.05"),
        "1999-12-31",
        "1999-12-31 23:59:59.250000",
        false,
        -1.25,
    ),
    (
        3,
        Some("line\nbreak"),
        None,
        "2000-01-01",
        "2000-01-01 00:00:00",
        true,
        3.0,
    ),
    (
        4,
        Some("say \"hi\""),
        Some("7.00"),
        "2024-01-15",
        "2024-01-15 08:00:00",
        false,
        1e-3,
    ),
    (
        5,
        None,
        Some("100.01"),
        "1970-01-01",
        "1970-01-01 00:00:01",
        true,
        42.0,
    ),
];

const CREATE: &str = "CREATE TABLE t (id BIGINT PRIMARY KEY, name VARCHAR, price DECIMAL(10, 2), \
     day DATE, at TIMESTAMP, ok BOOLEAN, score DOUBLE)";

/// `ROWS` as CSV, NULL written as `NA`, with an optional header line.
fn write_csv(path: &PathBuf, header: bool, delimiter: u8) {
    let mut w = csv::WriterBuilder::new()
        .delimiter(delimiter)
        .from_path(path)
        .unwrap();
    if header {
        w.write_record(["id", "name", "price", "day", "at", "ok", "score"])
            .unwrap();
    }
    for r in ROWS {
        w.write_record([
            r.0.to_string(),
            r.1.unwrap_or("NA").to_string(),
            r.2.unwrap_or("NA").to_string(),
            r.3.to_string(),
            r.4.to_string(),
            r.5.to_string(),
            r.6.to_string(),
        ])
        .unwrap();
    }
    w.flush().unwrap();
}

/// `ROWS` as the JSON rows `weir sql --format json` prints for `SELECT * FROM t ORDER BY id`.
fn expected_json_rows() -> Json {
    Json::Array(
        ROWS.iter()
            .map(|r| {
                serde_json::json!([
                    r.0,
                    r.1,
                    r.2.map(|p| p.parse::<f64>().unwrap()),
                    r.3,
                    r.4.replacen(' ', "T", 1),
                    r.5,
                    r.6
                ])
            })
            .collect(),
    )
}

#[test]
fn a_script_loads_csv_queries_it_and_round_trips_csv_and_parquet() {
    let dir = temp_dir("roundtrip");
    let data = dir.join("data.csv");
    write_csv(&data, true, b',');
    let out_csv = dir.join("out.csv");
    let out_parquet = dir.join("out.parquet");
    let script = dir.join("script.sql");
    std::fs::write(
        &script,
        format!(
            "{CREATE};\n\
             COPY t FROM '{}' WITH (FORMAT csv, HEADER true, NULL 'NA');\n\
             SELECT * FROM t ORDER BY id;\n\
             -- out again, both ways; a ';' in a string does not end a statement\n\
             COPY (SELECT * FROM t WHERE name <> 'x;y' OR name IS NULL ORDER BY id) TO '{}' (FORMAT csv, HEADER);\n\
             COPY t TO '{}' (FORMAT parquet);\n\
             CREATE TABLE u (id BIGINT PRIMARY KEY, name VARCHAR, price DECIMAL(10, 2), day DATE, at TIMESTAMP, ok BOOLEAN, score DOUBLE);\n\
             COPY u FROM '{}' (FORMAT parquet);\n\
             SELECT * FROM u ORDER BY id;\n",
            data.display(),
            out_csv.display(),
            out_parquet.display(),
            out_parquet.display()
        ),
    )
    .unwrap();
    let out = weir(&[
        "sql",
        "--format",
        "json",
        "--copy-dir",
        dir.to_str().unwrap(),
        "-f",
        script.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    no_panic(&out);
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 8, "one line per statement: {lines:?}");
    let n = ROWS.len() as u64;
    assert_eq!(lines[0], serde_json::json!({ "rows_affected": 0 }));
    assert_eq!(lines[1], serde_json::json!({ "rows_affected": n }));
    assert_eq!(
        lines[2]["columns"],
        serde_json::json!(["id", "name", "price", "day", "at", "ok", "score"])
    );
    assert_eq!(lines[2]["rows"], expected_json_rows());
    assert_eq!(lines[3], serde_json::json!({ "rows_affected": n }));
    assert_eq!(lines[4], serde_json::json!({ "rows_affected": n }));
    assert_eq!(lines[6], serde_json::json!({ "rows_affected": n }));
    assert_eq!(lines[7]["rows"], lines[2]["rows"], "Parquet round trip");

    // The CSV written back has the header and the same fields (NULL as an empty field).
    let mut r = csv::Reader::from_path(&out_csv).unwrap();
    assert_eq!(
        r.headers().unwrap().iter().collect::<Vec<_>>(),
        vec!["id", "name", "price", "day", "at", "ok", "score"]
    );
    let back: Vec<Vec<String>> = r
        .records()
        .map(|rec| rec.unwrap().iter().map(str::to_string).collect())
        .collect();
    let wrote: Vec<Vec<String>> = ROWS
        .iter()
        .map(|r| {
            vec![
                r.0.to_string(),
                r.1.unwrap_or("").to_string(),
                r.2.unwrap_or("").to_string(),
                r.3.to_string(),
                r.4.to_string(),
                r.5.to_string(),
                r.6.to_string(),
            ]
        })
        .collect();
    assert_eq!(back, wrote);
}

#[test]
fn header_off_a_delimiter_and_standard_input() {
    let dir = temp_dir("delimiter");
    let data = dir.join("data.txt");
    write_csv(&data, false, b';');
    let script = format!(
        "{CREATE}; COPY t FROM '{}' (FORMAT csv, HEADER false, DELIMITER ';', NULL 'NA'); \
         SELECT COUNT(*) AS n, COUNT(name) AS named FROM t",
        data.display()
    );
    let dir_arg = dir.to_str().unwrap();
    let args = ["sql", "--format", "json", "--copy-dir", dir_arg, "-"];
    let out = weir_with_input(&args, Some(&script));
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let lines = json_lines(&out);
    let named = ROWS.iter().filter(|r| r.1.is_some()).count();
    // The tracing subscriber shows the runtime's debug events when RUST_LOG asks for them.
    let logged = weir_with_env(&args, Some(&script), &[("RUST_LOG", "weir=debug")]);
    assert!(logged.status.success(), "{}", stderr(&logged));
    assert_eq!(json_lines(&logged), lines);
    let log = stderr(&logged);
    assert!(
        log.contains("DEBUG") && log.contains("rows in 1 batches parsed"),
        "{log}"
    );
    assert_eq!(lines[1], serde_json::json!({ "rows_affected": ROWS.len() }));
    assert_eq!(lines[2]["rows"], serde_json::json!([[ROWS.len(), named]]));
}

#[test]
fn bad_input_is_a_clear_error_in_json_and_stops_the_script() {
    let dir = temp_dir("errors");
    let data = dir.join("data.csv");
    write_csv(&data, true, b',');
    let d = data.display();
    for (sql, expect) in [
        (format!("COPY nope FROM '{d}'"), "nope"),
        (format!("{CREATE}; SELECT nope FROM t"), "nope"),
        (
            format!("{CREATE}; COPY t FROM '{d}' (FORMAT xml)"),
            "FORMAT 'xml'",
        ),
        (format!("{CREATE}; COPY t FROM '{d}.missing'"), "missing"),
        // A Parquet reader given a CSV file.
        (
            format!("{CREATE}; COPY t FROM '{d}' (FORMAT parquet)"),
            "Parquet",
        ),
    ] {
        let script = format!("{sql}; SELECT 1");
        let dir_arg = dir.to_str().unwrap();
        let out = weir(&["sql", "--format", "json", "--copy-dir", dir_arg, &script]);
        assert!(!out.status.success(), "{sql}");
        no_panic(&out);
        let lines = json_lines(&out);
        let last = lines.last().unwrap();
        assert!(
            last["error"].as_str().unwrap().contains(expect),
            "{sql}: {last}"
        );
        assert!(
            lines.iter().all(|l| l.get("columns").is_none()),
            "nothing runs after the error: {lines:?}"
        );
    }
}

/// The README's first session: `weir sql -f script.sql` in the directory of `sales.csv`
/// loads it with a relative path, and writes `sales.parquet` beside it. COPY reaches the
/// current directory and each `--copy-dir`, nothing else, also through `..`; its error
/// quotes no file contents.
#[test]
fn copy_reaches_the_current_directory_and_copy_dirs_only() {
    let dir = temp_dir("readme");
    std::fs::write(
        dir.join("sales.csv"),
        "region,day,amount\nnorth,2024-03-01,12.50\n\"south, east\",2024-03-01,7.25\nnorth,2024-03-02,\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("script.sql"),
        "CREATE TABLE sales (region VARCHAR, day DATE, amount DECIMAL(10, 2));\n\
         COPY sales FROM 'sales.csv' (FORMAT csv, HEADER true);\n\
         SELECT region, COUNT(*) AS n, SUM(amount) AS total FROM sales GROUP BY region ORDER BY region;\n\
         COPY (SELECT * FROM sales WHERE amount IS NOT NULL) TO 'sales.parquet' (FORMAT parquet);\n",
    )
    .unwrap();
    let out = weir_in(Some(&dir), &["sql", "-f", "script.sql"], None, &[]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("(3 rows affected)") && text.contains("(2 rows affected)"),
        "{text}"
    );
    assert!(
        text.contains("south, east") && text.contains("12.50"),
        "{text}"
    );
    assert!(dir.join("sales.parquet").exists());
    // A file outside the current directory: refused, naming where COPY may go, without a
    // word of the file.
    let elsewhere = temp_dir("readme-elsewhere");
    std::fs::write(elsewhere.join("secret.csv"), "the secret text\n").unwrap();
    let copy =
        "CREATE TABLE s (x BIGINT); COPY s FROM '../weir-cli-readme-elsewhere-PID/secret.csv'"
            .replace("PID", &std::process::id().to_string());
    let out = weir_in(Some(&dir), &["sql", &copy], None, &[]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("outside the directories COPY may use"),
        "{err}"
    );
    assert!(!err.contains("secret text"), "{err}");
    // With --copy-dir it may: the bad value is quoted as a short excerpt.
    let other = elsewhere.to_str().unwrap();
    let out = weir_in(Some(&dir), &["sql", "--copy-dir", other, &copy], None, &[]);
    let err = stderr(&out);
    assert!(err.contains("'the secret text' is not a BIGINT"), "{err}");
    std::fs::write(elsewhere.join("long.csv"), format!("{}\n", "y".repeat(500))).unwrap();
    let long = copy.replace("secret.csv", "long.csv");
    let out = weir_in(Some(&dir), &["sql", "--copy-dir", other, &long], None, &[]);
    let err = stderr(&out);
    assert!(
        err.contains(&format!("'{}'... is not a BIGINT", "y".repeat(32))),
        "{err}"
    );
    assert!(!err.contains(&"y".repeat(33)), "{err}");
}

#[test]
fn shell_runs_a_piped_script_and_goes_on_after_errors() {
    let dir = temp_dir("shell");
    let good = dir.join("good.csv");
    write_csv(&good, true, b',');
    // Line 5 of bad.csv (a header, a row, a row over two lines, then this one) has text in
    // the BIGINT column.
    let bad = dir.join("bad.csv");
    std::fs::write(
        &bad,
        "id,name,price,day,at,ok,score\n\
         10,a,1.00,2024-01-01,2024-01-01 00:00:00,true,1\n\
         11,\"b\nc\",1.00,2024-01-01,2024-01-01 00:00:00,true,1\n\
         1x2,d,1.00,2024-01-01,2024-01-01 00:00:00,true,1\n",
    )
    .unwrap();
    let more = dir.join("more.sql");
    std::fs::write(&more, "SELECT COUNT(*) AS n\n  FROM t;\n").unwrap();
    let script = format!(
        "{CREATE};\n\
         COPY t FROM '{g}'\n  (FORMAT csv, HEADER true, NULL 'NA');\n\
         COPY t FROM '{b}' (FORMAT csv, HEADER true);\n\
         .mode json\n\
         SELECT COUNT(*) AS n FROM t;\n\
         .tables\n\
         .schema t\n\
         .bogus\n\
         .timer on\n\
         .read {m}\n\
         .timer off\n\
         .mode csv\n\
         SELECT id, name FROM t WHERE id = 2;\n\
         .explain SELECT id FROM t WHERE id = 3;\n\
         .explain\n\
         SELECT name FROM t;\n\
         .stats\n\
         .help\n\
         .quit\n\
         SELECT 1;\n",
        g = good.display(),
        b = bad.display(),
        m = more.display(),
    );
    let dir_arg = dir.to_str().unwrap();
    let out = weir_with_input(
        &["shell", "--nodes", "2", "--copy-dir", dir_arg],
        Some(&script),
    );
    no_panic(&out);
    let err = stderr(&out);
    let text = stdout(&out);
    // The bad row is named by file, line and column; the session went on.
    assert!(
        err.contains(&format!("{}:5:1", bad.display())) && err.contains("'1x2' is not a BIGINT"),
        "{err}"
    );
    assert!(err.contains("unknown command '.bogus'"), "{err}");
    assert!(
        !out.status.success(),
        "a piped script with errors exits non-zero"
    );
    let counts: Vec<Json> = text
        .lines()
        .filter(|l| l.starts_with("{\"columns\""))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Nothing of the failed COPY was kept, twice: straight after it and through .read.
    assert_eq!(counts.len(), 2, "{text}");
    for c in &counts {
        assert_eq!(c["rows"], serde_json::json!([[ROWS.len()]]), "{text}");
    }
    assert!(text.lines().any(|l| l == "t"), ".tables: {text}");
    assert!(
        text.contains("CREATE TABLE t (id BIGINT, name VARCHAR")
            && text.contains("PRIMARY KEY (id)"),
        ".schema: {text}"
    );
    assert!(text.contains("Run Time: "), ".timer: {text}");
    assert!(
        text.contains("id,name\n2,\"comma, inside\"\n"),
        ".mode csv: {text}"
    );
    assert!(
        !text.contains("say \"\"hi\"\""),
        ".explain alone explains the next statement instead of running it: {text}"
    );
    assert!(text.contains(".read FILE"), ".help: {text}");
    assert!(!text.contains("\n1\n"), "nothing runs after .quit: {text}");
}

/// `RUST_LOG=weir=debug` (the `weir` prefix matches every `weir_*` crate's target) shows a
/// query's start, where its fragments were placed and each fragment's start, all tagged with
/// the query's id; at `warn` none of it shows.
#[test]
fn rust_log_shows_query_and_fragment_events_with_the_query_id() {
    let sql = "SELECT fldBatch, COUNT(*) AS n FROM Item WHERE fldBatch < 3 GROUP BY fldBatch ORDER BY fldBatch";
    let args = ["sql", "--demo", "--orders", "2000", sql];
    let out = weir_with_env(&args, None, &[("RUST_LOG", "weir=debug")]);
    assert!(out.status.success(), "{}", stderr(&out));
    let log = stderr(&out);
    let started = log
        .lines()
        .find(|l| l.contains("query started"))
        .unwrap_or_else(|| panic!("no query start in:\n{log}"));
    assert!(
        started.contains("DEBUG") && started.contains("fragments="),
        "{started}"
    );
    // `query{id=N}`: the span carries the id.
    let id: u64 = started
        .split("query{id=")
        .nth(1)
        .and_then(|rest| rest.split('}').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no query id in {started}"));
    let placed: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("fragment placed") && l.contains(&format!("query{{id={id}}}")))
        .collect();
    assert!(
        placed.len() >= 2 && placed.iter().any(|l| l.contains("nodes=[\"node-")),
        "a distributed aggregate places a fragment on the client and one on the data nodes: \
         {placed:?}\n{log}"
    );
    let fragment_tag = format!("fragment{{query={id} ");
    assert!(
        log.lines()
            .any(|l| l.contains("fragment started") && l.contains(&fragment_tag)),
        "no fragment start of query {id}:\n{log}"
    );
    assert!(
        log.lines()
            .any(|l| l.contains("query finished") && l.contains(&format!("query{{id={id}}}"))),
        "{log}"
    );
    // The answer is the same with the logging on.
    let quiet = weir_with_env(&args, None, &[("RUST_LOG", "warn")]);
    assert!(quiet.status.success(), "{}", stderr(&quiet));
    assert_eq!(stdout(&quiet), stdout(&out));
    let quiet_log = stderr(&quiet);
    assert!(
        !quiet_log.contains("query started") && !quiet_log.contains("fragment placed"),
        "{quiet_log}"
    );
}

#[test]
fn sql_and_shell_keep_their_tables_in_a_data_directory() {
    let dir = temp_dir("data-dir");
    let data = dir.join("data");
    let data = data.to_str().unwrap();
    let out = weir(&[
        "sql",
        "--data-dir",
        data,
        "CREATE TABLE kept (id BIGINT PRIMARY KEY, v VARCHAR); \
         INSERT INTO kept VALUES (1, 'one'), (2, 'two')",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = weir(&[
        "sql",
        "--data-dir",
        data,
        "--durability",
        "os",
        "--format",
        "json",
        "SELECT v FROM kept ORDER BY id",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Json = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["rows"], serde_json::json!([["one"], ["two"]]));
    // The shell on the same directory sees them too.
    let out = common::weir_with_input(
        &["shell", "--data-dir", data],
        Some(".tables\nSELECT COUNT(*) FROM kept;\n"),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("kept"), "{}", stdout(&out));
    // --durability needs --data-dir; an unknown durability is refused.
    let out = weir(&["sql", "--durability", "os", "SELECT 1"]);
    assert!(!out.status.success());
    let out = weir(&[
        "sql",
        "--data-dir",
        data,
        "--durability",
        "never",
        "SELECT 1",
    ]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("fsync or os"), "{}", stderr(&out));
    no_panic(&out);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_spill_quota_that_is_no_number_is_refused_and_zero_runs_without_spilling() {
    let out = weir(&["sql", "--spill-quota", "lots", "SELECT 1"]);
    assert!(!out.status.success(), "--spill-quota lots was accepted");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--spill-quota"),
        "the error names the flag"
    );
    let out = weir(&["sql", "--spill-quota", "0", "SELECT 41 + 1"]);
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("42"));
}
