//! What the scalar function kernels share: reading a row's text or date and time, the error
//! for arguments of the wrong types, whether a row's arguments are all valid, and
//! [`TextOut`], the builder of a text result that checks each value's size.

use super::catalogue::ScalarFunc;
use crate::column::{Column, ColumnBuilder, ColumnData};
use crate::error::{Error, Result};
use crate::limits::{check_text_column, check_value, max_value_bytes};
use crate::types::DataType;

/// Text of row `i` of a string column.
#[inline]
pub(super) fn s(c: &Column, i: usize) -> &str {
    c.str_at(i)
}

/// The error for a call of `f` on arguments of types it does not take.
pub(super) fn type_err(f: ScalarFunc, args: &[Column]) -> Error {
    let types: Vec<String> = args.iter().map(|c| c.data_type().to_string()).collect();
    Error::Type(format!(
        "function {} does not take ({})",
        f.name(),
        types.join(", ")
    ))
}

/// Row `i` of a DATE (at midnight) or TIMESTAMP column; `None` for another type or a value
/// out of the calendar's range.
pub(super) fn datetime_at(c: &Column, i: usize) -> Option<chrono::NaiveDateTime> {
    match &c.data {
        ColumnData::Date(v) => {
            Some(crate::temporal::to_date(v[i])?.and_time(chrono::NaiveTime::MIN))
        }
        ColumnData::Timestamp(v) => crate::temporal::to_datetime(v[i]),
        _ => None,
    }
}

/// Whether the template `chars` has `word` at `i`, in any case (`FM`, `MI`, `EEEE` in a
/// numeric template).
pub(super) fn word_at(chars: &[char], i: usize, word: &str) -> bool {
    let mut rest = chars.get(i..).unwrap_or_default().iter();
    word.chars()
        .all(|w| rest.next().is_some_and(|c| c.eq_ignore_ascii_case(&w)))
}

/// Whether every argument is valid at row `i`.
#[inline]
pub(super) fn all_valid(args: &[Column], i: usize) -> bool {
    args.iter().all(|c| c.is_valid(i))
}

/// The text results of a function, built row by row, with the sizes checked: every value
/// against the maximum value size (before it is built, by [`TextOut::fits`]), the column
/// against its 4 GiB bound.
pub(super) struct TextOut {
    func: ScalarFunc,
    out: ColumnBuilder,
    bytes: usize,
    /// The thread's maximum value size, read once.
    max: usize,
}

impl TextOut {
    /// A builder for `n` results of `func`.
    pub(super) fn new(func: ScalarFunc, n: usize) -> Self {
        TextOut {
            func,
            out: ColumnBuilder::new(DataType::Utf8, n),
            bytes: 0,
            max: max_value_bytes(),
        }
    }

    /// Fails when a value of `bytes` would be too large (call it before building a value
    /// that may grow).
    #[inline]
    pub(super) fn fits(&self, bytes: usize) -> Result<()> {
        check_value(self.func.name(), bytes, self.max)
    }

    /// Appends one value.
    #[inline]
    pub(super) fn push(&mut self, v: &str) -> Result<()> {
        self.fits(v.len())?;
        self.bytes += v.len();
        check_text_column(self.func.name(), self.bytes)?;
        self.out.push_str(v);
        Ok(())
    }

    /// Appends a NULL.
    pub(super) fn push_null(&mut self) {
        self.out.push_null();
    }

    /// The column built.
    pub(super) fn finish(self) -> Column {
        self.out.finish()
    }
}
