//! The describe queries of psql 15, psycopg and SQLAlchemy 2.1, recognized and answered.

use weir_operators::Value;

use super::question::{Describe, Question, TypeName};
use super::recognize::psql_describe;
use super::relations::{
    oid, CheckInfo, ColumnInfo, ForeignKeyInfo, IndexInfo, Relation, FIRST_OID,
};
use weir_planner::ReferentialAction;

fn text(s: &str) -> Value {
    Value::Str(s.to_string())
}

/// The query named `name` in a fixture of queries `all`, each after a `-- query: NAME` line
/// (`sqlalchemy_2_1.sql`, `pgjdbc_42_5.sql`).
pub(crate) fn fixture_query(all: &str, name: &str) -> String {
    let marker = format!("-- query: {name}\n");
    let start = all.find(&marker).expect("a query of the fixture") + marker.len();
    let rest = &all[start..];
    rest[..rest.find("\n-- query:").unwrap_or(rest.len())]
        .trim()
        .to_string()
}

fn describe(sql: &str) -> Option<Describe> {
    psql_describe(&crate::split::tokenize(sql).unwrap())
}

/// The queries psql 15 sends for `\d item` (and `\d+ item`), as PostgreSQL logged them.
pub(crate) const LOOKUP: &str = "SELECT c.oid,\n  n.nspname,\n  c.relname\nFROM \
    pg_catalog.pg_class c\n     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = \
    c.relnamespace\nWHERE c.relname OPERATOR(pg_catalog.~) '^(item)$' COLLATE \
    pg_catalog.default\n  AND pg_catalog.pg_table_is_visible(c.oid)\nORDER BY 2, 3;";
const RELATION: &str = "SELECT c.relchecks, c.relkind, c.relhasindex, c.relhasrules, \
    c.relhastriggers, c.relrowsecurity, c.relforcerowsecurity, false AS relhasoids, \
    c.relispartition, '', c.reltablespace, CASE WHEN c.reloftype = 0 THEN '' ELSE \
    c.reloftype::pg_catalog.regtype::pg_catalog.text END, c.relpersistence, \
    c.relreplident, am.amname\nFROM pg_catalog.pg_class c\n LEFT JOIN pg_catalog.pg_class \
    tc ON (c.reltoastrelid = tc.oid)\nLEFT JOIN pg_catalog.pg_am am ON (c.relam = \
    am.oid)\nWHERE c.oid = '16415';";
const ATTRIBUTES: &str = "SELECT a.attname,\n  pg_catalog.format_type(a.atttypid, \
    a.atttypmod),\n  (SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid, true)\n   FROM \
    pg_catalog.pg_attrdef d\n   WHERE d.adrelid = a.attrelid AND d.adnum = a.attnum AND \
    a.atthasdef),\n  a.attnotnull,\n  (SELECT c.collname FROM pg_catalog.pg_collation c, \
    pg_catalog.pg_type t\n   WHERE c.oid = a.attcollation AND t.oid = a.atttypid AND \
    a.attcollation <> t.typcollation) AS attcollation,\n  a.attidentity,\n  \
    a.attgenerated,\n  a.attstorage,\n  a.attcompression AS attcompression,\n  CASE WHEN \
    a.attstattarget=-1 THEN NULL ELSE a.attstattarget END AS attstattarget,\n  \
    pg_catalog.col_description(a.attrelid, a.attnum)\nFROM pg_catalog.pg_attribute a\nWHERE \
    a.attrelid = '16415' AND a.attnum > 0 AND NOT a.attisdropped\nORDER BY a.attnum;";
const INDEXES: &str = "SELECT c2.relname, i.indisprimary, i.indisunique, \
    i.indisclustered, i.indisvalid, pg_catalog.pg_get_indexdef(i.indexrelid, 0, true),\n  \
    pg_catalog.pg_get_constraintdef(con.oid, true), contype, condeferrable, condeferred, \
    i.indisreplident, c2.reltablespace\nFROM pg_catalog.pg_class c, pg_catalog.pg_class c2, \
    pg_catalog.pg_index i\n  LEFT JOIN pg_catalog.pg_constraint con ON (conrelid = \
    i.indrelid AND conindid = i.indexrelid AND contype IN ('p','u','x'))\nWHERE c.oid = \
    '16415' AND c.oid = i.indrelid AND i.indexrelid = c2.oid\nORDER BY i.indisprimary DESC, \
    c2.relname;";
const INHERITS: &str = "SELECT c.oid::pg_catalog.regclass\nFROM pg_catalog.pg_class c, \
    pg_catalog.pg_inherits i\nWHERE c.oid = i.inhparent AND i.inhrelid = '16415'\n  AND \
    c.relkind != 'p' AND c.relkind != 'I'\nORDER BY inhseqno;";

