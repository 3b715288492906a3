//! Where a node's messages arrive: the node actor decodes what comes from other nodes and
//! dispatches every message to the part that owns it, and starts fragment instances
//! ([`fragment::FragmentActor`]) from start requests.

pub mod fragment;
pub mod messages;
pub mod node_actor;
