//! A least-significant-digit radix sort of the sort kernel's inline keys: `(first key, second
//! key, row)` tuples in row order, sorted by both keys. Each pass is stable, so rows with equal
//! keys keep their order, which is the order the tuples' row numbers give; bytes that every
//! tuple shares are skipped, so keys spanning a small range (most of them) take a few passes.

/// Below this many tuples a comparison sort is as fast.
pub(crate) const MIN_ROWS: usize = 512;

/// Sorts `pairs`, whose rows (`.2`) ascend, by `(.0, .1)`: the order `sort_unstable` would give.
pub(crate) fn sort_keyed_rows(pairs: &mut Vec<(u64, u64, u32)>) {
    debug_assert!(pairs.windows(2).all(|w| w[0].2 < w[1].2));
    // Digit d (0..16) is byte d % 8 of the second key for d < 8, else of the first key.
    let byte = |t: &(u64, u64, u32), d: usize| {
        let key = if d < 8 { t.1 } else { t.0 };
        (key >> ((d % 8) * 8)) as u8 as usize
    };
    // The bits that differ between some tuples, per key: other digits need no pass.
    let (mut any0, mut all0, mut any1, mut all1) = (0u64, u64::MAX, 0u64, u64::MAX);
    for t in pairs.iter() {
        any0 |= t.0;
        all0 &= t.0;
        any1 |= t.1;
        all1 &= t.1;
    }
    let varying = [any1 ^ all1, any0 ^ all0];
    let n = pairs.len();
    let mut from = std::mem::take(pairs);
    let mut to: Vec<(u64, u64, u32)> = Vec::new();
    for d in 0..16 {
        if (varying[d / 8] >> ((d % 8) * 8)) & 0xff == 0 {
            continue;
        }
        let mut next = [0usize; 256];
        for t in &from {
            next[byte(t, d)] += 1;
        }
        let mut sum = 0;
        for slot in next.iter_mut() {
            let count = *slot;
            *slot = sum;
            sum += count;
        }
        to.resize(n, (0, 0, 0));
        for t in &from {
            let b = byte(t, d);
            to[next[b]] = *t;
            next[b] += 1;
        }
        std::mem::swap(&mut from, &mut to);
    }
    *pairs = from;
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{RngExt, SeedableRng};

    #[test]
    fn sorts_as_a_comparison_sort_would() {
        let mut rng = StdRng::seed_from_u64(3);
        // Narrow and wide key ranges, ties, a constant second key and a varying one.
        for (range, second) in [
            (10u64, 0u64),
            (100_000, 0),
            (u64::MAX, 0),
            (50, 7),
            (1000, u64::MAX),
        ] {
            let mut pairs: Vec<(u64, u64, u32)> = (0..5000u32)
                .map(|row| {
                    let k = if range == u64::MAX {
                        rng.random()
                    } else {
                        rng.random_range(0..range)
                    };
                    let k2 = if second == 0 {
                        0
                    } else {
                        rng.random_range(0..=second)
                    };
                    (k, k2, row)
                })
                .collect();
            let mut want = pairs.clone();
            want.sort_unstable();
            sort_keyed_rows(&mut pairs);
            assert_eq!(pairs, want, "keys below {range}, second below {second}");
        }
        let mut empty = Vec::new();
        sort_keyed_rows(&mut empty);
        assert!(empty.is_empty());
    }
}
