//! The messages of a query's run: start requests and responses, batches and their acks and
//! stops, closes and failures, and the workflow they follow.

use crate::error::ErrorKind;
use crate::wire::ids::{NodeId, QueryId};
use crate::wire::partition_map::PartitionMap;
use serde::{Deserialize, Serialize};
use weir_operators::kernels::key_filter::KeyFilter;
use weir_operators::plan::Distribution;
use weir_operators::{Batch, Expr, PhysicalPlan, Value};

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
    /// The epoch of the catalog the query was planned on (a client of data nodes of other
    /// processes; 0 in process): a data node whose catalog log is further refuses to scan a
    /// table dropped or changed since.
    pub catalog_epoch: u64,
    /// EXPLAIN ANALYZE: the instance reports what its operators output when it stops
    /// ([`ProfileMessage`]).
    pub analyze: bool,
}

/// Node → initiator, for EXPLAIN ANALYZE only: what the operators of a fragment instance
/// output, sent once the instance stopped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileMessage {
    /// Query.
    pub query: QueryId,
    /// Fragment.
    pub fragment: u32,
    /// One entry per operator of the fragment's plan.
    pub operators: Vec<OperatorCounts>,
}

/// What one operator of a fragment instance output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperatorCounts {
    /// The operator's place in the fragment's plan: its number in a pre-order walk (the root
    /// 0, then each input's subtree in port order).
    pub operator: u32,
    /// Rows it output.
    pub rows: u64,
    /// Batches it output.
    pub batches: u64,
    /// Nanoseconds its kernel spent working (0 for an operator without a kernel, as an
    /// exchange's receiving end).
    pub busy_nanos: u64,
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
    /// Refused because a table the fragment scans was dropped or changed at a catalog epoch
    /// after the request's: the node's epoch (0 otherwise).
    pub catalog_epoch: u64,
    /// Refused because the node cannot confirm that the copies it would read are current
    /// (no fresh read lease of the catalog log, or a copy the log counts lost): `error` says
    /// why; the client learns the copies' state again and retries.
    #[serde(default)]
    pub read_refused: bool,
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

/// Receiver → sender: the keys the rows of an exchange channel must have to be of use at the
/// receiving end (a hash join's build keys there, see [`KeyFilter`]). The sender drops the
/// rows bound for that channel that the filter rules out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchFilter {
    /// Query.
    pub query: QueryId,
    /// Exchange.
    pub exchange: u32,
    /// The filter.
    pub filter: KeyFilter,
    /// The keys it was made for, as expressions over the rows the channel carries: a sender
    /// that routes by other keys ignores it.
    pub keys: Vec<Expr>,
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
