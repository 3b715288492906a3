//! The rule-based optimizer: rewrites a [`LogicalPlan`] into an equivalent one that is
//! cheaper to run.
//!
//! Each rule is a small type with one job (`Rule`, in `rule`); the driver applies a rule at every node
//! of the tree, top down, and repeats a list of rules until none changes anything (a fixed
//! point, bounded by [`MAX_PASSES`]). Rules run in four phases:
//! 1. subquery decorrelation (`decorrelate`): Applies become semi, anti and outer joins
//!    while the subqueries' correlated predicates still sit where the binder put them (any
//!    other correlated shape is unnested in general, `unnest`, and so are `LATERAL`
//!    subqueries, `lateral`); the EXISTS and IN left over, used as values, become counts
//!    (`mark`) and left joins;
//! 2. simplification and pushdown to a fixed point: constant folding (`simplify`),
//!    filter pushdown with join-key extraction and outer-to-inner conversion (`pushdown`),
//!    semi and anti joins below the inner joins they filter (`semi_join`), a semi join's
//!    filter copied into an aggregation its key reaches through a join (`semi_reduction`), limit
//!    pushdown (`limit`), and top-N per partition over `ROW_NUMBER` (`topn`);
//! 3. join order (`join_order`), once, from the cardinality estimates of `estimate`
//!    (the table row counts of the catalog), followed by the rules of phase 2 again to tidy
//!    up the rebuilt joins;
//! 4. column pruning (`prune`), once, so that every node reads only what is used above it.
//!
//! Build sides and broadcast joins are chosen from the same estimates during physical
//! planning.

pub(crate) mod decorrelate;
pub(crate) mod estimate;
pub(crate) mod join_order;
pub(crate) mod lateral;
pub(crate) mod limit;
pub(crate) mod mark;
pub(crate) mod prune;
pub(crate) mod pushdown;
mod rule;
pub(crate) mod semi_join;
pub(crate) mod semi_reduction;
pub(crate) mod simplify;
pub(crate) mod topn;
pub(crate) mod unnest;

pub use rule::MAX_PASSES;

use crate::catalog::Catalog;
use crate::error::PlanError;
use crate::logical::LogicalPlan;
use rule::{fixed_point, Rule};

/// The whole optimizer: the phases in order; `catalog`'s row counts feed the estimates.
pub fn optimize(plan: LogicalPlan, catalog: &Catalog) -> Result<LogicalPlan, PlanError> {
    let plan = fixed_point(
        &[
            &decorrelate::DecorrelateExistsIn,
            &decorrelate::FilterIntoSemiJoin,
            &decorrelate::DecorrelateScalar,
            &lateral::UnnestLateral,
        ],
        plan,
    )?;
    let plan = fixed_point(
        &[&mark::MarkAsCounts, &decorrelate::DecorrelateScalar],
        plan,
    )?;
    decorrelate::check_no_apply(&plan)?;
    let semi_joins = semi_join::PushSemiJoinDown { catalog };
    let reduce_aggregates = semi_reduction::ReduceAggregateBySemiJoin { catalog };
    let simplify_and_push: [&dyn Rule; 9] = [
        &simplify::FoldConstants,
        &simplify::MergeProjections,
        &pushdown::PushDownFilters,
        &pushdown::JoinConditions,
        &pushdown::OuterToInner,
        &semi_joins,
        &reduce_aggregates,
        &limit::PushDownLimit,
        &topn::TopNPerPartition,
    ];
    let plan = fixed_point(&simplify_and_push, plan)?;
    let plan = join_order::reorder(plan, catalog);
    let plan = fixed_point(&simplify_and_push, plan)?;
    prune::prune_columns(plan)
}
