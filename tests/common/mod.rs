//! Helpers shared by the integration tests.
//!
//! Every query a test expects an answer from runs under a watchdog ([`run_bounded`], or the
//! [`TestCluster`] wrapper that applies it to `query` and `query_stream`): a query that
//! hangs fails its test after [`QUERY_LIMIT`], with a message naming the query, instead of
//! waiting for the cluster's query timeout ([`QUERY_TIMEOUT`], well above the limit) and
//! perhaps passing on a timeout error.
#![allow(dead_code)]

use std::ops::Deref;
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};
use weir::{Batch, Cluster, ClusterBuilder, Column, Protocol, QueryResult, QueryStream, Value};

/// Query timeout of the clusters built by [`cluster_builder`].
pub const QUERY_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a test waits for one query (or one batch of a stream) before it fails as hung.
/// Well below [`QUERY_TIMEOUT`], so a hang is reported as a hang, never as a timeout error.
pub const QUERY_LIMIT: Duration = Duration::from_secs(10);

/// Test defaults: 64 partitions per table and [`QUERY_TIMEOUT`].
pub fn cluster_builder() -> ClusterBuilder {
    Cluster::builder()
        .partitions(64)
        .query_timeout(QUERY_TIMEOUT)
}

/// A cluster with `nodes` data nodes and the test defaults.
pub fn cluster(nodes: usize) -> TestCluster {
    TestCluster::new(
        cluster_builder()
            .nodes(nodes)
            .build()
            .expect("cluster starts"),
    )
}

/// A cluster with the given protocol.
pub fn cluster_with(nodes: usize, protocol: Protocol) -> TestCluster {
    TestCluster::new(
        cluster_builder()
            .nodes(nodes)
            .protocol(protocol)
            .build()
            .expect("cluster starts"),
    )
}

/// Runs `f` on its own thread and returns what it returns; panics, naming `what`, when `f`
/// has not returned within `limit`. A panic inside `f` is passed on. (A hung `f` is left
/// running; its thread ends when the query finally times out.)
pub fn run_bounded<T, F>(what: &str, limit: Duration, f: F) -> T
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("weir-test-bounded".into())
        .spawn(move || {
            let _ = tx.send(std::panic::catch_unwind(AssertUnwindSafe(f)));
        })
        .expect("spawn a bounded thread");
    match rx.recv_timeout(limit) {
        Ok(Ok(v)) => v,
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Err(RecvTimeoutError::Timeout) => panic!(
            "watchdog: {what} did not return within {limit:?} (the query timeout is longer: \
             the query hangs)"
        ),
        Err(RecvTimeoutError::Disconnected) => {
            panic!("watchdog: {what} ended without a result")
        }
    }
}

/// A cluster whose `query` and `query_stream` run under the watchdog; everything else goes
/// to the [`Cluster`] it wraps.
pub struct TestCluster {
    inner: Arc<Cluster>,
    limit: Duration,
}

impl TestCluster {
    /// Wraps `cluster` with the watchdog limit [`QUERY_LIMIT`].
    pub fn new(cluster: Cluster) -> Self {
        TestCluster {
            inner: Arc::new(cluster),
            limit: QUERY_LIMIT,
        }
    }

    /// The same cluster with another watchdog limit.
    pub fn with_limit(mut self, limit: Duration) -> Self {
        self.limit = limit;
        self
    }

    /// The watchdog limit.
    pub fn limit(&self) -> Duration {
        self.limit
    }

    /// The wrapped cluster, to move into a thread.
    pub fn shared(&self) -> Arc<Cluster> {
        self.inner.clone()
    }

    /// [`Cluster::query`] under the watchdog.
    pub fn query(&self, sql: &str, params: &[Value]) -> weir::Result<QueryResult> {
        let (c, q, p) = (self.inner.clone(), sql.to_string(), params.to_vec());
        run_bounded(&describe(sql, params), self.limit, move || c.query(&q, &p))
    }

    /// [`Cluster::execute`] under the watchdog (a statement may be a query).
    pub fn execute(&self, sql: &str) -> weir::Result<u64> {
        self.execute_with(sql, &[])
    }

    /// [`Cluster::execute_with`] under the watchdog.
    pub fn execute_with(&self, sql: &str, params: &[Value]) -> weir::Result<u64> {
        let (c, q, p) = (self.inner.clone(), sql.to_string(), params.to_vec());
        run_bounded(&describe(sql, params), self.limit, move || {
            c.execute_with(&q, &p)
        })
    }

    /// [`Cluster::query_stream`] whose every batch is awaited under the watchdog.
    pub fn query_stream(&self, sql: &str, params: &[Value]) -> weir::Result<BoundedStream> {
        let (c, q, p) = (self.inner.clone(), sql.to_string(), params.to_vec());
        let what = describe(sql, params);
        let stream = run_bounded(&what, self.limit, move || c.query_stream(&q, &p))?;
        Ok(BoundedStream::new(stream, what, self.limit))
    }
}

impl Deref for TestCluster {
    type Target = Cluster;

    fn deref(&self) -> &Cluster {
        &self.inner
    }
}

/// A statement for messages (long ones cut short).
fn describe(sql: &str, params: &[Value]) -> String {
    let mut text: String = sql.chars().take(300).collect();
    if text.len() < sql.len() {
        text.push_str("...");
    }
    if params.is_empty() {
        format!("`{text}`")
    } else {
        let mut p = format!("{params:?}");
        if p.len() > 300 {
            p = format!("{} parameters", params.len());
        }
        format!("`{text}` with {p}")
    }
}

