//! The TCP carrier: frames between nodes of different processes, over one authenticated
//! connection per node pair.
//!
//! A [`TcpTransport`] is one node's endpoint. It runs its own tokio runtime on a thread of its
//! own, listens (optionally) for peers, and dials the peers it is told about with
//! [`TcpTransport::add_peer`]. Of two nodes that both listen, the one with the lower id dials,
//! so a pair has one connection; a node that does not listen dials everyone. A newer
//! authenticated connection from a peer replaces an older one (a restarted peer).
//!
//! Every connection starts with the handshake of [`framing`]; a peer that
//! fails it is refused and logged, and nothing it sent is deserialized. After it:
//! - each side sends a heartbeat (an empty frame) every [`TcpConfig::heartbeat_interval`], and
//!   a connection on which nothing arrived for [`TcpConfig::dead_after`] is closed and its
//!   peer reported [`PeerEvent::Down`];
//! - a frame longer than [`TcpConfig::max_frame_bytes`] closes the connection (the stream
//!   cannot be resynchronised); a frame whose checksum is wrong is dropped, counted and
//!   logged, and the connection goes on;
//! - a dialer whose connection ends dials again, waiting [`TcpConfig::reconnect_min`] at
//!   first and twice as long after each failure, at most [`TcpConfig::reconnect_max`].
//!
//! A frame for a peer that is not connected is lost (the send says so), as a message to a
//! crashed node is on the simulated network. The message counters by kind are kept above the
//! carrier, in [`Network`](crate::wire::network::Network); [`TcpStats`] counts frames and bytes on the wire.

use crate::wire::carrier::{Outgoing, Transport};
use crate::wire::codec;
use crate::wire::framing::{self, Secret, HANDSHAKE_MAX_FRAME};
use crate::wire::ids::NodeId;
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::mpsc;
use tokio_util::codec::{Framed, LengthDelimitedCodec};
use tokio_util::sync::CancellationToken;

/// Where the carrier hands a frame that arrived: `(from, sealed bytes)`; false when no node
/// here takes it (the frame is dropped and logged).
pub type Inbound = Arc<dyn Fn(NodeId, Vec<u8>) -> bool + Send + Sync>;

/// How a [`TcpTransport`] behaves.
#[derive(Debug, Clone)]
pub struct TcpConfig {
    /// This node's id.
    pub id: NodeId,
    /// The shared secret every peer must prove it knows.
    pub secret: Secret,
    /// Where to listen for peers (port 0 picks one); `None`: dial only.
    pub listen: Option<SocketAddr>,
    /// How often a heartbeat goes out on an idle or busy connection.
    pub heartbeat_interval: Duration,
    /// A connection on which nothing arrived for this long is dead.
    pub dead_after: Duration,
    /// Longest a connect or a handshake may take.
    pub handshake_timeout: Duration,
    /// First wait before dialing again.
    pub reconnect_min: Duration,
    /// Longest wait before dialing again.
    pub reconnect_max: Duration,
    /// Longest frame accepted or sent after the handshake.
    pub max_frame_bytes: usize,
}

