//! Index keys and probes: [`IdxKey`], one indexed value (or a composite primary key's
//! values) with a total order, as the primary-key index of a partition
//! ([`crate::storage::PartitionData`]) and the ordered secondary indexes
//! ([`crate::secondary_index`]) hold them; and how a lookup value becomes a key of a column's
//! type ([`eq_probe`], [`range_bound`]), or matches nothing.

use crate::column::{Column, ColumnData};
use crate::error::{Error, Result};
use crate::types::DataType;
use crate::value::Value;
use std::cmp::Ordering;
use std::ops::Bound;

/// An index key: one non-NULL value of an indexed column (or, for a composite primary key,
/// the key's values in key order), totally ordered.
#[derive(Debug, Clone)]
pub(crate) enum IdxKey {
    Int(i64),
    Float(f64),
    Str(Box<str>),
    Bool(bool),
    /// An unscaled decimal of a column of this scale.
    Dec(i128, u8),
    Date(i32),
    Ts(i64),
    /// The values of a composite primary key, in key order.
    Tuple(Box<[IdxKey]>),
}

impl IdxKey {
    /// The order of keys of different kinds (which never meet in one index).
    fn rank(&self) -> u8 {
        match self {
            IdxKey::Bool(_) => 0,
            IdxKey::Int(_) => 1,
            IdxKey::Float(_) => 2,
            IdxKey::Str(_) => 3,
            IdxKey::Dec(..) => 4,
            IdxKey::Date(_) => 5,
            IdxKey::Ts(_) => 6,
            IdxKey::Tuple(_) => 7,
        }
    }

    /// Heap bytes the key holds (string bytes, a tuple's parts).
    pub(crate) fn heap_size(&self) -> usize {
        match self {
            IdxKey::Str(s) => s.len(),
            IdxKey::Tuple(t) => {
                t.iter().map(IdxKey::heap_size).sum::<usize>()
                    + t.len() * std::mem::size_of::<IdxKey>()
            }
            _ => 0,
        }
    }

    /// The key as a value (a composite key as its SQL text).
    pub(crate) fn to_value(&self) -> Value {
        match self {
            IdxKey::Int(v) => Value::Int(*v),
            IdxKey::Float(v) => Value::Float(*v),
            IdxKey::Str(v) => Value::Str(v.to_string()),
            IdxKey::Bool(v) => Value::Bool(*v),
            IdxKey::Dec(v, s) => Value::Decimal(*v, *s),
            IdxKey::Date(v) => Value::Date(*v),
            IdxKey::Ts(v) => Value::Timestamp(*v),
            IdxKey::Tuple(t) => Value::Str(tuple_sql(t)),
        }
    }
}

/// A composite key's values as SQL text, e.g. `(1, 'x')`.
fn tuple_sql(t: &[IdxKey]) -> String {
    let parts: Vec<String> = t.iter().map(|k| k.to_value().to_sql()).collect();
    format!("({})", parts.join(", "))
}

impl Ord for IdxKey {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (IdxKey::Int(a), IdxKey::Int(b)) => a.cmp(b),
            (IdxKey::Float(a), IdxKey::Float(b)) => a.total_cmp(b),
            (IdxKey::Str(a), IdxKey::Str(b)) => a.cmp(b),
            (IdxKey::Bool(a), IdxKey::Bool(b)) => a.cmp(b),
            (IdxKey::Dec(a, _), IdxKey::Dec(b, _)) => a.cmp(b),
            (IdxKey::Date(a), IdxKey::Date(b)) => a.cmp(b),
            (IdxKey::Ts(a), IdxKey::Ts(b)) => a.cmp(b),
            (IdxKey::Tuple(a), IdxKey::Tuple(b)) => a.cmp(b),
            (a, b) => a.rank().cmp(&b.rank()),
        }
    }
}

impl PartialOrd for IdxKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for IdxKey {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for IdxKey {}

impl std::hash::Hash for IdxKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        match self {
            IdxKey::Int(v) => v.hash(state),
            IdxKey::Float(v) => v.to_bits().hash(state),
            IdxKey::Str(v) => v.hash(state),
            IdxKey::Bool(v) => v.hash(state),
            IdxKey::Dec(v, _) => v.hash(state),
            IdxKey::Date(v) => v.hash(state),
            IdxKey::Ts(v) => v.hash(state),
            IdxKey::Tuple(v) => v.hash(state),
        }
    }
}

