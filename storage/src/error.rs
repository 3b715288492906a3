//! What can go wrong on disk: an operation that failed (naming the file and the operation),
//! and bytes that do not read back as what was written (naming the file and the offset).

use std::path::{Path, PathBuf};
use thiserror::Error;

/// Result alias of the storage crate.
pub type Result<T, E = StorageError> = std::result::Result<T, E>;

/// A disk operation that failed, or data on disk that is not what was written.
#[derive(Debug, Clone, Error, PartialEq)]
pub enum StorageError {
    /// An operation on a file failed (a full disk, a failed fsync, a missing permission).
    #[error("cannot {op} {}: {message}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What was being done (`append to`, `sync`, `read`, `create`, ...).
        op: &'static str,
        /// The kind of failure, as the operating system reports it.
        kind: std::io::ErrorKind,
        /// The operating system's message.
        message: String,
    },
    /// Bytes on disk that do not read back as what was written: a record or file whose checksum
    /// or framing is wrong where more data follows it, so acknowledged data would be skipped.
    #[error("{} is corrupt at byte {offset}: {reason}", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// Where in the file.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// The log was closed (its node stopped) or failed before: nothing more is written to it.
    #[error("the log of {} is closed: {reason}", path.display())]
    Closed {
        /// The log's directory.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

impl StorageError {
    /// The error of `op` on `path` that failed with `e`.
    pub fn io(op: &'static str, path: &Path, e: std::io::Error) -> Self {
        StorageError::Io {
            path: path.to_path_buf(),
            op,
            kind: e.kind(),
            message: e.to_string(),
        }
    }

    /// Corrupt data in `path` at `offset`.
    pub fn corrupt(path: &Path, offset: u64, reason: impl Into<String>) -> Self {
        StorageError::Corrupt {
            path: path.to_path_buf(),
            offset,
            reason: reason.into(),
        }
    }
}
