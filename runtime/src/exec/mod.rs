//! Executing a fragment's operators: credit-based flow control between producers and
//! consumers ([`flow`], over the windows and counters of [`edge`]), the operator and source
//! actors that run kernels from `weir_operators` (a kernel's panic made its query's failure
//! by `guard`), the messages they exchange ([`messages`]), and how the actor threads wait
//! for work ([`idle`]).

pub mod edge;
pub mod flow;
pub(crate) mod guard;
pub mod idle;
pub mod messages;
pub mod operator;
pub mod source;

/// Whether the thread's runtime is gone: an arbiter that shuts down drops its actors' tasks,
/// and actix starts an actor that never ran while dropping it. Such an actor must not set
/// timers or start children (there is no runtime to hold them); it only stops.
pub(crate) fn runtime_gone() -> bool {
    tokio::runtime::Handle::try_current().is_err()
}
