//! `weir bench overload`: the OpenSearch hash join experiment on weir.
//!
//! Closed-loop clients (each sends a query, waits for its answer, sends the next) run a hash
//! join against a cluster whose nodes have small memory budgets, in both join modes:
//! [`JoinMode::Legacy`] (joins never consult the breaker; a node whose accounted memory goes
//! over its budget runs out of memory and goes down) and [`JoinMode::Guarded`] (queries wait
//! their turn in a fair admission queue until their joins fit in memory; if the memory
//! circuit breaker trips anyway it kills half of the running joins that hold memory, and
//! they run again ahead of new queries). Each client level starts a fresh cluster and loads the same generated data.
//!
//! The workload: `customers` (the build side, [`CUSTOMERS`] rows) joined with `orders` (the
//! probe side, [`ORDERS`] rows) on the customer id, grouped by region. The planner
//! hash-shuffles both sides, so every data node builds a hash table over its share of
//! `customers` for every running query (about 100 KB accounted with 10 nodes). With the
//! default 10 nodes and [`DEFAULT_NODE_MEMORY`] per node, about 80 joins held at once on a
//! node exceed its budget, and Legacy runs nodes out of memory late in the sweep (128 to 192
//! clients on the 2-core machine measured; 112 on an earlier build, as in the seed).

use super::chart::{self, Series};
use super::stats;
use crate::demo::REGIONS;
use crate::runtime::{Health, JoinMode};
use crate::{Batch, Cluster, Column, Value};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The seed's client levels.
pub const DEFAULT_CLIENTS: &str =
    "1,2,4,8,12,16,20,24,28,32,36,40,44,48,52,56,60,64,80,96,104,112,128,160,192,224,256";
/// Rows of `customers`, the join's build side.
pub const CUSTOMERS: usize = 10_000;
/// Rows of `orders`, the join's probe side.
pub const ORDERS: usize = 20_000;
/// Partitions per table.
pub const PARTITIONS: u32 = 64;
/// Default memory budget per data node.
pub const DEFAULT_NODE_MEMORY: usize = 8 * 1024 * 1024;
/// Clients start one after another over this fraction of the level (a ramp-up), so that
/// their requests do not all start, share the nodes and finish at the same moments.
pub const RAMP_UP: f64 = 0.25;
/// Length of a throughput window: at least a second, so that a window does not read 0 while
/// requests that take longer than a short window complete.
pub const WINDOW: Duration = Duration::from_secs(1);

/// The query every client sends.
pub const OVERLOAD_QUERY: &str = "SELECT c.region, COUNT(*) AS n FROM orders o \
     JOIN customers c ON o.customer_id = c.id GROUP BY c.region";

/// Which join modes to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeChoice {
    /// The old hash join: no breaker, nodes run out of memory.
    Legacy,
    /// Joins behind the memory circuit breaker.
    Guarded,
    /// Both (guarded first).
    Both,
}

impl ModeChoice {
    fn modes(self) -> Vec<JoinMode> {
        match self {
            ModeChoice::Legacy => vec![JoinMode::Legacy],
            ModeChoice::Guarded => vec![JoinMode::Guarded],
            ModeChoice::Both => vec![JoinMode::Guarded, JoinMode::Legacy],
        }
    }
}

/// A join mode's name as printed.
pub fn mode_name(m: JoinMode) -> &'static str {
    match m {
        JoinMode::Legacy => "legacy",
        JoinMode::Guarded => "guarded",
    }
}

