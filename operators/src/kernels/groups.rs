//! The distinct rows of a set of key columns, each with a dense id: what a hash aggregation
//! groups by, and what a recursive UNION remembers to drop the rows it has seen.
//!
//! Each key column's distinct values live in a typed [`KeyStore`]; [`Groups::assign`] maps
//! every row of a batch to the id of its group, appending the keys it has not seen (one
//! BIGINT key is looked up by value in an `IntTable`, any other keys by row hash and compared
//! column by column). NULLs are one value, as GROUP BY and UNION treat them.

use super::hash::hash_rows;
use super::int_table::{IntTable, PREFETCH_AHEAD};
use super::packed_keys;
use crate::bitmap::Bitmap;
use crate::column::ColumnData;
use crate::{Column, DataType, Error, Result};
use hashbrown::HashTable;
use std::borrow::Cow;

/// Typed storage of the distinct values of one group key column.
#[derive(Debug)]
pub(crate) enum KeyStore {
    Int(Vec<i64>),
    Float(Vec<f64>),
    Bool(Vec<bool>),
    Str {
        offsets: Vec<u32>,
        bytes: Vec<u8>,
    },
    /// DECIMAL, DATE and TIMESTAMP keys, widened to `i128`; rebuilt as `dt`.
    Wide {
        v: Vec<i128>,
        dt: DataType,
    },
}

/// Row `i` of a DECIMAL, DATE or TIMESTAMP column as an `i128` (order preserved).
#[inline]
pub(crate) fn wide_at(col: &Column, i: usize) -> Option<i128> {
    match &col.data {
        ColumnData::Decimal { values, .. } => Some(values[i]),
        ColumnData::Date(v) => Some(i128::from(v[i])),
        ColumnData::Timestamp(v) => Some(i128::from(v[i])),
        _ => None,
    }
}

/// Wide values back into a column of type `dt` (a DECIMAL, DATE or TIMESTAMP).
pub(crate) fn from_wide(dt: DataType, v: &[i128]) -> ColumnData {
    match dt {
        DataType::Date => ColumnData::Date(v.iter().map(|&x| x as i32).collect()),
        DataType::Timestamp => ColumnData::Timestamp(v.iter().map(|&x| x as i64).collect()),
        DataType::Decimal { precision, scale } => ColumnData::Decimal {
            values: v.to_vec(),
            precision,
            scale,
        },
        _ => ColumnData::Int64(v.iter().map(|&x| x as i64).collect()),
    }
}

impl KeyStore {
    pub(crate) fn new(dt: DataType) -> Self {
        match dt {
            DataType::Int64 => KeyStore::Int(Vec::new()),
            DataType::Float64 => KeyStore::Float(Vec::new()),
            DataType::Boolean => KeyStore::Bool(Vec::new()),
            DataType::Utf8 => KeyStore::Str {
                offsets: vec![0],
                bytes: Vec::new(),
            },
            DataType::Decimal { .. } | DataType::Date | DataType::Timestamp => {
                KeyStore::Wide { v: Vec::new(), dt }
            }
        }
    }

    /// Forgets every value, keeping the allocations.
    pub(crate) fn clear(&mut self) {
        match self {
            KeyStore::Int(v) => v.clear(),
            KeyStore::Float(v) => v.clear(),
            KeyStore::Bool(v) => v.clear(),
            KeyStore::Str { offsets, bytes } => {
                offsets.truncate(1);
                bytes.clear();
            }
            KeyStore::Wide { v, .. } => v.clear(),
        }
    }

    /// Appends rows `0..n` of `col` (same type), as [`KeyStore::push`] would one by one.
    pub(crate) fn extend(&mut self, col: &Column, n: usize) {
        match (&mut *self, &col.data) {
            (KeyStore::Int(s), ColumnData::Int64(v)) if col.validity.is_none() => {
                s.extend_from_slice(&v[..n]);
            }
            (KeyStore::Float(s), ColumnData::Float64(v)) if col.validity.is_none() => {
                s.extend_from_slice(&v[..n]);
            }
            _ => (0..n).for_each(|i| self.push(col, i)),
        }
    }

