//! The catalog log's state machine on one data node: applies the log's entries in order to
//! the [`CatalogState`] (a schema proposal is taken only if it expected the current epoch),
//! tells the node of every catalog it takes (the node drops tables the catalog no longer
//! has and builds the indexes it names), and keeps the snapshots Raft folds the log into
//! (in memory, and in the data directory when the node has one).

use super::disk::LogFile;
use super::types::{Applied, CatalogState, LogTypes, RECENT_PROPOSALS};
use crate::replication::catalog_bytes::decode_catalog;
use crate::wire::messages::{CatalogBytes, Proposal};
use openraft::storage::{RaftStateMachine, Snapshot};
use openraft::{
    EmptyNode, Entry, EntryPayload, LogId, RaftSnapshotBuilder, SnapshotMeta, StorageError,
    StorageIOError, StoredMembership,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::io::Cursor;
use std::sync::{Arc, Mutex, MutexGuard};

/// Called with every catalog the node's copy of the log takes, and its epoch.
pub type OnCatalog = Box<dyn Fn(u64, &CatalogBytes) + Send + Sync>;

/// A snapshot as kept: where it ends and the state it holds, encoded.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct KeptSnapshot {
    meta: SnapshotMeta<u64, EmptyNode>,
    data: Vec<u8>,
}

#[derive(Default)]
struct Inner {
    last_applied: Option<LogId<u64>>,
    membership: StoredMembership<u64, EmptyNode>,
    state: CatalogState,
    snapshot: Option<KeptSnapshot>,
    snapshots_built: u64,
}

/// The state machine (cheap to clone: clones share it).
#[derive(Clone)]
pub struct Machine {
    inner: Arc<Mutex<Inner>>,
    on_catalog: Arc<OnCatalog>,
    file: Option<LogFile>,
}

