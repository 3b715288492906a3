//! EXPLAIN ANALYZE's counts on the initiator: each fragment instance reports, once it
//! stopped, what its operators output ([`ProfileMessage`]); they are summed per operator
//! here, and the query waits until every instance it started has reported (or a bounded
//! time: an instance on a node that died never does).

use crate::query::stats::OperatorProfile;
use crate::wire::messages::ProfileMessage;
use std::collections::BTreeMap;
use std::time::Duration;

/// The counts of one run of a query, as its instances report them.
#[derive(Debug, Default)]
pub(crate) struct Profile {
    /// Instances that have not reported yet.
    pending: usize,
    /// `(fragment, operator)` → rows, batches and nanoseconds of work, summed over the
    /// instances.
    counts: BTreeMap<(u32, u32), (u64, u64, u64)>,
}

impl Profile {
    /// The counts of a run of `instances` fragment instances, none reported yet.
    pub(crate) fn expecting(instances: usize) -> Self {
        Profile {
            pending: instances,
            counts: BTreeMap::new(),
        }
    }

    /// Adds one instance's report.
    pub(crate) fn add(&mut self, report: &ProfileMessage) {
        self.pending = self.pending.saturating_sub(1);
        for op in &report.operators {
            let entry = self
                .counts
                .entry((report.fragment, op.operator))
                .or_default();
            entry.0 += op.rows;
            entry.1 += op.batches;
            entry.2 = entry.2.saturating_add(op.busy_nanos);
        }
    }

    /// Whether every instance has reported.
    pub(crate) fn is_complete(&self) -> bool {
        self.pending == 0
    }

    /// The counts per operator, by fragment and operator number.
    pub(crate) fn operators(&self) -> Vec<OperatorProfile> {
        self.counts
            .iter()
            .map(
                |(&(fragment, operator), &(rows, batches, busy))| OperatorProfile {
                    fragment,
                    operator,
                    rows,
                    batches,
                    busy: Duration::from_nanos(busy),
                },
            )
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::messages::OperatorCounts;

    #[test]
    fn reports_of_instances_are_summed_per_operator() {
        let report = |fragment, rows: &[u64]| ProfileMessage {
            query: 1,
            fragment,
            operators: rows
                .iter()
                .enumerate()
                .map(|(i, &r)| OperatorCounts {
                    operator: i as u32,
                    rows: r,
                    batches: 1,
                    busy_nanos: 1_000,
                })
                .collect(),
        };
        let mut p = Profile::expecting(3);
        p.add(&report(1, &[10, 40]));
        p.add(&report(1, &[5, 20]));
        assert!(!p.is_complete());
        p.add(&report(0, &[15]));
        assert!(p.is_complete());
        let ops = p.operators();
        assert_eq!(ops.len(), 3);
        assert_eq!((ops[0].fragment, ops[0].rows, ops[0].batches), (0, 15, 1));
        assert_eq!((ops[1].operator, ops[1].rows, ops[1].batches), (0, 15, 2));
        assert_eq!((ops[2].operator, ops[2].rows), (1, 60));
        assert_eq!(ops[2].busy, Duration::from_micros(2));
    }
}
