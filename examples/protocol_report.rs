//! Messages and bytes per query for the nine seed queries under the Lean and Legacy
//! workflows, and the size of a start request's partition assignment in both encodings.
//!
//! Run with `cargo run --release --example protocol_report`.

use weir::demo::{load_item, ITEM_ROWS, SEED_QUERIES};
use weir::runtime::replication::copies::owners;
use weir::runtime::wire::partition_map::encoded_sizes;
use weir::{Cluster, Protocol};

fn main() -> weir::Result<()> {
    let assigned: Vec<Option<u32>> = owners(1024, 3).into_iter().map(Some).collect();
    let (compact, list) = encoded_sizes(&assigned);
    println!(
        "partition assignment of a 1024-partition table on 3 nodes: compact {compact} bytes, \
         list of 16-byte node ids {list} bytes ({:.1}x smaller)\n",
        list as f64 / compact as f64
    );
    // A whole start request: the data fragment of querySimpleUnique.
    let mut catalog = weir::planner::Catalog::new();
    let setup = Cluster::builder().nodes(3).build()?;
    weir::demo::create_item(&setup)?;
    for t in setup.tables() {
        catalog.add_table(t).map_err(weir::Error::from)?;
    }
    setup.shutdown();
    if let weir::planner::Statement::Query(plan) =
        weir::planner::plan_statement(SEED_QUERIES[0].sql, &catalog, &[weir::Value::Int(1)], 1024)
            .map_err(weir::Error::from)?
    {
        let (c, l) = weir::runtime::wire::messages::start_request_sizes(
            plan.fragments[1].plan.clone(),
            vec![weir::Value::Int(1)],
            &assigned,
        );
        println!(
            "QueryStartRequest of querySimpleUnique's data fragment: {c} bytes compact, {l} bytes \
             with the list ({:.1}x smaller)\n",
            l as f64 / c as f64
        );
    }
    let mut clusters = Vec::new();
    for protocol in [Protocol::Lean, Protocol::Legacy] {
        let c = Cluster::builder().nodes(3).protocol(protocol).build()?;
        load_item(&c, ITEM_ROWS)?;
        clusters.push((protocol, c));
    }
    println!(
        "| {:<26} | {:>13} | {:>15} | {:>13} | {:>15} |",
        "case", "lean messages", "lean bytes", "legacy msgs", "legacy bytes"
    );
    println!(
        "|{:-<28}|{:->15}|{:->17}|{:->15}|{:->17}|",
        "", "", "", "", ""
    );
    for q in SEED_QUERIES {
        let mut cells = Vec::new();
        for (_, c) in &clusters {
            // Second run: plans are cached, as in a steady-state benchmark.
            c.query(q.sql, &q.params(4242))?;
            let r = c.query(q.sql, &q.params(4242))?;
            cells.push((r.stats.messages.total, r.stats.messages.bytes));
        }
        println!(
            "| {:<26} | {:>13} | {:>15} | {:>13} | {:>15} |",
            q.name, cells[0].0, cells[0].1, cells[1].0, cells[1].1
        );
    }
    Ok(())
}
