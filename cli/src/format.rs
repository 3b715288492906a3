//! Rendering results for people (aligned tables) and programs (JSON).

use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use serde_json::{json, Map, Value as Json};
use weir_operators::Value;
use weir_runtime::{MessageStats, QueryResult};

/// A value as JSON: integers and doubles stay numbers, NULL is null; a DECIMAL is a string
/// of its exact digits (`"12.50"`, which a JSON number could not keep), a DATE a
/// `"YYYY-MM-DD"` string and a TIMESTAMP a `"YYYY-MM-DD HH:MM:SS[.ffffff]"` string.
pub fn value_to_json(v: &Value) -> Json {
    match v {
        Value::Null => Json::Null,
        Value::Int(i) => json!(i),
        Value::Float(f) => serde_json::Number::from_f64(*f).map_or(Json::Null, Json::Number),
        Value::Str(s) => json!(s),
        Value::Bool(b) => json!(b),
        Value::Decimal(..) | Value::Date(_) | Value::Timestamp(_) => json!(v.to_string()),
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

/// The result as `{"columns": [...], "rows": [[...], ...]}`, plus `"stats"` when given.
pub fn json(result: &QueryResult, stats: Option<&MessageStats>) -> Json {
    let rows: Vec<Json> = result
        .rows()
        .iter()
        .map(|r| Json::Array(r.iter().map(value_to_json).collect()))
        .collect();
    let mut obj = json!({ "columns": result.column_names(), "rows": rows });
    if let Some(s) = stats {
        obj["stats"] = stats_json(s);
    }
    obj
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

    #[test]
    fn decimals_dates_and_timestamps_keep_their_digits_in_json() {
        assert_eq!(value_to_json(&Value::Decimal(1250, 2)), json!("12.50"));
        assert_eq!(value_to_json(&Value::Decimal(-5, 3)), json!("-0.005"));
        assert_eq!(value_to_json(&Value::Date(0)), json!("1970-01-01"));
        assert_eq!(
            value_to_json(&Value::Timestamp(1_500_000)),
            json!("1970-01-01 00:00:01.500000")
        );
        assert_eq!(value_to_json(&Value::Int(3)), json!(3));
    }
}
