//! Memory: each node's pool and the memory circuit breaker over it.
//!
//! - [`pool`]: a node's accounted memory, its budget and the queue of producers waiting for room;
//! - [`breaker`]: the breaker's settings (join modes, kill policies, backoff), health and counters;
//! - [`supervisor`]: the breaker's actor, one per node, and the running hash joins it may kill;
//! - [`admission`]: the cluster-wide queue where queries wait for memory before they start,
//!   with [`estimate`], what a query's hash joins are predicted to build.

pub mod admission;
pub mod breaker;
pub mod estimate;
pub mod pool;
pub mod supervisor;

pub use pool::DEFAULT_NODE_MEMORY;
