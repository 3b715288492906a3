//! DDL and statement behaviour as a user sees it: CREATE / DROP TABLE, CREATE INDEX on loaded
//! data, INSERT with NULLs and parameters, tables without a primary key, duplicate and NULL
//! keys, clauses weir refuses rather than ignores, EXPLAIN, and queries without FROM.

use crate::common;

use common::{assert_idle, cluster, ints};
use weir::planner::PlanError;
use weir::{Batch, DataType, Error, Value};

fn total_rows_stored(c: &weir::Cluster) -> usize {
    c.stats().nodes.iter().map(|n| n.rows_stored).sum()
}

#[test]
fn drop_table_then_query_fails_naming_the_table_and_recreate_starts_empty() {
    let c = cluster(3);
    c.execute("CREATE TABLE gadgets (id BIGINT PRIMARY KEY, name VARCHAR, price BIGINT)")
        .unwrap();
    assert_eq!(
        c.execute(
            "INSERT INTO gadgets VALUES (1, 'lever', 10), (2, 'pulley', 20), (3, 'wedge', 30)"
        )
        .unwrap(),
        3
    );
    // Planned and cached before the drop.
    let count = "SELECT COUNT(*) FROM gadgets";
    assert_eq!(ints(&c.query(count, &[]).unwrap().rows()), vec![vec![3]]);
    assert_eq!(total_rows_stored(&c), 3);

    assert_eq!(c.execute("DROP TABLE gadgets").unwrap(), 0);
    assert!(c.tables().iter().all(|t| t.name != "gadgets"));
    assert_eq!(total_rows_stored(&c), 0, "dropped rows are freed");

    for sql in [
        count,
        "SELECT name FROM gadgets WHERE id = 1",
        "SELECT g.name, h.name FROM gadgets g JOIN gadgets h ON g.id = h.id",
    ] {
        let e = c.query(sql, &[]).unwrap_err().to_string();
        assert!(e.contains("gadgets"), "{sql}: {e}");
    }
    let e = c
        .execute("INSERT INTO gadgets VALUES (4, 'screw', 40)")
        .unwrap_err()
        .to_string();
    assert!(e.contains("gadgets"), "{e}");
    let e = c.explain(count, &[]).unwrap_err().to_string();
    assert!(e.contains("gadgets"), "{e}");

    // Dropping again fails, naming the table; IF EXISTS makes it a no-op.
    let e = c.execute("DROP TABLE gadgets").unwrap_err().to_string();
    assert!(e.contains("gadgets"), "{e}");
    assert_eq!(c.execute("DROP TABLE IF EXISTS gadgets").unwrap(), 0);
    assert_eq!(c.execute("DROP TABLE IF EXISTS never_existed").unwrap(), 0);

    // Re-created with another schema: empty, the new columns, old keys free again, and the
    // plan cached before the drop is not reused.
    c.execute("CREATE TABLE gadgets (id BIGINT PRIMARY KEY, weight DOUBLE)")
        .unwrap();
    assert_eq!(ints(&c.query(count, &[]).unwrap().rows()), vec![vec![0]]);
    let r = c.query("SELECT * FROM gadgets", &[]).unwrap();
    assert_eq!(r.num_rows(), 0);
    assert_eq!(r.column_names(), vec!["id", "weight"]);
    let e = c
        .query("SELECT name FROM gadgets", &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("name"), "old column still visible: {e}");
    c.execute("INSERT INTO gadgets VALUES (1, 2.5), (2, 0.25)")
        .unwrap();
    let r = c
        .query("SELECT id, weight FROM gadgets ORDER BY id", &[])
        .unwrap();
    assert_eq!(
        r.rows(),
        vec![
            vec![Value::Int(1), Value::Float(2.5)],
            vec![Value::Int(2), Value::Float(0.25)],
        ]
    );
    assert_eq!(ints(&c.query(count, &[]).unwrap().rows()), vec![vec![2]]);
    assert_eq!(total_rows_stored(&c), 2);

    // Dropping one table leaves the others alone.
    c.execute("CREATE TABLE keep (id BIGINT PRIMARY KEY)")
        .unwrap();
    c.execute("INSERT INTO keep VALUES (7), (8)").unwrap();
    c.execute("DROP TABLE gadgets").unwrap();
    assert_eq!(
        ints(
            &c.query("SELECT id FROM keep ORDER BY id", &[])
                .unwrap()
                .rows()
        ),
        vec![vec![7], vec![8]]
    );
    assert_eq!(total_rows_stored(&c), 2);
    assert_idle(&c);
}

