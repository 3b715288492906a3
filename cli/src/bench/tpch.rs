//! `weir bench tpch`: the 22 TPC-H queries on data generated in memory.
//!
//! The data comes from the `tpchgen` crate (a port of the TPC-H kit's `dbgen`), generated at
//! the requested scale factor and bulk-loaded into a fresh cluster ([`schema`]). The queries
//! are the TPC-H 2.18 texts with the specification's validation substitution parameters
//! (`tpch/queries/qNN.sql`, embedded in the binary; Q15 in its `WITH` form). At scale factor
//! 1 every answer is compared with the answer set that `tpchgen` ships from the TPC-H kit
//! ([`answers`]); at other scale factors there is no reference answer and `checked` is
//! false.
//!
//! A query that fails is reported with its error and the run goes on; a panic inside one is
//! caught and reported the same way, and every query runs under the cluster's query timeout.

pub mod answers;
pub mod schema;

use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;
use std::io::IsTerminal;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use crate::{Cluster, QueryResult};

/// The number of TPC-H queries.
pub const QUERIES: usize = 22;

/// The scale factors `--sf` accepts (10 only with `--parquet`).
pub const SCALE_FACTORS: [f64; 4] = [0.01, 0.1, 1.0, 10.0];

/// The long help of `weir bench tpch`.
pub const TPCH_ABOUT: &str = "TPC-H on weir: generates the eight tables at --sf in memory \
(the tpchgen crate, a port of the TPC-H kit's dbgen), loads them into a cluster of --nodes data \
nodes (or, with --parquet DIR, writes them once as Parquet files there and queries them in place \
as external tables), and runs the 22 queries with the specification's validation parameters (Q15 in its WITH \
form). Per query: rows, wall time in ms, and at SF 1 whether the answer matches the answer set \
shipped with the TPC-H kit (numbers within 0.01). A query that fails is reported with its \
error; the command fails when any query failed or gave a wrong answer.";

/// Flags of `weir bench tpch`.
#[derive(Debug, Clone, Args)]
pub struct TpchArgs {
    /// Scale factor: 0.01, 0.1 or 1 (SF 1 is about 8.7 million rows, 6 million of them
    /// lineitem).
    #[arg(long, default_value = "0.01", value_parser = parse_sf)]
    pub sf: f64,
    /// Data nodes.
    #[arg(long, default_value_t = 3)]
    pub nodes: usize,
    /// Run only this query (1 to 22).
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=22))]
    pub query: Option<u8>,
    /// One JSON object per query on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Seconds a query may run before it is cancelled and reported as failed.
    #[arg(long, default_value_t = 600.0)]
    pub timeout: f64,
    /// Runs of each query; `ms` is their median (the answer checked is the last run's).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: u32,
    /// Memory budget of each node in bytes (default: weir's, 512 MiB). Below a query's
    /// working set its sorts, aggregations and joins spill to disk.
    #[arg(long)]
    pub memory: Option<usize>,
    /// Query Parquet files in place instead of loading the data: the tables are written
    /// once as Parquet files under this directory (`tpch-sf<SF>/<table>/`, Snappy, row
    /// groups of 122,880 rows; kept for later runs) and created as external tables over
    /// them. Allows `--sf 10`.
    #[arg(long, value_name = "DIR")]
    pub parquet: Option<std::path::PathBuf>,
    /// Runs without join key filters (hash joins then send no filter of their build keys to
    /// their probe side's senders), to measure what they save.
    #[arg(long)]
    pub no_join_filters: bool,
    /// Prints each query's plan (`EXPLAIN`, with the planner's row estimates) after the load
    /// instead of running it.
    #[arg(long, conflicts_with = "analyze")]
    pub explain: bool,
    /// Runs each query once under `EXPLAIN ANALYZE` and prints its plan with what each
    /// operator output and how long its kernel worked, instead of the timing report.
    #[arg(long)]
    pub analyze: bool,
}

