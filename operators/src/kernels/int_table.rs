//! A hash table for one 64-bit integer key, as the hash join (key → head of its chain of rows) and the hash
//! aggregation (key → group id) use it: open addressing with linear probing over
//! `(key, value)` slots, placed by a Fibonacci hash of the key.
//!
//! Made for loops over a column: a lookup reads one slot (rarely the next few, in the same
//! cache line), and [`IntTable::prefetch`] lets the loop ask for the slot of a row several
//! rows ahead, so that the cache misses of a large table overlap instead of following one
//! another ([`IntTable::worth_prefetching`]: not for a table that fits the L1 cache).

/// The value no slot holds: it marks an empty slot, and [`IntTable::replace`] returns it for
/// a new key.
pub(crate) const VACANT: u32 = u32::MAX;

pub(crate) use super::prefetch::PREFETCH_AHEAD;
use super::prefetch::{prefetch, worth_prefetching, L1_BYTES};

/// Fibonacci hashing's multiplier (2^64 / φ).
const FIB: u64 = 0x9E37_79B9_7F4A_7C15;

/// Fewest slots a table has.
const MIN_SLOTS: usize = 16;

/// One slot: a key and its value ([`VACANT`] when the slot is empty).
#[derive(Clone, Copy)]
struct Slot {
    key: i64,
    value: u32,
}

const EMPTY: Slot = Slot {
    key: 0,
    value: VACANT,
};

/// Key → `u32` value (never [`VACANT`]), for keys of one 64-bit integer column.
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

    /// The index of `key`'s slot, or of the empty slot where it goes (taken as the key's,
    /// so the caller must give it a value). Grows the table first when it is 7/8 full.
    #[inline(always)]
    fn slot_of(&mut self, key: i64) -> usize {
        if (self.len + 1) * 8 > self.slots.len() * 7 {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut i = self.home(key);
        loop {
            let slot = &mut self.slots[i];
            if slot.value == VACANT {
                slot.key = key;
                self.len += 1;
                return i;
            }
            if slot.key == key {
                return i;
            }
            i = (i + 1) & mask;
        }
    }

    /// Gives `key` the value `value` and returns its previous one ([`VACANT`] for a new
    /// key). `value` must not be [`VACANT`].
    pub fn replace(&mut self, key: i64, value: u32) -> u32 {
        debug_assert!(value != VACANT);
        let i = self.slot_of(key);
        std::mem::replace(&mut self.slots[i].value, value)
    }

    /// The value of `key`, after giving it `value` if it had none. `value` must not be
    /// [`VACANT`].
    #[inline(always)]
    pub fn get_or_insert(&mut self, key: i64, value: u32) -> u32 {
        debug_assert!(value != VACANT);
        let i = self.slot_of(key);
        let slot = &mut self.slots[i];
        if slot.value == VACANT {
            slot.value = value;
        }
        slot.value
    }

    fn grow(&mut self) {
        let old = std::mem::replace(self, IntTable::with_capacity(self.slots.len()));
        for s in old.slots.into_iter().filter(|s| s.value != VACANT) {
            self.replace(s.key, s.value);
        }
    }

    /// The value of `key`.
    #[inline(always)]
    pub fn get(&self, key: i64) -> Option<u32> {
        let mask = self.slots.len() - 1;
        let mut i = self.home(key);
        loop {
            let slot = self.slots[i];
            if slot.value == VACANT {
                return None;
            }
            if slot.key == key {
                return Some(slot.value);
            }
            i = (i + 1) & mask;
        }
    }

    /// Asks the CPU to bring `key`'s home slot into cache (a hint; does nothing elsewhere
    /// than on x86-64).
    #[inline(always)]
    pub fn prefetch(&self, key: i64) {
        prefetch(&self.slots, self.home(key));
    }

    /// Whether a loop over a column gains from [`IntTable::prefetch`]ing this table's slots:
    /// only when the table is larger than a first-level data cache.
    pub fn worth_prefetching(&self) -> bool {
        worth_prefetching(&self.slots, L1_BYTES)
    }

    /// Keys held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// The values of every key, to update in place.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut u32> {
        self.slots
            .iter_mut()
            .filter(|s| s.value != VACANT)
            .map(|s| &mut s.value)
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
    fn only_a_table_larger_than_the_l1_cache_is_worth_prefetching() {
        // 100 keys: 128 slots of 16 bytes. 100,000 keys: 131,072 slots, 2 MiB.
        assert!(!IntTable::with_capacity(100).worth_prefetching());
        assert!(IntTable::with_capacity(100_000).worth_prefetching());
        let mut grown = IntTable::with_capacity(100);
        for k in 0..100_000 {
            grown.replace(k, k as u32);
        }
        assert!(
            grown.worth_prefetching(),
            "a table that grew past the cache"
        );
    }

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
        // Every third key comes again: it gets a new value.
        let again = keys.iter().step_by(3);
        for (row, &k) in keys.iter().chain(again).enumerate() {
            let prev = t.replace(k, row as u32);
            assert_eq!(prev, want.get(&k).copied().unwrap_or(VACANT), "key {k}");
            want.insert(k, row as u32);
        }
        assert_eq!(t.len(), want.len());
        for (&k, &value) in &want {
            assert_eq!(t.get(k), Some(value));
            t.prefetch(k);
        }
        for k in [1i64, 3, -(1 << 40), 12345678] {
            assert_eq!(t.get(k), want.get(&k).copied());
        }
        assert_eq!(t.values_mut().count(), want.len());
        // Existing keys keep their value; a new one takes the given value.
        let k = keys[0];
        assert_eq!(t.get_or_insert(k, 7), want[&k]);
        assert_eq!(t.get_or_insert(424242, 7), 7);
        assert_eq!(t.get(424242), Some(7));
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
