//! The header every benchmark states: which machine, how many cores, which build profile and
//! when, as a text line and as JSON fields.
//!
//! ```
//! let h = weir_cli::bench::header::Header::current();
//! println!("{h}"); // machine: ..., cores: 2, profile: release, date: 2026-12-01T14:05:00Z
//! let json = serde_json::to_value(&h).unwrap();
//! assert!(json["cores"].as_u64().unwrap() >= 1);
//! ```
//!
//! To put the fields into a benchmark's JSON object, embed the header with
//! `#[serde(flatten)]`, or serialize a row [`WithHeader`].

use serde::Serialize;
use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

/// Where and how a benchmark ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Header {
    /// The CPU model (from `/proc/cpuinfo`), else the host name, else `"unknown"`.
    pub machine: String,
    /// Cores this process may use.
    pub cores: usize,
    /// The build profile of this binary: `"release"` or `"debug"`.
    pub profile: &'static str,
    /// The time the header was taken, UTC, ISO 8601 to the second (`2026-12-01T14:05:00Z`).
    pub date: String,
}

impl Header {
    /// The header for this process, now.
    pub fn current() -> Header {
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Header {
            machine: machine(),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            profile: if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            },
            date: iso_8601(secs),
        }
    }
}

/// A benchmark's row with the header's fields beside its own, for one JSON object per row.
#[derive(Debug, Serialize)]
pub struct WithHeader<'a, T: Serialize> {
    /// Where and how the benchmark ran.
    #[serde(flatten)]
    pub header: &'a Header,
    /// The row's own fields.
    #[serde(flatten)]
    pub row: &'a T,
}

impl Header {
    /// One JSON line per row, each with this header's fields.
    pub fn json_lines<T: Serialize>(&self, rows: &[T]) -> Result<String, String> {
        let mut out = String::new();
        for row in rows {
            let line = serde_json::to_string(&WithHeader { header: self, row })
                .map_err(|e| e.to_string())?;
            out.push_str(&line);
            out.push('\n');
        }
        Ok(out)
    }
}

impl fmt::Display for Header {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "machine: {}, cores: {}, profile: {}, date: {}",
            self.machine, self.cores, self.profile, self.date
        )
    }
}

/// The CPU model, else the host name, else `"unknown"`.
fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|s| {
        s.lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, m)| m.trim().to_string())
    });
    let host = || {
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .or_else(|_| std::fs::read_to_string("/etc/hostname"))
            .ok()
            .map(|s| s.trim().to_string())
    };
    cpu.or_else(host)
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// Seconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ`.
fn iso_8601(secs: u64) -> String {
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_utc_iso_8601() {
        assert_eq!(iso_8601(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso_8601(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(iso_8601(1_796_134_830), "2026-12-01T14:20:30Z");
        assert_eq!(iso_8601(4_107_542_399), "2100-02-28T23:59:59Z");
    }

    #[test]
    fn header_has_every_field() {
        let h = Header::current();
        assert!(!h.machine.is_empty() && h.cores >= 1);
        assert_eq!(h.date.len(), "1970-01-01T00:00:00Z".len());
        let json = serde_json::to_value(&h).unwrap();
        for field in ["machine", "cores", "profile", "date"] {
            assert!(json.get(field).is_some(), "{field} missing from {json}");
        }
        assert!(h.to_string().contains(&format!("profile: {}", h.profile)));
    }
}
