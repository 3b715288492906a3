//! # weir-io
//!
//! weir's file formats, kept apart from the runtime: reading CSV ([`csv`]) and Parquet
//! ([`parquet`]) files into weir [`Batch`]es of a table's column types, a batch at a time,
//! writing batches back out, and converting batches to and from Arrow
//! [`RecordBatch`](arrow_array::RecordBatch)es ([`arrow`]).
//!
//! Every error on bad input is an [`IoError`] naming the file and, where known, the line
//! (CSV) or row (Parquet) and the column.
//!
//! ```
//! use weir_io::csv::{CsvOptions, CsvReader};
//! use weir_operators::{DataType, Field, Schema};
//! let dir = std::env::temp_dir().join(format!("weir-io-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! let path = dir.join("kv.csv");
//! std::fs::write(&path, "k,v\n1,one\n2,\"two, too\"\n").unwrap();
//! let schema = Schema::new(vec![
//!     Field::new("k", DataType::Int64),
//!     Field::new("v", DataType::Utf8),
//! ]);
//! let options = CsvOptions { header: true, ..CsvOptions::default() };
//! let mut reader = CsvReader::open(&path, &schema, &options).unwrap();
//! let batch = reader.next_batch(1024).unwrap().unwrap();
//! assert_eq!(batch.num_rows(), 2);
//! assert_eq!(batch.row(1)[1].to_string(), "two, too");
//! ```

pub mod arrow;
pub mod csv;
mod error;
pub mod external;
pub mod parquet;
mod text;

pub use error::{IoError, Location, Result};
pub use text::{excerpt, EXCERPT_CHARS};
/// The batches readers produce and writers take.
pub use weir_operators::Batch;

/// Rows per batch a reader produces unless told otherwise.
pub const DEFAULT_BATCH_ROWS: usize = 8192;

/// The Arrow arrays and record batches of [`arrow`] (the `arrow-array` crate).
pub use arrow_array;
/// Arrow's types and schemas (the `arrow-schema` crate).
pub use arrow_schema;
