//! `SELECT DISTINCT ON (e1, ...)`: of each set of rows equal on the expressions, the first
//! in the query's ORDER BY (any one without it), as PostgreSQL keeps it.
//!
//! The expressions are read as ORDER BY's are (a select-list position, an output name, or
//! an expression of the FROM columns), and, as PostgreSQL requires, they must be the
//! leftmost ORDER BY expressions, in any order. Over the rows of the select list (hidden
//! ORDER BY columns included), a window numbers the rows of each set in ORDER BY order and
//! a filter keeps number 1: the optimizer's top-N rule then keeps one row per set as the
//! window reads them, so no set is sorted whole.

use super::*;
use weir_operators::plan::{WindowExpr, WindowFunc};

/// The name of the row number DISTINCT ON keeps (dropped at once).
const ROW_NUMBER: &str = "__distinct_on";

/// Checks PostgreSQL's rule for the positions `on` (of the DISTINCT ON expressions in the
/// select list) against the query's ORDER BY `order`: every DISTINCT ON expression comes
/// before the first ORDER BY expression that is not one. `span` is where the error points.
pub(super) fn check_order(on: &[usize], order: &[SortKey], span: Span) -> Result<(), PlanError> {
    let mut seen = vec![false; on.len()];
    for key in order {
        let Expr::Column(p) = key.expr else {
            continue;
        };
        match on.iter().position(|&o| o == p) {
            Some(i) => seen[i] = true,
            None if seen.iter().all(|&s| s) => return Ok(()),
            None => {
                return Err(PlanError::Invalid(format!(
                    "SELECT DISTINCT ON expressions must match initial ORDER BY expressions{}",
                    at(span)
                )))
            }
        }
    }
    Ok(())
}

/// The rows of `plan` (the select list's, `fields`) that come first, in `order`, among those
/// equal on the columns `on`.
pub(super) fn first_of_each(
    plan: LogicalPlan,
    on: &[usize],
    order: &[SortKey],
    fields: Vec<Field>,
) -> LogicalPlan {
    let width = plan.width();
    let numbered = LogicalPlan::Window {
        input: Box::new(plan),
        partition_by: on.iter().map(|&p| Expr::Column(p)).collect(),
        order_by: order.to_vec(),
        functions: vec![WindowExpr::numbering(WindowFunc::RowNumber)],
        names: vec![ROW_NUMBER.to_string()],
        keep: None,
    };
    numbered
        .filter_all(vec![
            Expr::Column(width).binary(BinaryOp::Eq, Expr::lit(1i64))
        ])
        .project((0..width).map(Expr::Column).collect(), fields)
}