/// Flags of `weir bench overload`.
#[derive(Debug, Clone, Args)]
pub struct OverloadArgs {
    /// Client levels (comma-separated); each runs on a fresh cluster.
    #[arg(long, value_delimiter = ',', default_value = DEFAULT_CLIENTS)]
    pub clients: Vec<usize>,
    /// Seconds each level runs.
    #[arg(long, default_value_t = 4.0)]
    pub seconds: f64,
    /// Join mode(s) to run.
    #[arg(long, value_enum, default_value_t = ModeChoice::Both)]
    pub mode: ModeChoice,
    /// Data nodes (a client node that holds no data is added).
    #[arg(long, default_value_t = 10)]
    pub nodes: usize,
    /// Memory budget of each node in bytes.
    #[arg(long, default_value_t = DEFAULT_NODE_MEMORY)]
    pub node_memory: usize,
    /// Seed of the data and of the breaker's random choices.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Directory for the SVG charts, `results.jsonl` and `table.md`.
    #[arg(long, default_value = "target/weir-bench/overload")]
    pub out: PathBuf,
    /// One JSON object per mode and level on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// A query still running after this many seconds fails.
    #[arg(long, default_value_t = 10.0)]
    pub query_timeout: f64,
    /// Idle spin and actor threads of the cluster's nodes.
    #[command(flatten)]
    pub runtime: crate::runtime_args::RuntimeArgs,
}

/// The long help of `weir bench overload`.
pub const OVERLOAD_ABOUT: &str = "The OpenSearch hash join experiment: closed-loop clients (each \
sends a query, waits for its answer, sends the next) run
  SELECT c.region, COUNT(*) FROM orders o JOIN customers c ON o.customer_id = c.id GROUP BY c.region
against --nodes data nodes with --node-memory bytes each, in both join modes.

Each level of --clients starts a fresh cluster and loads the same generated data: customers \
(10,000 rows, the build side) and orders (20,000 rows), 64 partitions each. Both sides are \
hash-shuffled, so for every running query each node builds a hash table over its share of \
customers: about 100 KB accounted with 10 nodes. With the default 10 nodes and 8 MiB per node, \
about 80 joins held at once exceed a node's budget, and Legacy runs nodes out of memory \
late in the default sweep (128 to 192 clients on a 2-core machine). The Legacy \
sweep stops after the first level that crashes a node. Guarded instead queues queries in a \
fair admission queue until their joins fit (and kills and re-runs joins if the breaker trips \
anyway). Clients start evenly over the first quarter of a level; requests still running at its \
end finish and count.

Per mode and level: requests, errors, error rate (percent), throughput min / median / max \
(successful requests per second in windows of about 1 s from the level's start to its last \
answer), \
service time p50 / p90 / p100 (ms, every request, failed ones included), data nodes out of \
memory (down) at the end, health, breaker trips, rejections, kills and retries, and the \
highest accounted memory peak of a data node against the budget (JSON only). Writes \
error_rate.svg, throughput_median.svg, throughput_max.svg, latency_p90.svg and \
latency_p100.svg (both modes on each chart, log-scale client axis, a marker at the level where \
Legacy ran out of memory), results.jsonl and table.md to --out. When stderr is not a terminal, \
a plain progress line per level replaces the progress bar.";

/// One mode at one client level.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct OverloadRow {
    /// `guarded` or `legacy`.
    pub mode: String,
    /// Closed-loop clients.
    pub clients: usize,
    /// Requests completed (successes and errors).
    pub requests: u64,
    /// Requests that failed (or returned a wrong answer).
    pub errors: u64,
    /// Errors as a percentage of requests.
    pub error_rate: f64,
    /// Lowest successful requests per second over the windows of about 1 s.
    pub throughput_min: f64,
    /// Median of the windows.
    pub throughput_median: f64,
    /// Highest of the windows.
    pub throughput_max: f64,
    /// Median service time, ms.
    pub p50_ms: f64,
    /// 90th percentile service time, ms.
    pub p90_ms: f64,
    /// Longest service time, ms.
    pub p100_ms: f64,
    /// Data nodes out of memory (down) at the end of the level.
    pub oom_nodes: usize,
    /// Cluster health at the end of the level.
    pub health: String,
    /// Breaker trips over all nodes.
    pub trips: u64,
    /// Admissions refused by an open breaker.
    pub rejections: u64,
    /// Hash joins killed.
    pub kills: u64,
    /// Operators that spilled to disk when the breaker asked for their memory.
    pub spills: u64,
    /// Queries re-enqueued after a rejection or a kill.
    pub retries: u64,
    /// The highest accounted memory peak of any data node, in bytes.
    pub memory_peak: usize,
    /// Each data node's memory budget, in bytes.
    pub memory_budget: usize,
}

