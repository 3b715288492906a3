//! Filter kernel: keeps the rows of each batch where a predicate is TRUE. One input batch
//! gives at most one output batch, computed by `push` and held until `next_output` takes it.

use super::operator::{output_pending, ExecContext, Operator};
use crate::eval::evaluate_predicate;
use crate::{Batch, Expr, Result};

/// Keeps rows where a predicate is TRUE (FALSE and NULL rows are dropped).
pub struct FilterOp {
    predicate: Expr,
    ctx: ExecContext,
    /// The output of the last push, until it is taken.
    pending: Option<Batch>,
}

impl FilterOp {
    /// A filter applying `predicate` (over the input's columns) with the parameters of `ctx`.
    pub fn new(predicate: Expr, ctx: ExecContext) -> Self {
        FilterOp {
            predicate,
            ctx,
            pending: None,
        }
    }
}

/// Applies `mask` to `batch`: passes it through untouched when every row matches and
/// returns `None` when no row does.
pub(crate) fn apply_mask(batch: Batch, mask: &[bool]) -> Option<Batch> {
    let kept = mask.iter().filter(|&&m| m).count();
    if kept == 0 {
        None
    } else if kept == batch.num_rows() {
        Some(batch)
    } else {
        let indices: Vec<u32> = mask
            .iter()
            .enumerate()
            .filter_map(|(i, &m)| m.then_some(i as u32))
            .collect();
        if batch.num_columns() == 0 {
            return Batch::with_row_count(Vec::new(), kept).ok();
        }
        Some(batch.take(&indices))
    }
}

impl Operator for FilterOp {
    fn name(&self) -> &'static str {
        "Filter"
    }

    fn push(&mut self, _port: usize, batch: Batch) -> Result<()> {
        if self.pending.is_some() {
            return Err(output_pending(self.name()));
        }
        if batch.is_empty() {
            return Ok(());
        }
        let mask = evaluate_predicate(&self.predicate, &batch, &self.ctx.params)?;
        self.pending = apply_mask(batch, &mask);
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::drain;
    use crate::{BinaryOp, Column, Value};

    #[test]
    fn filters_rows() {
        let mut op = FilterOp::new(
            Expr::col(0).binary(BinaryOp::Gt, Expr::Param(0)),
            ExecContext::new(vec![Value::Int(2)]),
        );
        let mut out = Vec::new();
        let b = Batch::try_new(vec![Column::from_i64(vec![1, 2, 3, 4])]).unwrap();
        op.push(0, b.clone()).unwrap();
        assert!(op.has_output());
        assert!(op.push(0, b.clone()).is_err());
        drain(&mut op, &mut out).unwrap();
        assert!(!op.has_output());
        op.push(0, b.slice(0, 2)).unwrap();
        assert!(!op.has_output());
        op.finish(0).unwrap();
        drain(&mut op, &mut out).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(
            out[0].rows(),
            vec![vec![Value::Int(3)], vec![Value::Int(4)]]
        );
        // All rows pass: untouched.
        op.push(0, b.slice(2, 2)).unwrap();
        drain(&mut op, &mut out).unwrap();
        assert_eq!(out[1].num_rows(), 2);
    }
}
