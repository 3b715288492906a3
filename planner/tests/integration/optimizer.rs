//! The optimizer's rules, each checked on the optimized logical plan that `EXPLAIN VERBOSE`
//! shows for a query that needs it.

use crate::common;

use common::catalog;
use weir_planner::{plan_statement, Statement};

/// The optimized logical plan of `sql`, one node per line.
fn optimized(sql: &str) -> String {
    let cat = catalog();
    let text = match plan_statement(&format!("EXPLAIN VERBOSE {sql}"), &cat, &[], 4) {
        Ok(Statement::Explain(p)) => p.verbose.expect("EXPLAIN VERBOSE keeps the logical plans"),
        other => panic!("{sql}: {other:?}"),
    };
    let start = text
        .find("Optimized logical plan:\n")
        .expect("optimized section");
    let end = text.find("Physical plan:").expect("physical section");
    text[start..end].to_string()
}

fn line_of(plan: &str, needle: &str) -> usize {
    plan.lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?} in\n{plan}"))
}

#[test]
fn constants_fold() {
    let p = optimized("SELECT id FROM Item WHERE fld > 1 + 2 AND TRUE");
    assert!(p.contains("filter=(fld > 3)"), "{p}");
}

#[test]
fn filters_reach_the_scans_of_a_join() {
    let p = optimized(
        "SELECT i.name FROM Item i JOIN Category c ON i.fld = c.cid WHERE c.label = 'x' AND i.id > 5",
    );
    assert!(p.contains("Join INNER on fld = cid"), "{p}");
    assert!(p.contains("filter=(label = 'x')"), "{p}");
    assert!(p.contains("filter=(id > 5)"), "{p}");
    assert!(
        !p.contains("Filter"),
        "every conjunct went into a scan:\n{p}"
    );
}

#[test]
fn comma_joins_get_their_keys_from_where() {
    let p = optimized("SELECT i.name FROM Item i, Category c WHERE i.fld = c.cid");
    assert!(p.contains("Join INNER on fld = cid"), "{p}");
}

#[test]
fn outer_join_under_a_null_rejecting_filter_is_inner() {
    let p = optimized(
        "SELECT i.id FROM Item i LEFT JOIN Category c ON i.fld = c.cid WHERE c.weight > 1",
    );
    assert!(p.contains("Join INNER on fld = cid"), "{p}");
    let p = optimized(
        "SELECT i.id FROM Item i LEFT JOIN Category c ON i.fld = c.cid WHERE c.weight IS NULL",
    );
    assert!(p.contains("Join LEFT on fld = cid"), "{p}");
    // An ON conjunct over the right side filters the right side only.
    let p =
        optimized("SELECT i.id FROM Item i LEFT JOIN Category c ON i.fld = c.cid AND c.weight > 1");
    assert!(p.contains("Join LEFT on fld = cid"), "{p}");
    assert!(p.contains("filter=(weight > 1"), "{p}");
}

#[test]
fn exists_becomes_a_semi_join_and_not_exists_an_anti_join() {
    let p = optimized(
        "SELECT name FROM Item WHERE EXISTS (SELECT 1 FROM Tag WHERE Tag.item_id = Item.id AND Tag.score > 2)",
    );
    assert!(p.contains("Join SEMI on id = item_id"), "{p}");
    assert!(p.contains("filter=(score > 2"), "{p}");
    let p = optimized(
        "SELECT name FROM Item WHERE NOT EXISTS (SELECT * FROM Tag WHERE Tag.item_id = Item.id)",
    );
    assert!(p.contains("Join ANTI on id = item_id"), "{p}");
}

