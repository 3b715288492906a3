//! What an operator actor reports to its fragment.

use actix::prelude::*;

/// Operator → fragment: the operator actor has stopped.
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct OpStopped;

/// Operator → fragment: the operator failed.
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct OpFailed(pub weir_operators::Error);

/// What every operator actor reports to its fragment.
#[derive(Clone)]
pub struct FragmentLink {
    /// Stop notifications.
    pub stopped: Recipient<OpStopped>,
    /// Failure notifications.
    pub failed: Recipient<OpFailed>,
}
