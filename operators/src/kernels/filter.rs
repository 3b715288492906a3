//! filter kernel.
use super::{ExecContext, Operator};
use crate::{Batch, Expr, Result};
/// Keeps rows where a predicate is TRUE.
pub struct FilterOp;
impl FilterOp {
    /// A filter.
    pub fn new(predicate: Expr, ctx: ExecContext) -> Self { let _ = (predicate, ctx); unimplemented!() }
}
impl Operator for FilterOp {
    fn name(&self) -> &'static str { "Filter" }
    fn push(&mut self, _port: usize, _batch: Batch, _out: &mut Vec<Batch>) -> Result<()> { unimplemented!() }
    fn finish(&mut self, _port: usize, _out: &mut Vec<Batch>) -> Result<()> { unimplemented!() }
}
