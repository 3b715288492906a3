//! Cache prefetch hints for loops that touch a large array at random places (a hash table's
//! slots, the accumulators of a grouped aggregation): asking for the element a row several
//! rows ahead will touch lets the cache misses of those rows overlap instead of following one
//! another.

/// How many rows ahead a loop over a column should prefetch.
pub(crate) const PREFETCH_AHEAD: usize = 16;

/// Bytes of a first-level data cache.
pub(crate) const L1_BYTES: usize = 32 * 1024;

/// Bytes of a second-level data cache (512 KiB per core on the machines weir is measured
/// on): a loop whose random accesses stay in it loses more to the prefetch instructions than
/// it gains (measured on the grouped aggregation's accumulators).
pub(crate) const L2_BYTES: usize = 512 * 1024;

/// Asks the CPU to bring `slice[i]` into the cache (a hint: does nothing for an index out of
/// bounds, nor elsewhere than on x86-64).
#[inline(always)]
pub(crate) fn prefetch<T>(slice: &[T], i: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(element) = slice.get(i) {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let p: *const T = element;
        // SAFETY: a prefetch is a hint that never faults; the pointer is in bounds anyway.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (slice, i);
}

/// Whether a loop touching `slice` at random places gains from [`prefetch`]: only when it is
/// larger than `cache` bytes (a table no larger stays in that cache, and prefetching its
/// elements only costs instructions).
pub(crate) fn worth_prefetching<T>(slice: &[T], cache: usize) -> bool {
    std::mem::size_of_val(slice) > cache
}

/// [`prefetch`]es the element of `slice` that row `i +` [`PREFETCH_AHEAD`] will touch, where
/// `ids` gives each row its index in `slice` (a grouped aggregation's group ids).
#[inline(always)]
pub(crate) fn prefetch_ahead<T>(slice: &[T], ids: &[u32], i: usize) {
    if let Some(&ahead) = ids.get(i + PREFETCH_AHEAD) {
        prefetch(slice, ahead as usize);
    }
}
