//! The cluster's shared secret and everything derived from it: the handshake's proofs and
//! each connection's frame keys. All are HMAC-SHA256 of the secret over a label, the framing
//! [`VERSION`], both node ids (the dialer's first) and both nonces (the dialer's first), so
//! that a value made for one purpose, one connection or one direction is worth nothing for
//! another.

use crate::wire::ids::NodeId;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use std::fmt;
use std::path::Path;

/// Version of the handshake and framing (2: every frame after the handshake carries a MAC).
pub const VERSION: u8 = 2;
/// Bytes of a nonce.
pub const NONCE_BYTES: usize = 32;
/// Bytes of an HMAC-SHA256 output: a handshake proof, a frame key.
pub const MAC_BYTES: usize = 32;
/// Shortest secret accepted.
pub const MIN_SECRET_BYTES: usize = 16;

/// HMAC-SHA256, the one primitive of the framing.
pub(super) type HmacSha256 = Hmac<Sha256>;

/// What a value derived from the secret is for. Each label has its own length, so no two
/// purposes can ever sign the same bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Purpose {
    /// The acceptor's proof, in its challenge.
    AcceptProof,
    /// The dialer's proof, in its response.
    DialProof,
    /// The key of the frames the dialer sends.
    DialerFrames,
    /// The key of the frames the acceptor sends.
    AcceptorFrames,
}

impl Purpose {
    fn label(self) -> &'static [u8] {
        match self {
            Purpose::AcceptProof => b"weir accept",
            Purpose::DialProof => b"weir dial",
            Purpose::DialerFrames => b"weir frames of the dialer",
            Purpose::AcceptorFrames => b"weir frames of the acceptor",
        }
    }
}

/// The two ends of one connection and their fresh nonces: what every derived value binds.
#[derive(Debug, Clone, Copy)]
pub(super) struct Binding<'a> {
    /// The node that dialed.
    pub dialer: NodeId,
    /// The node that accepted.
    pub acceptor: NodeId,
    /// The dialer's nonce.
    pub dialer_nonce: &'a [u8],
    /// The acceptor's nonce.
    pub acceptor_nonce: &'a [u8],
}

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

    fn mac(&self, purpose: Purpose, on: &Binding<'_>) -> HmacSha256 {
        let mut mac = <HmacSha256 as KeyInit>::new_from_slice(&self.0)
            .expect("HMAC accepts keys of any length");
        mac.update(purpose.label());
        mac.update(&[VERSION]);
        mac.update(&on.dialer.to_le_bytes());
        mac.update(&on.acceptor.to_le_bytes());
        mac.update(on.dialer_nonce);
        mac.update(on.acceptor_nonce);
        mac
    }

    /// The value for `purpose` on connection `on`: a proof to send, or a frame key.
    pub(super) fn derive(&self, purpose: Purpose, on: &Binding<'_>) -> [u8; MAC_BYTES] {
        let mut out = [0u8; MAC_BYTES];
        out.copy_from_slice(&self.mac(purpose, on).finalize().into_bytes());
        out
    }

    /// Whether `proof` is the value for `purpose` on `on`, compared in constant time.
    pub(super) fn verify(&self, purpose: Purpose, on: &Binding<'_>, proof: &[u8]) -> bool {
        self.mac(purpose, on).verify_slice(proof).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(s: &str) -> Secret {
        Secret::new(s.as_bytes().to_vec()).unwrap()
    }

    fn on<'a>(dialer: NodeId, acceptor: NodeId, nd: &'a [u8], na: &'a [u8]) -> Binding<'a> {
        Binding {
            dialer,
            acceptor,
            dialer_nonce: nd,
            acceptor_nonce: na,
        }
    }

    #[test]
    fn proofs_bind_purpose_ids_and_nonces() {
        let k = secret("0123456789abcdef");
        let (nd, na) = ([1u8; 32], [2u8; 32]);
        let p = k.derive(Purpose::DialProof, &on(1, 2, &nd, &na));
        assert!(k.verify(Purpose::DialProof, &on(1, 2, &nd, &na), &p));
        assert!(
            !k.verify(Purpose::AcceptProof, &on(1, 2, &nd, &na), &p),
            "reflected"
        );
        assert!(
            !k.verify(Purpose::DialProof, &on(2, 1, &nd, &na), &p),
            "ids swapped"
        );
        assert!(
            !k.verify(Purpose::DialProof, &on(1, 2, &na, &nd), &p),
            "nonces swapped"
        );
        assert!(!secret("0123456789abcdeX").verify(Purpose::DialProof, &on(1, 2, &nd, &na), &p));
        assert!(Secret::new(b"short".to_vec()).is_err());
        assert_eq!(format!("{k:?}"), "Secret(16 bytes)");
    }

    #[test]
    fn frame_keys_differ_by_direction_and_from_the_proofs() {
        let k = secret("0123456789abcdef");
        let (nd, na) = ([1u8; 32], [2u8; 32]);
        let b = on(1, 2, &nd, &na);
        let all = [
            Purpose::AcceptProof,
            Purpose::DialProof,
            Purpose::DialerFrames,
            Purpose::AcceptorFrames,
        ]
        .map(|p| k.derive(p, &b));
        for i in 0..all.len() {
            for j in i + 1..all.len() {
                assert_ne!(all[i], all[j], "purposes {i} and {j}");
            }
        }
        let lengths: std::collections::HashSet<usize> = [
            Purpose::AcceptProof,
            Purpose::DialProof,
            Purpose::DialerFrames,
            Purpose::AcceptorFrames,
        ]
        .iter()
        .map(|p| p.label().len())
        .collect();
        assert_eq!(lengths.len(), 4, "every label has its own length");
    }
}