#[test]
fn create_table_errors_name_what_is_wrong() {
    let c = cluster(2);
    c.execute("CREATE TABLE dup (id BIGINT PRIMARY KEY)")
        .unwrap();
    let e = c
        .execute("CREATE TABLE dup (id BIGINT PRIMARY KEY)")
        .unwrap_err()
        .to_string();
    assert!(e.contains("dup"), "{e}");
    // Table names are case-insensitive.
    let e = c
        .execute("CREATE TABLE DUP (id BIGINT PRIMARY KEY)")
        .unwrap_err()
        .to_string();
    assert!(e.to_lowercase().contains("dup"), "{e}");
    c.execute("INSERT INTO Dup VALUES (1)").unwrap();
    assert_eq!(
        ints(&c.query("SELECT COUNT(*) FROM DUP", &[]).unwrap().rows()),
        vec![vec![1]]
    );
    c.execute("DROP TABLE DUP").unwrap();
    let e = c.query("SELECT * FROM dup", &[]).unwrap_err().to_string();
    assert!(e.contains("dup"), "{e}");
    assert_idle(&c);
}

/// `items(id, cat, name)`: `cat = id % 50`.
fn load_items(c: &weir::Cluster, ids: std::ops::Range<i64>) {
    let rows: Vec<Vec<Value>> = ids
        .map(|id| {
            vec![
                Value::Int(id),
                Value::Int(id % 50),
                Value::Str(format!("item{id}")),
            ]
        })
        .collect();
    let batch =
        Batch::from_rows(&[DataType::Int64, DataType::Int64, DataType::Utf8], &rows).unwrap();
    c.load("items", batch).unwrap();
}

#[test]
fn index_created_after_loading_is_used_and_gives_the_same_rows() {
    let c = cluster(3);
    c.execute("CREATE TABLE items (id BIGINT PRIMARY KEY, cat BIGINT, name VARCHAR)")
        .unwrap();
    load_items(&c, 0..5000);

    let queries: [(&str, Vec<Value>); 4] = [
        (
            "SELECT id, name FROM items WHERE cat = 7 ORDER BY id",
            vec![],
        ),
        (
            "SELECT id FROM items WHERE cat BETWEEN $1 AND $2 ORDER BY id",
            vec![Value::Int(3), Value::Int(5)],
        ),
        (
            "SELECT id FROM items WHERE cat IN (1, 49, 77) ORDER BY id",
            vec![],
        ),
        (
            "SELECT COUNT(*), SUM(id) FROM items WHERE cat >= ? AND cat < ? AND id > 100",
            vec![Value::Int(10), Value::Int(12)],
        ),
    ];
    let before: Vec<Vec<Vec<Value>>> = queries
        .iter()
        .map(|(sql, p)| {
            let plan = c.explain(sql, p).unwrap();
            assert!(!plan.contains("index on cat"), "no index yet:\n{plan}");
            c.query(sql, p).unwrap().rows()
        })
        .collect();
    // Sanity: the answers are the expected ones.
    let want7: Vec<Vec<Value>> = (0..5000)
        .filter(|id| id % 50 == 7)
        .map(|id| vec![Value::Int(id), Value::Str(format!("item{id}"))])
        .collect();
    assert_eq!(before[0], want7);
    assert_eq!(before[1].len(), 300);
    assert_eq!(before[2].len(), 200);

    c.execute("CREATE INDEX items_cat ON items (cat)").unwrap();
    let e = c
        .execute("CREATE INDEX items_cat ON items (cat)")
        .unwrap_err()
        .to_string();
    assert!(e.contains("items_cat"), "{e}");
    let e = c
        .execute("CREATE INDEX nope ON no_such_table (cat)")
        .unwrap_err()
        .to_string();
    assert!(e.contains("no_such_table"), "{e}");
    let e = c
        .execute("CREATE INDEX nope ON items (no_such_column)")
        .unwrap_err()
        .to_string();
    assert!(e.contains("no_such_column"), "{e}");

    for ((sql, p), want) in queries.iter().zip(&before) {
        let plan = c.explain(sql, p).unwrap();
        assert!(
            plan.contains("IndexScan items") && plan.contains("index on cat"),
            "{sql} does not use the index:\n{plan}"
        );
        assert_eq!(&c.query(sql, p).unwrap().rows(), want, "{sql}");
    }

    // Rows loaded after the index was created are found through it too.
    load_items(&c, 5000..5100);
    c.execute("INSERT INTO items VALUES (9000, 7, 'late')")
        .unwrap();
    let r = c.query(queries[0].0, &[]).unwrap().rows();
    assert_eq!(r.len(), want7.len() + 3);
    assert_eq!(
        r[r.len() - 3..][0],
        vec![Value::Int(5007), "item5007".into()]
    );
    assert_eq!(r.last().unwrap(), &vec![Value::Int(9000), "late".into()]);

    // The index goes with the table: after drop and re-create, no index, same name is free.
    c.execute("DROP TABLE items").unwrap();
    c.execute("CREATE TABLE items (id BIGINT PRIMARY KEY, cat BIGINT, name VARCHAR)")
        .unwrap();
    let plan = c.explain(queries[0].0, &[]).unwrap();
    assert!(!plan.contains("IndexScan"), "{plan}");
    c.execute("CREATE INDEX items_cat ON items (cat)").unwrap();
    assert_eq!(c.query(queries[0].0, &[]).unwrap().num_rows(), 0);
    assert_idle(&c);
}