pub(crate) fn item_table() -> Relation {
    let col = |name: &str, type_name: &str, not_null: bool| ColumnInfo {
        name: name.into(),
        type_name: type_name.into(),
        not_null,
        varlena: type_name == "character varying",
        default: None,
        identity: "",
        comment: None,
    };
    Relation {
        name: "item".into(),
        view_sql: None,
        external: false,
        sequence: None,
        columns: vec![
            col("id", "bigint", true),
            col("name", "character varying", false),
            col("price", "numeric(12,2)", false),
        ],
        indexes: vec![
            IndexInfo {
                name: "item_pkey".into(),
                columns: vec!["id".into()],
                primary: true,
                unique: true,
                method: "hash",
            },
            IndexInfo {
                name: "item_name".into(),
                columns: vec!["name".into()],
                primary: false,
                unique: false,
                method: "btree",
            },
        ],
        foreign_keys: Vec::new(),
        referenced_by: Vec::new(),
        checks: Vec::new(),
        comment: None,
    }
}

fn with_oid(sql: &str) -> String {
    sql.replace("16415", &oid("item").to_string())
}

#[test]
fn the_lookup_finds_relations_by_pattern() {
    let d = describe(LOOKUP).unwrap();
    assert_eq!(
        d.question,
        Question::Lookup {
            pattern: "^(item)$".into()
        }
    );
    assert_eq!(d.columns().len(), 3);
    let rows = d.rows(&[item_table()], &[]);
    assert_eq!(
        rows,
        vec![vec![Value::Int(oid("item")), text("public"), text("item")]]
    );
    let other = Relation {
        name: "other".into(),
        ..item_table()
    };
    assert!(d.rows(&[other], &[]).is_empty());
}

#[test]
fn a_relation_answers_every_column_psql_asks_for_in_order() {
    let d = describe(&with_oid(RELATION)).unwrap();
    assert_eq!(d.items.len(), 15);
    let rows = d.rows(&[item_table()], &[]);
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    assert_eq!(row[0], Value::Int(0), "relchecks");
    assert_eq!(row[1], text("r"), "relkind");
    assert_eq!(row[2], Value::Bool(true), "relhasindex");
    assert_eq!(row[7], Value::Bool(false), "false AS relhasoids");
    assert_eq!(row[9], text(""), "the '' literal");
    assert_eq!(row[12], text("p"), "relpersistence");
    assert_eq!(row[14], Value::Null, "no access method");
    let unknown = describe(RELATION.replace("16415", "1").as_str()).unwrap();
    assert!(unknown.rows(&[item_table()], &[]).is_empty());
}

#[test]
fn attributes_give_names_types_and_nullability() {
    let d = describe(&with_oid(ATTRIBUTES)).unwrap();
    assert_eq!(d.items.len(), 11, "{:?}", d.items);
    let rows = d.rows(&[item_table()], &[]);
    let shown: Vec<(Value, Value, Value, Value)> = rows
        .iter()
        .map(|r| (r[0].clone(), r[1].clone(), r[3].clone(), r[7].clone()))
        .collect();
    assert_eq!(
        shown,
        vec![
            (text("id"), text("bigint"), Value::Bool(true), text("p")),
            (
                text("name"),
                text("character varying"),
                Value::Bool(false),
                text("x")
            ),
            (
                text("price"),
                text("numeric(12,2)"),
                Value::Bool(false),
                text("p")
            ),
        ]
    );
    assert_eq!(rows[0][2], Value::Null, "no default");
    assert_eq!(rows[0][4], Value::Null, "no collation");
}

#[test]
fn indexes_read_as_psql_prints_them() {
    let d = describe(&with_oid(INDEXES)).unwrap();
    let rows = d.rows(&[item_table()], &[]);
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0][0], text("item_pkey"));
    assert_eq!(rows[0][1], Value::Bool(true));
    assert_eq!(
        rows[0][5],
        text("CREATE UNIQUE INDEX item_pkey ON public.item USING hash (id)")
    );
    assert_eq!(rows[0][6], text("PRIMARY KEY (id)"));
    assert_eq!(rows[0][7], text("p"));
    assert_eq!(rows[1][0], text("item_name"));
    assert_eq!(
        rows[1][5],
        text("CREATE INDEX item_name ON public.item USING btree (name)")
    );
    assert_eq!(rows[1][6], Value::Null);
}

/// psql 15's "Foreign-key constraints" and "Referenced by" queries of `\d item`, as
/// PostgreSQL 15 logged them (psql sends them for a table whose `relhastriggers` is true).
const FOREIGN_KEYS: &str = "SELECT true as sametable, conname,
  pg_catalog.pg_get_constraintdef(r.oid, true) as condef,
  conrelid::pg_catalog.regclass AS ontable
