//! One node's share of a scan of an external table: the files listed, the work split into
//! units (a Parquet file's row groups, a CSV file), every node taking the units whose number
//! modulo the count of scanning nodes is its place among them; Parquet row groups whose
//! statistics rule out the filter skipped; only the columns the query needs read; then the
//! filter and projection of a stored table's scan applied to what was read.
//!
//! What a Parquet reader holds while it reads (a page of each column it reads and one batch
//! decoded twice, as Arrow's arrays and as weir's columns) is reserved from the node's memory
//! pool before each file is opened ([`ExternalScan::accounted`]): a reader the pool refuses
//! fails the query as any operator refused memory does.

use super::describe::parquet_metadata;
use super::prune::{ColumnStats, Pruner};
use crate::arrow::{from_arrow_array, match_columns};
use crate::csv::{CsvOptions, CsvReader};
use crate::error::IoError;
use ::parquet::arrow::arrow_reader::statistics::StatisticsConverter;
use ::parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder,
};
use ::parquet::arrow::ProjectionMask;
use arrow_array::Array;
use std::collections::VecDeque;
use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use weir_operators::external::{ExternalSource, FileFormat};
use weir_operators::kernels::{ExecContext, ScanSource};
use weir_operators::{Batch, Column, Error, Expr, Reservation, Result, Schema, Value};

/// Bytes of one Parquet page a reader holds per column, at most (the `parquet` crate's
/// default page size): the uncompressed chunk when it is smaller.
const PAGE_BYTES: usize = 1 << 20;

/// What a node's external scans read and skipped, summed over its scans.
#[derive(Debug, Default)]
pub struct ScanCounters {
    /// Files opened.
    pub files: AtomicU64,
    /// Parquet row groups read.
    pub row_groups_read: AtomicU64,
    /// Parquet row groups skipped by their statistics.
    pub row_groups_skipped: AtomicU64,
    /// Rows read from files (before the filter).
    pub rows_read: AtomicU64,
}

/// Which share of the work a node takes: units `u` with `u % of == index`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Share {
    /// The node's place among the scanning nodes.
    pub index: usize,
    /// How many nodes scan.
    pub of: usize,
}

impl Share {
    /// All the work: one node scanning.
    pub const ALL: Share = Share { index: 0, of: 1 };

    fn takes(&self, unit: usize) -> bool {
        unit % self.of.max(1) == self.index
    }
}

/// A file to read, with what of it.
enum Unit {
    Parquet {
        path: PathBuf,
        meta: ArrowReaderMetadata,
        row_groups: Vec<usize>,
        /// The file's column for each needed table column.
        columns: Vec<usize>,
    },
    Csv {
        path: PathBuf,
    },
}

enum Reader {
    Parquet {
        path: PathBuf,
        reader: ParquetRecordBatchReader,
        /// For each needed table column, its position in the batches read.
        positions: Vec<usize>,
    },
    Csv(CsvReader),
}

fn external(e: IoError) -> Error {
    Error::External(e.to_string())
}

/// Reads one node's share of an external table: batches of the projected columns of the
/// rows the filter keeps, as a stored table's scan gives them.
pub struct ExternalScan {
    format: FileFormat,
    /// The table's columns.
    table: Schema,
    /// Table columns read, ascending.
    needed: Vec<usize>,
    /// The filter over the needed columns.
    filter: Option<Expr>,
    /// The projection over the needed columns.
    projection: Vec<usize>,
    ctx: ExecContext,
    units: VecDeque<Unit>,
    reader: Option<Reader>,
    current: Option<ScanSource>,
    counters: Arc<ScanCounters>,
    /// What the open reader holds (see the module comment).
    reservation: Reservation,
}

