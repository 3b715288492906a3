//! The messages of a replicated write: prepare, commit, abort and the nodes' replies.

use crate::error::Error;
use serde::{Deserialize, Serialize};
use weir_operators::decode::Checked;
use weir_operators::{Batch, Schema, Value};

/// How a data node lays out a table's partition copies it does not hold yet. A decoded one is
/// checked: its key and indexed columns are columns of its schema, the key's distinct.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct TableLayout {
    /// Table name (lowercase, as stored).
    pub table: String,
    /// Columns.
    pub schema: Schema,
    /// Primary-key columns, in key order (empty: the table has no declared key).
    pub primary_key: Vec<usize>,
    /// Columns with a secondary index.
    pub indexed: Vec<usize>,
}

crate::wire::codec::checked_serde!(TableLayout);

impl Checked for TableLayout {
    fn check(&self) -> Result<(), String> {
        let columns = self.schema.len();
        let out = |what: &str, c: usize| {
            format!(
                "the layout of {} names {what} column {c} of {columns}",
                self.table
            )
        };
        if let Some(&c) = self.primary_key.iter().find(|&&c| c >= columns) {
            return Err(out("key", c));
        }
        if let Some(&c) = self.indexed.iter().find(|&&c| c >= columns) {
            return Err(out("indexed", c));
        }
        let mut key = self.primary_key.clone();
        key.sort_unstable();
        if key.windows(2).any(|w| w[0] == w[1]) {
            return Err(format!("the layout of {} repeats a key column", self.table));
        }
        Ok(())
    }
}

/// Client → data node, phase one of a write: check that the changes can be made to the node's
/// copies of these partitions, and hold them until [`WriteCommit`] or [`WriteAbort`]. With
/// `commit`, the node is the write's only participant: it checks and applies at once (one
/// phase: two messages instead of four, one sync instead of two), and answers for the commit.
/// A decoded one is checked: its piece is one of its pieces, and only a lone piece commits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct WritePrepare {
    /// Write id (unique in the cluster, from the same sequence as query ids).
    pub write: u64,
    /// The table.
    pub layout: TableLayout,
    /// The change to each partition.
    pub parts: Vec<PartitionWrite>,
    /// For a table without a key: rows to change in every partition of `parts`, sent once
    /// per node rather than once per partition.
    pub rewrite: Option<Rewrite>,
    /// Apply at once: the node is the write's only participant (and this its only piece).
    pub commit: bool,
    /// This message is piece `piece` (from 0) of the `pieces` the node gets for this write: a
    /// node's share larger than [`MAX_WRITE_PIECE_BYTES`] is cut by partition, every piece
    /// below the message limit. The node holds the pieces as they come and answers the
    /// prepare once it holds them all.
    pub piece: u32,
    /// How many pieces the node gets for this write (at least 1).
    pub pieces: u32,
    /// The epoch of the catalog the writer laid the write out by (its catalog log's, on
    /// data nodes of other processes; 0 in one process). A node whose own catalog is at
    /// least as new checks the layout against it; one behind takes the writer's.
    pub catalog_epoch: u64,
}

crate::wire::codec::checked_serde!(WritePrepare);

impl Checked for WritePrepare {
    fn check(&self) -> Result<(), String> {
        if self.piece >= self.pieces {
            return Err(format!(
                "write {} names piece {} of {}",
                self.write, self.piece, self.pieces
            ));
        }
        if self.commit && self.pieces != 1 {
            return Err(format!(
                "write {} commits at once in {} pieces",
                self.write, self.pieces
            ));
        }
        Ok(())
    }
}

/// Most bytes of rows ([`Batch::data_size`]) a write sends a node in one [`WritePrepare`]
/// (the last partition added may take it past this); a single partition's change larger than
/// half the message limit cannot be sent and fails the write at once.
pub const MAX_WRITE_PIECE_BYTES: usize = 64 << 20;

