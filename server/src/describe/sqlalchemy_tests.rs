//! SQLAlchemy 2.1's table reflection queries (`sqlalchemy_2_1.sql`, as PostgreSQL logged
//! them), recognized and answered with the parameters SQLAlchemy binds.

use weir_operators::Value;

use super::answer::array_text;
use super::question::{Describe, Question, TypeName};
use super::recognize::psql_describe;
use super::relations::{oid, CheckInfo, IndexInfo, Relation};
use super::tests::{fixture_query, item_table, with_foreign_keys};
use crate::types::array_elements;

const QUERIES: &str = include_str!("sqlalchemy_2_1.sql");

/// The query named `name` in the fixture.
fn query(name: &str) -> String {
    fixture_query(QUERIES, name)
}

fn describe(name: &str) -> Describe {
    let sql = query(name);
    psql_describe(&crate::split::tokenize(&sql).unwrap())
        .unwrap_or_else(|| panic!("{name} is not recognized"))
}

fn text(s: &str) -> Value {
    Value::Str(s.to_string())
}

/// The parameters SQLAlchemy binds to a query that filters relations by name: `$1`..`$5`
/// the kinds (`r`, `p`, `f`, `v`, `m`), then the excluded schema, then the name.
fn name_filter(table: &str) -> Vec<Value> {
    let mut p: Vec<Value> = ["r", "p", "f", "v", "m"].iter().map(|k| text(k)).collect();
    p.push(text("pg_catalog"));
    p.push(text(table));
    p
}

/// `item` with a second, unique two-column index, and a view.
fn relations() -> Vec<Relation> {
    let mut item = item_table();
    item.indexes.push(IndexInfo {
        name: "item_name_price".into(),
        columns: vec!["name".into(), "price".into()],
        primary: false,
        unique: true,
        method: "btree",
    });
    let view = Relation {
        name: "cheap".into(),
        view_sql: Some("SELECT id FROM item".into()),
        indexes: Vec::new(),
        ..item_table()
    };
    vec![item, view]
}

#[test]
fn every_reflection_query_is_recognized_with_all_its_parameters() {
    for (name, params) in [
        ("columns", 21),
        ("table_oids", 7),
        ("constraints", 4),
        ("foreign_keys", 10),
        ("access_method", 1),
        ("indexes", 9),
        ("table_comment", 9),
        ("check_constraints", 10),
        ("table_options", 8),
        ("schema_names", 1),
        ("non_default_opclasses", 0),
    ] {
        assert_eq!(describe(name).params(), params, "{name}");
        assert_eq!(
            describe(name).columns().len(),
            describe(name).items.len(),
            "{name}"
        );
    }
}

#[test]
fn columns_are_listed_by_table_and_position_with_types_and_nullability() {
    let d = describe("columns");
    assert!(matches!(d.question, Question::Columns { .. }));
    let names: Vec<String> = d.columns().into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        [
            "name",
            "format_type",
            "default",
            "not_null",
            "table_name",
            "comment",
            "generated",
            "identity_options",
            "collation"
        ]
    );
    // $1..$13 are the select list's, then attnum > $14, the kinds, the schema, the name.
    let mut params: Vec<Value> = (0..13).map(|_| text("")).collect();
    params.push(Value::Int(0));
    params.extend(name_filter("item"));
    let rows = d.rows(&relations(), &params);
    let shown: Vec<(Value, Value, Value, Value)> = rows
        .iter()
        .map(|r| (r[0].clone(), r[1].clone(), r[3].clone(), r[4].clone()))
        .collect();
    assert_eq!(
        shown,
        vec![
            (text("id"), text("bigint"), Value::Bool(true), text("item")),
            (
                text("name"),
                text("character varying"),
                Value::Bool(false),
                text("item")
            ),
            (
                text("price"),
                text("numeric(12,2)"),
                Value::Bool(false),
                text("item")
            ),
        ]
    );
    assert!(rows.iter().all(|r| r[2] == Value::Null && r[6] == text("")));
    params.truncate(20);
    params.push(text("nosuch"));
    assert!(d.rows(&relations(), &params).is_empty());
}

