//! SQL data types, fields and schemas.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Bytes predicted for one text value in a batch: a 4-byte offset and 16 bytes of characters
/// (the catalog keeps no string lengths).
pub const TEXT_BYTES: usize = 20;

/// Bytes of one row of columns of `types` in a batch (without a validity bitmap), text
/// counted as [`TEXT_BYTES`]: what planning and admission predict a row to take.
///
/// ```
/// use weir_operators::types::row_bytes;
/// use weir_operators::DataType;
/// assert_eq!(row_bytes(&[DataType::Int64, DataType::Utf8, DataType::Date]), 8 + 20 + 4);
/// ```
pub fn row_bytes(types: &[DataType]) -> usize {
    types
        .iter()
        .map(|t| match t {
            DataType::Int64 | DataType::Float64 | DataType::Timestamp => 8,
            DataType::Utf8 => TEXT_BYTES,
            DataType::Boolean => 1,
            DataType::Decimal { .. } => 16,
            DataType::Date => 4,
        })
        .sum()
}

/// A column's SQL type. Every type is nullable. A decoded DECIMAL type is checked
/// ([`crate::decode`]): precision 1 to 38, scale at most the precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub enum DataType {
    /// 64-bit signed integer (`BIGINT`, `INT`, `INTEGER`, `SMALLINT`).
    Int64,
    /// 64-bit float (`DOUBLE`, `FLOAT`, `REAL`).
    Float64,
    /// UTF-8 text (`VARCHAR`, `TEXT`).
    Utf8,
    /// `BOOLEAN`.
    Boolean,
    /// Exact fixed-point number `DECIMAL(precision, scale)` / `NUMERIC(p, s)`: at most
    /// `precision` digits (1 to 38), `scale` of them after the decimal point. Stored as an
    /// unscaled `i128`.
    Decimal {
        /// Total number of digits (1..=38).
        precision: u8,
        /// Digits after the decimal point (0..=precision).
        scale: u8,
    },
    /// Calendar date (`DATE`), stored as days since 1970-01-01.
    Date,
    /// Date and time without a time zone (`TIMESTAMP`), stored as microseconds since
    /// 1970-01-01 00:00:00.
    Timestamp,
}

/// The largest DECIMAL precision (digits an `i128` always holds).
pub const MAX_DECIMAL_PRECISION: u8 = 38;

crate::decode::checked_serde!(DataType);

/// Why `(precision, scale)` is not a DECIMAL type, if it is not one.
pub(crate) fn check_decimal_type(precision: u8, scale: u8) -> Result<(), String> {
    if !(1..=MAX_DECIMAL_PRECISION).contains(&precision) {
        return Err(format!(
            "a DECIMAL precision of {precision}, not 1 to {MAX_DECIMAL_PRECISION}"
        ));
    }
    if scale > precision {
        return Err(format!(
            "a DECIMAL scale of {scale} above its precision {precision}"
        ));
    }
    Ok(())
}

impl crate::decode::Checked for DataType {
    fn check(&self) -> Result<(), String> {
        match *self {
            DataType::Decimal { precision, scale } => check_decimal_type(precision, scale),
            _ => Ok(()),
        }
    }
}

impl DataType {
    /// Whether the type is numeric (integer, decimal or float).
    pub fn is_numeric(self) -> bool {
        matches!(
            self,
            DataType::Int64 | DataType::Float64 | DataType::Decimal { .. }
        )
    }

    /// Whether the type is DATE or TIMESTAMP.
    pub fn is_temporal(self) -> bool {
        matches!(self, DataType::Date | DataType::Timestamp)
    }

    /// `DECIMAL(precision, scale)`, with the precision capped at 38 and the scale at the
    /// precision.
    pub fn decimal(precision: u8, scale: u8) -> DataType {
        let precision = precision.clamp(1, MAX_DECIMAL_PRECISION);
        DataType::Decimal {
            precision,
            scale: scale.min(precision),
        }
    }

    /// The scale of a decimal type; 0 for BIGINT; `None` for other types.
    pub fn decimal_scale(self) -> Option<u8> {
        match self {
            DataType::Decimal { scale, .. } => Some(scale),
            DataType::Int64 => Some(0),
            _ => None,
        }
    }

    /// The type as a decimal: itself for DECIMAL, `DECIMAL(19, 0)` for BIGINT (which holds
    /// every `i64`), `None` otherwise.
    pub fn as_decimal(self) -> Option<(u8, u8)> {
        match self {
            DataType::Decimal { precision, scale } => Some((precision, scale)),
            DataType::Int64 => Some((19, 0)),
            _ => None,
        }
    }

    /// The common type two numeric types widen to, as PostgreSQL: BIGINT → DECIMAL →
    /// DOUBLE. Two decimals give one with the larger scale and enough integer digits for
    /// both. `None` when either is not numeric.
    pub fn numeric_union(a: DataType, b: DataType) -> Option<DataType> {
        if !a.is_numeric() || !b.is_numeric() {
            return None;
        }
        if a == b {
            return Some(a);
        }
        if a == DataType::Float64 || b == DataType::Float64 {
            return Some(DataType::Float64);
        }
        let ((pa, sa), (pb, sb)) = (a.as_decimal()?, b.as_decimal()?);
        let scale = sa.max(sb);
        let int_digits = (pa - sa).max(pb - sb);
        Some(DataType::decimal(int_digits.saturating_add(scale), scale))
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DataType::Int64 => "BIGINT",
            DataType::Float64 => "DOUBLE",
            DataType::Utf8 => "VARCHAR",
            DataType::Boolean => "BOOLEAN",
            DataType::Decimal { precision, scale } => {
                return write!(f, "DECIMAL({precision},{scale})");
            }
            DataType::Date => "DATE",
            DataType::Timestamp => "TIMESTAMP",
        })
    }
}

/// A named, typed column of a schema.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Field {
    /// Column name as shown to users.
    pub name: String,
    /// Column type.
    pub data_type: DataType,
}

impl Field {
    /// Creates a field.
    pub fn new(name: impl Into<String>, data_type: DataType) -> Self {
        Field {
            name: name.into(),
            data_type,
        }
    }
}

/// An ordered list of fields describing the columns of batches.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Schema {
    /// The fields, in column order.
    pub fields: Vec<Field>,
}

impl Schema {
    /// Creates a schema from fields.
    pub fn new(fields: Vec<Field>) -> Self {
        Schema { fields }
    }

    /// Number of columns.
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// Whether the schema has no columns.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// Index of the column named `name` (case-insensitive), if any.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.fields
            .iter()
            .position(|f| f.name.eq_ignore_ascii_case(name))
    }

    /// The column types, in order.
    pub fn types(&self) -> Vec<DataType> {
        self.fields.iter().map(|f| f.data_type).collect()
    }
}
