//! The planner never panics, whatever the input.
use crate::common;
use common::*;
use proptest::prelude::*;
use weir_operators::Value;
use weir_planner::plan_statement;

const TOKENS: &[&str] = &[
    "SELECT",
    "FROM",
    "WHERE",
    "GROUP",
    "BY",
    "HAVING",
    "ORDER",
    "LIMIT",
    "OFFSET",
    "JOIN",
    "INNER",
    "LEFT",
    "ON",
    "AND",
    "OR",
    "NOT",
    "IN",
    "BETWEEN",
    "LIKE",
    "IS",
    "NULL",
    "AS",
    "ASC",
    "DESC",
    "NULLS",
    "FIRST",
    "LAST",
    "CAST",
    "BIGINT",
    "DOUBLE",
    "VARCHAR",
    "COUNT",
    "SUM",
    "AVG",
    "MIN",
    "MAX",
    "(",
    ")",
    ",",
    "*",
    "+",
    "-",
    "/",
    "%",
    "=",
    "<",
    ">",
    "<=",
    ">=",
    "<>",
    "?",
    "$1",
    "$2",
    "1",
    "0",
    "-1",
    "2.5",
    "'a'",
    "TRUE",
    "FALSE",
    "Item",
    "Category",
    "i",
    "c",
    "id",
    "name",
    "fld",
    "fldIdx",
    "cid",
    "label",
    "weight",
    "i.id",
    "c.cid",
    "INSERT",
    "INTO",
    "VALUES",
    "CREATE",
    "TABLE",
    "INDEX",
    "DROP",
    "EXPLAIN",
    "PRIMARY",
    "KEY",
    "DISTINCT",
    "OVER",
    "UNION",
    ";",
    "9223372036854775808",
];

fn params() -> impl Strategy<Value = Vec<Value>> {
    prop::collection::vec(
        prop_oneof![
            Just(Value::Null),
            any::<i64>().prop_map(Value::Int),
            any::<f64>().prop_map(Value::Float),
            "[a-z]{0,3}".prop_map(Value::Str),
            any::<bool>().prop_map(Value::Bool),
        ],
        0..3,
    )
}

const SEEDS: &[&str] = &[
    "SELECT fld, COUNT(*), AVG(weight) FROM Item i JOIN Category c ON i.fld = c.cid WHERE fldIdx = ? GROUP BY fld HAVING COUNT(*) > 1 ORDER BY 2 DESC LIMIT 5",
    "SELECT * FROM Item WHERE id IN (1, 2) AND name LIKE 'a%' ORDER BY name NULLS FIRST",
    "INSERT INTO Category (cid, label, weight) VALUES (1, 'x', -2.5), (?, ?, ?)",
    "CREATE TABLE t (id BIGINT PRIMARY KEY, x DOUBLE)",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_tokens_never_panic(toks in prop::collection::vec(prop::sample::select(TOKENS), 0..25), ps in params()) {
        let cat = catalog();
        let sql = toks.join(" ");
        let _ = plan_statement(&sql, &cat, &ps, 4);
        let sql = format!("SELECT {sql}");
        let _ = plan_statement(&sql, &cat, &ps, 4);
    }

    #[test]
    fn mutated_sql_never_panics(seed in prop::sample::select(SEEDS), cuts in prop::collection::vec((0usize..200, prop::sample::select(TOKENS)), 1..4), ps in params()) {
        let cat = catalog();
        let mut sql = seed.to_string();
        for (at, tok) in cuts {
            let mut at = at % (sql.len() + 1);
            while !sql.is_char_boundary(at) { at -= 1; }
            sql.insert_str(at, &format!(" {tok} "));
        }
        let _ = plan_statement(&sql, &cat, &ps, 4);
    }

    #[test]
    fn arbitrary_text_never_panics(sql in "\\PC{0,60}", ps in params()) {
        let cat = catalog();
        let _ = plan_statement(&sql, &cat, &ps, 4);
    }
}
