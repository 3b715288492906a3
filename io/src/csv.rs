//! CSV files (RFC 4180 quoting, through the `csv` crate): [`CsvReader`] reads a file a batch
//! at a time into a table's column types; [`CsvWriter`] writes batches out.
//!
//! A field equal to the NULL text ([`CsvOptions::null`], empty by default) is NULL, whatever
//! the column's type; so with the default an empty field is NULL, quoted or not.

use crate::error::{IoError, Result};
use crate::text::push_text;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use weir_operators::{Batch, ColumnBuilder, ColumnData, Schema, Value};

/// How a CSV file is laid out.
#[derive(Debug, Clone, PartialEq)]
pub struct CsvOptions {
    /// Whether the first line holds column names (skipped when reading, written when
    /// writing). Default: false, as PostgreSQL's COPY.
    pub header: bool,
    /// The field delimiter (one byte). Default `,`.
    pub delimiter: u8,
    /// The text that stands for NULL. Default: the empty string.
    pub null: String,
}

impl Default for CsvOptions {
    fn default() -> Self {
        CsvOptions {
            header: false,
            delimiter: b',',
            null: String::new(),
        }
    }
}

/// Reads a CSV file a batch at a time, converting each field to its column's type.
pub struct CsvReader {
    path: PathBuf,
    reader: ::csv::Reader<File>,
    schema: Schema,
    null: String,
    record: ::csv::StringRecord,
    bytes_total: u64,
}

impl CsvReader {
    /// Opens `path`, whose rows have the columns of `schema`, in order.
    pub fn open(path: &Path, schema: &Schema, options: &CsvOptions) -> Result<Self> {
        let file = File::open(path).map_err(|e| IoError::file(path, e.to_string()))?;
        let bytes_total = file.metadata().map(|m| m.len()).unwrap_or(0);
        let reader = ::csv::ReaderBuilder::new()
            .has_headers(options.header)
            .delimiter(options.delimiter)
            .flexible(true)
            .from_reader(file);
        Ok(CsvReader {
            path: path.to_path_buf(),
            reader,
            schema: schema.clone(),
            null: options.null.clone(),
            record: ::csv::StringRecord::new(),
            bytes_total,
        })
    }

    /// Bytes of the file read so far.
    pub fn bytes_read(&self) -> u64 {
        self.reader.position().byte()
    }

    /// The file's size in bytes.
    pub fn bytes_total(&self) -> u64 {
        self.bytes_total
    }

    /// The next batch of at most `max_rows` rows; `None` at the end of the file. A field that
    /// is not a value of its column's type, or a row with too few or too many fields, is an
    /// error naming the file, line and column.
    pub fn next_batch(&mut self, max_rows: usize) -> Result<Option<Batch>> {
        let fields = &self.schema.fields;
        let mut builders: Vec<ColumnBuilder> = fields
            .iter()
            .map(|f| ColumnBuilder::new(f.data_type, max_rows.min(1 << 16)))
            .collect();
        let mut rows = 0;
        while rows < max_rows {
            let more = self.reader.read_record(&mut self.record).map_err(|e| {
                let line = e.position().map_or(0, |p| p.line());
                IoError::file(&self.path, format!("line {line}: {e}"))
            })?;
            if !more {
                break;
            }
            let line = self.record.position().map_or(0, |p| p.line());
            if self.record.len() != fields.len() {
                let at = self.record.len().min(fields.len());
                let name = fields.get(at).map_or("", |f| f.name.as_str());
                return Err(IoError::at_line(
                    &self.path,
                    line,
                    at + 1,
                    name,
                    format!(
                        "expected {} fields, found {}",
                        fields.len(),
                        self.record.len()
                    ),
                ));
            }
            for (i, (text, b)) in self.record.iter().zip(builders.iter_mut()).enumerate() {
                if text == self.null {
                    b.push_null();
                } else {
                    push_text(b, text).map_err(|m| {
                        IoError::at_line(&self.path, line, i + 1, &fields[i].name, m)
                    })?;
                }
            }
            rows += 1;
        }
        if rows == 0 {
            return Ok(None);
        }
        let columns = builders.into_iter().map(ColumnBuilder::finish).collect();
        Batch::try_new(columns)
            .map(Some)
            .map_err(|e| IoError::file(&self.path, e.to_string()))
    }
}

/// Writes batches to a CSV file.
pub struct CsvWriter {
    path: PathBuf,
    writer: ::csv::Writer<BufWriter<File>>,
    null: String,
    rows: u64,
}

impl CsvWriter {
    /// Creates (or truncates) `path`; writes the header line of `names` when
    /// [`CsvOptions::header`] is set.
    pub fn create(path: &Path, names: &[String], options: &CsvOptions) -> Result<Self> {
        let file = File::create(path).map_err(|e| IoError::file(path, e.to_string()))?;
        let mut writer = ::csv::WriterBuilder::new()
            .delimiter(options.delimiter)
            .from_writer(BufWriter::new(file));
        if options.header {
            writer
                .write_record(names)
                .map_err(|e| IoError::file(path, e.to_string()))?;
        }
        Ok(CsvWriter {
            path: path.to_path_buf(),
            writer,
            null: options.null.clone(),
            rows: 0,
        })
    }

    /// Appends the rows of `batch`.
    pub fn write(&mut self, batch: &Batch) -> Result<()> {
        let mut fields: Vec<String> = Vec::with_capacity(batch.num_columns());
        for row in 0..batch.num_rows() {
            fields.clear();
            for col in batch.columns() {
                fields.push(if col.is_null(row) {
                    self.null.clone()
                } else if let ColumnData::Utf8 { .. } = col.data {
                    col.str_at(row).to_string()
                } else {
                    match col.value(row) {
                        Value::Null => self.null.clone(),
                        v => v.to_string(),
                    }
                });
            }
            self.writer
                .write_record(&fields)
                .map_err(|e| IoError::file(&self.path, e.to_string()))?;
            self.rows += 1;
        }
        Ok(())
    }

    /// Flushes the file; returns the rows written.
    pub fn finish(mut self) -> Result<u64> {
        self.writer
            .flush()
            .map_err(|e| IoError::file(&self.path, e.to_string()))?;
        Ok(self.rows)
    }
}
