//! The memory circuit breaker: a fair admission queue (first come, first served, woken when
//! memory comes back, backoff as a fallback, failing only at a query's deadline or when the
//! queue is full), kill rounds that stop half of the running hash joins that hold memory,
//! and the Legacy join mode that runs nodes out of memory. Deterministic: seeded, small
//! budgets.

use crate::common;

use common::{assert_idle, BoundedStream, TestCluster};
use std::time::{Duration, Instant};
use weir::runtime::{BreakerConfig, Health, JoinMode};
use weir::{Batch, Cluster, Column, Error, Value};

const MIB: usize = 1024 * 1024;

/// Short backoffs, and as many joins at once as memory allows (not one per thread), so that
/// joins started together run together and trip the breaker.
fn breaker(attempts: u32, retry_killed: bool) -> BreakerConfig {
    BreakerConfig {
        base: Duration::from_millis(10),
        cap: Duration::from_millis(200),
        attempts,
        retry_killed,
        joins_per_node: Some(usize::MAX),
        ..BreakerConfig::default()
    }
}

fn join_cluster(nodes: usize, budget: usize, mode: JoinMode, cfg: BreakerConfig) -> TestCluster {
    join_cluster_timeout(nodes, budget, mode, cfg, Duration::from_secs(30))
}

fn join_cluster_timeout(
    nodes: usize,
    budget: usize,
    mode: JoinMode,
    cfg: BreakerConfig,
    timeout: Duration,
) -> TestCluster {
    // 1,024-row batches: the edges and exchanges of an undrained stream hold a few batches
    // each, which must stay well below a join's 60,000 output rows, so that the joins are
    // still running (and hold their tables) when the breaker trips.
    // Kills are for joins that cannot spill: spilling is off here.
    let c = Cluster::builder()
        .nodes(nodes)
        .partitions(32)
        .batch_size(1024)
        .node_memory(budget)
        .spill_quota(0)
        .join_mode(mode)
        .breaker(cfg)
        .seed(7)
        .query_timeout(timeout)
        .build()
        .unwrap();
    c.execute("CREATE TABLE big (id BIGINT PRIMARY KEY, k BIGINT)")
        .unwrap();
    c.execute("CREATE TABLE small (id BIGINT PRIMARY KEY, w BIGINT)")
        .unwrap();
    let n = 60_000i64;
    c.load(
        "big",
        Batch::try_new(vec![
            Column::from_i64((0..n).collect()),
            Column::from_i64((0..n).map(|i| i % 20_000).collect()),
        ])
        .unwrap(),
    )
    .unwrap();
    c.load(
        "small",
        Batch::try_new(vec![
            Column::from_i64((0..20_000).collect()),
            Column::from_i64((0..20_000).collect()),
        ])
        .unwrap(),
    )
    .unwrap();
    TestCluster::new(c)
}

const JOIN: &str = "SELECT big.id, small.w FROM big JOIN small ON big.k = small.id";