/// The generated tables, made once and loaded into every level's cluster.
pub struct JoinData {
    customers: Batch,
    orders: Batch,
}

impl JoinData {
    /// `customers` rows spread round-robin over the regions, `orders` rows each for a
    /// uniformly random customer.
    pub fn generate(customers: usize, orders: usize, seed: u64) -> JoinData {
        let ids: Vec<i64> = (0..customers as i64).collect();
        let names: Vec<String> = ids.iter().map(|i| format!("customer{i}")).collect();
        let regions: Vec<&str> = ids
            .iter()
            .map(|i| REGIONS[*i as usize % REGIONS.len()])
            .collect();
        let customers_batch = Batch::try_new(vec![
            Column::from_i64(ids),
            Column::from_strs(&names),
            Column::from_strs(&regions),
        ])
        .expect("columns of equal length");
        let mut rng = StdRng::seed_from_u64(seed);
        let id: Vec<i64> = (0..orders as i64).collect();
        let cust: Vec<i64> = (0..orders)
            .map(|_| rng.random_range(0..customers.max(1) as i64))
            .collect();
        let qty: Vec<i64> = (0..orders).map(|_| rng.random_range(1..10i64)).collect();
        let amount: Vec<f64> = qty.iter().map(|q| *q as f64 * 2.5).collect();
        let orders_batch = Batch::try_new(vec![
            Column::from_i64(id),
            Column::from_i64(cust),
            Column::from_i64(qty),
            Column::from_f64(amount),
        ])
        .expect("columns of equal length");
        JoinData {
            customers: customers_batch,
            orders: orders_batch,
        }
    }

    /// Creates the tables on `cluster` and loads the rows.
    pub fn load(&self, cluster: &Cluster) -> crate::Result<()> {
        cluster.execute(
            "CREATE TABLE customers (id BIGINT PRIMARY KEY, name VARCHAR, region VARCHAR)",
        )?;
        cluster.execute(
            "CREATE TABLE orders (id BIGINT PRIMARY KEY, customer_id BIGINT, qty BIGINT, \
             amount DOUBLE)",
        )?;
        cluster.load("customers", self.customers.clone())?;
        cluster.load("orders", self.orders.clone())?;
        Ok(())
    }

    /// Rows of `orders` (every order matches one customer, so the counts add up to it).
    pub fn orders(&self) -> usize {
        self.orders.num_rows()
    }
}

/// One finished request.
#[derive(Debug, Clone, Copy)]
struct Sample {
    /// When it finished, since the level started.
    end: Duration,
    /// Service time.
    latency: Duration,
    ok: bool,
}

/// Whether a result is the right answer: 8 regions whose counts add up to every order.
fn check(result: &crate::QueryResult, orders: usize) -> bool {
    let rows = result.rows();
    let total: i64 = rows
        .iter()
        .map(|r| match r.get(1) {
            Some(Value::Int(n)) => *n,
            _ => -1,
        })
        .sum();
    rows.len() == REGIONS.len().min(orders) && total == orders as i64
}

/// What the client threads saw.
#[derive(Default)]
struct Driven {
    samples: Vec<Sample>,
    /// Error messages (wrong answers included) and how often each occurred.
    errors: BTreeMap<String, u64>,
}

