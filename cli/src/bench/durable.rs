//! `weir bench durable`: what durability costs. Single-row and batched INSERT throughput on a
//! cluster with a data directory (`fsync` and `os`) and without one, against SQLite in WAL mode
//! with `synchronous=FULL` and `NORMAL` (the `rusqlite` crate, SQLite compiled in) in the same
//! run and on the same disk; and how fast a node reads its data back at start, from its log
//! alone and from a checkpoint, in MB/s of what it read.

use clap::Args;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::header::Header;
use crate::{Batch, Cluster, Column, Value};
use weir::Durability;

/// The long help of `weir bench durable`.
pub const DURABLE_ABOUT: &str = "What durability costs: --single single-row INSERTs (a \
prepared statement) and --batches batches of --batch-rows rows into t (id BIGINT PRIMARY KEY, \
v BIGINT, s VARCHAR), on a cluster of --nodes data nodes with a data directory (durability \
fsync and os) and without one, and on SQLite in WAL mode with synchronous=FULL and NORMAL \
(one transaction per batch, a prepared INSERT per row), all on the same disk (--dir, default \
the system's temporary directory). Then recovery: --recovery-rows rows loaded with fsync, the \
cluster started again from its log alone, then from a checkpoint, in MB/s of what the nodes \
read. Prints rows/s per system and workload; --json prints one object per measurement.";

/// Flags of `weir bench durable`.
#[derive(Debug, Clone, Args)]
pub struct DurableArgs {
    /// Data nodes.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    pub nodes: u64,
    /// Single-row INSERTs per system.
    #[arg(long, default_value_t = 2_000)]
    pub single: usize,
    /// Batches per system.
    #[arg(long, default_value_t = 20)]
    pub batches: usize,
    /// Rows per batch.
    #[arg(long, default_value_t = 10_000)]
    pub batch_rows: usize,
    /// Rows loaded for the recovery measurement (0: skip it).
    #[arg(long, default_value_t = 1_000_000)]
    pub recovery_rows: usize,
    /// Where the data directories and SQLite's files go (a temporary directory in it).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// One JSON object per measurement on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Idle spin and actor threads of the cluster's nodes.
    #[command(flatten)]
    pub runtime: crate::runtime_args::RuntimeArgs,
}

/// One measurement (a `--json` object, with the header's fields: `machine, cores, profile,
/// date, system, mode, workload, rows, seconds, rows_per_s, bytes, mb_per_s`).
#[derive(Debug, Clone, Serialize)]
pub struct DurableRow {
    /// `weir` or `sqlite`.
    pub system: String,
    /// `fsync`, `os` or `memory` (weir); `FULL` or `NORMAL` (SQLite).
    pub mode: String,
    /// `single`, `batched`, `recovery_log` or `recovery_checkpoint`.
    pub workload: String,
    /// Rows written (or read back).
    pub rows: usize,
    /// Seconds taken.
    pub seconds: f64,
    /// Rows per second.
    pub rows_per_s: f64,
    /// For recovery: bytes read back from disk, and MB/s of them.
    pub bytes: Option<u64>,
    /// MB per second of `bytes`.
    pub mb_per_s: Option<f64>,
}

fn text(i: i64) -> String {
    format!("row {i:>12} of the bench")
}

fn batch(first: i64, n: usize) -> Batch {
    let ids: Vec<i64> = (first..first + n as i64).collect();
    let strs: Vec<Value> = ids.iter().map(|&i| Value::Str(text(i))).collect();
    Batch::try_new(vec![
        Column::from_i64(ids.clone()),
        Column::from_i64(ids.iter().map(|i| i * 7).collect()),
        Column::from_values(weir::DataType::Utf8, &strs).expect("text values"),
    ])
    .expect("three columns of one length")
}

const CREATE: &str = "CREATE TABLE t (id BIGINT PRIMARY KEY, v BIGINT, s VARCHAR)";

/// A cluster for `mode` on `dir` (`None`: in memory).
fn cluster(
    args: &DurableArgs,
    dir: Option<&Path>,
    durability: Durability,
) -> Result<Cluster, String> {
    let mut builder = args
        .runtime
        .apply(Cluster::builder().nodes(args.nodes as usize));
    if let Some(dir) = dir {
        builder = builder.data_dir(dir).durability(durability);
    }
    builder.build().map_err(|e| e.to_string())
}

