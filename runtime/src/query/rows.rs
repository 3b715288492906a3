//! Typed access to results and parameters: [`Row::get`] reads a column as a Rust type
//! ([`FromValue`]) by position or name ([`ColumnIndex`]), and [`IntoParams`] turns tuples,
//! slices and vectors into a statement's parameters (see also the [`params!`](crate::params)
//! macro).
//!
//! ```
//! use weir_runtime::{params, Cluster};
//! let cluster = Cluster::builder().nodes(1).partitions(4).build().unwrap();
//! cluster.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, name VARCHAR, score DOUBLE)").unwrap();
//! cluster.execute("INSERT INTO t VALUES (1, 'a', 0.5), (2, NULL, 1.5)").unwrap();
//! let names: Vec<(i64, Option<String>)> = cluster
//!     .query_map("SELECT id, name FROM t WHERE score > ? ORDER BY id", (0.0,), |row| {
//!         Ok((row.get(0)?, row.get("name")?))
//!     })
//!     .unwrap();
//! assert_eq!(names, vec![(1, Some("a".to_string())), (2, None)]);
//! let r = cluster.query("SELECT score FROM t WHERE id = ?", &params![2]).unwrap();
//! let score: f64 = r.row(0).unwrap().get("score").unwrap();
//! assert_eq!(score, 1.5);
//! ```

use crate::error::{Error, Result};
use crate::query::result::QueryResult;
use chrono::{NaiveDate, NaiveDateTime};
use std::fmt;
use weir_operators::{temporal, Batch, Schema, Value};

/// An exact decimal as weir stores it: `unscaled / 10^scale` (`12.50` is `1250` at scale 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Decimal {
    /// The value times `10^scale`.
    pub unscaled: i128,
    /// Digits after the decimal point.
    pub scale: u8,
}

impl Decimal {
    /// The nearest `f64`.
    pub fn to_f64(self) -> f64 {
        self.unscaled as f64 / 10f64.powi(i32::from(self.scale))
    }
}

impl fmt::Display for Decimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", Value::Decimal(self.unscaled, self.scale))
    }
}

/// A Rust type a result value converts to. `Option<T>` takes NULL as `None`; every other
/// type refuses NULL.
pub trait FromValue: Sized {
    /// `value` as `Self`, or why not.
    fn from_value(value: Value) -> std::result::Result<Self, String>;
}

fn mismatch(value: &Value, wanted: &str) -> String {
    match value.data_type() {
        None => format!("NULL is not {wanted} (read it as an Option)"),
        Some(t) => format!("a {t} value is not {wanted}"),
    }
}

impl FromValue for Value {
    fn from_value(value: Value) -> std::result::Result<Self, String> {
        Ok(value)
    }
}

impl<T: FromValue> FromValue for Option<T> {
    fn from_value(value: Value) -> std::result::Result<Self, String> {
        match value {
            Value::Null => Ok(None),
            v => T::from_value(v).map(Some),
        }
    }
}

impl FromValue for i64 {
    fn from_value(value: Value) -> std::result::Result<Self, String> {
        match value {
            Value::Int(i) => Ok(i),
            v => Err(mismatch(&v, "an i64")),
        }
    }
}

impl FromValue for i32 {
    fn from_value(value: Value) -> std::result::Result<Self, String> {
        match value {
            Value::Int(i) => i32::try_from(i).map_err(|_| format!("{i} does not fit an i32")),
            v => Err(mismatch(&v, "an i32")),
        }
    }
}

impl FromValue for f64 {
    fn from_value(value: Value) -> std::result::Result<Self, String> {
        match value {
            Value::Float(x) => Ok(x),
            Value::Int(i) => Ok(i as f64),
            Value::Decimal(u, s) => Ok(Decimal {
                unscaled: u,
                scale: s,
            }
            .to_f64()),
            v => Err(mismatch(&v, "an f64")),
        }
    }
}

impl FromValue for bool {
    fn from_value(value: Value) -> std::result::Result<Self, String> {
        match value {
            Value::Bool(b) => Ok(b),
            v => Err(mismatch(&v, "a bool")),
        }
    }
}

impl FromValue for String {
    fn from_value(value: Value) -> std::result::Result<Self, String> {
        match value {
            Value::Str(s) => Ok(s),
            v => Err(mismatch(&v, "a String")),
        }
    }
}

