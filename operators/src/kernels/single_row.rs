//! Single-row kernel for uncorrelated scalar subqueries: outputs exactly one row, the input's
//! only row or a row of NULLs when the input is empty, and fails when a second row arrives.

use super::operator::{output_pending, Operator};
use crate::error::TOO_MANY_ROWS;
use crate::{Batch, Column, DataType, Error, Result};

/// Outputs exactly one row (see the module documentation).
pub struct SingleRowOp {
    /// Column types, for the NULL row (replaced by the first batch's types).
    types: Vec<DataType>,
    /// The input's row, once it arrived.
    row: Option<Batch>,
    /// The row to output, once the input ended.
    pending: Option<Batch>,
    /// The output was made.
    done: bool,
}

impl SingleRowOp {
    /// A single-row operator over an input with columns of `types`.
    pub fn new(types: Vec<DataType>) -> Self {
        SingleRowOp {
            types,
            row: None,
            pending: None,
            done: false,
        }
    }

    /// A row of NULLs with the input's types.
    fn null_row(&self) -> Result<Batch> {
        let cols: Vec<Column> = self.types.iter().map(|&t| Column::nulls(t, 1)).collect();
        Batch::with_row_count(cols, 1)
    }
}

impl Operator for SingleRowOp {
    fn name(&self) -> &'static str {
        "SingleRow"
    }

    fn push(&mut self, _port: usize, batch: Batch) -> Result<()> {
        if self.pending.is_some() {
            return Err(output_pending(self.name()));
        }
        if batch.num_columns() > 0 || !batch.is_empty() {
            self.types = batch.types();
        }
        let seen = self.row.as_ref().map_or(0, Batch::num_rows);
        if seen + batch.num_rows() > 1 {
            return Err(Error::Cardinality(TOO_MANY_ROWS.into()));
        }
        if batch.num_rows() == 1 {
            self.row = Some(batch);
        }
        Ok(())
    }

    fn finish(&mut self, _port: usize) -> Result<()> {
        if self.done {
            return Ok(());
        }
        self.done = true;
        self.pending = Some(match self.row.take() {
            Some(b) => b,
            None => self.null_row()?,
        });
        Ok(())
    }

    fn next_output(&mut self) -> Result<Option<Batch>> {
        Ok(self.pending.take())
    }

    fn has_output(&self) -> bool {
        self.pending.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Value;

    #[test]
    fn outputs_exactly_one_row() {
        let types = vec![DataType::Int64, DataType::Utf8];
        let mut op = SingleRowOp::new(types.clone());
        op.finish(0).unwrap();
        let b = op.next_output().unwrap().unwrap();
        assert_eq!(b.rows(), vec![vec![Value::Null, Value::Null]]);
        assert_eq!(b.types(), types);
        assert!(op.next_output().unwrap().is_none());

        let mut op = SingleRowOp::new(types.clone());
        let row = Batch::from_rows(&types, &[vec![7.into(), "x".into()]]).unwrap();
        op.push(0, Batch::empty(&types)).unwrap();
        op.push(0, row.clone()).unwrap();
        assert!(!op.has_output());
        op.finish(0).unwrap();
        assert_eq!(op.next_output().unwrap().unwrap().rows(), row.rows());

        let mut op = SingleRowOp::new(types.clone());
        op.push(0, row.clone()).unwrap();
        let e = op.push(0, row).unwrap_err();
        assert_eq!(e, Error::Cardinality(TOO_MANY_ROWS.into()));
        assert_eq!(e.to_string(), TOO_MANY_ROWS);
    }
}
