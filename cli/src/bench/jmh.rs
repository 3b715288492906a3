//! `weir bench jmh`: the Ignite experiment (IGNITE-16315's `JmhSqlBenchmark`) on weir.
//!
//! 3 data nodes plus the client node, `Item` with 100,000 rows in 1024 partitions, the nine
//! seed queries and a primary-key lookup with a fresh uniform random key per call, `threads` client threads each in a
//! closed loop. Per query and protocol: 3 warm-up and 3 measured iterations of `seconds`
//! each, as JMH runs them; the score is the mean ops/s of the measured iterations with its
//! 99.9% confidence half-width.

use super::score::{JmhRow, CONFIDENCE, MEASURED_ITERATIONS, WARMUP_ITERATIONS};
use super::stats;
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::demo::{self, SeedQuery};
use crate::{Cluster, Protocol, Value};

/// `querySumIndexed`'s answer on 100,000 rows: the sum of 0..100000.
pub const EXPECTED_SUM: i64 = 4_999_950_000;

/// Which message workflows to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProtocolChoice {
    /// The lean workflow (2 messages per remote fragment at best).
    Lean,
    /// The older 6-message workflow.
    Legacy,
    /// Both, lean first.
    Both,
}

impl ProtocolChoice {
    fn protocols(self) -> Vec<Protocol> {
        match self {
            ProtocolChoice::Lean => vec![Protocol::Lean],
            ProtocolChoice::Legacy => vec![Protocol::Legacy],
            ProtocolChoice::Both => vec![Protocol::Lean, Protocol::Legacy],
        }
    }
}

/// The long help of `weir bench jmh`.
pub const JMH_ABOUT: &str =
    "The Ignite JMH experiment (IGNITE-16315): 3 data nodes plus a client node, \
`Item` with 100,000 rows in 1024 partitions, the nine seed queries plus a primary-key lookup \
(queryPrimaryKey) with a fresh uniform random key in 0..100000 per call, then two floors: \
floorIndexLookup (the fldIdx lookup done directly on one node's storage) and floorPingPong \
(a round trip between two threads), with each row's p50 in round trips. Per query and protocol: 3 warm-up and 3 measured iterations of \
--seconds each, --threads client threads each in a closed loop. Reports ops/s ± the 99.9% \
confidence half-width (Student's t over the measured iterations, as JMH does), p50 and p99 \
latency over all measured calls, and messages and bytes between nodes per query. Every call \
checks its row count (and querySumIndexed its sum) and the command fails on a mismatch.";

/// Flags of `weir bench jmh`.
#[derive(Debug, Clone, Args)]
pub struct JmhArgs {
    /// Seconds per iteration (3 warm-up + 3 measured iterations per query and protocol).
    #[arg(long, default_value_t = 1.0)]
    pub seconds: f64,
    /// Message workflow(s) to measure.
    #[arg(long, value_enum, default_value_t = ProtocolChoice::Both)]
    pub protocol: ProtocolChoice,
    /// Client threads, each in a closed loop.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Run only this case (e.g. querySimpleUniqueIndexed).
    #[arg(long)]
    pub query: Option<String>,
    /// One JSON object per query and protocol on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Seed of the parameter generators.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Run against data nodes in other processes (`weir node`) at these addresses, node 0
    /// first, instead of a cluster in this process (`Item` is dropped and loaded again).
    #[arg(long, value_delimiter = ',', requires = "secret_file")]
    pub connect: Vec<String>,
    /// The cluster's shared secret, as `weir node --secret-file` reads it (with `--connect`).
    #[arg(long, requires = "connect")]
    pub secret_file: Option<std::path::PathBuf>,
    /// Idle spin and actor threads of the cluster's nodes.
    #[command(flatten)]
    pub runtime: super::runtime_args::RuntimeArgs,
}

impl JmhArgs {
    /// The cluster to measure under `protocol`: 3 data nodes in process, or the nodes of
    /// `--connect`.
    fn cluster(&self, protocol: Protocol) -> Result<Cluster, String> {
        let builder = self
            .runtime
            .apply(Cluster::builder().nodes(3).protocol(protocol));
        let builder = match (&self.connect[..], &self.secret_file) {
            ([], _) => builder,
            (addrs, Some(file)) => {
                let secret = weir_runtime::wire::framing::Secret::from_file(file)?;
                builder.connect(addrs).secret(secret)
            }
            (_, None) => return Err("--connect needs --secret-file".into()),
        };
        let cluster = builder.build().map_err(|e| e.to_string())?;
        if cluster.is_remote() {
            cluster
                .execute("DROP TABLE IF EXISTS Item")
                .map_err(|e| e.to_string())?;
        }
        Ok(cluster)
    }
}

/// A protocol's name as printed.
pub fn protocol_name(p: Protocol) -> &'static str {
    match p {
        Protocol::Lean => "lean",
        Protocol::Legacy => "legacy",
    }
}

