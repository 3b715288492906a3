//! CREATE TABLE / CREATE INDEX / INSERT / DROP TABLE planning and catalog behaviour: keyless
//! tables, hidden row ids, and every clause weir would otherwise ignore being an error that
//! names it.
use crate::common;
use common::*;
use weir_operators::{DataType, Value};
use weir_planner::{
    plan_statement, Catalog, ColumnDefault, DefaultValue, IndexDef, Placement, PlanError, Pruning,
    SequenceFill, Statement,
};

#[test]
fn create_table() {
    let cat = Catalog::new();
    let s = plan_statement(
        "CREATE TABLE t (a INT, id BIGINT PRIMARY KEY, name VARCHAR(20), x DOUBLE, ok BOOLEAN, txt TEXT, r REAL)",
        &cat,
        &[],
        8,
    )
    .unwrap();
    let Statement::CreateTable(t) = s else {
        panic!()
    };
    assert_eq!(t.name, "t");
    assert_eq!(t.primary_key, vec![1]);
    assert_eq!(t.partitions, 8);
    assert_eq!(
        t.schema.types(),
        vec![
            DataType::Int64,
            DataType::Int64,
            DataType::Utf8,
            DataType::Float64,
            DataType::Boolean,
            DataType::Utf8,
            DataType::Float64
        ]
    );
    let Statement::CreateTable(t) = plan_statement(
        "CREATE TABLE u (a INT, b INT, PRIMARY KEY (b))",
        &cat,
        &[],
        2,
    )
    .unwrap() else {
        panic!()
    };
    assert_eq!(t.primary_key, vec![1]);
    let cat = catalog();
    assert_eq!(
        plan_statement("CREATE TABLE item (x INT)", &cat, &[], 2).unwrap_err(),
        PlanError::TableExists("item".into())
    );
    let Statement::CreateTable(t) =
        plan_statement("CREATE TABLE IF NOT EXISTS item (x INT)", &cat, &[], 2).unwrap()
    else {
        panic!()
    };
    let mut cat2 = cat.clone();
    let v = cat2.version();
    cat2.add_table(t).unwrap();
    assert_eq!(cat2.version(), v);
    assert!(matches!(
        plan_statement("CREATE TABLE z (a GEOMETRY)", &cat, &[], 2),
        Err(PlanError::Unsupported { .. })
    ));
}

#[test]
fn catalog_versions() {
    let mut cat = catalog();
    let v = cat.version();
    cat.set_row_count("item", 5);
    assert_eq!(cat.version(), v);
    assert_eq!(cat.row_count("ITEM"), 5);
    cat.add_index("item", IndexDef::on("ix", 2)).unwrap();
    assert_eq!(cat.version(), v + 1);
    assert!(matches!(
        cat.add_index("item", IndexDef::on("ix", 3)),
        Err(PlanError::IndexExists(_))
    ));
    let t = cat.drop_table("ITEM").unwrap();
    assert_eq!(t.name, "Item");
    assert_eq!(cat.version(), v + 2);
    assert!(cat.table("item").is_none());
    assert_eq!(cat.tables().count(), 2);
}

#[test]
fn create_index() {
    let cat = catalog();
    let s = plan_statement("CREATE INDEX by_name ON item (NAME)", &cat, &[], 4).unwrap();
    match s {
        Statement::CreateIndex { table, index } => {
            assert_eq!(table, "Item");
            assert_eq!(index, IndexDef::on("by_name", 1));
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        plan_statement("CREATE INDEX idx_fldIdx ON Item(fld)", &cat, &[], 4),
        Err(PlanError::IndexExists(_))
    ));
    // Several columns, UNIQUE: the first column is the one the nodes index.
    match plan_statement("CREATE UNIQUE INDEX u ON item (fld, name)", &cat, &[], 4).unwrap() {
        Statement::CreateIndex { index, .. } => {
            assert_eq!(index.columns(), vec![2, 1]);
            assert_eq!(index.column, 2);
            assert!(index.unique);
        }
        other => panic!("{other:?}"),
    }
    match plan_statement("CREATE INDEX ON item (fld, name)", &cat, &[], 4).unwrap() {
        Statement::CreateIndex { index, .. } => assert_eq!(index.name, "Item_fld_name_idx"),
        other => panic!("{other:?}"),
    }
    let e = plan_statement("CREATE INDEX d ON item (fld, name, fld)", &cat, &[], 4).unwrap_err();
    assert!(
        e.to_string()
            .contains("column 'fld' appears twice in the index"),
        "{e}"
    );
}

