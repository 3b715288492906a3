//! The hash join's table for one 64-bit integer key: open addressing with linear probing
//! over `(key, head)` slots, placed by a Fibonacci hash of the key.
//!
//! Made for the probe loop: a lookup reads one slot (rarely the next few, in the same cache
//! line), and [`IntTable::prefetch`] lets the loop ask for the slot of a row several rows
//! ahead, so that the cache misses of a large build side overlap instead of following one
//! another.

use super::index::NONE;

/// Fibonacci hashing's multiplier (2^64 / φ).
const FIB: u64 = 0x9E37_79B9_7F4A_7C15;

/// Fewest slots a table has.
const MIN_SLOTS: usize = 16;

/// One slot: a key and the head of its chain ([`NONE`] when the slot is empty).
#[derive(Clone, Copy)]
struct Slot {
    key: i64,
    head: u32,
}

const EMPTY: Slot = Slot { key: 0, head: NONE };

/// Key → chain head, for keys of one 64-bit integer column.
pub(crate) struct IntTable {
    slots: Vec<Slot>,
    /// `64 - log2(slots.len())`: the hash's top bits pick the home slot.
    shift: u32,
    len: usize,
}

impl IntTable {
    /// Slots for `n` keys: a power of two, at most 7/8 full.
    fn slots_for(n: usize) -> usize {
        (n.saturating_mul(8) / 7 + 1)
            .next_power_of_two()
            .max(MIN_SLOTS)
    }

    /// Heap bytes of a table made for `n` keys.
    pub fn bytes_for(n: usize) -> usize {
        Self::slots_for(n) * std::mem::size_of::<Slot>()
    }

    /// An empty table with room for `n` keys.
    pub fn with_capacity(n: usize) -> Self {
        let slots = Self::slots_for(n);
        IntTable {
            slots: vec![EMPTY; slots],
            shift: 64 - slots.trailing_zeros(),
            len: 0,
        }
    }

    #[inline(always)]
    fn home(&self, key: i64) -> usize {
        ((key as u64).wrapping_mul(FIB) >> self.shift) as usize
    }

    /// Makes `row` the head of `key`'s chain and returns the previous head ([`NONE`] for a new
    /// key). `row` must not be [`NONE`].
    pub fn push_front(&mut self, key: i64, row: u32) -> u32 {
        debug_assert!(row != NONE);
        // Never full: there are more slots than keys (see `slots_for`); grow if a caller
        // inserts more keys than it asked room for.
        if (self.len + 1) * 8 > self.slots.len() * 7 {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut i = self.home(key);
        loop {
            let slot = &mut self.slots[i];
            if slot.head == NONE {
                *slot = Slot { key, head: row };
                self.len += 1;
                return NONE;
            }
            if slot.key == key {
                return std::mem::replace(&mut slot.head, row);
            }
            i = (i + 1) & mask;
        }
    }

    fn grow(&mut self) {
        let old = std::mem::replace(self, IntTable::with_capacity(self.slots.len()));
        for s in old.slots.into_iter().filter(|s| s.head != NONE) {
            self.push_front(s.key, s.head);
        }
    }

    /// The head of `key`'s chain.
    #[inline(always)]
    pub fn get(&self, key: i64) -> Option<u32> {
        let mask = self.slots.len() - 1;
        let mut i = self.home(key);
        loop {
            let slot = self.slots[i];
            if slot.head == NONE {
                return None;
            }
            if slot.key == key {
                return Some(slot.head);
            }
            i = (i + 1) & mask;
        }
    }

    /// Asks the CPU to bring `key`'s home slot into cache (a hint; does nothing elsewhere
    /// than on x86-64).
    #[inline(always)]
    pub fn prefetch(&self, key: i64) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let slot: *const Slot = &self.slots[self.home(key)];
            // SAFETY: a prefetch is a hint that never faults; the pointer is in bounds.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(slot.cast::<i8>()) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = key;
    }

    /// Keys held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// The heads of every key, to update in place.
    pub fn heads_mut(&mut self) -> impl Iterator<Item = &mut u32> {
        self.slots
            .iter_mut()
            .filter(|s| s.head != NONE)
            .map(|s| &mut s.head)
    }

    /// Heap bytes held.
    pub fn memory_size(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<Slot>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn chains_every_key_and_finds_only_those() {
        // Keys with strides and extremes, so that clusters and wrap-around happen.
        let keys: Vec<i64> = (0..5000i64)
            .map(|i| match i % 4 {
                0 => i << 20,
                1 => -i,
                2 => i64::MIN + i,
                _ => i64::MAX - i / 2,
            })
            .collect();
        let mut t = IntTable::with_capacity(100);
        let mut want: HashMap<i64, u32> = HashMap::new();
        // Every third key comes again: its chain gets a new head.
        let again = keys.iter().step_by(3);
        for (row, &k) in keys.iter().chain(again).enumerate() {
            let prev = t.push_front(k, row as u32);
            assert_eq!(prev, want.get(&k).copied().unwrap_or(NONE), "key {k}");
            want.insert(k, row as u32);
        }
        assert_eq!(t.len(), want.len());
        for (&k, &head) in &want {
            assert_eq!(t.get(k), Some(head));
            t.prefetch(k);
        }
        for k in [1i64, 3, -(1 << 40), 12345678] {
            assert_eq!(t.get(k), want.get(&k).copied());
        }
        assert_eq!(t.heads_mut().count(), want.len());
        assert!(t.memory_size() >= IntTable::bytes_for(t.len()));
    }

    #[test]
    fn empty_table_finds_nothing() {
        let t = IntTable::with_capacity(0);
        assert_eq!(t.get(0), None);
        assert_eq!(t.get(i64::MIN), None);
        assert_eq!(
            IntTable::bytes_for(0),
            MIN_SLOTS * std::mem::size_of::<Slot>()
        );
    }
}
