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

    /// Proposes `draft`, changed from the catalog of epoch `expected`, to the catalog log,
    /// and returns the epoch the log gave it. Refused because the log moved on, the client
    /// takes the log's catalog and the error is [`Error::CatalogChanged`]. The client's
    /// catalog is not locked while the log decides (queries and rejoins go on).
    pub(super) fn propose_schema(&self, draft: &Catalog, expected: u64) -> Result<u64> {
        let remote = self.remote();
        let proposal = Proposal::Schema {
            id: random_u64() | 1,
            expected,
            catalog: encode_catalog(&draft.snapshot()),
            backups: remote.backups.load(Ordering::SeqCst) as u32,
        };
        match self.propose(proposal)? {
            Decision::Accepted { epoch } => Ok(epoch),
            Decision::Stale { epoch } => {
                let replies = self.ask(&self.live_data_nodes(), ASK_LIMIT);
                let mut catalog = self.catalog.write().unwrap_or_else(|e| e.into_inner());
                self.learn(&mut catalog, &replies);
                if remote.epoch.load(Ordering::SeqCst) < epoch {
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

    /// Records in the catalog log that `partitions` of `table` take their first write
    /// ([`Proposal::Written`]).
    pub(super) fn record_written(&self, table: &str, partitions: &[u32]) -> Result<()> {
        let starts = self
            .remote()
            .incarnations
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(&n, &i)| (n, i))
            .collect();
        self.record(Proposal::Written {
            table: table.to_string(),
            partitions: partitions.to_vec(),
            starts,
        })
    }

    /// Records in the catalog log that data node `node` started without its data as
    /// `incarnation` ([`Proposal::Started`]).
    pub(super) fn record_started(&self, node: NodeId, incarnation: u64) -> Result<()> {
        self.record(Proposal::Started { node, incarnation })
    }

    /// Records in the catalog log that node `node`'s copies of `table`'s partitions missed
    /// a write, which gave each the version paired with it ([`Proposal::Missed`]).
    pub(super) fn record_missed(
        &self,
        node: NodeId,
        table: &str,
        missed: Vec<(u32, u64)>,
    ) -> Result<()> {
        let (partitions, versions) = missed.into_iter().unzip();
        self.record(Proposal::Missed {
            node,
            table: table.to_string(),
            partitions,
            versions,
        })
    }

    /// Records in the catalog log that node `node`'s lost copies of `table`'s partitions
    /// were refreshed, each to the version paired with it ([`Proposal::Repaired`]).
    pub(super) fn record_repaired(
        &self,
        node: NodeId,
        table: &str,
        repaired: Vec<(u32, u64)>,
    ) -> Result<()> {
        let (partitions, versions) = repaired.into_iter().unzip();
        self.record(Proposal::Repaired {
            node,
            table: table.to_string(),
            partitions,
            versions,
        })
    }

    fn record(&self, proposal: Proposal) -> Result<()> {
        match self.propose(proposal)? {
            Decision::Recorded => Ok(()),
            other => Err(Error::NodeDown(format!(
                "the catalog log did not record it: {other:?}"
            ))),
        }
    }

    /// Sends `proposal` to the log's leader and waits for the decision: a data node that is
    /// not the leader names it, one that cannot decide (an election under way) is asked
    /// again, for up to [`PROPOSE_LIMIT`].
    fn propose(&self, proposal: Proposal) -> Result<Decision> {
        let remote = self.remote();
        let nodes = self.config.nodes as NodeId;
        // Connected is enough: a node being joined is not marked up yet.
        let up = |i: NodeId| remote.transport.is_up(i);
        let deadline = Instant::now() + PROPOSE_LIMIT;
        let mut target = remote.leader.load(Ordering::SeqCst) % nodes.max(1);
        let mut last_failure = String::from("no data node answered");
        let mut redirects = 0u32;
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
                        // Nodes that still name a leader that is gone send the proposal
                        // round in a circle until an election ends: slow down after a few.
                        redirects += 1;
                        if redirects > 2 {
                            std::thread::sleep(Duration::from_millis(20));
                        }
                        continue;
                    }
                    Decision::NotLeader { .. } => {
                        last_failure = format!("node-{target} knows no leader of the catalog log");
                    }
                    Decision::Failed(why) => last_failure = format!("node-{target}: {why}"),
                    decision => {
                        remote.leader.store(target, Ordering::SeqCst);
                        // Decided: the log holds the entry.
                        remote.log_index.fetch_max(decided.index, Ordering::SeqCst);
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
