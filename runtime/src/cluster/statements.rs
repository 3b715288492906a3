//! Running statements: SQL text to a cached plan, then DDL applied to the catalog and the
//! nodes' storage, INSERT handed to the write path, queries to the query path; EXPLAIN.

use super::Cluster;
use crate::error::{Error, Result};
use crate::node::storage::Change;
use std::sync::atomic::Ordering;
use weir_operators::Value;
use weir_operators::{Batch, Schema};
use weir_planner::statement::ConflictUpdate;
use weir_planner::{CachedStatement, PlanError, QueryPlan, Returning, SequenceFill, Statement};

/// What applying a statement did: the rows it inserted, updated or deleted, and what its
/// `RETURNING` answers.
pub(super) struct Applied {
    /// Rows inserted, updated or deleted (0 for DDL).
    pub rows: u64,
    /// The rows of a `RETURNING`, with their columns.
    pub returned: Option<(Schema, Batch)>,
}

/// What a write of `rows` rows answers: with `returning`, its rows for the rows written
/// (`written`, in the table's column order; none when nothing was written).
fn applied(rows: u64, returning: Option<&Returning>, written: Option<Batch>) -> Result<Applied> {
    let returned = match returning {
        None => None,
        Some(r) => Some(match written {
            Some(batch) => returned_rows(r, &batch)?,
            None => (r.schema.clone(), Batch::empty(&r.schema.types())),
        }),
    };
    Ok(Applied { rows, returned })
}

/// What an INSERT does with a proposed row that clashes with a stored one (or an earlier
/// one of the statement): fails (neither given), skips it (`ON CONFLICT ... DO NOTHING`),
/// or updates the stored row (`ON CONFLICT (target) DO UPDATE`).
#[derive(Clone, Copy)]
struct OnConflict<'s> {
    /// The column sets a clash on skips the row.
    skip: &'s [Vec<usize>],
    /// How a clash on the target updates the stored row.
    update: Option<&'s ConflictUpdate>,
}

/// The rows `returning` answers for written rows `batch`.
pub(super) fn returned_rows(returning: &Returning, batch: &Batch) -> Result<(Schema, Batch)> {
    let columns = returning
        .exprs
        .iter()
        .map(|e| weir_operators::eval::evaluate(e, batch, &[]))
        .collect::<weir_operators::Result<Vec<_>>>()
        .map_err(|e| Error::Invalid(e.to_string()))?;
    let rows = Batch::with_row_count(columns, batch.num_rows())
        .map_err(|e| Error::Invalid(e.to_string()))?;
    Ok((returning.schema.clone(), rows))
}

/// How many times a statement that met another client's (see [`Cluster::apply_planned`]) is
/// planned again and retried before the refusal reaches the caller.
pub const CONFLICT_RETRIES: u32 = 10;

impl Cluster {
    /// Runs a statement: DDL (`CREATE TABLE`, `CREATE EXTERNAL TABLE`, `CREATE INDEX`,
    /// `DROP TABLE`), `INSERT`,
    /// `UPDATE`, `DELETE`, `COPY` (see [`Cluster::execute_with_progress`]), or a query. Returns rows inserted, updated or deleted, or rows
    /// returned by a query; 0 for DDL.
    ///
    /// ```
    /// use weir_runtime::Cluster;
    /// let cluster = Cluster::builder().nodes(1).partitions(4).build().unwrap();
    /// assert_eq!(cluster.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, x BIGINT)").unwrap(), 0);
    /// assert_eq!(cluster.execute("INSERT INTO t VALUES (1, 10), (2, 20)").unwrap(), 2);
    /// assert_eq!(cluster.execute("UPDATE t SET x = x + 1 WHERE id = 2").unwrap(), 1);
    /// assert_eq!(cluster.execute("SELECT * FROM t").unwrap(), 2);
    /// ```
    pub fn execute(&self, sql: &str) -> Result<u64> {
        self.execute_with(sql, &[])
    }

