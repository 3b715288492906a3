//! Framing and authentication of a TCP connection between two nodes: the shared secret and
//! what is derived from it ([`secret`]), the handshake that opens every connection
//! ([`handshake`]), and the frames after it, each carrying a MAC ([`frame_mac`]); or,
//! instead of the secret, mutual TLS with certificates bound to node ids ([`tls`]).
//!
//! What this protects, with a secret of at least [`MIN_SECRET_BYTES`] bytes known only to the
//! cluster's nodes and clients: nobody without the secret can connect, and nobody without it
//! (on the path or not) can forge, alter, replay, reorder or inject a frame on an established
//! connection undetected (the connection is closed). What it does not: frames are
//! authenticated, not encrypted (anyone on the path reads them), and every holder of the
//! secret is trusted alike: it can claim any node id that no live connection holds. Under
//! TLS, frames are encrypted too, and a certificate claims only the ids it names.

pub mod frame_mac;
pub mod handshake;
pub mod secret;
pub mod tls;

pub use frame_mac::{codec, FrameError, FrameOpener, FrameSealer, LinkKeys, TAG_BYTES};
pub use handshake::{
    accept, dial, Admit, HandshakeError, Session, HANDSHAKE_MAX_FRAME, IN_USE, MAGIC, WELCOME,
    WRONG_ID,
};
pub use secret::{Secret, MAC_BYTES, MIN_SECRET_BYTES, NONCE_BYTES, VERSION};
pub use tls::{Role, Tls, TlsError, TlsFiles, CLIENT_NAME};
