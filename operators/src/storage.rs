//! In-memory partition storage: the rows of one table partition as immutable columnar chunks
//! and its primary-key index (tables that declare a key, of one or more columns), and the
//! stored chunks a scan reads ([`ScanChunk`]). Which partition a row belongs to is
//! [`crate::placement`]'s; the keys the indexes hold are module `index_key`'s, and the
//! ordered secondary indexes, which span a node's partitions, [`crate::secondary_index`]'s.
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
use crate::index_key::{eq_probe, key_at, range_bound, IdxKey, Probe};
use crate::plan::IndexLookup;
use crate::types::{DataType, Schema};
use crate::value::Value;
use hashbrown::{HashMap, HashSet};
use std::ops::Bound;
use std::sync::Arc;

mod alter;

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

    /// The primary-key columns, in key order (empty: the table has no declared key).
    pub fn primary_key(&self) -> &[usize] {
        &self.primary_key
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
        // What check_insert checks, but the keys: indexing the rows finds a stored or
        // repeated key as it goes, and undoes itself (one hash probe per row, not three).
        self.check_shape(batch, batch.num_rows())?;
        self.check_key_not_null(batch)?;
        self.append(batch)
    }

    /// Fails with [`Error::NullKey`] when a key column of `batch` holds a NULL.
    fn check_key_not_null(&self, batch: &Batch) -> Result<()> {
        for &k in &self.primary_key {
            let col = batch.columns().get(k).ok_or_else(|| {
                Error::Internal(format!("no key column {k} in a batch for the table"))
            })?;
            if col.null_count() > 0 {
                return Err(Error::NullKey {
                    column: self.schema.fields[k].name.clone(),
                });
            }
        }
        Ok(())
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
        self.index_keys(batch)?;
        self.append_rows(batch)
    }

    /// Adds the keys of `batch`, about to be appended, to the primary-key index. A key stored
    /// already or repeated in `batch` is [`Error::DuplicateKey`], with the index as it was.
    fn index_keys(&mut self, batch: &Batch) -> Result<()> {
        if self.primary_key.is_empty() {
            return Ok(());
        }
        let n = batch.num_rows();
        let base = self.num_rows as u32;
        let cols = self.key_columns(batch)?;
        self.pk_index.reserve(n);
        for i in 0..n {
            let Some(k) = row_key(&cols, i) else {
                continue;
            };
            let taken = match self.pk_index.entry(k) {
                hashbrown::hash_map::Entry::Vacant(slot) => {
                    self.key_bytes += slot.key().heap_size();
                    slot.insert(base + i as u32);
                    continue;
                }
                hashbrown::hash_map::Entry::Occupied(taken) => taken.key().clone(),
            };
            // Undo the keys this batch added (those of the rows before `i`: each was new).
            for j in 0..i {
                if let Some(k) = row_key(&cols, j) {
                    if self.pk_index.remove(&k).is_some() {
                        self.key_bytes -= k.heap_size();
                    }
                }
            }
            return Err(self.duplicate(&taken));
        }
        Ok(())
    }

    /// Appends the rows of `batch` to the chunks (their keys are indexed already).
    fn append_rows(&mut self, batch: &Batch) -> Result<()> {
        let n = batch.num_rows();
        // Fill the last chunk (in place unless a scan shares it), then append full chunks.
        let mut start = 0;
        if let Some(last) = self.chunks.last_mut() {
            let room = CHUNK_ROWS.saturating_sub(last.num_rows());
            if room > 0 {
                let take = room.min(n);
                let piece = if take == n {
                    None
                } else {
                    Some(batch.slice(0, take))
                };
                let piece = piece.as_ref().unwrap_or(batch);
                match Arc::get_mut(last) {
                    Some(chunk) => {
                        chunk.reserve_for(piece);
                        chunk.append(piece)?;
                    }
                    None => *last = Arc::new(Batch::concat(&[(**last).clone(), piece.clone()])?),
                }
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
    fn small_inserts_fill_the_last_chunk_and_a_shared_chunk_is_left_as_it_was() {
        let mut t = table();
        t.insert(&rows(0..10)).unwrap();
        // A scan holds the chunks it read: the next inserts must not change them.
        let scanned = t.chunks();
        for i in 1..200 {
            t.insert(&rows(i * 10..i * 10 + 10)).unwrap();
        }
        assert_eq!(scanned.len(), 1);
        assert_eq!(
            scanned[0].column(0).as_i64().unwrap(),
            &(0..10).collect::<Vec<_>>()[..]
        );
        let sizes: Vec<usize> = t.chunks().iter().map(|c| c.num_rows()).collect();
        assert_eq!(sizes, vec![1024, 976]);
        let ids: Vec<i64> = t
            .chunks()
            .iter()
            .flat_map(|c| c.column(0).as_i64().unwrap().to_vec())
            .collect();
        assert_eq!(ids, (0..2000).collect::<Vec<_>>());
        // Grown in place, a chunk holds at most twice what it needs.
        let exact: usize = t.chunks().iter().map(|c| c.num_rows() * 8).sum();
        let ids_held: usize = t.chunks().iter().map(|c| c.column(0).memory_size()).sum();
        assert!(ids_held <= 2 * exact, "{ids_held} bytes for {exact}");
    }

    #[test]
    fn a_refused_insert_leaves_the_key_index_as_it_was() {
        let mut t = table();
        t.insert(&rows(0..10)).unwrap();
        // New keys first, then a stored one: the new ones are not kept in the index.
        let mut b = rows(100..110).rows();
        b[9][0] = Value::Int(3);
        let late_dup = Batch::from_rows(&t.types.clone(), &b).unwrap();
        assert_eq!(
            t.insert(&late_dup).unwrap_err(),
            Error::DuplicateKey {
                column: "id".into(),
                value: Value::Int(3)
            }
        );
        // A key repeated within the batch, after new ones.
        let mut b = rows(200..205).rows();
        b[4][0] = Value::Int(201);
        let repeated = Batch::from_rows(&t.types.clone(), &b).unwrap();
        assert!(t.insert(&repeated).is_err());
        assert_eq!(t.num_rows(), 10);
        // The keys refused with their batches are free.
        t.insert(&rows(100..110)).unwrap();
        t.insert(&rows(200..205)).unwrap();
        assert_eq!(t.num_rows(), 25);
        assert!(t.insert(&rows(104..105)).is_err());
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
