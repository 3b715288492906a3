//! Frames on a connection, and the MAC that authenticates each one after the handshake.
//!
//! Every frame is a 4-byte big-endian length and that many bytes ([`codec`]); a frame longer
//! than the limit is refused as soon as its length is read, before any of it is buffered.
//!
//! After the handshake, a frame's bytes are its payload (empty: a heartbeat; otherwise one
//! sealed message) followed by a tag of [`TAG_BYTES`]: HMAC-SHA256, truncated, under the key
//! of the frame's direction ([`LinkKeys`], derived from the handshake) over the frame's
//! sequence number and its payload. The sequence number is not sent: each end counts the
//! frames of each direction from 0, heartbeats included. So a frame that was forged, altered,
//! replayed (here or from another connection), reordered, reflected back to its sender,
//! or injected by anyone who does not hold the connection's key, does not verify
//! ([`FrameError::BadTag`]), and neither does any frame after one that was dropped. The
//! stream cannot be trusted from then on: the caller closes the connection.
//!
//! Under TLS ([`super::tls`]) frames carry no tag ([`LinkKeys::untagged`]): TLS
//! authenticates, orders and encrypts every byte of the stream already, and a tampered record
//! fails there (the connection closes). The framing is otherwise the same.
//!
//! Cost: one HMAC per frame (the keyed state is computed once per connection and cloned),
//! and the sender writes the tag into its write buffer after the payload, so the payload is
//! copied no more than length-delimited framing copied it before.

use super::secret::{HmacSha256, MAC_BYTES};
use bytes::{BufMut, Bytes, BytesMut};
use hmac::{KeyInit, Mac};
use std::fmt;
use tokio_util::codec::{Decoder, Encoder, LengthDelimitedCodec};

/// Bytes of a frame's tag (HMAC-SHA256 truncated to its first 128 bits).
pub const TAG_BYTES: usize = 16;

/// The length-delimited framing every frame rides on, handshake or not: 4-byte length,
/// frames of at most `max_frame` bytes.
pub fn codec(max_frame: usize) -> LengthDelimitedCodec {
    LengthDelimitedCodec::builder()
        .length_field_length(4)
        .max_frame_length(max_frame)
        .new_codec()
}

/// The key of one direction of one connection, as an HMAC state keyed once.
#[derive(Clone)]
pub struct FrameKey(HmacSha256);

impl fmt::Debug for FrameKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FrameKey(..)")
    }
}

impl FrameKey {
    /// The key `key` (derived from the secret in the handshake).
    pub(super) fn new(key: &[u8; MAC_BYTES]) -> Self {
        FrameKey(
            <HmacSha256 as KeyInit>::new_from_slice(key).expect("HMAC accepts keys of any length"),
        )
    }

    fn mac(&self, seq: u64, payload: &[u8]) -> HmacSha256 {
        let mut mac = self.0.clone();
        mac.update(&seq.to_le_bytes());
        mac.update(payload);
        mac
    }

    /// The tag of frame number `seq` carrying `payload`.
    fn tag(&self, seq: u64, payload: &[u8]) -> [u8; TAG_BYTES] {
        let mut tag = [0u8; TAG_BYTES];
        tag.copy_from_slice(&self.mac(seq, payload).finalize().into_bytes()[..TAG_BYTES]);
        tag
    }

    /// Whether `tag` is the tag of frame `seq` carrying `payload`, compared in constant time.
    fn verifies(&self, seq: u64, payload: &[u8], tag: &[u8]) -> bool {
        tag.len() == TAG_BYTES && self.mac(seq, payload).verify_truncated_left(tag).is_ok()
    }
}

/// A connection's two frame keys as one end sees them: the key of the frames it sends and
/// the key of the frames it receives. Made by the handshake
/// ([`Session`](super::handshake::Session)).
#[derive(Clone)]
pub struct LinkKeys {
    send: FrameKey,
    recv: FrameKey,
    tagged: bool,
}

impl fmt::Debug for LinkKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LinkKeys(..)")
    }
}

impl LinkKeys {
    /// The keys of one end: `send` for its frames, `recv` for its peer's.
    pub(super) fn new(send: FrameKey, recv: FrameKey) -> Self {
        LinkKeys {
            send,
            recv,
            tagged: true,
        }
    }

