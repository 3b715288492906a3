//! The project's sqllogictest suite: every `.slt` file under `tests/slt/` runs against a fresh
//! cluster of 3 data nodes and 16 partitions per table, through the `sqllogictest` crate.
//!
//! Values are rendered as the SQLite corpus writes them: NULL as `NULL`, integers plainly,
//! floats with 3 decimals, booleans as `true`/`false`, text as is and the empty string as
//! `(empty)`; DECIMALs with exactly their scale's digits (type `R`), DATEs and TIMESTAMPs in
//! ISO 8601 (type `T`). A statement whose first keyword is `SELECT`, `EXPLAIN`, `WITH` or `VALUES` is run
//! as a query (rows); anything else as a statement (rows affected).
//!
//! Every failing record is reported with its file and line; the test fails after all files
//! ran, listing them all.

use crate::common;

use common::{cluster_builder, TestCluster};
use sqllogictest::{DBOutput, DefaultColumnType};
use std::path::{Path, PathBuf};
use weir::{DataType, Value};

/// The column types a corpus query declares (`query IRT`), which its answers are rendered in.
type Declared = std::sync::Arc<std::sync::Mutex<Vec<DefaultColumnType>>>;

/// A `weir` cluster as a sqllogictest database.
struct Weir {
    cluster: TestCluster,
    /// For the SQLite corpus: the declared types of the query being run (its runner renders
    /// a value as its column is declared: an `I` column truncates a float to an integer, shows
    /// a boolean as 1 or 0 and text as its leading integer, an `R` column prints an integer
    /// with 3 decimals).
    declared: Option<Declared>,
}

impl Weir {
    fn new() -> Self {
        let cluster = cluster_builder()
            .nodes(3)
            .partitions(16)
            .build()
            .expect("cluster starts");
        Weir {
            cluster: TestCluster::new(cluster),
            declared: None,
        }
    }
}

/// `v` rendered as the SQLite corpus's runner renders a value of a column declared `t`.
fn render_declared(v: &Value, t: &DefaultColumnType) -> String {
    match (v, t) {
        (Value::Float(f), DefaultColumnType::Integer) => format!("{}", f.trunc() as i64),
        (Value::Int(i), DefaultColumnType::FloatingPoint) => fixed3(*i as f64),
        (Value::Bool(b), DefaultColumnType::Integer) => i64::from(*b).to_string(),
        // Text read as a number: its leading numeral, 0 without one (as SQLite's conversion).
        (Value::Str(s), DefaultColumnType::Integer) => {
            let t = s.trim_start();
            let end = t
                .char_indices()
                .take_while(|&(i, c)| c.is_ascii_digit() || (i == 0 && (c == '-' || c == '+')))
                .count();
            t[..end].parse::<i64>().unwrap_or(0).to_string()
        }
        (Value::Decimal(..), DefaultColumnType::Integer) => {
            let f: f64 = v.to_string().parse().unwrap_or(0.0);
            format!("{}", f.trunc() as i64)
        }
        (Value::Decimal(..), DefaultColumnType::FloatingPoint) => {
            let f: f64 = v.to_string().parse().unwrap_or(0.0);
            fixed3(f)
        }
        _ => render(v),
    }
}

/// Whether `sql` returns rows (decided by its first keyword).
fn is_query(sql: &str) -> bool {
    let first = sql
        .trim_start_matches(|c: char| c.is_whitespace() || c == '(')
        .split(|c: char| !c.is_ascii_alphabetic())
        .next()
        .unwrap_or("");
    ["SELECT", "EXPLAIN", "WITH", "VALUES", "TABLE"]
        .iter()
        .any(|k| first.eq_ignore_ascii_case(k))
}

/// `f` as the corpus's runner writes a float, with SQLite's `printf("%.3f")`: three decimals
/// and at most 16 significant digits, zeros after them (`-9223372036854775808.0` is
/// `-9223372036854776000.000`).
fn fixed3(f: f64) -> String {
    if !f.is_finite() || f == 0.0 {
        return format!("{f:.3}");
    }
    // Significant digits up to the third decimal, at most 16.
    let magnitude = f.abs().log10().floor() as i32;
    let significant = (magnitude + 4).min(16);
    if significant <= 0 {
        return format!("{f:.3}");
    }
    let scientific = format!("{:.*e}", (significant - 1) as usize, f);
    let Some((mantissa, exponent)) = scientific.split_once('e') else {
        return format!("{f:.3}");
    };
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let digits: Vec<u8> = mantissa.bytes().filter(u8::is_ascii_digit).collect();
    // The value is 0.d1d2d3... × 10^(exponent + 1).
    let whole_len = exponent + 1;
    let digit = |i: i32| {
        usize::try_from(i)
            .ok()
            .and_then(|i| digits.get(i))
            .map_or('0', |&d| d as char)
    };
    let whole: String = if whole_len <= 0 {
        "0".to_string()
    } else {
        (0..whole_len).map(digit).collect()
    };
    let fraction: String = (whole_len..whole_len + 3).map(digit).collect();
    let sign = if f < 0.0 { "-" } else { "" };
    format!("{sign}{whole}.{fraction}")
}