/// Times `args.single` single-row inserts and `args.batches` batches on weir.
fn weir_writes(
    args: &DurableArgs,
    dir: Option<&Path>,
    durability: Durability,
) -> Result<(f64, f64), String> {
    let c = cluster(args, dir, durability)?;
    c.execute(CREATE).map_err(|e| e.to_string())?;
    let insert = c
        .prepare("INSERT INTO t VALUES (?, ?, ?)")
        .map_err(|e| e.to_string())?;
    let started = Instant::now();
    for i in 0..args.single as i64 {
        insert
            .execute((i, i * 7, text(i)))
            .map_err(|e| e.to_string())?;
    }
    let single = started.elapsed().as_secs_f64();
    let first = args.single as i64;
    let started = Instant::now();
    for b in 0..args.batches {
        let rows = batch(first + (b * args.batch_rows) as i64, args.batch_rows);
        c.load("t", rows).map_err(|e| e.to_string())?;
    }
    let batched = started.elapsed().as_secs_f64();
    c.shutdown();
    Ok((single, batched))
}

/// Times the same writes on SQLite in WAL mode with `synchronous` (FULL or NORMAL).
fn sqlite_writes(args: &DurableArgs, dir: &Path, synchronous: &str) -> Result<(f64, f64), String> {
    let path = dir.join(format!("sqlite-{synchronous}.db"));
    let err = |e: rusqlite::Error| e.to_string();
    let mut db = rusqlite::Connection::open(&path).map_err(err)?;
    db.pragma_update(None, "journal_mode", "WAL").map_err(err)?;
    db.pragma_update(None, "synchronous", synchronous)
        .map_err(err)?;
    db.execute(
        "CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER, s TEXT)",
        [],
    )
    .map_err(err)?;
    let started = Instant::now();
    {
        let mut insert = db
            .prepare("INSERT INTO t VALUES (?1, ?2, ?3)")
            .map_err(err)?;
        for i in 0..args.single as i64 {
            insert.execute((i, i * 7, text(i))).map_err(err)?;
        }
    }
    let single = started.elapsed().as_secs_f64();
    let first = args.single as i64;
    let started = Instant::now();
    for b in 0..args.batches {
        let tx = db.transaction().map_err(err)?;
        {
            let mut insert = tx
                .prepare("INSERT INTO t VALUES (?1, ?2, ?3)")
                .map_err(err)?;
            let start = first + (b * args.batch_rows) as i64;
            for i in start..start + args.batch_rows as i64 {
                insert.execute((i, i * 7, text(i))).map_err(err)?;
            }
        }
        tx.commit().map_err(err)?;
    }
    let batched = started.elapsed().as_secs_f64();
    Ok((single, batched))
}

/// Bytes of the files under `dir` whose path contains `part` (`/log/`, `/checkpoint/`).
fn bytes_under(dir: &Path, part: &str) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.to_string_lossy().contains(part) {
                total += e.metadata().map_or(0, |m| m.len());
            }
        }
    }
    total
}

/// Bytes read back at a start, and the seconds it took.
type Reading = (u64, f64);

/// Loads `args.recovery_rows` rows with fsync, then times two restarts: from the log alone and
/// from a checkpoint.
fn recovery(args: &DurableArgs, dir: &Path) -> Result<(Reading, Reading), String> {
    let data = dir.join("recovery");
    {
        let c = args
            .runtime
            .apply(Cluster::builder().nodes(args.nodes as usize))
            .data_dir(&data)
            .checkpoint_bytes(u64::MAX)
            .build()
            .map_err(|e| e.to_string())?;
        c.execute(CREATE).map_err(|e| e.to_string())?;
        let mut loaded = 0;
        while loaded < args.recovery_rows {
            let n = (args.recovery_rows - loaded).min(100_000);
            c.load("t", batch(loaded as i64, n))
                .map_err(|e| e.to_string())?;
            loaded += n;
        }
        c.shutdown();
    }
    let time_open = |builder: weir::ClusterBuilder| -> Result<(Cluster, f64), String> {
        let started = Instant::now();
        let c = builder.build().map_err(|e| e.to_string())?;
        Ok((c, started.elapsed().as_secs_f64()))
    };
    let builder = || {
        args.runtime
            .apply(Cluster::builder().nodes(args.nodes as usize))
            .data_dir(&data)
            .checkpoint_bytes(u64::MAX)
    };
    let log_bytes = bytes_under(&data, "/log/");
    let (c, from_log) = time_open(builder())?;
    check_count(&c, args.recovery_rows)?;
    c.checkpoint().map_err(|e| e.to_string())?;
    c.shutdown();
    let checkpoint_bytes = bytes_under(&data, "/checkpoint/");
    let (c, from_checkpoint) = time_open(builder())?;
    check_count(&c, args.recovery_rows)?;
    c.shutdown();
    Ok(((log_bytes, from_log), (checkpoint_bytes, from_checkpoint)))
}

