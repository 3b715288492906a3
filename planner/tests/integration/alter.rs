//! `ALTER TABLE` on the catalog: what refers to a table's columns by position (keys, indexes,
//! NOT NULL, defaults, foreign keys of other tables) follows a dropped column, names follow a
//! rename, and a change that would leave something pointing at nothing is refused.
use crate::common::exec_ddl;
use weir_planner::{
    alter_catalog, plan_statement, Catalog, DefaultValue, PlanError, Statement, TableChange,
};

fn planned(cat: &Catalog, sql: &str) -> Result<(String, TableChange), PlanError> {
    match plan_statement(sql, cat, &[], 4)? {
        Statement::AlterTable {
            table,
            change: Some(change),
        } => Ok((table, change)),
        other => panic!("not a change: {other:?}"),
    }
}

fn alter(cat: &mut Catalog, sql: &str) -> Result<(), PlanError> {
    let (table, change) = planned(cat, sql)?;
    alter_catalog(cat, &table, &change)
}

fn shop() -> Catalog {
    let mut cat = Catalog::new();
    exec_ddl(
        &mut cat,
        "CREATE TABLE parent (pad VARCHAR, id BIGINT PRIMARY KEY)",
    );
    exec_ddl(
        &mut cat,
        "CREATE TABLE child (note VARCHAR, a BIGINT NOT NULL, b BIGINT DEFAULT 5, \
         pid BIGINT REFERENCES parent (id), id BIGINT PRIMARY KEY)",
    );
    exec_ddl(&mut cat, "CREATE INDEX child_b ON child (b)");
    cat
}

#[test]
fn a_dropped_column_moves_every_position_after_it() {
    let mut cat = shop();
    let version = cat.version();
    alter(&mut cat, "ALTER TABLE child DROP COLUMN note").unwrap();
    assert!(cat.version() > version);
    let child = cat.table("child").unwrap();
    let names: Vec<&str> = child
        .schema
        .fields
        .iter()
        .map(|f| f.name.as_str())
        .collect();
    assert_eq!(names, ["a", "b", "pid", "id"]);
    assert_eq!(child.primary_key, [3]);
    assert_eq!(child.not_null, [0]);
    assert_eq!(child.indexes[0].column, 1);
    assert_eq!(child.default_of(1), Some(&DefaultValue::Expr("5".into())));
    assert_eq!(child.foreign_keys[0].columns, [2]);
    // The referenced table's positions follow its own dropped column.
    alter(&mut cat, "ALTER TABLE parent DROP COLUMN pad").unwrap();
    assert_eq!(
        cat.table("child").unwrap().foreign_keys[0].parent_columns,
        [0]
    );
}

#[test]
fn a_column_in_use_is_not_dropped_and_the_catalog_stays_as_it_was() {
    let mut cat = shop();
    let version = cat.version();
    for (sql, why) in [
        ("ALTER TABLE child DROP COLUMN id", "primary key"),
        ("ALTER TABLE child DROP COLUMN b", "index 'child_b'"),
        ("ALTER TABLE child DROP COLUMN pid", "foreign key"),
        ("ALTER TABLE parent DROP COLUMN id", "primary key"),
    ] {
        let err = alter(&mut cat, sql).unwrap_err();
        assert!(matches!(err, PlanError::Depended(_)), "{sql}: {err}");
        assert!(err.to_string().contains(why), "{sql}: {err}");
    }
    assert_eq!(cat.version(), version);
    assert_eq!(cat.table("child").unwrap().schema.len(), 5);
}

#[test]
fn a_renamed_table_is_found_by_the_foreign_keys_that_reference_it() {
    let mut cat = shop();
    alter(&mut cat, "ALTER TABLE parent RENAME TO family").unwrap();
    assert!(cat.table("parent").is_none());
    assert_eq!(cat.table("family").unwrap().name, "family");
    assert_eq!(cat.table("child").unwrap().foreign_keys[0].parent, "family");
    let err = alter(&mut cat, "ALTER TABLE family RENAME TO child").unwrap_err();
    assert!(matches!(err, PlanError::TableExists(_)), "{err}");
    // Its sequence goes with a table, and with a column.
    exec_ddl(&mut cat, "CREATE TABLE s (n SERIAL PRIMARY KEY)");
    cat.reserve_sequence("s", "n", 40);
    alter(&mut cat, "ALTER TABLE s RENAME TO s2").unwrap();
    alter(&mut cat, "ALTER TABLE s2 RENAME COLUMN n TO m").unwrap();
    assert!(cat.sequence("s", "n").is_none());
    assert_eq!(cat.sequence("s2", "m").unwrap().next, 40);
}

