//! The soak: a long mix of the seed queries, joins, point lookups, cancelled streams, memory
//! pressure that trips the breaker and, optionally, injected faults and node crashes. It
//! checks the values of every answer against answers computed from the generated data, counts
//! every error by kind, and, at the end, checks that nothing leaked: accounted memory zero and
//! live actors at the baseline on every node.
//!
//! A run passes only if every query ended in an outcome the soak expects: an answer with the
//! right values, or a stream its caller dropped ([`EXPECTED`]). Breaker kills and admission
//! rejections are expected too, as long as the query was retried and answered; a query that
//! failed with `killed` or `breaker_open` fails the run. With faults, the failures in
//! [`TOLERATED_WITH_FAULTS`] are tolerated for now; any other error fails the run.

use crate::demo::{self, SeedQuery, SEED_QUERIES};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::collections::{BTreeMap, HashMap};
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

/// Outcome of a query answered with the right values.
pub const OK: &str = "ok";
/// Outcome of a query answered with wrong values (or the wrong rows).
pub const WRONG: &str = "wrong";
/// Outcome of a stream the soak itself dropped after its first batch (a cancellation by the
/// caller; its first batch was checked).
pub const CANCELLED_BY_CALLER: &str = "cancelled by caller";

/// Outcomes that are never a failure.
pub const EXPECTED: [&str; 2] = [OK, CANCELLED_BY_CALLER];

/// Failures tolerated when faults are injected (and only then): a node that crashed after
/// rows of the query had reached its caller (the query cannot be rerun on the copies). Lost
/// and corrupted messages are retransmitted, so a timeout is a failure even with faults.
/// Failures are labelled by [`Error::kind`], with [`AFTER_ROWS`] appended when a batch had
/// reached the caller before the error.
pub const TOLERATED_WITH_FAULTS: [&str; 1] = ["node_down after rows"];

/// Appended to the label of a failure that came after a batch had reached the caller.
pub const AFTER_ROWS: &str = " after rows";

/// Label of a failed query: its error kind, and whether rows had reached the caller.
pub fn failure_label(e: &Error, after_rows: bool) -> String {
    if after_rows {
        format!("{}{AFTER_ROWS}", e.kind())
    } else {
        e.kind().to_string()
    }
}

/// What the soak saw.
#[derive(Debug, Clone, Default)]
pub struct SoakReport {
    /// Queries by outcome: [`OK`], [`WRONG`], [`CANCELLED_BY_CALLER`], or a failure label
    /// (see [`failure_label`]).
    pub outcomes: BTreeMap<String, usize>,
    /// Whether faults were injected (which widens the tolerated outcomes).
    pub faults: bool,
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

/// How an outcome counts towards passing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// An answer, or a cancellation by the caller.
    Expected,
    /// A failure tolerated for now because faults were injected.
    Tolerated,
    /// A wrong answer, or an error the soak did not inject.
    Unexpected,
}

impl SoakReport {
    /// Queries with outcome `label`.
    pub fn count(&self, label: &str) -> usize {
        self.outcomes.get(label).copied().unwrap_or(0)
    }

    /// Answers that were wrong.
    pub fn wrong(&self) -> usize {
        self.count(WRONG)
    }

    /// How outcome `label` counts in this run.
    pub fn verdict(&self, label: &str) -> Verdict {
        if EXPECTED.contains(&label) {
            Verdict::Expected
        } else if self.faults && TOLERATED_WITH_FAULTS.contains(&label) {
            Verdict::Tolerated
        } else {
            Verdict::Unexpected
        }
    }

    /// Queries that failed with a tolerated error.
    pub fn tolerated(&self) -> usize {
        self.outcomes
            .iter()
            .filter(|(k, _)| self.verdict(k) == Verdict::Tolerated)
            .map(|(_, v)| v)
            .sum()
    }