#[test]
fn insert() {
    let cat = catalog();
    let s = plan_statement(
        "INSERT INTO item (name, id, fld) VALUES ('a', 1, -5), (?, ?, NULL)",
        &cat,
        &[Value::Null, Value::Int(2)],
        4,
    )
    .unwrap();
    let Statement::Insert { table, batch, .. } = s else {
        panic!()
    };
    assert_eq!(table, "Item");
    assert_eq!(batch.num_columns(), 6);
    assert_eq!(
        batch.rows(),
        vec![
            vec![
                Value::Int(1),
                Value::from("a"),
                Value::Int(-5),
                Value::Null,
                Value::Null,
                Value::Null
            ],
            vec![
                Value::Int(2),
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null
            ],
        ]
    );
    // integers widen into DOUBLE columns
    let Statement::Insert { batch, .. } = plan_statement(
        "INSERT INTO Category VALUES (1, 'x', 3), (2, 'y', ?)",
        &cat,
        &[Value::Int(4)],
        4,
    )
    .unwrap() else {
        panic!()
    };
    assert_eq!(
        batch.types(),
        vec![DataType::Int64, DataType::Utf8, DataType::Float64]
    );
    assert_eq!(batch.row(0)[2], Value::Float(3.0));
    assert_eq!(batch.row(1)[2], Value::Float(4.0));
    // type errors name the column
    let e = plan_statement("INSERT INTO Category VALUES (1, 2, 3)", &cat, &[], 4).unwrap_err();
    assert!(
        matches!(&e, PlanError::Type(m) if m.contains("label")),
        "{e:?}"
    );
    assert!(matches!(
        plan_statement("INSERT INTO Category VALUES (1, 'x')", &cat, &[], 4),
        Err(PlanError::Invalid(_))
    ));
    // A NULL key is planned as written: the storage refuses it, for the whole statement.
    let Statement::Insert { batch, .. } =
        plan_statement("INSERT INTO Category (label) VALUES ('x')", &cat, &[], 4).unwrap()
    else {
        panic!()
    };
    assert_eq!(batch.row(0), vec![Value::Null, "x".into(), Value::Null]);
    // Values computed from constants are evaluated once (the third column is a DOUBLE); a
    // column or a subquery is refused.
    let Statement::Insert { batch, .. } = plan_statement(
        "INSERT INTO Category VALUES (1 << 2, 'x' || 'y', 1 + 2)",
        &cat,
        &[],
        4,
    )
    .unwrap() else {
        panic!()
    };
    assert_eq!(
        batch.row(0),
        vec![Value::Int(4), "xy".into(), Value::Float(3.0)]
    );
    assert!(matches!(
        plan_statement(
            "INSERT INTO Category VALUES (1, 'x', (SELECT 2))",
            &cat,
            &[],
            4
        ),
        Err(PlanError::Unsupported { .. })
    ));
    assert!(matches!(
        plan_statement("INSERT INTO Category VALUES (1, 'x', id)", &cat, &[], 4),
        Err(PlanError::UnknownColumn { .. })
    ));
    // INSERT ... SELECT plans a query producing the table's columns.
    match plan_statement("INSERT INTO Category SELECT * FROM Category", &cat, &[], 4) {
        Ok(Statement::InsertSelect { table, query, .. }) => {
            assert_eq!(table, "Category");
            assert_eq!(
                query.output_schema.types(),
                cat.table("Category").unwrap().schema.types()
            );
        }
        other => panic!("{other:?}"),
    }
    let Statement::Insert { batch, .. } = plan_statement(
        "INSERT INTO Category VALUES (-9223372036854775808, CAST(5 AS VARCHAR), -2.5)",
        &cat,
        &[],
        4,
    )
    .unwrap() else {
        panic!()
    };
    assert_eq!(
        batch.row(0),
        vec![Value::Int(i64::MIN), Value::from("5"), Value::Float(-2.5)]
    );
}

#[test]
fn drop_table() {
    let cat = catalog();
    match plan_statement("DROP TABLE item", &cat, &[], 4).unwrap() {
        Statement::DropTable { name, if_exists } => {
            assert_eq!(name, "Item");
            assert!(!if_exists);
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        plan_statement("DROP TABLE IF EXISTS nope", &cat, &[], 4).unwrap(),
        Statement::DropTable {
            if_exists: true,
            ..
        }
    ));
}

