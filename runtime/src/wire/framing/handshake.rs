//! The handshake that opens every connection between two nodes: each proves to the other
//! that it knows the shared [`Secret`], and both derive the connection's frame keys.
//!
//! The proofs are HMAC-SHA256 over fresh nonces (32 random bytes from each side), both node
//! ids and a label saying who computed it ([`super::secret`]), so that no proof can be
//! replayed on another connection or reflected back to its sender. The handshake frames have
//! a fixed layout, are at most [`HANDSHAKE_MAX_FRAME`] bytes and are parsed by hand: nothing
//! is deserialized before both sides are authenticated.
//!
//! ```text
//! dialer D                                                 acceptor A
//!   HELLO     "WEIR" v2 | D.id | nonce_d            ->
//!             <-   CHALLENGE "WEIR" v2 | A.id | nonce_a | HMAC(k, "accept" v2 D.id A.id nonce_d nonce_a)
//!   (D checks A's proof; a wrong one closes the connection)
//!   RESPONSE  HMAC(k, "dial" v2 D.id A.id nonce_d nonce_a)  ->
//!             (A checks D's proof; a wrong one closes the connection; then A admits D's id,
//!              or answers IN-USE when a live connection holds it, or WRONG-ID when D's TLS
//!              certificate does not name it, and closes)
//!             <-   WELCOME "WEIR-OK"
//! ```
//!
//! Both ends then hold the connection's [`LinkKeys`]: HMAC-SHA256 of the secret over a label
//! per direction, both ids and both nonces. Every frame after the WELCOME carries a tag under
//! them ([`super::frame_mac`]).
//!
//! Under TLS ([`super::tls`]) the same handshake runs inside the TLS session, keyed not with
//! a shared secret but with keying material both ends export from that session: the proofs
//! then bind the weir ids to the TLS session whose certificates were checked.

use super::frame_mac::{FrameKey, LinkKeys};
use super::secret::{Binding, Purpose, Secret, MAC_BYTES, NONCE_BYTES, VERSION};
use crate::wire::ids::NodeId;
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::codec::{Framed, LengthDelimitedCodec};

/// First bytes of the HELLO and CHALLENGE frames.
pub const MAGIC: [u8; 4] = *b"WEIR";
/// Largest frame accepted during the handshake.
pub const HANDSHAKE_MAX_FRAME: usize = 128;
/// The last handshake frame from the acceptor when it admits the dialer.
pub const WELCOME: &[u8] = b"WEIR-OK";
/// The last handshake frame from the acceptor when a live connection already holds the
/// dialer's id: the dialer is refused ([`HandshakeError::IdInUse`]).
pub const IN_USE: &[u8] = b"WEIR-IN-USE";
/// The last handshake frame from the acceptor when the dialer's TLS certificate does not
/// name the id it claims: the dialer is refused ([`HandshakeError::IdentityRefused`]).
pub const WRONG_ID: &[u8] = b"WEIR-WRONG-ID";

/// What the acceptor's admission says of a dialer whose proof verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admit {
    /// The dialer may connect with the id it claims.
    Yes,
    /// A live connection holds the id.
    InUse,
    /// The dialer's certificate does not entitle it to the id; the reason in words.
    WrongIdentity(String),
}

const HELLO_BYTES: usize = MAGIC.len() + 1 + 4 + NONCE_BYTES;
const CHALLENGE_BYTES: usize = HELLO_BYTES + MAC_BYTES;

