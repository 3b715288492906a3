//! The file-system seam: everything the log and the checkpoints do to disk goes through
//! [`Disk`], so that tests can tear a write, fail an fsync or fill the disk
//! ([`crate::faulty::FaultyDisk`]) where the real one ([`RealDisk`]) would.

use crate::error::{Result, StorageError};
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// A file opened for appending.
pub trait AppendFile: Send {
    /// Appends `bytes` (handed to the operating system, not yet durable).
    fn append(&mut self, bytes: &[u8]) -> Result<()>;
    /// Makes what was appended durable (`fdatasync`).
    fn sync(&mut self) -> Result<()>;
    /// The file's length, what was appended included.
    fn len(&self) -> u64;
    /// Whether the file is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// A second handle that syncs the same file, so that a sync need not stop appends.
    fn syncer(&self) -> Result<Box<dyn Syncer>>;
}

/// A handle that makes a file's appended bytes durable.
pub trait Syncer: Send {
    /// `fdatasync` of the file.
    fn sync(&mut self) -> Result<()>;
}

/// The operations the storage does on files and directories.
pub trait Disk: Send + Sync {
    /// Opens `path` for appending, creating it empty if it does not exist.
    fn open_append(&self, path: &Path) -> Result<Box<dyn AppendFile>>;
    /// The whole content of `path`.
    fn read(&self, path: &Path) -> Result<Vec<u8>>;
    /// Replaces `path` by `bytes` so that after a crash it holds either its old content or all
    /// of the new: a temporary file written and synced, renamed over `path`, the directory
    /// synced.
    fn write_atomic(&self, path: &Path, bytes: &[u8]) -> Result<()>;
    /// The files of `dir` (not its subdirectories), sorted by name.
    fn list(&self, dir: &Path) -> Result<Vec<PathBuf>>;
    /// Removes `path` (no error if it does not exist).
    fn remove(&self, path: &Path) -> Result<()>;
    /// Creates `dir` and its parents.
    fn create_dir_all(&self, dir: &Path) -> Result<()>;
    /// Cuts `path` to `len` bytes and syncs it (a torn tail removed).
    fn truncate(&self, path: &Path, len: u64) -> Result<()>;
}

/// The operating system's file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealDisk;

struct RealFile {
    path: PathBuf,
    file: File,
    len: u64,
}

struct RealSyncer {
    path: PathBuf,
    file: File,
}

impl AppendFile for RealFile {
    fn append(&mut self, bytes: &[u8]) -> Result<()> {
        self.file
            .write_all(bytes)
            .map_err(|e| StorageError::io("append to", &self.path, e))?;
        self.len += bytes.len() as u64;
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        self.file
            .sync_data()
            .map_err(|e| StorageError::io("sync", &self.path, e))
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn syncer(&self) -> Result<Box<dyn Syncer>> {
        let file = self
            .file
            .try_clone()
            .map_err(|e| StorageError::io("open", &self.path, e))?;
        Ok(Box::new(RealSyncer {
            path: self.path.clone(),
            file,
        }))
    }
}

impl Syncer for RealSyncer {
    fn sync(&mut self) -> Result<()> {
        self.file
            .sync_data()
            .map_err(|e| StorageError::io("sync", &self.path, e))
    }
}

/// Syncs directory `dir`, so that a file created or renamed in it survives a crash.
fn sync_dir(dir: &Path) -> Result<()> {
    let d = File::open(dir).map_err(|e| StorageError::io("open", dir, e))?;
    d.sync_all().map_err(|e| StorageError::io("sync", dir, e))
}

impl Disk for RealDisk {
    fn open_append(&self, path: &Path) -> Result<Box<dyn AppendFile>> {
        let existed = path.exists();
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| StorageError::io("open", path, e))?;
        let len = file
            .metadata()
            .map_err(|e| StorageError::io("read the length of", path, e))?
            .len();
        if !existed {
            if let Some(dir) = path.parent() {
                sync_dir(dir)?;
            }
        }
        Ok(Box::new(RealFile {
            path: path.to_path_buf(),
            file,
            len,
        }))
    }

    fn read(&self, path: &Path) -> Result<Vec<u8>> {
        let mut bytes = Vec::new();
        File::open(path)
            .and_then(|mut f| f.read_to_end(&mut bytes))
            .map_err(|e| StorageError::io("read", path, e))?;
        Ok(bytes)
    }

    fn write_atomic(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        {
            let mut f = File::create(&tmp).map_err(|e| StorageError::io("create", &tmp, e))?;
            f.write_all(bytes)
                .map_err(|e| StorageError::io("write", &tmp, e))?;
            f.sync_all()
                .map_err(|e| StorageError::io("sync", &tmp, e))?;
        }
        std::fs::rename(&tmp, path).map_err(|e| StorageError::io("rename", &tmp, e))?;
        match path.parent() {
            Some(dir) => sync_dir(dir),
            None => Ok(()),
        }
    }

    fn list(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        let mut out = Vec::new();
        let entries = std::fs::read_dir(dir).map_err(|e| StorageError::io("list", dir, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| StorageError::io("list", dir, e))?;
            let is_file = entry
                .file_type()
                .map_err(|e| StorageError::io("list", dir, e))?
                .is_file();
            if is_file {
                out.push(entry.path());
            }
        }
        out.sort();
        Ok(out)
    }

    fn remove(&self, path: &Path) -> Result<()> {
        match std::fs::remove_file(path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(StorageError::io("remove", path, e)),
        }
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir).map_err(|e| StorageError::io("create", dir, e))
    }

    fn truncate(&self, path: &Path, len: u64) -> Result<()> {
        let f = OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| StorageError::io("open", path, e))?;
        f.set_len(len)
            .map_err(|e| StorageError::io("truncate", path, e))?;
        f.sync_all().map_err(|e| StorageError::io("sync", path, e))
    }
}
