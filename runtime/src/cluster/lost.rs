//! Copies lost by data nodes that started again without their data, as the catalog log
//! records them ([`crate::replication::catalog_log`]).
//!
//! A data node without a data directory (or with an empty one) comes back holding nothing,
//! and reports version 0 for every copy: alone, that cannot be told from a partition never
//! written. So the log records which partitions were ever written (before their first write
//! commits, [`Proposal::Written`](crate::wire::messages::Proposal::Written)), and, when a
//! client first meets such a node, its start
//! ([`Proposal::Started`](crate::wire::messages::Proposal::Started)): from that entry on, the
//! node's copies of every partition written before count as lost. A copy that missed a
//! committed write (its node down, or silent past the timeout) is recorded too, before the
//! write is acknowledged
//! ([`Proposal::Missed`](crate::wire::messages::Proposal::Missed)), so that a client that
//! connects while the current copies are down does not take it for current. A client does not take a
//! node's versions before its start is recorded, counts its lost copies stale (queries read
//! other copies, or fail naming the partition when there is none), refreshes them from live
//! copies when it can, and records each repair
//! ([`Proposal::Repaired`](crate::wire::messages::Proposal::Repaired)). Whoever connects, and
//! whenever, sees the same lost copies.

use super::connection::{LostCopy, Remote};
use super::Inner;
use crate::error::Result;
use crate::replication::catalog_log::lease::MISSED_ACK_DELAY;
use crate::replication::writes::WriteRecords;
use crate::wire::ids::NodeId;
use crate::wire::messages::{CatalogReply, LostCopies};
use std::cell::Cell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Instant;

