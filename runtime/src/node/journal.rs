//! A node's durable storage in its data directory: every [`Change`] to its storage is
//! appended to a write-ahead log before it is made, and the node's partitions are written as
//! checkpoints in the background, after which the log behind them is removed
//! (`weir_storage`). At start, a node reads its last checkpoint back and replays the log's
//! tail through [`NodeStorage::apply`], the function that made the changes the first time.
//!
//! Layout of a node's directory: `log/` (segments, `log-<lsn>.wal`) and `checkpoint/`
//! (`checkpoint-<lsn>.manifest` and one `.part` file per partition copy and version).

use crate::node::storage::{Change, NodeStorage};
use crate::node::versioned;
use crate::wire::messages::{CatalogBytes, TableLayout, WritePrepare};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use weir_operators::storage::PartitionData;
use weir_operators::table_store::TableStore;
use weir_storage::checkpoint::{Checkpoints, PartitionImage};
use weir_storage::disk::{Disk, RealDisk};
use weir_storage::log::{Log, OnDurable};
use weir_storage::{Durability, Result, StorageError};

/// Default log bytes after which a node writes a checkpoint.
pub const DEFAULT_CHECKPOINT_BYTES: u64 = 64 << 20;

/// Where and how a node keeps its storage on disk.
#[derive(Clone)]
pub struct JournalConfig {
    /// The node's directory.
    pub dir: PathBuf,
    /// What acknowledged means.
    pub durability: Durability,
    /// Log bytes after which a checkpoint is written.
    pub checkpoint_bytes: u64,
    /// The file system (a faulty one in tests).
    pub disk: Arc<dyn Disk>,
}

impl std::fmt::Debug for JournalConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JournalConfig")
            .field("dir", &self.dir)
            .field("durability", &self.durability)
            .field("checkpoint_bytes", &self.checkpoint_bytes)
            .finish()
    }
}

impl JournalConfig {
    /// A node directory `dir` on the real disk, acknowledged as `durability` says.
    pub fn new(dir: impl Into<PathBuf>, durability: Durability) -> Self {
        JournalConfig {
            dir: dir.into(),
            durability,
            checkpoint_bytes: DEFAULT_CHECKPOINT_BYTES,
            disk: Arc::new(RealDisk),
        }
    }
}

/// What a checkpoint keeps besides the partitions' rows.
#[derive(Debug, Default, Serialize, Deserialize)]
struct CheckpointMeta {
    /// Every stored table's layout (the partitions' schema, key and indexes).
    tables: Vec<TableLayout>,
    /// Writes prepared and not yet decided.
    prepared: Vec<WritePrepare>,
    /// Writes committed lately.
    committed: Vec<u64>,
    /// Writes aborted lately.
    aborted: Vec<u64>,
    /// The catalog copy.
    catalog: Option<(u64, CatalogBytes)>,
}

/// What a node found on disk at start.
#[derive(Debug, Default)]
pub struct Recovery {
    /// Bytes of checkpoint read.
    pub checkpoint_bytes: u64,
    /// Log records replayed.
    pub records: u64,
    /// Replayed records that did not apply (they did not the first time either).
    pub refused: u64,
    /// How long it took.
    pub took: std::time::Duration,
}

/// A node's log and checkpoints (see the module docs).
pub struct Journal {
    log: Log,
    checkpoints: Checkpoints,
    /// Log bytes since the last checkpoint began.
    since: AtomicU64,
    checkpoint_bytes: u64,
    checkpointing: AtomicBool,
    /// The buffer records are encoded in, kept between them: a fresh one per record made the
    /// kernel zero new pages for every large write.
    scratch: Mutex<Vec<u8>>,
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal").field("log", &self.log).finish()
    }
}

/// The format of the log's records this build writes (see [`versioned`]): 1, the first
/// numbered (the records before had no number).
pub const RECORD_FORMAT: u8 = 1;

/// The format of the checkpoints' metadata this build writes: 1, the first numbered.
pub const CHECKPOINT_META_FORMAT: u8 = 1;