impl Machine {
    /// A state machine that calls `on_catalog` with every catalog it takes; with `file`, its
    /// snapshots are kept there, and the last one is read back now (and handed to
    /// `on_catalog`).
    pub fn new(on_catalog: OnCatalog, file: Option<LogFile>) -> std::io::Result<Self> {
        let mut inner = Inner::default();
        if let Some(kept) = file
            .as_ref()
            .map(|f| f.read::<KeptSnapshot>())
            .transpose()?
            .flatten()
        {
            let state: CatalogState = crate::wire::codec::decode(&kept.data)
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()))?;
            if let Some(catalog) = &state.catalog {
                on_catalog(state.epoch, catalog);
            }
            inner.last_applied = kept.meta.last_log_id;
            inner.membership = kept.meta.last_membership.clone();
            inner.state = state;
            inner.snapshot = Some(kept);
        }
        Ok(Machine {
            inner: Arc::new(Mutex::new(inner)),
            on_catalog: Arc::new(on_catalog),
            file,
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The catalog state as of the last entry applied here.
    pub fn state(&self) -> CatalogState {
        self.lock().state.clone()
    }

    /// What `f` reads of the catalog state as of the last entry applied here (without a
    /// copy of it).
    pub fn with_state<R>(&self, f: impl FnOnce(&CatalogState) -> R) -> R {
        f(&self.lock().state)
    }

    /// The catalog state as of the last entry applied here, and that entry's index (0 when
    /// none was).
    pub fn applied(&self) -> (CatalogState, u64) {
        let inner = self.lock();
        (
            inner.state.clone(),
            inner.last_applied.map_or(0, |id| id.index),
        )
    }

    /// Applies one proposal to `state`: the same decision on every node.
    fn decide(&self, state: &mut CatalogState, proposal: &Proposal) -> Applied {
        match proposal {
            Proposal::Schema {
                id,
                expected,
                catalog,
                backups,
            } => {
                if let Some(&(_, epoch)) = state.recent.iter().find(|(p, _)| p == id) {
                    // Sent again after its answer was lost: it made `epoch`.
                    return Applied::Accepted { epoch };
                }
                if *expected != state.epoch {
                    return Applied::Stale { epoch: state.epoch };
                }
                let tables: BTreeSet<String> = match decode_catalog(catalog) {
                    Ok(snapshot) => snapshot
                        .tables
                        .iter()
                        .map(|t| t.name.to_lowercase())
                        .collect(),
                    Err(e) => return Applied::Malformed(e.to_string()),
                };
                state.epoch += 1;
                state.catalog = Some(catalog.clone());
                if state.recent.len() == RECENT_PROPOSALS {
                    state.recent.remove(0);
                }
                state.recent.push((*id, state.epoch));
                state.backups.get_or_insert(*backups);
                forget_dropped(state, &tables);
                (self.on_catalog)(state.epoch, catalog);
                Applied::Accepted { epoch: state.epoch }
            }
            Proposal::Written {
                table,
                partitions,
                starts,
            } => {
                for &(node, incarnation) in starts {
                    state.starts.entry(node).or_insert(incarnation);
                }
                state
                    .written
                    .entry(table.clone())
                    .or_default()
                    .extend(partitions.iter().copied());
                Applied::Recorded
            }
            Proposal::Started { node, incarnation } => {
                if state.starts.insert(*node, *incarnation) != Some(*incarnation) {
                    // Every partition written so far had a copy there that is gone (whether
                    // the node holds one is the placement's business, not the log's).
                    state.lost.insert(*node, state.written.clone());
                    state.emptied.insert(*node, state.written.clone());
                }
                Applied::Recorded
            }
            Proposal::Missed {
                node,
                table,
                partitions,
                versions,
            } => {
                let lost = state
                    .lost
                    .entry(*node)
                    .or_default()
                    .entry(table.clone())
                    .or_default();
                let since = state
                    .behind_since
                    .entry(*node)
                    .or_default()
                    .entry(table.clone())
                    .or_default();
                for (i, &p) in partitions.iter().enumerate() {
                    lost.insert(p);
                    let version = versions.get(i).copied().unwrap_or(0);
                    let held = since.entry(p).or_insert(version);
                    *held = (*held).max(version);
                }
                Applied::Recorded
            }
            Proposal::Repaired {
                node,
                table,
                partitions,
                versions,
            } => {
                let since = state
                    .behind_since
                    .get_mut(node)
                    .and_then(|tables| tables.get_mut(table));
                let mut repaired = Vec::new();
                let mut since = since;
                for (i, &p) in partitions.iter().enumerate() {
                    let version = versions.get(i).copied().unwrap_or(u64::MAX);
                    let missed = since.as_ref().and_then(|s| s.get(&p)).copied().unwrap_or(0);
                    // Refreshed from a copy read before the last write it missed: still behind.
                    if version >= missed {
                        repaired.push(p);
                        if let Some(since) = since.as_mut() {
                            since.remove(&p);
                        }
                    }
                }
                if let Some(tables) = state.lost.get_mut(node) {
                    if let Some(lost) = tables.get_mut(table) {
                        for p in &repaired {
                            lost.remove(p);
                        }
                        if lost.is_empty() {
                            tables.remove(table);
                        }
                    }
                    if tables.is_empty() {
                        state.lost.remove(node);
                    }
                }
                if let Some(tables) = state.emptied.get_mut(node) {
                    if let Some(emptied) = tables.get_mut(table) {
                        for p in &repaired {
                            emptied.remove(p);
                        }
                    }
                    tables.retain(|_, emptied| !emptied.is_empty());
                    if tables.is_empty() {
                        state.emptied.remove(node);
                    }
                }
                if let Some(tables) = state.behind_since.get_mut(node) {
                    tables.retain(|_, since| !since.is_empty());
                    if tables.is_empty() {
                        state.behind_since.remove(node);
                    }
                }
                Applied::Recorded
            }
        }
    }
}

/// Forgets the writes and lost copies of tables no longer in the catalog (`tables`): a table
/// made again under the same name starts unwritten.
fn forget_dropped(state: &mut CatalogState, tables: &BTreeSet<String>) {
    state.written.retain(|t, _| tables.contains(t));
    for lost in state.lost.values_mut() {
        lost.retain(|t, _| tables.contains(t));
    }
    state.lost.retain(|_, lost| !lost.is_empty());
    for since in state.behind_since.values_mut() {
        since.retain(|t, _| tables.contains(t));
    }
    state.behind_since.retain(|_, since| !since.is_empty());
    for emptied in state.emptied.values_mut() {
        emptied.retain(|t, _| tables.contains(t));
    }
    state.emptied.retain(|_, emptied| !emptied.is_empty());
}

impl RaftSnapshotBuilder<LogTypes> for Machine {
    async fn build_snapshot(&mut self) -> Result<Snapshot<LogTypes>, StorageError<u64>> {
        let kept = {
            let mut inner = self.lock();
            let data = crate::wire::codec::encode(&inner.state)
                .map_err(|e| StorageIOError::read_state_machine(&e))?;
            inner.snapshots_built += 1;
            let snapshot_id = match inner.last_applied {
                Some(last) => format!(
                    "{}-{}-{}",
                    last.leader_id, last.index, inner.snapshots_built
                ),
                None => format!("--{}", inner.snapshots_built),
            };
            let kept = KeptSnapshot {
                meta: SnapshotMeta {
                    last_log_id: inner.last_applied,
                    last_membership: inner.membership.clone(),
                    snapshot_id,
                },
                data,
            };
            inner.snapshot = Some(kept.clone());
            kept
        };
        if let Some(file) = &self.file {
            file.write(&kept)
                .map_err(|e| StorageIOError::write_snapshot(Some(kept.meta.signature()), &e))?;
        }
        Ok(Snapshot {
            meta: kept.meta,
            snapshot: Box::new(Cursor::new(kept.data)),
        })
    }
}

impl RaftStateMachine<LogTypes> for Machine {
    type SnapshotBuilder = Self;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogId<u64>>, StoredMembership<u64, EmptyNode>), StorageError<u64>> {
        let inner = self.lock();
        Ok((inner.last_applied, inner.membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Applied>, StorageError<u64>>
    where
        I: IntoIterator<Item = Entry<LogTypes>> + Send,
        I::IntoIter: Send,
    {
        let mut answers = Vec::new();
        let mut inner = self.lock();
        for entry in entries {
            inner.last_applied = Some(entry.log_id);
            let answer = match &entry.payload {
                EntryPayload::Blank => Applied::Nothing,
                EntryPayload::Normal(proposal) => {
                    let mut state = std::mem::take(&mut inner.state);
                    let answer = self.decide(&mut state, proposal);
                    inner.state = state;
                    answer
                }
                EntryPayload::Membership(m) => {
                    inner.membership = StoredMembership::new(Some(entry.log_id), m.clone());
                    Applied::Nothing
                }
            };
            answers.push(answer);
        }
        Ok(answers)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn begin_receiving_snapshot(
        &mut self,
    ) -> Result<Box<Cursor<Vec<u8>>>, StorageError<u64>> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<u64, EmptyNode>,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), StorageError<u64>> {
        let data = snapshot.into_inner();
        let state: CatalogState = crate::wire::codec::decode(&data)
            .map_err(|e| StorageIOError::read_snapshot(Some(meta.signature()), &e))?;
        let kept = KeptSnapshot {
            meta: meta.clone(),
            data,
        };
        if let Some(file) = &self.file {
            file.write(&kept)
                .map_err(|e| StorageIOError::write_snapshot(Some(meta.signature()), &e))?;
        }
        let mut inner = self.lock();
        if let Some(catalog) = &state.catalog {
            (self.on_catalog)(state.epoch, catalog);
        }
        inner.last_applied = meta.last_log_id;
        inner.membership = meta.last_membership.clone();
        inner.state = state;
        inner.snapshot = Some(kept);
        Ok(())
    }

    async fn get_current_snapshot(
        &mut self,
    ) -> Result<Option<Snapshot<LogTypes>>, StorageError<u64>> {
        Ok(self.lock().snapshot.clone().map(|kept| Snapshot {
            meta: kept.meta,
            snapshot: Box::new(Cursor::new(kept.data)),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(table: &str, partitions: &[u32], starts: &[(u32, u64)]) -> Proposal {
        Proposal::Written {
            table: table.into(),
            partitions: partitions.to_vec(),
            starts: starts.to_vec(),
        }
    }

    fn lost(state: &CatalogState, node: u32, table: &str) -> Vec<u32> {
        state
            .lost
            .get(&node)
            .and_then(|t| t.get(table))
            .map(|p| p.iter().copied().collect())
            .unwrap_or_default()
    }

    #[test]
    fn a_start_without_data_loses_what_was_written_before_it_and_repairs_give_it_back() {
        let machine = Machine::new(Box::new(|_, _| {}), None).unwrap();
        let mut state = CatalogState::default();
        // Node 1 started (incarnation 7) before the first write: it holds the write.
        machine.decide(&mut state, &written("t", &[0, 3], &[(1, 7)]));
        machine.decide(&mut state, &written("t", &[5], &[(1, 99)]));
        assert_eq!(
            state.starts.get(&1),
            Some(&7),
            "the first known start stays"
        );
        assert!(state.lost.is_empty());
        // The same start recorded again changes nothing.
        machine.decide(
            &mut state,
            &Proposal::Started {
                node: 1,
                incarnation: 7,
            },
        );
        assert!(state.lost.is_empty());
        // A new incarnation without data lost every partition written so far.
        machine.decide(
            &mut state,
            &Proposal::Started {
                node: 1,
                incarnation: 8,
            },
        );
        assert_eq!(lost(&state, 1, "t"), [0, 3, 5]);
        assert_eq!(
            state.emptied.get(&1).and_then(|t| t.get("t")),
            Some(&BTreeSet::from([0, 3, 5])),
            "emptied by the start"
        );
        // Writes after the start are held by the node: nothing more is lost.
        machine.decide(&mut state, &written("t", &[9], &[]));
        assert_eq!(lost(&state, 1, "t"), [0, 3, 5]);
        machine.decide(
            &mut state,
            &Proposal::Repaired {
                node: 1,
                table: "t".into(),
                partitions: vec![0, 5],
                versions: vec![],
            },
        );
        assert_eq!(lost(&state, 1, "t"), [3]);
        machine.decide(
            &mut state,
            &Proposal::Repaired {
                node: 1,
                table: "t".into(),
                partitions: vec![3],
                versions: vec![],
            },
        );
        assert!(state.lost.is_empty() && state.emptied.is_empty());
    }

    #[test]
    fn a_repair_to_a_version_older_than_the_last_missed_write_leaves_the_copy_behind() {
        let machine = Machine::new(Box::new(|_, _| {}), None).unwrap();
        let mut state = CatalogState::default();
        let missed = |partitions: Vec<u32>, versions: Vec<u64>| Proposal::Missed {
            node: 2,
            table: "t".into(),
            partitions,
            versions,
        };
        let repaired = |partitions: Vec<u32>, versions: Vec<u64>| Proposal::Repaired {
            node: 2,
            table: "t".into(),
            partitions,
            versions,
        };
        machine.decide(&mut state, &missed(vec![1, 4], vec![6, 3]));
        // Another write missed partition 1 again, at version 7; the first record's
        // version is not taken back by an older one.
        machine.decide(&mut state, &missed(vec![1], vec![7]));
        machine.decide(&mut state, &missed(vec![1], vec![5]));
        assert_eq!(lost(&state, 2, "t"), [1, 4]);
        // A client refreshed both copies from copies read at version 6 and 3, before the
        // write of version 7 committed: partition 1 stays behind.
        machine.decide(&mut state, &repaired(vec![1, 4], vec![6, 3]));
        assert_eq!(lost(&state, 2, "t"), [1]);
        machine.decide(&mut state, &repaired(vec![1], vec![7]));
        assert!(state.lost.is_empty() && state.behind_since.is_empty());
        // A copy taken as current (a write in doubt everywhere) counts whatever it missed.
        machine.decide(&mut state, &missed(vec![2], vec![9]));
        machine.decide(&mut state, &repaired(vec![2], vec![u64::MAX]));
        assert!(state.lost.is_empty() && state.behind_since.is_empty());
    }

    fn schema(id: u64, expected: u64) -> Proposal {
        Proposal::Schema {
            id,
            expected,
            catalog: crate::replication::catalog_bytes::encode_catalog(
                &weir_planner::Catalog::default().snapshot(),
            ),
            backups: 1,
        }
    }

    #[test]
    fn a_schema_proposal_sent_again_is_answered_as_it_was_after_other_changes() {
        let machine = Machine::new(Box::new(|_, _| {}), None).unwrap();
        let mut state = CatalogState::default();
        assert_eq!(
            machine.decide(&mut state, &schema(11, 0)),
            Applied::Accepted { epoch: 1 }
        );
        assert_eq!(
            machine.decide(&mut state, &schema(22, 1)),
            Applied::Accepted { epoch: 2 }
        );
        // Proposal 11 again (its answer was lost): it made epoch 1, it is not stale.
        assert_eq!(
            machine.decide(&mut state, &schema(11, 0)),
            Applied::Accepted { epoch: 1 }
        );
        assert_eq!(state.epoch, 2);
        // Another proposal expecting epoch 0 is stale.
        assert_eq!(
            machine.decide(&mut state, &schema(33, 0)),
            Applied::Stale { epoch: 2 }
        );
        // The log recognises the last RECENT_PROPOSALS only.
        for i in 0..RECENT_PROPOSALS as u64 {
            let epoch = state.epoch;
            machine.decide(&mut state, &schema(100 + i, epoch));
        }
        assert_eq!(state.recent.len(), RECENT_PROPOSALS);
        assert_eq!(
            machine.decide(&mut state, &schema(11, 0)),
            Applied::Stale { epoch: state.epoch }
        );
    }

    #[test]
    fn a_dropped_table_is_forgotten_with_its_lost_copies() {
        let mut state = CatalogState::default();
        state.written.insert("t".into(), [1, 2].into());
        state.written.insert("u".into(), [4].into());
        state
            .lost
            .insert(2, [("t".to_string(), BTreeSet::from([1]))].into());
        forget_dropped(&mut state, &BTreeSet::from(["u".to_string()]));
        assert_eq!(state.written.keys().collect::<Vec<_>>(), ["u"]);
        assert!(state.lost.is_empty());
    }
}