#[test]
fn in_and_not_in_subqueries() {
    let p = optimized("SELECT name FROM Item WHERE fld IN (SELECT cat_id FROM Tag)");
    assert!(p.contains("Join SEMI on fld = cat_id"), "{p}");
    let p = optimized("SELECT name FROM Item WHERE fld NOT IN (SELECT cat_id FROM Tag)");
    assert!(p.contains("Join ANTI (NOT IN) on fld = cat_id"), "{p}");
    // Correlated NOT IN: an unknown comparison counts as a match.
    let p = optimized(
        "SELECT name FROM Item WHERE fld NOT IN (SELECT cat_id FROM Tag WHERE Tag.item_id = Item.id)",
    );
    assert!(
        p.contains("Join ANTI on id = item_id filter=coalesce((fld = cat_id), true)"),
        "{p}"
    );
}

#[test]
fn correlated_scalar_subquery_is_a_grouped_left_join() {
    let p = optimized(
        "SELECT id FROM Item WHERE fld > (SELECT AVG(score) FROM Tag WHERE Tag.item_id = Item.id)",
    );
    // The comparison rejects the NULL of an unmatched row, so the left join became inner.
    assert!(p.contains("Join INNER on id = item_id"), "{p}");
    assert!(
        p.contains("Aggregate groups=[item_id] aggs=[AVG(score)]"),
        "{p}"
    );
    let p =
        optimized("SELECT id, (SELECT AVG(score) FROM Tag WHERE Tag.item_id = Item.id) FROM Item");
    assert!(p.contains("Join LEFT on id = item_id"), "{p}");
    // COUNT over no rows is 0, not NULL.
    let p = optimized(
        "SELECT id FROM Item WHERE fld = (SELECT COUNT(*) FROM Tag WHERE Tag.item_id = Item.id)",
    );
    assert!(p.contains("CASE WHEN"), "{p}");
}

#[test]
fn exists_and_in_as_values_become_counts_over_left_joins() {
    // EXISTS in the select list: a count of the matching rows per key, joined LEFT.
    let p =
        optimized("SELECT id, EXISTS (SELECT 1 FROM Tag WHERE Tag.item_id = Item.id) FROM Item");
    assert!(!p.contains("Apply"), "{p}");
    assert!(p.contains("Join LEFT on id = item_id"), "{p}");
    assert!(p.contains("aggs=[COUNT(*)]"), "{p}");
    // IN inside OR: the matches are grouped by the subquery's value and joined on it; the
    // row and NULL counts of the uncorrelated subquery are single rows.
    let p = optimized("SELECT id FROM Item WHERE id = 1 OR fld IN (SELECT cid FROM Category)");
    assert!(!p.contains("Apply"), "{p}");
    assert!(p.contains("Join LEFT on fld = cid"), "{p}");
    assert_eq!(p.matches("SingleRow").count(), 2, "{p}");
}

#[test]
fn correlated_scalar_subquery_without_an_aggregate_checks_for_one_row() {
    let p = optimized("SELECT id, (SELECT label FROM Category WHERE cid = Item.fld) FROM Item");
    assert!(p.contains("Join LEFT on fld = cid"), "{p}");
    assert!(p.contains("too_many_rows"), "{p}");
}

#[test]
fn uncorrelated_scalar_subquery_is_one_row() {
    let p = optimized("SELECT id FROM Item WHERE fld > (SELECT MAX(weight) FROM Category)");
    assert!(p.contains("SingleRow"), "{p}");
    assert!(p.contains("Join INNER"), "{p}");
}

#[test]
fn scans_read_only_used_columns() {
    let p = optimized("SELECT name FROM Item");
    assert!(p.contains("Scan Item [name]"), "{p}");
    let p = optimized("SELECT c.label FROM Item i JOIN Category c ON i.fld = c.cid");
    assert!(p.contains("Scan Item [fld]"), "{p}");
    assert!(p.contains("Scan Category [cid, label]"), "{p}");
}

#[test]
fn limit_moves_below_the_projection() {
    let p = optimized("SELECT name || 'x' FROM Item LIMIT 3");
    assert!(line_of(&p, "Project") < line_of(&p, "Limit 3"), "{p}");
}