/// The change one write makes to one partition copy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartitionWrite {
    /// The partition.
    pub partition: u32,
    /// The version the copy has after this write.
    pub version: u64,
    /// Keys of the rows to delete first (the key columns, in key order); `None`: none.
    pub delete: Option<Batch>,
    /// Rows to insert.
    pub insert: Batch,
}

/// A change of a table without a key, by whole rows: every stored row equal (NULL matching
/// NULL) to a row of `old` is deleted, or, with `new`, replaced by the matching row of `new`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rewrite {
    /// The rows to change (every column).
    pub old: Batch,
    /// Their new values, one row per row of `old`; `None` deletes them.
    pub new: Option<Batch>,
}

/// Client → data node, phase two: apply the rows held for `write`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WriteCommit {
    /// Write id.
    pub write: u64,
}

/// Client → data node: drop the rows held for `write` (another copy refused it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WriteAbort {
    /// Write id.
    pub write: u64,
}

/// Data node → client: a prepare or commit of `write` succeeded, or why not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WriteReply {
    /// Write id.
    pub write: u64,
    /// Which phase this answers.
    pub phase: WritePhase,
    /// `Some` when the node refused (a duplicate key, a copy out of date).
    pub error: Option<WriteRefusal>,
}

/// Why a node refused a write.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum WriteRefusal {
    /// A row's key is already in the table (or twice in the write).
    DuplicateKey {
        /// The key column.
        column: String,
        /// The key value.
        value: Value,
    },
    /// A row's key is NULL.
    NullKey {
        /// The key column.
        column: String,
    },
    /// The node's disk failed (its log refuses writes now).
    Disk {
        /// The node.
        node: String,
        /// What failed.
        message: String,
    },
    /// The write met another client's: a copy is not at the version before this write (a
    /// write of another client came first), or another undecided write holds the partition.
    /// Nothing was applied; the writer refreshes its versions and may run it again.
    Conflict(String),
    /// The write's table is not what the node's catalog (the catalog log's) has: dropped,
    /// made again with other columns, or not known yet to a node that is behind the log.
    CatalogChanged {
        /// The epoch of the node's catalog.
        epoch: u64,
        /// What differs.
        message: String,
    },
    /// Anything else (a write that was never prepared).
    Other(String),
}

impl WriteRefusal {
    /// The error of a write of `table`'s rows that a node refused: a duplicate or NULL primary
    /// key becomes [`Error::DuplicateKey`] / [`Error::NullKey`] naming the table; anything
    /// else becomes [`Error::Invalid`] with the node's message.
    pub fn into_error(self, table: &str) -> Error {
        match self {
            WriteRefusal::DuplicateKey { column, value } => Error::DuplicateKey {
                table: table.to_string(),
                column,
                value,
            },
            WriteRefusal::NullKey { column } => Error::NullKey {
                table: table.to_string(),
                column,
            },
            WriteRefusal::Disk { node, message } => Error::Disk { node, message },
            WriteRefusal::Conflict(message) => Error::WriteConflict {
                table: table.to_string(),
                message,
            },
            WriteRefusal::CatalogChanged { epoch, message } => {
                tracing::debug!("a write to {table} refused: {message}");
                Error::CatalogChanged { epoch }
            }
            WriteRefusal::Other(message) => Error::Invalid(message),
        }
    }

    /// The refusal of a storage error.
    pub fn of(e: weir_operators::Error) -> Self {
        match e {
            weir_operators::Error::DuplicateKey { column, value } => {
                WriteRefusal::DuplicateKey { column, value }
            }
            weir_operators::Error::NullKey { column } => WriteRefusal::NullKey { column },
            other => WriteRefusal::Other(other.to_string()),
        }
    }
}

/// The phase a [`WriteReply`] answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum WritePhase {
    /// [`WritePrepare`].
    Prepare,
    /// [`WriteCommit`].
    Commit,
}
