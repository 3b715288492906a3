//! The live connections of an endpoint, one per peer id, and each one's bounded send queue.
//!
//! A connection takes its peer's place here once both ends are authenticated
//! (`Links::claim`); while it lives, no other connection can claim that id (a newcomer is
//! refused, the live one kept). Frames for a peer are queued on its connection
//! (`Links::enqueue`) and never block the caller: a frame that would take the queue over its
//! bound closes the connection instead (its peer does not read).

use crate::wire::ids::NodeId;
use bytes::Bytes;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, RwLock};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Bytes a queued frame counts on top of its own (its share of the queue's bookkeeping).
pub(super) const FRAME_OVERHEAD: usize = 64;

/// What a frame costs in its connection's queue.
pub(super) fn charge(frame: &Bytes) -> usize {
    frame.len() + FRAME_OVERHEAD
}

/// One connection's state, shared by its tasks and the endpoint.
#[derive(Debug, Default)]
pub(super) struct LinkState {
    /// Bytes queued and not yet taken by the writer ([`charge`]).
    pub queued: AtomicUsize,
    /// Cancelled when the connection is to close.
    pub close: CancellationToken,
    /// Under TLS, the peer authenticated with a client certificate (not a data node's).
    pub client_cert: AtomicBool,
    reason: OnceLock<String>,
}

impl LinkState {
    /// Closes the connection for `reason` (the first reason given is kept).
    pub fn close(&self, reason: impl Into<String>) {
        let _ = self.reason.set(reason.into());
        self.close.cancel();
    }

    /// Why the connection closed (`fallback` if no reason was given: the endpoint shut down).
    pub fn reason(&self, fallback: &str) -> String {
        self.reason
            .get()
            .cloned()
            .unwrap_or_else(|| fallback.to_string())
    }
}

/// A live connection as the endpoint holds it.
struct Link {
    tx: mpsc::UnboundedSender<Bytes>,
    conn: u64,
    state: Arc<LinkState>,
}

/// A peer's place, claimed for a new connection: what its tasks need.
pub(super) struct Claim {
    /// The connection's number (to release the right one).
    pub conn: u64,
    /// The frames queued for the peer.
    pub rx: mpsc::UnboundedReceiver<Bytes>,
    /// The connection's state.
    pub state: Arc<LinkState>,
}

/// What became of a frame handed to [`Links::enqueue`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Enqueued {
    /// Queued on the peer's connection.
    Queued,
    /// No live connection to the peer.
    NoLink,
    /// The queue is over its bound: the connection is closing, the frame is lost.
    Overflow,
}

/// The live connections, by peer id.
#[derive(Default)]
pub(super) struct Links {
    map: RwLock<HashMap<NodeId, Link>>,
    next_conn: AtomicU64,
}

impl Links {
    /// Takes `peer`'s place for a new connection, closing with `shutdown`; `None` when a live
    /// connection holds it.
    pub fn claim(&self, peer: NodeId, shutdown: &CancellationToken) -> Option<Claim> {
        let mut map = self.map.write().unwrap_or_else(|e| e.into_inner());
        if map.contains_key(&peer) {
            return None;
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let conn = self.next_conn.fetch_add(1, Ordering::Relaxed);
        let state = Arc::new(LinkState {
            close: shutdown.child_token(),
            ..Default::default()
        });
        map.insert(
            peer,
            Link {
                tx,
                conn,
                state: state.clone(),
            },
        );
        Some(Claim { conn, rx, state })
    }

    /// Gives `peer`'s place back, if connection `conn` still holds it.
    pub fn release(&self, peer: NodeId, conn: u64) -> bool {
        let mut map = self.map.write().unwrap_or_else(|e| e.into_inner());
        if map.get(&peer).is_some_and(|l| l.conn == conn) {
            map.remove(&peer);
            return true;
        }
        false
    }

    /// Queues `frame` for `peer`, keeping its queue within `bound` bytes (a frame alone
    /// always goes); never blocks.
    pub fn enqueue(&self, peer: NodeId, frame: Bytes, bound: usize) -> Enqueued {
        let map = self.map.read().unwrap_or_else(|e| e.into_inner());
        let Some(link) = map.get(&peer) else {
            return Enqueued::NoLink;
        };
        if link.state.close.is_cancelled() {
            return Enqueued::NoLink;
        }
        let cost = charge(&frame);
        let before = link.state.queued.fetch_add(cost, Ordering::Relaxed);
        if before > 0 && before.saturating_add(cost) > bound {
            link.state.queued.fetch_sub(cost, Ordering::Relaxed);
            link.state.close(format!(
                "send queue over {bound} bytes: the peer does not take what is sent"
            ));
            return Enqueued::Overflow;
        }
        if link.tx.send(frame).is_err() {
            link.state.queued.fetch_sub(cost, Ordering::Relaxed);
            return Enqueued::NoLink;
        }
        Enqueued::Queued
    }

    /// Closes the live connection holding `peer`'s place if its peer authenticated with a
    /// client certificate (it took a data node's id): true if it did.
    pub fn close_client_cert(&self, peer: NodeId, reason: &str) -> bool {
        let map = self.map.read().unwrap_or_else(|e| e.into_inner());
        match map.get(&peer) {
            Some(link) if link.state.client_cert.load(Ordering::Relaxed) => {
                link.state.close(reason);
                true
            }
            _ => false,
        }
    }

    /// Whether a live connection holds `peer`'s place.
    pub fn is_up(&self, peer: NodeId) -> bool {
        self.map
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .contains_key(&peer)
    }

    /// The peers with a live connection, in id order.
    pub fn peers(&self) -> Vec<NodeId> {
        let mut up: Vec<NodeId> = self
            .map
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .keys()
            .copied()
            .collect();
        up.sort_unstable();
        up
    }
}