impl ExternalScan {
    /// Opens the share `share` of a scan of the files of `source` holding the columns of
    /// `table`, keeping the rows where `filter` (over the table's columns) is TRUE and
    /// outputting the columns `projection` lists. Lists the files and reads the Parquet
    /// footers now (skipping row groups by their statistics); the rows are read as batches
    /// are asked for.
    pub fn open(
        source: &ExternalSource,
        table: &Schema,
        filter: Option<&Expr>,
        projection: &[usize],
        ctx: ExecContext,
        share: Share,
        counters: Arc<ScanCounters>,
    ) -> Result<ExternalScan> {
        let mut needed: Vec<usize> = projection.to_vec();
        if let Some(f) = filter {
            f.visit_columns(&mut |c| needed.push(c));
        }
        needed.sort_unstable();
        needed.dedup();
        if let Some(&bad) = needed.iter().find(|&&c| c >= table.len()) {
            return Err(Error::Internal(format!(
                "external scan reads column #{bad} of a {}-column table",
                table.len()
            )));
        }
        let narrow = |c: usize| needed.binary_search(&c).unwrap_or(0);
        let files = super::files::list_files(source).map_err(external)?;
        let mut units = VecDeque::new();
        match &source.format {
            FileFormat::Parquet => {
                let pruner = Pruner::new(filter);
                let mut unit = 0usize;
                for path in files {
                    let meta = parquet_metadata(&path).map_err(external)?;
                    let groups = meta.metadata().num_row_groups();
                    let mine: Vec<usize> = (0..groups).filter(|g| share.takes(unit + g)).collect();
                    unit += groups;
                    if mine.is_empty() {
                        continue;
                    }
                    let file_columns = match_columns(meta.schema(), table)
                        .map_err(|e| external(IoError::file(&path, e.to_string())))?;
                    let kept = skip_by_statistics(
                        &meta,
                        &mine,
                        &pruner,
                        table,
                        &file_columns,
                        &ctx.params,
                    )?;
                    counters
                        .row_groups_skipped
                        .fetch_add((mine.len() - kept.len()) as u64, Ordering::Relaxed);
                    if kept.is_empty() {
                        continue;
                    }
                    counters
                        .row_groups_read
                        .fetch_add(kept.len() as u64, Ordering::Relaxed);
                    units.push_back(Unit::Parquet {
                        path,
                        meta,
                        row_groups: kept,
                        columns: needed.iter().map(|&c| file_columns[c]).collect(),
                    });
                }
            }
            FileFormat::Csv(_) => {
                for (i, path) in files.into_iter().enumerate() {
                    if share.takes(i) {
                        units.push_back(Unit::Csv { path });
                    }
                }
            }
        }
        Ok(ExternalScan {
            format: source.format.clone(),
            table: table.clone(),
            filter: filter.map(|f| f.map_columns(&narrow)),
            projection: projection.iter().map(|&c| narrow(c)).collect(),
            needed,
            ctx,
            units,
            reader: None,
            current: None,
            counters,
            reservation: Reservation::unbounded(),
        })
    }

    /// The scan with what its readers hold reserved from `reservation`'s pool (unaccounted
    /// otherwise); the bytes return when the scan ends or is dropped.
    pub fn accounted(mut self, reservation: Reservation) -> ExternalScan {
        self.reservation = reservation;
        self
    }

    /// Bytes held by the open reader now (0 between files and after the last).
    pub fn reserved(&self) -> usize {
        self.reservation.size()
    }

    /// Opens the next unit's reader; false when every unit was read.
    fn open_next(&mut self) -> Result<bool> {
        let Some(unit) = self.units.pop_front() else {
            self.reservation.free();
            return Ok(false);
        };
        self.counters.files.fetch_add(1, Ordering::Relaxed);
        self.reader = Some(match unit {
            Unit::Parquet {
                path,
                meta,
                row_groups,
                columns,
            } => {
                let held = parquet_reader_bytes(&meta, &row_groups, &columns, self.ctx.batch_size);
                self.reservation.resize(held)?;
                let file =
                    File::open(&path).map_err(|e| external(IoError::file(&path, e.to_string())))?;
                let mask = ProjectionMask::roots(meta.parquet_schema(), columns.iter().copied());
                // The batches hold the masked columns in the file's order.
                let mut order = columns.clone();
                order.sort_unstable();
                let positions = columns
                    .iter()
                    .map(|c| order.binary_search(c).unwrap_or(0))
                    .collect();
                let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(file, meta)
                    .with_projection(mask)
                    .with_row_groups(row_groups)
                    .with_batch_size(self.ctx.batch_size.max(1))
                    .build()
                    .map_err(|e| external(IoError::file(&path, e.to_string())))?;
                Reader::Parquet {
                    path,
                    reader,
                    positions,
                }
            }
            Unit::Csv { path } => {
                let FileFormat::Csv(layout) = &self.format else {
                    return Err(Error::Internal("a CSV unit of a Parquet scan".into()));
                };
                let options = CsvOptions {
                    header: layout.header,
                    delimiter: layout.delimiter,
                    null: layout.null.clone(),
                };
                Reader::Csv(CsvReader::open(&path, &self.table, &options).map_err(external)?)
            }
        });
        Ok(true)
    }

    /// The next batch of the needed columns read from the files; `None` at the end.
    fn read(&mut self) -> Result<Option<Batch>> {
        loop {
            let batch = match &mut self.reader {
                None => {
                    if !self.open_next()? {
                        return Ok(None);
                    }
                    continue;
                }
                Some(Reader::Parquet {
                    path,
                    reader,
                    positions,
                }) => match reader.next() {
                    None => None,
                    Some(rb) => {
                        let rb = rb.map_err(|e| external(IoError::file(path, e.to_string())))?;
                        let mut columns: Vec<Column> = Vec::with_capacity(self.needed.len());
                        for (k, &c) in self.needed.iter().enumerate() {
                            let field = &self.table.fields[c];
                            let col =
                                from_arrow_array(rb.column(positions[k]).as_ref(), field.data_type)
                                    .map_err(|(row, message)| {
                                        external(match row {
                                            Some(r) => {
                                                IoError::at_row(path, r, &field.name, message)
                                            }
                                            None => IoError::file(
                                                path,
                                                format!("column '{}': {message}", field.name),
                                            ),
                                        })
                                    })?;
                            columns.push(col);
                        }
                        Some(Batch::with_row_count(columns, rb.num_rows())?)
                    }
                },
                Some(Reader::Csv(reader)) => reader
                    .next_batch(self.ctx.batch_size.max(1))
                    .map_err(external)?
                    .map(|b| b.into_projection(&self.needed)),
            };
            match batch {
                Some(b) => {
                    self.counters
                        .rows_read
                        .fetch_add(b.num_rows() as u64, Ordering::Relaxed);
                    return Ok(Some(b));
                }
                None => self.reader = None,
            }
        }
    }

