//! The demo data set and the seed experiments' queries.
//!
//! `Item` is the table of the Ignite benchmark (`../shared/seeds/README.md`): `Item(val)` for
//! `val` in `0..rows`, keyed by `id = val`, with `name = "name"+val`, `fld = val`,
//! `fldBatch = val/1000`, `fldIdx = val` (indexed) and `fldIdxBatch = val/1000` (indexed).
//!
//! `customers` and `orders` are a join workload: every order belongs to one customer, chosen
//! by a seeded generator.

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use weir_operators::{Batch, Column, Value};
use weir_runtime::{Cluster, Result};

/// Rows of `Item` in the seed benchmark.
pub const ITEM_ROWS: usize = 100_000;

/// The nine queries of the Ignite benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeedQuery {
    /// The benchmark's case name.
    pub name: &'static str,
    /// SQL text.
    pub sql: &'static str,
    /// What its parameter is, if it takes one.
    pub param: SeedParam,
}

/// A seed query's parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeedParam {
    /// No parameter.
    None,
    /// A key in `0..rows`.
    Key,
    /// A key divided by 1000.
    Batch,
}

/// The nine seed queries, in the seed table's order.
pub const SEED_QUERIES: [SeedQuery; 9] = [
    SeedQuery {
        name: "querySimpleUnique",
        sql: "SELECT name FROM Item WHERE fld=?",
        param: SeedParam::Key,
    },
    SeedQuery {
        name: "querySimpleUniqueIndexed",
        sql: "SELECT name FROM Item WHERE fldIdx=?",
        param: SeedParam::Key,
    },
    SeedQuery {
        name: "querySimpleBatch",
        sql: "SELECT name FROM Item WHERE fldBatch=?",
        param: SeedParam::Batch,
    },
    SeedQuery {
        name: "querySimpleBatchIndexed",
        sql: "SELECT name FROM Item WHERE fldIdxBatch=?",
        param: SeedParam::Batch,
    },
    SeedQuery {
        name: "queryGroupBy",
        sql: "SELECT fldBatch, AVG(fld) FROM Item GROUP BY fldBatch",
        param: SeedParam::None,
    },
    SeedQuery {
        name: "queryGroupByIndexed",
        sql: "SELECT fldIdxBatch, AVG(fld) FROM Item GROUP BY fldIdxBatch",
        param: SeedParam::None,
    },
    SeedQuery {
        name: "queryOrderByFull",
        sql: "SELECT name, fld FROM Item ORDER BY fld DESC",
        param: SeedParam::None,
    },
    SeedQuery {
        name: "queryOrderByBatch",
        sql: "SELECT name, fld FROM Item WHERE fldIdxBatch=? ORDER BY fld DESC",
        param: SeedParam::Batch,
    },
    SeedQuery {
        name: "querySumIndexed",
        sql: "SELECT sum(fldIdx) FROM Item",
        param: SeedParam::None,
    },
];

/// A primary-key point lookup on `Item`: not one of the seed's nine, but the case a key-value
/// workload runs most (it touches one partition on one node).
pub const PRIMARY_KEY_QUERY: SeedQuery = SeedQuery {
    name: "queryPrimaryKey",
    sql: "SELECT name FROM Item WHERE id=?",
    param: SeedParam::Key,
};

/// The cases of `weir bench jmh`: the nine seed queries, then [`PRIMARY_KEY_QUERY`].
pub fn bench_queries() -> Vec<SeedQuery> {
    let mut all = SEED_QUERIES.to_vec();
    all.push(PRIMARY_KEY_QUERY);
    all
}

impl SeedQuery {
    /// Parameters for one call with random key `key`.
    pub fn params(&self, key: i64) -> Vec<Value> {
        match self.param {
            SeedParam::None => vec![],
            SeedParam::Key => vec![Value::Int(key)],
            SeedParam::Batch => vec![Value::Int(key / 1000)],
        }
    }

    /// Rows the query must return on an `Item` table of `rows` rows (`rows` a multiple of
    /// 1000), as the original benchmark checks.
    pub fn expected_rows(&self, rows: usize) -> usize {
        match self.name {
            "querySimpleUnique"
            | "querySimpleUniqueIndexed"
            | "querySumIndexed"
            | "queryPrimaryKey" => 1,
            "querySimpleBatch" | "querySimpleBatchIndexed" | "queryOrderByBatch" => 1000.min(rows),
            "queryGroupBy" | "queryGroupByIndexed" => rows.div_ceil(1000),
            _ => rows,
        }
    }
}

/// The statements that create `Item` with its two indexes (plain SQL that PostgreSQL runs
/// too, so a benchmark can build the same table there).
pub const ITEM_DDL: [&str; 3] = [
    "CREATE TABLE Item (id BIGINT PRIMARY KEY, name VARCHAR, fld BIGINT, fldBatch BIGINT, \
     fldIdx BIGINT, fldIdxBatch BIGINT)",
    "CREATE INDEX item_fldIdx ON Item(fldIdx)",
    "CREATE INDEX item_fldIdxBatch ON Item(fldIdxBatch)",
];