/// Runs `clients` closed-loop client threads for `seconds` (starting them evenly over the
/// first [`RAMP_UP`] of it) and returns every request.
/// Requests in flight at the deadline finish and count.
fn drive(cluster: &Cluster, clients: usize, seconds: f64, orders: usize) -> Driven {
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(seconds);
    let ramp = Duration::from_secs_f64(seconds * RAMP_UP);
    let per_thread: Vec<Driven> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..clients)
            .map(|i| {
                let first = start + ramp.mul_f64(i as f64 / clients as f64);
                std::thread::Builder::new()
                    .stack_size(256 * 1024)
                    .spawn_scoped(s, move || {
                        let mut d = Driven::default();
                        std::thread::sleep(first.saturating_duration_since(Instant::now()));
                        while Instant::now() < deadline {
                            let t = Instant::now();
                            let outcome = cluster.query(OVERLOAD_QUERY, &[]);
                            let end = Instant::now();
                            let error = match outcome {
                                Ok(r) if check(&r, orders) => None,
                                Ok(r) => Some(format!("wrong answer: {:?}", r.rows())),
                                Err(e) => Some(e.to_string()),
                            };
                            d.samples.push(Sample {
                                end: end - start,
                                latency: end - t,
                                ok: error.is_none(),
                            });
                            if let Some(e) = error {
                                let e: String = e.chars().take(160).collect();
                                *d.errors.entry(e).or_default() += 1;
                            }
                        }
                        d
                    })
                    .expect("a client thread starts")
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let mut all = Driven::default();
    for d in per_thread {
        all.samples.extend(d.samples);
        for (e, n) in d.errors {
            *all.errors.entry(e).or_default() += n;
        }
    }
    all
}

/// Successful requests per second in windows of at least [`WINDOW`] covering the level from its
/// start to the end of its last request (the requests in flight at the deadline included:
/// under load a request can take longer than the level).
fn window_throughputs(samples: &[Sample]) -> Vec<f64> {
    let span = samples
        .iter()
        .map(|s| s.end.as_secs_f64())
        .fold(0.0, f64::max);
    if span <= 0.0 {
        return vec![0.0];
    }
    // Whole windows: each at least WINDOW long (one window when the level was shorter).
    let n = ((span / WINDOW.as_secs_f64()).floor() as usize).max(1);
    let len = span / n as f64;
    let mut counts = vec![0u64; n];
    for s in samples.iter().filter(|s| s.ok) {
        let i = ((s.end.as_secs_f64() / len) as usize).min(n - 1);
        counts[i] += 1;
    }
    counts.iter().map(|c| *c as f64 / len).collect()
}

fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

/// Runs one mode at one level on a fresh cluster.
fn level(
    args: &OverloadArgs,
    data: &JoinData,
    mode: JoinMode,
    clients: usize,
    pb: &ProgressBar,
) -> Result<OverloadRow, String> {
    let name = mode_name(mode);
    pb.set_message(format!("{name}, {clients} clients: loading"));
    let cluster = args
        .runtime
        .apply(Cluster::builder())
        .nodes(args.nodes)
        .partitions(PARTITIONS)
        .node_memory(args.node_memory)
        .join_mode(mode)
        .seed(args.seed)
        .query_timeout(Duration::from_secs_f64(args.query_timeout.max(0.001)))
        .build()
        .map_err(|e| e.to_string())?;
    data.load(&cluster).map_err(|e| e.to_string())?;
    // One query before the clients start, so planning and fragment caching are not measured.
    let warm = cluster
        .query(OVERLOAD_QUERY, &[])
        .map_err(|e| format!("the overload query fails on an idle cluster: {e}"))?;
    if !check(&warm, data.orders()) {
        return Err(format!(
            "the overload query returned a wrong answer: {:?}",
            warm.rows()
        ));
    }
    pb.set_message(format!("{name}, {clients} clients: running"));
    let Driven { samples, errors } = drive(&cluster, clients, args.seconds, data.orders());
    if !errors.is_empty() {
        let mut top: Vec<(&String, &u64)> = errors.iter().collect();
        top.sort_by(|a, b| b.1.cmp(a.1));
        pb.suspend(|| {
            for (e, n) in top.iter().take(3) {
                eprintln!("{name}, {clients} clients: {n} × {e}");
            }
        });
    }
    let stats = cluster.stats();
    let requests = samples.len() as u64;
    let errors = samples.iter().filter(|s| !s.ok).count() as u64;
    let mut latencies: Vec<f64> = samples
        .iter()
        .map(|s| s.latency.as_secs_f64() * 1e3)
        .collect();
    latencies.sort_by(f64::total_cmp);
    let windows = window_throughputs(&samples);
    let oom_nodes = stats.nodes.iter().filter(|n| n.is_data && !n.up).count();
    let data_nodes = || stats.nodes.iter().filter(|n| n.is_data);
    let health: Health = stats.health;
    let row = OverloadRow {
        mode: name.to_string(),
        clients,
        requests,
        errors,
        error_rate: round(100.0 * errors as f64 / requests.max(1) as f64, 2),
        throughput_min: round(windows.iter().copied().fold(f64::INFINITY, f64::min), 2),
        throughput_median: round(stats::median(&windows), 2),
        throughput_max: round(windows.iter().copied().fold(0.0, f64::max), 2),
        p50_ms: round(stats::percentile(&latencies, 0.50), 2),
        p90_ms: round(stats::percentile(&latencies, 0.90), 2),
        p100_ms: round(stats::percentile(&latencies, 1.0), 2),
        oom_nodes,
        health: health.to_string(),
        trips: stats.nodes.iter().map(|n| n.trips).sum(),
        rejections: stats.breaker.rejections,
        kills: stats.breaker.kills,
        spills: stats.breaker.spills,
        retries: stats.breaker.retries,
        memory_peak: data_nodes().map(|n| n.memory_peak).max().unwrap_or(0),
        memory_budget: data_nodes().map(|n| n.memory_budget).max().unwrap_or(0),
    };
    pb.set_message(format!("{name}, {clients} clients: stopping"));
    cluster.shutdown();
    Ok(row)
}

/// Runs the sweep, after a short warm-up: every level in guarded mode, and in legacy mode up
/// to and including the first level that runs a node out of memory; at each level the modes
/// run one after the other, the first one alternating.
pub fn run(args: &OverloadArgs) -> Result<Vec<OverloadRow>, String> {
    if !(args.seconds.is_finite() && args.seconds > 0.0) {
        return Err(format!(
            "--seconds must be a positive number, got {}",
            args.seconds
        ));
    }
    if args.clients.is_empty() || args.clients.contains(&0) {
        return Err("--clients needs client counts of at least 1".into());
    }
    if !(args.query_timeout.is_finite() && args.query_timeout > 0.0) {
        return Err("--query-timeout must be a positive number".into());
    }
    let modes = args.mode.modes();
    let data = JoinData::generate(CUSTOMERS, ORDERS, args.seed);
    let terminal = std::io::stderr().is_terminal();
    let pb = ProgressBar::with_draw_target(
        Some((args.clients.len() * modes.len()) as u64),
        if terminal {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        },
    );
    pb.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] [{bar:30}] {pos}/{len} levels  {msg}",
        )
        .expect("a valid template")
        .progress_chars("=> "),
    );
    pb.enable_steady_tick(Duration::from_millis(200));
    // One short level first, not recorded: the process's first cluster meets fresh pages and
    // cold caches, which would otherwise fall on the first mode of the first level.
    pb.set_message("warming up");
    let warm_up = OverloadArgs {
        seconds: args.seconds.min(1.0),
        ..args.clone()
    };
    level(&warm_up, &data, modes[0], 1, &pb)?;
    // Level by level, each mode in turn, which goes first alternating from level to level:
    // both modes see the machine as it is at that level (a sweep of one mode after the other
    // would compare them at different times), and neither is always the first.
    let mut rows = Vec::new();
    let mut legacy_crashed = false;
    for (i, &clients) in args.clients.iter().enumerate() {
        let mut turns = modes.clone();
        if i % 2 == 1 {
            turns.reverse();
        }
        for &mode in &turns {
            if mode == JoinMode::Legacy && legacy_crashed {
                continue;
            }
            let row = level(args, &data, mode, clients, &pb)?;
            if !terminal {
                eprintln!("{}", progress_line(&row));
            }
            if mode == JoinMode::Legacy && row.oom_nodes > 0 {
                legacy_crashed = true;
                pb.inc((args.clients.len() - i - 1) as u64);
            }
            rows.push(row);
            pb.inc(1);
        }
    }
    pb.finish_and_clear();
    // Rows by mode, each mode's in level order (a stable sort), as the table and the charts
    // read them.
    rows.sort_by_key(|r| modes.iter().position(|m| mode_name(*m) == r.mode));
    Ok(rows)
}