#[test]
fn explain_through_query_lists_fragments_operators_and_nodes() {
    let c = cluster(3);
    c.execute("CREATE TABLE customers (id BIGINT PRIMARY KEY, region VARCHAR)")
        .unwrap();
    c.execute("CREATE TABLE orders (id BIGINT PRIMARY KEY, cust BIGINT, amount BIGINT)")
        .unwrap();
    c.execute("INSERT INTO customers VALUES (1, 'north'), (2, 'south')")
        .unwrap();
    c.execute("INSERT INTO orders VALUES (10, 1, 5), (11, 1, 7), (12, 2, 1)")
        .unwrap();
    let select = "SELECT c.region, COUNT(*), SUM(o.amount) FROM orders o \
                  JOIN customers c ON o.cust = c.id GROUP BY c.region";
    let started = c.stats().queries_started;
    let r = c.query(&format!("EXPLAIN {select}"), &[]).unwrap();
    assert_eq!(r.column_names(), vec!["plan"]);
    let lines: Vec<String> = r
        .rows()
        .into_iter()
        .map(|row| match &row[..] {
            [Value::Str(s)] => s.clone(),
            other => panic!("EXPLAIN row is not one string: {other:?}"),
        })
        .collect();
    let text = lines.join("\n");
    assert!(lines.len() > 3, "{text}");
    for needle in [
        "Fragment",
        "Scan orders",
        "Scan customers",
        "HashJoin",
        "HashAggregate",
        "Exchange",
        "node-0",
        "node-1",
        "node-2",
        "client",
    ] {
        assert!(text.contains(needle), "missing {needle}:\n{text}");
    }
    let fragments = lines.iter().filter(|l| l.starts_with("Fragment")).count();
    assert!(fragments >= 2, "{text}");
    // Same plan as Cluster::explain, and nothing was run.
    assert_eq!(c.explain(select, &[]).unwrap().trim_end(), text.trim_end());
    assert_eq!(c.stats().queries_started, started, "EXPLAIN ran the query");
    // execute() accepts EXPLAIN too and returns no rows count.
    assert_eq!(c.execute(&format!("EXPLAIN {select}")).unwrap(), 0);

    // The query itself gives the right answer.
    let mut rows = c.query(select, &[]).unwrap().rows();
    rows.sort_by(|a, b| a[0].sort_cmp(&b[0]));
    assert_eq!(
        rows,
        vec![
            vec!["north".into(), Value::Int(2), Value::Int(12)],
            vec!["south".into(), Value::Int(1), Value::Int(1)],
        ]
    );

    // EXPLAIN with a parameter, pruned to the owner of one key.
    let r = c
        .query(
            "EXPLAIN SELECT amount FROM orders WHERE id = $1",
            &[Value::Int(11)],
        )
        .unwrap();
    let text: Vec<String> = r.rows().iter().map(|row| row[0].to_string()).collect();
    let text = text.join("\n");
    assert!(
        text.contains("Scan orders") || text.contains("IndexScan orders"),
        "{text}"
    );
    assert!(text.contains("node-"), "{text}");
    assert_idle(&c);
}

#[test]
fn parameters_with_dollar_and_question_marks() {
    let c = cluster(3);
    c.execute("CREATE TABLE p (id BIGINT PRIMARY KEY, name VARCHAR, score DOUBLE)")
        .unwrap();
    // Parameters in INSERT.
    for (id, name, score) in [(1, "ann", 1.5), (2, "bob", 2.5), (3, "cy", 3.5)] {
        assert_eq!(
            c.execute_with(
                "INSERT INTO p VALUES ($1, $2, $3)",
                &[Value::Int(id), name.into(), Value::Float(score)],
            )
            .unwrap(),
            1
        );
    }
    c.execute_with(
        "INSERT INTO p VALUES (?, ?, ?)",
        &[Value::Int(4), "dee".into(), Value::Int(4)],
    )
    .unwrap();

    let q = |sql: &str, params: &[Value]| c.query(sql, params).unwrap().rows();
    assert_eq!(
        q("SELECT name FROM p WHERE id = $1", &[Value::Int(2)]),
        vec![vec![Value::from("bob")]]
    );
    assert_eq!(
        q("SELECT name FROM p WHERE id = ?", &[Value::Int(3)]),
        vec![vec![Value::from("cy")]]
    );
    // Reused out of order and more than once.
    assert_eq!(
        ints(&q(
            "SELECT id FROM p WHERE id >= $2 AND id <= $1 AND id <> $2 ORDER BY id",
            &[Value::Int(4), Value::Int(1)],
        )),
        vec![vec![2], vec![3], vec![4]]
    );
    assert_eq!(
        ints(&q(
            "SELECT id FROM p WHERE id BETWEEN ? AND ? ORDER BY id",
            &[Value::Int(2), Value::Int(3)],
        )),
        vec![vec![2], vec![3]]
    );
    // An integer value for a DOUBLE parameter.
    assert_eq!(
        ints(&q(
            "SELECT id FROM p WHERE score > $1 ORDER BY id",
            &[Value::Int(2)]
        )),
        vec![vec![2], vec![3], vec![4]]
    );
    assert_eq!(
        q("SELECT score FROM p WHERE id = 4", &[]),
        vec![vec![Value::Float(4.0)]]
    );
    assert_eq!(
        ints(&q(
            "SELECT id FROM p WHERE name LIKE $1 OR name = $2 ORDER BY id",
            &["b%".into(), "cy".into()],
        )),
        vec![vec![2], vec![3]]
    );
    // The same text with new values (a cached plan) follows the new values.
    for id in 1..=4 {
        assert_eq!(
            ints(&q("SELECT id FROM p WHERE id = $1", &[Value::Int(id)])),
            vec![vec![id]]
        );
    }
    assert!(q("SELECT id FROM p WHERE id = $1", &[Value::Int(99)]).is_empty());
    // A NULL parameter compares as NULL: no rows.
    assert!(q("SELECT id FROM p WHERE id = $1", &[Value::Null]).is_empty());
    // Too few values is an error naming the counts.
    let e = c
        .query(
            "SELECT id FROM p WHERE id = $1 OR id = $2",
            &[Value::Int(1)],
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains('2') && e.contains('1'), "{e}");
    assert_idle(&c);
}

