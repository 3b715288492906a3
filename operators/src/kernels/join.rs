//! join kernel.
use super::{ExecContext, Operator};
use crate::plan::JoinSide;
use crate::{Batch, Expr, Reservation, Result};
/// Inner hash join.
pub struct HashJoinOp;
impl HashJoinOp {
    /// A join.
    pub fn new(left_keys: Vec<Expr>, right_keys: Vec<Expr>, build: JoinSide, ctx: ExecContext, reservation: Reservation) -> Self { let _ = (left_keys, right_keys, build, ctx, reservation); unimplemented!() }
}
impl Operator for HashJoinOp {
    fn name(&self) -> &'static str { "HashJoin" }
    fn push(&mut self, _port: usize, _batch: Batch, _out: &mut Vec<Batch>) -> Result<()> { unimplemented!() }
    fn finish(&mut self, _port: usize, _out: &mut Vec<Batch>) -> Result<()> { unimplemented!() }
}