/// Parses `--sf`: one of [`SCALE_FACTORS`].
pub fn parse_sf(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a scale factor; use 0.01, 0.1, 1 or 10"))?;
    SCALE_FACTORS
        .iter()
        .copied()
        .find(|sf| (sf - v).abs() < 1e-12)
        .ok_or_else(|| format!("scale factor {s} is not supported; use 0.01, 0.1, 1 or 10"))
}

const QUERY_TEXTS: [&str; QUERIES] = [
    include_str!("tpch/queries/q01.sql"),
    include_str!("tpch/queries/q02.sql"),
    include_str!("tpch/queries/q03.sql"),
    include_str!("tpch/queries/q04.sql"),
    include_str!("tpch/queries/q05.sql"),
    include_str!("tpch/queries/q06.sql"),
    include_str!("tpch/queries/q07.sql"),
    include_str!("tpch/queries/q08.sql"),
    include_str!("tpch/queries/q09.sql"),
    include_str!("tpch/queries/q10.sql"),
    include_str!("tpch/queries/q11.sql"),
    include_str!("tpch/queries/q12.sql"),
    include_str!("tpch/queries/q13.sql"),
    include_str!("tpch/queries/q14.sql"),
    include_str!("tpch/queries/q15.sql"),
    include_str!("tpch/queries/q16.sql"),
    include_str!("tpch/queries/q17.sql"),
    include_str!("tpch/queries/q18.sql"),
    include_str!("tpch/queries/q19.sql"),
    include_str!("tpch/queries/q20.sql"),
    include_str!("tpch/queries/q21.sql"),
    include_str!("tpch/queries/q22.sql"),
];

/// The SQL of query `n` (1 to 22) at scale factor `sf`: the validation parameters, with Q11's
/// FRACTION set to 0.0001 / SF as the specification scales it. The text has no trailing
/// semicolon.
pub fn query_sql(n: usize, sf: f64) -> Result<String, String> {
    let text = n
        .checked_sub(1)
        .and_then(|i| QUERY_TEXTS.get(i))
        .ok_or_else(|| format!("there is no TPC-H query {n}; queries are 1 to {QUERIES}"))?;
    let text = text.trim().trim_end_matches(';').trim_end();
    Ok(if n == 11 {
        text.replace(":fraction", &format!("{}", 0.0001 / sf))
    } else {
        text.to_string()
    })
}

/// Runs query `n` once on `cluster`: its wall time and its result, or its error (a panic
/// inside weir is caught and reported as an error).
pub fn run_query(cluster: &Cluster, n: usize, sf: f64) -> (Duration, Result<QueryResult, String>) {
    let sql = match query_sql(n, sf) {
        Ok(s) => s,
        Err(e) => return (Duration::ZERO, Err(e)),
    };
    let start = Instant::now();
    let result = catch_unwind(AssertUnwindSafe(|| cluster.query(&sql, &[])));
    let took = start.elapsed();
    let result = match result {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(panic) => Err(format!("panicked: {}", panic_message(&*panic))),
    };
    (took, result)
}

/// The plan of query `n` at scale factor `sf`: `EXPLAIN`'s lines, or with `analyze` those of
/// `EXPLAIN ANALYZE` (the query runs).
pub fn explain(cluster: &Cluster, n: usize, sf: f64, analyze: bool) -> Result<String, String> {
    let sql = query_sql(n, sf)?;
    let verb = if analyze {
        "EXPLAIN ANALYZE"
    } else {
        "EXPLAIN"
    };
    let plan = cluster
        .query(&format!("{verb} {sql}"), &[])
        .map_err(|e| format!("Q{n}: {e}"))?;
    Ok(plan
        .rows()
        .into_iter()
        .map(|r| match r.first() {
            Some(weir::Value::Str(line)) => line.clone(),
            other => format!("{other:?}"),
        })
        .collect::<Vec<_>>()
        .join("\n"))
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".into()
    }
}

