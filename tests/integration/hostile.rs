//! Hostile input: random token soup and mutations of valid SQL never panic or hang the cluster,
//! and extreme but legal inputs (very wide rows, very long strings, empty tables, NULL
//! everywhere, huge IN lists, deep nesting) either work correctly or fail with a clear error.

use crate::common;

use common::{assert_idle, ints, TestCluster};
use proptest::prelude::*;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};
use weir::{Batch, Cluster, DataType, Error, Value};

/// Longest any single statement may take: half the cluster's query timeout, so a hang
/// shows as a failure rather than as a timeout error, and a 1,000-level expression in a
/// debug build on a busy 2-core machine (about 1 s when quiet) still has room.
const STATEMENT_LIMIT: Duration = Duration::from_secs(10);

/// Rows in the fuzzed table `t`.
const T_ROWS: i64 = 200;

/// Every statement runs under the watchdog with [`STATEMENT_LIMIT`].
fn build(nodes: usize) -> TestCluster {
    TestCluster::new(
        Cluster::builder()
            .nodes(nodes)
            .partitions(16)
            .query_timeout(Duration::from_secs(20))
            .build()
            .expect("cluster starts"),
    )
    .with_limit(STATEMENT_LIMIT)
}

/// `t(id, name, x, d, b)`, `u(id, t_id, y)`, the empty `e` and the all-NULL `n` (fuzzed),
/// plus `guard`, which the fuzzer never names, for the known answer.
fn create_tables(c: &TestCluster) {
    c.execute(
        "CREATE TABLE t (id BIGINT PRIMARY KEY, name VARCHAR, x BIGINT, d DOUBLE, b BOOLEAN)",
    )
    .unwrap();
    c.execute("CREATE INDEX t_x ON t (x)").unwrap();
    let rows: Vec<Vec<Value>> = (0..T_ROWS)
        .map(|i| {
            vec![
                Value::Int(i),
                if i % 7 == 0 {
                    Value::Null
                } else {
                    Value::from(format!("n{}", i % 13))
                },
                if i % 11 == 0 {
                    Value::Null
                } else {
                    Value::Int(i % 17)
                },
                Value::Float(i as f64 * 0.5),
                Value::Bool(i % 2 == 0),
            ]
        })
        .collect();
    let types = [
        DataType::Int64,
        DataType::Utf8,
        DataType::Int64,
        DataType::Float64,
        DataType::Boolean,
    ];
    c.load("t", Batch::from_rows(&types, &rows).unwrap())
        .unwrap();
    c.execute("CREATE TABLE u (id BIGINT PRIMARY KEY, t_id BIGINT, y BIGINT)")
        .unwrap();
    let rows: Vec<Vec<Value>> = (0..100)
        .map(|i| vec![Value::Int(i), Value::Int(i * 3 % 250), Value::Int(i % 5)])
        .collect();
    c.load("u", Batch::from_rows(&[DataType::Int64; 3], &rows).unwrap())
        .unwrap();
    c.execute("CREATE TABLE e (id BIGINT PRIMARY KEY, x BIGINT, d DOUBLE, s VARCHAR, f BOOLEAN)")
        .unwrap();
    c.execute("CREATE TABLE n (id BIGINT PRIMARY KEY, a BIGINT, d DOUBLE, s VARCHAR, f BOOLEAN)")
        .unwrap();
    c.execute("CREATE INDEX n_a ON n (a)").unwrap();
    for i in 0..20 {
        c.execute(&format!(
            "INSERT INTO n VALUES ({i}, NULL, NULL, NULL, NULL)"
        ))
        .unwrap();
    }
    c.execute("CREATE TABLE guard (id BIGINT PRIMARY KEY, v BIGINT)")
        .unwrap();
    c.execute("INSERT INTO guard VALUES (1, 10), (2, 20), (3, 30), (4, NULL)")
        .unwrap();
}

/// The shared cluster of the fuzz tests, and a lock so that only one test uses it at a time
/// (idleness is checked between statements).
fn shared() -> (&'static TestCluster, std::sync::MutexGuard<'static, ()>) {
    static CLUSTER: OnceLock<TestCluster> = OnceLock::new();
    static LOCK: Mutex<()> = Mutex::new(());
    let guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let c = CLUSTER.get_or_init(|| {
        let c = build(3);
        create_tables(&c);
        c
    });
    (c, guard)
}

/// The cluster still answers correctly and is back to its baseline.
fn check_healthy(c: &TestCluster) {
    let r = c
        .query(
            "SELECT COUNT(*), SUM(v), MAX(v) FROM guard WHERE id >= ?",
            &[Value::Int(2)],
        )
        .expect("the guard query still works");
    assert_eq!(
        r.rows(),
        vec![vec![Value::Int(3), Value::Int(50), Value::Int(30)]]
    );
    let r = c
        .query(
            "SELECT t.id, u.y FROM t JOIN u ON t.id = u.t_id WHERE u.id < 3 ORDER BY t.id",
            &[],
        )
        .expect("the guard join still works");
    assert_eq!(ints(&r.rows()), vec![vec![0, 0], vec![3, 1], vec![6, 2]]);
    assert!(
        c.wait_idle(Duration::from_secs(5)),
        "not idle: {:?}",
        c.stats().nodes
    );
}

/// Runs one hostile statement: it must end in `Ok` or `Err` within [`STATEMENT_LIMIT`], and an
/// error must not be a timeout (that would be a hang in disguise).
fn run_hostile(c: &TestCluster, sql: &str, params: &[Value], as_query: bool) {
    // Dropping the fuzzed tables would only make later inputs less interesting.
    if sql.to_lowercase().contains("drop") {
        return;
    }
    let start = Instant::now();
    let outcome: Result<u64, Error> = if as_query {
        c.query(sql, params).map(|r| r.num_rows() as u64)
    } else {
        c.execute_with(sql, params)
    };
    let took = start.elapsed();
    assert!(took < STATEMENT_LIMIT, "{sql:?} took {took:?}");
    if let Err(e) = &outcome {
        assert!(
            !matches!(e, Error::Timeout(_) | Error::Codec(_) | Error::Shutdown),
            "{sql:?} failed badly: {e}"
        );
        assert!(!e.to_string().is_empty(), "{sql:?}: empty error message");
    }
}