FROM pg_catalog.pg_constraint r
WHERE r.conrelid = '16415' AND r.contype = 'f'
     AND conparentid = 0
ORDER BY conname";
const REFERENCED_BY: &str = "SELECT conname, conrelid::pg_catalog.regclass AS ontable,
       pg_catalog.pg_get_constraintdef(oid, true) AS condef
  FROM pg_catalog.pg_constraint c
 WHERE confrelid IN (SELECT pg_catalog.pg_partition_ancestors('16415')
                     UNION ALL VALUES ('16415'::pg_catalog.regclass))
       AND contype = 'f' AND conparentid = 0
ORDER BY conname;";

/// `item` referencing itself (`up` → `id`) and referenced by `sale` (`item_id` → `id`, `ON
/// DELETE RESTRICT`).
pub(crate) fn with_foreign_keys() -> Vec<Relation> {
    let key = |name: &str, table: &str, column: &str, on_delete| ForeignKeyInfo {
        name: name.into(),
        table: table.into(),
        columns: vec![column.into()],
        parent: "item".into(),
        parent_columns: vec!["id".into()],
        parent_index: "item_pkey".into(),
        on_delete,
        on_update: ReferentialAction::NoAction,
    };
    let own = key("item_up_fkey", "item", "up", ReferentialAction::NoAction);
    let sale = key(
        "sale_item_id_fkey",
        "sale",
        "item_id",
        ReferentialAction::Restrict,
    );
    let item = Relation {
        foreign_keys: vec![own.clone()],
        referenced_by: vec![own, sale.clone()],
        ..item_table()
    };
    let sale = Relation {
        name: "sale".into(),
        foreign_keys: vec![sale],
        ..item_table()
    };
    vec![item, sale]
}

#[test]
fn foreign_keys_read_as_psql_prints_them() {
    let relations = with_foreign_keys();
    // psql asks for keys only of a table with triggers: one with or under a key.
    let flags = describe(&with_oid(RELATION)).unwrap();
    assert_eq!(flags.rows(&relations, &[])[0][4], Value::Bool(true));
    assert_eq!(flags.rows(&[item_table()], &[])[0][4], Value::Bool(false));

    let d = describe(&with_oid(FOREIGN_KEYS)).unwrap();
    assert_eq!(d.question, Question::ForeignKeys { oid: oid("item") });
    assert_eq!(
        d.rows(&relations, &[]),
        vec![vec![
            Value::Bool(true),
            text("item_up_fkey"),
            text("FOREIGN KEY (up) REFERENCES item(id)"),
            text("item")
        ]]
    );
    let d = describe(&with_oid(REFERENCED_BY)).unwrap();
    assert_eq!(d.question, Question::ReferencedBy { oid: oid("item") });
    assert_eq!(
        d.rows(&relations, &[]),
        vec![
            vec![
                text("item_up_fkey"),
                text("item"),
                text("FOREIGN KEY (up) REFERENCES item(id)")
            ],
            vec![
                text("sale_item_id_fkey"),
                text("sale"),
                text("FOREIGN KEY (item_id) REFERENCES item(id) ON DELETE RESTRICT")
            ],
        ]
    );
    assert!(d.rows(&[item_table()], &[]).is_empty());
}

/// The query psql 15 sends for the check constraints of `\d` of a table whose `relchecks`
/// is not 0.
const CHECKS: &str = "SELECT r.conname, pg_catalog.pg_get_constraintdef(r.oid, true)
FROM pg_catalog.pg_constraint r
WHERE r.conrelid = '16415' AND r.contype = 'c'
ORDER BY 1;";

#[test]
fn check_constraints_read_as_psql_prints_them() {
    let check = |name: &str, condition: &str| CheckInfo {
        name: name.into(),
        condition: condition.into(),
    };
    let item = Relation {
        checks: vec![
            check("item_price_check", "price > 0"),
            check("named", "id <> 7"),
        ],
        ..item_table()
    };
    // psql asks only for a table whose `relchecks` is not 0.
    let flags = describe(&with_oid(RELATION)).unwrap();
    assert_eq!(
        flags.rows(std::slice::from_ref(&item), &[])[0][0],
        Value::Int(2)
    );
    assert_eq!(flags.rows(&[item_table()], &[])[0][0], Value::Int(0));

    let d = describe(&with_oid(CHECKS)).unwrap();
    assert_eq!(d.question, Question::CheckConstraints { oid: oid("item") });
    assert_eq!(
        d.rows(&[item], &[]),
        vec![
            vec![text("item_price_check"), text("CHECK (price > 0)")],
            vec![text("named"), text("CHECK (id <> 7)")],
        ]
    );
    assert!(d.rows(&[item_table()], &[]).is_empty());
    // Foreign keys are asked for with another kind.
    let foreign = describe(&with_oid(&CHECKS.replace("'c'", "'f'")));
    assert!(foreign.is_none_or(|d| d.question != Question::CheckConstraints { oid: oid("item") }));
}