/// The cases `--query` selects (all of [`demo::bench_queries`] without it).
pub fn select_queries(name: Option<&str>) -> Result<Vec<SeedQuery>, String> {
    let all = demo::bench_queries();
    match name {
        None => Ok(all),
        Some(n) => {
            let n = n.strip_prefix("JmhSqlBenchmark.").unwrap_or(n);
            all.iter()
                .find(|q| q.name.eq_ignore_ascii_case(n))
                .map(|q| vec![*q])
                .ok_or_else(|| {
                    let names: Vec<&str> = all.iter().map(|q| q.name).collect();
                    format!("unknown query '{n}'; the cases are {}", names.join(", "))
                })
        }
    }
}

/// What one call cost.
struct Call {
    latency: Duration,
    messages: u64,
    bytes: u64,
}

/// Runs one call and checks its answer as the original benchmark does.
fn call(cluster: &Cluster, q: &SeedQuery, key: i64, protocol: Protocol) -> Result<Call, String> {
    let params = q.params(key);
    let t = Instant::now();
    let r = cluster.query(q.sql, &params).map_err(|e| {
        format!(
            "{} ({}) with {params:?} failed: {e}",
            q.name,
            protocol_name(protocol)
        )
    })?;
    let latency = t.elapsed();
    let expected = q.expected_rows(demo::ITEM_ROWS);
    if r.num_rows() != expected {
        return Err(format!(
            "{} ({}) with {params:?} returned {} rows, expected {expected}",
            q.name,
            protocol_name(protocol),
            r.num_rows()
        ));
    }
    if q.name == "querySumIndexed" {
        let rows = r.rows();
        let ok = match rows.first().and_then(|row| row.first()) {
            Some(Value::Int(s)) => *s == EXPECTED_SUM,
            Some(Value::Float(s)) => *s == EXPECTED_SUM as f64,
            _ => false,
        };
        if !ok {
            return Err(format!(
                "querySumIndexed ({}) returned {rows:?}, expected {EXPECTED_SUM}",
                protocol_name(protocol)
            ));
        }
    }
    Ok(Call {
        latency,
        messages: r.stats.messages.total,
        bytes: r.stats.messages.bytes,
    })
}

/// One iteration's figures.
#[derive(Default)]
struct Iteration {
    ops: u64,
    elapsed: Duration,
    latencies_us: Vec<f64>,
    messages: u64,
    bytes: u64,
}

/// Runs `rngs.len()` closed-loop client threads for `seconds`. Every thread completes at
/// least one call; calls started before the deadline finish and count.
fn iteration(
    cluster: &Cluster,
    q: &SeedQuery,
    protocol: Protocol,
    seconds: f64,
    rngs: &mut [StdRng],
) -> Result<Iteration, String> {
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(seconds.max(0.0));
    let failed = AtomicBool::new(false);
    let results: Vec<Result<Iteration, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = rngs
            .iter_mut()
            .map(|rng| {
                let failed = &failed;
                s.spawn(move || {
                    let mut it = Iteration::default();
                    loop {
                        let key = rng.random_range(0..demo::ITEM_ROWS as i64);
                        match call(cluster, q, key, protocol) {
                            Ok(c) => {
                                it.ops += 1;
                                it.latencies_us.push(c.latency.as_secs_f64() * 1e6);
                                it.messages += c.messages;
                                it.bytes += c.bytes;
                            }
                            Err(e) => {
                                failed.store(true, Ordering::SeqCst);
                                return Err(e);
                            }
                        }
                        if Instant::now() >= deadline || failed.load(Ordering::SeqCst) {
                            return Ok(it);
                        }
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a client thread panicked".into()))
            })
            .collect()
    });
    let elapsed = start.elapsed();
    let mut total = Iteration {
        elapsed,
        ..Default::default()
    };
    for r in results {
        let it = r?;
        total.ops += it.ops;
        total.latencies_us.extend(it.latencies_us);
        total.messages += it.messages;
        total.bytes += it.bytes;
    }
    Ok(total)
}

fn progress(total: u64) -> ProgressBar {
    let pb = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    pb.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] [{bar:30}] {pos}/{len} iterations  {msg}",
        )
        .expect("a valid template")
        .progress_chars("=> "),
    );
    pb.enable_steady_tick(Duration::from_millis(200));
    pb
}

