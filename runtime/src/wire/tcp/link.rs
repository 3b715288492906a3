//! One authenticated connection, from the handshake to its end: a reader and a writer that
//! run apart, so that neither can hold the other up.
//!
//! - The reader checks each frame's tag ([`framing::frame_mac`](crate::wire::framing::frame_mac))
//!   and hands messages on. A frame whose tag does not verify closes the connection (counted
//!   in `forged_frames`; under TLS, where frames carry no tag, a record that does not
//!   decrypt), as does one over the length limit; a verified frame with a bad
//!   checksum is dropped and counted. Nothing arriving for [`TcpConfig::dead_after`] closes it.
//! - The writer takes frames from the connection's queue, seals up to [`BATCH_FRAMES`] of
//!   them into one buffer and writes it, and sends a heartbeat every
//!   [`TcpConfig::heartbeat_interval`]. A write that makes no progress for
//!   [`TcpConfig::send_timeout`] closes the connection: the peer stopped reading (counted in
//!   `stalled_peers`). Senders never wait for the writer ([`super::links`]).
//!
//! Whichever ends first ends the other; the peer's place is then given back and the peer
//! reported [`PeerEvent::Down`] with the first reason.
//!
//! [`TcpConfig::dead_after`]: super::config::TcpConfig::dead_after
//! [`TcpConfig::heartbeat_interval`]: super::config::TcpConfig::heartbeat_interval
//! [`TcpConfig::send_timeout`]: super::config::TcpConfig::send_timeout

use super::links::{charge, Claim, LinkState};
use super::shared::{PeerEvent, Shared};
use super::stats::bump;
use super::stream::Stream;
use crate::wire::codec;
use crate::wire::framing::tls::is_tampering;
use crate::wire::framing::{FrameError, FrameOpener, FrameSealer, Session};
use crate::wire::ids::NodeId;
use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::codec::{Framed, FramedRead, LengthDelimitedCodec};

/// Frames sealed together before one write.
pub const BATCH_FRAMES: usize = 64;

/// Bytes sealed together before one write (a frame alone may be longer).
const BATCH_BYTES: usize = 1 << 20;

/// Runs the connection `framed` (whose handshake made `session`, and which `claim` holds
/// the peer's place for) until it ends, then gives the place back and reports the peer down.
pub(super) async fn serve<S: Stream>(
    shared: Arc<Shared>,
    framed: Framed<S, LengthDelimitedCodec>,
    session: Session,
    claim: Claim,
) {
    let me = shared.config.id;
    let peer = session.peer;
    let Claim { conn, rx, state } = claim;
    // Bytes the peer sent right after the handshake may already be buffered.
    let parts = framed.into_parts();
    let (read_half, write_half) = parts.io.halves();
    let (sealer, opener) = session.keys.split(shared.config.max_frame_bytes);
    let mut reader = FramedRead::new(read_half, opener);
    reader.read_buffer_mut().extend_from_slice(&parts.read_buf);
    let _ = shared.events.send(PeerEvent::Up(peer));
    tracing::debug!("node {me}: connected to node {peer}");
    let writer = tokio::spawn(write_loop(
        shared.clone(),
        peer,
        write_half,
        sealer,
        rx,
        state.clone(),
    ));
    read_loop(&shared, peer, reader, &state).await;
    state.close.cancel();
    let _ = writer.await;
    let reason = state.reason("endpoint shut down");
    if shared.links.release(peer, conn) {
        let _ = shared.events.send(PeerEvent::Down(peer, reason));
    }
}

/// Reads frames from `peer` until the connection is to close.
async fn read_loop<R: AsyncRead + Unpin>(
    shared: &Shared,
    peer: NodeId,
    mut reader: FramedRead<R, FrameOpener>,
    state: &LinkState,
) {
    let me = shared.config.id;
    let c = &shared.counters;
    let dead_after = shared.config.dead_after;
    loop {
        let got = tokio::select! {
            _ = state.close.cancelled() => return,
            got = tokio::time::timeout(dead_after, reader.next()) => got,
        };
        let frame = match got {
            Err(_) => {
                tracing::warn!("node {me}: node {peer} silent for {dead_after:?}, closing");
                return state.close(format!("no heartbeat for {dead_after:?}"));
            }
            Ok(None) => return state.close("closed by the peer"),
            Ok(Some(Ok(frame))) => frame,
            Ok(Some(Err(e @ FrameError::BadTag { .. }))) => {
                bump(&c.forged_frames);
                tracing::warn!("node {me}: closing the connection to node {peer}: {e}");
                return state.close(format!("refused frame: {e}"));
            }
            Ok(Some(Err(e @ FrameError::TooLong { .. }))) => {
                bump(&c.refused_frames);
                tracing::warn!("node {me}: closing the connection to node {peer}: {e}");
                return state.close(format!("refused frame: {e}"));
            }
            Ok(Some(Err(FrameError::Io(e)))) if is_tampering(&e) => {
                bump(&c.forged_frames);
                tracing::warn!("node {me}: closing the connection to node {peer}: {e}");
                return state.close(format!("refused TLS record: {e}"));
            }
            Ok(Some(Err(e))) => return state.close(format!("receive failed: {e}")),
        };
        if frame.is_empty() {
            bump(&c.heartbeats_received);
            continue;
        }
        // The tag verified, so only a sender holding the key could have made a bad
        // checksum: a bug there, not an attack. The frame is dropped, the connection kept.
        if let Err(e) = codec::unseal(&frame) {
            bump(&c.refused_frames);
            tracing::warn!("node {me}: dropped a frame from node {peer}: {e}");
            continue;
        }
        let len = frame.len();
        if (shared.inbound)(peer, Vec::from(frame)) {
            bump(&c.frames_received);
            c.bytes_received.fetch_add(len as u64, Ordering::Relaxed);
        } else {
            bump(&c.refused_frames);
            tracing::warn!("node {me}: no node here takes a frame from node {peer}");
        }
    }
}

