//! JDBC's `DatabaseMetaData.getTables` query (pgjdbc 42.5, as PostgreSQL logged it),
//! recognized and answered.

use weir_operators::Value;

use super::question::{Describe, Question};
use super::recognize::psql_describe;
use super::relations::Relation;
use super::tests::item_table;

/// `getTables(null, null, "part%", new String[] {"TABLE"})`.
const GET_TABLES: &str =
    "SELECT NULL AS TABLE_CAT, n.nspname AS TABLE_SCHEM, c.relname AS TABLE_NAME,  CASE \
    n.nspname ~ '^pg_' OR n.nspname = 'information_schema'  WHEN true THEN CASE  WHEN \
    n.nspname = 'pg_catalog' OR n.nspname = 'information_schema' THEN CASE c.relkind   \
    WHEN 'r' THEN 'SYSTEM TABLE'   WHEN 'v' THEN 'SYSTEM VIEW'   WHEN 'i' THEN 'SYSTEM \
    INDEX'   ELSE NULL   END  WHEN n.nspname = 'pg_toast' THEN CASE c.relkind   WHEN 'r' \
    THEN 'SYSTEM TOAST TABLE'   WHEN 'i' THEN 'SYSTEM TOAST INDEX'   ELSE NULL   END  ELSE \
    CASE c.relkind   WHEN 'r' THEN 'TEMPORARY TABLE'   WHEN 'p' THEN 'TEMPORARY TABLE'   \
    WHEN 'i' THEN 'TEMPORARY INDEX'   WHEN 'S' THEN 'TEMPORARY SEQUENCE'   WHEN 'v' THEN \
    'TEMPORARY VIEW'   ELSE NULL   END  END  WHEN false THEN CASE c.relkind  WHEN 'r' THEN \
    'TABLE'  WHEN 'p' THEN 'PARTITIONED TABLE'  WHEN 'i' THEN 'INDEX'  WHEN 'P' then \
    'PARTITIONED INDEX'  WHEN 'S' THEN 'SEQUENCE'  WHEN 'v' THEN 'VIEW'  WHEN 'c' THEN \
    'TYPE'  WHEN 'f' THEN 'FOREIGN TABLE'  WHEN 'm' THEN 'MATERIALIZED VIEW'  ELSE NULL  \
    END  ELSE NULL  END  AS TABLE_TYPE, d.description AS REMARKS,  '' as TYPE_CAT, '' as \
    TYPE_SCHEM, '' as TYPE_NAME, '' AS SELF_REFERENCING_COL_NAME, '' AS REF_GENERATION  \
    FROM pg_catalog.pg_namespace n, pg_catalog.pg_class c  LEFT JOIN \
    pg_catalog.pg_description d ON (c.oid = d.objoid AND d.objsubid = 0  and d.classoid = \
    'pg_class'::regclass)  WHERE c.relnamespace = n.oid  AND c.relname LIKE 'part%' AND \
    (false  OR ( c.relkind = 'r' AND n.nspname !~ '^pg_' AND n.nspname <> \
    'information_schema' ) )  ORDER BY TABLE_TYPE,TABLE_SCHEM,TABLE_NAME";

fn describe(sql: &str) -> Describe {
    psql_describe(&crate::split::tokenize(sql).unwrap()).expect("recognized")
}

fn relations() -> Vec<Relation> {
    let named = |name: &str, view: bool| Relation {
        name: name.into(),
        view_sql: view.then(|| "SELECT 1".to_string()),
        ..item_table()
    };
    vec![
        named("parts", false),
        named("part_view", true),
        named("partsupp", false),
        named("orders", false),
    ]
}

fn names(d: &Describe) -> Vec<(Value, Value)> {
    d.rows(&relations(), &[])
        .into_iter()
        .map(|r| (r[2].clone(), r[3].clone()))
        .collect()
}

fn text(s: &str) -> Value {
    Value::Str(s.to_string())
}

#[test]
fn get_tables_lists_the_relations_of_the_kinds_and_names_asked_for() {
    let d = describe(GET_TABLES);
    assert_eq!(
        d.question,
        Question::JdbcTables {
            name: Some("part%".into()),
            schema: None,
            kinds: vec!['r'],
        }
    );
    assert_eq!(d.columns().len(), 10);
    assert_eq!(
        names(&d),
        vec![
            (text("parts"), text("TABLE")),
            (text("partsupp"), text("TABLE"))
        ]
    );
    let row = &d.rows(&relations(), &[])[0];
    assert_eq!(row[0], Value::Null, "TABLE_CAT");
    assert_eq!(row[1], text("public"), "TABLE_SCHEM");
    assert_eq!(row[4], Value::Null, "REMARKS");

    // Views too, a `_` and an escaped `_`, and a schema pattern.
    let with_views = GET_TABLES.replace(
        "(false  OR",
        "(false OR ( c.relkind = 'v' AND n.nspname !~ '^pg_' AND n.nspname <> \
         'information_schema' ) OR",
    );
    let d = describe(&with_views);
    assert_eq!(
        names(&d),
        vec![
            (text("parts"), text("TABLE")),
            (text("partsupp"), text("TABLE")),
            (text("part_view"), text("VIEW")),
        ]
    );
    let d = describe(&with_views.replace("'part%'", "'part\\_%'"));
    assert_eq!(names(&d), vec![(text("part_view"), text("VIEW"))]);
    let d = describe(&with_views.replace("'part%'", "'part_'"));
    assert_eq!(names(&d), vec![(text("parts"), text("TABLE"))]);
    let other_schema = GET_TABLES.replace(
        "AND c.relname LIKE",
        "AND n.nspname LIKE 'sales' AND c.relname LIKE",
    );
    assert!(describe(&other_schema).rows(&relations(), &[]).is_empty());
}

#[test]
fn a_long_pattern_of_percent_signs_is_matched_quickly() {
    // Matching backtracks to the last `%` only: this would take ages if every `%` tried
    // every split of the name.
    let pattern = format!("'{}b'", "%a".repeat(40));
    let d = describe(&GET_TABLES.replace("'part%'", &pattern));
    let long = Relation {
        name: "a".repeat(60),
        ..item_table()
    };
    let started = std::time::Instant::now();
    assert!(d.rows(&[long], &[]).is_empty());
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}
