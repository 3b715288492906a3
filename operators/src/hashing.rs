//! Stable hashes of values: the same on every run and machine, so they can decide where data
//! goes. [`mix64`] (the splitmix64 finalizer) and the hashes of byte strings, floats, 128-bit
//! integers and decimals built on it. Placement ([`crate::placement`]) hashes keys with them
//! to choose a partition, and the kernels' row hashing ([`crate::kernels::hash`]) to build
//! hash tables and split a batch for an exchange.

/// The splitmix64 finalizer: a fast, well-mixed, stable 64-bit hash of a 64-bit word.
#[inline]
pub fn mix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A stable hash of a byte string (8 bytes at a time, then mixed with the length).
#[inline]
pub fn hash_bytes(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9FB2_1C65_1E98_DF25;
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        h = (h ^ w).wrapping_mul(K).rotate_left(29);
    }
    let rem = chunks.remainder();
    if !rem.is_empty() {
        let mut buf = [0u8; 8];
        buf[..rem.len()].copy_from_slice(rem);
        h = (h ^ u64::from_le_bytes(buf))
            .wrapping_mul(K)
            .rotate_left(29);
    }
    mix64(h ^ bytes.len() as u64)
}

/// Stable hash of a 128-bit integer (an unscaled decimal): both halves mixed.
#[inline]
pub fn hash_i128(v: i128) -> u64 {
    mix64((v as u64) ^ mix64((v >> 64) as u64).rotate_left(17))
}

/// Stable hash of a decimal's numeric value, whatever its scale: trailing zeros are dropped
/// first, and a whole number that fits an `i64` hashes as that integer does. So `1.50` at
/// scale 2, `1.5` at scale 1 and the key of a `DECIMAL(6,3)` column holding `1.500` all
/// place a row in the same partition, and `10.00` goes where the integer `10` goes.
#[inline]
pub fn hash_decimal(v: i128, scale: u8) -> u64 {
    let (mut v, mut s) = (v, scale);
    while s > 0 && v % 10 == 0 {
        v /= 10;
        s -= 1;
    }
    match (s, i64::try_from(v)) {
        (0, Ok(i)) => mix64(i as u64),
        _ => hash_i128(v) ^ mix64(u64::from(s)),
    }
}

/// Stable hash of a float: by bits, with `-0.0` folded into `0.0`.
#[inline]
pub fn hash_f64(f: f64) -> u64 {
    let f = if f == 0.0 { 0.0 } else { f };
    mix64(f.to_bits())
}