/// A value as the SQLite corpus writes it.
fn render(v: &Value) -> String {
    match v {
        Value::Null => "NULL".to_string(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => fixed3(*f),
        Value::Str(s) if s.is_empty() => "(empty)".to_string(),
        Value::Str(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        // Exact decimals with their scale's digits, dates and timestamps in ISO 8601.
        Value::Decimal(..) | Value::Date(_) | Value::Timestamp(_) => v.to_string(),
    }
}

fn column_type(t: DataType) -> DefaultColumnType {
    match t {
        DataType::Int64 => DefaultColumnType::Integer,
        DataType::Float64 => DefaultColumnType::FloatingPoint,
        DataType::Utf8 => DefaultColumnType::Text,
        DataType::Boolean => DefaultColumnType::Any,
        DataType::Decimal { .. } => DefaultColumnType::FloatingPoint,
        DataType::Date | DataType::Timestamp => DefaultColumnType::Text,
    }
}

impl sqllogictest::DB for Weir {
    type Error = weir::Error;
    type ColumnType = DefaultColumnType;

    fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, weir::Error> {
        let out = self.run_sql(sql);
        // Whatever the outcome, the statement's actors stop and its memory is released (the
        // corpus, which measures, does not wait to check).
        if self.declared.is_none() {
            common::assert_idle(&self.cluster);
        }
        out
    }

    fn engine_name(&self) -> &str {
        "weir"
    }
}

impl Weir {
    fn run_sql(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, weir::Error> {
        if !is_query(sql) {
            return Ok(DBOutput::StatementComplete(self.cluster.execute(sql)?));
        }
        let r = self.cluster.query(sql, &[])?;
        let types = r
            .schema
            .fields
            .iter()
            .map(|f| column_type(f.data_type))
            .collect();
        let declared = self
            .declared
            .as_ref()
            .map(|d| d.lock().unwrap_or_else(|e| e.into_inner()).clone())
            .unwrap_or_default();
        let rows = r
            .rows()
            .iter()
            .map(|row| {
                row.iter()
                    .enumerate()
                    .map(|(i, v)| match declared.get(i) {
                        Some(t) => render_declared(v, t),
                        None => render(v),
                    })
                    .collect()
            })
            .collect();
        Ok(DBOutput::Rows { types, rows })
    }
}

/// The `.slt` files under `tests/slt/`, sorted; with `WEIR_SLT_FILTER` set, those whose name
/// contains it (`WEIR_SLT_FILTER=recursive cargo test --test integration slt::`).
fn slt_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/slt");
    let filter = std::env::var("WEIR_SLT_FILTER").unwrap_or_default();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "slt"))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().contains(&filter))
        })
        .collect();
    files.sort();
    files
}

#[test]
fn sqllogictest_suite() {
    let files = slt_files();
    assert!(!files.is_empty(), "no .slt files in tests/slt");
    let mut failures = Vec::new();
    let mut failed_files = 0;
    for file in &files {
        let before = failures.len();
        let records = match sqllogictest::parse_file::<DefaultColumnType>(file) {
            Ok(r) => r,
            Err(e) => {
                failures.push(format!("{}: cannot parse: {e}", file.display()));
                continue;
            }
        };
        // One fresh cluster per file (files use no `connection` records). Every record runs,
        // so one file reports all of its failures, each with its file and line.
        let mut runner = sqllogictest::Runner::new(|| async { Ok(Weir::new()) });
        runner.with_column_validator(sqllogictest::strict_column_validator);
        for record in records {
            if let Err(e) = runner.run(record) {
                failures.push(format!("{}", e.display(false)));
            }
        }
        failed_files += usize::from(failures.len() > before);
    }
    assert!(
        failures.is_empty(),
        "{} failed records in {} of {} sqllogictest files:\n{}",
        failures.len(),
        failed_files,
        files.len(),
        failures.join("\n")
    );
}

