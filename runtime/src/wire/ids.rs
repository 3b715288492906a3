//! The ids that name nodes and queries everywhere in the runtime.

/// A node's index in the cluster (data nodes first, the client node last).
pub type NodeId = u32;
/// A query's cluster-wide id.
pub type QueryId = u64;
