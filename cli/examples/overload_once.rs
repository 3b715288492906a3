//! One level of the overload experiment in each join mode, with the per-node figures the
//! benchmark's table leaves out: peak accounted memory, breaker trips, and whether the node
//! ran out of memory.
//!
//! Run with `cargo run --release --example overload_once -- [CLIENTS] [SECONDS]`
//! (defaults 112 and 2).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use weir::runtime::JoinMode;
use weir::Cluster;
use weir_cli::bench::overload::{
    JoinData, CUSTOMERS, DEFAULT_NODE_MEMORY, ORDERS, OVERLOAD_QUERY, PARTITIONS,
};

/// The allocator of the `weir` command, so that this runs what `weir bench overload` runs
/// (the system allocator spends a fifth of this experiment's CPU in `malloc` and `free`).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> weir::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let clients: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(112);
    let seconds: f64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(2.0);
    let data = JoinData::generate(CUSTOMERS, ORDERS, 42);
    for mode in [JoinMode::Guarded, JoinMode::Legacy] {
        let cluster = Arc::new(
            Cluster::builder()
                .nodes(10)
                .partitions(PARTITIONS)
                .node_memory(DEFAULT_NODE_MEMORY)
                .join_mode(mode)
                .query_timeout(Duration::from_secs(10))
                .seed(42)
                .build()?,
        );
        data.load(&cluster)?;
        let stop = Arc::new(AtomicBool::new(false));
        let (ok, failed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let threads: Vec<_> = (0..clients)
            .map(|_| {
                let (c, stop, ok, failed) =
                    (cluster.clone(), stop.clone(), ok.clone(), failed.clone());
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        match c.query(OVERLOAD_QUERY, &[]) {
                            Ok(_) => ok.fetch_add(1, Ordering::Relaxed),
                            Err(_) => failed.fetch_add(1, Ordering::Relaxed),
                        };
                        if !c.stats().nodes.iter().all(|n| n.up) {
                            std::thread::sleep(Duration::from_millis(50));
                        }
                    }
                })
            })
            .collect();
        let start = Instant::now();
        std::thread::sleep(Duration::from_secs_f64(seconds));
        stop.store(true, Ordering::Relaxed);
        for t in threads {
            let _ = t.join();
        }
        let s = cluster.stats();
        println!(
            "{mode:?}, {clients} clients, {:.1?}: {} ok, {} failed, health {}; trips {}, rejections {}, kills {}, retries {}, out-of-memory crashes {}",
            start.elapsed(),
            ok.load(Ordering::Relaxed),
            failed.load(Ordering::Relaxed),
            s.health,
            s.nodes.iter().map(|n| n.trips).sum::<u64>(),
            s.breaker.rejections,
            s.breaker.kills,
            s.breaker.retries,
            s.breaker.oom_crashes
        );
        for n in s.nodes.iter().filter(|n| n.is_data) {
            println!(
                "  {:<8} peak {:>5.2} MiB of {:.0} MiB, trips {:>2}{}",
                n.name,
                n.memory_peak as f64 / 1048576.0,
                n.memory_budget as f64 / 1048576.0,
                n.trips,
                if n.out_of_memory {
                    ", OUT OF MEMORY"
                } else {
                    ""
                }
            );
        }
    }
    Ok(())
}
