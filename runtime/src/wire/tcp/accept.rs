//! The accepting side of an endpoint: connections that arrive on its listener get a
//! handshake slot ([`super::pending`]) or are closed at once, run the handshake within the
//! deadline, and become connections ([`super::link`]) if the peer proves the secret and no
//! live connection holds its id. Under TLS, the TLS handshake comes first (the peer's
//! certificate must be signed by the CA), then the weir handshake inside it, whose claimed
//! id the certificate must name (`tls::allows`); both within the one deadline.

use super::config::Auth;
use super::link::serve;
use super::links::Claim;
use super::pending::{Full, Pending};
use super::shared::Shared;
use super::stats::bump;
use super::stream::Stream;
use crate::wire::framing::tls::{self, Role, EXPORTER_LABEL};
use crate::wire::framing::{self, Admit, HandshakeError, Secret, Session, HANDSHAKE_MAX_FRAME};
use crate::wire::ids::NodeId;
use rustls::pki_types::CertificateDer;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsStream;
use tokio_util::codec::{Framed, LengthDelimitedCodec};

/// Shortest time between two warnings about connections refused for want of a slot (a
/// flood of them is logged as a count, not line by line).
const WARN_EVERY: Duration = Duration::from_secs(1);

/// Accepts connections on `listener` until the endpoint shuts down.
pub(super) async fn accept_loop(shared: Arc<Shared>, listener: TcpListener) {
    let me = shared.config.id;
    let pending = Pending::new(
        shared.config.max_pending,
        shared.config.max_pending_per_source,
    );
    let mut refused_since_warning = 0u64;
    let mut last_warning: Option<Instant> = None;
    loop {
        let (stream, addr) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::warn!("node {me}: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let slot = match pending.enter(addr.ip()) {
            Ok(slot) => slot,
            Err(full) => {
                bump(&shared.counters.refused_connections);
                refused_since_warning += 1;
                if last_warning.is_none_or(|t| t.elapsed() >= WARN_EVERY) {
                    let bound = match full {
                        Full::Total => format!("{} handshakes pending", shared.config.max_pending),
                        Full::Source => format!(
                            "{} handshakes pending from its source",
                            shared.config.max_pending_per_source
                        ),
                    };
                    tracing::warn!(
                        "node {me}: refused {refused_since_warning} connection(s), the last \
                         from {addr}: {bound}"
                    );
                    refused_since_warning = 0;
                    last_warning = Some(Instant::now());
                }
                continue; // dropping the stream closes it
            }
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            let _ = stream.set_nodelay(true);
            let deadline = tokio::time::Instant::now() + shared.config.handshake_timeout;
            match shared.config.auth.clone() {
                Auth::Secret(secret) => {
                    let accepted = handshake(&shared, stream, addr, &secret, None, deadline).await;
                    drop(slot);
                    if let Some((framed, session, claim)) = accepted {
                        serve(shared, framed, session, claim).await;
                    }
                }
                Auth::Tls(setup) => {
                    let acceptor = tokio_rustls::TlsAcceptor::from(setup.server_config());
                    let accepted = match tls_accept(&shared, acceptor, stream, addr, deadline).await
                    {
                        Some((stream, secret, cert)) => {
                            handshake(&shared, stream, addr, &secret, Some(&cert), deadline).await
                        }
                        None => None,
                    };
                    drop(slot);
                    if let Some((framed, session, claim)) = accepted {
                        serve(shared, framed, session, claim).await;
                    }
                }
            }
        });
    }
}

