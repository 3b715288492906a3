//! Errors returned to users of the runtime.

use serde::{Deserialize, Serialize};
use thiserror::Error;
use weir_operators::Value;

/// Result alias for the runtime.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong with a statement.
///
/// Execution failures are typed, so that a caller can tell them apart with `matches!`:
/// [`Error::Overflow`], [`Error::DivisionByZero`], [`Error::Cast`], [`Error::ValueTooLarge`]
/// (each with the node and the kernel's text, which names the operation: `BIGINT overflow in
/// 9223372036854775807 + 1`), [`Error::DuplicateKey`], [`Error::OutOfMemory`], [`Error::Killed`],
/// [`Error::BreakerOpen`], [`Error::NodeDown`], [`Error::Timeout`]; other kernel failures are
/// [`Error::Execution`]. New kinds may be added: match with a `_` arm.
///
/// ```
/// use weir_runtime::{Cluster, Error};
/// let cluster = Cluster::builder().nodes(1).partitions(4).build().unwrap();
/// cluster.execute("CREATE TABLE t (id BIGINT PRIMARY KEY)").unwrap();
/// cluster.execute("INSERT INTO t VALUES (1)").unwrap();
/// let err = cluster.query("SELECT id + 9223372036854775807 FROM t", &[]).unwrap_err();
/// assert!(matches!(err, Error::Overflow { .. }), "{err}");
/// assert_eq!(err.node(), Some("node-0"));
/// ```
#[derive(Debug, Clone, Error, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// The SQL could not be planned (syntax, unknown names, unsupported constructs, parameters).
    #[error(transparent)]
    Plan(#[from] weir_planner::PlanError),
    /// A kernel failed while executing, in a way not typed below (type error, a function
    /// outside its domain, a scalar subquery with more than one row, ...).
    #[error("execution failed on {node}: {message}")]
    Execution {
        /// Node that failed, e.g. `node-1`.
        node: String,
        /// What the kernel reported.
        message: String,
    },
    /// A result too large for its type (BIGINT, DECIMAL, DOUBLE, a date out of range).
    #[error("execution failed on {node}: {message}")]
    Overflow {
        /// Node that failed, e.g. `node-1`.
        node: String,
        /// What the kernel reported, naming the operation and its operands:
        /// `arithmetic error: BIGINT overflow in 9223372036854775807 + 1`.
        message: String,
    },
    /// A division by zero that has no NULL answer (`power(0, -1)`; `x / 0` is NULL).
    #[error("execution failed on {node}: {message}")]
    DivisionByZero {
        /// Node that failed, e.g. `node-1`.
        node: String,
        /// What the kernel reported, naming the operation.
        message: String,
    },
    /// A value that does not convert to a CAST's type (or to a column's type).
    #[error("execution failed on {node}: {message}")]
    Cast {
        /// Node that failed, e.g. `node-1`.
        node: String,
        /// What the kernel reported: `cannot cast 'abc' to DATE`.
        message: String,
    },
    /// A value (or a column of text in one batch) a function would make is larger than the
    /// maximum value size ([`crate::ClusterBuilder::max_value_size`]).
    #[error("execution failed on {node}: {message}")]
    ValueTooLarge {
        /// Node that failed, e.g. `node-1`.
        node: String,
        /// What the kernel reported: `value too large: repeat would make a value of ...`.
        message: String,
    },
    /// A node the query needed is down.
    #[error("{0} is down")]
    NodeDown(String),
    /// A partition's copies that are up are all stale (they missed writes, or their node lost
    /// its rows when it restarted without a data directory) and no current copy is up to read
    /// or repair them from: the query fails rather than answer without those rows.
    #[error(
        "no current copy of partition {partition} of {table}: the copy on {node} is up but \
         stale (it missed writes, or lost its rows in a restart) and no replica that has the \
         rows is up"
    )]
    NoCurrentCopy {
        /// The table.
        table: String,
        /// The partition.
        partition: u32,
        /// A node whose copy is up and stale.
        node: String,
    },
    /// A node ran out of memory while running this query.
    #[error("{0} ran out of memory")]
    OutOfMemory(String),
    /// The memory circuit breaker kept refusing the query. (No longer returned: a query
    /// waiting for admission fails only at its deadline, [`Error::AdmissionTimeout`], or when
    /// the queue is full, [`Error::Overloaded`].)
    #[error("memory circuit breaker open on {node}: query rejected after {attempts} attempts")]
    BreakerOpen {
        /// Node whose breaker was open.
        node: String,
        /// Attempts made.
        attempts: u32,
    },
    /// The query was killed by the memory circuit breaker.
    #[error("query killed by memory circuit breaker on {0}")]
    Killed(String),
    /// Too many queries are waiting for admission.
    #[error("overloaded: {0}")]
    Overloaded(String),
    /// The query was cancelled by its caller.
    #[error("query cancelled")]
    Cancelled,
    /// The query did not finish in time.
    #[error("query timed out after {0:?}")]
    Timeout(std::time::Duration),
    /// A message could not be encoded or decoded.
    #[error("malformed message: {0}")]
    Codec(String),
    /// A row's primary key equals the key of a stored row or of another row of the same
    /// statement. Nothing of the statement was stored.
    #[error(
        "duplicate primary key {column} = {} in table {table}",
        key_sql(column, value)
    )]
    DuplicateKey {
        /// Table name as stored in the catalog.
        table: String,
        /// The primary-key column; for a composite key its columns, as `(a, b)`.
        column: String,
        /// The duplicate key value; for a composite key its values as SQL text, `(1, 'x')`.
        value: Value,
    },
    /// A row's values in the columns of a UNIQUE index equal those of a stored row or of
    /// another row of the same statement (or, for `CREATE UNIQUE INDEX`, two stored rows
    /// clash). Nothing of the statement was stored.
    #[error("duplicate value {key} for unique index {index} in table {table}")]
    DuplicateUnique {
        /// Table name as stored in the catalog.
        table: String,
        /// The index's name.
        index: String,
        /// The index's columns and the clashing values as SQL text: `a = 10`, or for several
        /// columns `(a, b) = (10, 'x')`.
        key: String,
    },
    /// A write that would leave a row whose foreign key's values no row of the referenced
    /// table holds: an insert or update of the referencing table with values not there, or a
    /// delete or key change of a referenced row that rows still reference. Nothing of the
    /// statement was stored.
    #[error("{what} on table {table} violates foreign key {constraint}: {detail}")]
    ForeignKey {
        /// What the statement does: `insert or update`, or `update or delete`.
        what: &'static str,
        /// The table the statement writes.
        table: String,
        /// The foreign key's name.
        constraint: String,
        /// The key and what is wrong with it: `key (pid) = (5) is not present in table
        /// parent`, or `key (id) = (1) is still referenced from table child`.
        detail: String,
    },
    /// A row written (or, for `ALTER TABLE ... ADD CHECK`, stored) makes a `CHECK`
    /// constraint's condition false. Nothing of the statement was stored.
    #[error("a row of table {table} violates check constraint \"{constraint}\"")]
    CheckViolation {
        /// The table the statement writes.
        table: String,
        /// The constraint's name.
        constraint: String,
    },
    /// A row's primary key is NULL. Nothing of the statement was stored.
    #[error("primary key {column} cannot be NULL in table {table}")]
    NullKey {
        /// Table name as stored in the catalog.
        table: String,
        /// The primary-key column.
        column: String,
    },
    /// A sequence has no value left (`nextval` past its `MAXVALUE`, or `MINVALUE` for a
    /// descending one; a `SERIAL` column's past the largest BIGINT).
    #[error("{0}")]
    SequenceExhausted(String),
    /// `currval('s')` or `lastval()` in a session that was handed no value of the sequence
    /// (see [`Session`](crate::Session)).
    #[error("{0}")]
    SequenceUndefined(String),
    /// A statement was valid SQL but cannot be carried out (rows of the wrong types, ...).
    #[error("{0}")]
    Invalid(String),
    /// The cluster was shut down.
    #[error("cluster is shut down")]
    Shutdown,
    /// A disk operation failed on a node with a data directory: the write that needed it
    /// failed (a full disk, a failed fsync, a permission error), or the node's data could not
    /// be read back at start (naming the file and the offset). A node whose log failed keeps
    /// serving reads and refuses writes.
    #[error("disk error on {node}: {message}")]
    Disk {
        /// Node that failed, e.g. `node-1`.
        node: String,
        /// What failed: the operation and the file.
        message: String,
    },
    /// A query's operators spilled more to disk on a node than its spill quota allows
    /// ([`crate::ClusterBuilder::spill_quota`]); the query fails and its files are removed.
    #[error("spill quota exceeded on {node}: {message}")]
    SpillQuota {
        /// Node whose quota it was, e.g. `node-1`.
        node: String,
        /// The quota and what was asked.
        message: String,
    },
    /// A schema change was refused by the data nodes' catalog log: another client changed the
    /// catalog first. The client has fetched the catalog again; the statement can be run
    /// again (`execute` does so by itself a few times before it reports this).
    #[error(
        "the catalog changed under this statement: another client's schema change came first \
         (the catalog is now at epoch {epoch}); run it again"
    )]
    CatalogChanged {
        /// The catalog log's epoch.
        epoch: u64,
    },
    /// A write met another client's write to the same partition (on data nodes of other
    /// processes): nothing of it was applied. The client has refreshed the copies' versions;
    /// the statement can be run again (`execute` does so by itself a few times before it
    /// reports this).
    #[error("the write to {table} met another client's write ({message}); run it again")]
    WriteConflict {
        /// The table written.
        table: String,
        /// Where they met.
        message: String,
    },
    /// A data node of another process refused to serve a read because it cannot confirm that
    /// the copies it would read are current: it holds no fresh read lease of the data nodes'
    /// catalog log (no leader reachable: a majority of the data nodes is down or cut off), or
    /// the log counts a copy it would read lost or behind. Nothing was read. The client
    /// learns the copies' state again and retries by itself for a few seconds (a new leader
    /// is being elected, another copy is current) before it reports this.
    #[error("{node} cannot serve this read: {message}")]
    ReadRefused {
        /// The node that refused, e.g. `node-1`.
        node: String,
        /// Why.
        message: String,
    },
    /// A client could not join the data nodes of another process
    /// ([`crate::ClusterBuilder::connect`]): an address that does not resolve, a node that
    /// cannot be reached in time, or one that refused the connection (a wrong secret or id).
    #[error("cannot connect: {0}")]
    Connect(String),
    /// The query's deadline (the query timeout) passed while it waited in the admission
    /// queue for memory.
    #[error(
        "query timed out waiting for admission: waited {} ms for memory on {node}, \
         at position {position} of the admission queue",
        waited.as_millis()
    )]
    AdmissionTimeout {
        /// The node that last refused it.
        node: String,
        /// How long it waited.
        waited: std::time::Duration,
        /// Its place in the queue when it gave up (1 is the head).
        position: usize,
    },
}

