//! Repeat kernel, for `INTERSECT ALL` and `EXCEPT ALL`: outputs each input row as many times
//! as its last column says (a BIGINT; NULL or below one: not at all), without that column.
//!
//! A row may be repeated more times than fit one batch: the kernel keeps its input batch and
//! a cursor (row, copies made) and cuts the output into batches of at most `batch_size` rows.

use super::operator::{output_pending, Operator};
use crate::{Batch, Column, Error, Result};

/// Repeats rows by their count column (see the module documentation).
pub struct RepeatOp {
    /// Rows per output batch.
    batch_size: usize,
    /// The input batch being repeated: its columns without the count, and the counts.
    current: Option<(Batch, Vec<u64>)>,
    /// The row being repeated and how many of its copies were output.
    row: usize,
    copies: u64,
}

impl RepeatOp {
    /// Output batches of at most `batch_size` rows.
    pub fn new(batch_size: usize) -> Self {
        RepeatOp {
            batch_size: batch_size.max(1),
            current: None,
            row: 0,
            copies: 0,
        }
    }
}

/// The counts of `column` (BIGINT), NULLs and negatives as 0.
fn counts(column: &Column) -> Result<Vec<u64>> {
    (0..column.len())
        .map(|i| match column.value(i) {
            crate::Value::Int(n) => Ok(n.max(0) as u64),
            crate::Value::Null => Ok(0),
            other => Err(Error::Internal(format!(
                "Repeat needs a BIGINT count, not {other:?}"
            ))),
        })
        .collect()
}

impl Operator for RepeatOp {
    fn name(&self) -> &'static str {
        "Repeat"
    }

    fn push(&mut self, _port: usize, batch: Batch) -> Result<()> {
        if self.current.is_some() {
            return Err(output_pending(self.name()));
        }
        let Some(last) = batch.num_columns().checked_sub(1) else {
            return Err(Error::Internal("Repeat needs a count column".into()));
        };
        let counts = counts(batch.column(last))?;
        if counts.iter().all(|&c| c == 0) {
            return Ok(());
        }
        let rows = batch.into_projection(&(0..last).collect::<Vec<_>>());
        self.current = Some((rows, counts));
        self.row = 0;
        self.copies = 0;
        Ok(())
    }

    fn finish(&mut self, _port: usize) -> Result<()> {
        Ok(())
    }

    fn next_output(&mut self) -> Result<Option<Batch>> {
        let Some((rows, counts)) = &self.current else {
            return Ok(None);
        };
        let mut indices: Vec<u32> = Vec::with_capacity(self.batch_size);
        while self.row < counts.len() && indices.len() < self.batch_size {
            let left = counts[self.row] - self.copies;
            let n = left.min((self.batch_size - indices.len()) as u64);
            indices.extend(std::iter::repeat_n(self.row as u32, n as usize));
            self.copies += n;
            if self.copies == counts[self.row] {
                self.row += 1;
                self.copies = 0;
            }
        }
        let out = if rows.num_columns() == 0 {
            Batch::with_row_count(Vec::new(), indices.len())?
        } else {
            rows.take(&indices)
        };
        if self.row == counts.len() {
            self.current = None;
        }
        Ok((!indices.is_empty()).then_some(out))
    }

    fn has_output(&self) -> bool {
        self.current.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::drain;
    use crate::{DataType, Value};

    fn run(batch_size: usize, rows: &[Vec<Value>]) -> Vec<Vec<Vec<Value>>> {
        let types = [DataType::Utf8, DataType::Int64];
        let mut op = RepeatOp::new(batch_size);
        op.push(0, Batch::from_rows(&types, rows).unwrap()).unwrap();
        let mut out = Vec::new();
        drain(&mut op, &mut out).unwrap();
        op.finish(0).unwrap();
        assert!(!op.has_output());
        out.iter().map(Batch::rows).collect()
    }

    fn row(s: &str, n: Option<i64>) -> Vec<Value> {
        vec![Value::from(s), n.map_or(Value::Null, Value::Int)]
    }

    #[test]
    fn repeats_each_row_by_its_count_and_drops_the_count() {
        let out = run(
            10,
            &[
                row("a", Some(2)),
                row("b", Some(0)),
                row("c", None),
                row("d", Some(1)),
            ],
        );
        let a = vec![Value::from("a")];
        let d = vec![Value::from("d")];
        assert_eq!(out, vec![vec![a.clone(), a, d]]);
    }

    #[test]
    fn a_large_count_is_cut_into_batches() {
        let out = run(4, &[row("a", Some(9)), row("b", Some(2))]);
        let sizes: Vec<usize> = out.iter().map(Vec::len).collect();
        assert_eq!(sizes, vec![4, 4, 3]);
        let flat: Vec<Vec<Value>> = out.into_iter().flatten().collect();
        assert_eq!(flat.iter().filter(|r| r[0] == Value::from("a")).count(), 9);
        assert_eq!(flat[9..], [vec![Value::from("b")], vec![Value::from("b")]]);
    }

    #[test]
    fn all_zero_counts_give_nothing() {
        assert!(run(4, &[row("a", Some(0)), row("b", Some(-3))]).is_empty());
    }
}