#[test]
fn table_oids_comments_and_options_are_answered_per_table() {
    let d = describe("table_oids");
    assert!(matches!(d.question, Question::Relations { .. }));
    assert_eq!(
        d.rows(&relations(), &name_filter("item")),
        vec![vec![Value::Int(oid("item")), text("item")]]
    );
    let mut no_views = name_filter("cheap");
    no_views[3] = text("x");
    no_views[4] = text("x");
    assert!(d.rows(&relations(), &no_views).is_empty());

    // $1 the objsubid, $2 the regclass, then the kinds, the schema, the name.
    let d = describe("table_comment");
    let mut params = vec![Value::Int(0), text("pg_catalog.pg_class")];
    params.extend(name_filter("item"));
    assert_eq!(
        d.rows(&relations(), &params),
        vec![vec![text("item"), Value::Null]]
    );

    let d = describe("table_options");
    let mut params = vec![text("default_table_access_method")];
    params.extend(name_filter("item"));
    let rows = d.rows(&relations(), &params);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0][0], Value::Int(oid("item")));
    assert!(rows[0][2..]
        .iter()
        .all(|v| matches!(v, Value::Null | Value::Bool(false))));
}

#[test]
fn the_primary_key_is_a_constraint_and_weir_has_no_others() {
    let d = describe("constraints");
    assert_eq!(
        d.question,
        Question::Constraints {
            kind: TypeName::Param(2),
            oids: vec![TypeName::Param(3)],
        }
    );
    let params = |kind: &str, table: &str| {
        vec![
            Value::Int(1),
            text("pg_catalog.pg_constraint"),
            text(kind),
            Value::Int(oid(table)),
        ]
    };
    let rows = d.rows(&relations(), &params("p", "item"));
    assert_eq!(
        rows,
        vec![vec![
            Value::Int(oid("item")),
            text("{id}"),
            text("item_pkey"),
            Value::Null,
            Value::Int(1),
            Value::Bool(false),
        ]]
    );
    let arrays = d.pg_types();
    assert_eq!(arrays[1], Some(pgwire::api::Type::TEXT_ARRAY));
    assert!(arrays
        .iter()
        .enumerate()
        .all(|(i, t)| i == 1 || t.is_none()));
    // A unique index is an index, not a constraint (as PostgreSQL's CREATE UNIQUE INDEX).
    assert!(d.rows(&relations(), &params("u", "item")).is_empty());
    assert!(d.rows(&relations(), &params("p", "cheap")).is_empty());

    // Checks, and foreign keys of a table without: a row per table, with no constraint.
    for (name, kind) in [("foreign_keys", "f"), ("check_constraints", "c")] {
        let d = describe(name);
        let rows = d.rows(&with_foreign_keys(), &key_params(kind, "sale"));
        let rows = match name {
            "check_constraints" => rows,
            _ => d.rows(&relations(), &key_params(kind, "item")),
        };
        assert_eq!(rows.len(), 1, "{name}");
        assert!(matches!(&rows[0][0], Value::Str(_)));
        assert!(rows[0][1..].iter().all(|v| *v == Value::Null), "{name}");
    }
}

/// The parameters of the foreign-key and check-constraint queries: `$1` pretty, `$2` the
/// kind, `$3` the description's class, then the relation-name filter for `table`.
fn key_params(kind: &str, table: &str) -> Vec<Value> {
    let mut params = vec![
        Value::Bool(true),
        text(kind),
        text("pg_catalog.pg_constraint"),
    ];
    params.extend(name_filter(table));
    params
}

#[test]
fn foreign_keys_are_reflected_a_row_each_with_their_definition() {
    let d = describe("foreign_keys");
    assert!(matches!(d.question, Question::ConstraintDefinitions { .. }));
    // relname, conname, the definition, the referenced table's schema, the comment.
    assert_eq!(
        d.rows(&with_foreign_keys(), &key_params("f", "item")),
        vec![vec![
            text("item"),
            text("item_up_fkey"),
            text("FOREIGN KEY (up) REFERENCES item(id)"),
            text("public"),
            Value::Null
        ]]
    );
    assert_eq!(
        d.rows(&with_foreign_keys(), &key_params("f", "sale"))[0][2],
        text("FOREIGN KEY (item_id) REFERENCES item(id) ON DELETE RESTRICT")
    );
}

#[test]
fn check_constraints_are_reflected_a_row_each_with_their_definition() {
    let d = describe("check_constraints");
    let item = Relation {
        checks: vec![CheckInfo {
            name: "item_price_check".into(),
            condition: "price > 0".into(),
        }],
        ..item_table()
    };
    // relname, conname, the definition, the comment.
    assert_eq!(
        d.rows(&[item], &key_params("c", "item")),
        vec![vec![
            text("item"),
            text("item_price_check"),
            text("CHECK (price > 0)"),
            Value::Null
        ]]
    );
}

