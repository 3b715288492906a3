//! The messages of the catalog log ([`crate::replication::catalog_log`]): Raft's RPCs between
//! the data nodes of a cluster of processes, and a client's proposals to the log with the
//! decisions that answer them.
//!
//! Raft's own requests and responses travel as opaque bytes ([`RaftBytes`], encoded by the
//! catalog log with the project's codec): the wire names no type of the Raft library.

use crate::wire::ids::NodeId;
use crate::wire::messages::catalog::CatalogBytes;
use serde::{Deserialize, Serialize};

/// An encoded Raft request or response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RaftBytes(pub Vec<u8>);

/// Which Raft RPC a [`RaftCall`] carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RaftRpc {
    /// AppendEntries: log entries, or a heartbeat.
    Append,
    /// RequestVote.
    Vote,
    /// InstallSnapshot: one chunk of a snapshot of the log's state.
    Snapshot,
    /// A read index for a node's read lease: the leader confirms with a quorum that it
    /// still leads and answers the index of the log up to which every entry committed
    /// before the call is ([`crate::replication::catalog_log::lease`]).
    ReadIndex,
}

/// Data node → data node: a Raft RPC of the catalog log. Accepted only from a data node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RaftCall {
    /// Call id, echoed in the answer.
    pub call: u64,
    /// Which RPC.
    pub rpc: RaftRpc,
    /// The encoded request.
    pub request: RaftBytes,
}

/// Data node → data node: the answer to a [`RaftCall`] (the encoded response, or Raft's error).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RaftAnswer {
    /// The call answered.
    pub call: u64,
    /// The encoded result.
    pub answer: RaftBytes,
}

/// A change proposed to the catalog log. Applied in the log's order on every data node, each
/// deciding the same way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Proposal {
    /// Replace the catalog with `catalog` if the log's catalog is still at epoch `expected`
    /// (a compare-and-set: a client whose view is stale is refused, never overwrites).
    Schema {
        /// Unique id of the proposal (a proposal sent again after a lost answer is
        /// recognised as the one already accepted).
        id: u64,
        /// The epoch the proposer's catalog was derived from.
        expected: u64,
        /// The new catalog.
        catalog: CatalogBytes,
        /// The backups per partition the proposer keeps: the first accepted change fixes
        /// them for the cluster (every client then places copies alike).
        backups: u32,
    },
    /// Partitions of `table` take their first write: a copy of them that a restarted node no
    /// longer holds is lost, not empty. Recorded before the write commits.
    Written {
        /// The table (lowercase, as stored).
        table: String,
        /// The partitions written for the first time.
        partitions: Vec<u32>,
        /// The incarnations of the data nodes that started without data, as the writer
        /// knows them: an incarnation the log has not recorded for its node yet is recorded
        /// as one that holds the write (it started before it).
        starts: Vec<(NodeId, u64)>,
    },
    /// Data node `node` started again without its data (no data directory, or an empty
    /// one), as process `incarnation`: its copies of every partition written so far are
    /// lost until repaired. Recorded once per incarnation.
    Started {
        /// The data node.
        node: NodeId,
        /// The process's incarnation (a random number drawn when it started).
        incarnation: u64,
    },
    /// Node `node`'s copies of `partitions` of `table` missed a committed write (the node was
    /// down, or did not answer in time): they count as lost until repaired.
    Missed {
        /// The data node.
        node: NodeId,
        /// The table (lowercase, as stored).
        table: String,
        /// The partitions whose copy missed the write.
        partitions: Vec<u32>,
        /// The version the missed write gave each of `partitions` (in order): a repair of
        /// the copy to an older version does not count. Empty: unknown (any repair counts).
        #[serde(default)]
        versions: Vec<u64>,
    },
    /// Node `node`'s copies of `partitions` of `table`, lost when it started without its
    /// data or behind since they missed a write, were refreshed from a current copy: they
    /// count again.
    Repaired {
        /// The data node.
        node: NodeId,
        /// The table (lowercase, as stored).
        table: String,
        /// The partitions refreshed.
        partitions: Vec<u32>,
        /// The version each of `partitions` was refreshed to (in order); [`u64::MAX`] for a
        /// copy taken as current whatever it missed (a write in doubt everywhere). Empty:
        /// [`u64::MAX`] for each.
        #[serde(default)]
        versions: Vec<u64>,
    },
}

/// What the catalog log decided about a proposal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Decision {
    /// Applied: the log's catalog is now at `epoch`.
    Accepted {
        /// The new epoch.
        epoch: u64,
    },
    /// Recorded: a [`Proposal::Written`], [`Proposal::Started`], [`Proposal::Missed`] or
    /// [`Proposal::Repaired`] is in the log.
    Recorded,
    /// Refused: the log's catalog is at `epoch`, not at the one the proposal expected.
    Stale {
        /// The log's epoch.
        epoch: u64,
    },
    /// Refused: the catalog it carries is malformed.
    Malformed(String),
    /// The node asked is not the log's leader; `leader` is the one it knows, if any.
    NotLeader {
        /// The leader, when known.
        leader: Option<NodeId>,
    },
    /// The log could not decide (no quorum, shutting down).
    Failed(String),
}

/// Client → data node: a proposal to the catalog log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CatalogPropose {
    /// Request id, echoed in the decision.
    pub request: u64,
    /// The change.
    pub proposal: Proposal,
}

/// Data node → client: what became of a [`CatalogPropose`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CatalogDecided {
    /// The request answered.
    pub request: u64,
    /// The decision.
    pub decision: Decision,
    /// The index of the log entry decided (0 when none was).
    pub index: u64,
}
