//! Error reporting: every error names what went wrong, and where when known.
use crate::common;
use common::*;
use weir_operators::{DataType, Value};
use weir_planner::{plan_statement, PlanError};

fn err(sql: &str, params: &[Value]) -> PlanError {
    match plan_statement(sql, &catalog(), params, 4) {
        Err(e) => e,
        Ok(s) => panic!("{sql} planned: {s:?}"),
    }
}

#[test]
fn syntax_error() {
    let e = err("SELEC * FROM Item", &[]);
    assert!(matches!(e, PlanError::Syntax(_)), "{e:?}");
    assert!(e.to_string().starts_with("syntax error"), "{e}");
    let e = err("SELECT * FROM Item WHERE", &[]);
    assert!(matches!(e, PlanError::Syntax(_)), "{e:?}");
    assert!(matches!(err("", &[]), PlanError::Syntax(_)));
}

#[test]
fn unknown_names() {
    let e = err("SELECT * FROM foo", &[]);
    assert_eq!(e, PlanError::UnknownTable("foo".into()));
    assert_eq!(e.to_string(), "unknown table 'foo'");
    let e = err("SELECT bar FROM Item", &[]);
    assert!(
        matches!(&e, PlanError::UnknownColumn { name, .. } if name == "bar"),
        "{e:?}"
    );
    assert_eq!(e.to_string(), "unknown column 'bar' at line 1, column 8");
    let e = err("SELECT i.nope FROM Item i", &[]);
    assert!(e.to_string().contains("unknown column 'i.nope'"), "{e}");
    let e = err("SELECT x.id FROM Item i", &[]);
    assert!(e.to_string().contains("'x.id'"), "{e}");
    let e = err("SELECT id FROM Item\nWHERE zzz = 1", &[]);
    assert!(e.to_string().contains("line 2, column 7"), "{e}");
    let e = err(
        "SELECT * FROM Item a JOIN Item b ON a.id = b.id WHERE fld = 1",
        &[],
    );
    assert_eq!(e, PlanError::AmbiguousColumn("fld".into()));
    assert!(e.to_string().contains("'fld'"));
    assert!(
        matches!(err("INSERT INTO nope VALUES (1)", &[]), PlanError::UnknownTable(t) if t == "nope")
    );
    assert!(matches!(
        err("CREATE INDEX i ON nope(x)", &[]),
        PlanError::UnknownTable(_)
    ));
    assert!(matches!(
        err("CREATE INDEX i ON Item(nope)", &[]),
        PlanError::UnknownColumn { .. }
    ));
    assert!(matches!(
        err("DROP TABLE nope", &[]),
        PlanError::UnknownTable(_)
    ));
}

#[test]
fn date_and_type_errors_name_the_text_and_position() {
    let e = err("SELECT id FROM Item WHERE fld > DATE 'not a date'", &[]);
    assert_eq!(
        e.to_string(),
        "invalid SQL: invalid DATE literal 'not a date' at line 1, column 38"
    );
    let e = err("SELECT TIMESTAMP '1998-13-01 10:00:00'", &[]);
    assert!(
        e.to_string()
            .contains("invalid TIMESTAMP literal '1998-13-01 10:00:00' at line 1, column 18"),
        "{e}"
    );
    let e = err("CREATE TABLE t (id BIGINT PRIMARY KEY, g GEOGRAPHY)", &[]);
    assert!(e.to_string().contains("GEOGRAPHY"), "{e}");
    let e = err(
        "CREATE TABLE t (id BIGINT PRIMARY KEY, d DECIMAL(40, 2))",
        &[],
    );
    assert!(e.to_string().contains("DECIMAL(40,2)"), "{e}");
    assert!(e.to_string().contains("precision must be 1 to 38"), "{e}");
    let e = err("SELECT date_trunc('day', name) FROM Item", &[]);
    assert!(
        e.to_string()
            .contains("function date_trunc needs a DATE or TIMESTAMP argument 2, got VARCHAR"),
        "{e}"
    );
    let e = err("SELECT date_trunc('fortnight', DATE '2024-01-01')", &[]);
    assert!(e.to_string().contains("'fortnight'"), "{e}");
    let e = err("SELECT INTERVAL '1' DAY", &[]);
    assert!(e.to_string().contains("INTERVAL can only be added"), "{e}");
    let e = err("SELECT name + INTERVAL '1' DAY FROM Item", &[]);
    assert!(
        e.to_string()
            .contains("an INTERVAL can only be added to a DATE or TIMESTAMP, got VARCHAR"),
        "{e}"
    );
    let e = err("SELECT DATE '2024-01-01' * 2", &[]);
    assert!(
        e.to_string()
            .contains("operator * does not take DATE and BIGINT"),
        "{e}"
    );
}

