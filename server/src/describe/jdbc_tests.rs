//! The `DatabaseMetaData` queries of the JDBC driver (pgjdbc 42.5, `pgjdbc_42_5.sql`, as
//! PostgreSQL logged them), recognized and answered.

use weir_operators::Value;

use super::question::{Describe, Question};
use super::recognize::psql_describe;
use super::relations::Relation;
use super::tests::{fixture_query, item_table, with_foreign_keys};

const QUERIES: &str = include_str!("pgjdbc_42_5.sql");

/// The query named `name` in the fixture.
fn query(name: &str) -> String {
    fixture_query(QUERIES, name)
}

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
    let get_tables = query("tables");
    let d = describe(&get_tables);
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
    let with_views = get_tables.replace(
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
    let other_schema = get_tables.replace(
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
    let d = describe(&query("tables").replace("'part%'", &pattern));
    let long = Relation {
        name: "a".repeat(60),
        ..item_table()
    };
    let started = std::time::Instant::now();
    assert!(d.rows(&[long], &[]).is_empty());
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}

#[test]
fn get_columns_gives_each_columns_type_id_modifier_and_nullability() {
    let d = describe(&query("columns"));
    assert_eq!(
        d.question,
        Question::JdbcColumns {
            table: Some("parts".into()),
            schema: None,
            column: None,
        }
    );
    let names: Vec<String> = d.columns().into_iter().map(|(n, _)| n).collect();
    let at = |name: &str| names.iter().position(|n| n == name).unwrap();
    let rows = d.rows(&relations(), &[]);
    let shown: Vec<(Value, Value, Value, Value, Value)> = rows
        .iter()
        .map(|r| {
            (
                r[at("attname")].clone(),
                r[at("atttypid")].clone(),
                r[at("atttypmod")].clone(),
                r[at("attnotnull")].clone(),
                r[at("attnum")].clone(),
            )
        })
        .collect();
    let row = |name: &str, oid: i64, modifier: i64, not_null: bool, num: i64| {
        (
            text(name),
            Value::Int(oid),
            Value::Int(modifier),
            Value::Bool(not_null),
            Value::Int(num),
        )
    };
    assert_eq!(
        shown,
        vec![
            row("id", 20, -1, true, 1),
            row("name", 1043, -1, false, 2),
            row("price", 1700, (12 << 16 | 2) + 4, false, 3),
        ]
    );
    assert!(rows.iter().all(|r| r[at("relname")] == text("parts")));
    let one = describe(&query("columns").replace(
        "AND c.relname LIKE 'parts'",
        "AND c.relname LIKE 'parts' AND a.attname LIKE 'pr%'",
    ));
    assert_eq!(one.rows(&relations(), &[]).len(), 1);
}

#[test]
fn get_primary_keys_and_get_schemas() {
    let d = describe(&query("primary_keys"));
    assert_eq!(
        d.rows(&relations(), &[]),
        vec![vec![
            Value::Null,
            text("public"),
            text("parts"),
            text("id"),
            Value::Int(1),
            text("item_pkey"),
        ]]
    );
    let none = describe(&query("primary_keys").replace("'parts'", "'nosuch'"));
    assert!(none.rows(&relations(), &[]).is_empty());

    let d = describe(&query("schemas"));
    assert_eq!(d.question, Question::Schemas { system: true });
    assert_eq!(
        d.rows(&[], &[]),
        vec![
            vec![text("information_schema"), Value::Null],
            vec![text("pg_catalog"), Value::Null],
            vec![text("public"), Value::Null],
        ]
    );
}

#[test]
fn get_index_info_lists_each_index_column() {
    let d = describe(&query("index_info"));
    assert!(matches!(
        d.question,
        Question::JdbcIndexInfo {
            unique_only: false,
            ..
        }
    ));
    let rows: Vec<Vec<Value>> = d
        .rows(&relations(), &[])
        .into_iter()
        .map(|r| {
            vec![
                r[2].clone(),
                r[3].clone(),
                r[5].clone(),
                r[6].clone(),
                r[8].clone(),
                r[9].clone(),
            ]
        })
        .collect();
    // The unique ones first; weir's primary key is hashed (JDBC's type 2), with no order.
    assert_eq!(
        rows,
        vec![
            vec![
                text("parts"),
                text("f"),
                text("item_pkey"),
                Value::Int(2),
                text("id"),
                Value::Null
            ],
            vec![
                text("parts"),
                text("t"),
                text("item_name"),
                Value::Int(3),
                text("name"),
                text("A")
            ],
        ]
    );
    let unique =
        describe(&query("index_info").replace("WHERE true ", "WHERE true AND i.indisunique "));
    assert_eq!(unique.rows(&relations(), &[]).len(), 1);
    let d = describe(&query("max_index_keys"));
    assert_eq!(d.rows(&[], &[]), vec![vec![text("32")]]);
}

#[test]
fn imported_and_exported_keys_list_each_key_column() {
    let relations = with_foreign_keys();
    // PKTABLE_NAME, PKCOLUMN_NAME, FKTABLE_NAME, FKCOLUMN_NAME, KEY_SEQ, UPDATE_RULE,
    // DELETE_RULE, FK_NAME, PK_NAME, DEFERRABILITY.
    let keys = |name: &str, table: &str| -> Vec<Vec<Value>> {
        let d = describe(&query(name).replace("'parts'", &format!("'{table}'")));
        assert_eq!(d.columns().len(), 14, "{name}");
        d.rows(&relations, &[])
            .into_iter()
            .map(|r| {
                [2, 3, 6, 7, 8, 9, 10, 11, 12, 13]
                    .map(|i| r[i].clone())
                    .to_vec()
            })
            .collect()
    };
    let row = |fk: &str, column: &str, fk_name: &str, delete_rule: i64| {
        vec![
            text("item"),
            text("id"),
            text(fk),
            text(column),
            Value::Int(1),
            Value::Int(3),
            Value::Int(delete_rule),
            text(fk_name),
            text("item_pkey"),
            Value::Int(7),
        ]
    };
    let d = describe(&query("imported_keys"));
    assert!(matches!(
        d.question,
        Question::JdbcForeignKeys {
            exported: false,
            ..
        }
    ));
    assert_eq!(
        keys("imported_keys", "sale"),
        vec![row("sale", "item_id", "sale_item_id_fkey", 1)]
    );
    assert_eq!(
        keys("exported_keys", "item"),
        vec![
            row("item", "up", "item_up_fkey", 3),
            row("sale", "item_id", "sale_item_id_fkey", 1)
        ]
    );
    assert!(keys("exported_keys", "sale").is_empty());
    assert!(keys("imported_keys", "nosuch").is_empty());
}
