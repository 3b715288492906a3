//! What an endpoint's tasks share (its accept loop, dial loops and connections): its
//! settings, where arriving frames go, its live connections and peers' addresses, its
//! counters, and the connection events it reports.

use super::config::TcpConfig;
use super::links::Links;
use super::stats::Counters;
use crate::wire::ids::NodeId;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// Where the carrier hands a frame that arrived: `(from, sealed bytes)`; false when no node
/// here takes it (the frame is dropped and logged).
pub type Inbound = Arc<dyn Fn(NodeId, Vec<u8>) -> bool + Send + Sync>;

/// A change in a peer's connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeerEvent {
    /// An authenticated connection to the peer is up.
    Up(NodeId),
    /// The peer's connection ended; the reason says how.
    Down(NodeId, String),
}

/// Why the last dial to a peer failed in its handshake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The peer holds a live connection with this endpoint's id.
    pub id_in_use: bool,
    /// What failed, in words.
    pub message: String,
}

/// The state an endpoint's tasks share.
pub(super) struct Shared {
    pub config: TcpConfig,
    pub inbound: Inbound,
    pub links: Links,
    pub addrs: Mutex<HashMap<NodeId, SocketAddr>>,
    /// The peers a dial loop runs for, with its failures in a row.
    pub dialing: Mutex<HashMap<NodeId, u32>>,
    /// The last handshake refusal of each peer dialed, until a dial succeeds.
    pub refusals: Mutex<HashMap<NodeId, Refusal>>,
    pub counters: Counters,
    pub events: crossbeam_channel::Sender<PeerEvent>,
    pub shutdown: CancellationToken,
}

impl Shared {
    /// Peer `peer`'s address, if it has one.
    pub fn addr(&self, peer: NodeId) -> Option<SocketAddr> {
        self.addrs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&peer)
            .copied()
    }
}
