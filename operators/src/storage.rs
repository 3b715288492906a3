//! In-memory partition storage: the rows of one table partition as immutable columnar chunks,
//! a primary-key index (tables that declare a key, of one or more columns) and ordered
//! secondary indexes, plus the partition function and [`assign_partitions`], which places the
//! rows of a load (by the stable hashes of [`crate::hashing`]), and the stored chunks a scan
//! reads ([`ScanChunk`]).
//!
//! Rows live in `Arc<Batch>` chunks of at most [`CHUNK_ROWS`] rows; every chunk but the
//! last is full, so row id `r` is row `r % CHUNK_ROWS` of chunk `r / CHUNK_ROWS`. Scans share
//! the chunks; an insert rebuilds only the last, not-yet-full chunk and appends new ones, and a
//! delete packs the remaining rows into new chunks (and rebuilds the indexes), so running scans
//! keep their snapshot.

use crate::batch::Batch;
use crate::column::{Column, ColumnData};
use crate::error::{Error, Result};
use crate::eval::{evaluate_predicate, evaluate_scalar};
use crate::expr::{BinaryOp, Expr};
use crate::hashing::{hash_bytes, hash_decimal, hash_f64, mix64};
use crate::plan::IndexLookup;
use crate::types::{DataType, Schema};
use crate::value::Value;
use hashbrown::{HashMap, HashSet};
use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::Arc;

/// Rows in a stored chunk (the last chunk of a partition may hold fewer). Kept apart from the
/// execution batch size ([`crate::DEFAULT_BATCH_SIZE`]): an insert rebuilds the partition's
/// last chunk, so small chunks keep small inserts cheap, and a scan coalesces chunks into
/// batches of the plan's size.
pub const CHUNK_ROWS: usize = 1024;

/// A stored chunk for a scan to read, with the rows of it an index lookup selected (`None`:
/// every row).
#[derive(Debug, Clone)]
pub struct ScanChunk {
    /// Full table rows.
    pub rows: Arc<Batch>,
    /// Row numbers within `rows`, ascending.
    pub selection: Option<Vec<u32>>,
}

impl ScanChunk {
    /// The rows it offers to the scan's filter: its selection's, or all of them.
    pub(crate) fn offered(&self) -> usize {
        self.selection
            .as_ref()
            .map_or(self.rows.num_rows(), Vec::len)
    }
}

impl From<Arc<Batch>> for ScanChunk {
    fn from(rows: Arc<Batch>) -> Self {
        ScanChunk {
            rows,
            selection: None,
        }
    }
}

/// The stable hash of one non-NULL key value (`None` for NULL), as [`partition_rows`] computes
/// it for a column.
fn hash_value(v: &Value) -> Option<u64> {
    Some(match v {
        Value::Null => return None,
        Value::Int(v) => mix64(*v as u64),
        Value::Float(f) => hash_f64(*f),
        Value::Str(s) => hash_bytes(s.as_bytes()),
        Value::Bool(b) => mix64(*b as u64),
        Value::Decimal(v, s) => hash_decimal(*v, *s),
        Value::Date(d) => mix64(i64::from(*d) as u64),
        Value::Timestamp(t) => mix64(*t as u64),
    })
}

/// Folds the hash of the next column of a composite key into `acc`.
#[inline]
fn combine(acc: u64, h: u64) -> u64 {
    mix64(acc.rotate_left(23) ^ h)
}

/// The partition (0..partitions) that owns primary key `key`. Stable across runs and machines.
/// NULL keys (and `partitions == 0`) map to partition 0.
pub fn partition_of(key: &Value, partitions: u32) -> u32 {
    partition_of_key(std::slice::from_ref(key), partitions)
}

/// The partition that owns the (possibly composite) primary key whose column values are
/// `key`, in key order. A one-column key is placed as [`partition_of`] places it; a key with
/// a NULL part maps to partition 0.
pub fn partition_of_key(key: &[Value], partitions: u32) -> u32 {
    if partitions <= 1 {
        return 0;
    }
    let mut acc = None;
    for v in key {
        let Some(h) = hash_value(v) else {
            return 0;
        };
        acc = Some(acc.map_or(h, |a| combine(a, h)));
    }
    acc.map_or(0, |h| (h % partitions as u64) as u32)
}

/// The stable hash of every row of `col` into `out` (cleared first); NULL rows hash to 0.
fn hash_column(col: &Column, out: &mut Vec<u64>) {
    out.clear();
    match &col.data {
        ColumnData::Int64(v) => out.extend(v.iter().map(|&x| mix64(x as u64))),
        ColumnData::Float64(v) => out.extend(v.iter().map(|&x| hash_f64(x))),
        ColumnData::Boolean(v) => out.extend(v.iter().map(|&x| mix64(x as u64))),
        ColumnData::Decimal { values, scale, .. } => {
            out.extend(values.iter().map(|&x| hash_decimal(x, *scale)))
        }
        ColumnData::Date(v) => out.extend(v.iter().map(|&x| mix64(i64::from(x) as u64))),
        ColumnData::Timestamp(v) => out.extend(v.iter().map(|&x| mix64(x as u64))),
        ColumnData::Utf8 { offsets, bytes } => out.extend(
            offsets
                .windows(2)
                .map(|w| hash_bytes(&bytes[w[0] as usize..w[1] as usize])),
        ),
    }
}

