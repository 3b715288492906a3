//! The breaker's messages: what a pool tells its supervisor and its waiting producers, and
//! what the supervisor tells a hash join.
//!
//! | message | sent by | handled by |
//! |---|---|---|
//! | [`CheckMemory`] | a pool crossing its limit | the node's [`SupervisorActor`](crate::memory::supervisor::SupervisorActor) |
//! | [`MemoryFreed`] | a pool releasing memory | producers waiting for room: operator, source and exchange actors |
//! | [`Kill`] | the supervisor | a running hash join's operator actor |
//! | [`Revoke`] | the supervisor | an operator actor whose kernel can spill (sort, aggregation, hash join) |

use actix::prelude::*;

/// Sent to the supervisor when the breaker may need attention.
#[derive(Message, Debug, Clone, Copy)]
#[rtype(result = "()")]
pub struct CheckMemory;

/// Pool → waiting producer: memory was released on the pool it waits on; try again.
#[derive(Message, Debug, Clone, Copy)]
#[rtype(result = "()")]
pub struct MemoryFreed;

/// Supervisor → join: stop now, the breaker killed you. Answers whether the join was still
/// running (a join that had finished is not killed).
#[derive(Message, Debug, Clone, Copy)]
#[rtype(result = "bool")]
pub struct Kill;

/// Supervisor → an operator that can spill: write your state to disk and free its memory, the
/// breaker needs it back (asked before any kill). Answers the bytes freed.
#[derive(Message, Debug, Clone, Copy)]
#[rtype(result = "usize")]
pub struct Revoke;
