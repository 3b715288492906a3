//! `CREATE EXTERNAL TABLE`: the location resolved to an absolute path (inside the directories
//! COPY may use, when the cluster limits them), the files read for their columns (or checked
//! against the declared ones) and their rows, then the table added to the catalog like any
//! other. A declared primary key is not checked (that would read every file): the planner
//! trusts it for its estimates only. The nodes read the files in place when a query scans the table (see
//! `weir_io::external`); nothing is loaded, and `DROP TABLE` leaves the files alone.

use super::copy::confine;
use super::Cluster;
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};
use weir_io::external::{describe_files, is_pattern};
use weir_operators::external::ExternalSource;
use weir_operators::Schema;
use weir_planner::{PlanError, TableDef};

impl Cluster {
    /// Adds the external table `name` reading `source`'s files: see the module's comment.
    pub(super) fn create_external_table(
        &self,
        name: String,
        columns: Option<Schema>,
        mut source: ExternalSource,
        key: Vec<String>,
        if_not_exists: bool,
        replace: bool,
    ) -> Result<u64> {
        {
            let catalog = self.inner.catalog.read().unwrap_or_else(|e| e.into_inner());
            if let Some(existing) = catalog.table(&name) {
                if if_not_exists {
                    return Ok(0);
                }
                if !replace {
                    return Err(PlanError::TableExists(existing.name.clone()).into());
                }
                if existing.external.is_none() {
                    return Err(Error::Invalid(format!(
                        "table '{}' holds rows: OR REPLACE replaces only an external table (DROP TABLE it first)",
                        existing.name
                    )));
                }
            }
            if catalog.view(&name).is_some() {
                return Err(Error::Invalid(format!("'{name}' is a view")));
            }
        }
        source.location = self.resolve_location(&source.location)?;
        let files = describe_files(&source, columns.as_ref())
            .map_err(|e| Error::Invalid(format!("CREATE EXTERNAL TABLE {name}: {e}")))?;
        let mut primary_key = Vec::with_capacity(key.len());
        for k in &key {
            let c = files.schema.index_of(k).ok_or_else(|| {
                Error::Plan(PlanError::UnknownColumn {
                    name: k.clone(),
                    position: String::new(),
                })
            })?;
            if primary_key.contains(&c) {
                return Err(Error::Invalid(format!(
                    "column '{k}' appears twice in the primary key of table '{name}'"
                )));
            }
            primary_key.push(c);
        }
        let def = TableDef {
            name: name.clone(),
            schema: files.schema,
            primary_key,
            indexes: Vec::new(),
            not_null: Vec::new(),
            partitions: self.inner.config.partitions.max(1),
            external: Some(source),
            defaults: Vec::new(),
            foreign_keys: Vec::new(),
            checks: Vec::new(),
            comments: Default::default(),
        };
        self.change_schema(
            |catalog| {
                if replace && catalog.table(&name).is_some() {
                    catalog.drop_table(&name)?;
                }
                catalog.add_table(def.clone())?;
                if let Some(rows) = files.rows {
                    catalog.set_row_count(&name, rows);
                }
                Ok(Some(()))
            },
            |_| Ok(()),
        )?;
        Ok(0)
    }

    /// `location` as an absolute path (a pattern's directory part resolved), inside the
    /// directories COPY may use when the cluster limits them.
    fn resolve_location(&self, location: &str) -> Result<String> {
        let dirs = self.inner.config.copy_dirs.as_deref();
        if !is_pattern(location) {
            let path = confine(Path::new(location), dirs)?;
            let absolute = std::env::current_dir()
                .map(|d| d.join(&path))
                .unwrap_or(path);
            return Ok(absolute.to_string_lossy().into_owned());
        }
        // The directories before the first component with a wildcard are resolved; the
        // rest of the pattern is kept as written.
        let (mut fixed, mut rest) = (PathBuf::new(), PathBuf::new());
        for part in Path::new(location).components() {
            let text = part.as_os_str().to_string_lossy();
            if rest.as_os_str().is_empty() && !is_pattern(&text) {
                fixed.push(part);
            } else {
                rest.push(part);
            }
        }
        if fixed.as_os_str().is_empty() {
            fixed.push(".");
        }
        let fixed = confine(&fixed, dirs)?;
        let absolute = std::env::current_dir()
            .map(|d| d.join(&fixed))
            .unwrap_or(fixed);
        Ok(absolute.join(rest).to_string_lossy().into_owned())
    }
}
