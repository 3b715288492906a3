//! Pure batch kernels. Each kernel is a push-based state machine: the runtime's operator actor
//! pushes input batches in, collects output batches, and tells it when an input has ended.
//! Sources ([`ScanSource`]) are pulled instead.
//!
//! Kernels never block, never spawn, and never talk to actors.

use crate::batch::Batch;
use crate::error::Result;
use crate::memory::Reservation;
use crate::plan::PhysicalPlan;
use crate::value::Value;
use std::sync::Arc;

pub mod aggregate;
pub mod filter;
pub mod hash;
pub mod join;
pub mod limit;
pub mod project;
pub mod scan;
pub mod sort;

pub use scan::ScanSource;

/// How an operator wants its inputs fed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputOrder {
    /// Any input, any time.
    Any,
    /// Input 0 completely, then input 1, and so on (a hash join's build side before its probe).
    Sequential,
}

/// A push-based operator over one or more inputs.
pub trait Operator: Send {
    /// Short name (`"HashJoin"`, `"Filter"`, ...).
    fn name(&self) -> &'static str;

    /// How inputs must be fed.
    fn input_order(&self) -> InputOrder {
        InputOrder::Any
    }

    /// With [`InputOrder::Sequential`], the port that must be fed completely first (a hash
    /// join's build side, which may be port 1). The runtime feeds that port to its end, then
    /// the others in order.
    fn first_port(&self) -> usize {
        0
    }

    /// Consumes one batch from input `port`, appending any output to `out`.
    fn push(&mut self, port: usize, batch: Batch, out: &mut Vec<Batch>) -> Result<()>;

    /// Input `port` has ended; appends any output to `out`. After every input has ended the
    /// operator has emitted all of its output.
    fn finish(&mut self, port: usize, out: &mut Vec<Batch>) -> Result<()>;

    /// True once the operator needs no more input (a satisfied LIMIT): the runtime may cancel
    /// its inputs and end its output.
    fn is_done(&self) -> bool {
        false
    }

    /// Bytes of state held now (what its reservation accounts).
    fn memory_size(&self) -> usize {
        0
    }
}

/// What a kernel needs from its surroundings.
#[derive(Clone)]
pub struct ExecContext {
    /// Bound parameter values (`Expr::Param(i)` reads `params[i]`).
    pub params: Arc<Vec<Value>>,
    /// Rows per output batch.
    pub batch_size: usize,
}

impl ExecContext {
    /// A context with the given parameters and the default batch size.
    pub fn new(params: Vec<Value>) -> Self {
        ExecContext {
            params: Arc::new(params),
            batch_size: crate::DEFAULT_BATCH_SIZE,
        }
    }
}

/// Builds the kernel for a non-leaf plan node (`Filter`, `Project`, `HashJoin`,
/// `HashAggregate`, `Sort`, `Limit`). Stateful kernels account their memory in `reservation`
/// and fail with [`crate::Error::Memory`] when it refuses to grow. Leaf nodes (`Scan`,
/// `Exchange`, `Values`) are sources handled by the runtime; asking for one here is an error.
pub fn create_operator(
    node: &PhysicalPlan,
    ctx: &ExecContext,
    reservation: Reservation,
) -> Result<Box<dyn Operator>> {
    match node {
        PhysicalPlan::Filter { predicate, .. } => Ok(Box::new(filter::FilterOp::new(
            predicate.clone(),
            ctx.clone(),
        ))),
        PhysicalPlan::Project { exprs, .. } => Ok(Box::new(project::ProjectOp::new(
            exprs.clone(),
            ctx.clone(),
        ))),
        PhysicalPlan::HashJoin {
            left_keys,
            right_keys,
            build,
            ..
        } => Ok(Box::new(join::HashJoinOp::new(
            left_keys.clone(),
            right_keys.clone(),
            *build,
            ctx.clone(),
            reservation,
        ))),
        PhysicalPlan::HashAggregate {
            group_by,
            group_types,
            aggs,
            mode,
            ..
        } => Ok(Box::new(aggregate::HashAggregateOp::new(
            group_by.clone(),
            group_types.clone(),
            aggs.clone(),
            *mode,
            ctx.clone(),
            reservation,
        )?)),
        PhysicalPlan::Sort { keys, limit, .. } => Ok(Box::new(sort::SortOp::new(
            keys.clone(),
            *limit,
            ctx.clone(),
            reservation,
        ))),
        PhysicalPlan::Limit { offset, limit, .. } => {
            Ok(Box::new(limit::LimitOp::new(*offset, *limit)))
        }
        other => Err(crate::Error::Internal(format!(
            "{} is a source, not an operator",
            other.name()
        ))),
    }
}
