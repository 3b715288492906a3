//! project kernel.
use super::{ExecContext, Operator};
use crate::{Batch, Expr, Result};
/// Computes output columns.
pub struct ProjectOp;
impl ProjectOp {
    /// A projection.
    pub fn new(exprs: Vec<Expr>, ctx: ExecContext) -> Self { let _ = (exprs, ctx); unimplemented!() }
}
impl Operator for ProjectOp {
    fn name(&self) -> &'static str { "Project" }
    fn push(&mut self, _port: usize, _batch: Batch, _out: &mut Vec<Batch>) -> Result<()> { unimplemented!() }
    fn finish(&mut self, _port: usize, _out: &mut Vec<Batch>) -> Result<()> { unimplemented!() }
}