    /// The statement of `sql`, from the plan cache or planned now.
    /// Connected to data nodes of other processes, a statement naming a table this client
    /// does not know, or making one it knows, fetches the catalog (another client may have
    /// made or dropped the table) and is planned again.
    pub(super) fn plan_statement(&self, sql: &str, params: &[Value]) -> Result<CachedStatement> {
        if let Some(remote) = &self.inner.remote {
            // A data node said the catalog changed: fetch it before planning.
            if self.inner.catalog_behind.load(Ordering::SeqCst)
                > remote.epoch.load(Ordering::SeqCst)
            {
                self.refresh_catalog()?;
            }
        }
        // The planner folds constants on this thread: under the cluster's value limit.
        let max = self.inner.config.max_value_bytes;
        let plan = || {
            let catalog = self.inner.catalog.read().unwrap_or_else(|e| e.into_inner());
            weir_operators::limits::with_max_value_bytes(max, || {
                self.inner
                    .plans
                    .get_or_plan(sql, &catalog, params, self.inner.config.partitions)
            })
        };
        match plan() {
            Err(
                PlanError::UnknownTable(_)
                | PlanError::UnknownSequence(_)
                | PlanError::TableExists(_)
                | PlanError::IndexExists(_)
                | PlanError::RelationExists(_),
            ) if self.refresh_catalog()? => Ok(plan()?),
            planned => Ok(planned?),
        }
    }

    /// [`Cluster::execute`] with parameters.
    pub fn execute_with(&self, sql: &str, params: &[Value]) -> Result<u64> {
        self.check_up()?;
        if let Some(copied) = self.copy(sql, &mut |_| {}) {
            super::lost::hold_acknowledgement();
            return copied;
        }
        let stmt = self.plan_statement(sql, params)?;
        let done = match stmt {
            CachedStatement::Query(plan) => self.retrying_refused_reads(|| {
                let r = self.run(plan.clone(), params)?.collect_all()?;
                Ok(r.num_rows() as u64)
            }),
            CachedStatement::Explain(_) => Ok(0),
            // EXPLAIN ANALYZE runs its query, as PostgreSQL's does.
            CachedStatement::ExplainAnalyze(plan) => {
                self.explain_analyzed(&plan, params).map(|_| 0)
            }
            CachedStatement::Other(s) => self.apply_planned(sql, params, *s).map(|o| o.rows),
        };
        super::lost::hold_acknowledgement();
        done
    }

    /// Applies `stmt`, planned from `sql`. On data nodes of other processes, a statement that
    /// met another client's (a schema change refused by the catalog log because another
    /// client changed the catalog first, a write whose table changed or that met another
    /// client's write: nothing of it was applied) is planned again on the catalog and the
    /// copies' versions fetched again, and retried, up to [`CONFLICT_RETRIES`] times, after a
    /// pause that grows with each try and differs between clients (so that clients that keep
    /// meeting stop meeting).
    pub(super) fn apply_planned(
        &self,
        sql: &str,
        params: &[Value],
        stmt: Statement,
    ) -> Result<Applied> {
        let mut stmt = stmt;
        let mut retries = 0;
        let read_deadline = std::time::Instant::now() + super::queries::READ_RETRY_LIMIT;
        loop {
            let pause_ms = match self.apply_returning(stmt) {
                // An UPDATE's or DELETE's read of the rows refused: nothing was written.
                Err(Error::ReadRefused { node, message })
                    if std::time::Instant::now() < read_deadline =>
                {
                    tracing::debug!("{node} refused the read of a statement ({message})");
                    100
                }
                Err(Error::CatalogChanged { .. } | Error::WriteConflict { .. })
                    if retries < CONFLICT_RETRIES =>
                {
                    retries += 1;
                    let spread = u64::from(self.client() % 8) + 1;
                    (1u64 << retries.min(6)) * spread
                }
                // A key found taken by a read, before anything was written, on a copy that
                // may not have applied another client's schema change yet (the table was
                // dropped, or made again): when the newest catalog differs from the one the
                // statement was planned on, it is planned again on that one.
                Err(e @ (Error::DuplicateKey { .. } | Error::DuplicateUnique { .. }))
                    if retries < CONFLICT_RETRIES =>
                {
                    if !self.refresh_catalog()? {
                        return Err(e);
                    }
                    retries += 1;
                    0
                }
                applied => return applied,
            };
            std::thread::sleep(std::time::Duration::from_millis(pause_ms));
            self.refresh_catalog()?;
            match self.plan_statement(sql, params)? {
                CachedStatement::Other(s) => stmt = *s,
                _ => return Err(Error::Invalid(format!("{sql:?} is no longer a statement"))),
            }
        }
    }