thread_local! {
    /// The earliest time the write this thread runs may be acknowledged to its caller: it
    /// left a copy behind that data nodes may have vouched for until then
    /// ([`crate::replication::catalog_log::lease`]).
    static ACKNOWLEDGE_AT: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Holds the acknowledgement of the write this thread ran until no data node can still
/// serve a read of a copy that missed it: a no-op unless the write left a copy behind that
/// the client learnt of less than [`MISSED_ACK_DELAY`] ago. Called by the public write
/// entry points once their locks are released.
pub(super) fn hold_acknowledgement() {
    if let Some(at) = ACKNOWLEDGE_AT.with(Cell::take) {
        let wait = at.saturating_duration_since(Instant::now());
        if !wait.is_zero() {
            tracing::debug!(
                "a write left a copy behind: acknowledged in {} ms, when no node can vouch \
                 for that copy any more",
                wait.as_millis()
            );
            std::thread::sleep(wait);
        }
    }
}

/// The write this thread runs left behind a copy the client first knew lost at `known`.
fn acknowledge_after(known: Instant) {
    let at = known + MISSED_ACK_DELAY;
    ACKNOWLEDGE_AT.with(|cell| cell.set(Some(cell.get().map_or(at, |held| held.max(at)))));
}

impl Remote {
    /// Takes `lost` as the copies the catalog log counts lost, keeping when the client first
    /// knew each of those it knew already.
    pub(super) fn learn_lost(&self, lost: HashSet<LostCopy>) {
        let now = Instant::now();
        let mut known = self.lost.lock().unwrap_or_else(|e| e.into_inner());
        known.retain(|copy, _| lost.contains(copy));
        for copy in lost {
            known.entry(copy).or_insert(now);
        }
    }
}

/// The lost copies named by the reply that applied the catalog log furthest, and those of
/// them a start without data emptied.
pub(super) fn lost_copies(
    replies: &[(NodeId, CatalogReply)],
) -> (HashSet<LostCopy>, HashSet<LostCopy>) {
    let Some((_, newest)) = replies.iter().max_by_key(|(_, r)| r.log_index) else {
        return Default::default();
    };
    let copies = |of: fn(&LostCopies) -> &Vec<u32>| -> HashSet<LostCopy> {
        newest
            .lost
            .iter()
            .flat_map(|l| of(l).iter().map(|&p| (l.node, l.table.clone(), p)))
            .collect()
    };
    (copies(|l| &l.partitions), copies(|l| &l.emptied))
}

/// A copy's version as its node reported it, and whether a start of the node without its
/// data emptied it (it may have held writes that no other copy holds).
pub(super) type ReportedCopy = (u64, bool);

/// Copies of `table`'s partition `p` on `holders` (as `reported`, every one answered) that
/// become current although the catalog log counts every copy of the partition lost: a write
/// whose commit no copy answered in time (each copy paused, cut off or killed then) records
/// every copy behind, though one may have applied it, and the partition would have no current
/// copy for good. When every copy is up and none was emptied by a start of its node without
/// its data (whose lost writes no other copy may hold), the copies at the highest version hold
/// every acknowledged write (each was applied by a copy, whose version no write it missed
/// can lower, and which no write reaches while it is behind; versions follow one sequence
/// per partition), and only the write in doubt may be there or not. They are taken off
/// `lost` and returned, to be recorded repaired; the other copies stay behind and are
/// refreshed from them.
pub(super) fn promote_in_doubt(
    table: &str,
    p: u32,
    holders: &[NodeId],
    reported: &[ReportedCopy],
    lost: &mut HashSet<LostCopy>,
) -> Vec<LostCopy> {
    let all_lost = holders
        .iter()
        .all(|&n| lost.contains(&(n, table.to_string(), p)));
    let emptied = reported.iter().any(|&(_, emptied)| emptied);
    if holders.is_empty() || !all_lost || emptied {
        return Vec::new();
    }
    let highest = reported.iter().map(|&(v, _)| v).max().unwrap_or(0);
    let promoted: Vec<LostCopy> = holders
        .iter()
        .zip(reported)
        .filter(|(_, &(v, _))| v == highest)
        .map(|(&n, _)| (n, table.to_string(), p))
        .collect();
    for copy in &promoted {
        lost.remove(copy);
    }
    tracing::warn!(
        "partition {p} of {table} had no current copy (the catalog log counts every copy \
         behind); every copy is up: the copies at version {highest} are taken as current"
    );
    promoted
}

impl Inner {
    /// Records as repaired the copies [`promote_in_doubt`] took as current; a failure is
    /// only logged (the next client that learns the copies' state takes them again).
    pub(super) fn record_promoted(&self, promoted: Vec<LostCopy>) {
        let mut by_table: BTreeMap<(NodeId, String), Vec<(u32, u64)>> = BTreeMap::new();
        for (node, table, p) in promoted {
            // Current whatever write it missed: the one in doubt.
            by_table
                .entry((node, table))
                .or_default()
                .push((p, u64::MAX));
        }
        for ((node, table), partitions) in by_table {
            if let Err(e) = self.record_repaired(node, &table, partitions) {
                tracing::warn!(
                    "node-{node}'s copies of {table} taken as current were not recorded: {e}"
                );
            }
        }
    }

    /// Records the start of every node of `replies` that started without its data and whose
    /// start its copy of the catalog log does not show yet (each incarnation proposed once;
    /// `proposed` remembers). Returns the nodes still waiting for theirs to show. Nothing is
    /// recorded while the log holds no catalog: nothing can have been written.
    pub(super) fn record_starts(
        &self,
        replies: &[(NodeId, CatalogReply)],
        proposed: &mut HashSet<(NodeId, u64)>,
    ) -> Result<Vec<NodeId>> {
        if replies.iter().all(|(_, r)| r.epoch == 0) {
            return Ok(Vec::new());
        }
        let mut waiting = Vec::new();
        for (from, reply) in replies {
            let Some(incarnation) = reply.fresh_start else {
                continue;
            };
            if reply.start_recorded {
                continue;
            }
            if proposed.insert((*from, incarnation)) {
                tracing::info!("node-{from} started without its data: recording it");
                self.record_started(*from, incarnation)?;
            }
            waiting.push(*from);
        }
        Ok(waiting)
    }

    /// Records as repaired the lost copies among `refreshed` (node, table, partition) that
    /// the client knows of; a failure is only logged (the copy then counts as lost again for
    /// the next client, which refreshes it once more).
    pub(super) fn record_repairs(&self, refreshed: &HashMap<LostCopy, u64>) {
        let mut by_table: BTreeMap<(NodeId, String), Vec<(u32, u64)>> = BTreeMap::new();
        {
            let lost = self.remote().lost.lock().unwrap_or_else(|e| e.into_inner());
            for (copy, &version) in refreshed.iter().filter(|(c, _)| lost.contains_key(*c)) {
                by_table
                    .entry((copy.0, copy.1.clone()))
                    .or_default()
                    .push((copy.2, version));
            }
        }
        for ((node, table), repaired) in by_table {
            let done: Vec<LostCopy> = repaired
                .iter()
                .map(|&(p, _)| (node, table.clone(), p))
                .collect();
            match self.record_repaired(node, &table, repaired) {
                Ok(()) => {
                    let mut lost = self.remote().lost.lock().unwrap_or_else(|e| e.into_inner());
                    for copy in &done {
                        lost.remove(copy);
                    }
                }
                Err(e) => tracing::warn!(
                    "node-{node}'s repaired copies of {table} were not recorded: {e}"
                ),
            }
        }
    }
}

impl WriteRecords for Inner {
    fn first_writes(&self, table: &str, partitions: &[u32]) -> Result<()> {
        self.record_written(table, partitions)
    }

    /// Records the copies in the log (each with the version of the write it missed, so that
    /// a repair made from a copy read before that write does not count: another client may
    /// be refreshing it meanwhile), and counts them lost here; the write is acknowledged no
    /// sooner than [`MISSED_ACK_DELAY`] after the client first knew each of them lost
    /// ([`hold_acknowledgement`]).
    fn missed(&self, table: &str, copies: &[(NodeId, u32, u64)]) -> Result<()> {
        let mut by_node: BTreeMap<NodeId, Vec<(u32, u64)>> = BTreeMap::new();
        for &(n, p, version) in copies {
            by_node.entry(n).or_default().push((p, version));
        }
        for (node, missed) in by_node {
            let done: Vec<LostCopy> = missed
                .iter()
                .map(|&(p, _)| (node, table.to_string(), p))
                .collect();
            self.record_missed(node, table, missed)?;
            let now = Instant::now();
            let mut lost = self.remote().lost.lock().unwrap_or_else(|e| e.into_inner());
            for copy in done {
                let known = *lost.entry(copy).or_insert(now);
                acknowledge_after(known);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lost_all(holders: &[NodeId]) -> HashSet<LostCopy> {
        holders.iter().map(|&n| (n, "t".to_string(), 3)).collect()
    }

    #[test]
    fn the_copies_at_the_highest_version_become_current_when_every_copy_is_behind() {
        let mut lost = lost_all(&[0, 1, 2]);
        let promoted = promote_in_doubt(
            "t",
            3,
            &[0, 1, 2],
            &[(4, false), (5, false), (5, false)],
            &mut lost,
        );
        assert_eq!(
            promoted,
            vec![(1, "t".to_string(), 3), (2, "t".to_string(), 3)]
        );
        assert_eq!(lost, lost_all(&[0]));
    }

    #[test]
    fn nothing_becomes_current_while_a_copy_is_current_or_empty() {
        // A current copy: the others are refreshed from it.
        let mut lost = lost_all(&[0]);
        let reported = [(5, false), (4, false)];
        assert!(promote_in_doubt("t", 3, &[0, 1], &reported, &mut lost).is_empty());
        assert_eq!(lost, lost_all(&[0]));
        // A copy emptied by a start of its node without its data may have held writes no
        // other copy holds: the partition stays without a current copy.
        let mut lost = lost_all(&[0, 1]);
        let reported = [(0, true), (4, false)];
        assert!(promote_in_doubt("t", 3, &[0, 1], &reported, &mut lost).is_empty());
        assert_eq!(lost, lost_all(&[0, 1]));
        // Another partition's record changes nothing here.
        let mut lost = lost_all(&[0, 1]);
        let reported = [(2, false), (4, false)];
        assert!(promote_in_doubt("t", 4, &[0, 1], &reported, &mut lost).is_empty());
    }

    #[test]
    fn a_copy_that_never_applied_a_write_does_not_stop_the_others_becoming_current() {
        // The partition's first write, in doubt: node 0 was killed before it applied it
        // (and restarted from its data directory, or never restarted), node 1 applied it
        // while paused.
        let mut lost = lost_all(&[0, 1]);
        let reported = [(0, false), (1, false)];
        let promoted = promote_in_doubt("t", 3, &[0, 1], &reported, &mut lost);
        assert_eq!(promoted, vec![(1, "t".to_string(), 3)]);
        assert_eq!(lost, lost_all(&[0]));
    }
}
