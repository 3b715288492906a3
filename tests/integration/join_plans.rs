//! Join types through the actors: a planned FULL join's plan is changed by hand into an INNER,
//! LEFT, RIGHT or FULL join (building either side) and run on a 3-node cluster with hash exchanges;
//! the rows must equal a nested-loop reference, NULL keys and unmatched rows included.

use crate::common;

use common::{cluster, sorted_rows};
use weir::operators::plan::{JoinSide, JoinType};
use weir::operators::PhysicalPlan;
use weir::Value;

/// `l(id, k, v)` and `r(id, k, w)` rows: duplicate keys, NULL keys, keys on one side only.
fn data() -> (Vec<[Value; 3]>, Vec<[Value; 3]>) {
    let row = |id: i64, k: Option<i64>, v: i64| [Value::Int(id), Value::from(k), Value::Int(v)];
    let l = vec![
        row(1, Some(1), 10),
        row(2, Some(2), 20),
        row(3, Some(2), 21),
        row(4, None, 30),
        row(5, Some(7), 40),
    ];
    let r = vec![
        row(1, Some(2), 100),
        row(2, Some(2), 101),
        row(3, None, 102),
        row(4, Some(9), 103),
        row(5, Some(1), 104),
    ];
    (l, r)
}

/// The reference outer join on `l.k = r.k`.
fn reference(jt: JoinType, l: &[[Value; 3]], r: &[[Value; 3]]) -> Vec<Vec<Value>> {
    let mut out = Vec::new();
    let mut r_hit = vec![false; r.len()];
    for a in l {
        let mut hit = false;
        for (j, b) in r.iter().enumerate() {
            if !a[1].is_null() && a[1] == b[1] {
                hit = true;
                r_hit[j] = true;
                out.push(a.iter().chain(b).cloned().collect());
            }
        }
        if !hit && matches!(jt, JoinType::Left | JoinType::Full) {
            out.push(a.iter().cloned().chain(vec![Value::Null; 3]).collect());
        }
    }
    if matches!(jt, JoinType::Right | JoinType::Full) {
        for (b, hit) in r.iter().zip(r_hit) {
            if !hit {
                out.push(
                    vec![Value::Null; 3]
                        .into_iter()
                        .chain(b.iter().cloned())
                        .collect(),
                );
            }
        }
    }
    sorted_rows(out)
}

/// Sets the type and build side of every hash join in `plan`; returns how many it changed.
fn set_join(plan: &mut PhysicalPlan, jt: JoinType, side: JoinSide) -> usize {
    match plan {
        PhysicalPlan::HashJoin {
            left,
            right,
            join_type,
            build,
            ..
        } => {
            *join_type = jt;
            *build = side;
            1 + set_join(left, jt, side) + set_join(right, jt, side)
        }
        PhysicalPlan::Filter { input, .. }
        | PhysicalPlan::Project { input, .. }
        | PhysicalPlan::Sort { input, .. }
        | PhysicalPlan::Limit { input, .. } => set_join(input, jt, side),
        _ => 0,
    }
}

#[test]
fn outer_joins_run_through_the_cluster() {
    let c = cluster(3);
    c.execute("CREATE TABLE l (id BIGINT PRIMARY KEY, k BIGINT, v BIGINT)")
        .unwrap();
    c.execute("CREATE TABLE r (id BIGINT PRIMARY KEY, k BIGINT, w BIGINT)")
        .unwrap();
    let (l, r) = data();
    for (table, rows) in [("l", &l), ("r", &r)] {
        for row in rows {
            let vals: Vec<String> = row.iter().map(Value::to_sql).collect();
            c.execute(&format!("INSERT INTO {table} VALUES ({})", vals.join(", ")))
                .unwrap();
        }
    }
    let cluster = c.shared();
    // A FULL JOIN is planned with both sides hashed (neither may be broadcast), a plan that
    // is right for every join type.
    let sql = "SELECT l.id, l.k, l.v, r.id, r.k, r.w FROM l FULL JOIN r ON l.k = r.k";
    let inner = cluster.plan_query(sql, &[]).unwrap();
    let got = sorted_rows(cluster.run_plan(inner.clone(), &[]).unwrap().rows());
    assert_eq!(got, reference(JoinType::Full, &l, &r));
    for jt in [
        JoinType::Inner,
        JoinType::Left,
        JoinType::Right,
        JoinType::Full,
    ] {
        for side in [JoinSide::Left, JoinSide::Right] {
            let mut plan = inner.clone();
            let changed: usize = plan
                .fragments
                .iter_mut()
                .map(|f| set_join(&mut f.plan, jt, side))
                .sum();
            assert_eq!(changed, 1);
            let got = sorted_rows(cluster.run_plan(plan, &[]).unwrap().rows());
            assert_eq!(got, reference(jt, &l, &r), "{jt:?} build {side:?}");
        }
    }
    common::assert_idle(&cluster);
}