#[test]
fn query_without_from() {
    let c = cluster(3);
    let q = |sql: &str, params: &[Value]| c.query(sql, params).unwrap().rows();
    assert_eq!(q("SELECT 1 + 2", &[]), vec![vec![Value::Int(3)]]);
    assert_eq!(
        q("SELECT 2 * 3, 'x', 1.5, 7 % 4", &[]),
        vec![vec![
            Value::Int(6),
            Value::from("x"),
            // A numeral with a point is an exact DECIMAL (scale 1), as in PostgreSQL.
            Value::Decimal(15, 1),
            Value::Int(3)
        ]]
    );
    assert_eq!(
        q("SELECT $1 + 1", &[Value::Int(41)]),
        vec![vec![Value::Int(42)]]
    );
    assert_eq!(q("SELECT NULL IS NULL", &[]), vec![vec![Value::Bool(true)]]);
    assert_eq!(c.execute("SELECT 1 + 2").unwrap(), 1);
    assert_idle(&c);
}

#[test]
fn insert_null_into_non_key_column() {
    let c = cluster(3);
    c.execute("CREATE TABLE n (id BIGINT PRIMARY KEY, x BIGINT, s VARCHAR, f DOUBLE, b BOOLEAN)")
        .unwrap();
    c.execute(
        "INSERT INTO n VALUES (1, NULL, 'one', 1.5, TRUE), (2, 20, NULL, NULL, NULL), (3, 30, 'three', 3.5, FALSE)",
    )
    .unwrap();
    // A column list that leaves columns out fills them with NULL.
    c.execute("INSERT INTO n (id, s) VALUES (4, 'four')")
        .unwrap();
    c.execute_with(
        "INSERT INTO n VALUES ($1, $2, $3, $4, $5)",
        &[
            Value::Int(5),
            Value::Null,
            Value::Null,
            Value::Float(5.0),
            Value::Bool(true),
        ],
    )
    .unwrap();

    let rows = c.query("SELECT * FROM n ORDER BY id", &[]).unwrap().rows();
    assert_eq!(
        rows,
        vec![
            vec![1.into(), Value::Null, "one".into(), 1.5.into(), true.into()],
            vec![2.into(), 20.into(), Value::Null, Value::Null, Value::Null],
            vec![
                3.into(),
                30.into(),
                "three".into(),
                3.5.into(),
                false.into()
            ],
            vec![
                4.into(),
                Value::Null,
                "four".into(),
                Value::Null,
                Value::Null
            ],
            vec![5.into(), Value::Null, Value::Null, 5.0.into(), true.into()],
        ]
    );
    let q = |sql: &str| c.query(sql, &[]).unwrap().rows();
    assert_eq!(
        ints(&q("SELECT id FROM n WHERE x IS NULL ORDER BY id")),
        vec![vec![1], vec![4], vec![5]]
    );
    assert_eq!(
        ints(&q("SELECT id FROM n WHERE s IS NOT NULL ORDER BY id")),
        vec![vec![1], vec![3], vec![4]]
    );
    // NULLs never satisfy a comparison, even a negated one.
    assert_eq!(ints(&q("SELECT id FROM n WHERE x <> 20")), vec![vec![3]]);
    assert_eq!(
        ints(&q("SELECT id FROM n WHERE NOT (x = 20)")),
        vec![vec![3]]
    );
    assert_eq!(
        q("SELECT COUNT(*), COUNT(x), SUM(x), COUNT(s), COUNT(f), COUNT(b) FROM n"),
        vec![vec![
            Value::Int(5),
            Value::Int(2),
            Value::Int(50),
            Value::Int(3),
            Value::Int(3),
            Value::Int(3)
        ]]
    );
    assert_eq!(
        q("SELECT SUM(x), MIN(s), MAX(f) FROM n WHERE x IS NULL"),
        vec![vec![Value::Null, "four".into(), 5.0.into()]]
    );

    // NULL in the key is rejected, and nothing of that statement is inserted.
    let e = c
        .execute("INSERT INTO n VALUES (6, 1, 'six', 0.0, TRUE), (NULL, 2, 'x', 0.0, TRUE)")
        .unwrap_err();
    assert_eq!(
        e,
        Error::NullKey {
            table: "n".into(),
            column: "id".into()
        }
    );
    assert_eq!(e.to_string(), "primary key id cannot be NULL in table n");
    assert_eq!(ints(&q("SELECT COUNT(*) FROM n")), vec![vec![5]]);
    assert_idle(&c);
}

