//! Both ends of an exchange between fragments ([`sender`], [`receiver`]), what they are sent
//! ([`messages`]), and the node's [`router::Router`], which carries their batches, acks and
//! stops between the actors of one node and hands them over when they come from another.
//!
//! The sending end holds back its newest batch per channel so that the final one travels
//! flagged `last`: a fragment whose result fits one batch sends exactly one message. Small
//! parts (a hash exchange splits every input batch among its targets) are appended to the held
//! batch while it stays within the batch row target, so a receiver gets batches of about the
//! plan's batch size, not a fraction of it; what is held goes when the next part would not
//! fit, or at the end of the input. Each channel has credits
//! of batches and of bytes, as a local edge has (see [`crate::exec::flow`]): the sender starts with
//! the whole window, and the receiving end acks every batch it hands on (under Lean, all but
//! the last), giving back one batch and the batch's bytes ([`Batch::data_size`](weir_operators::Batch::data_size), the same on
//! both ends). A batch larger than the byte window goes alone, when nothing is in flight.
//!
//! Memory: what the sender holds (batches waiting for credit) is accounted on its node, with
//! the reservations its input arrived with (split among the parts a batch is hashed into; if
//! the parts need more, the sender waits for room on its node holding them, and takes no more
//! input meanwhile). Before a batch leaves for its receiver it is accounted on the receiver's
//! node: the sender reserves it there (on its own node the reservation simply moves), and the
//! reservation travels with the message and stays with the batch until the receiver's
//! consumer takes it. When the receiver's node has no room, the channel waits, holding its
//! batches, in that node's queue of waiters. So a batch is accounted on some node all the
//! way, and in Guarded mode no node goes over its budget for it.

pub mod messages;
pub mod receiver;
pub mod router;
pub mod sender;
