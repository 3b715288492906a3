//! The TCP carrier: frames between nodes of different processes, over one authenticated
//! connection per node pair.
//!
//! A [`TcpTransport`] is one node's endpoint. It runs its own tokio runtime on a thread of its
//! own, listens (optionally) for peers, and dials the peers it is told about with
//! [`TcpTransport::add_peer`]. Of two nodes that both listen, the one with the lower id dials,
//! so a pair has one connection; a node that does not listen dials everyone.
//!
//! Every connection starts with the handshake of [`framing`](crate::wire::framing) (under
//! [`Auth::Tls`], inside a mutual TLS session whose certificates name the ids claimed); a
//! peer that fails it is refused and logged, and nothing it sent is deserialized. Handshakes are
//! bounded in number, in total and per source, and in time ([`pending`]). A live connection
//! holds its peer's id: a newcomer claiming it is refused, counted and logged, and the live
//! connection kept ([`links`]); a live peer is never moved to another address. After the
//! handshake ([`link`]):
//! - every frame carries a MAC under the connection's key for its direction, over its
//!   sequence number and bytes ([`framing::frame_mac`](crate::wire::framing::frame_mac)): a
//!   frame that does not verify closes the connection and is counted (under TLS, frames
//!   carry no MAC: a TLS record that does not decrypt closes it and is counted alike);
//! - each side sends a heartbeat (an empty frame) every [`TcpConfig::heartbeat_interval`], and
//!   a connection on which nothing arrived for [`TcpConfig::dead_after`] is closed and its
//!   peer reported [`PeerEvent::Down`];
//! - a frame longer than [`TcpConfig::max_frame_bytes`] closes the connection (the stream
//!   cannot be resynchronised);
//! - sends never block: frames queue on their connection, a queue over
//!   [`TcpConfig::send_queue_bytes`] or a write that makes no progress for
//!   [`TcpConfig::send_timeout`] closes the connection (its peer stopped reading) and
//!   reports the peer down;
//! - a dialer whose connection ends dials again with backoff ([`dial`]), and gives up after
//!   [`TcpConfig::dial_attempts`] failures in a row.
//!
//! A frame for a peer that is not connected is lost (the send says so), as a message to a
//! crashed node is on the simulated network. The message counters by kind are kept above the
//! carrier, in [`Network`](crate::wire::network::Network); [`TcpStats`] counts frames and
//! bytes on the wire, and everything refused.

pub mod accept;
pub mod config;
pub mod dial;
pub mod endpoint;
pub mod link;
pub mod links;
pub mod pending;
pub mod shared;
pub mod stats;
mod stream;

pub use config::{
    Auth, TcpConfig, DIAL_ATTEMPTS, MAX_PEERS, MAX_PENDING_HANDSHAKES, MAX_PENDING_PER_SOURCE,
    SEND_QUEUE_BYTES,
};
pub use endpoint::TcpTransport;
pub use link::BATCH_FRAMES;
pub use shared::{Inbound, PeerEvent, Refusal};
pub use stats::TcpStats;