/// Every row of `sql`, sorted.
/// `sql`'s rows, sorted for order-independent comparison.
fn query_sorted(c: &weir::Cluster, sql: &str) -> Vec<Vec<Value>> {
    common::sorted_rows(c.query(sql, &[]).unwrap().rows())
}

#[test]
fn a_table_without_a_primary_key_keeps_every_row() {
    let c = cluster(3);
    c.execute("CREATE TABLE t (a BIGINT, b VARCHAR)").unwrap();
    // Repeated first column, whole repeated rows and NULLs, in one multi-row INSERT.
    assert_eq!(
        c.execute(
            "INSERT INTO t VALUES (1, 'x'), (1, 'y'), (1, 'x'), (NULL, 'n'), (NULL, NULL), (2, NULL)"
        )
        .unwrap(),
        6
    );
    // The same rows again, through INSERT and through load().
    c.execute("INSERT INTO t VALUES (1, 'x'), (NULL, NULL)")
        .unwrap();
    let batch = Batch::from_rows(
        &[DataType::Int64, DataType::Utf8],
        &[vec![1.into(), "x".into()], vec![Value::Null, Value::Null]],
    )
    .unwrap();
    assert_eq!(c.load("t", batch).unwrap(), 2);
    let x = || vec![Value::Int(1), Value::from("x")];
    let nulls = || vec![Value::Null, Value::Null];
    assert_eq!(
        query_sorted(&c, "SELECT a, b FROM t"),
        vec![
            nulls(),
            nulls(),
            nulls(),
            vec![Value::Null, "n".into()],
            x(),
            x(),
            x(),
            x(),
            vec![1.into(), "y".into()],
            vec![2.into(), Value::Null],
        ]
    );
    assert_eq!(total_rows_stored(&c), 10);
    // Equality on the first column finds every copy, wherever it was placed.
    assert_eq!(
        ints(
            &c.query("SELECT COUNT(*) FROM t WHERE a = 1", &[])
                .unwrap()
                .rows()
        ),
        vec![vec![5]]
    );
    assert_eq!(
        ints(
            &c.query("SELECT COUNT(*) FROM t WHERE a = $1", &[Value::Int(1)])
                .unwrap()
                .rows()
        ),
        vec![vec![5]]
    );
    assert_eq!(
        ints(
            &c.query("SELECT COUNT(*) FROM t WHERE a IN (1, 2)", &[])
                .unwrap()
                .rows()
        ),
        vec![vec![6]]
    );
    // Through a secondary index too.
    c.execute("CREATE INDEX t_b ON t (b)").unwrap();
    let plan = c.explain("SELECT a FROM t WHERE b = 'x'", &[]).unwrap();
    assert!(plan.contains("IndexScan t"), "{plan}");
    assert_eq!(
        ints(
            &c.query("SELECT a FROM t WHERE b = 'x'", &[])
                .unwrap()
                .rows()
        ),
        vec![vec![1]; 4]
    );

    // Rows are placed by hidden row ids that continue from statement to statement, so one
    // row inserted again and again spreads over every node instead of piling up on one.
    c.execute("CREATE TABLE same (v BIGINT)").unwrap();
    for _ in 0..60 {
        assert_eq!(c.execute("INSERT INTO same VALUES (7)").unwrap(), 1);
    }
    assert_eq!(
        ints(
            &c.query("SELECT COUNT(*), SUM(v) FROM same", &[])
                .unwrap()
                .rows()
        ),
        vec![vec![60, 420]]
    );
    // The three data nodes (the client node holds no data).
    let per_node: Vec<usize> = c.stats().nodes[..3].iter().map(|n| n.rows_stored).collect();
    assert_eq!(per_node.iter().sum::<usize>(), 70);
    assert!(
        per_node.iter().all(|&n| n > 10),
        "rows of a keyless table piled up: {per_node:?}"
    );
    assert_idle(&c);
}

