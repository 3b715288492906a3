//! Projection kernel: computes one output column per expression. One input batch gives one
//! output batch, computed by `push` and held until `next_output` takes it.

use super::operator::{output_pending, ExecContext, Operator};
use crate::eval::evaluate;
use crate::{Batch, Error, Expr, Result};

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
        let width = batch.num_columns();
        let plain = |e: &Expr| match e {
            Expr::Column(i) if *i < width => Some(*i),
            _ => None,
        };
        // Computed columns first, while the batch is whole; then the plain column references,
        // moved out of the batch (a column referenced again later is cloned).
        let mut computed = self
            .exprs
            .iter()
            .map(|e| match plain(e) {
                Some(_) => Ok(None),
                None => evaluate(e, &batch, &self.ctx.params).map(Some),
            })
            .collect::<Result<Vec<_>>>()?;
        let indices: Vec<usize> = self.exprs.iter().filter_map(plain).collect();
        let mut moved = batch.into_projection(&indices).into_columns().into_iter();
        let columns = computed
            .iter_mut()
            .map(|c| c.take().or_else(|| moved.next()))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| Error::Internal("projection lost a column".into()))?;
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

    #[test]
    fn plain_columns_move_beside_computed_ones() {
        let mut op = ProjectOp::new(
            vec![
                Expr::col(0).binary(BinaryOp::Add, Expr::col(1)),
                Expr::col(1),
                Expr::col(0),
                Expr::col(1),
            ],
            ExecContext::new(vec![]),
        );
        let b = Batch::try_new(vec![
            Column::from_i64(vec![1, 2, 3]),
            Column::from_i64(vec![10, 20, 30]),
        ])
        .unwrap();
        let buffer = |b: &Batch, i: usize| b.column(i).as_i64().unwrap().as_ptr();
        let (first, second) = (buffer(&b, 0), buffer(&b, 1));
        op.push(0, b).unwrap();
        let mut out = Vec::new();
        drain(&mut op, &mut out).unwrap();
        let got = &out[0];
        assert_eq!(
            got.rows(),
            vec![
                vec![
                    Value::Int(11),
                    Value::Int(10),
                    Value::Int(1),
                    Value::Int(10)
                ],
                vec![
                    Value::Int(22),
                    Value::Int(20),
                    Value::Int(2),
                    Value::Int(20)
                ],
                vec![
                    Value::Int(33),
                    Value::Int(30),
                    Value::Int(3),
                    Value::Int(30)
                ],
            ]
        );
        // Each input column's buffer moved to its last use; an earlier use is a copy.
        assert_eq!(buffer(got, 2), first);
        assert_eq!(buffer(got, 3), second);
        assert_ne!(buffer(got, 1), second);
    }
}
