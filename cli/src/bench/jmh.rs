//! `weir bench jmh`: the Ignite experiment (IGNITE-16315's `JmhSqlBenchmark`) on weir.
//!
//! 3 data nodes plus the client node, `Item` with 100,000 rows in 1024 partitions, the nine
//! seed queries and a primary-key lookup with a fresh uniform random key per call, `threads` client threads each in a
//! closed loop. Per query and protocol: 3 warm-up and 3 measured iterations of `seconds`
//! each, as JMH runs them; the score is the mean ops/s of the measured iterations with its
//! 99.9% confidence half-width.

use super::closed_loop::{run_case, Answer, CaseRun, Iteration, SeedClient};
use super::pg_client::{self, PgClient};
use super::score::{JmhRow, CONFIDENCE, MEASURED_ITERATIONS, WARMUP_ITERATIONS};
use super::stats;
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;
use weir::ServePostgres;

use crate::demo::{self, SeedQuery};
use crate::{Cluster, Protocol, Value};

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
checks its row count (and querySumIndexed its sum) and the command fails on a mismatch. \
With --postgres CONNECTION the cases also run through the PostgreSQL protocol (tokio-postgres \
prepared statements, a connection per client thread): against weir serve started in this \
process (protocol serve) and against that server (protocol postgres), which gets the same \
Item table and indexes; messages and bytes between nodes are not seen there (-).";

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
    /// Also run the cases through the PostgreSQL protocol (`tokio-postgres` prepared
    /// statements, a connection per client thread): against `weir serve` started in this
    /// process on the cluster (protocol `serve`), and against the server of this connection
    /// string (protocol `postgres`; e.g. `host=127.0.0.1 port=5432 user=postgres`), where
    /// `Item` is dropped, created with the same indexes, filled and analyzed.
    #[arg(long, value_name = "CONNECTION")]
    pub postgres: Option<String>,
    /// Idle spin and actor threads of the cluster's nodes.
    #[command(flatten)]
    pub runtime: crate::runtime_args::RuntimeArgs,
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

impl JmhArgs {
    /// Makes `target` ready: its cluster or server built and `Item` loaded.
    fn ready(&self, target: &Target) -> Result<Ready, String> {
        match target {
            Target::InProcess(protocol) => {
                let cluster = self.cluster(*protocol)?;
                demo::load_item(&cluster, demo::ITEM_ROWS).map_err(|e| e.to_string())?;
                Ok(Ready::InProcess(cluster))
            }
            Target::Serve => {
                let cluster = Arc::new(self.cluster(Protocol::Lean)?);
                demo::load_item(&cluster, demo::ITEM_ROWS).map_err(|e| e.to_string())?;
                let server = cluster
                    .clone()
                    .serve_postgres("127.0.0.1:0")
                    .map_err(|e| format!("cannot start weir serve: {e}"))?;
                let mut config = tokio_postgres::Config::new();
                config
                    .host("127.0.0.1")
                    .port(server.local_addr().port())
                    .user("weir");
                Ok(Ready::Protocol {
                    config: Box::new(config),
                    server: Some((server, cluster)),
                    version: None,
                })
            }
            Target::Postgres(config) => {
                let info = pg_client::load_item(config)?;
                if info.is_weir {
                    eprintln!("note: the --postgres server is weir ({})", info.version);
                }
                Ok(Ready::Protocol {
                    config: config.clone(),
                    server: None,
                    version: Some(info.version),
                })
            }
        }
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

/// A client of an in-process cluster: `Cluster::query` on the calling thread.
struct InProcess<'a> {
    cluster: &'a Cluster,
    query: &'a SeedQuery,
}

impl SeedClient for InProcess<'_> {
    fn call(&mut self, key: i64) -> Result<Answer, String> {
        let params = self.query.params(key);
        let r = self
            .cluster
            .query(self.query.sql, &params)
            .map_err(|e| format!("with {params:?}: {e}"))?;
        let first_number = match r.rows().first().and_then(|row| row.first()) {
            Some(Value::Int(v)) => Some(*v as f64),
            Some(Value::Float(v)) => Some(*v),
            _ => None,
        };
        Ok(Answer {
            rows: r.num_rows(),
            first_number,
            messages: Some(r.stats.messages.total),
            bytes: Some(r.stats.messages.bytes),
        })
    }
}

/// What a case is measured against.
enum Target {
    /// A cluster in this process (or of `--connect`), queried in process.
    InProcess(Protocol),
    /// `weir serve` in this process on that cluster, through `tokio-postgres`.
    Serve,
    /// The PostgreSQL server of `--postgres`, through `tokio-postgres`.
    Postgres(Box<tokio_postgres::Config>),
}

impl Target {
    /// The name printed in the protocol column.
    fn name(&self) -> &'static str {
        match self {
            Target::InProcess(p) => protocol_name(*p),
            Target::Serve => "serve",
            Target::Postgres(_) => "postgres",
        }
    }
}

/// A target made ready: the table loaded, the clients' way in known.
enum Ready {
    InProcess(Cluster),
    Protocol {
        config: Box<tokio_postgres::Config>,
        server: Option<(weir::postgres::PostgresServer, Arc<Cluster>)>,
        /// What a server not started here says it is.
        version: Option<String>,
    },
}

