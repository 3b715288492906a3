//! Copies of partitions and the processes that keep them: where the copies live ([`copies`]),
//! replicated writes (two-phase, versioned), resync of stale copies, and what a data node knows
//! of its cluster (peers, catalog copy), with the tables of awaited replies they share.

pub mod catalog_bytes;
pub mod catalog_log;
pub mod copies;
pub mod membership;
pub mod multi_table;
pub mod resync;
pub mod waiters;
pub mod writes;