/// The line printed per level when stderr is not a terminal.
pub fn progress_line(r: &OverloadRow) -> String {
    format!(
        "{}, {} clients: {} requests, {} errors ({}%), median {} ops/s, p90 {} ms, \
         {} nodes out of memory, {} trips, {} spills, {} kills",
        r.mode,
        r.clients,
        r.requests,
        r.errors,
        num(r.error_rate),
        num(r.throughput_median),
        num(r.p90_ms),
        r.oom_nodes,
        r.trips,
        r.spills,
        r.kills
    )
}

/// Formats a figure for the table: integers without decimals, others with up to 2.
fn num(x: f64) -> String {
    let r = round(x, 2);
    if r.fract() == 0.0 {
        format!("{r:.0}")
    } else {
        format!("{r}")
    }
}

/// The rows as a markdown table in the seed's shape: a row per client count, the modes'
/// figures joined by `/` in each cell (`guarded/legacy`), empty for a mode that stopped.
pub fn markdown(rows: &[OverloadRow]) -> String {
    let mut modes: Vec<&str> = Vec::new();
    for r in rows {
        if !modes.contains(&r.mode.as_str()) {
            modes.push(&r.mode);
        }
    }
    let mut levels: Vec<usize> = Vec::new();
    for r in rows {
        if !levels.contains(&r.clients) {
            levels.push(r.clients);
        }
    }
    let find =
        |mode: &str, clients: usize| rows.iter().find(|r| r.mode == mode && r.clients == clients);
    let cell = |clients: usize, f: &dyn Fn(&OverloadRow) -> String| {
        modes
            .iter()
            .map(|m| find(m, clients).map(f).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("/")
    };
    let header: Vec<String> = [
        format!("clients ({})", modes.join("/")),
        "error rate (%)".into(),
        "Min Throughput".into(),
        "Median Throughput".into(),
        "Max Throughput".into(),
        "50th percentile service time(ms)".into(),
        "90th percentile service time(ms)".into(),
        "100th percentile service time(ms)".into(),
        "OOM nodes".into(),
        "health".into(),
    ]
    .into();
    let mut table: Vec<Vec<String>> = Vec::new();
    for &c in &levels {
        table.push(vec![
            c.to_string(),
            cell(c, &|r| num(r.error_rate)),
            cell(c, &|r| num(r.throughput_min)),
            cell(c, &|r| num(r.throughput_median)),
            cell(c, &|r| num(r.throughput_max)),
            cell(c, &|r| num(r.p50_ms)),
            cell(c, &|r| num(r.p90_ms)),
            cell(c, &|r| num(r.p100_ms)),
            cell(c, &|r| r.oom_nodes.to_string()),
            cell(c, &|r| r.health.clone()),
        ]);
    }
    // Columns padded to their widest cell, so that the table reads in a terminal too;
    // figures right-aligned, the health column left-aligned.
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            table
                .iter()
                .map(|r| r[i].chars().count())
                .chain([header[i].chars().count(), 3])
                .max()
                .unwrap_or(3)
        })
        .collect();
    let last = header.len() - 1;
    let line = |cells: &[String]| {
        let padded: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if i == last {
                    format!("{c:<w$}", w = widths[i])
                } else {
                    format!("{c:>w$}", w = widths[i])
                }
            })
            .collect();
        format!("| {} |", padded.join(" | "))
    };
    let mut out = String::new();
    let _ = writeln!(out, "{}", line(&header));
    let rule: Vec<String> = widths
        .iter()
        .enumerate()
        .map(|(i, w)| {
            if i == last {
                "-".repeat(*w)
            } else {
                format!("{}:", "-".repeat(w - 1))
            }
        })
        .collect();
    let _ = writeln!(out, "| {} |", rule.join(" | "));
    for r in &table {
        let _ = writeln!(out, "{}", line(r));
    }
    out
}

