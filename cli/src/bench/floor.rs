//! The floors `weir bench jmh` prints beside its cases: what the work of a point query costs
//! with no runtime around it, so that each case reads as a multiple of them.
//!
//! - `floorIndexLookup`: the `fldIdx = ?` lookup of querySimpleUniqueIndexed done directly on
//!   one data node's storage (the node's share of `Item`, its partitions and its node-wide
//!   index), on the calling thread.
//! - `floorPingPong`: one round trip between two threads over crossbeam channels, the least a
//!   hand-off to another thread and back can cost on this machine.

use super::score::{JmhRow, CONFIDENCE, MEASURED_ITERATIONS, WARMUP_ITERATIONS};
use super::stats;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::time::{Duration, Instant};
use weir_operators::placement::assign_partitions;
use weir_operators::plan::IndexLookup;
use weir_operators::storage::{PartitionData, ScanChunk};
use weir_operators::table_store::TableStore;
use weir_operators::{Batch, Expr, Value};
use weir_runtime::replication::copies;

use crate::demo;

/// Data nodes the floor's storage is a share of (as in `weir bench jmh`).
const NODES: u32 = 3;
/// Partitions of `Item`.
const PARTITIONS: u32 = 1024;
/// `Item`'s indexed `fldIdx` column.
const FLD_IDX: usize = 4;

/// Runs `op` in a closed loop for the JMH iterations of `seconds` each and scores it as
/// `weir bench jmh` scores a case.
fn measure(
    case: &str,
    seconds: f64,
    mut op: impl FnMut() -> Result<usize, String>,
) -> Result<JmhRow, String> {
    let mut scores = Vec::with_capacity(MEASURED_ITERATIONS);
    let mut latencies = Vec::new();
    let mut rows = 0;
    for i in 0..WARMUP_ITERATIONS + MEASURED_ITERATIONS {
        let start = Instant::now();
        let deadline = start + Duration::from_secs_f64(seconds);
        let mut ops = 0u64;
        loop {
            let t = Instant::now();
            rows = op()?;
            if i >= WARMUP_ITERATIONS {
                latencies.push(t.elapsed().as_secs_f64() * 1e6);
            }
            ops += 1;
            if Instant::now() >= deadline {
                break;
            }
        }
        if i >= WARMUP_ITERATIONS {
            scores.push(ops as f64 / start.elapsed().as_secs_f64());
        }
    }
    latencies.sort_by(f64::total_cmp);
    Ok(JmhRow {
        case: case.to_string(),
        protocol: "floor".to_string(),
        ops_per_s: stats::mean(&scores),
        ops_error: stats::confidence_half_width(&scores, CONFIDENCE),
        p50_us: stats::percentile(&latencies, 0.50),
        p99_us: stats::percentile(&latencies, 0.99),
        messages_per_query: 0.0,
        bytes_per_query: 0.0,
        rows,
    })
}

/// Node 0's share of `Item` (`rows` rows), stored as a data node stores it.
fn node_share(rows: usize) -> Result<(TableStore, Vec<u32>), String> {
    let batch = demo::item_batch(0..rows as i64);
    let schema = demo::item_schema();
    let mut parts = Vec::new();
    assign_partitions(&batch, &[0], 0, PARTITIONS, &mut parts).map_err(|e| e.to_string())?;
    let owners = copies::owners(PARTITIONS, NODES);
    let mine: Vec<u32> = (0..PARTITIONS)
        .filter(|&p| owners[p as usize] == 0)
        .collect();
    let mut by_partition: Vec<Vec<u32>> = vec![Vec::new(); PARTITIONS as usize];
    for (row, &p) in parts.iter().enumerate() {
        by_partition[p as usize].push(row as u32);
    }
    let indexed = [FLD_IDX, FLD_IDX + 1];
    let mut store = TableStore::new(&schema.types(), &indexed);
    for &p in &mine {
        let rows: Batch = batch.take(&by_partition[p as usize]);
        let new = || PartitionData::new(schema.clone(), &[0]);
        store.insert(p, &rows, new).map_err(|e| e.to_string())?;
    }
    Ok((store, mine))
}

/// Rows an index lookup found.
fn found_rows(chunks: &[ScanChunk]) -> usize {
    chunks
        .iter()
        .map(|c| c.selection.as_ref().map_or(c.rows.num_rows(), Vec::len))
        .sum()
}

/// `floorIndexLookup`: the querySimpleUniqueIndexed lookup on one node's storage.
pub fn index_lookup(seconds: f64, seed: u64) -> Result<JmhRow, String> {
    let (store, mine) = node_share(demo::ITEM_ROWS)?;
    let lookup = IndexLookup::Eq(Expr::Param(0));
    let mut rng = StdRng::seed_from_u64(seed);
    let mut params = vec![Value::Int(0)];
    measure("floorIndexLookup", seconds, || {
        params[0] = Value::Int(rng.random_range(0..demo::ITEM_ROWS as i64));
        let found = store
            .lookup(FLD_IDX, &lookup, &params, &mine)
            .map_err(|e| e.to_string())?;
        Ok(found_rows(&found))
    })
    .map(|mut row| {
        // A key is on this node for about a third of the calls: report the case's row count.
        row.rows = 1;
        row
    })
}

/// `floorPingPong`: a round trip to another thread and back.
pub fn ping_pong(seconds: f64) -> Result<JmhRow, String> {
    let (to_echo, echo_in) = crossbeam_channel::bounded::<u64>(1);
    let (echo_out, from_echo) = crossbeam_channel::bounded::<u64>(1);
    let echo = std::thread::spawn(move || {
        while let Ok(v) = echo_in.recv() {
            if echo_out.send(v).is_err() {
                break;
            }
        }
    });
    let mut n = 0u64;
    let row = measure("floorPingPong", seconds, || {
        n += 1;
        to_echo.send(n).map_err(|e| e.to_string())?;
        match from_echo.recv() {
            Ok(v) if v == n => Ok(0),
            Ok(v) => Err(format!("ping-pong returned {v}, sent {n}")),
            Err(e) => Err(e.to_string()),
        }
    });
    drop(to_echo);
    let _ = echo.join();
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_share_finds_each_of_its_keys_once() {
        let (store, mine) = node_share(3000).unwrap();
        let lookup = IndexLookup::Eq(Expr::Param(0));
        let mut found = 0;
        for k in 0..3000 {
            let rows = store
                .lookup(FLD_IDX, &lookup, &[Value::Int(k)], &mine)
                .unwrap();
            let n = found_rows(&rows);
            assert!(n <= 1, "key {k} found {n} times");
            found += n;
        }
        // Node 0 holds about a third of the rows.
        assert!((700..1300).contains(&found), "{found}");
        assert_eq!(found, store.num_rows());
    }
}
