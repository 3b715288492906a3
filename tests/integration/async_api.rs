//! The async API (`query_async`, `query_stream_async`, and the same on prepared
//! statements) from tokio: the same answers as the blocking API, errors as errors, the
//! consumer's pace holding the producers back, and a dropped stream cancelling its query.

use crate::common;

use common::{assert_idle, cluster, sorted_rows, QUERY_LIMIT};
use futures::StreamExt;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use weir::runtime::FaultPlan;
use weir::{Cluster, Error, MessageKind, Value};

/// Awaits `f`, failing the test (naming `what`) when it takes longer than [`QUERY_LIMIT`].
async fn bounded<T>(what: &str, f: impl Future<Output = T>) -> T {
    tokio::time::timeout(QUERY_LIMIT, f)
        .await
        .unwrap_or_else(|_| panic!("hung: {what}"))
}

/// A cluster with table `t (id, v)` of `n` rows, `v = id`, in batches of `batch` rows under a
/// credit window of `window` batches.
fn loaded(n: i64, batch: usize, window: usize) -> Cluster {
    let c = Cluster::builder()
        .nodes(3)
        .partitions(64)
        .batch_size(batch)
        .window(window)
        .query_timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    common::load_t(&c, n, |i| i);
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_equal_the_blocking_api() {
    let c = cluster(3);
    c.execute("CREATE TABLE a (id BIGINT PRIMARY KEY, g BIGINT, x DOUBLE)")
        .unwrap();
    c.execute("CREATE TABLE b (g BIGINT PRIMARY KEY, name VARCHAR)")
        .unwrap();
    for i in 0..200i64 {
        c.execute_with(
            "INSERT INTO a VALUES (?, ?, ?)",
            &[i.into(), (i % 7).into(), Value::Float(i as f64 / 4.0)],
        )
        .unwrap();
    }
    for g in 0..7i64 {
        c.execute_with(
            "INSERT INTO b VALUES (?, ?)",
            &[g.into(), format!("g{g}").into()],
        )
        .unwrap();
    }
    let queries = [
        "SELECT id, x FROM a WHERE id >= 150",
        "SELECT g, COUNT(*), SUM(x) FROM a GROUP BY g ORDER BY g",
        "SELECT b.name, COUNT(*) FROM a JOIN b ON a.g = b.g GROUP BY b.name ORDER BY b.name",
        "SELECT id FROM a ORDER BY id DESC LIMIT 5",
    ];
    for sql in queries {
        let sync = c.query(sql, &[]).unwrap();
        let r = bounded(sql, c.query_async(sql, &[])).await.unwrap();
        assert_eq!(r.column_names(), sync.column_names(), "{sql}");
        assert_eq!(sorted_rows(r.rows()), sorted_rows(sync.rows()), "{sql}");
        if sql.contains("ORDER BY") {
            assert_eq!(r.rows(), sync.rows(), "{sql}");
        }
        let mut stream = bounded(sql, c.query_stream_async(sql, &[])).await.unwrap();
        let mut rows = Vec::new();
        while let Some(b) = bounded(sql, stream.next()).await {
            rows.extend(b.unwrap().rows());
        }
        assert!(stream.stats().is_some(), "{sql}: no stats after the end");
        assert_eq!(sorted_rows(rows), sorted_rows(sync.rows()), "{sql}");
    }
    let stmt = c.prepare("SELECT x FROM a WHERE id = ?").unwrap();
    let r = bounded("prepared", stmt.query_async((42i64,)))
        .await
        .unwrap();
    assert_eq!(r.rows(), vec![vec![Value::Float(10.5)]]);
    let total: usize = bounded("prepared stream", async {
        let mut s = stmt.query_stream_async((7i64,)).await.unwrap();
        let mut n = 0;
        while let Some(b) = s.next().await {
            n += b.unwrap().num_rows();
        }
        n
    })
    .await;
    assert_eq!(total, 1);
    assert_idle(&c);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_arrive_as_errors() {
    let c = cluster(2);
    c.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, v BIGINT)")
        .unwrap();
    c.execute("INSERT INTO t VALUES (1, 0), (2, 1)").unwrap();
    let err = bounded("unknown table", c.query_async("SELECT * FROM nope", &[]))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Plan(_)), "{err:?}");
    assert!(err.to_string().contains("nope"), "{err}");
    assert!(c
        .query_stream_async("SELECT * FROM nope", &[])
        .await
        .is_err());
    // An execution error comes out of the stream as its last item.
    let mut s = c
        .query_stream_async("SELECT id + 9223372036854775807 FROM t", &[])
        .await
        .unwrap();
    let mut failed = None;
    while let Some(item) = bounded("overflow", s.next()).await {
        if let Err(e) = item {
            failed = Some(e);
        }
    }
    let e = failed.expect("the overflow is reported");
    assert!(e.to_string().contains("BIGINT overflow"), "{e}");
    assert_idle(&c);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_stream_cancels_the_query() {
    let n = 60_000i64;
    let c = loaded(n, 256, 2);
    let total_batches = n as u64 / 256;
    let before = c.stats().messages.count(MessageKind::QueryBatch);
    let mut stream = c
        .query_stream_async("SELECT id, v + 1 FROM t WHERE v >= 0", &[])
        .await
        .unwrap();
    let first = bounded("first batch", stream.next())
        .await
        .unwrap()
        .unwrap();
    assert!(first.num_rows() > 0);
    let running = c.stats();
    assert!(
        running.live_actors() > c.baseline_actors(),
        "the query's actors run while the stream is open"
    );
    drop(stream);
    assert_idle(&c);
    let stats = c.stats();
    assert_eq!(stats.memory_reserved(), 0);
    assert_eq!(stats.live_actors(), c.baseline_actors());
    let sent = stats.messages.count(MessageKind::QueryBatch) - before;
    assert!(
        sent < total_batches / 2,
        "the cancelled query ran on: {sent} of {total_batches} batches sent"
    );
    // The cluster still answers.
    let r = bounded("after cancel", c.query_async("SELECT COUNT(*) FROM t", &[]))
        .await
        .unwrap();
    assert_eq!(r.rows(), vec![vec![Value::Int(n)]]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_future_cancels_the_query() {
    let c = loaded(60_000, 256, 2);
    let started = tokio::time::timeout(
        Duration::from_millis(20),
        c.query_async("SELECT id, v + 1 FROM t WHERE v >= 0 ORDER BY v", &[]),
    )
    .await;
    // Whether or not it finished in time, nothing of it is left afterwards.
    drop(started);
    assert_idle(&c);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_consumer_holds_the_producers_back() {
    let window = 2;
    let n = 60_000i64;
    let c = loaded(n, 256, window);
    let total_batches = n as u64 / 256;
    let before = c.stats().messages.count(MessageKind::QueryBatch);
    let mut stream = c
        .query_stream_async("SELECT id, v + 1 FROM t WHERE v >= 0", &[])
        .await
        .unwrap();
    let first = bounded("first batch", stream.next())
        .await
        .unwrap()
        .unwrap();
    // Give the producers every chance to run ahead while the reader sleeps.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let sent = c.stats().messages.count(MessageKind::QueryBatch) - before;
    assert!(
        sent < total_batches / 4,
        "producers ran ahead of a paused reader: {sent} of {total_batches} batches sent"
    );
    let mut rows = first.num_rows();
    while let Some(b) = bounded("next batch", stream.next()).await {
        rows += b.unwrap().num_rows();
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert_eq!(rows, n as usize);
    let stats = stream.stats().unwrap().clone();
    for (edge, hw) in &stats.edges {
        assert!(
            *hw <= window,
            "edge {edge} held {hw} batches, window {window}"
        );
    }
    assert!(stats.edges.iter().any(|(_, hw)| *hw == window), "{stats:?}");
    assert_idle(&c);
}

/// On a single-threaded runtime, a task waiting for batches leaves the thread to the
/// others: a ticker task spawned on the same thread runs while the query streams (it could
/// not if waiting for a batch blocked the thread). Every network message is delayed by
/// 20-30 ms, so the consumer does have to wait for its batches.
#[test]
fn waiting_for_batches_does_not_block_the_thread() {
    let n = 3_000i64;
    let c = loaded(n, 128, 2);
    c.network().set_faults(Some(FaultPlan {
        seed: 7,
        delay: Some((Duration::from_millis(20), Duration::from_millis(30))),
        ..FaultPlan::default()
    }));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let ticks = Arc::new(AtomicU64::new(0));
    let (rows, ticks_while_streaming) = rt.block_on(async {
        let ticker = tokio::spawn({
            let ticks = ticks.clone();
            async move {
                loop {
                    ticks.fetch_add(1, Ordering::Relaxed);
                    tokio::task::yield_now().await;
                }
            }
        });
        let mut s = c
            .query_stream_async("SELECT id FROM t WHERE v % 3 = 0", &[])
            .await
            .unwrap();
        let mut rows = 0;
        while let Some(b) = bounded("next batch", s.next()).await {
            rows += b.unwrap().num_rows();
        }
        let seen = ticks.load(Ordering::Relaxed);
        ticker.abort();
        (rows, seen)
    });
    assert_eq!(rows, (0..n).filter(|v| v % 3 == 0).count());
    assert!(
        ticks_while_streaming > 0,
        "the consumer never let the ticker run"
    );
    assert_idle(&c);
}
