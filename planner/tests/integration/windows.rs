//! Window functions' plans: where each window runs (after a hash exchange on its partition
//! keys, or gathered when it has none), when a second window needs no new exchange, the
//! top-N cut, pushdown and pruning around windows, EXPLAIN, and the errors' positions.
use crate::common;
use common::*;
use weir_operators::plan::{FrameBound, FrameExclude, FrameUnits, WindowFunc};
use weir_operators::{DataType, Expr, PhysicalPlan, Value};
use weir_planner::{plan_statement, Distribution, Placement, PlanError, QueryPlan};

/// Every window operator of `q`, with the placement of its fragment.
fn windows(q: &QueryPlan) -> Vec<(&PhysicalPlan, &Placement)> {
    fn walk<'a>(
        p: &'a PhysicalPlan,
        at: &'a Placement,
        out: &mut Vec<(&'a PhysicalPlan, &'a Placement)>,
    ) {
        if matches!(p, PhysicalPlan::Window { .. }) {
            out.push((p, at));
        }
        for c in p.children() {
            walk(c, at, out);
        }
    }
    let mut out = Vec::new();
    for f in &q.fragments {
        walk(&f.plan, &f.placement, &mut out);
    }
    out
}

/// The distributions of every exchange of `q`.
fn exchanges(q: &QueryPlan) -> Vec<&Distribution> {
    q.fragments
        .iter()
        .filter_map(|f| f.output.as_ref().map(|o| &o.distribution))
        .collect()
}

fn keep_of(p: &PhysicalPlan) -> Option<usize> {
    match p {
        PhysicalPlan::Window { keep, .. } => *keep,
        _ => None,
    }
}

#[test]
fn a_partitioned_window_runs_on_the_data_nodes_after_a_hash_exchange_on_its_keys() {
    let q = query(
        &catalog(),
        "SELECT id, SUM(fld) OVER (PARTITION BY name ORDER BY id) FROM Item",
        &[],
    );
    let w = windows(&q);
    assert_eq!(w.len(), 1);
    assert_eq!(*w[0].1, Placement::AllDataNodes);
    // The scan sends its rows hashed on `name` (column 1 of what it outputs: id, name, fld).
    let scan = q
        .fragments
        .iter()
        .find(|f| matches!(f.placement, Placement::Table { .. }))
        .expect("a scan fragment");
    let out = scan.output.as_ref().unwrap();
    assert_eq!(out.distribution, Distribution::Hash(vec![Expr::Column(1)]));
    let target = q.fragments.iter().find(|f| f.id == out.target).unwrap();
    assert!(matches!(
        target.plan,
        PhysicalPlan::Window { .. } | PhysicalPlan::Project { .. }
    ));
    assert_eq!(target.placement, Placement::AllDataNodes);
    // The window's fragment is gathered to the initiator.
    assert_eq!(
        target.output.as_ref().unwrap().distribution,
        Distribution::Gather
    );
}

#[test]
fn an_unpartitioned_window_is_gathered_to_one_instance() {
    let q = query(
        &catalog(),
        "SELECT id, ROW_NUMBER() OVER (ORDER BY id DESC) FROM Item",
        &[],
    );
    let w = windows(&q);
    assert_eq!(w.len(), 1);
    assert_eq!(*w[0].1, Placement::Initiator);
    assert_eq!(exchanges(&q), [&Distribution::Gather]);
    let PhysicalPlan::Window {
        partition_by,
        order_by,
        functions,
        keep,
        ..
    } = w[0].0
    else {
        unreachable!()
    };
    assert!(partition_by.is_empty());
    assert_eq!(order_by.len(), 1);
    assert!(order_by[0].descending);
    assert_eq!(functions[0].func, WindowFunc::RowNumber);
    assert_eq!(*keep, None);
}

#[test]
fn a_window_needs_no_new_exchange_when_the_rows_are_spread_by_some_of_its_keys() {
    let hashes = |q: &QueryPlan| {
        exchanges(q)
            .into_iter()
            .filter(|d| matches!(d, Distribution::Hash(_)))
            .count()
    };
    // By name, then by (name, fld): rows equal in both are already on one node.
    let q = query(
        &catalog(),
        "SELECT SUM(fld) OVER (PARTITION BY name), COUNT(*) OVER (PARTITION BY name, fld) FROM Item",
        &[],
    );
    assert_eq!(windows(&q).len(), 2);
    assert_eq!(hashes(&q), 1, "{}", explain(&q));
    // By (name, fld) first, then by name: rows of one name may be on several nodes.
    let q = query(
        &catalog(),
        "SELECT COUNT(*) OVER (PARTITION BY name, fld), SUM(fld) OVER (PARTITION BY name) FROM Item",
        &[],
    );
    assert_eq!(hashes(&q), 2, "{}", explain(&q));
    // Two windows of one spec are one operator.
    let q = query(
        &catalog(),
        "SELECT SUM(fld) OVER (PARTITION BY name ORDER BY id), RANK() OVER (PARTITION BY name ORDER BY id) FROM Item",
        &[],
    );
    assert_eq!(windows(&q).len(), 1);
}

