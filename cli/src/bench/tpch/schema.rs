//! The eight TPC-H tables: their definitions (the one place column types come from), the
//! `CREATE TABLE` statements derived from them, and the loader that fills them with rows
//! generated in memory by the `tpchgen` crate.
//!
//! Every column has a [`Kind`], the TPC-H specification's logical type (Clause 1.3.1:
//! identifier, integer, decimal, fixed or variable text, date). [`storage`] maps a kind to
//! the weir type it is stored as and appends generated values accordingly; nothing else in
//! the loader knows weir's types.

use crate::{Batch, Cluster, DataType};
use std::time::{Duration, Instant};
use tpchgen::dates::TPCHDate;
use tpchgen::decimal::TPCHDecimal;
use tpchgen::generators::{
    CustomerGenerator, LineItemGenerator, NationGenerator, OrderGenerator, PartGenerator,
    PartSuppGenerator, RegionGenerator, SupplierGenerator,
};
use weir_operators::ColumnBuilder;

/// A column's logical type in the TPC-H specification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An identifier or an integer (`BIGINT`).
    Int,
    /// A decimal with two digits after the point (`DECIMAL(15,2)` in the specification).
    Decimal,
    /// A date (`DATE`).
    Date,
    /// Fixed or variable length text (`VARCHAR`).
    Text,
}

/// One generated value, as the generator produces it.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell<'a> {
    /// An identifier or integer.
    Int(i64),
    /// A decimal as its unscaled value in hundredths (`1234` is `12.34`).
    Decimal(i64),
    /// A date.
    Date(TPCHDate),
    /// Borrowed text.
    Str(&'a str),
    /// Text formatted for this row (names, addresses, phone numbers).
    String(String),
}

/// How TPC-H's logical types are stored in weir: the one place that knows weir's types.
/// Decimals are `DECIMAL(15,2)` and dates `DATE`, as the specification defines them. (Before
/// weir had those types this module held the fallback, decimals as `DOUBLE` and dates as
/// `VARCHAR` text.)
pub mod storage {
    use super::{Cell, Kind};
    use crate::DataType;
    use weir_operators::ColumnBuilder;

    /// The weir type a column of `kind` is stored as.
    pub fn data_type(kind: Kind) -> DataType {
        match kind {
            Kind::Int => DataType::Int64,
            Kind::Decimal => DataType::decimal(15, 2),
            Kind::Date => DataType::Date,
            Kind::Text => DataType::Utf8,
        }
    }

    /// The SQL type name `CREATE TABLE` uses for `kind`.
    pub fn sql_type(kind: Kind) -> String {
        data_type(kind).to_string()
    }

    /// Appends `cell` to `builder`, a builder of [`data_type`]`(kind)`. An error when the
    /// cell does not have the column's kind (a table definition out of step with its
    /// generator).
    pub fn push(builder: &mut ColumnBuilder, kind: Kind, cell: &Cell<'_>) -> Result<(), String> {
        match (kind, cell) {
            (Kind::Int, Cell::Int(v)) => builder.push_i64(*v),
            (Kind::Decimal, Cell::Decimal(hundredths)) => builder.push_decimal(*hundredths as i128),
            (Kind::Date, Cell::Date(d)) => builder.push_date(d.to_unix_epoch()),
            (Kind::Text, Cell::Str(s)) => builder.push_str(s),
            (Kind::Text, Cell::String(s)) => builder.push_str(s),
            (kind, cell) => return Err(format!("a {cell:?} in a {kind:?} column")),
        }
        Ok(())
    }
}

/// A column of a TPC-H table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColumnSpec {
    /// Column name.
    pub name: &'static str,
    /// Logical type.
    pub kind: Kind,
}

/// A TPC-H table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableSpec {
    /// Table name.
    pub name: &'static str,
    /// Columns in the specification's order.
    pub columns: &'static [ColumnSpec],
    /// The primary-key column, when the key is one column (weir keys one column; `partsupp`
    /// and `lineitem` have two-column keys and are stored without one).
    pub key: Option<usize>,
}