#[test]
fn an_added_column_is_last_with_its_default_and_not_null() {
    let mut cat = shop();
    let (_, change) = planned(
        &cat,
        "ALTER TABLE child ADD COLUMN qty BIGINT NOT NULL DEFAULT 2 + 3",
    )
    .unwrap();
    let TableChange::AddColumn { fill, .. } = &change else {
        panic!("{change:?}")
    };
    assert_eq!(*fill, weir_operators::Value::Int(5));
    alter_catalog(&mut cat, "child", &change).unwrap();
    let child = cat.table("child").unwrap();
    assert_eq!(child.schema.fields[5].name, "qty");
    assert!(child.not_null.contains(&5));
    assert_eq!(
        child.default_of(5),
        Some(&DefaultValue::Expr("2 + 3".into()))
    );
}

#[test]
fn forms_that_are_not_taken_are_named() {
    let cat = shop();
    for (sql, named) in [
        (
            "ALTER TABLE child ADD COLUMN a BIGINT",
            "specified more than once",
        ),
        ("ALTER TABLE child ADD COLUMN u BIGINT UNIQUE", "UNIQUE"),
        (
            "ALTER TABLE child ADD CONSTRAINT c CHECK (a > 0) NO INHERIT",
            "CHECK",
        ),
        (
            "ALTER TABLE child ADD PRIMARY KEY (a)",
            "multiple primary keys for table 'child'",
        ),
        (
            "ALTER TABLE child DROP COLUMN a, DROP COLUMN b",
            "several changes",
        ),
        ("ALTER TABLE child RENAME COLUMN zz TO y", "child.zz"),
        (
            "ALTER TABLE child ALTER COLUMN a TYPE DOUBLE USING a * 2",
            "USING",
        ),
        (
            "ALTER TABLE child ALTER COLUMN b TYPE DOUBLE",
            "index 'child_b'",
        ),
        (
            "ALTER TABLE child ALTER COLUMN id DROP NOT NULL",
            "primary key",
        ),
        ("ALTER TABLE missing ADD COLUMN x BIGINT", "missing"),
    ] {
        let err = match planned(&cat, sql) {
            Err(e) => e,
            Ok((table, change)) => alter_catalog(&mut cat.clone(), &table, &change).unwrap_err(),
        };
        assert!(err.to_string().contains(named), "{sql}: {err}");
    }
    let nothing = plan_statement("ALTER TABLE IF EXISTS missing DROP COLUMN x", &cat, &[], 4);
    assert!(matches!(
        nothing,
        Ok(Statement::AlterTable { change: None, .. })
    ));
}

#[test]
fn an_added_unique_constraint_is_a_unique_index_and_a_foreign_key_is_resolved() {
    let mut cat = shop();
    let Statement::CreateIndex { table, index } =
        plan_statement("ALTER TABLE child ADD UNIQUE (a, b)", &cat, &[], 4).unwrap()
    else {
        panic!("not an index")
    };
    assert_eq!(table, "child");
    assert_eq!(index.name, "child_a_b_key");
    assert_eq!(index.columns(), [1, 2]);
    assert!(index.unique);
    alter(
        &mut cat,
        "ALTER TABLE child ADD CONSTRAINT child_parent FOREIGN KEY (a) REFERENCES parent",
    )
    .unwrap();
    let fk = &cat.table("child").unwrap().foreign_keys[1];
    assert_eq!(
        (fk.name.as_str(), fk.columns.as_slice()),
        ("child_parent", &[1][..])
    );
    assert_eq!(fk.parent_columns, [1]);
    alter(&mut cat, "ALTER TABLE child DROP CONSTRAINT child_parent").unwrap();
    assert_eq!(cat.table("child").unwrap().foreign_keys.len(), 1);
}

#[test]
fn drop_index_finds_the_table_by_the_index_name_or_asks_for_it() {
    let mut cat = shop();
    exec_ddl(&mut cat, "CREATE TABLE other (b BIGINT)");
    exec_ddl(&mut cat, "CREATE INDEX child_b ON other (b)");
    let err = plan_statement("DROP INDEX child_b", &cat, &[], 4).unwrap_err();
    assert!(err.to_string().contains("ON table"), "{err}");
    let Statement::AlterTable { table, change } =
        plan_statement("DROP INDEX child_b ON other", &cat, &[], 4).unwrap()
    else {
        panic!("not a change")
    };
    assert_eq!(table, "other");
    alter_catalog(&mut cat, &table, &change.unwrap()).unwrap();
    assert!(cat.table("other").unwrap().indexes.is_empty());
    assert_eq!(cat.table("child").unwrap().indexes.len(), 1);
    alter(&mut cat, "DROP INDEX child_b").unwrap();
    assert!(cat.table("child").unwrap().indexes.is_empty());
}