impl TcpConfig {
    /// Defaults for node `id`: heartbeats every 500 ms, dead after 2 s, handshake within 2 s,
    /// reconnect after 50 ms doubling to 1 s, frames up to the codec's message limit.
    pub fn new(id: NodeId, secret: Secret) -> Self {
        TcpConfig {
            id,
            secret,
            listen: None,
            heartbeat_interval: Duration::from_millis(500),
            dead_after: Duration::from_secs(2),
            handshake_timeout: Duration::from_secs(2),
            reconnect_min: Duration::from_millis(50),
            reconnect_max: Duration::from_secs(1),
            max_frame_bytes: codec::MAX_MESSAGE_BYTES + 4,
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

/// A change in a peer's connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeerEvent {
    /// An authenticated connection to the peer is up.
    Up(NodeId),
    /// The peer's connection ended; the reason says how.
    Down(NodeId, String),
}

/// Counters of one endpoint's wire traffic.
#[derive(Debug, Default)]
struct Counters {
    frames_sent: AtomicU64,
    bytes_sent: AtomicU64,
    frames_received: AtomicU64,
    bytes_received: AtomicU64,
    heartbeats_sent: AtomicU64,
    heartbeats_received: AtomicU64,
    refused_connections: AtomicU64,
    refused_frames: AtomicU64,
    unsendable: AtomicU64,
}

/// A snapshot of an endpoint's wire traffic.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TcpStats {
    /// Message frames sent (heartbeats not included).
    pub frames_sent: u64,
    /// Bytes of the message frames sent (without their length prefix).
    pub bytes_sent: u64,
    /// Message frames received intact and handed on.
    pub frames_received: u64,
    /// Bytes of those frames.
    pub bytes_received: u64,
    /// Heartbeats sent.
    pub heartbeats_sent: u64,
    /// Heartbeats received.
    pub heartbeats_received: u64,
    /// Connections refused or failed in the handshake.
    pub refused_connections: u64,
    /// Frames refused after the handshake (bad checksum, too long, no node to take them).
    pub refused_frames: u64,
    /// Frames not sent: no connection to their peer, or too long.
    pub unsendable: u64,
}

struct Link {
    tx: mpsc::UnboundedSender<Bytes>,
    conn: u64,
}

struct Shared {
    config: TcpConfig,
    inbound: Inbound,
    links: RwLock<HashMap<NodeId, Link>>,
    addrs: Mutex<HashMap<NodeId, SocketAddr>>,
    dialing: Mutex<std::collections::HashSet<NodeId>>,
    counters: Counters,
    events: crossbeam_channel::Sender<PeerEvent>,
    next_conn: AtomicU64,
    shutdown: CancellationToken,
}

/// One node's TCP endpoint (see the module comment).
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
        let shutdown = CancellationToken::new();
        let shared = Arc::new(Shared {
            config,
            inbound,
            links: Default::default(),
            addrs: Default::default(),
            dialing: Default::default(),
            counters: Counters::default(),
            events: events_tx,
            next_conn: AtomicU64::new(1),
            shutdown,
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

    /// Makes node `peer` reachable at `addr` (a new address replaces the old). This endpoint
    /// dials it, and dials again whenever the connection ends, unless both listen and the
    /// peer has the lower id: then the peer dials.
    pub fn add_peer(&self, peer: NodeId, addr: SocketAddr) {
        let me = self.shared.config.id;
        if peer == me {
            return;
        }
        self.shared
            .addrs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(peer, addr);
        let dials = self.shared.config.listen.is_none() || me < peer;
        let fresh = self
            .shared
            .dialing
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(peer);
        if dials && fresh {
            self.handle.spawn(dial_loop(self.shared.clone(), peer));
        }
    }

    /// Queues `frame` (sealed bytes) for node `to`. False when `to` has no connection now or
    /// the frame is longer than [`TcpConfig::max_frame_bytes`]: the frame is lost.
    pub fn send(&self, to: NodeId, frame: Vec<u8>) -> bool {
        let c = &self.shared.counters;
        if frame.is_empty() || frame.len() > self.shared.config.max_frame_bytes {
            tracing::error!(
                "node {}: a frame of {} bytes for node {to} cannot be sent (limit {})",
                self.id(),
                frame.len(),
                self.shared.config.max_frame_bytes
            );
            c.unsendable.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        let len = frame.len();
        let links = self.shared.links.read().unwrap_or_else(|e| e.into_inner());
        let sent = links
            .get(&to)
            .is_some_and(|l| l.tx.send(Bytes::from(frame)).is_ok());
        drop(links);
        if sent {
            c.frames_sent.fetch_add(1, Ordering::Relaxed);
            c.bytes_sent.fetch_add(len as u64, Ordering::Relaxed);
        } else {
            c.unsendable.fetch_add(1, Ordering::Relaxed);
        }
        sent
    }

    /// Whether an authenticated connection to `peer` is up.
    pub fn is_up(&self, peer: NodeId) -> bool {
        self.shared
            .links
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .contains_key(&peer)
    }

    /// The peers connected now, in id order.
    pub fn peers_up(&self) -> Vec<NodeId> {
        let mut up: Vec<NodeId> = self
            .shared
            .links
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .keys()
            .copied()
            .collect();
        up.sort_unstable();
        up
    }

    /// Connection changes, in the order they happened.
    pub fn events(&self) -> crossbeam_channel::Receiver<PeerEvent> {
        self.events.clone()
    }

    /// The wire counters so far.
    pub fn stats(&self) -> TcpStats {
        let c = &self.shared.counters;
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        TcpStats {
            frames_sent: n(&c.frames_sent),
            bytes_sent: n(&c.bytes_sent),
            frames_received: n(&c.frames_received),
            bytes_received: n(&c.bytes_received),
            heartbeats_sent: n(&c.heartbeats_sent),
            heartbeats_received: n(&c.heartbeats_received),
            refused_connections: n(&c.refused_connections),
            refused_frames: n(&c.refused_frames),
            unsendable: n(&c.unsendable),
        }
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
        self.is_up(to)
            || self
                .shared
                .addrs
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .contains_key(&to)
    }

    fn carry(&self, frame: Outgoing) -> bool {
        // A reservation on a remote node's pool cannot be made here; `mem` is None, or is
        // returned by dropping it.
        self.send(frame.to, frame.bytes)
    }
}

/// Most connections an endpoint handshakes with at once: one more is closed at once (and
/// counted refused), so that a flood of silent connections cannot tie it up.
pub const MAX_PENDING_HANDSHAKES: usize = 64;

async fn accept_loop(shared: Arc<Shared>, listener: tokio::net::TcpListener) {
    let me = shared.config.id;
    let pending = Arc::new(tokio::sync::Semaphore::new(MAX_PENDING_HANDSHAKES));
    loop {
        match listener.accept().await {
            Ok((stream, addr)) => {
                let Ok(permit) = pending.clone().try_acquire_owned() else {
                    shared
                        .counters
                        .refused_connections
                        .fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(
                        "node {me}: refused a connection from {addr}: \
                         {MAX_PENDING_HANDSHAKES} handshakes already pending"
                    );
                    continue;
                };
                let shared = shared.clone();
                tokio::spawn(async move {
                    let _ = stream.set_nodelay(true);
                    let mut framed = Framed::new(stream, framing::codec(HANDSHAKE_MAX_FRAME));
                    let c = &shared.config;
                    let outcome =
                        framing::accept(&mut framed, &c.secret, me, c.handshake_timeout).await;
                    drop(permit);
                    match outcome {
                        Ok(peer) => serve(shared, framed, peer).await,
                        Err(e) => {
                            shared
                                .counters
                                .refused_connections
                                .fetch_add(1, Ordering::Relaxed);
                            tracing::warn!("node {me}: refused a connection from {addr}: {e}");
                        }
                    }
                });
            }
            Err(e) => {
                tracing::warn!("node {me}: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

async fn dial_loop(shared: Arc<Shared>, peer: NodeId) {
    let me = shared.config.id;
    let c = &shared.config;
    let mut wait = c.reconnect_min;
    loop {
        let addr = shared
            .addrs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&peer)
            .copied();
        let Some(addr) = addr else { return };
        match tokio::time::timeout(c.handshake_timeout, TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => {
                let _ = stream.set_nodelay(true);
                let mut framed = Framed::new(stream, framing::codec(HANDSHAKE_MAX_FRAME));
                match framing::dial(&mut framed, &c.secret, me, Some(peer), c.handshake_timeout)
                    .await
                {
                    Ok(_) => {
                        wait = c.reconnect_min;
                        serve(shared.clone(), framed, peer).await;
                    }
                    Err(e) => {
                        shared
                            .counters
                            .refused_connections
                            .fetch_add(1, Ordering::Relaxed);
                        tracing::warn!("node {me}: handshake with node {peer} at {addr}: {e}");
                    }
                }
            }
            Ok(Err(e)) => tracing::debug!("node {me}: cannot reach node {peer} at {addr}: {e}"),
            Err(_) => tracing::debug!("node {me}: connecting to node {peer} at {addr} timed out"),
        }
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(c.reconnect_max);
    }
}

/// Frames queued together before one flush.
const BATCH_FRAMES: usize = 64;

/// Runs an authenticated connection to `peer` until it ends, then reports the peer down
/// (unless a newer connection replaced this one).
async fn serve(
    shared: Arc<Shared>,
    mut framed: Framed<TcpStream, LengthDelimitedCodec>,
    peer: NodeId,
) {
    let me = shared.config.id;
    let c = &shared.counters;
    framed
        .codec_mut()
        .set_max_frame_length(shared.config.max_frame_bytes);
    let conn = shared.next_conn.fetch_add(1, Ordering::Relaxed);
    let (tx, mut rx) = mpsc::unbounded_channel::<Bytes>();
    shared
        .links
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .insert(peer, Link { tx, conn });
    let _ = shared.events.send(PeerEvent::Up(peer));
    tracing::debug!("node {me}: connected to node {peer}");
    let dead_after = shared.config.dead_after;
    let mut beat = tokio::time::interval(shared.config.heartbeat_interval);
    beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let deadline = tokio::time::sleep(dead_after);
    tokio::pin!(deadline);
    let reason: Option<String> = loop {
        tokio::select! {
            _ = shared.shutdown.cancelled() => break Some("endpoint shut down".into()),
            out = rx.recv() => {
                let Some(frame) = out else { break None }; // replaced by a newer connection
                let mut result = framed.feed(frame).await;
                for _ in 1..BATCH_FRAMES {
                    match rx.try_recv() {
                        Ok(f) if result.is_ok() => result = framed.feed(f).await,
                        _ => break,
                    }
                }
                if let Err(e) = result.and(SinkExt::<Bytes>::flush(&mut framed).await) {
                    break Some(format!("send failed: {e}"));
                }
            }
            _ = beat.tick() => {
                if let Err(e) = framed.send(Bytes::new()).await {
                    break Some(format!("heartbeat failed: {e}"));
                }
                c.heartbeats_sent.fetch_add(1, Ordering::Relaxed);
            }
            got = framed.next() => match got {
                Some(Ok(frame)) => {
                    deadline.as_mut().reset(tokio::time::Instant::now() + dead_after);
                    if frame.is_empty() {
                        c.heartbeats_received.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    if let Err(e) = codec::unseal(&frame) {
                        c.refused_frames.fetch_add(1, Ordering::Relaxed);
                        tracing::warn!("node {me}: dropped a frame from node {peer}: {e}");
                        continue;
                    }
                    let len = frame.len();
                    if (shared.inbound)(peer, Vec::from(frame)) {
                        c.frames_received.fetch_add(1, Ordering::Relaxed);
                        c.bytes_received.fetch_add(len as u64, Ordering::Relaxed);
                    } else {
                        c.refused_frames.fetch_add(1, Ordering::Relaxed);
                        tracing::warn!("node {me}: no node here takes a frame from node {peer}");
                    }
                }
                Some(Err(e)) => {
                    c.refused_frames.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!("node {me}: closing the connection to node {peer}: {e}");
                    break Some(format!("refused frame: {e}"));
                }
                None => break Some("closed by the peer".into()),
            },
            _ = &mut deadline => {
                tracing::warn!("node {me}: node {peer} silent for {dead_after:?}, closing");
                break Some(format!("no heartbeat for {dead_after:?}"));
            }
        }
    };
    let Some(reason) = reason else { return };
    let mut links = shared.links.write().unwrap_or_else(|e| e.into_inner());
    if links.get(&peer).is_some_and(|l| l.conn == conn) {
        links.remove(&peer);
        drop(links);
        let _ = shared.events.send(PeerEvent::Down(peer, reason));
    }
}
