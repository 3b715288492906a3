//! The closed set of messages that travel between nodes, and their payloads.
//!
//! Every one of them is serialized with bincode when it crosses nodes (see [`crate::wire::network`]).

use crate::error::{Error, ErrorKind};
use crate::wire::ids::{NodeId, QueryId};
use crate::wire::partition_map::PartitionMap;
use serde::{Deserialize, Serialize};
use weir_operators::{Batch, PhysicalPlan, Schema, Value};
use weir_planner::Distribution;

/// Which message workflow a cluster uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum Protocol {
    /// Two messages for a one-batch remote fragment: start request and last batch.
    #[default]
    Lean,
    /// The older six-message workflow: start response, ack for every batch, close and error
    /// reply for every remote fragment. Kept for comparison.
    Legacy,
}

/// The kinds of inter-node messages, for counting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MessageKind {
    /// [`NetMessage::QueryStartRequest`].
    QueryStartRequest,
    /// [`NetMessage::QueryStartResponse`].
    QueryStartResponse,
    /// [`NetMessage::QueryBatch`].
    QueryBatch,
    /// [`NetMessage::QueryBatchAck`].
    QueryBatchAck,
    /// [`NetMessage::QueryClose`].
    QueryClose,
    /// [`NetMessage::QueryError`].
    QueryError,
    /// [`NetMessage::QueryBatchStop`].
    QueryBatchStop,
    /// [`NetMessage::WritePrepare`].
    WritePrepare,
    /// [`NetMessage::WriteCommit`].
    WriteCommit,
    /// [`NetMessage::WriteAbort`].
    WriteAbort,
    /// [`NetMessage::WriteReply`].
    WriteReply,
    /// [`NetMessage::Join`].
    Join,
    /// [`NetMessage::CatalogPut`].
    CatalogPut,
    /// [`NetMessage::CatalogRequest`].
    CatalogRequest,
    /// [`NetMessage::CatalogReply`].
    CatalogReply,
    /// [`NetMessage::PartitionFetch`].
    PartitionFetch,
    /// [`NetMessage::PartitionRows`].
    PartitionRows,
    /// [`NetMessage::PartitionInstall`].
    PartitionInstall,
    /// [`NetMessage::PartitionInstalled`].
    PartitionInstalled,
}

impl MessageKind {
    /// All kinds, in protocol order.
    pub const ALL: [MessageKind; 19] = [
        MessageKind::QueryStartRequest,
        MessageKind::QueryStartResponse,
        MessageKind::QueryBatch,
        MessageKind::QueryBatchAck,
        MessageKind::QueryClose,
        MessageKind::QueryError,
        MessageKind::QueryBatchStop,
        MessageKind::WritePrepare,
        MessageKind::WriteCommit,
        MessageKind::WriteAbort,
        MessageKind::WriteReply,
        MessageKind::Join,
        MessageKind::CatalogPut,
        MessageKind::CatalogRequest,
        MessageKind::CatalogReply,
        MessageKind::PartitionFetch,
        MessageKind::PartitionRows,
        MessageKind::PartitionInstall,
        MessageKind::PartitionInstalled,
    ];

    /// The message type's name.
    pub fn name(self) -> &'static str {
        match self {
            MessageKind::QueryStartRequest => "QueryStartRequest",
            MessageKind::QueryStartResponse => "QueryStartResponse",
            MessageKind::QueryBatch => "QueryBatch",
            MessageKind::QueryBatchAck => "QueryBatchAck",
            MessageKind::QueryClose => "QueryClose",
            MessageKind::QueryError => "QueryError",
            MessageKind::QueryBatchStop => "QueryBatchStop",
            MessageKind::WritePrepare => "WritePrepare",
            MessageKind::WriteCommit => "WriteCommit",
            MessageKind::WriteAbort => "WriteAbort",
            MessageKind::WriteReply => "WriteReply",
            MessageKind::Join => "Join",
            MessageKind::CatalogPut => "CatalogPut",
            MessageKind::CatalogRequest => "CatalogRequest",
            MessageKind::CatalogReply => "CatalogReply",
            MessageKind::PartitionFetch => "PartitionFetch",
            MessageKind::PartitionRows => "PartitionRows",
            MessageKind::PartitionInstall => "PartitionInstall",
            MessageKind::PartitionInstalled => "PartitionInstalled",
        }
    }
}

/// Where a fragment instance sends its output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputTarget {
    /// Exchange id.
    pub exchange: u32,
    /// How rows are spread over the targets.
    pub distribution: Distribution,
    /// Nodes running the receiving fragment's instances.
    pub targets: Vec<NodeId>,
}

/// An exchange a fragment instance receives from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExchangeInput {
    /// Exchange id.
    pub exchange: u32,
    /// Nodes whose instances send to this one.
    pub senders: Vec<NodeId>,
}

/// The fragment's plan, in full or as a key the node has cached.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum PlanPayload {
    /// The whole operator tree, with its cache key.
    Full {
        /// Hash of the encoded plan.
        key: u64,
        /// The plan.
        plan: Box<PhysicalPlan>,
    },
    /// Only the key of a plan the node already holds.
    Cached(u64),
}

