//! Format numbers for what a node's journal writes (its log's records and its checkpoints'
//! metadata), so that a data directory outlives the build that wrote it: the bytes open with
//! [`VERSIONED`] and the format's number, then the value in bincode. A build reads every
//! format up to its own, and the unnumbered bytes the builds before numbering wrote (bincode
//! never begins a value with 255: neither an enum's variant nor a varint length does), and
//! refuses a newer one by name instead of misreading it.
//!
//! ```
//! use weir_runtime::node::versioned::{decode, encode_into};
//! let mut bytes = Vec::new();
//! encode_into(1, &(7u64, "x".to_string()), &mut bytes).unwrap();
//! let back: (u64, String) = decode(1, &bytes).unwrap();
//! assert_eq!(back, (7, "x".to_string()));
//! // A build that reads up to format 0 refuses format 1 by name.
//! assert!(decode::<(u64, String)>(0, &bytes).unwrap_err().contains("format 1"));
//! ```

use serde::de::DeserializeOwned;
use serde::Serialize;

/// The first byte of numbered bytes.
pub const VERSIONED: u8 = 0xFF;

/// Encodes `value` in format `format` into `out` (cleared first).
pub fn encode_into<T: Serialize>(format: u8, value: &T, out: &mut Vec<u8>) -> Result<(), String> {
    out.clear();
    out.extend_from_slice(&[VERSIONED, format]);
    bincode::serde::encode_into_std_write(value, out, bincode::config::standard())
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Decodes `bytes`, written in a format up to `format` (or unnumbered, before formats were);
/// a newer format is an error saying so.
pub fn decode<T: DeserializeOwned>(format: u8, bytes: &[u8]) -> Result<T, String> {
    let body = match bytes {
        [VERSIONED, written, body @ ..] if *written <= format => body,
        [VERSIONED, written, ..] => {
            return Err(format!(
                "written in format {written}, newer than this build of weir reads (up to {format}): run a newer weir"
            ))
        }
        unnumbered => unnumbered,
    };
    bincode::serde::decode_from_slice(body, bincode::config::standard())
        .map(|(v, _)| v)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unnumbered_bytes_of_earlier_builds_still_read() {
        let old = bincode::serde::encode_to_vec(&(3u32, vec![1u8, 2]), bincode::config::standard())
            .unwrap();
        assert_ne!(old[0], VERSIONED);
        let back: (u32, Vec<u8>) = decode(1, &old).unwrap();
        assert_eq!(back, (3, vec![1, 2]));
    }

    #[test]
    fn a_newer_format_is_refused_and_bad_bytes_are_an_error() {
        let mut bytes = Vec::new();
        encode_into(2, &5u64, &mut bytes).unwrap();
        assert_eq!(bytes[..2], [VERSIONED, 2]);
        assert_eq!(decode::<u64>(2, &bytes).unwrap(), 5);
        let e = decode::<u64>(1, &bytes).unwrap_err();
        assert!(e.contains("format 2") && e.contains("up to 1"), "{e}");
        assert!(decode::<u64>(1, &[VERSIONED]).is_err());
        assert!(decode::<String>(1, &[VERSIONED, 1, 9]).is_err());
    }
}
