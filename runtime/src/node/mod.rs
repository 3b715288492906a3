//! A node: its shared state ([`state`]: stored partitions, memory pool, running joins, live
//! actors), the handle its actors reach it and other nodes through ([`handle`]), and what its
//! actor accepts ([`inbox`]).

pub mod handle;
pub mod inbox;
pub mod state;