/// An authenticated connection's peer and keys, as one end holds them after the handshake.
#[derive(Debug)]
pub struct Session {
    /// The node at the other end.
    pub peer: NodeId,
    /// The keys of this end's frames and of its peer's.
    pub keys: LinkKeys,
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
    /// A live authenticated connection at the acceptor already holds this id: the newcomer
    /// is refused, the live connection kept.
    #[error("id {0} is held by a live connection at the acceptor")]
    IdInUse(NodeId),
    /// The dialer's TLS certificate does not entitle it to the id it claims (the acceptor's
    /// view).
    #[error("node {peer}'s certificate does not let it claim that id: {why}")]
    WrongIdentity {
        /// The id claimed.
        peer: NodeId,
        /// Why not.
        why: String,
    },
    /// The acceptor refused this node's certificate for the id it claims (the dialer's view).
    #[error("the peer refused this node's TLS certificate for id {0} (it must name that id)")]
    IdentityRefused(NodeId),
    /// The TLS session could not be set up (its handshake failed, or a certificate was
    /// refused by either end).
    #[error("TLS: {message}")]
    Tls {
        /// What failed, in words.
        message: String,
        /// Whether a certificate was refused (by this end or the peer): not signed by the CA,
        /// expired, missing, or not naming the node dialed.
        certificate: bool,
    },
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

/// The keys of one end of the connection `on`: the dialer sends under the dialer's key.
fn link_keys(secret: &Secret, on: &Binding<'_>, dialer: bool) -> LinkKeys {
    let of_dialer = FrameKey::new(&secret.derive(Purpose::DialerFrames, on));
    let of_acceptor = FrameKey::new(&secret.derive(Purpose::AcceptorFrames, on));
    if dialer {
        LinkKeys::new(of_dialer, of_acceptor)
    } else {
        LinkKeys::new(of_acceptor, of_dialer)
    }
}

async fn next<T: AsyncRead + AsyncWrite + Unpin>(
    framed: &mut Framed<T, LengthDelimitedCodec>,
) -> Result<bytes::BytesMut, HandshakeError> {
    match framed.next().await {
        Some(Ok(f)) => Ok(f),
        // The codec's own error (not a TLS stream's, which are InvalidData too).
        Some(Err(e))
            if e.get_ref()
                .is_some_and(|e| e.is::<tokio_util::codec::LengthDelimitedCodecError>()) =>
        {
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
/// [`codec`](super::frame_mac::codec)`(`[`HANDSHAKE_MAX_FRAME`]`)`. With `expect`, the peer
/// must be that node. Returns the peer and the connection's keys once both sides are
/// authenticated and the acceptor admitted this node's id.
pub async fn dial<T: AsyncRead + AsyncWrite + Unpin>(
    framed: &mut Framed<T, LengthDelimitedCodec>,
    secret: &Secret,
    me: NodeId,
    expect: Option<NodeId>,
    limit: Duration,
) -> Result<Session, HandshakeError> {
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
        let on = Binding {
            dialer: me,
            acceptor: peer,
            dialer_nonce: &nd,
            acceptor_nonce: &na,
        };
        if !secret.verify(Purpose::AcceptProof, &on, &frame[HELLO_BYTES..]) {
            return Err(HandshakeError::WrongSecret(peer));
        }
        let proof = secret.derive(Purpose::DialProof, &on);
        framed.send(Bytes::copy_from_slice(&proof)).await?;
        match next(framed).await {
            Ok(w) if &w[..] == WELCOME => Ok(Session {
                peer,
                keys: link_keys(secret, &on, true),
            }),
            Ok(w) if &w[..] == IN_USE => Err(HandshakeError::IdInUse(me)),
            Ok(w) if &w[..] == WRONG_ID => Err(HandshakeError::IdentityRefused(me)),
            Ok(_) => Err(HandshakeError::Malformed("expected the welcome")),
            Err(HandshakeError::Closed) => Err(HandshakeError::Refused),
            Err(e) => Err(e),
        }
    })
    .await
}

/// The acceptor's side of the handshake, as node `me`, on a connection framed with
/// [`codec`](super::frame_mac::codec)`(`[`HANDSHAKE_MAX_FRAME`]`)`. Once the dialer's proof
/// verifies, `admit` is asked whether its id may connect ([`Admit::InUse`]: a live
/// connection holds it, the dialer is told [`IN_USE`] and refused;
/// [`Admit::WrongIdentity`]: told [`WRONG_ID`] and refused). Returns the peer and the connection's
/// keys once both sides are authenticated and the peer admitted.
pub async fn accept<T: AsyncRead + AsyncWrite + Unpin>(
    framed: &mut Framed<T, LengthDelimitedCodec>,
    secret: &Secret,
    me: NodeId,
    limit: Duration,
    admit: impl FnOnce(NodeId) -> Admit,
) -> Result<Session, HandshakeError> {
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
        let on = Binding {
            dialer: peer,
            acceptor: me,
            dialer_nonce: &nd,
            acceptor_nonce: &na,
        };
        let mut challenge = Vec::with_capacity(CHALLENGE_BYTES);
        challenge.extend_from_slice(&hello(me, &na));
        challenge.extend_from_slice(&secret.derive(Purpose::AcceptProof, &on));
        framed.send(Bytes::from(challenge)).await?;
        let proof = next(framed).await?;
        if proof.len() != MAC_BYTES {
            return Err(HandshakeError::Malformed("response of the wrong size"));
        }
        if !secret.verify(Purpose::DialProof, &on, &proof) {
            return Err(HandshakeError::WrongSecret(peer));
        }
        match admit(peer) {
            Admit::Yes => {}
            Admit::InUse => {
                // Best effort: the dialer learns why; the connection closes either way.
                let _ = framed.send(Bytes::from_static(IN_USE)).await;
                return Err(HandshakeError::IdInUse(peer));
            }
            Admit::WrongIdentity(why) => {
                let _ = framed.send(Bytes::from_static(WRONG_ID)).await;
                return Err(HandshakeError::WrongIdentity { peer, why });
            }
        }
        framed.send(Bytes::from_static(WELCOME)).await?;
        Ok(Session {
            peer,
            keys: link_keys(secret, &on, false),
        })
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::framing::frame_mac::codec;

    #[test]
    fn malformed_hellos_are_refused() {
        assert!(matches!(
            parse_hello(b"garbage"),
            Err(HandshakeError::Malformed(_))
        ));
        let mut h = hello(3, &[0; 32]).to_vec();
        assert_eq!(parse_hello(&h).unwrap().0, 3);
        h[4] = 1;
        assert!(matches!(parse_hello(&h), Err(HandshakeError::Version(1))));
    }

    /// Runs a handshake between a dialer `d` and an acceptor `a` over an in-memory pipe.
    fn handshake(
        d: (&Secret, NodeId),
        a: (&Secret, NodeId),
        admit: Admit,
    ) -> (
        Result<Session, HandshakeError>,
        Result<Session, HandshakeError>,
    ) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let (x, y) = tokio::io::duplex(1024);
            let mut fx = Framed::new(x, codec(HANDSHAKE_MAX_FRAME));
            let mut fy = Framed::new(y, codec(HANDSHAKE_MAX_FRAME));
            let limit = Duration::from_secs(5);
            let dialer = async {
                let r = dial(&mut fx, d.0, d.1, None, limit).await;
                drop(fx);
                r
            };
            let acceptor = async {
                let r = accept(&mut fy, a.0, a.1, limit, |_| admit.clone()).await;
                drop(fy);
                r
            };
            tokio::join!(dialer, acceptor)
        })
    }

    #[test]
    fn both_ends_derive_matching_keys_and_a_held_id_is_refused() {
        use bytes::BytesMut;
        use tokio_util::codec::Decoder;
        let k = Secret::new(b"0123456789abcdef".to_vec()).unwrap();
        let (d, a) = handshake((&k, 1), (&k, 2), Admit::Yes);
        let (d, a) = (d.unwrap(), a.unwrap());
        assert_eq!((d.peer, a.peer), (2, 1));
        let (mut d_out, mut d_in) = d.keys.split(64);
        let (mut a_out, mut a_in) = a.keys.split(64);
        let mut wire = BytesMut::new();
        d_out.seal_into(b"to the acceptor", &mut wire).unwrap();
        assert_eq!(
            &a_in.decode(&mut wire).unwrap().unwrap()[..],
            b"to the acceptor"
        );
        a_out.seal_into(b"to the dialer", &mut wire).unwrap();
        assert_eq!(
            &d_in.decode(&mut wire).unwrap().unwrap()[..],
            b"to the dialer"
        );
        // Another connection of the same two nodes has other keys (fresh nonces).
        let (d2, _) = handshake((&k, 1), (&k, 2), Admit::Yes);
        let (mut d2_out, _) = d2.unwrap().keys.split(64);
        d2_out.seal_into(b"replayed", &mut wire).unwrap();
        let (_, mut a_in_fresh) = handshake((&k, 1), (&k, 2), Admit::Yes)
            .1
            .unwrap()
            .keys
            .split(64);
        assert!(a_in_fresh.decode(&mut wire).is_err());
        // An id the acceptor holds: both ends say so.
        let (d, a) = handshake((&k, 1), (&k, 2), Admit::InUse);
        assert!(matches!(d, Err(HandshakeError::IdInUse(1))), "{d:?}");
        assert!(matches!(a, Err(HandshakeError::IdInUse(1))), "{a:?}");
        // An id the dialer's certificate does not name: both ends say so.
        let (d, a) = handshake((&k, 1), (&k, 2), Admit::WrongIdentity("no".into()));
        assert!(
            matches!(d, Err(HandshakeError::IdentityRefused(1))),
            "{d:?}"
        );
        assert!(
            matches!(a, Err(HandshakeError::WrongIdentity { peer: 1, .. })),
            "{a:?}"
        );
        // A wrong secret never reaches the admission.
        let other = Secret::new(b"fedcba9876543210".to_vec()).unwrap();
        let (d, a) = handshake((&other, 1), (&k, 2), Admit::Yes);
        assert!(matches!(d, Err(HandshakeError::WrongSecret(2))), "{d:?}");
        assert!(a.is_err());
    }
}
