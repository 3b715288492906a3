//! How `weir bench jmh` scores a case, shared by its cases ([`super::jmh`]) and by the floors
//! it prints beside them ([`super::floor`]): JMH's iteration counts and confidence level,
//! and the row each reports.

use serde::Serialize;

/// Warm-up iterations per query and protocol.
pub const WARMUP_ITERATIONS: usize = 3;
/// Measured iterations per query and protocol.
pub const MEASURED_ITERATIONS: usize = 3;
/// JMH's confidence level for the score error.
pub const CONFIDENCE: f64 = 0.999;

/// One case's score: a query under one protocol, or a floor.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct JmhRow {
    /// The benchmark's case name.
    pub case: String,
    /// `lean` or `legacy` (in process), `serve` or `postgres` (through the PostgreSQL
    /// protocol); `floor` for a floor.
    pub protocol: String,
    /// Mean ops/s over the measured iterations.
    pub ops_per_s: f64,
    /// 99.9% confidence half-width of `ops_per_s`.
    pub ops_error: f64,
    /// Median latency of the measured calls, µs.
    pub p50_us: f64,
    /// 99th percentile latency of the measured calls, µs.
    pub p99_us: f64,
    /// Messages between nodes per call (NaN, `null` in JSON, where the client cannot see
    /// them: through the PostgreSQL protocol).
    pub messages_per_query: f64,
    /// Encoded bytes between nodes per call (NaN where not seen).
    pub bytes_per_query: f64,
    /// Rows each call returned.
    pub rows: usize,
}
