//! Where a node's messages arrive: the node actor ([`node_actor`]) decodes what comes from
//! other nodes and hands every message to the part that owns it; start requests become
//! fragment instances ([`start`], [`fragment`]); [`counters`] count what the node handled.

pub mod counters;
pub mod fragment;
pub mod messages;
pub mod node_actor;
pub mod start;