    /// The next output batch, or `None` at the end. Never returns an empty batch.
    pub fn next_batch(&mut self) -> Result<Option<Batch>> {
        loop {
            if let Some(scan) = &mut self.current {
                if let Some(b) = scan.next_batch()? {
                    return Ok(Some(b));
                }
                self.current = None;
            }
            let Some(read) = self.read()? else {
                return Ok(None);
            };
            self.current = Some(ScanSource::new(
                vec![Arc::new(read)],
                self.filter.clone(),
                self.projection.clone(),
                self.ctx.clone(),
            ));
        }
    }
}

/// Bytes a Parquet reader holds at most while it reads `row_groups` of the file `meta`
/// describes for the file's (top-level) columns `columns`: a page of each column read and
/// one batch of `batch_size` rows decoded twice, for the largest of the groups.
fn parquet_reader_bytes(
    meta: &ArrowReaderMetadata,
    row_groups: &[usize],
    columns: &[usize],
    batch_size: usize,
) -> usize {
    let md = meta.metadata();
    let schema = md.file_metadata().schema_descr();
    let leaves: Vec<usize> = (0..schema.num_columns())
        .filter(|&l| columns.contains(&schema.get_column_root_idx(l)))
        .collect();
    let as_bytes = |n: i64| usize::try_from(n).unwrap_or(0);
    row_groups
        .iter()
        .map(|&g| {
            let group = md.row_group(g);
            let rows = as_bytes(group.num_rows()).max(1);
            let (mut pages, mut decoded) = (0usize, 0usize);
            for &l in &leaves {
                let chunk = as_bytes(group.column(l).uncompressed_size());
                pages += chunk.min(PAGE_BYTES);
                decoded += chunk.saturating_mul(batch_size.clamp(1, rows)) / rows + 64;
            }
            pages + 2 * decoded
        })
        .max()
        .unwrap_or(0)
}

/// The row groups of `mine` whose statistics do not rule out the filter.
fn skip_by_statistics(
    meta: &ArrowReaderMetadata,
    mine: &[usize],
    pruner: &Pruner,
    table: &Schema,
    file_columns: &[usize],
    params: &[Value],
) -> Result<Vec<usize>> {
    if pruner.is_empty() {
        return Ok(mine.to_vec());
    }
    let md = meta.metadata();
    let groups: Vec<_> = mine.iter().map(|&g| md.row_group(g)).collect();
    // Per tested table column, its statistics in each of `mine`.
    let mut stats: Vec<(usize, Vec<ColumnStats>)> = Vec::new();
    for c in pruner.columns() {
        let arrow = meta.schema();
        let name = arrow.field(file_columns[c]).name();
        let Ok(conv) = StatisticsConverter::try_new(name, arrow, meta.parquet_schema()) else {
            continue;
        };
        // A file that does not say how many NULLs a column has is not taken to have none.
        let conv = conv.with_missing_null_counts_as_zero(false);
        let dt = table.fields[c].data_type;
        let (Ok(mins), Ok(maxes)) = (
            conv.row_group_mins(groups.iter().copied()),
            conv.row_group_maxes(groups.iter().copied()),
        ) else {
            continue;
        };
        // A statistic that does not convert to the column's type is not used.
        let (Ok(mins), Ok(maxes)) = (
            from_arrow_array(mins.as_ref(), dt),
            from_arrow_array(maxes.as_ref(), dt),
        ) else {
            continue;
        };
        let nulls = conv.row_group_null_counts(groups.iter().copied()).ok();
        let per_group = groups
            .iter()
            .enumerate()
            .map(|(i, g)| ColumnStats {
                min: mins.value(i),
                max: maxes.value(i),
                nulls: nulls
                    .as_ref()
                    .and_then(|n| (!n.is_null(i)).then(|| n.value(i))),
                rows: g.num_rows().max(0) as u64,
            })
            .collect();
        stats.push((c, per_group));
    }
    Ok(mine
        .iter()
        .enumerate()
        .filter(|(i, _)| {
            pruner.may_match(
                &|c| {
                    stats
                        .iter()
                        .find(|(sc, _)| *sc == c)
                        .map(|(_, s)| s[*i].clone())
                },
                params,
            )
        })
        .map(|(_, &g)| g)
        .collect())
}
