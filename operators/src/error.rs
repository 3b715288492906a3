//! Errors raised by kernels and expression evaluation.

use crate::value::Value;
use thiserror::Error;

/// A duplicate key's value as SQL: a composite key's values are already SQL text.
fn key_sql(column: &str, value: &Value) -> String {
    match value {
        Value::Str(s) if column.starts_with('(') => s.clone(),
        v => v.to_sql(),
    }
}

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The message of [`Error::Cardinality`] for a scalar subquery with more than one row.
pub const TOO_MANY_ROWS: &str = "scalar subquery returned more than one row";

/// An error raised while evaluating expressions or running a kernel.
#[derive(Debug, Clone, Error, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Error {
    /// Operands of incompatible types met in an expression.
    #[error("type error: {0}")]
    Type(String),
    /// An arithmetic operation without an answer (square root of a negative number, a
    /// negative substring length, ...).
    #[error("arithmetic error: {0}")]
    Arithmetic(String),
    /// A result too large for its type (BIGINT, DECIMAL, DOUBLE, a date out of range); the
    /// text names the operation, e.g. `BIGINT overflow in 9223372036854775807 + 1`.
    #[error("arithmetic error: {0}")]
    Overflow(String),
    /// A division by zero that has no NULL answer (`power(0, -1)`); plain `x / 0` is NULL.
    #[error("arithmetic error: {0}")]
    DivisionByZero(String),
    /// A CAST that cannot convert its value.
    #[error("cannot cast {value} to {to}")]
    Cast {
        /// The offending value, rendered as text.
        value: String,
        /// The target type.
        to: String,
    },
    /// A parameter placeholder without a bound value.
    #[error("parameter ${0} has no value")]
    MissingParameter(usize),
    /// A memory reservation was refused.
    #[error("{0}")]
    Memory(String),
    /// A subquery produced more rows than its use allows (a scalar subquery with more than
    /// one row).
    #[error("{0}")]
    Cardinality(String),
    /// The operation was stopped from outside (cancel, kill).
    #[error("cancelled: {0}")]
    Cancelled(String),
    /// A row's primary key equals the key of a stored row, or of another row of the same
    /// insert.
    #[error("duplicate primary key {column} = {}", key_sql(column, value))]
    DuplicateKey {
        /// The primary-key column; for a composite key its columns, as `(a, b)`.
        column: String,
        /// The key value; for a composite key its values as SQL text, `(1, 'x')`.
        value: Value,
    },
    /// A row's primary key is NULL.
    #[error("primary key {column} cannot be NULL")]
    NullKey {
        /// The primary-key column.
        column: String,
    },
    /// A value (or a column of text) a function would make is larger than the maximum value
    /// size ([`crate::limits`]); the text names the function and the sizes.
    #[error("value too large: {0}")]
    ValueTooLarge(String),
    /// A recursive query (`WITH RECURSIVE`) that went on for more rounds than its limit; the
    /// text names the query and the limit.
    #[error("{0}")]
    RecursionLimit(String),
    /// Writing or reading a spill file failed (an I/O error, a damaged file); the text names
    /// the file.
    #[error("spill error: {0}")]
    Spill(String),
    /// Reading an external table's files failed (a file missing or unreadable, not of the
    /// table's format, a value not of its column's type); the text names the file.
    #[error("external table: {0}")]
    External(String),
    /// An operator's state does not fit in memory even spilled (a hash join's one key with
    /// more build rows than the memory holds); the text says which and why. Unlike
    /// [`Error::Memory`], running the query again cannot help.
    #[error("{0}")]
    Unspillable(String),
    /// A spill would take the node's spill directory past its disk quota.
    #[error("{node}: spill quota of {quota} bytes exceeded ({used} bytes spilled, asked for {asked} more)")]
    SpillQuota {
        /// The node whose quota it is.
        node: String,
        /// The quota, in bytes.
        quota: u64,
        /// Bytes on disk when the spill was refused.
        used: u64,
        /// Bytes the refused write needed.
        asked: u64,
    },
    /// Anything else that is a bug in the plan (wrong column index, wrong arity).
    #[error("internal error: {0}")]
    Internal(String),
}
