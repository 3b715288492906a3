//! The `weir` command's integration tests (they run the built binary), one module per
//! subject, built as one test binary: one crate to compile and one executable to link instead
//! of one per file.
//!
//! Run one subject with `cargo test -p weir-cli --test integration <module>::`.

#[path = "../common/mod.rs"]
mod common;

mod arrow;
mod bench_cli;
mod chaos;
mod cli;
mod memory_budget;
mod multiprocess;
mod node;
mod node_tls;
mod processes;
mod serve;
mod soak;
mod tpch;