/// Valid statements over the fuzzed tables, in the style of the rest of the test suite.
const CORPUS: &[&str] = &[
    "SELECT name FROM t WHERE x >= ?",
    "SELECT id, x FROM t",
    "SELECT * FROM t WHERE id = $1",
    "SELECT COUNT(*), SUM(x), AVG(d), MIN(name), MAX(b) FROM t",
    "SELECT x, COUNT(*) FROM t GROUP BY x HAVING COUNT(*) > 1 ORDER BY x",
    "SELECT name, SUM(x) AS s FROM t WHERE b GROUP BY name ORDER BY s DESC NULLS LAST LIMIT 5",
    "SELECT id FROM t ORDER BY d DESC, id LIMIT 10 OFFSET 3",
    "SELECT t.id, u.y FROM t JOIN u ON t.id = u.t_id WHERE u.y > 2",
    "SELECT t1.id FROM t t1 INNER JOIN t t2 ON t1.x = t2.id ORDER BY 1",
    "SELECT u.y, COUNT(*), SUM(t.x) FROM t JOIN u ON t.id = u.t_id GROUP BY u.y ORDER BY u.y",
    "SELECT id FROM t WHERE x IN (1, 2, 3) AND name LIKE 'n1%'",
    "SELECT id FROM t WHERE x BETWEEN 3 AND 9 OR name IS NULL",
    "SELECT id, x * 2 + 1, -d, CAST(x AS DOUBLE) / 3 FROM t WHERE NOT b",
    "SELECT CAST(id AS VARCHAR), x % 4 FROM t WHERE x IS NOT NULL ORDER BY 2, 1",
    "SELECT COUNT(*) FROM e",
    "SELECT SUM(x), MIN(s) FROM e GROUP BY f",
    "SELECT a, COUNT(*) FROM n GROUP BY a ORDER BY a NULLS FIRST",
    "SELECT n.id FROM n JOIN t ON n.a = t.x",
    "SELECT id FROM t WHERE x = ? AND name <> ?",
    "EXPLAIN SELECT x, COUNT(*) FROM t GROUP BY x",
    "INSERT INTO t VALUES (100000, 'z', 1, 1.5, TRUE)",
    "INSERT INTO u VALUES (?, ?, ?)",
    "CREATE TABLE fz (id BIGINT PRIMARY KEY, v VARCHAR)",
    "CREATE INDEX t_name ON t (name)",
    "SELECT 1 + 2, 'a', TRUE, NULL FROM t LIMIT 1",
];

const VOCABULARY: &[&str] = &[
    // Keywords.
    "SELECT",
    "FROM",
    "WHERE",
    "GROUP",
    "BY",
    "ORDER",
    "HAVING",
    "LIMIT",
    "OFFSET",
    "JOIN",
    "INNER",
    "LEFT",
    "CROSS",
    "ON",
    "AS",
    "AND",
    "OR",
    "NOT",
    "IS",
    "NULL",
    "IN",
    "BETWEEN",
    "LIKE",
    "CAST",
    "ASC",
    "DESC",
    "NULLS",
    "FIRST",
    "LAST",
    "DISTINCT",
    "UNION",
    "ALL",
    "INSERT",
    "INTO",
    "VALUES",
    "CREATE",
    "TABLE",
    "INDEX",
    "EXPLAIN",
    "PRIMARY",
    "KEY",
    "BIGINT",
    "INT",
    "DOUBLE",
    "VARCHAR",
    "TEXT",
    "BOOLEAN",
    "TRUE",
    "FALSE",
    "CASE",
    "WHEN",
    "THEN",
    "ELSE",
    "END",
    "WITH",
    "EXISTS",
    "UPDATE",
    "DELETE",
    "SET",
    // Functions.
    "COUNT",
    "SUM",
    "AVG",
    "MIN",
    "MAX",
    "COUNT(*)",
    "LENGTH",
    "UPPER",
    // Identifiers of the fuzzed tables, and nonsense.
    "t",
    "u",
    "e",
    "n",
    "id",
    "name",
    "x",
    "d",
    "b",
    "y",
    "t_id",
    "a",
    "s",
    "f",
    "t.x",
    "u.t_id",
    "t1",
    "t2",
    "t.*",
    "nosuch",
    "zz9",
    "\"quoted id\"",
    "`bq`",
    "[br]",
    "_",
    // Numbers.
    "0",
    "1",
    "-1",
    "2",
    "17",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "99999999999999999999999",
    "1.5",
    "-0.0",
    "1e308",
    "1e999",
    "1e-400",
    "0x1F",
    ".5",
    "5.",
    "NaN",
    // Strings.
    "'a'",
    "''",
    "'n1%'",
    "'it''s'",
    "'%'",
    "'_'",
    "'\\'",
    "'\u{1F600}'",
    "'unterminated",
    "E'\\n'",
    "X'00'",
    // Operators and punctuation.
    "(",
    ")",
    "(",
    ")",
    ",",
    ",",
    "*",
    "+",
    "-",
    "/",
    "%",
    "=",
    "==",
    "<>",
    "!=",
    "<",
    "<=",
    ">",
    ">=",
    "||",
    "::",
    ".",
    ";",
    "!",
    "~",
    "&",
    "|",
    "^",
    "#",
    "@",
    "--",
    "/*",
    "*/",
    // Parameters.
    "?",
    "?",
    "$1",
    "$2",
    "$0",
    "$65536",
    "$18446744073709551615",
    "$99999999999999999999999",
    ":name",
    "@v",
];

