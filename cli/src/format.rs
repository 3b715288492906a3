//! Rendering results for people (aligned tables), for programs (one JSON object per line)
//! and for spreadsheets (CSV).
//!
//! JSON values: integers and doubles are numbers (a NaN or infinite double is null), a
//! DECIMAL is a JSON number with its exact digits (`12.50`), a DATE is `"YYYY-MM-DD"`, a
//! TIMESTAMP is ISO 8601 (`"YYYY-MM-DDTHH:MM:SS[.ffffff]"`), NULL is null.

use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use serde_json::{json, Map, Value as Json};
use weir_operators::{decimal, temporal, Value};
use weir_runtime::{MessageStats, QueryResult};

/// Appends `v` as JSON text to `out` (see the module's comment for each type).
pub fn write_json_value(v: &Value, out: &mut String) {
    match v {
        Value::Decimal(d, scale) => out.push_str(&decimal::format(*d, *scale)),
        Value::Null => out.push_str("null"),
        Value::Int(i) => out.push_str(&i.to_string()),
        Value::Float(f) => match serde_json::Number::from_f64(*f) {
            Some(n) => out.push_str(&n.to_string()),
            None => out.push_str("null"),
        },
        Value::Str(s) => out.push_str(&Json::from(s.as_str()).to_string()),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Date(d) => out.push_str(&json!(temporal::format_date(*d)).to_string()),
        Value::Timestamp(t) => {
            let iso = temporal::format_timestamp(*t).replacen(' ', "T", 1);
            out.push_str(&json!(iso).to_string())
        }
    }
}

/// The result as an aligned text table.
pub fn table(result: &QueryResult) -> String {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(result.column_names());
    for row in result.rows() {
        t.add_row(row.iter().map(ToString::to_string));
    }
    t.to_string()
}

/// Message statistics as the JSON object `{"messages": {...}, "messages_total": n,
/// "bytes_total": n}`.
pub fn stats_json(stats: &MessageStats) -> Json {
    let mut by_kind = Map::new();
    for (k, v) in &stats.by_kind {
        by_kind.insert(k.clone(), json!(v));
    }
    json!({
        "messages": by_kind,
        "messages_total": stats.total,
        "bytes_total": stats.bytes,
    })
}

/// The result as one line of JSON, `{"columns": [...], "rows": [[...], ...]}`, plus
/// `"stats"` when given.
pub fn json(result: &QueryResult, stats: Option<&MessageStats>) -> String {
    let mut out = String::from("{\"columns\":");
    out.push_str(&json!(result.column_names()).to_string());
    out.push_str(",\"rows\":[");
    let mut first_row = true;
    for batch in &result.batches {
        for r in 0..batch.num_rows() {
            if !first_row {
                out.push(',');
            }
            first_row = false;
            out.push('[');
            for (c, col) in batch.columns().iter().enumerate() {
                if c > 0 {
                    out.push(',');
                }
                write_json_value(&col.value(r), &mut out);
            }
            out.push(']');
        }
    }
    out.push(']');
    if let Some(s) = stats {
        out.push_str(",\"stats\":");
        out.push_str(&stats_json(s).to_string());
    }
    out.push('}');
    out
}

/// `{"rows_affected": n}`: the line of a statement that is not a query.
pub fn rows_affected_json(n: u64) -> String {
    json!({ "rows_affected": n }).to_string()
}

/// `{"error": "..."}`.
pub fn error_json(message: &str) -> String {
    json!({ "error": message }).to_string()
}

/// The result as CSV (RFC 4180), with a header line; NULL is an empty field.
pub fn csv(result: &QueryResult) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let _ = w.write_record(result.column_names());
    for row in result.rows() {
        let _ = w.write_record(row.iter().map(|v| match v {
            Value::Null => String::new(),
            v => v.to_string(),
        }));
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// Message statistics as text lines.
pub fn stats_text(stats: &MessageStats) -> String {
    let mut out = String::new();
    for (k, v) in &stats.by_kind {
        out.push_str(&format!("{k:<20} {v}\n"));
    }
    out.push_str(&format!(
        "{:<20} {}\n{:<20} {}\n",
        "total", stats.total, "bytes", stats.bytes
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(v: Value) -> String {
        let mut s = String::new();
        write_json_value(&v, &mut s);
        s
    }

    #[test]
    fn decimals_are_exact_numbers_dates_and_timestamps_iso_strings() {
        assert_eq!(text(Value::Decimal(1250, 2)), "12.50");
        assert_eq!(text(Value::Decimal(-5, 3)), "-0.005");
        let parsed: Json = serde_json::from_str(&text(Value::Decimal(-5, 3))).unwrap();
        assert_eq!(parsed.as_f64(), Some(-0.005));
        assert_eq!(text(Value::Date(0)), "\"1970-01-01\"");
        assert_eq!(
            text(Value::Timestamp(1_500_000)),
            "\"1970-01-01T00:00:01.500000\""
        );
        assert_eq!(text(Value::Int(3)), "3");
        assert_eq!(text(Value::Float(f64::NAN)), "null");
        assert_eq!(text(Value::from("a\"b")), "\"a\\\"b\"");
        assert_eq!(text(Value::Null), "null");
    }
}
