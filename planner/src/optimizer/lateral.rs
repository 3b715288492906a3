//! `LATERAL` subqueries: a [`LogicalPlan::Apply`] of kind [`ApplyKind::Lateral`] (a dependent
//! join, which the binder makes of `FROM t, LATERAL (...)` and `[LEFT] JOIN LATERAL (...) ON
//! ...`) becomes joins through the general unnesting of `super::unnest`: the subquery is
//! evaluated once per distinct value of the columns it reads and joined back to the input on
//! them.

use super::rule::Rule;
use super::unnest;
use crate::error::PlanError;
use crate::logical::{ApplyKind, LogicalPlan};

/// `Apply LATERAL` → an inner or left join with the subquery evaluated per domain value.
pub(crate) struct UnnestLateral;

impl Rule for UnnestLateral {
    fn rewrite(&self, plan: &LogicalPlan) -> Result<Option<LogicalPlan>, PlanError> {
        let LogicalPlan::Apply {
            input,
            subquery,
            kind: ApplyKind::Lateral { left, on },
            position,
            ..
        } = plan
        else {
            return Ok(None);
        };
        unnest::lateral((**input).clone(), (**subquery).clone(), *left, on.clone())
            .map(Some)
            .map_err(|e| e.or_at(position))
    }
}
