//! External tables: Parquet and CSV files queried where they lie
//! (`CREATE EXTERNAL TABLE t STORED AS PARQUET LOCATION 'dir'`), free of actors so that the
//! runtime only wires them in.
//!
//! - [`list_files`]: the files a location names (a file, a directory, a glob pattern);
//! - [`describe_files`]: the columns the files hold (taken from them, or checked) and their
//!   rows, read when the table is created;
//! - [`ExternalScan`]: one node's share of a scan, skipping Parquet row groups by their
//!   statistics ([`Pruner`]) and reading only the columns a query needs.
//!
//! ```
//! use std::sync::Arc;
//! use weir_io::external::{describe_files, ExternalScan, ScanCounters, Share};
//! use weir_operators::external::{CsvLayout, ExternalSource, FileFormat};
//! use weir_operators::kernels::ExecContext;
//! use weir_operators::{BinaryOp, Expr};
//! let dir = std::env::temp_dir().join(format!("weir-io-external-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! std::fs::write(dir.join("kv.csv"), "k,v\n1,one\n2,two\n3,three\n").unwrap();
//! let source = ExternalSource {
//!     format: FileFormat::Csv(CsvLayout { header: true, ..CsvLayout::default() }),
//!     location: dir.to_string_lossy().into(),
//! };
//! let table = describe_files(&source, None).unwrap().schema;
//! let filter = Expr::col(0).binary(BinaryOp::GtEq, Expr::lit(2));
//! let counters = Arc::new(ScanCounters::default());
//! let mut scan = ExternalScan::open(
//!     &source, &table, Some(&filter), &[1], ExecContext::new(vec![]), Share::ALL, counters,
//! )
//! .unwrap();
//! let batch = scan.next_batch().unwrap().unwrap();
//! assert_eq!(batch.row(1)[0].to_string(), "three");
//! std::fs::remove_dir_all(&dir).unwrap();
//! ```

mod describe;
mod files;
mod prune;
mod scan;

pub use describe::{describe_files, FilesSummary, CSV_SAMPLE_ROWS};
pub use files::{is_pattern, list_files};
pub use prune::{ColumnStats, Pruner};
pub use scan::{ExternalScan, ScanCounters, Share};
