//! `weir bench join`: one equi-join on the cluster against a hand-written hash join over the
//! same columns in the same process.
//!
//! Two tables are generated from a seed: `build (k BIGINT PRIMARY KEY, v BIGINT)` with unique
//! shuffled keys `0..build` and `probe (k BIGINT, v BIGINT)` with keys uniform over the build
//! keys, values in `0..1000` on both sides. The query is
//! [`JOIN_SQL`]. The hand-written join puts the build columns in a hashbrown map (key → value)
//! and looks up every probe row (map building included, as the query builds its table too).
//! After [`WARMUP_ROUNDS`] warm-up rounds, the two are timed in turns, `--reps` rounds of one
//! query and one hand-written join, so that both see the machine as it is in the same seconds. Both
//! answers must agree. Reported: probe rows per second of each (from the median time) and
//! the median over rounds of weir's rate as a fraction of the hand-written loop's in the same
//! round.

use clap::Args;
use hashbrown::HashMap;
use rand::{rngs::StdRng, seq::SliceRandom, RngExt, SeedableRng};
use serde::Serialize;
use std::hint::black_box;
use std::time::Instant;

use super::header::Header;
use super::stats::median;
use crate::{Batch, Cluster, Column, Value};

/// The query timed on the cluster.
pub const JOIN_SQL: &str =
    "SELECT COUNT(*), SUM(probe.v + build.v) FROM probe JOIN build ON probe.k = build.k";

/// The long help of `weir bench join`.
pub const JOIN_ABOUT: &str = "A hash join on weir against a hand-written one: generates \
build (k BIGINT PRIMARY KEY, v BIGINT) with --build unique keys and probe (k BIGINT, v BIGINT) \
with --probe rows whose keys are uniform over the build keys, loads both into a cluster of \
--nodes data nodes and times SELECT COUNT(*), SUM(probe.v + build.v) FROM probe JOIN build ON \
probe.k = build.k and a single-thread hashbrown join over the same columns in the same \
process: 3 warm-up rounds, then --reps rounds of one query and one hand-written join in \
turns. Prints probe rows/s of both (median runs) and the median over rounds of weir's rate \
against the hand loop's in the same round; fails when the two answers differ.";

/// Rounds of one query and one hand-written join run before the timed ones: the first runs of
/// a fresh cluster fault in the memory of its hash tables and buffers.
pub const WARMUP_ROUNDS: usize = 3;

/// Rows per `Cluster::load` call.
const LOAD_ROWS: usize = 100_000;

/// Flags of `weir bench join`.
#[derive(Debug, Clone, Args)]
pub struct JoinArgs {
    /// Rows of the build table (its keys are 0..N, each once).
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub build: u64,
    /// Rows of the probe table.
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub probe: u64,
    /// Data nodes.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    pub nodes: u64,
    /// Timed runs of each join (after 3 warm-up rounds).
    #[arg(long, default_value_t = 15, value_parser = clap::value_parser!(u64).range(1..))]
    pub reps: u64,
    /// Seed of the generated data.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// One JSON object on stdout instead of the text report.
    #[arg(long)]
    pub json: bool,
    /// Idle spin and actor threads of the cluster's nodes.
    #[command(flatten)]
    pub runtime: crate::runtime_args::RuntimeArgs,
}

/// What `weir bench join` measured (its `--json` object).
#[derive(Debug, Clone, Serialize)]
pub struct JoinReport {
    /// Where and how it ran.
    #[serde(flatten)]
    pub header: Header,
    /// Rows of the build table.
    pub build_rows: usize,
    /// Rows of the probe table.
    pub probe_rows: usize,
    /// Data nodes.
    pub nodes: usize,
    /// Probe rows per second of the query on weir (median run).
    pub weir_rows_per_s: f64,
    /// Probe rows per second of the hand-written join (median run).
    pub hand_rows_per_s: f64,
    /// Weir's rate as a fraction of the hand-written join's: the median over the rounds, each
    /// round's query against the hand-written join timed right after it.
    pub ratio: f64,
    /// Whether weir's answer equals the hand-written join's.
    pub answer_matches: bool,
}

/// The generated columns of both tables.
struct Tables {
    build_k: Vec<i64>,
    build_v: Vec<i64>,
    probe_k: Vec<i64>,
    probe_v: Vec<i64>,
}

fn generate(build: usize, probe: usize, seed: u64) -> Tables {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut build_k: Vec<i64> = (0..build as i64).collect();
    build_k.shuffle(&mut rng);
    let build_v = (0..build).map(|_| rng.random_range(0..1000i64)).collect();
    let probe_k = (0..probe)
        .map(|_| rng.random_range(0..build as i64))
        .collect();
    let probe_v = (0..probe).map(|_| rng.random_range(0..1000i64)).collect();
    Tables {
        build_k,
        build_v,
        probe_k,
        probe_v,
    }
}