#[test]
fn what_weir_never_has_is_no_rows_and_other_queries_are_not_describes() {
    let d = describe(INHERITS).unwrap();
    assert_eq!(d.question, Question::Nothing);
    assert_eq!(d.columns().len(), 1);
    assert!(d.rows(&[item_table()], &[]).is_empty());
    assert!(describe("SELECT * FROM pg_catalog.pg_class").is_none());
    assert!(describe("SELECT relname FROM item").is_none());
}

#[test]
fn psycopgs_type_lookup_finds_weirs_types_and_no_other() {
    let sql = "SELECT\n    typname AS name, oid, typarray AS array_oid,\n    \
        oid::regtype::text AS regtype, typdelim AS delimiter\nFROM pg_type t\nWHERE t.oid \
        = to_regtype($1)\nORDER BY t.oid\n";
    let d = describe(sql).unwrap();
    assert_eq!(
        d.question,
        Question::TypeLookup {
            name: TypeName::Param(0)
        }
    );
    assert_eq!(d.params(), 1);
    assert!(d.rows(&[], &[text("hstore")]).is_empty());
    assert_eq!(
        d.rows(&[], &[text("bigint")]),
        vec![vec![
            text("int8"),
            Value::Int(20),
            Value::Int(1016),
            text("bigint"),
            text(",")
        ]]
    );
    let literal = describe(&sql.replace("$1", "'numeric'")).unwrap();
    assert_eq!(literal.params(), 0);
    assert_eq!(literal.rows(&[], &[]).len(), 1);
}

#[test]
fn sqlalchemys_relation_names_filter_by_name_kind_and_schema() {
    // has_table("item") and get_view_names(), as SQLAlchemy 2.1 sends them.
    let has_table = "SELECT pg_catalog.pg_class.relname \nFROM pg_catalog.pg_class JOIN \
        pg_catalog.pg_namespace ON pg_catalog.pg_namespace.oid = \
        pg_catalog.pg_class.relnamespace \nWHERE pg_catalog.pg_class.relname IN ($1) AND \
        pg_catalog.pg_class.relkind = ANY (ARRAY[$2::VARCHAR, $3::VARCHAR, $4::VARCHAR]) \
        AND pg_catalog.pg_table_is_visible(pg_catalog.pg_class.oid) AND \
        pg_catalog.pg_namespace.nspname != $5::VARCHAR";
    let d = describe(has_table).unwrap();
    assert_eq!(d.params(), 5);
    let view = Relation {
        name: "cheap".into(),
        view_sql: Some("SELECT 1".into()),
        ..item_table()
    };
    let relations = [item_table(), view];
    let params = |name: &str, kinds: [&str; 3]| {
        let mut p = vec![text(name)];
        p.extend(kinds.iter().map(|k| text(k)));
        p.push(text("pg_catalog"));
        p
    };
    assert_eq!(
        d.rows(&relations, &params("item", ["r", "p", "f"])),
        vec![vec![text("item")]]
    );
    assert!(d
        .rows(&relations, &params("cheap", ["r", "p", "f"]))
        .is_empty());
    assert_eq!(
        d.rows(&relations, &params("cheap", ["v", "m", "x"])),
        vec![vec![text("cheap")]]
    );
    assert!(d
        .rows(&relations, &params("nosuch", ["r", "p", "f"]))
        .is_empty());
    // A filter this does not answer (another column, a pattern) is not recognized: the
    // query is refused as any other of pg_catalog rather than answered wrongly.
    for other in [
        has_table.replace(
            "pg_catalog.pg_class.relname IN ($1)",
            "pg_catalog.pg_class.relowner = $1",
        ),
        has_table.replace("relname IN ($1)", "relname LIKE $1"),
        has_table.replace("relname IN ($1)", "relname > $1"),
    ] {
        assert!(describe(&other).is_none(), "{other}");
    }
    let in_schema = has_table.replace("nspname != $5", "nspname = $5");
    let d = describe(&in_schema).unwrap();
    assert!(d
        .rows(&relations, &params("item", ["r", "p", "f"]))
        .is_empty());
}

#[test]
fn oids_are_stable_and_case_blind() {
    assert_eq!(oid("Item"), oid("item"));
    assert_ne!(oid("item"), oid("items"));
    assert!(oid("item") >= FIRST_OID);
}
