//! The catalog log: the cluster's catalog kept by the data nodes of a cluster of processes
//! in a replicated log (Raft, by the `openraft` crate), so that it survives the loss of a
//! minority of them and every client, connecting at any time, sees the same one.
//!
//! - **Changes are compare-and-set.** A client proposes a new catalog together with the epoch
//!   of the one it was derived from ([`Proposal::Schema`]); the log takes it only if that is
//!   still its epoch, and every node decides alike since they apply the same entries in the
//!   same order ([`machine`]). A client with a stale view is refused
//!   ([`Decision::Stale`]), fetches the catalog again and retries: two clients can no longer
//!   drop each other's tables.
//! - **It records what writes did to the copies**: partitions' first writes, starts of data
//!   nodes without their data, copies that missed a committed write, and their repairs
//!   ([`Proposal::Written`], [`Proposal::Started`], [`Proposal::Missed`],
//!   [`Proposal::Repaired`]), so that every client knows which copies are lost or behind
//!   (`cluster/lost.rs`).
//! - **Any data node takes a proposal** ([`CatalogPropose`]); one that is not the leader
//!   names the leader it knows ([`Decision::NotLeader`]) and the client asks it.
//! - **Raft's RPCs travel on weir's network** ([`peers`]), between data nodes only: a call
//!   from any other sender is refused and counted.
//! - **What a node stores:** its log and vote ([`log_store`]) and the snapshots Raft folds the
//!   log into ([`machine`]), in memory, and in files of its data directory when it has one
//!   ([`disk`]). A data node without a data directory that restarts comes back with an empty
//!   log: it forgot the entries it acknowledged and the vote it gave, so until it has caught
//!   up from a leader (its log reaches the commit index a leader sent it) it neither votes
//!   nor stands for election, as a learner would; counting it earlier could elect a leader
//!   without entries already committed, or two leaders in one term. The one vote it gives
//!   meanwhile is to a candidate whose log reaches the highest index a client has seen
//!   (`Join::log_index`), so that a cluster whose other node without its data is gone for
//!   good can still elect the member that kept the log. Such a node takes back a
//!   log shorter than the leader remembers it having (the `openraft` feature
//!   `loosen-follower-log-revert`). Safety then assumes a majority of the data nodes did not
//!   restart without their data at once (with data directories, Raft's usual guarantees
//!   hold).
//!
//! The members are the data nodes a client's `Join` names; the member of the lowest id
//! initialises the log with them when it first hears of them, if it holds no log and the
//! client has not seen the log hold entries (`Join::log_index` is 0: else the log exists on
//! the others, and it catches up from them), and the others learn them from it.

pub mod disk;
pub mod lease;
pub mod log_store;
pub mod machine;
pub mod peers;
pub mod types;

use self::disk::LogFile;
use self::lease::Lease;
use self::log_store::LogStore;
use self::machine::{Machine, OnCatalog};
use self::peers::{Calls, Peers};
use self::types::{Applied, CatalogState, LogTypes};
use crate::error::{Error, Result};
use crate::replication::catalog_bytes::decode_catalog;
use crate::wire::codec;
use crate::wire::ids::NodeId;
use crate::wire::messages::{
    CatalogDecided, CatalogPropose, Decision, NetMessage, Proposal, RaftAnswer, RaftBytes,
    RaftCall, RaftRpc,
};
use crate::wire::network::Network;
use openraft::error::{ClientWriteError, RaftError};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, VoteRequest,
};
use openraft::{Raft, SnapshotPolicy};
use serde::Serialize;
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The Raft settings of the catalog log: heartbeats every 150 ms, an election after
/// 0.75–1.5 s without one (a node whose process is starved of CPU for a moment does not depose a live
/// leader), a snapshot every 200 entries (keeping the log, written whole on a node with a
/// data directory, short).
pub fn raft_config() -> openraft::Config {
    openraft::Config {
        cluster_name: "weir-catalog".into(),
        heartbeat_interval: 150,
        election_timeout_min: 750,
        election_timeout_max: 1500,
        install_snapshot_timeout: 2000,
        snapshot_policy: SnapshotPolicy::LogsSinceLast(200),
        max_in_snapshot_log_to_keep: 50,
        ..Default::default()
    }
}

