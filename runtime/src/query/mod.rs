//! A query on its initiator: the placement of its fragments on nodes ([`placement`]), the
//! query actor that admits, launches and finishes it ([`actor`]), and what its caller reads:
//! the result channel, streams and results, rows as Rust types, and EXPLAIN ANALYZE's counts
//! (`profile`).

pub mod actor;
pub mod channel;
pub mod messages;
pub mod placement;
pub(crate) mod profile;
pub mod result;
pub mod rows;
pub mod stats;