#[test]
fn filters_pass_aggregates_on_group_keys_only() {
    let p =
        optimized("SELECT fld, COUNT(*) FROM Item GROUP BY fld HAVING fld > 3 AND COUNT(*) > 1");
    assert!(p.contains("filter=(fld > 3)"), "{p}");
    assert!(line_of(&p, "Filter") < line_of(&p, "Aggregate"), "{p}");
}

#[test]
fn a_key_shared_by_every_branch_of_an_or_becomes_a_join_key() {
    // TPC-H Q19's shape: the join key repeated in each disjunct.
    let p = optimized(
        "SELECT i.name FROM Item i, Category c \
         WHERE (i.fld = c.cid AND c.label = 'x' AND i.id > 5) \
         OR (i.fld = c.cid AND c.label = 'y' AND i.id < 3)",
    );
    assert!(p.contains("Join INNER on fld = cid"), "{p}");
    assert!(p.contains(" OR "), "the rest of the OR stays:\n{p}");
    // A branch that is only the shared conjunct makes the rest of the OR redundant.
    let p = optimized(
        "SELECT i.name FROM Item i, Category c \
         WHERE (i.fld = c.cid) OR (i.fld = c.cid AND c.label = 'y')",
    );
    assert!(p.contains("Join INNER on fld = cid"), "{p}");
    assert!(!p.contains(" OR "), "{p}");
}

/// The joins of a plan, one per line, top down.
fn joins(plan: &str) -> Vec<&str> {
    plan.lines()
        .map(str::trim)
        .filter(|l| l.starts_with("Join"))
        .collect()
}

#[test]
fn comma_joins_are_reordered_to_avoid_a_cross_join() {
    // As written, Item and Category share no condition: their join would be a cross join.
    let p = optimized(
        "SELECT i.name, c.label, t.score FROM Item i, Category c, Tag t \
         WHERE i.id = t.item_id AND t.cat_id = c.cid",
    );
    let js = joins(&p);
    assert_eq!(js.len(), 2, "{p}");
    assert!(js.iter().all(|j| j.contains(" on ")), "no cross join:\n{p}");
    // The select list still reads name, label, score.
    let top = p.lines().nth(1).expect("a projection on top");
    assert!(top.contains("Project name, label, score"), "{p}");
}

#[test]
fn the_join_order_follows_the_filtered_estimates() {
    // Written Item ⋈ Tag ⋈ Category; Item filtered on its key to one row is the smallest
    // input, so it joins Tag first and Category after.
    let p = optimized(
        "SELECT c.label FROM Category c JOIN Tag t ON t.cat_id = c.cid \
         JOIN Item i ON i.id = t.item_id WHERE i.id = 7",
    );
    let js = joins(&p);
    assert_eq!(js.len(), 2, "{p}");
    let key = |j: &str, a: &str, b: &str| {
        j.contains(&format!("on {a} = {b}")) || j.contains(&format!("on {b} = {a}"))
    };
    assert!(key(js[0], "cat_id", "cid"), "{p}");
    assert!(key(js[1], "item_id", "id"), "{p}");
    assert!(
        line_of(&p, "Scan Item") > line_of(&p, js[1]),
        "Item is in the lower join:\n{p}"
    );
}

#[test]
fn outer_and_semi_joins_are_barriers_to_reordering() {
    // The LEFT JOIN stays where it is: the inner joins above it reorder around it as one
    // relation.
    let p = optimized(
        "SELECT i.name FROM Item i LEFT JOIN Tag t ON i.id = t.item_id, Category c, Tag t2 \
         WHERE i.fld = c.cid AND t2.cat_id = c.cid \
         AND EXISTS (SELECT 1 FROM Tag t3 WHERE t3.item_id = i.id)",
    );
    let left = line_of(&p, "Join LEFT on id = item_id");
    let semi = line_of(&p, "Join SEMI on id = item_id");
    assert!(
        semi < left,
        "the semi join sits above the left join it filters:\n{p}"
    );
    let js = joins(&p);
    assert_eq!(js.len(), 4, "{p}");
    assert!(js.iter().all(|j| j.contains(" on ")), "no cross join:\n{p}");
}