#[test]
fn unsupported_with_position() {
    let e = err("SELECT COUNT(DISTINCT fld) OVER () FROM Item", &[]);
    assert_eq!(
        e.to_string(),
        "unsupported SQL: DISTINCT in a window function at line 1, column 8"
    );
    let e = err(
        "SELECT RANK() FILTER (WHERE fld > 0) OVER (PARTITION BY name) FROM Item",
        &[],
    );
    assert!(
        e.to_string()
            .contains("FILTER in a window function that is not an aggregate at line 1, column 8"),
        "{e}"
    );
    // WITH TIES needs an ORDER BY to tell ties, as in PostgreSQL.
    let e = err("SELECT * FROM Item FETCH FIRST 2 ROWS WITH TIES", &[]);
    assert!(
        e.to_string()
            .contains("WITH TIES cannot be specified without ORDER BY clause at line 1, column 1"),
        "{e}"
    );
    // DISTINCT ON's expressions must lead the ORDER BY, as PostgreSQL requires.
    let e = err("SELECT DISTINCT ON (name) name FROM Item ORDER BY fld", &[]);
    assert!(
        e.to_string().contains(
            "SELECT DISTINCT ON expressions must match initial ORDER BY expressions at line 1, \
             column 21"
        ),
        "{e}"
    );
    for (sql, what) in [
        (
            "WITH RECURSIVE x AS (SELECT 1 UNION SELECT 2 FROM x ORDER BY 1) SELECT * FROM x",
            "ORDER BY in a recursive query at line 1, column 16",
        ),
        (
            "SELECT name FROM Item i GROUP BY name HAVING EXISTS (SELECT 1 FROM Category c \
             GROUP BY c.cid HAVING EXISTS (SELECT 1 FROM Category d WHERE i.name IS NOT NULL))",
            "a subquery over grouped rows whose own subquery reads a query further out",
        ),
        (
            "SELECT id FROM Item UNION BY NAME SELECT cid FROM Category",
            "UNION BY NAME",
        ),
        (
            "SELECT * FROM Item i RIGHT JOIN LATERAL (SELECT i.id AS k) x ON TRUE",
            "RIGHT JOIN LATERAL (the join must be INNER or LEFT for a LATERAL reference) at line 1",
        ),
        ("SELECT soundex(name) FROM Item", "function soundex"),
        ("SELECT name ILIKE ANY ('a') FROM Item", "ILIKE ANY"),
        ("SELECT * FROM Item LIMIT ?", "parameters in LIMIT"),
        (
            "VALUES (1), (?)",
            "parameters in VALUES lists at line 1, column 14",
        ),
        (
            "SELECT * FROM Item FETCH FIRST 10 PERCENT ROWS ONLY",
            "FETCH ... PERCENT",
        ),
        (
            "SELECT * FROM Item FETCH FIRST ? ROWS ONLY",
            "parameters in FETCH",
        ),
        ("SELECT 1; SELECT 2", "multiple statements"),
    ] {
        let params: Vec<Value> = if sql.contains('?') {
            vec![Value::Int(1)]
        } else {
            vec![]
        };
        let e = err(sql, &params);
        assert!(matches!(e, PlanError::Unsupported { .. }), "{sql}: {e:?}");
        assert!(e.to_string().contains(what), "{sql}: {e}");
    }
    // Scalar functions with wrong arguments: a planning error naming function and position.
    let e = err("SELECT abs(name) FROM Item", &[]);
    assert!(matches!(e, PlanError::Type(_)), "{e:?}");
    assert!(
        e.to_string()
            .contains("function abs needs a numeric argument 1, got VARCHAR"),
        "{e}"
    );
    assert!(e.to_string().contains("line 1, column 8"), "{e}");
    let e = err("SELECT substring(name) FROM Item", &[]);
    assert!(matches!(e, PlanError::Invalid(_)), "{e:?}");
    assert!(
        e.to_string()
            .contains("function substring takes 2 to 3 arguments, got 1"),
        "{e}"
    );
    let e = err("SELECT id FROM Item WHERE name LIKE ANY ('a')", &[]);
    match e {
        PlanError::Unsupported { position, .. } => {
            assert!(position.starts_with("line 1, column 27"), "{position}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn type_errors() {
    let e = err("SELECT * FROM Item WHERE name = 1", &[]);
    assert!(matches!(e, PlanError::Type(_)), "{e:?}");
    assert!(e.to_string().contains("name = 1"), "{e}");
    assert!(matches!(
        err("SELECT name + 1 FROM Item", &[]),
        PlanError::Type(_)
    ));
    assert!(matches!(
        err("SELECT * FROM Item WHERE fld", &[]),
        PlanError::Type(_)
    ));
    assert!(matches!(
        err("SELECT SUM(name) FROM Item", &[]),
        PlanError::Type(_)
    ));
    assert!(matches!(
        err("SELECT * FROM Item WHERE fld LIKE 'a'", &[]),
        PlanError::Type(_)
    ));
    assert!(matches!(
        err("SELECT * FROM Item WHERE NOT fld", &[]),
        PlanError::Type(_)
    ));
    assert!(matches!(
        err("SELECT * FROM Item WHERE fld IN (1, 'a')", &[]),
        PlanError::Type(_)
    ));
}

#[test]
fn aggregate_misuse() {
    let e = err("SELECT name, COUNT(*) FROM Item", &[]);
    assert!(
        e.to_string().contains("'name'") && e.to_string().contains("GROUP BY"),
        "{e}"
    );
    let e = err("SELECT * FROM Item WHERE COUNT(*) > 1", &[]);
    assert!(e.to_string().contains("COUNT"), "{e}");
    assert!(matches!(
        err("SELECT SUM(COUNT(*)) FROM Item", &[]),
        PlanError::Invalid(_)
    ));
    assert!(matches!(
        err("SELECT id FROM Item ORDER BY 3", &[]),
        PlanError::Invalid(_)
    ));
    assert!(matches!(
        err("SELECT id FROM Item GROUP BY 5", &[]),
        PlanError::Invalid(_)
    ));
}

#[test]
fn param_errors() {
    assert_eq!(
        err("SELECT * FROM Item WHERE fldIdx = ?", &[]),
        PlanError::ParamCount {
            expected: 1,
            got: 0
        }
    );
    assert_eq!(
        err(
            "SELECT * FROM Item WHERE fldIdx = ?",
            &[Value::Int(1), Value::Int(2)]
        ),
        PlanError::ParamCount {
            expected: 1,
            got: 2
        }
    );
    assert_eq!(
        err("SELECT * FROM Item WHERE id = $2", &[Value::Int(1)]),
        PlanError::ParamCount {
            expected: 2,
            got: 1
        }
    );
    let e = err(
        "SELECT * FROM Item WHERE fldIdx = ?",
        &[Value::Str("x".into())],
    );
    assert_eq!(
        e,
        PlanError::ParamType {
            index: 0,
            expected: DataType::Int64,
            got: DataType::Utf8
        }
    );
    assert!(
        e.to_string().contains("BIGINT") && e.to_string().contains("VARCHAR"),
        "{e}"
    );
    let e = err(
        "SELECT * FROM Item WHERE name = ? AND fld = ?",
        &[Value::from("a"), Value::Float(1.5)],
    );
    assert!(matches!(e, PlanError::ParamType { index: 1, .. }), "{e:?}");
    let e = err(
        "INSERT INTO Item (id, name) VALUES (?, ?)",
        &[Value::Int(1), Value::Int(2)],
    );
    assert!(
        matches!(
            e,
            PlanError::ParamType {
                index: 1,
                expected: DataType::Utf8,
                got: DataType::Int64
            }
        ),
        "{e:?}"
    );
}
