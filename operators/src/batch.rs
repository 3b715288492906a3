//! Columnar batches: the unit of data that kernels consume and actors exchange.

use crate::column::{Column, ColumnBuilder};
use crate::decode::{checked_serde, Checked, MAX_COLUMNLESS_ROWS};
use crate::error::{Error, Result};
use crate::types::DataType;
use crate::value::Value;
use serde::{Deserialize, Serialize};

/// Default number of rows in a batch produced by scans and kernels (a cluster's
/// `batch_size`). Measured in one process against 1,024 rows, queries alternated: the join of
/// `weir bench join` takes about 12% less time, TPC-H SF 1 about 13%, and small queries the
/// same; every batch costs a message, a credit and a memory reservation on its edge, and the
/// kernels' per-batch set-up. Stored chunks are smaller ([`crate::storage::CHUNK_ROWS`]).
pub const DEFAULT_BATCH_SIZE: usize = 4096;

/// A set of equally long columns. Batches are moved between operators inside a node and
/// serialized only when they cross nodes; a decoded one is checked ([`crate::decode`]): every
/// column has the batch's row count, and one without columns claims at most
/// [`MAX_COLUMNLESS_ROWS`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct Batch {
    columns: Vec<Column>,
    num_rows: usize,
}

checked_serde!(Batch);

impl Checked for Batch {
    fn check(&self) -> std::result::Result<(), String> {
        if let Some((i, c)) = self
            .columns
            .iter()
            .enumerate()
            .find(|(_, c)| c.len() != self.num_rows)
        {
            return Err(format!(
                "a batch of {} rows with {} rows in column {i}",
                self.num_rows,
                c.len()
            ));
        }
        if self.columns.is_empty() && self.num_rows > MAX_COLUMNLESS_ROWS {
            return Err(format!(
                "a batch without columns claims {} rows, more than {MAX_COLUMNLESS_ROWS}",
                self.num_rows
            ));
        }
        Ok(())
    }
}

/// Fails when a text column holds more bytes than its `u32` offsets reach (a builder that
/// went past them made wrong offsets): one comparison per column.
fn check_text_columns(columns: &[Column]) -> Result<()> {
    for c in columns {
        if let crate::column::ColumnData::Utf8 { bytes, .. } = &c.data {
            crate::limits::check_text_column("a batch", bytes.len())?;
        }
    }
    Ok(())
}

impl Batch {
    /// A batch from columns, which must all have the same length (and text columns at most
    /// 4 GiB of text, what their offsets reach).
    pub fn try_new(columns: Vec<Column>) -> Result<Self> {
        let num_rows = columns.first().map_or(0, Column::len);
        if let Some(c) = columns.iter().find(|c| c.len() != num_rows) {
            return Err(Error::Internal(format!(
                "batch columns differ in length: {} and {}",
                num_rows,
                c.len()
            )));
        }
        check_text_columns(&columns)?;
        Ok(Batch { columns, num_rows })
    }

    /// A batch with `num_rows` rows and no columns (e.g. the input of `COUNT(*)` after pruning).
    pub fn with_row_count(columns: Vec<Column>, num_rows: usize) -> Result<Self> {
        if columns.iter().any(|c| c.len() != num_rows) {
            return Err(Error::Internal("batch column length mismatch".into()));
        }
        check_text_columns(&columns)?;
        Ok(Batch { columns, num_rows })
    }

    /// An empty batch with columns of the given types.
    pub fn empty(types: &[DataType]) -> Self {
        Batch {
            columns: types
                .iter()
                .map(|&t| ColumnBuilder::new(t, 0).finish())
                .collect(),
            num_rows: 0,
        }
    }

    /// Builds a batch from rows of values (slow path: tests, `INSERT`, small inputs).
    pub fn from_rows(types: &[DataType], rows: &[Vec<Value>]) -> Result<Self> {
        let mut builders: Vec<ColumnBuilder> = types
            .iter()
            .map(|&t| ColumnBuilder::new(t, rows.len()))
            .collect();
        for row in rows {
            if row.len() != types.len() {
                return Err(Error::Type(format!(
                    "row has {} values, expected {}",
                    row.len(),
                    types.len()
                )));
            }
            for (b, v) in builders.iter_mut().zip(row) {
                b.push_value(v)?;
            }
        }
        Batch::with_row_count(
            builders.into_iter().map(ColumnBuilder::finish).collect(),
            rows.len(),
        )
    }

    /// Number of rows.
    pub fn num_rows(&self) -> usize {
        self.num_rows
    }

    /// Whether the batch has no rows.
    pub fn is_empty(&self) -> bool {
        self.num_rows == 0
    }

    /// Number of columns.
    pub fn num_columns(&self) -> usize {
        self.columns.len()
    }

