//! Running a small operator tree in memory, on the calling thread: the step of a recursive
//! query, evaluated once per round over the rows of the round before.
//!
//! [`run_local`] evaluates a plan bottom up: each node's inputs are evaluated whole (their
//! batches accounted in the caller's pool while they wait), then pushed through the node's
//! kernel, built as the runtime builds it
//! ([`create_operator`](crate::kernels::create_operator)) with a reservation of its
//! own in the same pool, which is returned when the node is done. Leaves are
//! [`PhysicalPlan::StepInput`]s, read from the batches the caller holds, and constant
//! [`PhysicalPlan::Values`]; a scan, an exchange or a recursive union cannot run here.

use super::operator::{drain, ExecContext, InputOrder, Operator};
use super::series::SeriesSource;
use crate::plan::PhysicalPlan;
use crate::{Batch, Error, Reservation, Result};

/// How a node's kernel is built (`kernels::create_operator`, handed in by the caller: the
/// kernel builder builds the recursive union that runs steps here).
pub type Build = fn(&PhysicalPlan, &ExecContext, Reservation) -> Result<Box<dyn Operator>>;

/// Every output batch of `plan`, whose [`PhysicalPlan::StepInput`] leaves of port `k` read
/// the batches `inputs[k]`; `build` builds each node's kernel. Kernels and the batches
/// waiting between them account their memory against `pool`'s pool; all of it is returned
/// by the time this returns.
pub fn run_local(
    plan: &PhysicalPlan,
    inputs: &[&[Batch]],
    ctx: &ExecContext,
    pool: &Reservation,
    build: Build,
) -> Result<Vec<Batch>> {
    match plan {
        PhysicalPlan::StepInput { port, .. } => inputs
            .get(*port)
            .map(|b| b.to_vec())
            .ok_or_else(|| Error::Internal(format!("a step reads input {port}, which it lacks"))),
        PhysicalPlan::Values { schema, rows } => Ok(vec![Batch::from_rows(&schema.types(), rows)?]),
        PhysicalPlan::Series {
            start,
            stop,
            step,
            ordinality,
            ..
        } => {
            let mut series = SeriesSource::new(start, stop, step, &ctx.params, ctx.batch_size)?;
            if *ordinality {
                series = series.numbered();
            }
            let mut out = Vec::new();
            while let Some(batch) = series.next_batch()? {
                out.push(batch);
            }
            Ok(out)
        }
        PhysicalPlan::Scan { .. }
        | PhysicalPlan::Exchange { .. }
        | PhysicalPlan::RecursiveUnion { .. } => Err(Error::Internal(format!(
            "{} cannot run inside a recursive query's step",
            plan.name()
        ))),
        node => {
            let mut op = build(node, ctx, pool.new_empty())?;
            let children = node.children();
            let order: Vec<usize> = match op.input_order() {
                InputOrder::Any => (0..children.len()).collect(),
                InputOrder::Sequential => {
                    let first = op.first_port().min(children.len().saturating_sub(1));
                    std::iter::once(first)
                        .chain((0..children.len()).filter(|&p| p != first))
                        .collect()
                }
            };
            let mut out = Vec::new();
            for port in order {
                if op.is_done() {
                    break;
                }
                let batches = run_local(children[port], inputs, ctx, pool, build)?;
                // The input's rows wait here until the kernel takes them.
                let mut waiting = pool.new_empty();
                waiting.try_grow(batches.iter().map(Batch::memory_size).sum())?;
                for b in batches {
                    let size = b.memory_size();
                    op.push(port, b)?;
                    waiting.shrink(size);
                    drain(op.as_mut(), &mut out)?;
                    if op.is_done() {
                        break;
                    }
                }
                op.finish(port)?;
                drain(op.as_mut(), &mut out)?;
            }
            Ok(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::create_operator;
    use crate::memory::UnboundedPool;
    use crate::types::{Field, Schema};
    use crate::{BinaryOp, Column, DataType, Expr};

    fn ints(v: Vec<i64>) -> Batch {
        Batch::try_new(vec![Column::from_i64(v)]).unwrap()
    }

    #[test]
    fn runs_a_filter_over_a_join_of_its_inputs_and_returns_its_memory() {
        let schema = Schema::new(vec![Field::new("x", DataType::Int64)]);
        let input = |port| PhysicalPlan::StepInput {
            port,
            schema: schema.clone(),
        };
        let plan = PhysicalPlan::Filter {
            input: Box::new(PhysicalPlan::HashJoin {
                left: Box::new(input(0)),
                right: Box::new(input(1)),
                left_keys: vec![Expr::Column(0)],
                right_keys: vec![Expr::Column(0)],
                join_type: crate::plan::JoinType::Inner,
                filter: None,
                build: crate::plan::JoinSide::Right,
                left_types: vec![DataType::Int64],
                right_types: vec![DataType::Int64],
                output: None,
            }),
            predicate: Expr::Column(0).binary(BinaryOp::Gt, Expr::lit(1)),
        };
        let pool = UnboundedPool::new();
        let reservation = Reservation::new(pool.clone());
        let (a, b) = (
            vec![ints(vec![1, 2, 3])],
            vec![ints(vec![2, 3, 4]), ints(vec![3])],
        );
        let ctx = ExecContext::new(vec![]);
        let out = run_local(&plan, &[&a, &b], &ctx, &reservation, create_operator).unwrap();
        let mut rows: Vec<Vec<crate::Value>> = out.iter().flat_map(Batch::rows).collect();
        rows.sort_by_key(|r| format!("{r:?}"));
        assert_eq!(rows.len(), 3);
        assert!(pool.peak() > 0);
        assert_eq!(pool.used(), 0);
        let e = run_local(&input(2), &[&a], &ctx, &reservation, create_operator).unwrap_err();
        assert!(e.to_string().contains("input 2"), "{e}");
    }
}
