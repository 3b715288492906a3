//! Pure batch kernels. Each kernel is a resumable state machine driven by the runtime's
//! operator actor, which pushes input batches in, tells it when an input has ended, and pulls
//! output batches out one at a time with [`Operator::next_output`] when its output edge has
//! credit. A push never produces more than one output batch's worth of work without being
//! asked: output that is pending is bounded by the kernel's own state (a hash join keeps its
//! current probe batch and a cursor into the matches, not the materialized matches; a sort or
//! aggregate emits slices of its finished state), so a consumer that stops asking stops the
//! kernel. Sources ([`ScanSource`]) are pulled too.
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
pub(crate) mod int_table;
pub mod join;
pub mod limit;
pub mod partition;
pub mod project;
pub mod repeat;
pub mod scan;
pub mod single_row;
pub mod sort;
pub mod union;

pub use scan::ScanSource;

/// How an operator wants its inputs fed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputOrder {
    /// Any input, any time.
    Any,
    /// Input 0 completely, then input 1, and so on (a hash join's build side before its probe).
    Sequential,
}

/// An operator over one or more inputs, driven by push (input) and pull (output).
///
/// The driver alternates: while [`has_output`](Operator::has_output) is true it calls
/// [`next_output`](Operator::next_output) (when it can take a batch); only once nothing is
/// pending does it [`push`](Operator::push) the next input batch or report an input's
/// [`finish`](Operator::finish). [`drain`] does the pulling for tests and benchmarks.
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

    /// Accepts one batch from input `port`. Only called while
    /// [`has_output`](Operator::has_output) is false; the output it leads to, if any, is
    /// handed over by [`next_output`](Operator::next_output).
    fn push(&mut self, port: usize, batch: Batch) -> Result<()>;

    /// Input `port` has ended. Only called while [`has_output`](Operator::has_output) is
    /// false. Once every input has ended and `next_output` has returned `None`, the operator
    /// has emitted all of its output.
    fn finish(&mut self, port: usize) -> Result<()>;

    /// The next output batch: non-empty, at most `batch_size` rows. `None` when the operator
    /// has nothing more to give until it gets more input (or ever, once every input ended);
    /// after `None`, [`has_output`](Operator::has_output) is false.
    fn next_output(&mut self) -> Result<Option<Batch>>;

    /// Whether output is pending: a call to [`next_output`](Operator::next_output) would make
    /// progress (it may still return `None` if what remained turned out to produce no rows).
    fn has_output(&self) -> bool;

    /// True once the operator needs no more input (a satisfied LIMIT): the runtime may cancel
    /// its inputs, and ends its output once the pending output is drained.
    fn is_done(&self) -> bool {
        false
    }

    /// Bytes of state held now (what its reservation accounts).
    fn memory_size(&self) -> usize {
        0
    }
}

/// Pulls every pending output batch of `op` into `out` (for tests and benchmarks; the runtime
/// pulls only as far as its output edge has credit).
pub fn drain(op: &mut dyn Operator, out: &mut Vec<Batch>) -> Result<()> {
    while let Some(b) = op.next_output()? {
        out.push(b);
    }
    Ok(())
}

/// The error for a push or finish while output is pending (a driver bug).
pub(crate) fn output_pending(op: &str) -> crate::Error {
    crate::Error::Internal(format!("{op} was fed input while its output was pending"))
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
/// `NestedLoopJoin`, `SingleRow`, `HashAggregate`, `Sort`, `Limit`, `Union`, `Repeat`). Stateful kernels account their memory in `reservation`
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
            join_type,
            filter,
            build,
            left_types,
            right_types,
            output,
            ..
        } => Ok(Box::new(join::HashJoinOp::with_spec(
            left_keys.clone(),
            right_keys.clone(),
            join::JoinSpec::new(*join_type, *build)
                .with_filter(filter.clone())
                .with_types(left_types.clone(), right_types.clone())
                .with_output(output.clone()),
            ctx.clone(),
            reservation,
        )?)),
        PhysicalPlan::NestedLoopJoin {
            join_type,
            filter,
            build,
            left_types,
            right_types,
            ..
        } => Ok(Box::new(join::NestedLoopJoinOp::new(
            join::JoinSpec::new(*join_type, *build)
                .with_filter(filter.clone())
                .with_types(left_types.clone(), right_types.clone()),
            ctx.clone(),
            reservation,
        )?)),
        PhysicalPlan::SingleRow { types, .. } => {
            Ok(Box::new(single_row::SingleRowOp::new(types.clone())))
        }
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
        PhysicalPlan::Union { .. } => Ok(Box::new(union::UnionOp::new())),
        PhysicalPlan::Repeat { .. } => Ok(Box::new(repeat::RepeatOp::new(ctx.batch_size))),
        other => Err(crate::Error::Internal(format!(
            "{} is a source, not an operator",
            other.name()
        ))),
    }
}