#[test]
fn a_semi_join_moves_below_an_inner_join_that_does_not_shrink_its_side() {
    // Item (100,000 rows) joined with all 100 categories keeps every item: the IN over the
    // categories' key filters Category before the join, not the join's output after it.
    let p = optimized(
        "SELECT c.label, i.name FROM Category c, Item i WHERE i.fld = c.cid AND c.cid IN (SELECT cat_id FROM Tag WHERE score > 2)",
    );
    assert!(
        line_of(&p, "Join SEMI on cid = cat_id") > line_of(&p, "Join INNER"),
        "{p}"
    );
    // One category's items are fewer than all items: the IN over Item's id stays on the
    // join's output.
    let p = optimized(
        "SELECT i.name FROM Item i, Category c WHERE i.fld = c.cid AND c.cid = 7 AND i.id IN (SELECT item_id FROM Tag)",
    );
    assert!(
        line_of(&p, "Join SEMI on id = item_id") < line_of(&p, "Join INNER"),
        "{p}"
    );
}

/// The lines of `plan` that hold `needle`.
fn count(plan: &str, needle: &str) -> usize {
    plan.lines().filter(|l| l.contains(needle)).count()
}

#[test]
fn an_inequality_under_an_aggregate_is_unnested_over_the_distinct_outer_values() {
    let p = optimized("SELECT id, (SELECT COUNT(*) FROM Tag WHERE Tag.score < Item.fld) FROM Item");
    assert!(!p.contains("Apply"), "{p}");
    // The distinct outer values, joined with the subquery's rows under the inequality, grouped
    // by them, left-joined back to the domain (COUNT 0 where nothing matched) and to the rows
    // (NULL matching NULL).
    assert!(p.contains("Distinct"), "{p}");
    assert!(p.contains("filter=(score < CAST(fld AS DOUBLE))"), "{p}");
    assert!(p.contains("aggs=[COUNT(*)]"), "{p}");
    assert!(p.contains("coalesce(COUNT(*), 0)"), "{p}");
    assert!(p.contains("Join LEFT on fld IS NULL = fld IS NULL"), "{p}");
    assert_eq!(count(&p, "Join LEFT"), 2, "{p}");
    // The domain is read from the outer table's scan, not from the rows of the query.
    assert!(
        line_of(&p, "Distinct") < p.rfind("Scan Item").map_or(0, |at| p[..at].lines().count()),
        "{p}"
    );
}

#[test]
fn a_correlated_limit_is_a_row_number_per_outer_value() {
    let p = optimized(
        "SELECT id, (SELECT score FROM Tag WHERE Tag.item_id > Item.id ORDER BY score LIMIT 1) FROM Item",
    );
    assert!(!p.contains("Apply"), "{p}");
    assert!(p.contains("ROW_NUMBER()"), "{p}");
    assert!(
        p.contains("keep=1"),
        "the top-N rule cuts each partition:\n{p}"
    );
    // LIMIT 1 promises one row per outer value: no check for more.
    assert!(!p.contains("too_many_rows"), "{p}");
}

#[test]
fn a_correlated_subquery_without_an_aggregate_checks_for_one_row_after_the_join() {
    let p = optimized("SELECT id, (SELECT label FROM Category WHERE cid < Item.fld) FROM Item");
    assert!(!p.contains("Apply"), "{p}");
    assert!(p.contains("too_many_rows"), "{p}");
    assert!(
        line_of(&p, "too_many_rows") < line_of(&p, "Join LEFT"),
        "{p}"
    );
}