/// Creates and loads both tables.
fn load(cluster: &Cluster, t: &Tables) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| e.to_string();
    for ddl in [
        "CREATE TABLE build (k BIGINT PRIMARY KEY, v BIGINT)",
        "CREATE TABLE probe (k BIGINT, v BIGINT)",
    ] {
        cluster.execute(ddl).map_err(|e| err(&e))?;
    }
    for (table, k, v) in [
        ("build", &t.build_k, &t.build_v),
        ("probe", &t.probe_k, &t.probe_v),
    ] {
        for start in (0..k.len()).step_by(LOAD_ROWS) {
            let end = (start + LOAD_ROWS).min(k.len());
            let batch = Batch::try_new(vec![
                Column::from_i64(k[start..end].to_vec()),
                Column::from_i64(v[start..end].to_vec()),
            ])
            .map_err(|e| err(&e))?;
            cluster.load(table, batch).map_err(|e| err(&e))?;
        }
    }
    Ok(())
}

/// The hand-written join: `(COUNT(*), SUM(probe.v + build.v))`, or `None` for the sum when
/// no row matched (as SQL's SUM of no rows).
fn hand_join(t: &Tables) -> (i64, Option<i64>) {
    let mut map: HashMap<i64, i64> = HashMap::with_capacity(t.build_k.len());
    for (&k, &v) in t.build_k.iter().zip(&t.build_v) {
        map.insert(k, v);
    }
    let (mut count, mut sum) = (0i64, 0i64);
    for (k, v) in t.probe_k.iter().zip(&t.probe_v) {
        if let Some(bv) = map.get(k) {
            count += 1;
            sum += v + bv;
        }
    }
    (count, (count > 0).then_some(sum))
}

/// Weir's answer as `(count, sum)`.
fn weir_answer(cluster: &Cluster) -> Result<(i64, Option<i64>), String> {
    let r = cluster.query(JOIN_SQL, &[]).map_err(|e| e.to_string())?;
    let rows = r.rows();
    match rows.as_slice() {
        [row] => match row.as_slice() {
            [Value::Int(c), Value::Int(s)] => Ok((*c, Some(*s))),
            [Value::Int(c), Value::Null] => Ok((*c, None)),
            other => Err(format!("the join query returned {other:?}")),
        },
        _ => Err(format!("the join query returned {} rows", rows.len())),
    }
}

/// Runs the benchmark. A wrong answer from weir is reported in `answer_matches` (and on
/// stderr), not as an error, so that the figures are still shown.
pub fn measure(args: &JoinArgs) -> Result<JoinReport, String> {
    let (build, probe) = (args.build as usize, args.probe as usize);
    let t = generate(build, probe, args.seed);
    let cluster = args
        .runtime
        .apply(Cluster::builder().nodes(args.nodes as usize))
        .build()
        .map_err(|e| e.to_string())?;
    load(&cluster, &t)?;
    let answer = weir_answer(&cluster)?;
    let want = hand_join(&t);
    for _ in 1..WARMUP_ROUNDS {
        black_box(weir_answer(&cluster)?);
        black_box(hand_join(black_box(&t)));
    }
    let (mut weir_secs, mut hand_secs) = (Vec::new(), Vec::new());
    for _ in 0..args.reps {
        let start = Instant::now();
        let a = weir_answer(&cluster)?;
        weir_secs.push(start.elapsed().as_secs_f64());
        if a != answer {
            return Err(format!(
                "weir's answer changed between runs: {answer:?}, then {a:?}"
            ));
        }
        let start = Instant::now();
        black_box(hand_join(black_box(&t)));
        hand_secs.push(start.elapsed().as_secs_f64());
    }
    cluster.shutdown();
    if answer != want {
        eprintln!(
            "weir's answer (count, sum) {answer:?} differs from the hand-written join's {want:?}"
        );
    }
    let rate = |secs: &[f64]| probe as f64 / median(secs).max(1e-9);
    let (weir_rows_per_s, hand_rows_per_s) = (rate(&weir_secs), rate(&hand_secs));
    // A round's weir rate over its hand-written rate is its hand time over its weir time.
    let ratios: Vec<f64> = weir_secs
        .iter()
        .zip(&hand_secs)
        .map(|(w, h)| h / w.max(1e-9))
        .collect();
    Ok(JoinReport {
        header: Header::current(),
        build_rows: build,
        probe_rows: probe,
        nodes: args.nodes as usize,
        weir_rows_per_s,
        hand_rows_per_s,
        ratio: median(&ratios),
        answer_matches: answer == want,
    })
}

/// `weir bench join`: measures and prints the report; fails when the answers differ.
pub fn main(args: &JoinArgs) -> Result<(), String> {
    let r = measure(args)?;
    if args.json {
        println!("{}", serde_json::to_string(&r).map_err(|e| e.to_string())?);
    } else {
        println!("{}", r.header);
        println!("{JOIN_SQL}");
        println!(
            "build {} rows, probe {} rows, {} nodes, median of {} runs",
            r.build_rows, r.probe_rows, r.nodes, args.reps
        );
        println!(
            "weir          {:>8.2} M probe rows/s",
            r.weir_rows_per_s / 1e6
        );
        println!(
            "hand-written  {:>8.2} M probe rows/s",
            r.hand_rows_per_s / 1e6
        );
        println!("ratio         {:>8.3}", r.ratio);
    }
    if r.answer_matches {
        Ok(())
    } else {
        Err("weir's answer differs from the hand-written join's".into())
    }
}
