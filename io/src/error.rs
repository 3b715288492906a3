//! The error of reading or writing a file: the file, where in it, and what was wrong.

use std::fmt;
use std::path::{Path, PathBuf};

/// Results of this crate.
pub type Result<T> = std::result::Result<T, IoError>;

/// What went wrong with a file, and where: displayed as `file:line:column: column 'name': message`
/// (CSV, lines and columns counted from 1), `file: row N, column C: message` (Parquet, rows from 1) or
/// `file: message`.
#[derive(Debug, Clone, PartialEq)]
pub struct IoError {
    /// The file.
    pub file: PathBuf,
    /// Where in the file.
    pub at: Location,
    /// What was wrong.
    pub message: String,
}

/// A place in a file.
#[derive(Debug, Clone, PartialEq)]
pub enum Location {
    /// The file as a whole.
    File,
    /// A line of a text file and a column (both from 1), with the column's name.
    Line {
        /// Line number, from 1.
        line: u64,
        /// Column number, from 1.
        column: usize,
        /// Column name.
        name: String,
    },
    /// A row of a Parquet file or an Arrow batch (from 1) and a column name.
    Row {
        /// Row number, from 1.
        row: u64,
        /// Column name.
        column: String,
    },
}

impl IoError {
    /// An error about the file as a whole.
    pub fn file(file: &Path, message: impl Into<String>) -> Self {
        IoError {
            file: file.to_path_buf(),
            at: Location::File,
            message: message.into(),
        }
    }

    /// An error at a line and column of a text file.
    pub fn at_line(
        file: &Path,
        line: u64,
        column: usize,
        name: &str,
        message: impl Into<String>,
    ) -> Self {
        IoError {
            file: file.to_path_buf(),
            at: Location::Line {
                line,
                column,
                name: name.to_string(),
            },
            message: message.into(),
        }
    }

    /// An error at a row and column of a Parquet file or Arrow batch.
    pub fn at_row(file: &Path, row: u64, column: &str, message: impl Into<String>) -> Self {
        IoError {
            file: file.to_path_buf(),
            at: Location::Row {
                row,
                column: column.to_string(),
            },
            message: message.into(),
        }
    }
}

impl fmt::Display for IoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = self.file.display();
        match &self.at {
            Location::File => write!(f, "{file}: {}", self.message),
            Location::Line { line, column, name } => {
                write!(
                    f,
                    "{file}:{line}:{column}: column '{name}': {}",
                    self.message
                )
            }
            Location::Row { row, column } => {
                write!(f, "{file}: row {row}, column {column}: {}", self.message)
            }
        }
    }
}

impl std::error::Error for IoError {}
