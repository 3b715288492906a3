//! weir batches to and from Arrow [`RecordBatch`]es.
//!
//! weir → Arrow hands fixed-width values over without copying (BIGINT, DOUBLE, DECIMAL,
//! DATE and TIMESTAMP vectors become Arrow buffers as they are; text keeps its bytes and
//! converts its offsets); booleans and validity are repacked as bits. Arrow → weir converts
//! each Arrow column to the table column's type: any integer to BIGINT, DOUBLE or DECIMAL,
//! floats to DOUBLE, decimals to DECIMAL (rescaled, checked against the precision), any
//! string type to VARCHAR, `Date32`/`Date64` to DATE and timestamps of any unit (or dates) to
//! TIMESTAMP in microseconds. Anything else is a [`ConvertError`] naming the column.

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Date64Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type,
    Int64Type, Int8Type, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{
    Array, ArrayRef, BooleanArray, Date32Array, Decimal128Array, Float64Array, Int64Array,
    RecordBatch, StringArray, TimestampMicrosecondArray,
};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType as ArrowType, Field as ArrowField, Schema as ArrowSchema, TimeUnit};
use std::fmt;
use std::sync::Arc;
use weir_operators::{decimal, Batch, Bitmap, Column, ColumnBuilder, ColumnData, DataType, Schema};

/// Why a batch could not be converted: the column (by name), the row (from 1) where known,
/// and what was wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct ConvertError {
    /// The column's name.
    pub column: String,
    /// The row, from 1, when one value was at fault.
    pub row: Option<u64>,
    /// What was wrong.
    pub message: String,
}

impl fmt::Display for ConvertError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.row {
            Some(r) => write!(f, "row {r}, column '{}': {}", self.column, self.message),
            None => write!(f, "column '{}': {}", self.column, self.message),
        }
    }
}

impl std::error::Error for ConvertError {}

/// The Arrow type of a weir type: `Int64`, `Float64`, `Utf8`, `Boolean`,
/// `Decimal128(p, s)`, `Date32` and `Timestamp(Microsecond, None)`.
pub fn arrow_type(dt: DataType) -> ArrowType {
    match dt {
        DataType::Int64 => ArrowType::Int64,
        DataType::Float64 => ArrowType::Float64,
        DataType::Utf8 => ArrowType::Utf8,
        DataType::Boolean => ArrowType::Boolean,
        DataType::Decimal { precision, scale } => ArrowType::Decimal128(precision, scale as i8),
        DataType::Date => ArrowType::Date32,
        DataType::Timestamp => ArrowType::Timestamp(TimeUnit::Microsecond, None),
    }
}

/// The weir type that holds an Arrow type's values, for a table whose columns are taken from
/// a file: integers of every width as BIGINT (`UInt64` too: a value past `i64::MAX` is an
/// error when read), floats as DOUBLE, strings as VARCHAR, `Decimal128` as DECIMAL, `Date32`
/// and `Date64` as DATE, timestamps of every unit as TIMESTAMP. `None` for the rest (lists,
/// structs, binary, times of day, intervals, `Decimal256`).
pub fn weir_type(arrow: &ArrowType) -> Option<DataType> {
    Some(match arrow {
        ArrowType::Int8
        | ArrowType::Int16
        | ArrowType::Int32
        | ArrowType::Int64
        | ArrowType::UInt8
        | ArrowType::UInt16
        | ArrowType::UInt32
        | ArrowType::UInt64 => DataType::Int64,
        ArrowType::Float32 | ArrowType::Float64 => DataType::Float64,
        ArrowType::Utf8 | ArrowType::LargeUtf8 | ArrowType::Utf8View => DataType::Utf8,
        ArrowType::Boolean => DataType::Boolean,
        ArrowType::Decimal128(p, s)
            if *s >= 0 && *p <= weir_operators::types::MAX_DECIMAL_PRECISION =>
        {
            DataType::decimal(*p, *s as u8)
        }
        ArrowType::Date32 | ArrowType::Date64 => DataType::Date,
        ArrowType::Timestamp(_, _) => DataType::Timestamp,
        _ => return None,
    })
}

/// The Arrow schema of a weir schema (every field nullable).
pub fn arrow_schema(schema: &Schema) -> Arc<ArrowSchema> {
    Arc::new(ArrowSchema::new(
        schema
            .fields
            .iter()
            .map(|f| ArrowField::new(&f.name, arrow_type(f.data_type), true))
            .collect::<Vec<_>>(),
    ))
}