#[test]
fn secondary_indexes_have_their_columns_as_arrays() {
    let d = describe("indexes");
    assert_eq!(
        d.question,
        Question::TableIndexes {
            oids: vec![TypeName::Param(5)]
        }
    );
    // $1 attnum, $2 ord, $3 pretty, $4 attnum, $5 subscripts dimension, $6 the oids,
    // $7..$9 the constraint kinds.
    let mut params = vec![
        Value::Int(0),
        Value::Int(1),
        Value::Bool(true),
        Value::Int(0),
        Value::Int(1),
        Value::Int(oid("item")),
    ];
    params.extend(["p", "u", "x"].iter().map(|k| text(k)));
    let rows = d.rows(&relations(), &params);
    let column = |name: &str| {
        d.items
            .iter()
            .position(|i| *i == super::Item::Named(name.into()))
    };
    let at = |row: &Vec<Value>, name: &str| row[column(name).unwrap()].clone();
    assert_eq!(rows.len(), 2, "the primary key is left out");
    assert_eq!(at(&rows[0], "relname"), text("item_name"));
    assert_eq!(at(&rows[0], "indisunique"), Value::Bool(false));
    assert_eq!(at(&rows[1], "relname"), text("item_name_price"));
    assert_eq!(at(&rows[1], "indisunique"), Value::Bool(true));
    assert_eq!(at(&rows[1], "elements"), text("{name,price}"));
    assert_eq!(at(&rows[1], "elements_is_expr"), text("{f,f}"));
    assert_eq!(at(&rows[1], "indoption"), text("0 0"));
    assert_eq!(at(&rows[1], "indnkeyatts"), Value::Int(2));
    assert_eq!(at(&rows[1], "relam"), Value::Int(403));
    assert_eq!(at(&rows[1], "indrelid"), Value::Int(oid("item")));
    // The btree method SQLAlchemy compares relam with.
    let am = describe("access_method");
    assert_eq!(
        am.rows(&[], &[text("btree")]),
        vec![vec![Value::Int(403), text("btree")]]
    );
    assert!(am.rows(&[], &[text("gist")]).is_empty());
    params[5] = Value::Int(oid("cheap"));
    assert!(d.rows(&relations(), &params).is_empty());
}

#[test]
fn schemas_and_operator_classes() {
    let d = describe("schema_names");
    assert_eq!(d.question, Question::Schemas { system: false });
    assert_eq!(
        d.rows(&[], &[text("pg/_")]),
        vec![vec![text("information_schema")], vec![text("public")]]
    );
    let d = describe("non_default_opclasses");
    assert_eq!(d.question, Question::Nothing);
    assert_eq!(d.columns().len(), 2);
}

#[test]
fn array_text_quotes_what_it_must_and_reads_back() {
    for elements in [
        vec![],
        vec!["a", "b"],
        vec![
            "with space",
            "co,mma",
            "q\"uote",
            "back\\slash",
            "{brace}",
            "",
            "NULL",
        ],
    ] {
        let text = array_text(&elements);
        let back: Vec<Option<String>> = array_elements(&text);
        let want: Vec<Option<String>> = elements.iter().map(|e| Some(e.to_string())).collect();
        assert_eq!(back, want, "{text}");
    }
    assert_eq!(array_text(&["a", "b c"]), "{a,\"b c\"}");
    assert_eq!(array_elements("{a,NULL}"), vec![Some("a".into()), None]);
}

#[test]
fn has_sequence_finds_a_sequence_and_no_table() {
    // As SQLAlchemy 2.1 sends it, its parameters written in.
    let sql = "SELECT pg_catalog.pg_class.relname \nFROM pg_catalog.pg_class JOIN \
        pg_catalog.pg_namespace ON pg_catalog.pg_namespace.oid = \
        pg_catalog.pg_class.relnamespace \nWHERE pg_catalog.pg_class.relkind = $1::VARCHAR AND \
        pg_catalog.pg_class.relname = $2::VARCHAR AND \
        pg_catalog.pg_table_is_visible(pg_catalog.pg_class.oid) AND \
        pg_catalog.pg_namespace.nspname != $3::VARCHAR";
    let d = psql_describe(&crate::split::tokenize(sql).unwrap()).expect("recognized");
    assert!(
        matches!(d.question, Question::Relations { .. }),
        "{:?}",
        d.question
    );
    let sequence = Relation {
        name: "item_seq".into(),
        sequence: Some(crate::describe::SequenceInfo {
            start: 1,
            min: 1,
            max: i64::MAX,
            increment: 1,
            owner: None,
        }),
        columns: Vec::new(),
        indexes: Vec::new(),
        ..item_table()
    };
    let mut all = relations();
    all.push(sequence);
    let ask = |kind: &str, name: &str| d.rows(&all, &[text(kind), text(name), text("pg_catalog")]);
    assert_eq!(ask("S", "item_seq"), vec![vec![text("item_seq")]]);
    assert!(ask("S", "item").is_empty(), "a table is no sequence");
    assert!(ask("r", "item_seq").is_empty(), "a sequence is no table");
}
