//! # weir-runtime
//!
//! The actor runtime of weir: a cluster of nodes simulated in one process, each node with a
//! [`NodeActor`](dispatch::node_actor::NodeActor) on one of the actix arbiters (actor threads)
//! the nodes share (one per core by default), every fragment and every operator of a query an
//! actor, batches flowing between them under credit-based flow control, and messages between
//! nodes serialized through the [`wire::network`], which hands the bytes to a carrier:
//! simulated in process (with fault injection), or TCP between processes.
//!
//! The modules are floors, each importing only those below it:
//!
//! | floor | module | what it holds |
//! |---|---|---|
//! | 1 | [`wire`] | ids, messages, codec, partition map, the network and its carriers |
//! | 2 | [`memory`] | pools, the breaker, its supervisor, admission and estimates |
//! | 3 | [`node`] | a node's shared state, its handle and its actor's inbox |
//! | 4 | [`replication`] | replicated writes, resync, membership |
//! | 5 | [`exec`] | credits, operator and source actors, idle threads |
//! | 6 | [`exchange`] | the ends of an exchange and the router of a node's query messages |
//! | 7 | [`dispatch`] | the node actor (decode and dispatch) and fragment instances |
//! | 8 | [`query`] | the query actor, placement, result streams and rows |
//! | 9 | [`cluster`] | the [`Cluster`] facade, and a data node of its own process |
//!
//! [`error`] sits under them all. Start with [`Cluster::builder`].

#[cfg(feature = "arrow")]
pub mod arrow;
pub mod cluster;
pub mod dispatch;
pub mod error;
pub mod exchange;
pub mod exec;
pub mod memory;
pub mod node;
pub mod query;
pub mod replication;
pub mod wire;

pub use cluster::builder::ClusterBuilder;
pub use cluster::copy::{CopyProgress, ProgressUnit};
pub use cluster::data_node::DataNode;
pub use cluster::prepared::Prepared;
pub use cluster::session::Session;
pub use cluster::stats::{ClusterStats, NodeStats};
pub use cluster::Cluster;
pub use error::{Error, Result};
pub use memory::breaker::{BreakerConfig, BreakerTotals, Health, JoinMode, KillPolicy};
pub use query::result::{AsyncQueryStream, QueryResult, QueryStream};
pub use query::rows::{ColumnIndex, Decimal, FromValue, IntoParams, Row};
pub use query::stats::QueryStats;
pub use weir_operators::Value;
pub use weir_storage::Durability;
pub use wire::counters::MessageStats;
pub use wire::faults::FaultPlan;
pub use wire::framing::{Secret, Tls, TlsFiles};
pub use wire::messages::{MessageKind, Protocol};
