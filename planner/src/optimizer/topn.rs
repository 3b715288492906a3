//! Top-N per partition: a filter `rn <= k` (or `rn < k`, `rn = k`) right above the window
//! that numbers `rn = ROW_NUMBER() OVER (...)` lets that window keep only the first `k`
//! rows of each partition, and drop the others as early as it can (the window kernel cuts its
//! buffer as it goes, and a distributed window cuts each node's rows before they move). It
//! applies only when no function of the window reads a row after its own, in window order:
//! ROW_NUMBER, RANK and DENSE_RANK, LAG by a constant, and value functions and aggregates
//! over a `ROWS` frame that ends at the current row or before; other functions (a running
//! sum over `RANGE`, whose peers may come later, a partition count, LEAD) would see rows the
//! window dropped. The filter stays: it is exact, the cut is only an early one.

use super::rule::Rule;
use crate::error::PlanError;
use crate::logical::{conjuncts, LogicalPlan};
use weir_operators::plan::{FrameBound, FrameUnits, WindowExpr, WindowFunc};
use weir_operators::{BinaryOp, Expr, Value};

/// `Filter(rn <= k, Window)` → the window keeps `k` rows per partition.
pub(crate) struct TopNPerPartition;

/// Whether `f`'s value at a row depends only on the rows up to it in window order.
fn reads_only_rows_before(f: &WindowExpr) -> bool {
    match f.func {
        WindowFunc::RowNumber | WindowFunc::Rank | WindowFunc::DenseRank => true,
        WindowFunc::Lag => matches!(f.args.get(1), Some(Expr::Literal(Value::Int(n))) if *n >= 0),
        WindowFunc::FirstValue
        | WindowFunc::LastValue
        | WindowFunc::NthValue
        | WindowFunc::Aggregate(_) => {
            f.frame.units == FrameUnits::Rows
                && matches!(
                    f.frame.end,
                    FrameBound::CurrentRow | FrameBound::Preceding(_)
                )
        }
        WindowFunc::PercentRank | WindowFunc::CumeDist | WindowFunc::Ntile | WindowFunc::Lead => {
            false
        }
    }
}

/// The rows per partition the conjunct `c` needs, when it bounds column `rn` from above by
/// a constant.
fn bound(c: &Expr, rn: usize) -> Option<usize> {
    let Expr::Binary { op, left, right } = c else {
        return None;
    };
    let (op, k) = match (left.as_ref(), right.as_ref()) {
        (Expr::Column(c), Expr::Literal(Value::Int(k))) if *c == rn => (*op, *k),
        (Expr::Literal(Value::Int(k)), Expr::Column(c)) if *c == rn => (flip(*op)?, *k),
        _ => return None,
    };
    let keep = match op {
        BinaryOp::LtEq | BinaryOp::Eq => k,
        BinaryOp::Lt => k.saturating_sub(1),
        _ => return None,
    };
    Some(usize::try_from(keep.max(0)).unwrap_or(usize::MAX))
}

/// `k op x` as `x op' k`.
fn flip(op: BinaryOp) -> Option<BinaryOp> {
    Some(match op {
        BinaryOp::GtEq => BinaryOp::LtEq,
        BinaryOp::Gt => BinaryOp::Lt,
        BinaryOp::Eq => BinaryOp::Eq,
        _ => return None,
    })
}

impl Rule for TopNPerPartition {
    fn rewrite(&self, plan: &LogicalPlan) -> Result<Option<LogicalPlan>, PlanError> {
        let LogicalPlan::Filter { input, predicate } = plan else {
            return Ok(None);
        };
        let LogicalPlan::Window {
            input: rows,
            partition_by,
            order_by,
            functions,
            names,
            keep: None,
        } = input.as_ref()
        else {
            return Ok(None);
        };
        if !functions.iter().all(reads_only_rows_before) {
            return Ok(None);
        }
        let width = rows.width();
        let mut conds = Vec::new();
        conjuncts(predicate.clone(), &mut conds);
        let keep = functions
            .iter()
            .enumerate()
            .filter(|(_, f)| f.func == WindowFunc::RowNumber)
            .flat_map(|(j, _)| conds.iter().filter_map(move |c| bound(c, width + j)))
            .min();
        let Some(keep) = keep else {
            return Ok(None);
        };
        Ok(Some(LogicalPlan::Filter {
            input: Box::new(LogicalPlan::Window {
                input: rows.clone(),
                partition_by: partition_by.clone(),
                order_by: order_by.clone(),
                functions: functions.clone(),
                names: names.clone(),
                keep: Some(keep),
            }),
            predicate: predicate.clone(),
        }))
    }
}
