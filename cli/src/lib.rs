//! # weir-cli
//!
//! The `weir` command's pieces, kept out of the `weir` library so that embedders compile no
//! command-line, plotting or progress-bar crates: scripts ([`script`]), sessions
//! ([`session`]), the shell ([`shell`]), the output formats ([`format`](mod@format)), progress display
//! ([`progress`]), logging ([`logging`]), the benchmarks ([`bench`](mod@bench)) and the soak
//! ([`soak`]).
//!
//! Everything the `weir` facade exports is re-exported here too, so the benchmarks name
//! `crate::Cluster`, `crate::demo` and the like as they did inside the library.

pub mod bench;
pub mod format;
pub mod logging;
pub mod progress;
pub mod runtime_args;
pub mod script;
pub mod session;
pub mod shell;
pub mod soak;

pub use weir::*;