/// Chart files written to `--out`.
pub const CHARTS: [&str; 6] = [
    "error_rate.svg",
    "throughput_median.svg",
    "throughput_max.svg",
    "latency_p90.svg",
    "latency_p100.svg",
    "breaker.svg",
];

/// The charts' caption: what ran (nodes, memory per node, data sizes), where and when.
pub fn caption(args: &OverloadArgs) -> String {
    format!(
        "{} data nodes, {} MiB per node, customers {} rows joined with orders {} rows, \
         {} partitions, {} s per level; {}",
        args.nodes,
        num(args.node_memory as f64 / (1024.0 * 1024.0)),
        thousands(CUSTOMERS),
        thousands(ORDERS),
        PARTITIONS,
        num(args.seconds),
        super::header::Header::current()
    )
}

/// `n` with a comma between each group of three digits.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}

/// Writes the five SVG charts, `results.jsonl` and `table.md` to `dir`.
pub fn write_outputs(dir: &Path, rows: &[OverloadRow]) -> Result<(), String> {
    let budget = rows.iter().map(|r| r.memory_budget).max().unwrap_or(0);
    let caption = format!(
        "{} MiB per node; {}",
        num(budget as f64 / (1024.0 * 1024.0)),
        super::header::Header::current()
    );
    write_outputs_captioned(dir, rows, &caption)
}