fn check_count(c: &Cluster, rows: usize) -> Result<(), String> {
    let r = c
        .query("SELECT COUNT(*) FROM t", &[])
        .map_err(|e| e.to_string())?;
    match r.rows().first().and_then(|r| r.first()) {
        Some(Value::Int(n)) if *n as usize == rows => Ok(()),
        other => Err(format!("read back {other:?} rows, not {rows}")),
    }
}

/// Runs `weir bench durable`.
pub fn main(args: &DurableArgs) -> Result<(), String> {
    let base = args.dir.clone().unwrap_or_else(std::env::temp_dir);
    let tmp = tempfile::Builder::new()
        .prefix("weir-bench-durable-")
        .tempdir_in(&base)
        .map_err(|e| format!("{}: {e}", base.display()))?;
    let header = Header::current();
    let mut rows = Vec::new();
    let mut push =
        |system: &str, mode: &str, workload: &str, n: usize, seconds: f64, bytes: Option<u64>| {
            rows.push(DurableRow {
                system: system.into(),
                mode: mode.into(),
                workload: workload.into(),
                rows: n,
                seconds,
                rows_per_s: n as f64 / seconds.max(1e-9),
                mb_per_s: bytes.map(|b| b as f64 / 1e6 / seconds.max(1e-9)),
                bytes,
            });
        };
    let batched_rows = args.batches * args.batch_rows;
    for (mode, durability, dir) in [
        ("fsync", Durability::Fsync, Some(tmp.path().join("fsync"))),
        ("os", Durability::Os, Some(tmp.path().join("os"))),
        ("memory", Durability::Os, None),
    ] {
        let (single, batched) = weir_writes(args, dir.as_deref(), durability)?;
        push("weir", mode, "single", args.single, single, None);
        push("weir", mode, "batched", batched_rows, batched, None);
    }
    for synchronous in ["FULL", "NORMAL"] {
        let (single, batched) = sqlite_writes(args, tmp.path(), synchronous)?;
        push("sqlite", synchronous, "single", args.single, single, None);
        push(
            "sqlite",
            synchronous,
            "batched",
            batched_rows,
            batched,
            None,
        );
    }
    if args.recovery_rows > 0 {
        let ((log, from_log), (checkpoint, from_checkpoint)) = recovery(args, tmp.path())?;
        push(
            "weir",
            "fsync",
            "recovery_log",
            args.recovery_rows,
            from_log,
            Some(log),
        );
        push(
            "weir",
            "fsync",
            "recovery_checkpoint",
            args.recovery_rows,
            from_checkpoint,
            Some(checkpoint),
        );
    }
    if args.json {
        print!("{}", header.json_lines(&rows)?);
        return Ok(());
    }
    println!("{header}");
    println!(
        "{:<8} {:<8} {:<20} {:>10} {:>10} {:>12} {:>10}",
        "system", "mode", "workload", "rows", "seconds", "rows/s", "MB/s"
    );
    for r in &rows {
        println!(
            "{:<8} {:<8} {:<20} {:>10} {:>10.3} {:>12.0} {:>10}",
            r.system,
            r.mode,
            r.workload,
            r.rows,
            r.seconds,
            r.rows_per_s,
            r.mb_per_s.map_or(String::new(), |m| format!("{m:.0}"))
        );
    }
    Ok(())
}
