//! A change to a table made to a catalog with the views checked against it: a view is
//! planned again on the changed catalog, so no `ALTER TABLE` leaves a view that no longer
//! plans.

use crate::catalog::alter::TableChange;
use crate::catalog::Catalog;
use crate::entry::plan_statement;
use crate::error::PlanError;

/// Makes `change` to table `table` of `catalog`, all or nothing: the change is made on a copy
/// first, and every view is planned again on the copy, so a change that would break a view
/// (a column it reads dropped or renamed, its table renamed) is refused naming the view.
pub fn alter_catalog(
    catalog: &mut Catalog,
    table: &str,
    change: &TableChange,
) -> Result<(), PlanError> {
    let mut draft = catalog.clone();
    draft.alter_table(table, change)?;
    for view in draft.views() {
        let sql = format!("SELECT * FROM \"{}\"", view.name.replace('"', "\"\""));
        if let Err(e) = plan_statement(&sql, &draft, &[], 1) {
            return Err(PlanError::Depended(format!(
                "cannot alter table '{table}': view '{}' reads it ({e}); drop or replace the view first",
                view.name
            )));
        }
    }
    *catalog = draft;
    Ok(())
}
