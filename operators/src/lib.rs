//! # weir-operators
//!
//! The bottom layer of weir: the columnar data model ([`Batch`], [`Column`], [`Schema`]),
//! scalar [`Value`]s for literals, parameters and result cells, vectorized [`Expr`] evaluation,
//! pure batch kernels (scan, index lookup, filter, project, hash and nested-loop joins of every
//! join type, single row, hash aggregate, sort, limit), in-memory partition storage and the
//! placement of rows on partitions (by the stable hashes of [`hashing`]), memory
//! reservations, and the serializable [`PhysicalPlan`] that the planner produces and the
//! runtime executes.
//!
//! Nothing in this crate knows about actors, nodes or networks: every kernel can be unit-tested
//! and benchmarked on its own.

pub mod batch;
pub mod bitmap;
pub mod column;
pub mod decimal;
pub mod decode;
pub mod error;
pub mod eval;
pub mod expr;
pub mod external;
pub mod functions;
pub mod hashing;
pub(crate) mod index_key;
pub mod kernels;
pub mod limits;
pub mod memory;
pub mod placement;
pub mod plan;
pub mod secondary_index;
pub mod spill;
pub mod storage;
pub mod table_function;
pub mod table_store;
pub mod temporal;
pub mod types;
pub mod value;
mod wire;

pub use batch::{Batch, DEFAULT_BATCH_SIZE};
pub use bitmap::Bitmap;
pub use column::{Column, ColumnBuilder, ColumnData};
pub use error::{Error, Result};
pub use expr::{BinaryOp, Expr};
pub use functions::ScalarFunc;
pub use memory::{MemoryPool, Reservation, UnboundedPool};
pub use plan::PhysicalPlan;
pub use types::{DataType, Field, Schema};
pub use value::Value;
