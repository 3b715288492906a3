//! The dialing side of an endpoint: one loop per peer it dials, which connects, runs the
//! handshake and serves the connection, and dials again when it ends, waiting
//! [`TcpConfig::reconnect_min`] at first and twice as long after each failure, at most
//! [`TcpConfig::reconnect_max`]. A loop ends when its peer is removed, when the endpoint shuts
//! down, or after [`TcpConfig::dial_attempts`] failures in a row (a later
//! [`add_peer`](super::TcpTransport::add_peer) starts it again).
//!
//! [`TcpConfig::reconnect_min`]: super::config::TcpConfig::reconnect_min
//! [`TcpConfig::reconnect_max`]: super::config::TcpConfig::reconnect_max
//! [`TcpConfig::dial_attempts`]: super::config::TcpConfig::dial_attempts

use super::link::serve;
use super::shared::{Refusal, Shared};
use super::stats::bump;
use crate::wire::framing::{self, HandshakeError, HANDSHAKE_MAX_FRAME};
use crate::wire::ids::NodeId;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpStream;
use tokio_util::codec::Framed;

/// How one dial ended.
enum Dialed {
    /// A connection was made and served until it ended.
    Served,
    /// No connection: the peer was unreachable or refused the handshake.
    Failed,
    /// A live connection to the peer (it dialed this node) holds its place: kept.
    Held,
}

/// Dials `peer` until its loop ends (see the module comment).
pub(super) async fn dial_loop(shared: Arc<Shared>, peer: NodeId) {
    let me = shared.config.id;
    let c = &shared.config;
    let mut wait = c.reconnect_min;
    loop {
        let addr = {
            let mut dialing = shared.dialing.lock().unwrap_or_else(|e| e.into_inner());
            match shared.addr(peer) {
                Some(addr) => addr,
                None => {
                    dialing.remove(&peer);
                    return;
                }
            }
        };
        let dialed = if shared.links.is_up(peer) {
            Dialed::Held
        } else {
            dial_once(&shared, peer, addr).await
        };
        {
            let mut dialing = shared.dialing.lock().unwrap_or_else(|e| e.into_inner());
            let failures = dialing.entry(peer).or_insert(0);
            match dialed {
                Dialed::Served => {
                    *failures = 0;
                    wait = c.reconnect_min;
                }
                Dialed::Failed => *failures += 1,
                Dialed::Held => wait = c.reconnect_max,
            }
            if c.dial_attempts.is_some_and(|max| *failures >= max) {
                tracing::warn!(
                    "node {me}: gave up dialing node {peer} at {addr} after {failures} failed \
                     attempts in a row"
                );
                dialing.remove(&peer);
                return;
            }
        }
        tokio::select! {
            _ = shared.shutdown.cancelled() => return,
            _ = tokio::time::sleep(wait) => {}
        }
        wait = (wait * 2).min(c.reconnect_max);
    }
}

/// Connects to `peer` at `addr`, runs the handshake and serves the connection until it ends.
async fn dial_once(shared: &Arc<Shared>, peer: NodeId, addr: SocketAddr) -> Dialed {
    let me = shared.config.id;
    let c = &shared.config;
    let stream = match tokio::time::timeout(c.handshake_timeout, TcpStream::connect(addr)).await {
        Ok(Ok(stream)) => stream,
        Ok(Err(e)) => {
            tracing::debug!("node {me}: cannot reach node {peer} at {addr}: {e}");
            return Dialed::Failed;
        }
        Err(_) => {
            tracing::debug!("node {me}: connecting to node {peer} at {addr} timed out");
            return Dialed::Failed;
        }
    };
    let _ = stream.set_nodelay(true);
    let mut framed = Framed::new(stream, framing::codec(HANDSHAKE_MAX_FRAME));
    match framing::dial(&mut framed, &c.secret, me, Some(peer), c.handshake_timeout).await {
        Ok(session) => {
            shared
                .refusals
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&peer);
            let Some(claim) = shared.links.claim(peer, &shared.shutdown) else {
                bump(&shared.counters.duplicate_ids);
                tracing::warn!(
                    "node {me}: closed a new connection to node {peer}: a live connection \
                     holds its place"
                );
                return Dialed::Held;
            };
            serve(shared.clone(), framed, session, claim).await;
            Dialed::Served
        }
        Err(e) => {
            bump(&shared.counters.refused_connections);
            tracing::warn!("node {me}: handshake with node {peer} at {addr}: {e}");
            shared
                .refusals
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(
                    peer,
                    Refusal {
                        id_in_use: matches!(e, HandshakeError::IdInUse(_)),
                        message: e.to_string(),
                    },
                );
            Dialed::Failed
        }
    }
}
