//! Filter kernel: keeps the rows of each batch where a predicate is TRUE.

use super::{ExecContext, Operator};
use crate::eval::evaluate_predicate;
use crate::{Batch, Expr, Result};

/// Keeps rows where a predicate is TRUE (FALSE and NULL rows are dropped).
pub struct FilterOp {
    predicate: Expr,
    ctx: ExecContext,
}

impl FilterOp {
    /// A filter applying `predicate` (over the input's columns) with the parameters of `ctx`.
    pub fn new(predicate: Expr, ctx: ExecContext) -> Self {
        FilterOp { predicate, ctx }
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

    fn push(&mut self, _port: usize, batch: Batch, out: &mut Vec<Batch>) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let mask = evaluate_predicate(&self.predicate, &batch, &self.ctx.params)?;
        if let Some(b) = apply_mask(batch, &mask) {
            out.push(b);
        }
        Ok(())
    }

    fn finish(&mut self, _port: usize, _out: &mut Vec<Batch>) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BinaryOp, Column, Value};

    #[test]
    fn filters_rows() {
        let mut op = FilterOp::new(
            Expr::col(0).binary(BinaryOp::Gt, Expr::Param(0)),
            ExecContext::new(vec![Value::Int(2)]),
        );
        let mut out = Vec::new();
        let b = Batch::try_new(vec![Column::from_i64(vec![1, 2, 3, 4])]).unwrap();
        op.push(0, b.clone(), &mut out).unwrap();
        op.push(0, b.slice(0, 2), &mut out).unwrap();
        op.finish(0, &mut out).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(
            out[0].rows(),
            vec![vec![Value::Int(3)], vec![Value::Int(4)]]
        );
        // All rows pass: untouched.
        op.push(0, b.slice(2, 2), &mut out).unwrap();
        assert_eq!(out[1].num_rows(), 2);
    }
}
