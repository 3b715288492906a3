//! A packed bit vector, used as a column's validity mask (bit set = value present).

use crate::decode::{checked_serde, Checked};
use serde::{Deserialize, Serialize};

/// A fixed-length packed bit vector. Decoded ones are checked: as many words as the length
/// needs, and no bit set past it ([`crate::decode`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct Bitmap {
    #[serde(with = "crate::wire")]
    words: Vec<u64>,
    len: usize,
}

impl Bitmap {
    /// A bitmap of `len` bits, all set to `value`.
    pub fn new(len: usize, value: bool) -> Self {
        let fill = if value { u64::MAX } else { 0 };
        let mut words = vec![fill; len.div_ceil(64)];
        if value {
            if let Some(last) = words.last_mut() {
                let rem = len % 64;
                if rem != 0 {
                    *last = (1u64 << rem) - 1;
                }
            }
        }
        Bitmap { words, len }
    }

    /// Builds a bitmap from booleans.
    pub fn from_bools(bits: &[bool]) -> Self {
        let mut b = Bitmap::new(bits.len(), false);
        for (i, &v) in bits.iter().enumerate() {
            if v {
                b.set(i, true);
            }
        }
        b
    }

    /// Number of bits.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the bitmap has no bits.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bit `i`.
    #[inline]
    pub fn get(&self, i: usize) -> bool {
        debug_assert!(i < self.len);
        (self.words[i >> 6] >> (i & 63)) & 1 == 1
    }

    /// Sets bit `i` to `v`.
    #[inline]
    pub fn set(&mut self, i: usize, v: bool) {
        debug_assert!(i < self.len);
        let w = &mut self.words[i >> 6];
        if v {
            *w |= 1 << (i & 63);
        } else {
            *w &= !(1 << (i & 63));
        }
    }

    /// Appends one bit.
    #[inline]
    pub fn push(&mut self, v: bool) {
        if self.len.is_multiple_of(64) {
            self.words.push(0);
        }
        self.len += 1;
        self.set(self.len - 1, v);
    }

    /// Makes room for `additional` more bits without over-allocating.
    pub fn reserve_exact(&mut self, additional: usize) {
        let words = (self.len + additional).div_ceil(64);
        self.words
            .reserve_exact(words.saturating_sub(self.words.len()));
    }

    /// Number of set bits.
    pub fn count_ones(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether every bit is set.
    pub fn all_set(&self) -> bool {
        self.count_ones() == self.len
    }

    /// Heap bytes used.
    pub fn memory_size(&self) -> usize {
        self.words.capacity() * 8
    }

    /// Bitwise AND of two bitmaps of the same length.
    pub fn and(&self, other: &Bitmap) -> Bitmap {
        debug_assert_eq!(self.len, other.len);
        Bitmap {
            words: self
                .words
                .iter()
                .zip(&other.words)
                .map(|(a, b)| a & b)
                .collect(),
            len: self.len,
        }
    }
}

checked_serde!(Bitmap);

impl Checked for Bitmap {
    fn check(&self) -> Result<(), String> {
        let words = self.len.div_ceil(64);
        if self.words.len() != words {
            return Err(format!(
                "a bitmap of {} bits holds {} words, not {words}",
                self.len,
                self.words.len()
            ));
        }
        let rem = self.len % 64;
        if rem != 0 && self.words.last().is_some_and(|w| w >> rem != 0) {
            return Err(format!(
                "a bitmap of {} bits has bits set past its length",
                self.len
            ));
        }
        Ok(())
    }
}
