//! The closed set of messages that travel between nodes ([`NetMessage`]), and their
//! payloads, one file per protocol: a query's run (`query.rs`), replicated writes
//! (`writes.rs`), what a client and the data nodes of processes tell each other
//! (`catalog.rs`), and resyncs (`resync.rs`). They are all re-exported here.
//!
//! Every one of them is serialized with bincode when it crosses nodes (see
//! [`crate::wire::network`]).

mod catalog;
mod consensus;
mod query;
mod resync;
mod writes;

pub use catalog::{CatalogBytes, CatalogReply, CatalogRequest, Join, LostCopies, TableVersions};
pub use consensus::{
    CatalogDecided, CatalogPropose, Decision, Proposal, RaftAnswer, RaftBytes, RaftCall, RaftRpc,
};
pub use query::{
    BatchAck, BatchFilter, BatchMessage, BatchStop, CloseMessage, ErrorMessage, ExchangeInput,
    OperatorCounts, OutputTarget, PlanPayload, ProfileMessage, Protocol, StartRequest,
    StartResponse,
};
pub use resync::{PartitionFetch, PartitionInstall, PartitionInstalled, PartitionRows};
pub use writes::{
    PartitionWrite, Rewrite, TableLayout, WriteAbort, WriteCommit, WritePhase, WritePrepare,
    WriteRefusal, WriteReply, MAX_WRITE_PIECE_BYTES,
};

use crate::wire::ids::{NodeId, QueryId};
use crate::wire::partition_map::PartitionMap;
use serde::{Deserialize, Serialize};
use weir_operators::plan::Distribution;
use weir_operators::{PhysicalPlan, Value};

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
    /// [`NetMessage::RaftCall`].
    RaftCall,
    /// [`NetMessage::RaftAnswer`].
    RaftAnswer,
    /// [`NetMessage::CatalogPropose`].
    CatalogPropose,
    /// [`NetMessage::CatalogDecided`].
    CatalogDecided,
    /// [`NetMessage::QueryBatchFilter`].
    QueryBatchFilter,
    /// [`NetMessage::QueryProfile`].
    QueryProfile,
}

impl MessageKind {
    /// All kinds, in protocol order.
    pub const ALL: [MessageKind; 24] = [
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
        MessageKind::CatalogRequest,
        MessageKind::CatalogReply,
        MessageKind::PartitionFetch,
        MessageKind::PartitionRows,
        MessageKind::PartitionInstall,
        MessageKind::PartitionInstalled,
        MessageKind::RaftCall,
        MessageKind::RaftAnswer,
        MessageKind::CatalogPropose,
        MessageKind::CatalogDecided,
        MessageKind::QueryBatchFilter,
        MessageKind::QueryProfile,
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
            MessageKind::CatalogRequest => "CatalogRequest",
            MessageKind::CatalogReply => "CatalogReply",
            MessageKind::PartitionFetch => "PartitionFetch",
            MessageKind::PartitionRows => "PartitionRows",
            MessageKind::PartitionInstall => "PartitionInstall",
            MessageKind::PartitionInstalled => "PartitionInstalled",
            MessageKind::RaftCall => "RaftCall",
            MessageKind::RaftAnswer => "RaftAnswer",
            MessageKind::CatalogPropose => "CatalogPropose",
            MessageKind::CatalogDecided => "CatalogDecided",
            MessageKind::QueryBatchFilter => "QueryBatchFilter",
            MessageKind::QueryProfile => "QueryProfile",
        }
    }
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
    /// A Raft RPC of the catalog log, between data nodes.
    RaftCall(Box<RaftCall>),
    /// The answer to a Raft RPC.
    RaftAnswer(Box<RaftAnswer>),
    /// A client proposes a change to the catalog log.
    CatalogPropose(Box<CatalogPropose>),
    /// The catalog log's decision on a proposal.
    CatalogDecided(CatalogDecided),
    /// The keys a channel's rows must have to be of use (a join's build keys).
    QueryBatchFilter(Box<BatchFilter>),
    /// What a fragment instance's operators output (EXPLAIN ANALYZE).
    QueryProfile(ProfileMessage),
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
            NetMessage::CatalogRequest(_) => MessageKind::CatalogRequest,
            NetMessage::CatalogReply(_) => MessageKind::CatalogReply,
            NetMessage::PartitionFetch(_) => MessageKind::PartitionFetch,
            NetMessage::PartitionRows(_) => MessageKind::PartitionRows,
            NetMessage::PartitionInstall(_) => MessageKind::PartitionInstall,
            NetMessage::PartitionInstalled(_) => MessageKind::PartitionInstalled,
            NetMessage::RaftCall(_) => MessageKind::RaftCall,
            NetMessage::RaftAnswer(_) => MessageKind::RaftAnswer,
            NetMessage::CatalogPropose(_) => MessageKind::CatalogPropose,
            NetMessage::CatalogDecided(_) => MessageKind::CatalogDecided,
            NetMessage::QueryBatchFilter(_) => MessageKind::QueryBatchFilter,
            NetMessage::QueryProfile(_) => MessageKind::QueryProfile,
        }
    }

    /// Bytes of rows the message carries (its batches' [`Batch`](weir_operators::Batch)
    /// data), about what its encoding takes beyond a few hundred bytes: the encoder sizes its
    /// buffer from it.
    pub fn rows_bytes(&self) -> usize {
        match self {
            NetMessage::QueryBatch(m) => m.rows.as_ref().map_or(0, |b| b.data_size()),
            NetMessage::WritePrepare(m) => {
                let parts: usize = m
                    .parts
                    .iter()
                    .map(|w| w.insert.data_size() + w.delete.as_ref().map_or(0, |d| d.data_size()))
                    .sum();
                let rewrite = m.rewrite.as_ref().map_or(0, |r| {
                    r.old.data_size() + r.new.as_ref().map_or(0, |n| n.data_size())
                });
                parts + rewrite
            }
            NetMessage::PartitionRows(m) => m.rows.iter().map(|b| b.data_size()).sum(),
            NetMessage::PartitionInstall(m) => m.rows.iter().map(|b| b.data_size()).sum(),
            _ => 0,
        }
    }

    /// The query (or write, or catalog or partition request) the message belongs to; 0 for
    /// [`Join`] and Raft's RPCs.
    pub fn query(&self) -> QueryId {
        match self {
            NetMessage::QueryStartRequest(m) => m.query,
            NetMessage::QueryStartResponse(m) => m.query,
            NetMessage::QueryBatch(m) => m.query,
            NetMessage::QueryBatchAck(m) => m.query,
            NetMessage::QueryClose(m) => m.query,
            NetMessage::QueryError(m) => m.query,
            NetMessage::QueryBatchStop(m) => m.query,
            NetMessage::QueryBatchFilter(m) => m.query,
            NetMessage::QueryProfile(m) => m.query,
            NetMessage::WritePrepare(m) => m.write,
            NetMessage::WriteCommit(m) => m.write,
            NetMessage::WriteAbort(m) => m.write,
            NetMessage::WriteReply(m) => m.write,
            NetMessage::Join(_) | NetMessage::RaftCall(_) | NetMessage::RaftAnswer(_) => 0,
            NetMessage::CatalogPropose(m) => m.request,
            NetMessage::CatalogDecided(m) => m.request,
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
        catalog_epoch: 0,
        analyze: false,
    };
    let compact = crate::wire::codec::encode(&NetMessage::QueryStartRequest(Box::new(req)))
        .map_or(0, |b| b.len());
    let (map, list) = crate::wire::partition_map::encoded_sizes(owners);
    (compact, compact - map + list)
}
