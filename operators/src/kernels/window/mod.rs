//! The window kernel: window functions over partitions of rows sorted by ORDER BY keys.
//!
//! - `op`: the operator ([`WindowOp`]): buffering (accounted in its reservation), one sort
//!   of a permutation by partition and ORDER BY keys (the sort kernel's), the evaluation,
//!   and the output in input order; with a per-partition limit, the early cut of a top-N.
//! - `layout`: partition and peer-group boundaries, found once over the sorted rows.
//! - `frame`: each row's frame (`ROWS`, `RANGE`, `GROUPS`, EXCLUDE) with forward-only
//!   pointers.
//! - `functions`: one function's column: its frame, then one of
//! - `ranking` (ROW_NUMBER, RANK, DENSE_RANK, PERCENT_RANK, CUME_DIST, NTILE),
//!   `navigation` (LAG, LEAD, FIRST_VALUE, LAST_VALUE, NTH_VALUE) and `aggregates` (COUNT,
//!   SUM, AVG, MIN, MAX over frames: running sums, and a `segment_tree` for sliding MIN,
//!   MAX and floating-point sums);
//! - `cells`: result columns gathered from the rows a function picked.

mod aggregates;
mod cells;
mod frame;
mod functions;
mod layout;
mod navigation;
mod op;
mod ranking;
mod segment_tree;

pub use op::WindowOp;
