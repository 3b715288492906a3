//! Semi and anti joins move below inner joins: [`PushSemiJoinDown`].
//!
//! A semi (or anti) join keeps the rows of its left input that have (or lack) a match in its
//! right input. When that left input is an inner join and the semi join's keys and residual
//! filter read the columns of only one side of it, whether a row survives depends on that
//! side's columns alone, so the semi join can filter that side before the inner join instead
//! of its output after it: `(a ⋈ b) ⋉ s = (a ⋉ s) ⋈ b`. The inner join then joins only the
//! rows that survive (TPC-H Q18's `o_orderkey IN (...)` keeps 57 orders of 1.5 million, and
//! the join of those with `lineitem` outputs hundreds of rows, not six million).
//!
//! It moves only where the estimates ([`estimate`]) say the inner join does not shrink the
//! side: where the inner join filters more than it multiplies (TPC-H Q21, whose `EXISTS` and
//! `NOT EXISTS` read `lineitem`, joined with one nation's suppliers), the semi join is cheaper
//! on the inner join's fewer rows.

use super::estimate::estimate;
use super::rule::Rule;
use crate::catalog::Catalog;
use crate::error::PlanError;
use crate::logical::{columns_of, JoinKind, LogicalPlan};
use weir_operators::Expr;

/// Moves a semi or anti join below the inner join it filters, onto the side it reads, when
/// the inner join is estimated to output at least as many rows as that side holds.
pub(crate) struct PushSemiJoinDown<'a> {
    /// The row counts behind the estimates.
    pub catalog: &'a Catalog,
}

/// The side of an inner join that a semi join's reads fall on.
enum Side {
    Left,
    Right,
}

impl Rule for PushSemiJoinDown<'_> {
    fn rewrite(&self, plan: &LogicalPlan) -> Result<Option<LogicalPlan>, PlanError> {
        let LogicalPlan::Join {
            left: joined,
            right: sub,
            kind,
            on,
            filter,
        } = plan
        else {
            return Ok(None);
        };
        if kind.outputs_right() {
            return Ok(None);
        }
        let LogicalPlan::Join {
            left: a,
            right: b,
            kind: JoinKind::Inner,
            on: inner_on,
            filter: inner_filter,
        } = joined.as_ref()
        else {
            return Ok(None);
        };
        // The columns of the inner join's output that the semi join reads.
        let width = joined.width();
        let mut reads: Vec<usize> = on.iter().flat_map(|(l, _)| columns_of(l)).collect();
        reads.extend(filter.iter().flat_map(columns_of).filter(|&c| c < width));
        let a_width = a.width();
        let side = if reads.iter().all(|&c| c < a_width) {
            Side::Left
        } else if reads.iter().all(|&c| c >= a_width) {
            Side::Right
        } else {
            return Ok(None);
        };
        // Where the semi join's columns go when its left input is one side of the inner join:
        // that side's columns shift by `offset`; the subquery's follow the side's.
        let (offset, side_width, side_plan) = match side {
            Side::Left => (0, a_width, a),
            Side::Right => (a_width, width - a_width, b),
        };
        if estimate(joined, self.catalog).rows < estimate(side_plan, self.catalog).rows {
            return Ok(None);
        }
        let remap = |e: &Expr| {
            e.map_columns(&|c| {
                if c < width {
                    c - offset
                } else {
                    c - width + side_width
                }
            })
        };
        let pushed = |input: &LogicalPlan| LogicalPlan::Join {
            left: Box::new(input.clone()),
            right: sub.clone(),
            kind: *kind,
            on: on.iter().map(|(l, r)| (remap(l), r.clone())).collect(),
            filter: filter.as_ref().map(remap),
        };
        let (new_a, new_b) = match side {
            Side::Left => (pushed(a), b.as_ref().clone()),
            Side::Right => (a.as_ref().clone(), pushed(b)),
        };
        Ok(Some(LogicalPlan::Join {
            left: Box::new(new_a),
            right: Box::new(new_b),
            kind: JoinKind::Inner,
            on: inner_on.clone(),
            filter: inner_filter.clone(),
        }))
    }
}
