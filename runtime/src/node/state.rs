//! Per-node state shared between the node's actors and the client API: identity, storage
//! (and its journal on disk), memory pool, running joins and live-actor count.

use crate::memory::breaker::{BreakerConfig, JoinMode};
use crate::memory::joins::RunningJoins;
use crate::memory::pool::NodePool;
use crate::memory::view::NodeView;
use crate::node::inbox::InboxCount;
use crate::node::journal::{Journal, JournalConfig, Recovery};
use crate::node::storage::{Change, NodeStorage};
use crate::wire::ids::NodeId;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use weir_operators::spill::SpillSpace;
use weir_storage::StorageError;

/// State of one node, shared by its actors and the cluster handle.
#[derive(Debug)]
pub struct NodeShared {
    /// Node index.
    pub id: NodeId,
    /// Display name (`node-0`, ..., `client`).
    pub name: String,
    /// Whether the node holds data.
    pub is_data: bool,
    /// Stored partitions, and the writes under way. Changed only through
    /// [`NodeShared::change`].
    pub storage: RwLock<NodeStorage>,
    /// The node's log and checkpoints, when it has a data directory.
    pub journal: Option<Journal>,
    /// The checkpoint running in the background, if any.
    checkpointer: Mutex<Option<JoinHandle<()>>>,
    /// Accounted memory.
    pub pool: Arc<NodePool>,
    /// Actors alive on the node now.
    pub live_actors: AtomicUsize,
    /// Whether the node is up.
    pub up: AtomicBool,
    /// Highest high-water mark of any edge of a finished fragment on this node.
    pub edge_high_water: AtomicUsize,
    /// The hash joins running on the node under its memory circuit breaker.
    pub joins: RunningJoins,
    /// Protocol messages handed to the node's actor and handled by it.
    pub inbox: Arc<InboxCount>,
    /// Where its operators spill when refused memory (`None`: they fail instead).
    pub spill: Option<Arc<SpillSpace>>,
    /// What its scans of external tables read and skipped.
    pub external: Arc<weir_io::external::ScanCounters>,
    /// Whether its hash joins send filters of their build keys to their probe side's senders
    /// (on unless [`ClusterBuilder::join_filters`](crate::ClusterBuilder::join_filters)
    /// turned them off).
    pub join_filters: AtomicBool,
    /// Rows its exchange senders dropped by the receivers' join key filters.
    pub filtered_rows: AtomicU64,
}

impl NodeShared {
    /// The state of node `id` named `name` as it starts: up, empty, with a pool of `budget`
    /// bytes under `mode` and `breaker`.
    pub fn new(
        id: NodeId,
        name: &str,
        is_data: bool,
        budget: usize,
        mode: JoinMode,
        breaker: &BreakerConfig,
    ) -> Self {
        NodeShared {
            id,
            name: name.to_string(),
            is_data,
            storage: RwLock::new(NodeStorage::default()),
            journal: None,
            checkpointer: Mutex::new(None),
            pool: NodePool::new(name.to_string(), budget, mode, breaker),
            live_actors: AtomicUsize::new(0),
            up: AtomicBool::new(true),
            edge_high_water: AtomicUsize::new(0),
            joins: RunningJoins::default(),
            inbox: Arc::default(),
            spill: None,
            external: Arc::default(),
            join_filters: AtomicBool::new(true),
            filtered_rows: AtomicU64::new(0),
        }
    }

    /// [`NodeShared::new`] for a node with a data directory: its storage read back from
    /// `journal` (its last checkpoint and its log's tail), and every later change logged there.
    pub fn open(
        id: NodeId,
        name: &str,
        is_data: bool,
        budget: usize,
        mode: JoinMode,
        breaker: &BreakerConfig,
        journal: &JournalConfig,
    ) -> Result<(Self, Recovery), StorageError> {
        let (journal, storage, recovery) = Journal::open(journal)?;
        let mut node = NodeShared::new(id, name, is_data, budget, mode, breaker);
        node.storage = RwLock::new(storage);
        node.journal = Some(journal);
        Ok((node, recovery))
    }