/// One data node's part of the catalog log (see the module comment).
pub struct CatalogLog {
    id: NodeId,
    raft: Raft<LogTypes>,
    runtime: Mutex<Option<tokio::runtime::Runtime>>,
    handle: tokio::runtime::Handle,
    calls: Arc<Calls>,
    network: Arc<Network>,
    machine: Machine,
    members: Mutex<Option<BTreeSet<NodeId>>>,
    refused: Arc<AtomicU64>,
    /// Whether the node votes and stands for election: from the start when it read a log
    /// back, else once it caught up from a leader or the log is new (see the module comment).
    voting: Arc<AtomicBool>,
    /// The highest index of the log a client's `Join` named.
    known_index: Arc<AtomicU64>,
    /// The node's read lease ([`lease`]).
    lease: Arc<Lease>,
}

impl std::fmt::Debug for CatalogLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CatalogLog")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl CatalogLog {
    /// Starts node `id`'s part of the log, sending on `network`. With `dir`, its log, vote
    /// and snapshots are kept in files there (synced when `sync`), and read back now.
    /// `on_catalog` is called with every catalog the node takes, in order (also with the
    /// one a snapshot read back holds).
    pub fn start(
        id: NodeId,
        network: Arc<Network>,
        dir: Option<(&Path, bool)>,
        on_catalog: OnCatalog,
    ) -> Result<Arc<Self>> {
        let disk = |e: std::io::Error| Error::Disk {
            node: format!("node-{id}"),
            message: format!("the catalog log: {e}"),
        };
        let (log, machine) = match dir {
            Some((dir, sync)) => {
                let dir = dir.join("catalog-log");
                std::fs::create_dir_all(&dir).map_err(disk)?;
                let log =
                    LogStore::on_disk(LogFile::new(dir.join("log.bin"), sync)).map_err(disk)?;
                let machine = Machine::new(
                    on_catalog,
                    Some(LogFile::new(dir.join("snapshot.bin"), sync)),
                )
                .map_err(disk)?;
                (log, machine)
            }
            None => (
                LogStore::in_memory(),
                Machine::new(on_catalog, None).map_err(disk)?,
            ),
        };
        let voting = Arc::new(AtomicBool::new(!log.is_empty()));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name(format!("weir-catalog-log-{id}"))
            .enable_all()
            .build()
            .map_err(|e| Error::Invalid(format!("cannot start the catalog log: {e}")))?;
        let calls = Arc::new(Calls::default());
        let peers = Peers {
            id,
            network: network.clone(),
            calls: calls.clone(),
        };
        let config = raft_config()
            .validate()
            .map_err(|e| Error::Invalid(format!("the catalog log's settings: {e}")))?;
        let raft = runtime
            .block_on(Raft::new(
                id as u64,
                Arc::new(config),
                peers,
                log,
                machine.clone(),
            ))
            .map_err(|e| Error::Invalid(format!("cannot start the catalog log: {e}")))?;
        if !voting.load(Ordering::SeqCst) {
            raft.runtime_config().elect(false);
        }
        let lease = Arc::new(Lease::default());
        runtime.spawn(lease::renew(
            raft.clone(),
            Peers {
                id,
                network: network.clone(),
                calls: calls.clone(),
            },
            lease.clone(),
        ));
        Ok(Arc::new(CatalogLog {
            id,
            raft,
            handle: runtime.handle().clone(),
            runtime: Mutex::new(Some(runtime)),
            calls,
            network,
            machine,
            members: Mutex::new(None),
            refused: Arc::default(),
            voting,
            known_index: Arc::default(),
            lease,
        }))
    }

    /// The log's members are the data nodes `members`; `log_index` is the highest index of
    /// the log the client has seen (0: none). The first time it hears of them, the member of
    /// the lowest id initialises the log with them if it holds no log yet and the log has not
    /// started; the others wait to hear from a leader. A node that holds no log votes at once
    /// only while the log has not started (its first election); else not before it has
    /// caught up, but for a candidate whose log reaches `log_index`.
    pub fn join(&self, members: &[NodeId], log_index: u64) {
        let log_started = log_index > 0;
        self.known_index.fetch_max(log_index, Ordering::SeqCst);
        if !log_started {
            allow_voting(&self.voting, &self.raft);
        }
        let members: BTreeSet<NodeId> = members.iter().copied().collect();
        {
            let mut known = self.members.lock().unwrap_or_else(|e| e.into_inner());
            if known.as_ref() == Some(&members) {
                return;
            }
            *known = Some(members.clone());
        }
        if members.first() != Some(&self.id) || log_started {
            return;
        }
        let raft = self.raft.clone();
        let id = self.id;
        self.handle.spawn(async move {
            match raft.is_initialized().await {
                Ok(false) => {
                    let ids: BTreeSet<u64> = members.iter().map(|&m| m as u64).collect();
                    if let Err(e) = raft.initialize(ids).await {
                        tracing::debug!("node-{id}: the catalog log was not initialised: {e}");
                    }
                }
                Ok(true) => {}
                Err(e) => tracing::warn!("node-{id}: the catalog log stopped: {e}"),
            }
        });
    }

    /// Whether the node votes and stands for election (see the module comment).
    pub fn is_voting(&self) -> bool {
        self.voting.load(Ordering::SeqCst)
    }

    /// The data node this is part of.
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// Whether `node` is a member (a data node named by a client's `Join`).
    fn is_member(&self, node: NodeId) -> bool {
        self.members
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .is_some_and(|m| m.contains(&node))
    }

    /// Raft calls refused so far (from a sender that is not a data node of the log, or whose
    /// request does not decode).
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// Serves a Raft call from `from`, answering it on the network.
    pub fn call(&self, from: NodeId, call: RaftCall) {
        if !self.is_member(from) || from == self.id {
            self.refused.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(
                "node-{}: refused a catalog log call from node {from}, not a data node of the log",
                self.id
            );
            return;
        }
        let raft = self.raft.clone();
        let network = self.network.clone();
        let me = self.id;
        let bytes = call.request.0;
        let answer = move |encoded: Result<Vec<u8>>| match encoded {
            Ok(answer) => {
                let msg = NetMessage::RaftAnswer(Box::new(RaftAnswer {
                    call: call.call,
                    answer: RaftBytes(answer),
                }));
                network.send(me, from, &msg);
                true
            }
            Err(e) => {
                tracing::warn!("node-{me}: a catalog log call from node {from}: {e}");
                false
            }
        };
        let refused = self.refused.clone();
        let voting = self.voting.clone();
        let known_index = self.known_index.load(Ordering::SeqCst);
        self.handle.spawn(async move {
            let encoded = match call.rpc {
                RaftRpc::Append => match codec::decode::<AppendEntriesRequest<LogTypes>>(&bytes) {
                    Ok(req) => {
                        let reached = req
                            .entries
                            .last()
                            .map(|e| e.log_id)
                            .or(req.prev_log_id)
                            .map(|l| l.index);
                        let commit = req.leader_commit.map(|l| l.index);
                        let answer = raft.append_entries(req).await;
                        if matches!(answer, Ok(AppendEntriesResponse::Success)) && commit <= reached
                        {
                            allow_voting(&voting, &raft);
                        }
                        encode(&answer)
                    }
                    Err(e) => Err(e),
                },
                RaftRpc::Vote => match codec::decode::<VoteRequest<u64>>(&bytes) {
                    // A node that forgot its log and vote does not vote until it caught up,
                    // but for a candidate whose log reaches what a client has seen: the
                    // candidate hears nothing from it, as from a node that is down.
                    Ok(req)
                        if !voting.load(Ordering::SeqCst)
                            && req.last_log_id.map_or(0, |l| l.index) < known_index.max(1) =>
                    {
                        tracing::debug!("node-{me}: no vote for node {from} before catching up");
                        return;
                    }
                    Ok(req) => encode(&raft.vote(req).await),
                    Err(e) => Err(e),
                },
                RaftRpc::Snapshot => {
                    match codec::decode::<InstallSnapshotRequest<LogTypes>>(&bytes) {
                        Ok(req) => encode(&raft.install_snapshot(req).await),
                        Err(e) => Err(e),
                    }
                }
                // A read index for the caller's lease: only a leader that a quorum still
                // follows gives one.
                RaftRpc::ReadIndex => encode(
                    &raft
                        .ensure_linearizable()
                        .await
                        .map(|read| read.map(|l| l.index))
                        .map_err(|e| e.to_string()),
                ),
            };
            if !answer(encoded) {
                refused.fetch_add(1, Ordering::Relaxed);
            }
        });
    }

    /// Hands an answer to the call that waits for it.
    pub fn answer(&self, from: NodeId, answer: RaftAnswer) {
        if !self.calls.answer(answer) {
            tracing::debug!(
                "node-{}: a catalog log answer from node {from} nobody waits for",
                self.id
            );
        }
    }

    /// Serves a client's proposal: the leader appends it to the log and answers once it is
    /// applied; another node names the leader.
    pub fn propose(&self, from: NodeId, propose: CatalogPropose) {
        let raft = self.raft.clone();
        let network = self.network.clone();
        let me = self.id;
        let CatalogPropose { request, proposal } = propose;
        self.handle.spawn(async move {
            let (decision, index) = match check(&proposal) {
                Err(why) => (Decision::Malformed(why), 0),
                Ok(()) => match raft.client_write(proposal).await {
                    Ok(written) => (
                        match written.data {
                            Applied::Accepted { epoch } => Decision::Accepted { epoch },
                            Applied::Recorded => Decision::Recorded,
                            Applied::Stale { epoch } => Decision::Stale { epoch },
                            Applied::Malformed(why) => Decision::Malformed(why),
                            Applied::Nothing => {
                                Decision::Failed("the entry changed nothing".into())
                            }
                        },
                        written.log_id.index,
                    ),
                    Err(RaftError::APIError(ClientWriteError::ForwardToLeader(to))) => (
                        Decision::NotLeader {
                            leader: to.leader_id.and_then(|l| NodeId::try_from(l).ok()),
                        },
                        0,
                    ),
                    Err(e) => (Decision::Failed(e.to_string()), 0),
                },
            };
            let msg = NetMessage::CatalogDecided(CatalogDecided {
                request,
                decision,
                index,
            });
            network.send(me, from, &msg);
        });
    }

    /// Whether this node holds a read lease ([`lease`]) now; why not, if it does not.
    pub fn check_lease(&self) -> std::result::Result<(), String> {
        self.lease.check()
    }

    /// Renews the node's read lease now rather than at the next tick.
    pub fn renew_lease(&self) {
        self.lease.wake();
    }

    /// Whether the log counts none of this node's copies of `partitions` of `table` (all of
    /// its copies of the table when `None`) lost or behind; which one, if it does.
    pub fn check_copies(
        &self,
        table: &str,
        partitions: Option<&[u32]>,
    ) -> std::result::Result<(), String> {
        self.machine.with_state(|state| {
            let Some(lost) = state.lost.get(&self.id).and_then(|t| t.get(table)) else {
                return Ok(());
            };
            let first = match partitions {
                Some(partitions) => partitions.iter().find(|p| lost.contains(p)),
                None => lost.first(),
            };
            match first {
                None => Ok(()),
                Some(p) => Err(format!(
                    "the catalog log counts its copy of partition {p} of {table} lost or \
                     behind (it missed writes, or the node started without its data)"
                )),
            }
        })
    }

    /// The catalog as this node's copy of the log has applied it.
    pub fn state(&self) -> CatalogState {
        self.machine.state()
    }

    /// [`CatalogLog::state`], with the index of the last entry applied.
    pub fn applied(&self) -> (CatalogState, u64) {
        self.machine.applied()
    }

    /// Stops the node's part of the log.
    pub fn shutdown(&self) {
        let runtime = self
            .runtime
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(runtime) = runtime {
            let _ = runtime.block_on(self.raft.shutdown());
            runtime.shutdown_background();
        }
    }
}