/// [`write_outputs`] with `caption` under every chart.
pub fn write_outputs_captioned(
    dir: &Path,
    rows: &[OverloadRow],
    caption: &str,
) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    type Metric = fn(&OverloadRow) -> f64;
    let charts: [(&str, &str, &str, Metric); 5] = [
        (CHARTS[0], "SQL request error rate", "error rate (%)", |r| {
            r.error_rate
        }),
        (
            CHARTS[1],
            "SQL request median throughput",
            "ops/s (median of 1 s windows)",
            |r| r.throughput_median,
        ),
        (
            CHARTS[2],
            "SQL request max throughput",
            "ops/s (max of 1 s windows)",
            |r| r.throughput_max,
        ),
        (
            CHARTS[3],
            "SQL request latency (90th percentile)",
            "service time (ms)",
            |r| r.p90_ms,
        ),
        (
            CHARTS[4],
            "SQL request latency (100th percentile)",
            "service time (ms)",
            |r| r.p100_ms,
        ),
    ];
    let mut modes: Vec<&str> = Vec::new();
    for r in rows {
        if !modes.contains(&r.mode.as_str()) {
            modes.push(&r.mode);
        }
    }
    let oom = rows
        .iter()
        .find(|r| r.mode == mode_name(JoinMode::Legacy) && r.oom_nodes > 0);
    let extras = chart::Extras {
        log_x: true,
        marker: oom.map(|r| {
            (
                r.clients as f64,
                format!("legacy out of memory ({} clients)", r.clients),
            )
        }),
        caption: caption.to_string(),
    };
    for (file, title, y_label, metric) in charts {
        let series: Vec<Series> = modes
            .iter()
            .enumerate()
            .map(|(i, m)| Series {
                name: m.to_string(),
                color: i,
                points: rows
                    .iter()
                    .filter(|r| r.mode == *m)
                    .map(|r| (r.clients as f64, metric(r)))
                    .collect(),
            })
            .collect();
        chart::line_chart_with(
            &dir.join(file),
            title,
            "clients (log scale)",
            y_label,
            &series,
            &extras,
        )?;
    }
    // What the breaker did per level: rejections, spills and kills of each mode that has a
    // breaker (Legacy has none).
    type Count = fn(&OverloadRow) -> u64;
    let actions: [(&str, Count); 3] = [
        ("rejections", |r| r.rejections),
        ("spills", |r| r.spills),
        ("kills", |r| r.kills),
    ];
    let guarded = modes.iter().filter(|m| **m != mode_name(JoinMode::Legacy));
    let series: Vec<Series> = guarded
        .flat_map(|m| actions.iter().map(move |a| (m, a)))
        .enumerate()
        .map(|(i, (m, (action, count)))| Series {
            name: format!("{m} {action}"),
            color: i,
            points: rows
                .iter()
                .filter(|r| r.mode == *m)
                .map(|r| (r.clients as f64, count(r) as f64))
                .collect(),
        })
        .collect();
    chart::line_chart_with(
        &dir.join(CHARTS[5]),
        "Memory breaker: rejections, spills and kills",
        "clients (log scale)",
        "count per level",
        &series,
        &extras,
    )?;
    let mut jsonl = String::new();
    for r in rows {
        jsonl.push_str(&serde_json::to_string(r).map_err(|e| e.to_string())?);
        jsonl.push('\n');
    }
    let write = |name: &str, text: &str| {
        std::fs::write(dir.join(name), text)
            .map_err(|e| format!("cannot write {}: {e}", dir.join(name).display()))
    };
    write("results.jsonl", &jsonl)?;
    write("table.md", &markdown(rows))?;
    Ok(())
}