impl Ready {
    fn close(self) {
        match self {
            Ready::InProcess(cluster) => cluster.shutdown(),
            Ready::Protocol { server, .. } => {
                if let Some((server, cluster)) = server {
                    server.shutdown();
                    if let Ok(cluster) = Arc::try_unwrap(cluster) {
                        cluster.shutdown();
                    }
                }
            }
        }
    }
}

/// A case's row from its measured iterations.
fn score(q: &SeedQuery, target: &str, measured: Vec<Iteration>) -> JmhRow {
    let scores: Vec<f64> = measured
        .iter()
        .map(|it| it.ops as f64 / it.elapsed.as_secs_f64())
        .collect();
    let calls: u64 = measured.iter().map(|it| it.ops).sum();
    let per_call = |total: Option<u64>| total.map_or(f64::NAN, |t| t as f64 / calls.max(1) as f64);
    let messages = measured.iter().map(|it| it.messages).sum::<Option<u64>>();
    let bytes = measured.iter().map(|it| it.bytes).sum::<Option<u64>>();
    let mut latencies: Vec<f64> = measured
        .into_iter()
        .flat_map(|it| it.latencies_us)
        .collect();
    latencies.sort_by(f64::total_cmp);
    JmhRow {
        case: q.name.to_string(),
        protocol: target.to_string(),
        ops_per_s: stats::mean(&scores),
        ops_error: stats::confidence_half_width(&scores, CONFIDENCE),
        p50_us: stats::percentile(&latencies, 0.50),
        p99_us: stats::percentile(&latencies, 0.99),
        messages_per_query: per_call(messages),
        bytes_per_query: per_call(bytes),
        rows: q.expected_rows(demo::ITEM_ROWS),
    }
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

/// What `weir bench jmh` measured.
pub struct JmhReport {
    /// A row per case and protocol (in case order, protocols in the order measured), then
    /// the floors.
    pub rows: Vec<JmhRow>,
    /// `version()` of the `--postgres` server, when there was one.
    pub postgres_version: Option<String>,
}

/// Runs the benchmark.
pub fn run(args: &JmhArgs) -> Result<JmhReport, String> {
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
    let mut targets: Vec<Target> = args
        .protocol
        .protocols()
        .into_iter()
        .map(Target::InProcess)
        .collect();
    if let Some(conn) = &args.postgres {
        let config = pg_client::parse_config(conn)?;
        targets.push(Target::Serve);
        targets.push(Target::Postgres(Box::new(config)));
    }
    let per_case = (WARMUP_ITERATIONS + MEASURED_ITERATIONS) as u64;
    let pb = progress(per_case * (queries.len() * targets.len()) as u64);
    let mut rows: Vec<(usize, usize, JmhRow)> = Vec::new();
    let mut postgres_version = None;
    for (ti, target) in targets.iter().enumerate() {
        let name = target.name();
        pb.set_message(format!("{name}: loading Item"));
        let ready = args.ready(target)?;
        if let Ready::Protocol {
            version: Some(v), ..
        } = &ready
        {
            postgres_version = Some(v.clone());
        }
        for (qi, q) in queries.iter().enumerate() {
            let run = CaseRun {
                query: q,
                case_index: qi,
                threads: args.threads,
                seconds: args.seconds,
                seed: args.seed,
            };
            let on_iteration = |i: usize| {
                let phase = if i < WARMUP_ITERATIONS {
                    format!("warm-up {}", i + 1)
                } else {
                    format!("iteration {}", i - WARMUP_ITERATIONS + 1)
                };
                if i > 0 {
                    pb.inc(1);
                }
                pb.set_message(format!("{} ({name}) {phase}", q.name));
            };
            let measured = match &ready {
                Ready::InProcess(cluster) => {
                    run_case(&run, |_| Ok(InProcess { cluster, query: q }), on_iteration)
                }
                Ready::Protocol { config, .. } => {
                    run_case(&run, |_| PgClient::new(config, q), on_iteration)
                }
            }
            .map_err(|e| format!("{} ({name}): {e}", q.name))?;
            pb.inc(1);
            rows.push((qi, ti, score(q, name, measured)));
        }
        ready.close();
    }
    pb.finish_and_clear();
    rows.sort_by_key(|(qi, ti, _)| (*qi, *ti));
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
    Ok(JmhReport {
        rows,
        postgres_version,
    })
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
        let known = |x: f64| {
            if x.is_nan() {
                "-".to_string()
            } else {
                format!("{x:.1}")
            }
        };
        let _ = writeln!(
            out,
            "{:<w$}  {:<8} {:>4} {:>12.3} ± {:>10.3}  {:<5} {:>10.1} {:>10.1} {:>10} {:>12} {:>7} {:>9}",
            r.case,
            r.protocol,
            MEASURED_ITERATIONS,
            r.ops_per_s,
            r.ops_error,
            "ops/s",
            r.p50_us,
            r.p99_us,
            known(r.messages_per_query),
            known(r.bytes_per_query),
            r.rows,
            trips,
        );
    }
    out
}

/// Runs `weir bench jmh` and prints its output.
pub fn main(args: &JmhArgs) -> Result<(), String> {
    let report = run(args)?;
    let header = super::header::Header::current();
    if args.json {
        print!("{}", header.json_lines(&report.rows)?);
    } else {
        println!("{header}");
        if let Some(v) = &report.postgres_version {
            println!("postgres: {v}");
        }
        print!("{}", table(&report.rows));
    }
    Ok(())
}
