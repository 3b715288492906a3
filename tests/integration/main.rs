//! The workspace's integration tests, one module per subject, built as one test binary: one
//! crate to compile and one executable to link instead of one per file. (`join_backpressure`
//! stays a binary of its own: it counts the heap with its own global allocator.)
//!
//! Run one subject with `cargo test --test integration <module>::`, e.g. `slt::`.

#[path = "../common/mod.rs"]
mod common;

mod admission_estimate;
mod alter_table;
mod async_api;
mod backpressure;
mod bad_input;
mod breaker;
mod caches;
mod cleanup;
mod copy_columns;
mod ddl;
mod defaults;
mod distributed;
mod durability;
mod explain_analyze;
mod external;
mod faults;
mod foreign_key_actions;
mod foreign_keys;
mod hostile;
mod hostile_bytes;
mod join_chains;
mod join_filters;
mod join_plans;
mod join_properties;
mod layout;
mod on_conflict;
mod prepared;
mod properties;
mod protocol;
mod recursive;
mod replication;
mod seed_queries;
mod sequences;
mod slt;
mod spill;
mod sql_limits;
mod transport;
mod truncate;
mod typed_errors;
mod windows;
mod write_pieces;