/// Encodes `change` into `out` (cleared first).
fn encode_into(change: &Change, out: &mut Vec<u8>) -> Result<()> {
    versioned::encode_into(RECORD_FORMAT, change, out).map_err(|e| StorageError::Closed {
        path: PathBuf::new(),
        reason: format!("cannot encode a change: {e}"),
    })
}

/// Largest encoding buffer a journal keeps between records.
const KEPT_SCRATCH_BYTES: usize = 16 << 20;

fn decode(dir: &Path, lsn: u64, bytes: &[u8]) -> Result<Change> {
    versioned::decode(RECORD_FORMAT, bytes)
        .map_err(|e| StorageError::corrupt(dir, lsn, format!("a record does not decode: {e}")))
}

/// The layout of a stored table, from one of its partitions and its store.
fn layout_of(table: &str, store: &TableStore) -> Option<TableLayout> {
    let (_, part) = store.partitions().next()?;
    Some(TableLayout {
        table: table.to_string(),
        schema: part.schema().clone(),
        primary_key: part.primary_key().to_vec(),
        indexed: store.indexed_columns(),
    })
}

impl Journal {
    /// Opens the node's directory: reads its last checkpoint back and replays its log's tail.
    /// Returns the journal and the storage it recovered.
    pub fn open(config: &JournalConfig) -> Result<(Journal, NodeStorage, Recovery)> {
        let started = std::time::Instant::now();
        let disk = config.disk.clone();
        disk.create_dir_all(&config.dir)?;
        let checkpoints = Checkpoints::open(disk.clone(), &config.dir.join("checkpoint"))?;
        let mut storage = NodeStorage::default();
        let mut recovery = Recovery::default();
        let mut from_lsn = 0;
        if let Some(loaded) = checkpoints.load()? {
            let meta: CheckpointMeta =
                versioned::decode(CHECKPOINT_META_FORMAT, &loaded.manifest.meta).map_err(|e| {
                    StorageError::corrupt(&config.dir, 0, format!("checkpoint metadata: {e}"))
                })?;
            for layout in &meta.tables {
                storage.tables.insert(
                    layout.table.clone(),
                    TableStore::new(&layout.schema.types(), &layout.indexed),
                );
            }
            for (entry, batches) in loaded.manifest.parts.iter().zip(loaded.rows) {
                if !batches.is_empty() {
                    let layout = meta
                        .tables
                        .iter()
                        .find(|t| t.table == entry.table)
                        .ok_or_else(|| {
                            StorageError::corrupt(
                                &config.dir,
                                0,
                                format!("no layout for table {:?} in the checkpoint", entry.table),
                            )
                        })?;
                    let mut part = PartitionData::new(layout.schema.clone(), &layout.primary_key);
                    for b in &batches {
                        part.insert(b).map_err(|e| {
                            StorageError::corrupt(
                                &config.dir,
                                0,
                                format!("partition {} of {}: {e}", entry.partition, entry.table),
                            )
                        })?;
                    }
                    if let Some(store) = storage.tables.get_mut(&entry.table) {
                        store.put(entry.partition, part);
                    }
                }
                storage.restore_version(&entry.table, entry.partition, entry.version);
            }
            for req in meta.prepared {
                storage.restore_prepared(req);
            }
            storage.restore_finished(meta.committed, meta.aborted);
            if let Some((epoch, catalog)) = meta.catalog {
                let _ = storage.apply(Change::Catalog { epoch, catalog });
            }
            recovery.checkpoint_bytes = loaded.bytes;
            from_lsn = loaded.manifest.lsn;
        }
        let log_dir = config.dir.join("log");
        let log = Log::open(
            disk,
            &log_dir,
            config.durability,
            from_lsn,
            |lsn, payload| {
                let change = decode(&log_dir, lsn, payload)?;
                recovery.records += 1;
                if let Err(e) = storage.apply(change) {
                    recovery.refused += 1;
                    tracing::debug!(
                        "{}: a replayed change did not apply: {e}",
                        log_dir.display()
                    );
                }
                Ok(())
            },
        )?;
        recovery.took = started.elapsed();
        let journal = Journal {
            log,
            checkpoints,
            since: AtomicU64::new(0),
            checkpoint_bytes: config.checkpoint_bytes.max(1),
            checkpointing: AtomicBool::new(false),
            scratch: Mutex::new(Vec::new()),
        };
        Ok((journal, storage, recovery))
    }