impl FromValue for Decimal {
    fn from_value(value: Value) -> std::result::Result<Self, String> {
        match value {
            Value::Decimal(unscaled, scale) => Ok(Decimal { unscaled, scale }),
            Value::Int(i) => Ok(Decimal {
                unscaled: i128::from(i),
                scale: 0,
            }),
            v => Err(mismatch(&v, "a Decimal")),
        }
    }
}

impl FromValue for NaiveDate {
    fn from_value(value: Value) -> std::result::Result<Self, String> {
        match value {
            Value::Date(d) => {
                temporal::to_date(d).ok_or_else(|| format!("day {d} is out of range"))
            }
            v => Err(mismatch(&v, "a date")),
        }
    }
}

impl FromValue for NaiveDateTime {
    fn from_value(value: Value) -> std::result::Result<Self, String> {
        match value {
            Value::Timestamp(t) => {
                temporal::to_datetime(t).ok_or_else(|| format!("timestamp {t} is out of range"))
            }
            Value::Date(d) => temporal::to_datetime(temporal::date_to_timestamp(d))
                .ok_or_else(|| format!("day {d} is out of range")),
            v => Err(mismatch(&v, "a timestamp")),
        }
    }
}

/// How a column is named in [`Row::get`]: its position (`usize`) or its name (`&str`,
/// case-insensitive).
pub trait ColumnIndex {
    /// The column's position in `schema`.
    fn position(&self, schema: &Schema) -> Result<usize>;
}

impl ColumnIndex for usize {
    fn position(&self, schema: &Schema) -> Result<usize> {
        if *self < schema.len() {
            Ok(*self)
        } else {
            Err(Error::Invalid(format!(
                "column {self} is out of range: the result has {} columns",
                schema.len()
            )))
        }
    }
}

impl ColumnIndex for &str {
    fn position(&self, schema: &Schema) -> Result<usize> {
        schema
            .fields
            .iter()
            .position(|f| f.name.eq_ignore_ascii_case(self))
            .ok_or_else(|| Error::Invalid(format!("the result has no column '{self}'")))
    }
}

/// One row of a result, read a column at a time.
#[derive(Clone, Copy)]
pub struct Row<'a> {
    schema: &'a Schema,
    batch: &'a Batch,
    row: usize,
}

impl<'a> Row<'a> {
    /// Row `row` of `batch`, whose columns `schema` names.
    pub fn new(schema: &'a Schema, batch: &'a Batch, row: usize) -> Self {
        Row { schema, batch, row }
    }

    /// Column `index` (a position or a name) as a `T`; an error names the column and why
    /// the value does not convert.
    pub fn get<T: FromValue>(&self, index: impl ColumnIndex) -> Result<T> {
        let c = index.position(self.schema)?;
        let value = self.batch.column(c).value(self.row);
        T::from_value(value).map_err(|why| {
            Error::Invalid(format!("column '{}': {why}", self.schema.fields[c].name))
        })
    }

    /// Number of columns.
    pub fn len(&self) -> usize {
        self.schema.len()
    }

    /// Whether the row has no columns.
    pub fn is_empty(&self) -> bool {
        self.schema.len() == 0
    }
}

impl QueryResult {
    /// The rows, typed access one at a time.
    pub fn iter(&self) -> impl Iterator<Item = Row<'_>> {
        self.batches
            .iter()
            .flat_map(move |b| (0..b.num_rows()).map(move |r| Row::new(&self.schema, b, r)))
    }

    /// Row `i`, if the result has that many.
    pub fn row(&self, mut i: usize) -> Option<Row<'_>> {
        for b in &self.batches {
            if i < b.num_rows() {
                return Some(Row::new(&self.schema, b, i));
            }
            i -= b.num_rows();
        }
        None
    }
}

/// A statement's parameters: `&[Value]`, `Vec<Value>`, `()` and tuples of up to eight values
/// of types that convert into a [`Value`] (`i64`, `f64`, `&str`, `bool`, `Option<T>`, ...).
pub trait IntoParams {
    /// The parameter values, in order.
    fn into_params(self) -> Vec<Value>;
}

impl IntoParams for &[Value] {
    fn into_params(self) -> Vec<Value> {
        self.to_vec()
    }
}

impl<const N: usize> IntoParams for &[Value; N] {
    fn into_params(self) -> Vec<Value> {
        self.to_vec()
    }
}

impl IntoParams for Vec<Value> {
    fn into_params(self) -> Vec<Value> {
        self
    }
}

impl IntoParams for &Vec<Value> {
    fn into_params(self) -> Vec<Value> {
        self.clone()
    }
}

