//! External tables: where the rows of a table that is read in place from files lie
//! (`CREATE EXTERNAL TABLE t STORED AS PARQUET LOCATION 'dir'`). The catalog keeps an
//! [`ExternalSource`] with the table's definition and every scan of the table carries it;
//! the files are listed and read by `weir-io`'s external scan on the nodes.

use serde::{Deserialize, Serialize};

/// The files an external table reads, and how they are laid out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExternalSource {
    /// How the files are laid out.
    pub format: FileFormat,
    /// A file, a directory (its files with the format's extension, in name order) or a glob
    /// pattern (`data/*.parquet`), as an absolute path once the table was created.
    pub location: String,
}

/// The layout of an external table's files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum FileFormat {
    /// Apache Parquet: read a row group at a time, only the columns a query needs, skipping
    /// row groups whose statistics show no row can match the query's filter.
    Parquet,
    /// Comma-separated values (RFC 4180 quoting).
    Csv(CsvLayout),
}

/// How an external CSV table's files are laid out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CsvLayout {
    /// Whether each file's first line holds column names.
    pub header: bool,
    /// The field delimiter.
    pub delimiter: u8,
    /// The text that stands for NULL (empty by default).
    pub null: String,
}

impl Default for CsvLayout {
    fn default() -> Self {
        CsvLayout {
            header: false,
            delimiter: b',',
            null: String::new(),
        }
    }
}

impl FileFormat {
    /// The format's name in `STORED AS`: `PARQUET` or `CSV`.
    pub fn name(&self) -> &'static str {
        match self {
            FileFormat::Parquet => "PARQUET",
            FileFormat::Csv(_) => "CSV",
        }
    }

    /// The file name extensions of the format, which a directory's files are picked by.
    pub fn extensions(&self) -> &'static [&'static str] {
        match self {
            FileFormat::Parquet => &["parquet", "pq"],
            FileFormat::Csv(_) => &["csv", "tsv", "txt"],
        }
    }
}

impl std::fmt::Display for ExternalSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} '{}'", self.format.name(), self.location)
    }
}
