//! The one place where messages are turned into bytes and back (bincode 2 through serde).
//!
//! Decoding is bounded: a forged length cannot make the decoder allocate more than
//! [`MAX_MESSAGE_BYTES`].

use crate::error::{Error, Result};
use serde::{de::DeserializeOwned, Serialize};

/// The serde impls of a message type deriving them with `#[serde(remote = "Self")]`:
/// serialize as derived; deserialize as derived, then checked
/// ([`weir_operators::decode::Checked`]), so that a decoded value that breaks the type's
/// invariants is a decode error.
macro_rules! checked_serde {
    ($t:ty) => {
        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                <$t>::serialize(self, s)
            }
        }

        impl<'de> serde::Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let value = <$t>::deserialize(d)?;
                weir_operators::decode::Checked::check(&value).map_err(serde::de::Error::custom)?;
                Ok(value)
            }
        }
    };
}

pub(crate) use checked_serde;

/// Largest message the decoder accepts.
pub const MAX_MESSAGE_BYTES: usize = 256 * 1024 * 1024;

fn config() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<MAX_MESSAGE_BYTES>()
}

/// Encodes a value.
pub fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>> {
    bincode::serde::encode_to_vec(value, config()).map_err(|e| Error::Codec(e.to_string()))
}

/// A bincode writer that appends to a vector.
struct Appender(Vec<u8>);

impl bincode::enc::write::Writer for Appender {
    fn write(&mut self, bytes: &[u8]) -> std::result::Result<(), bincode::error::EncodeError> {
        self.0.extend_from_slice(bytes);
        Ok(())
    }
}

/// Encodes a value into a buffer with room for `size_hint` bytes and [`seal`]'s checksum: a
/// hint near the encoded size spares a large message the buffer's regrowth (a copy, and fresh
/// pages the kernel zeroes, at every doubling).
pub fn encode_sized<T: Serialize>(value: &T, size_hint: usize) -> Result<Vec<u8>> {
    let mut out = Appender(Vec::with_capacity(size_hint + CHECKSUM_BYTES));
    bincode::serde::encode_into_writer(value, &mut out, config())
        .map_err(|e| Error::Codec(e.to_string()))?;
    Ok(out.0)
}

/// Decodes a value, rejecting trailing bytes and oversized lengths.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T> {
    let (value, read) = bincode::serde::decode_from_slice(bytes, config())
        .map_err(|e| Error::Codec(e.to_string()))?;
    if read != bytes.len() {
        return Err(Error::Codec(format!(
            "{} trailing bytes after message",
            bytes.len() - read
        )));
    }
    Ok(value)
}

/// CRC-32 (IEEE), computed many bytes at a time: cheap next to the encoding itself.
fn checksum(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

/// Bytes [`seal`] appends.
const CHECKSUM_BYTES: usize = 4;

/// Appends a checksum so that a corrupted message is recognised on arrival.
pub fn seal(mut bytes: Vec<u8>) -> Vec<u8> {
    let sum = checksum(&bytes);
    bytes.extend_from_slice(&sum.to_le_bytes());
    bytes
}

/// Verifies and strips the checksum added by [`seal`].
pub fn unseal(bytes: &[u8]) -> Result<&[u8]> {
    if bytes.len() < CHECKSUM_BYTES {
        return Err(Error::Codec("message shorter than its checksum".into()));
    }
    let (body, sum) = bytes.split_at(bytes.len() - CHECKSUM_BYTES);
    let mut expected = [0u8; CHECKSUM_BYTES];
    expected.copy_from_slice(sum);
    if checksum(body) != u32::from_le_bytes(expected) {
        return Err(Error::Codec("checksum mismatch".into()));
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sized_encoding_is_the_same_bytes_whatever_the_hint() {
        let v: Vec<(u64, String)> = (0..1000).map(|i| (i, format!("row {i}"))).collect();
        let plain = encode(&v).unwrap();
        for hint in [0, 10, plain.len(), 10 * plain.len()] {
            let sized = encode_sized(&v, hint).unwrap();
            assert_eq!(sized, plain, "hint {hint}");
            assert!(sized.capacity() >= hint + CHECKSUM_BYTES);
        }
    }

    #[test]
    fn round_trip_and_rejects_garbage() {
        let v: Vec<(u32, String)> = vec![(1, "a".into()), (2, "bc".into())];
        let bytes = encode(&v).unwrap();
        assert_eq!(decode::<Vec<(u32, String)>>(&bytes).unwrap(), v);
        // A forged huge length must be refused, not allocated.
        let forged = [0xFCu8, 0xFF, 0xFF, 0xFF, 0x7F];
        assert!(decode::<Vec<u8>>(&forged).is_err());
        let mut trailing = bytes.clone();
        trailing.push(0);
        assert!(decode::<Vec<(u32, String)>>(&trailing).is_err());
        let sealed = seal(bytes.clone());
        assert_eq!(unseal(&sealed).unwrap(), &bytes[..]);
        for i in 0..sealed.len() {
            let mut bad = sealed.clone();
            bad[i] ^= 0x10;
            assert!(unseal(&bad).is_err(), "flipped byte {i} not detected");
        }
    }
}