fn nulls_of(validity: Option<Bitmap>) -> Option<NullBuffer> {
    validity.map(|v| (0..v.len()).map(|i| v.get(i)).collect::<NullBuffer>())
}

/// One weir column as an Arrow array, without copying fixed-width values.
pub fn to_arrow_array(column: Column) -> Result<ArrayRef, String> {
    let nulls = nulls_of(column.validity);
    Ok(match column.data {
        ColumnData::Int64(v) => Arc::new(Int64Array::new(ScalarBuffer::from(v), nulls)),
        ColumnData::Float64(v) => Arc::new(Float64Array::new(ScalarBuffer::from(v), nulls)),
        ColumnData::Boolean(v) => Arc::new(BooleanArray::new(BooleanBuffer::from(v), nulls)),
        ColumnData::Date(v) => Arc::new(Date32Array::new(ScalarBuffer::from(v), nulls)),
        ColumnData::Timestamp(v) => {
            Arc::new(TimestampMicrosecondArray::new(ScalarBuffer::from(v), nulls))
        }
        ColumnData::Decimal {
            values,
            precision,
            scale,
        } => Arc::new(
            Decimal128Array::new(ScalarBuffer::from(values), nulls)
                .with_precision_and_scale(precision, scale as i8)
                .map_err(|e| e.to_string())?,
        ),
        ColumnData::Utf8 { offsets, bytes } => {
            let offsets: Vec<i32> = offsets
                .into_iter()
                .map(|o| i32::try_from(o).map_err(|_| "text column over 2 GiB".to_string()))
                .collect::<Result<_, _>>()?;
            Arc::new(
                StringArray::try_new(
                    OffsetBuffer::new(ScalarBuffer::from(offsets)),
                    Buffer::from_vec(bytes),
                    nulls,
                )
                .map_err(|e| e.to_string())?,
            )
        }
    })
}

/// A weir batch with the columns of `schema` as an Arrow record batch.
pub fn to_record_batch(schema: &Schema, batch: Batch) -> Result<RecordBatch, ConvertError> {
    let names: Vec<String> = schema.fields.iter().map(|f| f.name.clone()).collect();
    let mut arrays = Vec::with_capacity(names.len());
    for (i, col) in batch.into_columns().into_iter().enumerate() {
        arrays.push(to_arrow_array(col).map_err(|message| ConvertError {
            column: names.get(i).cloned().unwrap_or_default(),
            row: None,
            message,
        })?);
    }
    RecordBatch::try_new(arrow_schema(schema), arrays).map_err(|e| ConvertError {
        column: String::new(),
        row: None,
        message: e.to_string(),
    })
}

