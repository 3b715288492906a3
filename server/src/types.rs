//! weir's types as PostgreSQL sees them: each [`DataType`] has a type OID and a type modifier
//! ([`pg_type`], [`field`]), each value a text and a binary encoding ([`encode_batch`]), and
//! each parameter a decoding from the client's text or binary bytes ([`decode_param`]).
//!
//! | weir | PostgreSQL | binary encoding |
//! |---|---|---|
//! | `BIGINT` (also `INTEGER`, `SMALLINT`) | `int8` (20) | 8-byte big-endian |
//! | `DOUBLE` (also `REAL`) | `float8` (701) | IEEE 754, big-endian |
//! | `DECIMAL(p, s)` | `numeric` (1700), typmod `(p << 16 \| s) + 4` | base-10000 digits, exact |
//! | `VARCHAR` / `TEXT` | `text` (25) | UTF-8 bytes |
//! | `BOOLEAN` | `bool` (16) | one byte |
//! | `DATE` | `date` (1082) | days since 2000-01-01 |
//! | `TIMESTAMP` | `timestamp` (1114) | microseconds since 2000-01-01 |
//!
//! Parameters decode from `int2`, `int4`, `int8`, `float4`, `float8`, `numeric`, `text`,
//! `varchar`, `bpchar`, `name`, `unknown`, `bool`, `date`, `timestamp` and `timestamptz` (read
//! as UTC), in both formats.

use bytes::{Buf, BufMut, BytesMut};
use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime};
use pgwire::api::portal::Format;
use pgwire::api::results::{FieldFormat, FieldInfo};
use pgwire::api::Type;
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::data::DataRow;
use weir_operators::{Batch, Column, DataType, Value};

use crate::errors::user_error;

/// Days from 1970-01-01 (weir's epoch) to 2000-01-01 (PostgreSQL's).
const PG_EPOCH_DAYS: i32 = 10_957;
/// Microseconds from 1970-01-01 to 2000-01-01.
const PG_EPOCH_MICROS: i64 = PG_EPOCH_DAYS as i64 * 86_400_000_000;
/// Days from 0001-01-01 (chrono's day 1 of the common era) to 1970-01-01.
const UNIX_EPOCH_FROM_CE: i32 = 719_163;

/// The PostgreSQL type of a weir type.
pub fn pg_type(t: DataType) -> Type {
    match t {
        DataType::Int64 => Type::INT8,
        DataType::Float64 => Type::FLOAT8,
        DataType::Utf8 => Type::TEXT,
        DataType::Boolean => Type::BOOL,
        DataType::Decimal { .. } => Type::NUMERIC,
        DataType::Date => Type::DATE,
        DataType::Timestamp => Type::TIMESTAMP,
    }
}

/// The weir type a parameter of PostgreSQL type `t` becomes, if weir has one.
pub fn weir_type(t: &Type) -> Option<DataType> {
    Some(match *t {
        Type::INT2 | Type::INT4 | Type::INT8 => DataType::Int64,
        Type::FLOAT4 | Type::FLOAT8 => DataType::Float64,
        Type::NUMERIC => DataType::decimal(38, 0),
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => DataType::Utf8,
        Type::BOOL => DataType::Boolean,
        Type::DATE => DataType::Date,
        Type::TIMESTAMP | Type::TIMESTAMPTZ => DataType::Timestamp,
        _ => return None,
    })
}

/// A result column's description: its name, type OID, size and modifier, and format.
pub fn field(name: &str, t: DataType, format: FieldFormat) -> FieldInfo {
    let (size, modifier) = match t {
        DataType::Int64 | DataType::Float64 | DataType::Timestamp => (8, -1),
        DataType::Date => (4, -1),
        DataType::Boolean => (1, -1),
        DataType::Utf8 => (-1, -1),
        DataType::Decimal { precision, scale } => {
            (-1, ((i32::from(precision) << 16) | i32::from(scale)) + 4)
        }
    };
    FieldInfo::new(name.to_string(), None, None, pg_type(t), format)
        .with_type_size(size)
        .with_type_modifier(modifier)
}