/// Tokens that form expressions, for statements that get past the parser more often.
const EXPRESSION_VOCABULARY: &[&str] = &[
    "id",
    "name",
    "x",
    "d",
    "b",
    "y",
    "t_id",
    "t.x",
    "u.y",
    "1",
    "0",
    "-1",
    "2.5",
    "'n1'",
    "''",
    "NULL",
    "TRUE",
    "FALSE",
    "?",
    "$1",
    "$2",
    "+",
    "-",
    "*",
    "/",
    "%",
    "=",
    "<>",
    "<",
    ">=",
    "AND",
    "OR",
    "NOT",
    "IS NULL",
    "IS NOT NULL",
    "IN (1, 2)",
    "IN (NULL)",
    "BETWEEN 1 AND",
    "LIKE",
    "'%1'",
    "CAST(",
    "AS DOUBLE)",
    "AS VARCHAR)",
    "AS BIGINT)",
    "AS BOOLEAN)",
    "(",
    ")",
    "COUNT(*)",
    "SUM(",
    "AVG(",
    "MIN(",
    "MAX(",
    "9223372036854775807",
    "-9223372036854775808",
    "1e308",
    "0.0",
];

fn expression_soup(max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(EXPRESSION_VOCABULARY), 1..max)
        .prop_map(|v| v.join(" "))
}

/// `SELECT <soup> FROM <tables> [WHERE <soup>] [GROUP BY ...] [ORDER BY ...]`.
fn shaped_statement() -> impl Strategy<Value = String> {
    let from = prop::sample::select(vec![
        "t",
        "u",
        "e",
        "n",
        "t JOIN u ON t.id = u.t_id",
        "t JOIN u ON t.x = u.y",
        "t t1 JOIN t t2 ON t1.id = t2.x",
        "n JOIN e ON n.a = e.x",
    ]);
    let tail = prop::sample::select(vec![
        "",
        " GROUP BY x",
        " GROUP BY 1",
        " ORDER BY 1",
        " ORDER BY 1 DESC NULLS FIRST LIMIT 3",
        " LIMIT 2 OFFSET 1",
        " GROUP BY x HAVING COUNT(*) > 1",
    ]);
    (
        expression_soup(8),
        from,
        prop::option::of(expression_soup(10)),
        tail,
    )
        .prop_map(|(select, from, filter, tail)| {
            let filter = filter.map(|f| format!(" WHERE {f}")).unwrap_or_default();
            format!("SELECT {select} FROM {from}{filter}{tail}")
        })
}

fn token_soup() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(VOCABULARY), 0..24).prop_map(|v| v.join(" "))
}

#[derive(Debug, Clone)]
enum Mutation {
    DeleteToken(usize),
    InsertToken(usize, &'static str),
    SwapTokens(usize, usize),
    DuplicateToken(usize),
    DeleteChar(usize),
    InsertChar(usize, char),
    SwapChars(usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let chars = prop::sample::select(vec![
        '(', ')', '\'', '"', ',', '?', '$', '*', '-', '/', ';', ' ', '0', '9', 'x', '.', '\\',
        '\0', '\u{FEFF}', 'é',
    ]);
    prop_oneof![
        any::<usize>().prop_map(Mutation::DeleteToken),
        (any::<usize>(), prop::sample::select(VOCABULARY))
            .prop_map(|(i, t)| Mutation::InsertToken(i, t)),
        (any::<usize>(), any::<usize>()).prop_map(|(i, j)| Mutation::SwapTokens(i, j)),
        any::<usize>().prop_map(Mutation::DuplicateToken),
        any::<usize>().prop_map(Mutation::DeleteChar),
        (any::<usize>(), chars).prop_map(|(i, c)| Mutation::InsertChar(i, c)),
        (any::<usize>(), any::<usize>()).prop_map(|(i, j)| Mutation::SwapChars(i, j)),
    ]
}

fn apply(sql: &str, m: &Mutation) -> String {
    let mut tokens: Vec<String> = sql.split(' ').map(str::to_string).collect();
    let mut chars: Vec<char> = sql.chars().collect();
    let nt = tokens.len().max(1);
    let nc = chars.len().max(1);
    match *m {
        Mutation::DeleteToken(i) => {
            if !tokens.is_empty() {
                tokens.remove(i % nt);
            }
        }
        Mutation::InsertToken(i, t) => tokens.insert(i % (nt + 1), t.to_string()),
        Mutation::SwapTokens(i, j) => {
            if !tokens.is_empty() {
                tokens.swap(i % nt, j % nt);
            }
        }
        Mutation::DuplicateToken(i) => {
            if !tokens.is_empty() {
                let t = tokens[i % nt].clone();
                tokens.insert(i % nt, t);
            }
        }
        Mutation::DeleteChar(i) => {
            if !chars.is_empty() {
                chars.remove(i % nc);
            }
            return chars.into_iter().collect();
        }
        Mutation::InsertChar(i, c) => {
            chars.insert(i % (nc + 1), c);
            return chars.into_iter().collect();
        }
        Mutation::SwapChars(i, j) => {
            if !chars.is_empty() {
                chars.swap(i % nc, j % nc);
            }
            return chars.into_iter().collect();
        }
    }
    tokens.join(" ")
}

fn param() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<i64>().prop_map(Value::Int),
        (-5i64..20).prop_map(Value::Int),
        any::<f64>().prop_map(Value::Float),
        Just(Value::Float(f64::NAN)),
        "[a-z%_]{0,4}".prop_map(Value::from),
        any::<bool>().prop_map(Value::Bool),
    ]
}

proptest! {
    // HOSTILE_CASES=5000 explores more.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("HOSTILE_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(128),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_token_sequences_never_break_the_cluster(
        sql in token_soup(),
        params in prop::collection::vec(param(), 0..3),
        as_query in any::<bool>(),
    ) {
        let (c, _lock) = shared();
        run_hostile(c, &sql, &params, as_query);
        check_healthy(c);
    }

    #[test]
    fn random_expressions_never_break_the_cluster(
        sql in shaped_statement(),
        params in prop::collection::vec(param(), 0..3),
    ) {
        let (c, _lock) = shared();
        run_hostile(c, &sql, &params, true);
        check_healthy(c);
    }

    #[test]
    fn mutated_valid_sql_never_breaks_the_cluster(
        base in prop::sample::select(CORPUS),
        mutations in prop::collection::vec(mutation(), 1..4),
        params in prop::collection::vec(param(), 0..4),
        as_query in any::<bool>(),
    ) {
        let (c, _lock) = shared();
        let mut sql = base.to_string();
        for m in &mutations {
            sql = apply(&sql, m);
        }
        run_hostile(c, &sql, &params, as_query);
        check_healthy(c);
    }
}

