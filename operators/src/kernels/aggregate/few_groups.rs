//! Sums over few groups. When a batch's rows fall into a handful of groups (TPC-H Q1 has
//! four), consecutive rows often add to the same accumulator, and each addition waits for
//! the store of the one before it. Here the rows are spread over [`LANES`] partial sums per
//! group, in registers-sized arrays on the stack, so that four additions run side by side;
//! the lanes are added into the accumulators at the end of the batch.

use crate::error::{Error, Result};

/// The most groups the lanes are kept for.
pub(super) const FEW: usize = 16;

/// Partial sums per group, side by side.
const LANES: usize = 4;

/// Adds `values[i]` to `sum[ids[i]]` for every row (none NULL) and marks the groups that
/// got a row in `seen` (when given) or counts them in `count` (when given). `sum` has at most
/// [`FEW`] groups. An overflow of DECIMAL's 128 bits is the error `what` names.
pub(super) fn add_i128(
    sum: &mut [i128],
    mut seen: Option<&mut [bool]>,
    mut count: Option<&mut [i64]>,
    ids: &[u32],
    values: &[i128],
    what: &str,
) -> Result<()> {
    debug_assert!(sum.len() <= FEW && ids.len() == values.len());
    let mut lanes = [[0i128; FEW]; LANES];
    let mut rows = [[0i64; FEW]; LANES];
    let mut overflow = false;
    let mut add = |lane: usize, g: u32, v: i128| {
        // Group ids are below `sum.len()`, which is at most FEW: masked to stay in bounds
        // without a check per row.
        let g = g as usize % FEW;
        let (s, o) = lanes[lane][g].overflowing_add(v);
        lanes[lane][g] = s;
        rows[lane][g] += 1;
        overflow |= o;
    };
    let mut id_quads = ids.chunks_exact(LANES);
    let mut value_quads = values.chunks_exact(LANES);
    for (g, v) in (&mut id_quads).zip(&mut value_quads) {
        for lane in 0..LANES {
            add(lane, g[lane], v[lane]);
        }
    }
    for (&g, &v) in id_quads.remainder().iter().zip(value_quads.remainder()) {
        add(0, g, v);
    }
    let overflowed = || Error::Overflow(format!("DECIMAL overflow in {what}"));
    if overflow {
        return Err(overflowed());
    }
    for (g, total) in sum.iter_mut().enumerate() {
        let n: i64 = rows.iter().map(|r| r[g]).sum();
        if n == 0 {
            continue;
        }
        for lane in &lanes {
            *total = total.checked_add(lane[g]).ok_or_else(overflowed)?;
        }
        if let Some(seen) = seen.as_deref_mut() {
            seen[g] = true;
        }
        if let Some(count) = count.as_deref_mut() {
            count[g] += n;
        }
    }
    Ok(())
}

/// Adds to `count[g]` the rows of `ids` in group `g` (`COUNT(*)`), for at most [`FEW`]
/// groups, through lanes as [`add_i128`].
pub(super) fn count_rows(count: &mut [i64], ids: &[u32]) {
    debug_assert!(count.len() <= FEW);
    let mut lanes = [[0i64; FEW]; LANES];
    let mut quads = ids.chunks_exact(LANES);
    for g in &mut quads {
        for lane in 0..LANES {
            lanes[lane][g[lane] as usize % FEW] += 1;
        }
    }
    for &g in quads.remainder() {
        lanes[0][g as usize % FEW] += 1;
    }
    for (g, total) in count.iter_mut().enumerate() {
        *total += lanes.iter().map(|lane| lane[g]).sum::<i64>();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_add_up_to_the_row_by_row_sums() {
        let ids: Vec<u32> = (0..1001u32).map(|i| (i * 7 + i / 3) % 5).collect();
        let values: Vec<i128> = (0..1001i128).map(|i| i * 13 - 4000).collect();
        let mut expected = [0i128; 6];
        let mut counts = vec![0i64; 6];
        for (&g, &v) in ids.iter().zip(&values) {
            expected[g as usize] += v;
            counts[g as usize] += 1;
        }
        let mut sum = vec![1i128; 6];
        let mut count = vec![0i64; 6];
        let mut seen = vec![false; 6];
        add_i128(&mut sum, Some(&mut seen), None, &ids, &values, "SUM").unwrap();
        add_i128(&mut [0; 6], None, Some(&mut count), &ids, &values, "AVG").unwrap();
        let with_start: Vec<i128> = expected.iter().map(|s| s + 1).collect();
        assert_eq!(sum, with_start);
        assert_eq!(count, counts);
        // Group 5 got no row: not seen, its sum untouched.
        assert_eq!(seen, [true, true, true, true, true, false]);
    }

    #[test]
    fn rows_are_counted_by_group() {
        let ids: Vec<u32> = (0..103u32).map(|i| i % 3).collect();
        let mut count = vec![5, 0, 0, 0];
        count_rows(&mut count, &ids);
        assert_eq!(count, [5 + 35, 34, 34, 0]);
    }

    #[test]
    fn an_overflow_is_an_error() {
        let mut sum = vec![i128::MAX - 1];
        let err = add_i128(&mut sum, None, None, &[0, 0], &[1, 1], "SUM").unwrap_err();
        assert!(err.to_string().contains("DECIMAL overflow in SUM"), "{err}");
    }
}
