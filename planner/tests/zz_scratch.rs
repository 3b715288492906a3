mod common;
use common::*;
use weir_operators::Value;
#[test]
fn show() {
    let cat = catalog();
    for (sql, p) in [
        ("SELECT name FROM Item WHERE fldIdx IN (?, 2) AND name LIKE ? ORDER BY fld DESC LIMIT 3", vec![Value::Int(1), Value::from("a%")]),
        ("SELECT i.name, AVG(c.weight) AS w FROM Item i JOIN Category c ON i.fld = c.cid AND i.id = 3 GROUP BY i.name HAVING AVG(c.weight) > 1 ORDER BY w", vec![]),
        ("SELECT COUNT(*), MAX(5) WHERE 1 = 1", vec![]),
    ] {
        let q = query(&cat, sql, &p);
        println!("{sql}\n{}", explain(&q));
    }
    for sql in ["SELECT * FROM Item WHERE name = 1", "SELECT nope FROM Item", "SELEC 1", "SELECT a FROM Item GROUP BY fld", "SELECT * FROM Item i JOIN Category c USING (x)", "SELECT id FROM Item WHERE fld = 'x' || 'y'"] {
        println!("{sql}: {}", weir_planner::plan_statement(sql, &cat, &[], 4).unwrap_err());
    }
}
