//! The end of a query: its ORDER BY and its LIMIT/OFFSET or `FETCH {FIRST|NEXT} n ROWS {ONLY
//! | WITH TIES}`.
//!
//! `WITH TIES` keeps, after the OFFSET, the first `n` rows and every later row equal to the
//! last of them on the ORDER BY keys, as PostgreSQL does. It plans as a window over the rows
//! in ORDER BY order that ranks and numbers them, and a filter keeping the rows numbered past
//! the OFFSET and ranked within OFFSET + n (so the rows the OFFSET skips are cut where the
//! order puts them, ties included); the top-N rule lets the window keep only those.

use super::*;
use weir_operators::plan::{WindowExpr, WindowFunc};

/// How many rows a query keeps: `limit` (all without), after skipping `offset`; with
/// `with_ties` also the rows equal on the ORDER BY keys to the last one kept.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Limits {
    pub limit: Option<usize>,
    pub offset: usize,
    pub with_ties: bool,
}

/// `plan` sorted by `keys` (when there are any) and cut to `limits`.
pub(super) fn sorted_and_limited(
    mut plan: LogicalPlan,
    keys: Vec<SortKey>,
    limits: Limits,
) -> LogicalPlan {
    let Limits {
        limit,
        offset,
        with_ties,
    } = limits;
    if with_ties {
        if let Some(n) = limit {
            plan = first_with_ties(plan, &keys, offset, n);
        }
    }
    if !keys.is_empty() {
        plan = LogicalPlan::Sort {
            input: Box::new(plan),
            keys,
        };
    }
    if !with_ties && (limit.is_some() || offset > 0) {
        plan = LogicalPlan::Limit {
            input: Box::new(plan),
            offset,
            limit,
        };
    }
    plan
}

/// The rows of `plan` past the first `offset` in `keys` order, up to the `n`-th and the rows
/// tied with it.
fn first_with_ties(plan: LogicalPlan, keys: &[SortKey], offset: usize, n: usize) -> LogicalPlan {
    let fields = plan.schema().fields;
    let width = plan.width();
    let ranked = LogicalPlan::Window {
        input: Box::new(plan),
        partition_by: vec![],
        order_by: keys.to_vec(),
        functions: vec![
            WindowExpr::numbering(WindowFunc::Rank),
            WindowExpr::numbering(WindowFunc::RowNumber),
        ],
        names: vec!["__rank".into(), "__row".into()],
        keep: None,
    };
    let count = |k: usize| Expr::lit(i64::try_from(k).unwrap_or(i64::MAX));
    let mut keep =
        vec![Expr::Column(width).binary(BinaryOp::LtEq, count(offset.saturating_add(n)))];
    if offset > 0 {
        keep.push(Expr::Column(width + 1).binary(BinaryOp::Gt, count(offset)));
    }
    ranked
        .filter_all(keep)
        .project((0..width).map(Expr::Column).collect(), fields)
}