#[test]
fn comments_are_kept_follow_their_column_and_go_with_it() {
    let mut cat = shop();
    alter(&mut cat, "COMMENT ON TABLE public.child IS 'the children'").unwrap();
    alter(&mut cat, "COMMENT ON COLUMN child.b IS 'a b'").unwrap();
    alter(
        &mut cat,
        "COMMENT ON COLUMN public.child.pid IS 'its parent'",
    )
    .unwrap();
    let child = cat.table("child").unwrap();
    assert_eq!(child.comments.table.as_deref(), Some("the children"));
    assert_eq!(child.comments.of_column(2), Some("a b"));
    assert_eq!(child.comments.of_column(3), Some("its parent"));
    // A rename keeps the comment; a dropped column's goes, and those after it move.
    alter(&mut cat, "ALTER TABLE child RENAME COLUMN b TO bee").unwrap();
    alter(&mut cat, "ALTER TABLE child DROP COLUMN note").unwrap();
    let child = cat.table("child").unwrap();
    assert_eq!(child.comments.of_column(1), Some("a b"));
    assert_eq!(child.comments.of_column(2), Some("its parent"));
    alter(&mut cat, "DROP INDEX child_b").unwrap();
    alter(&mut cat, "ALTER TABLE child DROP COLUMN bee").unwrap();
    assert_eq!(
        cat.table("child").unwrap().comments.columns,
        [(1, "its parent".to_string())]
    );
    // IS NULL (or an empty text) removes a comment.
    alter(&mut cat, "COMMENT ON COLUMN child.pid IS NULL").unwrap();
    alter(&mut cat, "COMMENT ON TABLE child IS ''").unwrap();
    let child = cat.table("child").unwrap();
    assert_eq!(child.comments, Default::default());
}

#[test]
fn comments_on_what_weir_does_not_keep_are_refused_by_name() {
    let mut cat = shop();
    match plan_statement("CREATE VIEW v AS SELECT id FROM parent", &cat, &[], 4).unwrap() {
        Statement::CreateView { def, replace } => cat.add_view(def, replace).unwrap(),
        other => panic!("not a view: {other:?}"),
    }
    for (sql, says) in [
        ("COMMENT ON TABLE nothing IS 'x'", "nothing"),
        ("COMMENT ON COLUMN child.nothing IS 'x'", "child.nothing"),
        ("COMMENT ON COLUMN child IS 'x'", "table.column"),
        ("COMMENT ON SCHEMA public IS 'x'", "COMMENT ON SCHEMA"),
        ("COMMENT ON INDEX child_b IS 'x'", "COMMENT ON INDEX"),
        ("COMMENT ON TABLE v IS 'x'", "view 'v'"),
    ] {
        let e = planned(&cat, sql).unwrap_err().to_string();
        assert!(e.contains(says), "{sql}: {e}");
    }
}

#[test]
fn checks_foreign_keys_and_unique_constraints_share_their_names() {
    let mut cat = shop();
    alter(
        &mut cat,
        "ALTER TABLE child ADD CONSTRAINT pos CHECK (a > 0)",
    )
    .unwrap();
    exec_ddl(&mut cat, "CREATE UNIQUE INDEX one ON child (a)");
    for sql in [
        "ALTER TABLE child ADD CONSTRAINT pos FOREIGN KEY (b) REFERENCES parent (id)",
        "ALTER TABLE child ADD CONSTRAINT POS CHECK (b > 0)",
        "ALTER TABLE child ADD CONSTRAINT one CHECK (b > 0)",
    ] {
        let e = alter(&mut cat, sql).unwrap_err().to_string();
        assert!(e.contains("already exists"), "{sql}: {e}");
    }
    let fk = cat.table("child").unwrap().foreign_keys[0].name.clone();
    let e = alter(
        &mut cat,
        &format!("ALTER TABLE child ADD CONSTRAINT {fk} CHECK (b > 0)"),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("already exists"), "{e}");
    // And a unique index may not take a constraint's name.
    let e = match plan_statement("CREATE UNIQUE INDEX pos ON child (b)", &cat, &[], 4).unwrap() {
        Statement::CreateIndex { table, index } => cat.add_index(&table, index).unwrap_err(),
        other => panic!("not an index: {other:?}"),
    };
    assert!(e.to_string().contains("already exists"), "{e}");
}
