//! The values of sequences: those of `SERIAL` and identity columns, and those made by
//! `CREATE SEQUENCE` (`nextval('s')`, `setval('s', v)`, `ALTER SEQUENCE`). Each has its state in the catalog,
//! whose `next` is the first value no client has reserved. A client reserves values in
//! blocks ([`SEQUENCE_BLOCK`] at least) and hands them out from its block until it is used
//! up, as PostgreSQL's sequences cache values: a value is never handed out twice, not by two
//! clients nor after a restart (unless `setval` sets a sequence back), and values may skip
//! (a block a client did not use up is gone with it).
//!
//! A reservation is made durable before any of its values is handed out: in process, the
//! catalog is logged on the client node (with a data directory); connected to data nodes of
//! other processes, it is proposed to their catalog log as a schema change that leaves the
//! schema version alone (plans stay cached).

use super::sequence_blocks::Block;
use super::statements::CONFLICT_RETRIES;
use super::Cluster;
use crate::error::{Error, Result};
use std::cell::Cell;
use weir_operators::column::ColumnBuilder;
use weir_operators::{Batch, Column, DataType};
use weir_planner::{Catalog, PlanError, SequenceCall, SequenceChanges, SequenceFill, SequenceName};

/// The fewest values a client reserves of a sequence at a time.
pub const SEQUENCE_BLOCK: i64 = 64;

impl Cluster {
    /// `batch` (rows for `table`, in its schema's column order) with the values `fills`
    /// says to take from sequences filled in.
    pub(super) fn fill_sequences(
        &self,
        table: &str,
        batch: Batch,
        fills: &[SequenceFill],
    ) -> Result<Batch> {
        if fills.is_empty() || batch.num_rows() == 0 {
            return Ok(batch);
        }
        let rows = batch.num_rows();
        let mut columns = batch.into_columns();
        for fill in fills {
            let Some(old) = columns.get(fill.column) else {
                return Err(Error::Invalid(format!(
                    "no column #{} in {table}",
                    fill.column
                )));
            };
            let n = fill.rows.as_ref().map_or(rows, Vec::len);
            let sequence = match &fill.from {
                Some(sequence) => sequence.clone(),
                None => self.column_sequence(table, fill.column)?,
            };
            let mut values = if fill.current {
                vec![super::session::currval(&sequence)?; n]
            } else {
                self.sequence_values(&sequence, n)?
            }
            .into_iter();
            let mut filled = ColumnBuilder::new(DataType::Int64, rows);
            let mut take = fill.rows.as_ref().map(|r| r.iter().copied().peekable());
            for i in 0..rows {
                let from_sequence = match take.as_mut() {
                    None => true,
                    Some(r) => r.next_if_eq(&i).is_some(),
                };
                match from_sequence.then(|| values.next()).flatten() {
                    Some(v) => filled.push_i64(v),
                    None => filled.push_from(old, i),
                }
            }
            columns[fill.column] = filled.finish();
        }
        Batch::with_row_count(columns, rows).map_err(|e| Error::Invalid(e.to_string()))
    }

    /// The sequence of column `column` of `table` (a `SERIAL` or identity column).
    fn column_sequence(&self, table: &str, column: usize) -> Result<SequenceName> {
        let catalog = self.inner.catalog.read().unwrap_or_else(|e| e.into_inner());
        let def = catalog
            .table(table)
            .ok_or_else(|| Error::Plan(PlanError::UnknownTable(table.into())))?;
        let name = def
            .schema
            .fields
            .get(column)
            .map(|f| f.name.to_lowercase())
            .ok_or_else(|| Error::Invalid(format!("no column #{column} in {table}")))?;
        Ok(SequenceName::Column {
            table: table.to_lowercase(),
            column: name,
        })
    }