    /// Appends row `i` of `col` (same type); NULL rows append a default.
    pub(crate) fn push(&mut self, col: &Column, i: usize) {
        let valid = col.is_valid(i);
        match (self, &col.data) {
            (KeyStore::Int(s), ColumnData::Int64(v)) => s.push(if valid { v[i] } else { 0 }),
            (KeyStore::Float(s), ColumnData::Float64(v)) => s.push(if valid { v[i] } else { 0.0 }),
            (KeyStore::Bool(s), ColumnData::Boolean(v)) => s.push(valid && v[i]),
            (
                KeyStore::Str { offsets, bytes },
                ColumnData::Utf8 {
                    offsets: o,
                    bytes: b,
                },
            ) => {
                if valid {
                    bytes.extend_from_slice(&b[o[i] as usize..o[i + 1] as usize]);
                }
                offsets.push(bytes.len() as u32);
            }
            (KeyStore::Wide { v, .. }, _) => v.push(if valid {
                wide_at(col, i).unwrap_or(0)
            } else {
                0
            }),
            _ => {}
        }
    }

    pub(crate) fn memory_size(&self) -> usize {
        match self {
            KeyStore::Int(v) => v.capacity() * 8,
            KeyStore::Float(v) => v.capacity() * 8,
            KeyStore::Bool(v) => v.capacity(),
            KeyStore::Str { offsets, bytes } => offsets.capacity() * 4 + bytes.capacity(),
            KeyStore::Wide { v, .. } => v.capacity() * 16,
        }
    }

    /// Rows `start..end` as a column.
    pub(crate) fn to_column(&self, validity: &[bool], start: usize, end: usize) -> Column {
        let data = match self {
            KeyStore::Int(v) => ColumnData::Int64(v[start..end].to_vec()),
            KeyStore::Float(v) => ColumnData::Float64(v[start..end].to_vec()),
            KeyStore::Bool(v) => ColumnData::Boolean(v[start..end].to_vec()),
            KeyStore::Str { offsets, bytes } => {
                let base = offsets[start];
                ColumnData::Utf8 {
                    offsets: offsets[start..=end].iter().map(|o| o - base).collect(),
                    bytes: bytes[base as usize..offsets[end] as usize].to_vec(),
                }
            }
            KeyStore::Wide { v, dt } => from_wide(*dt, &v[start..end]),
        };
        let valid = &validity[start..end];
        let bitmap = (!valid.iter().all(|&v| v)).then(|| Bitmap::from_bools(valid));
        Column::with_validity(data, bitmap)
    }

    /// Whether stored group `g` equals row `i` of `col` (validity handled by the caller).
    #[inline]
    pub(crate) fn eq(&self, g: usize, col: &Column, i: usize) -> bool {
        match (self, &col.data) {
            (KeyStore::Int(s), ColumnData::Int64(v)) => s[g] == v[i],
            (KeyStore::Float(s), ColumnData::Float64(v)) => {
                s[g] == v[i] || (s[g].is_nan() && v[i].is_nan())
            }
            (KeyStore::Bool(s), ColumnData::Boolean(v)) => s[g] == v[i],
            (
                KeyStore::Str { offsets, bytes },
                ColumnData::Utf8 {
                    offsets: o,
                    bytes: b,
                },
            ) => {
                bytes[offsets[g] as usize..offsets[g + 1] as usize]
                    == b[o[i] as usize..o[i + 1] as usize]
            }
            (KeyStore::Wide { v, .. }, _) => wide_at(col, i) == Some(v[g]),
            _ => false,
        }
    }
}

/// How the groups are found by key.
pub(crate) enum GroupIndex {
    /// One BIGINT key: by value, with the NULL key's group apart.
    Int {
        table: IntTable,
        null_group: Option<u32>,
    },
    /// Any other keys: `(hash, group id)` by row hash, compared key by key; and, for batches
    /// whose keys pack into one code a row ([`super::packed_keys`]), group id by code.
    Hashed {
        table: HashTable<(u64, u32)>,
        hashes: Vec<u64>,
        packed: hashbrown::HashMap<u128, u32>,
        codes: Vec<u128>,
    },
}

