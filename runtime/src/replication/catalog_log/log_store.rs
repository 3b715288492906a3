//! The catalog log's Raft log and vote on one data node: in memory, and, on a node with a
//! data directory, written whole to a file of the directory ([`LogFile`]) before Raft is told
//! an entry or a vote is stored. The log is short (Raft folds it into a snapshot every few
//! hundred entries, see [`super::raft_config`]), so writing it whole stays cheap.

use super::disk::LogFile;
use super::types::LogTypes;
use openraft::storage::{LogFlushed, RaftLogStorage};
use openraft::{
    Entry, LogId, LogState, RaftLogId, RaftLogReader, StorageError, StorageIOError, Vote,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::ops::RangeBounds;
use std::sync::{Arc, Mutex, MutexGuard};

/// What the log keeps (and writes to its file).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Kept {
    vote: Option<Vote<u64>>,
    committed: Option<LogId<u64>>,
    last_purged: Option<LogId<u64>>,
    entries: BTreeMap<u64, Entry<LogTypes>>,
}

/// The Raft log of one node (cheap to clone: clones share it).
#[derive(Debug, Clone, Default)]
pub struct LogStore {
    kept: Arc<Mutex<Kept>>,
    file: Option<LogFile>,
}

impl LogStore {
    /// A log in memory only.
    pub fn in_memory() -> Self {
        Self::default()
    }

    /// A log kept in `file`, read back from it if it exists.
    pub fn on_disk(file: LogFile) -> std::io::Result<Self> {
        let kept: Kept = file.read()?.unwrap_or_default();
        Ok(LogStore {
            kept: Arc::new(Mutex::new(kept)),
            file: Some(file),
        })
    }

    /// Whether the log holds nothing: no vote, no entry, nothing folded into a snapshot (a
    /// node that starts so has never been a member, or forgot it: see
    /// [`super::CatalogLog::join`]).
    pub fn is_empty(&self) -> bool {
        let kept = self.lock();
        kept.vote.is_none() && kept.entries.is_empty() && kept.last_purged.is_none()
    }

    fn lock(&self) -> MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Writes `kept` to the file, if the log has one.
    fn save(&self, kept: &Kept) -> std::io::Result<()> {
        match &self.file {
            Some(file) => file.write(kept),
            None => Ok(()),
        }
    }
}

impl RaftLogReader<LogTypes> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + Send>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry<LogTypes>>, StorageError<u64>> {
        Ok(self
            .lock()
            .entries
            .range(range)
            .map(|(_, e)| e.clone())
            .collect())
    }
}

impl RaftLogStorage<LogTypes> for LogStore {
    type LogReader = Self;

    async fn get_log_state(&mut self) -> Result<LogState<LogTypes>, StorageError<u64>> {
        let kept = self.lock();
        let last = kept
            .entries
            .values()
            .next_back()
            .map(|e| *e.get_log_id())
            .or(kept.last_purged);
        Ok(LogState {
            last_purged_log_id: kept.last_purged,
            last_log_id: last,
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<u64>) -> Result<(), StorageError<u64>> {
        let mut kept = self.lock();
        kept.vote = Some(*vote);
        self.save(&kept)
            .map_err(|e| StorageIOError::write_vote(&e).into())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<u64>>, StorageError<u64>> {
        Ok(self.lock().vote)
    }

    async fn save_committed(
        &mut self,
        committed: Option<LogId<u64>>,
    ) -> Result<(), StorageError<u64>> {
        let mut kept = self.lock();
        kept.committed = committed;
        self.save(&kept)
            .map_err(|e| StorageIOError::write(&e).into())
    }

    async fn read_committed(&mut self) -> Result<Option<LogId<u64>>, StorageError<u64>> {
        Ok(self.lock().committed)
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<LogTypes>,
    ) -> Result<(), StorageError<u64>>
    where
        I: IntoIterator<Item = Entry<LogTypes>> + Send,
        I::IntoIter: Send,
    {
        let mut kept = self.lock();
        for entry in entries {
            kept.entries.insert(entry.get_log_id().index, entry);
        }
        let saved = self.save(&kept);
        drop(kept);
        match saved {
            Ok(()) => {
                callback.log_io_completed(Ok(()));
                Ok(())
            }
            Err(e) => {
                let err = StorageIOError::write_logs(&e).into();
                callback.log_io_completed(Err(e));
                Err(err)
            }
        }
    }

    async fn truncate(&mut self, log_id: LogId<u64>) -> Result<(), StorageError<u64>> {
        let mut kept = self.lock();
        kept.entries.split_off(&log_id.index);
        self.save(&kept)
            .map_err(|e| StorageIOError::write_logs(&e).into())
    }

    async fn purge(&mut self, log_id: LogId<u64>) -> Result<(), StorageError<u64>> {
        let mut kept = self.lock();
        kept.entries = kept.entries.split_off(&(log_id.index + 1));
        kept.last_purged = Some(log_id);
        self.save(&kept)
            .map_err(|e| StorageIOError::write_logs(&e).into())
    }
}