    /// The same ends with frames that carry no tag: for a connection under TLS, which
    /// authenticates every byte itself. Both ends must agree.
    pub fn untagged(mut self) -> Self {
        self.tagged = false;
        self
    }

    /// Whether frames carry a tag.
    pub fn is_tagged(&self) -> bool {
        self.tagged
    }

    /// The writer and the reader of this end's frames, both counting from frame 0, with
    /// payloads of at most `max_payload` bytes.
    pub fn split(self, max_payload: usize) -> (FrameSealer, FrameOpener) {
        let (send, recv, tag) = match self.tagged {
            true => (Some(self.send), Some(self.recv), TAG_BYTES),
            false => (None, None, 0),
        };
        (
            FrameSealer {
                key: send,
                seq: 0,
                max_payload,
            },
            FrameOpener {
                key: recv,
                seq: 0,
                max_payload,
                inner: codec(max_payload.saturating_add(tag)),
            },
        )
    }
}

/// Why a frame after the handshake was not written or not taken.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The socket failed.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    /// A frame whose payload is over the limit.
    #[error("a frame over the limit of {max} bytes")]
    TooLong {
        /// The limit, in bytes of payload.
        max: usize,
    },
    /// A frame whose tag does not verify under the connection's key at its place in the
    /// stream: forged, altered, replayed, reordered, or injected.
    #[error("frame {seq} does not verify (forged, altered, replayed, reordered or injected)")]
    BadTag {
        /// The frame's place in its direction of the connection, from 0.
        seq: u64,
    },
}

/// Writes the frames of one end of a connection: length, payload, tag (see the module
/// comment). Also an [`Encoder`] of payloads.
#[derive(Debug)]
pub struct FrameSealer {
    /// `None`: untagged frames (under TLS).
    key: Option<FrameKey>,
    seq: u64,
    max_payload: usize,
}

impl FrameSealer {
    /// Appends the frame carrying `payload` to `dst` and counts it; a payload over the
    /// limit is refused and not counted.
    pub fn seal_into(&mut self, payload: &[u8], dst: &mut BytesMut) -> Result<(), FrameError> {
        let tag_bytes = if self.key.is_some() { TAG_BYTES } else { 0 };
        let len = payload.len() + tag_bytes;
        if payload.len() > self.max_payload || len > u32::MAX as usize {
            return Err(FrameError::TooLong {
                max: self.max_payload,
            });
        }
        dst.reserve(4 + len);
        dst.put_u32(len as u32);
        dst.extend_from_slice(payload);
        if let Some(key) = &self.key {
            dst.extend_from_slice(&key.tag(self.seq, payload));
        }
        self.seq += 1;
        Ok(())
    }

    /// Frames written so far (the next frame's sequence number).
    pub fn sequence(&self) -> u64 {
        self.seq
    }
}

impl Encoder<Bytes> for FrameSealer {
    type Error = FrameError;

    fn encode(&mut self, payload: Bytes, dst: &mut BytesMut) -> Result<(), FrameError> {
        self.seal_into(&payload, dst)
    }
}

/// Reads the frames of the other end of a connection, checking each tag at its place in the
/// stream; yields the payloads. A [`Decoder`].
#[derive(Debug)]
pub struct FrameOpener {
    /// `None`: untagged frames (under TLS).
    key: Option<FrameKey>,
    seq: u64,
    max_payload: usize,
    inner: LengthDelimitedCodec,
}

impl FrameOpener {
    /// Frames taken so far (the next frame's sequence number).
    pub fn sequence(&self) -> u64 {
        self.seq
    }
}

impl Decoder for FrameOpener {
    type Item = BytesMut;
    type Error = FrameError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<BytesMut>, FrameError> {
        let mut frame = match self.inner.decode(src) {
            Ok(Some(frame)) => frame,
            Ok(None) => return Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                return Err(FrameError::TooLong {
                    max: self.max_payload,
                })
            }
            Err(e) => return Err(e.into()),
        };
        let seq = self.seq;
        let Some(key) = &self.key else {
            self.seq += 1;
            return Ok(Some(frame));
        };
        let Some(payload_len) = frame.len().checked_sub(TAG_BYTES) else {
            return Err(FrameError::BadTag { seq });
        };
        let (payload, tag) = frame.split_at(payload_len);
        if !key.verifies(seq, payload, tag) {
            return Err(FrameError::BadTag { seq });
        }
        self.seq += 1;
        frame.truncate(payload_len);
        Ok(Some(frame))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> (LinkKeys, LinkKeys) {
        let (a, b) = (
            FrameKey::new(&[1; MAC_BYTES]),
            FrameKey::new(&[2; MAC_BYTES]),
        );
        (LinkKeys::new(a.clone(), b.clone()), LinkKeys::new(b, a))
    }

