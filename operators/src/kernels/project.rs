//! Projection kernel: computes one output column per expression. One input batch gives one
//! output batch, computed by `push` and held until `next_output` takes it.

use super::{output_pending, ExecContext, Operator};
use crate::eval::evaluate;
use crate::{Batch, Expr, Result};

/// Computes output columns from expressions over the input's columns.
pub struct ProjectOp {
    exprs: Vec<Expr>,
    ctx: ExecContext,
    /// The output of the last push, until it is taken.
    pending: Option<Batch>,
}

impl ProjectOp {
    /// A projection computing `exprs` with the parameters of `ctx`.
    pub fn new(exprs: Vec<Expr>, ctx: ExecContext) -> Self {
        ProjectOp {
            exprs,
            ctx,
            pending: None,
        }
    }
}

impl Operator for ProjectOp {
    fn name(&self) -> &'static str {
        "Project"
    }

    fn push(&mut self, _port: usize, batch: Batch) -> Result<()> {
        if self.pending.is_some() {
            return Err(output_pending(self.name()));
        }
        if batch.is_empty() {
            return Ok(());
        }
        let n = batch.num_rows();
        // Pure column references move (or clone only repeated) columns.
        let plain: Option<Vec<usize>> = self
            .exprs
            .iter()
            .map(|e| match e {
                Expr::Column(i) if *i < batch.num_columns() => Some(*i),
                _ => None,
            })
            .collect();
        if let Some(indices) = plain {
            if !indices.is_empty() {
                self.pending = Some(batch.into_projection(&indices));
                return Ok(());
            }
        }
        let columns = self
            .exprs
            .iter()
            .map(|e| evaluate(e, &batch, &self.ctx.params))
            .collect::<Result<Vec<_>>>()?;
        self.pending = Some(Batch::with_row_count(columns, n)?);
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
    fn projects() {
        let mut op = ProjectOp::new(
            vec![
                Expr::col(1),
                Expr::col(0).binary(BinaryOp::Mul, Expr::lit(2)),
                Expr::lit("k"),
            ],
            ExecContext::new(vec![]),
        );
        let mut out = Vec::new();
        let b = Batch::try_new(vec![
            Column::from_i64(vec![1, 2]),
            Column::from_bools(vec![true, false]),
        ])
        .unwrap();
        op.push(0, b).unwrap();
        drain(&mut op, &mut out).unwrap();
        assert_eq!(
            out[0].rows(),
            vec![
                vec![Value::Bool(true), Value::Int(2), Value::from("k")],
                vec![Value::Bool(false), Value::Int(4), Value::from("k")]
            ]
        );
        let mut op = ProjectOp::new(vec![Expr::col(1), Expr::col(1)], ExecContext::new(vec![]));
        let b = Batch::try_new(vec![Column::from_i64(vec![1]), Column::from_i64(vec![5])]).unwrap();
        op.push(0, b).unwrap();
        drain(&mut op, &mut out).unwrap();
        assert_eq!(out[1].rows(), vec![vec![Value::Int(5), Value::Int(5)]]);
    }
}