const fn col(name: &'static str, kind: Kind) -> ColumnSpec {
    ColumnSpec { name, kind }
}

use Kind::{Date, Decimal, Int, Text};

/// `nation`.
pub const NATION: TableSpec = TableSpec {
    name: "nation",
    columns: &[
        col("n_nationkey", Int),
        col("n_name", Text),
        col("n_regionkey", Int),
        col("n_comment", Text),
    ],
    key: Some(0),
};

/// `region`.
pub const REGION: TableSpec = TableSpec {
    name: "region",
    columns: &[
        col("r_regionkey", Int),
        col("r_name", Text),
        col("r_comment", Text),
    ],
    key: Some(0),
};

/// `part`.
pub const PART: TableSpec = TableSpec {
    name: "part",
    columns: &[
        col("p_partkey", Int),
        col("p_name", Text),
        col("p_mfgr", Text),
        col("p_brand", Text),
        col("p_type", Text),
        col("p_size", Int),
        col("p_container", Text),
        col("p_retailprice", Decimal),
        col("p_comment", Text),
    ],
    key: Some(0),
};

/// `supplier`.
pub const SUPPLIER: TableSpec = TableSpec {
    name: "supplier",
    columns: &[
        col("s_suppkey", Int),
        col("s_name", Text),
        col("s_address", Text),
        col("s_nationkey", Int),
        col("s_phone", Text),
        col("s_acctbal", Decimal),
        col("s_comment", Text),
    ],
    key: Some(0),
};

/// `partsupp`.
pub const PARTSUPP: TableSpec = TableSpec {
    name: "partsupp",
    columns: &[
        col("ps_partkey", Int),
        col("ps_suppkey", Int),
        col("ps_availqty", Int),
        col("ps_supplycost", Decimal),
        col("ps_comment", Text),
    ],
    key: None,
};

/// `customer`.
pub const CUSTOMER: TableSpec = TableSpec {
    name: "customer",
    columns: &[
        col("c_custkey", Int),
        col("c_name", Text),
        col("c_address", Text),
        col("c_nationkey", Int),
        col("c_phone", Text),
        col("c_acctbal", Decimal),
        col("c_mktsegment", Text),
        col("c_comment", Text),
    ],
    key: Some(0),
};

/// `orders`.
pub const ORDERS: TableSpec = TableSpec {
    name: "orders",
    columns: &[
        col("o_orderkey", Int),
        col("o_custkey", Int),
        col("o_orderstatus", Text),
        col("o_totalprice", Decimal),
        col("o_orderdate", Date),
        col("o_orderpriority", Text),
        col("o_clerk", Text),
        col("o_shippriority", Int),
        col("o_comment", Text),
    ],
    key: Some(0),
};

/// `lineitem`.
pub const LINEITEM: TableSpec = TableSpec {
    name: "lineitem",
    columns: &[
        col("l_orderkey", Int),
        col("l_partkey", Int),
        col("l_suppkey", Int),
        col("l_linenumber", Int),
        col("l_quantity", Decimal),
        col("l_extendedprice", Decimal),
        col("l_discount", Decimal),
        col("l_tax", Decimal),
        col("l_returnflag", Text),
        col("l_linestatus", Text),
        col("l_shipdate", Date),
        col("l_commitdate", Date),
        col("l_receiptdate", Date),
        col("l_shipinstruct", Text),
        col("l_shipmode", Text),
        col("l_comment", Text),
    ],
    key: None,
};

/// The eight tables, smallest first.
pub const TABLES: [TableSpec; 8] = [
    REGION, NATION, SUPPLIER, CUSTOMER, PART, PARTSUPP, ORDERS, LINEITEM,
];

impl TableSpec {
    /// The weir types of the columns, in order.
    pub fn types(&self) -> Vec<DataType> {
        self.columns
            .iter()
            .map(|c| storage::data_type(c.kind))
            .collect()
    }

