//! Memory circuit breaker settings, join modes, kill policies, backoff, health and the
//! breaker's counters.

use rand::rngs::StdRng;
use rand::RngExt;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How hash joins treat memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum JoinMode {
    /// The old hash join, kept for comparison: never consults the breaker; a node whose
    /// accounted memory goes over its budget runs out of memory and crashes.
    Legacy,
    /// Reservations go through the memory circuit breaker (the default).
    #[default]
    Guarded,
}

/// Which running hash joins a breaker trip kills.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KillPolicy {
    /// Half of them, chosen at random (seeded).
    #[default]
    RandomHalf,
    /// The half holding the largest reservations.
    LargestHalf,
}

/// Breaker thresholds, backoff and admission settings.
#[derive(Debug, Clone, PartialEq)]
pub struct BreakerConfig {
    /// Fraction of the budget at which the breaker opens (default 0.85).
    pub limit: f64,
    /// Fraction of the budget below which it closes again (default 0.70).
    pub reset: f64,
    /// First backoff delay (default 20 ms): a query waiting for admission looks at the queue
    /// again after about `base × 2^n` on its `n`th look (sooner when memory comes back).
    pub base: Duration,
    /// Longest backoff delay (default 2 s).
    pub cap: Duration,
    /// Runs of a query on other copies after a node it used was lost (default 8). Waiting
    /// for admission has no attempt limit: it ends at the query's deadline.
    pub attempts: u32,
    /// Queries that may wait for admission at once (default 4096); one more fails at once
    /// as overloaded.
    pub queue: usize,
    /// Most queries admitted at once that build hash joins on one node (default `None`: as
    /// many as the cluster has actor threads, [`ClusterBuilder::node_threads`]). More joins
    /// at once than threads to run them only hold more memory and crowd each other out of
    /// the caches: on 2 cores, 16 joins running side by side cost each about 1.5 times the
    /// CPU of one alone.
    ///
    /// [`ClusterBuilder::node_threads`]: crate::ClusterBuilder::node_threads
    pub joins_per_node: Option<usize>,
    /// Re-enqueue queries whose join was killed (default true).
    pub retry_killed: bool,
    /// Which joins to kill.
    pub kill_policy: KillPolicy,
    /// How often the supervisor checks its node (default 10 ms).
    pub tick: Duration,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        BreakerConfig {
            limit: 0.85,
            reset: 0.70,
            base: Duration::from_millis(20),
            cap: Duration::from_secs(2),
            attempts: 8,
            queue: 4096,
            joins_per_node: None,
            retry_killed: true,
            kill_policy: KillPolicy::RandomHalf,
            tick: Duration::from_millis(10),
        }
    }
}

impl BreakerConfig {
    /// The delay before retry `attempt` (0-based): `d = min(cap, base × 2^attempt)`, with
    /// "equal jitter": uniformly in `[d/2, d]`.
    pub fn backoff(&self, attempt: u32, rng: &mut StdRng) -> Duration {
        let d = self
            .base
            .saturating_mul(1u32 << attempt.min(30))
            .min(self.cap);
        let half = d / 2;
        let nanos = half.as_nanos() as u64;
        half + Duration::from_nanos(if nanos == 0 {
            0
        } else {
            rng.random_range(0..=nanos)
        })
    }

    /// The bounds `[d/2, d]` of the delay before retry `attempt`.
    pub fn backoff_bounds(&self, attempt: u32) -> (Duration, Duration) {
        let d = self
            .base
            .saturating_mul(1u32 << attempt.min(30))
            .min(self.cap);
        (d / 2, d)
    }
}

/// Cluster health.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    /// Every node up.
    Green,
    /// A node down, but every partition still readable.
    Yellow,
    /// Some partition unreadable.
    Red,
}

impl fmt::Display for Health {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Health::Green => "green",
            Health::Yellow => "yellow",
            Health::Red => "red",
        })
    }
}

/// Cluster-wide breaker counters.
#[derive(Debug, Default)]
pub struct BreakerCounters {
    /// Queries refused admission when they asked (they then wait in the queue).
    pub rejections: AtomicU64,
    /// Hash joins killed (kills delivered to running joins).
    pub kills: AtomicU64,
    /// Operators the breaker asked to spill that gave memory back.
    pub spills: AtomicU64,
    /// Looks at the admission queue after a backoff, and re-runs after a kill.
    pub retries: AtomicU64,
    /// Queries whose deadline passed while they waited for admission.
    pub retries_exhausted: AtomicU64,
    /// Nodes that ran out of memory.
    pub oom_crashes: AtomicU64,
    /// Queries failed at once because the admission queue was full.
    pub overloaded: AtomicU64,
}

/// A snapshot of [`BreakerCounters`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BreakerTotals {
    /// Admissions refused because a breaker was open.
    pub rejections: u64,
    /// Hash joins killed.
    pub kills: u64,
    /// Operators that spilled to disk because the breaker asked for their memory (before
    /// killing anything).
    pub spills: u64,
    /// Queries re-enqueued.
    pub retries: u64,
    /// Queries that failed after their last attempt.
    pub retries_exhausted: u64,
    /// Nodes that ran out of memory.
    pub oom_crashes: u64,
    /// Queries refused because the admission queue was full.
    pub overloaded: u64,
}

impl BreakerCounters {
    /// A snapshot.
    pub fn totals(&self) -> BreakerTotals {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        BreakerTotals {
            rejections: g(&self.rejections),
            kills: g(&self.kills),
            spills: g(&self.spills),
            retries: g(&self.retries),
            retries_exhausted: g(&self.retries_exhausted),
            oom_crashes: g(&self.oom_crashes),
            overloaded: g(&self.overloaded),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn backoff_doubles_within_jitter_bounds_and_caps() {
        let cfg = BreakerConfig::default();
        let mut rng = StdRng::seed_from_u64(1);
        for attempt in 0..12 {
            let (lo, hi) = cfg.backoff_bounds(attempt);
            let d = cfg.backoff(attempt, &mut rng);
            assert!(
                lo <= d && d <= hi,
                "attempt {attempt}: {d:?} not in [{lo:?}, {hi:?}]"
            );
            assert!(hi <= cfg.cap);
        }
        assert_eq!(cfg.backoff_bounds(3).1, Duration::from_millis(160));
        assert_eq!(cfg.backoff_bounds(10).1, Duration::from_secs(2));
    }
}