/// The corpus writes a result one value per line: the values of `actual` and of `expected`
/// compared in order, whatever the lines.
fn valuewise(
    normalizer: sqllogictest::Normalizer,
    actual: &[Vec<String>],
    expected: &[String],
) -> bool {
    let got = actual.iter().flatten().map(normalizer);
    let want: Vec<String> = expected
        .iter()
        .flat_map(|l| l.split_ascii_whitespace().map(str::to_string))
        .collect();
    let got: Vec<String> = got
        .flat_map(|v| {
            v.split_ascii_whitespace()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    got == want
}

/// The SQLite sqllogictest corpus, which is not in the repository: every `*.test` file under
/// the directory `WEIR_SLT_CORPUS` names (e.g. the `test/` directory of a checkout of
/// github.com/gregrahn/sqllogictest), each on a fresh cluster of `WEIR_SLT_NODES` data nodes
/// (1 unless given); `WEIR_SLT_FILTER` keeps the files whose path contains it. Prints, per
/// file and in all, the queries that pass, fail with an error and give a wrong answer
/// (records for other engines, `onlyif mysql` and the like, are skipped as the corpus says).
/// It asserts nothing: it measures. Run it with
/// `WEIR_SLT_CORPUS=DIR cargo test --release --test integration slt::sqlite_corpus -- --ignored --nocapture`.
#[test]
#[ignore = "needs the SQLite corpus in WEIR_SLT_CORPUS"]
fn sqlite_corpus() {
    let Ok(dir) = std::env::var("WEIR_SLT_CORPUS") else {
        eprintln!("WEIR_SLT_CORPUS is not set: nothing to run");
        return;
    };
    let filter = std::env::var("WEIR_SLT_FILTER").unwrap_or_default();
    let nodes: usize = std::env::var("WEIR_SLT_NODES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1);
    let mut files = Vec::new();
    let mut pending = vec![PathBuf::from(dir)];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).expect("corpus directory").flatten() {
            let p = entry.path();
            if p.is_dir() {
                pending.push(p);
            } else if p.extension().is_some_and(|x| x == "test")
                && p.to_string_lossy().contains(&filter)
            {
                files.push(p);
            }
        }
    }
    files.sort();
    let (mut passed, mut errors, mut wrong) = (0usize, 0usize, 0usize);
    for file in &files {
        // The corpus comments its conditions (`onlyif mysql # DIV`), which the parser does not
        // take: the comments go.
        let text = std::fs::read_to_string(file).expect("corpus file");
        let text: String = text
            .lines()
            .map(|l| match l.find(" #") {
                Some(at) if l.starts_with("skipif ") || l.starts_with("onlyif ") => &l[..at],
                _ => l,
            })
            .flat_map(|l| [l, "\n"])
            .collect();
        let name = file.display().to_string();
        let records = match sqllogictest::parse_with_name::<DefaultColumnType>(&text, name) {
            Ok(r) => r,
            Err(e) => {
                println!("{}: cannot parse: {e}", file.display());
                continue;
            }
        };
        let declared: Declared = Default::default();
        let handed = declared.clone();
        let mut runner = sqllogictest::Runner::new(move || {
            let declared = handed.clone();
            async move {
                let cluster = cluster_builder()
                    .nodes(nodes)
                    .partitions(16)
                    .build()
                    .expect("cluster starts");
                Ok(Weir {
                    cluster: TestCluster::new(cluster),
                    declared: Some(declared),
                })
            }
        });
        // The corpus was written with results of more than 8 values hashed (as its runner's
        // `-ht 8`); a file's `hash-threshold` record says otherwise.
        runner.with_hash_threshold(8);
        runner.with_validator(valuewise);
        let (mut p, mut e, mut w) = (0usize, 0usize, 0usize);
        for record in records {
            let is_query = matches!(record, sqllogictest::Record::Query { .. });
            if let sqllogictest::Record::Query {
                expected: sqllogictest::QueryExpect::Results { types, .. },
                ..
            } = &record
            {
                *declared.lock().unwrap_or_else(|e| e.into_inner()) = types.clone();
            }
            match runner.run(record) {
                Ok(sqllogictest::RecordOutput::Nothing) => {}
                Ok(_) if is_query => p += 1,
                Ok(_) => {}
                Err(err) if is_query => {
                    let mismatch = matches!(
                        err.kind(),
                        sqllogictest::TestErrorKind::QueryResultMismatch { .. }
                    );
                    if mismatch {
                        w += 1;
                    } else {
                        e += 1;
                    }
                    if std::env::var_os("WEIR_SLT_VERBOSE").is_some() {
                        println!("{}", err.display(false));
                    }
                }
                Err(_) => {}
            }
        }
        println!(
            "{}: {p} passed, {e} failed with an error, {w} wrong",
            file.display()
        );
        passed += p;
        errors += e;
        wrong += w;
    }
    let total = passed + errors + wrong;
    println!(
        "corpus: {} files, {total} queries: {passed} passed ({:.2}%), {errors} failed with an error, {wrong} wrong",
        files.len(),
        100.0 * passed as f64 / total.max(1) as f64
    );
}

#[test]
fn floats_are_written_as_sqlites_printf_writes_them() {
    assert_eq!(fixed3(-9223372036854775808.0), "-9223372036854776000.000");
    assert_eq!(fixed3(-18446744073709551616.0), "-18446744073709550000.000");
    assert_eq!(fixed3(1e20), "100000000000000000000.000");
    assert_eq!(fixed3(2.0 / 3.0), "0.667");
    assert_eq!(fixed3(123.4567), "123.457");
    assert_eq!(fixed3(-0.5), "-0.500");
    assert_eq!(fixed3(0.012), "0.012");
    assert_eq!(fixed3(9.9996), "10.000");
    assert_eq!(fixed3(0.0001), "0.000");
    assert_eq!(fixed3(0.0), "0.000");
}
