//! The Raft types of the catalog log: what an entry carries ([`Proposal`]), what applying it
//! answers ([`Applied`]), and the state every data node's copy of the log builds
//! ([`CatalogState`]).

use crate::wire::ids::NodeId;
use crate::wire::messages::{CatalogBytes, Proposal};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Cursor;

openraft::declare_raft_types!(
    /// The catalog log's Raft types: entries carry [`Proposal`]s, node ids are weir's
    /// (widened to `u64`), nodes carry no address (the TCP endpoint knows them).
    pub LogTypes:
        D = Proposal,
        R = Applied,
        NodeId = u64,
        Node = openraft::EmptyNode,
        SnapshotData = Cursor<Vec<u8>>,
);

/// What applying one entry of the log decided.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Applied {
    /// An entry of Raft's own (a membership change, a new leader's blank entry).
    Nothing,
    /// A schema proposal was taken: the catalog is at `epoch`.
    Accepted {
        /// The new epoch.
        epoch: u64,
    },
    /// A record of writes, starts or repairs was taken.
    Recorded,
    /// A schema proposal expected another epoch: the catalog stays at `epoch`.
    Stale {
        /// The catalog's epoch.
        epoch: u64,
    },
    /// A schema proposal carried a catalog that does not decode.
    Malformed(String),
}

/// How many accepted schema proposals the log recognises when one is sent again
/// ([`CatalogState::recent`]).
pub const RECENT_PROPOSALS: usize = 256;

/// The state the log's entries build: the cluster's catalog and its epoch (one per accepted
/// schema change), and the ids of the proposals that made the last ones; which partitions
/// were ever written, and which copies data nodes lost by starting again without their data.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CatalogState {
    /// Accepted schema changes so far.
    pub epoch: u64,
    /// The catalog, once a first change was accepted.
    pub catalog: Option<CatalogBytes>,
    /// The ids of the last [`RECENT_PROPOSALS`] schema proposals accepted, with the epoch
    /// each made, oldest first: one sent again after its answer was lost (its leader gone)
    /// is answered as it was, even after other clients' changes.
    pub recent: Vec<(u64, u64)>,
    /// The backups per partition of the cluster, fixed by the first accepted schema change.
    pub backups: Option<u32>,
    /// Per table, the partitions written at least once.
    pub written: BTreeMap<String, BTreeSet<u32>>,
    /// Per data node, the incarnation whose start without data was recorded last.
    pub starts: BTreeMap<NodeId, u64>,
    /// Per data node and table, the partitions whose copy the node lost (it started without
    /// its data after they were written, or the copy missed a write) and that were not
    /// repaired since.
    pub lost: BTreeMap<NodeId, BTreeMap<String, BTreeSet<u32>>>,
    /// Per data node, table and partition of [`CatalogState::lost`], the version of the last
    /// write the copy missed: a repair to an older version (made from a copy read before
    /// that write committed) leaves it lost.
    pub behind_since: BTreeMap<NodeId, BTreeMap<String, BTreeMap<u32, u64>>>,
    /// Per data node and table, the partitions of [`CatalogState::lost`] whose copy a start
    /// of the node without its data emptied, not repaired since: such a copy may have held
    /// writes no other copy holds.
    pub emptied: BTreeMap<NodeId, BTreeMap<String, BTreeSet<u32>>>,
}
