//! What the memory floor sees of a node: its name, pool and running joins, and whether it is
//! up. The node's state (above) implements it, so that the supervisor and the admission
//! queue need nothing of the node's other parts.

use crate::memory::joins::RunningJoins;
use crate::memory::pool::NodePool;
use crate::wire::ids::NodeId;
use std::sync::Arc;

/// A node, as the breaker and the admission queue see it.
pub trait NodeView: Send + Sync {
    /// The node's id.
    fn id(&self) -> NodeId;
    /// The node's display name (`node-0`, ..., `client`).
    fn name(&self) -> &str;
    /// The node's memory pool.
    fn pool(&self) -> &Arc<NodePool>;
    /// The hash joins running on the node.
    fn joins(&self) -> &RunningJoins;
    /// Whether the node is up (a crashed node holds nothing and runs nothing).
    fn is_up(&self) -> bool;
}
