//! The accepting side of an endpoint: connections that arrive on its listener get a
//! handshake slot ([`super::pending`]) or are closed at once, run the handshake within the
//! deadline, and become connections ([`super::link`]) if the peer proves the secret and no
//! live connection holds its id.

use super::link::serve;
use super::links::Claim;
use super::pending::{Full, Pending};
use super::shared::Shared;
use super::stats::bump;
use crate::wire::framing::{self, HandshakeError, Session, HANDSHAKE_MAX_FRAME};
use crate::wire::ids::NodeId;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};
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
            let accepted = handshake(&shared, stream, addr).await;
            drop(slot);
            if let Some((framed, session, claim)) = accepted {
                serve(shared, framed, session, claim).await;
            }
        });
    }
}

/// Runs the acceptor's handshake on `stream` from `addr` (the caller holds its pending slot):
/// the connection, its session and its claim on the peer's place, or `None` (refused, logged
/// and counted).
async fn handshake(
    shared: &Arc<Shared>,
    stream: TcpStream,
    addr: SocketAddr,
) -> Option<(Framed<TcpStream, LengthDelimitedCodec>, Session, Claim)> {
    let me = shared.config.id;
    let c = &shared.config;
    let _ = stream.set_nodelay(true);
    let mut framed = Framed::new(stream, framing::codec(HANDSHAKE_MAX_FRAME));
    let mut claimed: Option<(NodeId, Claim)> = None;
    let outcome = framing::accept(&mut framed, &c.secret, me, c.handshake_timeout, |peer| {
        claimed = shared
            .links
            .claim(peer, &shared.shutdown)
            .map(|c| (peer, c));
        claimed.is_some()
    })
    .await;
    match outcome {
        Ok(session) => {
            let (_, claim) = claimed.expect("an admitted peer holds its place");
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
            } else {
                tracing::warn!("node {me}: refused a connection from {addr}: {e}");
            }
            None
        }
    }
}