/// Runs the benchmark and returns a row per query and protocol (in query order, protocols
/// in the order given).
pub fn run(args: &JmhArgs) -> Result<Vec<JmhRow>, String> {
    if !(args.seconds.is_finite() && args.seconds > 0.0) {
        return Err(format!(
            "--seconds must be a positive number, got {}",
            args.seconds
        ));
    }
    if args.threads == 0 {
        return Err("--threads must be at least 1".into());
    }
    let floor_only = args
        .query
        .as_deref()
        .filter(|q| q.starts_with("floor"))
        .map(str::to_string);
    let queries = match &floor_only {
        Some(_) => Vec::new(),
        None => select_queries(args.query.as_deref())?,
    };
    let protocols = args.protocol.protocols();
    let per_case = (WARMUP_ITERATIONS + MEASURED_ITERATIONS) as u64;
    let pb = progress(per_case * (queries.len() * protocols.len()) as u64);
    let mut rows: Vec<(usize, usize, JmhRow)> = Vec::new();
    for (pi, &protocol) in protocols.iter().enumerate() {
        let pname = protocol_name(protocol);
        pb.set_message(format!("{pname}: loading Item"));
        let cluster = args.cluster(protocol)?;
        demo::load_item(&cluster, demo::ITEM_ROWS).map_err(|e| e.to_string())?;
        for (qi, q) in queries.iter().enumerate() {
            let mut rngs: Vec<StdRng> = (0..args.threads)
                .map(|t| {
                    StdRng::seed_from_u64(
                        args.seed
                            .wrapping_add((qi as u64) << 32)
                            .wrapping_add(t as u64),
                    )
                })
                .collect();
            let mut scores = Vec::with_capacity(MEASURED_ITERATIONS);
            let mut latencies = Vec::new();
            let (mut calls, mut messages, mut bytes) = (0u64, 0u64, 0u64);
            for i in 0..WARMUP_ITERATIONS + MEASURED_ITERATIONS {
                let phase = if i < WARMUP_ITERATIONS {
                    format!("warm-up {}", i + 1)
                } else {
                    format!("iteration {}", i - WARMUP_ITERATIONS + 1)
                };
                pb.set_message(format!("{} ({pname}) {phase}", q.name));
                let it = iteration(&cluster, q, protocol, args.seconds, &mut rngs)?;
                if i >= WARMUP_ITERATIONS {
                    scores.push(it.ops as f64 / it.elapsed.as_secs_f64());
                    latencies.extend(it.latencies_us);
                    calls += it.ops;
                    messages += it.messages;
                    bytes += it.bytes;
                }
                pb.inc(1);
            }
            latencies.sort_by(f64::total_cmp);
            let row = JmhRow {
                case: q.name.to_string(),
                protocol: pname.to_string(),
                ops_per_s: stats::mean(&scores),
                ops_error: stats::confidence_half_width(&scores, CONFIDENCE),
                p50_us: stats::percentile(&latencies, 0.50),
                p99_us: stats::percentile(&latencies, 0.99),
                messages_per_query: messages as f64 / calls.max(1) as f64,
                bytes_per_query: bytes as f64 / calls.max(1) as f64,
                rows: q.expected_rows(demo::ITEM_ROWS),
            };
            rows.push((qi, pi, row));
        }
        cluster.shutdown();
    }
    pb.finish_and_clear();
    rows.sort_by_key(|(qi, pi, _)| (*qi, *pi));
    let mut rows: Vec<JmhRow> = rows.into_iter().map(|(_, _, r)| r).collect();
    if args.query.is_none() || floor_only.is_some() {
        let wanted = |name: &str| {
            floor_only
                .as_deref()
                .is_none_or(|q| q.eq_ignore_ascii_case(name))
        };
        if wanted("floorIndexLookup") {
            rows.push(super::floor::index_lookup(args.seconds, args.seed)?);
        }
        if wanted("floorPingPong") {
            rows.push(super::floor::ping_pong(args.seconds)?);
        }
    }
    if rows.is_empty() {
        return Err(format!(
            "unknown query '{}'; the floors are floorIndexLookup, floorPingPong",
            args.query.as_deref().unwrap_or_default()
        ));
    }
    Ok(rows)
}

/// The rows as a JMH-style text table. With the `floorPingPong` row present, the last column
/// gives each row's median latency in thread round trips.
pub fn table(rows: &[JmhRow]) -> String {
    let mut out = String::new();
    let w = rows.iter().map(|r| r.case.len()).max().unwrap_or(9).max(9);
    let rtt = rows
        .iter()
        .find(|r| r.case == "floorPingPong")
        .map(|r| r.p50_us)
        .filter(|&p| p > 0.0);
    let _ = writeln!(
        out,
        "{:<w$}  {:<8} {:>4} {:>12}   {:>10}  {:<5} {:>10} {:>10} {:>10} {:>12} {:>7} {:>9}",
        "Benchmark",
        "protocol",
        "Cnt",
        "Score",
        "Error",
        "Units",
        "p50 µs",
        "p99 µs",
        "msgs/query",
        "bytes/query",
        "rows",
        "p50/rtt",
    );
    for r in rows {
        let trips = rtt.map_or("-".to_string(), |t| format!("{:.1}", r.p50_us / t));
        let _ = writeln!(
            out,
            "{:<w$}  {:<8} {:>4} {:>12.3} ± {:>10.3}  {:<5} {:>10.1} {:>10.1} {:>10.1} {:>12.1} {:>7} {:>9}",
            r.case,
            r.protocol,
            MEASURED_ITERATIONS,
            r.ops_per_s,
            r.ops_error,
            "ops/s",
            r.p50_us,
            r.p99_us,
            r.messages_per_query,
            r.bytes_per_query,
            r.rows,
            trips,
        );
    }
    out
}

/// Runs `weir bench jmh` and prints its output.
pub fn main(args: &JmhArgs) -> Result<(), String> {
    let rows = run(args)?;
    let header = super::header::Header::current();
    if args.json {
        print!("{}", header.json_lines(&rows)?);
    } else {
        println!("{header}");
        print!("{}", table(&rows));
    }
    Ok(())
}
