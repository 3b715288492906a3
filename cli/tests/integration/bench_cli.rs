//! `weir bench` as a user runs it, with tiny settings: output shapes only, never speed.

use crate::common;

use common::weir;
use serde_json::Value as Json;

fn json_lines(out: &std::process::Output) -> Vec<Json> {
    assert!(
        out.status.success(),
        "weir failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

fn keys(v: &Json) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().expect("an object").keys().cloned().collect();
    k.sort();
    k
}

fn sorted(fields: &[&str]) -> Vec<String> {
    let mut k: Vec<String> = fields.iter().map(|s| s.to_string()).collect();
    k.sort();
    k
}

#[test]
fn jmh_reports_one_case_under_both_protocols() {
    let out = weir(&[
        "bench",
        "jmh",
        "--seconds",
        "0.1",
        "--query",
        "querySimpleUniqueIndexed",
        "--json",
    ]);
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 2, "{lines:?}");
    let fields = sorted(&[
        "machine",
        "cores",
        "profile",
        "date",
        "case",
        "protocol",
        "ops_per_s",
        "ops_error",
        "p50_us",
        "p99_us",
        "messages_per_query",
        "bytes_per_query",
        "rows",
    ]);
    for l in &lines {
        assert_eq!(keys(l), fields, "{l}");
        assert_eq!(l["case"], "querySimpleUniqueIndexed");
        assert_eq!(l["rows"], 1);
        assert!(l["ops_per_s"].as_f64().unwrap() > 0.0, "{l}");
        assert!(l["p50_us"].as_f64().unwrap() > 0.0, "{l}");
        assert!(l["p99_us"].as_f64().unwrap() >= l["p50_us"].as_f64().unwrap());
        assert!(l["bytes_per_query"].as_f64().unwrap() > 0.0, "{l}");
    }
    let by = |p: &str| {
        lines
            .iter()
            .find(|l| l["protocol"] == p)
            .unwrap_or_else(|| panic!("no {p} line in {lines:?}"))
    };
    let lean = by("lean")["messages_per_query"].as_f64().unwrap();
    let legacy = by("legacy")["messages_per_query"].as_f64().unwrap();
    assert!(lean < legacy, "lean {lean} vs legacy {legacy}");
}