    /// Applies `stmt`, answering the rows its `RETURNING` asks for.
    pub(super) fn apply_returning(&self, stmt: Statement) -> Result<Applied> {
        match stmt {
            Statement::Insert {
                table,
                batch,
                fills,
                returning,
                skip_conflicts,
                update_conflicts,
            } => {
                let _writing = self.writing();
                let batch = self.fill_sequences(&table, batch, &fills)?;
                let on_conflict = OnConflict {
                    skip: &skip_conflicts,
                    update: update_conflicts.as_deref(),
                };
                self.insert_skipping(&table, batch, on_conflict, returning)
            }
            Statement::InsertSelect {
                table,
                query,
                fills,
                returning,
                skip_conflicts,
                update_conflicts,
            } => {
                let on_conflict = OnConflict {
                    skip: &skip_conflicts,
                    update: update_conflicts.as_deref(),
                };
                self.insert_query(&table, *query, &fills, returning, on_conflict)
            }
            Statement::Delete {
                table,
                query,
                returning,
            } => {
                let (rows, deleted) = self.delete_rows(&table, *query, returning.is_some())?;
                applied(rows, returning.as_deref(), deleted)
            }
            Statement::Update {
                table,
                query,
                returning,
                assigned,
            } => {
                let (rows, updated) =
                    self.update_rows(&table, *query, returning.is_some(), &assigned)?;
                applied(rows, returning.as_deref(), updated)
            }
            Statement::SequenceCalls { schema, calls } => Ok(Applied {
                rows: 1,
                returned: Some((schema, self.sequence_calls(&calls)?)),
            }),
            other => self.apply(other).map(|rows| Applied {
                rows,
                returned: None,
            }),
        }
    }

    /// Inserts the rows of `batch` that do not clash on `on_conflict.skip` (an `ON CONFLICT
    /// DO NOTHING`; see [`Cluster::skip_conflicting`]) into `table`, or with
    /// `on_conflict.update` updates the stored rows the others clash with
    /// ([`Cluster::insert_updating`]), the write lock held, and answers their `RETURNING`.
    /// Connected to node processes, another client may store a clashing row between the
    /// check and the write: the write then fails on the key, and the rows are checked again
    /// and written, up to [`CONFLICT_RETRIES`] times.
    fn insert_skipping(
        &self,
        table: &str,
        batch: Batch,
        on_conflict: OnConflict<'_>,
        returning: Option<Box<Returning>>,
    ) -> Result<Applied> {
        let mut tries = 0;
        loop {
            let done = match on_conflict.update {
                Some(update) => {
                    self.insert_updating(table, batch.clone(), update, returning.clone())
                }
                None => {
                    let kept = self.skip_conflicting(table, batch.clone(), on_conflict.skip)?;
                    self.insert_returning(table, kept, returning.clone())
                }
            };
            match done {
                Err(Error::DuplicateKey { .. } | Error::DuplicateUnique { .. })
                    if (!on_conflict.skip.is_empty() || on_conflict.update.is_some())
                        && self.inner.remote.is_some()
                        && tries < CONFLICT_RETRIES =>
                {
                    tries += 1;
                }
                done => return done,
            }
        }
    }

    /// Inserts `batch` into `table` (the write lock held) and answers its `RETURNING`.
    fn insert_returning(
        &self,
        table: &str,
        batch: weir_operators::Batch,
        returning: Option<Box<Returning>>,
    ) -> Result<Applied> {
        let returned = match &returning {
            Some(r) => Some(returned_rows(r, &batch)?),
            None => None,
        };
        if batch.num_rows() == 0 {
            // Nothing to write (every row skipped as a conflict, or none given).
            return Ok(Applied { rows: 0, returned });
        }
        let rows = self.load_locked(table, batch)? as u64;
        super::lost::hold_acknowledgement();
        Ok(Applied { rows, returned })
    }

