//! How a TCP endpoint behaves: its id and how it authenticates (a shared secret, or TLS),
//! where it listens, and every bound it keeps
//! (heartbeats, handshakes, sends, dials), with their defaults.

use crate::wire::codec;
use crate::wire::framing::{Secret, Tls};
use crate::wire::ids::NodeId;
use std::net::SocketAddr;
use std::time::Duration;

/// Default of [`TcpConfig::max_pending`]: most connections an endpoint handshakes with at
/// once; one more is closed at once (and counted refused).
pub const MAX_PENDING_HANDSHAKES: usize = 64;

/// Default of [`TcpConfig::max_pending_per_source`]: most handshakes pending at once from
/// one source (an IPv4 address, or an IPv6 /64), so that one host re-opening silent
/// connections cannot take the slots of the others.
pub const MAX_PENDING_PER_SOURCE: usize = 8;

/// Default of [`TcpConfig::dial_attempts`]: failed dials in a row after which a dial loop
/// gives up (about 30 s with the default backoff).
pub const DIAL_ATTEMPTS: u32 = 30;

/// Default of [`TcpConfig::max_peers`]: most peer addresses an endpoint keeps.
pub const MAX_PEERS: usize = 4096;

/// Default of [`TcpConfig::send_queue_bytes`].
pub const SEND_QUEUE_BYTES: usize = 512 << 20;

/// How the two ends of a connection authenticate each other.
#[derive(Debug, Clone)]
pub enum Auth {
    /// Both prove they know the cluster's shared secret; every frame carries a MAC under a
    /// key derived from it (not encrypted).
    Secret(Secret),
    /// Mutual TLS: both present a certificate signed by the cluster's CA, naming the id they
    /// claim ([`framing::tls`](crate::wire::framing::tls)); frames are encrypted.
    Tls(Tls),
}

impl From<Secret> for Auth {
    fn from(secret: Secret) -> Self {
        Auth::Secret(secret)
    }
}

impl From<Tls> for Auth {
    fn from(tls: Tls) -> Self {
        Auth::Tls(tls)
    }
}

/// How a [`TcpTransport`](super::TcpTransport) behaves.
#[derive(Debug, Clone)]
pub struct TcpConfig {
    /// This node's id.
    pub id: NodeId,
    /// How peers authenticate: the shared secret every peer must prove it knows, or TLS.
    pub auth: Auth,
    /// Where to listen for peers (port 0 picks one); `None`: dial only.
    pub listen: Option<SocketAddr>,
    /// How often a heartbeat goes out on an idle or busy connection.
    pub heartbeat_interval: Duration,
    /// A connection on which nothing arrived for this long is dead.
    pub dead_after: Duration,
    /// Longest a connect or a handshake may take: an accepted connection that has not
    /// finished its handshake by then is closed and its slot given back.
    pub handshake_timeout: Duration,
    /// First wait before dialing again.
    pub reconnect_min: Duration,
    /// Longest wait before dialing again.
    pub reconnect_max: Duration,
    /// Failed dials in a row after which a dial loop ends (`None`: it dials until the peer is
    /// removed or the endpoint shuts down). A later [`add_peer`](super::TcpTransport::add_peer)
    /// starts it again.
    pub dial_attempts: Option<u32>,
    /// Longest frame accepted or sent after the handshake (its payload; the tag comes on top).
    pub max_frame_bytes: usize,
    /// A connection whose socket takes no byte of what it has to send for this long is
    /// declared down: its peer stopped reading.
    pub send_timeout: Duration,
    /// Most bytes queued for one connection (each frame counts 64 bytes on top of its own):
    /// a frame that would pass it while others wait declares the peer down (it does not read
    /// fast enough); a frame alone always goes.
    pub send_queue_bytes: usize,
    /// Most handshakes pending at once (see [`MAX_PENDING_HANDSHAKES`]).
    pub max_pending: usize,
    /// Most handshakes pending at once from one source (see [`MAX_PENDING_PER_SOURCE`]).
    pub max_pending_per_source: usize,
    /// Most peer addresses kept (see [`MAX_PEERS`]).
    pub max_peers: usize,
}

impl TcpConfig {
    /// Defaults for node `id`: heartbeats every 500 ms, dead after 2 s, handshake within 2 s,
    /// reconnect after 50 ms doubling to 1 s and give up after [`DIAL_ATTEMPTS`] failures in a
    /// row, frames up to the codec's message limit, a send that makes no progress for 2 s or
    /// a queue over [`SEND_QUEUE_BYTES`] declares its peer down, at most
    /// [`MAX_PENDING_HANDSHAKES`] handshakes pending, [`MAX_PENDING_PER_SOURCE`] from one
    /// source. `auth` is a [`Secret`] or a [`Tls`] setup.
    pub fn new(id: NodeId, auth: impl Into<Auth>) -> Self {
        TcpConfig {
            id,
            auth: auth.into(),
            listen: None,
            heartbeat_interval: Duration::from_millis(500),
            dead_after: Duration::from_secs(2),
            handshake_timeout: Duration::from_secs(2),
            reconnect_min: Duration::from_millis(50),
            reconnect_max: Duration::from_secs(1),
            dial_attempts: Some(DIAL_ATTEMPTS),
            max_frame_bytes: codec::MAX_MESSAGE_BYTES + 4,
            send_timeout: Duration::from_secs(2),
            send_queue_bytes: SEND_QUEUE_BYTES,
            max_pending: MAX_PENDING_HANDSHAKES,
            max_pending_per_source: MAX_PENDING_PER_SOURCE,
            max_peers: MAX_PEERS,
        }
    }

    /// Listens on `addr`.
    pub fn listen(mut self, addr: SocketAddr) -> Self {
        self.listen = Some(addr);
        self
    }

    /// Sends heartbeats every `interval` and declares a silent peer dead after `dead_after`.
    pub fn heartbeat(mut self, interval: Duration, dead_after: Duration) -> Self {
        self.heartbeat_interval = interval;
        self.dead_after = dead_after;
        self
    }
}
