//! The soak: a long mix of the seed queries, joins, point lookups, cancelled streams, memory
//! pressure that trips the breaker and, optionally, injected faults and node crashes. It
//! checks every answer and, at the end, that nothing leaked: accounted memory zero and live
//! actors at the baseline on every node.

use crate::demo::{self, SEED_QUERIES};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use weir_operators::Value;
use weir_runtime::{Cluster, Error, FaultPlan};

/// Soak settings.
#[derive(Debug, Clone)]
pub struct SoakOptions {
    /// Queries in all.
    pub queries: usize,
    /// Client threads.
    pub concurrency: usize,
    /// Seed of the mix, the parameters and the faults.
    pub seed: u64,
    /// Inject network faults and node crashes.
    pub faults: bool,
    /// Rows of `Item`.
    pub item_rows: usize,
    /// Rows of `orders` (the join's probe side).
    pub orders: usize,
}

impl Default for SoakOptions {
    fn default() -> Self {
        SoakOptions {
            queries: 20_000,
            concurrency: 16,
            seed: 42,
            faults: false,
            item_rows: demo::ITEM_ROWS,
            orders: 100_000,
        }
    }
}

/// What the soak saw.
#[derive(Debug, Clone, Default)]
pub struct SoakReport {
    /// Queries by outcome: `ok`, `cancelled`, `wrong`, or the error kind.
    pub outcomes: BTreeMap<String, usize>,
    /// Per node: (name, accounted bytes at the end, live actors at the end).
    pub nodes: Vec<(String, usize, usize)>,
    /// Live actors expected when idle.
    pub baseline_actors: usize,
    /// Resident memory of the process after warm-up, in bytes.
    pub rss_after_warmup: usize,
    /// Resident memory of the process at the end, in bytes.
    pub rss_at_end: usize,
    /// Breaker kills during the run.
    pub kills: u64,
    /// Admission rejections during the run.
    pub rejections: u64,
    /// Node crashes injected.
    pub crashes: usize,
    /// Wall time.
    pub elapsed: Duration,
}

impl SoakReport {
    /// Answers that were wrong.
    pub fn wrong(&self) -> usize {
        self.outcomes.get("wrong").copied().unwrap_or(0)
    }

    /// Whether the run passed: no wrong answer, no memory left accounted, actors at the
    /// baseline.
    pub fn passed(&self) -> bool {
        let actors: usize = self.nodes.iter().map(|n| n.2).sum();
        self.wrong() == 0 && self.nodes.iter().all(|n| n.1 == 0) && actors == self.baseline_actors
    }

    /// The report as text.
    pub fn render(&self) -> String {
        let mut out = format!(
            "soak finished in {:.1?}\nqueries by outcome:\n",
            self.elapsed
        );
        for (k, v) in &self.outcomes {
            out.push_str(&format!("  {k:<14} {v}\n"));
        }
        out.push_str(&format!(
            "breaker kills {}, rejections {}, injected node crashes {}\n",
            self.kills, self.rejections, self.crashes
        ));
        out.push_str("per node at the end:\n");
        for (name, mem, actors) in &self.nodes {
            out.push_str(&format!(
                "  {name:<8} accounted memory {mem} bytes, live actors {actors}\n"
            ));
        }
        out.push_str(&format!(
            "live actors in all {} (baseline {})\nresident memory: {:.1} MiB after warm-up, {:.1} MiB at the end\n",
            self.nodes.iter().map(|n| n.2).sum::<usize>(),
            self.baseline_actors,
            self.rss_after_warmup as f64 / 1048576.0,
            self.rss_at_end as f64 / 1048576.0
        ));
        out.push_str(if self.passed() { "PASS\n" } else { "FAIL\n" });
        out
    }
}

/// Resident memory of this process in bytes (0 where /proc is missing).
pub fn resident_bytes() -> usize {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|v| v.parse::<usize>().ok())
        })
        .map_or(0, |pages| pages * 4096)
}

const JOIN: &str = "SELECT c.region, COUNT(*), SUM(o.qty) FROM orders o JOIN customers c \
                    ON o.customer_id = c.id GROUP BY c.region ORDER BY c.region";

/// Checks a seed query's answer the way the original benchmark does, plus values where they
/// are cheap to know.
fn seed_answer_ok(name: &str, key: i64, rows: usize, result: &[Vec<Value>]) -> bool {
    let q = SEED_QUERIES
        .iter()
        .find(|q| q.name == name)
        .expect("seed query");
    if result.len() != q.expected_rows(rows) {
        return false;
    }
    match name {
        "querySimpleUnique" | "querySimpleUniqueIndexed" => {
            result[0][0] == Value::Str(format!("name{key}"))
        }
        "querySumIndexed" => {
            let n = rows as i64;
            result[0][0] == Value::Int(n * (n - 1) / 2)
        }
        "queryOrderByBatch" => result
            .windows(2)
            .all(|w| w[0][1].sort_cmp(&w[1][1]).is_gt()),
        _ => true,
    }
}

fn outcome_of(e: &Error) -> String {
    e.kind().to_string()
}