    /// The `CREATE TABLE` statement.
    pub fn create_sql(&self) -> String {
        let cols: Vec<String> = self
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let key = if self.key == Some(i) {
                    " PRIMARY KEY"
                } else {
                    ""
                };
                format!("{} {}{key}", c.name, storage::sql_type(c.kind))
            })
            .collect();
        format!("CREATE TABLE {} ({})", self.name, cols.join(", "))
    }

    /// The table's rows at scale factor `sf`, `chunk` rows per batch, handed to `sink` one
    /// batch at a time.
    pub fn generate(
        &self,
        sf: f64,
        chunk: usize,
        sink: &mut dyn FnMut(Batch) -> Result<(), String>,
    ) -> Result<(), String> {
        let mut rows = Rows::new(self, chunk, sink);
        match self.name {
            "region" => {
                for r in RegionGenerator::new(sf, 1, 1).iter() {
                    rows.push(&[
                        Cell::Int(r.r_regionkey),
                        Cell::Str(r.r_name),
                        Cell::Str(r.r_comment),
                    ])?;
                }
            }
            "nation" => {
                for n in NationGenerator::new(sf, 1, 1).iter() {
                    rows.push(&[
                        Cell::Int(n.n_nationkey),
                        Cell::Str(n.n_name),
                        Cell::Int(n.n_regionkey),
                        Cell::Str(n.n_comment),
                    ])?;
                }
            }
            "part" => {
                for p in PartGenerator::new(sf, 1, 1).iter() {
                    rows.push(&[
                        Cell::Int(p.p_partkey),
                        Cell::String(p.p_name.to_string()),
                        Cell::String(p.p_mfgr.to_string()),
                        Cell::String(p.p_brand.to_string()),
                        Cell::Str(p.p_type),
                        Cell::Int(p.p_size.into()),
                        Cell::Str(p.p_container),
                        decimal(p.p_retailprice),
                        Cell::Str(p.p_comment),
                    ])?;
                }
            }
            "supplier" => {
                for s in SupplierGenerator::new(sf, 1, 1).iter() {
                    rows.push(&[
                        Cell::Int(s.s_suppkey),
                        Cell::String(s.s_name.to_string()),
                        Cell::String(s.s_address.to_string()),
                        Cell::Int(s.s_nationkey),
                        Cell::String(s.s_phone.to_string()),
                        decimal(s.s_acctbal),
                        Cell::Str(&s.s_comment),
                    ])?;
                }
            }
            "partsupp" => {
                for ps in PartSuppGenerator::new(sf, 1, 1).iter() {
                    rows.push(&[
                        Cell::Int(ps.ps_partkey),
                        Cell::Int(ps.ps_suppkey),
                        Cell::Int(ps.ps_availqty.into()),
                        decimal(ps.ps_supplycost),
                        Cell::Str(ps.ps_comment),
                    ])?;
                }
            }
            "customer" => {
                for c in CustomerGenerator::new(sf, 1, 1).iter() {
                    rows.push(&[
                        Cell::Int(c.c_custkey),
                        Cell::String(c.c_name.to_string()),
                        Cell::String(c.c_address.to_string()),
                        Cell::Int(c.c_nationkey),
                        Cell::String(c.c_phone.to_string()),
                        decimal(c.c_acctbal),
                        Cell::Str(c.c_mktsegment),
                        Cell::Str(c.c_comment),
                    ])?;
                }
            }
            "orders" => {
                for o in OrderGenerator::new(sf, 1, 1).iter() {
                    rows.push(&[
                        Cell::Int(o.o_orderkey),
                        Cell::Int(o.o_custkey),
                        Cell::String(o.o_orderstatus.to_string()),
                        decimal(o.o_totalprice),
                        Cell::Date(o.o_orderdate),
                        Cell::Str(o.o_orderpriority),
                        Cell::String(o.o_clerk.to_string()),
                        Cell::Int(o.o_shippriority.into()),
                        Cell::Str(o.o_comment),
                    ])?;
                }
            }
            "lineitem" => {
                for l in LineItemGenerator::new(sf, 1, 1).iter() {
                    rows.push(&[
                        Cell::Int(l.l_orderkey),
                        Cell::Int(l.l_partkey),
                        Cell::Int(l.l_suppkey),
                        Cell::Int(l.l_linenumber.into()),
                        // The generator's quantity is a whole number; the column is DECIMAL.
                        Cell::Decimal(l.l_quantity * 100),
                        decimal(l.l_extendedprice),
                        decimal(l.l_discount),
                        decimal(l.l_tax),
                        Cell::Str(l.l_returnflag),
                        Cell::Str(l.l_linestatus),
                        Cell::Date(l.l_shipdate),
                        Cell::Date(l.l_commitdate),
                        Cell::Date(l.l_receiptdate),
                        Cell::Str(l.l_shipinstruct),
                        Cell::Str(l.l_shipmode),
                        Cell::Str(l.l_comment),
                    ])?;
                }
            }
            other => return Err(format!("no generator for table '{other}'")),
        }
        rows.flush()
    }
}

