//! Framing and authentication of a TCP connection between two nodes.
//!
//! Every frame is a 4-byte big-endian length and that many bytes ([`LengthDelimitedCodec`]);
//! a frame longer than the limit is refused as soon as its length is read, before any of it
//! is buffered.
//!
//! ## Handshake
//!
//! Both sides know a shared [`Secret`]. Before anything else on a connection, each proves to
//! the other that it knows the secret, with HMAC-SHA256 over fresh nonces (32 random bytes
//! from each side), both node ids and a label saying who computed it, so that no proof can be
//! replayed on another connection or reflected back to its sender. The handshake frames have
//! a fixed layout, are at most [`HANDSHAKE_MAX_FRAME`] bytes and are parsed by hand: nothing
//! is deserialized before both sides are authenticated.
//!
//! ```text
//! dialer D                                                 acceptor A
//!   HELLO     "WEIR" v1 | D.id | nonce_d            ->
//!             <-   CHALLENGE "WEIR" v1 | A.id | nonce_a | HMAC(k, "accept" v1 D.id A.id nonce_d nonce_a)
//!   (D checks A's proof; a wrong one closes the connection)
//!   RESPONSE  HMAC(k, "dial" v1 D.id A.id nonce_d nonce_a)  ->
//!             (A checks D's proof; a wrong one closes the connection)
//!             <-   WELCOME "WEIR-OK"
//! ```
//!
//! After the handshake the limit rises to the data frame limit and a frame is either empty (a
//! heartbeat) or one sealed message ([`crate::wire::codec::seal`]). The handshake authenticates the
//! peers, not each frame: there is no encryption, and a frame injected into an established
//! connection is caught only by its checksum (TLS is for later).

use crate::wire::ids::NodeId;
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use std::fmt;
use std::path::Path;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::codec::{Framed, LengthDelimitedCodec};

/// First bytes of the HELLO and CHALLENGE frames.
pub const MAGIC: [u8; 4] = *b"WEIR";
/// Version of the handshake and framing.
pub const VERSION: u8 = 1;
/// Bytes of a nonce.
pub const NONCE_BYTES: usize = 32;
/// Bytes of an HMAC-SHA256 proof.
pub const MAC_BYTES: usize = 32;
/// Largest frame accepted during the handshake.
pub const HANDSHAKE_MAX_FRAME: usize = 128;
/// The last handshake frame, from the acceptor.
pub const WELCOME: &[u8] = b"WEIR-OK";
/// Shortest secret accepted.
pub const MIN_SECRET_BYTES: usize = 16;

const ACCEPT_LABEL: &[u8] = b"weir accept";
const DIAL_LABEL: &[u8] = b"weir dial";
const HELLO_BYTES: usize = MAGIC.len() + 1 + 4 + NONCE_BYTES;
const CHALLENGE_BYTES: usize = HELLO_BYTES + MAC_BYTES;

type HmacSha256 = Hmac<Sha256>;

/// The shared secret of a cluster. Its `Debug` does not show it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Vec<u8>);

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret({} bytes)", self.0.len())
    }
}

impl Secret {
    /// A secret of at least [`MIN_SECRET_BYTES`] bytes.
    pub fn new(bytes: impl Into<Vec<u8>>) -> Result<Self, String> {
        let bytes = bytes.into();
        if bytes.len() < MIN_SECRET_BYTES {
            return Err(format!(
                "a secret needs at least {MIN_SECRET_BYTES} bytes, this one has {}",
                bytes.len()
            ));
        }
        Ok(Secret(bytes))
    }

    /// The secret in a file, without trailing line breaks and spaces.
    pub fn from_file(path: &Path) -> Result<Self, String> {
        let mut bytes = std::fs::read(path)
            .map_err(|e| format!("cannot read secret file {}: {e}", path.display()))?;
        while bytes.last().is_some_and(|b| b.is_ascii_whitespace()) {
            bytes.pop();
        }
        Secret::new(bytes).map_err(|e| format!("secret file {}: {e}", path.display()))
    }

    fn mac(
        &self,
        label: &[u8],
        dialer: NodeId,
        acceptor: NodeId,
        nd: &[u8],
        na: &[u8],
    ) -> HmacSha256 {
        let mut mac = <HmacSha256 as KeyInit>::new_from_slice(&self.0)
            .expect("HMAC accepts keys of any length");
        mac.update(label);
        mac.update(&[VERSION]);
        mac.update(&dialer.to_le_bytes());
        mac.update(&acceptor.to_le_bytes());
        mac.update(nd);
        mac.update(na);
        mac
    }