#[test]
fn the_corpus_is_valid() {
    let (c, _lock) = shared();
    for sql in CORPUS {
        let params: Vec<Value> = match sql.matches('?').count() + sql.matches("$1").count() {
            0 => vec![],
            1 => vec![Value::Int(3)],
            2 if sql.contains("name") => vec![Value::Int(3), Value::from("n3")],
            n => (0..n as i64).map(|i| Value::Int(1_000_000 + i)).collect(),
        };
        if sql.starts_with("CREATE") || sql.starts_with("INSERT") {
            // Runs at most once; later runs fail because the table, index or key exists.
            let _ = c.execute_with(sql, &params);
        } else {
            c.query(sql, &params)
                .unwrap_or_else(|e| panic!("{sql}: {e}"));
        }
    }
    check_healthy(c);
}

/// The start of a long statement, for messages.
fn short(sql: &str) -> String {
    sql.chars().take(100).collect()
}

/// Rows of a query as values, panicking with the SQL on error.
fn rows(c: &TestCluster, sql: &str) -> Vec<Vec<Value>> {
    c.query(sql, &[])
        .unwrap_or_else(|e| panic!("{}: {e}", short(sql)))
        .rows()
}

#[test]
fn very_wide_rows() {
    let c = build(3);
    let cols: Vec<String> = (0..200)
        .map(|i| match i {
            0 => "c0 BIGINT PRIMARY KEY".to_string(),
            i if i % 4 == 1 => format!("c{i} VARCHAR"),
            i if i % 4 == 2 => format!("c{i} DOUBLE"),
            i if i % 4 == 3 => format!("c{i} BOOLEAN"),
            i => format!("c{i} BIGINT"),
        })
        .collect();
    c.execute(&format!("CREATE TABLE w ({})", cols.join(", ")))
        .unwrap();
    let value = |row: i64, i: usize| -> String {
        match i {
            0 => row.to_string(),
            i if i % 4 == 1 => format!("'r{row}c{i}'"),
            i if i % 4 == 2 => format!("{}.5", row + i as i64),
            i if i % 4 == 3 => if (row + i as i64) % 2 == 0 {
                "TRUE"
            } else {
                "FALSE"
            }
            .into(),
            100 => "NULL".into(),
            i => (row * 1000 + i as i64).to_string(),
        }
    };
    let tuples: Vec<String> = (0..50)
        .map(|row| {
            let vals: Vec<String> = (0..200).map(|i| value(row, i)).collect();
            format!("({})", vals.join(", "))
        })
        .collect();
    assert_eq!(
        c.execute(&format!("INSERT INTO w VALUES {}", tuples.join(", ")))
            .unwrap(),
        50
    );
    let all = rows(&c, "SELECT * FROM w ORDER BY c0");
    assert_eq!(all.len(), 50);
    assert!(all.iter().all(|r| r.len() == 200));
    assert_eq!(all[7][1], Value::from("r7c1"));
    assert_eq!(all[7][2], Value::Float(9.5));
    assert_eq!(all[7][100], Value::Null);
    assert_eq!(all[7][196], Value::Int(7196));
    assert_eq!(
        rows(&c, "SELECT SUM(c196), COUNT(c100), MAX(c197) FROM w"),
        vec![vec![
            Value::Int((0..50).map(|r| r * 1000 + 196).sum()),
            Value::Int(0),
            Value::from("r9c197")
        ]]
    );
    assert_eq!(
        rows(
            &c,
            "SELECT c199, COUNT(*) FROM w GROUP BY c199 ORDER BY c199"
        ),
        vec![
            vec![Value::Bool(false), Value::Int(25)],
            vec![Value::Bool(true), Value::Int(25)]
        ]
    );
    // A self-join of 200-column rows gives 400-column rows.
    let joined = rows(
        &c,
        "SELECT * FROM w w1 JOIN w w2 ON w1.c0 = w2.c4 - 4 WHERE w1.c0 < 3 ORDER BY w1.c0",
    );
    // c4 - 4 = 1000 * row: only row 0 has a partner with c0 below 3.
    assert_eq!(joined.len(), 1);
    let joined = rows(
        &c,
        "SELECT * FROM w w1 JOIN w w2 ON w1.c0 = w2.c0 WHERE w1.c0 < 3 ORDER BY w1.c0",
    );
    assert_eq!(joined.len(), 3);
    assert!(joined.iter().all(|r| r.len() == 400));
    assert_eq!(joined[2][0], Value::Int(2));
    assert_eq!(joined[2][200], Value::Int(2));
    // A select list of 1000 expressions.
    let exprs: Vec<String> = (0..1000).map(|i| format!("c4 + {i}")).collect();
    let wide = rows(
        &c,
        &format!("SELECT {} FROM w WHERE c0 = 1", exprs.join(", ")),
    );
    assert_eq!(wide.len(), 1);
    assert_eq!(wide[0][999], Value::Int(1004 + 999));
    assert_idle(&c);
}

