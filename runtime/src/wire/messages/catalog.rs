//! The messages between a client and the data nodes of a cluster of processes: who the peers
//! are, the catalog, and the versions of the nodes' partition copies.

use crate::wire::ids::NodeId;
use crate::wire::messages::query::Protocol;
use serde::{Deserialize, Serialize};

/// Client → data node of a cluster of processes: where every data node listens, so that the
/// node connects to its peers, and the message workflow the client's queries use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Join {
    /// Every data node (this one included) and the address it listens on.
    pub peers: Vec<(NodeId, String)>,
    /// The client's message workflow.
    pub protocol: Protocol,
    /// The highest index of the catalog log the client has seen applied or decided (0: the
    /// log holds nothing yet, as far as it knows). A member that holds no log while it is
    /// above 0 catches up from the others rather than initialising a new log, and votes
    /// before it caught up only for a candidate whose log reaches it.
    pub log_index: u64,
}

/// A catalog snapshot in its encoded form: the wire carries the catalog without knowing the
/// planner's types; the replication floor encodes and decodes it
/// ([`crate::replication::membership`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CatalogBytes(pub Vec<u8>);

/// Client → data node: send me your catalog copy and the versions of your partition copies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CatalogRequest {
    /// Request id, echoed in the reply.
    pub request: u64,
}

/// The versions of one table's partition copies on a node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableVersions {
    /// Table name (lowercase, as stored).
    pub table: String,
    /// `(partition, version)` of every copy the node holds.
    pub partitions: Vec<(u32, u64)>,
}

/// Data node → client: its catalog copy (if a client ever sent one) and copy versions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CatalogReply {
    /// The request answered.
    pub request: u64,
    /// The epoch of the catalog copy (0 with none).
    pub epoch: u64,
    /// The catalog copy.
    pub catalog: Option<CatalogBytes>,
    /// The versions of the node's partition copies.
    pub versions: Vec<TableVersions>,
    /// The peers the node has an authenticated connection to now.
    pub peers: Vec<NodeId>,
    /// The node's incarnation when it started without its data, if it did (see
    /// [`Proposal::Started`](crate::wire::messages::Proposal::Started)).
    pub fresh_start: Option<u64>,
    /// Whether the catalog log, as this node applied it, has recorded its start (always true
    /// for a node that kept its data).
    pub start_recorded: bool,
    /// How far this node applied the catalog log (the index of the last entry).
    pub log_index: u64,
    /// The backups per partition the cluster keeps, once the log fixed them.
    pub backups: Option<u32>,
    /// The copies lost by data nodes that started without their data and not repaired yet,
    /// as this node's copy of the catalog log knows them.
    pub lost: Vec<LostCopies>,
}

/// One data node's lost copies of one table's partitions (see [`CatalogReply::lost`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LostCopies {
    /// The data node.
    pub node: NodeId,
    /// The table (lowercase, as stored).
    pub table: String,
    /// The partitions whose copy on `node` is lost.
    pub partitions: Vec<u32>,
    /// Of `partitions`, those whose copy a start of `node` without its data emptied (it may
    /// have held writes that no other copy holds), not repaired since.
    pub emptied: Vec<u32>,
}
