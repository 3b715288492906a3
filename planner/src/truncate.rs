//! `TRUNCATE [TABLE] [ONLY] t [, ...] [RESTART IDENTITY | CONTINUE IDENTITY] [CASCADE |
//! RESTRICT]`: every row of the tables goes, in one write. As in PostgreSQL, a table that
//! references one of them through a foreign key must go with them: listed too, or added by
//! `CASCADE` (and so on, through what references it); otherwise the statement is refused,
//! whatever rows there are. `RESTART IDENTITY` starts the tables' `SERIAL` and identity
//! columns at 1 again.

use crate::bind::unsupported;
use crate::catalog::Catalog;
use crate::ddl::object_name;
use crate::error::PlanError;
use crate::statement::Statement;
use sqlparser::ast::{self as sql, Spanned};

/// Plans a `TRUNCATE` against `catalog`.
pub(crate) fn truncate(t: &sql::Truncate, catalog: &Catalog) -> Result<Statement, PlanError> {
    if let Some(p) = t.partitions.as_ref().and_then(|p| p.first()) {
        return Err(unsupported("TRUNCATE ... PARTITION", p.span()));
    }
    if let Some(cluster) = &t.on_cluster {
        return Err(unsupported("TRUNCATE ... ON CLUSTER", cluster.span));
    }
    let mut tables: Vec<String> = Vec::new();
    for target in &t.table_names {
        let name = object_name(&target.name)?;
        let Some(def) = catalog.table(&name) else {
            if t.if_exists {
                continue;
            }
            return Err(match catalog.view(&name) {
                Some(_) => {
                    PlanError::Invalid(format!("'{name}' is a view: TRUNCATE empties tables"))
                }
                None => PlanError::UnknownTable(name),
            });
        };
        def.refuse_external("TRUNCATE")?;
        if !tables.iter().any(|n| n.eq_ignore_ascii_case(&def.name)) {
            tables.push(def.name.clone());
        }
    }
    let cascade = matches!(t.cascade, Some(sql::CascadeOption::Cascade));
    // The tables referencing those truncated go too, or the statement is refused.
    let mut i = 0;
    while i < tables.len() {
        let def = catalog.table(&tables[i]).expect("a listed table");
        for (child, fk) in def.referenced_by(catalog) {
            if tables.iter().any(|n| n.eq_ignore_ascii_case(&child.name)) {
                continue;
            }
            if !cascade {
                return Err(PlanError::Depended(format!(
                    "cannot truncate table '{}': foreign key '{}' of table '{}' references it \
                     (truncate '{}' at the same time, or use TRUNCATE ... CASCADE)",
                    def.name, fk.name, child.name, child.name
                )));
            }
            child.refuse_external("TRUNCATE")?;
            tables.push(child.name.clone());
        }
        i += 1;
    }
    Ok(Statement::Truncate {
        tables,
        restart_identity: matches!(t.identity, Some(sql::TruncateIdentityOption::Restart)),
    })
}