#[test]
fn a_declared_key_refuses_duplicates_and_nulls_naming_key_and_value() {
    let c = cluster(3);
    c.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, v VARCHAR)")
        .unwrap();
    c.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
        .unwrap();
    let before = query_sorted(&c, "SELECT id, v FROM t");
    let dup = |value: i64| Error::DuplicateKey {
        table: "t".into(),
        column: "id".into(),
        value: Value::Int(value),
    };

    // One duplicate of a stored key among many new rows: none of them is inserted.
    let many: Vec<String> = (10..60).map(|i| format!("({i}, 'new')")).collect();
    let sql = format!(
        "INSERT INTO t VALUES {}, (3, 'again'), {}",
        many[..25].join(", "),
        many[25..].join(", ")
    );
    let e = c.execute(&sql).unwrap_err();
    assert_eq!(e, dup(3));
    assert_eq!(e.to_string(), "duplicate primary key id = 3 in table t");
    assert_eq!(e.kind(), "duplicate_key");
    assert_eq!(query_sorted(&c, "SELECT id, v FROM t"), before);
    // Two rows of one statement with the same key.
    let e = c
        .execute("INSERT INTO t VALUES (70, 'x'), (71, 'y'), (70, 'z')")
        .unwrap_err();
    assert_eq!(e, dup(70));
    assert_eq!(query_sorted(&c, "SELECT id, v FROM t"), before);
    // A NULL key, also through a parameter.
    let null = Error::NullKey {
        table: "t".into(),
        column: "id".into(),
    };
    let e = c
        .execute("INSERT INTO t VALUES (80, 'x'), (NULL, 'y')")
        .unwrap_err();
    assert_eq!(e, null);
    assert_eq!(e.kind(), "null_key");
    assert_eq!(
        c.execute_with("INSERT INTO t VALUES ($1, 'p')", &[Value::Null])
            .unwrap_err(),
        null
    );
    assert_eq!(
        c.execute("INSERT INTO t (v) VALUES ('no key')")
            .unwrap_err(),
        null
    );
    assert_eq!(c.execute("INSERT INTO t DEFAULT VALUES").unwrap_err(), null);
    // The same errors from load().
    let batch = |ids: Vec<Value>| {
        let rows: Vec<Vec<Value>> = ids.into_iter().map(|i| vec![i, "l".into()]).collect();
        Batch::from_rows(&[DataType::Int64, DataType::Utf8], &rows).unwrap()
    };
    assert_eq!(
        c.load("t", batch(vec![90.into(), 2.into()])).unwrap_err(),
        dup(2)
    );
    assert_eq!(
        c.load("t", batch(vec![91.into(), Value::Null]))
            .unwrap_err(),
        null
    );
    assert_eq!(query_sorted(&c, "SELECT id, v FROM t"), before);
    assert_eq!(total_rows_stored(&c), 3);
    // The table still takes new keys.
    c.execute("INSERT INTO t VALUES (4, 'd')").unwrap();
    assert_eq!(
        ints(
            &c.query("SELECT id FROM t WHERE id = 4", &[])
                .unwrap()
                .rows()
        ),
        vec![vec![4]]
    );

    // A string key is shown as a quoted literal.
    c.execute("CREATE TABLE s (k VARCHAR PRIMARY KEY, n BIGINT)")
        .unwrap();
    c.execute("INSERT INTO s VALUES ('a', 1), ('it''s', 2)")
        .unwrap();
    let e = c
        .execute("INSERT INTO s VALUES ('z', 3), ('it''s', 4)")
        .unwrap_err();
    assert_eq!(
        e,
        Error::DuplicateKey {
            table: "s".into(),
            column: "k".into(),
            value: "it's".into()
        }
    );
    assert_eq!(
        e.to_string(),
        "duplicate primary key k = 'it''s' in table s"
    );
    assert_eq!(
        ints(&c.query("SELECT SUM(n) FROM s", &[]).unwrap().rows()),
        vec![vec![3]]
    );
    assert_idle(&c);
}

#[test]
fn replace_and_other_conflict_clauses_are_refused_not_run_as_insert() {
    let c = cluster(3);
    c.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, v VARCHAR)")
        .unwrap();
    c.execute("CREATE TABLE k (id BIGINT, v VARCHAR)").unwrap();
    c.execute("INSERT INTO t VALUES (1, 'old')").unwrap();
    c.execute("INSERT INTO k VALUES (1, 'old')").unwrap();
    for (sql, what) in [
        (
            "REPLACE INTO {} VALUES (1, 'new'), (2, 'two')",
            "REPLACE INTO",
        ),
        (
            "INSERT OR REPLACE INTO {} VALUES (1, 'new'), (2, 'two')",
            "INSERT OR REPLACE",
        ),
        (
            "INSERT OR IGNORE INTO {} VALUES (1, 'new'), (2, 'two')",
            "INSERT OR IGNORE",
        ),
        (
            "INSERT IGNORE INTO {} VALUES (1, 'new'), (2, 'two')",
            "INSERT IGNORE",
        ),
        (
            "INSERT INTO {} VALUES (1, 'new') ON DUPLICATE KEY UPDATE v = 'new'",
            "ON DUPLICATE KEY UPDATE",
        ),
        (
            "INSERT INTO {} VALUES (2, 'two'), (3, 'three') LIMIT 1",
            "LIMIT 1 in INSERT ... VALUES",
        ),
    ] {
        for table in ["t", "k"] {
            let sql = sql.replace("{}", table);
            match c.execute(&sql).unwrap_err() {
                Error::Plan(PlanError::Unsupported {
                    what: got,
                    position,
                }) => {
                    assert_eq!(got, what, "{sql}");
                    assert!(position.starts_with("line 1"), "{sql}: {position}");
                }
                other => panic!("{sql}: {other:?}"),
            }
            assert_eq!(
                c.query(&format!("SELECT id, v FROM {table}"), &[])
                    .unwrap()
                    .rows(),
                vec![vec![Value::Int(1), "old".into()]],
                "{sql} changed the table"
            );
        }
    }
    assert_idle(&c);
}