    fn proof(
        &self,
        label: &[u8],
        dialer: NodeId,
        acceptor: NodeId,
        nd: &[u8],
        na: &[u8],
    ) -> [u8; MAC_BYTES] {
        let mut out = [0u8; MAC_BYTES];
        out.copy_from_slice(
            &self
                .mac(label, dialer, acceptor, nd, na)
                .finalize()
                .into_bytes(),
        );
        out
    }

    /// Whether `proof` is right, compared in constant time.
    fn verify(
        &self,
        label: &[u8],
        dialer: NodeId,
        acceptor: NodeId,
        nd: &[u8],
        na: &[u8],
        proof: &[u8],
    ) -> bool {
        self.mac(label, dialer, acceptor, nd, na)
            .verify_slice(proof)
            .is_ok()
    }
}

/// Why a handshake failed.
#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    /// The socket failed.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    /// The peer closed the connection.
    #[error("the peer closed the connection")]
    Closed,
    /// The handshake did not finish in time.
    #[error("no handshake within {0:?}")]
    Timeout(Duration),
    /// A handshake frame of the wrong size or layout.
    #[error("malformed handshake frame: {0}")]
    Malformed(&'static str),
    /// The peer speaks another version.
    #[error("the peer speaks version {0}, this node {VERSION}")]
    Version(u8),
    /// The peer's proof is wrong: it does not know the secret.
    #[error("wrong secret: node {0}'s proof does not verify")]
    WrongSecret(NodeId),
    /// The peer refused our proof.
    #[error("the peer refused this node's proof (wrong secret?)")]
    Refused,
    /// The peer is not the node expected at that address.
    #[error("expected node {expected}, the peer is node {got}")]
    UnexpectedPeer {
        /// The node dialed.
        expected: NodeId,
        /// The node that answered.
        got: NodeId,
    },
    /// The peer claims this node's own id.
    #[error("the peer claims this node's id {0}")]
    SameId(NodeId),
}

/// The framing codec: 4-byte length, frames of at most `max_frame` bytes.
pub fn codec(max_frame: usize) -> LengthDelimitedCodec {
    LengthDelimitedCodec::builder()
        .length_field_length(4)
        .max_frame_length(max_frame)
        .new_codec()
}

fn nonce() -> [u8; NONCE_BYTES] {
    let mut n = [0u8; NONCE_BYTES];
    rand::fill(&mut n[..]);
    n
}

fn hello(id: NodeId, nonce: &[u8; NONCE_BYTES]) -> Bytes {
    let mut b = Vec::with_capacity(HELLO_BYTES);
    b.extend_from_slice(&MAGIC);
    b.push(VERSION);
    b.extend_from_slice(&id.to_le_bytes());
    b.extend_from_slice(nonce);
    b.into()
}

/// Parses a HELLO (or the start of a CHALLENGE): the peer's id and nonce.
fn parse_hello(frame: &[u8]) -> Result<(NodeId, [u8; NONCE_BYTES]), HandshakeError> {
    if frame.len() < HELLO_BYTES || frame[..MAGIC.len()] != MAGIC {
        return Err(HandshakeError::Malformed("not a weir handshake"));
    }
    if frame[4] != VERSION {
        return Err(HandshakeError::Version(frame[4]));
    }
    let id = NodeId::from_le_bytes([frame[5], frame[6], frame[7], frame[8]]);
    let mut n = [0u8; NONCE_BYTES];
    n.copy_from_slice(&frame[9..HELLO_BYTES]);
    Ok((id, n))
}

async fn next<T: AsyncRead + AsyncWrite + Unpin>(
    framed: &mut Framed<T, LengthDelimitedCodec>,
) -> Result<bytes::BytesMut, HandshakeError> {
    match framed.next().await {
        Some(Ok(f)) => Ok(f),
        Some(Err(e)) if e.kind() == std::io::ErrorKind::InvalidData => {
            Err(HandshakeError::Malformed("frame too long"))
        }
        Some(Err(e)) => Err(e.into()),
        None => Err(HandshakeError::Closed),
    }
}

async fn bounded<F, T>(limit: Duration, f: F) -> Result<T, HandshakeError>
where
    F: std::future::Future<Output = Result<T, HandshakeError>>,
{
    tokio::time::timeout(limit, f)
        .await
        .unwrap_or(Err(HandshakeError::Timeout(limit)))
}

