//! Read leases: a data node of a cluster of processes serves a read only while it can vouch
//! that it has applied every entry of the catalog log committed up to a moment less than
//! [`LEASE`] ago, so that it knows of every copy of its the log counts lost or behind.
//!
//! Every [`RENEW_EVERY`] the node notes the time, asks the log's leader for a read index
//! (the leader confirms with a quorum that it still leads, [`openraft::Raft::ensure_linearizable`],
//! and answers the index of its last committed entry), waits until its own copy of the log
//! has applied that far, and then holds a lease that runs [`LEASE`] from the time it noted.
//! A node cut off from the leader, paused, or in a minority holds no lease once its last one
//! ran out, and refuses reads (`Error::ReadRefused`): it cannot know what it missed.
//!
//! The other half is on the writer's side: a write that leaves a copy behind records it in the
//! log ([`crate::wire::messages::Proposal::Missed`]) and is acknowledged no sooner than
//! [`MISSED_ACK_DELAY`] after the record was first known. A node whose lease was confirmed
//! before the record was committed holds it no longer by then, and a lease confirmed after it
//! includes the record: no read that starts after the acknowledgement is served by the copy
//! that missed the write. Durations are measured on each process's monotonic clock; the
//! margin of `MISSED_ACK_DELAY` over `LEASE` covers clocks that run at slightly different
//! rates, not clocks that jump.

use super::peers::Peers;
use super::types::LogTypes;
use crate::wire::ids::NodeId;
use openraft::Raft;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// How long a confirmed read index vouches for a node's copies.
pub const LEASE: Duration = Duration::from_secs(1);

/// How often a node renews its lease.
pub const RENEW_EVERY: Duration = Duration::from_millis(200);

/// How long after a missed copy was first known a write that left it behind is acknowledged
/// at the earliest (see the module comment).
pub const MISSED_ACK_DELAY: Duration = Duration::from_millis(1250);

/// How long a renewal waits for the leader's answer and for the node to apply up to it.
const RENEW_LIMIT: Duration = Duration::from_millis(500);

/// A node's read lease: when the read index it holds was asked for, and how it was refused
/// last, for the error a refused read reports.
#[derive(Debug, Default)]
pub struct Lease {
    state: Mutex<LeaseState>,
    /// Wakes the renewal before its next tick (a read waits for the lease).
    wake: Notify,
}

#[derive(Debug, Default)]
struct LeaseState {
    /// When the read index of the lease held was asked for.
    asked: Option<Instant>,
    /// Why the last renewal failed, if it did.
    last_failure: Option<String>,
}

impl Lease {
    fn lock(&self) -> std::sync::MutexGuard<'_, LeaseState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The node has applied the log up to a read index asked for at `asked`.
    pub fn confirm(&self, asked: Instant) {
        let mut state = self.lock();
        if state.asked.is_none_or(|held| held < asked) {
            state.asked = Some(asked);
        }
        state.last_failure = None;
    }

    /// Asks for a renewal now.
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// A renewal failed: `why`.
    pub fn failed(&self, why: String) {
        self.lock().last_failure = Some(why);
    }

    /// Whether the node may serve reads now; why not, if it may not.
    pub fn check(&self) -> Result<(), String> {
        let state = self.lock();
        let why = |what: String| match &state.last_failure {
            Some(failure) => format!("{what} ({failure})"),
            None => what,
        };
        match state.asked {
            Some(asked) if asked.elapsed() < LEASE => Ok(()),
            Some(asked) => Err(why(format!(
                "its copies were last confirmed current by the catalog log's leader {} ms ago \
                 (a lease lasts {} ms)",
                asked.elapsed().as_millis(),
                LEASE.as_millis()
            ))),
            None => Err(why(
                "the catalog log's leader has not confirmed its copies current yet".into(),
            )),
        }
    }
}

/// Renews node `me`'s `lease` every [`RENEW_EVERY`] for as long as the log's runtime runs.
pub(super) async fn renew(raft: Raft<LogTypes>, peers: Peers, lease: std::sync::Arc<Lease>) {
    let me = peers.id;
    let mut tick = tokio::time::interval(RENEW_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = lease.wake.notified() => {}
        }
        let asked = Instant::now();
        match renew_once(&raft, &peers, me).await {
            Ok(()) => lease.confirm(asked),
            Err(why) => {
                tracing::debug!("node-{me}: the read lease was not renewed: {why}");
                lease.failed(why);
            }
        }
    }
}

/// Asks the leader for a read index and waits until this node has applied up to it.
async fn renew_once(raft: &Raft<LogTypes>, peers: &Peers, me: NodeId) -> Result<(), String> {
    let index = match raft.current_leader().await {
        None => return Err("no leader of the catalog log is known".into()),
        Some(leader) if leader == me as u64 => {
            match tokio::time::timeout(RENEW_LIMIT, raft.ensure_linearizable()).await {
                Ok(Ok(read)) => read.map(|l| l.index),
                Ok(Err(e)) => return Err(format!("this node no longer leads the log: {e}")),
                Err(_) => return Err("a quorum did not confirm this node leads the log".into()),
            }
        }
        Some(leader) => peers.read_index(leader, RENEW_LIMIT).await?,
    };
    if index.is_some() {
        raft.wait(Some(RENEW_LIMIT))
            .applied_index_at_least(index, "read lease")
            .await
            .map_err(|e| format!("this node did not apply the log up to the read index: {e}"))?;
    }
    Ok(())
}
