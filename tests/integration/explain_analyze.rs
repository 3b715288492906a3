//! EXPLAIN ANALYZE runs its query and describes the plan with what each operator output,
//! summed over its fragment's instances on every node, and a last line of totals; the counts
//! are what a user would count by hand.

use crate::common;

use common::{assert_idle, cluster, load_t, TestCluster};
use weir::Value;

/// The plan's text, one line per row of the EXPLAIN ANALYZE answer.
fn analyzed(c: &TestCluster, sql: &str, params: &[Value]) -> Vec<String> {
    let r = c.query(sql, params).unwrap();
    assert_eq!(r.column_names(), ["plan"]);
    r.rows()
        .into_iter()
        .map(|row| match &row[0] {
            Value::Str(s) => s.to_string(),
            v => panic!("a plan line that is not text: {v:?}"),
        })
        .collect()
}

/// `(rows, batches)` of the one line that contains `needle`.
fn counts(lines: &[String], needle: &str) -> (u64, u64) {
    let found = all_counts(lines, needle);
    assert_eq!(found.len(), 1, "one line with {needle:?} in {lines:#?}");
    found[0]
}

/// `(rows, batches)` of every line that contains `needle`, in order.
fn all_counts(lines: &[String], needle: &str) -> Vec<(u64, u64)> {
    lines
        .iter()
        .filter(|l| l.contains(needle))
        .map(|l| line_counts(l))
        .collect()
}

/// `(rows, batches)` written at the end of `line` (before the kernel's time, if any).
fn line_counts(line: &str) -> (u64, u64) {
    let at = line
        .rfind("(rows=")
        .unwrap_or_else(|| panic!("no counts on {line:?}"));
    let inner = line[at + 1..].trim_end_matches(')');
    let mut numbers = inner.split(' ').take(2).map(|kv| {
        kv.split_once('=')
            .expect("key=value")
            .1
            .parse::<u64>()
            .unwrap()
    });
    (numbers.next().unwrap(), numbers.next().unwrap())
}

#[test]
fn every_operator_says_what_it_output_over_all_nodes() {
    let c = cluster(3);
    load_t(&c, 1000, |id| id % 10);
    let sql = "SELECT v, count(*) FROM t WHERE id >= 100 GROUP BY v ORDER BY v";
    let lines = analyzed(&c, &format!("EXPLAIN ANALYZE {sql}"), &[]);
    // 900 rows pass the range, on whichever nodes hold them; the partial aggregates make at
    // most 10 groups on each of the 3 nodes, the final one 10.
    assert_eq!(counts(&lines, "Scan t").0, 900);
    let (partial, _) = counts(&lines, "HashAggregate (partial)");
    assert!((10..=30).contains(&partial), "{lines:#?}");
    assert_eq!(counts(&lines, "Exchange #").0, partial);
    assert_eq!(counts(&lines, "HashAggregate (final)").0, 10);
    assert_eq!(counts(&lines, "Sort").0, 10);
    // Operators with a kernel say how long it worked; an exchange's receiving end has none.
    let scan = lines.iter().find(|l| l.contains("Scan t")).unwrap();
    assert!(scan.ends_with(" ms)") && scan.contains(" time="), "{scan}");
    let exchange = lines.iter().find(|l| l.contains("Exchange #")).unwrap();
    assert!(!exchange.contains("time="), "{exchange}");
    let last = lines.last().unwrap();
    assert!(last.starts_with("Execution: 10 rows in "), "{last}");
    // Every instance's report arrived: the query did not end by the bounded wait (5 s) for
    // reports that never come.
    let ms: f64 = last["Execution: 10 rows in ".len()..]
        .split(' ')
        .next()
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no time in {last}"));
    assert!(ms < 5_000.0, "{last}");
    // The same plan as EXPLAIN's, each line with its counts added.
    let plain = c.explain(&format!("EXPLAIN {sql}"), &[]).unwrap();
    let without_counts: Vec<String> = lines[..lines.len() - 1]
        .iter()
        .map(|l| match l.rfind(" (rows=") {
            Some(at) => l[..at].to_string(),
            None => l.clone(),
        })
        .collect();
    assert_eq!(without_counts, plain.lines().collect::<Vec<_>>());
    assert_idle(&c);
}

#[test]
fn a_point_lookup_still_costs_two_messages_and_counts_its_remote_row() {
    let c = cluster(3);
    load_t(&c, 100, |id| id);
    let lines = analyzed(
        &c,
        "EXPLAIN ANALYZE SELECT * FROM t WHERE id = ?",
        &[Value::Int(7)],
    );
    assert_eq!(counts(&lines, "IndexScan t").0, 1);
    // The reports that carry the counts are not among the query's messages.
    let last = lines.last().unwrap();
    assert!(last.ends_with(", 2 messages between nodes"), "{last}");
    // EXPLAIN ANALYZE runs the query through every entry point.
    let text = c
        .explain("EXPLAIN (ANALYZE) SELECT count(*) FROM t", &[])
        .unwrap();
    assert!(text.contains("Execution: 1 row in "), "{text}");
    assert_eq!(c.execute("EXPLAIN ANALYZE SELECT * FROM t").unwrap(), 0);
    assert_idle(&c);
}

#[test]
fn a_limit_counts_what_ran_before_the_query_stopped_its_inputs() {
    let c = cluster(3);
    load_t(&c, 3000, |id| id % 3);
    let sql = "EXPLAIN ANALYZE SELECT id FROM t WHERE v = ? LIMIT 4";
    let lines = analyzed(&c, sql, &[Value::Int(1)]);
    // The root's limit, then the one pushed below the exchange, on each of 3 nodes.
    let limits = all_counts(&lines, "Limit 4");
    assert_eq!(limits.len(), 2, "{lines:#?}");
    assert_eq!(limits[0].0, 4);
    assert!((4..=12).contains(&limits[1].0), "{lines:#?}");
    // Every scan instance reported, however far it got.
    let (scanned, batches) = counts(&lines, "Scan t");
    assert!((4..=1000).contains(&scanned) && batches >= 1, "{lines:#?}");
    assert!(lines.last().unwrap().starts_with("Execution: 4 rows"));
    assert_idle(&c);
}

#[test]
fn a_failing_query_fails_its_explain_analyze() {
    let c = cluster(2);
    load_t(&c, 50, |id| id);
    let e = c
        .query(
            "EXPLAIN ANALYZE SELECT id * 9223372036854775807 FROM t",
            &[],
        )
        .unwrap_err();
    assert!(e.to_string().contains("BIGINT overflow"), "{e}");
    let e = c
        .query("EXPLAIN (ANALYZE, BUFFERS) SELECT * FROM t", &[])
        .unwrap_err();
    assert!(e.to_string().contains("the EXPLAIN option BUFFERS"), "{e}");
    let e = c.query("EXPLAIN ANALYZE DELETE FROM t", &[]).unwrap_err();
    assert!(e.to_string().contains("EXPLAIN of DELETE"), "{e}");
    assert_eq!(
        c.query("SELECT count(*) FROM t", &[]).unwrap().rows()[0][0],
        Value::Int(50)
    );
    assert_idle(&c);
}
