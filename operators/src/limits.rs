//! How large one value may grow: the bound on text that SQL functions make.
//!
//! A function that can make text longer than its input (`replace`, `repeat`, `lpad`, `rpad`,
//! `concat`, `||`, `lower`, `upper`) computes the size of each result before it builds it and
//! fails with [`Error::ValueTooLarge`] past the maximum value size, so one short statement
//! (`replace` nested five times on a 100-character literal asks for about 10^12 bytes) cannot
//! take the memory of its host, in a query or while the planner folds constants on the
//! caller's thread. A text column is also bounded by its `u32` offsets: a result column past
//! 4 GiB is the same error, never an offset that wraps.
//!
//! The maximum is a setting of the thread that evaluates
//! ([`DEFAULT_MAX_VALUE_BYTES`] unless set): a cluster sets its own on its actor threads and
//! around the planning and evaluation it does on a caller's thread ([`with_max_value_bytes`]).

use crate::error::{Error, Result};
use std::cell::Cell;

/// The default largest value a function may make: 64 MiB.
pub const DEFAULT_MAX_VALUE_BYTES: usize = 64 << 20;

/// The most bytes of text one column can hold (its offsets are `u32`).
pub const MAX_TEXT_COLUMN_BYTES: usize = u32::MAX as usize;

thread_local! {
    /// This thread's largest value.
    static MAX_VALUE_BYTES: Cell<usize> = const { Cell::new(DEFAULT_MAX_VALUE_BYTES) };
}

/// The largest value, in bytes, a function evaluated on this thread may make.
pub fn max_value_bytes() -> usize {
    MAX_VALUE_BYTES.with(Cell::get)
}

/// Sets the largest value functions evaluated on this thread may make, from now on (an actor
/// thread of a cluster sets its cluster's once).
pub fn set_max_value_bytes(bytes: usize) {
    MAX_VALUE_BYTES.with(|m| m.set(bytes));
}

/// Runs `f` with the largest value on this thread set to `bytes`, and sets it back after.
///
/// ```
/// use weir_operators::limits::{max_value_bytes, with_max_value_bytes, DEFAULT_MAX_VALUE_BYTES};
/// assert_eq!(with_max_value_bytes(10, max_value_bytes), 10);
/// assert_eq!(max_value_bytes(), DEFAULT_MAX_VALUE_BYTES);
/// ```
pub fn with_max_value_bytes<R>(bytes: usize, f: impl FnOnce() -> R) -> R {
    /// Puts the previous maximum back, also when `f` unwinds.
    struct Restore(usize);
    impl Drop for Restore {
        fn drop(&mut self) {
            set_max_value_bytes(self.0);
        }
    }
    let _restore = Restore(max_value_bytes());
    set_max_value_bytes(bytes);
    f()
}

/// Fails with [`Error::ValueTooLarge`] when a value of `bytes` made by `func` is over `max`
/// (the thread's maximum, read once per column by the caller).
#[inline]
pub(crate) fn check_value(func: &str, bytes: usize, max: usize) -> Result<()> {
    if bytes > max {
        return Err(Error::ValueTooLarge(format!(
            "{func} would make a value of {bytes} bytes, more than the maximum value size of {max} bytes"
        )));
    }
    Ok(())
}

/// Fails with [`Error::ValueTooLarge`] when a text column made by `func` would hold more than
/// [`MAX_TEXT_COLUMN_BYTES`].
#[inline]
pub(crate) fn check_text_column(func: &str, bytes: usize) -> Result<()> {
    if bytes > MAX_TEXT_COLUMN_BYTES {
        return Err(Error::ValueTooLarge(format!(
            "{func} would make a text column of {bytes} bytes, more than {MAX_TEXT_COLUMN_BYTES} (4 GiB) in one batch"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_maximum_is_the_threads_and_scoped_settings_come_back() {
        assert_eq!(max_value_bytes(), DEFAULT_MAX_VALUE_BYTES);
        let max = max_value_bytes();
        assert!(check_value("f", DEFAULT_MAX_VALUE_BYTES, max).is_ok());
        let e = check_value("f", DEFAULT_MAX_VALUE_BYTES + 1, max).unwrap_err();
        assert!(matches!(e, Error::ValueTooLarge(_)), "{e}");
        assert!(e.to_string().contains("maximum value size"), "{e}");
        with_max_value_bytes(4, || {
            assert!(check_value("f", 5, max_value_bytes()).is_err());
            // Another thread keeps its own.
            std::thread::spawn(|| assert_eq!(max_value_bytes(), DEFAULT_MAX_VALUE_BYTES))
                .join()
                .unwrap();
        });
        assert_eq!(max_value_bytes(), DEFAULT_MAX_VALUE_BYTES);
        assert!(check_text_column("f", MAX_TEXT_COLUMN_BYTES + 1).is_err());
    }
}