#[test]
fn insert_forms_that_work_and_create_table_clauses_that_are_refused() {
    let c = cluster(2);
    c.execute("CREATE TABLE t (id BIGINT NOT NULL PRIMARY KEY, name VARCHAR NULL, x DOUBLE)")
        .unwrap();
    // Column lists in any order, DEFAULT, and omitted columns.
    c.execute("INSERT INTO t (x, id, name) VALUES (1.5, 1, 'one')")
        .unwrap();
    c.execute("INSERT INTO t (name, id) VALUES ('two', 2)")
        .unwrap();
    c.execute("INSERT INTO t VALUES (3, DEFAULT, 3)").unwrap();
    assert_eq!(
        query_sorted(&c, "SELECT id, name, x FROM t"),
        vec![
            vec![1.into(), "one".into(), 1.5.into()],
            vec![2.into(), "two".into(), Value::Null],
            vec![3.into(), Value::Null, 3.0.into()],
        ]
    );
    // IF NOT EXISTS on an existing table leaves it, its schema and its rows alone.
    c.execute("CREATE TABLE IF NOT EXISTS t (other BIGINT)")
        .unwrap();
    let r = c.query("SELECT * FROM t", &[]).unwrap();
    assert_eq!(r.column_names(), vec!["id", "name", "x"]);
    assert_eq!(r.num_rows(), 3);
    // A keyless table takes DEFAULT VALUES: a row of NULLs.
    c.execute("CREATE TABLE k (a BIGINT, b VARCHAR)").unwrap();
    c.execute("INSERT INTO k DEFAULT VALUES").unwrap();
    c.execute("INSERT INTO k DEFAULT VALUES").unwrap();
    assert_eq!(
        query_sorted(&c, "SELECT a, b FROM k"),
        vec![vec![Value::Null, Value::Null]; 2]
    );

    // Clauses weir would not enforce are errors naming them, and create nothing.
    for (sql, what) in [
        (
            "CREATE TABLE n (a BIGINT GENERATED ALWAYS AS (1) STORED)",
            "GENERATED ALWAYS AS (1) STORED on column 'a'",
        ),
        (
            "CREATE TABLE n (a BIGINT, CHECK (a > 0) NO INHERIT)",
            "CHECK (a > 0) NO INHERIT in CREATE TABLE",
        ),
        (
            "CREATE TABLE n (a BIGINT) PARTITION BY (a)",
            "PARTITION BY (a) in CREATE TABLE",
        ),
        (
            "CREATE TEMPORARY TABLE n (a BIGINT)",
            "TEMPORARY in CREATE TABLE",
        ),
    ] {
        match c.execute(sql).unwrap_err() {
            Error::Plan(PlanError::Unsupported { what: got, .. }) => {
                assert_eq!(got, what, "{sql}")
            }
            other => panic!("{sql}: {other:?}"),
        }
    }
    assert!(c.tables().iter().all(|t| t.name != "n"));
    let plan = c
        .explain("SELECT id FROM t WHERE name = 'one'", &[])
        .unwrap();
    assert!(!plan.contains("IndexScan"), "{plan}");
    assert_idle(&c);
}

#[test]
fn dates_and_decimals_as_parameters_keys_and_results() {
    let c = cluster(3);
    c.execute("CREATE TABLE s (d DATE PRIMARY KEY, price DECIMAL(8,2), at TIMESTAMP)")
        .unwrap();
    let day = |s: &str| Value::Date(weir::operators::temporal::parse_date(s).unwrap());
    let n = c
        .execute_with(
            "INSERT INTO s VALUES (?, ?, ?), (?, ?, NULL)",
            &[
                day("1994-01-01"),
                Value::Decimal(125, 1),
                Value::from("1994-01-01 10:00:00"),
                day("1994-02-01"),
                Value::Int(3),
            ],
        )
        .unwrap();
    assert_eq!(n, 2);
    let q = |sql: &str, params: &[Value]| c.query(sql, params).unwrap().rows();
    // The DECIMAL(8,2) column keeps its scale: 12.5 is stored as 12.50, 3 as 3.00.
    assert_eq!(
        q("SELECT price FROM s ORDER BY d", &[]),
        vec![vec![Value::Decimal(1250, 2)], vec![Value::Decimal(300, 2)]]
    );
    // A DATE key looked up by a parameter (partition pruning hashes it as stored).
    assert_eq!(
        q("SELECT price FROM s WHERE d = ?", &[day("1994-02-01")]),
        vec![vec![Value::Decimal(300, 2)]]
    );
    // A decimal parameter of another scale compares by value.
    assert_eq!(
        q("SELECT d FROM s WHERE price = ?", &[Value::Decimal(125, 1)]),
        vec![vec![day("1994-01-01")]]
    );
    assert_eq!(
        q(
            "SELECT count(*) FROM s WHERE d >= ? AND d < ? + INTERVAL '1' MONTH",
            &[day("1994-01-15"), day("1994-01-15")]
        ),
        vec![vec![Value::Int(1)]]
    );
    let r = c
        .query("SELECT at, sum(price) FROM s GROUP BY at ORDER BY at", &[])
        .unwrap();
    assert_eq!(r.schema.fields[1].data_type, DataType::decimal(38, 2));
    assert_eq!(r.rows()[0][0].to_string(), "1994-01-01 10:00:00");
    assert_eq!(r.rows()[1][0], Value::Null);
    let e = c
        .execute_with("INSERT INTO s VALUES (?, 1, NULL)", &[Value::Float(1.5)])
        .unwrap_err();
    assert!(e.to_string().contains("DATE"), "{e}");
    assert_idle(&c);
}

