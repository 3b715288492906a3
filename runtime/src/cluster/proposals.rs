//! A client's schema changes on data nodes of other processes: each is proposed to the data
//! nodes' catalog log ([`crate::replication::catalog_log`]) as a compare-and-set on the epoch
//! of the catalog it was made on, sent to the log's leader (found by asking any data node),
//! and refused when another client changed the catalog first: the client then fetches the
//! catalog again, and the statement is planned again on it ([`super::statements`]).

use super::remote::{random_u64, ASK_LIMIT};
use super::Inner;
use crate::error::{Error, Result};
use crate::replication::catalog_bytes::encode_catalog;
use crate::wire::ids::NodeId;
use crate::wire::messages::{CatalogPropose, Decision, NetMessage, Proposal};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use weir_planner::Catalog;

/// Longest a client tries to have a proposal decided (the log may be electing a leader).
pub const PROPOSE_LIMIT: Duration = Duration::from_secs(15);

impl Inner {
    /// The data nodes that are up.
    pub(super) fn live_data_nodes(&self) -> Vec<NodeId> {
        (0..self.config.nodes as NodeId)
            .filter(|&i| self.nodes[i as usize].up.load(Ordering::SeqCst))
            .collect()
    }

    /// Proposes `catalog`, changed from the one of this client's epoch, to the catalog log.
    /// Refused because the log moved on, `catalog` is replaced by the log's (undoing the
    /// change) and the error is [`Error::CatalogChanged`].
    pub(super) fn propose_catalog(&self, catalog: &mut Catalog) -> Result<()> {
        let remote = self.remote();
        let expected = remote.epoch.load(Ordering::SeqCst);
        let proposal = Proposal::Schema {
            id: random_u64() | 1,
            expected,
            catalog: encode_catalog(&catalog.snapshot()),
        };
        match self.propose(proposal)? {
            Decision::Accepted { epoch } => {
                remote.epoch.store(epoch, Ordering::SeqCst);
                Ok(())
            }
            Decision::Stale { epoch } => {
                let replies = self.ask(&self.live_data_nodes(), ASK_LIMIT);
                // Whatever this client's epoch, the log's catalog replaces the changed one.
                remote.epoch.store(0, Ordering::SeqCst);
                if !self.learn(catalog, &replies) {
                    remote.epoch.store(expected, Ordering::SeqCst);
                    return Err(Error::Connect(format!(
                        "the catalog log is at epoch {epoch} but no data node sent its catalog"
                    )));
                }
                Err(Error::CatalogChanged { epoch })
            }
            Decision::Malformed(why) => Err(Error::Invalid(format!(
                "the catalog log refused the catalog: {why}"
            ))),
            undecided => Err(Error::NodeDown(format!(
                "the catalog log did not decide: {undecided:?}"
            ))),
        }
    }

    /// Sends `proposal` to the log's leader and waits for the decision: a data node that is
    /// not the leader names it, one that cannot decide (an election under way) is asked
    /// again, for up to [`PROPOSE_LIMIT`].
    fn propose(&self, proposal: Proposal) -> Result<Decision> {
        let remote = self.remote();
        let nodes = self.config.nodes as NodeId;
        let up = |i: NodeId| self.nodes[i as usize].up.load(Ordering::SeqCst);
        let deadline = Instant::now() + PROPOSE_LIMIT;
        let mut target = remote.leader.load(Ordering::SeqCst) % nodes.max(1);
        let mut last_failure = String::from("no data node answered");
        while Instant::now() < deadline {
            if !up(target) {
                target = (target + 1) % nodes;
                if (0..nodes).all(|i| !up(i)) {
                    return Err(Error::NodeDown("every data node is down".into()));
                }
                continue;
            }
            let request = self.ids.fetch_add(1, Ordering::Relaxed);
            let rx = remote.membership.expect_decision(request);
            let message = NetMessage::CatalogPropose(Box::new(CatalogPropose {
                request,
                proposal: proposal.clone(),
            }));
            self.network.send(self.client, target, &message);
            let wait = ASK_LIMIT.min(deadline.saturating_duration_since(Instant::now()));
            let answer = rx.recv_timeout(wait);
            remote.membership.forget_decision(request);
            match answer {
                Ok((_, decided)) => match decided.decision {
                    Decision::NotLeader {
                        leader: Some(leader),
                    } if leader < nodes && leader != target => {
                        target = leader;
                        remote.leader.store(leader, Ordering::SeqCst);
                        continue;
                    }
                    Decision::NotLeader { .. } => {
                        last_failure = format!("node-{target} knows no leader of the catalog log");
                    }
                    Decision::Failed(why) => last_failure = format!("node-{target}: {why}"),
                    decision => {
                        remote.leader.store(target, Ordering::SeqCst);
                        return Ok(decision);
                    }
                },
                Err(_) => last_failure = format!("node-{target} did not answer in time"),
            }
            std::thread::sleep(Duration::from_millis(50));
            target = (target + 1) % nodes;
        }
        Err(Error::NodeDown(format!(
            "the catalog log decided nothing within {PROPOSE_LIMIT:?} (is a majority of the \
             data nodes up?): {last_failure}"
        )))
    }
}
