//! sort kernel.
use super::{ExecContext, Operator};
use crate::plan::SortKey;
use crate::{Batch, Reservation, Result};
/// Sort and top-k.
pub struct SortOp;
impl SortOp {
    /// A sort.
    pub fn new(keys: Vec<SortKey>, limit: Option<usize>, ctx: ExecContext, reservation: Reservation) -> Self { let _ = (keys, limit, ctx, reservation); unimplemented!() }
}
impl Operator for SortOp {
    fn name(&self) -> &'static str { "Sort" }
    fn push(&mut self, _port: usize, _batch: Batch, _out: &mut Vec<Batch>) -> Result<()> { unimplemented!() }
    fn finish(&mut self, _port: usize, _out: &mut Vec<Batch>) -> Result<()> { unimplemented!() }
}
