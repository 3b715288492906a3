//! Join key filters: what a hash join's finished build side tells the senders of its probe
//! side, so that probe rows that cannot match are dropped before they cross an exchange.
//!
//! A [`KeyFilter`] is a blocked Bloom filter over the build keys' [`hash_rows`] hashes, the
//! same hashes the probe side's hash exchange computes to route each row. The sender so
//! tests a row with the hash it has already computed: one 64-bit word read, picked by the
//! hash's top bits, and three bits of it picked by its low bits. A row whose key is in the
//! build side always passes; about 1% of the others pass too (the filter has 16 bits per
//! build row), and the join drops them as it would have.
//!
//! The filter also names the build keys' types: a sender whose probe keys are of other types
//! (which would hash otherwise) ignores it ([`KeyFilter::applies_to`]), and drops nothing.

use super::hash::hash_rows;
use crate::decode::{checked_serde, Checked};
use crate::{Column, DataType};
use serde::{Deserialize, Serialize};

/// Bits of filter per build row.
const BITS_PER_KEY: usize = 16;
/// The most words a filter has (1 MiB): past 512K build rows, more keys raise the false
/// positives (8 bits per row at 1M rows: about 5% of absent keys pass).
pub const MAX_WORDS: usize = 1 << 17;

/// A Bloom filter of a join's build keys (see the module docs). A decoded one is checked
/// ([`crate::decode`]): a power of two of words, at most [`MAX_WORDS`], and 1 to 64 key types.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct KeyFilter {
    /// The build keys' types, in key order.
    types: Vec<DataType>,
    /// The filter's bits, a power of two of words.
    words: Vec<u64>,
    /// Build rows it was made of.
    keys: u64,
}

checked_serde!(KeyFilter);

impl Checked for KeyFilter {
    fn check(&self) -> std::result::Result<(), String> {
        let n = self.words.len();
        if n == 0 || !n.is_power_of_two() || n > MAX_WORDS {
            return Err(format!(
                "a join key filter of {n} words (a power of two up to {MAX_WORDS} expected)"
            ));
        }
        if self.types.is_empty() || self.types.len() > 64 {
            return Err(format!(
                "a join key filter of {} key types",
                self.types.len()
            ));
        }
        Ok(())
    }
}

impl KeyFilter {
    /// A filter of the hashes of `keys`, the build side's key columns (of `rows` rows).
    pub fn of_columns(keys: &[Column], rows: usize) -> KeyFilter {
        let types = keys.iter().map(Column::data_type).collect();
        let mut hashes = Vec::new();
        if !keys.is_empty() {
            hash_rows(keys, &mut hashes);
        }
        hashes.truncate(rows);
        KeyFilter::of_hashes(types, &hashes)
    }

    /// A filter of keys of `types` whose [`hash_rows`] hashes are `hashes`.
    pub fn of_hashes(types: Vec<DataType>, hashes: &[u64]) -> KeyFilter {
        let words = (hashes.len() * BITS_PER_KEY / 64)
            .next_power_of_two()
            .clamp(1, MAX_WORDS);
        let mut f = KeyFilter {
            types,
            words: vec![0; words],
            keys: hashes.len() as u64,
        };
        for &h in hashes {
            let (w, bits) = f.place(h);
            f.words[w] |= bits;
        }
        f
    }

    /// The word and the bits of hash `h`: the word by the hash's top bits (not the low 32
    /// bits that pick an exchange's target), three bits by its lowest 18.
    #[inline(always)]
    fn place(&self, h: u64) -> (usize, u64) {
        let w = ((h >> 32) as usize) & (self.words.len() - 1);
        let bits = (1u64 << (h & 63)) | (1u64 << ((h >> 6) & 63)) | (1u64 << ((h >> 12) & 63));
        (w, bits)
    }

    /// Whether a key hashing to `h` may be among the build keys (false: it surely is not).
    #[inline(always)]
    pub fn may_contain(&self, h: u64) -> bool {
        let (w, bits) = self.place(h);
        self.words[w] & bits == bits
    }

    /// Whether probe keys of `types` hash as the build keys do, so that the filter applies
    /// to them: the same types, a DECIMAL of the same scale (its unscaled value is hashed).
    pub fn applies_to(&self, types: &[DataType]) -> bool {
        self.types.len() == types.len()
            && self.types.iter().zip(types).all(|(a, b)| match (a, b) {
                (DataType::Decimal { scale: x, .. }, DataType::Decimal { scale: y, .. }) => x == y,
                _ => a == b,
            })
    }

    /// Build rows the filter was made of.
    pub fn keys(&self) -> u64 {
        self.keys
    }

    /// Bytes of its bits.
    pub fn memory_size(&self) -> usize {
        self.words.len() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hashes(keys: &[i64]) -> Vec<u64> {
        let mut out = Vec::new();
        hash_rows(&[Column::from_i64(keys.to_vec())], &mut out);
        out
    }

    /// Every build key passes; of keys not in the build side, about 1% do.
    #[test]
    fn build_keys_pass_and_most_others_do_not() {
        let build: Vec<i64> = (0..10_000).map(|i| i * 3).collect();
        let f = KeyFilter::of_columns(&[Column::from_i64(build.clone())], build.len());
        assert_eq!(f.keys(), 10_000);
        assert!(hashes(&build).iter().all(|&h| f.may_contain(h)));
        let others: Vec<i64> = (0..100_000).map(|i| i * 3 + 1).collect();
        let passed = hashes(&others)
            .iter()
            .filter(|&&h| f.may_contain(h))
            .count();
        assert!(passed < 3_000, "{passed} of 100000 absent keys passed");
        f.check().unwrap();
        assert_eq!(round_trip(&f).unwrap(), f);
    }

    fn round_trip(f: &KeyFilter) -> std::result::Result<KeyFilter, String> {
        let cfg = bincode::config::standard();
        let bytes = bincode::serde::encode_to_vec(f, cfg).unwrap();
        bincode::serde::decode_from_slice(&bytes, cfg)
            .map(|(f, _)| f)
            .map_err(|e| e.to_string())
    }

    /// An empty build side passes nothing.
    #[test]
    fn empty_build_passes_nothing() {
        let f = KeyFilter::of_columns(&[Column::from_i64(vec![])], 0);
        assert!(hashes(&[1, 2, 3]).iter().all(|&h| !f.may_contain(h)));
    }

    /// A filter applies to keys of its types only (DECIMAL by scale).
    #[test]
    fn applies_to_keys_that_hash_alike() {
        let dec = |precision, scale| DataType::Decimal { precision, scale };
        let f = KeyFilter::of_hashes(vec![DataType::Int64, dec(12, 2)], &[]);
        assert!(f.applies_to(&[DataType::Int64, dec(15, 2)]));
        assert!(!f.applies_to(&[DataType::Int64, dec(12, 3)]));
        assert!(!f.applies_to(&[DataType::Float64, dec(12, 2)]));
        assert!(!f.applies_to(&[DataType::Int64]));
    }

    /// A decoded filter of a size no encoder makes is refused.
    #[test]
    fn malformed_filters_are_refused() {
        let mut f = KeyFilter::of_hashes(vec![DataType::Int64], &[1, 2]);
        f.words = vec![0; 3];
        assert!(f.check().is_err());
        assert!(round_trip(&f).unwrap_err().contains("3 words"));
        f.words = Vec::new();
        assert!(f.check().is_err());
        let g = KeyFilter::of_hashes(Vec::new(), &[1]);
        assert!(g.check().is_err());
    }
}
