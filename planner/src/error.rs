//! Planning errors. Every message names the offending table, column, construct or parameter.

use sqlparser::tokenizer::Span;
use weir_operators::DataType;

/// An error raised while parsing, binding or planning a statement.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum PlanError {
    /// The SQL text does not parse.
    #[error("syntax error: {0}")]
    Syntax(String),
    /// A table name that is not in the catalog.
    #[error("unknown table '{0}'")]
    UnknownTable(String),
    /// A sequence name (`nextval('s')`, `DROP SEQUENCE s`) that no sequence has.
    #[error("unknown sequence '{0}'")]
    UnknownSequence(String),
    /// A table, view or sequence made with the name of one that exists (`CREATE SEQUENCE`).
    #[error("relation '{0}' already exists")]
    RelationExists(String),
    /// A column name that no table in scope has.
    #[error("unknown column '{name}'{}", at_position(.position))]
    UnknownColumn {
        /// The column as written (possibly qualified, `t.c`).
        name: String,
        /// `"line L, column C"`, or empty when unknown.
        position: String,
    },
    /// An unqualified column name that more than one table in scope has.
    #[error("ambiguous column '{0}'")]
    AmbiguousColumn(String),
    /// Valid SQL that weir does not support.
    #[error("unsupported SQL: {what}{}", at_position(.position))]
    Unsupported {
        /// The construct, e.g. `"window functions"`.
        what: String,
        /// `"line L, column C"`, or empty when unknown.
        position: String,
    },
    /// A type mismatch; the message names the expression.
    #[error("type error: {0}")]
    Type(String),
    /// The number of bound parameters differs from the placeholders in the SQL.
    #[error("wrong number of parameters: the statement needs {expected}, {got} given")]
    ParamCount {
        /// Parameters the statement needs.
        expected: usize,
        /// Parameters given.
        got: usize,
    },
    /// A bound parameter has the wrong type.
    #[error("parameter {} (index {index}) must be {expected}, got {got}", .index + 1)]
    ParamType {
        /// 0-based parameter index.
        index: usize,
        /// Type the statement needs.
        expected: DataType,
        /// Type of the given value.
        got: DataType,
    },
    /// `CREATE TABLE` of a table that exists.
    #[error("table '{0}' already exists")]
    TableExists(String),
    /// `CREATE INDEX` with a name that exists on the table.
    #[error("index '{0}' already exists")]
    IndexExists(String),
    /// A semantically invalid statement (aggregate misuse, bad LIMIT, wrong INSERT arity, ...).
    #[error("invalid SQL: {0}")]
    Invalid(String),
    /// A statement that would drop an object another one depends on (a table a foreign key
    /// references).
    #[error("{0}")]
    Depended(String),
    /// A NULL for a column declared `NOT NULL` (PostgreSQL's not_null_violation).
    #[error("column '{column}' of table '{table}' is NOT NULL and cannot take NULL")]
    NullValue {
        /// The table, as the catalog names it.
        table: String,
        /// The column, as the table names it.
        column: String,
    },
}

fn at_position(position: &str) -> String {
    if position.is_empty() {
        String::new()
    } else {
        format!(" at {position}")
    }
}

impl PlanError {
    /// Shorthand for [`PlanError::Unsupported`].
    pub fn unsupported(what: impl Into<String>, position: impl Into<String>) -> Self {
        PlanError::Unsupported {
            what: what.into(),
            position: position.into(),
        }
    }

    /// The same error, placed at `position` when it is an [`PlanError::Unsupported`] that does
    /// not know where it is (the optimizer's errors, raised far from the statement's text).
    pub fn or_at(self, position: &str) -> Self {
        match self {
            PlanError::Unsupported { what, position: p } if p.is_empty() => {
                PlanError::Unsupported {
                    what,
                    position: position.to_string(),
                }
            }
            other => other,
        }
    }
}

/// `"line L, column C"` for a span, or empty when the span is unknown.
pub(crate) fn pos(span: Span) -> String {
    if span.start.line == 0 {
        String::new()
    } else {
        format!("line {}, column {}", span.start.line, span.start.column)
    }
}

/// `" at line L, column C"` for a span, or empty when the span is unknown.
pub(crate) fn at(span: Span) -> String {
    let p = pos(span);
    if p.is_empty() {
        p
    } else {
        format!(" at {p}")
    }
}

/// Shorthand for an unsupported-construct error at a span.
pub(crate) fn unsupported(what: impl Into<String>, span: Span) -> PlanError {
    PlanError::unsupported(what, pos(span))
}