    /// `n` values of `sequence`, from this client's block, reserving another when it runs
    /// out.
    fn sequence_values(&self, sequence: &SequenceName, n: usize) -> Result<Vec<i64>> {
        let made = {
            let catalog = self.inner.catalog.read().unwrap_or_else(|e| e.into_inner());
            sequence_made(&catalog, sequence)?
        };
        let mut blocks = self
            .inner
            .sequence_blocks
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let mut out = Vec::with_capacity(n);
        blocks.take(sequence, made, n, &mut out);
        while out.len() < n {
            let wanted = (n - out.len()) as i64;
            let block = self.reserve_block(sequence, wanted.max(SEQUENCE_BLOCK))?;
            if block.made != made {
                // The sequence was dropped and made again meanwhile: plan the statement again.
                return Err(Error::CatalogChanged { epoch: 0 });
            }
            blocks.put(sequence.clone(), block);
            blocks.take(sequence, made, n - out.len(), &mut out);
        }
        if let Some(&last) = out.last() {
            super::session::handed(sequence, last);
        }
        Ok(out)
    }

    /// Reserves up to `n` values of `sequence` (fewer at the sequence's bound), durably.
    fn reserve_block(&self, sequence: &SequenceName, n: i64) -> Result<Block> {
        let inner = &self.inner;
        if inner.remote.is_none() {
            let mut catalog = inner.catalog.write().unwrap_or_else(|e| e.into_inner());
            let block = sequence_state(&catalog, sequence, n)?;
            record(&mut catalog, sequence, block.end());
            // A reservation changes the catalog, not its schema version: logged as it is.
            self.log_catalog(&catalog)?;
            return Ok(block);
        }
        // Connected to node processes: a schema change proposed to the catalog log (which
        // applies it to a copy of the catalog, then to the client's own): the block is
        // taken from the copy and the same block recorded in both.
        let reserve = || {
            let taken: Cell<Option<Block>> = Cell::new(None);
            self.change_schema(
                |catalog| {
                    let block = match taken.get() {
                        Some(block) => block,
                        None => sequence_state(catalog, sequence, n)?,
                    };
                    taken.set(Some(block));
                    record(catalog, sequence, block.end());
                    Ok(Some(block))
                },
                |_| Ok(()),
            )?
            .ok_or_else(|| Error::Invalid(format!("no block of {sequence} reserved")))
        };
        self.retrying_conflicts(reserve)
    }

    /// `SELECT nextval('s'), setval('t', v), currval('s'), lastval(), ...`: one row, the
    /// calls made in order (`currval` and `lastval` read the session of the call, see
    /// [`Session`](super::session::Session)).
    pub(super) fn sequence_calls(&self, calls: &[SequenceCall]) -> Result<Batch> {
        let mut row = Vec::with_capacity(calls.len());
        for call in calls {
            row.push(match call {
                SequenceCall::Next(sequence) => self.sequence_values(sequence, 1)?[0],
                SequenceCall::Set {
                    sequence,
                    value,
                    called,
                } => {
                    self.set_sequence(sequence, *value, *called)?;
                    if *called {
                        super::session::set(sequence, *value);
                    }
                    *value
                }
                SequenceCall::Current(sequence) => super::session::currval(sequence)?,
                SequenceCall::Last => {
                    let catalog = self.inner.catalog.read().unwrap_or_else(|e| e.into_inner());
                    super::session::lastval(|s| sequence_made(&catalog, s).is_ok())?
                }
            });
        }
        let columns = row.into_iter().map(|v| Column::from_i64(vec![v])).collect();
        Batch::with_row_count(columns, 1).map_err(|e| Error::Invalid(e.to_string()))
    }

    /// `setval(sequence, value, called)` ([`Catalog::set_sequence`]), as
    /// [`Cluster::change_sequence`] makes a change.
    fn set_sequence(&self, sequence: &SequenceName, value: i64, called: bool) -> Result<()> {
        self.change_sequence(sequence, |catalog| {
            catalog.set_sequence(sequence, value, called)
        })
    }

