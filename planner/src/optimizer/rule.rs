//! The optimizer's rules and their driver: a [`Rule`] rewrites one node, the driver applies
//! rules at every node and repeats them to a fixed point. The rules (`decorrelate`,
//! `pushdown`, ...) implement [`Rule`] and the optimizer ([`super::optimize`]) runs them
//! through [`fixed_point`]; this module knows neither.

use crate::error::PlanError;
use crate::logical::LogicalPlan;

/// Passes over the rule list before the driver gives up on reaching a fixed point (each
/// pass is cheap; real plans settle in a handful).
pub const MAX_PASSES: usize = 64;

/// A rewrite at one node of a plan.
pub(crate) trait Rule {
    /// The rewritten node, or `None` when the rule does not apply at `plan`'s root.
    fn rewrite(&self, plan: &LogicalPlan) -> Result<Option<LogicalPlan>, PlanError>;
}

/// Applies `rule` at every node of `plan`, top down; sets `changed` when it rewrote one.
fn apply_everywhere(
    rule: &dyn Rule,
    plan: LogicalPlan,
    changed: &mut bool,
) -> Result<LogicalPlan, PlanError> {
    let plan = match rule.rewrite(&plan)? {
        Some(p) => {
            *changed = true;
            p
        }
        None => plan,
    };
    plan.map_inputs(&mut |i| apply_everywhere(rule, i, changed))
}

/// Runs `rules` over `plan` until none of them changes anything.
pub(crate) fn fixed_point(
    rules: &[&dyn Rule],
    mut plan: LogicalPlan,
) -> Result<LogicalPlan, PlanError> {
    for _ in 0..MAX_PASSES {
        let mut changed = false;
        for rule in rules {
            plan = apply_everywhere(*rule, plan, &mut changed)?;
        }
        if !changed {
            break;
        }
    }
    Ok(plan)
}