/// Creates `Item` with its two indexes ([`ITEM_DDL`]).
pub fn create_item(cluster: &Cluster) -> Result<()> {
    for ddl in ITEM_DDL {
        cluster.execute(ddl)?;
    }
    Ok(())
}

/// The columns of `Item`, as [`create_item`] declares them and [`item_batch`] fills them.
pub fn item_schema() -> weir_operators::Schema {
    use weir_operators::{DataType, Field};
    let int = |n: &str| Field::new(n, DataType::Int64);
    weir_operators::Schema::new(vec![
        int("id"),
        Field::new("name", DataType::Utf8),
        int("fld"),
        int("fldBatch"),
        int("fldIdx"),
        int("fldIdxBatch"),
    ])
}

/// `Item` rows for `val` in `range`.
pub fn item_batch(range: std::ops::Range<i64>) -> Batch {
    let vals: Vec<i64> = range.collect();
    let names: Vec<String> = vals.iter().map(|v| format!("name{v}")).collect();
    let batch: Vec<i64> = vals.iter().map(|v| v / 1000).collect();
    Batch::try_new(vec![
        Column::from_i64(vals.clone()),
        Column::from_strs(&names),
        Column::from_i64(vals.clone()),
        Column::from_i64(batch.clone()),
        Column::from_i64(vals),
        Column::from_i64(batch),
    ])
    .expect("columns of equal length")
}

/// Creates and fills `Item` with `rows` rows.
pub fn load_item(cluster: &Cluster, rows: usize) -> Result<()> {
    create_item(cluster)?;
    let step = 100_000i64;
    let mut start = 0i64;
    while start < rows as i64 {
        let end = (start + step).min(rows as i64);
        cluster.load("Item", item_batch(start..end))?;
        start = end;
    }
    Ok(())
}

/// Regions customers are spread over.
pub const REGIONS: [&str; 8] = [
    "north", "south", "east", "west", "central", "coast", "mountain", "island",
];

/// The rows of `customers(id, name, region)`: `customers` customers, customer `i` in region
/// `REGIONS[i % 8]`.
pub fn customers_batch(customers: usize) -> Batch {
    let ids: Vec<i64> = (0..customers as i64).collect();
    let names: Vec<String> = ids.iter().map(|i| format!("customer{i}")).collect();
    let regions: Vec<&str> = ids
        .iter()
        .map(|i| REGIONS[*i as usize % REGIONS.len()])
        .collect();
    Batch::try_new(vec![
        Column::from_i64(ids),
        Column::from_strs(&names),
        Column::from_strs(&regions),
    ])
    .expect("columns of equal length")
}

/// The rows of `orders(id, customer_id, qty, amount)`, in the chunks [`load_join_tables`]
/// loads: `orders` orders, each of a customer in `0..customers` chosen by a generator seeded
/// with `seed`. The same arguments give the same rows.
pub fn orders_batches(customers: usize, orders: usize, seed: u64) -> impl Iterator<Item = Batch> {
    let mut rng = StdRng::seed_from_u64(seed);
    let chunk = 250_000usize;
    (0..orders.div_ceil(chunk)).map(move |c| {
        let start = c * chunk;
        let end = (start + chunk).min(orders);
        let n = end - start;
        let id: Vec<i64> = (start as i64..end as i64).collect();
        let cust: Vec<i64> = (0..n)
            .map(|_| rng.random_range(0..customers.max(1) as i64))
            .collect();
        let qty: Vec<i64> = (0..n).map(|_| rng.random_range(1..10i64)).collect();
        let amount: Vec<f64> = qty
            .iter()
            .map(|q| (*q as f64) * 2.5 + rng.random_range(0..100i64) as f64 / 100.0)
            .collect();
        Batch::try_new(vec![
            Column::from_i64(id),
            Column::from_i64(cust),
            Column::from_i64(qty),
            Column::from_f64(amount),
        ])
        .expect("columns of equal length")
    })
}

/// Creates `customers(id, name, region)` with `customers` rows and
/// `orders(id, customer_id, qty, amount)` with `orders` rows, from `seed` (the rows of
/// [`customers_batch`] and [`orders_batches`]).
pub fn load_join_tables(
    cluster: &Cluster,
    customers: usize,
    orders: usize,
    seed: u64,
) -> Result<()> {
    cluster
        .execute("CREATE TABLE customers (id BIGINT PRIMARY KEY, name VARCHAR, region VARCHAR)")?;
    cluster.execute(
        "CREATE TABLE orders (id BIGINT PRIMARY KEY, customer_id BIGINT, qty BIGINT, amount DOUBLE)",
    )?;
    cluster.load("customers", customers_batch(customers))?;
    for batch in orders_batches(customers, orders, seed) {
        cluster.load("orders", batch)?;
    }
    Ok(())
}

/// The demo's join with a group-by.
pub const JOIN_QUERY: &str = "SELECT c.region, COUNT(*) AS orders, SUM(o.qty) AS qty \
     FROM orders o JOIN customers c ON o.customer_id = c.id GROUP BY c.region ORDER BY c.region";