/// The `what` and `position` of an unsupported-construct error (panics on anything else).
fn unsupported(sql: &str, cat: &Catalog) -> (String, String) {
    match plan_statement(sql, cat, &[], 4) {
        Err(PlanError::Unsupported { what, position }) => (what, position),
        other => panic!("{sql}: expected an unsupported-SQL error, got {other:?}"),
    }
}

#[test]
fn a_table_without_a_declared_key_has_none() {
    let mut cat = Catalog::new();
    let Statement::CreateTable(t) =
        plan_statement("CREATE TABLE k (a BIGINT, b VARCHAR)", &cat, &[], 4).unwrap()
    else {
        panic!()
    };
    assert!(t.primary_key.is_empty());
    assert!(!t.is_indexed(0));
    assert_eq!(t.index_name(0), None);
    cat.add_table(t).unwrap();
    exec_ddl(&mut cat, "CREATE INDEX k_b ON k (b)");
    assert!(cat.table("k").unwrap().is_indexed(1));

    // Duplicates and NULLs in any column are planned as they are; nothing is dropped.
    let Statement::Insert { batch, .. } = plan_statement(
        "INSERT INTO k VALUES (1, 'x'), (1, 'x'), (NULL, NULL), (NULL, 'y')",
        &cat,
        &[],
        4,
    )
    .unwrap() else {
        panic!()
    };
    assert_eq!(
        batch.rows(),
        vec![
            vec![Value::Int(1), "x".into()],
            vec![Value::Int(1), "x".into()],
            vec![Value::Null, Value::Null],
            vec![Value::Null, "y".into()],
        ]
    );

    // Equality on the first column neither prunes partitions nor probes a key index; a
    // secondary index is still used.
    let q = query(&cat, "SELECT b FROM k WHERE a = 1", &[]);
    for f in &q.fragments {
        if let Placement::Table { pruning, .. } = &f.placement {
            assert_eq!(pruning, &Pruning::All);
        }
    }
    let text = explain(&q);
    assert!(!text.contains("IndexScan"), "{text}");
    let text = explain(&query(&cat, "SELECT a FROM k WHERE b = 'x'", &[]));
    assert!(text.contains("IndexScan k"), "{text}");
    // With a key, the same query is pruned to the key's partition.
    let q = query(&catalog(), "SELECT label FROM Category WHERE cid = 1", &[]);
    assert!(q.fragments.iter().any(|f| matches!(
        &f.placement,
        Placement::Table {
            pruning: Pruning::Keys(_),
            ..
        }
    )));
}

#[test]
fn catalog_hands_out_row_ids_once() {
    let mut cat = catalog();
    let v = cat.version();
    assert_eq!(cat.reserve_row_ids("Item", 3), 0);
    assert_eq!(cat.reserve_row_ids("ITEM", 0), 3);
    assert_eq!(cat.reserve_row_ids("item", 2), 3);
    assert_eq!(cat.reserve_row_ids("Category", 5), 0);
    assert_eq!(cat.reserve_row_ids("item", 1), 5);
    assert_eq!(cat.version(), v, "row ids are not a schema change");
    // A dropped and re-created table starts again (its old rows are gone).
    cat.drop_table("Item").unwrap();
    exec_ddl(&mut cat, "CREATE TABLE Item (id BIGINT)");
    assert_eq!(cat.reserve_row_ids("item", 1), 0);
    assert_eq!(cat.reserve_row_ids("Category", 1), 5);
}