/// Runs the TLS handshake on `stream` from `addr` by `deadline`: the TLS stream, the secret
/// exported from its session for the weir handshake, and the peer's certificate (verified
/// against the CA); or `None` (refused, logged and counted).
async fn tls_accept(
    shared: &Shared,
    acceptor: tokio_rustls::TlsAcceptor,
    stream: TcpStream,
    addr: SocketAddr,
    deadline: tokio::time::Instant,
) -> Option<(TlsStream<TcpStream>, Secret, CertificateDer<'static>)> {
    let me = shared.config.id;
    let refuse = |why: String, certificate: bool| {
        bump(&shared.counters.refused_connections);
        if certificate {
            bump(&shared.counters.refused_certificates);
        }
        tracing::warn!("node {me}: refused a connection from {addr}: TLS: {why}");
        None
    };
    let stream = match tokio::time::timeout_at(deadline, acceptor.accept(stream)).await {
        Err(_) => return refuse("no TLS handshake in time".into(), false),
        Ok(Err(e)) => return refuse(e.to_string(), tls::is_certificate_error(&e)),
        Ok(Ok(stream)) => stream,
    };
    let conn = stream.get_ref().1;
    let Some(cert) = conn.peer_certificates().and_then(|c| c.first()).cloned() else {
        return refuse("no client certificate".into(), true);
    };
    let secret = conn
        .export_keying_material([0u8; 32], EXPORTER_LABEL, None)
        .map_err(|e| e.to_string())
        .and_then(|k| Secret::new(k.to_vec()));
    match secret {
        Ok(secret) => Some((TlsStream::Server(stream), secret, cert)),
        Err(e) => refuse(format!("no keying material: {e}"), false),
    }
}

/// Runs the acceptor's handshake on `stream` from `addr` by `deadline` (the caller holds its
/// pending slot), keyed with `secret`; under TLS, `cert` is the peer's certificate, which
/// must name the id it claims. The connection, its session and its claim on the peer's
/// place, or `None` (refused, logged and counted).
async fn handshake<S: Stream>(
    shared: &Arc<Shared>,
    stream: S,
    addr: SocketAddr,
    secret: &Secret,
    cert: Option<&CertificateDer<'static>>,
    deadline: tokio::time::Instant,
) -> Option<(Framed<S, LengthDelimitedCodec>, Session, Claim)> {
    let me = shared.config.id;
    let mut framed = Framed::new(stream, framing::codec(HANDSHAKE_MAX_FRAME));
    let mut claimed: Option<(NodeId, Claim)> = None;
    let limit = deadline.saturating_duration_since(tokio::time::Instant::now());
    let outcome = framing::accept(&mut framed, secret, me, limit, |peer| {
        let mut role = None;
        if let Some(cert) = cert {
            let known_node = |id: NodeId| id == me || shared.addr(id).is_some();
            match tls::allows(cert, peer, known_node) {
                Ok(r) => role = Some(r),
                Err(why) => return Admit::WrongIdentity(why),
            }
        }
        claimed = shared
            .links
            .claim(peer, &shared.shutdown)
            .map(|c| (peer, c));
        match &claimed {
            Some((_, claim)) => {
                if role == Some(Role::Client) {
                    claim.state.client_cert.store(true, Ordering::Relaxed);
                }
                Admit::Yes
            }
            None => Admit::InUse,
        }
    })
    .await;
    match outcome {
        Ok(mut session) => {
            let (_, claim) = claimed.expect("an admitted peer holds its place");
            if cert.is_some() {
                // TLS authenticates every byte: frames carry no MAC.
                session.keys = session.keys.untagged();
            }
            Some((framed, session, claim))
        }
        Err(e) => {
            if let Some((peer, claim)) = claimed {
                // Admitted, but the welcome did not go out: the place is given back.
                shared.links.release(peer, claim.conn);
            }
            bump(&shared.counters.refused_connections);
            if let HandshakeError::IdInUse(peer) = e {
                bump(&shared.counters.duplicate_ids);
                tracing::warn!(
                    "node {me}: refused a connection from {addr} claiming node {peer}: a live \
                     connection holds that id"
                );
            } else if let HandshakeError::WrongIdentity { peer, why } = &e {
                bump(&shared.counters.refused_certificates);
                tracing::warn!(
                    "node {me}: refused a connection from {addr} claiming node {peer}: {why}"
                );
            } else {
                tracing::warn!("node {me}: refused a connection from {addr}: {e}");
            }
            None
        }
    }
}
