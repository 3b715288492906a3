//! Arrow interchange (the `weir` crate's `arrow` feature, which this crate enables): every
//! column type leaves a query as Arrow and comes back through `load_arrow` unchanged, and
//! batches built by other Arrow users load with their types converted.

use crate::common;

use common::{cluster, sorted_rows};
use std::sync::Arc;
use weir::arrow::arrow_array::{
    ArrayRef, Date64Array, Float32Array, Int32Array, RecordBatch, StringViewArray,
    TimestampSecondArray,
};
use weir::arrow::arrow_schema::{DataType as ArrowType, TimeUnit};
use weir::Value;

const COLUMNS: &str = "(id BIGINT PRIMARY KEY, name VARCHAR, price DECIMAL(12, 3), day DATE, \
     at TIMESTAMP, ok BOOLEAN, score DOUBLE)";

#[test]
fn every_type_round_trips_through_arrow() {
    let c = cluster(2);
    c.execute(&format!("CREATE TABLE a {COLUMNS}")).unwrap();
    c.execute(&format!("CREATE TABLE b {COLUMNS}")).unwrap();
    c.execute(
        "INSERT INTO a VALUES \
         (1, 'x', 1.250, DATE '2024-02-29', TIMESTAMP '2024-02-29 10:11:12.5', true, 0.5), \
         (2, NULL, NULL, NULL, NULL, NULL, NULL), \
         (3, 'ünïcode, text', -99.999, DATE '1969-12-31', TIMESTAMP '1969-12-31 23:59:59', false, -2.0)",
    )
    .unwrap();
    let result = c.query("SELECT * FROM a", &[]).unwrap();
    let batches = result.to_arrow().unwrap();
    let schema = batches[0].schema();
    let types: Vec<&ArrowType> = schema.fields().iter().map(|f| f.data_type()).collect();
    assert_eq!(
        types,
        vec![
            &ArrowType::Int64,
            &ArrowType::Utf8,
            &ArrowType::Decimal128(12, 3),
            &ArrowType::Date32,
            &ArrowType::Timestamp(TimeUnit::Microsecond, None),
            &ArrowType::Boolean,
            &ArrowType::Float64,
        ]
    );
    let nulls: usize = batches.iter().map(|b| b.column(1).null_count()).sum();
    assert_eq!(nulls, 1);
    let mut loaded = 0;
    for b in &batches {
        loaded += c.load_arrow("b", b).unwrap();
    }
    assert_eq!(loaded, 3);
    let back = c.query("SELECT * FROM b", &[]).unwrap();
    assert_eq!(sorted_rows(back.rows()), sorted_rows(result.rows()));
}

#[test]
fn foreign_arrow_types_convert_to_the_table_and_bad_values_are_refused() {
    let c = cluster(1);
    c.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, score DOUBLE, name VARCHAR, at TIMESTAMP, day DATE)")
        .unwrap();
    let rb = RecordBatch::try_from_iter([
        // Columns by name, in another order than the table's.
        (
            "name",
            Arc::new(StringViewArray::from(vec![Some("a"), None])) as ArrayRef,
        ),
        ("id", Arc::new(Int32Array::from(vec![1, 2])) as ArrayRef),
        (
            "score",
            Arc::new(Float32Array::from(vec![0.5, 1.5])) as ArrayRef,
        ),
        (
            "at",
            Arc::new(TimestampSecondArray::from(vec![60, 0])) as ArrayRef,
        ),
        (
            "day",
            Arc::new(Date64Array::from(vec![86_400_000, 0])) as ArrayRef,
        ),
    ])
    .unwrap();
    assert_eq!(c.load_arrow("t", &rb).unwrap(), 2);
    let r = c
        .query("SELECT id, score, name, at, day FROM t WHERE id = 1", &[])
        .unwrap();
    assert_eq!(
        r.rows(),
        vec![vec![
            Value::Int(1),
            Value::Float(0.5),
            Value::from("a"),
            Value::Timestamp(60_000_000),
            Value::Date(1),
        ]]
    );
    // A duplicate key keeps nothing; a type that cannot convert names its column.
    let err = c.load_arrow("t", &rb).unwrap_err();
    assert!(
        err.to_string().to_lowercase().contains("duplicate"),
        "{err}"
    );
    let wrong = RecordBatch::try_from_iter([
        ("id", Arc::new(Int32Array::from(vec![9])) as ArrayRef),
        ("score", Arc::new(Float32Array::from(vec![1.0])) as ArrayRef),
        ("name", Arc::new(Int32Array::from(vec![1])) as ArrayRef),
        (
            "at",
            Arc::new(TimestampSecondArray::from(vec![0])) as ArrayRef,
        ),
        ("day", Arc::new(Int32Array::from(vec![0])) as ArrayRef),
    ])
    .unwrap();
    let err = c.load_arrow("t", &wrong).unwrap_err().to_string();
    assert!(err.contains("'name'") && err.contains("Int32"), "{err}");
    assert_eq!(c.query("SELECT id FROM t", &[]).unwrap().num_rows(), 2);
    assert!(c.load_arrow("nope", &rb).is_err());
}