#[test]
fn exists_over_a_correlated_aggregate_is_a_semi_join_on_the_outer_values() {
    let p = optimized(
        "SELECT id FROM Item WHERE EXISTS (SELECT cat_id FROM Tag WHERE Tag.item_id < Item.id GROUP BY cat_id HAVING COUNT(*) > 1)",
    );
    assert!(!p.contains("Apply"), "{p}");
    assert!(p.contains("Join SEMI on id IS NULL = id IS NULL"), "{p}");
    assert!(p.contains("Aggregate groups=[cat_id, id]"), "{p}");
    let p = optimized(
        "SELECT id FROM Item WHERE fld NOT IN (SELECT cat_id FROM Tag WHERE Tag.item_id < Item.id LIMIT 3)",
    );
    assert!(p.contains("Join ANTI on id IS NULL = id IS NULL"), "{p}");
    assert!(p.contains("coalesce((fld = cat_id), true)"), "{p}");
}

#[test]
fn equality_correlation_keeps_its_grouped_left_join() {
    // The fast rewrite still takes the equality shape: no domain.
    let p =
        optimized("SELECT id, (SELECT COUNT(*) FROM Tag WHERE Tag.item_id = Item.id) FROM Item");
    assert!(!p.contains("Distinct"), "{p}");
    assert!(p.contains("Join LEFT on id = item_id"), "{p}");
}

#[test]
fn a_join_inside_a_correlated_subquery_takes_the_domain_on_the_side_that_reads_it() {
    let p = optimized(
        "SELECT id, (SELECT COUNT(c.cid) FROM Tag t LEFT JOIN Category c ON c.cid = t.cat_id AND c.weight < Item.fld) FROM Item",
    );
    assert!(!p.contains("Apply"), "{p}");
    // Only the condition reads the outer column: the domain joins the preserved left side,
    // where the condition reads it.
    assert!(
        p.contains("Join LEFT on cat_id = cid filter=(weight < CAST(fld AS DOUBLE))"),
        "{p}"
    );
    assert_eq!(count(&p, "Distinct"), 2, "{p}");
    // A FULL JOIN preserves both sides: both take the domain, joined on it too.
    let p = optimized(
        "SELECT id, (SELECT COUNT(*) FROM Tag t FULL JOIN Category c ON c.cid = t.cat_id AND c.weight < Item.fld) FROM Item",
    );
    assert!(!p.contains("Apply"), "{p}");
    assert!(
        p.contains("Join FULL on fld IS NULL = fld IS NULL AND coalesce(fld, 0) = coalesce(fld, 0) AND cat_id = cid"),
        "{p}"
    );
    assert_eq!(count(&p, "Distinct"), 3, "{p}");
}

#[test]
fn a_correlated_subquery_in_having_reads_the_group_keys() {
    let p = optimized(
        "SELECT fld, COUNT(*) FROM Item GROUP BY fld HAVING COUNT(*) > (SELECT COUNT(*) FROM Tag WHERE Tag.score < Item.fld)",
    );
    assert!(!p.contains("Apply"), "{p}");
    assert!(p.contains("filter=(score < CAST(fld AS DOUBLE))"), "{p}");
}

#[test]
fn a_lateral_subquery_is_joined_back_on_its_outer_values() {
    // Top-N per outer row: the LIMIT is a ROW_NUMBER per domain value, joined back to the
    // rows on it (NULL matching NULL).
    let p = optimized(
        "SELECT i.id, t.score FROM Item i, LATERAL (SELECT score FROM Tag WHERE Tag.item_id < i.id ORDER BY score DESC LIMIT 2) t",
    );
    assert!(!p.contains("Apply"), "{p}");
    assert!(p.contains("ROW_NUMBER()"), "{p}");
    assert!(p.contains("keep=2"), "{p}");
    assert!(p.contains("Distinct"), "{p}");
    assert!(p.contains("Join INNER on id IS NULL = id IS NULL"), "{p}");
    // LEFT JOIN LATERAL keeps the rows without a match: a left join, with its condition.
    let p = optimized(
        "SELECT i.id, t.score FROM Item i LEFT JOIN LATERAL (SELECT score FROM Tag WHERE Tag.item_id < i.id) t ON t.score > 1",
    );
    assert!(!p.contains("Apply"), "{p}");
    assert!(
        p.contains("Join LEFT on id IS NULL = id IS NULL AND coalesce(id, 0) = coalesce(id, 0)"),
        "{p}"
    );
    // The condition reads the subquery's side only: it filters that side.
    assert!(
        p.contains("Scan Tag [item_id, score] filter=(score > 1)"),
        "{p}"
    );
    // A LATERAL subquery that reads nothing of its left is an ordinary join: no domain.
    let p = optimized("SELECT i.id, t.n FROM Item i, LATERAL (SELECT COUNT(*) AS n FROM Tag) t");
    assert!(!p.contains("Distinct"), "{p}");
}