/// Waits until node `i`'s accounted memory has not changed for a while.
fn settle(c: &Cluster, i: usize) -> usize {
    let mut last = usize::MAX;
    let mut stable_since = Instant::now();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let now = c.stats().nodes[i].memory_reserved;
        if now != last {
            last = now;
            stable_since = Instant::now();
        } else if stable_since.elapsed() > Duration::from_millis(200) || Instant::now() > deadline {
            return now;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn drain(s: BoundedStream) -> Result<usize, Error> {
    let mut rows = 0;
    for b in s {
        rows += b?.num_rows();
    }
    Ok(rows)
}

#[test]
fn open_breaker_delays_admission_with_exponential_backoff() {
    let budget = 64 * MIB;
    let cfg = breaker(8, true);
    let c = join_cluster(1, budget, JoinMode::Guarded, cfg.clone());
    let hold = c.hold_memory(0, budget * 9 / 10).unwrap();
    assert!(c.stats().nodes[0].breaker_open);
    let stream = c.query_stream("SELECT COUNT(*) FROM big", &[]).unwrap();
    std::thread::sleep(Duration::from_millis(120));
    drop(hold);
    let mut stream = stream;
    let rows: Vec<Vec<Value>> = stream.by_ref().flat_map(|b| b.unwrap().rows()).collect();
    assert_eq!(rows, vec![vec![Value::Int(60_000)]]);
    let stats = stream.stats().unwrap();
    assert!(
        stats.admission_delays.len() >= 2,
        "{:?}",
        stats.admission_delays
    );
    for (n, d) in stats.admission_delays.iter().enumerate() {
        let (lo, hi) = cfg.backoff_bounds(n as u32);
        assert!(
            lo <= *d && *d <= hi,
            "retry {n} waited {d:?}, not in [{lo:?}, {hi:?}]"
        );
    }
    let s = c.stats();
    assert!(
        s.breaker.rejections == 1 && s.breaker.retries >= 2 && s.nodes[0].trips >= 1,
        "{:?}",
        s.breaker
    );

    // Held for good: the query waits in the queue until its own deadline (the query timeout,
    // 400 ms here: this part waits that long on purpose), then fails saying so.
    let timeout = Duration::from_millis(400);
    let c2 = join_cluster_timeout(1, budget, JoinMode::Guarded, breaker(4, true), timeout);
    let hold = c2.hold_memory(0, budget * 9 / 10).unwrap();
    let err = c2.query("SELECT COUNT(*) FROM big", &[]).unwrap_err();
    match &err {
        Error::AdmissionTimeout {
            node,
            waited,
            position,
        } => {
            assert_eq!((node.as_str(), *position), ("node-0", 1), "{err}");
            assert!(*waited >= timeout / 2, "{err}");
        }
        other => panic!("expected an admission timeout, got {other:?}"),
    }
    let msg = err.to_string();
    assert!(
        msg.contains("waiting for admission") && msg.contains("position 1"),
        "{msg}"
    );
    assert_eq!(c2.stats().breaker.retries_exhausted, 1);
    drop(hold);
    assert_idle(&c);
    assert_idle(&c2);
}

#[test]
fn queries_over_budget_wait_in_order_and_all_complete() {
    let budget = 64 * MIB;
    let c = join_cluster(1, budget, JoinMode::Guarded, breaker(8, true));
    let hold = c.hold_memory(0, budget * 9 / 10).unwrap();
    // Twelve queries queue up one after another behind the open breaker.
    let mut streams = Vec::new();
    for i in 0..12u64 {
        streams.push(c.query_stream(JOIN, &[]).unwrap());
        let deadline = Instant::now() + Duration::from_secs(10);
        while c.stats().breaker.rejections < i + 1 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    assert_eq!(c.stats().breaker.kills, 0);
    // Memory comes back: every one of them runs and answers, none fails.
    drop(hold);
    let outcomes: Vec<Result<usize, Error>> = streams.into_iter().map(drain).collect();
    assert!(
        outcomes.iter().all(|o| matches!(o, Ok(60_000))),
        "{outcomes:?}"
    );
    assert_eq!(c.stats().breaker.retries_exhausted, 0);
    assert_idle(&c);
}

/// Starts 8 join streams on a 1-node cluster and waits until their joins hold memory.
fn eight_joins(c: &TestCluster) -> (Vec<BoundedStream>, usize) {
    let streams: Vec<BoundedStream> = (0..8).map(|_| c.query_stream(JOIN, &[]).unwrap()).collect();
    let used = settle(c, 0);
    (streams, used)
}

fn kill_half(retry_killed: bool) {
    let budget = 256 * MIB;
    let c = join_cluster(1, budget, JoinMode::Guarded, breaker(8, retry_killed));
    let one = c.query_stream(JOIN, &[]).unwrap();
    let used_one = settle(&c, 0);
    eprintln!(
        "one join: {used_one} bytes; client {}",
        c.stats().nodes[1].memory_reserved
    );
    drop(one);
    assert_idle(&c);
    let (streams, used) = eight_joins(&c);
    eprintln!("eight joins: {used} bytes");
    assert!(used > 0);
    // Push the node over its limit so that killing half the joins brings it back under.
    let limit = budget * 85 / 100;
    let hold = c.hold_memory(0, limit - used * 6 / 10).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while c.stats().breaker.kills < 4 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    eprintln!(
        "after wait: {:?} {:?}",
        c.stats().breaker,
        c.stats().nodes[0]
    );
    // The victims' memory is freed at once: the node drops under its limit.
    let after = settle(&c, 0);
    assert!(
        after < limit,
        "still {after} bytes after the kills (limit {limit})"
    );
    assert_eq!(
        c.stats().breaker.kills,
        4,
        "exactly half of the 8 joins are killed"
    );
    drop(hold);
    let outcomes: Vec<Result<usize, Error>> = streams.into_iter().map(drain).collect();
    let ok = outcomes.iter().filter(|o| matches!(o, Ok(60_000))).count();
    let killed = outcomes
        .iter()
        .filter(|o| matches!(o, Err(Error::Killed(n)) if n == "node-0"))
        .count();
    if retry_killed {
        assert_eq!(ok, 8, "{outcomes:?}");
        assert!(c.stats().breaker.retries >= 4);
    } else {
        assert_eq!((ok, killed), (4, 4), "{outcomes:?}");
    }
    assert_eq!(c.stats().breaker.kills, 4, "no kill cascade");
    assert_idle(&c);
}

#[test]
fn trip_kills_half_the_joins_and_retries_them() {
    kill_half(true);
}

#[test]
fn trip_kills_half_the_joins_and_reports_without_retry() {
    kill_half(false);
}

fn overload(mode: JoinMode) -> (TestCluster, Vec<Result<usize, Error>>) {
    let budget = 128 * MIB;
    let c = join_cluster(3, budget, mode, breaker(8, true));
    // Memory pressure on node-1 from outside, under its budget; then 8 joins.
    let hold = c.hold_memory(1, budget * 80 / 100).unwrap();
    let streams: Vec<BoundedStream> = (0..8).map(|_| c.query_stream(JOIN, &[]).unwrap()).collect();
    let (_, used) = (settle(&c, 1), c.stats().nodes[1].memory_reserved);
    let _ = used;
    let extra = if mode == JoinMode::Legacy {
        c.hold_memory(1, budget / 4).ok()
    } else {
        None
    };
    std::thread::sleep(Duration::from_millis(50));
    drop(hold);
    drop(extra);
    let outcomes = streams.into_iter().map(drain).collect();
    (c, outcomes)
}

#[test]
fn legacy_joins_run_a_node_out_of_memory_guarded_ones_do_not() {
    let (c, outcomes) = overload(JoinMode::Legacy);
    let s = c.stats();
    assert!(
        s.nodes[1].out_of_memory && !s.nodes[1].up,
        "{:?}",
        s.nodes[1]
    );
    assert!(s.nodes[0].up && s.nodes[2].up);
    assert_eq!(s.breaker.oom_crashes, 1);
    assert_eq!(c.health(), Health::Red);
    for o in &outcomes {
        assert_eq!(o, &Err(Error::OutOfMemory("node-1".into())));
    }
    // A query that needs node-1 fails at once, naming it; others keep working.
    let err = c.query("SELECT COUNT(*) FROM big", &[]).unwrap_err();
    assert_eq!(err, Error::NodeDown("node-1".into()));
    let owner0 = (0..60_000i64)
        .find(|k| {
            c.query("SELECT id FROM big WHERE id = ?", &[Value::Int(*k)])
                .is_ok()
        })
        .expect("some key lives on a live node");
    let r = c
        .query("SELECT k FROM big WHERE id = ?", &[Value::Int(owner0)])
        .unwrap();
    assert_eq!(r.rows(), vec![vec![Value::Int(owner0 % 20_000)]]);
    assert!(c.wait_idle(Duration::from_secs(10)));
    c.restart_node(1).unwrap();
    assert_eq!(c.health(), Health::Green);
    assert_eq!(
        c.query("SELECT COUNT(*) FROM big", &[]).unwrap().rows(),
        vec![vec![Value::Int(60_000)]]
    );
    assert_idle(&c);

    let (c, outcomes) = overload(JoinMode::Guarded);
    let s = c.stats();
    assert!(
        s.nodes.iter().all(|n| n.up && !n.out_of_memory),
        "{:?}",
        s.nodes
    );
    assert_eq!(s.breaker.oom_crashes, 0);
    assert_eq!(c.health(), Health::Green);
    assert!(
        outcomes.iter().all(|o| matches!(o, Ok(60_000))),
        "{outcomes:?}"
    );
    assert_idle(&c);
}

#[test]
fn largest_half_policy_kills_the_biggest_joins() {
    let budget = 256 * MIB;
    let cfg = BreakerConfig {
        kill_policy: weir::runtime::KillPolicy::LargestHalf,
        ..breaker(8, false)
    };
    let c = join_cluster(1, budget, JoinMode::Guarded, cfg);
    c.execute("CREATE TABLE tiny (id BIGINT PRIMARY KEY, w BIGINT)")
        .unwrap();
    // Half of `small`: its joins hold less build memory, yet return more rows (30,000: the
    // scan of `big` drops the rows without a match, so they come in full batches) than the
    // result window holds, so they are still running when the breaker trips.
    c.load(
        "tiny",
        Batch::try_new(vec![
            Column::from_i64((0..10_000).collect()),
            Column::from_i64((0..10_000).collect()),
        ])
        .unwrap(),
    )
    .unwrap();
    let tiny_join = "SELECT big.id, tiny.w FROM big JOIN tiny ON big.k = tiny.id";
    let mut streams = Vec::new();
    for _ in 0..4 {
        streams.push((true, c.query_stream(JOIN, &[]).unwrap()));
        streams.push((false, c.query_stream(tiny_join, &[]).unwrap()));
    }
    let used = settle(&c, 0);
    let limit = budget * 85 / 100;
    let hold = c.hold_memory(0, limit - used / 2).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while c.stats().breaker.kills < 4 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(hold);
    for (large, s) in streams {
        let outcome = drain(s);
        if large {
            assert_eq!(outcome, Err(Error::Killed("node-0".into())));
        } else {
            assert!(outcome.is_ok(), "{outcome:?}");
        }
    }
    assert_idle(&c);
}

#[test]
fn full_admission_queue_fails_at_once_as_overloaded() {
    let budget = 64 * MIB;
    let cfg = BreakerConfig {
        queue: 2,
        ..breaker(8, true)
    };
    let c = join_cluster(1, budget, JoinMode::Guarded, cfg);
    let hold = c.hold_memory(0, budget * 9 / 10).unwrap();
    let waiting: Vec<BoundedStream> = (0..2)
        .map(|_| c.query_stream("SELECT COUNT(*) FROM big", &[]).unwrap())
        .collect();
    // Let both enter the queue.
    let deadline = Instant::now() + Duration::from_secs(5);
    while c.stats().breaker.rejections < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(2));
    }
    let err = c.query("SELECT COUNT(*) FROM big", &[]).unwrap_err();
    assert!(matches!(err, Error::Overloaded(_)), "{err}");
    drop(hold);
    for s in waiting {
        assert_eq!(drain(s), Ok(1));
    }
    assert_idle(&c);
}

#[test]
fn quick_joins_in_a_row_are_never_rejected() {
    // Admission counts joins that were admitted but have not built yet; a query that ends
    // quickly must stop counting at once, or a steady stream of short joins would be refused.
    let budget = 24 * MIB;
    let c = join_cluster(1, budget, JoinMode::Guarded, breaker(8, true));
    for _ in 0..30 {
        let t = Instant::now();
        let r = c
            .query(
                "SELECT COUNT(*) FROM big JOIN small ON big.k = small.id",
                &[],
            )
            .unwrap();
        assert_eq!(r.rows(), vec![vec![Value::Int(60_000)]]);
        assert!(t.elapsed() < Duration::from_secs(5));
    }
    assert_eq!(c.stats().breaker.rejections, 0);
    assert_idle(&c);
}
