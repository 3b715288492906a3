//! Typed column vectors with an optional validity bitmap, and a builder for them.

use crate::bitmap::Bitmap;
use crate::decode::{checked_serde, Checked};
use crate::error::{Error, Result};
use crate::types::DataType;
use crate::value::Value;
use crate::{decimal, temporal};
use serde::{Deserialize, Serialize};

/// The values of a column, one typed vector per type. Slots of NULL rows hold a default value.
/// Decoded ones are checked ([`crate::decode`]): text offsets start at 0, never decrease and
/// end at the byte length, on character boundaries of valid UTF-8; a decimal's precision is
/// 1 to 38 and its scale at most the precision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub enum ColumnData {
    /// 64-bit integers.
    Int64(#[serde(with = "crate::wire")] Vec<i64>),
    /// 64-bit floats.
    Float64(#[serde(with = "crate::wire")] Vec<f64>),
    /// UTF-8 strings: row `i` is `bytes[offsets[i]..offsets[i + 1]]`; `offsets.len() == rows + 1`.
    Utf8 {
        /// Start offset of every row, plus the end of the last one.
        #[serde(with = "crate::wire")]
        offsets: Vec<u32>,
        /// The concatenated string bytes.
        #[serde(with = "crate::wire::bytes")]
        bytes: Vec<u8>,
    },
    /// Booleans, one byte each.
    Boolean(#[serde(with = "crate::wire::bools")] Vec<bool>),
    /// Exact decimals: unscaled values of a `DECIMAL(precision, scale)`.
    Decimal {
        /// The unscaled values (`1250` at scale 2 is `12.50`).
        #[serde(with = "crate::wire")]
        values: Vec<i128>,
        /// The type's precision.
        precision: u8,
        /// The type's scale.
        scale: u8,
    },
    /// Dates: days since 1970-01-01.
    Date(#[serde(with = "crate::wire")] Vec<i32>),
    /// Timestamps: microseconds since 1970-01-01 00:00:00.
    Timestamp(#[serde(with = "crate::wire")] Vec<i64>),
}

impl ColumnData {
    /// The type of these values.
    pub fn data_type(&self) -> DataType {
        match self {
            ColumnData::Int64(_) => DataType::Int64,
            ColumnData::Float64(_) => DataType::Float64,
            ColumnData::Utf8 { .. } => DataType::Utf8,
            ColumnData::Boolean(_) => DataType::Boolean,
            ColumnData::Decimal {
                precision, scale, ..
            } => DataType::Decimal {
                precision: *precision,
                scale: *scale,
            },
            ColumnData::Date(_) => DataType::Date,
            ColumnData::Timestamp(_) => DataType::Timestamp,
        }
    }

    /// An empty vector of type `dt` with room for `capacity` rows.
    pub fn with_capacity(dt: DataType, capacity: usize) -> ColumnData {
        match dt {
            DataType::Int64 => ColumnData::Int64(Vec::with_capacity(capacity)),
            DataType::Float64 => ColumnData::Float64(Vec::with_capacity(capacity)),
            DataType::Boolean => ColumnData::Boolean(Vec::with_capacity(capacity)),
            DataType::Utf8 => {
                let mut offsets = Vec::with_capacity(capacity + 1);
                offsets.push(0);
                ColumnData::Utf8 {
                    offsets,
                    bytes: Vec::with_capacity(capacity * 8),
                }
            }
            DataType::Decimal { precision, scale } => ColumnData::Decimal {
                values: Vec::with_capacity(capacity),
                precision,
                scale,
            },
            DataType::Date => ColumnData::Date(Vec::with_capacity(capacity)),
            DataType::Timestamp => ColumnData::Timestamp(Vec::with_capacity(capacity)),
        }
    }
}

checked_serde!(ColumnData);

impl Checked for ColumnData {
    fn check(&self) -> Result<(), String> {
        match self {
            ColumnData::Utf8 { offsets, bytes } => check_text(offsets, bytes),
            ColumnData::Decimal {
                precision, scale, ..
            } => crate::types::check_decimal_type(*precision, *scale),
            _ => Ok(()),
        }
    }
}

/// Why a text column's offsets and bytes are not well formed, if they are not: the bytes'
/// UTF-8 checked once, one branch-free pass over the offsets, and the offsets' character
/// boundaries only when the text is not all ASCII.
fn check_text(offsets: &[u32], bytes: &[u8]) -> Result<(), String> {
    let Some((&first, rest)) = offsets.split_first() else {
        return Err("a text column with no offsets (it needs one more than its rows)".into());
    };
    if first != 0 {
        return Err(format!("text offsets start at {first}, not 0"));
    }
    let end = offsets[offsets.len() - 1] as usize;
    if end != bytes.len() {
        return Err(format!(
            "text offsets end at {end}, but the column holds {} bytes",
            bytes.len()
        ));
    }
    let text = std::str::from_utf8(bytes).map_err(|e| format!("text is not UTF-8: {e}"))?;
    let rising = offsets.windows(2).fold(true, |ok, w| ok & (w[0] <= w[1]));
    if !rising {
        let row = offsets.windows(2).position(|w| w[0] > w[1]).unwrap_or(0);
        return Err(format!(
            "text offsets decrease at row {row}: {} then {}",
            offsets[row],
            offsets[row + 1]
        ));
    }
    if !text.is_ascii() {
        if let Some((row, o)) = rest
            .iter()
            .enumerate()
            .find(|(_, &o)| !text.is_char_boundary(o as usize))
        {
            return Err(format!(
                "text offset {o} of row {row} falls inside a character"
            ));
        }
    }
    Ok(())
}

/// A column: typed values plus validity (`None` means no NULLs). A decoded one is checked
/// ([`crate::decode`]): its validity bitmap has one bit per row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct Column {
    /// The values.
    pub data: ColumnData,
    /// Validity bitmap; bit set means the value is present. `None` means all present.
    pub validity: Option<Bitmap>,
}

checked_serde!(Column);

impl Checked for Column {
    fn check(&self) -> Result<(), String> {
        match &self.validity {
            Some(v) if v.len() != self.len() => Err(format!(
                "a column of {} rows with a validity bitmap of {} bits",
                self.len(),
                v.len()
            )),
            _ => Ok(()),
        }
    }
}

impl Column {
    /// A column without NULLs.
    pub fn new(data: ColumnData) -> Self {
        Column {
            data,
            validity: None,
        }
    }

    /// A column with the given validity; an all-set bitmap is dropped.
    pub fn with_validity(data: ColumnData, validity: Option<Bitmap>) -> Self {
        let validity = validity.filter(|v| !v.all_set());
        Column { data, validity }
    }

    /// An integer column without NULLs.
    pub fn from_i64(v: Vec<i64>) -> Self {
        Column::new(ColumnData::Int64(v))
    }

    /// A float column without NULLs.
    pub fn from_f64(v: Vec<f64>) -> Self {
        Column::new(ColumnData::Float64(v))
    }

    /// A boolean column without NULLs.
    pub fn from_bools(v: Vec<bool>) -> Self {
        Column::new(ColumnData::Boolean(v))
    }

    /// A string column without NULLs.
    pub fn from_strs<S: AsRef<str>>(v: &[S]) -> Self {
        let mut b = ColumnBuilder::new(DataType::Utf8, v.len());
        for s in v {
            b.push_str(s.as_ref());
        }
        b.finish()
    }

    /// A column of `len` NULLs of type `dt`.
    pub fn nulls(dt: DataType, len: usize) -> Self {
        let mut b = ColumnBuilder::new(dt, len);
        for _ in 0..len {
            b.push_null();
        }
        b.finish()
    }

    /// A column repeating `value` `len` times, of type `dt` (NULL gives a NULL column).
    pub fn repeat(dt: DataType, value: &Value, len: usize) -> Result<Self> {
        let mut b = ColumnBuilder::new(dt, len);
        for _ in 0..len {
            b.push_value(value)?;
        }
        Ok(b.finish())
    }

    /// Builds a column of type `dt` from values; fails if a value has another type
    /// (integers are accepted for float columns).
    pub fn from_values(dt: DataType, values: &[Value]) -> Result<Self> {
        let mut b = ColumnBuilder::new(dt, values.len());
        for v in values {
            b.push_value(v)?;
        }
        Ok(b.finish())
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        match &self.data {
            ColumnData::Int64(v) => v.len(),
            ColumnData::Float64(v) => v.len(),
            ColumnData::Utf8 { offsets, .. } => offsets.len() - 1,
            ColumnData::Boolean(v) => v.len(),
            ColumnData::Decimal { values, .. } => values.len(),
            ColumnData::Date(v) => v.len(),
            ColumnData::Timestamp(v) => v.len(),
        }
    }

    /// Whether the column has no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The column's type.
    pub fn data_type(&self) -> DataType {
        self.data.data_type()
    }

    /// Whether row `i` holds a value (is not NULL).
    #[inline]
    pub fn is_valid(&self, i: usize) -> bool {
        self.validity.as_ref().is_none_or(|v| v.get(i))
    }

    /// Whether row `i` is NULL.
    #[inline]
    pub fn is_null(&self, i: usize) -> bool {
        !self.is_valid(i)
    }

    /// Number of NULL rows.
    pub fn null_count(&self) -> usize {
        self.validity
            .as_ref()
            .map_or(0, |v| v.len() - v.count_ones())
    }

    /// The integer slice, if this is an integer column.
    pub fn as_i64(&self) -> Option<&[i64]> {
        match &self.data {
            ColumnData::Int64(v) => Some(v),
            _ => None,
        }
    }

    /// The float slice, if this is a float column.
    pub fn as_f64(&self) -> Option<&[f64]> {
        match &self.data {
            ColumnData::Float64(v) => Some(v),
            _ => None,
        }
    }

    /// The unscaled values and scale, if this is a decimal column.
    pub fn as_decimal(&self) -> Option<(&[i128], u8)> {
        match &self.data {
            ColumnData::Decimal { values, scale, .. } => Some((values, *scale)),
            _ => None,
        }
    }

    /// The day numbers, if this is a date column.
    pub fn as_date(&self) -> Option<&[i32]> {
        match &self.data {
            ColumnData::Date(v) => Some(v),
            _ => None,
        }
    }

    /// The microsecond counts, if this is a timestamp column.
    pub fn as_timestamp(&self) -> Option<&[i64]> {
        match &self.data {
            ColumnData::Timestamp(v) => Some(v),
            _ => None,
        }
    }

    /// The boolean slice, if this is a boolean column.
    pub fn as_bool(&self) -> Option<&[bool]> {
        match &self.data {
            ColumnData::Boolean(v) => Some(v),
            _ => None,
        }
    }

    /// String at row `i` of a string column (empty for NULL rows).
    ///
    /// # Panics
    /// If the column is not a string column.
    #[inline]
    pub fn str_at(&self, i: usize) -> &str {
        match &self.data {
            ColumnData::Utf8 { offsets, bytes } => {
                let s = &bytes[offsets[i] as usize..offsets[i + 1] as usize];
                // Bytes are only ever appended from `&str`, so they are valid UTF-8.
                std::str::from_utf8(s).unwrap_or_default()
            }
            _ => panic!("str_at on a {} column", self.data_type()),
        }
    }

    /// Row `i` of this column against row `j` of `other`, both valid, in ascending order
    /// (DOUBLE by `total_cmp`, text by bytes); columns of two types compare as values.
    pub fn cmp_valid(&self, i: usize, other: &Column, j: usize) -> std::cmp::Ordering {
        match (&self.data, &other.data) {
            (ColumnData::Int64(x), ColumnData::Int64(y))
            | (ColumnData::Timestamp(x), ColumnData::Timestamp(y)) => x[i].cmp(&y[j]),
            (ColumnData::Float64(x), ColumnData::Float64(y)) => x[i].total_cmp(&y[j]),
            (ColumnData::Boolean(x), ColumnData::Boolean(y)) => x[i].cmp(&y[j]),
            (ColumnData::Utf8 { .. }, ColumnData::Utf8 { .. }) => {
                self.str_at(i).cmp(other.str_at(j))
            }
            (ColumnData::Decimal { values: x, .. }, ColumnData::Decimal { values: y, .. }) => {
                x[i].cmp(&y[j])
            }
            (ColumnData::Date(x), ColumnData::Date(y)) => x[i].cmp(&y[j]),
            _ => self.value(i).sort_cmp(&other.value(j)),
        }
    }

    /// Row `i` as a [`Value`] (slow path: for results and tests, not kernels).
    pub fn value(&self, i: usize) -> Value {
        if self.is_null(i) {
            return Value::Null;
        }
        match &self.data {
            ColumnData::Int64(v) => Value::Int(v[i]),
            ColumnData::Float64(v) => Value::Float(v[i]),
            ColumnData::Utf8 { .. } => Value::Str(self.str_at(i).to_string()),
            ColumnData::Boolean(v) => Value::Bool(v[i]),
            ColumnData::Decimal { values, scale, .. } => Value::Decimal(values[i], *scale),
            ColumnData::Date(v) => Value::Date(v[i]),
            ColumnData::Timestamp(v) => Value::Timestamp(v[i]),
        }
    }

    /// Heap bytes held by this column (capacity, not length).
    pub fn memory_size(&self) -> usize {
        let data = match &self.data {
            ColumnData::Int64(v) => v.capacity() * 8,
            ColumnData::Float64(v) => v.capacity() * 8,
            ColumnData::Utf8 { offsets, bytes } => offsets.capacity() * 4 + bytes.capacity(),
            ColumnData::Boolean(v) => v.capacity(),
            ColumnData::Decimal { values, .. } => values.capacity() * 16,
            ColumnData::Date(v) => v.capacity() * 4,
            ColumnData::Timestamp(v) => v.capacity() * 8,
        };
        data + self.validity.as_ref().map_or(0, Bitmap::memory_size)
    }

    /// Bytes of the values by length, not capacity (see [`crate::Batch::data_size`]).
    pub fn data_size(&self) -> usize {
        let data = match &self.data {
            ColumnData::Int64(v) => v.len() * 8,
            ColumnData::Float64(v) => v.len() * 8,
            ColumnData::Utf8 { offsets, bytes } => offsets.len() * 4 + bytes.len(),
            ColumnData::Boolean(v) => v.len(),
            ColumnData::Decimal { values, .. } => values.len() * 16,
            ColumnData::Date(v) => v.len() * 4,
            ColumnData::Timestamp(v) => v.len() * 8,
        };
        data + self.validity.as_ref().map_or(0, |v| v.len().div_ceil(8))
    }

    /// Gathers rows by index into a new column.
    pub fn take(&self, indices: &[u32]) -> Column {
        let validity = self.validity.as_ref().map(|v| {
            let mut out = Bitmap::new(indices.len(), false);
            for (o, &i) in indices.iter().enumerate() {
                out.set(o, v.get(i as usize));
            }
            out
        });
        let data = match &self.data {
            ColumnData::Int64(v) => {
                ColumnData::Int64(indices.iter().map(|&i| v[i as usize]).collect())
            }
            ColumnData::Float64(v) => {
                ColumnData::Float64(indices.iter().map(|&i| v[i as usize]).collect())
            }
            ColumnData::Boolean(v) => {
                ColumnData::Boolean(indices.iter().map(|&i| v[i as usize]).collect())
            }
            ColumnData::Decimal {
                values,
                precision,
                scale,
            } => ColumnData::Decimal {
                values: indices.iter().map(|&i| values[i as usize]).collect(),
                precision: *precision,
                scale: *scale,
            },
            ColumnData::Date(v) => {
                ColumnData::Date(indices.iter().map(|&i| v[i as usize]).collect())
            }
            ColumnData::Timestamp(v) => {
                ColumnData::Timestamp(indices.iter().map(|&i| v[i as usize]).collect())
            }
            ColumnData::Utf8 { offsets, bytes } => {
                let total: usize = indices
                    .iter()
                    .map(|&i| (offsets[i as usize + 1] - offsets[i as usize]) as usize)
                    .sum();
                let mut out_off = Vec::with_capacity(indices.len() + 1);
                out_off.push(0u32);
                // Short strings are copied as one fixed 16-byte move (the bytes past the
                // string are overwritten by the next one, or cut off at the end) rather than a
                // copy call each: most strings are short, and a call per row dominated.
                const SHORT: usize = 16;
                let mut out_bytes = vec![0u8; total + SHORT];
                let mut pos = 0;
                for &i in indices {
                    let (s, e) = (
                        offsets[i as usize] as usize,
                        offsets[i as usize + 1] as usize,
                    );
                    let len = e - s;
                    if len <= SHORT && s + SHORT <= bytes.len() {
                        out_bytes[pos..pos + SHORT].copy_from_slice(&bytes[s..s + SHORT]);
                    } else {
                        out_bytes[pos..pos + len].copy_from_slice(&bytes[s..e]);
                    }
                    pos += len;
                    out_off.push(pos as u32);
                }
                out_bytes.truncate(total);
                ColumnData::Utf8 {
                    offsets: out_off,
                    bytes: out_bytes,
                }
            }
        };
        Column::with_validity(data, validity)
    }

    /// Keeps the rows whose mask entry is `true`.
    pub fn filter(&self, mask: &[bool]) -> Column {
        let indices: Vec<u32> = mask
            .iter()
            .enumerate()
            .filter_map(|(i, &m)| m.then_some(i as u32))
            .collect();
        self.take(&indices)
    }

    /// Rows `start..start + len` as a new column.
    pub fn slice(&self, start: usize, len: usize) -> Column {
        let indices: Vec<u32> = (start as u32..(start + len) as u32).collect();
        self.take(&indices)
    }

    /// Rows `start..start + len` of `sources[s]` for each `(s, start, len)` of `runs`, in
    /// that order, as one column of `rows` rows (the runs' lengths summed). Every source
    /// referred to has the same type. A typed copy per run; a builder when there are NULLs.
    pub fn gather_runs(sources: &[&Column], runs: &[(usize, usize, usize)], rows: usize) -> Column {
        /// The runs of typed slices `src` copied one after another.
        fn copy<T: Copy>(src: &[&[T]], runs: &[(usize, usize, usize)], rows: usize) -> Vec<T> {
            let mut out = Vec::with_capacity(rows);
            for &(s, start, len) in runs {
                if len == 1 {
                    out.push(src[s][start]);
                } else {
                    out.extend_from_slice(&src[s][start..start + len]);
                }
            }
            out
        }
        let Some(&(first, _, _)) = runs.first() else {
            let dt = sources.first().map_or(DataType::Int64, |c| c.data_type());
            return Column::new(ColumnData::with_capacity(dt, 0));
        };
        let dt = sources[first].data_type();
        let plain = runs
            .iter()
            .all(|&(s, _, _)| sources[s].validity.is_none() && sources[s].data_type() == dt);
        if !plain {
            let mut out = ColumnBuilder::new(dt, rows);
            for &(s, start, len) in runs {
                out.extend_range(sources[s], start..start + len);
            }
            return out.finish();
        }
        // Each source's values of the one type (all of them are of it, checked above).
        macro_rules! typed {
            ($variant:ident) => {{
                let src: Vec<&[_]> = sources
                    .iter()
                    .map(|c| match &c.data {
                        ColumnData::$variant(v) => v.as_slice(),
                        _ => &[],
                    })
                    .collect();
                ColumnData::$variant(copy(&src, runs, rows))
            }};
        }
        let data = match &sources[first].data {
            ColumnData::Int64(_) => typed!(Int64),
            ColumnData::Float64(_) => typed!(Float64),
            ColumnData::Boolean(_) => typed!(Boolean),
            ColumnData::Date(_) => typed!(Date),
            ColumnData::Timestamp(_) => typed!(Timestamp),
            ColumnData::Decimal {
                precision, scale, ..
            } => {
                let src: Vec<&[i128]> = sources
                    .iter()
                    .map(|c| match &c.data {
                        ColumnData::Decimal { values, .. } => values.as_slice(),
                        _ => &[],
                    })
                    .collect();
                ColumnData::Decimal {
                    values: copy(&src, runs, rows),
                    precision: *precision,
                    scale: *scale,
                }
            }
            ColumnData::Utf8 { .. } => {
                let src: Vec<(&[u32], &[u8])> = sources
                    .iter()
                    .map(|c| match &c.data {
                        ColumnData::Utf8 { offsets, bytes } => {
                            (offsets.as_slice(), bytes.as_slice())
                        }
                        _ => (&[][..], &[][..]),
                    })
                    .collect();
                let total: usize = runs
                    .iter()
                    .map(|&(s, start, len)| (src[s].0[start + len] - src[s].0[start]) as usize)
                    .sum();
                let mut offsets = Vec::with_capacity(rows + 1);
                offsets.push(0u32);
                // A single short string is copied as one fixed 16-byte move, as `take` does
                // (the bytes past it are overwritten next, or cut off at the end).
                const SHORT: usize = 16;
                let mut bytes = vec![0u8; total + SHORT];
                let mut pos = 0;
                for &(s, start, len) in runs {
                    let (o, b) = src[s];
                    let (from, to) = (o[start] as usize, o[start + len] as usize);
                    if len == 1 && to - from <= SHORT && from + SHORT <= b.len() {
                        bytes[pos..pos + SHORT].copy_from_slice(&b[from..from + SHORT]);
                        pos += to - from;
                        offsets.push(pos as u32);
                        continue;
                    }
                    bytes[pos..pos + to - from].copy_from_slice(&b[from..to]);
                    let base = pos as i64 - from as i64;
                    offsets.extend(
                        o[start + 1..=start + len]
                            .iter()
                            .map(|&x| (x as i64 + base) as u32),
                    );
                    pos += to - from;
                }
                bytes.truncate(total);
                ColumnData::Utf8 { offsets, bytes }
            }
        };
        Column::new(data)
    }

    /// Concatenates columns of one type.
    pub fn concat(cols: &[&Column]) -> Result<Column> {
        let Some(first) = cols.first() else {
            return Err(Error::Internal("concat of no columns".into()));
        };
        let dt = first.data_type();
        if let Some(c) = cols.iter().find(|c| c.data_type() != dt) {
            return Err(Error::Type(format!(
                "cannot concatenate {} and {}",
                dt,
                c.data_type()
            )));
        }
        // Sized once for all the parts, so that every append copies without reallocating.
        let total: usize = cols.iter().map(|c| c.len()).sum();
        let mut data = ColumnData::with_capacity(dt, total);
        if let ColumnData::Utf8 { bytes, .. } = &mut data {
            let text: usize = cols
                .iter()
                .map(|c| match &c.data {
                    ColumnData::Utf8 { bytes, .. } => bytes.len(),
                    _ => 0,
                })
                .sum();
            *bytes = Vec::with_capacity(text);
        }
        let mut out = Column::new(data);
        if cols.iter().any(|c| c.validity.is_some()) {
            let mut v = Bitmap::new(0, false);
            v.reserve_exact(total);
            out.validity = Some(v);
        }
        for c in cols {
            out.append(c)?;
        }
        // As a built column: no bitmap when nothing is NULL.
        out.validity = out.validity.filter(|v| !v.all_set());
        Ok(out)
    }
}

impl Column {
    /// What [`Column::memory_size`] will be after [`Column::append`] of `other` (this
    /// column's size if the types differ and the append would fail): at most both sizes
    /// together, and a bitmap's worth more when only `other` has one.
    pub fn appended_memory_size(&self, other: &Column) -> usize {
        /// Capacity after `reserve_exact(extra)` on a vector of `len` and `cap`.
        fn grown(len: usize, cap: usize, extra: usize) -> usize {
            cap.max(len + extra)
        }
        let rows = self.len();
        let extra = other.len();
        let data = match (&self.data, &other.data) {
            (ColumnData::Int64(d), ColumnData::Int64(_))
            | (ColumnData::Timestamp(d), ColumnData::Timestamp(_)) => {
                grown(d.len(), d.capacity(), extra) * 8
            }
            (ColumnData::Float64(d), ColumnData::Float64(_)) => {
                grown(d.len(), d.capacity(), extra) * 8
            }
            (ColumnData::Boolean(d), ColumnData::Boolean(_)) => grown(d.len(), d.capacity(), extra),
            (ColumnData::Decimal { values: d, .. }, ColumnData::Decimal { values: o, .. }) => {
                grown(d.len(), d.capacity(), o.len()) * 16
            }
            (ColumnData::Date(d), ColumnData::Date(_)) => grown(d.len(), d.capacity(), extra) * 4,
            (
                ColumnData::Utf8 { offsets, bytes },
                ColumnData::Utf8 {
                    offsets: so,
                    bytes: sb,
                },
            ) => {
                grown(
                    offsets.len(),
                    offsets.capacity(),
                    so.len().saturating_sub(1),
                ) * 4
                    + grown(bytes.len(), bytes.capacity(), sb.len())
            }
            _ => return self.memory_size(),
        };
        let validity = if self.validity.is_some() || other.validity.is_some() {
            let words = match &self.validity {
                Some(v) => v.memory_size() / 8,
                None => rows.div_ceil(64),
            };
            words.max((rows + extra).div_ceil(64)) * 8
        } else {
            0
        };
        data + validity
    }

    /// Makes room for the rows of `other` with the vectors' amortized growth (capacity at
    /// least doubles), so that many small [`Column::append`]s in place copy each row a
    /// constant number of times. A column of another type is left as it is.
    pub fn reserve_for(&mut self, other: &Column) {
        let rows = other.len();
        match (&mut self.data, &other.data) {
            (ColumnData::Int64(d), ColumnData::Int64(_))
            | (ColumnData::Timestamp(d), ColumnData::Timestamp(_)) => d.reserve(rows),
            (ColumnData::Float64(d), ColumnData::Float64(_)) => d.reserve(rows),
            (ColumnData::Boolean(d), ColumnData::Boolean(_)) => d.reserve(rows),
            (ColumnData::Decimal { values: d, .. }, ColumnData::Decimal { .. }) => d.reserve(rows),
            (ColumnData::Date(d), ColumnData::Date(_)) => d.reserve(rows),
            (ColumnData::Utf8 { offsets, bytes }, ColumnData::Utf8 { bytes: sb, .. }) => {
                offsets.reserve(rows);
                bytes.reserve(sb.len());
            }
            _ => {}
        }
    }

    /// Appends the rows of `other`, which must have this column's type, in place. The
    /// vectors grow to exactly the rows they hold (so a column's [`Column::memory_size`] after
    /// an append is [`Column::appended_memory_size`]: at most the sum of both before, unless
    /// only `other` has a validity bitmap and one is made for this column's rows).
    pub fn append(&mut self, other: &Column) -> Result<()> {
        fn extend<T: Copy>(d: &mut Vec<T>, s: &[T]) {
            d.reserve_exact(s.len());
            d.extend_from_slice(s);
        }
        let (dt, ot) = (self.data_type(), other.data_type());
        let same = match (dt, ot) {
            // Decimals of one scale hold the same unscaled values whatever their precision.
            (DataType::Decimal { scale: a, .. }, DataType::Decimal { scale: b, .. }) => a == b,
            _ => dt == ot,
        };
        if !same {
            return Err(Error::Type(format!(
                "cannot append {ot} rows to a {dt} column"
            )));
        }
        let before = self.len();
        match (&mut self.data, &other.data) {
            (ColumnData::Int64(d), ColumnData::Int64(s))
            | (ColumnData::Timestamp(d), ColumnData::Timestamp(s)) => extend(d, s),
            (ColumnData::Float64(d), ColumnData::Float64(s)) => extend(d, s),
            (ColumnData::Boolean(d), ColumnData::Boolean(s)) => extend(d, s),
            (ColumnData::Decimal { values: d, .. }, ColumnData::Decimal { values: s, .. }) => {
                extend(d, s)
            }
            (ColumnData::Date(d), ColumnData::Date(s)) => extend(d, s),
            (
                ColumnData::Utf8 { offsets, bytes },
                ColumnData::Utf8 {
                    offsets: so,
                    bytes: sb,
                },
            ) => {
                crate::limits::check_text_column("appending rows", bytes.len() + sb.len())?;
                let base = bytes.len() as u32;
                extend(bytes, sb);
                offsets.reserve_exact(so.len() - 1);
                offsets.extend(so[1..].iter().map(|o| o + base));
            }
            _ => {
                return Err(Error::Internal(
                    "column types changed while appending".into(),
                ))
            }
        }
        if self.validity.is_some() || other.validity.is_some() {
            let mut v = self
                .validity
                .take()
                .unwrap_or_else(|| Bitmap::new(before, true));
            v.reserve_exact(other.len());
            for i in 0..other.len() {
                v.push(other.is_valid(i));
            }
            self.validity = Some(v);
        }
        Ok(())
    }
}

/// Appends values one at a time, or runs and selections of another column's rows, and
/// produces a [`Column`]. The validity bitmap is made only once a NULL is appended: a column
/// without NULLs costs one length count, and bulk appends are plain slice copies.
#[derive(Debug)]
pub struct ColumnBuilder {
    data: ColumnData,
    len: usize,
    /// `Some` once a NULL was appended: one bit per row so far.
    validity: Option<Bitmap>,
}

/// The runs of consecutive row numbers in `rows`, in order, as (first row, length).
fn runs(rows: &[u32]) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut j = 0;
    std::iter::from_fn(move || {
        let start = *rows.get(j)? as usize;
        let mut k = j + 1;
        while k < rows.len() && rows[k] as usize == start + (k - j) {
            k += 1;
        }
        let len = k - j;
        j = k;
        Some((start, len))
    })
}

/// Appends `s[i]` for every `i` of `rows` to `d`: runs of consecutive rows as slice copies
/// when the rows ascend densely (a filter that keeps most rows), else one by one.
fn gather<T: Copy>(d: &mut Vec<T>, s: &[T], rows: &[u32]) {
    let (Some(&first), Some(&last)) = (rows.first(), rows.last()) else {
        return;
    };
    if last < first || rows.len() * 2 < (last - first) as usize + 1 {
        d.extend(rows.iter().map(|&i| s[i as usize]));
        return;
    }
    d.reserve(rows.len());
    for (start, len) in runs(rows) {
        d.extend_from_slice(&s[start..start + len]);
    }
}

/// Appends the texts of `rows` (of offsets `so` into bytes `sb`) to `offsets` and `bytes`:
/// the bytes of each run of consecutive rows in one copy, as they are (they were UTF-8 going
/// in, so no check per row), and the run's offsets shifted by where its bytes landed.
fn gather_text(offsets: &mut Vec<u32>, bytes: &mut Vec<u8>, so: &[u32], sb: &[u8], rows: &[u32]) {
    offsets.reserve(rows.len());
    for (start, len) in runs(rows) {
        let (from, to) = (so[start] as usize, so[start + len] as usize);
        // Where the run's first text lands, less where it starts in the source (modulo 2^32:
        // the shifted offsets are where the texts end in `bytes`).
        let shift = (bytes.len() as u32).wrapping_sub(so[start]);
        bytes.extend_from_slice(&sb[from..to]);
        offsets.extend(
            so[start + 1..=start + len]
                .iter()
                .map(|&o| o.wrapping_add(shift)),
        );
    }
}

impl ColumnBuilder {
    /// A builder for a column of type `dt` with room for `capacity` rows.
    pub fn new(dt: DataType, capacity: usize) -> Self {
        let data = ColumnData::with_capacity(dt, capacity);
        ColumnBuilder {
            data,
            len: 0,
            validity: None,
        }
    }

    /// Number of rows appended so far.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing was appended yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Counts one more present value.
    #[inline]
    fn valid(&mut self) {
        self.len += 1;
        if let Some(v) = &mut self.validity {
            v.push(true);
        }
    }

    /// Counts `n` more present values.
    fn valid_n(&mut self, n: usize) {
        self.len += n;
        if let Some(v) = &mut self.validity {
            v.reserve_exact(n);
            for _ in 0..n {
                v.push(true);
            }
        }
    }

    /// Appends an integer (to an integer or float column).
    #[inline]
    pub fn push_i64(&mut self, v: i64) {
        match &mut self.data {
            ColumnData::Int64(d) => d.push(v),
            ColumnData::Float64(d) => d.push(v as f64),
            _ => panic!("push_i64 on a non-numeric builder"),
        }
        self.valid();
    }

    /// Appends a float.
    #[inline]
    pub fn push_f64(&mut self, v: f64) {
        match &mut self.data {
            ColumnData::Float64(d) => d.push(v),
            _ => panic!("push_f64 on a non-float builder"),
        }
        self.valid();
    }

    /// Appends a boolean.
    #[inline]
    pub fn push_bool(&mut self, v: bool) {
        match &mut self.data {
            ColumnData::Boolean(d) => d.push(v),
            _ => panic!("push_bool on a non-boolean builder"),
        }
        self.valid();
    }

    /// Appends a string.
    #[inline]
    pub fn push_str(&mut self, v: &str) {
        match &mut self.data {
            ColumnData::Utf8 { offsets, bytes } => {
                bytes.extend_from_slice(v.as_bytes());
                offsets.push(bytes.len() as u32);
            }
            _ => panic!("push_str on a non-string builder"),
        }
        self.valid();
    }

    /// Appends an unscaled decimal (already at the column's scale).
    #[inline]
    pub fn push_decimal(&mut self, v: i128) {
        match &mut self.data {
            ColumnData::Decimal { values, .. } => values.push(v),
            _ => panic!("push_decimal on a non-decimal builder"),
        }
        self.valid();
    }

    /// Appends a date (days since 1970-01-01).
    #[inline]
    pub fn push_date(&mut self, v: i32) {
        match &mut self.data {
            ColumnData::Date(d) => d.push(v),
            _ => panic!("push_date on a non-date builder"),
        }
        self.valid();
    }

    /// Appends a timestamp (microseconds since 1970-01-01 00:00:00).
    #[inline]
    pub fn push_timestamp(&mut self, v: i64) {
        match &mut self.data {
            ColumnData::Timestamp(d) => d.push(v),
            _ => panic!("push_timestamp on a non-timestamp builder"),
        }
        self.valid();
    }

    /// Appends a NULL.
    #[inline]
    pub fn push_null(&mut self) {
        match &mut self.data {
            ColumnData::Int64(d) => d.push(0),
            ColumnData::Float64(d) => d.push(0.0),
            ColumnData::Boolean(d) => d.push(false),
            ColumnData::Utf8 { offsets, bytes } => offsets.push(bytes.len() as u32),
            ColumnData::Decimal { values, .. } => values.push(0),
            ColumnData::Date(d) => d.push(0),
            ColumnData::Timestamp(d) => d.push(0),
        }
        let len = self.len;
        self.validity
            .get_or_insert_with(|| Bitmap::new(len, true))
            .push(false);
        self.len += 1;
    }

    /// Appends a [`Value`], checking its type (integers widen to floats).
    pub fn push_value(&mut self, v: &Value) -> Result<()> {
        match (v, &self.data) {
            (Value::Null, _) => self.push_null(),
            (Value::Int(i), ColumnData::Int64(_) | ColumnData::Float64(_)) => self.push_i64(*i),
            (Value::Float(f), ColumnData::Float64(_)) => self.push_f64(*f),
            (Value::Str(s), ColumnData::Utf8 { .. }) => self.push_str(s),
            (Value::Bool(b), ColumnData::Boolean(_)) => self.push_bool(*b),
            (
                Value::Int(_) | Value::Decimal(..),
                ColumnData::Decimal {
                    precision, scale, ..
                },
            ) => {
                let (p, s) = (*precision, *scale);
                match v.as_decimal(s).filter(|&x| decimal::fits(x, p)) {
                    Some(x) => self.push_decimal(x),
                    None => {
                        return Err(Error::Type(format!(
                            "value {v} does not fit a {} column",
                            self.data_type()
                        )))
                    }
                }
            }
            (Value::Decimal(x, s), ColumnData::Float64(_)) => {
                self.push_f64(decimal::to_f64(*x, *s))
            }
            (Value::Date(d), ColumnData::Date(_)) => self.push_date(*d),
            (Value::Timestamp(t), ColumnData::Timestamp(_)) => self.push_timestamp(*t),
            (Value::Date(d), ColumnData::Timestamp(_)) => {
                self.push_timestamp(temporal::date_to_timestamp(*d))
            }
            (v, _) => {
                return Err(Error::Type(format!(
                    "value {v} does not fit a {} column",
                    self.data_type()
                )))
            }
        }
        Ok(())
    }

    /// Appends row `i` of `col` (which must have this builder's type).
    #[inline]
    pub fn push_from(&mut self, col: &Column, i: usize) {
        if col.is_null(i) {
            self.push_null();
            return;
        }
        match &col.data {
            ColumnData::Int64(v) => self.push_i64(v[i]),
            ColumnData::Float64(v) => self.push_f64(v[i]),
            ColumnData::Boolean(v) => self.push_bool(v[i]),
            ColumnData::Utf8 {
                offsets: so,
                bytes: sb,
            } => match &mut self.data {
                ColumnData::Utf8 { offsets, bytes } => {
                    bytes.extend_from_slice(&sb[so[i] as usize..so[i + 1] as usize]);
                    offsets.push(bytes.len() as u32);
                    self.valid();
                }
                _ => self.push_str(col.str_at(i)),
            },
            ColumnData::Decimal { values, .. } => self.push_decimal(values[i]),
            ColumnData::Date(v) => self.push_date(v[i]),
            ColumnData::Timestamp(v) => self.push_timestamp(v[i]),
        }
    }

    /// Appends every row of `col` (which must have this builder's type).
    pub fn extend_from(&mut self, col: &Column) {
        self.extend_range(col, 0..col.len());
    }

    /// Appends rows `range` of `col` (which must have this builder's type): slice copies when
    /// the types match, and the validity bits only when either side has NULLs.
    pub fn extend_range(&mut self, col: &Column, range: std::ops::Range<usize>) {
        let n = range.len();
        let copied = match (&mut self.data, &col.data) {
            (ColumnData::Int64(d), ColumnData::Int64(s))
            | (ColumnData::Timestamp(d), ColumnData::Timestamp(s)) => {
                d.extend_from_slice(&s[range.clone()]);
                true
            }
            (ColumnData::Float64(d), ColumnData::Float64(s)) => {
                d.extend_from_slice(&s[range.clone()]);
                true
            }
            (ColumnData::Boolean(d), ColumnData::Boolean(s)) => {
                d.extend_from_slice(&s[range.clone()]);
                true
            }
            (ColumnData::Decimal { values: d, .. }, ColumnData::Decimal { values: s, .. }) => {
                d.extend_from_slice(&s[range.clone()]);
                true
            }
            (ColumnData::Date(d), ColumnData::Date(s)) => {
                d.extend_from_slice(&s[range.clone()]);
                true
            }
            (
                ColumnData::Utf8 { offsets, bytes },
                ColumnData::Utf8 {
                    offsets: so,
                    bytes: sb,
                },
            ) if n > 0 => {
                let (from, to) = (so[range.start] as usize, so[range.end] as usize);
                let base = bytes.len() as i64 - from as i64;
                bytes.extend_from_slice(&sb[from..to]);
                offsets.extend(
                    so[range.start + 1..=range.end]
                        .iter()
                        .map(|&o| (o as i64 + base) as u32),
                );
                true
            }
            _ => false,
        };
        if !copied {
            range.for_each(|i| self.push_from(col, i));
            return;
        }
        match &col.validity {
            None => self.valid_n(n),
            Some(bits) => {
                let len = self.len;
                let own = self.validity.get_or_insert_with(|| Bitmap::new(len, true));
                own.reserve_exact(n);
                for i in range {
                    own.push(bits.get(i));
                }
                self.len += n;
            }
        }
    }

    /// Appends the rows `rows` of `col` (which must have this builder's type), in that order.
    pub fn extend_rows(&mut self, col: &Column, rows: &[u32]) {
        if col.validity.is_some() {
            rows.iter().for_each(|&i| self.push_from(col, i as usize));
            return;
        }
        let gathered = match (&mut self.data, &col.data) {
            (ColumnData::Int64(d), ColumnData::Int64(s))
            | (ColumnData::Timestamp(d), ColumnData::Timestamp(s)) => {
                gather(d, s, rows);
                true
            }
            (ColumnData::Float64(d), ColumnData::Float64(s)) => {
                gather(d, s, rows);
                true
            }
            (ColumnData::Date(d), ColumnData::Date(s)) => {
                gather(d, s, rows);
                true
            }
            (ColumnData::Decimal { values: d, .. }, ColumnData::Decimal { values: s, .. }) => {
                gather(d, s, rows);
                true
            }
            (
                ColumnData::Utf8 { offsets, bytes },
                ColumnData::Utf8 {
                    offsets: so,
                    bytes: sb,
                },
            ) => {
                gather_text(offsets, bytes, so, sb, rows);
                true
            }
            _ => false,
        };
        if gathered {
            self.valid_n(rows.len());
        } else {
            rows.iter().for_each(|&i| self.push_from(col, i as usize));
        }
    }

    /// The builder's type.
    pub fn data_type(&self) -> DataType {
        self.data.data_type()
    }

    /// Finishes the column.
    pub fn finish(self) -> Column {
        Column {
            data: self.data,
            validity: self.validity,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(c: &Column) -> Vec<Value> {
        (0..c.len()).map(|i| c.value(i)).collect()
    }

    /// Every type, with and without NULLs: a bulk append equals appending row by row.
    fn columns() -> Vec<Column> {
        let v = |x: Vec<Value>| x;
        let cases: Vec<(DataType, Vec<Value>)> = vec![
            (
                DataType::Int64,
                v(vec![1.into(), Value::Null, 3.into(), 4.into(), 5.into()]),
            ),
            (
                DataType::Int64,
                v(vec![1.into(), 2.into(), 3.into(), 4.into(), 5.into()]),
            ),
            (
                DataType::Float64,
                v(vec![
                    Value::Float(1.5),
                    Value::Null,
                    Value::Float(-2.0),
                    Value::Float(0.0),
                    Value::Float(9.0),
                ]),
            ),
            (
                DataType::Boolean,
                v(vec![
                    true.into(),
                    false.into(),
                    Value::Null,
                    true.into(),
                    false.into(),
                ]),
            ),
            (
                DataType::Utf8,
                v(vec![
                    "a".into(),
                    "".into(),
                    "ccc".into(),
                    Value::Null,
                    "dd".into(),
                ]),
            ),
            (
                DataType::Utf8,
                v(vec![
                    "x".into(),
                    "yy".into(),
                    "".into(),
                    "zzz".into(),
                    "w".into(),
                ]),
            ),
            (
                DataType::Date,
                v(vec![
                    Value::Date(1),
                    Value::Date(-5),
                    Value::Null,
                    Value::Date(7),
                    Value::Date(8),
                ]),
            ),
        ];
        cases
            .into_iter()
            .map(|(dt, vals)| Column::from_values(dt, &vals).unwrap())
            .collect()
    }

    #[test]
    fn bulk_appends_equal_row_by_row_appends() {
        for col in columns() {
            let dt = col.data_type();
            for range in [0..0, 0..5, 1..4, 3..5, 2..3] {
                let mut bulk = ColumnBuilder::new(dt, 0);
                bulk.push_from(&col, 4);
                bulk.extend_range(&col, range.clone());
                let mut slow = ColumnBuilder::new(dt, 0);
                slow.push_from(&col, 4);
                range.clone().for_each(|i| slow.push_from(&col, i));
                assert_eq!(bulk.len(), slow.len());
                let (bulk, slow) = (bulk.finish(), slow.finish());
                assert_eq!(values(&bulk), values(&slow), "{dt} {range:?}");
                assert_eq!(bulk.null_count(), slow.null_count(), "{dt} {range:?}");
            }
            let rows = [4u32, 0, 0, 2, 1];
            let mut bulk = ColumnBuilder::new(dt, 0);
            bulk.extend_rows(&col, &rows);
            bulk.extend_from(&col);
            let expected: Vec<Value> = rows
                .iter()
                .map(|&i| col.value(i as usize))
                .chain(values(&col))
                .collect();
            assert_eq!(values(&bulk.finish()), expected, "{dt}");
            // Dense ascending selections (copied by runs), sparse and repeated ones.
            for rows in [
                &[0u32, 1, 2, 3, 4][..],
                &[0, 1, 3, 4],
                &[1, 2, 4],
                &[0, 4],
                &[2, 3, 3, 4],
            ] {
                let mut bulk = ColumnBuilder::new(dt, 0);
                bulk.extend_rows(&col, rows);
                let expected: Vec<Value> = rows.iter().map(|&i| col.value(i as usize)).collect();
                assert_eq!(values(&bulk.finish()), expected, "{dt} {rows:?}");
            }
        }
    }

    /// Runs from two columns of a type (with NULLs or without) give the rows they name, in
    /// order, as reading them one by one does.
    #[test]
    fn gathered_runs_are_the_rows_they_name() {
        let all = columns();
        for a in &all {
            for b in all.iter().filter(|b| b.data_type() == a.data_type()) {
                let sources = [a, b];
                let runs = [
                    (1, 0, 5),
                    (0, 4, 1),
                    (0, 1, 2),
                    (1, 3, 1),
                    (0, 0, 0),
                    (1, 2, 3),
                ];
                let rows = runs.iter().map(|r| r.2).sum();
                let got = Column::gather_runs(&sources, &runs, rows);
                let want: Vec<Value> = runs
                    .iter()
                    .flat_map(|&(s, start, len)| (start..start + len).map(move |i| (s, i)))
                    .map(|(s, i)| sources[s].value(i))
                    .collect();
                assert_eq!(got.len(), rows);
                assert_eq!(values(&got), want, "{}", a.data_type());
            }
        }
        let none = Column::gather_runs(&[&all[0]], &[], 0);
        assert!(none.is_empty());
    }

    #[test]
    fn a_builder_without_nulls_makes_no_validity_bitmap() {
        let col = Column::from_i64(vec![1, 2, 3]);
        let mut b = ColumnBuilder::new(DataType::Int64, 8);
        b.extend_range(&col, 0..3);
        b.push_i64(4);
        assert!(b.finish().validity.is_none());
        let mut b = ColumnBuilder::new(DataType::Int64, 8);
        b.extend_range(&col, 0..3);
        b.push_null();
        b.push_i64(5);
        let c = b.finish();
        assert_eq!(c.null_count(), 1);
        assert_eq!(
            values(&c),
            vec![1.into(), 2.into(), 3.into(), Value::Null, 5.into()]
        );
    }

    #[test]
    fn take_copies_strings_of_every_length_from_anywhere() {
        // Lengths around the 16-byte short copy, the longest last so that short ones near
        // the end of the buffer have fewer than 16 bytes after them.
        let strs: Vec<String> = (0..60)
            .map(|i| {
                let len = (i * 7) % 40;
                (0..len)
                    .map(|j| (b'a' + ((i + j) % 26) as u8) as char)
                    .collect()
            })
            .chain(["", "x", "0123456789abcdef", "tail"].map(String::from))
            .collect();
        let col = Column::from_strs(&strs);
        let n = strs.len() as u32;
        let indices: Vec<u32> = (0..3 * n).map(|k| (k * 37 + 11) % n).rev().collect();
        let taken = col.take(&indices);
        let want: Vec<&str> = indices.iter().map(|&i| strs[i as usize].as_str()).collect();
        let got: Vec<&str> = (0..taken.len()).map(|i| taken.str_at(i)).collect();
        assert_eq!(got, want);
        assert_eq!(taken.take(&[]).len(), 0);
        // The same rows gathered as runs of one and of several rows, from two sources.
        let other = Column::from_strs(&strs[..7]);
        let sources = [&col, &other];
        let mut runs: Vec<(usize, usize, usize)> =
            indices.iter().map(|&i| (0, i as usize, 1)).collect();
        runs.extend([(1, 0, 7), (0, 10, 30), (1, 6, 1), (0, strs.len() - 1, 1)]);
        let rows = runs.iter().map(|r| r.2).sum();
        let gathered = Column::gather_runs(&sources, &runs, rows);
        let want: Vec<&str> = runs
            .iter()
            .flat_map(|&(s, start, len)| (start..start + len).map(move |i| (s, i)))
            .map(|(s, i)| sources[s].str_at(i))
            .collect();
        let got: Vec<&str> = (0..gathered.len()).map(|i| gathered.str_at(i)).collect();
        assert_eq!(got, want);
    }
}