/// Runs `weir bench overload` and prints its output.
pub fn main(args: &OverloadArgs) -> Result<(), String> {
    let rows = run(args)?;
    write_outputs_captioned(&args.out, &rows, &caption(args))?;
    if args.json {
        for r in &rows {
            println!("{}", serde_json::to_string(r).map_err(|e| e.to_string())?);
        }
    } else {
        print!("{}", markdown(&rows));
        println!(
            "\ncharts, results.jsonl and table.md in {}",
            args.out.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(end_ms: u64, ok: bool) -> Sample {
        Sample {
            end: Duration::from_millis(end_ms),
            latency: Duration::from_millis(1),
            ok,
        }
    }

    #[test]
    fn windows_count_successes_per_second() {
        let s = [
            sample(10, true),
            sample(20, true),
            sample(30, false),
            sample(300, true),
            sample(500, true),
        ];
        // 2 s of requests → two windows of 1 s; the last request falls in the last one.
        let s2 = [s[0], s[1], s[2], sample(1300, true), sample(2000, true)];
        assert_eq!(window_throughputs(&s2), vec![2.0, 2.0]);
        // Shorter than a window: one window as long as the requests took.
        assert_eq!(window_throughputs(&s[..2]), vec![100.0]);
        assert_eq!(window_throughputs(&s), vec![8.0]);
        assert_eq!(window_throughputs(&[]), vec![0.0]);
    }

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(
            [0, 999, 1000, 20_000, 1_234_567].map(thousands),
            ["0", "999", "1,000", "20,000", "1,234,567"]
        );
    }

    #[test]
    fn markdown_pairs_modes_and_leaves_stopped_levels_empty() {
        let row = |mode: &str, clients: usize, err: f64| OverloadRow {
            mode: mode.into(),
            clients,
            requests: 10,
            errors: 0,
            error_rate: err,
            throughput_min: 1.0,
            throughput_median: 2.5,
            throughput_max: 3.0,
            p50_ms: 4.0,
            p90_ms: 5.0,
            p100_ms: 6.0,
            oom_nodes: 0,
            health: "green".into(),
            trips: 0,
            rejections: 0,
            kills: 0,
            spills: 0,
            retries: 0,
            memory_peak: 0,
            memory_budget: 0,
        };
        let rows = [
            row("guarded", 1, 0.0),
            row("guarded", 2, 1.5),
            row("legacy", 1, 0.0),
        ];
        let md = markdown(&rows);
        let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        let flat = squash(&md);
        assert!(flat.contains("| clients (guarded/legacy) |"), "{md}");
        assert!(flat.contains("| 1 | 0/0 | 1/1 | 2.5/2.5 |"), "{md}");
        assert!(flat.contains("| 2 | 1.5/ | 1/ |"), "{md}");
        // Padded: every line as long as the first.
        let lens: Vec<usize> = md.lines().map(|l| l.chars().count()).collect();
        assert!(lens.iter().all(|&l| l == lens[0]), "{md}");
    }
}
