//! Prepared statements ([`Cluster::prepare`]) and typed row mapping ([`Cluster::query_map`]).
//!
//! A [`Prepared`] statement keeps the plan of its query once made, for the parameter types
//! it was first run with, and runs it again without looking the SQL text up, as long as the
//! catalog has not changed (a DDL statement since makes it plan again).
//!
//! ```
//! use weir_runtime::Cluster;
//! let cluster = Cluster::builder().nodes(2).partitions(8).build().unwrap();
//! cluster.execute("CREATE TABLE kv (k BIGINT PRIMARY KEY, v VARCHAR)").unwrap();
//! let insert = cluster.prepare("INSERT INTO kv VALUES (?, ?)").unwrap();
//! for (k, v) in [(1i64, "one"), (2, "two")] {
//!     assert_eq!(insert.execute((k, v)).unwrap(), 1);
//! }
//! let get = cluster.prepare("SELECT v FROM kv WHERE k = ?").unwrap();
//! let v: String = get.query((2i64,)).unwrap().row(0).unwrap().get(0).unwrap();
//! assert_eq!(v, "two");
//! let mut n = 0;
//! for batch in get.query_stream((1i64,)).unwrap() {
//!     n += batch.unwrap().num_rows();
//! }
//! assert_eq!(n, 1);
//! ```

use super::Cluster;
use crate::error::{Error, Result};
use crate::query::result::{QueryResult, QueryStream};
use crate::query::rows::{IntoParams, Row};
use std::sync::{Arc, Mutex};
use weir_operators::{DataType, Value};
use weir_planner::{CachedStatement, PlanError, QueryPlan};

/// A statement planned once and run many times with different parameters
/// ([`Cluster::prepare`]).
pub struct Prepared<'c> {
    cluster: &'c Cluster,
    sql: String,
    /// The query's plan, with the parameter types and catalog version it was made for.
    plan: Mutex<Option<PlanFor>>,
}

struct PlanFor {
    types: Vec<Option<DataType>>,
    catalog_version: u64,
    plan: Arc<QueryPlan>,
}

impl Cluster {
    /// Prepares `sql` (one statement, with `?` or `$n` placeholders). Syntax errors and
    /// unknown names are reported now when the statement can be planned without its
    /// parameter values; otherwise at its first run.
    ///
    /// ```
    /// use weir_runtime::Cluster;
    /// let cluster = Cluster::builder().nodes(1).partitions(4).build().unwrap();
    /// cluster.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, x DOUBLE)").unwrap();
    /// let insert = cluster.prepare("INSERT INTO t VALUES (?, ?)").unwrap();
    /// insert.execute((1i64, 0.5)).unwrap();
    /// insert.execute((2i64, 1.5)).unwrap();
    /// let total = cluster.prepare("SELECT SUM(x) FROM t WHERE id <= ?").unwrap();
    /// let sum: f64 = total.query((2i64,)).unwrap().row(0).unwrap().get(0).unwrap();
    /// assert_eq!(sum, 2.0);
    /// assert!(cluster.prepare("SELECT * FROM nope").is_err());
    /// ```
    pub fn prepare(&self, sql: &str) -> Result<Prepared<'_>> {
        self.check_up()?;
        let prepared = Prepared {
            cluster: self,
            sql: sql.to_string(),
            plan: Mutex::new(None),
        };
        if super::copy::is_copy(sql) {
            return Ok(prepared);
        }
        match prepared.plan(&[]) {
            Ok(_) | Err(Error::Plan(PlanError::ParamCount { .. })) => Ok(prepared),
            Err(e) => Err(e),
        }
    }

    /// Runs query `sql` and maps each row with `f`, as rusqlite's `query_map` (all rows;
    /// the first error `f` returns stops it).
    pub fn query_map<T>(
        &self,
        sql: &str,
        params: impl IntoParams,
        mut f: impl FnMut(&Row<'_>) -> Result<T>,
    ) -> Result<Vec<T>> {
        let result = self.query(sql, &params.into_params())?;
        result.iter().map(|row| f(&row)).collect()
    }

    fn catalog_version(&self) -> u64 {
        self.inner
            .catalog
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .version()
    }
}

impl<'c> Prepared<'c> {
    /// The statement's SQL text.
    pub fn sql(&self) -> &str {
        &self.sql
    }

    /// Runs the query with `params` and returns all of its rows.
    pub fn query(&self, params: impl IntoParams) -> Result<QueryResult> {
        let params = params.into_params();
        self.cluster
            .retrying_refused_reads(|| self.query_stream(params.as_slice())?.collect_all())
    }

    /// Runs the query with `params` and returns its batches as they come (the consumer's
    /// pace holds the producers back; dropping the stream cancels the query).
    pub fn query_stream(&self, params: impl IntoParams) -> Result<QueryStream> {
        let params = params.into_params();
        match self.plan(&params)? {
            Some(plan) => self.cluster.run(plan, &params),
            None => self.cluster.query_stream(&self.sql, &params),
        }
    }

    /// Runs the statement with `params`: the rows affected by an INSERT, UPDATE, DELETE or
    /// COPY, or the rows returned by a query.
    pub fn execute(&self, params: impl IntoParams) -> Result<u64> {
        let params = params.into_params();
        match self.plan(&params)? {
            Some(plan) => self.cluster.retrying_refused_reads(|| {
                Ok(self
                    .cluster
                    .run(plan.clone(), &params)?
                    .collect_all()?
                    .num_rows() as u64)
            }),
            None => self.cluster.execute_with(&self.sql, &params),
        }
    }

    /// The kept plan for parameters of these types, planning it if needed; `None` for a
    /// statement that is not a query (writes and DDL are bound with their values each run).
    fn plan(&self, params: &[Value]) -> Result<Option<Arc<QueryPlan>>> {
        let types: Vec<Option<DataType>> = params.iter().map(Value::data_type).collect();
        let version = self.cluster.catalog_version();
        let mut kept = self.plan.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = kept.as_ref() {
            if p.types == types && p.catalog_version == version {
                return Ok(Some(p.plan.clone()));
            }
        }
        if super::copy::is_copy(&self.sql) {
            return Ok(None);
        }
        match self.cluster.plan_statement(&self.sql, params)? {
            // A plan that holds values read when it was planned (the time, random draws) is planned
            // again for each run.
            CachedStatement::Query(plan) if plan.single_use => Ok(Some(plan)),
            CachedStatement::Query(plan) => {
                *kept = Some(PlanFor {
                    types,
                    catalog_version: version,
                    plan: plan.clone(),
                });
                Ok(Some(plan))
            }
            _ => Ok(None),
        }
    }
}
