//! The async query path: [`Cluster::query_async`] and [`Cluster::query_stream_async`] (and
//! the same on [`Prepared`]), for callers on an async runtime such as tokio.
//!
//! A query is planned and its actors started on the caller's task (no waiting there); its
//! batches then come through an [`AsyncQueryStream`], whose polls never block: the query
//! actor wakes the task when a batch arrives. The credit windows hold the producers back to
//! the consumer's pace, as with [`QueryStream`](crate::QueryStream), and dropping the stream
//! (or the future of `query_async`) cancels the query.
//!
//! A statement that is not a query (INSERT, UPDATE, DELETE, DDL) given to these methods is
//! applied before the future first returns, as [`Cluster::execute`] would: writes wait for
//! their replicas on the calling thread.
//!
//! ```
//! # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
//! # rt.block_on(async {
//! use futures::StreamExt;
//! use weir_runtime::Cluster;
//! let cluster = Cluster::builder().nodes(1).partitions(4).build().unwrap();
//! cluster.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, x BIGINT)").unwrap();
//! cluster.execute("INSERT INTO t VALUES (1, 10), (2, 20)").unwrap();
//!
//! let r = cluster.query_async("SELECT SUM(x) FROM t", &[]).await.unwrap();
//! assert_eq!(r.rows(), vec![vec![30.into()]]);
//!
//! let mut stream = cluster.query_stream_async("SELECT x FROM t", &[]).await.unwrap();
//! let mut rows = 0;
//! while let Some(batch) = stream.next().await {
//!     rows += batch.unwrap().num_rows();
//! }
//! assert_eq!(rows, 2);
//! # });
//! ```

use super::prepared::Prepared;
use super::Cluster;
use crate::error::Result;
use crate::query::result::{AsyncQueryStream, QueryResult, QueryStream};
use crate::query::rows::IntoParams;
use weir_operators::Value;

impl Cluster {
    /// Runs a query and returns all of its rows, without blocking the calling task's
    /// thread while the query runs. Equal to [`Cluster::query`].
    pub async fn query_async(&self, sql: &str, params: &[Value]) -> Result<QueryResult> {
        let result = self
            .query_stream_async(sql, params)
            .await?
            .collect_all()
            .await?;
        self.note_high_water(&result);
        Ok(result)
    }

    /// Starts a query and returns its batches as an async stream. The consumer's pace holds
    /// the producers back; dropping the stream cancels the query.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// use futures::StreamExt;
    /// use weir_runtime::Cluster;
    /// let cluster = Cluster::builder().nodes(1).partitions(4).batch_size(1).build().unwrap();
    /// cluster.execute("CREATE TABLE t (id BIGINT PRIMARY KEY)").unwrap();
    /// cluster.execute("INSERT INTO t VALUES (1), (2), (3)").unwrap();
    /// let mut stream = cluster.query_stream_async("SELECT id FROM t", &[]).await.unwrap();
    /// let first = stream.next().await.unwrap().unwrap();
    /// assert_eq!(first.num_rows(), 1);
    /// drop(stream); // cancels the query
    /// assert!(cluster.wait_idle(std::time::Duration::from_secs(5)));
    /// # });
    /// ```
    pub async fn query_stream_async(
        &self,
        sql: &str,
        params: &[Value],
    ) -> Result<AsyncQueryStream> {
        self.query_stream(sql, params).map(QueryStream::into_async)
    }
}

impl Prepared<'_> {
    /// [`Prepared::query`] for async callers: all rows, without blocking the calling task's
    /// thread while the query runs.
    pub async fn query_async(&self, params: impl IntoParams) -> Result<QueryResult> {
        self.query_stream_async(params).await?.collect_all().await
    }

    /// [`Prepared::query_stream`] for async callers: the batches as an async stream
    /// (dropping it cancels the query).
    pub async fn query_stream_async(&self, params: impl IntoParams) -> Result<AsyncQueryStream> {
        self.query_stream(params).map(QueryStream::into_async)
    }
}
