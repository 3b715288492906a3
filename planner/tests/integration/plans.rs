//! Plan-shape tests: fragments, placements, rules.
use crate::common;
use common::*;
use weir_operators::plan::{AggFunc, AggMode, IndexLookup, JoinSide};
use weir_operators::{BinaryOp, DataType, Expr, PhysicalPlan, Value};
use weir_planner::{Catalog, Distribution, Placement, Pruning, QueryPlan};

fn find<'a>(p: &'a PhysicalPlan, name: &str, out: &mut Vec<&'a PhysicalPlan>) {
    if p.name() == name || (name == "Scan" && matches!(p, PhysicalPlan::Scan { .. })) {
        out.push(p);
    }
    for c in p.children() {
        find(c, name, out);
    }
}

fn nodes<'a>(q: &'a QueryPlan, name: &str) -> Vec<&'a PhysicalPlan> {
    let mut out = Vec::new();
    for f in &q.fragments {
        find(&f.plan, name, &mut out);
    }
    out
}

fn shape(p: &PhysicalPlan) -> String {
    let kids: Vec<String> = p.children().into_iter().map(shape).collect();
    if kids.is_empty() {
        p.name().to_string()
    } else {
        format!("{}({})", p.name(), kids.join(", "))
    }
}

#[test]
fn index_selected_for_param_equality() {
    let cat = catalog();
    let q = query(
        &cat,
        "SELECT * FROM Item WHERE fldIdx = ?",
        &[Value::Int(7)],
    );
    assert_eq!(q.fragments.len(), 2);
    assert_eq!(q.param_types, vec![Some(DataType::Int64)]);
    let f1 = &q.fragments[1];
    assert_eq!(f1.id, 1);
    assert_eq!(
        f1.placement,
        Placement::Table {
            table: "Item".into(),
            pruning: Pruning::All
        }
    );
    let out = f1.output.as_ref().unwrap();
    assert_eq!(out.target, 0);
    assert_eq!(out.distribution, Distribution::Gather);
    match &f1.plan {
        PhysicalPlan::Scan {
            table,
            index,
            filter,
            projection,
            table_schema,
            external,
        } => {
            assert_eq!(*external, None);
            assert_eq!(table, "Item");
            assert_eq!(*index, Some((4, IndexLookup::Eq(Expr::Param(0)))));
            assert_eq!(*filter, None);
            assert_eq!(*projection, vec![0, 1, 2, 3, 4, 5]);
            assert_eq!(table_schema.len(), 6);
        }
        other => panic!("{other:?}"),
    }
    let root = &q.fragments[0];
    assert_eq!(root.placement, Placement::Initiator);
    assert!(root.output.is_none());
    assert!(matches!(root.plan, PhysicalPlan::Exchange { id, .. } if id == out.exchange));
    assert_eq!(q.output_schema.len(), 6);
    assert_eq!(q.output_schema.fields[4].name, "fldIdx");
}

