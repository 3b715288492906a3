//! Planning a query: a bound query is optimized ([`crate::optimizer`]) and cut into
//! distributed fragments ([`crate::physical`]). The statement entry point
//! ([`crate::entry`]) runs it for `SELECT` and `EXPLAIN`; DDL and DML run it for the queries
//! inside their statements (`INSERT ... SELECT`, `CREATE VIEW`, `UPDATE`, `DELETE`).

use crate::bind::{Binder, BoundQuery};
use crate::catalog::Catalog;
use crate::error::PlanError;
use crate::statement::QueryPlan;
use crate::{logical, optimizer, physical};
use sqlparser::ast as sql;
use weir_operators::Value;

/// Optimizes and fragments a bound query whose parameters are bound into it as constants
/// (for statements that run a query once, as INSERT ... SELECT).
pub(crate) fn plan_with_constants(
    bound: BoundQuery,
    catalog: &Catalog,
    binder: &mut Binder<'_>,
) -> Result<QueryPlan, PlanError> {
    binder.params.check_types()?;
    let values: Vec<Value> = (0..binder.params.types.len())
        .map(|i| binder.params.value(i).cloned().unwrap_or(Value::Null))
        .collect();
    let plan = logical::bind_parameters(bound.plan, &values);
    let optimized = optimizer::optimize(plan, catalog)?;
    physical::plan_query(optimized, bound.fields, catalog, Vec::new())
}

/// Binds, optimizes and fragments a query.
pub(crate) fn plan_query(
    q: &sql::Query,
    catalog: &Catalog,
    binder: &mut Binder<'_>,
) -> Result<QueryPlan, PlanError> {
    plan_query_explained(q, catalog, binder, false)
}

/// Binds, optimizes and fragments a query; `verbose` keeps the logical plans' text (for
/// `EXPLAIN VERBOSE`).
pub(crate) fn plan_query_explained(
    q: &sql::Query,
    catalog: &Catalog,
    binder: &mut Binder<'_>,
    verbose: bool,
) -> Result<QueryPlan, PlanError> {
    let bound = binder.query(q)?;
    binder.params.check_types()?;
    let logical = verbose.then(|| bound.plan.display_indent());
    let optimized = optimizer::optimize(bound.plan, catalog)?;
    let text = logical.map(|l| {
        format!(
            "Logical plan:\n{l}Optimized logical plan:\n{}Physical plan:\n",
            optimized.display_indent()
        )
    });
    let mut plan = physical::plan_query(
        optimized,
        bound.fields,
        catalog,
        binder.params.types.clone(),
    )?;
    plan.verbose = text;
    plan.single_use = binder.clock.is_some() || binder.calls_volatile;
    Ok(plan)
}