#[test]
fn very_long_strings() {
    let c = build(3);
    c.execute("CREATE TABLE s (id BIGINT PRIMARY KEY, v VARCHAR)")
        .unwrap();
    let big_a = "a".repeat(1 << 20);
    let big_b = format!("{}b", "é".repeat(1 << 19));
    // One as a literal (a 1 MB statement), one as a parameter.
    c.execute(&format!("INSERT INTO s VALUES (1, '{big_a}')"))
        .unwrap();
    c.execute_with(
        "INSERT INTO s VALUES (?, ?)",
        &[Value::Int(2), Value::from(big_b.clone())],
    )
    .unwrap();
    c.execute("INSERT INTO s VALUES (3, 'short')").unwrap();
    let r = c
        .query("SELECT v FROM s WHERE id = ?", &[Value::Int(1)])
        .unwrap();
    assert!(r.rows() == vec![vec![Value::from(big_a.clone())]]);
    let r = c
        .query(
            "SELECT id FROM s WHERE v = ?",
            &[Value::from(big_b.clone())],
        )
        .unwrap();
    assert_eq!(ints(&r.rows()), vec![vec![2]]);
    let r = c
        .query(&format!("SELECT id FROM s WHERE v = '{big_a}'"), &[])
        .unwrap();
    assert_eq!(ints(&r.rows()), vec![vec![1]]);
    assert_eq!(
        ints(&rows(&c, "SELECT id FROM s WHERE v LIKE '%b' ORDER BY id")),
        vec![vec![2]]
    );
    assert_eq!(
        ints(&rows(&c, "SELECT id FROM s ORDER BY v DESC")),
        vec![vec![2], vec![3], vec![1]]
    );
    // Byte order: 'a...' < 'short' < 'é...'.
    let r = rows(&c, "SELECT MIN(v), MAX(v), COUNT(*) FROM s");
    assert!(
        r == vec![vec![
            Value::from(big_a.clone()),
            Value::from(big_b.clone()),
            Value::Int(3)
        ]]
    );
    let r = rows(&c, "SELECT v, COUNT(*) FROM s GROUP BY v ORDER BY v");
    assert_eq!(r.len(), 3);
    assert!(r[0][0] == Value::from(big_a.clone()));
    assert!(r[2][0] == Value::from(big_b.clone()));
    let r = rows(
        &c,
        "SELECT s1.id, s2.id FROM s s1 JOIN s s2 ON s1.v = s2.v ORDER BY s1.id",
    );
    assert_eq!(ints(&r), vec![vec![1, 1], vec![2, 2], vec![3, 3]]);
    // A string literal of 8 MB in the SELECT list.
    let huge = "z".repeat(8 << 20);
    let r = c
        .query(&format!("SELECT '{huge}' FROM s WHERE id = 3"), &[])
        .unwrap();
    assert!(r.rows() == vec![vec![Value::from(huge)]]);
    assert_idle(&c);
}

#[test]
fn empty_tables_give_sql_results() {
    let c = build(3);
    create_tables(&c);
    let null = Value::Null;
    assert_eq!(
        rows(
            &c,
            "SELECT COUNT(*), COUNT(x), SUM(x), AVG(x), MIN(x), MAX(s), SUM(d), MIN(f) FROM e"
        ),
        vec![vec![
            Value::Int(0),
            Value::Int(0),
            null.clone(),
            null.clone(),
            null.clone(),
            null.clone(),
            null.clone(),
            null.clone()
        ]]
    );
    // Empty after filtering, on a table with rows.
    assert_eq!(
        rows(&c, "SELECT COUNT(*), SUM(x), MAX(name) FROM t WHERE id < 0"),
        vec![vec![Value::Int(0), null.clone(), null.clone()]]
    );
    assert_eq!(
        rows(&c, "SELECT COUNT(*) FROM e HAVING COUNT(*) = 0"),
        vec![vec![Value::Int(0)]]
    );
    assert_eq!(
        rows(&c, "SELECT COUNT(*) FROM e HAVING COUNT(*) > 0"),
        Vec::<Vec<Value>>::new()
    );
    let empty = Vec::<Vec<Value>>::new();
    for sql in [
        "SELECT * FROM e",
        "SELECT x, COUNT(*) FROM e GROUP BY x",
        "SELECT s, SUM(x) FROM e GROUP BY s HAVING SUM(x) IS NULL",
        "SELECT * FROM e ORDER BY x DESC, s",
        "SELECT * FROM e ORDER BY x LIMIT 5",
        "SELECT id FROM e ORDER BY id LIMIT 5 OFFSET 2",
        "SELECT * FROM e WHERE id = 1",
        "SELECT * FROM e WHERE id IN (1, 2, 3)",
        "SELECT e.id, t.id FROM e JOIN t ON e.id = t.id",
        "SELECT e.id, t.id FROM t JOIN e ON e.x = t.x",
        "SELECT e1.id FROM e e1 JOIN e e2 ON e1.id = e2.id",
        "SELECT t.id FROM t JOIN e ON t.id = e.id JOIN u ON u.t_id = t.id",
        "SELECT e.x, COUNT(*) FROM t JOIN e ON t.id = e.id GROUP BY e.x",
        "SELECT * FROM t WHERE 1 = 0",
        "SELECT x, COUNT(*) FROM t WHERE FALSE GROUP BY x ORDER BY x",
        "SELECT * FROM t LIMIT 0",
        "SELECT * FROM t ORDER BY x LIMIT 0",
        "SELECT * FROM t ORDER BY x LIMIT 3 OFFSET 1000",
    ] {
        assert_eq!(rows(&c, sql), empty, "{sql}");
    }
    assert_eq!(
        rows(&c, "SELECT COUNT(*), SUM(e.x) FROM t JOIN e ON t.id = e.id"),
        vec![vec![Value::Int(0), null.clone()]]
    );
    assert_eq!(
        rows(
            &c,
            "SELECT COUNT(*), MIN(e1.s) FROM e e1 JOIN e e2 ON e1.id = e2.id"
        ),
        vec![vec![Value::Int(0), null]]
    );
    assert_idle(&c);
}

