//! Limit kernel: skips `offset` rows, then passes at most `limit` rows. One input batch gives
//! at most one output batch (a slice of it), held until `next_output` takes it.

use super::operator::{output_pending, Operator};
use crate::{Batch, Result};

/// Offset and limit.
pub struct LimitOp {
    to_skip: usize,
    remaining: Option<usize>,
    /// The output of the last push, until it is taken.
    pending: Option<Batch>,
}

impl LimitOp {
    /// Skips `offset` rows, then passes at most `limit` rows (`None`: all).
    pub fn new(offset: usize, limit: Option<usize>) -> Self {
        LimitOp {
            to_skip: offset,
            remaining: limit,
            pending: None,
        }
    }
}

impl Operator for LimitOp {
    fn name(&self) -> &'static str {
        "Limit"
    }

    fn push(&mut self, _port: usize, batch: Batch) -> Result<()> {
        if self.pending.is_some() {
            return Err(output_pending(self.name()));
        }
        if self.is_done() || batch.is_empty() {
            return Ok(());
        }
        let n = batch.num_rows();
        if self.to_skip >= n {
            self.to_skip -= n;
            return Ok(());
        }
        let start = std::mem::take(&mut self.to_skip);
        let mut len = n - start;
        if let Some(rem) = &mut self.remaining {
            len = len.min(*rem);
            *rem -= len;
        }
        if len == 0 {
            return Ok(());
        }
        self.pending = Some(if start == 0 && len == n {
            batch
        } else if batch.num_columns() == 0 {
            Batch::with_row_count(Vec::new(), len)?
        } else {
            batch.slice(start, len)
        });
        Ok(())
    }

    fn finish(&mut self, _port: usize) -> Result<()> {
        Ok(())
    }

    fn next_output(&mut self) -> Result<Option<Batch>> {
        Ok(self.pending.take())
    }

    fn has_output(&self) -> bool {
        self.pending.is_some()
    }

    fn is_done(&self) -> bool {
        self.remaining == Some(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::drain;
    use crate::Column;

    #[test]
    fn offset_and_limit() {
        let mut op = LimitOp::new(3, Some(4));
        let mut out = Vec::new();
        for i in 0..5 {
            let b = Batch::try_new(vec![Column::from_i64(vec![i * 2, i * 2 + 1])]).unwrap();
            op.push(0, b).unwrap();
            drain(&mut op, &mut out).unwrap();
        }
        let rows: Vec<i64> = out
            .iter()
            .flat_map(|b| b.column(0).as_i64().unwrap().to_vec())
            .collect();
        assert_eq!(rows, vec![3, 4, 5, 6]);
        assert!(op.is_done());
        let mut op = LimitOp::new(0, Some(0));
        assert!(op.is_done());
        op.finish(0).unwrap();
        assert!(!op.has_output());
    }
}