/// The key at row `i` of `col`, or `None` for NULL.
pub(crate) fn key_at(col: &Column, i: usize) -> Option<IdxKey> {
    if col.is_null(i) {
        return None;
    }
    Some(match &col.data {
        ColumnData::Int64(v) => IdxKey::Int(v[i]),
        ColumnData::Float64(v) => IdxKey::Float(v[i]),
        ColumnData::Boolean(v) => IdxKey::Bool(v[i]),
        ColumnData::Utf8 { .. } => IdxKey::Str(col.str_at(i).into()),
        ColumnData::Decimal { values, scale, .. } => IdxKey::Dec(values[i], *scale),
        ColumnData::Date(v) => IdxKey::Date(v[i]),
        ColumnData::Timestamp(v) => IdxKey::Ts(v[i]),
    })
}

/// How a lookup value relates to keys of a column type.
pub(crate) enum Probe {
    /// Exactly this key.
    Key(IdxKey),
    /// Matches nothing (NULL, or a fractional float against an integer column).
    Nothing,
}

/// Converts an equality lookup value into a key of column type `dt`.
pub(crate) fn eq_probe(v: &Value, dt: DataType) -> Result<Probe> {
    Ok(match (v, dt) {
        (Value::Null, _) => Probe::Nothing,
        (Value::Int(i), DataType::Int64) => Probe::Key(IdxKey::Int(*i)),
        (Value::Int(i), DataType::Float64) => Probe::Key(IdxKey::Float(*i as f64)),
        (Value::Float(f), DataType::Float64) => Probe::Key(IdxKey::Float(*f)),
        (Value::Float(f), DataType::Int64) => {
            if f.fract() == 0.0 && *f >= -9.223_372_036_854_776e18 && *f < 9.223_372_036_854_776e18
            {
                Probe::Key(IdxKey::Int(*f as i64))
            } else {
                Probe::Nothing
            }
        }
        (Value::Str(s), DataType::Utf8) => Probe::Key(IdxKey::Str(s.as_str().into())),
        (Value::Bool(b), DataType::Boolean) => Probe::Key(IdxKey::Bool(*b)),
        (Value::Int(_) | Value::Decimal(..), DataType::Decimal { scale, .. }) => {
            // Only a value exact at the column's scale can equal a key.
            let exact = v
                .as_decimal(scale)
                .filter(|&x| Value::Decimal(x, scale).sort_cmp(v).is_eq());
            match exact {
                Some(x) => Probe::Key(IdxKey::Dec(x, scale)),
                None => Probe::Nothing,
            }
        }
        (Value::Date(d), DataType::Date) => Probe::Key(IdxKey::Date(*d)),
        (Value::Timestamp(t), DataType::Timestamp) => Probe::Key(IdxKey::Ts(*t)),
        (Value::Date(d), DataType::Timestamp) => {
            Probe::Key(IdxKey::Ts(crate::temporal::date_to_timestamp(*d)))
        }
        (v, dt) => return Err(Error::Type(format!("cannot look up {v} in a {dt} index"))),
    })
}

/// A range bound converted to column type `dt`: `Ok(None)` means "matches nothing".
pub(crate) fn range_bound(
    v: &Value,
    inclusive: bool,
    dt: DataType,
    is_low: bool,
) -> Result<Option<Bound<IdxKey>>> {
    let make = |k: IdxKey, incl: bool| {
        if incl {
            Bound::Included(k)
        } else {
            Bound::Excluded(k)
        }
    };
    Ok(match (v, dt) {
        (Value::Null, _) => None,
        (Value::Float(f), DataType::Int64) => {
            const LIMIT: f64 = 9.223_372_036_854_776e18;
            if f.is_nan() {
                None
            } else if *f >= LIMIT {
                // Above every integer.
                if is_low {
                    None
                } else {
                    Some(Bound::Unbounded)
                }
            } else if *f < -LIMIT {
                if is_low {
                    Some(Bound::Unbounded)
                } else {
                    None
                }
            } else if f.fract() == 0.0 {
                Some(make(IdxKey::Int(*f as i64), inclusive))
            } else if is_low {
                Some(Bound::Included(IdxKey::Int(f.ceil() as i64)))
            } else {
                Some(Bound::Included(IdxKey::Int(f.floor() as i64)))
            }
        }
        (v, dt) => match eq_probe(v, dt)? {
            Probe::Key(k) => Some(make(k, inclusive)),
            Probe::Nothing => None,
        },
    })
}

/// Whether no key lies between bounds `lo` and `hi`.
pub(crate) fn range_is_empty(lo: &Bound<IdxKey>, hi: &Bound<IdxKey>) -> bool {
    let (l, l_incl) = match lo {
        Bound::Included(k) => (k, true),
        Bound::Excluded(k) => (k, false),
        Bound::Unbounded => return false,
    };
    let (h, h_incl) = match hi {
        Bound::Included(k) => (k, true),
        Bound::Excluded(k) => (k, false),
        Bound::Unbounded => return false,
    };
    match l.cmp(h) {
        Ordering::Greater => true,
        Ordering::Equal => !(l_incl && h_incl),
        Ordering::Less => false,
    }
}