    /// Column `i`.
    pub fn column(&self, i: usize) -> &Column {
        &self.columns[i]
    }

    /// All columns.
    pub fn columns(&self) -> &[Column] {
        &self.columns
    }

    /// Takes the columns out of the batch.
    pub fn into_columns(self) -> Vec<Column> {
        self.columns
    }

    /// Column types, in order.
    pub fn types(&self) -> Vec<DataType> {
        self.columns.iter().map(Column::data_type).collect()
    }

    /// Heap bytes held by the batch's columns.
    pub fn memory_size(&self) -> usize {
        self.columns.iter().map(Column::memory_size).sum::<usize>()
            + self.columns.capacity() * std::mem::size_of::<Column>()
    }

    /// Bytes of the batch's values by length, not capacity: a batch and its decoded copy on
    /// another node agree on it, so flow control counts these bytes on both ends of an edge.
    pub fn data_size(&self) -> usize {
        self.columns.iter().map(Column::data_size).sum()
    }

    /// Row `i` as values (slow path).
    pub fn row(&self, i: usize) -> Vec<Value> {
        self.columns.iter().map(|c| c.value(i)).collect()
    }

    /// All rows as values (slow path: results shown to users, tests).
    pub fn rows(&self) -> Vec<Vec<Value>> {
        (0..self.num_rows).map(|i| self.row(i)).collect()
    }

    /// Gathers rows by index.
    pub fn take(&self, indices: &[u32]) -> Batch {
        Batch {
            columns: self.columns.iter().map(|c| c.take(indices)).collect(),
            num_rows: indices.len(),
        }
    }

    /// Keeps rows whose mask entry is `true`.
    pub fn filter(&self, mask: &[bool]) -> Batch {
        let indices: Vec<u32> = mask
            .iter()
            .enumerate()
            .filter_map(|(i, &m)| m.then_some(i as u32))
            .collect();
        if indices.len() == self.num_rows {
            return self.clone();
        }
        self.take(&indices)
    }

    /// Rows `start..start + len`.
    pub fn slice(&self, start: usize, len: usize) -> Batch {
        let len = len.min(self.num_rows.saturating_sub(start));
        Batch {
            columns: self.columns.iter().map(|c| c.slice(start, len)).collect(),
            num_rows: len,
        }
    }

    /// Keeps the columns at `indices`, in that order.
    pub fn project(&self, indices: &[usize]) -> Batch {
        Batch {
            columns: indices.iter().map(|&i| self.columns[i].clone()).collect(),
            num_rows: self.num_rows,
        }
    }

    /// Keeps the columns at `indices`, moving them out of `self`.
    pub fn into_projection(self, indices: &[usize]) -> Batch {
        let num_rows = self.num_rows;
        let mut cols: Vec<Option<Column>> = self.columns.into_iter().map(Some).collect();
        let mut columns = Vec::with_capacity(indices.len());
        for (pos, &i) in indices.iter().enumerate() {
            // A column used again later is cloned; its last use moves it.
            let col = if indices[pos + 1..].contains(&i) {
                cols[i].clone()
            } else {
                cols[i].take()
            };
            columns.extend(col);
        }
        Batch { columns, num_rows }
    }