    /// Applies `stmt`; returns the rows it inserted, updated or deleted (0 for DDL).
    pub(super) fn apply(&self, stmt: Statement) -> Result<u64> {
        match stmt {
            Statement::CreateTable(def) => {
                self.change_schema(
                    |catalog| Ok(Some(catalog.add_table(def.clone())?)),
                    |_| Ok(()),
                )?;
                Ok(0)
            }
            Statement::CreateExternalTable {
                name,
                columns,
                source,
                key,
                if_not_exists,
                replace,
            } => self.create_external_table(name, columns, source, key, if_not_exists, replace),
            Statement::CreateIndex { table, index } => {
                // No write comes between the check of the stored rows and the index.
                let _writing = self.writing();
                if index.unique {
                    let def = self
                        .inner
                        .catalog
                        .read()
                        .unwrap_or_else(|e| e.into_inner())
                        .table(&table)
                        .cloned()
                        .ok_or_else(|| Error::Plan(PlanError::UnknownTable(table.clone())))?;
                    self.check_stored_unique(&def, &index)?;
                }
                let column = index.column;
                let data_type = self.change_schema(
                    |catalog| {
                        catalog.add_index(&table, index.clone())?;
                        catalog
                            .table(&table)
                            .and_then(|d| d.schema.fields.get(column))
                            .map(|f| Some(f.data_type))
                            .ok_or_else(|| {
                                Error::Invalid(format!("no column #{column} in {table}"))
                            })
                    },
                    |_| Ok(()),
                )?;
                if let Some(data_type) = data_type {
                    self.change_every_node(Change::AddIndex {
                        table: table.to_lowercase(),
                        column,
                        data_type,
                    })?;
                }
                Ok(0)
            }
            Statement::AlterTable { table, change } => {
                self.alter_table(&table, change)?;
                Ok(0)
            }
            Statement::DropTable { name, if_exists } => {
                self.change_schema(
                    |catalog| match catalog.drop_table(&name) {
                        Ok(def) => Ok(Some(def.name.to_lowercase())),
                        Err(_) if if_exists => Ok(None),
                        Err(e) => Err(e.into()),
                    },
                    |key| {
                        self.change_every_node(Change::DropTable { table: key.clone() })?;
                        self.inner
                            .replicas
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .drop_table(key);
                        Ok(())
                    },
                )?;
                Ok(0)
            }
            Statement::Insert { .. } | Statement::InsertSelect { .. } => {
                self.apply_returning(stmt).map(|a| a.rows)
            }
            Statement::CreateView { def, replace } => {
                self.change_schema(
                    |catalog| Ok(Some(catalog.add_view(def.clone(), replace)?)),
                    |_| Ok(()),
                )?;
                Ok(0)
            }
            Statement::CreateSequence {
                sequence,
                if_not_exists,
            } => {
                self.change_schema(
                    |catalog| {
                        Ok(catalog
                            .add_sequence(sequence.clone(), if_not_exists)?
                            .then_some(()))
                    },
                    |_| Ok(()),
                )?;
                Ok(0)
            }
            Statement::DropSequence { names, if_exists } => {
                self.change_schema(
                    |catalog| {
                        let mut dropped = None;
                        for name in &names {
                            match catalog.drop_sequence(name) {
                                Ok(()) => dropped = Some(()),
                                Err(PlanError::UnknownSequence(_)) if if_exists => {}
                                Err(e) => return Err(e.into()),
                            }
                        }
                        Ok(dropped)
                    },
                    |_| Ok(()),
                )?;
                Ok(0)
            }
            Statement::Truncate {
                tables,
                restart_identity,
            } => self.truncate_tables(&tables, restart_identity),
            Statement::AlterSequence { sequence, changes } => {
                if let Some(sequence) = sequence {
                    self.alter_sequence(&sequence, &changes)?;
                }
                Ok(0)
            }
            Statement::SequenceCalls { .. } => self.apply_returning(stmt).map(|a| a.rows),
            Statement::DropView { name, if_exists } => {
                self.change_schema(
                    |catalog| match catalog.drop_view(&name) {
                        Ok(_) => Ok(Some(())),
                        Err(_) if if_exists => Ok(None),
                        Err(e) => Err(e.into()),
                    },
                    |_| Ok(()),
                )?;
                Ok(0)
            }
            Statement::Delete { .. } | Statement::Update { .. } => {
                self.apply_returning(stmt).map(|a| a.rows)
            }
            Statement::CreateTableAs { def, query } => {
                let name = def.name.clone();
                self.apply(Statement::CreateTable(def))?;
                let fail = OnConflict {
                    skip: &[],
                    update: None,
                };
                let inserted = self.insert_query(&name, *query, &[], None, fail);
                inserted.map(|a| a.rows).inspect_err(|_| {
                    // Nothing of a failed CREATE TABLE ... AS stays.
                    let _ = self.apply(Statement::DropTable {
                        name: name.clone(),
                        if_exists: true,
                    });
                })
            }
            Statement::Query(_) | Statement::Explain(_) | Statement::ExplainAnalyze(_) => {
                Err(Error::Invalid("queries are run with query()".into()))
            }
        }
    }