/// The distinct group keys seen so far and the index over them.
pub(crate) struct Groups {
    pub(crate) types: Vec<DataType>,
    pub(crate) stores: Vec<KeyStore>,
    /// Per key column, per group: whether the key is non-NULL.
    pub(crate) valid: Vec<Vec<bool>>,
    pub(crate) index: GroupIndex,
    pub(crate) len: usize,
}

impl Groups {
    pub(crate) fn new(types: &[DataType]) -> Self {
        let index = if types == [DataType::Int64] {
            GroupIndex::Int {
                table: IntTable::with_capacity(0),
                null_group: None,
            }
        } else {
            GroupIndex::Hashed {
                table: HashTable::new(),
                hashes: Vec::new(),
                packed: hashbrown::HashMap::new(),
                codes: Vec::new(),
            }
        };
        Groups {
            types: types.to_vec(),
            stores: types.iter().map(|&t| KeyStore::new(t)).collect(),
            valid: types.iter().map(|_| Vec::new()).collect(),
            index,
            len: 0,
        }
    }

    /// Forgets every group, keeping the allocations of the key stores (the index is let go):
    /// for a partial aggregation that lets its rows through, whose batches are stored as
    /// groups of a row each ([`Groups::append_rows`]) and never looked up.
    pub(crate) fn clear(&mut self) {
        self.stores.iter_mut().for_each(KeyStore::clear);
        self.valid.iter_mut().for_each(Vec::clear);
        self.index = Groups::new(&self.types).index;
        self.len = 0;
    }