    /// Concatenates batches of one schema.
    pub fn concat(batches: &[Batch]) -> Result<Batch> {
        let Some(first) = batches.first() else {
            return Err(Error::Internal("concat of no batches".into()));
        };
        let num_rows = batches.iter().map(Batch::num_rows).sum();
        let columns = (0..first.num_columns())
            .map(|c| {
                let cols: Vec<&Column> = batches.iter().map(|b| b.column(c)).collect();
                Column::concat(&cols)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Batch { columns, num_rows })
    }

    /// What [`Batch::memory_size`] will be after [`Batch::append`] of `other` (see
    /// [`Column::appended_memory_size`]), so that the growth can be accounted before it is made.
    pub fn appended_memory_size(&self, other: &Batch) -> usize {
        if other.num_columns() != self.num_columns() {
            return self.memory_size();
        }
        self.columns
            .iter()
            .zip(&other.columns)
            .map(|(c, o)| c.appended_memory_size(o))
            .sum::<usize>()
            + self.columns.capacity() * std::mem::size_of::<Column>()
    }

    /// Makes room for the rows of `other` with amortized growth (see [`Column::reserve_for`]).
    pub fn reserve_for(&mut self, other: &Batch) {
        for (c, o) in self.columns.iter_mut().zip(&other.columns) {
            c.reserve_for(o);
        }
    }

    /// Appends the rows of `other`, which must have this batch's column types, in place.
    pub fn append(&mut self, other: &Batch) -> Result<()> {
        if other.num_columns() != self.num_columns() {
            return Err(Error::Internal(format!(
                "cannot append a batch of {} columns to one of {}",
                other.num_columns(),
                self.num_columns()
            )));
        }
        for (c, o) in self.columns.iter_mut().zip(&other.columns) {
            c.append(o)?;
        }
        self.num_rows += other.num_rows;
        Ok(())
    }

    /// Splits the batch into batches of at most `size` rows.
    pub fn split(self, size: usize) -> Vec<Batch> {
        if self.num_rows <= size {
            return vec![self];
        }
        (0..self.num_rows)
            .step_by(size)
            .map(|start| self.slice(start, size))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(rows: &[(Option<i64>, &str)]) -> Batch {
        let rows: Vec<Vec<Value>> = rows
            .iter()
            .map(|(k, s)| vec![k.map_or(Value::Null, Value::Int), (*s).into()])
            .collect();
        Batch::from_rows(&[DataType::Int64, DataType::Utf8], &rows).unwrap()
    }

    #[test]
    fn append_keeps_values_nulls_and_exact_sizes() {
        let mut a = sample(&[(Some(1), "a"), (Some(2), "bb")]);
        let b = sample(&[(None, ""), (Some(4), "dddd")]);
        let (a_bytes, b_bytes) = (a.memory_size(), b.memory_size());
        a.append(&b).unwrap();
        assert_eq!(a.num_rows(), 4);
        assert_eq!(
            a.rows(),
            sample(&[
                (Some(1), "a"),
                (Some(2), "bb"),
                (None, ""),
                (Some(4), "dddd")
            ])
            .rows()
        );
        assert!(a.memory_size() <= a_bytes + b_bytes);
        // A batch without NULLs after one with them, and the other way round.
        let mut c = sample(&[(None, "x")]);
        c.append(&sample(&[(Some(5), "y")])).unwrap();
        assert_eq!(c.column(0).null_count(), 1);
        assert_eq!(c.row(1), vec![Value::Int(5), "y".into()]);
    }

    #[test]
    fn appended_memory_size_is_what_an_append_makes() {
        // Every combination of bitmaps, with many rows so that a bitmap takes several words,
        // and spare capacity on either side.
        let rows = |n: i64, nulls: bool| -> Batch {
            let v: Vec<Vec<Value>> = (0..n)
                .map(|i| {
                    let k = if nulls && i % 3 == 0 {
                        Value::Null
                    } else {
                        Value::Int(i)
                    };
                    vec![k, format!("row{i}").into()]
                })
                .collect();
            Batch::from_rows(&[DataType::Int64, DataType::Utf8], &v).unwrap()
        };
        for (a_nulls, b_nulls) in [(false, false), (true, false), (false, true), (true, true)] {
            for (na, nb) in [(1, 1), (130, 70), (64, 200)] {
                let mut a = rows(na, a_nulls);
                let b = rows(nb, b_nulls);
                let predicted = a.appended_memory_size(&b);
                a.append(&b).unwrap();
                assert_eq!(a.memory_size(), predicted, "{a_nulls} {b_nulls} {na} {nb}");
                // And once more onto the result.
                let more = rows(1, b_nulls);
                let predicted = a.appended_memory_size(&more);
                a.append(&more).unwrap();
                assert_eq!(a.memory_size(), predicted);
            }
        }
        // Other widths: nothing changes.
        let a = rows(2, false);
        let narrow = Batch::try_new(vec![Column::from_i64(vec![1])]).unwrap();
        assert_eq!(a.appended_memory_size(&narrow), a.memory_size());
    }

    #[test]
    fn append_rejects_other_types_and_widths() {
        let mut a = sample(&[(Some(1), "a")]);
        let wrong =
            Batch::try_new(vec![Column::from_strs(&["x"]), Column::from_strs(&["y"])]).unwrap();
        assert!(matches!(a.append(&wrong), Err(Error::Type(_))));
        let narrow = Batch::try_new(vec![Column::from_i64(vec![1])]).unwrap();
        assert!(a.append(&narrow).is_err());
        assert_eq!(a.num_rows(), 1);
    }

    #[test]
    fn concat_equals_appending_and_drops_an_all_valid_bitmap() {
        let parts = [
            sample(&[(Some(1), "a")]),
            sample(&[(None, "b"), (Some(3), "")]),
            sample(&[(Some(4), "dd")]),
        ];
        let c = Batch::concat(&parts).unwrap();
        let mut a = parts[0].clone();
        a.append(&parts[1]).unwrap();
        a.append(&parts[2]).unwrap();
        assert_eq!(c.rows(), a.rows());
        assert_eq!(c.column(0).null_count(), 1);
        let valid = Batch::concat(&[parts[0].clone(), parts[2].clone()]).unwrap();
        assert!(valid.column(0).validity.is_none());
    }
}