    /// Runs `query` (whose columns are `table`'s) and inserts all of its rows, all or
    /// nothing, with the values `fills` says to take from sequences filled in; answers the
    /// `RETURNING` of the rows.
    fn insert_query(
        &self,
        table: &str,
        query: QueryPlan,
        fills: &[SequenceFill],
        returning: Option<Box<Returning>>,
        on_conflict: OnConflict<'_>,
    ) -> Result<Applied> {
        let _writing = self.writing();
        let result = self.run(std::sync::Arc::new(query), &[])?.collect_all()?;
        let batch = if result.batches.is_empty() {
            weir_operators::Batch::empty(&result.schema.types())
        } else {
            weir_operators::Batch::concat(&result.batches)
                .map_err(|e| Error::Invalid(e.to_string()))?
        };
        if batch.num_rows() == 0 {
            return Ok(Applied {
                rows: 0,
                returned: returning.map(|r| {
                    let empty = Batch::empty(&r.schema.types());
                    (r.schema, empty)
                }),
            });
        }
        let batch = self.fill_sequences(table, batch, fills)?;
        self.insert_skipping(table, batch, on_conflict, returning)
    }

    /// The plan of a query, with the nodes each fragment would run on; for `EXPLAIN ANALYZE
    /// ...`, the query is run and each operator's line says what it output.
    pub fn explain(&self, sql: &str, params: &[Value]) -> Result<String> {
        let stmt = self.plan_statement(sql, params)?;
        match stmt {
            CachedStatement::Query(plan) | CachedStatement::Explain(plan) => {
                Ok(self.explain_plan(&plan, params))
            }
            CachedStatement::ExplainAnalyze(plan) => self.explain_analyzed(&plan, params),
            CachedStatement::Other(_) => {
                Err(Error::Invalid("only queries can be explained".into()))
            }
        }
    }

    pub(super) fn explain_plan(&self, plan: &QueryPlan, params: &[Value]) -> String {
        self.explain_plan_with(plan, params, &|_, _| None)
    }

    /// [`Cluster::explain_plan`] with what `annotate` says of each operator (by fragment id
    /// and operator number) at the end of its line.
    pub(super) fn explain_plan_with(
        &self,
        plan: &QueryPlan,
        params: &[Value],
        annotate: &dyn Fn(u32, u32) -> Option<String>,
    ) -> String {
        let schedule = self.schedule(plan, params).ok();
        let names = self.inner.names.clone();
        let nodes_of = |f: &weir_planner::Fragment| {
            let idx = plan.fragments.iter().position(|x| x.id == f.id);
            match (&schedule, idx) {
                (Some(s), Some(i)) => s.instances[i]
                    .iter()
                    .map(|&n| names[n as usize].clone())
                    .collect::<Vec<_>>()
                    .join(", "),
                _ => "?".into(),
            }
        };
        plan.explain_analyzed(&nodes_of, annotate)
    }
}
