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
