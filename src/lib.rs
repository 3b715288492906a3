//! # weir
//!
//! An embeddable, actor-based dataflow runtime that runs SQL queries across a cluster of
//! nodes simulated in one process, and stays up when memory runs short.
//!
//! This facade re-exports the pieces a service needs and adds the demo data set. The `weir`
//! command, its output formats and the benchmarks live in the `weir-cli` crate (`cli/`), so
//! a service that embeds weir compiles no command-line, plotting or progress-bar crates.
//!
//! ```
//! use weir::{Cluster, Value};
//! let cluster = Cluster::builder().nodes(3).partitions(16).build().unwrap();
//! cluster.execute("CREATE TABLE kv (k BIGINT PRIMARY KEY, v VARCHAR)").unwrap();
//! cluster.execute("INSERT INTO kv VALUES (1, 'one'), (2, 'two')").unwrap();
//! let r = cluster.query("SELECT v FROM kv WHERE k = ?", &[Value::Int(2)]).unwrap();
//! assert_eq!(r.rows(), vec![vec![Value::from("two")]]);
//! ```
//!
//! Entry points: [`Cluster::builder`], [`Cluster::execute`], [`Cluster::query`],
//! [`Cluster::query_stream`], [`Cluster::prepare`], [`Cluster::query_async`] and
//! [`Cluster::query_stream_async`] for async callers, COPY through
//! [`Cluster::execute`] ([`Cluster::execute_with_progress`]), and the `arrow` module
//! (cargo feature `arrow`). Errors are typed: see [`Error`].

pub mod demo;

pub use weir_operators as operators;
pub use weir_planner as planner;
pub use weir_runtime as runtime;
pub use weir_storage as storage;

/// The date and time types [`Row::get`] reads DATE and TIMESTAMP columns as.
pub use chrono::{NaiveDate, NaiveDateTime};
pub use weir_operators::{Batch, Column, DataType, Field, Schema, Value};
pub use weir_runtime::{
    params, AsyncQueryStream, BreakerConfig, Cluster, ClusterBuilder, ClusterStats, ColumnIndex,
    CopyProgress, DataNode, Decimal, Durability, Error, FaultPlan, FromValue, IntoParams, JoinMode,
    KillPolicy, MessageKind, MessageStats, NodeStats, Prepared, ProgressUnit, Protocol,
    QueryResult, QueryStats, QueryStream, Result, Row, Secret, Session, Tls, TlsFiles,
};

/// The chapter `docs/replication.md`, whose Rust blocks (connecting to data nodes of other
/// processes) are compiled as doc tests, so that they keep compiling from the facade.
#[cfg(doctest)]
#[doc = include_str!("../docs/replication.md")]
pub struct ReplicationChapter;

/// Arrow interchange (cargo feature `arrow`): [`QueryResult::to_arrow`],
/// [`Cluster::load_arrow`], and the Arrow crates they use.
///
/// ```
/// use weir::arrow::{arrow_array::Int64Array, RecordBatch};
/// use weir::Cluster;
/// let cluster = Cluster::builder().nodes(1).partitions(4).build().unwrap();
/// cluster.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, x BIGINT)").unwrap();
/// cluster.execute("INSERT INTO t VALUES (1, 10), (2, 20)").unwrap();
/// let batches: Vec<RecordBatch> = cluster
///     .query("SELECT id, x * 2 AS x2 FROM t ORDER BY id", &[])
///     .unwrap()
///     .into_arrow()
///     .unwrap();
/// let x2 = batches[0].column_by_name("x2").unwrap();
/// let x2 = x2.as_any().downcast_ref::<Int64Array>().unwrap();
/// assert_eq!(x2.values(), &[20, 40]);
/// cluster.execute("CREATE TABLE u (id BIGINT PRIMARY KEY, x2 BIGINT)").unwrap();
/// assert_eq!(cluster.load_arrow("u", &batches[0]).unwrap(), 2);
/// ```
#[cfg(feature = "arrow")]
pub mod arrow {
    /// Conversions between weir batches and Arrow record batches.
    pub use weir_io::arrow::{arrow_schema, arrow_type, from_record_batch, to_record_batch};
    /// Arrow's record batch.
    pub use weir_io::arrow_array::RecordBatch;
    /// The Arrow crates the conversions use (`arrow-array`, `arrow-schema`).
    pub use weir_io::{arrow_array, arrow_schema};
}

/// The PostgreSQL wire protocol (cargo feature `postgres`): `psql`, psycopg, JDBC,
/// `tokio-postgres` and every other PostgreSQL client run SQL on a cluster. Bring
/// [`ServePostgres`] into scope and call `serve_postgres` on an
/// `Arc<Cluster>` (or a `Cluster`, which the server then owns); see `docs/postgres.md`.
///
/// ```
/// use std::sync::Arc;
/// use weir::postgres::{Passwords, ServePostgres, ServerConfig};
/// use weir::Cluster;
///
/// let cluster = Arc::new(Cluster::builder().nodes(2).partitions(8).build().unwrap());
/// // Port 0 picks a free port; `local_addr` tells which.
/// let server = cluster.clone().serve_postgres("127.0.0.1:0").unwrap();
/// assert!(server.local_addr().port() > 0);
/// server.shutdown();
///
/// // With passwords (SCRAM-SHA-256) and a connection limit:
/// let config = ServerConfig::new()
///     .passwords(Passwords::new().user("app", "s3cret"))
///     .max_connections(20);
/// let server = cluster.serve_postgres_with("127.0.0.1:0", config).unwrap();
/// server.shutdown();
/// ```
#[cfg(feature = "postgres")]
pub mod postgres {
    pub use weir_server::{
        serve, start, Passwords, PostgresServer, ServePostgres, ServerConfig, DEFAULT_PORT,
    };
}

#[cfg(feature = "postgres")]
pub use weir_server::ServePostgres;
