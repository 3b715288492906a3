//! The `weir` command as a user runs it.

mod common;

use common::weir;

#[test]
fn sql_prints_json_and_tables() {
    let out = weir(&[
        "sql",
        "--orders",
        "2000",
        "--format",
        "json",
        "SELECT fldBatch, COUNT(*) AS n FROM Item WHERE fldBatch < 3 GROUP BY fldBatch ORDER BY fldBatch",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["columns"], serde_json::json!(["fldBatch", "n"]));
    assert_eq!(
        v["rows"],
        serde_json::json!([[0, 1000], [1, 1000], [2, 1000]])
    );

    let out = weir(&[
        "sql",
        "--orders",
        "2000",
        "--nodes",
        "2",
        "SELECT name FROM Item WHERE id = 7",
    ]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("name7") && text.contains("(1 rows)"),
        "{text}"
    );

    let out = weir(&["sql", "--orders", "2000", "SELECT nope FROM Item"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("nope"));
}