    /// Outcomes that fail the run, with their counts (wrong answers included).
    pub fn unexpected(&self) -> Vec<(&str, usize)> {
        self.outcomes
            .iter()
            .filter(|(k, _)| self.verdict(k) == Verdict::Unexpected)
            .map(|(k, v)| (k.as_str(), *v))
            .collect()
    }

    /// Whether nothing leaked: no memory left accounted, actors at the baseline.
    pub fn clean(&self) -> bool {
        let actors: usize = self.nodes.iter().map(|n| n.2).sum();
        self.nodes.iter().all(|n| n.1 == 0) && actors == self.baseline_actors
    }

    /// Whether the run passed: every outcome expected (or tolerated, with faults), so no
    /// wrong answer and no error the soak did not inject; no memory left accounted; actors at
    /// the baseline.
    pub fn passed(&self) -> bool {
        self.unexpected().is_empty() && self.clean()
    }

    /// The report as text.
    pub fn render(&self) -> String {
        let mut out = format!(
            "soak finished in {:.1?}\nqueries by outcome:\n",
            self.elapsed
        );
        for (k, v) in &self.outcomes {
            let note = match self.verdict(k) {
                Verdict::Expected => "",
                Verdict::Tolerated => "  (tolerated with faults)",
                Verdict::Unexpected => "  (UNEXPECTED)",
            };
            out.push_str(&format!("  {k:<22} {v}{note}\n"));
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
        if self.passed() {
            out.push_str("PASS\n");
        } else {
            let mut why: Vec<String> = self
                .unexpected()
                .iter()
                .map(|(k, v)| format!("{v} {k}"))
                .collect();
            if !self.clean() {
                why.push("memory or actors left behind".into());
            }
            out.push_str(&format!("FAIL: {}\n", why.join(", ")));
        }
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

const LOOKUP: &str = "SELECT fld FROM Item WHERE id = ?";

/// The query whose stream the soak drops after the first batch.
const DROPPED: &str = "SELECT name, fld FROM Item ORDER BY fld DESC";

/// One row of `Item`, as generated by [`demo::item_batch`].
struct ItemRow {
    id: i64,
    name: String,
    fld: i64,
    fld_batch: i64,
    fld_idx: i64,
    fld_idx_batch: i64,
}

/// The right answers, computed from the generated rows (never from the cluster).
struct Answers {
    items: Vec<ItemRow>,
    /// Rows (indexes into `items`) by value of each filtered column.
    by_id: HashMap<i64, Vec<usize>>,
    by_fld: HashMap<i64, Vec<usize>>,
    by_fld_idx: HashMap<i64, Vec<usize>>,
    by_fld_batch: HashMap<i64, Vec<usize>>,
    by_fld_idx_batch: HashMap<i64, Vec<usize>>,
    /// `queryGroupBy`, `queryGroupByIndexed`, sorted by group.
    group_by: Vec<Vec<Value>>,
    group_by_idx: Vec<Vec<Value>>,
    /// `queryOrderByFull` (and the dropped stream's query), in order.
    order_by_full: Vec<Vec<Value>>,
    /// `querySumIndexed`.
    sum_idx: Vec<Vec<Value>>,
    /// The join, in order.
    join: Vec<Vec<Value>>,
}

fn int(v: &Value) -> i64 {
    v.as_i64().expect("generated integer")
}

/// Rows sorted, for comparing answers whose order SQL leaves open.
fn sorted(mut rows: Vec<Vec<Value>>) -> Vec<Vec<Value>> {
    rows.sort_by(|x, y| {
        x.iter()
            .zip(y)
            .map(|(a, b)| a.sort_cmp(b))
            .find(|o| o.is_ne())
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    rows
}

/// `key, AVG(fld)` per group of `key`, sorted by key.
fn avg_by(items: &[ItemRow], key: impl Fn(&ItemRow) -> i64) -> Vec<Vec<Value>> {
    let mut groups: BTreeMap<i64, (i64, i64)> = BTreeMap::new();
    for r in items {
        let g = groups.entry(key(r)).or_default();
        g.0 += r.fld;
        g.1 += 1;
    }
    groups
        .into_iter()
        .map(|(k, (sum, n))| vec![Value::Int(k), Value::Float(sum as f64 / n as f64)])
        .collect()
}

impl Answers {
    fn new(item_rows: usize, customers: usize, orders: usize, seed: u64) -> Self {
        let items: Vec<ItemRow> = demo::item_batch(0..item_rows as i64)
            .rows()
            .into_iter()
            .map(|r| ItemRow {
                id: int(&r[0]),
                name: r[1].as_str().expect("generated name").to_string(),
                fld: int(&r[2]),
                fld_batch: int(&r[3]),
                fld_idx: int(&r[4]),
                fld_idx_batch: int(&r[5]),
            })
            .collect();
        let index = |key: &dyn Fn(&ItemRow) -> i64| {
            let mut m: HashMap<i64, Vec<usize>> = HashMap::new();
            for (i, r) in items.iter().enumerate() {
                m.entry(key(r)).or_default().push(i);
            }
            m
        };
        let by_id = index(&|r| r.id);
        let by_fld = index(&|r| r.fld);
        let by_fld_idx = index(&|r| r.fld_idx);
        let by_fld_batch = index(&|r| r.fld_batch);
        let by_fld_idx_batch = index(&|r| r.fld_idx_batch);
        let group_by = avg_by(&items, |r| r.fld_batch);
        let group_by_idx = avg_by(&items, |r| r.fld_idx_batch);
        let mut order: Vec<&ItemRow> = items.iter().collect();
        order.sort_by_key(|r| std::cmp::Reverse(r.fld));
        let order_by_full = order
            .iter()
            .map(|r| vec![Value::Str(r.name.clone()), Value::Int(r.fld)])
            .collect();
        let sum_idx = vec![vec![Value::Int(items.iter().map(|r| r.fld_idx).sum())]];

        // The join from the generated customers and orders.
        let region: HashMap<i64, Value> = demo::customers_batch(customers)
            .rows()
            .into_iter()
            .map(|r| (int(&r[0]), r[2].clone()))
            .collect();
        let mut groups: BTreeMap<String, (Value, i64, i64)> = BTreeMap::new();
        for batch in demo::orders_batches(customers, orders, seed) {
            for o in batch.rows() {
                if let Some(reg) = region.get(&int(&o[1])) {
                    let key = reg.as_str().expect("region").to_string();
                    let g = groups.entry(key).or_insert((reg.clone(), 0, 0));
                    g.1 += 1;
                    g.2 += int(&o[2]);
                }
            }
        }
        let mut join: Vec<Vec<Value>> = groups
            .into_values()
            .map(|(r, n, q)| vec![r, Value::Int(n), Value::Int(q)])
            .collect();
        join.sort_by(|a, b| a[0].sort_cmp(&b[0]));

        Answers {
            items,
            by_id,
            by_fld,
            by_fld_idx,
            by_fld_batch,
            by_fld_idx_batch,
            group_by,
            group_by_idx,
            order_by_full,
            sum_idx,
            join,
        }
    }

    fn rows_where(&self, index: &HashMap<i64, Vec<usize>>, v: i64) -> Vec<&ItemRow> {
        index
            .get(&v)
            .map(|is| is.iter().map(|&i| &self.items[i]).collect())
            .unwrap_or_default()
    }

    fn names(&self, index: &HashMap<i64, Vec<usize>>, v: i64) -> Vec<Vec<Value>> {
        sorted(
            self.rows_where(index, v)
                .iter()
                .map(|r| vec![Value::Str(r.name.clone())])
                .collect(),
        )
    }

    /// Whether `result` is the right answer of seed query `q` with parameters `params`.
    fn seed_ok(&self, q: &SeedQuery, params: &[Value], result: Vec<Vec<Value>>) -> bool {
        let p = || params.first().map(int).expect("a parameter");
        match q.name {
            "querySimpleUnique" => sorted(result) == self.names(&self.by_fld, p()),
            "querySimpleUniqueIndexed" => sorted(result) == self.names(&self.by_fld_idx, p()),
            "querySimpleBatch" => sorted(result) == self.names(&self.by_fld_batch, p()),
            "querySimpleBatchIndexed" => sorted(result) == self.names(&self.by_fld_idx_batch, p()),
            "queryGroupBy" => sorted(result) == self.group_by,
            "queryGroupByIndexed" => sorted(result) == self.group_by_idx,
            "queryOrderByFull" => result == self.order_by_full,
            "queryOrderByBatch" => {
                let mut rows = self.rows_where(&self.by_fld_idx_batch, p());
                rows.sort_by_key(|r| std::cmp::Reverse(r.fld));
                let want: Vec<Vec<Value>> = rows
                    .iter()
                    .map(|r| vec![Value::Str(r.name.clone()), Value::Int(r.fld)])
                    .collect();
                result == want
            }
            "querySumIndexed" => result == self.sum_idx,
            other => panic!("no answer known for seed query {other}"),
        }
    }

    fn lookup(&self, id: i64) -> Vec<Vec<Value>> {
        self.rows_where(&self.by_id, id)
            .iter()
            .map(|r| vec![Value::Int(r.fld)])
            .collect()
    }
}

/// Runs a query to its end, batch by batch: its rows, or its error and whether a batch had
/// reached the caller before it.
fn run_query(
    cluster: &Cluster,
    sql: &str,
    params: &[Value],
) -> Result<Vec<Vec<Value>>, (Error, bool)> {
    let stream = cluster.query_stream(sql, params).map_err(|e| (e, false))?;
    let mut rows = Vec::new();
    let mut seen = false;
    for b in stream {
        match b {
            Ok(b) => {
                seen = true;
                rows.extend(b.rows());
            }
            Err(e) => return Err((e, seen)),
        }
    }
    Ok(rows)
}

/// The outcome label of a query whose answer `check` judges.
fn judge(
    result: Result<Vec<Vec<Value>>, (Error, bool)>,
    check: impl FnOnce(Vec<Vec<Value>>) -> bool,
) -> String {
    match result {
        Ok(rows) => if check(rows) { OK } else { WRONG }.to_string(),
        Err((e, after_rows)) => failure_label(&e, after_rows),
    }
}

/// Customers in the soak's join.
const CUSTOMERS: usize = 10_000;

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
    demo::load_join_tables(&cluster, CUSTOMERS, opts.orders, opts.seed)?;
    let answers = Arc::new(Answers::new(
        opts.item_rows,
        CUSTOMERS,
        opts.orders,
        opts.seed,
    ));
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
            let answers = answers.clone();
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
                    let key = rng.random_range(0..opts.item_rows.max(1) as i64);
                    let pick = rng.random_range(0..100u32);
                    let outcome = if pick < 60 {
                        let q = SEED_QUERIES[rng.random_range(0..SEED_QUERIES.len())];
                        let params = q.params(key);
                        judge(run_query(&cluster, q.sql, &params), |rows| {
                            answers.seed_ok(&q, &params, rows)
                        })
                    } else if pick < 80 {
                        judge(run_query(&cluster, JOIN, &[]), |rows| rows == answers.join)
                    } else if pick < 90 {
                        judge(run_query(&cluster, LOOKUP, &[Value::Int(key)]), |rows| {
                            rows == answers.lookup(key)
                        })
                    } else {
                        // A stream dropped after its first batch, which must be the start of
                        // the ordered answer.
                        match cluster.query_stream(DROPPED, &[]) {
                            Ok(mut s) => match s.next() {
                                Some(Ok(b)) => {
                                    let rows = b.rows();
                                    let right = !rows.is_empty()
                                        && answers.order_by_full.get(..rows.len())
                                            == Some(&rows[..]);
                                    if right {
                                        CANCELLED_BY_CALLER.to_string()
                                    } else {
                                        WRONG.to_string()
                                    }
                                }
                                // No rows at all from a table that has rows.
                                None if !answers.order_by_full.is_empty() => WRONG.to_string(),
                                None => CANCELLED_BY_CALLER.to_string(),
                                Some(Err(e)) => failure_label(&e, false),
                            },
                            Err(e) => failure_label(&e, false),
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
        faults: opts.faults,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn report(faults: bool, outcomes: &[(&str, usize)]) -> SoakReport {
        SoakReport {
            outcomes: outcomes.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            faults,
            nodes: vec![("node-0".into(), 0, 2)],
            baseline_actors: 2,
            ..SoakReport::default()
        }
    }

    #[test]
    fn only_expected_outcomes_pass_without_faults() {
        assert!(report(false, &[(OK, 10), (CANCELLED_BY_CALLER, 2)]).passed());
        for bad in [
            "timeout",
            "node_down after rows",
            "killed",
            "breaker_open",
            "cancelled",
        ] {
            let r = report(false, &[(OK, 10), (bad, 1)]);
            assert!(!r.passed(), "{bad}");
            assert_eq!(r.unexpected(), vec![(bad, 1)]);
            assert!(r.render().contains("FAIL"), "{}", r.render());
        }
        assert!(!report(false, &[(OK, 10), (WRONG, 1)]).passed());
    }

    #[test]
    fn faults_tolerate_only_the_listed_failures() {
        let r = report(true, &[(OK, 10), ("node_down after rows", 1)]);
        assert!(r.passed(), "{}", r.render());
        assert_eq!(r.tolerated(), 1);
        for bad in [
            "node_down",
            "timeout",
            "timeout after rows",
            "killed",
            "codec",
            WRONG,
        ] {
            assert!(!report(true, &[(OK, 10), (bad, 1)]).passed(), "{bad}");
        }
    }

    #[test]
    fn leaks_fail_the_run() {
        let mut r = report(false, &[(OK, 1)]);
        r.nodes[0].1 = 64;
        assert!(!r.passed());
        let mut r = report(false, &[(OK, 1)]);
        r.nodes[0].2 = 3;
        assert!(!r.passed());
    }

    #[test]
    fn answers_follow_the_generated_data() {
        let a = Answers::new(3000, 20, 100, 1);
        let q = |name: &str| SEED_QUERIES.iter().find(|q| q.name == name).unwrap();
        let names = |vals: std::ops::Range<i64>| {
            sorted(vals.map(|v| vec![Value::Str(format!("name{v}"))]).collect())
        };
        assert!(a.seed_ok(q("querySimpleUnique"), &[Value::Int(7)], names(7..8)));
        assert!(!a.seed_ok(q("querySimpleUnique"), &[Value::Int(7)], names(8..9)));
        assert!(a.seed_ok(q("querySimpleBatch"), &[Value::Int(2)], names(2000..3000)));
        assert!(!a.seed_ok(q("querySimpleBatch"), &[Value::Int(2)], names(2000..2999)));
        assert_eq!(a.group_by.len(), 3);
        assert_eq!(a.group_by[1], vec![Value::Int(1), Value::Float(1499.5)]);
        assert_eq!(a.sum_idx, vec![vec![Value::Int(2999 * 3000 / 2)]]);
        assert_eq!(
            a.order_by_full[0],
            vec![Value::from("name2999"), Value::Int(2999)]
        );
        assert_eq!(a.lookup(5), vec![vec![Value::Int(5)]]);
        let orders: i64 = a.join.iter().map(|r| r[1].as_i64().unwrap()).sum();
        assert_eq!(orders, 100);
    }
}