#[test]
fn top_n_per_partition_keeps_the_first_rows_before_and_after_the_exchange() {
    let q = query(
        &catalog(),
        "SELECT * FROM (SELECT id, name, ROW_NUMBER() OVER (PARTITION BY name ORDER BY fld DESC) AS rn FROM Item) AS s WHERE rn <= 3",
        &[],
    );
    let w = windows(&q);
    assert_eq!(w.len(), 2, "{}", explain(&q));
    // Where the rows are read: no function, only the cut; after the exchange: the numbers.
    let local = w
        .iter()
        .find(|(_, at)| matches!(at, Placement::Table { .. }))
        .expect("a cut on the scan's nodes");
    assert!(matches!(local.0, PhysicalPlan::Window { functions, .. } if functions.is_empty()));
    assert_eq!(keep_of(local.0), Some(3));
    let after = w
        .iter()
        .find(|(_, at)| **at == Placement::AllDataNodes)
        .expect("the window after the exchange");
    assert_eq!(keep_of(after.0), Some(3));
    // The filter stays above it.
    assert!(
        explain(&q).contains("Filter (ROW_NUMBER() <= 3)"),
        "{}",
        explain(&q)
    );
    // `rn < 2`, `1 = rn` and QUALIFY cut too.
    for (sql, k) in [
        ("SELECT * FROM (SELECT id, ROW_NUMBER() OVER (ORDER BY id) AS rn FROM Item) AS s WHERE rn < 2", 1),
        ("SELECT * FROM (SELECT id, ROW_NUMBER() OVER (ORDER BY id) AS rn FROM Item) AS s WHERE 1 = rn", 1),
        ("SELECT id FROM Item QUALIFY ROW_NUMBER() OVER (PARTITION BY name ORDER BY id) <= 5", 5),
    ] {
        let q = query(&catalog(), sql, &[]);
        let keeps: Vec<Option<usize>> = windows(&q).iter().map(|(p, _)| keep_of(p)).collect();
        assert!(keeps.iter().all(|&x| x == Some(k)), "{sql}: {keeps:?}");
    }
}

#[test]
fn top_n_is_left_out_when_a_function_reads_rows_after_its_own() {
    for sql in [
        // A partition count reads every row of the partition.
        "SELECT * FROM (SELECT id, ROW_NUMBER() OVER w AS rn, COUNT(*) OVER w AS c FROM Item WINDOW w AS (PARTITION BY name ORDER BY id)) AS s WHERE rn <= 3",
        // A RANGE running sum reads the current row's later peers.
        "SELECT * FROM (SELECT id, ROW_NUMBER() OVER w AS rn, SUM(fld) OVER w AS c FROM Item WINDOW w AS (PARTITION BY name ORDER BY fld)) AS s WHERE rn <= 3",
        // Not an upper bound.
        "SELECT * FROM (SELECT id, ROW_NUMBER() OVER (ORDER BY id) AS rn FROM Item) AS s WHERE rn > 3",
        // RANK is no row number: its ties could all pass.
        "SELECT * FROM (SELECT id, RANK() OVER (ORDER BY fld) AS r FROM Item) AS s WHERE r <= 3",
    ] {
        let q = query(&catalog(), sql, &[]);
        assert!(
            windows(&q).iter().all(|(p, _)| keep_of(p).is_none()),
            "{sql}\n{}",
            explain(&q)
        );
    }
    // A ROWS running sum reads only rows before: the cut applies.
    let q = query(
        &catalog(),
        "SELECT * FROM (SELECT id, ROW_NUMBER() OVER w AS rn, SUM(fld) OVER (w ROWS UNBOUNDED PRECEDING) AS c FROM Item WINDOW w AS (PARTITION BY name ORDER BY fld)) AS s WHERE rn <= 3",
        &[],
    );
    assert!(windows(&q).iter().all(|(p, _)| keep_of(p) == Some(3)));
}

#[test]
fn a_filter_on_partition_keys_goes_below_the_window_and_others_stay_above() {
    let q = query(
        &catalog(),
        "SELECT * FROM (SELECT id, name, SUM(fld) OVER (PARTITION BY name) AS s FROM Item) AS t WHERE name = 'x' AND s > 10",
        &[],
    );
    let text = explain(&q);
    assert!(text.contains("Scan Item filter: (name = 'x')"), "{text}");
    let filter = text
        .find("Filter (SUM(fld)")
        .expect("the filter on the sum");
    assert!(
        text[filter..].starts_with(
            "Filter (SUM(fld) RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW > 10)"
        ),
        "{text}"
    );
    assert!(filter < text.find("Window").unwrap(), "{text}");
    // A filter on an ordering column would change the frames: it stays above.
    let q = query(
        &catalog(),
        "SELECT * FROM (SELECT id, SUM(fld) OVER (ORDER BY id) AS s FROM Item) AS t WHERE id > 5",
        &[],
    );
    let text = explain(&q);
    assert!(!text.contains("Scan Item filter"), "{text}");
}

