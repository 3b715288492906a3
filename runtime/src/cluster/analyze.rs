//! EXPLAIN ANALYZE: a query run with its operators counting what they output, then its plan
//! described with the counts beside each operator (rows, batches, and the time its kernel
//! worked), and a last line with the rows answered, the time taken and the messages sent
//! between nodes.

use super::Cluster;
use crate::error::Result;
use crate::query::stats::OperatorProfile;
use crate::wire::messages::MessageKind;
use std::collections::HashMap;
use std::fmt::Write;
use std::sync::Arc;
use std::time::Instant;
use weir_operators::Value;
use weir_planner::QueryPlan;

impl Cluster {
    /// Runs `plan` with `params` to its end, its rows read and dropped, and describes it as
    /// EXPLAIN does, each operator's line ending with the rows and batches it output (summed
    /// over its fragment's instances; none for an operator that reported nothing, as one on
    /// a node that died).
    pub(super) fn explain_analyzed(
        &self,
        plan: &Arc<QueryPlan>,
        params: &[Value],
    ) -> Result<String> {
        let started = Instant::now();
        let mut stream = self.run_with(plan.clone(), params, true)?;
        let mut rows = 0;
        for batch in stream.by_ref() {
            rows += batch?.num_rows();
        }
        let took = started.elapsed();
        let stats = stream.stats().cloned().unwrap_or_default();
        let counts: HashMap<(u32, u32), OperatorProfile> = stats
            .profile
            .iter()
            .map(|p| ((p.fragment, p.operator), *p))
            .collect();
        let mut text = self.explain_plan_with(plan, params, &|fragment, operator| {
            let p = counts.get(&(fragment, operator))?;
            let mut note = format!("rows={} batches={}", p.rows, p.batches);
            if !p.busy.is_zero() {
                let _ = write!(note, " time={:.3} ms", p.busy.as_secs_f64() * 1e3);
            }
            Some(note)
        });
        // The reports the counts came by are not the query's own messages.
        let reports = stats.messages.count(MessageKind::QueryProfile);
        let messages = stats.messages.total.saturating_sub(reports);
        let _ = write!(
            text,
            "Execution: {rows} row{} in {:.3} ms, {messages} message{} between nodes",
            if rows == 1 { "" } else { "s" },
            took.as_secs_f64() * 1e3,
            if messages == 1 { "" } else { "s" },
        );
        if stats.attempts > 1 {
            let _ = write!(text, ", {} attempts", stats.attempts);
        }
        Ok(text)
    }
}
