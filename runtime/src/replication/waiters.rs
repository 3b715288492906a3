//! Replies awaited by request id: the node actor that receives a reply hands it to the thread
//! that waits for it. Replicated writes, catalog requests and resyncs each keep one table.

use crate::wire::ids::NodeId;
use crossbeam_channel::{Receiver, Sender};
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

/// Threads waiting for replies of type `R` to their requests, by request id.
pub struct Waiters<R> {
    waiting: Mutex<HashMap<u64, Sender<(NodeId, R)>>>,
}

impl<R> Default for Waiters<R> {
    fn default() -> Self {
        Waiters {
            waiting: Mutex::new(HashMap::new()),
        }
    }
}

impl<R> std::fmt::Debug for Waiters<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Waiters")
            .field("waiting", &self.waiting())
            .finish()
    }
}

impl<R> Waiters<R> {
    /// Starts waiting for the replies to `request`: each arrives on the returned channel with
    /// the node that sent it.
    pub fn register(&self, request: u64) -> Receiver<(NodeId, R)> {
        let (tx, rx) = crossbeam_channel::unbounded();
        self.lock().insert(request, tx);
        rx
    }

    /// Stops waiting for replies to `request`: later ones are dropped.
    pub fn unregister(&self, request: u64) {
        self.lock().remove(&request);
    }

    /// Hands `reply` from node `from` to the waiter of `request`; false when nobody waits
    /// for it (any more).
    pub fn deliver(&self, request: u64, from: NodeId, reply: R) -> bool {
        match self.lock().get(&request) {
            Some(tx) => tx.send((from, reply)).is_ok(),
            None => false,
        }
    }

    /// Requests waited for now.
    pub fn waiting(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<u64, Sender<(NodeId, R)>>> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_reach_their_waiter_until_it_stops_waiting() {
        let w: Waiters<&str> = Waiters::default();
        let rx = w.register(7);
        assert!(w.deliver(7, 2, "a"));
        assert!(!w.deliver(8, 2, "nobody waits"));
        assert_eq!(rx.try_recv().unwrap(), (2, "a"));
        w.unregister(7);
        assert!(!w.deliver(7, 1, "late"));
        assert_eq!(w.waiting(), 0);
    }
}