macro_rules! tuple_params {
    ($($name:ident),+) => {
        impl<$($name: Into<Value>),+> IntoParams for ($($name,)+) {
            #[allow(non_snake_case)]
            fn into_params(self) -> Vec<Value> {
                let ($($name,)+) = self;
                vec![$($name.into()),+]
            }
        }
    };
}

impl IntoParams for () {
    fn into_params(self) -> Vec<Value> {
        Vec::new()
    }
}

tuple_params!(A);
tuple_params!(A, B);
tuple_params!(A, B, C);
tuple_params!(A, B, C, D);
tuple_params!(A, B, C, D, E);
tuple_params!(A, B, C, D, E, F);
tuple_params!(A, B, C, D, E, F, G);
tuple_params!(A, B, C, D, E, F, G, H);

/// Parameter values from expressions of any types that convert into a
/// [`Value`](weir_operators::Value): `params![1, "a", 2.5, None::<i64>]` is a `Vec<Value>`.
#[macro_export]
macro_rules! params {
    () => { ::std::vec::Vec::<$crate::Value>::new() };
    ($($p:expr),+ $(,)?) => { ::std::vec![$($crate::Value::from($p)),+] };
}

#[cfg(test)]
mod tests {
    use super::*;
    use weir_operators::{Column, DataType, Field};

    fn result() -> QueryResult {
        let schema = Schema::new(vec![
            Field::new("id", DataType::Int64),
            Field::new("Name", DataType::Utf8),
            Field::new("price", DataType::decimal(10, 2)),
            Field::new("day", DataType::Date),
        ]);
        let rows = vec![
            vec![
                Value::Int(7),
                Value::from("x"),
                Value::Decimal(1250, 2),
                Value::Date(19_000),
            ],
            vec![Value::Int(1 << 40), Value::Null, Value::Null, Value::Null],
        ];
        let batch = Batch::from_rows(&schema.types(), &rows).unwrap();
        QueryResult {
            schema,
            batches: vec![
                batch,
                Batch::try_new(vec![Column::from_i64(vec![])]).unwrap(),
            ],
            stats: Default::default(),
        }
    }

    #[test]
    fn reads_columns_by_position_and_name_as_rust_types() {
        let r = result();
        let first = r.row(0).unwrap();
        assert_eq!(first.get::<i64>(0).unwrap(), 7);
        assert_eq!(first.get::<i32>("ID").unwrap(), 7);
        assert_eq!(first.get::<String>("name").unwrap(), "x");
        let price: Decimal = first.get("price").unwrap();
        assert_eq!(price.to_string(), "12.50");
        assert_eq!(first.get::<f64>("price").unwrap(), 12.5);
        let day: NaiveDate = first.get("day").unwrap();
        assert_eq!(day.to_string(), "2022-01-08");
        let second = r.row(1).unwrap();
        assert_eq!(second.get::<Option<String>>(1).unwrap(), None);
        assert!(r.row(2).is_none());
        assert_eq!(r.iter().count(), 2);
    }

    #[test]
    fn conversions_that_do_not_fit_are_errors_naming_the_column() {
        let r = result();
        let second = r.row(1).unwrap();
        let e = second.get::<i32>("id").unwrap_err().to_string();
        assert!(
            e.contains("'id'") && e.contains("does not fit an i32"),
            "{e}"
        );
        let e = second.get::<String>("name").unwrap_err().to_string();
        assert!(e.contains("NULL is not a String"), "{e}");
        let e = r.row(0).unwrap().get::<bool>(0).unwrap_err().to_string();
        assert!(e.contains("BIGINT value is not a bool"), "{e}");
        assert!(r.row(0).unwrap().get::<i64>(9).is_err());
        assert!(r.row(0).unwrap().get::<i64>("nosuch").is_err());
    }

    #[test]
    fn params_from_tuples_slices_and_the_macro() {
        assert_eq!(
            (1i64, "a", 2.5f64, true).into_params(),
            vec![
                Value::Int(1),
                Value::from("a"),
                Value::Float(2.5),
                Value::Bool(true)
            ]
        );
        assert_eq!(().into_params(), Vec::<Value>::new());
        let v = crate::params![3i64, "b"];
        assert_eq!(v, vec![Value::Int(3), Value::from("b")]);
        assert_eq!((&v).into_params(), v);
        assert_eq!(v.as_slice().into_params(), v);
    }
}
