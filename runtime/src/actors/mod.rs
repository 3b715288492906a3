//! The actors of the runtime. Each is thin: it moves batches and credits and calls a kernel
//! from `weir_operators` to do the work.
//!
//! - [`operator::OperatorActor`]: one per non-leaf operator of a fragment.
//! - [`source::SourceActor`]: table scans and constant rows.
//! - [`exchange::ExchangeRecvActor`] / [`exchange::ExchangeSendActor`]: the ends of an
//!   exchange between fragments.
//! - [`fragment::FragmentActor`]: owns one fragment instance's operator actors.
//! - [`node::NodeActor`]: one per node; routes protocol messages and starts fragments.
//! - [`query::QueryActor`]: one per query on the initiator; schedules it and streams results.
//! - [`protocol`]: the messages they send each other.

pub mod exchange;
pub mod fragment;
pub mod node;
pub mod operator;
pub mod protocol;
pub mod query;
pub mod source;
pub mod supervisor;

/// Whether the thread's runtime is gone: an arbiter that shuts down drops its actors' tasks,
/// and actix starts an actor that never ran while dropping it. Such an actor must not set
/// timers or start children (there is no runtime to hold them); it only stops.
pub(crate) fn runtime_gone() -> bool {
    tokio::runtime::Handle::try_current().is_err()
}
