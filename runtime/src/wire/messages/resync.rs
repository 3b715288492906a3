//! The messages of a resync: a stale partition copy fetched from a current one and installed
//! in pieces (see [`crate::replication::resync`]).

use crate::wire::messages::writes::TableLayout;
use serde::{Deserialize, Serialize};
use weir_operators::Batch;

/// Client → data node holding a current copy: send me your copy of `table`'s partition
/// `partition` ([`PartitionRows`], in one or more pieces). Part of a resync
/// ([`crate::replication::resync`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartitionFetch {
    /// Request id, echoed in every piece of the reply.
    pub request: u64,
    /// Table name (lowercase, as stored).
    pub table: String,
    /// The partition.
    pub partition: u32,
}

/// Data node → client: one piece of the rows of a partition copy, answering a
/// [`PartitionFetch`]. The pieces of one copy are numbered from 0; the last says so.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartitionRows {
    /// The request answered.
    pub request: u64,
    /// The version of the copy the rows are from.
    pub version: u64,
    /// Columns the sending node keeps a secondary index on for this table.
    pub indexed: Vec<usize>,
    /// This piece's place among the copy's pieces, from 0.
    pub piece: u32,
    /// Whether this is the copy's last piece.
    pub last: bool,
    /// Rows, every column of the table (a copy without rows sends one piece with none).
    pub rows: Vec<Batch>,
    /// `Some` when the node cannot send the copy (it holds none, or a row is too large for
    /// a message); then this is the only piece.
    pub error: Option<String>,
}

/// Client → data node with a stale copy: replace your copy of `layout.table`'s partition
/// `partition` by these rows, at `version`. Sent in pieces numbered from 0, in order; the node
/// installs the copy when the last arrives and answers with [`PartitionInstalled`] (or at the
/// first piece it refuses).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartitionInstall {
    /// Request id (that of the fetch), echoed in the reply.
    pub request: u64,
    /// The table, as the client's catalog has it.
    pub layout: TableLayout,
    /// The partition.
    pub partition: u32,
    /// The version the copy has once installed.
    pub version: u64,
    /// This piece's place, from 0.
    pub piece: u32,
    /// Whether this is the last piece.
    pub last: bool,
    /// Rows, every column of the table.
    pub rows: Vec<Batch>,
}

/// Data node → client: a [`PartitionInstall`] was installed, or why not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartitionInstalled {
    /// The request answered.
    pub request: u64,
    /// The version the copy is at now (when installed).
    pub version: u64,
    /// `Some` when the node refused (an unknown table, a layout that does not match its
    /// catalog, rows that do not fit, a newer copy held).
    pub error: Option<String>,
}