    /// What acknowledged means for this node.
    pub fn durability(&self) -> Durability {
        self.log.durability()
    }

    /// Appends `change` to the log (the caller holds the storage's write lock, and makes the
    /// change right after); returns its LSN.
    pub fn record(&self, change: &Change) -> Result<u64> {
        let mut scratch = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
        encode_into(change, &mut scratch)?;
        let lsn = self.log.append(&scratch)?;
        self.since
            .fetch_add(scratch.len() as u64, Ordering::Relaxed);
        if scratch.capacity() > KEPT_SCRATCH_BYTES {
            *scratch = Vec::new();
        }
        Ok(lsn)
    }

    /// Calls `done` once the change at `lsn` is durable (see
    /// [`weir_storage::log::Log::when_durable`]).
    pub fn when_durable(&self, lsn: u64, done: OnDurable) {
        self.log.when_durable(lsn, done);
    }

    /// Waits until the change at `lsn` is durable.
    pub fn sync(&self, lsn: u64) -> Result<()> {
        self.log.sync(lsn)
    }

    /// Whether enough was logged since the last checkpoint for a new one, and none runs: the
    /// caller then runs [`Journal::checkpoint`] (in the background).
    pub fn wants_checkpoint(&self) -> bool {
        self.since.load(Ordering::Relaxed) >= self.checkpoint_bytes
            && self
                .checkpointing
                .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
    }

    /// Writes a checkpoint of `storage` now, after the one running, if any.
    pub fn checkpoint_now(&self, storage: &RwLock<NodeStorage>) -> Result<u64> {
        while self
            .checkpointing
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        self.checkpoint(storage)
    }

    /// Writes a checkpoint of `storage`: its partitions are taken under the read lock (their
    /// rows are shared, so this is a copy of pointers), written without it, and the log behind
    /// the older kept checkpoint is removed. Returns the bytes written.
    pub fn checkpoint(&self, storage: &RwLock<NodeStorage>) -> Result<u64> {
        let result = self.write_checkpoint(storage);
        self.checkpointing.store(false, Ordering::SeqCst);
        result
    }

    fn write_checkpoint(&self, storage: &RwLock<NodeStorage>) -> Result<u64> {
        let (lsn, meta, parts) = {
            let storage = storage.read().unwrap_or_else(|e| e.into_inner());
            // Changes are logged and made under the write lock: what this read sees is
            // exactly the log up to its end.
            let lsn = self.log.end();
            self.since.store(0, Ordering::Relaxed);
            let (committed, aborted) = storage.finished();
            let mut meta = CheckpointMeta {
                prepared: storage.prepared().cloned().collect(),
                committed,
                aborted,
                catalog: storage.catalog().cloned(),
                ..CheckpointMeta::default()
            };
            let mut parts = Vec::new();
            for (table, versions) in storage.versions() {
                let store = storage.tables.get(table);
                if let Some(layout) = store.and_then(|s| layout_of(table, s)) {
                    meta.tables.push(layout);
                }
                for (&p, &version) in versions {
                    parts.push(PartitionImage {
                        table: table.to_string(),
                        partition: p,
                        version,
                        batches: store
                            .and_then(|s| s.get(p))
                            .map(PartitionData::chunks)
                            .unwrap_or_default(),
                    });
                }
            }
            (lsn, meta, parts)
        };
        let mut encoded = Vec::new();
        versioned::encode_into(CHECKPOINT_META_FORMAT, &meta, &mut encoded).map_err(|e| {
            StorageError::Closed {
                path: PathBuf::new(),
                reason: format!("cannot encode the checkpoint's metadata: {e}"),
            }
        })?;
        let meta = encoded;
        let written = self.checkpoints.write(lsn, meta, parts)?;
        self.log.remove_before(self.checkpoints.keep_log_from()?)?;
        Ok(written)
    }
}