/// One query's line of the report (and its `--json` object).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TpchRow {
    /// Query number, 1 to 22.
    pub query: usize,
    /// Rows returned; `None` when the query failed.
    pub rows: Option<usize>,
    /// Wall time, milliseconds (the median of the runs with `--repeat`).
    pub ms: f64,
    /// The fastest run, milliseconds.
    pub min_ms: f64,
    /// Runs of the query.
    pub runs: u32,
    /// Whether the answer was compared with a reference answer (only at SF 1).
    pub checked: bool,
    /// Whether it matched; `None` when not checked.
    pub matches: Option<bool>,
    /// The most memory one node accounted while the query ran (its last run), bytes.
    pub peak_bytes: usize,
    /// Times an operator spilled to disk during the query's runs.
    pub spills: u64,
    /// Rows the join key filters dropped before they crossed an exchange (its last run).
    pub join_filtered_rows: u64,
    /// Why the query failed, or how its answer differs from the reference.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Reports progress: a plain line per step when stderr is not a terminal, a spinner when it
/// is.
struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    fn new() -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let pb = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            pb.set_style(
                ProgressStyle::with_template("{spinner} [{elapsed_precise}] {msg}")
                    .expect("a valid template"),
            );
            pb.enable_steady_tick(Duration::from_millis(200));
            pb
        });
        Progress { bar }
    }

    fn step(&self, line: String) {
        match &self.bar {
            Some(pb) => pb.set_message(line),
            None => eprintln!("{line}"),
        }
    }

    fn finish(&self) {
        if let Some(pb) = &self.bar {
            pb.finish_and_clear();
        }
    }
}

/// Builds the cluster, loads the data and runs the selected queries; a row per query, in
/// query order.
pub fn run(args: &TpchArgs) -> Result<Vec<TpchRow>, String> {
    parse_sf(&args.sf.to_string())?;
    if args.sf > 1.0 && args.parquet.is_none() {
        return Err(format!(
            "scale factor {} is read from Parquet files only: add --parquet DIR",
            args.sf
        ));
    }
    if args.nodes == 0 {
        return Err("--nodes must be at least 1".into());
    }
    if !(args.timeout.is_finite() && args.timeout > 0.0) {
        return Err("--timeout must be a positive number of seconds".into());
    }
    let progress = Progress::new();
    progress.step(format!(
        "starting {} nodes; generating and loading TPC-H SF {}",
        args.nodes, args.sf
    ));
    let mut builder = Cluster::builder()
        .nodes(args.nodes)
        .join_filters(!args.no_join_filters)
        .query_timeout(Duration::from_secs_f64(args.timeout));
    if let Some(bytes) = args.memory {
        builder = builder.node_memory(bytes);
    }
    let cluster = builder.build().map_err(|e| e.to_string())?;
    match &args.parquet {
        Some(root) => {
            let start = Instant::now();
            let dir = schema::write_parquet(root, args.sf, &mut |line| progress.step(line))?;
            schema::attach_parquet(&cluster, &dir)?;
            progress.step(format!(
                "external tables over {} ready in {:.2?}",
                dir.display(),
                start.elapsed()
            ));
        }
        None => {
            let report = schema::load(&cluster, args.sf, &mut |line| progress.step(line))?;
            progress.step(format!("loaded all tables in {:.2?}", report.elapsed));
        }
    }
    let queries: Vec<usize> = match args.query {
        Some(q) => vec![q as usize],
        None => (1..=QUERIES).collect(),
    };
    if args.explain || args.analyze {
        progress.finish();
        for &n in &queries {
            println!("Q{n}:\n{}", explain(&cluster, n, args.sf, args.analyze)?);
        }
        cluster.shutdown();
        return Ok(Vec::new());
    }
    let mut rows = Vec::new();
    for n in queries {
        progress.step(format!("running Q{n}"));
        let mut times = Vec::with_capacity(args.repeat as usize);
        let mut result = Err(String::new());
        let spills_before = spills(&cluster);
        let mut peak_bytes = 0;
        let mut join_filtered_rows = 0;
        for _ in 0..args.repeat {
            cluster.reset_memory_peaks();
            let filtered_before = filtered(&cluster);
            let (took, r) = run_query(&cluster, n, args.sf);
            peak_bytes = peak(&cluster);
            join_filtered_rows = filtered(&cluster) - filtered_before;
            times.push(took.as_secs_f64() * 1e3);
            result = r;
            if result.is_err() {
                break;
            }
        }
        times.sort_by(f64::total_cmp);
        let ms = times[times.len() / 2];
        let (min_ms, runs) = (times[0], times.len() as u32);
        let spills = spills(&cluster) - spills_before;
        let row = match result {
            Err(e) => TpchRow {
                query: n,
                rows: None,
                ms,
                min_ms,
                runs,
                checked: false,
                matches: None,
                peak_bytes,
                spills,
                join_filtered_rows,
                error: Some(e),
            },
            Ok(r) => {
                let (checked, matches, error) = match answers::reference(n, args.sf) {
                    None => (false, None, None),
                    Some(expected) => match answers::compare(n, &expected, &r.rows()) {
                        Ok(()) => (true, Some(true), None),
                        Err(why) => (true, Some(false), Some(why)),
                    },
                };
                TpchRow {
                    query: n,
                    rows: Some(r.num_rows()),
                    ms,
                    min_ms,
                    runs,
                    checked,
                    matches,
                    peak_bytes,
                    spills,
                    join_filtered_rows,
                    error,
                }
            }
        };
        progress.step(format!(
            "Q{n}: {} in {ms:.1} ms",
            match &row.error {
                None => format!("{} rows", row.rows.unwrap_or(0)),
                Some(e) => format!("failed: {e}"),
            }
        ));
        rows.push(row);
    }
    progress.finish();
    cluster.shutdown();
    Ok(rows)
}