#[test]
fn unused_windows_are_pruned_and_used_arguments_kept() {
    let q = query(
        &catalog(),
        "SELECT id FROM (SELECT id, ROW_NUMBER() OVER (ORDER BY fld) AS rn FROM Item) AS s",
        &[],
    );
    assert!(windows(&q).is_empty(), "{}", explain(&q));
    let q = query(
        &catalog(),
        "SELECT rn FROM (SELECT id, name, LAG(fldBatch) OVER (ORDER BY fld) AS rn FROM Item) AS s",
        &[],
    );
    let text = explain(&q);
    assert!(text.contains("columns: [fld, fldBatch]"), "{text}");
}

#[test]
fn a_window_over_groups_runs_after_the_final_aggregate() {
    let q = query(
        &catalog(),
        "SELECT name, COUNT(*), SUM(COUNT(*)) OVER (ORDER BY name) FROM Item GROUP BY name",
        &[],
    );
    let root = &q.fragments[0];
    let text = explain(&q);
    let window = text.find("Window").expect("a window");
    let fin = text
        .find("HashAggregate (final)")
        .expect("a final aggregate");
    assert!(window < fin, "{text}");
    assert_eq!(root.placement, Placement::Initiator);
    assert!(
        text.contains(
            "functions: [SUM(COUNT(*)) RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW]"
        ),
        "{text}"
    );
}

#[test]
fn explain_shows_partition_keys_order_and_frame() {
    let q = query(
        &catalog(),
        "SELECT SUM(fld) OVER (PARTITION BY name ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW EXCLUDE TIES), NTILE(4) OVER (PARTITION BY name ORDER BY id) FROM Item",
        &[],
    );
    let text = explain(&q);
    assert!(
        text.contains("Window partition by: [name] order by: [id ASC NULLS LAST] functions: [SUM(fld) ROWS BETWEEN 1 PRECEDING AND CURRENT ROW EXCLUDE TIES, NTILE(4)]"),
        "{text}"
    );
    assert!(text.contains("(hash(name))"), "{text}");
    // The output column is named as written, EXCLUDE included.
    assert_eq!(
        q.output_schema.fields[0].name,
        "SUM(fld) OVER (PARTITION BY name ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW EXCLUDE TIES)"
    );
}

#[test]
fn frame_offsets_may_be_parameters() {
    let q = query(
        &catalog(),
        "SELECT SUM(fld) OVER (ORDER BY id GROUPS BETWEEN ? PRECEDING AND $2 FOLLOWING EXCLUDE GROUP) FROM Item",
        &[Value::Int(2), Value::Int(1)],
    );
    assert_eq!(
        q.param_types,
        [Some(DataType::Int64), Some(DataType::Int64)]
    );
    let PhysicalPlan::Window { functions, .. } = windows(&q)[0].0 else {
        unreachable!()
    };
    let frame = &functions[0].frame;
    assert_eq!(frame.units, FrameUnits::Groups);
    assert_eq!(frame.start, FrameBound::Preceding(Expr::Param(0)));
    assert_eq!(frame.end, FrameBound::Following(Expr::Param(1)));
    assert_eq!(frame.exclude, FrameExclude::Group);
}

#[test]
fn misplaced_window_functions_are_errors_at_their_position() {
    let err = |sql: &str| match plan_statement(sql, &catalog(), &[], 4) {
        Err(e) => e,
        Ok(s) => panic!("{sql} planned: {s:?}"),
    };
    let e = err("SELECT id FROM Item\nWHERE RANK() OVER (ORDER BY id) = 1");
    assert_eq!(
        e,
        PlanError::Invalid("window functions are not allowed in WHERE at line 2, column 7".into())
    );
    let e = err("UPDATE Item SET fld = ROW_NUMBER() OVER ()");
    assert!(
        e.to_string()
            .contains("window functions are not allowed in UPDATE at line 1, column 23"),
        "{e}"
    );
    let e = err("SELECT * FROM (VALUES (ROW_NUMBER() OVER ())) AS v");
    assert!(e.to_string().contains("not allowed in VALUES"), "{e}");
    let e = err("SELECT FIRST_VALUE(name) IGNORE NULLS OVER (ORDER BY id) FROM Item");
    assert!(
        matches!(&e, PlanError::Unsupported { what, position } if what == "IGNORE NULLS and RESPECT NULLS" && position == "line 1, column 8"),
        "{e:?}"
    );
}

#[test]
fn the_numbering_window_goes_last_so_that_a_top_n_cuts_it() {
    let q = query(
        &catalog(),
        "SELECT id, SUM(fld) OVER (ORDER BY id), ROW_NUMBER() OVER (PARTITION BY name ORDER BY fld) AS rn, LAG(fld) OVER (PARTITION BY fld ORDER BY id) FROM Item QUALIFY rn <= 2",
        &[],
    );
    let keeps: Vec<Option<usize>> = windows(&q).iter().map(|(p, _)| keep_of(p)).collect();
    // The numbering window keeps 2 (it runs where the unpartitioned window gathered the
    // rows, so there is no cut before an exchange); the others keep every row.
    assert_eq!(
        keeps.iter().filter(|k| **k == Some(2)).count(),
        1,
        "{}",
        explain(&q)
    );
    assert_eq!(keeps.iter().filter(|k| k.is_none()).count(), 2);
}
