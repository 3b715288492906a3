//! `LATERAL` subqueries: a [`LogicalPlan::Apply`] of kind [`ApplyKind::Lateral`] (a dependent
//! join, which the binder makes of `FROM t, LATERAL (...)` and `[LEFT] JOIN LATERAL (...) ON
//! ...`) becomes joins through the general unnesting of `super::unnest`: the subquery is
//! evaluated once per distinct value of the columns it reads and joined back to the input on
//! them. An inner join with a table function that reads the input's columns (`FROM t,
//! generate_series(1, t.n)`) needs no join: the input's rows are expanded in place
//! ([`LogicalPlan::Expand`]).

use super::rule::Rule;
use super::unnest;
use crate::error::PlanError;
use crate::logical::{ApplyKind, LogicalPlan};
use weir_operators::Expr;

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
        if !*left {
            if let Some(expanded) = expand_in_place(input, subquery, on) {
                return Ok(Some(expanded));
            }
        }
        unnest::lateral((**input).clone(), (**subquery).clone(), *left, on.clone())
            .map(Some)
            .map_err(|e| e.or_at(position))
    }
}

/// `input` inner-joined with `subquery` on `on` when the subquery is a table function reading
/// `input`'s columns: `input`'s rows expanded by it (the same columns: the input's, then the
/// function's), filtered by `on`. `None` for any other subquery.
fn expand_in_place(
    input: &LogicalPlan,
    subquery: &LogicalPlan,
    on: &Option<Expr>,
) -> Option<LogicalPlan> {
    let mut body = subquery;
    while let LogicalPlan::SubqueryAlias { input, .. } = body {
        body = input;
    }
    let LogicalPlan::TableFunction {
        schema,
        function,
        ordinality,
    } = body
    else {
        return None;
    };
    // The function's outer references are the input's columns.
    let mut local = |e: &Expr| {
        e.transform(&mut |x| match x {
            Expr::OuterColumn(c) => Some(Expr::Column(*c)),
            _ => None,
        })
    };
    let expand = LogicalPlan::Expand {
        input: Box::new(input.clone()),
        function: function.map_args(&mut local),
        ordinality: *ordinality,
        fields: schema.fields.clone(),
    };
    Some(expand.filter_all(on.iter().cloned().collect()))
}
