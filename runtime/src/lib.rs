//! # weir-runtime
//!
//! The actor runtime of weir: a cluster of nodes simulated in one process, each node with a
//! [`NodeActor`](actors::node::NodeActor) on one of the actix arbiters (actor threads) the
//! nodes share (one per core by default), every fragment and every operator of
//! a query an actor, batches flowing between them under credit-based flow control, and
//! messages between nodes serialized through the [`network`], which hands the bytes to a
//! carrier: simulated in process (with fault injection), or TCP between processes.
//!
//! Start with [`Cluster::builder`].

pub mod actors;
pub mod admission;
#[cfg(feature = "arrow")]
pub mod arrow;
pub mod breaker;
pub mod channel;
pub mod cluster;
pub mod codec;
pub mod data_node;
pub mod error;
pub mod faults;
pub mod flow;
pub mod idle;
pub mod membership;
pub mod memory;
pub mod messages;
pub mod network;
pub mod node;
pub mod partition_map;
pub mod placement;
pub mod recent;
pub mod replication;
pub mod result;
pub mod resync;
pub mod rows;
pub mod waiters;

pub use actors::query::QueryStats;
pub use breaker::{BreakerConfig, BreakerTotals, Health, JoinMode, KillPolicy};
pub use cluster::Prepared;
pub use cluster::{Cluster, ClusterBuilder, ClusterStats, CopyProgress, NodeStats, ProgressUnit};
pub use error::{Error, Result};
pub use faults::FaultPlan;
pub use messages::{MessageKind, Protocol};
pub use network::MessageStats;
pub use result::{AsyncQueryStream, QueryResult, QueryStream};
pub use rows::{ColumnIndex, Decimal, FromValue, IntoParams, Row};
pub use weir_operators::Value;
