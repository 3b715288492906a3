//! The dialing side of an endpoint: one loop per peer it dials, which connects, runs the
//! handshake and serves the connection, and dials again when it ends, waiting
//! [`TcpConfig::reconnect_min`] at first and twice as long after each failure, at most
//! [`TcpConfig::reconnect_max`]. Under TLS the dialer presents its certificate and checks
//! that the peer's is signed by the CA and names the node dialed (`node-<id>.weir`), as a
//! TLS client checks a server's host name, before the weir handshake runs inside. A loop ends when its peer is removed, when the endpoint shuts
//! down, or after [`TcpConfig::dial_attempts`] failures in a row (a later
//! [`add_peer`](super::TcpTransport::add_peer) starts it again).
//!
//! [`TcpConfig::reconnect_min`]: super::config::TcpConfig::reconnect_min
//! [`TcpConfig::reconnect_max`]: super::config::TcpConfig::reconnect_max
//! [`TcpConfig::dial_attempts`]: super::config::TcpConfig::dial_attempts

use super::config::Auth;
use super::link::serve;
use super::shared::{Refusal, Shared};
use super::stats::bump;
use super::stream::Stream;
use crate::wire::framing::tls::{self, EXPORTER_LABEL};
use crate::wire::framing::{self, HandshakeError, Secret, Session, HANDSHAKE_MAX_FRAME};
use crate::wire::ids::NodeId;
use rustls::pki_types::ServerName;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_rustls::TlsStream;
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

/// Connects to `peer` at `addr`, runs the handshake (TLS first, under [`Auth::Tls`]) and
/// serves the connection until it ends.
async fn dial_once(shared: &Arc<Shared>, peer: NodeId, addr: SocketAddr) -> Dialed {
    let me = shared.config.id;
    let c = &shared.config;
    let deadline = Instant::now() + c.handshake_timeout;
    let stream = match tokio::time::timeout_at(deadline, TcpStream::connect(addr)).await {
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
    let setup = match &c.auth {
        Auth::Secret(secret) => {
            let session = handshake(shared, peer, stream, secret, false, deadline).await;
            return finish(shared, peer, addr, session).await;
        }
        Auth::Tls(setup) => setup.clone(),
    };
    let name = ServerName::try_from(tls::node_name(peer)).expect("node-<id>.weir is a DNS name");
    let connector = tokio_rustls::TlsConnector::from(setup.client_config());
    let stream = match tokio::time::timeout_at(deadline, connector.connect(name, stream)).await {
        Err(_) => Err(HandshakeError::Timeout(c.handshake_timeout)),
        Ok(Err(e)) => Err(HandshakeError::Tls {
            certificate: tls::is_certificate_error(&e),
            message: e.to_string(),
        }),
        Ok(Ok(stream)) => stream
            .get_ref()
            .1
            .export_keying_material([0u8; 32], EXPORTER_LABEL, None)
            .map_err(|e| e.to_string())
            .and_then(|k| Secret::new(k.to_vec()))
            .map(|secret| (TlsStream::Client(stream), secret))
            .map_err(|message| HandshakeError::Tls {
                message: format!("no keying material: {message}"),
                certificate: false,
            }),
    };
    let session = match stream {
        Ok((stream, secret)) => handshake(shared, peer, stream, &secret, true, deadline).await,
        Err(e) => Err(e),
    };
    finish(shared, peer, addr, session).await
}

/// The dialer's weir handshake on `stream` by `deadline`, keyed with `secret`; `tls`: the
/// stream is a TLS session (frames then carry no MAC, and a certificate the peer refuses
/// shows up here, TLS 1.3 finishing the dialer's side before the acceptor checked it).
async fn handshake<S: Stream>(
    shared: &Shared,
    peer: NodeId,
    stream: S,
    secret: &Secret,
    tls: bool,
    deadline: Instant,
) -> Result<(Framed<S, tokio_util::codec::LengthDelimitedCodec>, Session), HandshakeError> {
    let me = shared.config.id;
    let mut framed = Framed::new(stream, framing::codec(HANDSHAKE_MAX_FRAME));
    let limit = deadline.saturating_duration_since(Instant::now());
    match framing::dial(&mut framed, secret, me, Some(peer), limit).await {
        Ok(mut session) => {
            if tls {
                session.keys = session.keys.untagged();
            }
            Ok((framed, session))
        }
        Err(HandshakeError::Io(e)) if tls => Err(HandshakeError::Tls {
            certificate: tls::is_certificate_error(&e),
            message: e.to_string(),
        }),
        Err(e) => Err(e),
    }
}

/// Serves the connection a dial's handshake made, or records why it failed.
async fn finish<S: Stream>(
    shared: &Arc<Shared>,
    peer: NodeId,
    addr: SocketAddr,
    session: Result<(Framed<S, tokio_util::codec::LengthDelimitedCodec>, Session), HandshakeError>,
) -> Dialed {
    let me = shared.config.id;
    match session {
        Ok((framed, session)) => {
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
            if matches!(
                e,
                HandshakeError::Tls {
                    certificate: true,
                    ..
                } | HandshakeError::IdentityRefused(_)
            ) {
                bump(&shared.counters.refused_certificates);
            }
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
