//! A node: its shared state ([`state`]: memory pool, running joins, live actors), what it
//! stores and every change to it ([`storage`]), the log and checkpoints that make the storage
//! durable ([`journal`]), the handle its actors reach it and other nodes through ([`handle`]),
//! what its actor accepts ([`inbox`]), and the bounded sets it recognises duplicates by
//! ([`recent`]).

pub mod handle;
pub mod inbox;
pub mod journal;
pub mod recent;
pub mod state;
pub mod storage;
