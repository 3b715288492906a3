//! Arrow interchange (cargo feature `arrow`): query results as Arrow
//! [`RecordBatch`]es and [`Cluster::load_arrow`], through the conversion of `weir-io`.
//!
//! ```
//! use weir_runtime::Cluster;
//! let cluster = Cluster::builder().nodes(2).build().unwrap();
//! cluster.execute("CREATE TABLE t (k BIGINT PRIMARY KEY, price DECIMAL(10, 2))").unwrap();
//! cluster.execute("INSERT INTO t VALUES (1, 9.99), (2, NULL)").unwrap();
//! let result = cluster.query("SELECT * FROM t ORDER BY k", &[]).unwrap();
//! let batches = result.to_arrow().unwrap();
//! assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 2);
//! cluster.execute("CREATE TABLE u (k BIGINT PRIMARY KEY, price DECIMAL(10, 2))").unwrap();
//! for b in batches {
//!     cluster.load_arrow("u", &b).unwrap();
//! }
//! assert_eq!(cluster.query("SELECT * FROM u ORDER BY k", &[]).unwrap().rows(), result.rows());
//! # cluster.shutdown();
//! ```

use crate::error::{Error, Result};
use crate::{Cluster, QueryResult};
use weir_io::arrow::{from_record_batch, to_record_batch};
/// Arrow's record batch, as [`QueryResult::to_arrow`] gives and [`Cluster::load_arrow`] takes.
pub use weir_io::arrow_array::RecordBatch;

impl QueryResult {
    /// The result's batches as Arrow record batches (fixed-width columns handed over without
    /// copying the values).
    pub fn to_arrow(&self) -> Result<Vec<RecordBatch>> {
        self.batches
            .iter()
            .map(|b| {
                to_record_batch(&self.schema, b.clone()).map_err(|e| Error::Invalid(e.to_string()))
            })
            .collect()
    }

    /// [`QueryResult::to_arrow`], consuming the result so no value is copied.
    pub fn into_arrow(self) -> Result<Vec<RecordBatch>> {
        let schema = self.schema;
        self.batches
            .into_iter()
            .map(|b| to_record_batch(&schema, b).map_err(|e| Error::Invalid(e.to_string())))
            .collect()
    }
}

impl Cluster {
    /// Loads an Arrow record batch into `table`, as [`Cluster::load`] does (all or nothing).
    /// Columns are matched by name (or by position when the names differ and the counts
    /// agree) and converted to the table's types; a value that does not fit is an error
    /// naming its row and column.
    pub fn load_arrow(&self, table: &str, batch: &RecordBatch) -> Result<usize> {
        let schema = self.table_schema(table)?;
        let rows = from_record_batch(batch, &schema).map_err(|e| Error::Invalid(e.to_string()))?;
        self.load(table, rows)
    }
}
