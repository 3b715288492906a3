//! Limit pushdown: a LIMIT moves below the projection under it, so that it sits right above
//! the sort or scan it limits (physical planning then keeps only the top rows of a sort, per
//! node, and stops scans early).

use super::rule::Rule;
use crate::error::PlanError;
use crate::logical::LogicalPlan;

/// `Limit(Project(x))` → `Project(Limit(x))`.
pub(crate) struct PushDownLimit;

impl Rule for PushDownLimit {
    fn rewrite(&self, plan: &LogicalPlan) -> Result<Option<LogicalPlan>, PlanError> {
        let LogicalPlan::Limit {
            input,
            offset,
            limit,
        } = plan
        else {
            return Ok(None);
        };
        let LogicalPlan::Project {
            input: inner,
            exprs,
            fields,
        } = input.as_ref()
        else {
            return Ok(None);
        };
        Ok(Some(LogicalPlan::Project {
            input: Box::new(LogicalPlan::Limit {
                input: inner.clone(),
                offset: *offset,
                limit: *limit,
            }),
            exprs: exprs.clone(),
            fields: fields.clone(),
        }))
    }
}
