//! The `weir` command: run the demo, run one SQL statement against the demo data, or run the
//! benchmarks.

use clap::{Parser, Subcommand, ValueEnum};
use std::process::ExitCode;
use std::time::Instant;
use weir_cli::demo::{self, SeedParam, JOIN_QUERY, SEED_QUERIES};
use weir_cli::{format, Cluster, Protocol, Value};

#[derive(Parser)]
#[command(
    name = "weir",
    version,
    about = "An actor-based SQL dataflow runtime on a simulated cluster"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start a cluster, load the demo data and run the seed queries and a join.
    Demo {
        /// Data nodes.
        #[arg(long, default_value_t = 3)]
        nodes: usize,
        /// Rows of the `orders` table (the join's probe side).
        #[arg(long, default_value_t = 1_000_000)]
        orders: usize,
        /// Seed of the data and parameter generators.
        #[arg(long, default_value_t = 42)]
        seed: u64,
    },
    /// Run one SQL statement against the demo data.
    Sql {
        /// Data nodes.
        #[arg(long, default_value_t = 3)]
        nodes: usize,
        /// Output format.
        #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
        format: OutputFormat,
        /// Message workflow.
        #[arg(long, value_enum, default_value_t = ProtocolArg::Lean)]
        protocol: ProtocolArg,
        /// Print the query's messages by type, their total and bytes.
        #[arg(long)]
        stats: bool,
        /// Rows of the `orders` table loaded with the demo data.
        #[arg(long, default_value_t = 1_000_000)]
        orders: usize,
        /// Parameter values for `?` / `$n` placeholders (integers, decimals, or text).
        #[arg(long = "param", short = 'p')]
        params: Vec<String>,
        /// The statement.
        sql: String,
    },
    /// Run the benchmarks: the seed experiments `jmh` (Ignite) and `overload` (OpenSearch),
    /// the soak, TPC-H, and a hash join against a hand-written one.
    Bench {
        #[command(subcommand)]
        command: weir_cli::bench::BenchCommand,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum OutputFormat {
    Table,
    Json,
}

#[derive(Clone, Copy, ValueEnum)]
enum ProtocolArg {
    Lean,
    Legacy,
}

impl From<ProtocolArg> for Protocol {
    fn from(p: ProtocolArg) -> Self {
        match p {
            ProtocolArg::Lean => Protocol::Lean,
            ProtocolArg::Legacy => Protocol::Legacy,
        }
    }
}

/// A `--param` value: an integer, a numeral with a point as an exact DECIMAL (as in SQL), a
/// DOUBLE with an exponent, `null`, or text (text also fills DATE and TIMESTAMP parameters).
fn parse_param(s: &str) -> Value {
    if let Ok(i) = s.parse::<i64>() {
        Value::Int(i)
    } else if let Some((v, _, scale)) = weir_operators::decimal::parse_literal(s) {
        Value::Decimal(v, scale)
    } else if let Ok(f) = s.parse::<f64>() {
        Value::Float(f)
    } else if s.eq_ignore_ascii_case("null") {
        Value::Null
    } else {
        Value::Str(s.to_string())
    }
}

fn load_demo(cluster: &Cluster, orders: usize, seed: u64) -> weir::Result<()> {
    demo::load_item(cluster, demo::ITEM_ROWS)?;
    demo::load_join_tables(cluster, 100_000, orders, seed)
}

fn run_demo(nodes: usize, orders: usize, seed: u64) -> Result<(), String> {
    let cluster = Cluster::builder()
        .nodes(nodes)
        .build()
        .map_err(|e| e.to_string())?;
    let t = Instant::now();
    load_demo(&cluster, orders, seed).map_err(|e| e.to_string())?;
    println!(
        "loaded Item ({} rows), customers (100000 rows), orders ({orders} rows) on {nodes} nodes in {:.2?}",
        demo::ITEM_ROWS,
        t.elapsed()
    );
    println!("{:<28} {:>8} {:>12}", "query", "rows", "time");
    let key = (seed as i64 * 7919) % demo::ITEM_ROWS as i64;
    for q in SEED_QUERIES {
        let params = q.params(key);
        let t = Instant::now();
        let r = cluster
            .query(q.sql, &params)
            .map_err(|e| format!("{}: {e}", q.name))?;
        let took = t.elapsed();
        let expected = q.expected_rows(demo::ITEM_ROWS);
        if r.num_rows() != expected {
            return Err(format!(
                "{} returned {} rows, expected {expected}",
                q.name,
                r.num_rows()
            ));
        }
        let shown = match q.param {
            SeedParam::None => String::new(),
            _ => format!(" (param {})", params[0]),
        };
        println!("{:<28} {:>8} {:>12.2?}{shown}", q.name, r.num_rows(), took);
    }
    let t = Instant::now();
    let r = cluster.query(JOIN_QUERY, &[]).map_err(|e| e.to_string())?;
    println!(
        "{:<28} {:>8} {:>12.2?}",
        "joinGroupBy",
        r.num_rows(),
        t.elapsed()
    );
    println!("{}", format::table(&r));
    let s = cluster.stats();
    println!(
        "messages between nodes: {} ({} bytes); plan cache {} hits / {} misses",
        s.messages.total, s.messages.bytes, s.plan_cache_hits, s.plan_cache_misses
    );
    cluster.shutdown();
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn run_sql(
    nodes: usize,
    format: OutputFormat,
    protocol: ProtocolArg,
    stats: bool,
    orders: usize,
    params: &[String],
    sql: &str,
) -> Result<(), String> {
    let cluster = Cluster::builder()
        .nodes(nodes)
        .protocol(protocol.into())
        .build()
        .map_err(|e| e.to_string())?;
    load_demo(&cluster, orders, 42).map_err(|e| e.to_string())?;
    let params: Vec<Value> = params.iter().map(|p| parse_param(p)).collect();
    let result = cluster.query(sql, &params).map_err(|e| e.to_string())?;
    let messages = &result.stats.messages;
    match format {
        OutputFormat::Table => {
            println!("{}", format::table(&result));
            println!("({} rows)", result.num_rows());
            if stats {
                print!("{}", format::stats_text(messages));
            }
        }
        OutputFormat::Json => {
            println!("{}", format::json(&result, stats.then_some(messages)));
        }
    }
    cluster.shutdown();
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Demo {
            nodes,
            orders,
            seed,
        } => run_demo(nodes, orders, seed),
        Command::Sql {
            nodes,
            format,
            protocol,
            stats,
            orders,
            params,
            sql,
        } => run_sql(nodes, format, protocol, stats, orders, &params, &sql),
        Command::Bench { command } => weir_cli::bench::run(&command),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
