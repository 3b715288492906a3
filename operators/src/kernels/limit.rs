//! limit kernel.
use super::Operator;
use crate::{Batch, Result};
/// Offset and limit.
pub struct LimitOp;
impl LimitOp {
    /// A limit.
    pub fn new(offset: usize, limit: Option<usize>) -> Self { let _ = (offset, limit); unimplemented!() }
}
impl Operator for LimitOp {
    fn name(&self) -> &'static str { "Limit" }
    fn push(&mut self, _port: usize, _batch: Batch, _out: &mut Vec<Batch>) -> Result<()> { unimplemented!() }
    fn finish(&mut self, _port: usize, _out: &mut Vec<Batch>) -> Result<()> { unimplemented!() }
}