    /// Frames `payloads` as `sealer` writes them, one buffer each.
    fn frames(sealer: &mut FrameSealer, payloads: &[&[u8]]) -> Vec<BytesMut> {
        payloads
            .iter()
            .map(|p| {
                let mut buf = BytesMut::new();
                sealer.seal_into(p, &mut buf).unwrap();
                buf
            })
            .collect()
    }

    fn open(opener: &mut FrameOpener, wire: &[u8]) -> Result<Option<BytesMut>, FrameError> {
        opener.decode(&mut BytesMut::from(wire))
    }

    #[test]
    fn frames_open_in_order_and_nothing_else_does() {
        let (mine, theirs) = keys();
        let (mut sealer, _) = mine.split(1024);
        let (_, opener) = theirs.split(1024);
        let sent = frames(&mut sealer, &[b"zero", b"", b"two"]);
        assert_eq!(sent[0].len(), 4 + 4 + TAG_BYTES);
        // In order: every payload comes out, heartbeats included.
        let mut fresh = opener;
        for (f, want) in sent.iter().zip([&b"zero"[..], b"", b"two"]) {
            assert_eq!(&open(&mut fresh, f).unwrap().unwrap()[..], want);
        }
        let again = |skip: usize| {
            let (_, mut o) = keys().1.split(1024);
            for f in &sent[..skip] {
                open(&mut o, f).unwrap().unwrap();
            }
            o
        };
        // Replayed: frame 0 again where frame 1 is due.
        assert!(matches!(
            open(&mut again(1), &sent[0]),
            Err(FrameError::BadTag { seq: 1 })
        ));
        // Reordered: frame 2 before frame 1.
        assert!(matches!(
            open(&mut again(1), &sent[2]),
            Err(FrameError::BadTag { seq: 1 })
        ));
        // Altered: any flipped byte after the length.
        for i in 4..sent[0].len() {
            let mut bad = sent[0].clone();
            bad[i] ^= 1;
            assert!(
                matches!(
                    open(&mut again(0), &bad),
                    Err(FrameError::BadTag { seq: 0 })
                ),
                "byte {i}"
            );
        }
        // Reflected: a frame back to its sender, under the other direction's key.
        let (_, mut mine_opener) = keys().0.split(1024);
        assert!(open(&mut mine_opener, &sent[0]).is_err());
        // Shorter than a tag.
        let mut short = BytesMut::new();
        short.put_u32(3);
        short.extend_from_slice(b"abc");
        assert!(matches!(
            open(&mut again(0), &short),
            Err(FrameError::BadTag { seq: 0 })
        ));
        // Too long: refused on its length alone, and never written.
        let mut long = BytesMut::new();
        long.put_u32(2048);
        assert!(matches!(
            open(&mut again(0), &long),
            Err(FrameError::TooLong { max: 1024 })
        ));
        assert!(matches!(
            sealer.seal_into(&[0; 1025], &mut BytesMut::new()),
            Err(FrameError::TooLong { .. })
        ));
        assert_eq!(sealer.sequence(), 3, "a refused frame is not counted");
    }

    #[test]
    fn untagged_frames_are_length_and_payload_only() {
        let (mine, theirs) = keys();
        let (mut sealer, _) = mine.untagged().split(1024);
        let (_, mut opener) = theirs.untagged().split(1024);
        let sent = frames(&mut sealer, &[b"zero", b""]);
        assert_eq!(&sent[0][..], b"\0\0\0\x04zero");
        assert_eq!(&open(&mut opener, &sent[0]).unwrap().unwrap()[..], b"zero");
        assert!(open(&mut opener, &sent[1]).unwrap().unwrap().is_empty());
        assert_eq!(opener.sequence(), 2);
        let mut long = BytesMut::new();
        long.put_u32(1025);
        assert!(matches!(
            open(&mut opener, &long),
            Err(FrameError::TooLong { max: 1024 })
        ));
    }
}
