//! A write-ahead log: records appended to segment files, acknowledged once durable, read back
//! in order at start.
//!
//! A record's position is its LSN: the byte offset, over all segments, just after it. Segment
//! files are named by the LSN they start at (`log-00000000000000000000.wal`) and roll over
//! past [`SEGMENT_BYTES`]; segments wholly before a checkpoint are removed
//! ([`Log::remove_before`]).
//!
//! Durability ([`Durability`]): with `Fsync` a record counts as durable once an `fdatasync`
//! covering it returned. One committer thread syncs for everyone: records appended while a
//! sync runs are covered by the next one, so many concurrent writes share one sync (group
//! commit). With `Os` a record counts once it is handed to the operating system: it survives
//! the process, not the machine.
//!
//! A failed append or sync closes the log: the write that needed it fails, and every later
//! append is refused ([`StorageError::Closed`]), since what the file holds is then unknown
//! (as PostgreSQL does after a failed fsync). Reading the log at start stops at a torn tail
//! (a crash in the middle of an append), which is cut off; damage with whole records after it
//! is an error naming the file and the offset, never a silent skip.

use crate::disk::{AppendFile, Disk, Syncer};
use crate::error::{Result, StorageError};
use crate::frame::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

/// Bytes after which a segment rolls over to a new file.
pub const SEGMENT_BYTES: u64 = 64 << 20;

/// What acknowledged means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// On disk: an `fdatasync` covering the record returned (group commit shares it).
    #[default]
    Fsync,
    /// Handed to the operating system: survives the process, not a power cut.
    Os,
}

impl std::str::FromStr for Durability {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "fsync" => Ok(Durability::Fsync),
            "os" => Ok(Durability::Os),
            other => Err(format!(
                "unknown durability {other:?}: expected fsync or os"
            )),
        }
    }
}

/// Called once a record is durable, or with the error that kept it from being so.
pub type OnDurable = Box<dyn FnOnce(Result<()>) + Send>;

/// The segment being appended to.
struct Writer {
    file: Box<dyn AppendFile>,
    /// Where the segment starts.
    start: u64,
    /// The LSN after the last record.
    end: u64,
    /// Why the log refuses appends, once it does.
    failed: Option<StorageError>,
    /// Scratch for framing a record.
    frame: Vec<u8>,
}

#[derive(Default)]
struct Syncs {
    /// Records waiting to be durable: (LSN, callback).
    waiting: Vec<(u64, OnDurable)>,
    /// Everything up to here is durable.
    synced: u64,
    /// The end of the last record appended: the sync thread starts syncing it at once, so
    /// that the sync overlaps whatever the writer does before it waits (applying the change).
    appended: u64,
    /// The committer stops.
    stop: bool,
}

struct Shared {
    dir: PathBuf,
    disk: Arc<dyn Disk>,
    writer: Mutex<Writer>,
    syncs: Mutex<Syncs>,
    wake: Condvar,
}

/// A node's write-ahead log (see the module docs).
pub struct Log {
    shared: Arc<Shared>,
    durability: Durability,
    committer: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Log {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Log")
            .field("dir", &self.shared.dir)
            .field("durability", &self.durability)
            .finish()
    }
}

fn segment_name(start: u64) -> String {
    format!("log-{start:020}.wal")
}

