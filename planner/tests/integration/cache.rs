//! Plan cache behaviour.
use crate::common;
use common::*;
use std::sync::Arc;
use weir_operators::Value;
use weir_planner::{CachedStatement, IndexDef, PlanCache};

fn plan(
    c: &PlanCache,
    cat: &weir_planner::Catalog,
    sql: &str,
    p: &[Value],
) -> Arc<weir_planner::QueryPlan> {
    match c.get_or_plan(sql, cat, p, 4).unwrap() {
        CachedStatement::Query(q) | CachedStatement::Explain(q) => q,
        other => panic!("{other:?}"),
    }
}

#[test]
fn hits_misses_and_invalidation() {
    let mut cat = catalog();
    let c = PlanCache::new(1024);
    let sql = "SELECT * FROM Item WHERE fld = ?";
    let a = plan(&c, &cat, sql, &[Value::Int(1)]);
    let b = plan(&c, &cat, sql, &[Value::Int(2)]);
    assert!(Arc::ptr_eq(&a, &b));
    assert_eq!((c.hits(), c.misses(), c.parses()), (1, 1, 1));
    // NULL parameter: a different key
    plan(&c, &cat, sql, &[Value::Null]);
    assert_eq!(c.misses(), 2);
    // different text (even whitespace) is a different key
    plan(
        &c,
        &cat,
        "SELECT * FROM Item WHERE fld =  ?",
        &[Value::Int(1)],
    );
    assert_eq!(c.misses(), 3);
    // a catalog change invalidates
    cat.add_index("Item", IndexDef::on("f", 2)).unwrap();
    let d = plan(&c, &cat, sql, &[Value::Int(1)]);
    assert!(!Arc::ptr_eq(&a, &d));
    assert_eq!(c.misses(), 4);
    assert!(matches!(
        &d.fragments[1].plan,
        weir_operators::PhysicalPlan::Scan { index: Some(_), .. }
    ));
    // explains are cached separately
    assert!(matches!(
        c.get_or_plan(&format!("EXPLAIN {sql}"), &cat, &[Value::Int(1)], 4)
            .unwrap(),
        CachedStatement::Explain(_)
    ));
    c.clear();
    assert!(c.is_empty());
    plan(&c, &cat, sql, &[Value::Int(1)]);
    assert_eq!(c.misses(), 6);
}

#[test]
fn different_param_types() {
    let cat = catalog();
    let c = PlanCache::new(16);
    let sql = "SELECT cid FROM Category WHERE weight = ?";
    let a = plan(&c, &cat, sql, &[Value::Int(1)]);
    let b = plan(&c, &cat, sql, &[Value::Float(1.0)]);
    assert!(!Arc::ptr_eq(&a, &b));
    assert_eq!(c.misses(), 2);
    // errors are not cached
    assert!(c.get_or_plan(sql, &cat, &[Value::from("x")], 4).is_err());
    assert!(c.get_or_plan(sql, &cat, &[Value::from("x")], 4).is_err());
    assert_eq!(c.len(), 2);
}

#[test]
fn ddl_not_cached_and_bounded() {
    let cat = catalog();
    let c = PlanCache::new(2);
    for _ in 0..2 {
        assert!(matches!(
            c.get_or_plan("INSERT INTO Category VALUES (1, 'a', 1.0)", &cat, &[], 4)
                .unwrap(),
            CachedStatement::Other(_)
        ));
    }
    assert_eq!(c.parses(), 2);
    assert!(c.is_empty());
    for i in 0..5 {
        plan(&c, &cat, &format!("SELECT {i}"), &[]);
    }
    assert_eq!(c.len(), 2);
    // the most recent entries survive
    plan(&c, &cat, "SELECT 4", &[]);
    assert_eq!(c.hits(), 1);
}

#[test]
fn concurrent_use() {
    let cat = Arc::new(catalog());
    let c = Arc::new(PlanCache::new(64));
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let (cat, c) = (cat.clone(), c.clone());
            std::thread::spawn(move || {
                for i in 0..50 {
                    let sql = format!("SELECT id FROM Item WHERE fld = {}", (i + t) % 10);
                    plan(&c, &cat, &sql, &[]);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(c.hits() + c.misses(), 200);
}