/// Computes [`partition_of`] for every row of `col` into `out` (cleared first), vectorized.
pub fn partition_rows(col: &Column, partitions: u32, out: &mut Vec<u32>) {
    partition_key_rows(&[col], partitions, out);
}

/// Computes [`partition_of_key`] for every row of the key columns `cols` (in key order) into
/// `out` (cleared first), vectorized.
pub fn partition_key_rows(cols: &[&Column], partitions: u32, out: &mut Vec<u32>) {
    out.clear();
    let n = cols.first().map_or(0, |c| c.len());
    if partitions <= 1 || cols.is_empty() {
        out.resize(n, 0);
        return;
    }
    let p = partitions as u64;
    let mut acc = Vec::new();
    hash_column(cols[0], &mut acc);
    let mut next = Vec::new();
    for col in &cols[1..] {
        hash_column(col, &mut next);
        for (a, &h) in acc.iter_mut().zip(&next) {
            *a = combine(*a, h);
        }
    }
    out.extend(acc.iter().map(|&h| (h % p) as u32));
    for col in cols {
        if let Some(valid) = &col.validity {
            for (i, o) in out.iter_mut().enumerate() {
                if !valid.get(i) {
                    *o = 0;
                }
            }
        }
    }
}

/// The partition of every row of `batch`, into `out` (cleared first).
///
/// A table with a primary key (`primary_key` holds its columns, in key order) places each row
/// by its key, as [`partition_key_rows`] does. A table without one (`primary_key` empty)
/// gives its rows hidden row ids, handed out consecutively and never reused (as SQLite's
/// rowid): row `i` of this batch has row id `first_row_id + i` and goes to
/// [`partition_of`]`(Value::Int(first_row_id + i))`, so rows that are equal in every column
/// are all kept and spread over the partitions.
///
/// Fails with [`Error::Internal`] when a key column is not a column of `batch`.
pub fn assign_partitions(
    batch: &Batch,
    primary_key: &[usize],
    first_row_id: u64,
    partitions: u32,
    out: &mut Vec<u32>,
) -> Result<()> {
    if primary_key.is_empty() {
        out.clear();
        let n = batch.num_rows() as u64;
        if partitions <= 1 {
            out.resize(n as usize, 0);
        } else {
            let p = partitions as u64;
            // As `partition_of(&Value::Int(id as i64))`: the same bits go to `mix64`.
            out.extend((0..n).map(|i| (mix64(first_row_id.wrapping_add(i)) % p) as u32));
        }
        return Ok(());
    }
    let mut cols = Vec::with_capacity(primary_key.len());
    for &k in primary_key {
        let Some(col) = batch.columns().get(k) else {
            return Err(Error::Internal(format!(
                "primary key column #{k} out of range for a batch of {} columns",
                batch.num_columns()
            )));
        };
        cols.push(col);
    }
    partition_key_rows(&cols, partitions, out);
    Ok(())
}

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

    fn to_value(&self) -> Value {
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

/// The primary key of row `i` over key columns `cols`: one column's key, or a
/// [`IdxKey::Tuple`] of several; `None` when any part is NULL.
fn row_key(cols: &[&Column], i: usize) -> Option<IdxKey> {
    match cols {
        [one] => key_at(one, i),
        _ => cols
            .iter()
            .map(|c| key_at(c, i))
            .collect::<Option<Box<[IdxKey]>>>()
            .map(IdxKey::Tuple),
    }
}

/// A whole row's values, NULLs included, for matching rows of a table without a key.
fn row_values(chunk: &Batch, i: usize) -> Vec<Option<IdxKey>> {
    chunk.columns().iter().map(|c| key_at(c, i)).collect()
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

/// The rows of one partition of one table.
#[derive(Debug, Clone)]
pub struct PartitionData {
    schema: Schema,
    types: Vec<DataType>,
    /// The primary-key columns, in key order; empty for a table without a declared key, whose
    /// rows are all kept (no uniqueness check, no key index).
    primary_key: Vec<usize>,
    chunks: Vec<Arc<Batch>>,
    num_rows: usize,
    /// Primary key → row id (empty without a primary key). A composite key is an
    /// [`IdxKey::Tuple`].
    pk_index: HashMap<IdxKey, u32>,
    /// Heap bytes of string keys held by the key index.
    key_bytes: usize,
}

impl PartitionData {
    /// An empty partition for a table with `schema` and primary key columns `primary_key`
    /// (empty: the table has no key and keeps every row, duplicates and NULLs included).
    /// Secondary indexes are not a partition's: they span a node's partitions
    /// ([`crate::table_store::TableStore`]).
    pub fn new(schema: Schema, primary_key: &[usize]) -> Self {
        let types = schema.types();
        PartitionData {
            schema,
            types,
            primary_key: primary_key.to_vec(),
            chunks: Vec::new(),
            num_rows: 0,
            pk_index: HashMap::new(),
            key_bytes: 0,
        }
    }

    /// The table schema.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// The primary-key columns of `batch` (a batch of full table rows), in key order.
    fn key_columns<'b>(&self, batch: &'b Batch) -> Result<Vec<&'b Column>> {
        self.primary_key
            .iter()
            .map(|&k| {
                batch
                    .columns()
                    .get(k)
                    .ok_or_else(|| Error::Internal("primary key column out of range".into()))
            })
            .collect()
    }

    /// The key's name in errors: the column, or `(a, b)` for a composite key.
    fn key_name(&self) -> String {
        let names: Vec<&str> = self
            .primary_key
            .iter()
            .map(|&k| self.schema.fields[k].name.as_str())
            .collect();
        match names.as_slice() {
            [one] => one.to_string(),
            _ => format!("({})", names.join(", ")),
        }
    }

    /// The error for a duplicate key `k`.
    fn duplicate(&self, k: &IdxKey) -> Error {
        Error::DuplicateKey {
            column: self.key_name(),
            value: k.to_value(),
        }
    }

    /// Checks the column count and types of `batch` and the row limit, for `extra` more rows.
    fn check_shape(&self, batch: &Batch, extra: usize) -> Result<()> {
        if batch.num_columns() != self.types.len() {
            return Err(Error::Type(format!(
                "insert has {} columns, table has {}",
                batch.num_columns(),
                self.types.len()
            )));
        }
        for (i, (col, &dt)) in batch.columns().iter().zip(&self.types).enumerate() {
            if col.data_type() != dt {
                return Err(Error::Type(format!(
                    "column {} is {dt}, got a {} value",
                    self.schema.fields[i].name,
                    col.data_type()
                )));
            }
        }
        if extra as u64 + self.num_rows as u64 > u32::MAX as u64 {
            return Err(Error::Memory("partition row limit reached".into()));
        }
        Ok(())
    }

    /// Checks that `batch` could be inserted without changing anything: the column count and
    /// types, the row limit and, when the table has a primary key, that no key is NULL
    /// ([`Error::NullKey`]) and none is already stored or repeated within `batch`
    /// ([`Error::DuplicateKey`], naming the key column and the first duplicate value).
    pub fn check_insert(&self, batch: &Batch) -> Result<()> {
        self.check_replace(&Batch::empty(&[]), batch)
    }

    /// Checks that [`PartitionData::replace`]`(deleted, batch)` would succeed, without changing
    /// anything: as [`PartitionData::check_insert`], where the keys of `deleted` (a batch of
    /// key columns, in key order) count as free.
    pub fn check_replace(&self, deleted: &Batch, batch: &Batch) -> Result<()> {
        self.check_shape(batch, batch.num_rows())?;
        if self.primary_key.is_empty() {
            return Ok(());
        }
        let cols = self.key_columns(batch)?;
        for (&k, col) in self.primary_key.iter().zip(&cols) {
            if col.null_count() > 0 {
                return Err(Error::NullKey {
                    column: self.schema.fields[k].name.clone(),
                });
            }
        }
        let freed = self.deleted_keys(deleted)?;
        let taken = |k: &IdxKey| self.pk_index.contains_key(k) && !freed.contains(k);
        match (cols.as_slice(), freed.is_empty()) {
            // The common case, an INSERT of integer keys: no key built per row.
            ([one], true) if matches!(one.data, ColumnData::Int64(_)) => {
                let ColumnData::Int64(v) = &one.data else {
                    unreachable!("matched above")
                };
                let mut seen: HashSet<i64> = HashSet::with_capacity(v.len());
                for &x in v {
                    if !seen.insert(x) || self.pk_index.contains_key(&IdxKey::Int(x)) {
                        return Err(self.duplicate(&IdxKey::Int(x)));
                    }
                }
            }
            _ => {
                let mut seen: HashSet<IdxKey> = HashSet::with_capacity(batch.num_rows());
                for i in 0..batch.num_rows() {
                    let Some(k) = row_key(&cols, i) else {
                        continue;
                    };
                    if taken(&k) || seen.contains(&k) {
                        return Err(self.duplicate(&k));
                    }
                    seen.insert(k);
                }
            }
        }
        Ok(())
    }

    /// The keys of `deleted` (key columns, in key order; no columns: none).
    fn deleted_keys(&self, deleted: &Batch) -> Result<HashSet<IdxKey>> {
        if deleted.num_columns() == 0 || deleted.num_rows() == 0 {
            return Ok(HashSet::new());
        }
        if deleted.num_columns() != self.primary_key.len() {
            return Err(Error::Internal(format!(
                "a delete by key gives {} columns for a key of {}",
                deleted.num_columns(),
                self.primary_key.len()
            )));
        }
        let cols: Vec<&Column> = deleted.columns().iter().collect();
        Ok((0..deleted.num_rows())
            .filter_map(|i| row_key(&cols, i))
            .collect())
    }

    /// Inserts the rows of `batch`; all or nothing.
    pub fn insert(&mut self, batch: &Batch) -> Result<()> {
        self.check_insert(batch)?;
        self.append(batch)
    }

    /// Deletes the rows whose primary key is a row of `deleted` (key columns, in key order;
    /// keys not stored are skipped), then inserts `batch`; all or nothing. Returns the number
    /// of rows deleted. Only for a table with a primary key.
    pub fn replace(&mut self, deleted: &Batch, batch: &Batch) -> Result<usize> {
        if self.primary_key.is_empty() {
            return Err(Error::Internal(
                "delete by key on a table without one".into(),
            ));
        }
        self.check_replace(deleted, batch)?;
        let mut gone: Vec<u32> = self
            .deleted_keys(deleted)?
            .iter()
            .filter_map(|k| self.pk_index.get(k).copied())
            .collect();
        gone.sort_unstable();
        let n = gone.len();
        self.remove_rows(&gone)?;
        self.append(batch)?;
        Ok(n)
    }

    /// For a table without a key: every stored row equal in every column (NULL matching NULL)
    /// to row `i` of `old` is deleted and, when `new` is given, replaced by row `i` of `new`.
    /// Returns the number of rows changed. Equal rows of `old` count once.
    pub fn rewrite(&mut self, old: &Batch, new: Option<&Batch>) -> Result<usize> {
        self.check_rewrite(old, new)?;
        let mut wanted: HashMap<Vec<Option<IdxKey>>, u32> = HashMap::new();
        for i in 0..old.num_rows() {
            wanted.entry(row_values(old, i)).or_insert(i as u32);
        }
        let (mut gone, mut replacements) = (Vec::new(), Vec::new());
        for (c, chunk) in self.chunks.iter().enumerate() {
            for i in 0..chunk.num_rows() {
                if let Some(&j) = wanted.get(&row_values(chunk, i)) {
                    gone.push((c * CHUNK_ROWS + i) as u32);
                    replacements.push(j);
                }
            }
        }
        self.remove_rows(&gone)?;
        if let Some(new) = new {
            self.append(&new.take(&replacements))?;
        }
        Ok(gone.len())
    }

    /// Checks that [`PartitionData::rewrite`]`(old, new)` would succeed, without changing
    /// anything: the column types of both batches, one new row per old row, the row limit.
    pub fn check_rewrite(&self, old: &Batch, new: Option<&Batch>) -> Result<()> {
        if !self.primary_key.is_empty() {
            return Err(Error::Internal(
                "a rewrite of whole rows on a keyed table".into(),
            ));
        }
        self.check_shape(old, 0)?;
        if let Some(new) = new {
            self.check_shape(new, old.num_rows())?;
            if new.num_rows() != old.num_rows() {
                return Err(Error::Internal(
                    "a rewrite needs one new row per old row".into(),
                ));
            }
        }
        Ok(())
    }

    /// Removes the rows with these (sorted) row ids: the remaining rows are packed into new
    /// chunks and every index is rebuilt. Chunks shared with running scans stay as they were.
    fn remove_rows(&mut self, gone: &[u32]) -> Result<()> {
        if gone.is_empty() {
            return Ok(());
        }
        let mut fresh = PartitionData::new(self.schema.clone(), &self.primary_key);
        let mut next = gone.iter().peekable();
        let mut kept = Vec::new();
        for (c, chunk) in self.chunks.iter().enumerate() {
            let base = (c * CHUNK_ROWS) as u32;
            let end = base + chunk.num_rows() as u32;
            if next.peek().is_none_or(|&&r| r >= end) {
                kept.push((**chunk).clone());
                continue;
            }
            let mut mask = vec![true; chunk.num_rows()];
            while let Some(&&r) = next.peek().filter(|&&&r| r < end) {
                mask[(r - base) as usize] = false;
                next.next();
            }
            kept.push(chunk.filter(&mask));
        }
        if !kept.is_empty() {
            fresh.append(&Batch::concat(&kept)?)?;
        }
        *self = fresh;
        Ok(())
    }

    /// Appends checked rows and indexes them.
    fn append(&mut self, batch: &Batch) -> Result<()> {
        let n = batch.num_rows();
        if n == 0 {
            return Ok(());
        }
        // Index the new rows.
        let base = self.num_rows as u32;
        if !self.primary_key.is_empty() {
            let cols = self.key_columns(batch)?;
            self.pk_index.reserve(n);
            for i in 0..n {
                if let Some(k) = row_key(&cols, i) {
                    self.key_bytes += k.heap_size();
                    self.pk_index.insert(k, base + i as u32);
                }
            }
        }
        // Fill the last chunk, then append full chunks.
        let mut start = 0;
        if let Some(last) = self.chunks.last_mut() {
            let room = CHUNK_ROWS.saturating_sub(last.num_rows());
            if room > 0 {
                let take = room.min(n);
                let merged = Batch::concat(&[(**last).clone(), batch.slice(0, take)])?;
                *last = Arc::new(merged);
                start = take;
            }
        }
        while start < n {
            let len = CHUNK_ROWS.min(n - start);
            let piece = if start == 0 && len == n {
                batch.clone()
            } else {
                batch.slice(start, len)
            };
            self.chunks.push(Arc::new(piece));
            start += len;
        }
        self.num_rows += n;
        Ok(())
    }

    /// Whether `column` can be probed by [`PartitionData::index_lookup`]: it is the whole
    /// (one-column) primary key.
    pub fn has_index(&self, column: usize) -> bool {
        self.primary_key == [column]
    }

    /// Number of rows.
    pub fn num_rows(&self) -> usize {
        self.num_rows
    }

    /// Heap bytes held (data and indexes), roughly.
    pub fn memory_size(&self) -> usize {
        let data: usize = self.chunks.iter().map(|c| c.memory_size()).sum();
        let key = std::mem::size_of::<IdxKey>();
        let pk = self.pk_index.capacity() * (key + 4 + 1);
        data + pk + self.key_bytes + self.chunks.capacity() * 8
    }

    /// The stored chunks (cheap: shares them).
    pub fn chunks(&self) -> Vec<Arc<Batch>> {
        self.chunks.clone()
    }

    /// Rows matching `lookup` on the primary key, as a batch of full table rows (empty, with
    /// the table's column types, when nothing matches). `column` is the one-column key
    /// (equality and IN probe the key index, a range filters the stored rows); an
    /// [`IndexLookup::Key`] probes a whole (composite) key, `column` being its first column.
    /// Bounds are evaluated against `params`; a NULL bound matches nothing.
    pub fn index_lookup(
        &self,
        column: usize,
        lookup: &IndexLookup,
        params: &[Value],
    ) -> Result<Batch> {
        if let IndexLookup::Key { values, .. } = lookup {
            return self.key_lookup(values, params);
        }
        let Some(&dt) = self.types.get(column) else {
            return Err(Error::Internal(format!(
                "index column #{column} out of range"
            )));
        };
        if !self.has_index(column) {
            return Err(Error::Internal(format!(
                "column {} is not the partition's key",
                self.schema.fields[column].name
            )));
        }
        let mut rows: Vec<u32> = Vec::new();
        let probe_eq = |v: &Value, rows: &mut Vec<u32>| -> Result<()> {
            if let Probe::Key(k) = eq_probe(v, dt)? {
                rows.extend(self.pk_index.get(&k).copied());
            }
            Ok(())
        };
        match lookup {
            IndexLookup::Eq(e) => {
                let v = evaluate_scalar(e, params)?;
                probe_eq(&v, &mut rows)?;
            }
            IndexLookup::In(list) => {
                for e in list {
                    let v = evaluate_scalar(e, params)?;
                    probe_eq(&v, &mut rows)?;
                }
                rows.sort_unstable();
                rows.dedup();
            }
            IndexLookup::Key { .. } => unreachable!("handled above"),
            IndexLookup::Range { low, high } => {
                let bound =
                    |b: &Option<(Expr, bool)>, low: bool| -> Result<Option<Bound<IdxKey>>> {
                        match b {
                            None => Ok(Some(Bound::Unbounded)),
                            Some((e, incl)) => {
                                range_bound(&evaluate_scalar(e, params)?, *incl, dt, low)
                            }
                        }
                    };
                let (Some(lo), Some(hi)) = (bound(low, true)?, bound(high, false)?) else {
                    return Ok(Batch::empty(&self.types));
                };
                return self.scan_range(column, &lo, &hi);
            }
        }
        self.gather(&rows)
    }

    /// The row whose whole primary key equals `values` (in key order), if stored.
    fn key_lookup(&self, values: &[Expr], params: &[Value]) -> Result<Batch> {
        if values.len() != self.primary_key.len() {
            return Err(Error::Internal(format!(
                "a key lookup gives {} values for a key of {}",
                values.len(),
                self.primary_key.len()
            )));
        }
        let mut parts = Vec::with_capacity(values.len());
        for (e, &c) in values.iter().zip(&self.primary_key) {
            match eq_probe(&evaluate_scalar(e, params)?, self.types[c])? {
                Probe::Key(k) => parts.push(k),
                Probe::Nothing => return Ok(Batch::empty(&self.types)),
            }
        }
        let key = match parts.len() {
            1 => parts.pop().expect("one part"),
            _ => IdxKey::Tuple(parts.into()),
        };
        let rows: Vec<u32> = self.pk_index.get(&key).copied().into_iter().collect();
        self.gather(&rows)
    }

    /// A range over a column without an ordered index: filters every chunk.
    fn scan_range(&self, column: usize, lo: &Bound<IdxKey>, hi: &Bound<IdxKey>) -> Result<Batch> {
        let cmp =
            |op: BinaryOp, k: &IdxKey| Expr::col(column).binary(op, Expr::Literal(k.to_value()));
        let mut pred: Option<Expr> = None;
        let mut add = |e: Expr| {
            pred = Some(match pred.take() {
                Some(p) => p.and(e),
                None => e,
            })
        };
        match lo {
            Bound::Included(k) => add(cmp(BinaryOp::GtEq, k)),
            Bound::Excluded(k) => add(cmp(BinaryOp::Gt, k)),
            Bound::Unbounded => {}
        }
        match hi {
            Bound::Included(k) => add(cmp(BinaryOp::LtEq, k)),
            Bound::Excluded(k) => add(cmp(BinaryOp::Lt, k)),
            Bound::Unbounded => {}
        }
        let pred = pred.unwrap_or(Expr::IsNull {
            expr: Box::new(Expr::col(column)),
            negated: true,
        });
        let mut parts = Vec::new();
        for chunk in &self.chunks {
            let mask = evaluate_predicate(&pred, chunk, &[])?;
            if mask.iter().any(|&m| m) {
                parts.push(chunk.filter(&mask));
            }
        }
        if parts.is_empty() {
            return Ok(Batch::empty(&self.types));
        }
        Batch::concat(&parts)
    }

    /// The stored chunks holding sorted row ids `rows`, each with the row numbers within it:
    /// the rows without copying them.
    pub fn locate(&self, rows: &[u32]) -> Result<Vec<ScanChunk>> {
        let mut out: Vec<ScanChunk> = Vec::new();
        let mut i = 0;
        while i < rows.len() {
            let chunk = rows[i] as usize / CHUNK_ROWS;
            let mut local = Vec::new();
            while i < rows.len() && rows[i] as usize / CHUNK_ROWS == chunk {
                local.push((rows[i] as usize % CHUNK_ROWS) as u32);
                i += 1;
            }
            let Some(c) = self.chunks.get(chunk) else {
                return Err(Error::Internal("index points past the stored rows".into()));
            };
            out.push(ScanChunk {
                rows: c.clone(),
                selection: Some(local),
            });
        }
        Ok(out)
    }

    /// Full rows for sorted row ids.
    pub fn gather(&self, rows: &[u32]) -> Result<Batch> {
        if rows.is_empty() {
            return Ok(Batch::empty(&self.types));
        }
        let mut parts = Vec::new();
        let mut i = 0;
        let mut local: Vec<u32> = Vec::new();
        while i < rows.len() {
            let chunk = rows[i] as usize / CHUNK_ROWS;
            local.clear();
            while i < rows.len() && rows[i] as usize / CHUNK_ROWS == chunk {
                local.push((rows[i] as usize % CHUNK_ROWS) as u32);
                i += 1;
            }
            let Some(c) = self.chunks.get(chunk) else {
                return Err(Error::Internal("index points past the stored rows".into()));
            };
            parts.push(c.take(&local));
        }
        if parts.len() == 1 {
            return Ok(parts.pop().unwrap_or_else(|| Batch::empty(&self.types)));
        }
        Batch::concat(&parts)
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Field;

    /// Rows matching `lookup` through a node-wide secondary index on `column` over `t` (a
    /// partition keeps only its key index).
    fn by_index(t: &PartitionData, column: usize, lookup: &IndexLookup) -> Result<Batch> {
        let mut store = crate::table_store::TableStore::new(&t.types, &[column]);
        store.put(0, t.clone());
        let parts: Vec<Batch> = store
            .lookup(column, lookup, &[], &[0])?
            .iter()
            .map(|c| match &c.selection {
                Some(rows) => c.rows.take(rows),
                None => (*c.rows).clone(),
            })
            .collect();
        if parts.is_empty() {
            Ok(Batch::empty(&t.types))
        } else {
            Batch::concat(&parts)
        }
    }

    fn table() -> PartitionData {
        let schema = Schema::new(vec![
            Field::new("id", DataType::Int64),
            Field::new("name", DataType::Utf8),
            Field::new("score", DataType::Float64),
        ]);
        PartitionData::new(schema, &[0])
    }

    fn rows(range: std::ops::Range<i64>) -> Batch {
        let r: Vec<Vec<Value>> = range
            .map(|i| {
                vec![
                    Value::Int(i),
                    Value::Str(format!("n{}", i % 7)),
                    if i % 5 == 0 {
                        Value::Null
                    } else {
                        Value::Float(i as f64 / 2.0)
                    },
                ]
            })
            .collect();
        Batch::from_rows(&[DataType::Int64, DataType::Utf8, DataType::Float64], &r).unwrap()
    }

    #[test]
    fn partition_function() {
        for v in [
            Value::Int(5),
            Value::from("abc"),
            Value::Float(1.5),
            Value::Bool(true),
        ] {
            let p = partition_of(&v, 7);
            assert!(p < 7);
            assert_eq!(p, partition_of(&v, 7));
        }
        assert_eq!(partition_of(&Value::Null, 7), 0);
        let col = Column::from_values(
            DataType::Utf8,
            &[
                Value::from("x"),
                Value::Null,
                Value::from("hello world, long"),
            ],
        )
        .unwrap();
        let mut out = Vec::new();
        partition_rows(&col, 5, &mut out);
        for (i, &p) in out.iter().enumerate() {
            assert_eq!(p, partition_of(&col.value(i), 5));
        }
        let ints = Column::from_i64((0..1000).collect());
        partition_rows(&ints, 4, &mut out);
        let mut counts = [0; 4];
        for (i, &p) in out.iter().enumerate() {
            assert_eq!(p, partition_of(&Value::Int(i as i64), 4));
            counts[p as usize] += 1;
        }
        assert!(counts.iter().all(|&c| c > 200), "{counts:?}");
    }

    #[test]
    fn insert_and_chunks() {
        let mut t = table();
        t.insert(&rows(0..1000)).unwrap();
        t.insert(&rows(1000..1001)).unwrap();
        t.insert(&rows(1001..3500)).unwrap();
        assert_eq!(t.num_rows(), 3500);
        let sizes: Vec<usize> = t.chunks().iter().map(|c| c.num_rows()).collect();
        assert_eq!(sizes, vec![1024, 1024, 1024, 428]);
        let ids: Vec<i64> = t
            .chunks()
            .iter()
            .flat_map(|c| c.column(0).as_i64().unwrap().to_vec())
            .collect();
        assert_eq!(ids, (0..3500).collect::<Vec<_>>());
        assert!(t.memory_size() > 3500 * 8);
    }

    #[test]
    fn rejects_bad_inserts() {
        let mut t = table();
        t.insert(&rows(0..10)).unwrap();
        let err = t.insert(&rows(5..20)).unwrap_err();
        assert_eq!(
            err,
            Error::DuplicateKey {
                column: "id".into(),
                value: Value::Int(5)
            }
        );
        assert_eq!(err.to_string(), "duplicate primary key id = 5");
        assert_eq!(t.num_rows(), 10);
        let mut b = rows(20..22).rows();
        b[1][0] = Value::Int(20);
        let dup = Batch::from_rows(&t.types.clone(), &b).unwrap();
        assert!(t.check_insert(&dup).is_err());
        b[1][0] = Value::Null;
        let null = Batch::from_rows(&t.types.clone(), &b).unwrap();
        assert_eq!(
            t.insert(&null).unwrap_err(),
            Error::NullKey {
                column: "id".into()
            }
        );
        let wrong = Batch::try_new(vec![
            Column::from_i64(vec![100]),
            Column::from_strs(&["x"]),
            Column::from_i64(vec![1]),
        ])
        .unwrap();
        assert!(matches!(t.insert(&wrong), Err(Error::Type(_))));
        assert_eq!(t.num_rows(), 10);

        let schema = Schema::new(vec![Field::new("k", DataType::Utf8)]);
        let mut s = PartitionData::new(schema, &[0]);
        s.insert(&Batch::try_new(vec![Column::from_strs(&["a", "b"])]).unwrap())
            .unwrap();
        let err = s
            .insert(&Batch::try_new(vec![Column::from_strs(&["c", "b"])]).unwrap())
            .unwrap_err();
        assert!(err.to_string().contains("'b'"), "{err}");
    }

    #[test]
    fn replace_deletes_by_key_and_keeps_indexes_right() {
        let mut t = table();
        t.insert(&rows(0..3000)).unwrap();
        let keys = |v: &[i64]| Batch::try_new(vec![Column::from_i64(v.to_vec())]).unwrap();
        // Delete 10 and 2000 (and a key not stored), and insert 10 again as another row.
        let mut again = rows(10..11).rows();
        again[0][1] = Value::from("moved");
        let again = Batch::from_rows(&t.types.clone(), &again).unwrap();
        assert_eq!(t.replace(&keys(&[10, 2000, 99_999]), &again).unwrap(), 2);
        assert_eq!(t.num_rows(), 2999);
        let eq = |c: usize, v: Value| (c, IndexLookup::Eq(Expr::lit(v)));
        let (c, l) = eq(0, Value::Int(2000));
        assert_eq!(t.index_lookup(c, &l, &[]).unwrap().num_rows(), 0);
        let (c, l) = eq(0, Value::Int(10));
        let got = t.index_lookup(c, &l, &[]).unwrap().rows();
        assert_eq!(got[0][1], Value::from("moved"));
        // The secondary index on score no longer finds the deleted row (score 1000).
        let (c, l) = eq(2, Value::Float(1000.0));
        assert_eq!(by_index(&t, c, &l).unwrap().num_rows(), 0);
        let (c, l) = eq(2, Value::Float(1000.5));
        assert_eq!(by_index(&t, c, &l).unwrap().rows()[0][0], Value::Int(2001));
        // A stored key is taken unless the same write deletes it; nothing changes on refusal.
        let dup = rows(11..12);
        assert!(t.check_replace(&keys(&[]), &dup).is_err());
        assert!(t.replace(&keys(&[5]), &dup).is_err());
        assert_eq!(t.num_rows(), 2999);
        assert_eq!(t.replace(&keys(&[11]), &dup).unwrap(), 1);
        assert_eq!(t.num_rows(), 2999);
        let sizes: Vec<usize> = t.chunks().iter().map(|c| c.num_rows()).collect();
        assert_eq!(sizes, vec![1024, 1024, 951]);
    }

    #[test]
    fn rewrite_matches_whole_rows_of_a_keyless_table() {
        let schema = Schema::new(vec![
            Field::new("a", DataType::Int64),
            Field::new("b", DataType::Utf8),
        ]);
        let types = schema.types();
        let mut t = PartitionData::new(schema, &[]);
        let b = |r: &[(Option<i64>, &str)]| {
            let r: Vec<Vec<Value>> = r
                .iter()
                .map(|(a, s)| vec![a.map_or(Value::Null, Value::Int), Value::from(*s)])
                .collect();
            Batch::from_rows(&types, &r).unwrap()
        };
        t.insert(&b(&[
            (Some(1), "x"),
            (None, "y"),
            (Some(1), "x"),
            (Some(2), "z"),
        ]))
        .unwrap();
        // Both copies of (1, 'x') change; (NULL, 'y') matches itself.
        let old = b(&[(Some(1), "x"), (None, "y")]);
        let new = b(&[(Some(5), "x"), (Some(6), "y")]);
        assert_eq!(t.rewrite(&old, Some(&new)).unwrap(), 3);
        let mut all: Vec<Vec<Value>> = t.chunks().iter().flat_map(|c| c.rows()).collect();
        all.sort_by(|x, y| x[0].sort_cmp(&y[0]));
        assert_eq!(
            all,
            b(&[
                (Some(2), "z"),
                (Some(5), "x"),
                (Some(5), "x"),
                (Some(6), "y")
            ])
            .rows()
        );
        let five = by_index(&t, 0, &IndexLookup::Eq(Expr::lit(5))).unwrap();
        assert_eq!(five.num_rows(), 2);
        assert_eq!(t.rewrite(&b(&[(Some(5), "x")]), None).unwrap(), 2);
        assert_eq!(t.num_rows(), 2);
        assert_eq!(t.rewrite(&b(&[(Some(7), "q")]), None).unwrap(), 0);
    }

    #[test]
    fn composite_keys() {
        let schema = Schema::new(vec![
            Field::new("a", DataType::Int64),
            Field::new("b", DataType::Utf8),
            Field::new("v", DataType::Int64),
        ]);
        let types = schema.types();
        let mut t = PartitionData::new(schema, &[0, 1]);
        let row = |a: i64, b: &str, v: i64| vec![Value::Int(a), Value::from(b), Value::Int(v)];
        let rows = vec![row(1, "x", 10), row(1, "y", 11), row(2, "x", 12)];
        t.insert(&Batch::from_rows(&types, &rows).unwrap()).unwrap();
        let err = t
            .insert(&Batch::from_rows(&types, &[row(1, "y", 0)]).unwrap())
            .unwrap_err();
        assert_eq!(err.to_string(), "duplicate primary key (a, b) = (1, 'y')");
        let null = vec![Value::Int(3), Value::Null, Value::Int(0)];
        let err = t
            .insert(&Batch::from_rows(&types, &[null]).unwrap())
            .unwrap_err();
        assert_eq!(err, Error::NullKey { column: "b".into() });
        let key = IndexLookup::Key {
            columns: vec![0, 1],
            values: vec![Expr::lit(1), Expr::Param(0)],
        };
        let got = t.index_lookup(0, &key, &[Value::from("y")]).unwrap().rows();
        assert_eq!(got, vec![row(1, "y", 11)]);
        assert_eq!(
            t.index_lookup(0, &key, &[Value::from("z")])
                .unwrap()
                .num_rows(),
            0
        );
        assert!(!t.has_index(0));
        // The whole key places a row: (1, 'x') and (1, 'y') may land apart.
        let keys: Vec<u32> = (0..50)
            .map(|i| partition_of_key(&[Value::Int(1), Value::Str(format!("k{i}"))], 16))
            .collect();
        assert!(keys.iter().any(|&p| p != keys[0]));
        let b = Batch::from_rows(&types, &rows).unwrap();
        let mut out = Vec::new();
        assign_partitions(&b, &[0, 1], 0, 16, &mut out).unwrap();
        for (i, r) in rows.iter().enumerate() {
            assert_eq!(out[i], partition_of_key(&r[..2], 16));
        }
        assert_eq!(
            partition_of_key(&[Value::Int(4)], 16),
            partition_of(&Value::Int(4), 16)
        );
    }

    #[test]
    fn lookups() {
        let mut t = table();
        t.insert(&rows(0..2000)).unwrap();
        let ids = |b: Batch| -> Vec<i64> { b.column(0).as_i64().unwrap().to_vec() };
        let eq = IndexLookup::Eq(Expr::Param(0));
        assert_eq!(
            ids(t.index_lookup(0, &eq, &[Value::Int(1500)]).unwrap()),
            vec![1500]
        );
        assert_eq!(
            t.index_lookup(0, &eq, &[Value::Int(5000)])
                .unwrap()
                .num_rows(),
            0
        );
        assert_eq!(
            t.index_lookup(0, &eq, &[Value::Null]).unwrap().num_rows(),
            0
        );
        assert_eq!(
            ids(t.index_lookup(0, &eq, &[Value::Float(7.0)]).unwrap()),
            vec![7]
        );
        assert_eq!(
            t.index_lookup(0, &eq, &[]).unwrap_err(),
            Error::MissingParameter(1)
        );
        let inl = IndexLookup::In(vec![
            Expr::lit(3),
            Expr::lit(1999),
            Expr::lit(3),
            Expr::lit(Value::Null),
        ]);
        assert_eq!(ids(t.index_lookup(0, &inl, &[]).unwrap()), vec![3, 1999]);
        // Range on the primary key (scan fallback) with a float bound.
        let r = IndexLookup::Range {
            low: Some((Expr::lit(2.5), true)),
            high: Some((Expr::lit(6), false)),
        };
        assert_eq!(ids(t.index_lookup(0, &r, &[]).unwrap()), vec![3, 4, 5]);
        // An ordered secondary index on score = id / 2 (NULL when id % 5 == 0).
        let r = IndexLookup::Range {
            low: Some((Expr::lit(10), false)),
            high: Some((Expr::lit(12.5), true)),
        };
        assert_eq!(ids(by_index(&t, 2, &r).unwrap()), vec![21, 22, 23, 24]);
        let r = IndexLookup::Range {
            low: Some((Expr::lit(Value::Null), false)),
            high: None,
        };
        assert_eq!(by_index(&t, 2, &r).unwrap().num_rows(), 0);
        assert_eq!(
            ids(by_index(&t, 2, &IndexLookup::Eq(Expr::lit(999))).unwrap()),
            vec![1998]
        );
        // A string column.
        assert!(!t.has_index(1));
        let b = by_index(&t, 1, &IndexLookup::Eq(Expr::lit("n3"))).unwrap();
        assert_eq!(b.num_rows(), (0..2000).filter(|i| i % 7 == 3).count());
        assert_eq!(b.num_columns(), 3);
        t.insert(&rows(2000..2001)).unwrap();
        let b = by_index(&t, 1, &IndexLookup::Eq(Expr::lit("n5"))).unwrap();
        assert!(ids(b).contains(&2000));
        assert!(matches!(
            by_index(&t, 1, &IndexLookup::Eq(Expr::lit(1))),
            Err(Error::Type(_))
        ));
    }
}