#[test]
fn a_reference_two_levels_out_is_passed_through_the_query_between() {
    let sql = "SELECT id FROM Item i WHERE EXISTS (SELECT 1 FROM Category c WHERE c.cid = i.fld \
               AND EXISTS (SELECT 1 FROM Tag t WHERE t.cat_id = c.cid AND t.item_id < i.id))";
    let cat = catalog();
    let Ok(Statement::Explain(e)) = plan_statement(&format!("EXPLAIN VERBOSE {sql}"), &cat, &[], 4)
    else {
        panic!("{sql} does not plan");
    };
    let text = e.verbose.expect("EXPLAIN VERBOSE keeps the logical plans");
    // The binder appends the outer column to the middle query's row ...
    assert!(text.contains("__outer0"), "{text}");
    // ... and the optimizer unnests both subqueries into semi joins.
    let p = optimized(sql);
    assert!(!p.contains("Apply"), "{p}");
    assert_eq!(count(&p, "Join SEMI"), 2, "{p}");
}

/// A semi join on a key that an inner join equates with an aggregation's group key (a
/// decorrelated per-row aggregate, TPC-H Q20's shape) also filters the aggregation's input,
/// below it; the semi join above stays.
#[test]
fn a_semi_join_reduces_the_aggregation_its_key_reaches_through_a_join() {
    let p = optimized(
        "SELECT name FROM Item WHERE id IN (SELECT item_id FROM Tag WHERE score > 9) \
         AND fld > (SELECT SUM(score) FROM Tag t2 WHERE t2.item_id = Item.id)",
    );
    let aggregate = line_of(&p, "Aggregate groups=[item_id]");
    assert!(
        p.lines()
            .nth(aggregate + 1)
            .unwrap()
            .contains("Join SEMI on item_id = item_id"),
        "the aggregation reads only the rows of the semi join's keys:\n{p}"
    );
    assert_eq!(p.matches("Join SEMI").count(), 2, "{p}");
    // Without the semi join above, the aggregation reads everything.
    let p = optimized(
        "SELECT name FROM Item WHERE fld > (SELECT SUM(score) FROM Tag t2 WHERE t2.item_id = Item.id)",
    );
    assert!(!p.contains("Join SEMI"), "{p}");
}

/// An inner join with a filtered scan reduces an aggregation joined on its group key the same
/// way (TPC-H Q17's shape), but only when the filtered scan is estimated far smaller than what
/// the aggregation reads.
#[test]
fn a_filtered_scan_joined_on_a_group_key_reduces_the_aggregation() {
    let p = optimized(
        "SELECT c.label, t.total FROM Category c \
         JOIN (SELECT cat_id, SUM(score) AS total FROM Tag GROUP BY cat_id) t ON t.cat_id = c.cid \
         WHERE c.label = 'x'",
    );
    let aggregate = line_of(&p, "Aggregate groups=[cat_id]");
    assert!(
        p.lines()
            .nth(aggregate + 1)
            .unwrap()
            .contains("Join SEMI on cat_id = cid"),
        "{p}"
    );
    // Unfiltered, the joined table is not read twice.
    let p = optimized(
        "SELECT c.label, t.total FROM Category c \
         JOIN (SELECT cat_id, SUM(score) AS total FROM Tag GROUP BY cat_id) t ON t.cat_id = c.cid",
    );
    assert!(!p.contains("Join SEMI"), "{p}");
}