/// Spills so far over the cluster's nodes.
fn spills(cluster: &Cluster) -> u64 {
    cluster.stats().nodes.iter().map(|n| n.spills).sum()
}

/// Rows dropped by join key filters so far over the cluster's nodes.
fn filtered(cluster: &Cluster) -> u64 {
    cluster
        .stats()
        .nodes
        .iter()
        .map(|n| n.join_filtered_rows)
        .sum()
}

/// The highest memory peak of any node since the peaks were last reset.
fn peak(cluster: &Cluster) -> usize {
    let stats = cluster.stats();
    stats.nodes.iter().map(|n| n.memory_peak).max().unwrap_or(0)
}

/// The report as a plain-text table.
pub fn render(rows: &[TpchRow]) -> String {
    let mut out = format!(
        "{:<6} {:>8} {:>12} {:>8} {:>8} {:>10} {:>7} {:>10}  error\n",
        "query", "rows", "ms", "checked", "matches", "peak MiB", "spills", "filtered"
    );
    for r in rows {
        out.push_str(&format!(
            "{:<6} {:>8} {:>12.1} {:>8} {:>8} {:>10.1} {:>7} {:>10}  {}\n",
            format!("Q{}", r.query),
            r.rows.map_or("-".to_string(), |n| n.to_string()),
            r.ms,
            r.checked,
            r.matches.map_or("-".to_string(), |m| m.to_string()),
            r.peak_bytes as f64 / (1024.0 * 1024.0),
            r.spills,
            r.join_filtered_rows,
            r.error.as_deref().unwrap_or("")
        ));
    }
    let ok = rows.iter().filter(|r| r.rows.is_some()).count();
    out.push_str(&format!("{ok} of {} queries ran\n", rows.len()));
    out
}

/// `weir bench tpch`: runs and prints the report; an error when a query failed or an answer
/// did not match.
pub fn main(args: &TpchArgs) -> Result<(), String> {
    let rows = run(args)?;
    if args.explain || args.analyze {
        return Ok(());
    }
    let header = super::header::Header::current();
    if args.json {
        print!("{}", header.json_lines(&rows)?);
    } else {
        println!("{header}");
        print!("{}", render(&rows));
    }
    let failed: Vec<String> = rows
        .iter()
        .filter(|r| r.error.is_some())
        .map(|r| format!("Q{}", r.query))
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} of {} queries failed or gave a wrong answer: {}",
            failed.len(),
            rows.len(),
            failed.join(", ")
        ))
    }
}
