//! Prepared statements, typed rows and parameters from tuples, as an embedding service uses
//! them.

use crate::common;

use common::{assert_idle, cluster};
use weir::{params, Decimal, Error, NaiveDate, Value};

#[test]
fn a_prepared_statement_runs_again_with_new_parameters() {
    let c = cluster(3);
    c.execute(
        "CREATE TABLE item (id BIGINT PRIMARY KEY, name VARCHAR, price DECIMAL(8, 2), day DATE)",
    )
    .unwrap();
    let insert = c.prepare("INSERT INTO item VALUES (?, ?, ?, ?)").unwrap();
    for i in 0..20i64 {
        let name = (i % 3 != 0).then(|| format!("n{i}"));
        let price = Value::Decimal(i128::from(i) * 125, 2);
        let day = Value::Date(19_000 + i as i32);
        assert_eq!(insert.execute((i, name, price, day)).unwrap(), 1);
    }
    let by_id = c
        .prepare("SELECT name, price, day FROM item WHERE id = ?")
        .unwrap();
    for i in [1i64, 7, 19] {
        let r = by_id.query((i,)).unwrap();
        let row = r.row(0).expect("one row");
        assert_eq!(
            row.get::<Option<String>>("name").unwrap(),
            Some(format!("n{i}"))
        );
        let price: Decimal = row.get(1).unwrap();
        assert_eq!(price.unscaled, i128::from(i) * 125);
        let day: NaiveDate = row.get("day").unwrap();
        assert_eq!(
            day,
            NaiveDate::from_ymd_opt(2022, 1, 8).unwrap() + chrono_days(i)
        );
    }
    // No row: an empty result, not an error.
    assert!(by_id.query((1000i64,)).unwrap().row(0).is_none());
    // A NULL read as a plain type says so, naming the column.
    let e = by_id
        .query((3i64,))
        .unwrap()
        .row(0)
        .unwrap()
        .get::<String>(0);
    assert!(e.unwrap_err().to_string().contains("'name'"));
    // query_map over every row.
    let cheap: Vec<(i64, f64)> = c
        .query_map(
            "SELECT id, price FROM item WHERE price < ? ORDER BY id",
            params![Value::Decimal(500, 2)],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap();
    assert_eq!(cheap, vec![(0, 0.0), (1, 1.25), (2, 2.5), (3, 3.75)]);
    // Streamed.
    let range = c.prepare("SELECT id FROM item WHERE id >= ?").unwrap();
    let rows: usize = range
        .query_stream((15i64,))
        .unwrap()
        .map(|b| b.unwrap().num_rows())
        .sum();
    assert_eq!(rows, 5);
    assert_idle(&c);
}

fn chrono_days(i: i64) -> chrono::TimeDelta {
    chrono::TimeDelta::days(i)
}

#[test]
fn a_prepared_query_sees_ddl_made_after_it_and_checks_its_parameters() {
    let c = cluster(2);
    c.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, x BIGINT)")
        .unwrap();
    c.execute("INSERT INTO t VALUES (1, 10), (2, 20)").unwrap();
    let q = c.prepare("SELECT * FROM t WHERE id = ?").unwrap();
    assert_eq!(q.query((1i64,)).unwrap().schema.len(), 2);
    // The table changes under the statement: it plans again and sees the new column.
    c.execute("DROP TABLE t").unwrap();
    c.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, x BIGINT, y VARCHAR)")
        .unwrap();
    c.execute("INSERT INTO t VALUES (1, 10, 'a')").unwrap();
    let r = q.query((1i64,)).unwrap();
    assert_eq!(
        r.rows(),
        vec![vec![Value::Int(1), Value::Int(10), Value::from("a")]]
    );
    // Wrong parameters are the planner's errors, as for an unprepared query.
    assert!(matches!(
        q.query(()).unwrap_err(),
        Error::Plan(weir::planner::PlanError::ParamCount { .. })
    ));
    assert!(q.query(("one",)).is_err());
    // Errors that need no parameter value come from prepare itself.
    let e = c
        .prepare("SELECT nosuch FROM t")
        .err()
        .expect("unknown column");
    assert!(e.to_string().contains("nosuch"), "{e}");
    assert!(c.prepare("SELEC 1").is_err());
    assert_idle(&c);
}

/// `generate_series` takes its bounds as parameters, read at each run of the prepared query;
/// a long series is streamed, and a stream dropped early stops it, its memory returned.
#[test]
fn a_series_takes_its_bounds_as_parameters_and_streams() {
    let c = cluster(3);
    let q = c
        .prepare("SELECT count(*), sum(g) FROM generate_series(?, ?) AS g")
        .unwrap();
    for (start, stop, count, sum) in [
        (1i64, 10i64, 10i64, Some(55i64)),
        (5, 5, 1, Some(5)),
        (10, 1, 0, None),
    ] {
        let r = q.query((start, stop)).unwrap();
        let row = r.row(0).unwrap();
        assert_eq!(row.get::<i64>(0).unwrap(), count, "{start}..{stop}");
        assert_eq!(row.get::<Option<i64>>(1).unwrap(), sum, "{start}..{stop}");
    }
    let e = c
        .prepare("SELECT * FROM generate_series(1, 10, ?)")
        .unwrap()
        .query((0i64,))
        .unwrap_err();
    assert!(e.to_string().contains("step size cannot equal zero"), "{e}");
    // A billion rows are never made: the consumer reads two batches and drops the stream.
    let mut stream = c
        .query_stream("SELECT g * 2 FROM generate_series(1, 1000000000) AS g", &[])
        .unwrap();
    let first = stream.next().unwrap().unwrap();
    assert_eq!(first.column(0).as_i64().unwrap()[..3], [2, 4, 6]);
    assert!(stream.next().unwrap().is_ok());
    drop(stream);
    assert_idle(&c);
}

/// `string_to_table` and `regexp_split_to_table` take their text, separator and flags as
/// parameters, read at each run; a pattern that does not compile fails that run only.
#[test]
fn a_split_takes_its_text_and_separator_as_parameters() {
    let c = cluster(2);
    let split = c
        .prepare("SELECT part, n FROM string_to_table(?, ?) WITH ORDINALITY AS t(part, n)")
        .unwrap();
    let parts = |text: &str, sep: Option<&str>| -> Vec<(String, i64)> {
        let r = split.query((text, sep)).unwrap();
        (0..r.num_rows())
            .map(|i| {
                let row = r.row(i).unwrap();
                (row.get::<String>(0).unwrap(), row.get::<i64>(1).unwrap())
            })
            .collect()
    };
    assert_eq!(parts("a;b", Some(";")), [("a".into(), 1), ("b".into(), 2)]);
    assert_eq!(parts("xy", None), [("x".into(), 1), ("y".into(), 2)]);
    assert!(parts("", Some(";")).is_empty());
    let words = c
        .prepare("SELECT count(*) FROM regexp_split_to_table(?, ?, ?)")
        .unwrap();
    let count = |text: &str, pattern: &str, flags: &str| {
        let r = words.query((text, pattern, flags)).unwrap();
        r.row(0).unwrap().get::<i64>(0).unwrap()
    };
    assert_eq!(count("one  two three", " +", ""), 3);
    assert_eq!(count("aXbxc", "x", "i"), 3);
    let e = words.query(("a", "(", "")).unwrap_err();
    assert!(e.to_string().contains("invalid regular expression"), "{e}");
    assert_eq!(count("a,b", ",", "c"), 2);
    assert_idle(&c);
}