/// A result column of a PostgreSQL type weir's types do not name: an array (`text[]`,
/// `bool[]`, `int8[]`, `int2[]`, `int2vector`) or `json`.
pub fn pg_field(name: &str, t: Type, format: FieldFormat) -> FieldInfo {
    FieldInfo::new(name.to_string(), None, None, t, format).with_type_size(-1)
}

/// The elements of a one-dimensional array in PostgreSQL's text form (`{a,"b c",NULL}`):
/// `None` for a NULL element. Text that is not such an array gives no elements.
pub fn array_elements(text: &str) -> Vec<Option<String>> {
    let Some(inner) = text.strip_prefix('{').and_then(|t| t.strip_suffix('}')) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut chars = inner.chars().peekable();
    while chars.peek().is_some() {
        let mut element = String::new();
        let quoted = chars.peek() == Some(&'"');
        if quoted {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => element.extend(chars.next()),
                    '"' => break,
                    c => element.push(c),
                }
            }
            // Up to the separator.
            for c in chars.by_ref() {
                if c == ',' {
                    break;
                }
            }
            out.push(Some(element));
        } else {
            for c in chars.by_ref() {
                if c == ',' {
                    break;
                }
                element.push(c);
            }
            let element = element.trim();
            out.push((!element.eq_ignore_ascii_case("NULL")).then(|| element.to_string()));
        }
    }
    out
}

/// An array held in its text form (an `int2vector`'s numbers separated by spaces), encoded
/// in PostgreSQL's binary array format: one
/// dimension (none when empty), a NULL flag, the element type's id, the length and lower
/// bound 1, then each element (length and bytes, -1 for NULL) in its binary form.
fn encode_array(text: &str, array: &Type, buf: &mut BytesMut) {
    let element_type = match *array {
        Type::BOOL_ARRAY => Type::BOOL,
        Type::INT2_ARRAY | Type::INT2_VECTOR => Type::INT2,
        Type::INT8_ARRAY => Type::INT8,
        _ => Type::TEXT,
    };
    let elements = if *array == Type::INT2_VECTOR {
        text.split_whitespace()
            .map(|e| Some(e.to_string()))
            .collect()
    } else {
        array_elements(text)
    };
    let mut body = BytesMut::new();
    let dims = i32::from(!elements.is_empty());
    body.put_i32(dims);
    body.put_i32(i32::from(elements.iter().any(Option::is_none)));
    body.put_u32(element_type.oid());
    if dims == 1 {
        body.put_i32(elements.len() as i32);
        body.put_i32(1);
    }
    for e in &elements {
        let Some(e) = e else {
            body.put_i32(-1);
            continue;
        };
        match element_type {
            Type::BOOL => {
                body.put_i32(1);
                body.put_u8(u8::from(e == "t" || e == "true"));
            }
            Type::INT2 => {
                body.put_i32(2);
                body.put_i16(e.parse().unwrap_or(0));
            }
            Type::INT8 => {
                body.put_i32(8);
                body.put_i64(e.parse().unwrap_or(0));
            }
            _ => {
                body.put_i32(e.len() as i32);
                body.put_slice(e.as_bytes());
            }
        }
    }
    buf.put_i32(body.len() as i32);
    buf.put_slice(&body);
}

/// The format of column `i` of `n` under a Bind message's result formats: none (text), one
/// for every column, or one per column; any other count is a protocol violation.
pub fn format_at(format: &Format, i: usize, n: usize) -> PgWireResult<FieldFormat> {
    match format {
        Format::UnifiedText => Ok(FieldFormat::Text),
        Format::UnifiedBinary => Ok(FieldFormat::Binary),
        Format::Individual(codes) if codes.len() == n => Ok(FieldFormat::from(codes[i])),
        Format::Individual(codes) => Err(user_error(
            "08P01",
            format!("{} format codes given for {n} values", codes.len()),
        )),
    }
}