enum Pulled {
    Item(Option<weir::Result<Batch>>),
    Stats(Option<weir::QueryStats>),
}

/// A [`QueryStream`] read on a helper thread, one batch at a time on demand (so the
/// consumer's pace still holds the producers back); waiting for a batch is bounded by the
/// watchdog. Dropping it drops the stream, which cancels the query.
pub struct BoundedStream {
    ask: Option<mpsc::Sender<bool>>,
    answers: mpsc::Receiver<Pulled>,
    schema: weir::Schema,
    what: String,
    limit: Duration,
    stats: Option<weir::QueryStats>,
}

impl BoundedStream {
    fn new(stream: QueryStream, what: String, limit: Duration) -> Self {
        let schema = stream.schema().clone();
        let (ask, asked) = mpsc::channel::<bool>();
        let (tx, answers) = mpsc::channel();
        std::thread::Builder::new()
            .name("weir-test-stream".into())
            .spawn(move || {
                let mut stream = stream;
                // `true` asks for the next batch, `false` for the statistics.
                while let Ok(next) = asked.recv() {
                    let answer = if next {
                        Pulled::Item(stream.next())
                    } else {
                        Pulled::Stats(stream.stats().cloned())
                    };
                    if tx.send(answer).is_err() {
                        break;
                    }
                }
            })
            .expect("spawn a stream thread");
        BoundedStream {
            ask: Some(ask),
            answers,
            schema,
            what,
            limit,
            stats: None,
        }
    }

    fn pull(&self, next: bool) -> Pulled {
        let started = Instant::now();
        if let Some(ask) = &self.ask {
            let _ = ask.send(next);
        }
        match self.answers.recv_timeout(self.limit) {
            Ok(p) => p,
            Err(_) => panic!(
                "watchdog: {} gave no batch within {:?} (waited {:?}; the query hangs)",
                self.what,
                self.limit,
                started.elapsed()
            ),
        }
    }

    /// Result columns.
    pub fn schema(&self) -> &weir::Schema {
        &self.schema
    }

    /// Statistics, available once the stream has ended successfully.
    pub fn stats(&mut self) -> Option<&weir::QueryStats> {
        if self.stats.is_none() {
            if let Pulled::Stats(s) = self.pull(false) {
                self.stats = s;
            }
        }
        self.stats.as_ref()
    }

    /// Reads the rest of the stream into a [`QueryResult`], every batch under the watchdog.
    pub fn collect_all(mut self) -> weir::Result<QueryResult> {
        let mut batches = Vec::new();
        for b in self.by_ref() {
            batches.push(b?);
        }
        let stats = self.stats().cloned().unwrap_or_default();
        Ok(QueryResult {
            schema: self.schema.clone(),
            batches,
            stats,
        })
    }
}

impl Iterator for BoundedStream {
    type Item = weir::Result<Batch>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.pull(true) {
            Pulled::Item(item) => item,
            Pulled::Stats(_) => unreachable!("asked for a batch"),
        }
    }
}

/// Asserts that every query actor has stopped and every reservation was returned.
pub fn assert_idle(cluster: &Cluster) {
    let idle = cluster.wait_idle(Duration::from_secs(10));
    let s = cluster.stats();
    assert!(
        idle,
        "cluster not idle: live actors {} (baseline {}), reserved {} bytes: {:?}",
        s.live_actors(),
        cluster.baseline_actors(),
        s.memory_reserved(),
        s.nodes
    );
}

/// Creates `t (id BIGINT PRIMARY KEY, v BIGINT)` on `cluster` and loads rows `id` in `0..n`,
/// with `v` = `value(id)`.
pub fn load_t(cluster: &Cluster, n: i64, value: impl Fn(i64) -> i64) {
    cluster
        .execute("CREATE TABLE t (id BIGINT PRIMARY KEY, v BIGINT)")
        .unwrap();
    let batch = Batch::try_new(vec![
        Column::from_i64((0..n).collect()),
        Column::from_i64((0..n).map(value).collect()),
    ])
    .unwrap();
    cluster.load("t", batch).unwrap();
}

/// Rows as integers (panics on other values).
pub fn ints(rows: &[Vec<Value>]) -> Vec<Vec<i64>> {
    rows.iter()
        .map(|r| {
            r.iter()
                .map(|v| {
                    v.as_i64()
                        .unwrap_or_else(|| panic!("not an integer: {v:?}"))
                })
                .collect()
        })
        .collect()
}

/// A cluster of 2 data nodes, each partition with a copy, keeping its data in `dir`: opened
/// again on the same `dir`, it holds what it held.
pub fn durable_cluster(dir: &Path) -> Cluster {
    cluster_builder()
        .nodes(2)
        .backups(1)
        .data_dir(dir)
        .build()
        .unwrap()
}

/// The first value of each row, as integers (panics on other values).
pub fn first_ints(rows: &[Vec<Value>]) -> Vec<i64> {
    ints(rows).into_iter().map(|r| r[0]).collect()
}

/// Rows sorted, for order-independent comparison (NULL first).
pub fn sorted_rows(mut rows: Vec<Vec<Value>>) -> Vec<Vec<Value>> {
    rows.sort_by(|x, y| {
        x.iter()
            .zip(y)
            .map(|(a, b)| a.sort_cmp(b))
            .find(|o| o.is_ne())
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(x.len().cmp(&y.len()))
    });
    rows
}

/// Copies directory `from` into `to`.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}