#[test]
fn a_unique_index_refuses_a_second_row_with_its_values() {
    let c = cluster(3);
    c.execute("CREATE TABLE u (id BIGINT PRIMARY KEY, a BIGINT, b VARCHAR)")
        .unwrap();
    c.execute("INSERT INTO u VALUES (1, 10, 'x'), (2, 10, 'y'), (3, NULL, 'x'), (4, NULL, 'x')")
        .unwrap();
    // The stored rows clash on (a): no index.
    let e = c.execute("CREATE UNIQUE INDEX ua ON u (a)").unwrap_err();
    assert_eq!(
        e.to_string(),
        "duplicate value a = 10 for unique index ua in table u"
    );
    assert!(matches!(e, Error::DuplicateUnique { .. }), "{e:?}");
    // On (a, b) they do not: NULLs never clash.
    c.execute("CREATE UNIQUE INDEX uab ON u (a, b)").unwrap();
    let e = c
        .execute("INSERT INTO u VALUES (5, 20, 'z'), (6, 10, 'x')")
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "duplicate value (a, b) = (10, 'x') for unique index uab in table u"
    );
    // Nothing of the statement was stored; two equal rows in one statement clash too.
    assert_eq!(
        ints(&c.query("SELECT COUNT(*) FROM u", &[]).unwrap().rows()),
        vec![vec![4]]
    );
    let e = c
        .execute("INSERT INTO u VALUES (5, 20, 'z'), (6, 20, 'z')")
        .unwrap_err();
    assert!(matches!(e, Error::DuplicateUnique { .. }), "{e:?}");
    c.execute("INSERT INTO u VALUES (5, 20, 'z'), (6, NULL, 'z'), (7, NULL, 'z')")
        .unwrap();
    // An UPDATE: a row may keep its own values, not take those of a row left in place.
    c.execute("UPDATE u SET b = 'x' WHERE id = 1").unwrap();
    let e = c.execute("UPDATE u SET b = 'y' WHERE id = 1").unwrap_err();
    assert!(matches!(e, Error::DuplicateUnique { .. }), "{e:?}");
    c.execute("UPDATE u SET a = a + 1 WHERE a IS NOT NULL")
        .unwrap();
    assert_eq!(
        query_sorted(&c, "SELECT id, a, b FROM u WHERE a IS NOT NULL"),
        vec![
            vec![Value::Int(1), Value::Int(11), "x".into()],
            vec![Value::Int(2), Value::Int(11), "y".into()],
            vec![Value::Int(5), Value::Int(21), "z".into()],
        ]
    );
    // A multi-column index is used through its first column.
    let plan = c
        .explain("SELECT id FROM u WHERE a = 11 AND b = 'x'", &[])
        .unwrap();
    assert!(plan.contains("using index on a (a = 11)"), "{plan}");
    assert_eq!(
        ints(
            &c.query("SELECT id FROM u WHERE a = 11 AND b = 'x'", &[])
                .unwrap()
                .rows()
        ),
        vec![vec![1]]
    );
    // UNIQUE in CREATE TABLE, on a table without a primary key.
    c.execute("CREATE TABLE w (code VARCHAR UNIQUE, n BIGINT)")
        .unwrap();
    c.execute("INSERT INTO w VALUES ('a', 1), (NULL, 2), (NULL, 3)")
        .unwrap();
    let e = c.execute("INSERT INTO w VALUES ('a', 4)").unwrap_err();
    assert_eq!(
        e.to_string(),
        "duplicate value code = 'a' for unique index w_code_key in table w"
    );
    let e = c
        .execute("UPDATE w SET code = 'a' WHERE n = 2")
        .unwrap_err();
    assert!(matches!(e, Error::DuplicateUnique { .. }), "{e:?}");
    c.execute("UPDATE w SET code = 'b' WHERE n = 2").unwrap();
    assert_idle(&c);
}
