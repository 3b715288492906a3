//! Join kernels: the hash join for equi-joins ([`HashJoinOp`]) and the nested-loop join for
//! joins without equality keys ([`NestedLoopJoinOp`]), for every
//! [`JoinType`](crate::plan::JoinType) and either build side, as a [`JoinSpec`] says (module
//! `spec`, with what the join type means for each build side).
//!
//! Both receive their build side completely first and hold it in memory (accounted), then
//! stream the probe side through it one probe batch at a time. What differs is how candidate
//! row pairs are found (hash chains vs. blocks of the cross product); what a block of
//! candidates turns into, which matches are recorded and which unmatched rows are emitted
//! afterwards is shared, in module `output`: matching pairs (inner and outer joins), probe rows
//! without a match after each probe batch (outer joins preserving the probe side, anti joins
//! probing the left side), and build rows after the whole probe input (outer joins preserving
//! the build side, semi and anti joins building the left side).
//!
//! Refused memory with a spill space in its context, the hash join spills instead of failing:
//! it becomes a grace hash join that partitions both sides to disk by key hash and joins them
//! partition by partition (module `grace`). The nested-loop join does not spill.

mod grace;
mod hash;
mod index;
mod keys;
mod nested_loop;
mod output;
mod spec;

pub use hash::HashJoinOp;
pub use nested_loop::NestedLoopJoinOp;
pub use spec::JoinSpec;
