//! A node: its shared state ([`state`]: memory pool, running joins, live actors), what it
//! stores and every change to it ([`storage`]), the log and checkpoints that make the storage
//! durable ([`journal`]), the handle its actors reach it and other nodes through ([`handle`]),
//! what its actor accepts ([`inbox`]), the bounded sets it recognises duplicates by
//! ([`recent`]), and where its operators spill ([`spill`]).

pub mod handle;
pub mod inbox;
pub mod journal;
pub mod recent;
pub mod spill;
pub mod state;
pub mod storage;
pub mod versioned;
