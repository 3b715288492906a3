//! Parquet files through the Apache Arrow `parquet` crate: [`ParquetReader`] reads row
//! groups a batch at a time into a table's column types (through [`crate::arrow`]);
//! [`ParquetWriter`] writes batches out (uncompressed).

use crate::arrow::{from_record_batch, match_columns, to_record_batch};
use crate::error::{IoError, Result};
use ::parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
use ::parquet::arrow::ArrowWriter;
use std::fs::File;
use std::path::{Path, PathBuf};
use weir_operators::{Batch, Schema};

/// Reads a Parquet file a batch at a time.
pub struct ParquetReader {
    path: PathBuf,
    reader: ParquetRecordBatchReader,
    schema: Schema,
    rows_read: u64,
    rows_total: u64,
}

impl ParquetReader {
    /// Opens `path` to read batches of at most `batch_rows` rows with the columns of
    /// `schema` (matched by name, or by position when the names differ and the counts
    /// agree).
    pub fn open(path: &Path, schema: &Schema, batch_rows: usize) -> Result<Self> {
        let file = File::open(path).map_err(|e| IoError::file(path, e.to_string()))?;
        let builder = ParquetRecordBatchReaderBuilder::try_new(file)
            .map_err(|e| IoError::file(path, format!("not a Parquet file we can read: {e}")))?;
        match_columns(builder.schema(), schema).map_err(|e| IoError::file(path, e.to_string()))?;
        let rows_total = builder.metadata().file_metadata().num_rows().max(0) as u64;
        let reader = builder
            .with_batch_size(batch_rows.max(1))
            .build()
            .map_err(|e| IoError::file(path, e.to_string()))?;
        Ok(ParquetReader {
            path: path.to_path_buf(),
            reader,
            schema: schema.clone(),
            rows_read: 0,
            rows_total,
        })
    }

    /// Rows read so far.
    pub fn rows_read(&self) -> u64 {
        self.rows_read
    }

    /// The file's rows, from its metadata.
    pub fn rows_total(&self) -> u64 {
        self.rows_total
    }

    /// The next batch; `None` at the end of the file. A value that does not fit its column's
    /// type is an error naming the file, row and column.
    pub fn next_batch(&mut self) -> Result<Option<Batch>> {
        let Some(rb) = self.reader.next() else {
            return Ok(None);
        };
        let rb = rb.map_err(|e| IoError::file(&self.path, e.to_string()))?;
        let batch = from_record_batch(&rb, &self.schema).map_err(|e| match e.row {
            Some(r) => IoError::at_row(&self.path, self.rows_read + r, &e.column, e.message),
            None => IoError::file(&self.path, e.to_string()),
        })?;
        self.rows_read += batch.num_rows() as u64;
        Ok(Some(batch))
    }
}

/// Writes batches to a Parquet file.
pub struct ParquetWriter {
    path: PathBuf,
    schema: Schema,
    writer: ArrowWriter<File>,
    rows: u64,
}

impl ParquetWriter {
    /// Creates (or truncates) `path` for rows with the columns of `schema`, uncompressed.
    pub fn create(path: &Path, schema: &Schema) -> Result<Self> {
        Self::create_with(path, schema, None)
    }

    /// [`ParquetWriter::create`], its column chunks compressed with Snappy (smaller files,
    /// for data sets written once and read many times).
    pub fn create_compressed(path: &Path, schema: &Schema) -> Result<Self> {
        let props = ::parquet::file::properties::WriterProperties::builder()
            .set_compression(::parquet::basic::Compression::SNAPPY)
            .build();
        Self::create_with(path, schema, Some(props))
    }

    fn create_with(
        path: &Path,
        schema: &Schema,
        props: Option<::parquet::file::properties::WriterProperties>,
    ) -> Result<Self> {
        let file = File::create(path).map_err(|e| IoError::file(path, e.to_string()))?;
        let writer = ArrowWriter::try_new(file, crate::arrow::arrow_schema(schema), props)
            .map_err(|e| IoError::file(path, e.to_string()))?;
        Ok(ParquetWriter {
            path: path.to_path_buf(),
            schema: schema.clone(),
            writer,
            rows: 0,
        })
    }

    /// Appends the rows of `batch`.
    pub fn write(&mut self, batch: Batch) -> Result<()> {
        let n = batch.num_rows() as u64;
        let rb = to_record_batch(&self.schema, batch)
            .map_err(|e| IoError::file(&self.path, e.to_string()))?;
        self.writer
            .write(&rb)
            .map_err(|e| IoError::file(&self.path, e.to_string()))?;
        self.rows += n;
        Ok(())
    }

    /// Ends the current row group: the rows written since the last one become a row group
    /// of their own, with its own statistics (a reader can skip it by them).
    pub fn end_row_group(&mut self) -> Result<()> {
        self.writer
            .flush()
            .map_err(|e| IoError::file(&self.path, e.to_string()))
    }

    /// Writes the file's footer and closes it; returns the rows written.
    pub fn finish(self) -> Result<u64> {
        self.writer
            .close()
            .map_err(|e| IoError::file(&self.path, e.to_string()))?;
        Ok(self.rows)
    }
}
