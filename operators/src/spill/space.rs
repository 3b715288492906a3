//! A node's spill space: its directory, its disk quota, and counters of what was spilled.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The extension of spill files; only files with it are removed from a directory at start.
pub(super) const EXTENSION: &str = "spill";

/// Prefix of the temporary directories of [`SpillSpace::temporary`], followed by the process
/// id, so that a later process removes those a crashed one left.
const TEMP_PREFIX: &str = "weir-spill-";

/// Counters of a spill space (read with [`SpillStats::snapshot`]).
#[derive(Debug, Default)]
pub struct SpillStats {
    spills: AtomicU64,
    files: AtomicU64,
    bytes_written: AtomicU64,
    peak: AtomicU64,
}

/// The counters' values at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpillCounts {
    /// Times an operator wrote state out because it was refused memory.
    pub spills: u64,
    /// Spill files written.
    pub files: u64,
    /// Compressed bytes written to spill files.
    pub bytes_written: u64,
    /// Most bytes held on disk at once.
    pub peak_bytes: u64,
}

impl SpillStats {
    /// The counters now.
    pub fn snapshot(&self) -> SpillCounts {
        SpillCounts {
            spills: self.spills.load(Ordering::Relaxed),
            files: self.files.load(Ordering::Relaxed),
            bytes_written: self.bytes_written.load(Ordering::Relaxed),
            peak_bytes: self.peak.load(Ordering::Relaxed),
        }
    }
}

/// Where a node's operators spill: a directory and a quota of bytes on disk, shared by all of
/// them. Files are named by a counter and removed when their
/// [`SpillWriter`](super::SpillWriter) or [`SpillFile`](super::SpillFile) is dropped.
#[derive(Debug)]
pub struct SpillSpace {
    label: String,
    dir: PathBuf,
    quota: u64,
    used: AtomicU64,
    next: AtomicU64,
    stats: SpillStats,
    /// A temporary directory, removed with the space.
    temporary: bool,
}

impl SpillSpace {
    /// A space in `dir` (made if missing) holding at most `quota` bytes; spill files a crash
    /// left there are removed. `label` names the node in errors.
    pub fn new(label: &str, dir: impl Into<PathBuf>, quota: u64) -> Result<Arc<Self>> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir)
            .map_err(|e| io_error("create the spill directory", &dir, e))?;
        remove_leftovers(&dir)?;
        Ok(Arc::new(SpillSpace::at(label, dir, quota, false)))
    }

    /// A space in a fresh directory under the system's temporary directory, removed when the
    /// space is dropped; directories of processes that are gone are removed first.
    pub fn temporary(label: &str, quota: u64) -> Result<Arc<Self>> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let root = std::env::temp_dir();
        remove_dead_processes_dirs(&root);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = root.join(format!("{TEMP_PREFIX}{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .map_err(|e| io_error("create the spill directory", &dir, e))?;
        remove_leftovers(&dir)?;
        Ok(Arc::new(SpillSpace::at(label, dir, quota, true)))
    }

    fn at(label: &str, dir: PathBuf, quota: u64, temporary: bool) -> SpillSpace {
        SpillSpace {
            label: label.to_string(),
            dir,
            quota,
            used: AtomicU64::new(0),
            next: AtomicU64::new(0),
            stats: SpillStats::default(),
            temporary,
        }
    }

    /// The path of a new spill file (counted as written).
    pub(super) fn next_path(&self) -> PathBuf {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        self.stats.files.fetch_add(1, Ordering::Relaxed);
        self.dir.join(format!("{n}.{EXTENSION}"))
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Bytes on disk now.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::SeqCst)
    }

    /// Most bytes allowed on disk.
    pub fn quota(&self) -> u64 {
        self.quota
    }

    /// The space's counters.
    pub fn stats(&self) -> &SpillStats {
        &self.stats
    }

    /// An operator spilled (wrote state out because it was refused memory).
    pub fn record_spill(&self) {
        self.stats.spills.fetch_add(1, Ordering::Relaxed);
    }

    /// Takes `bytes` of the quota, or fails with [`Error::SpillQuota`] without taking any.
    pub(super) fn charge(&self, bytes: u64) -> Result<()> {
        let quota = self.quota;
        let before = self
            .used
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
                used.checked_add(bytes).filter(|&now| now <= quota)
            })
            .map_err(|used| Error::SpillQuota {
                node: self.label.clone(),
                quota,
                used,
                asked: bytes,
            })?;
        self.stats.peak.fetch_max(before + bytes, Ordering::Relaxed);
        self.stats.bytes_written.fetch_add(bytes, Ordering::Relaxed);
        Ok(())
    }

    /// Gives `bytes` back to the quota.
    pub(super) fn release(&self, bytes: u64) {
        self.used.fetch_sub(bytes, Ordering::SeqCst);
    }
}

impl Drop for SpillSpace {
    fn drop(&mut self) {
        if self.temporary {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// The error of an I/O operation `what` on `path`.
pub(super) fn io_error(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::Spill(format!("cannot {what} {}: {e}", path.display()))
}

/// Removes the spill files in `dir` (what a crash left behind).
fn remove_leftovers(dir: &Path) -> Result<()> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| io_error("read the spill directory", dir, e))?;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|x| x == EXTENSION) {
            std::fs::remove_file(&path)
                .map_err(|e| io_error("remove the old spill file", &path, e))?;
        }
    }
    Ok(())
}

/// Removes the temporary spill directories under `root` of processes that no longer run
/// (where `/proc` tells; elsewhere nothing is removed).
fn remove_dead_processes_dirs(root: &Path) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(TEMP_PREFIX)) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}
