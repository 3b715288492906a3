//! What a TCP endpoint counts: frames and bytes each way, heartbeats, and everything it
//! refused or gave up on.

use std::sync::atomic::{AtomicU64, Ordering};

/// The live counters of one endpoint (see [`TcpStats`] for what each counts).
#[derive(Debug, Default)]
pub(super) struct Counters {
    pub frames_sent: AtomicU64,
    pub bytes_sent: AtomicU64,
    pub frames_received: AtomicU64,
    pub bytes_received: AtomicU64,
    pub heartbeats_sent: AtomicU64,
    pub heartbeats_received: AtomicU64,
    pub refused_connections: AtomicU64,
    pub refused_frames: AtomicU64,
    pub forged_frames: AtomicU64,
    pub duplicate_ids: AtomicU64,
    pub refused_certificates: AtomicU64,
    pub refused_peers: AtomicU64,
    pub stalled_peers: AtomicU64,
    pub unsendable: AtomicU64,
}

/// Adds one to `counter`.
pub(super) fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

impl Counters {
    /// A snapshot.
    pub(super) fn stats(&self) -> TcpStats {
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        TcpStats {
            frames_sent: n(&self.frames_sent),
            bytes_sent: n(&self.bytes_sent),
            frames_received: n(&self.frames_received),
            bytes_received: n(&self.bytes_received),
            heartbeats_sent: n(&self.heartbeats_sent),
            heartbeats_received: n(&self.heartbeats_received),
            refused_connections: n(&self.refused_connections),
            refused_frames: n(&self.refused_frames),
            forged_frames: n(&self.forged_frames),
            duplicate_ids: n(&self.duplicate_ids),
            refused_certificates: n(&self.refused_certificates),
            refused_peers: n(&self.refused_peers),
            stalled_peers: n(&self.stalled_peers),
            unsendable: n(&self.unsendable),
        }
    }
}

/// A snapshot of an endpoint's wire traffic.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TcpStats {
    /// Message frames sent (heartbeats not included).
    pub frames_sent: u64,
    /// Bytes of the message frames sent (without their length prefix and tag).
    pub bytes_sent: u64,
    /// Message frames received intact and handed on.
    pub frames_received: u64,
    /// Bytes of those frames.
    pub bytes_received: u64,
    /// Heartbeats sent.
    pub heartbeats_sent: u64,
    /// Heartbeats received.
    pub heartbeats_received: u64,
    /// Connections refused or failed in the handshake (a wrong secret, garbage, a timeout,
    /// too many pending, an id held by a live connection; under TLS also a failed TLS
    /// handshake, a plaintext peer, or a refused certificate).
    pub refused_connections: u64,
    /// Frames refused after the handshake although their tag verified (too long, a bad
    /// checksum, no node here to take them). Too long closes the connection.
    pub refused_frames: u64,
    /// Frames whose tag did not verify (forged, altered, replayed, reordered or injected);
    /// under TLS, records that did not decrypt. Each closed its connection.
    pub forged_frames: u64,
    /// Authenticated newcomers refused because a live connection holds their id.
    pub duplicate_ids: u64,
    /// Under TLS, connections refused for a certificate: not signed by the CA, expired or
    /// not valid yet, missing, or not naming the id its holder claims (also counted in
    /// `refused_connections`); and client-certificate connections closed because a `Join`
    /// named their id as a data node's.
    pub refused_certificates: u64,
    /// Peer addresses refused: a new address for a peer with a live connection (a live peer
    /// is never moved), or a peer past [`TcpConfig::max_peers`](super::TcpConfig::max_peers).
    pub refused_peers: u64,
    /// Connections declared down because their peer stopped taking what was sent (a send
    /// without progress for the send timeout, or a send queue over its bound).
    pub stalled_peers: u64,
    /// Frames not sent: no connection to their peer, too long, or a full queue.
    pub unsendable: u64,
}
