//! The contract between a kernel and whatever drives it: the [`Operator`] trait (push input,
//! report an input's end, pull output), how it wants its inputs fed ([`InputOrder`]), what it
//! gets from its surroundings ([`ExecContext`]), and [`drain`], the driver of tests and
//! benchmarks.

use crate::batch::{Batch, DEFAULT_BATCH_SIZE};
use crate::error::Result;
use crate::expr::Expr;
use crate::kernels::key_filter::KeyFilter;
use crate::spill::SpillSpace;
use crate::value::Value;
use std::sync::Arc;

/// How an operator wants its inputs fed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputOrder {
    /// Any input, any time.
    Any,
    /// Input 0 completely, then input 1, and so on (a hash join's build side before its probe).
    Sequential,
}

/// An operator over one or more inputs, driven by push (input) and pull (output).
///
/// The driver alternates: while [`has_output`](Operator::has_output) is true it calls
/// [`next_output`](Operator::next_output) (when it can take a batch); only once nothing is
/// pending does it [`push`](Operator::push) the next input batch or report an input's
/// [`finish`](Operator::finish). [`drain`] does the pulling for tests and benchmarks.
pub trait Operator: Send {
    /// Short name (`"HashJoin"`, `"Filter"`, ...).
    fn name(&self) -> &'static str;

    /// How inputs must be fed.
    fn input_order(&self) -> InputOrder {
        InputOrder::Any
    }

    /// With [`InputOrder::Sequential`], the port that must be fed completely first (a hash
    /// join's build side, which may be port 1). The runtime feeds that port to its end, then
    /// the others in order.
    fn first_port(&self) -> usize {
        0
    }

    /// Accepts one batch from input `port`. Only called while
    /// [`has_output`](Operator::has_output) is false; the output it leads to, if any, is
    /// handed over by [`next_output`](Operator::next_output).
    fn push(&mut self, port: usize, batch: Batch) -> Result<()>;

    /// Input `port` has ended. Only called while [`has_output`](Operator::has_output) is
    /// false. Once every input has ended and `next_output` has returned `None`, the operator
    /// has emitted all of its output.
    fn finish(&mut self, port: usize) -> Result<()>;

    /// The next output batch: non-empty, at most `batch_size` rows. `None` when the operator
    /// has nothing more to give until it gets more input (or ever, once every input ended);
    /// after `None`, [`has_output`](Operator::has_output) is false.
    fn next_output(&mut self) -> Result<Option<Batch>>;

    /// Whether output is pending: a call to [`next_output`](Operator::next_output) would make
    /// progress (it may still return `None` if what remained turned out to produce no rows).
    fn has_output(&self) -> bool;

    /// True once the operator needs no more input (a satisfied LIMIT): the runtime may cancel
    /// its inputs, and ends its output once the pending output is drained.
    fn is_done(&self) -> bool {
        false
    }

    /// Once its first input (with [`InputOrder::Sequential`]) has ended: a filter of the
    /// keys a row of its next input must have to produce anything (a hash join's build keys,
    /// when its probe rows without a match produce nothing), with those keys' expressions
    /// over that input's columns. The runtime sends it to the producers of that input (an
    /// exchange's senders, a scan), which drop the rows it rules out before they travel or
    /// are copied. Taken once; `None` when there is none.
    fn probe_filter(&mut self) -> Option<(KeyFilter, Vec<Expr>)> {
        None
    }

    /// Bytes of state held now (what its reservation accounts).
    fn memory_size(&self) -> usize {
        0
    }

    /// Bytes of state the operator could give back now by spilling them to disk
    /// ([`revoke`](Operator::revoke)); 0 when it cannot (no spill space, nothing held, output
    /// pending, or an operator that does not spill).
    fn revocable(&self) -> usize {
        0
    }

    /// Spills the state [`revocable`](Operator::revocable) counts to disk and frees its
    /// memory (the node's memory circuit breaker asks, before it kills anything). Only called
    /// while [`has_output`](Operator::has_output) is false. Does nothing when nothing is
    /// revocable.
    fn revoke(&mut self) -> Result<()> {
        Ok(())
    }
}

/// Pulls every pending output batch of `op` into `out` (for tests and benchmarks; the runtime
/// pulls only as far as its output edge has credit).
pub fn drain(op: &mut dyn Operator, out: &mut Vec<Batch>) -> Result<()> {
    while let Some(b) = op.next_output()? {
        out.push(b);
    }
    Ok(())
}

/// The error for a push or finish while output is pending (a driver bug).
pub(crate) fn output_pending(op: &str) -> crate::Error {
    crate::Error::Internal(format!("{op} was fed input while its output was pending"))
}

/// The refusal an operator spills on when the breaker revokes its memory
/// ([`Operator::revoke`]): spilling for the breaker takes the path a refused reservation does.
pub(crate) fn revoked() -> crate::Error {
    crate::Error::Memory("memory revoked by the memory circuit breaker".into())
}

/// What a kernel needs from its surroundings.
#[derive(Clone)]
pub struct ExecContext {
    /// Bound parameter values (`Expr::Param(i)` reads `params[i]`).
    pub params: Arc<Vec<Value>>,
    /// Rows per output batch.
    pub batch_size: usize,
    /// Where an operator refused memory spills its state; `None`: it fails instead.
    pub spill: Option<Arc<SpillSpace>>,
}

impl ExecContext {
    /// A context with the given parameters and the default batch size.
    pub fn new(params: Vec<Value>) -> Self {
        ExecContext {
            params: Arc::new(params),
            batch_size: DEFAULT_BATCH_SIZE,
            spill: None,
        }
    }

    /// The context, spilling into `space` when memory is refused.
    pub fn with_spill(mut self, space: Arc<SpillSpace>) -> Self {
        self.spill = Some(space);
        self
    }
}