/// Runs the soak.
pub fn run(opts: &SoakOptions) -> weir_runtime::Result<SoakReport> {
    let start = Instant::now();
    let cluster = Arc::new(
        Cluster::builder()
            .nodes(3)
            .backups(usize::from(opts.faults))
            .node_memory(256 * 1024 * 1024)
            .query_timeout(Duration::from_secs(if opts.faults { 5 } else { 30 }))
            .seed(opts.seed)
            .build()?,
    );
    demo::load_item(&cluster, opts.item_rows)?;
    demo::load_join_tables(&cluster, 10_000, opts.orders, opts.seed)?;
    let join_expected = cluster.query(JOIN, &[])?.rows();
    if opts.faults {
        cluster.set_faults(Some(FaultPlan {
            seed: opts.seed,
            drop: 0.0005,
            duplicate: 0.01,
            corrupt: 0.0005,
            delay: Some((Duration::ZERO, Duration::from_micros(500))),
            ..FaultPlan::default()
        }));
    }
    let next = Arc::new(AtomicUsize::new(0));
    let outcomes: Arc<Mutex<BTreeMap<String, usize>>> = Arc::default();
    let warmup_rss = Arc::new(AtomicUsize::new(0));
    let crashes = Arc::new(AtomicUsize::new(0));
    let chaos = Arc::new(AtomicBool::new(false));
    let warmup = (opts.queries / 20).max(1);
    let threads: Vec<_> = (0..opts.concurrency.max(1))
        .map(|t| {
            let (cluster, next, outcomes, warmup_rss, crashes, chaos) = (
                cluster.clone(),
                next.clone(),
                outcomes.clone(),
                warmup_rss.clone(),
                crashes.clone(),
                chaos.clone(),
            );
            let join_expected = join_expected.clone();
            let opts = opts.clone();
            std::thread::spawn(move || {
                let mut rng = StdRng::seed_from_u64(opts.seed ^ ((t as u64 + 1) * 0x9e37_79b9));
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= opts.queries {
                        break;
                    }
                    if i == warmup {
                        warmup_rss.store(resident_bytes(), Ordering::SeqCst);
                    }
                    // Every so often: memory pressure on a node (trips the breaker), and with
                    // faults a node crash and restart.
                    if i % 500 == 250 && !chaos.swap(true, Ordering::SeqCst) {
                        let node = rng.random_range(0..3usize);
                        if let Ok(hold) = cluster.hold_memory(node, 240 * 1024 * 1024) {
                            std::thread::sleep(Duration::from_millis(30));
                            drop(hold);
                        }
                        if opts.faults && i % 2000 == 250 {
                            let _ = cluster.crash_node(node);
                            crashes.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(Duration::from_millis(20));
                            let _ = cluster.restart_node(node);
                        }
                        chaos.store(false, Ordering::SeqCst);
                    }
                    let key = rng.random_range(0..opts.item_rows as i64);
                    let pick = rng.random_range(0..100u32);
                    let outcome = if pick < 60 {
                        let q = SEED_QUERIES[rng.random_range(0..SEED_QUERIES.len())];
                        match cluster.query(q.sql, &q.params(key)) {
                            Ok(r) if seed_answer_ok(q.name, key, opts.item_rows, &r.rows()) => {
                                "ok".to_string()
                            }
                            Ok(_) => "wrong".to_string(),
                            Err(e) => outcome_of(&e),
                        }
                    } else if pick < 80 {
                        match cluster.query(JOIN, &[]) {
                            Ok(r) if r.rows() == join_expected => "ok".to_string(),
                            Ok(_) => "wrong".to_string(),
                            Err(e) => outcome_of(&e),
                        }
                    } else if pick < 90 {
                        match cluster.query("SELECT fld FROM Item WHERE id = ?", &[Value::Int(key)])
                        {
                            Ok(r) if r.rows() == vec![vec![Value::Int(key)]] => "ok".to_string(),
                            Ok(_) => "wrong".to_string(),
                            Err(e) => outcome_of(&e),
                        }
                    } else {
                        // A stream dropped half way.
                        match cluster
                            .query_stream("SELECT name, fld FROM Item ORDER BY fld DESC", &[])
                        {
                            Ok(mut s) => match s.next() {
                                Some(Ok(_)) | None => "cancelled".to_string(),
                                Some(Err(e)) => outcome_of(&e),
                            },
                            Err(e) => outcome_of(&e),
                        }
                    };
                    *outcomes
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .entry(outcome)
                        .or_default() += 1;
                }
            })
        })
        .collect();
    for t in threads {
        let _ = t.join();
    }
    cluster.set_faults(None);
    for (i, n) in cluster.stats().nodes.iter().enumerate() {
        if !n.up {
            cluster.restart_node(i)?;
        }
    }
    cluster.wait_idle(Duration::from_secs(30));
    let stats = cluster.stats();
    let outcomes = outcomes.lock().unwrap_or_else(|e| e.into_inner()).clone();
    Ok(SoakReport {
        outcomes,
        nodes: stats
            .nodes
            .iter()
            .map(|n| (n.name.clone(), n.memory_reserved, n.live_actors))
            .collect(),
        baseline_actors: cluster.baseline_actors(),
        rss_after_warmup: warmup_rss.load(Ordering::SeqCst),
        rss_at_end: resident_bytes(),
        kills: stats.breaker.kills,
        rejections: stats.breaker.rejections,
        crashes: crashes.load(Ordering::SeqCst),
        elapsed: start.elapsed(),
    })
}
