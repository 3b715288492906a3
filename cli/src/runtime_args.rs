//! The runtime flags shared by the commands that build a cluster in this process, `weir
//! serve` and the benchmarks ([`RuntimeArgs`]).

use std::time::Duration;
use weir_runtime::ClusterBuilder;

/// The runtime flags of the commands that build a cluster: `--idle-spin-us` (how
/// long node threads and waiting callers spin after their last work before they sleep) and
/// `--node-threads` (how many actor threads the nodes share).
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct RuntimeArgs {
    /// Microseconds node threads and waiting callers spin before they sleep (default: the
    /// runtime's own, `ClusterBuilder::idle_spin`; 0 sleeps at once).
    #[arg(long = "idle-spin-us")]
    pub idle_spin_us: Option<u64>,
    /// Actor threads the nodes share (default: the runtime's own, `ClusterBuilder::threads`:
    /// one per core, at most one per node).
    #[arg(long = "node-threads", value_parser = clap::value_parser!(u64).range(1..))]
    pub node_threads: Option<u64>,
}

impl RuntimeArgs {
    /// `builder` with the flags' settings, where given.
    pub fn apply(self, mut builder: ClusterBuilder) -> ClusterBuilder {
        if let Some(us) = self.idle_spin_us {
            builder = builder.idle_spin(Duration::from_micros(us));
        }
        if let Some(n) = self.node_threads {
            builder = builder.threads(usize::try_from(n).unwrap_or(usize::MAX));
        }
        builder
    }
}
