//! # weir-planner
//!
//! weir's SQL planner: SQL text (parsed by `sqlparser` with the generic dialect) is bound
//! against the [`Catalog`] (case-insensitive names, table aliases, qualified columns, `*`),
//! type-checked, optimized (filter pushdown, projection pruning, index selection, partition
//! pruning, join build side, two-phase aggregation, top-k) and cut into distributed
//! [`Fragment`]s connected by exchanges. A [`PlanCache`] keeps query plans per SQL text,
//! parameter types and catalog version.
//!
//! Supported: `SELECT [DISTINCT]` with expressions and aliases over one table or inner equi-joins,
//! `WHERE`, `GROUP BY` (expressions, aliases, ordinals), `COUNT/SUM/AVG/MIN/MAX`, `HAVING`,
//! window functions (`OVER`, `WINDOW`, `QUALIFY`; partitioned ones after a hash exchange),
//! `ORDER BY` (expressions, aliases, ordinals, `ASC/DESC`, `NULLS FIRST/LAST`), `LIMIT/OFFSET`,
//! `OFFSET n ROWS` and `FETCH FIRST n ROWS ONLY`, `VALUES (...), (...)` as a query,
//! `?` and `$n` parameters; `EXPLAIN`, `CREATE TABLE`, `CREATE INDEX`, `DROP TABLE`,
//! `INSERT ... VALUES`, `UPDATE` and `DELETE`. Anything else is a [`PlanError::Unsupported`] naming the construct and
//! its position.

#![warn(missing_docs)]

mod add_identity;
mod alter;
mod bind;
pub mod cache;
pub mod catalog;
mod checks;
mod collation;
mod comment;
mod cte_hints;
mod ddl;
mod depth;
mod dml;
mod entry;
pub mod error;
pub mod explain;
mod explain_options;
mod external;
mod foreign_key;
mod frame_exclude;
pub mod logical;
pub mod optimizer;
mod physical;
mod query;
mod schema_change;
mod sequence_alter;
mod sequence_names;
mod sequences;
pub mod statement;
mod table_command;
mod truncate;
mod upsert;

pub use cache::{CachedStatement, PlanCache};
pub use catalog::alter::TableChange;
pub use catalog::{
    Catalog, CatalogSnapshot, CheckConstraint, ColumnDefault, Comments, DefaultValue, ForeignKey,
    IndexDef, NamedSequence, ReferentialAction, SequenceChanges, SequenceName, SequenceOwner,
    SequenceState, TableDef, ViewDef,
};
pub use checks::check_conditions;
pub use ddl::{column_fill, ColumnFill};
pub use depth::MAX_EXPR_DEPTH;
pub use dml::identity_columns;
pub use entry::plan_statement;
pub use error::PlanError;
pub use schema_change::alter_catalog;
pub use statement::{
    Fragment, FragmentOutput, Placement, Pruning, QueryPlan, Returning, SequenceCall, SequenceFill,
    Statement,
};
pub use weir_operators::plan::Distribution;
