//! # weir-storage
//!
//! Durable storage for weir's nodes, with no actors: a write-ahead log whose records are
//! acknowledged once durable, with group commit ([`log`]); checkpoints of a node's partitions
//! as columnar files under a manifest ([`checkpoint`]); the framing that makes a record read
//! back whole or not at all ([`frame`]); and the file-system seam they work through
//! ([`disk`]), with a disk that fails on purpose for tests ([`faulty`]).
//!
//! What a record means is the runtime's business: here a record is bytes.

pub mod checkpoint;
pub mod disk;
pub mod error;
pub mod faulty;
pub mod frame;
pub mod log;

pub use error::{Result, StorageError};
pub use log::Durability;