/// Initiator → node: start one fragment instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StartRequest {
    /// Query.
    pub query: QueryId,
    /// Fragment id within the query.
    pub fragment: u32,
    /// Node that started the query.
    pub initiator: NodeId,
    /// The plan.
    pub plan: PlanPayload,
    /// Bound parameters.
    pub params: Vec<Value>,
    /// Where the output goes (`None` never happens for remote fragments).
    pub output: Option<OutputTarget>,
    /// Exchanges this instance receives from.
    pub inputs: Vec<ExchangeInput>,
    /// Partition assignment for the fragment's table scans: which node reads which partition.
    pub partitions: Option<PartitionMap>,
    /// How many fragment instances of this query the node runs in all.
    pub fragments_on_node: u32,
    /// Rows per batch.
    pub batch_size: u32,
    /// Credit window per exchange channel and edge, in batches.
    pub window: u32,
    /// Credit window per exchange channel and edge, in bytes of rows.
    pub window_bytes: u64,
    /// The query's timeout in milliseconds: a fragment still running this long after it
    /// started closes itself (its initiator may be unreachable).
    pub timeout_ms: u64,
}

/// Node → initiator: a fragment instance started, or failed to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StartResponse {
    /// Query.
    pub query: QueryId,
    /// Fragment.
    pub fragment: u32,
    /// `Some(message)` when the start failed.
    pub error: Option<String>,
    /// The node did not hold the cached plan named by the request; the initiator must resend
    /// the full plan.
    pub plan_missing: bool,
}

/// A batch of rows on an exchange channel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchMessage {
    /// Query.
    pub query: QueryId,
    /// Sending fragment.
    pub fragment: u32,
    /// Exchange.
    pub exchange: u32,
    /// Sequence number on this channel, from 0.
    pub batch_id: u64,
    /// The channel's last batch.
    pub last: bool,
    /// Rows (`None` for an empty last batch).
    pub rows: Option<Batch>,
}

/// Receiver → sender: a batch was consumed; gives its credit back, a batch and its bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchAck {
    /// Query.
    pub query: QueryId,
    /// Sending fragment.
    pub fragment: u32,
    /// Exchange.
    pub exchange: u32,
    /// The consumed batch.
    pub batch_id: u64,
    /// Credits granted (batches the sender may send beyond those in flight).
    pub credits: u32,
    /// Byte credits granted: the consumed batch's bytes of rows
    /// ([`weir_operators::Batch::data_size`], the same on both nodes).
    pub bytes: u64,
}

/// Receiver → sender: the receiving end of an exchange channel needs no more batches (its
/// consumer finished early, was cancelled or killed). The sender drops what it holds for that
/// channel and sends nothing more on it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchStop {
    /// Query.
    pub query: QueryId,
    /// Exchange.
    pub exchange: u32,
}

/// How a data node lays out a table's partition copies it does not hold yet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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

/// Client → data node, phase one of a write: check that the changes can be made to the node's
/// copies of these partitions, and hold them until [`WriteCommit`] or [`WriteAbort`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
}

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
    /// Anything else (a copy out of date, a write that was never prepared).
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

/// Initiator → node: stop the query's fragments there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CloseMessage {
    /// Query.
    pub query: QueryId,
    /// Fragment to close, or `None` for all of the query's fragments on the node.
    pub fragment: Option<u32>,
}

/// Node → initiator: a fragment failed (or, under Legacy, was closed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorMessage {
    /// Query.
    pub query: QueryId,
    /// Fragment.
    pub fragment: u32,
    /// What happened.
    pub kind: ErrorKind,
    /// Human-readable text.
    pub message: String,
}

/// Client → data node of a cluster of processes: where every data node listens, so that the
/// node connects to its peers, and the message workflow the client's queries use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Join {
    /// Every data node (this one included) and the address it listens on.
    pub peers: Vec<(NodeId, String)>,
    /// The client's message workflow.
    pub protocol: Protocol,
}

/// Client → data node: the cluster's catalog after a change. A node keeps the copy with the
/// highest epoch, and applies what it says to its stored partitions (dropped tables go, new
/// secondary indexes are built).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CatalogPut {
    /// Orders the copies: higher is newer.
    pub epoch: u64,
    /// The catalog.
    pub catalog: CatalogBytes,
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
}

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

