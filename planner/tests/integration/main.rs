//! The planner's integration tests, one module per subject, built as one test binary: one
//! crate to compile and one executable to link instead of one per file.
//!
//! Run one subject with `cargo test -p weir-planner --test integration <module>::`.

#[path = "../common/mod.rs"]
mod common;

mod alter;
mod cache;
mod ddl;
mod errors;
mod explain_joins;
mod fuzz;
mod optimizer;
mod plans;
mod recursive;
mod windows;
