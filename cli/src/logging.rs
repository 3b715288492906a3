//! The command's tracing subscriber: events the runtime logs go to standard error, filtered
//! by `RUST_LOG` (`RUST_LOG=weir=debug`, `RUST_LOG=weir_runtime=trace`, ...); nothing is
//! shown below warnings when it is unset.

use tracing_subscriber::EnvFilter;

/// Installs the subscriber (once; later calls do nothing).
pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}