/// The LSN a segment file starts at, from its name.
fn segment_start(path: &Path) -> Option<u64> {
    let name = path.file_name()?.to_str()?;
    name.strip_prefix("log-")?
        .strip_suffix(".wal")?
        .parse()
        .ok()
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Log {
    /// Opens the log in `dir` (created if missing), handing every record at or after
    /// `from_lsn` (its LSN, its payload) to `replay`, in order. A torn tail is cut off; other
    /// damage is an error.
    pub fn open(
        disk: Arc<dyn Disk>,
        dir: &Path,
        durability: Durability,
        from_lsn: u64,
        mut replay: impl FnMut(u64, &[u8]) -> Result<()>,
    ) -> Result<Log> {
        disk.create_dir_all(dir)?;
        let segments: Vec<(u64, PathBuf)> = disk
            .list(dir)?
            .into_iter()
            .filter_map(|p| segment_start(&p).map(|s| (s, p)))
            .collect();
        let mut end = segments.first().map_or(0, |(s, _)| *s);
        for (i, (start, path)) in segments.iter().enumerate() {
            if *start != end {
                return Err(StorageError::corrupt(
                    path,
                    0,
                    format!("the log before it ends at {end}, this segment starts at {start}"),
                ));
            }
            let last = i + 1 == segments.len();
            let bytes = disk.read(path)?;
            let mut offset = 0;
            loop {
                match frame::decode(&bytes, offset) {
                    Read::Record(payload, next) => {
                        let lsn = start + next as u64;
                        if lsn > from_lsn {
                            replay(lsn, payload)?;
                        }
                        offset = next;
                    }
                    Read::End => break,
                    Read::Bad(reason) => {
                        if !last || frame::any_record_after(&bytes, offset) {
                            return Err(StorageError::corrupt(path, offset as u64, reason));
                        }
                        tracing::warn!(
                            "{}: cut a torn record at byte {offset} ({reason})",
                            path.display()
                        );
                        disk.truncate(path, offset as u64)?;
                        break;
                    }
                }
            }
            end = start + offset as u64;
        }
        let (start, path) = match segments.last() {
            Some((start, path)) => (*start, path.clone()),
            None => (end, dir.join(segment_name(end))),
        };
        let file = disk.open_append(&path)?;
        let shared = Arc::new(Shared {
            dir: dir.to_path_buf(),
            disk,
            writer: Mutex::new(Writer {
                file,
                start,
                end,
                failed: None,
                frame: Vec::new(),
            }),
            syncs: Mutex::new(Syncs {
                synced: end,
                ..Syncs::default()
            }),
            wake: Condvar::new(),
        });
        let committer = match durability {
            Durability::Fsync => {
                let shared = shared.clone();
                Some(
                    std::thread::Builder::new()
                        .name("weir-log-sync".into())
                        .spawn(move || commit(&shared))
                        .map_err(|e| StorageError::io("start the sync thread of", dir, e))?,
                )
            }
            Durability::Os => None,
        };
        Ok(Log {
            shared,
            durability,
            committer,
        })
    }

    /// The log's directory.
    pub fn dir(&self) -> &Path {
        &self.shared.dir
    }

    /// What acknowledged means for this log.
    pub fn durability(&self) -> Durability {
        self.durability
    }

    /// The LSN after the last record appended.
    pub fn end(&self) -> u64 {
        lock(&self.shared.writer).end
    }

    /// Appends `payload` as a record (handed to the operating system; see
    /// [`Log::when_durable`]) and returns its LSN. A failed append closes the log.
    pub fn append(&self, payload: &[u8]) -> Result<u64> {
        let mut w = lock(&self.shared.writer);
        if let Some(e) = &w.failed {
            return Err(StorageError::Closed {
                path: self.shared.dir.clone(),
                reason: e.to_string(),
            });
        }
        if w.file.len() >= SEGMENT_BYTES {
            if let Err(e) = self.roll(&mut w) {
                w.failed = Some(e.clone());
                return Err(e);
            }
        }
        let mut frame = std::mem::take(&mut w.frame);
        frame.clear();
        frame::encode(payload, &mut frame);
        let appended = w.file.append(&frame);
        let len = frame.len() as u64;
        w.frame = frame;
        match appended {
            Ok(()) => {
                w.end += len;
                let end = w.end;
                drop(w);
                if self.durability == Durability::Fsync {
                    let mut syncs = lock(&self.shared.syncs);
                    syncs.appended = syncs.appended.max(end);
                    drop(syncs);
                    self.shared.wake.notify_one();
                }
                Ok(end)
            }
            Err(e) => {
                w.failed = Some(e.clone());
                Err(e)
            }
        }
    }

    /// Syncs the full segment and starts a new one.
    fn roll(&self, w: &mut Writer) -> Result<()> {
        w.file.sync()?;
        let path = self.shared.dir.join(segment_name(w.end));
        w.file = self.shared.disk.open_append(&path)?;
        w.start = w.end;
        let mut syncs = lock(&self.shared.syncs);
        syncs.synced = syncs.synced.max(w.start);
        Ok(())
    }

    /// Calls `done` once the record ending at `lsn` is durable (at once with `Os`), from the
    /// log's sync thread, or with the error that kept it from being so.
    pub fn when_durable(&self, lsn: u64, done: OnDurable) {
        if self.durability == Durability::Os {
            done(Ok(()));
            return;
        }
        let mut syncs = lock(&self.shared.syncs);
        if syncs.synced >= lsn {
            drop(syncs);
            done(Ok(()));
            return;
        }
        syncs.waiting.push((lsn, done));
        self.shared.wake.notify_one();
    }

    /// Waits until the record ending at `lsn` is durable.
    pub fn sync(&self, lsn: u64) -> Result<()> {
        let (tx, rx) = std::sync::mpsc::channel();
        self.when_durable(
            lsn,
            Box::new(move |r| {
                let _ = tx.send(r);
            }),
        );
        rx.recv().unwrap_or_else(|_| {
            Err(StorageError::Closed {
                path: self.shared.dir.clone(),
                reason: "the log stopped".into(),
            })
        })
    }

    /// Removes the segments that end at or before `lsn` (a checkpoint covers them).
    pub fn remove_before(&self, lsn: u64) -> Result<()> {
        let current = lock(&self.shared.writer).start;
        let segments: Vec<(u64, PathBuf)> = self
            .shared
            .disk
            .list(&self.shared.dir)?
            .into_iter()
            .filter_map(|p| segment_start(&p).map(|s| (s, p)))
            .collect();
        for pair in segments.windows(2) {
            let ((start, path), (next, _)) = (&pair[0], &pair[1]);
            if *next <= lsn && *start < current {
                self.shared.disk.remove(path)?;
            }
        }
        Ok(())
    }
}

/// The sync thread: syncs whatever was appended when records wait, then tells them.
fn commit(shared: &Shared) {
    loop {
        {
            let mut syncs = lock(&shared.syncs);
            while syncs.waiting.is_empty() && syncs.appended <= syncs.synced && !syncs.stop {
                syncs = shared.wake.wait(syncs).unwrap_or_else(|e| e.into_inner());
            }
            if syncs.waiting.is_empty() && syncs.stop {
                return;
            }
        }
        // Everything appended up to now is covered by this sync.
        let (target, syncer): (u64, Result<Box<dyn Syncer>>) = {
            let w = lock(&shared.writer);
            // A log that failed answers every later waiter with the failure itself (a sync
            // started at an append may have failed before anyone waited for it).
            let syncer = match &w.failed {
                Some(e) => Err(e.clone()),
                None => w.file.syncer(),
            };
            (w.end, syncer)
        };
        let result = syncer.and_then(|mut s| s.sync());
        let done: Vec<(u64, OnDurable)> = {
            let mut syncs = lock(&shared.syncs);
            match &result {
                Ok(()) => {
                    syncs.synced = syncs.synced.max(target);
                    let synced = syncs.synced;
                    let (done, left) = std::mem::take(&mut syncs.waiting)
                        .into_iter()
                        .partition(|(lsn, _)| *lsn <= synced);
                    syncs.waiting = left;
                    done
                }
                Err(_) => std::mem::take(&mut syncs.waiting),
            }
        };
        if let Err(e) = &result {
            tracing::error!("{}: {e}", shared.dir.display());
            let mut w = lock(&shared.writer);
            if w.failed.is_none() {
                w.failed = Some(e.clone());
            }
        }
        for (_, callback) in done {
            callback(result.clone());
        }
    }
}

impl Drop for Log {
    fn drop(&mut self) {
        lock(&self.shared.syncs).stop = true;
        self.shared.wake.notify_all();
        if let Some(t) = self.committer.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::disk::RealDisk;
    use crate::faulty::FaultyDisk;

    fn records(disk: Arc<dyn Disk>, dir: &Path, from: u64) -> Result<Vec<(u64, Vec<u8>)>> {
        let mut out = Vec::new();
        let log = Log::open(disk, dir, Durability::Os, from, |lsn, p| {
            out.push((lsn, p.to_vec()));
            Ok(())
        })?;
        drop(log);
        Ok(out)
    }

    #[test]
    fn records_come_back_in_order_from_an_lsn_and_the_log_goes_on_after_them() {
        let tmp = tempfile::tempdir().unwrap();
        let disk: Arc<dyn Disk> = Arc::new(RealDisk);
        let log = Log::open(
            disk.clone(),
            tmp.path(),
            Durability::Fsync,
            0,
            |_, _| Ok(()),
        )
        .unwrap();
        let a = log.append(b"a").unwrap();
        let b = log.append(b"bb").unwrap();
        log.sync(b).unwrap();
        drop(log);
        let all = records(disk.clone(), tmp.path(), 0).unwrap();
        assert_eq!(all, vec![(a, b"a".to_vec()), (b, b"bb".to_vec())]);
        assert_eq!(
            records(disk.clone(), tmp.path(), a).unwrap(),
            vec![(b, b"bb".to_vec())]
        );
        let log = Log::open(disk.clone(), tmp.path(), Durability::Os, 0, |_, _| Ok(())).unwrap();
        assert_eq!(log.end(), b);
        let c = log.append(b"ccc").unwrap();
        drop(log);
        assert_eq!(
            records(disk, tmp.path(), b).unwrap(),
            vec![(c, b"ccc".to_vec())]
        );
    }

    #[test]
    fn a_torn_tail_is_cut_and_damage_before_whole_records_is_an_error_naming_the_offset() {
        let tmp = tempfile::tempdir().unwrap();
        let faulty = FaultyDisk::new();
        let disk: Arc<dyn Disk> = Arc::new(faulty.clone());
        let log = Log::open(disk.clone(), tmp.path(), Durability::Os, 0, |_, _| Ok(())).unwrap();
        let a = log.append(b"first").unwrap();
        faulty.tear_after(7);
        assert!(log.append(b"second, torn").is_err());
        // Closed after the failure.
        assert!(matches!(log.append(b"x"), Err(StorageError::Closed { .. })));
        drop(log);
        let disk: Arc<dyn Disk> = Arc::new(RealDisk);
        assert_eq!(
            records(disk.clone(), tmp.path(), 0).unwrap(),
            vec![(a, b"first".to_vec())]
        );
        // The torn tail is gone: appends go on from the last whole record.
        let log = Log::open(disk.clone(), tmp.path(), Durability::Os, 0, |_, _| Ok(())).unwrap();
        assert_eq!(log.end(), a);
        let b = log.append(b"second").unwrap();
        drop(log);
        // Damage the first record: a whole record follows, so it is an error.
        let path = tmp.path().join(segment_name(0));
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[9] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        let err = records(disk, tmp.path(), 0).unwrap_err();
        assert!(
            matches!(&err, StorageError::Corrupt { offset: 0, path: p, .. } if *p == path),
            "{err}"
        );
        assert!(b > a);
    }

    #[test]
    fn group_commit_acknowledges_after_the_sync_and_a_failed_sync_fails_the_writes() {
        let tmp = tempfile::tempdir().unwrap();
        let faulty = FaultyDisk::new();
        let disk: Arc<dyn Disk> = Arc::new(faulty.clone());
        let log =
            Arc::new(Log::open(disk, tmp.path(), Durability::Fsync, 0, |_, _| Ok(())).unwrap());
        let writers: Vec<_> = (0..8)
            .map(|i| {
                let log = log.clone();
                std::thread::spawn(move || {
                    let lsn = log.append(format!("write {i}").as_bytes()).unwrap();
                    log.sync(lsn)
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap().unwrap();
        }
        faulty.fail_syncs(true);
        let lsn = log.append(b"not durable").unwrap();
        let err = log.sync(lsn).unwrap_err();
        assert!(matches!(err, StorageError::Io { op: "sync", .. }), "{err}");
        assert!(
            log.append(b"after").is_err(),
            "a failed sync closes the log"
        );
    }

    #[test]
    fn segments_roll_over_and_those_before_a_checkpoint_go() {
        let tmp = tempfile::tempdir().unwrap();
        let disk: Arc<dyn Disk> = Arc::new(RealDisk);
        let log = Log::open(disk.clone(), tmp.path(), Durability::Os, 0, |_, _| Ok(())).unwrap();
        let big = vec![7u8; (SEGMENT_BYTES / 2) as usize];
        let mut lsns = Vec::new();
        for _ in 0..5 {
            lsns.push(log.append(&big).unwrap());
        }
        let files = |disk: &Arc<dyn Disk>| disk.list(tmp.path()).unwrap().len();
        assert_eq!(files(&disk), 3);
        log.remove_before(lsns[2]).unwrap();
        assert_eq!(files(&disk), 2);
        drop(log);
        let back = records(disk, tmp.path(), lsns[2]).unwrap();
        assert_eq!(
            back.iter().map(|r| r.0).collect::<Vec<_>>(),
            lsns[3..].to_vec()
        );
    }
}
