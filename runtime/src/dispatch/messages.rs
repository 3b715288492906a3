//! What a fragment actor accepts from its node and its query.

use actix::prelude::*;

/// Close the fragment: stop all its actors.
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct CloseFragment;