    /// `ALTER SEQUENCE` ([`Catalog::alter_sequence`]), as [`Cluster::change_sequence`] makes
    /// a change.
    pub(super) fn alter_sequence(
        &self,
        sequence: &SequenceName,
        changes: &SequenceChanges,
    ) -> Result<()> {
        self.change_sequence(sequence, |catalog| {
            catalog.alter_sequence(sequence, changes)
        })
    }

    /// Makes `change` to `sequence` in the catalog durably (in process, logged on the client
    /// node; connected to node processes, through their catalog log), and forgets this
    /// client's block of it, so that its next value is the changed sequence's.
    fn change_sequence(
        &self,
        sequence: &SequenceName,
        change: impl Fn(&mut Catalog) -> std::result::Result<(), PlanError>,
    ) -> Result<()> {
        let inner = &self.inner;
        if inner.remote.is_none() {
            let mut catalog = inner.catalog.write().unwrap_or_else(|e| e.into_inner());
            change(&mut catalog)?;
            self.log_catalog(&catalog)?;
        } else {
            self.retrying_conflicts(|| {
                self.change_schema(|catalog| Ok(Some(change(catalog)?)), |_| Ok(()))
                    .map(|_| ())
            })?;
        }
        inner
            .sequence_blocks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .forget(sequence);
        Ok(())
    }

    /// Runs `change` (a schema change proposed to the catalog log) again while another
    /// client's change comes first, up to [`CONFLICT_RETRIES`] times, after a pause that
    /// grows with each try.
    fn retrying_conflicts<T>(&self, change: impl Fn() -> Result<T>) -> Result<T> {
        let mut tries = 0;
        loop {
            match change() {
                Err(Error::CatalogChanged { .. }) if tries < CONFLICT_RETRIES => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(1 << tries.min(6)));
                }
                done => return done,
            }
        }
    }
}

/// The schema version that made `sequence` (see [`Block::made`]).
fn sequence_made(catalog: &Catalog, sequence: &SequenceName) -> Result<u64> {
    match sequence {
        SequenceName::Column { table, column } => catalog
            .sequence(table, column)
            .map(|s| s.made)
            .ok_or_else(|| {
                Error::Invalid(format!("column '{column}' of '{table}' has no sequence"))
            }),
        SequenceName::Named(name) => catalog
            .named_sequence(name)
            .map(|s| s.made)
            .ok_or_else(|| PlanError::UnknownSequence(name.clone()).into()),
    }
}

/// The next up to `n` values of `sequence` in `catalog`, not yet recorded as reserved (at
/// least one: a sequence with none left is an error).
fn sequence_state(catalog: &Catalog, sequence: &SequenceName, n: i64) -> Result<Block> {
    match sequence {
        SequenceName::Column { table, column } => {
            let state = catalog.sequence(table, column).ok_or_else(|| {
                Error::Invalid(format!("column '{column}' of '{table}' has no sequence"))
            })?;
            if state.next.checked_add(n).is_none() {
                return Err(Error::SequenceExhausted(format!(
                    "the sequence of column '{column}' of '{table}' has run out of values"
                )));
            }
            Ok(Block {
                made: state.made,
                next: state.next,
                step: 1,
                left: n,
            })
        }
        SequenceName::Named(name) => {
            let state = catalog
                .named_sequence(name)
                .ok_or_else(|| PlanError::UnknownSequence(name.clone()))?;
            let (next, left) = state
                .available(n)
                .ok_or_else(|| Error::SequenceExhausted(state.exhausted()))?;
            Ok(Block {
                made: state.made,
                next,
                step: state.increment,
                left,
            })
        }
    }
}

/// Records in `catalog` that the values of `sequence` before `end` are reserved.
fn record(catalog: &mut Catalog, sequence: &SequenceName, end: i64) {
    match sequence {
        SequenceName::Column { table, column } => catalog.reserve_sequence(table, column, end),
        SequenceName::Named(name) => catalog.reserve_named_sequence(name, end),
    }
}
