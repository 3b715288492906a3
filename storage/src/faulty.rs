//! A disk that fails on purpose, for tests of what survives a crash: real files underneath,
//! with faults injected at the seam. It can fail every sync, run out of space, tear an append
//! after a given number of bytes (the process dies in the middle of a write), and lose power
//! (every file cut back to what was last synced, as a machine that stops loses what its
//! operating system had not written yet).

use crate::disk::{AppendFile, Disk, RealDisk, Syncer};
use crate::error::{Result, StorageError};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

#[derive(Debug, Default)]
struct State {
    /// Every operation fails from now on (the process or the machine stopped).
    crashed: bool,
    /// Syncs fail.
    fail_syncs: bool,
    /// Bytes that may still be written; `None`: no limit.
    space: Option<u64>,
    /// Appended bytes after which an append is torn (written in part) and the disk crashes.
    tear_after: Option<u64>,
    /// Bytes written so far, all files together.
    appended: u64,
    /// Length of every append file, and its length at its last sync.
    files: HashMap<PathBuf, (u64, u64)>,
}

/// A [`Disk`] over real files that fails when told to (see the module docs). Clones share
/// their faults.
#[derive(Debug, Clone, Default)]
pub struct FaultyDisk {
    state: Arc<Mutex<State>>,
}

fn crashed(path: &Path) -> StorageError {
    StorageError::io(
        "use",
        path,
        std::io::Error::other("the disk stopped (injected crash)"),
    )
}

impl FaultyDisk {
    /// A disk that does not fail until told to.
    pub fn new() -> Self {
        FaultyDisk::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every sync fails from now on (`false`: they succeed again).
    pub fn fail_syncs(&self, fail: bool) {
        self.lock().fail_syncs = fail;
    }

    /// Only `bytes` more may be written; past them writes fail as on a full disk.
    pub fn set_space(&self, bytes: Option<u64>) {
        self.lock().space = bytes;
    }

    /// The write that crosses `bytes` more written bytes (appends and whole-file writes
    /// counted together) is torn there: written in part, and the disk crashes (every later
    /// operation fails).
    pub fn tear_after(&self, bytes: u64) {
        let mut s = self.lock();
        s.tear_after = Some(s.appended + bytes);
    }

    /// Whether the disk has crashed (a torn append, or [`FaultyDisk::crash`]).
    pub fn has_crashed(&self) -> bool {
        self.lock().crashed
    }

    /// The process stops: every later operation fails; what was written stays (the
    /// operating system still writes it out).
    pub fn crash(&self) {
        self.lock().crashed = true;
    }

    /// The machine stops: every later operation fails, and every append file is cut back to
    /// its length at its last sync.
    pub fn power_loss(&self) -> Result<()> {
        let files: Vec<(PathBuf, u64)> = {
            let mut s = self.lock();
            s.crashed = true;
            s.files
                .iter()
                .map(|(p, &(_, synced))| (p.clone(), synced))
                .collect()
        };
        for (path, synced) in files {
            if path.exists() {
                RealDisk.truncate(&path, synced)?;
            }
        }
        Ok(())
    }

    /// A disk that works again after a crash, on the same files (the machine restarted).
    pub fn restarted(&self) -> FaultyDisk {
        FaultyDisk::default()
    }

    fn check(&self, path: &Path) -> Result<()> {
        if self.lock().crashed {
            return Err(crashed(path));
        }
        Ok(())
    }

    /// Takes `n` bytes of space, or fails as a full disk.
    fn take_space(s: &mut State, path: &Path, n: u64) -> Result<()> {
        if let Some(space) = s.space.as_mut() {
            if *space < n {
                return Err(StorageError::io(
                    "write",
                    path,
                    std::io::Error::from(std::io::ErrorKind::StorageFull),
                ));
            }
            *space -= n;
        }
        Ok(())
    }
}

struct FaultyFile {
    disk: FaultyDisk,
    path: PathBuf,
    inner: Box<dyn AppendFile>,
}

struct FaultySyncer {
    disk: FaultyDisk,
    path: PathBuf,
    inner: Box<dyn Syncer>,
}

impl AppendFile for FaultyFile {
    fn append(&mut self, bytes: &[u8]) -> Result<()> {
        let torn = {
            let mut s = self.disk.lock();
            if s.crashed {
                return Err(crashed(&self.path));
            }
            FaultyDisk::take_space(&mut s, &self.path, bytes.len() as u64)?;
            let end = s.appended + bytes.len() as u64;
            let torn = s
                .tear_after
                .filter(|&at| at < end)
                .map(|at| (at - s.appended) as usize);
            let written = torn.unwrap_or(bytes.len()) as u64;
            s.appended += written;
            s.files.entry(self.path.clone()).or_default().0 += written;
            if torn.is_some() {
                s.crashed = true;
            }
            torn
        };
        match torn {
            Some(keep) => {
                self.inner.append(&bytes[..keep])?;
                Err(crashed(&self.path))
            }
            None => self.inner.append(bytes),
        }
    }