#[test]
fn no_index_on_plain_column() {
    let cat = catalog();
    let q = query(&cat, "SELECT id FROM Item WHERE fld = ?", &[Value::Int(1)]);
    match &q.fragments[1].plan {
        PhysicalPlan::Project { input, .. } | PhysicalPlan::Limit { input, .. } => {
            panic!("unexpected {input:?}")
        }
        PhysicalPlan::Scan {
            index,
            filter,
            projection,
            ..
        } => {
            assert!(index.is_none());
            assert_eq!(
                *filter,
                Some(Expr::Column(2).binary(BinaryOp::Eq, Expr::Param(0)))
            );
            // projection pruning: only id is output, fld is read by the filter only
            assert_eq!(*projection, vec![0]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn index_in_list_and_range() {
    let cat = catalog();
    let q = query(
        &cat,
        "SELECT id FROM Item WHERE fldIdxBatch IN (1, 2, 3) AND fld > 0",
        &[],
    );
    let scans = nodes(&q, "Scan");
    match scans[0] {
        PhysicalPlan::Scan { index, filter, .. } => {
            assert_eq!(
                *index,
                Some((
                    5,
                    IndexLookup::In(vec![Expr::lit(1), Expr::lit(2), Expr::lit(3)])
                ))
            );
            assert!(filter.is_some());
        }
        _ => unreachable!(),
    }
    let q = query(
        &cat,
        "SELECT id FROM Item WHERE fldIdx >= ? AND fldIdx < 10",
        &[Value::Int(1)],
    );
    match nodes(&q, "Scan")[0] {
        PhysicalPlan::Scan { index, filter, .. } => {
            assert_eq!(
                *index,
                Some((
                    4,
                    IndexLookup::Range {
                        low: Some((Expr::Param(0), true)),
                        high: Some((Expr::lit(10), false)),
                    }
                ))
            );
            assert!(filter.is_none());
        }
        _ => unreachable!(),
    }
    // a constant on the left flips the comparison
    let q = query(&cat, "SELECT id FROM Item WHERE 5 < fldIdx", &[]);
    match nodes(&q, "Scan")[0] {
        PhysicalPlan::Scan { index, .. } => assert_eq!(
            *index,
            Some((
                4,
                IndexLookup::Range {
                    low: Some((Expr::lit(5), false)),
                    high: None
                }
            ))
        ),
        _ => unreachable!(),
    }
    let q = query(
        &cat,
        "SELECT id FROM Item WHERE fldIdx BETWEEN 1 AND 2",
        &[],
    );
    match nodes(&q, "Scan")[0] {
        PhysicalPlan::Scan { index, .. } => assert_eq!(
            *index,
            Some((
                4,
                IndexLookup::Range {
                    low: Some((Expr::lit(1), true)),
                    high: Some((Expr::lit(2), true))
                }
            ))
        ),
        _ => unreachable!(),
    }
}

#[test]
fn pk_pruning() {
    let cat = catalog();
    let q = query(
        &cat,
        "SELECT name FROM Item WHERE id = ? AND fld = 3",
        &[Value::Int(9)],
    );
    assert_eq!(
        q.fragments[1].placement,
        Placement::Table {
            table: "Item".into(),
            pruning: Pruning::Keys(vec![Expr::Param(0)])
        }
    );
    let q = query(&cat, "SELECT name FROM Item WHERE id IN (1, 2)", &[]);
    assert_eq!(
        q.fragments[1].placement,
        Placement::Table {
            table: "Item".into(),
            pruning: Pruning::Keys(vec![Expr::lit(1), Expr::lit(2)])
        }
    );
    // OR does not prune
    let q = query(&cat, "SELECT name FROM Item WHERE id = 1 OR fld = 2", &[]);
    assert!(matches!(
        q.fragments[1].placement,
        Placement::Table {
            pruning: Pruning::All,
            ..
        }
    ));
}

#[test]
fn select_distinct_is_a_two_phase_aggregate_without_aggregates() {
    let cat = catalog();
    let q = query(
        &cat,
        "SELECT DISTINCT name, fld + 1 AS f FROM Item WHERE id > 3 ORDER BY f DESC",
        &[],
    );
    assert_eq!(q.fragments.len(), 2);
    let partial = nodes(&q, "HashAggregate");
    assert_eq!(partial.len(), 2, "{}", explain(&q));
    match &q.fragments[1].plan {
        PhysicalPlan::HashAggregate {
            mode,
            aggs,
            group_by,
            group_types,
            ..
        } => {
            assert_eq!(*mode, AggMode::Partial);
            assert!(aggs.is_empty());
            assert_eq!(group_by.len(), 2);
            assert_eq!(group_types, &vec![DataType::Utf8, DataType::Int64]);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        shape(&q.fragments[0].plan),
        "Sort(HashAggregate(Exchange))",
        "{}",
        explain(&q)
    );
    assert_eq!(q.output_schema.fields.len(), 2);
    assert_eq!(q.output_schema.fields[1].name, "f");
}

#[test]
fn select_distinct_order_by_must_be_in_the_select_list() {
    let cat = catalog();
    let e =
        weir_planner::plan_statement("SELECT DISTINCT name FROM Item ORDER BY fld", &cat, &[], 4)
            .unwrap_err();
    assert!(
        e.to_string()
            .contains("for SELECT DISTINCT, ORDER BY expressions must appear in the select list at line 1, column 41"),
        "{e}"
    );
    // By ordinal, alias or the same expression it is fine.
    for sql in [
        "SELECT DISTINCT name AS n FROM Item ORDER BY 1",
        "SELECT DISTINCT name AS n FROM Item ORDER BY n",
        "SELECT DISTINCT name FROM Item ORDER BY name",
        "SELECT DISTINCT * FROM Item ORDER BY fld",
    ] {
        query(&cat, sql, &[]);
    }
}

#[test]
fn two_phase_aggregate() {
    let cat = catalog();
    let q = query(
        &cat,
        "SELECT fld, COUNT(*), AVG(fldBatch) AS a FROM Item GROUP BY fld",
        &[],
    );
    assert_eq!(q.fragments.len(), 2);
    match &q.fragments[1].plan {
        PhysicalPlan::HashAggregate {
            mode,
            aggs,
            group_by,
            ..
        } => {
            assert_eq!(*mode, AggMode::Partial);
            assert_eq!(*group_by, vec![Expr::Column(0)]);
            assert_eq!(aggs[0].func, AggFunc::CountStar);
            assert_eq!(aggs[1].func, AggFunc::Avg);
        }
        other => panic!("{other:?}"),
    }
    match &q.fragments[0].plan {
        PhysicalPlan::HashAggregate { mode, input, .. } => {
            assert_eq!(*mode, AggMode::Final);
            match input.as_ref() {
                PhysicalPlan::Exchange { schema, .. } => {
                    // key, count, avg sum, avg count
                    assert_eq!(
                        schema.types(),
                        vec![
                            DataType::Int64,
                            DataType::Int64,
                            DataType::Float64,
                            DataType::Int64
                        ]
                    );
                }
                other => panic!("{other:?}"),
            }
        }
        other => panic!("{other:?}"),
    }
    let names: Vec<&str> = q
        .output_schema
        .fields
        .iter()
        .map(|f| f.name.as_str())
        .collect();
    assert_eq!(names, vec!["fld", "COUNT(*)", "a"]);
    assert_eq!(
        q.output_schema.types(),
        vec![DataType::Int64, DataType::Int64, DataType::Float64]
    );
}

#[test]
fn aggregate_having_order_by_alias_and_ordinal() {
    let cat = catalog();
    let q = query(
        &cat,
        "SELECT fld AS f, SUM(fldBatch) AS s FROM Item WHERE fldIdx = 3 GROUP BY f HAVING COUNT(*) > 1 ORDER BY s DESC, 1 LIMIT 3",
        &[],
    );
    assert_eq!(
        shape(&q.fragments[0].plan),
        "Limit(Sort(Project(Filter(HashAggregate(Exchange)))))"
    );
    match &q.fragments[0].plan {
        PhysicalPlan::Limit {
            input,
            offset,
            limit,
        } => {
            assert_eq!((*offset, *limit), (0, Some(3)));
            match input.as_ref() {
                PhysicalPlan::Sort { keys, limit, .. } => {
                    assert_eq!(*limit, Some(3));
                    assert_eq!(keys[0].expr, Expr::Column(1));
                    assert!(keys[0].descending && keys[0].nulls_first);
                    assert_eq!(keys[1].expr, Expr::Column(0));
                    assert!(!keys[1].descending && !keys[1].nulls_first);
                }
                other => panic!("{other:?}"),
            }
        }
        other => panic!("{other:?}"),
    }
    // HAVING adds COUNT(*) next to SUM
    match &q.fragments[1].plan {
        PhysicalPlan::HashAggregate { aggs, .. } => assert_eq!(aggs.len(), 2),
        other => panic!("{other:?}"),
    }
}

#[test]
fn top_k_pushdown() {
    let cat = catalog();
    let q = query(
        &cat,
        "SELECT id, name FROM Item ORDER BY fld DESC NULLS LAST LIMIT 10 OFFSET 5",
        &[],
    );
    assert_eq!(shape(&q.fragments[1].plan), "Sort(Scan)");
    match &q.fragments[1].plan {
        PhysicalPlan::Sort { limit, keys, .. } => {
            assert_eq!(*limit, Some(15));
            assert!(keys[0].descending && !keys[0].nulls_first);
            assert_eq!(keys[0].expr, Expr::Column(2));
        }
        _ => unreachable!(),
    }
    assert_eq!(
        shape(&q.fragments[0].plan),
        "Project(Limit(Sort(Exchange)))"
    );
    match &q.fragments[0].plan {
        PhysicalPlan::Project { exprs, input } => {
            assert_eq!(*exprs, vec![Expr::Column(0), Expr::Column(1)]);
            match input.as_ref() {
                PhysicalPlan::Limit { offset, limit, .. } => {
                    assert_eq!((*offset, *limit), (5, Some(10)))
                }
                _ => unreachable!(),
            }
        }
        _ => unreachable!(),
    }
    assert_eq!(q.output_schema.len(), 2);

    // LIMIT without ORDER BY pushes a plain limit
    let q = query(&cat, "SELECT id FROM Item LIMIT 3", &[]);
    assert_eq!(shape(&q.fragments[1].plan), "Limit(Scan)");
    assert_eq!(shape(&q.fragments[0].plan), "Limit(Exchange)");
}

#[test]
fn fetch_first_plans_like_limit() {
    let cat = catalog();
    for (fetch, limit) in [
        (
            "SELECT id, name FROM Item ORDER BY fld DESC NULLS LAST OFFSET 5 ROWS FETCH FIRST 10 ROWS ONLY",
            "SELECT id, name FROM Item ORDER BY fld DESC NULLS LAST LIMIT 10 OFFSET 5",
        ),
        (
            "SELECT id FROM Item FETCH NEXT 3 ROWS ONLY",
            "SELECT id FROM Item LIMIT 3",
        ),
        ("SELECT id FROM Item FETCH FIRST ROW ONLY", "SELECT id FROM Item LIMIT 1"),
        (
            "SELECT fld, COUNT(*) FROM Item GROUP BY fld ORDER BY 2 OFFSET 1 ROW FETCH FIRST 2 ROWS ONLY",
            "SELECT fld, COUNT(*) FROM Item GROUP BY fld ORDER BY 2 LIMIT 2 OFFSET 1",
        ),
    ] {
        assert_eq!(
            explain(&query(&cat, fetch, &[])),
            explain(&query(&cat, limit, &[])),
            "{fetch}"
        );
    }
}

#[test]
fn values_query_is_one_constant_fragment() {
    let cat = catalog();
    let q = query(
        &cat,
        "VALUES (1, 'a'), (2.5, NULL) ORDER BY column1 DESC LIMIT 1",
        &[],
    );
    assert_eq!(q.fragments.len(), 1);
    assert_eq!(shape(&q.fragments[0].plan), "Limit(Sort(Values))");
    // BIGINT with DECIMAL is DECIMAL.
    assert_eq!(
        q.output_schema.types(),
        vec![
            DataType::Decimal {
                precision: 38,
                scale: 1
            },
            DataType::Utf8
        ]
    );
    assert_eq!(q.output_schema.fields[1].name, "column2");
    match &nodes(&q, "Values")[0] {
        PhysicalPlan::Values { rows, .. } => assert_eq!(
            rows,
            &vec![
                vec![Value::Decimal(10, 1), Value::Str("a".into())],
                vec![Value::Decimal(25, 1), Value::Null],
            ]
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn default_null_ordering() {
    let cat = catalog();
    let q = query(&cat, "SELECT id FROM Item ORDER BY id ASC", &[]);
    match &q.fragments[0].plan {
        PhysicalPlan::Sort { keys, limit, .. } => {
            assert!(!keys[0].descending && !keys[0].nulls_first);
            assert_eq!(*limit, None);
        }
        other => panic!("{other:?}"),
    }
    let q = query(&cat, "SELECT id FROM Item ORDER BY id DESC", &[]);
    match &q.fragments[0].plan {
        PhysicalPlan::Sort { keys, .. } => assert!(keys[0].descending && keys[0].nulls_first),
        other => panic!("{other:?}"),
    }
    let q = query(&cat, "SELECT id FROM Item ORDER BY id NULLS FIRST", &[]);
    match &q.fragments[0].plan {
        PhysicalPlan::Sort { keys, .. } => assert!(!keys[0].descending && keys[0].nulls_first),
        other => panic!("{other:?}"),
    }
}

#[test]
fn many_groups_merge_on_every_data_node_after_a_hash_exchange() {
    let mut cat = catalog();
    // Item's key is unique: grouping by it makes as many groups as Item has rows.
    cat.set_row_count("Item", 2_000_000);
    let q = query(
        &cat,
        "SELECT id, SUM(fld) AS s FROM Item GROUP BY id HAVING SUM(fld) > 10 ORDER BY s DESC LIMIT 5",
        &[],
    );
    let partial = q
        .fragments
        .iter()
        .find(|f| matches!(f.placement, Placement::Table { .. }))
        .unwrap();
    assert_eq!(
        shape(&partial.plan),
        "HashAggregate(Scan)",
        "{}",
        explain(&q)
    );
    let output = partial.output.as_ref().unwrap();
    assert_eq!(
        output.distribution,
        Distribution::Hash(vec![Expr::Column(0)])
    );
    // The final phase, HAVING and each node's top rows run on every data node; the
    // initiator merges their top rows.
    let merged = q.fragments.iter().find(|f| f.id == output.target).unwrap();
    assert_eq!(merged.placement, Placement::AllDataNodes, "{}", explain(&q));
    assert_eq!(
        shape(&merged.plan),
        "Sort(Filter(HashAggregate(Exchange)))",
        "{}",
        explain(&q)
    );
    match nodes(&q, "HashAggregate")[..] {
        [PhysicalPlan::HashAggregate { mode: first, .. }, PhysicalPlan::HashAggregate { mode: second, .. }] =>
        {
            let mut modes = [*first, *second];
            modes.sort_by_key(|m| format!("{m:?}"));
            assert_eq!(modes, [AggMode::Final, AggMode::Partial]);
        }
        ref other => panic!("{other:?}"),
    }
    assert_eq!(shape(&q.fragments[0].plan), "Limit(Sort(Exchange))");
    // Few groups (a tenth of the rows, unknown values): merged on the initiator.
    cat.set_row_count("Item", 100_000);
    let few = query(
        &cat,
        "SELECT fld, SUM(fldBatch) FROM Item GROUP BY fld",
        &[],
    );
    assert_eq!(shape(&few.fragments[0].plan), "HashAggregate(Exchange)");
    assert_eq!(few.fragments[0].placement, Placement::Initiator);
}

#[test]
fn a_grouping_by_the_keys_its_input_is_spread_by_runs_in_one_phase() {
    let mut cat = catalog();
    cat.set_row_count("Item", 2_000_000);
    // The inner grouping spreads its groups over the nodes by (id, fld); the outer one
    // groups by both and more, so each of its groups is whole on one node.
    let q = query(
        &cat,
        "SELECT id, fld, c, COUNT(*) FROM (SELECT id, fld, COUNT(*) AS c FROM Item GROUP BY id, fld) AS g GROUP BY id, fld, c",
        &[],
    );
    let modes: Vec<AggMode> = nodes(&q, "HashAggregate")
        .into_iter()
        .map(|p| match p {
            PhysicalPlan::HashAggregate { mode, .. } => *mode,
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(modes.len(), 3, "{}", explain(&q));
    assert!(modes.contains(&AggMode::Single), "{}", explain(&q));
}

/// The fragments that run on every data node, and the hash exchanges into them.
fn spread_fragments(q: &QueryPlan) -> (usize, usize) {
    let spread: Vec<u32> = q
        .fragments
        .iter()
        .filter(|f| f.placement == Placement::AllDataNodes)
        .map(|f| f.id)
        .collect();
    let hashed = q
        .fragments
        .iter()
        .filter_map(|f| f.output.as_ref())
        .filter(|o| spread.contains(&o.target) && matches!(o.distribution, Distribution::Hash(_)))
        .count();
    (spread.len(), hashed)
}

#[test]
fn a_join_on_the_keys_its_input_is_spread_by_runs_where_the_rows_are() {
    let cat = large_catalog();
    // Both joins are on the item's fld: the second one joins in the first one's fragment,
    // and only Tag's rows move for it.
    let q = query(
        &cat,
        "SELECT i.name, c.label, t.score FROM Item AS i JOIN Category AS c ON i.fld = c.cid \
         JOIN Tag AS t ON i.fld = t.item_id",
        &[],
    );
    assert_eq!(nodes(&q, "HashJoin").len(), 2, "{}", explain(&q));
    assert_eq!(spread_fragments(&q), (1, 3), "{}", explain(&q));
    // A semi join and a grouping on that key too: still one fragment, one phase.
    let q = query(
        &cat,
        "SELECT i.fld, COUNT(*) FROM Item AS i JOIN Category AS c ON i.fld = c.cid \
         WHERE EXISTS (SELECT 1 FROM Tag AS t WHERE t.item_id = i.fld) GROUP BY i.fld",
        &[],
    );
    assert_eq!(spread_fragments(&q), (1, 3), "{}", explain(&q));
    let modes: Vec<AggMode> = nodes(&q, "HashAggregate")
        .into_iter()
        .map(|p| match p {
            PhysicalPlan::HashAggregate { mode, .. } => *mode,
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(modes, [AggMode::Single], "{}", explain(&q));
    // An inner join's rows are spread by either side's key: a join or a grouping on the
    // other side's needs no exchange either.
    let q = query(
        &cat,
        "SELECT i.name, c.label, t.score FROM Item AS i JOIN Category AS c ON i.fld = c.cid \
         JOIN Tag AS t ON c.cid = t.item_id",
        &[],
    );
    assert_eq!(spread_fragments(&q), (1, 3), "{}", explain(&q));
    let q = query(
        &cat,
        "SELECT c.cid, COUNT(*) FROM Item AS i JOIN Category AS c ON i.fld = c.cid GROUP BY c.cid",
        &[],
    );
    assert_eq!(spread_fragments(&q), (1, 2), "{}", explain(&q));
    // A left join's right key is NULL on its unmatched rows: it does not say where they are.
    let q = query(
        &cat,
        "SELECT i.name, t.score FROM Item AS i LEFT JOIN Category AS c ON i.fld = c.cid \
         JOIN Tag AS t ON c.cid = t.item_id",
        &[],
    );
    assert_eq!(spread_fragments(&q), (2, 4), "{}", explain(&q));
    // A join on another key moves the rows again.
    let q = query(
        &cat,
        "SELECT i.name, c.label, t.score FROM Item AS i JOIN Category AS c ON i.fld = c.cid \
         JOIN Tag AS t ON i.fldBatch = t.item_id",
        &[],
    );
    assert_eq!(spread_fragments(&q), (2, 4), "{}", explain(&q));
    // After a full join neither side's key places every row: the next join moves them.
    let q = query(
        &cat,
        "SELECT i.name, t.score FROM Item AS i FULL JOIN Category AS c ON i.fld = c.cid \
         JOIN Tag AS t ON i.fld = t.item_id",
        &[],
    );
    assert_eq!(spread_fragments(&q), (2, 4), "{}", explain(&q));
}

/// The fixture catalog with every table a million rows, so that no join input is small
/// enough to broadcast.
fn large_catalog() -> Catalog {
    let mut cat = catalog();
    for t in ["Item", "Category", "Tag"] {
        cat.set_row_count(t, 1_000_000);
    }
    cat
}

#[test]
fn join_shape() {
    let mut cat = large_catalog();
    // Filtered, Category is the smaller side, but too big to broadcast.
    cat.set_row_count("Category", 200_000);
    let q = query(
        &cat,
        "SELECT i.name, c.label FROM Item AS i INNER JOIN Category c ON i.fld = c.cid WHERE c.weight > 1.5 AND i.fldIdx = 4",
        &[],
    );
    assert_eq!(q.fragments.len(), 4);
    let join = q
        .fragments
        .iter()
        .find(|f| f.placement == Placement::AllDataNodes)
        .unwrap();
    assert_eq!(join.output.as_ref().unwrap().target, 0);
    assert_eq!(
        join.output.as_ref().unwrap().distribution,
        Distribution::Gather
    );
    let hj = nodes(&q, "HashJoin");
    assert_eq!(hj.len(), 1);
    match hj[0] {
        PhysicalPlan::HashJoin {
            left,
            right,
            left_keys,
            right_keys,
            join_type,
            filter,
            build,
            left_types,
            right_types,
            output,
        } => {
            // Category is much smaller than Item
            // The join emits only what the query reads: i.name and c.label.
            assert_eq!(*output, Some(vec![0, 3]));
            assert_eq!(*build, JoinSide::Right);
            assert_eq!(*join_type, weir_operators::plan::JoinType::Inner);
            assert!(filter.is_none());
            let (
                PhysicalPlan::Exchange { id: le, schema: ls },
                PhysicalPlan::Exchange { id: re, schema: rs },
            ) = (left.as_ref(), right.as_ref())
            else {
                panic!()
            };
            assert_eq!(left_types, &ls.types());
            assert_eq!(right_types, &rs.types());
            assert_ne!(le, re);
            // Item side outputs name, fld; Category side outputs cid, label
            assert_eq!(
                ls.fields
                    .iter()
                    .map(|f| f.name.as_str())
                    .collect::<Vec<_>>(),
                ["name", "fld"]
            );
            assert_eq!(
                rs.fields
                    .iter()
                    .map(|f| f.name.as_str())
                    .collect::<Vec<_>>(),
                ["cid", "label"]
            );
            assert_eq!(*left_keys, vec![Expr::Column(1)]);
            assert_eq!(*right_keys, vec![Expr::Column(0)]);
            for side in q
                .fragments
                .iter()
                .filter(|f| matches!(f.placement, Placement::Table { .. }))
            {
                let out = side.output.as_ref().unwrap();
                assert_eq!(out.target, join.id);
                let expected = if out.exchange == *le {
                    left_keys
                } else {
                    right_keys
                };
                assert_eq!(out.distribution, Distribution::Hash(expected.clone()));
            }
        }
        _ => unreachable!(),
    }
    // filters pushed into each side; index on the Item side
    for s in nodes(&q, "Scan") {
        match s {
            PhysicalPlan::Scan {
                table,
                index,
                filter,
                ..
            } if table == "Item" => {
                assert_eq!(*index, Some((4, IndexLookup::Eq(Expr::lit(4)))));
                assert!(filter.is_none());
            }
            PhysicalPlan::Scan { filter, index, .. } => {
                assert!(index.is_none());
                assert_eq!(
                    *filter,
                    Some(Expr::Column(2).binary(BinaryOp::Gt, Expr::lit(1.5)))
                );
            }
            _ => unreachable!(),
        }
    }
    // the join fragment's top is the join itself: the projection onto name, label folded in
    assert!(matches!(
        &join.plan,
        PhysicalPlan::HashJoin { output: Some(cols), .. } if *cols == vec![0, 3]
    ));
}

#[test]
fn broadcast_or_repartition_follows_the_number_of_data_nodes() {
    // Tag (10,000 rows) joined with Item (100,000).
    let sql = "SELECT t.score, i.name FROM Item i JOIN Tag t ON i.id = t.item_id";
    let mut cat = catalog();
    // Unknown cluster size: a side 8 times smaller is broadcast.
    assert_eq!(
        join_inputs(&query(&cat, sql, &[])).0,
        vec![Distribution::Broadcast]
    );
    // Three nodes: sending Tag to the two others moves fewer rows than shuffling both.
    cat.set_data_nodes(3);
    assert_eq!(
        join_inputs(&query(&cat, sql, &[])).0,
        vec![Distribution::Broadcast]
    );
    // Twenty nodes: nineteen copies of Tag are more rows than both tables together.
    cat.set_data_nodes(20);
    let q = query(&cat, sql, &[]);
    let (inputs, _) = join_inputs(&q);
    assert_eq!(inputs.len(), 2, "{inputs:?}");
    assert!(
        inputs
            .iter()
            .all(|d| matches!(d, Distribution::Hash(keys) if keys.len() == 1)),
        "{inputs:?}"
    );
    assert_eq!(
        q.fragments
            .iter()
            .filter(|f| f.placement == Placement::AllDataNodes)
            .count(),
        1,
        "one join fragment on every data node"
    );
    // A tiny table is broadcast whatever the cluster size.
    let tiny = "SELECT i.name, c.label FROM Item i JOIN Category c ON i.fld = c.cid";
    assert_eq!(
        join_inputs(&query(&cat, tiny, &[])).0,
        vec![Distribution::Broadcast]
    );
}

#[test]
fn join_build_side_follows_row_counts() {
    let mut cat = catalog();
    cat.set_row_count("Category", 10_000_000);
    let q = query(
        &cat,
        "SELECT * FROM Item i JOIN Category c ON i.fld = c.cid",
        &[],
    );
    match nodes(&q, "HashJoin")[0] {
        PhysicalPlan::HashJoin { build, .. } => assert_eq!(*build, JoinSide::Left),
        _ => unreachable!(),
    }
    assert_eq!(q.output_schema.len(), 9);
}

#[test]
fn three_way_join_with_aggregate() {
    let cat = large_catalog();
    let q = query(
        &cat,
        "SELECT c.label, SUM(t.score), COUNT(*) FROM Item i JOIN Tag t ON i.id = t.item_id JOIN Category c ON t.cat_id = c.cid AND c.weight > i.fld GROUP BY c.label",
        &[],
    );
    let joins: Vec<_> = q
        .fragments
        .iter()
        .filter(|f| f.placement == Placement::AllDataNodes)
        .collect();
    assert_eq!(joins.len(), 2);
    // first join feeds the second by hash
    let first = joins
        .iter()
        .find(|f| {
            matches!(
                f.output.as_ref().unwrap().distribution,
                Distribution::Hash(_)
            )
        })
        .unwrap();
    let second = joins.iter().find(|f| f.id != first.id).unwrap();
    assert_eq!(first.output.as_ref().unwrap().target, second.id);
    // The non-equi conjunct is the second join's residual filter.
    assert_eq!(
        shape(&second.plan),
        "HashAggregate(HashJoin(Exchange, Exchange))"
    );
    match nodes(&q, "HashJoin").into_iter().find(|j| {
        matches!(
            j,
            PhysicalPlan::HashJoin {
                filter: Some(_),
                ..
            }
        )
    }) {
        Some(PhysicalPlan::HashJoin {
            filter: Some(f), ..
        }) => {
            assert!(f.to_string().contains('>'), "{f}")
        }
        _ => panic!("no join with the residual filter"),
    }
    // exchange ids are unique
    let mut ex: Vec<u32> = q
        .fragments
        .iter()
        .filter_map(|f| f.output.as_ref().map(|o| o.exchange))
        .collect();
    ex.sort();
    ex.dedup();
    assert_eq!(ex.len(), q.fragments.len() - 1);
    assert!(matches!(
        q.fragments[0].plan,
        PhysicalPlan::HashAggregate {
            mode: AggMode::Final,
            ..
        }
    ));
}

#[test]
fn comma_join_with_where_equality() {
    let cat = catalog();
    let q = query(
        &cat,
        "SELECT i.id FROM Item i, Category c WHERE i.fld = c.cid",
        &[],
    );
    assert_eq!(nodes(&q, "HashJoin").len(), 1);
}

#[test]
fn no_from() {
    let cat = catalog();
    let q = query(&cat, "SELECT 1 + 1 AS two, 2.5, 'x'", &[]);
    assert_eq!(q.fragments.len(), 1);
    assert_eq!(shape(&q.fragments[0].plan), "Project(Values)");
    assert_eq!(
        q.output_schema.types(),
        // 2.5 is an exact DECIMAL of scale 1, as in PostgreSQL.
        vec![DataType::Int64, DataType::decimal(38, 1), DataType::Utf8]
    );
    assert_eq!(q.output_schema.fields[0].name, "two");
}

#[test]
fn int_float_casts() {
    let cat = catalog();
    let q = query(
        &cat,
        "SELECT weight + cid AS s FROM Category WHERE weight > 1",
        &[],
    );
    assert_eq!(q.output_schema.types(), vec![DataType::Float64]);
    match nodes(&q, "Scan")[0] {
        PhysicalPlan::Scan { filter, .. } => assert_eq!(
            *filter,
            Some(Expr::Column(2).binary(BinaryOp::Gt, Expr::lit(1.0)))
        ),
        _ => unreachable!(),
    }
    match &q.fragments[1].plan {
        PhysicalPlan::Project { exprs, .. } => assert!(format!("{}", exprs[0]).contains("CAST")),
        other => panic!("{other:?}"),
    }
    // an integer parameter where a DOUBLE is expected is accepted and cast
    let q = query(
        &cat,
        "SELECT cid FROM Category WHERE weight = ?",
        &[Value::Int(2)],
    );
    assert_eq!(q.param_types, vec![Some(DataType::Float64)]);
    match nodes(&q, "Scan")[0] {
        PhysicalPlan::Scan { filter, .. } => {
            assert!(format!("{}", filter.as_ref().unwrap()).contains("CAST($1 AS DOUBLE)"))
        }
        _ => unreachable!(),
    }
}

#[test]
fn expressions_bind() {
    let cat = catalog();
    let q = query(
        &cat,
        "SELECT -fld, NOT (fld > 1 OR name IS NULL), name LIKE 'a%', CAST(fld AS DOUBLE), fld NOT IN (1, 2), fld NOT BETWEEN 1 AND 2, name IS NOT NULL, ((fld % 3) * 2) / 1 FROM item WHERE TRUE",
        &[],
    );
    assert_eq!(
        q.output_schema.types(),
        vec![
            DataType::Int64,
            DataType::Boolean,
            DataType::Boolean,
            DataType::Float64,
            DataType::Boolean,
            DataType::Boolean,
            DataType::Boolean,
            DataType::Int64
        ]
    );
    // case-insensitive names, qualified columns and t.*
    let q = query(
        &cat,
        "SELECT ITEM.NAME, i2.* FROM item JOIN category i2 ON item.FLD = i2.CID",
        &[],
    );
    assert_eq!(q.output_schema.fields[0].name, "name");
    assert_eq!(q.output_schema.len(), 4);
}

#[test]
fn param_numbering_is_textual() {
    let cat = catalog();
    let q = query(
        &cat,
        "SELECT name, ? FROM Item i JOIN Category c ON i.fld = c.cid AND c.label = ? WHERE i.fld = ?",
        &[Value::Bool(true), Value::Str("x".into()), Value::Int(3)],
    );
    assert_eq!(
        q.param_types,
        vec![None, Some(DataType::Utf8), Some(DataType::Int64)]
    );
    assert_eq!(
        q.output_schema.types(),
        vec![DataType::Utf8, DataType::Boolean]
    );
    let q = query(
        &cat,
        "SELECT name FROM Item WHERE fld = $2 AND name = $1",
        &[Value::from("a"), Value::Int(1)],
    );
    assert_eq!(
        q.param_types,
        vec![Some(DataType::Utf8), Some(DataType::Int64)]
    );
    // NULL parameters are accepted anywhere
    query(
        &cat,
        "SELECT name FROM Item WHERE fld = ? AND name = ?",
        &[Value::Null, Value::Null],
    );
}

#[test]
fn explain_text() {
    let cat = catalog();
    let sql = "EXPLAIN SELECT fld, COUNT(*) FROM Item WHERE fldIdx = ? GROUP BY fld ORDER BY 2 DESC LIMIT 5";
    let p = match weir_planner::plan_statement(sql, &cat, &[Value::Int(1)], 4).unwrap() {
        weir_planner::Statement::Explain(p) => p,
        other => panic!("{other:?}"),
    };
    let text = p.explain(&|f| format!("nodes-of-{}", f.id));
    for needle in [
        "Fragment 0",
        "Fragment 1",
        "IndexScan Item",
        "fldIdx = $1",
        "HashAggregate (partial)",
        "HashAggregate (final)",
        "Sort",
        "Limit 5",
        "Exchange #0",
        "nodes-of-1",
        "gather",
    ] {
        assert!(text.contains(needle), "missing {needle} in\n{text}");
    }
    let q = query(
        &large_catalog(),
        "SELECT i.name FROM Item i JOIN Category c ON i.fld = c.cid WHERE c.label NOT LIKE 'x%'",
        &[],
    );
    let text = explain(&q);
    for needle in [
        "HashJoin on fld = cid",
        "hash(fld)",
        "hash(cid)",
        "all data nodes",
        "filter: label NOT LIKE 'x%'",
    ] {
        assert!(text.contains(needle), "missing {needle} in\n{text}");
    }
}

#[test]
fn plans_serialize() {
    let cat = catalog();
    let q = query(&cat, "SELECT i.name, COUNT(*) FROM Item i JOIN Category c ON i.fld = c.cid WHERE i.id IN (1, 2) GROUP BY i.name", &[]);
    let json = serde_json_like(&q);
    assert!(json.contains("HashJoin"));
}

// serde round trip through the Debug-free serde_test-less path: use serde's own value model
fn serde_json_like(q: &QueryPlan) -> String {
    // Fragment types derive Serialize; Debug is enough to check content here, and the
    // serialization itself is checked by compiling this bound.
    fn assert_serde<T: serde::Serialize + for<'de> serde::Deserialize<'de>>(_: &T) {}
    assert_serde(q);
    format!("{q:?}")
}

#[test]
fn small_right_side_of_a_keyless_or_not_in_join_is_broadcast() {
    let cat = catalog();
    // A scalar subquery: its single row goes to every node scanning Item.
    let q = query(
        &cat,
        "SELECT id FROM Item WHERE fld > (SELECT MAX(weight) FROM Category)",
        &[],
    );
    let scan = q
        .fragments
        .iter()
        .find(|f| matches!(&f.placement, Placement::Table { table, .. } if table == "Item"))
        .unwrap();
    assert_eq!(shape(&scan.plan), "Project(NestedLoopJoin(Scan, Exchange))");
    let senders = q.inputs_of(scan.id);
    assert_eq!(senders.len(), 1);
    assert_eq!(
        senders[0].output.as_ref().unwrap().distribution,
        Distribution::Broadcast
    );
    // NOT IN: the whole (smaller) subquery result reaches every instance.
    let q = query(
        &cat,
        "SELECT id FROM Item WHERE fld NOT IN (SELECT cid FROM Category)",
        &[],
    );
    let j = nodes(&q, "HashJoin");
    assert!(matches!(
        j[0],
        PhysicalPlan::HashJoin {
            join_type: weir_operators::plan::JoinType::Anti { null_aware: true },
            build: JoinSide::Right,
            ..
        }
    ));
    assert!(q.fragments.iter().any(|f| f
        .output
        .as_ref()
        .is_some_and(|o| o.distribution == Distribution::Broadcast)));
}

/// The distributions of the exchanges feeding the fragment that holds the one hash join, and
/// that join's build side.
fn join_inputs(q: &QueryPlan) -> (Vec<Distribution>, JoinSide) {
    let host = q
        .fragments
        .iter()
        .find(|f| shape(&f.plan).contains("HashJoin"))
        .expect("a hash join");
    let inputs = q
        .fragments
        .iter()
        .filter_map(|f| f.output.as_ref())
        .filter(|o| o.target == host.id)
        .map(|o| o.distribution.clone())
        .collect();
    let build = match nodes(q, "HashJoin")[..] {
        [PhysicalPlan::HashJoin { build, .. }] => *build,
        ref other => panic!("{other:?}"),
    };
    (inputs, build)
}

#[test]
fn a_small_join_side_is_broadcast_to_the_big_one() {
    let cat = catalog();
    // Category (100 rows) goes whole to each node scanning Item (100,000 rows), which does
    // not move; the hash table holds Category.
    for sql in [
        "SELECT i.name, c.label FROM Item i JOIN Category c ON i.fld = c.cid",
        "SELECT i.name, c.label FROM Category c JOIN Item i ON i.fld = c.cid",
        "SELECT i.name FROM Item i LEFT JOIN Category c ON i.fld = c.cid",
        "SELECT i.name FROM Category c RIGHT JOIN Item i ON i.fld = c.cid",
    ] {
        let q = query(&cat, sql, &[]);
        let (inputs, build) = join_inputs(&q);
        assert_eq!(inputs, vec![Distribution::Broadcast], "{sql}");
        let host = q
            .fragments
            .iter()
            .find(|f| shape(&f.plan).contains("HashJoin"))
            .unwrap();
        assert!(
            matches!(&host.placement, Placement::Table { table, .. } if table == "Item"),
            "{sql}: {:?}",
            host.placement
        );
        let category_side = if sql.contains("FROM Category") {
            JoinSide::Left
        } else {
            JoinSide::Right
        };
        assert_eq!(build, category_side, "{sql}");
        assert!(explain(&q).contains("(broadcast)"), "{}", explain(&q));
    }
}

#[test]
fn a_preserved_side_is_never_broadcast() {
    let cat = catalog();
    // Category is small, but each of its rows must come out once: both sides are hashed,
    // and the hash table still holds the smaller side.
    for (sql, build) in [
        (
            "SELECT c.label FROM Category c LEFT JOIN Item i ON i.fld = c.cid",
            JoinSide::Left,
        ),
        (
            "SELECT c.label FROM Item i RIGHT JOIN Category c ON i.fld = c.cid",
            JoinSide::Right,
        ),
        (
            "SELECT c.label FROM Category c FULL JOIN Item i ON i.fld = c.cid",
            JoinSide::Left,
        ),
    ] {
        let q = query(&cat, sql, &[]);
        let (inputs, got) = join_inputs(&q);
        assert_eq!(inputs.len(), 2, "{sql}");
        assert!(
            inputs.iter().all(|d| matches!(d, Distribution::Hash(_))),
            "{sql}: {inputs:?}"
        );
        assert_eq!(got, build, "{sql}");
    }
}

#[test]
fn a_full_sort_sorts_on_the_nodes_only_when_its_input_is_large() {
    let sql = "SELECT name, fld FROM Item ORDER BY fld DESC";
    let mut cat = catalog();
    // 100,000 rows of about 28 bytes: gathered as they are and sorted once.
    let q = query(&cat, sql, &[]);
    assert_eq!(nodes(&q, "Sort").len(), 1, "{}", explain(&q));
    assert_eq!(
        shape(&q.fragments[0].plan),
        "Sort(Exchange)",
        "{}",
        explain(&q)
    );
    assert_eq!(shape(&q.fragments[1].plan), "Scan", "{}", explain(&q));
    // 1,000,000 rows, above the merge threshold: each node sorts, the gathered streams merge.
    cat.set_row_count("Item", 1_000_000);
    let q = query(&cat, sql, &[]);
    assert_eq!(nodes(&q, "Sort").len(), 2, "{}", explain(&q));
    assert_eq!(shape(&q.fragments[1].plan), "Sort(Scan)", "{}", explain(&q));
    // A top-k keeps each node's top rows whatever the size.
    cat.set_row_count("Item", 100_000);
    let q = query(&cat, &format!("{sql} LIMIT 10"), &[]);
    assert_eq!(nodes(&q, "Sort").len(), 2, "{}", explain(&q));
}

/// `a IS [NOT] DISTINCT FROM b` binds each operand once: a subquery there is planned once,
/// not once for each place the null-safe comparison reads it.
#[test]
fn a_null_safe_comparison_plans_its_subquery_once() {
    let cat = catalog();
    for op in ["IS DISTINCT FROM", "IS NOT DISTINCT FROM"] {
        let sql = format!("SELECT name FROM Item WHERE fld {op} (SELECT MAX(fld) FROM Item)");
        let q = query(&cat, &sql, &[]);
        let aggregates = nodes(&q, "HashAggregate").len();
        // The subquery's MAX, partial and final (or single): no copies.
        assert!(
            (1..=2).contains(&aggregates),
            "{op}: {aggregates} aggregations"
        );
    }
    // A join on IS NOT DISTINCT FROM is a hash join (on whether each key is NULL and on the
    // key with NULL filled in), not a nested loop.
    let q = query(
        &large_catalog(),
        "SELECT i.name FROM Item i JOIN Category c ON i.fld IS NOT DISTINCT FROM c.cid",
        &[],
    );
    assert_eq!(nodes(&q, "HashJoin").len(), 1, "{}", explain(&q));
    assert!(nodes(&q, "NestedLoopJoin").is_empty(), "{}", explain(&q));
}

#[test]
fn a_series_reading_a_from_item_expands_its_rows_where_they_are_scanned() {
    let cat = catalog();
    // Comma, CROSS JOIN LATERAL, and the select-list call: no join, no exchange before it.
    for sql in [
        "SELECT id, g FROM Item, generate_series(1, Item.fld) AS g",
        "SELECT id, g FROM Item CROSS JOIN LATERAL generate_series(fld, 10, 2) AS g",
        "SELECT id, generate_series(1, fld) FROM Item WHERE id > 3",
    ] {
        let q = query(&cat, sql, &[]);
        assert_eq!(nodes(&q, "Expand").len(), 1, "{sql}");
        assert!(nodes(&q, "HashJoin").is_empty(), "{sql}");
        assert!(nodes(&q, "NestedLoopJoin").is_empty(), "{sql}");
        // Right over the scan (an index scan for `id > 3`), on the nodes.
        let shape = shape(&q.fragments[1].plan);
        assert!(
            shape.contains("Expand(Scan)") || shape.contains("Expand(IndexScan)"),
            "{sql}: {shape}"
        );
    }
    // A filter that does not read the series goes below the expansion, into the scan (a key
    // lookup here); the one that does stays above it.
    let q = query(
        &cat,
        "SELECT id, g FROM Item, generate_series(1, fld) g WHERE id = 4 AND g > 2",
        &[],
    );
    let shape = shape(&q.fragments[1].plan);
    assert!(shape.contains("Filter(Expand(IndexScan))"), "{shape}");
    // LEFT JOIN LATERAL keeps the rows whose series is empty: the series runs per distinct
    // value and is joined back.
    let q = query(
        &cat,
        "SELECT id, g FROM Item LEFT JOIN LATERAL generate_series(1, fld) g ON true",
        &[],
    );
    assert_eq!(nodes(&q, "Expand").len(), 1);
    assert_eq!(nodes(&q, "HashJoin").len(), 1);
}