/// The rows of `batch` as DataRow messages, column `i` in format `formats[i]`.
pub fn encode_batch(batch: &Batch, formats: &[FieldFormat]) -> Vec<DataRow> {
    let rows = batch.num_rows();
    let columns: Vec<ColumnEncoder> = formats
        .iter()
        .enumerate()
        .map(|(i, f)| ColumnEncoder::new(batch.column(i), *f))
        .collect();
    // One buffer for the batch, each row split off it: room for the first row's size (or a
    // guess) times the rows, so that it is allocated once in the usual case.
    let mut buf = BytesMut::new();
    let mut out = Vec::with_capacity(rows);
    for row in 0..rows {
        for c in &columns {
            c.encode(row, &mut buf);
        }
        if row == 0 {
            let per_row = buf.len().max(16);
            buf.reserve(per_row * rows + per_row / 2);
        }
        out.push(DataRow::new(buf.split(), columns.len() as i16));
    }
    out
}

/// A column's values as its encoder reads them: the slice of its type, looked up once per
/// batch, not once per value.
enum Values<'a> {
    Int(&'a [i64]),
    Float(&'a [f64]),
    Text,
    Bool(&'a [bool]),
    Decimal(&'a [i128], u8),
    Date(&'a [i32]),
    Timestamp(&'a [i64]),
}

/// Encodes one column's values into DataRow messages (see [`encode_batch`]).
struct ColumnEncoder<'a> {
    column: &'a Column,
    values: Values<'a>,
    binary: bool,
    nullable: bool,
}

impl<'a> ColumnEncoder<'a> {
    fn new(column: &'a Column, format: FieldFormat) -> Self {
        let values = match column.data_type() {
            DataType::Int64 => Values::Int(column.as_i64().unwrap_or_default()),
            DataType::Float64 => Values::Float(column.as_f64().unwrap_or_default()),
            DataType::Utf8 => Values::Text,
            DataType::Boolean => Values::Bool(column.as_bool().unwrap_or_default()),
            DataType::Decimal { .. } => {
                let (v, scale) = column.as_decimal().unwrap_or((&[], 0));
                Values::Decimal(v, scale)
            }
            DataType::Date => Values::Date(column.as_date().unwrap_or_default()),
            DataType::Timestamp => Values::Timestamp(column.as_timestamp().unwrap_or_default()),
        };
        ColumnEncoder {
            column,
            values,
            binary: format == FieldFormat::Binary,
            nullable: column.null_count() > 0,
        }
    }

    /// Appends row `row`'s value: its length (-1 for NULL), then its bytes.
    #[inline]
    fn encode(&self, row: usize, buf: &mut BytesMut) {
        if self.nullable && self.column.is_null(row) {
            buf.put_i32(-1);
            return;
        }
        let binary = self.binary;
        match self.values {
            // Fixed-size binary values know their length.
            Values::Int(v) if binary => {
                buf.put_i32(8);
                buf.put_i64(v[row]);
            }
            Values::Timestamp(v) if binary => {
                buf.put_i32(8);
                buf.put_i64(v[row] - PG_EPOCH_MICROS);
            }
            Values::Float(v) if binary => {
                buf.put_i32(8);
                buf.put_f64(v[row]);
            }
            Values::Bool(v) if binary => {
                buf.put_i32(1);
                buf.put_u8(u8::from(v[row]));
            }
            Values::Date(v) if binary => {
                buf.put_i32(4);
                buf.put_i32(v[row] - PG_EPOCH_DAYS);
            }
            Values::Text => {
                let text = self.column.str_at(row).as_bytes();
                buf.put_i32(text.len() as i32);
                buf.put_slice(text);
            }
            Values::Bool(v) => {
                buf.put_i32(1);
                buf.put_u8(if v[row] { b't' } else { b'f' });
            }
            Values::Int(v) => {
                let mut digits = itoa::Buffer::new();
                let text = digits.format(v[row]).as_bytes();
                buf.put_i32(text.len() as i32);
                buf.put_slice(text);
            }
            // The rest is written, then its length filled in.
            _ => {
                let at = buf.len();
                buf.put_i32(0);
                match self.values {
                    Values::Float(v) => buf.put_slice(float_text(v[row]).as_bytes()),
                    Values::Decimal(v, scale) if binary => numeric_binary(v[row], scale, buf),
                    Values::Decimal(v, scale) => {
                        buf.put_slice(decimal_text(v[row], scale).as_bytes())
                    }
                    Values::Date(v) => buf.put_slice(date_text(v[row]).as_bytes()),
                    Values::Timestamp(v) => buf.put_slice(timestamp_text(v[row]).as_bytes()),
                    Values::Int(_) | Values::Text | Values::Bool(_) => {}
                }
                let len = (buf.len() - at - 4) as i32;
                buf[at..at + 4].copy_from_slice(&len.to_be_bytes());
            }
        }
    }
}

/// The rows of `values` (computed by the server itself: TEXT, BIGINT and BOOLEAN values) as
/// DataRow messages, value `i` of a row in format `formats[i]`.
pub fn encode_values(
    rows: &[Vec<Value>],
    formats: &[FieldFormat],
    arrays: &[Option<Type>],
) -> Vec<DataRow> {
    let mut buf = BytesMut::new();
    rows.iter()
        .map(|row| {
            for (i, v) in row.iter().enumerate() {
                let format = formats.get(i).copied().unwrap_or(FieldFormat::Text);
                match (arrays.get(i).cloned().flatten(), v, format) {
                    // `json`'s binary form is its text.
                    (Some(Type::JSON), _, _) => encode_one(v, FieldFormat::Text, &mut buf),
                    (Some(array), Value::Str(text), FieldFormat::Binary) => {
                        encode_array(text, &array, &mut buf)
                    }
                    _ => encode_one(v, format, &mut buf),
                }
            }
            DataRow::new(buf.split(), row.len() as i16)
        })
        .collect()
}

/// Row `row` of `col` as PostgreSQL prints it (`None` for NULL), for COPY's text formats.
pub fn text_value(col: &Column, row: usize) -> Option<String> {
    if col.is_null(row) {
        return None;
    }
    Some(match col.data_type() {
        DataType::Int64 => col.as_i64().map_or(0, |v| v[row]).to_string(),
        DataType::Float64 => float_text(col.as_f64().map_or(0.0, |v| v[row])),
        DataType::Utf8 => col.str_at(row).to_string(),
        DataType::Boolean => if col.as_bool().is_some_and(|v| v[row]) {
            "t"
        } else {
            "f"
        }
        .into(),
        DataType::Decimal { .. } => {
            let (v, scale) = col.as_decimal().map_or((0, 0), |(v, s)| (v[row], s));
            decimal_text(v, scale)
        }
        DataType::Date => date_text(col.as_date().map_or(0, |v| v[row])),
        DataType::Timestamp => timestamp_text(col.as_timestamp().map_or(0, |v| v[row])),
    })
}

/// Appends one value computed by the server (SHOW, `version()`): TEXT (the same bytes in
/// both formats), BIGINT or BOOLEAN, or NULL.
fn encode_one(v: &Value, format: FieldFormat, buf: &mut BytesMut) {
    let text = match v {
        Value::Null => {
            buf.put_i32(-1);
            return;
        }
        Value::Str(s) => s.clone(),
        Value::Int(i) if format == FieldFormat::Binary => {
            buf.put_i32(8);
            buf.put_i64(*i);
            return;
        }
        Value::Int(i) => i.to_string(),
        Value::Bool(b) if format == FieldFormat::Binary => {
            buf.put_i32(1);
            buf.put_u8(u8::from(*b));
            return;
        }
        Value::Bool(b) => if *b { "t" } else { "f" }.to_string(),
        Value::Float(f) => float_text(*f),
        Value::Decimal(v, s) => decimal_text(*v, *s),
        Value::Date(d) => date_text(*d),
        Value::Timestamp(t) => timestamp_text(*t),
    };
    buf.put_i32(text.len() as i32);
    buf.put_slice(text.as_bytes());
}

/// A DOUBLE as PostgreSQL prints it: the shortest text that reads back to the same value,
/// with an exponent below 1e-4 and from 1e15 (`1e+20`, `1.5e-05`), `NaN`, `Infinity`.
pub fn float_text(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let sci = format!("{v:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..15).contains(&exp) {
        format!("{v}")
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    }
}

/// An exact decimal with `scale` digits after the point (`1250, 2` is `12.50`).
pub fn decimal_text(v: i128, scale: u8) -> String {
    let digits = v.unsigned_abs().to_string();
    let scale = scale as usize;
    let sign = if v < 0 { "-" } else { "" };
    if scale == 0 {
        return format!("{sign}{digits}");
    }
    let padded = if digits.len() <= scale {
        format!("{}{digits}", "0".repeat(scale + 1 - digits.len()))
    } else {
        digits
    };
    let (int, frac) = padded.split_at(padded.len() - scale);
    format!("{sign}{int}.{frac}")
}

/// A DATE (days since 1970-01-01) as `YYYY-MM-DD`.
pub fn date_text(days: i32) -> String {
    match days
        .checked_add(UNIX_EPOCH_FROM_CE)
        .and_then(NaiveDate::from_num_days_from_ce_opt)
    {
        Some(d) => d.format("%Y-%m-%d").to_string(),
        None => days.to_string(),
    }
}

/// A TIMESTAMP (microseconds since 1970-01-01) as `YYYY-MM-DD HH:MM:SS[.ffffff]`, the
/// fraction without trailing zeros as PostgreSQL prints it.
pub fn timestamp_text(micros: i64) -> String {
    let Some(t) = DateTime::from_timestamp_micros(micros) else {
        return micros.to_string();
    };
    let t = t.naive_utc();
    let mut s = t.format("%Y-%m-%d %H:%M:%S").to_string();
    let frac = micros.rem_euclid(1_000_000);
    if frac != 0 {
        let f = format!("{frac:06}");
        s.push('.');
        s.push_str(f.trim_end_matches('0'));
    }
    s
}

/// Appends a NUMERIC in PostgreSQL's binary form: digit count, weight, sign, display scale,
/// then the base-10000 digits.
pub fn numeric_binary(v: i128, scale: u8, buf: &mut BytesMut) {
    let digits = v.unsigned_abs().to_string();
    let scale_n = scale as usize;
    let (int, frac) = if digits.len() > scale_n {
        let (i, f) = digits.split_at(digits.len() - scale_n);
        (i.to_string(), f.to_string())
    } else {
        (
            String::new(),
            format!("{}{digits}", "0".repeat(scale_n - digits.len())),
        )
    };
    let mut groups: Vec<i16> = Vec::new();
    let first = int.len() % 4;
    if first > 0 {
        groups.push(int[..first].parse().unwrap_or(0));
    }
    let mut i = first;
    while i < int.len() {
        groups.push(int[i..i + 4].parse().unwrap_or(0));
        i += 4;
    }
    let mut weight = groups.len() as i16 - 1;
    let mut frac = frac;
    while frac.len() % 4 != 0 {
        frac.push('0');
    }
    for chunk in frac.as_bytes().chunks(4) {
        let g = std::str::from_utf8(chunk)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        groups.push(g);
    }
    let leading = groups.iter().take_while(|g| **g == 0).count();
    groups.drain(..leading);
    weight -= leading as i16;
    while groups.last() == Some(&0) {
        groups.pop();
    }
    if groups.is_empty() {
        weight = 0;
    }
    buf.put_i16(groups.len() as i16);
    buf.put_i16(weight);
    buf.put_u16(if v < 0 && !groups.is_empty() {
        0x4000
    } else {
        0
    });
    buf.put_i16(i16::from(scale));
    for g in groups {
        buf.put_i16(g);
    }
}

/// Reads a NUMERIC in PostgreSQL's binary form as an unscaled value and its scale; fails on
/// NaN, infinities and values past 38 digits.
pub fn numeric_from_binary(mut b: &[u8]) -> Result<(i128, u8), String> {
    if b.len() < 8 {
        return Err("numeric value too short".into());
    }
    let n = b.get_i16();
    let weight = i32::from(b.get_i16());
    let sign = b.get_u16();
    let dscale = b.get_i16();
    if sign == 0xC000 || sign == 0xD000 || sign == 0xF000 {
        return Err("NaN and infinite NUMERIC values are not supported".into());
    }
    if !(0..=38).contains(&dscale) || n < 0 || b.len() != 2 * n as usize {
        return Err("malformed numeric value".into());
    }
    let too_big = || "numeric value out of range (38 digits at most)".to_string();
    let mut v: i128 = 0;
    for i in 0..n as i32 {
        let d = i128::from(b.get_i16());
        // The digit's power of ten once scaled by dscale.
        let exp = 4 * (weight - i) + i32::from(dscale);
        if exp >= 0 {
            let p = 10i128.checked_pow(exp as u32).ok_or_else(too_big)?;
            v = d
                .checked_mul(p)
                .and_then(|x| v.checked_add(x))
                .ok_or_else(too_big)?;
        } else {
            let p = 10i128.checked_pow((-exp) as u32).ok_or_else(too_big)?;
            if d % p != 0 {
                return Err("numeric digits past its display scale".into());
            }
            v += d / p;
        }
    }
    if sign == 0x4000 {
        v = -v;
    }
    Ok((v, dscale as u8))
}

/// A parameter's value from the bytes a Bind message carries, read as PostgreSQL type `t`
/// in text or binary format. `expected` (the type the statement needs there, when known)
/// reads an untyped text parameter as that type.
pub fn decode_param(
    bytes: Option<&[u8]>,
    t: &Type,
    binary: bool,
    expected: Option<DataType>,
) -> PgWireResult<Value> {
    let Some(b) = bytes else {
        return Ok(Value::Null);
    };
    let bad = |what: String| user_error("22P02", what);
    if binary {
        let need = |n: usize| {
            if b.len() == n {
                Ok(())
            } else {
                Err(user_error(
                    "22P03",
                    format!("binary {} parameter of {} bytes", t.name(), b.len()),
                ))
            }
        };
        let mut r = b;
        return Ok(match *t {
            Type::INT2 => {
                need(2)?;
                Value::Int(i64::from(r.get_i16()))
            }
            Type::INT4 => {
                need(4)?;
                Value::Int(i64::from(r.get_i32()))
            }
            Type::INT8 => {
                need(8)?;
                Value::Int(r.get_i64())
            }
            Type::FLOAT4 => {
                need(4)?;
                Value::Float(f64::from(r.get_f32()))
            }
            Type::FLOAT8 => {
                need(8)?;
                Value::Float(r.get_f64())
            }
            Type::BOOL => {
                need(1)?;
                Value::Bool(r.get_u8() != 0)
            }
            Type::DATE => {
                need(4)?;
                Value::Date(r.get_i32().saturating_add(PG_EPOCH_DAYS))
            }
            Type::TIMESTAMP | Type::TIMESTAMPTZ => {
                need(8)?;
                Value::Timestamp(r.get_i64().saturating_add(PG_EPOCH_MICROS))
            }
            Type::NUMERIC => {
                let (v, s) = numeric_from_binary(b).map_err(|e| user_error("22P03", e))?;
                Value::Decimal(v, s)
            }
            Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => {
                let s = std::str::from_utf8(b)
                    .map_err(|_| user_error("22021", "parameter is not valid UTF-8".to_string()))?;
                text_param(s, expected.unwrap_or(DataType::Utf8))?
            }
            _ => return Err(unsupported_type(t)),
        });
    }
    let s = std::str::from_utf8(b)
        .map_err(|_| user_error("22021", "parameter is not valid UTF-8".to_string()))?;
    let target = match *t {
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME => DataType::Utf8,
        Type::UNKNOWN => expected.unwrap_or(DataType::Utf8),
        _ => weir_type(t).ok_or_else(|| unsupported_type(t))?,
    };
    text_param(s, target).map_err(|e| match e {
        PgWireError::UserError(_) => e,
        other => bad(other.to_string()),
    })
}

fn unsupported_type(t: &Type) -> PgWireError {
    user_error(
        "0A000",
        format!("parameters of type {} are not supported", t.name()),
    )
}

/// A date and time without the time zone written after its time (`+00`, `-08:00`, `Z`,
/// ` UTC`): a TIMESTAMP has no zone, and PostgreSQL ignores one given for it (the JDBC
/// driver sends `setTimestamp` as `2024-03-01 10:00:02+00`).
fn without_zone(s: &str) -> &str {
    let Some(time) = s.find(':') else {
        return s;
    };
    let mut local = match s[time..].rfind(['+', '-']) {
        Some(at) => &s[..time + at],
        None => s,
    };
    local = local.trim_end();
    for zone in ["Z", "z", "UTC", "GMT"] {
        if let Some(rest) = local.strip_suffix(zone) {
            local = rest.trim_end();
        }
    }
    local
}

/// A parameter given as text, read as weir type `t`.
fn text_param(s: &str, t: DataType) -> PgWireResult<Value> {
    let bad = |what: &str| user_error("22P02", format!("invalid input syntax for {what}: \"{s}\""));
    let trimmed = s.trim();
    Ok(match t {
        DataType::Utf8 => Value::Str(s.to_string()),
        DataType::Int64 => Value::Int(trimmed.parse().map_err(|_| bad("type bigint"))?),
        DataType::Float64 => Value::Float(match trimmed.to_ascii_lowercase().as_str() {
            "nan" => f64::NAN,
            "infinity" | "inf" | "+infinity" => f64::INFINITY,
            "-infinity" | "-inf" => f64::NEG_INFINITY,
            _ => trimmed.parse().map_err(|_| bad("type double precision"))?,
        }),
        DataType::Decimal { .. } => {
            let (v, _, scale) = weir_operators::decimal::parse_literal(trimmed)
                .ok_or_else(|| bad("type numeric"))?;
            Value::Decimal(v, scale)
        }
        DataType::Boolean => Value::Bool(match trimmed.to_ascii_lowercase().as_str() {
            "t" | "true" | "on" | "yes" | "y" | "1" => true,
            "f" | "false" | "off" | "no" | "n" | "0" => false,
            _ => return Err(bad("type boolean")),
        }),
        DataType::Date => {
            // A time and a zone after the date are ignored, as PostgreSQL does (the JDBC
            // driver sends `setDate` as `2024-03-02 +00`).
            let date = trimmed.split([' ', 'T']).next().unwrap_or(trimmed);
            let d = NaiveDate::parse_from_str(date, "%Y-%m-%d").map_err(|_| bad("type date"))?;
            Value::Date(d.num_days_from_ce() - UNIX_EPOCH_FROM_CE)
        }
        DataType::Timestamp => {
            let local = without_zone(trimmed);
            let t = [
                "%Y-%m-%d %H:%M:%S%.f",
                "%Y-%m-%dT%H:%M:%S%.f",
                "%Y-%m-%d %H:%M",
            ]
            .iter()
            .find_map(|f| NaiveDateTime::parse_from_str(local, f).ok())
            .or_else(|| {
                NaiveDate::parse_from_str(trimmed, "%Y-%m-%d")
                    .ok()
                    .and_then(|d| d.and_hms_opt(0, 0, 0))
            })
            .ok_or_else(|| bad("type timestamp"))?;
            Value::Timestamp(t.and_utc().timestamp_micros())
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_timestamps_with_a_zone_as_jdbc_sends_them_ignore_it() {
        let day = |s: &str| text_param(s, DataType::Date).unwrap();
        assert_eq!(day("2024-03-02"), Value::Date(19_784));
        assert_eq!(day("2024-03-02 +00"), day("2024-03-02"));
        assert_eq!(day("2024-03-02 10:11:12"), day("2024-03-02"));
        let ts = |s: &str| text_param(s, DataType::Timestamp).unwrap();
        let plain = ts("2024-03-01 10:00:02");
        assert_eq!(plain, Value::Timestamp(1_709_287_202_000_000));
        assert_eq!(ts("2024-03-01 10:00:02+00"), plain);
        assert_eq!(ts("2024-03-01 10:00:02-08:00"), plain);
        assert_eq!(ts("2024-03-01T10:00:02Z"), plain);
        assert_eq!(ts("2024-03-01 10:00:02 UTC"), plain);
        assert_eq!(
            ts("2024-03-01 10:00:02.25+05:30"),
            Value::Timestamp(1_709_287_202_250_000)
        );
        assert!(text_param("2024-03-01 10:00:02 later", DataType::Timestamp).is_err());
        assert!(text_param("March 2nd", DataType::Date).is_err());
    }

    fn numeric_round_trip(v: i128, scale: u8) {
        let mut buf = BytesMut::new();
        numeric_binary(v, scale, &mut buf);
        assert_eq!(
            numeric_from_binary(&buf),
            Ok((v, scale)),
            "{v} scale {scale}"
        );
    }

    #[test]
    fn numerics_round_trip_through_the_binary_form() {
        for (v, s) in [
            (0, 0),
            (0, 2),
            (1, 0),
            (-1, 0),
            (1250, 2),
            (-5, 1),
            (123_456_789, 4),
            (10_000, 0),
            (1, 10),
            (i128::MAX / 10, 5),
            (-99_999_999_999_999_999, 18),
        ] {
            numeric_round_trip(v, s);
        }
    }

    #[test]
    fn numeric_binary_matches_postgres() {
        // 12.50: one group of 12 (weight 0), one of 5000, display scale 2.
        let mut buf = BytesMut::new();
        numeric_binary(1250, 2, &mut buf);
        assert_eq!(&buf[..], &[0, 2, 0, 0, 0, 0, 0, 2, 0, 12, 0x13, 0x88]);
    }

    #[test]
    fn texts_are_postgres_texts() {
        assert_eq!(float_text(1.5), "1.5");
        assert_eq!(float_text(100.0), "100");
        assert_eq!(float_text(1e20), "1e+20");
        assert_eq!(float_text(1.5e-5), "1.5e-05");
        assert_eq!(float_text(f64::NAN), "NaN");
        assert_eq!(decimal_text(1250, 2), "12.50");
        assert_eq!(decimal_text(-5, 2), "-0.05");
        assert_eq!(decimal_text(7, 0), "7");
        assert_eq!(date_text(0), "1970-01-01");
        assert_eq!(date_text(PG_EPOCH_DAYS), "2000-01-01");
        assert_eq!(timestamp_text(1_500_000), "1970-01-01 00:00:01.5");
        assert_eq!(timestamp_text(0), "1970-01-01 00:00:00");
    }

    #[test]
    fn text_parameters_read_as_the_expected_type() {
        let p = |s: &str, t| decode_param(Some(s.as_bytes()), &Type::UNKNOWN, false, Some(t));
        assert_eq!(p("42", DataType::Int64).unwrap(), Value::Int(42));
        assert_eq!(
            p("12.50", DataType::decimal(10, 2)).unwrap(),
            Value::Decimal(1250, 2)
        );
        assert_eq!(
            p("2000-01-01", DataType::Date).unwrap(),
            Value::Date(PG_EPOCH_DAYS)
        );
        assert!(p("x", DataType::Int64).is_err());
    }
}