#[test]
fn null_everywhere() {
    let c = build(3);
    create_tables(&c);
    let null = Value::Null;
    let empty = Vec::<Vec<Value>>::new();
    for sql in [
        "SELECT id FROM n WHERE a = 1",
        "SELECT id FROM n WHERE a <> 1",
        "SELECT id FROM n WHERE NOT (a = 1)",
        "SELECT id FROM n WHERE a = a",
        "SELECT id FROM n WHERE a IN (1, NULL)",
        "SELECT id FROM n WHERE a NOT IN (1, 2)",
        "SELECT id FROM n WHERE a BETWEEN 0 AND 10",
        "SELECT id FROM n WHERE a NOT BETWEEN 0 AND 10",
        "SELECT id FROM n WHERE s LIKE '%'",
        "SELECT id FROM n WHERE s NOT LIKE 'x'",
        "SELECT id FROM n WHERE f",
        "SELECT id FROM n WHERE NOT f",
        "SELECT id FROM n WHERE f AND TRUE",
        "SELECT id FROM n WHERE d > 0 OR d <= 0",
        "SELECT id FROM n WHERE a + 1 > 0",
        "SELECT id FROM n WHERE CAST(a AS VARCHAR) = ''",
        "SELECT id FROM n WHERE a = NULL",
        "SELECT id FROM n WHERE NULL",
        "SELECT id FROM n WHERE a IS NOT NULL",
        "SELECT n1.id FROM n n1 JOIN n n2 ON n1.a = n2.a",
        "SELECT n1.id FROM n n1 JOIN n n2 ON n1.s = n2.s",
        "SELECT n.id FROM n JOIN t ON n.a = t.x",
        "SELECT n.id FROM t JOIN n ON t.x = n.a",
        "SELECT n.id FROM n JOIN t ON n.id = t.id AND n.a = t.x",
        "SELECT a, COUNT(*) FROM n GROUP BY a HAVING SUM(a) > 0",
    ] {
        assert_eq!(rows(&c, sql), empty, "{sql}");
    }
    let twenty: Vec<Vec<i64>> = (0..20).map(|i| vec![i]).collect();
    for sql in [
        "SELECT id FROM n WHERE a IS NULL ORDER BY id",
        "SELECT id FROM n WHERE NOT (a IS NOT NULL) ORDER BY id",
        "SELECT id FROM n WHERE f OR TRUE ORDER BY id",
        "SELECT id FROM n WHERE NOT (f AND FALSE) ORDER BY id",
        "SELECT id FROM n WHERE (a = 1) IS NULL ORDER BY id",
        "SELECT id FROM n ORDER BY a, id",
        "SELECT id FROM n ORDER BY a DESC NULLS FIRST, s, d, f, id",
        "SELECT id FROM n ORDER BY s NULLS LAST, id LIMIT 20",
    ] {
        assert_eq!(ints(&rows(&c, sql)), twenty, "{sql}");
    }
    assert_eq!(
        rows(
            &c,
            "SELECT COUNT(*), COUNT(a), SUM(a), AVG(d), MIN(s), MAX(f), SUM(a + 1) FROM n"
        ),
        vec![vec![
            Value::Int(20),
            Value::Int(0),
            null.clone(),
            null.clone(),
            null.clone(),
            null.clone(),
            null.clone()
        ]]
    );
    assert_eq!(
        rows(&c, "SELECT a, s, COUNT(*), SUM(d) FROM n GROUP BY a, s"),
        vec![vec![
            null.clone(),
            null.clone(),
            Value::Int(20),
            null.clone()
        ]]
    );
    assert_eq!(
        rows(
            &c,
            "SELECT f, COUNT(*) FROM n GROUP BY f HAVING COUNT(*) > 10"
        ),
        vec![vec![null.clone(), Value::Int(20)]]
    );
    assert_eq!(
        rows(&c, "SELECT a + 1, s, d * 2, NOT f, -a FROM n WHERE id = 3"),
        vec![vec![null.clone(); 5]]
    );
    // NULL parameters.
    let r = c
        .query(
            "SELECT COUNT(*) FROM n WHERE a = ? OR s = ?",
            &[Value::Null, Value::Null],
        )
        .unwrap();
    assert_eq!(r.rows(), vec![vec![Value::Int(0)]]);
    let r = c
        .query("SELECT COUNT(*) FROM t WHERE x = ?", &[Value::Null])
        .unwrap();
    assert_eq!(r.rows(), vec![vec![Value::Int(0)]]);
    let r = c
        .query("SELECT COUNT(*) FROM t WHERE id = ?", &[Value::Null])
        .unwrap();
    assert_eq!(r.rows(), vec![vec![Value::Int(0)]]);
    // NULL keys in t: every row of t with a NULL x is one group.
    let nulls_in_t = (0..T_ROWS).filter(|i| i % 11 == 0).count() as i64;
    assert_eq!(
        rows(&c, "SELECT COUNT(*) FROM t WHERE x IS NULL"),
        vec![vec![Value::Int(nulls_in_t)]]
    );
    let by_x = rows(
        &c,
        "SELECT x, COUNT(*) FROM t GROUP BY x ORDER BY x NULLS FIRST",
    );
    assert_eq!(by_x[0], vec![null, Value::Int(nulls_in_t)]);
    assert_idle(&c);
}