#[test]
fn insert_clauses_weir_would_ignore_are_errors_naming_them() {
    let cat = catalog();
    for (sql, what) in [
        ("REPLACE INTO Category VALUES (1, 'x', 1.0)", "REPLACE INTO"),
        (
            "INSERT OR REPLACE INTO Category VALUES (1, 'x', 1.0)",
            "INSERT OR REPLACE",
        ),
        (
            "INSERT OR IGNORE INTO Category VALUES (1, 'x', 1.0)",
            "INSERT OR IGNORE",
        ),
        (
            "INSERT OR ABORT INTO Category VALUES (1, 'x', 1.0)",
            "INSERT OR ABORT",
        ),
        (
            "INSERT IGNORE INTO Category VALUES (1, 'x', 1.0)",
            "INSERT IGNORE",
        ),
        (
            "INSERT INTO Category VALUES (1, 'x', 1.0) ON DUPLICATE KEY UPDATE label = 'y'",
            "ON DUPLICATE KEY UPDATE",
        ),
        (
            "INSERT INTO Category VALUES (1, 'x', 1.0) RETURNING COUNT(*)",
            "RETURNING with an aggregate, a window function or a subquery (only expressions over the written row)",
        ),
        (
            "INSERT OVERWRITE TABLE Category VALUES (1, 'x', 1.0)",
            "INSERT OVERWRITE",
        ),
        (
            "INSERT INTO Category PARTITION (cid = 1) VALUES (1, 'x', 1.0)",
            "INSERT ... PARTITION",
        ),
        (
            "INSERT INTO Category BY NAME VALUES (1, 'x', 1.0)",
            "INSERT ... BY NAME",
        ),
        (
            "INSERT LOW_PRIORITY INTO Category VALUES (1, 'x', 1.0)",
            "INSERT LOW_PRIORITY",
        ),
        (
            "INSERT INTO Category (cid) OVERRIDING SYSTEM VALUE VALUES (1)",
            "OVERRIDING SYSTEM VALUE",
        ),
        (
            "INSERT INTO Category VALUES (1, 'x', 1.0) AS new",
            "a row alias after VALUES",
        ),
        (
            "INSERT INTO Category VALUES (1, 'x', 1.0), (2, 'y', 2.0) LIMIT 1",
            "LIMIT 1 in INSERT ... VALUES",
        ),
        (
            "INSERT INTO Category VALUES (1, 'x', 1.0) ORDER BY 1",
            "ORDER BY 1 in INSERT ... VALUES",
        ),
    ] {
        let (got, position) = unsupported(sql, &cat);
        assert_eq!(got, what, "{sql}");
        assert!(position.starts_with("line 1, column "), "{sql}: {position}");
    }
    // A clause after a long VALUES list is named just the same.
    let rows: Vec<String> = (0..5000).map(|i| format!("({i}, 'x', 1.0)")).collect();
    let sql = format!("INSERT INTO Category VALUES {} LIMIT 1", rows.join(", "));
    assert_eq!(unsupported(&sql, &cat).0, "LIMIT 1 in INSERT ... VALUES");
    // REPLACE INTO names its position, and is refused on a keyless table too.
    let mut cat = cat;
    exec_ddl(&mut cat, "CREATE TABLE k (a BIGINT)");
    let e = plan_statement("SELECT 1;\nREPLACE INTO k VALUES (1)", &cat, &[], 4).unwrap_err();
    assert!(matches!(e, PlanError::Unsupported { .. }), "{e}");
    let e = plan_statement("  REPLACE INTO k VALUES (1)", &cat, &[], 4).unwrap_err();
    assert_eq!(
        e.to_string(),
        "unsupported SQL: REPLACE INTO at line 1, column 3"
    );
}

#[test]
fn insert_column_lists_defaults_and_row_syntax() {
    let cat = catalog();
    let rows = |sql: &str| match plan_statement(sql, &cat, &[], 4).unwrap() {
        Statement::Insert { batch, .. } => batch.rows(),
        other => panic!("{sql}: {other:?}"),
    };
    let want = vec![vec![Value::Int(1), "x".into(), Value::Float(2.0)]];
    // Columns in another order land in their own columns.
    assert_eq!(
        rows("INSERT INTO Category (weight, cid, label) VALUES (2.0, 1, 'x')"),
        want
    );
    assert_eq!(
        rows("INSERT INTO Category (label, weight, cid) VALUES ('x', 2, 1)"),
        want
    );
    // `DEFAULT` and omitted columns are NULL: these columns have no other default.
    assert_eq!(
        rows("INSERT INTO Category VALUES (1, DEFAULT, default)"),
        vec![vec![Value::Int(1), Value::Null, Value::Null]]
    );
    assert_eq!(
        rows("INSERT INTO Category (weight, cid) VALUES (DEFAULT, 4)"),
        vec![vec![Value::Int(4), Value::Null, Value::Null]]
    );
    assert_eq!(
        rows("INSERT INTO Category DEFAULT VALUES"),
        vec![vec![Value::Null, Value::Null, Value::Null]]
    );
    // Harmless spellings.
    assert_eq!(rows("INSERT INTO TABLE Category VALUES (1, 'x', 2)"), want);
    assert_eq!(rows("INSERT INTO Category VALUES ROW(1, 'x', 2)"), want);
    // A quoted "DEFAULT" is a column name, not the keyword.
    assert!(plan_statement(
        "INSERT INTO Category VALUES (1, \"DEFAULT\", 2)",
        &cat,
        &[],
        4
    )
    .is_err());
}

