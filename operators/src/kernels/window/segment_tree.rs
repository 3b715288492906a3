//! A segment tree over the sorted rows: built bottom up in O(n), it answers a combine
//! (minimum, maximum, sum) over any range of rows in O(log n), so a sliding MIN or MAX, or a
//! floating-point SUM whose frame start moves, costs O(n log n) over `n` rows whatever the
//! frames' sizes, where recomputing each frame would cost O(n · frame).

/// A segment tree of `T`s combined by a function given to each call (the same one each
/// time; it must be associative and commutative up to the answers it is used for).
#[derive(Debug)]
pub(crate) struct SegmentTree<T> {
    n: usize,
    /// Node `k`'s children are `2k` and `2k + 1`; the leaves are `n..2n`.
    nodes: Vec<T>,
    identity: T,
}

impl<T: Copy> SegmentTree<T> {
    /// A tree over `leaves`; `identity` combines with anything to give it back.
    pub(crate) fn build(leaves: &[T], identity: T, combine: impl Fn(T, T) -> T) -> Self {
        let n = leaves.len();
        let mut nodes = vec![identity; 2 * n];
        nodes[n..].copy_from_slice(leaves);
        for k in (1..n).rev() {
            nodes[k] = combine(nodes[2 * k], nodes[2 * k + 1]);
        }
        SegmentTree { n, nodes, identity }
    }

    /// The leaves `start..end` combined (`identity` when the range is empty).
    #[inline]
    pub(crate) fn query(&self, start: usize, end: usize, combine: impl Fn(T, T) -> T) -> T {
        let (mut l, mut r) = (start + self.n, end.min(self.n) + self.n);
        let (mut left, mut right) = (self.identity, self.identity);
        while l < r {
            if l & 1 == 1 {
                left = combine(left, self.nodes[l]);
                l += 1;
            }
            if r & 1 == 1 {
                r -= 1;
                right = combine(self.nodes[r], right);
            }
            l >>= 1;
            r >>= 1;
        }
        combine(left, right)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{RngExt, SeedableRng};

    #[test]
    fn ranges_combine_as_a_scan_would() {
        let mut rng = StdRng::seed_from_u64(11);
        for n in [0usize, 1, 2, 3, 7, 64, 100] {
            let v: Vec<i64> = (0..n).map(|_| rng.random_range(-50..50)).collect();
            let min = SegmentTree::build(&v, i64::MAX, i64::min);
            let sum = SegmentTree::build(&v, 0, |a, b| a + b);
            for s in 0..=n {
                for e in s..=n {
                    let want_min = v[s..e].iter().copied().min().unwrap_or(i64::MAX);
                    let want_sum: i64 = v[s..e].iter().sum();
                    assert_eq!(min.query(s, e, i64::min), want_min, "{n} {s}..{e}");
                    assert_eq!(sum.query(s, e, |a, b| a + b), want_sum, "{n} {s}..{e}");
                }
            }
        }
    }
}
