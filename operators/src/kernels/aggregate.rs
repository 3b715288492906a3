//! aggregate kernel.
use super::{ExecContext, Operator};
use crate::plan::{AggMode, AggregateExpr};
use crate::{Batch, DataType, Expr, Reservation, Result};
/// Hash aggregation.
pub struct HashAggregateOp;
impl HashAggregateOp {
    /// An aggregation.
    pub fn new(group_by: Vec<Expr>, group_types: Vec<DataType>, aggs: Vec<AggregateExpr>, mode: AggMode, ctx: ExecContext, reservation: Reservation) -> Result<Self> { let _ = (group_by, group_types, aggs, mode, ctx, reservation); unimplemented!() }
}
impl Operator for HashAggregateOp {
    fn name(&self) -> &'static str { "HashAggregate" }
    fn push(&mut self, _port: usize, _batch: Batch, _out: &mut Vec<Batch>) -> Result<()> { unimplemented!() }
    fn finish(&mut self, _port: usize, _out: &mut Vec<Batch>) -> Result<()> { unimplemented!() }
}
