//! [`TcpTransport`]: one node's endpoint, its life (start, close) and what the rest of the
//! process asks of it (peers to reach, frames to send, connections, counters).

use super::accept::accept_loop;
use super::config::TcpConfig;
use super::dial::dial_loop;
use super::links::{Enqueued, Links};
use super::shared::{Inbound, PeerEvent, Refusal, Shared};
use super::stats::{bump, Counters, TcpStats};
use crate::wire::carrier::{Outgoing, Transport};
use crate::wire::ids::NodeId;
use bytes::Bytes;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use tokio::net::TcpSocket;
use tokio_util::sync::CancellationToken;

/// One node's TCP endpoint (see [the module](super)).
pub struct TcpTransport {
    shared: Arc<Shared>,
    local_addr: Option<SocketAddr>,
    handle: tokio::runtime::Handle,
    events: crossbeam_channel::Receiver<PeerEvent>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl TcpTransport {
    /// Starts the endpoint: binds [`TcpConfig::listen`] (if set) before returning, then serves
    /// on a thread of its own. Frames that arrive go to `inbound`.
    pub fn start(config: TcpConfig, inbound: Inbound) -> std::io::Result<TcpTransport> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let listener = match config.listen {
            Some(addr) => Some(runtime.block_on(async {
                let socket = match addr {
                    SocketAddr::V4(_) => TcpSocket::new_v4()?,
                    SocketAddr::V6(_) => TcpSocket::new_v6()?,
                };
                // A restarted node takes its port back at once.
                socket.set_reuseaddr(true)?;
                socket.bind(addr)?;
                socket.listen(1024)
            })?),
            None => None,
        };
        let local_addr = listener.as_ref().map(|l| l.local_addr()).transpose()?;
        let (events_tx, events) = crossbeam_channel::unbounded();
        let shared = Arc::new(Shared {
            config,
            inbound,
            links: Links::default(),
            addrs: Default::default(),
            dialing: Default::default(),
            refusals: Default::default(),
            counters: Counters::default(),
            events: events_tx,
            shutdown: CancellationToken::new(),
        });
        let handle = runtime.handle().clone();
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name(format!("weir-tcp-{}", shared.config.id))
            .spawn(move || {
                runtime.block_on(async move {
                    if let Some(listener) = listener {
                        tokio::spawn(accept_loop(s.clone(), listener));
                    }
                    s.shutdown.cancelled().await;
                });
                // Dropping the runtime cancels every task and closes every socket.
            })?;
        Ok(TcpTransport {
            shared,
            local_addr,
            handle,
            events,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// This node's id.
    pub fn id(&self) -> NodeId {
        self.shared.config.id
    }

    /// The address the endpoint listens on (with the port picked for port 0).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.local_addr
    }

    /// Makes node `peer` reachable at `addr`. This endpoint dials it, and dials again
    /// whenever the connection ends, unless both listen and the peer has the lower id: then
    /// the peer dials. Returns false, and changes nothing, when `peer` is this node, when
    /// `peer` has a live connection and `addr` is not its address (a live peer is never
    /// repointed), or when the endpoint already knows [`TcpConfig::max_peers`] other peers
    /// (both counted in [`TcpStats::refused_peers`]). A dial loop that gave up starts again.
    ///
    /// Under TLS, `peer` is a data node from then on: a live connection holding its id with a
    /// client certificate is closed (counted in [`TcpStats::refused_certificates`]), and no
    /// client certificate can claim it again.
    pub fn add_peer(&self, peer: NodeId, addr: SocketAddr) -> bool {
        let me = self.shared.config.id;
        if peer == me {
            return false;
        }
        {
            let mut addrs = self.shared.addrs.lock().unwrap_or_else(|e| e.into_inner());
            let known = addrs.get(&peer).copied();
            let impostor = self
                .shared
                .links
                .close_client_cert(peer, "a client certificate held a data node's id");
            if impostor {
                bump(&self.shared.counters.refused_certificates);
                tracing::warn!(
                    "node {me}: closed a connection holding node {peer}'s id with a client \
                     certificate"
                );
            }
            if known != Some(addr) && !impostor && self.shared.links.is_up(peer) {
                bump(&self.shared.counters.refused_peers);
                tracing::warn!(
                    "node {me}: node {peer} is connected{}: not moved to {addr}",
                    known.map(|a| format!(" at {a}")).unwrap_or_default()
                );
                return false;
            }
            if known.is_none() && addrs.len() >= self.shared.config.max_peers {
                // Logged at debug: a Join naming many peers must not flood the log.
                bump(&self.shared.counters.refused_peers);
                tracing::debug!(
                    "node {me}: node {peer} at {addr} not added: {} peers known already",
                    addrs.len()
                );
                return false;
            }
            addrs.insert(peer, addr);
        }
        let dials = self.shared.config.listen.is_none() || me < peer;
        if dials {
            let mut dialing = self
                .shared
                .dialing
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            match dialing.get_mut(&peer) {
                // Its loop runs: a fresh budget of attempts, to the address just given.
                Some(failures) => *failures = 0,
                None => {
                    dialing.insert(peer, 0);
                    self.handle.spawn(dial_loop(self.shared.clone(), peer));
                }
            }
        }
        true
    }

    /// Forgets node `peer`'s address: its dial loop ends (a live connection stays until it
    /// ends).
    pub fn remove_peer(&self, peer: NodeId) {
        self.shared
            .addrs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&peer);
    }

    /// Queues `frame` (sealed bytes) for node `to`, without waiting. False when `to` has no
    /// connection now, when the frame is longer than [`TcpConfig::max_frame_bytes`], or when
    /// it would take the connection's queue over [`TcpConfig::send_queue_bytes`] (the
    /// connection is then closed and its peer reported down): the frame is lost.
    pub fn send(&self, to: NodeId, frame: Vec<u8>) -> bool {
        let c = &self.shared.counters;
        let max = self.shared.config.max_frame_bytes;
        if frame.is_empty() || frame.len() > max {
            tracing::error!(
                "node {}: a frame of {} bytes for node {to} cannot be sent (limit {max})",
                self.id(),
                frame.len(),
            );
            bump(&c.unsendable);
            return false;
        }
        let len = frame.len();
        let bound = self.shared.config.send_queue_bytes;
        match self.shared.links.enqueue(to, Bytes::from(frame), bound) {
            Enqueued::Queued => {
                bump(&c.frames_sent);
                c.bytes_sent.fetch_add(len as u64, Ordering::Relaxed);
                true
            }
            Enqueued::NoLink => {
                bump(&c.unsendable);
                false
            }
            Enqueued::Overflow => {
                bump(&c.unsendable);
                bump(&c.stalled_peers);
                tracing::warn!(
                    "node {}: node {to}'s send queue is over {bound} bytes: declared down",
                    self.id()
                );
                false
            }
        }
    }

    /// Whether a dial loop runs for `peer` (it ends when the peer is removed, after
    /// [`TcpConfig::dial_attempts`] failures in a row, or when the endpoint shuts down).
    pub fn is_dialing(&self, peer: NodeId) -> bool {
        self.shared
            .dialing
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains_key(&peer)
    }

    /// Whether an authenticated connection to `peer` is up.
    pub fn is_up(&self, peer: NodeId) -> bool {
        self.shared.links.is_up(peer)
    }

    /// The peers connected now, in id order.
    pub fn peers_up(&self) -> Vec<NodeId> {
        self.shared.links.peers()
    }

    /// Why the last dial to `peer` failed in its handshake, until a dial to it succeeds.
    pub fn refusal(&self, peer: NodeId) -> Option<Refusal> {
        self.shared
            .refusals
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&peer)
            .cloned()
    }

