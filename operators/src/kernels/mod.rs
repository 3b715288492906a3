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
//!
//! The contract every kernel implements ([`Operator`], [`InputOrder`], [`ExecContext`],
//! [`drain`]) is module `operator`'s; each kernel is a module of its own, and this file builds
//! the kernel for a plan node ([`create_operator`]).

use crate::error::Result;
use crate::memory::Reservation;
use crate::plan::PhysicalPlan;

pub mod aggregate;
pub mod expand;
pub mod filter;
pub(crate) mod groups;
pub mod hash;
pub(crate) mod int_table;
pub mod join;
pub mod key_filter;
pub mod limit;
pub mod local;
mod operator;
mod packed_keys;
pub mod partition;
mod prefetch;
pub mod project;
pub mod recursive;
pub mod repeat;
mod row_filter;
pub mod scan;
pub mod series;
pub mod single_row;
pub mod sort;
pub mod union;
pub mod window;

pub use operator::{drain, ExecContext, InputOrder, Operator};
pub use scan::ScanSource;

/// Builds the kernel for a non-leaf plan node (`Filter`, `Project`, `HashJoin`,
/// `NestedLoopJoin`, `SingleRow`, `HashAggregate`, `Sort`, `Limit`, `Union`, `Repeat`, `Expand`,
/// `Window`, `RecursiveUnion`). Stateful kernels account their memory in `reservation`
/// and fail with [`crate::Error::Memory`] when it refuses to grow. Leaf nodes (`Scan`,
/// `Exchange`, `Values`, `Series`) are sources handled by the runtime; asking for one here is
/// an error.
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
        PhysicalPlan::Expand {
            function,
            ordinality,
            ..
        } => Ok(Box::new(expand::ExpandOp::new(
            function.clone(),
            *ordinality,
            ctx.clone(),
        ))),
        PhysicalPlan::Window {
            partition_by,
            order_by,
            functions,
            keep,
            ..
        } => Ok(Box::new(window::WindowOp::new(
            partition_by.clone(),
            order_by.clone(),
            functions.clone(),
            *keep,
            ctx.clone(),
            reservation,
        ))),
        PhysicalPlan::RecursiveUnion {
            name,
            inputs,
            step,
            distinct,
            max_iterations,
            types,
        } => Ok(Box::new(recursive::RecursiveUnionOp::new(
            recursive::RecursiveSpec {
                name: name.clone(),
                step: (**step).clone(),
                distinct: *distinct,
                max_iterations: *max_iterations,
                types: types.clone(),
                inputs: inputs.len(),
                build: create_operator,
            },
            ctx.clone(),
            reservation,
        ))),
        other => Err(crate::Error::Internal(format!(
            "{} is a source, not an operator",
            other.name()
        ))),
    }
}