#[test]
fn create_table_clauses_weir_would_ignore_are_errors_naming_them() {
    let cat = catalog();
    for (sql, what) in [
        (
            "CREATE TABLE n (a INT GENERATED ALWAYS AS (5) STORED, b INT)",
            "GENERATED ALWAYS AS (5) STORED on column 'a'",
        ),
        (
            "CREATE TABLE n (a INT UNIQUE NULLS NOT DISTINCT)",
            "UNIQUE NULLS NOT DISTINCT on column 'a'",
        ),
        (
            "CREATE TABLE n (a INT, b INT CHECK (b > 0) NO INHERIT)",
            "CHECK (b > 0) NO INHERIT on column 'b'",
        ),
        (
            "CREATE TABLE n (a INT, CHECK (a > 0) NO INHERIT)",
            "CHECK (a > 0) NO INHERIT in CREATE TABLE",
        ),
        (
            "CREATE TABLE n (a INT, FOREIGN KEY (a) REFERENCES Item(id) MATCH FULL)",
            "MATCH FULL on a foreign key (weir's keys are MATCH SIMPLE)",
        ),
        (
            "CREATE TABLE n (a INT PRIMARY KEY AUTOINCREMENT)",
            "AUTOINCREMENT on column 'a'",
        ),
        (
            "CREATE TABLE n (a INT PRIMARY KEY ON CONFLICT REPLACE)",
            "ON CONFLICT REPLACE on column 'a'",
        ),
        (
            "CREATE TABLE n (a INT GENERATED ALWAYS AS (1))",
            "GENERATED ALWAYS AS (1) on column 'a'",
        ),
        (
            "CREATE TABLE n (a INT COLLATE nocase)",
            "COLLATE nocase on column 'a' (weir orders text by its bytes, as COLLATE \"C\": \
             only \"C\", \"POSIX\", ucs_basic and \"default\" are accepted)",
        ),
        (
            "CREATE TEMPORARY TABLE n (a INT)",
            "TEMPORARY in CREATE TABLE",
        ),
        (
            "CREATE OR REPLACE TABLE n (a INT)",
            "OR REPLACE in CREATE TABLE",
        ),
        (
            "CREATE TABLE n (a INT) PARTITION BY (a)",
            "PARTITION BY (a) in CREATE TABLE",
        ),
        (
            "CREATE TABLE n (a INT) ENGINE = InnoDB",
            "ENGINE = InnoDB in CREATE TABLE",
        ),
        (
            "CREATE TABLE n (a INT) WITHOUT ROWID",
            "WITHOUT ROWID in CREATE TABLE",
        ),
        (
            "CREATE TABLE n (a INT) WITH (fillfactor = 70)",
            "WITH (fillfactor = 70) in CREATE TABLE",
        ),
        ("CREATE TABLE n LIKE Item", "LIKE Item in CREATE TABLE"),
        (
            "CREATE TEMPORARY TABLE n (a INT) ENGINE = x",
            "TEMPORARY, ENGINE = x in CREATE TABLE",
        ),
        // IF NOT EXISTS on an existing table does not hide what would be ignored.
        (
            "CREATE TABLE IF NOT EXISTS Item (id INT CHECK (id > 0) NO INHERIT)",
            "CHECK (id > 0) NO INHERIT on column 'id'",
        ),
    ] {
        let (got, position) = unsupported(sql, &cat);
        assert_eq!(got, what, "{sql}");
        assert!(position.starts_with("line 1, column "), "{sql}: {position}");
    }
    let (_, position) = unsupported(
        "CREATE TABLE n (a INT, b INT CHECK (b > 0) NO INHERIT)",
        &cat,
    );
    assert_eq!(position, "line 1, column 24", "the column's position");
}