impl Drop for CatalogLog {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// A proposal's catalog must decode, and a record name a table, before it goes into the log.
fn check(proposal: &Proposal) -> std::result::Result<(), String> {
    match proposal {
        Proposal::Schema { catalog, .. } => decode_catalog(catalog)
            .map(|_| ())
            .map_err(|e| e.to_string()),
        Proposal::Written { table, .. }
        | Proposal::Missed { table, .. }
        | Proposal::Repaired { table, .. }
            if table.is_empty() =>
        {
            Err("a record names no table".into())
        }
        Proposal::Missed {
            partitions,
            versions,
            ..
        }
        | Proposal::Repaired {
            partitions,
            versions,
            ..
        } if !versions.is_empty() && versions.len() != partitions.len() => Err(format!(
            "a record names {} partitions and {} versions",
            partitions.len(),
            versions.len()
        )),
        Proposal::Written { .. }
        | Proposal::Started { .. }
        | Proposal::Missed { .. }
        | Proposal::Repaired { .. } => Ok(()),
    }
}

/// From now on the node votes and stands for election (see the module comment).
fn allow_voting(voting: &AtomicBool, raft: &Raft<LogTypes>) {
    if !voting.swap(true, Ordering::SeqCst) {
        raft.runtime_config().elect(true);
    }
}

fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>> {
    codec::encode(value)
}
