//! Memory: each node's pool and the memory circuit breaker over it.
//!
//! - [`pool`]: a node's accounted memory, its budget and the queue of producers waiting for
//!   room; [`pool::Pools`], the pools of this process by node;
//! - [`breaker`]: the breaker's settings (join modes, kill policies, backoff), health and
//!   counters;
//! - [`joins`]: the hash joins running on a node; [`supervisor`]: the breaker's actor, one per
//!   node, which kills half of them when the node crosses its limit;
//! - [`admission`]: the cluster-wide queue where queries wait for memory before they start,
//!   with [`estimate`], what a query's hash joins are predicted to build;
//! - [`view`]: what this floor sees of a node; [`messages`]: what its actors are sent.

pub mod admission;
pub mod breaker;
pub mod estimate;
pub mod joins;
pub mod messages;
pub mod pool;
pub mod supervisor;
pub mod view;

pub use pool::DEFAULT_NODE_MEMORY;
