//! How a record sits in a file: its length, a CRC-32 of its bytes, then the bytes. A record
//! read back is whole and unchanged, or recognised as torn or corrupt: never half applied.

/// Bytes before a record's payload: its length and its checksum, each 4 bytes little-endian.
pub const HEADER_BYTES: usize = 8;

/// Largest payload a record may have (a length past it is corruption).
pub const MAX_RECORD_BYTES: usize = 1 << 31;

/// Appends `payload` framed as a record to `out`.
pub fn encode(payload: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    out.extend_from_slice(payload);
}

/// What is at an offset of a file of records.
#[derive(Debug, PartialEq)]
pub enum Read<'a> {
    /// A whole record: its payload, and the offset after it.
    Record(&'a [u8], usize),
    /// The file ends here.
    End,
    /// Not a whole record: the file ends inside it, or its checksum or length is wrong.
    Bad(&'static str),
}

/// The record at `offset` of `bytes`.
pub fn decode(bytes: &[u8], offset: usize) -> Read<'_> {
    let rest = &bytes[offset.min(bytes.len())..];
    if rest.is_empty() {
        return Read::End;
    }
    if rest.len() < HEADER_BYTES {
        return Read::Bad("the file ends inside a record's header");
    }
    let len = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
    let sum = u32::from_le_bytes([rest[4], rest[5], rest[6], rest[7]]);
    if len > MAX_RECORD_BYTES {
        return Read::Bad("a record's length is out of range");
    }
    let Some(payload) = rest.get(HEADER_BYTES..HEADER_BYTES + len) else {
        return Read::Bad("the file ends inside a record");
    };
    if crc32fast::hash(payload) != sum {
        return Read::Bad("a record's checksum does not match");
    }
    Read::Record(payload, offset + HEADER_BYTES + len)
}

/// Whether a whole record starts anywhere after `offset` in `bytes`: a bad record followed by
/// good ones is corruption, not a torn tail.
pub fn any_record_after(bytes: &[u8], offset: usize) -> bool {
    (offset + 1..bytes.len()).any(|o| match decode(bytes, o) {
        // A zero-length record matches by chance (the checksum of nothing is 0): only a
        // record with a payload counts.
        Read::Record(payload, _) => !payload.is_empty(),
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_read_back_and_every_damage_is_recognised() {
        let mut bytes = Vec::new();
        encode(b"first", &mut bytes);
        encode(b"second record", &mut bytes);
        let Read::Record(a, next) = decode(&bytes, 0) else {
            panic!("a record")
        };
        assert_eq!(a, b"first");
        let Read::Record(b, end) = decode(&bytes, next) else {
            panic!("a record")
        };
        assert_eq!(b, b"second record");
        assert_eq!(decode(&bytes, end), Read::End);
        // Every cut inside the second record is a torn record, never a short one.
        for cut in next + 1..end {
            assert!(
                matches!(decode(&bytes[..cut], next), Read::Bad(_)),
                "cut {cut}"
            );
        }
        // Every flipped bit is noticed.
        for i in next..end {
            let mut bad = bytes.clone();
            bad[i] ^= 0x04;
            assert!(
                !matches!(decode(&bad, next), Read::Record(p, _) if p == b"second record"),
                "flip at {i}"
            );
        }
        // A damaged first record with a good one after it is corruption, not a tail.
        let mut bad = bytes.clone();
        bad[6] ^= 1;
        assert!(matches!(decode(&bad, 0), Read::Bad(_)));
        assert!(any_record_after(&bad, 0));
        assert!(!any_record_after(&bytes[..end - 1], next));
    }
}
