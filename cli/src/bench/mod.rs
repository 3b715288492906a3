//! `weir bench`: the two seed experiments reproduced on weir's simulated cluster.
//!
//! - [`jmh`]: the Ignite JMH benchmark (IGNITE-16315): the nine `Item` queries, ops/s with
//!   JMH's 99.9% error, latency percentiles, messages and bytes per query, Lean against
//!   Legacy; with `--postgres`, also through the PostgreSQL protocol against `weir serve` and
//!   a PostgreSQL server ([`closed_loop`] runs a case's client threads, [`pg_client`] is the
//!   protocol's client).
//!
//! - [`overload`]: the OpenSearch hash join benchmark: closed-loop clients running a hash join
//!   against nodes with small memory budgets, Guarded (memory circuit breaker) against Legacy
//!   (nodes run out of memory), with a markdown table and SVG charts.
//!
//! - [`tpch`]: the 22 TPC-H queries on data generated in memory at a scale factor, with the
//!   answers checked against the TPC-H kit's at SF 1.
//!
//! - [`join`]: one equi-join on the cluster against a hand-written hashbrown join over the
//!   same columns, in probe rows per second.
//!
//! - [`durable`]: INSERT throughput with a data directory against SQLite, and recovery speed.
//!
//! Every benchmark's header (machine, cores, profile, date) comes from [`header`].
//! Statistics helpers live in [`stats`], the charts in [`chart`], the floors `jmh` prints
//! beside its cases in [`floor`], how a case and a floor are scored in [`score`], and the
//! runtime flags the benchmarks share in [`RuntimeArgs`].

use clap::Subcommand;

pub mod chart;
pub mod closed_loop;
pub mod durable;
pub mod floor;
pub mod header;
pub mod jmh;
pub mod join;
pub mod overload;
pub mod pg_client;
pub mod score;
pub mod stats;
pub mod tpch;

pub use crate::runtime_args::RuntimeArgs;

/// The `weir bench` subcommands.
#[derive(Debug, Clone, Subcommand)]
pub enum BenchCommand {
    /// The Ignite JMH experiment: the nine seed queries on `Item`, Lean vs Legacy protocol.
    #[command(long_about = jmh::JMH_ABOUT)]
    Jmh(jmh::JmhArgs),
    /// The OpenSearch hash join experiment: closed-loop clients against memory-limited nodes,
    /// Guarded (memory circuit breaker) vs Legacy join mode.
    #[command(long_about = overload::OVERLOAD_ABOUT)]
    Overload(overload::OverloadArgs),
    /// The soak: a long mix of seed queries, joins, cancellations, breaker trips and (with
    /// `--faults`) injected faults; checks the values of every answer and that nothing
    /// leaked. Exits non-zero when an answer was wrong, a query failed with an error the soak
    /// did not inject (with `--faults`, only a node down after rows reached the caller and
    /// timeouts are tolerated), memory stayed accounted or actors were left.
    Soak(SoakArgs),
    /// TPC-H: the eight tables generated in memory at a scale factor and the 22 queries, with
    /// rows, time and (at SF 1) whether each answer matches the TPC-H kit's.
    #[command(long_about = tpch::TPCH_ABOUT)]
    Tpch(tpch::TpchArgs),
    /// A hash join on weir against a hand-written hashbrown join over the same columns, in
    /// probe rows per second.
    #[command(long_about = join::JOIN_ABOUT)]
    Join(join::JoinArgs),
    /// What durability costs: INSERT throughput with a data directory (fsync, os) and without,
    /// against SQLite in WAL mode, and recovery speed from the log and from a checkpoint.
    #[command(long_about = durable::DURABLE_ABOUT)]
    Durable(durable::DurableArgs),
}

/// Flags of `weir bench soak`.
#[derive(Debug, Clone, clap::Args)]
pub struct SoakArgs {
    /// Queries in all.
    #[arg(long, default_value_t = 20_000)]
    pub queries: usize,
    /// Client threads.
    #[arg(long, default_value_t = 16)]
    pub concurrency: usize,
    /// Seed of the mix, the parameters and the faults.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Inject network faults (loss, delay, duplication, corruption) and node crashes.
    #[arg(long)]
    pub faults: bool,
}

fn soak(args: &SoakArgs) -> Result<(), String> {
    let opts = crate::soak::SoakOptions {
        queries: args.queries,
        concurrency: args.concurrency,
        seed: args.seed,
        faults: args.faults,
        ..Default::default()
    };
    let report = crate::soak::run(&opts).map_err(|e| e.to_string())?;
    print!("{}", report.render());
    if report.passed() {
        Ok(())
    } else {
        Err(
            "soak failed: wrong answers, errors the soak did not inject, memory left \
             accounted, or actors left alive"
                .into(),
        )
    }
}

/// Runs a `weir bench` subcommand and prints its output.
pub fn run(command: &BenchCommand) -> Result<(), String> {
    match command {
        BenchCommand::Jmh(args) => jmh::main(args),
        BenchCommand::Overload(args) => overload::main(args),
        BenchCommand::Soak(args) => soak(args),
        BenchCommand::Tpch(args) => tpch::main(args),
        BenchCommand::Join(args) => join::main(args),
        BenchCommand::Durable(args) => durable::main(args),
    }
}