#[test]
fn create_table_forms_that_are_enforced() {
    let cat = catalog();
    let def = |sql: &str| match plan_statement(sql, &cat, &[], 4).unwrap() {
        Statement::CreateTable(t) => t,
        other => panic!("{sql}: {other:?}"),
    };
    // NOT NULL on the key (never NULL anyway), NULL on any column, a named key constraint.
    for sql in [
        "CREATE TABLE n (a INT NOT NULL PRIMARY KEY, b INT NULL)",
        "CREATE TABLE n (a INT NOT NULL, b INT, PRIMARY KEY (a))",
        "CREATE TABLE n (a INT CONSTRAINT n_pk PRIMARY KEY, b INT)",
        "CREATE TABLE n (a INT, b INT, CONSTRAINT n_pk PRIMARY KEY (a))",
    ] {
        let t = def(sql);
        assert_eq!(t.primary_key, vec![0], "{sql}");
        assert_eq!(t.schema.len(), 2, "{sql}");
    }
    assert!(def("CREATE TABLE n (a INT NULL, b INT)")
        .primary_key
        .is_empty());
    // IF NOT EXISTS on an existing table is the existing definition, whatever the new one.
    let t = def("CREATE TABLE IF NOT EXISTS item (x VARCHAR)");
    assert_eq!(&t, cat.table("Item").unwrap());
    assert!(matches!(
        plan_statement(
            "CREATE TABLE n (a INT PRIMARY KEY, b INT PRIMARY KEY)",
            &cat,
            &[],
            4
        ),
        Err(PlanError::Invalid(m)) if m.contains("more than one primary key")
    ));
}

#[test]
fn unique_constraints_in_create_table_are_unique_indexes() {
    let cat = catalog();
    let Statement::CreateTable(t) = plan_statement(
        "CREATE TABLE n (a INT PRIMARY KEY UNIQUE, b INT UNIQUE, c INT, d INT, CONSTRAINT cd UNIQUE (c, d))",
        &cat,
        &[],
        4,
    )
    .unwrap() else {
        panic!("a table")
    };
    // The primary key is unique already; the others are unique indexes.
    let indexes: Vec<(&str, Vec<usize>, bool)> = t
        .indexes
        .iter()
        .map(|i| (i.name.as_str(), i.columns(), i.unique))
        .collect();
    assert_eq!(
        indexes,
        vec![("n_b_key", vec![1], true), ("cd", vec![2, 3], true)]
    );
}

#[test]
fn defaults_are_kept_with_the_table_and_an_insert_says_which_values_sequences_give() {
    let mut cat = Catalog::new();
    let Statement::CreateTable(t) = plan_statement(
        "CREATE TABLE s (id SERIAL PRIMARY KEY, n BIGINT GENERATED ALWAYS AS IDENTITY, \
         v VARCHAR DEFAULT 'a' || 'b', w DOUBLE)",
        &cat,
        &[],
        4,
    )
    .unwrap() else {
        panic!()
    };
    assert_eq!(
        t.defaults,
        vec![
            ColumnDefault {
                column: 0,
                value: DefaultValue::Serial
            },
            ColumnDefault {
                column: 1,
                value: DefaultValue::Identity { always: true }
            },
            ColumnDefault {
                column: 2,
                value: DefaultValue::Expr("'a' || 'b'".into())
            },
        ]
    );
    // SERIAL and identity columns refuse NULL.
    assert_eq!(t.not_null, vec![1]);
    assert_eq!(t.sequence_columns().collect::<Vec<_>>(), vec![0, 1]);
    cat.add_table(t).unwrap();
    assert_eq!(cat.sequence("S", "ID").map(|s| s.next), Some(1));
    let Statement::Insert { batch, fills, .. } = plan_statement(
        "INSERT INTO s (id, w) VALUES (5, 1), (DEFAULT, 2)",
        &cat,
        &[],
        4,
    )
    .unwrap() else {
        panic!()
    };
    assert_eq!(
        fills,
        vec![
            SequenceFill {
                column: 0,
                rows: Some(vec![1]),
                from: None,
                current: false,
            },
            SequenceFill {
                column: 1,
                rows: None,
                from: None,
                current: false,
            },
        ]
    );
    assert_eq!(batch.row(0)[..3], [Value::Int(5), Value::Null, "ab".into()]);
    // A reservation never moves a sequence back, and does not change the schema version.
    let version = cat.version();
    cat.reserve_sequence("s", "id", 65);
    cat.reserve_sequence("s", "id", 10);
    assert_eq!(cat.sequence("s", "id").map(|s| s.next), Some(65));
    assert_eq!(cat.version(), version);
    let snapshot = cat.snapshot();
    assert_eq!(
        Catalog::from_snapshot(snapshot, 0)
            .sequence("s", "id")
            .map(|s| s.next),
        Some(65)
    );
    cat.drop_table("s").unwrap();
    assert!(cat.sequence("s", "id").is_none());
}
