//! Small builders of relations the query binders share: a UNION ALL that flattens, and the
//! renaming of a relation's columns by an alias's column list (`AS t(a, b)`).

use super::*;

/// `l UNION ALL r`, flattening nested unions.
pub(super) fn union_all(l: LogicalPlan, r: LogicalPlan) -> LogicalPlan {
    let mut inputs = match l {
        LogicalPlan::Union { inputs } => inputs,
        other => vec![other],
    };
    inputs.push(r);
    LogicalPlan::Union { inputs }
}

/// Renames `fields` by the column list of `alias` (`AS t(a, b)`), if it has one.
pub(super) fn rename_columns(
    fields: &mut [Field],
    alias: &sql::TableAlias,
    span: Span,
) -> Result<(), PlanError> {
    if alias.columns.is_empty() {
        return Ok(());
    }
    // The rows of a row IN's subquery are as wide as the row (PostgreSQL's words).
    if alias.name.value == super::row_values::ROW_IN && alias.columns.len() != fields.len() {
        let what = if fields.len() > alias.columns.len() {
            "many"
        } else {
            "few"
        };
        return Err(PlanError::Invalid(format!(
            "subquery has too {what} columns for a row of {}{}",
            alias.columns.len(),
            at(span)
        )));
    }
    if alias.columns.len() > fields.len() {
        return Err(PlanError::Invalid(format!(
            "'{}' has {} columns but {} column names were given{}",
            alias.name.value,
            fields.len(),
            alias.columns.len(),
            at(span)
        )));
    }
    for (f, c) in fields.iter_mut().zip(&alias.columns) {
        if c.data_type.is_some() {
            return Err(unsupported("typed column aliases", span));
        }
        f.name = c.name.value.clone();
    }
    Ok(())
}