#[test]
fn jmh_prints_a_table_and_rejects_unknown_cases() {
    let out = weir(&[
        "bench",
        "jmh",
        "--seconds",
        "0.05",
        "--query",
        "querySumIndexed",
        "--protocol",
        "lean",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Benchmark") && text.contains("ops/s"),
        "{text}"
    );
    assert!(
        text.contains("querySumIndexed") && text.contains("lean"),
        "{text}"
    );
    assert!(!text.contains("legacy"), "{text}");

    let out = weir(&["bench", "jmh", "--query", "queryNope"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("queryNope"));
}

#[test]
fn jmh_primary_key_case_costs_two_messages_and_floors_run_alone() {
    let out = weir(&[
        "bench",
        "jmh",
        "--seconds",
        "0.05",
        "--query",
        "queryPrimaryKey",
        "--protocol",
        "lean",
        "--json",
    ]);
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["rows"], 1);
    // One remote fragment whose result fits a batch: start request and batch.
    assert_eq!(
        lines[0]["messages_per_query"].as_f64(),
        Some(2.0),
        "{}",
        lines[0]
    );

    for floor in ["floorIndexLookup", "floorPingPong"] {
        let out = weir(&[
            "bench",
            "jmh",
            "--seconds",
            "0.05",
            "--query",
            floor,
            "--json",
        ]);
        let lines = json_lines(&out);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert_eq!(lines[0]["case"], floor);
        assert_eq!(lines[0]["protocol"], "floor");
        assert!(
            lines[0]["ops_per_s"].as_f64().unwrap() > 0.0,
            "{}",
            lines[0]
        );
        assert_eq!(lines[0]["messages_per_query"].as_f64(), Some(0.0));
    }
}

#[test]
fn jmh_through_the_postgres_protocol_loads_item_there_and_checks_every_answer() {
    // The "other server" here is a weir cluster served on a free port: a PostgreSQL server
    // answers the same statements (the benchmark's table and queries are plain SQL).
    use weir::ServePostgres;
    let cluster = weir::Cluster::builder().nodes(2).build().unwrap();
    let server = cluster.serve_postgres("127.0.0.1:0").unwrap();
    let conn = format!(
        "host=127.0.0.1 port={} user=bench",
        server.local_addr().port()
    );
    let out = weir(&[
        "bench",
        "jmh",
        "--seconds",
        "0.05",
        "--threads",
        "2",
        "--query",
        "querySumIndexed",
        "--protocol",
        "lean",
        "--postgres",
        &conn,
        "--json",
    ]);
    let lines = json_lines(&out);
    let protocols: Vec<&str> = lines
        .iter()
        .map(|l| l["protocol"].as_str().unwrap())
        .collect();
    assert_eq!(protocols, ["lean", "serve", "postgres"], "{lines:?}");
    for l in &lines {
        assert_eq!(l["case"], "querySumIndexed");
        assert_eq!(l["rows"], 1);
        assert!(l["ops_per_s"].as_f64().unwrap() > 0.0, "{l}");
    }
    // Messages between nodes are not visible through the protocol.
    assert!(lines[0]["messages_per_query"].as_f64().unwrap() > 0.0);
    assert!(lines[1]["messages_per_query"].is_null(), "{}", lines[1]);
    assert!(lines[2]["bytes_per_query"].is_null(), "{}", lines[2]);
    server.shutdown();

    // The server is gone: the benchmark says where it could not connect.
    let out = weir(&[
        "bench",
        "jmh",
        "--seconds",
        "0.05",
        "--query",
        "queryPrimaryKey",
        "--protocol",
        "lean",
        "--postgres",
        &conn,
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot connect to 127.0.0.1"), "{err}");

    let out = weir(&["bench", "jmh", "--postgres", "port=notaport"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not a PostgreSQL connection string"), "{err}");
}

#[test]
fn overload_reports_both_modes_and_writes_charts() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("bench_cli_overload");
    let _ = std::fs::remove_dir_all(&dir);
    let out = weir(&[
        "bench",
        "overload",
        "--seconds",
        "0.1",
        "--clients",
        "1,2",
        "--nodes",
        "2",
        "--json",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let lines = json_lines(&out);
    let fields = sorted(&[
        "mode",
        "clients",
        "requests",
        "errors",
        "error_rate",
        "throughput_min",
        "throughput_median",
        "throughput_max",
        "p50_ms",
        "p90_ms",
        "p100_ms",
        "oom_nodes",
        "health",
        "trips",
        "rejections",
        "kills",
        "spills",
        "retries",
        "memory_peak",
        "memory_budget",
    ]);
    for l in &lines {
        assert_eq!(keys(l), fields, "{l}");
        if l["mode"] == "guarded" {
            // Guarded mode never accounts more than a node's budget.
            assert!(
                l["memory_peak"].as_u64().unwrap() <= l["memory_budget"].as_u64().unwrap(),
                "{l}"
            );
        }
        assert!(l["requests"].as_u64().unwrap() >= 1, "{l}");
        assert!(l["errors"].as_u64().unwrap() <= l["requests"].as_u64().unwrap());
        let rate = l["error_rate"].as_f64().unwrap();
        assert!((0.0..=100.0).contains(&rate), "{l}");
        assert!(["green", "yellow", "red"].contains(&l["health"].as_str().unwrap()));
    }
    let guarded: Vec<u64> = lines
        .iter()
        .filter(|l| l["mode"] == "guarded")
        .map(|l| l["clients"].as_u64().unwrap())
        .collect();
    assert_eq!(guarded, vec![1, 2], "{lines:?}");
    // Legacy stops after a level that runs a node out of memory, so it has one or two.
    let legacy: Vec<&Json> = lines.iter().filter(|l| l["mode"] == "legacy").collect();
    assert!(!legacy.is_empty() && legacy.len() <= 2, "{lines:?}");
    assert_eq!(legacy[0]["clients"], 1);
    for file in [
        "error_rate.svg",
        "throughput_median.svg",
        "throughput_max.svg",
        "latency_p90.svg",
        "latency_p100.svg",
    ] {
        let svg = std::fs::read_to_string(dir.join(file))
            .unwrap_or_else(|e| panic!("{file} missing: {e}"));
        assert!(svg.starts_with("<svg"), "{file}");
        assert!(
            svg.contains("guarded") && svg.contains("legacy"),
            "{file} lacks a legend"
        );
    }
    let table = std::fs::read_to_string(dir.join("table.md")).unwrap();
    assert!(table.contains("| clients (guarded/legacy) |"), "{table}");
    assert_eq!(
        std::fs::read_to_string(dir.join("results.jsonl"))
            .unwrap()
            .lines()
            .count(),
        lines.len()
    );
}

#[test]
fn tpch_explain_prints_the_plans_and_runs_nothing() {
    let out = weir(&["bench", "tpch", "--sf", "0.01", "--query", "4", "--explain"]);
    assert!(
        out.status.success(),
        "weir failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("Q4:\n"), "{text}");
    // Q4 reads orders and, in its EXISTS, lineitem.
    assert!(
        text.contains("Scan orders") && text.contains("Scan lineitem"),
        "{text}"
    );
    assert!(!text.contains("queries ran"), "no report: {text}");
}

#[test]
fn tpch_reports_one_query_as_json_and_rejects_a_bad_scale_factor() {
    let out = weir(&[
        "bench", "tpch", "--sf", "0.01", "--query", "6", "--json", "--repeat", "3",
    ]);
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 1, "{lines:?}");
    let l = &lines[0];
    assert_eq!(
        keys(l),
        sorted(&[
            "machine",
            "cores",
            "profile",
            "date",
            "query",
            "rows",
            "ms",
            "min_ms",
            "runs",
            "checked",
            "matches",
            "peak_bytes",
            "spills",
            "join_filtered_rows"
        ]),
        "{l}"
    );
    assert_eq!(l["query"], 6);
    // Q6 scans and sums: it holds little, spills nothing and has no join to filter for.
    assert!(l["peak_bytes"].as_u64().is_some_and(|b| b > 0), "{l}");
    assert_eq!(l["spills"], 0);
    assert_eq!(l["join_filtered_rows"], 0);
    assert_eq!(l["runs"], 3);
    assert!(
        l["min_ms"].as_f64().unwrap() <= l["ms"].as_f64().unwrap(),
        "{l}"
    );
    assert!(l["cores"].as_u64().is_some_and(|c| c >= 1), "{l}");
    assert!(
        ["debug", "release"].contains(&l["profile"].as_str().unwrap_or("")),
        "{l}"
    );
    assert_eq!(l["rows"], 1);
    // SF 0.01 has no reference answer.
    assert_eq!(l["checked"], false);
    assert!(l["matches"].is_null(), "{l}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("loaded lineitem"),
        "progress lines on stderr"
    );

    let out = weir(&["bench", "tpch", "--repeat", "0"]);
    assert!(!out.status.success(), "--repeat 0 was accepted");
    for bad in ["2", "abc", "0"] {
        let out = weir(&["bench", "tpch", "--sf", bad]);
        assert!(!out.status.success(), "--sf {bad} was accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("0.01, 0.1, 1 or 10"), "--sf {bad}: {err}");
    }
    let out = weir(&["bench", "tpch", "--sf", "10"]);
    assert!(
        !out.status.success(),
        "--sf 10 without --parquet was accepted"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("--parquet"));
}

#[test]
fn tpch_from_parquet_files_answers_as_from_memory() {
    let dir = std::env::temp_dir().join(format!("weir-bench-parquet-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let rows_of = |out: &std::process::Output| -> Vec<(u64, u64)> {
        json_lines(out)
            .iter()
            .map(|l| {
                assert!(l["error"].is_null(), "{l}");
                (l["query"].as_u64().unwrap(), l["rows"].as_u64().unwrap())
            })
            .collect()
    };
    let memory = weir(&["bench", "tpch", "--sf", "0.01", "--json"]);
    assert!(memory.status.success());
    let parquet = weir(&[
        "bench",
        "tpch",
        "--sf",
        "0.01",
        "--json",
        "--parquet",
        dir.to_str().unwrap(),
    ]);
    assert!(
        parquet.status.success(),
        "{}",
        String::from_utf8_lossy(&parquet.stderr)
    );
    assert_eq!(rows_of(&parquet), rows_of(&memory));
    assert_eq!(rows_of(&parquet).len(), 22);
    // The files were written once, row groups and all, and are kept for the next run.
    let lineitem = dir.join("tpch-sf0.01").join("lineitem");
    assert!(std::fs::read_dir(&lineitem).unwrap().count() >= 1);
    assert!(dir.join("tpch-sf0.01").join("_complete").exists());
    let again = weir(&[
        "bench",
        "tpch",
        "--sf",
        "0.01",
        "--json",
        "--query",
        "1",
        "--parquet",
        dir.to_str().unwrap(),
    ]);
    assert!(String::from_utf8_lossy(&again.stderr).contains("using the Parquet files"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn join_reports_both_rates_with_the_header_and_matching_answers() {
    let out = weir(&[
        "bench", "join", "--build", "50", "--probe", "700", "--nodes", "2", "--reps", "1", "--json",
    ]);
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 1, "{lines:?}");
    let l = &lines[0];
    assert_eq!(
        keys(l),
        sorted(&[
            "machine",
            "cores",
            "profile",
            "date",
            "build_rows",
            "probe_rows",
            "nodes",
            "weir_rows_per_s",
            "hand_rows_per_s",
            "ratio",
            "answer_matches",
        ]),
        "{l}"
    );
    assert_eq!(l["build_rows"], 50);
    assert_eq!(l["probe_rows"], 700);
    assert_eq!(l["nodes"], 2);
    assert_eq!(l["answer_matches"], true);
    assert!(l["weir_rows_per_s"].as_f64().unwrap() > 0.0, "{l}");
    assert!(l["hand_rows_per_s"].as_f64().unwrap() > 0.0, "{l}");
    assert!(l["cores"].as_u64().unwrap() >= 1, "{l}");
    assert!(["release", "debug"].contains(&l["profile"].as_str().unwrap()));
    let date = l["date"].as_str().unwrap();
    assert!(date.len() == 20 && date.ends_with('Z') && date.as_bytes()[10] == b'T');

    let out = weir(&["bench", "join", "--build", "0"]);
    assert!(!out.status.success(), "--build 0 was accepted");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--build"));
}

#[test]
fn join_prints_the_header_and_the_ratio() {
    let out = weir(&[
        "bench", "join", "--build", "20", "--probe", "100", "--reps", "1",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    for part in [
        "machine:",
        "cores:",
        "profile:",
        "date:",
        "probe rows/s",
        "ratio",
    ] {
        assert!(text.contains(part), "no {part:?} in {text}");
    }
}