fn decimal(d: TPCHDecimal) -> Cell<'static> {
    Cell::Decimal(d.into_inner())
}

/// Column builders for one table, emptied into a batch every `chunk` rows.
struct Rows<'s> {
    spec: TableSpec,
    chunk: usize,
    builders: Vec<ColumnBuilder>,
    sink: &'s mut dyn FnMut(Batch) -> Result<(), String>,
}

impl<'s> Rows<'s> {
    fn new(
        spec: &TableSpec,
        chunk: usize,
        sink: &'s mut dyn FnMut(Batch) -> Result<(), String>,
    ) -> Self {
        let chunk = chunk.max(1);
        Rows {
            spec: *spec,
            chunk,
            builders: Self::fresh(spec, chunk),
            sink,
        }
    }

    fn fresh(spec: &TableSpec, chunk: usize) -> Vec<ColumnBuilder> {
        spec.types()
            .into_iter()
            .map(|t| ColumnBuilder::new(t, chunk))
            .collect()
    }

    fn push(&mut self, row: &[Cell<'_>]) -> Result<(), String> {
        if row.len() != self.spec.columns.len() {
            return Err(format!(
                "{}: a generated row has {} values for {} columns",
                self.spec.name,
                row.len(),
                self.spec.columns.len()
            ));
        }
        for ((b, c), cell) in self.builders.iter_mut().zip(self.spec.columns).zip(row) {
            storage::push(b, c.kind, cell)
                .map_err(|e| format!("{}.{}: {e}", self.spec.name, c.name))?;
        }
        if self.builders[0].len() >= self.chunk {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), String> {
        if self.builders[0].is_empty() {
            return Ok(());
        }
        let builders = std::mem::replace(&mut self.builders, Self::fresh(&self.spec, self.chunk));
        let batch = Batch::try_new(builders.into_iter().map(ColumnBuilder::finish).collect())
            .map_err(|e| e.to_string())?;
        (self.sink)(batch)
    }
}

/// What [`load`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadReport {
    /// Rows per table, in [`TABLES`] order.
    pub rows: Vec<(&'static str, usize)>,
    /// Time spent generating and loading, all tables.
    pub elapsed: Duration,
}

/// Rows per `Cluster::load` call.
pub const LOAD_CHUNK: usize = 50_000;

/// Creates the eight tables in `cluster` and fills them with the data of scale factor `sf`,
/// generated in memory. `progress` hears a line per table.
pub fn load(
    cluster: &Cluster,
    sf: f64,
    progress: &mut dyn FnMut(String),
) -> Result<LoadReport, String> {
    let start = Instant::now();
    let mut rows = Vec::new();
    for spec in TABLES {
        let t = Instant::now();
        cluster
            .execute(&spec.create_sql())
            .map_err(|e| format!("CREATE TABLE {}: {e}", spec.name))?;
        let mut n = 0usize;
        spec.generate(sf, LOAD_CHUNK, &mut |batch| {
            n += cluster
                .load(spec.name, batch)
                .map_err(|e| format!("loading {}: {e}", spec.name))?;
            Ok(())
        })?;
        progress(format!(
            "loaded {} ({n} rows) in {:.2?}",
            spec.name,
            t.elapsed()
        ));
        rows.push((spec.name, n));
    }
    Ok(LoadReport {
        rows,
        elapsed: start.elapsed(),
    })
}

/// Rows per Parquet row group written by [`write_parquet`] (DuckDB's row group size).
pub const PARQUET_ROW_GROUP: usize = 122_880;

/// Row groups per Parquet file written by [`write_parquet`].
pub const PARQUET_GROUPS_PER_FILE: usize = 8;

/// The marker file [`write_parquet`] leaves in a complete data set (its name starts with
/// `_`, so external tables do not read it).
pub const PARQUET_COMPLETE: &str = "_complete";

/// The directory of scale factor `sf`'s Parquet files under `root`.
pub fn parquet_dir(root: &std::path::Path, sf: f64) -> std::path::PathBuf {
    root.join(format!("tpch-sf{sf}"))
}

/// Writes the eight tables at scale factor `sf` as Snappy-compressed Parquet files under
/// [`parquet_dir`] (`<table>/part-NNNN.parquet`, row groups of [`PARQUET_ROW_GROUP`] rows),
/// unless a complete set is there already. Returns the directory.
pub fn write_parquet(
    root: &std::path::Path,
    sf: f64,
    progress: &mut dyn FnMut(String),
) -> Result<std::path::PathBuf, String> {
    use weir_io::parquet::ParquetWriter;
    let dir = parquet_dir(root, sf);
    if dir.join(PARQUET_COMPLETE).exists() {
        progress(format!("using the Parquet files in {}", dir.display()));
        return Ok(dir);
    }
    for spec in TABLES {
        let t = Instant::now();
        let table_dir = dir.join(spec.name);
        let _ = std::fs::remove_dir_all(&table_dir);
        std::fs::create_dir_all(&table_dir).map_err(|e| format!("{}: {e}", table_dir.display()))?;
        let schema = weir_operators::Schema::new(
            spec.columns
                .iter()
                .map(|c| weir_operators::Field::new(c.name, storage::data_type(c.kind)))
                .collect(),
        );
        let mut writer: Option<ParquetWriter> = None;
        let (mut files, mut groups, mut n) = (0usize, 0usize, 0usize);
        spec.generate(sf, PARQUET_ROW_GROUP, &mut |batch| {
            if writer.is_none() {
                let path = table_dir.join(format!("part-{files:04}.parquet"));
                writer = Some(
                    ParquetWriter::create_compressed(&path, &schema).map_err(|e| e.to_string())?,
                );
                files += 1;
            }
            let w = writer.as_mut().expect("opened above");
            n += batch.num_rows();
            w.write(batch).map_err(|e| e.to_string())?;
            w.end_row_group().map_err(|e| e.to_string())?;
            groups += 1;
            if groups % PARQUET_GROUPS_PER_FILE == 0 {
                if let Some(w) = writer.take() {
                    w.finish().map_err(|e| e.to_string())?;
                }
            }
            Ok(())
        })?;
        if let Some(w) = writer.take() {
            w.finish().map_err(|e| e.to_string())?;
        }
        progress(format!(
            "wrote {} ({n} rows, {files} files) in {:.2?}",
            spec.name,
            t.elapsed()
        ));
    }
    std::fs::write(dir.join(PARQUET_COMPLETE), "")
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(dir)
}

/// Creates the eight tables in `cluster` as external tables over the Parquet files of
/// [`write_parquet`] in `dir`, their columns taken from the files and their primary keys
/// declared.
pub fn attach_parquet(cluster: &Cluster, dir: &std::path::Path) -> Result<(), String> {
    for spec in TABLES {
        let location = dir.join(spec.name);
        // The keys of the specification, declared for the planner's estimates.
        let key = match spec.name {
            "partsupp" => "ps_partkey, ps_suppkey",
            "lineitem" => "l_orderkey, l_linenumber",
            _ => spec.key.map_or("", |k| spec.columns[k].name),
        };
        cluster
            .execute(&format!(
                "CREATE EXTERNAL TABLE {} (PRIMARY KEY ({key})) STORED AS PARQUET LOCATION '{}'",
                spec.name,
                location.display()
            ))
            .map_err(|e| format!("CREATE EXTERNAL TABLE {}: {e}", spec.name))?;
    }
    Ok(())
}
