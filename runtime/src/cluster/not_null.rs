//! NOT NULL columns: the rows a write stores have a value in each.

use crate::error::{Error, Result};
use weir_operators::Batch;
use weir_planner::{PlanError, TableDef};

/// Fails naming the first NOT NULL column of `def` that `batch` (full rows) has a NULL in.
pub(super) fn check_not_null(def: &TableDef, batch: &Batch) -> Result<()> {
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
