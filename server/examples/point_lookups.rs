//! What the PostgreSQL protocol costs: on one cluster of 3 nodes holding 100,000 rows, primary-key
//! lookups per second and rows per second of a scan, in process (`Prepared::query`) and through
//! the server (a `tokio-postgres` prepared statement on one connection, a closed loop), side by
//! side.
//!
//! ```sh
//! cargo run --release -p weir-server --example point_lookups [-- SECONDS]
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_postgres::NoTls;
use weir_operators::{Batch, Column};
use weir_runtime::Cluster;
use weir_server::ServePostgres;

const ROWS: i64 = 100_000;

/// Calls `f` until `seconds` have passed; calls per second.
fn rate(seconds: f64, mut f: impl FnMut(i64)) -> f64 {
    let start = Instant::now();
    let mut n = 0i64;
    while start.elapsed() < Duration::from_secs_f64(seconds) {
        f((n * 7919) % ROWS);
        n += 1;
    }
    n as f64 / start.elapsed().as_secs_f64()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let seconds: f64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0);
    let cluster = Arc::new(Cluster::builder().nodes(3).build().unwrap());
    cluster
        .execute("CREATE TABLE item (id BIGINT PRIMARY KEY, name VARCHAR, fld BIGINT)")
        .unwrap();
    let ids: Vec<i64> = (0..ROWS).collect();
    let names: Vec<String> = ids.iter().map(|i| format!("name{i}")).collect();
    let batch = Batch::try_new(vec![
        Column::from_i64(ids.clone()),
        Column::from_strs(&names),
        Column::from_i64(ids),
    ])
    .unwrap();
    cluster.load("item", batch).unwrap();

    let lookup = cluster
        .prepare("SELECT name FROM item WHERE id = ?")
        .unwrap();
    let in_process = rate(seconds, |k| {
        assert_eq!(lookup.query((k,)).unwrap().num_rows(), 1);
    });
    let scan = cluster
        .prepare("SELECT id, name FROM item WHERE fld >= ?")
        .unwrap();
    let scans = rate(seconds, |_| {
        assert_eq!(scan.query((0i64,)).unwrap().num_rows(), ROWS as usize);
    });

    let server = cluster.clone().serve_postgres("127.0.0.1:0").unwrap();
    let addr = server.local_addr();
    let (client, connection) = tokio_postgres::connect(
        &format!("host=127.0.0.1 port={} user=weir", addr.port()),
        NoTls,
    )
    .await
    .unwrap();
    tokio::spawn(connection);
    let get = client
        .prepare("SELECT name FROM item WHERE id = $1")
        .await
        .unwrap();
    let start = Instant::now();
    let mut n = 0i64;
    while start.elapsed() < Duration::from_secs_f64(seconds) {
        let row = client
            .query_one(&get, &[&((n * 7919) % ROWS)])
            .await
            .unwrap();
        assert!(row.get::<_, String>(0).starts_with("name"));
        n += 1;
    }
    let through_server = n as f64 / start.elapsed().as_secs_f64();
    let scan_pg = client
        .prepare("SELECT id, name FROM item WHERE fld >= $1")
        .await
        .unwrap();
    let start = Instant::now();
    let mut m = 0u64;
    while start.elapsed() < Duration::from_secs_f64(seconds) {
        assert_eq!(
            client.query(&scan_pg, &[&0i64]).await.unwrap().len(),
            ROWS as usize
        );
        m += 1;
    }
    let scans_pg = m as f64 / start.elapsed().as_secs_f64();
    println!(
        "{:<34} {:>14} {:>18}",
        "", "in process", "through PostgreSQL"
    );
    println!(
        "{:<34} {:>14.0} {:>18.0}   ({:.2}x)",
        "point lookups per second",
        in_process,
        through_server,
        in_process / through_server
    );
    println!(
        "{:<34} {:>14.0} {:>18.0}   ({:.2}x)",
        "scan rows per second (100,000)",
        scans * ROWS as f64,
        scans_pg * ROWS as f64,
        scans / scans_pg
    );
    server.shutdown();
}