#[test]
fn huge_in_lists() {
    let c = build(3);
    create_tables(&c);
    let list: Vec<String> = (0..10_000).map(|i| i.to_string()).collect();
    let list = list.join(", ");
    // On a plain column, an indexed column and the primary key.
    let in_x = (0..T_ROWS).filter(|i| i % 11 != 0).count() as i64;
    for (sql, expect) in [
        (
            format!("SELECT COUNT(*) FROM t WHERE d IN ({list})"),
            T_ROWS / 2,
        ),
        (format!("SELECT COUNT(*) FROM t WHERE x IN ({list})"), in_x),
        (
            format!("SELECT COUNT(*) FROM t WHERE id IN ({list})"),
            T_ROWS,
        ),
        (
            format!("SELECT COUNT(*) FROM t WHERE id NOT IN ({list})"),
            0,
        ),
        (
            format!("SELECT COUNT(*) FROM t WHERE id + 10000 IN ({list})"),
            0,
        ),
        (
            format!("SELECT COUNT(*) FROM t JOIN u ON t.id = u.t_id WHERE u.id IN ({list})"),
            (0..100).filter(|i| i * 3 % 250 < T_ROWS).count() as i64,
        ),
    ] {
        let r = c
            .query(&sql, &[])
            .unwrap_or_else(|e| panic!("{}...: {e}", &sql[..60]));
        assert_eq!(
            r.rows(),
            vec![vec![Value::Int(expect)]],
            "{}...",
            &sql[..60]
        );
    }
    // 10,000 parameters.
    let marks = vec!["?"; 10_000].join(", ");
    let params: Vec<Value> = (0..10_000).map(|i| Value::Int(i * 2)).collect();
    let r = c
        .query(
            &format!("SELECT COUNT(*) FROM t WHERE id IN ({marks})"),
            &params,
        )
        .unwrap();
    assert_eq!(r.rows(), vec![vec![Value::Int(T_ROWS / 2)]]);
    // Strings, and a list mixing types.
    let strs: Vec<String> = (0..10_000).map(|i| format!("'n{i}'")).collect();
    let r = c
        .query(
            &format!("SELECT COUNT(*) FROM t WHERE name IN ({})", strs.join(", ")),
            &[],
        )
        .unwrap();
    let named = (0..T_ROWS).filter(|i| i % 7 != 0).count() as i64;
    assert_eq!(r.rows(), vec![vec![Value::Int(named)]]);
    let mixed = c.query(
        &format!("SELECT COUNT(*) FROM t WHERE x IN ({list}, 'a')"),
        &[],
    );
    if let Err(e) = mixed {
        assert!(e.to_string().to_lowercase().contains("type"), "{e}");
    }
    // A 10,000-row INSERT.
    let tuples: Vec<String> = (0..10_000).map(|i| format!("({i}, {i}, NULL)")).collect();
    c.execute("CREATE TABLE big (id BIGINT PRIMARY KEY, v BIGINT, w VARCHAR)")
        .unwrap();
    assert_eq!(
        c.execute(&format!("INSERT INTO big VALUES {}", tuples.join(", ")))
            .unwrap(),
        10_000
    );
    assert_eq!(
        rows(&c, "SELECT COUNT(*), SUM(v), COUNT(w) FROM big"),
        vec![vec![
            Value::Int(10_000),
            Value::Int(10_000 * 9_999 / 2),
            Value::Int(0)
        ]]
    );
    assert_idle(&c);
}

/// The error of a statement that must fail cleanly.
fn plan_error(c: &TestCluster, sql: &str) -> String {
    let start = Instant::now();
    let e = match c.query(sql, &[]) {
        Ok(r) => panic!(
            "{}... unexpectedly returned {} rows",
            &sql[..60.min(sql.len())],
            r.num_rows()
        ),
        Err(e) => e,
    };
    assert!(start.elapsed() < STATEMENT_LIMIT);
    assert!(matches!(e, Error::Plan(_)), "{e:?}");
    e.to_string()
}

#[test]
fn deep_nesting_fails_cleanly() {
    let c = build(2);
    create_tables(&c);
    let depth = 5_000;
    // Recursive structures: the parser's recursion limit rejects them.
    let nested_plus = format!(
        "SELECT {}1{} FROM t",
        "1 + (".repeat(depth),
        ")".repeat(depth)
    );
    let nots = format!("SELECT id FROM t WHERE {} b", "NOT ".repeat(depth));
    let parens = format!("SELECT {}x{} FROM t", "(".repeat(depth), ")".repeat(depth));
    let negs = format!("SELECT {}x FROM t", "- ".repeat(depth));
    let casts = format!(
        "SELECT {}x{} FROM t",
        "CAST(".repeat(depth),
        " AS BIGINT)".repeat(depth)
    );
    let subqueries = format!(
        "SELECT * FROM {}t{}",
        "(SELECT * FROM ".repeat(depth),
        ")".repeat(depth)
    );
    let unbalanced = format!("SELECT {} FROM t", "(".repeat(depth));
    let compound = format!("SELECT t{} FROM t", ".x".repeat(depth));
    let calls = format!(
        "SELECT {}x{} FROM t",
        "MAX(".repeat(depth),
        ")".repeat(depth)
    );
    assert!(plan_error(&c, &compound).contains("unknown column"));
    for sql in [
        &calls,
        &nested_plus,
        &nots,
        &parens,
        &negs,
        &casts,
        &subqueries,
        &unbalanced,
    ] {
        let e = plan_error(&c, sql);
        assert!(
            e.contains("nested too deeply") || e.contains("syntax"),
            "{}...: {e}",
            &sql[..40]
        );
        // Also through execute, and as EXPLAIN.
        assert!(c.execute(sql).is_err());
        assert!(c.query(&format!("EXPLAIN {sql}"), &[]).is_err());
    }
    for sql in [&nots, &parens, &nested_plus] {
        let e = plan_error(&c, sql);
        assert!(e.contains("nested too deeply"), "{}...: {e}", &sql[..40]);
    }
    check_nesting_within_limits(&c);
    assert_idle(&c);
}

