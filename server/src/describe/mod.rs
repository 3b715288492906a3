//! psql's `\d NAME` and `\d+ NAME`: the catalog queries psql sends to describe a relation,
//! recognized by what they read and answered from weir's catalog.
//!
//! psql finds the relations a name pattern names (`pg_class` joined with `pg_namespace`),
//! then reads each one's flags (`pg_class`), columns (`pg_attribute`), indexes (`pg_index`),
//! and asks for what weir never has (row-level policies, extended statistics, publications,
//! inheritance). Each query is recognized by its `FROM` and its select list; every item of
//! the select list is answered by the catalog column or function it names (`c.relkind`,
//! `pg_catalog.format_type(...)`, an alias such as `AS attcollation`) or is a literal, so
//! the answer has the columns psql asked for, in its order, whichever psql version sent it.
//! What weir has no notion of (defaults, collations, tablespaces, access methods) is NULL.
//!
//! The drivers' catalog questions are recognized the same way: psycopg's type lookup, JDBC's
//! `DatabaseMetaData` (tables, columns, primary keys, schemas; its queries in
//! `pgjdbc_42_5.sql`), and SQLAlchemy 2.1's table listing and reflection (columns, primary
//! key, indexes, foreign keys, checks, comments, schemas; its queries in
//! `sqlalchemy_2_1.sql`), whose index and key columns are arrays (see
//! [`Describe::pg_types`]).
//!
//! [`recognize`] tells a describe query from its tokens ([`psql_describe`]), [`question`]
//! holds what it asks, [`mod@relations`] what the cluster's catalog tells of its tables and
//! views, and [`answer`] the rows.

pub mod answer;
pub mod question;
pub mod recognize;
pub mod relations;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod sqlalchemy_tests;

#[cfg(test)]
mod jdbc_tests;

pub use question::{Describe, Filter, Item, Question, TypeName};
pub use recognize::psql_describe;
pub use relations::{format_type, oid, relations, ColumnInfo, IndexInfo, Relation, SequenceInfo};
