//! CREATE TABLE / CREATE INDEX / INSERT / DROP TABLE planning and catalog behaviour.
mod common;
use common::*;
use weir_operators::{DataType, Value};
use weir_planner::{plan_statement, Catalog, IndexDef, PlanError, Statement};

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
    assert_eq!(t.primary_key, 1);
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
    assert_eq!(t.primary_key, 1);
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
    cat.add_index(
        "item",
        IndexDef {
            name: "ix".into(),
            column: 2,
        },
    )
    .unwrap();
    assert_eq!(cat.version(), v + 1);
    assert!(matches!(
        cat.add_index(
            "item",
            IndexDef {
                name: "ix".into(),
                column: 3
            }
        ),
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
        Statement::CreateIndex {
            name,
            table,
            column,
        } => {
            assert_eq!(
                (name.as_str(), table.as_str(), column),
                ("by_name", "Item", 1)
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        plan_statement("CREATE INDEX idx_fldIdx ON Item(fld)", &cat, &[], 4),
        Err(PlanError::IndexExists(_))
    ));
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
    let Statement::Insert { table, batch } = s else {
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
    assert!(matches!(
        plan_statement("INSERT INTO Category (label) VALUES ('x')", &cat, &[], 4),
        Err(PlanError::Invalid(_))
    ));
    assert!(matches!(
        plan_statement("INSERT INTO Category VALUES (1, 'x', 1 + 2)", &cat, &[], 4),
        Err(PlanError::Unsupported { .. })
    ));
    assert!(matches!(
        plan_statement("INSERT INTO Category SELECT * FROM Category", &cat, &[], 4),
        Err(PlanError::Unsupported { .. })
    ));
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
