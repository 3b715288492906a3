//! NOT NULL columns and CHECK constraints: the rows a write stores have a value in each NOT
//! NULL column, and make no CHECK condition false.

use crate::error::{Error, Result};
use weir_operators::eval::evaluate;
use weir_operators::Batch;
use weir_planner::{PlanError, TableDef};

/// Fails naming the first NOT NULL column of `def` that `batch` (full rows) has a NULL in, or
/// the first CHECK constraint of `def` a row of it makes false.
pub(super) fn check_not_null(def: &TableDef, batch: &Batch) -> Result<()> {
    null_in_not_null(def, batch)?;
    checks_hold(def, batch)
}

/// Fails naming the first CHECK constraint of `def` a row of `batch` makes false (true and
/// NULL pass).
fn checks_hold(def: &TableDef, batch: &Batch) -> Result<()> {
    if def.checks.is_empty() || batch.num_rows() == 0 {
        return Ok(());
    }
    // A condition reads the row's own columns only: no catalog is needed to bind it.
    let conditions = weir_planner::check_conditions(def, &weir_planner::Catalog::new())?;
    for (constraint, condition) in conditions {
        let held = evaluate(&condition, batch, &[]).map_err(|e| Error::Invalid(e.to_string()))?;
        let values = held.as_bool().ok_or_else(|| {
            Error::Invalid(format!("CHECK constraint \"{constraint}\" is not BOOLEAN"))
        })?;
        if (0..values.len()).any(|i| !values[i] && held.is_valid(i)) {
            return Err(Error::CheckViolation {
                table: def.name.clone(),
                constraint,
            });
        }
    }
    Ok(())
}

/// Fails naming the first NOT NULL column of `def` that `batch` (full rows) has a NULL in.
fn null_in_not_null(def: &TableDef, batch: &Batch) -> Result<()> {
    match def
        .not_null
        .iter()
        .find(|&&c| batch.column(c).null_count() > 0)
    {
        Some(&c) => Err(Error::Plan(PlanError::NullValue {
            table: def.name.clone(),
            column: def.schema.fields[c].name.clone(),
        })),
        None => Ok(()),
    }
}
