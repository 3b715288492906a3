//! After every query, finished, failed or cancelled, its actors stop and its memory
//! reservations return to zero.

use crate::common;

use common::{assert_idle, cluster, TestCluster};
use weir::{Batch, Column, Error, Value};

fn setup() -> TestCluster {
    let c = cluster(3);
    c.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, k BIGINT, v BIGINT)")
        .unwrap();
    c.execute("CREATE TABLE u (id BIGINT PRIMARY KEY, w BIGINT)")
        .unwrap();
    let n = 20_000i64;
    c.load(
        "t",
        Batch::try_new(vec![
            Column::from_i64((0..n).collect()),
            Column::from_i64((0..n).map(|i| i % 500).collect()),
            Column::from_i64((0..n).map(|i| i % 13).collect()),
        ])
        .unwrap(),
    )
    .unwrap();
    c.load(
        "u",
        Batch::try_new(vec![
            Column::from_i64((0..500).collect()),
            Column::from_i64((0..500).collect()),
        ])
        .unwrap(),
    )
    .unwrap();
    c
}

#[test]
fn success_error_and_cancel_leave_nothing_behind() {
    let c = setup();
    assert_idle(&c);
    let baseline = c.stats().live_actors();

    // Success: a join (holds a build side), an aggregate and a sort.
    let r = c
        .query(
            "SELECT t.k, COUNT(*), SUM(u.w) FROM t JOIN u ON t.k = u.id GROUP BY t.k ORDER BY t.k DESC",
            &[],
        )
        .unwrap();
    assert_eq!(r.num_rows(), 500);
    assert_idle(&c);

    // Failure in a data fragment: BIGINT overflow on every node (division by zero is NULL).
    let err = c
        .query("SELECT id * 0 + 9223372036854775807 + 1 FROM t", &[])
        .unwrap_err();
    assert!(matches!(err, Error::Overflow { .. }), "{err}");
    assert!(err.to_string().contains("node-"), "{err}");
    assert_idle(&c);

    // Cancellation: drop a stream half way through.
    let mut s = c
        .query_stream("SELECT id, k FROM t ORDER BY id", &[])
        .unwrap();
    let _ = s.next().unwrap().unwrap();
    drop(s);
    assert_idle(&c);

    // Cancellation before the first batch was read.
    drop(
        c.query_stream("SELECT t.id FROM t JOIN u ON t.k = u.id", &[])
            .unwrap(),
    );
    assert_idle(&c);

    // An early LIMIT stops the producers that still run.
    let r = c.query("SELECT id FROM t LIMIT 3", &[]).unwrap();
    assert_eq!(r.num_rows(), 3);
    assert_idle(&c);

    // Still usable afterwards.
    let r = c
        .query("SELECT COUNT(*) FROM t WHERE k = ?", &[Value::Int(7)])
        .unwrap();
    assert_eq!(r.rows(), vec![vec![Value::Int(40)]]);
    assert_idle(&c);
    assert_eq!(c.stats().live_actors(), baseline);
}

/// Shutting a cluster down while queries are still queued or running ends every one of
/// their streams (with its rows or an error, never a hang), and no thread panics: the
/// actors an arbiter drops without having run them stop without setting timers on a
/// runtime that is already gone.
#[test]
fn shutdown_with_queries_in_flight_ends_them_and_panics_nowhere() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let runtime_panics = Arc::new(AtomicUsize::new(0));
    let previous = std::panic::take_hook();
    let seen = runtime_panics.clone();
    std::panic::set_hook(Box::new(move |info| {
        if info.to_string().contains("reactor") {
            seen.fetch_add(1, Ordering::SeqCst);
        }
        previous(info);
    }));
    let c = setup();
    let shared = c.shared();
    drop(c);
    let Ok(cluster) = Arc::try_unwrap(shared) else {
        panic!("the test holds the only handle");
    };
    let streams: Vec<_> = (0..300)
        .map(|i| {
            let sql = if i % 2 == 0 {
                "SELECT t.v, u.w FROM t JOIN u ON t.k = u.id"
            } else {
                "SELECT k, SUM(v) FROM t GROUP BY k"
            };
            cluster.query_stream(sql, &[]).expect("the query starts")
        })
        .collect();
    cluster.shutdown();
    let (mut complete, mut failed) = (0, 0);
    for stream in streams {
        let ended =
            common::run_bounded("a stream after shutdown", common::QUERY_LIMIT, move || {
                let mut rows = 0;
                for batch in stream {
                    match batch {
                        Ok(b) => rows += b.num_rows(),
                        Err(_) => return None,
                    }
                }
                Some(rows)
            });
        match ended {
            Some(rows) => {
                assert!(
                    rows == 20_000 || rows == 500,
                    "a complete answer: {rows} rows"
                );
                complete += 1;
            }
            None => failed += 1,
        }
    }
    assert_eq!(complete + failed, 300);
    assert!(failed > 0, "the shutdown came while queries were queued");
    assert_eq!(
        runtime_panics.load(Ordering::SeqCst),
        0,
        "a thread panicked"
    );
}

/// A stream dropped as soon as it is made cancels a query whose actor may not have been
/// created yet: once the cluster says it is idle, no actor of that query appears afterwards.
#[test]
fn a_stream_dropped_at_once_leaves_the_cluster_idle_for_good() {
    let c = setup();
    let baseline = c.stats().live_actors();
    for round in 0..200 {
        drop(
            c.query_stream("SELECT id, v FROM t ORDER BY v", &[])
                .unwrap(),
        );
        assert_idle(&c);
        let per_node: Vec<usize> = c.stats().nodes.iter().map(|n| n.live_actors).collect();
        assert_eq!(
            per_node.iter().sum::<usize>(),
            baseline,
            "round {round}: actors after the cluster was idle: {per_node:?}"
        );
    }
}
