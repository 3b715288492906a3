//! Embedding weir in a service: build a cluster, create a table, load rows, query them
//! (all at once and streamed), and look at the cluster's figures.
//!
//! Run with `cargo run --release --example embed`.

use weir::{Batch, Cluster, Column, Value};

fn main() -> weir::Result<()> {
    let cluster = Cluster::builder().nodes(3).partitions(256).build()?;
    cluster.execute("CREATE TABLE events (id BIGINT PRIMARY KEY, kind VARCHAR, ms BIGINT)")?;
    cluster.execute("CREATE INDEX events_kind ON events(kind)")?;
    let n = 100_000i64;
    let kinds = ["click", "view", "buy"];
    let kind: Vec<&str> = (0..n).map(|i| kinds[(i % 3) as usize]).collect();
    cluster.load(
        "events",
        Batch::try_new(vec![
            Column::from_i64((0..n).collect()),
            Column::from_strs(&kind),
            Column::from_i64((0..n).map(|i| i % 997).collect()),
        ])
        .expect("equal lengths"),
    )?;

    let r = cluster.query(
        "SELECT kind, COUNT(*) AS n, AVG(ms) AS avg_ms FROM events GROUP BY kind ORDER BY kind",
        &[],
    )?;
    println!("{}", r.column_names().join(" | "));
    for row in r.rows() {
        let cells: Vec<String> = row.iter().map(ToString::to_string).collect();
        println!("{}", cells.join(" | "));
    }

    // Stream a large result: the cluster never runs more than a few batches ahead.
    let mut rows = 0;
    for batch in cluster.query_stream(
        "SELECT id, ms FROM events WHERE kind = ?",
        &[Value::from("buy")],
    )? {
        rows += batch?.num_rows();
    }
    println!("streamed {rows} rows");
    let s = cluster.stats();
    println!(
        "messages between nodes: {}, bytes: {}",
        s.messages.total, s.messages.bytes
    );
    cluster.shutdown();
    Ok(())
}
