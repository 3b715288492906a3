//! Scan source: reads stored chunks of full table rows, applies an optional filter, projects
//! the requested columns, and coalesces the output into batches of exactly the context's batch
//! size (except the last one).

use super::ExecContext;
use crate::eval::evaluate_predicate;
use crate::{Batch, Column, Expr, Result};
use std::collections::VecDeque;
use std::sync::Arc;

/// Reads stored chunks: filter, then projection, coalescing output to the batch size.
pub struct ScanSource {
    chunks: std::vec::IntoIter<Arc<Batch>>,
    filter: Option<Expr>,
    projection: Vec<usize>,
    ctx: ExecContext,
    /// Filtered, projected pieces not yet emitted.
    pending: VecDeque<Batch>,
    pending_rows: usize,
}

impl ScanSource {
    /// A scan over `chunks` (full table rows): keeps rows where `filter` is TRUE, then outputs
    /// the table columns listed in `projection`.
    pub fn new(
        chunks: Vec<Arc<Batch>>,
        filter: Option<Expr>,
        projection: Vec<usize>,
        ctx: ExecContext,
    ) -> Self {
        ScanSource {
            chunks: chunks.into_iter(),
            filter,
            projection,
            ctx,
            pending: VecDeque::new(),
            pending_rows: 0,
        }
    }

    /// Filters and projects one chunk.
    fn process(&self, chunk: &Batch) -> Result<Option<Batch>> {
        let n = chunk.num_rows();
        if n == 0 {
            return Ok(None);
        }
        if let Some(&bad) = self.projection.iter().find(|&&i| i >= chunk.num_columns()) {
            return Err(crate::Error::Internal(format!(
                "scan projects column #{bad} of a {}-column table",
                chunk.num_columns()
            )));
        }
        let project_all = |chunk: &Batch| -> Result<Batch> {
            let cols: Vec<Column> = self
                .projection
                .iter()
                .map(|&i| chunk.column(i).clone())
                .collect();
            Batch::with_row_count(cols, n)
        };
        let Some(filter) = &self.filter else {
            return project_all(chunk).map(Some);
        };
        let mask = evaluate_predicate(filter, chunk, &self.ctx.params)?;
        let indices: Vec<u32> = mask
            .iter()
            .enumerate()
            .filter_map(|(i, &m)| m.then_some(i as u32))
            .collect();
        if indices.is_empty() {
            return Ok(None);
        }
        if indices.len() == n {
            return project_all(chunk).map(Some);
        }
        let cols: Vec<Column> = self
            .projection
            .iter()
            .map(|&i| chunk.column(i).take(&indices))
            .collect();
        Batch::with_row_count(cols, indices.len()).map(Some)
    }

    /// Removes exactly `size` rows (at most the pending rows) from the front of the pending pieces.
    fn emit(&mut self, size: usize) -> Result<Batch> {
        let size = size.min(self.pending_rows);
        let mut parts = Vec::new();
        let mut got = 0;
        while got < size {
            let Some(front) = self.pending.pop_front() else {
                break;
            };
            let need = size - got;
            if front.num_rows() <= need {
                got += front.num_rows();
                parts.push(front);
            } else {
                let rest = front.slice(need, front.num_rows() - need);
                parts.push(front.slice(0, need));
                self.pending.push_front(rest);
                got += need;
            }
        }
        self.pending_rows -= got;
        if parts.len() == 1 {
            return Ok(parts.pop().unwrap_or_else(|| Batch::empty(&[])));
        }
        Batch::concat(&parts)
    }

    /// The next output batch, or `None` at the end. Never returns an empty batch.
    pub fn next_batch(&mut self) -> Result<Option<Batch>> {
        let size = self.ctx.batch_size.max(1);
        loop {
            if self.pending_rows >= size {
                return self.emit(size).map(Some);
            }
            match self.chunks.next() {
                Some(chunk) => {
                    if let Some(piece) = self.process(&chunk)? {
                        self.pending_rows += piece.num_rows();
                        self.pending.push_back(piece);
                    }
                }
                None => {
                    if self.pending_rows == 0 {
                        return Ok(None);
                    }
                    let rows = self.pending_rows;
                    return self.emit(rows).map(Some);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BinaryOp, Value};

    fn chunks(sizes: &[usize]) -> Vec<Arc<Batch>> {
        let mut next = 0i64;
        sizes
            .iter()
            .map(|&s| {
                let a: Vec<i64> = (next..next + s as i64).collect();
                next += s as i64;
                let b: Vec<String> = a.iter().map(|v| format!("s{v}")).collect();
                Arc::new(Batch::try_new(vec![Column::from_i64(a), Column::from_strs(&b)]).unwrap())
            })
            .collect()
    }

    fn drain(mut s: ScanSource) -> Vec<Batch> {
        let mut out = Vec::new();
        while let Some(b) = s.next_batch().unwrap() {
            assert!(!b.is_empty());
            out.push(b);
        }
        out
    }

    #[test]
    fn coalesces() {
        let mut ctx = ExecContext::new(vec![Value::Int(2)]);
        ctx.batch_size = 10;
        let filter = Expr::col(0)
            .binary(BinaryOp::Mod, Expr::Param(0))
            .eq(Expr::lit(0));
        let s = ScanSource::new(
            chunks(&[7, 0, 13, 25, 3]),
            Some(filter),
            vec![1, 0],
            ctx.clone(),
        );
        let out = drain(s);
        let sizes: Vec<usize> = out.iter().map(Batch::num_rows).collect();
        assert_eq!(sizes, vec![10, 10, 4]);
        let all: Vec<i64> = out
            .iter()
            .flat_map(|b| b.column(1).as_i64().unwrap().to_vec())
            .collect();
        assert_eq!(all, (0..48).step_by(2).collect::<Vec<_>>());
        assert_eq!(out[0].column(0).str_at(1), "s2");

        let s = ScanSource::new(chunks(&[10, 10, 5]), None, vec![], ctx.clone());
        let sizes: Vec<usize> = drain(s).iter().map(Batch::num_rows).collect();
        assert_eq!(sizes, vec![10, 10, 5]);
        let s = ScanSource::new(vec![], None, vec![0], ctx);
        assert!(drain(s).is_empty());
    }
}
