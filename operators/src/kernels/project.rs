//! Projection kernel: computes one output column per expression.

use super::{ExecContext, Operator};
use crate::eval::evaluate;
use crate::{Batch, Expr, Result};

/// Computes output columns from expressions over the input's columns.
pub struct ProjectOp {
    exprs: Vec<Expr>,
    ctx: ExecContext,
}

impl ProjectOp {
    /// A projection computing `exprs` with the parameters of `ctx`.
    pub fn new(exprs: Vec<Expr>, ctx: ExecContext) -> Self {
        ProjectOp { exprs, ctx }
    }
}

impl Operator for ProjectOp {
    fn name(&self) -> &'static str {
        "Project"
    }

    fn push(&mut self, _port: usize, batch: Batch, out: &mut Vec<Batch>) -> Result<()> {
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
                out.push(batch.into_projection(&indices));
                return Ok(());
            }
        }
        let columns = self
            .exprs
            .iter()
            .map(|e| evaluate(e, &batch, &self.ctx.params))
            .collect::<Result<Vec<_>>>()?;
        out.push(Batch::with_row_count(columns, n)?);
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
        op.push(0, b, &mut out).unwrap();
        assert_eq!(
            out[0].rows(),
            vec![
                vec![Value::Bool(true), Value::Int(2), Value::from("k")],
                vec![Value::Bool(false), Value::Int(4), Value::from("k")]
            ]
        );
        let mut op = ProjectOp::new(vec![Expr::col(1), Expr::col(1)], ExecContext::new(vec![]));
        let b = Batch::try_new(vec![Column::from_i64(vec![1]), Column::from_i64(vec![5])]).unwrap();
        op.push(0, b, &mut out).unwrap();
        assert_eq!(out[1].rows(), vec![vec![Value::Int(5), Value::Int(5)]]);
    }
}
