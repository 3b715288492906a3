//! What crosses nodes: node and query ids, the messages and their codec, the partition map
//! that start requests carry, and the network that moves sealed bytes between nodes over a
//! carrier (simulated in process, with seeded faults, or TCP between processes).
//!
//! This is the lowest floor of the runtime: it knows no actor of weir's. A node is reached
//! through the [`network::Network`], whatever sits behind it.

pub mod carrier;
pub mod codec;
pub mod counters;
pub mod faults;
pub mod framing;
pub mod ids;
pub mod messages;
pub mod network;
pub mod partition_map;
pub mod simulated;
pub mod tcp;