/// Writes the frames queued for `peer`, and heartbeats, until the connection is to close.
async fn write_loop<W: AsyncWrite + Unpin>(
    shared: Arc<Shared>,
    peer: NodeId,
    mut half: W,
    mut sealer: FrameSealer,
    mut rx: mpsc::UnboundedReceiver<Bytes>,
    state: Arc<LinkState>,
) {
    let me = shared.config.id;
    let c = &shared.counters;
    let timeout = shared.config.send_timeout;
    let mut beat = tokio::time::interval(shared.config.heartbeat_interval);
    beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut buf = BytesMut::with_capacity(64 * 1024);
    loop {
        tokio::select! {
            biased;
            _ = state.close.cancelled() => return,
            got = rx.recv() => {
                let Some(frame) = got else { return };
                let mut next = Some(frame);
                let mut frames = 0;
                while let Some(frame) = next.take() {
                    state.queued.fetch_sub(charge(&frame), Ordering::Relaxed);
                    if let Err(e) = sealer.seal_into(&frame, &mut buf) {
                        tracing::error!("node {me}: a frame for node {peer} not sent: {e}");
                    }
                    frames += 1;
                    if frames < BATCH_FRAMES && buf.len() < BATCH_BYTES {
                        next = rx.try_recv().ok();
                    }
                }
            }
            _ = beat.tick() => {
                sealer
                    .seal_into(&[], &mut buf)
                    .expect("an empty frame is never too long");
                bump(&c.heartbeats_sent);
            }
        }
        match write_out(&mut half, &mut buf, timeout, &state).await {
            Ok(()) => {}
            Err(Unwritten::Closing) => return,
            Err(Unwritten::Stalled) => {
                bump(&c.stalled_peers);
                tracing::warn!(
                    "node {me}: node {peer} took no byte for {timeout:?}: declared down"
                );
                return state.close(format!("stopped reading: no byte taken for {timeout:?}"));
            }
            Err(Unwritten::Failed(e)) => return state.close(format!("send failed: {e}")),
        }
    }
}

/// Why [`write_out`] did not write everything.
enum Unwritten {
    /// The connection is closing anyway.
    Closing,
    /// No byte was taken for the send timeout: the peer does not read.
    Stalled,
    /// The socket failed or was closed.
    Failed(String),
}

/// Writes all of `buf` and flushes it (a TLS stream may hold records back until then), each
/// write allowed `timeout` to make progress.
async fn write_out<W: AsyncWrite + Unpin>(
    half: &mut W,
    buf: &mut BytesMut,
    timeout: Duration,
    state: &LinkState,
) -> Result<(), Unwritten> {
    while !buf.is_empty() {
        let wrote = tokio::select! {
            _ = state.close.cancelled() => return Err(Unwritten::Closing),
            wrote = tokio::time::timeout(timeout, half.write_buf(buf)) => wrote,
        };
        match wrote {
            Err(_) => return Err(Unwritten::Stalled),
            Ok(Err(e)) => return Err(Unwritten::Failed(e.to_string())),
            Ok(Ok(0)) => return Err(Unwritten::Failed("the connection is closed".into())),
            Ok(Ok(_)) => {}
        }
    }
    buf.clear();
    let flushed = tokio::select! {
        _ = state.close.cancelled() => return Err(Unwritten::Closing),
        flushed = tokio::time::timeout(timeout, half.flush()) => flushed,
    };
    match flushed {
        Err(_) => Err(Unwritten::Stalled),
        Ok(Err(e)) => Err(Unwritten::Failed(e.to_string())),
        Ok(Ok(())) => Ok(()),
    }
}