/// The dialer's side of the handshake, as node `me`, on a connection framed with
/// [`codec`]`(`[`HANDSHAKE_MAX_FRAME`]`)`. With `expect`, the peer must be that node.
/// Returns the peer's id once both sides are authenticated.
pub async fn dial<T: AsyncRead + AsyncWrite + Unpin>(
    framed: &mut Framed<T, LengthDelimitedCodec>,
    secret: &Secret,
    me: NodeId,
    expect: Option<NodeId>,
    limit: Duration,
) -> Result<NodeId, HandshakeError> {
    bounded(limit, async {
        let nd = nonce();
        framed.send(hello(me, &nd)).await?;
        let frame = next(framed).await?;
        if frame.len() != CHALLENGE_BYTES {
            return Err(HandshakeError::Malformed("challenge of the wrong size"));
        }
        let (peer, na) = parse_hello(&frame)?;
        if peer == me {
            return Err(HandshakeError::SameId(me));
        }
        if let Some(expected) = expect.filter(|e| *e != peer) {
            return Err(HandshakeError::UnexpectedPeer {
                expected,
                got: peer,
            });
        }
        if !secret.verify(ACCEPT_LABEL, me, peer, &nd, &na, &frame[HELLO_BYTES..]) {
            return Err(HandshakeError::WrongSecret(peer));
        }
        let proof = secret.proof(DIAL_LABEL, me, peer, &nd, &na);
        framed.send(Bytes::copy_from_slice(&proof)).await?;
        match next(framed).await {
            Ok(w) if &w[..] == WELCOME => Ok(peer),
            Ok(_) => Err(HandshakeError::Malformed("expected the welcome")),
            Err(HandshakeError::Closed) => Err(HandshakeError::Refused),
            Err(e) => Err(e),
        }
    })
    .await
}

/// The acceptor's side of the handshake, as node `me`, on a connection framed with
/// [`codec`]`(`[`HANDSHAKE_MAX_FRAME`]`)`. Returns the peer's id once both sides are
/// authenticated.
pub async fn accept<T: AsyncRead + AsyncWrite + Unpin>(
    framed: &mut Framed<T, LengthDelimitedCodec>,
    secret: &Secret,
    me: NodeId,
    limit: Duration,
) -> Result<NodeId, HandshakeError> {
    bounded(limit, async {
        let frame = next(framed).await?;
        if frame.len() != HELLO_BYTES {
            return Err(HandshakeError::Malformed("hello of the wrong size"));
        }
        let (peer, nd) = parse_hello(&frame)?;
        if peer == me {
            return Err(HandshakeError::SameId(me));
        }
        let na = nonce();
        let mut challenge = Vec::with_capacity(CHALLENGE_BYTES);
        challenge.extend_from_slice(&hello(me, &na));
        challenge.extend_from_slice(&secret.proof(ACCEPT_LABEL, peer, me, &nd, &na));
        framed.send(Bytes::from(challenge)).await?;
        let proof = next(framed).await?;
        if proof.len() != MAC_BYTES {
            return Err(HandshakeError::Malformed("response of the wrong size"));
        }
        if !secret.verify(DIAL_LABEL, peer, me, &nd, &na, &proof) {
            return Err(HandshakeError::WrongSecret(peer));
        }
        framed.send(Bytes::from_static(WELCOME)).await?;
        Ok(peer)
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(s: &str) -> Secret {
        Secret::new(s.as_bytes().to_vec()).unwrap()
    }

    #[test]
    fn proofs_bind_label_ids_and_nonces() {
        let k = secret("0123456789abcdef");
        let (nd, na) = ([1u8; 32], [2u8; 32]);
        let p = k.proof(DIAL_LABEL, 1, 2, &nd, &na);
        assert!(k.verify(DIAL_LABEL, 1, 2, &nd, &na, &p));
        assert!(!k.verify(ACCEPT_LABEL, 1, 2, &nd, &na, &p), "reflected");
        assert!(!k.verify(DIAL_LABEL, 2, 1, &nd, &na, &p), "ids swapped");
        assert!(!k.verify(DIAL_LABEL, 1, 2, &na, &nd, &p), "nonces swapped");
        assert!(!secret("0123456789abcdeX").verify(DIAL_LABEL, 1, 2, &nd, &na, &p));
        assert!(Secret::new(b"short".to_vec()).is_err());
        assert_eq!(format!("{k:?}"), "Secret(16 bytes)");
    }

    #[test]
    fn malformed_hellos_are_refused() {
        assert!(matches!(
            parse_hello(b"garbage"),
            Err(HandshakeError::Malformed(_))
        ));
        let mut h = hello(3, &[0; 32]).to_vec();
        assert_eq!(parse_hello(&h).unwrap().0, 3);
        h[4] = 9;
        assert!(matches!(parse_hello(&h), Err(HandshakeError::Version(9))));
    }
}