    fn sync(&mut self) -> Result<()> {
        sync_file(&self.disk, &self.path, || self.inner.sync())
    }

    fn len(&self) -> u64 {
        self.inner.len()
    }

    fn syncer(&self) -> Result<Box<dyn Syncer>> {
        Ok(Box::new(FaultySyncer {
            disk: self.disk.clone(),
            path: self.path.clone(),
            inner: self.inner.syncer()?,
        }))
    }
}

/// Syncs `path` with `sync` unless the disk crashed or fails syncs; records the synced length.
fn sync_file(disk: &FaultyDisk, path: &Path, sync: impl FnOnce() -> Result<()>) -> Result<()> {
    let len = {
        let s = disk.lock();
        if s.crashed {
            return Err(crashed(path));
        }
        if s.fail_syncs {
            return Err(StorageError::io(
                "sync",
                path,
                std::io::Error::other("injected fsync failure"),
            ));
        }
        s.files.get(path).map_or(0, |f| f.0)
    };
    sync()?;
    if let Some(f) = disk.lock().files.get_mut(path) {
        f.1 = f.1.max(len);
    }
    Ok(())
}

impl Syncer for FaultySyncer {
    fn sync(&mut self) -> Result<()> {
        sync_file(&self.disk, &self.path, || self.inner.sync())
    }
}

impl Disk for FaultyDisk {
    fn open_append(&self, path: &Path) -> Result<Box<dyn AppendFile>> {
        self.check(path)?;
        let inner = RealDisk.open_append(path)?;
        let len = inner.len();
        // A file found on disk counts as synced (it survived whatever came before).
        self.lock()
            .files
            .entry(path.to_path_buf())
            .or_insert((len, len));
        Ok(Box::new(FaultyFile {
            disk: self.clone(),
            path: path.to_path_buf(),
            inner,
        }))
    }

    fn read(&self, path: &Path) -> Result<Vec<u8>> {
        self.check(path)?;
        RealDisk.read(path)
    }

    fn write_atomic(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        let torn = {
            let mut s = self.lock();
            if s.crashed {
                return Err(crashed(path));
            }
            if s.fail_syncs {
                return Err(StorageError::io(
                    "sync",
                    path,
                    std::io::Error::other("injected fsync failure"),
                ));
            }
            FaultyDisk::take_space(&mut s, path, bytes.len() as u64)?;
            // A write that crosses the tear point stops in the middle of its temporary file
            // (a crash while a checkpoint is written): the file it replaces stays.
            let end = s.appended + bytes.len() as u64;
            let torn = s
                .tear_after
                .filter(|&at| at < end)
                .map(|at| (at - s.appended) as usize);
            s.appended += torn.unwrap_or(bytes.len()) as u64;
            if torn.is_some() {
                s.crashed = true;
            }
            torn
        };
        match torn {
            Some(keep) => {
                let mut tmp = path.as_os_str().to_owned();
                tmp.push(".tmp");
                let _ = std::fs::write(PathBuf::from(tmp), &bytes[..keep]);
                Err(crashed(path))
            }
            None => RealDisk.write_atomic(path, bytes),
        }
    }

    fn list(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        self.check(dir)?;
        RealDisk.list(dir)
    }

    fn remove(&self, path: &Path) -> Result<()> {
        self.check(path)?;
        self.lock().files.remove(path);
        RealDisk.remove(path)
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        self.check(dir)?;
        RealDisk.create_dir_all(dir)
    }

    fn truncate(&self, path: &Path, len: u64) -> Result<()> {
        self.check(path)?;
        RealDisk.truncate(path, len)?;
        if let Some(f) = self.lock().files.get_mut(path) {
            *f = (len, len);
        }
        Ok(())
    }
}