/// Long flat chains parse without recursion into deep trees. A chain of ANDs or ORs is one
/// level of nesting and runs, however long; any other chain is as deep as it is long (as in
/// SQLite), so 5,000 terms are refused with the nesting limit (a 5,000-term chain used to
/// overflow the caller's stack).
#[test]
fn long_operator_chains() {
    let c = build(2);
    create_tables(&c);
    let n = 5_000;
    let ors: Vec<String> = (0..n).map(|i| format!("x = {i}")).collect();
    let ands: Vec<String> = (0..n).map(|i| format!("id <> {}", i + 100)).collect();
    let x_not_null = (0..T_ROWS).filter(|i| i % 11 != 0).count() as i64;
    assert_eq!(
        rows(
            &c,
            &format!("SELECT COUNT(*) FROM t WHERE {}", ors.join(" OR "))
        ),
        vec![vec![Value::Int(x_not_null)]]
    );
    assert_eq!(
        rows(
            &c,
            &format!("SELECT COUNT(*) FROM t WHERE {}", ands.join(" AND "))
        ),
        vec![vec![Value::Int(100)]]
    );
    // The same chain through a join.
    let joined = rows(
        &c,
        &format!(
            "SELECT COUNT(*) FROM t JOIN u ON t.id = u.t_id WHERE ({}) OR u.y = -1",
            ors.join(" OR ")
        ),
    );
    let matched = (0..100i64)
        .map(|i| i * 3 % 250)
        .filter(|t_id| *t_id < T_ROWS && t_id % 11 != 0)
        .count() as i64;
    assert_eq!(joined, vec![vec![Value::Int(matched)]]);
    for sql in [
        format!("SELECT {} FROM t WHERE id = 3", vec!["1"; n].join(" + ")),
        format!("SELECT {} FROM t WHERE id = 3", vec!["x"; n].join(" * ")),
        format!("SELECT {} FROM t", vec!["name"; n].join(" || ")),
        format!("SELECT id FROM t WHERE x{}", " IS NULL".repeat(n)),
        format!("SELECT x{} FROM t", "::BIGINT".repeat(n)),
        format!("SELECT id FROM t WHERE x {}", "IN (1) ".repeat(n)),
        format!("SELECT id FROM t WHERE name {}", "LIKE 'a' ".repeat(n)),
        format!("SELECT id FROM t {}", "UNION SELECT id FROM t ".repeat(n)),
        format!("SELECT id FROM t ORDER BY {}", vec!["x"; n].join(" - ")),
        format!("SELECT id FROM t ORDER BY {}", vec!["t.x"; n].join(" / ")),
        format!("SELECT x FROM t GROUP BY {}", vec!["x"; n].join(" + ")),
        format!(
            "INSERT INTO u VALUES (7777, 1, {})",
            vec!["1"; n].join(" + ")
        ),
        format!(
            "SELECT COUNT(*) FROM t WHERE x IN ({}){}",
            ["1 + 1"; 10].join(", "),
            " + 1".repeat(n)
        ),
    ] {
        let e = plan_error(&c, &sql);
        assert!(e.contains("nested too deeply"), "{}...: {e}", &sql[..50]);
        let e = c.execute(&sql).unwrap_err();
        assert!(e.to_string().contains("nested too deeply"), "{e}");
    }
    check_healthy_on(&c);
    assert_idle(&c);
}

/// Chains just inside the limit work, give the right answers, and plan quickly, also where
/// the binder matches group keys at every level.
#[test]
fn chains_at_the_limit_work() {
    let c = build(3);
    create_tables(&c);
    // A chain of k terms counts k - 1 operators; the SELECT ... FROM ... WHERE parts are
    // separate.
    let k = weir::planner::MAX_EXPR_DEPTH + 1;
    let start = Instant::now();
    let sum = format!("SELECT {} FROM t WHERE id = 3", vec!["x"; k].join(" + "));
    assert_eq!(ints(&rows(&c, &sum)), vec![vec![3 * k as i64]]);
    let ors: Vec<String> = (0..k / 2).map(|i| format!("x = {i}")).collect();
    let in_x = (0..T_ROWS)
        .filter(|i| i % 11 != 0 && ((i % 17) as usize) < k / 2)
        .count() as i64;
    assert_eq!(
        rows(
            &c,
            &format!("SELECT COUNT(*) FROM t WHERE {}", ors.join(" OR "))
        ),
        vec![vec![Value::Int(in_x)]]
    );
    let ands: Vec<String> = (0..k / 2).map(|i| format!("id <> {}", i + 1000)).collect();
    assert_eq!(
        rows(
            &c,
            &format!("SELECT COUNT(*) FROM t WHERE {}", ands.join(" AND "))
        ),
        vec![vec![Value::Int(T_ROWS)]]
    );
    // Group keys matched at every level of a deep select expression.
    // (The aggregate's parentheses count as one more level.)
    let chain = vec!["x"; k - 1].join(" + ");
    let grouped = rows(
        &c,
        &format!(
            "SELECT {chain}, SUM({chain}), COUNT(*) FROM t GROUP BY x ORDER BY 3 DESC, 1 LIMIT 1"
        ),
    );
    assert_eq!(grouped.len(), 1);
    // The same through a join, so the deep expressions cross nodes.
    let joined = rows(
        &c,
        &format!(
            "SELECT {} FROM t JOIN u ON t.id = u.t_id WHERE u.id = 1",
            vec!["u.y"; k].join(" + ")
        ),
    );
    assert_eq!(ints(&joined), vec![vec![k as i64]]);
    let took = start.elapsed();
    assert!(took < Duration::from_secs(10), "took {took:?}");
    let over = format!(
        "SELECT {} FROM t WHERE id = 3",
        vec!["x"; k + 1].join(" + ")
    );
    assert!(plan_error(&c, &over).contains("nested too deeply"));
    check_healthy_on(&c);
    assert_idle(&c);
}

fn check_nesting_within_limits(c: &TestCluster) {
    // Moderate nesting works and gives the right answer.
    let depth = 20;
    let sql = format!(
        "SELECT {}x{} FROM t WHERE id = 5",
        "1 + (".repeat(depth),
        ")".repeat(depth)
    );
    assert_eq!(ints(&rows(c, &sql)), vec![vec![5 + depth as i64]]);
    // Every parenthesis and NOT is a level.
    let sql = format!(
        "SELECT COUNT(*) FROM t WHERE {}b{}",
        "(NOT (".repeat(250),
        "))".repeat(250)
    );
    assert_eq!(rows(c, &sql), vec![vec![Value::Int(T_ROWS / 2)]]);
    // The limit: 1,000 levels of parentheses plan and run, 1,001 are refused naming it.
    let parens = |n: usize| {
        format!(
            "SELECT {}x{} FROM t WHERE id = 5",
            "(".repeat(n),
            ")".repeat(n)
        )
    };
    let limit = weir::planner::MAX_EXPR_DEPTH;
    assert_eq!(ints(&rows(c, &parens(limit))), vec![vec![5]]);
    let e = plan_error(c, &parens(limit + 1));
    assert!(e.contains("nested too deeply") && e.contains("1000"), "{e}");
}

fn check_healthy_on(c: &TestCluster) {
    let r = c.query("SELECT COUNT(*), SUM(v) FROM guard", &[]).unwrap();
    assert_eq!(r.rows(), vec![vec![Value::Int(4), Value::Int(60)]]);
}