/// Which column of `arrow` fills each column of `schema`: by name (ignoring case) when every
/// name is found, else by position when the counts agree.
pub fn match_columns(arrow: &ArrowSchema, schema: &Schema) -> Result<Vec<usize>, ConvertError> {
    let by_name: Option<Vec<usize>> = schema
        .fields
        .iter()
        .map(|f| {
            arrow
                .fields()
                .iter()
                .position(|a| a.name().eq_ignore_ascii_case(&f.name))
        })
        .collect();
    match by_name {
        Some(idx) => Ok(idx),
        None if arrow.fields().len() == schema.fields.len() => {
            Ok((0..schema.fields.len()).collect())
        }
        None => Err(ConvertError {
            column: String::new(),
            row: None,
            message: format!(
                "the data has columns ({}) but the table has ({})",
                arrow
                    .fields()
                    .iter()
                    .map(|f| f.name().as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                schema
                    .fields
                    .iter()
                    .map(|f| f.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }),
    }
}

/// An Arrow record batch as a weir batch of `schema`'s column types (columns matched as
/// [`match_columns`] does), converting each value to its column's type.
pub fn from_record_batch(rb: &RecordBatch, schema: &Schema) -> Result<Batch, ConvertError> {
    let idx = match_columns(rb.schema().as_ref(), schema)?;
    let mut columns = Vec::with_capacity(idx.len());
    for (f, &i) in schema.fields.iter().zip(&idx) {
        columns.push(
            from_arrow_array(rb.column(i).as_ref(), f.data_type).map_err(|(row, message)| {
                ConvertError {
                    column: f.name.clone(),
                    row,
                    message,
                }
            })?,
        );
    }
    Batch::with_row_count(columns, rb.num_rows()).map_err(|e| ConvertError {
        column: String::new(),
        row: None,
        message: e.to_string(),
    })
}

/// Why a value did not convert: the row (from 1) where known, and what was wrong.
pub(crate) type Failure = (Option<u64>, String);

/// Pushes `values` (row-wise options) into a builder through `push`, which may refuse a value.
fn build<T>(
    dt: DataType,
    values: impl Iterator<Item = Option<T>>,
    len: usize,
    mut push: impl FnMut(&mut ColumnBuilder, T) -> Result<(), String>,
) -> Result<Column, Failure> {
    let mut b = ColumnBuilder::new(dt, len);
    for (row, v) in values.enumerate() {
        match v {
            None => b.push_null(),
            Some(v) => push(&mut b, v).map_err(|m| (Some(row as u64 + 1), m))?,
        }
    }
    Ok(b.finish())
}

fn validity_of(a: &dyn Array) -> Option<Bitmap> {
    a.logical_nulls()
        .map(|n| Bitmap::from_bools(&(0..a.len()).map(|i| n.is_valid(i)).collect::<Vec<_>>()))
}

/// One Arrow array as a weir column of type `dt`; the error carries the row where known.
pub(crate) fn from_arrow_array(a: &dyn Array, dt: DataType) -> Result<Column, Failure> {
    let len = a.len();
    let unsupported = || {
        (
            None,
            format!("cannot load Arrow {} into a {dt:?} column", a.data_type()),
        )
    };
    macro_rules! ints {
        ($push:expr) => {
            match a.data_type() {
                ArrowType::Int8 => build(
                    dt,
                    a.as_primitive::<Int8Type>()
                        .iter()
                        .map(|v| v.map(i128::from)),
                    len,
                    $push,
                ),
                ArrowType::Int16 => build(
                    dt,
                    a.as_primitive::<Int16Type>()
                        .iter()
                        .map(|v| v.map(i128::from)),
                    len,
                    $push,
                ),
                ArrowType::Int32 => build(
                    dt,
                    a.as_primitive::<Int32Type>()
                        .iter()
                        .map(|v| v.map(i128::from)),
                    len,
                    $push,
                ),
                ArrowType::Int64 => build(
                    dt,
                    a.as_primitive::<Int64Type>()
                        .iter()
                        .map(|v| v.map(i128::from)),
                    len,
                    $push,
                ),
                ArrowType::UInt8 => build(
                    dt,
                    a.as_primitive::<UInt8Type>()
                        .iter()
                        .map(|v| v.map(i128::from)),
                    len,
                    $push,
                ),
                ArrowType::UInt16 => build(
                    dt,
                    a.as_primitive::<UInt16Type>()
                        .iter()
                        .map(|v| v.map(i128::from)),
                    len,
                    $push,
                ),
                ArrowType::UInt32 => build(
                    dt,
                    a.as_primitive::<UInt32Type>()
                        .iter()
                        .map(|v| v.map(i128::from)),
                    len,
                    $push,
                ),
                ArrowType::UInt64 => build(
                    dt,
                    a.as_primitive::<UInt64Type>()
                        .iter()
                        .map(|v| v.map(i128::from)),
                    len,
                    $push,
                ),
                _ => Err(unsupported()),
            }
        };
    }
    match (dt, a.data_type()) {
        // Same layout: one copy of the values.
        (DataType::Int64, ArrowType::Int64) => Ok(Column::with_validity(
            ColumnData::Int64(a.as_primitive::<Int64Type>().values().to_vec()),
            validity_of(a),
        )),
        (DataType::Float64, ArrowType::Float64) => Ok(Column::with_validity(
            ColumnData::Float64(a.as_primitive::<Float64Type>().values().to_vec()),
            validity_of(a),
        )),
        (DataType::Date, ArrowType::Date32) => Ok(Column::with_validity(
            ColumnData::Date(a.as_primitive::<Date32Type>().values().to_vec()),
            validity_of(a),
        )),
        (DataType::Timestamp, ArrowType::Timestamp(TimeUnit::Microsecond, _)) => {
            Ok(Column::with_validity(
                ColumnData::Timestamp(
                    a.as_primitive::<TimestampMicrosecondType>()
                        .values()
                        .to_vec(),
                ),
                validity_of(a),
            ))
        }
        // The same scale and values within the precision: one copy of the values (else the
        // general path below rescales, and names a value that does not fit).
        (DataType::Decimal { precision, scale }, ArrowType::Decimal128(_, from))
            if i16::from(*from) == i16::from(scale)
                && within_precision(a.as_primitive::<Decimal128Type>().values(), precision) =>
        {
            Ok(Column::with_validity(
                ColumnData::Decimal {
                    values: a.as_primitive::<Decimal128Type>().values().to_vec(),
                    precision,
                    scale,
                },
                validity_of(a),
            ))
        }
        // Strings: the bytes copied in one piece, the offsets rebased.
        (DataType::Utf8, ArrowType::Utf8) => {
            let s = a.as_string::<i32>();
            let offsets = s.value_offsets();
            let (first, last) = (offsets[0], offsets[len]);
            let (Ok(start), Ok(end)) = (usize::try_from(first), usize::try_from(last)) else {
                return Err((None, "negative string offsets".into()));
            };
            let mut rebased = Vec::with_capacity(offsets.len());
            for &o in offsets {
                rebased.push(
                    u32::try_from(o - first)
                        .map_err(|_| (None, "string offsets out of order".to_string()))?,
                );
            }
            Ok(Column::with_validity(
                ColumnData::Utf8 {
                    offsets: rebased,
                    bytes: s.value_data()[start..end].to_vec(),
                },
                validity_of(a),
            ))
        }
        (DataType::Int64, _) => ints!(|b, v| {
            b.push_i64(i64::try_from(v).map_err(|_| format!("{v} does not fit a BIGINT"))?);
            Ok(())
        }),
        (DataType::Float64, ArrowType::Float32) => {
            build(dt, a.as_primitive::<Float32Type>().iter(), len, |b, v| {
                b.push_f64(f64::from(v));
                Ok(())
            })
        }
        (DataType::Float64, _) => ints!(|b, v| {
            b.push_f64(v as f64);
            Ok(())
        }),
        (DataType::Decimal { precision, scale }, ArrowType::Decimal128(_, from)) => {
            let from = u8::try_from(*from).map_err(|_| unsupported())?;
            build(
                dt,
                a.as_primitive::<Decimal128Type>().iter(),
                len,
                |b, v| {
                    let r = decimal::rescale(v, from, scale)
                        .filter(|r| decimal::fits(*r, precision))
                        .ok_or_else(|| {
                            format!(
                                "{} does not fit a DECIMAL({precision}, {scale})",
                                decimal::format(v, from)
                            )
                        })?;
                    b.push_decimal(r);
                    Ok(())
                },
            )
        }
        (DataType::Decimal { precision, scale }, _) => ints!(|b, v| {
            let r = decimal::rescale(v, 0, scale)
                .filter(|r| decimal::fits(*r, precision))
                .ok_or_else(|| format!("{v} does not fit a DECIMAL({precision}, {scale})"))?;
            b.push_decimal(r);
            Ok(())
        }),
        (DataType::Utf8, ArrowType::LargeUtf8) => {
            build(dt, a.as_string::<i64>().iter(), len, push_str)
        }
        (DataType::Utf8, ArrowType::Utf8View) => {
            build(dt, a.as_string_view().iter(), len, push_str)
        }
        (DataType::Boolean, ArrowType::Boolean) => build(dt, a.as_boolean().iter(), len, |b, v| {
            b.push_bool(v);
            Ok(())
        }),
        (DataType::Date, ArrowType::Date64) => {
            build(dt, a.as_primitive::<Date64Type>().iter(), len, |b, ms| {
                let days = i32::try_from(ms.div_euclid(86_400_000))
                    .map_err(|_| format!("{ms} ms is out of DATE's range"))?;
                b.push_date(days);
                Ok(())
            })
        }
        (DataType::Timestamp, ArrowType::Timestamp(unit, _)) => {
            let (values, per_micro): (Vec<Option<i64>>, (i64, i64)) = match unit {
                TimeUnit::Second => (
                    a.as_primitive::<TimestampSecondType>().iter().collect(),
                    (1_000_000, 1),
                ),
                TimeUnit::Millisecond => (
                    a.as_primitive::<TimestampMillisecondType>()
                        .iter()
                        .collect(),
                    (1_000, 1),
                ),
                TimeUnit::Microsecond => (
                    a.as_primitive::<TimestampMicrosecondType>()
                        .iter()
                        .collect(),
                    (1, 1),
                ),
                TimeUnit::Nanosecond => (
                    a.as_primitive::<TimestampNanosecondType>().iter().collect(),
                    (1, 1_000),
                ),
            };
            build(dt, values.into_iter(), len, |b, v| {
                let micros = v
                    .checked_mul(per_micro.0)
                    .map(|m| m.div_euclid(per_micro.1))
                    .ok_or_else(|| format!("{v} is out of TIMESTAMP's range"))?;
                b.push_timestamp(micros);
                Ok(())
            })
        }
        (DataType::Timestamp, ArrowType::Date32) => {
            build(dt, a.as_primitive::<Date32Type>().iter(), len, |b, d| {
                b.push_timestamp(i64::from(d) * 86_400_000_000);
                Ok(())
            })
        }
        _ => Err(unsupported()),
    }
}

/// Whether every value fits `precision` digits (one bound computed, one branch-free pass).
fn within_precision(values: &[i128], precision: u8) -> bool {
    let Some(limit) = decimal::pow10(precision) else {
        return true;
    };
    let limit = limit.unsigned_abs();
    values
        .iter()
        .fold(true, |ok, v| ok & (v.unsigned_abs() < limit))
}

fn push_str(b: &mut ColumnBuilder, s: &str) -> Result<(), String> {
    b.push_str(s);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use weir_operators::{Field, Value};

    #[test]
    fn every_type_round_trips_through_arrow() {
        let schema = Schema::new(vec![
            Field::new("i", DataType::Int64),
            Field::new("f", DataType::Float64),
            Field::new("s", DataType::Utf8),
            Field::new("b", DataType::Boolean),
            Field::new("d", DataType::decimal(10, 2)),
            Field::new("day", DataType::Date),
            Field::new("ts", DataType::Timestamp),
        ]);
        let rows = vec![
            vec![
                Value::Int(-7),
                Value::Float(2.5),
                Value::from("a,b"),
                Value::Bool(true),
                Value::Decimal(1250, 2),
                Value::Date(19_000),
                Value::Timestamp(1_500_000),
            ],
            vec![Value::Null; 7],
        ];
        let batch = Batch::from_rows(&schema.types(), &rows).unwrap();
        let rb = to_record_batch(&schema, batch.clone()).unwrap();
        assert_eq!(rb.num_rows(), 2);
        assert_eq!(rb.column(4).data_type(), &ArrowType::Decimal128(10, 2));
        assert_eq!(rb.column(0).null_count(), 1);
        let back = from_record_batch(&rb, &schema).unwrap();
        assert_eq!(back.rows(), rows);
    }

    #[test]
    fn narrower_types_convert_and_bad_values_name_their_row() {
        let small = arrow_array::Int32Array::from(vec![Some(1), None, Some(30)]);
        let rb = RecordBatch::try_from_iter([("x", Arc::new(small) as ArrayRef)]).unwrap();
        let schema = Schema::new(vec![Field::new("x", DataType::decimal(2, 1))]);
        let err = from_record_batch(&rb, &schema).unwrap_err();
        assert_eq!(err.row, Some(3), "{err}");
        let schema = Schema::new(vec![Field::new("x", DataType::Int64)]);
        let b = from_record_batch(&rb, &schema).unwrap();
        assert_eq!(
            b.rows(),
            vec![vec![Value::Int(1)], vec![Value::Null], vec![Value::Int(30)]]
        );
        let schema = Schema::new(vec![Field::new("x", DataType::Boolean)]);
        assert!(from_record_batch(&rb, &schema)
            .unwrap_err()
            .message
            .contains("cannot load Arrow Int32"));
    }

    #[test]
    fn sliced_strings_and_decimals_past_their_precision() {
        // A slice starts its offsets past zero: the bytes are rebased.
        let strings = StringArray::from(vec![Some("skip"), Some("ab"), None, Some("cde")]);
        let sliced = strings.slice(1, 3);
        let col = from_arrow_array(&sliced, DataType::Utf8).unwrap();
        assert_eq!(
            (0..3).map(|i| col.value(i)).collect::<Vec<_>>(),
            vec![Value::from("ab"), Value::Null, Value::from("cde")]
        );
        // Same scale, values within the precision: taken as they are.
        let d = Decimal128Array::from(vec![Some(12345), None])
            .with_precision_and_scale(7, 2)
            .unwrap();
        let col = from_arrow_array(&d, DataType::decimal(5, 2)).unwrap();
        assert_eq!(col.value(0), Value::Decimal(12345, 2));
        // A value past the column's precision is named, not taken.
        let big = Decimal128Array::from(vec![Some(1), Some(1_234_567)])
            .with_precision_and_scale(9, 2)
            .unwrap();
        let (row, message) = from_arrow_array(&big, DataType::decimal(5, 2)).unwrap_err();
        assert_eq!(row, Some(2), "{message}");
    }
}