    /// Makes `change` to the node's storage, logged first when the node has a data
    /// directory; returns the LSN to wait for before the change counts as durable (`None`: in
    /// memory only). A change the log cannot take is not made (but an abort, which only drops
    /// held rows, is made in memory even then).
    pub fn change(&self, change: Change) -> Result<Option<u64>, ChangeError> {
        let mut storage = self.storage.write().unwrap_or_else(|e| e.into_inner());
        let lsn = match &self.journal {
            Some(journal) => match journal.record(&change) {
                Ok(lsn) => Some(lsn),
                Err(e) if matches!(change, Change::Aborted { .. }) => {
                    let _ = storage.apply(change);
                    return Err(ChangeError::Disk(e));
                }
                Err(e) => return Err(ChangeError::Disk(e)),
            },
            None => None,
        };
        storage.apply(change).map_err(ChangeError::Refused)?;
        Ok(lsn)
    }

    /// [`NodeShared::change`], waiting until the change is durable.
    pub fn change_durably(&self, change: Change) -> Result<(), ChangeError> {
        if let (Some(lsn), Some(journal)) = (self.change(change)?, &self.journal) {
            journal.sync(lsn).map_err(ChangeError::Disk)?;
        }
        Ok(())
    }

    /// Writes a checkpoint of the node's storage on a thread of its own when enough was
    /// logged since the last one.
    pub fn maybe_checkpoint(self: &Arc<Self>) {
        let Some(journal) = &self.journal else {
            return;
        };
        if !journal.wants_checkpoint() {
            return;
        }
        let mut running = self.checkpointer.lock().unwrap_or_else(|e| e.into_inner());
        // The last one has ended (the journal lets one run at a time): collect it.
        if let Some(done) = running.take() {
            let _ = done.join();
        }
        let node = self.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("weir-checkpoint-{}", self.name))
            .spawn(move || {
                if let Some(journal) = &node.journal {
                    match journal.checkpoint(&node.storage) {
                        Ok(bytes) => {
                            tracing::debug!(node = %node.name, bytes, "checkpoint written")
                        }
                        Err(e) => tracing::warn!(node = %node.name, "checkpoint failed: {e}"),
                    }
                }
            });
        match spawned {
            Ok(handle) => *running = Some(handle),
            Err(e) => tracing::warn!(node = %self.name, "cannot start a checkpoint: {e}"),
        }
    }

    /// Waits for the checkpoint running in the background, if any (a node that stops lets it
    /// finish before its directory can be opened again).
    pub fn finish_checkpoint(&self) {
        let running = self
            .checkpointer
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(handle) = running {
            let _ = handle.join();
        }
    }

    /// Writes a checkpoint of the node's storage now (after the one running, if any), when it
    /// has a data directory. Returns the bytes written.
    pub fn checkpoint(&self) -> Result<u64, StorageError> {
        self.finish_checkpoint();
        match &self.journal {
            Some(journal) => journal.checkpoint_now(&self.storage),
            None => Ok(0),
        }
    }

    /// Whether the node is up.
    pub fn is_up(&self) -> bool {
        self.up.load(Ordering::SeqCst)
    }

    /// Live actors now.
    pub fn live(&self) -> usize {
        self.live_actors.load(Ordering::SeqCst)
    }
}

/// Counts an actor as alive on its node from creation until it is dropped.
#[derive(Debug)]
pub struct LiveGuard(Arc<NodeShared>);

impl LiveGuard {
    /// Counts one more live actor on `node`.
    pub fn new(node: &Arc<NodeShared>) -> Self {
        node.live_actors.fetch_add(1, Ordering::SeqCst);
        LiveGuard(node.clone())
    }

    /// The node it counts on.
    pub fn node(&self) -> &Arc<NodeShared> {
        &self.0
    }
}

impl Drop for LiveGuard {
    fn drop(&mut self) {
        self.0.live_actors.fetch_sub(1, Ordering::SeqCst);
    }
}

impl NodeView for NodeShared {
    fn id(&self) -> NodeId {
        self.id
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn pool(&self) -> &Arc<NodePool> {
        &self.pool
    }

    fn joins(&self) -> &RunningJoins {
        &self.joins
    }

    fn is_up(&self) -> bool {
        NodeShared::is_up(self)
    }
}

/// Why a change to a node's storage was not made.
#[derive(Debug, Clone, PartialEq)]
pub enum ChangeError {
    /// The node's log could not take it (its disk failed).
    Disk(StorageError),
    /// The change does not apply to what the node stores.
    Refused(String),
}

impl std::fmt::Display for ChangeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChangeError::Disk(e) => write!(f, "{e}"),
            ChangeError::Refused(why) => f.write_str(why),
        }
    }
}