    /// Connection changes, in the order they happened.
    pub fn events(&self) -> crossbeam_channel::Receiver<PeerEvent> {
        self.events.clone()
    }

    /// The wire counters so far.
    pub fn stats(&self) -> TcpStats {
        self.shared.counters.stats()
    }

    /// Stops the endpoint: closes every connection and the listener, and waits for its thread.
    pub fn shutdown(self) {
        self.close();
    }

    /// [`TcpTransport::shutdown`] through a shared reference (the endpoint may be held by a
    /// [`Network`](crate::wire::network::Network) too); sends fail from then on.
    pub fn close(&self) {
        self.shared.shutdown.cancel();
        let thread = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        // Not from the endpoint's own thread (an inbound callback): it ends by itself.
        if let Some(t) = thread.filter(|t| t.thread().id() != std::thread::current().id()) {
            let _ = t.join();
        }
    }
}

impl Drop for TcpTransport {
    fn drop(&mut self) {
        self.close();
    }
}

impl Transport for TcpTransport {
    fn reaches(&self, to: NodeId) -> bool {
        self.is_up(to) || self.shared.addr(to).is_some()
    }

    fn carry(&self, frame: Outgoing) -> bool {
        // A reservation on a remote node's pool cannot be made here; `mem` is None, or is
        // returned by dropping it.
        self.send(frame.to, frame.bytes)
    }
}
