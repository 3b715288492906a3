//! Lowering ORDER BY and LIMIT: where the rows are sorted or cut, and where they are merged.

use super::fragments::{Frags, Input};
use weir_operators::plan::SortKey;
use weir_operators::PhysicalPlan;

/// A full sort of an input estimated smaller than the sort kernel's merge threshold
/// ([`MERGE_MIN_BYTES`](weir_operators::kernels::sort::MERGE_MIN_BYTES)): the rows are gathered
/// as they are and sorted once. Sorting on each node first pays off only when the gathered
/// sorted streams are then merged; below that size the gathered rows are sorted again whatever
/// order they came in, so the nodes' sorts (and their copies of every row) would be work done
/// twice.
pub(super) fn sort_once(input: Input, keys: Vec<SortKey>, fr: &mut Frags) -> Input {
    let schema = input.schema.clone();
    let gathered = if input.is_single() {
        input
    } else {
        fr.gather(input)
    };
    let plan = PhysicalPlan::Sort {
        input: Box::new(gathered.plan.clone()),
        keys,
        limit: None,
    };
    gathered.wrap(plan, schema)
}

/// A sort (keeping the first `keep` rows): per node then merged, or once on a single instance.
pub(super) fn sort(input: Input, keys: Vec<SortKey>, keep: Option<usize>, fr: &mut Frags) -> Input {
    let schema = input.schema.clone();
    let local = PhysicalPlan::Sort {
        input: Box::new(input.plan.clone()),
        keys: keys.clone(),
        limit: keep,
    };
    let local = input.wrap(local, schema.clone());
    if local.is_single() {
        return local;
    }
    let gathered = fr.gather(local);
    let plan = PhysicalPlan::Sort {
        input: Box::new(gathered.plan.clone()),
        keys,
        limit: keep,
    };
    gathered.wrap(plan, schema)
}

/// OFFSET/LIMIT: each node passes at most `offset + limit` rows, then once more on the
/// gathered rows.
pub(super) fn limit_rows(
    input: Input,
    offset: usize,
    limit: Option<usize>,
    fr: &mut Frags,
) -> Input {
    let schema = input.schema.clone();
    let input = if input.is_single() {
        input
    } else {
        let local = match limit {
            Some(l) => {
                let plan = PhysicalPlan::Limit {
                    input: Box::new(input.plan.clone()),
                    offset: 0,
                    limit: Some(l.saturating_add(offset)),
                };
                input.wrap(plan, schema.clone())
            }
            None => input,
        };
        fr.gather(local)
    };
    let plan = PhysicalPlan::Limit {
        input: Box::new(input.plan.clone()),
        offset,
        limit,
    };
    input.wrap(plan, schema)
}
