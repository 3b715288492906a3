//! When a partial aggregation stops grouping: one whose groups are nearly as many as the rows
//! it read saves its final phase almost nothing, while its hash table grows as large as its
//! input and every row costs a lookup in it that misses the cache. After
//! [`PROBE_ROWS`] rows, a partial aggregation with more than [`SKIP_RATIO`] groups per row
//! lets its rows through instead: it emits what it holds, then makes each row of a batch a
//! group of its own (no lookup: equal keys in one batch are not merged) and emits the batch's
//! states at once. The final phase, which merges partial
//! states whatever way they were made, gets the same answer. (DataFusion decides the same
//! way, with the same thresholds.)

/// Rows a partial aggregation reads before it decides.
pub(crate) const PROBE_ROWS: u64 = 100_000;

/// Groups per row read above which a partial aggregation lets its rows through.
pub(crate) const SKIP_RATIO: f64 = 0.8;

/// What a partial aggregation has seen, and whether it lets its rows through.
#[derive(Debug, Default)]
pub(crate) struct PartialProbe {
    rows: u64,
    skipping: bool,
}

impl PartialProbe {
    /// Whether the aggregation lets its rows through.
    pub(crate) fn skipping(&self) -> bool {
        self.skipping
    }

    /// Notes `rows` more rows read, with `groups` held now; true when the aggregation lets
    /// its rows through (from this batch on: it is decided once).
    pub(crate) fn observe(&mut self, rows: usize, groups: usize) -> bool {
        if !self.skipping && self.rows < PROBE_ROWS {
            self.rows += rows as u64;
            if self.rows >= PROBE_ROWS && groups as f64 > SKIP_RATIO * self.rows as f64 {
                self.skipping = true;
            }
        }
        self.skipping
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decides_once_after_the_probe_rows() {
        let mut nearly_distinct = PartialProbe::default();
        assert!(!nearly_distinct.observe(60_000, 59_000));
        assert!(nearly_distinct.observe(60_000, 118_000));
        // Decided: later batches let through whatever they hold.
        assert!(nearly_distinct.observe(10, 1));
        let mut reducing = PartialProbe::default();
        assert!(!reducing.observe(120_000, 1_000));
        // Decided the other way: it keeps grouping even when groups grow later.
        assert!(!reducing.observe(120_000, 239_000));
    }
}