    /// Appends every row of `keys` as a group of its own (equal keys too), with the ids in
    /// `ids`: no lookup, for rows a later phase merges by key anyway. The index is not kept
    /// up to date: only [`Groups::clear`] may follow, not [`Groups::assign`].
    pub(crate) fn append_rows(&mut self, keys: &[Cow<'_, Column>], n: usize, ids: &mut Vec<u32>) {
        for ((store, valid), col) in self.stores.iter_mut().zip(&mut self.valid).zip(keys) {
            store.extend(col, n);
            match &col.validity {
                None => valid.resize(valid.len() + n, true),
                Some(bits) => valid.extend((0..n).map(|i| bits.get(i))),
            }
        }
        ids.clear();
        ids.extend(self.len as u32..(self.len + n) as u32);
        self.len += n;
    }

    pub(crate) fn group_eq(&self, g: usize, keys: &[Cow<'_, Column>], i: usize) -> bool {
        keys.iter()
            .zip(&self.stores)
            .zip(&self.valid)
            .all(|((col, store), valid)| {
                let v = col.is_valid(i);
                if v != valid[g] {
                    return false;
                }
                !v || store.eq(g, col, i)
            })
    }

    /// Appends row `i` of `keys` as a new group and returns its id.
    pub(crate) fn add(&mut self, keys: &[Cow<'_, Column>], i: usize) -> u32 {
        for ((store, valid), col) in self.stores.iter_mut().zip(&mut self.valid).zip(keys) {
            store.push(col, i);
            valid.push(col.is_valid(i));
        }
        self.len += 1;
        (self.len - 1) as u32
    }

    /// Maps every row of `keys` to a group id, adding new groups.
    pub(crate) fn assign(
        &mut self,
        keys: &[Cow<'_, Column>],
        n: usize,
        ids: &mut Vec<u32>,
    ) -> Result<()> {
        ids.clear();
        let int_values = match (&self.index, keys) {
            (GroupIndex::Int { .. }, [k]) => match &k.data {
                ColumnData::Int64(v) => Some(v),
                _ => None,
            },
            _ => None,
        };
        if let Some(values) = int_values {
            return self.assign_int(&keys[0], values, n, ids);
        }
        let GroupIndex::Hashed {
            table,
            hashes,
            packed,
            codes,
        } = &mut self.index
        else {
            return Err(Error::Internal(format!(
                "a BIGINT group key came as {:?}",
                keys.iter().map(|k| k.data_type()).collect::<Vec<_>>()
            )));
        };
        let mut table = std::mem::take(table);
        let mut hashes = std::mem::take(hashes);
        let mut packed = std::mem::take(packed);
        let mut codes = std::mem::take(codes);
        let columns: Vec<&Column> = keys.iter().map(|k| k.as_ref()).collect();
        if packed_keys::pack(&columns, n, &mut codes) {
            // By code; a code not seen yet finds (or makes) its group the general way.
            hashes.clear();
            for (i, code) in codes.iter().enumerate() {
                let g = match packed.get(code) {
                    Some(&g) => g,
                    None => {
                        if hashes.is_empty() {
                            hash_rows(keys, &mut hashes);
                        }
                        let g = self.find_or_add(&mut table, hashes[i], keys, i);
                        packed.insert(*code, g);
                        g
                    }
                };
                ids.push(g);
            }
        } else {
            hash_rows(keys, &mut hashes);
            for (i, &h) in hashes.iter().enumerate().take(n) {
                ids.push(self.find_or_add(&mut table, h, keys, i));
            }
        }
        self.index = GroupIndex::Hashed {
            table,
            hashes,
            packed,
            codes,
        };
        Ok(())
    }

    /// The group of row `i` of `keys` (hash `h`) in `table`, added when there is none.
    fn find_or_add(
        &mut self,
        table: &mut HashTable<(u64, u32)>,
        h: u64,
        keys: &[Cow<'_, Column>],
        i: usize,
    ) -> u32 {
        let found = table.find(h, |&(gh, g)| gh == h && self.group_eq(g as usize, keys, i));
        match found {
            Some(&(_, g)) => g,
            None => {
                let g = self.add(keys, i);
                table.insert_unique(h, (h, g), |&(gh, _)| gh);
                g
            }
        }
    }

    /// [`Groups::assign`] for one BIGINT key column (`values` are its values).
    pub(crate) fn assign_int(
        &mut self,
        col: &Column,
        values: &[i64],
        n: usize,
        ids: &mut Vec<u32>,
    ) -> Result<()> {
        let Groups {
            stores,
            valid,
            len,
            index,
            ..
        } = self;
        let (GroupIndex::Int { table, null_group }, [KeyStore::Int(store)], [valid]) =
            (index, stores.as_mut_slice(), valid.as_mut_slice())
        else {
            return Err(Error::Internal(
                "BIGINT groups without their key store".into(),
            ));
        };
        ids.reserve(n);
        let prefetch = table.worth_prefetching();
        for (i, &v) in values.iter().enumerate().take(n) {
            if let Some(&ahead) = values.get(i + PREFETCH_AHEAD).filter(|_| prefetch) {
                table.prefetch(ahead);
            }
            let g = if col.is_valid(i) {
                let g = table.get_or_insert(v, *len as u32);
                if g as usize == *len {
                    store.push(v);
                    valid.push(true);
                    *len += 1;
                }
                g
            } else {
                *null_group.get_or_insert_with(|| {
                    store.push(0);
                    valid.push(false);
                    *len += 1;
                    (*len - 1) as u32
                })
            };
            ids.push(g);
        }
        Ok(())
    }

    pub(crate) fn memory_size(&self) -> usize {
        self.stores.iter().map(KeyStore::memory_size).sum::<usize>()
            + self.valid.iter().map(Vec::capacity).sum::<usize>()
            + match &self.index {
                GroupIndex::Int { table, .. } => table.memory_size(),
                GroupIndex::Hashed {
                    table,
                    hashes,
                    packed,
                    codes,
                } => {
                    table.allocation_size()
                        + hashes.capacity() * 8
                        + packed.allocation_size()
                        + codes.capacity() * 16
                }
            }
    }
}