impl Error {
    /// A short machine-readable kind, used in stats and bench outputs.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Plan(_) => "plan",
            Error::Execution { .. } => "execution",
            Error::Overflow { .. } => "overflow",
            Error::DivisionByZero { .. } => "division_by_zero",
            Error::Cast { .. } => "cast",
            Error::ValueTooLarge { .. } => "value_too_large",
            Error::NodeDown(_) => "node_down",
            Error::NoCurrentCopy { .. } => "no_current_copy",
            Error::OutOfMemory(_) => "out_of_memory",
            Error::BreakerOpen { .. } => "breaker_open",
            Error::Killed(_) => "killed",
            Error::Overloaded(_) => "overloaded",
            Error::Cancelled => "cancelled",
            Error::Timeout(_) => "timeout",
            Error::Codec(_) => "codec",
            Error::CatalogChanged { .. } => "catalog_changed",
            Error::WriteConflict { .. } => "write_conflict",
            Error::ReadRefused { .. } => "read_refused",
            Error::DuplicateKey { .. } => "duplicate_key",
            Error::DuplicateUnique { .. } => "duplicate_unique",
            Error::ForeignKey { .. } => "foreign_key",
            Error::CheckViolation { .. } => "check_violation",
            Error::NullKey { .. } => "null_key",
            Error::SequenceExhausted(_) => "sequence_exhausted",
            Error::SequenceUndefined(_) => "sequence_undefined",
            Error::Invalid(_) => "invalid",
            Error::Shutdown => "shutdown",
            Error::Disk { .. } => "disk",
            Error::SpillQuota { .. } => "spill_quota",
            Error::Connect(_) => "connect",
            Error::AdmissionTimeout { .. } => "admission_timeout",
        }
    }

    /// The node the failure happened on, where one is known (`node-1`, or `client` for
    /// work done on the client node).
    pub fn node(&self) -> Option<&str> {
        match self {
            Error::Execution { node, .. }
            | Error::Overflow { node, .. }
            | Error::DivisionByZero { node, .. }
            | Error::Cast { node, .. }
            | Error::Disk { node, .. }
            | Error::ReadRefused { node, .. }
            | Error::SpillQuota { node, .. }
            | Error::ValueTooLarge { node, .. }
            | Error::BreakerOpen { node, .. }
            | Error::AdmissionTimeout { node, .. } => Some(node),
            Error::NodeDown(node) | Error::OutOfMemory(node) | Error::Killed(node) => Some(node),
            _ => None,
        }
    }

    /// The typed error for kernel failure `e` on `node`.
    pub(crate) fn kernel(node: String, e: &weir_operators::Error) -> Self {
        use weir_operators::Error as Op;
        let kind = match e {
            Op::Overflow(_) => ErrorKind::Overflow,
            Op::DivisionByZero(_) => ErrorKind::DivisionByZero,
            Op::Cast { .. } => ErrorKind::Cast,
            Op::ValueTooLarge(_) => ErrorKind::ValueTooLarge,
            Op::Spill(_) => ErrorKind::Disk,
            Op::SpillQuota { .. } => ErrorKind::SpillQuota,
            _ => ErrorKind::Execution,
        };
        Error::of_kind(kind, node, e.to_string())
    }

    /// The error a fragment reported as `kind` with text `message`, on `node`.
    pub(crate) fn of_kind(kind: ErrorKind, node: String, message: String) -> Self {
        match kind {
            ErrorKind::Overflow => Error::Overflow { node, message },
            ErrorKind::DivisionByZero => Error::DivisionByZero { node, message },
            ErrorKind::Cast => Error::Cast { node, message },
            ErrorKind::ValueTooLarge => Error::ValueTooLarge { node, message },
            ErrorKind::Killed => Error::Killed(node),
            ErrorKind::OutOfMemory => Error::OutOfMemory(node),
            ErrorKind::Disk => Error::Disk { node, message },
            ErrorKind::SpillQuota => Error::SpillQuota { node, message },
            ErrorKind::Execution | ErrorKind::Cancelled => Error::Execution { node, message },
        }
    }

    /// The error for a storage refusal while writing rows of `table`: a duplicate or NULL
    /// primary key becomes [`Error::DuplicateKey`] / [`Error::NullKey`] naming the table;
    /// anything else becomes [`Error::Invalid`] with the storage's message.
    pub(crate) fn from_storage(table: &str, e: weir_operators::Error) -> Self {
        match e {
            weir_operators::Error::DuplicateKey { column, value } => Error::DuplicateKey {
                table: table.to_string(),
                column,
                value,
            },
            weir_operators::Error::NullKey { column } => Error::NullKey {
                table: table.to_string(),
                column,
            },
            other => Error::Invalid(other.to_string()),
        }
    }
}

/// A duplicate key's value as SQL: a composite key's values (its column is `(a, b)`) are SQL
/// text already.
fn key_sql(column: &str, value: &Value) -> String {
    match value {
        Value::Str(s) if column.starts_with('(') => s.clone(),
        v => v.to_sql(),
    }
}

/// Why a fragment failed, as a node reports it to the query's initiator (the wire form of
/// the typed errors above).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ErrorKind {
    /// A kernel failed.
    Execution,
    /// A result too large for its type.
    Overflow,
    /// A division by zero without a NULL answer.
    DivisionByZero,
    /// A value that does not convert to a CAST's type.
    Cast,
    /// The fragment was closed on request (Legacy's reply to a close).
    Cancelled,
    /// The breaker killed it.
    Killed,
    /// The node ran out of memory.
    OutOfMemory,
    /// A value larger than the maximum value size.
    ValueTooLarge,
    /// A spill file could not be written or read.
    Disk,
    /// Spilling went past the node's spill quota.
    SpillQuota,
}
