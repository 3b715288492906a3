//! Shared test fixtures.
#![allow(dead_code)]

use weir_operators::Value;
use weir_planner::{plan_statement, Catalog, QueryPlan, Statement};

/// Applies DDL to a catalog.
pub fn exec_ddl(cat: &mut Catalog, sql: &str) {
    match plan_statement(sql, cat, &[], 4).unwrap() {
        Statement::CreateTable(t) => cat.add_table(t).unwrap(),
        Statement::CreateIndex { table, index } => cat.add_index(&table, index).unwrap(),
        Statement::DropTable { name, .. } => {
            cat.drop_table(&name).unwrap();
        }
        Statement::AlterTable {
            table,
            change: Some(change),
        } => weir_planner::alter_catalog(cat, &table, &change).unwrap(),
        other => panic!("not DDL: {other:?}"),
    }
}

/// The Item/Category fixture catalog.
pub fn catalog() -> Catalog {
    let mut cat = Catalog::new();
    exec_ddl(
        &mut cat,
        "CREATE TABLE Item (id BIGINT PRIMARY KEY, name VARCHAR, fld BIGINT, fldBatch BIGINT, fldIdx BIGINT, fldIdxBatch BIGINT)",
    );
    exec_ddl(&mut cat, "CREATE INDEX idx_fldIdx ON Item(fldIdx)");
    exec_ddl(
        &mut cat,
        "CREATE INDEX idx_fldIdxBatch ON Item(fldIdxBatch)",
    );
    exec_ddl(
        &mut cat,
        "CREATE TABLE Category (cid BIGINT, label VARCHAR, weight DOUBLE, PRIMARY KEY (cid))",
    );
    exec_ddl(
        &mut cat,
        "CREATE TABLE Tag (tid BIGINT PRIMARY KEY, item_id BIGINT, cat_id BIGINT, score DOUBLE)",
    );
    cat.set_row_count("Item", 100_000);
    cat.set_row_count("Category", 100);
    cat.set_row_count("Tag", 10_000);
    cat
}

/// Plans a query, panicking on errors or non-queries.
pub fn query(cat: &Catalog, sql: &str, params: &[Value]) -> QueryPlan {
    match plan_statement(sql, cat, params, 4) {
        Ok(Statement::Query(q)) => q,
        other => panic!("{sql}: {other:?}"),
    }
}

/// EXPLAIN text with a fixed node description.
pub fn explain(q: &QueryPlan) -> String {
    q.explain(&|_| "n".to_string())
}
