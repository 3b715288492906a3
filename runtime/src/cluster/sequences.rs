//! The values of `SERIAL` and identity columns: each column has a sequence in the catalog,
//! whose `next` is the first value no client has reserved. A client reserves values in
//! blocks ([`SEQUENCE_BLOCK`] at least) and hands them out from its block until it is used
//! up, as PostgreSQL's sequences cache values: a value is never handed out twice, not by two
//! clients nor after a restart, and values may skip (a block a client did not use up is
//! gone with it).
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
use weir_operators::{Batch, DataType};
use weir_planner::{PlanError, SequenceFill};

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
            let mut values = self.sequence_values(table, fill.column, n)?.into_iter();
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

    /// `n` values of the sequence of column `column` of `table`, from this client's block,
    /// reserving another when it runs out.
    fn sequence_values(&self, table: &str, column: usize, n: usize) -> Result<Vec<i64>> {
        let (key, made) = {
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
            let state = catalog.sequence(table, &name).ok_or_else(|| {
                Error::Invalid(format!("column '{name}' of '{table}' has no sequence"))
            })?;
            ((table.to_lowercase(), name), state.made)
        };
        let mut blocks = self
            .inner
            .sequence_blocks
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let mut out = Vec::with_capacity(n);
        blocks.take(&key, made, n, &mut out);
        while out.len() < n {
            let wanted = (n - out.len()) as i64;
            let block = self.reserve_block(&key.0, &key.1, wanted.max(SEQUENCE_BLOCK))?;
            if block.made != made {
                // The table was dropped and made again meanwhile: plan the statement again.
                return Err(Error::CatalogChanged { epoch: 0 });
            }
            blocks.put(key.clone(), block);
            blocks.take(&key, made, n - out.len(), &mut out);
        }
        Ok(out)
    }

    /// Reserves `n` values of the sequence of `column` of `table` (lowercase names), durably.
    fn reserve_block(&self, table: &str, column: &str, n: i64) -> Result<Block> {
        let inner = &self.inner;
        if inner.remote.is_none() {
            let mut catalog = inner.catalog.write().unwrap_or_else(|e| e.into_inner());
            let block = take_block(&catalog, table, column, n)?;
            catalog.reserve_sequence(table, column, block.end);
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
                        None => take_block(catalog, table, column, n)?,
                    };
                    taken.set(Some(block));
                    catalog.reserve_sequence(table, column, block.end);
                    Ok(Some(block))
                },
                |_| Ok(()),
            )?
            .ok_or_else(|| Error::Invalid(format!("no block of {table}.{column} reserved")))
        };
        let mut tries = 0;
        loop {
            match reserve() {
                Err(Error::CatalogChanged { .. }) if tries < CONFLICT_RETRIES => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(1 << tries.min(6)));
                }
                reserved => return reserved,
            }
        }
    }
}

/// The next `n` values of a sequence of `catalog`, not yet recorded as reserved.
fn take_block(catalog: &weir_planner::Catalog, table: &str, column: &str, n: i64) -> Result<Block> {
    let state = catalog
        .sequence(table, column)
        .ok_or_else(|| Error::Invalid(format!("column '{column}' of '{table}' has no sequence")))?;
    let end = state.next.checked_add(n).ok_or_else(|| {
        Error::Invalid(format!(
            "the sequence of column '{column}' of '{table}' has run out of values"
        ))
    })?;
    Ok(Block {
        made: state.made,
        next: state.next,
        end,
    })
}
