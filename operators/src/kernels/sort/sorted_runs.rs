//! Sorting an input made of a few sorted streams interleaved piece by piece, as the gather of
//! sorted fragments is (each sender's batches arrive in order, between other senders'
//! batches): the pieces (ascending runs within the input's batches) are chained back into
//! their streams, so that a merge sort merges a few long runs in a pass or two, not a hundred
//! short ones in as many passes as the log of their number.

use std::cmp::Ordering;

/// Most streams regrouped; an input that needs more is left as it is.
pub(crate) const MAX_STREAMS: usize = 16;

/// `items` regrouped stream by stream when they are at most [`MAX_STREAMS`] ascending streams
/// (by `cmp`) interleaved piecewise, where a piece may begin at each index of `piece_starts`
/// (ascending: where the input's batches begin) and wherever the input descends; `None` when
/// they are not. The result is that many ascending runs, one after another, which a stable
/// merge sort then merges in a pass or two (with a total order, as the sort kernel's row
/// number makes `cmp`, the stable order is the only one).
pub(crate) fn regroup<T: Copy>(
    items: &[T],
    piece_starts: &[usize],
    cmp: impl Fn(&T, &T) -> Ordering,
) -> Option<Vec<T>> {
    let streams = chain_pieces(items, piece_starts, &cmp)?;
    let mut out = Vec::with_capacity(items.len());
    for (start, end) in streams.into_iter().flatten() {
        out.extend_from_slice(&items[start..end]);
    }
    Some(out)
}

/// The input's pieces (ascending runs, cut at `piece_starts` too), each appended to the
/// stream whose last item is the greatest not above the piece's first (a new stream when none
/// is); `None` when that makes more than [`MAX_STREAMS`] streams.
fn chain_pieces<T>(
    items: &[T],
    piece_starts: &[usize],
    cmp: &impl Fn(&T, &T) -> Ordering,
) -> Option<Vec<Vec<(usize, usize)>>> {
    let mut streams: Vec<Vec<(usize, usize)>> = Vec::new();
    // The index of each stream's last item.
    let mut tails: Vec<usize> = Vec::new();
    let mut cuts = piece_starts.iter().copied().peekable();
    let mut start = 0;
    for end in 1..=items.len() {
        while cuts.next_if(|&c| c < end).is_some() {}
        let cut = cuts.next_if_eq(&end).is_some();
        if !cut && end < items.len() && cmp(&items[end - 1], &items[end]) != Ordering::Greater {
            continue;
        }
        let first = &items[start];
        let mut best: Option<usize> = None;
        for (s, &tail) in tails.iter().enumerate() {
            let fits = cmp(&items[tail], first) != Ordering::Greater;
            if fits && best.is_none_or(|b| cmp(&items[tails[b]], &items[tail]) != Ordering::Greater)
            {
                best = Some(s);
            }
        }
        match best {
            Some(s) => {
                streams[s].push((start, end));
                tails[s] = end - 1;
            }
            None if streams.len() == MAX_STREAMS => return None,
            None => {
                streams.push(vec![(start, end)]);
                tails.push(end - 1);
            }
        }
        start = end;
    }
    Some(streams)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{RngExt, SeedableRng};

    /// `k` ascending streams of (key, stream) pairs cut into pieces of 1..=`piece` items and
    /// interleaved in random order, the pieces of each stream in order; and where each piece
    /// begins.
    fn interleaved(
        k: usize,
        len: usize,
        piece: usize,
        keys: i64,
        seed: u64,
    ) -> (Vec<(i64, usize)>, Vec<usize>) {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut streams: Vec<Vec<(i64, usize)>> = (0..k)
            .map(|s| {
                let mut v: Vec<(i64, usize)> =
                    (0..len).map(|_| (rng.random_range(0..keys), s)).collect();
                v.sort_by_key(|x| x.0);
                v.reverse();
                v
            })
            .collect();
        let mut out = Vec::new();
        let mut starts = Vec::new();
        while streams.iter().any(|s| !s.is_empty()) {
            let s = rng.random_range(0..k);
            if !streams[s].is_empty() {
                starts.push(out.len());
            }
            for _ in 0..rng.random_range(1..=piece) {
                if let Some(x) = streams[s].pop() {
                    out.push(x);
                }
            }
        }
        (out, starts)
    }

    #[test]
    fn regroups_interleaved_streams_into_as_many_runs() {
        for (seed, k) in (0..40u64).zip([1, 2, 3, 5, 8, 16].into_iter().cycle()) {
            // Few distinct keys: many ties, which must keep their input order.
            let keys = if seed % 2 == 0 { 5 } else { 1_000_000 };
            let (items, starts) = interleaved(k, 300, 50, keys, seed);
            let by_key = |a: &(i64, usize), b: &(i64, usize)| a.0.cmp(&b.0);
            let mut expected = items.clone();
            expected.sort_by(by_key);
            // Keys then input position: the total order the sort kernel compares by.
            let total = |a: &(usize, (i64, usize)), b: &(usize, (i64, usize))| {
                a.1 .0.cmp(&b.1 .0).then(a.0.cmp(&b.0))
            };
            let numbered: Vec<(usize, (i64, usize))> = items.iter().copied().enumerate().collect();
            let mut regrouped = regroup(&numbered, &starts, total).expect("few enough streams");
            let descents = regrouped
                .windows(2)
                .filter(|w| total(&w[0], &w[1]) == Ordering::Greater)
                .count();
            assert!(
                descents < k,
                "seed {seed}: {k} streams, {descents} descents"
            );
            regrouped.sort_by(total);
            let sorted: Vec<(i64, usize)> = regrouped.into_iter().map(|(_, x)| x).collect();
            assert_eq!(sorted, expected, "seed {seed}, {k} streams");
            // Without the batch boundaries, pieces of two streams that happen to follow in
            // order read as one, and may need more streams; nothing is lost or added.
            if let Some(mut regrouped) = regroup(&numbered, &[], total) {
                let mut all = numbered.clone();
                all.sort_by(total);
                regrouped.sort_by(total);
                assert_eq!(regrouped, all, "seed {seed}, {k} streams, no boundaries");
            }
        }
    }

    #[test]
    fn declines_input_of_more_streams_than_it_regroups() {
        let descending: Vec<i64> = (0..MAX_STREAMS as i64 + 1).rev().collect();
        assert_eq!(regroup(&descending, &[], i64::cmp), None);
        // One item per stream: as many streams as it takes, each already in place.
        let one_less: Vec<i64> = (0..MAX_STREAMS as i64).rev().collect();
        assert_eq!(regroup(&one_less, &[], i64::cmp), Some(one_less.clone()));
        assert_eq!(regroup::<i64>(&[], &[0], i64::cmp), Some(Vec::new()));
    }
}