/// Everything that crosses nodes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum NetMessage {
    /// Start a fragment instance.
    QueryStartRequest(Box<StartRequest>),
    /// A start succeeded or failed.
    QueryStartResponse(StartResponse),
    /// Rows.
    QueryBatch(BatchMessage),
    /// Credit for rows.
    QueryBatchAck(BatchAck),
    /// Stop fragments.
    QueryClose(CloseMessage),
    /// A failure report.
    QueryError(ErrorMessage),
    /// No more rows wanted on a channel.
    QueryBatchStop(BatchStop),
    /// Phase one of a replicated write.
    WritePrepare(Box<WritePrepare>),
    /// Phase two of a replicated write.
    WriteCommit(WriteCommit),
    /// A write given up.
    WriteAbort(WriteAbort),
    /// A node's answer to a write phase.
    WriteReply(WriteReply),
    /// Who the data nodes are (a cluster of processes).
    Join(Join),
    /// The catalog after a change.
    CatalogPut(Box<CatalogPut>),
    /// A client asks for the catalog and copy versions.
    CatalogRequest(CatalogRequest),
    /// A node's catalog and copy versions.
    CatalogReply(Box<CatalogReply>),
    /// A client asks for a partition copy's rows (a resync).
    PartitionFetch(PartitionFetch),
    /// A piece of a partition copy's rows.
    PartitionRows(Box<PartitionRows>),
    /// A piece of a partition copy to install.
    PartitionInstall(Box<PartitionInstall>),
    /// A node's answer to an install.
    PartitionInstalled(PartitionInstalled),
}

impl NetMessage {
    /// The message's kind.
    pub fn kind(&self) -> MessageKind {
        match self {
            NetMessage::QueryStartRequest(_) => MessageKind::QueryStartRequest,
            NetMessage::QueryStartResponse(_) => MessageKind::QueryStartResponse,
            NetMessage::QueryBatch(_) => MessageKind::QueryBatch,
            NetMessage::QueryBatchAck(_) => MessageKind::QueryBatchAck,
            NetMessage::QueryClose(_) => MessageKind::QueryClose,
            NetMessage::QueryError(_) => MessageKind::QueryError,
            NetMessage::QueryBatchStop(_) => MessageKind::QueryBatchStop,
            NetMessage::WritePrepare(_) => MessageKind::WritePrepare,
            NetMessage::WriteCommit(_) => MessageKind::WriteCommit,
            NetMessage::WriteAbort(_) => MessageKind::WriteAbort,
            NetMessage::WriteReply(_) => MessageKind::WriteReply,
            NetMessage::Join(_) => MessageKind::Join,
            NetMessage::CatalogPut(_) => MessageKind::CatalogPut,
            NetMessage::CatalogRequest(_) => MessageKind::CatalogRequest,
            NetMessage::CatalogReply(_) => MessageKind::CatalogReply,
            NetMessage::PartitionFetch(_) => MessageKind::PartitionFetch,
            NetMessage::PartitionRows(_) => MessageKind::PartitionRows,
            NetMessage::PartitionInstall(_) => MessageKind::PartitionInstall,
            NetMessage::PartitionInstalled(_) => MessageKind::PartitionInstalled,
        }
    }

    /// The query (or write, or catalog or partition request) the message belongs to; 0 for
    /// [`Join`] and [`CatalogPut`].
    pub fn query(&self) -> QueryId {
        match self {
            NetMessage::QueryStartRequest(m) => m.query,
            NetMessage::QueryStartResponse(m) => m.query,
            NetMessage::QueryBatch(m) => m.query,
            NetMessage::QueryBatchAck(m) => m.query,
            NetMessage::QueryClose(m) => m.query,
            NetMessage::QueryError(m) => m.query,
            NetMessage::QueryBatchStop(m) => m.query,
            NetMessage::WritePrepare(m) => m.write,
            NetMessage::WriteCommit(m) => m.write,
            NetMessage::WriteAbort(m) => m.write,
            NetMessage::WriteReply(m) => m.write,
            NetMessage::Join(_) | NetMessage::CatalogPut(_) => 0,
            NetMessage::CatalogRequest(m) => m.request,
            NetMessage::CatalogReply(m) => m.request,
            NetMessage::PartitionFetch(m) => m.request,
            NetMessage::PartitionRows(m) => m.request,
            NetMessage::PartitionInstall(m) => m.request,
            NetMessage::PartitionInstalled(m) => m.request,
        }
    }
}

/// Encoded size of a start request for `plan` scanning partitions placed as `owners`, with
/// the assignment packed (as sent) and, for comparison, as a list of 16-byte node ids per
/// partition: `(compact, list)`.
pub fn start_request_sizes(
    plan: PhysicalPlan,
    params: Vec<Value>,
    owners: &[Option<NodeId>],
) -> (usize, usize) {
    let req = StartRequest {
        query: 1,
        fragment: 1,
        initiator: 3,
        plan: PlanPayload::Full {
            key: 0,
            plan: Box::new(plan),
        },
        params,
        output: Some(OutputTarget {
            exchange: 0,
            distribution: Distribution::Gather,
            targets: vec![3],
        }),
        inputs: vec![],
        partitions: Some(PartitionMap::from_owners(owners)),
        fragments_on_node: 1,
        batch_size: 1024,
        window: 4,
        window_bytes: 4 << 20,
        timeout_ms: 30_000,
    };
    let compact = crate::wire::codec::encode(&NetMessage::QueryStartRequest(Box::new(req)))
        .map_or(0, |b| b.len());
    let (map, list) = crate::wire::partition_map::encoded_sizes(owners);
    (compact, compact - map + list)
}
