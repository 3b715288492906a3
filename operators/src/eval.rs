//! Vectorized expression evaluation: an [`Expr`] over a whole [`Batch`] at a time.
//!
//! Evaluation is recursive over the expression tree. Every intermediate result is either a
//! column (borrowed from the batch when the expression is a plain column reference) or a
//! scalar (literals, parameters and anything computed only from them). Binary operators
//! special-case column-versus-scalar operands so that comparing a column against a constant
//! never materializes a repeated column. Each operator matches on the column types once per
//! batch and then runs a tight typed loop over slices.
//!
//! SQL semantics: NULL propagates through arithmetic and comparisons, `AND`/`OR`/`NOT` use
//! three-valued logic, `IN` yields NULL when nothing matched and the value or a candidate is
//! NULL, and errors (overflow, division by zero, bad casts) are raised only for rows that are
//! not NULL.

use crate::batch::Batch;
use crate::bitmap::Bitmap;
use crate::column::{Column, ColumnBuilder, ColumnData};
use crate::error::{Error, Result};
use crate::expr::{BinaryOp, Expr};
use crate::functions::{self, ScalarFunc};
use crate::types::DataType;
use crate::value::Value;
use crate::{decimal, temporal};
use std::borrow::Cow;
use std::io::Write as _;

/// Evaluates `expr` over every row of `batch`, producing a column of `batch.num_rows()` rows.
///
/// A bare untyped `NULL` literal evaluates to a `BIGINT` column of NULLs; wrap it in a
/// `CAST` to choose another type.
pub fn evaluate(expr: &Expr, batch: &Batch, params: &[Value]) -> Result<Column> {
    let n = batch.num_rows();
    match eval(expr, batch, params)? {
        Val::Col(c) => Ok(c.into_owned()),
        Val::Scalar(v, dt) => Ok(broadcast(&v, dt.unwrap_or(DataType::Int64), n)),
    }
}

/// Evaluates `expr` over `batch` like [`evaluate`], but borrows the batch's column when the
/// expression is a plain column reference, instead of copying it.
///
/// ```
/// use std::borrow::Cow;
/// use weir_operators::{eval::evaluate_borrowed, Batch, Column, Expr};
/// let batch = Batch::try_new(vec![Column::from_i64(vec![1, 2, 3])]).unwrap();
/// let col = evaluate_borrowed(&Expr::col(0), &batch, &[]).unwrap();
/// assert!(matches!(col, Cow::Borrowed(_)));
/// ```
pub fn evaluate_borrowed<'a>(
    expr: &Expr,
    batch: &'a Batch,
    params: &[Value],
) -> Result<Cow<'a, Column>> {
    let n = batch.num_rows();
    match eval(expr, batch, params)? {
        Val::Col(c) => Ok(c),
        Val::Scalar(v, dt) => Ok(Cow::Owned(broadcast(&v, dt.unwrap_or(DataType::Int64), n))),
    }
}

/// Evaluates a boolean predicate; the mask is `true` only where the predicate is TRUE
/// (FALSE and NULL rows are dropped, as in SQL WHERE).
pub fn evaluate_predicate(expr: &Expr, batch: &Batch, params: &[Value]) -> Result<Vec<bool>> {
    let n = batch.num_rows();
    match eval(expr, batch, params)? {
        Val::Scalar(Value::Bool(b), _) => Ok(vec![b; n]),
        Val::Scalar(Value::Null, _) => Ok(vec![false; n]),
        Val::Scalar(v, _) => Err(Error::Type(format!(
            "predicate must be BOOLEAN, got {}",
            v.data_type().map_or("NULL".to_string(), |t| t.to_string())
        ))),
        Val::Col(c) => column_to_mask(c),
    }
}

/// Evaluates an expression that reads no columns (literals, parameters, arithmetic on them).
pub fn evaluate_scalar(expr: &Expr, params: &[Value]) -> Result<Value> {
    let one = Batch::with_row_count(Vec::new(), 1)?;
    match eval(expr, &one, params)? {
        Val::Scalar(v, _) => Ok(v),
        Val::Col(c) => Ok(c.value(0)),
    }
}

/// Converts a boolean column into a TRUE-only mask.
fn column_to_mask(c: Cow<'_, Column>) -> Result<Vec<bool>> {
    let c = c.into_owned();
    let Column { data, validity } = c;
    let ColumnData::Boolean(mut values) = data else {
        return Err(Error::Type(format!(
            "predicate must be BOOLEAN, got {}",
            Column::new(data).data_type()
        )));
    };
    if let Some(v) = validity {
        for (i, b) in values.iter_mut().enumerate() {
            *b &= v.get(i);
        }
    }
    Ok(values)
}

/// An intermediate result: a column or a scalar with its (possibly unknown, for NULL) type.
#[derive(Debug)]
enum Val<'a> {
    Col(Cow<'a, Column>),
    Scalar(Value, Option<DataType>),
}

impl Val<'_> {
    fn dt(&self) -> Option<DataType> {
        match self {
            Val::Col(c) => Some(c.data_type()),
            Val::Scalar(_, dt) => *dt,
        }
    }

    fn is_scalar(&self) -> bool {
        matches!(self, Val::Scalar(..))
    }

    fn is_null_scalar(&self) -> bool {
        matches!(self, Val::Scalar(Value::Null, _))
    }

    fn validity(&self) -> Option<&Bitmap> {
        match self {
            Val::Col(c) => c.validity.as_ref(),
            Val::Scalar(..) => None,
        }
    }

    /// The value as a column of `n` rows (broadcasting scalars).
    fn into_column(self, n: usize, default: DataType) -> Column {
        match self {
            Val::Col(c) => c.into_owned(),
            Val::Scalar(v, dt) => broadcast(&v, dt.unwrap_or(default), n),
        }
    }
}

fn scalar<'a>(v: Value) -> Val<'a> {
    let dt = v.data_type();
    Val::Scalar(v, dt)
}

fn null_of<'a>(dt: Option<DataType>) -> Val<'a> {
    Val::Scalar(Value::Null, dt)
}

fn owned<'a>(c: Column) -> Val<'a> {
    Val::Col(Cow::Owned(c))
}

/// Turns a one-row result back into a scalar.
fn to_scalar<'a>(v: Val<'_>) -> Val<'a> {
    match v {
        Val::Scalar(v, dt) => Val::Scalar(v, dt),
        Val::Col(c) => Val::Scalar(c.value(0), Some(c.data_type())),
    }
}

/// A column of `n` copies of `v` of type `dt`.
pub(crate) fn broadcast(v: &Value, dt: DataType, n: usize) -> Column {
    let data = match (v, dt) {
        (Value::Null, _) => {
            let data = match dt {
                DataType::Int64 => ColumnData::Int64(vec![0; n]),
                DataType::Float64 => ColumnData::Float64(vec![0.0; n]),
                DataType::Boolean => ColumnData::Boolean(vec![false; n]),
                DataType::Utf8 => ColumnData::Utf8 {
                    offsets: vec![0; n + 1],
                    bytes: Vec::new(),
                },
                DataType::Decimal { precision, scale } => ColumnData::Decimal {
                    values: vec![0; n],
                    precision,
                    scale,
                },
                DataType::Date => ColumnData::Date(vec![0; n]),
                DataType::Timestamp => ColumnData::Timestamp(vec![0; n]),
            };
            return Column::with_validity(data, Some(Bitmap::new(n, false)));
        }
        (Value::Int(_) | Value::Decimal(..), DataType::Decimal { precision, scale }) => {
            match v.as_decimal(scale) {
                Some(x) => ColumnData::Decimal {
                    values: vec![x; n],
                    precision,
                    scale,
                },
                None => return broadcast(&Value::Null, dt, n),
            }
        }
        (Value::Decimal(x, s), _) => ColumnData::Decimal {
            values: vec![*x; n],
            precision: crate::types::MAX_DECIMAL_PRECISION,
            scale: *s,
        },
        (Value::Date(d), DataType::Timestamp) => {
            ColumnData::Timestamp(vec![temporal::date_to_timestamp(*d); n])
        }
        (Value::Date(d), _) => ColumnData::Date(vec![*d; n]),
        (Value::Timestamp(t), _) => ColumnData::Timestamp(vec![*t; n]),
        (Value::Int(i), DataType::Float64) => ColumnData::Float64(vec![*i as f64; n]),
        (Value::Int(i), _) => ColumnData::Int64(vec![*i; n]),
        (Value::Float(f), _) => ColumnData::Float64(vec![*f; n]),
        (Value::Bool(b), _) => ColumnData::Boolean(vec![*b; n]),
        (Value::Str(s), _) => {
            let len = s.len() as u32;
            ColumnData::Utf8 {
                offsets: (0..=n as u32).map(|i| i * len).collect(),
                bytes: s.as_bytes().repeat(n),
            }
        }
    };
    Column::new(data)
}

fn type_name(dt: Option<DataType>) -> String {
    dt.map_or_else(|| "NULL".to_string(), |t| t.to_string())
}

/// AND of two optional validity bitmaps.
fn and_validity(a: Option<&Bitmap>, b: Option<&Bitmap>) -> Option<Bitmap> {
    match (a, b) {
        (None, None) => None,
        (Some(a), None) => Some(a.clone()),
        (None, Some(b)) => Some(b.clone()),
        (Some(a), Some(b)) => Some(a.and(b)),
    }
}

fn eval<'a>(expr: &Expr, batch: &'a Batch, params: &[Value]) -> Result<Val<'a>> {
    let n = batch.num_rows();
    match expr {
        Expr::Column(i) => {
            if *i >= batch.num_columns() {
                return Err(Error::Internal(format!(
                    "column #{i} out of range: input has {} columns",
                    batch.num_columns()
                )));
            }
            Ok(Val::Col(Cow::Borrowed(batch.column(*i))))
        }
        Expr::Literal(v) => Ok(scalar(v.clone())),
        Expr::Param(i) => params
            .get(*i)
            .map(|v| scalar(v.clone()))
            .ok_or(Error::MissingParameter(i + 1)),
        Expr::OuterColumn(i) => Err(Error::Internal(format!(
            "outer column #{i} reached execution (a correlated subquery was not decorrelated)"
        ))),
        Expr::Binary { op, left, right } => {
            let l = eval(left, batch, params)?;
            let r = eval(right, batch, params)?;
            binary(*op, l, r, n)
        }
        Expr::Not(e) => {
            let v = eval(e, batch, params)?;
            not(v)
        }
        Expr::Negate(e) => {
            let v = eval(e, batch, params)?;
            if v.is_scalar() {
                return Ok(to_scalar(negate(lift(v))?));
            }
            negate(v)
        }
        Expr::IsNull { expr, negated } => {
            let v = eval(expr, batch, params)?;
            Ok(match v {
                Val::Scalar(v, _) => scalar(Value::Bool(v.is_null() != *negated)),
                Val::Col(c) => {
                    let values = match &c.validity {
                        None => vec![*negated; n],
                        Some(b) => (0..n).map(|i| b.get(i) == *negated).collect(),
                    };
                    owned(Column::from_bools(values))
                }
            })
        }
        Expr::InList {
            expr,
            list,
            negated,
        } => {
            let x = eval(expr, batch, params)?;
            let items = list
                .iter()
                .map(|e| eval(e, batch, params))
                .collect::<Result<Vec<_>>>()?;
            let res = in_list(x, &items, n)?;
            if *negated {
                not(res)
            } else {
                Ok(res)
            }
        }
        Expr::Between {
            expr,
            low,
            high,
            negated,
        } => {
            let x = eval(expr, batch, params)?;
            let lo = eval(low, batch, params)?;
            let hi = eval(high, batch, params)?;
            let ge = compare(BinaryOp::GtEq, &x, &lo, n)?;
            let le = compare(BinaryOp::LtEq, &x, &hi, n)?;
            let res = logic(true, ge, le, n)?;
            if *negated {
                not(res)
            } else {
                Ok(res)
            }
        }
        Expr::Like {
            expr,
            pattern,
            negated,
            escape,
        } => {
            let x = eval(expr, batch, params)?;
            let p = eval(pattern, batch, params)?;
            let res = like(x, p, *escape, n)?;
            if *negated {
                not(res)
            } else {
                Ok(res)
            }
        }
        Expr::Cast { expr, to } => {
            let v = eval(expr, batch, params)?;
            cast(v, *to)
        }
        Expr::Case {
            operand,
            branches,
            else_result,
        } => case(
            operand.as_deref(),
            branches,
            else_result.as_deref(),
            batch,
            params,
        ),
        Expr::Function {
            func: ScalarFunc::NullIf,
            args,
        } => {
            let [a, b] = args.as_slice() else {
                return Err(Error::Internal("nullif takes two arguments".into()));
            };
            let a = eval(a, batch, params)?;
            let b = eval(b, batch, params)?;
            nullif(a, b, n)
        }
        Expr::Function { func, args } => {
            let vals = args
                .iter()
                .map(|e| eval(e, batch, params))
                .collect::<Result<Vec<_>>>()?;
            let all_scalar = vals.iter().all(Val::is_scalar);
            let len = if all_scalar { 1 } else { n };
            let types: Vec<Option<DataType>> = vals.iter().map(Val::dt).collect();
            let out = function_type(*func, &types);
            let cols: Vec<Column> = vals.into_iter().map(|v| v.into_column(len, out)).collect();
            let col = functions::call(*func, &cols, len, out)?;
            Ok(if all_scalar {
                to_scalar(owned(col))
            } else {
                owned(col)
            })
        }
    }
}

/// The result type of `func` over arguments of these types (an untyped NULL argument takes
/// the type the function works on).
fn function_type(func: ScalarFunc, types: &[Option<DataType>]) -> DataType {
    use ScalarFunc as F;
    let first = types.iter().flatten().next().copied();
    match func {
        F::Floor | F::Ceil | F::Round if types.len() == 1 => match first {
            Some(DataType::Decimal { precision, .. }) => DataType::decimal(precision, 0),
            other => other.unwrap_or(DataType::Int64),
        },
        F::Extract => DataType::Int64,
        F::DateTrunc => types
            .get(1)
            .copied()
            .flatten()
            .unwrap_or(DataType::Timestamp),
        F::AddInterval => first.unwrap_or(DataType::Date),
        F::Abs | F::Round | F::Floor | F::Ceil | F::Sign | F::Mod => {
            if types.iter().flatten().any(|t| *t == DataType::Float64) {
                DataType::Float64
            } else {
                first.unwrap_or(DataType::Int64)
            }
        }
        F::Power | F::Sqrt => DataType::Float64,
        F::Length | F::StrPos => DataType::Int64,
        F::StartsWith => DataType::Boolean,
        F::Coalesce | F::NullIf | F::TooManyRows => first.unwrap_or(DataType::Int64),
        _ => DataType::Utf8,
    }
}

/// `NULLIF(a, b)`: `a`, NULL where `a = b` is TRUE.
fn nullif<'a>(a: Val<'a>, b: Val<'a>, n: usize) -> Result<Val<'a>> {
    let eq = compare(BinaryOp::Eq, &a, &b, n)?;
    let both_scalar = a.is_scalar() && b.is_scalar();
    let len = if both_scalar { 1 } else { n };
    let dt = a.dt().or(b.dt()).unwrap_or(DataType::Int64);
    let eq = eq.into_column(len, DataType::Boolean);
    let hit = column_to_mask(Cow::Owned(eq))?;
    let col = a.into_column(len, dt);
    let mut valid = col
        .validity
        .clone()
        .unwrap_or_else(|| Bitmap::new(len, true));
    for (i, h) in hit.iter().enumerate() {
        if *h {
            valid.set(i, false);
        }
    }
    let col = Column::with_validity(col.data, Some(valid));
    Ok(if both_scalar {
        to_scalar(owned(col))
    } else {
        owned(col)
    })
}

/// `CASE`: each WHEN is evaluated on the rows no earlier branch took, each THEN only on the
/// rows its WHEN took, ELSE on the rest; the pieces are then gathered back into row order.
fn case<'a>(
    operand: Option<&Expr>,
    branches: &[(Expr, Expr)],
    else_result: Option<&Expr>,
    batch: &'a Batch,
    params: &[Value],
) -> Result<Val<'a>> {
    let n = batch.num_rows();
    // Rows of `batch` still undecided, and that sub-batch (borrowed while it is all rows).
    let mut undecided: Vec<u32> = (0..n as u32).collect();
    let mut sub: Cow<'_, Batch> = Cow::Borrowed(batch);
    // Per output row: (piece, row within the piece); u32::MAX piece means NULL.
    let mut picks: Vec<(u32, u32)> = vec![(u32::MAX, 0); n];
    let mut pieces: Vec<Column> = Vec::new();
    let mut out_type: Option<DataType> = None;
    let mut take_piece = |col: Column, rows: &[u32], picks: &mut Vec<(u32, u32)>| {
        let k = pieces.len() as u32;
        for (j, &r) in rows.iter().enumerate() {
            picks[r as usize] = (k, j as u32);
        }
        out_type = out_type.or(Some(col.data_type()));
        pieces.push(col);
    };
    for (when, then) in branches {
        if undecided.is_empty() {
            break;
        }
        let cond = match operand {
            Some(op) => op.clone().eq(when.clone()),
            None => when.clone(),
        };
        let mask = evaluate_predicate(&cond, &sub, params)?;
        let (mut hit, mut miss) = (Vec::new(), Vec::new());
        for (j, &m) in mask.iter().enumerate() {
            if m {
                hit.push(j as u32);
            } else {
                miss.push(j as u32);
            }
        }
        if hit.is_empty() {
            continue;
        }
        let then_col = if miss.is_empty() {
            evaluate(then, &sub, params)?
        } else {
            evaluate(then, &sub.take(&hit), params)?
        };
        let rows: Vec<u32> = hit.iter().map(|&j| undecided[j as usize]).collect();
        take_piece(then_col, &rows, &mut picks);
        if !miss.is_empty() {
            sub = Cow::Owned(sub.take(&miss));
        }
        undecided = miss.iter().map(|&j| undecided[j as usize]).collect();
    }
    if let (Some(e), false) = (else_result, undecided.is_empty()) {
        let col = evaluate(e, &sub, params)?;
        take_piece(col, &undecided, &mut picks);
    }
    let dt = out_type.unwrap_or(DataType::Int64);
    if pieces.len() == 1 && pieces[0].len() == n {
        return Ok(owned(pieces.pop().expect("one piece")));
    }
    let mut b = ColumnBuilder::new(dt, n);
    for &(k, j) in &picks {
        match pieces.get(k as usize) {
            Some(c) if c.is_null(j as usize) => b.push_null(),
            Some(c) if c.data_type() == dt => b.push_from(c, j as usize),
            Some(c) => {
                return Err(Error::Type(format!(
                    "CASE branches have types {dt} and {}",
                    c.data_type()
                )))
            }
            None => b.push_null(),
        }
    }
    Ok(owned(b.finish()))
}

/// Broadcasts a scalar to a one-row column (so scalar-only expressions reuse column kernels).
fn lift<'a>(v: Val<'_>) -> Val<'a> {
    match v {
        Val::Scalar(v, dt) => owned(broadcast(&v, dt.unwrap_or(DataType::Int64), 1)),
        Val::Col(c) => owned(c.into_owned()),
    }
}

fn binary<'a>(op: BinaryOp, l: Val<'a>, r: Val<'a>, n: usize) -> Result<Val<'a>> {
    match op {
        BinaryOp::And | BinaryOp::Or => logic(op == BinaryOp::And, l, r, n),
        op if op.is_comparison() => compare(op, &l, &r, n),
        op => arithmetic(op, l, r, n),
    }
}

// ---------------------------------------------------------------------------------------------
// Typed operand sides
// ---------------------------------------------------------------------------------------------

/// One operand of a typed binary kernel: a slice or a scalar.
enum Side<'a, T: Clone> {
    Col(Cow<'a, [T]>),
    Scalar(T),
}

impl<T: Copy> Side<'_, T> {
    #[inline]
    fn at(&self, i: usize) -> T {
        match self {
            Side::Col(c) => c[i],
            Side::Scalar(s) => *s,
        }
    }
}

fn i64_side<'b>(v: &'b Val<'_>) -> Side<'b, i64> {
    match v {
        Val::Col(c) => Side::Col(Cow::Borrowed(c.as_i64().unwrap_or(&[]))),
        Val::Scalar(v, _) => Side::Scalar(v.as_i64().unwrap_or(0)),
    }
}

fn f64_side<'b>(v: &'b Val<'_>) -> Side<'b, f64> {
    match v {
        Val::Col(c) => match &c.data {
            ColumnData::Float64(f) => Side::Col(Cow::Borrowed(f)),
            ColumnData::Int64(i) => Side::Col(Cow::Owned(i.iter().map(|&x| x as f64).collect())),
            ColumnData::Decimal { values, scale, .. } => Side::Col(Cow::Owned(
                values.iter().map(|&x| decimal::to_f64(x, *scale)).collect(),
            )),
            _ => Side::Col(Cow::Owned(Vec::new())),
        },
        Val::Scalar(v, _) => Side::Scalar(v.as_f64().unwrap_or(0.0)),
    }
}

/// An exact numeric operand (integer or decimal) as unscaled values at `scale`; `Err(i)`
/// names a non-NULL row that does not fit an `i128` there.
fn i128_side<'b>(v: &'b Val<'_>, scale: u8) -> std::result::Result<Side<'b, i128>, usize> {
    match v {
        Val::Col(c) => {
            let up = |x: i128, from: u8, i: usize| match decimal::rescale(x, from, scale) {
                Some(y) => Ok(y),
                None if c.is_valid(i) => Err(i),
                None => Ok(0),
            };
            match &c.data {
                ColumnData::Decimal {
                    values, scale: s, ..
                } if *s == scale => Ok(Side::Col(Cow::Borrowed(values))),
                ColumnData::Decimal {
                    values, scale: s, ..
                } => Ok(Side::Col(Cow::Owned(
                    values
                        .iter()
                        .enumerate()
                        .map(|(i, &x)| up(x, *s, i))
                        .collect::<std::result::Result<_, _>>()?,
                ))),
                ColumnData::Int64(values) => Ok(Side::Col(Cow::Owned(
                    values
                        .iter()
                        .enumerate()
                        .map(|(i, &x)| up(i128::from(x), 0, i))
                        .collect::<std::result::Result<_, _>>()?,
                ))),
                _ => Ok(Side::Col(Cow::Owned(Vec::new()))),
            }
        }
        Val::Scalar(v, _) => v.as_decimal(scale).map(Side::Scalar).ok_or(0),
    }
}

/// A DATE or TIMESTAMP operand as microseconds (dates at midnight).
fn ts_side<'b>(v: &'b Val<'_>) -> Side<'b, i64> {
    match v {
        Val::Col(c) => match &c.data {
            ColumnData::Timestamp(t) => Side::Col(Cow::Borrowed(t)),
            ColumnData::Date(d) => Side::Col(Cow::Owned(
                d.iter().map(|&x| temporal::date_to_timestamp(x)).collect(),
            )),
            _ => Side::Col(Cow::Owned(Vec::new())),
        },
        Val::Scalar(Value::Timestamp(t), _) => Side::Scalar(*t),
        Val::Scalar(Value::Date(d), _) => Side::Scalar(temporal::date_to_timestamp(*d)),
        Val::Scalar(..) => Side::Scalar(0),
    }
}

/// A DATE operand as day numbers.
fn date_side<'b>(v: &'b Val<'_>) -> Side<'b, i32> {
    match v {
        Val::Col(c) => Side::Col(Cow::Borrowed(c.as_date().unwrap_or(&[]))),
        Val::Scalar(Value::Date(d), _) => Side::Scalar(*d),
        Val::Scalar(..) => Side::Scalar(0),
    }
}

/// The scale exact arithmetic or comparison of these operand types works at, if both are
/// exact numbers and at least one is a decimal.
fn exact_scale(a: DataType, b: DataType) -> Option<u8> {
    let either_decimal =
        matches!(a, DataType::Decimal { .. }) || matches!(b, DataType::Decimal { .. });
    match (a.decimal_scale(), b.decimal_scale()) {
        (Some(x), Some(y)) if either_decimal => Some(x.max(y)),
        _ => None,
    }
}

fn bool_side<'b>(v: &'b Val<'_>) -> Side<'b, bool> {
    match v {
        Val::Col(c) => Side::Col(Cow::Borrowed(c.as_bool().unwrap_or(&[]))),
        Val::Scalar(Value::Bool(b), _) => Side::Scalar(*b),
        Val::Scalar(..) => Side::Scalar(false),
    }
}

/// A string operand: a column's offsets and bytes, or a scalar.
enum StrSide<'b> {
    Col { offsets: &'b [u32], bytes: &'b [u8] },
    Scalar(&'b [u8]),
}

fn str_side<'b>(v: &'b Val<'_>) -> StrSide<'b> {
    match v {
        Val::Col(c) => match &c.data {
            ColumnData::Utf8 { offsets, bytes } => StrSide::Col { offsets, bytes },
            _ => StrSide::Scalar(&[]),
        },
        Val::Scalar(Value::Str(s), _) => StrSide::Scalar(s.as_bytes()),
        Val::Scalar(..) => StrSide::Scalar(&[]),
    }
}

// ---------------------------------------------------------------------------------------------
// Comparisons
// ---------------------------------------------------------------------------------------------

fn cmp_sides_f<T: Copy, F: Fn(T, T) -> bool>(
    n: usize,
    l: &Side<T>,
    r: &Side<T>,
    f: F,
) -> Vec<bool> {
    match (l, r) {
        (Side::Col(a), Side::Col(b)) => a.iter().zip(b.iter()).map(|(&x, &y)| f(x, y)).collect(),
        (Side::Col(a), Side::Scalar(s)) => a.iter().map(|&x| f(x, *s)).collect(),
        (Side::Scalar(s), Side::Col(b)) => b.iter().map(|&y| f(*s, y)).collect(),
        (Side::Scalar(a), Side::Scalar(b)) => vec![f(*a, *b); n],
    }
}

fn cmp_sides<T: Copy + PartialOrd>(op: BinaryOp, n: usize, l: &Side<T>, r: &Side<T>) -> Vec<bool> {
    match op {
        BinaryOp::Eq => cmp_sides_f(n, l, r, |x, y| x == y),
        BinaryOp::NotEq => cmp_sides_f(n, l, r, |x, y| x != y),
        BinaryOp::Lt => cmp_sides_f(n, l, r, |x, y| x < y),
        BinaryOp::LtEq => cmp_sides_f(n, l, r, |x, y| x <= y),
        BinaryOp::Gt => cmp_sides_f(n, l, r, |x, y| x > y),
        _ => cmp_sides_f(n, l, r, |x, y| x >= y),
    }
}

#[inline]
fn str_at<'b>(offsets: &[u32], bytes: &'b [u8], i: usize) -> &'b [u8] {
    &bytes[offsets[i] as usize..offsets[i + 1] as usize]
}

fn cmp_str_f<F: Fn(&[u8], &[u8]) -> bool>(n: usize, l: &StrSide, r: &StrSide, f: F) -> Vec<bool> {
    match (l, r) {
        (
            StrSide::Col { offsets, bytes },
            StrSide::Col {
                offsets: o2,
                bytes: b2,
            },
        ) => (0..n)
            .map(|i| f(str_at(offsets, bytes, i), str_at(o2, b2, i)))
            .collect(),
        (StrSide::Col { offsets, bytes }, StrSide::Scalar(s)) => offsets
            .windows(2)
            .map(|w| f(&bytes[w[0] as usize..w[1] as usize], s))
            .collect(),
        (StrSide::Scalar(s), StrSide::Col { offsets, bytes }) => offsets
            .windows(2)
            .map(|w| f(s, &bytes[w[0] as usize..w[1] as usize]))
            .collect(),
        (StrSide::Scalar(a), StrSide::Scalar(b)) => vec![f(a, b); n],
    }
}

fn cmp_str(op: BinaryOp, n: usize, l: &StrSide, r: &StrSide) -> Vec<bool> {
    match op {
        BinaryOp::Eq => cmp_str_f(n, l, r, |x, y| x == y),
        BinaryOp::NotEq => cmp_str_f(n, l, r, |x, y| x != y),
        BinaryOp::Lt => cmp_str_f(n, l, r, |x, y| x < y),
        BinaryOp::LtEq => cmp_str_f(n, l, r, |x, y| x <= y),
        BinaryOp::Gt => cmp_str_f(n, l, r, |x, y| x > y),
        _ => cmp_str_f(n, l, r, |x, y| x >= y),
    }
}

fn comparable(a: DataType, b: DataType) -> bool {
    a == b || (a.is_numeric() && b.is_numeric()) || (a.is_temporal() && b.is_temporal())
}

fn compare<'a>(op: BinaryOp, l: &Val<'_>, r: &Val<'_>, n: usize) -> Result<Val<'a>> {
    let (lt, rt) = (l.dt(), r.dt());
    if let (Some(a), Some(b)) = (lt, rt) {
        if !comparable(a, b) {
            return Err(Error::Type(format!(
                "cannot compare {a} with {b} using {}",
                op.symbol()
            )));
        }
    }
    if l.is_null_scalar() || r.is_null_scalar() {
        return Ok(null_of(Some(DataType::Boolean)));
    }
    let (Some(lt), Some(rt)) = (lt, rt) else {
        return Ok(null_of(Some(DataType::Boolean)));
    };
    let len = if l.is_scalar() && r.is_scalar() { 1 } else { n };
    let values = match (lt, rt) {
        (DataType::Int64, DataType::Int64) => cmp_sides(op, len, &i64_side(l), &i64_side(r)),
        (DataType::Utf8, _) => cmp_str(op, len, &str_side(l), &str_side(r)),
        (DataType::Boolean, _) => cmp_sides(op, len, &bool_side(l), &bool_side(r)),
        (DataType::Date, DataType::Date) => cmp_sides(op, len, &date_side(l), &date_side(r)),
        (a, _) if a.is_temporal() => cmp_sides(op, len, &ts_side(l), &ts_side(r)),
        (a, b) => match exact_scale(a, b) {
            Some(scale) => match (i128_side(l, scale), i128_side(r, scale)) {
                (Ok(x), Ok(y)) => cmp_sides(op, len, &x, &y),
                // A value too large to rescale exactly: compare as floats.
                _ => cmp_sides(op, len, &f64_side(l), &f64_side(r)),
            },
            None => cmp_sides(op, len, &f64_side(l), &f64_side(r)),
        },
    };
    let validity = and_validity(l.validity(), r.validity());
    let col = Column::with_validity(ColumnData::Boolean(values), validity);
    if l.is_scalar() && r.is_scalar() {
        Ok(to_scalar(owned(col)))
    } else {
        Ok(owned(col))
    }
}

// ---------------------------------------------------------------------------------------------
// Arithmetic
// ---------------------------------------------------------------------------------------------

/// Runs `f` over the sides; `Err(i)` names the first non-NULL row where `f` failed.
fn arith_sides<T: Copy + Default, F: Fn(T, T) -> Option<T>>(
    n: usize,
    l: &Side<T>,
    r: &Side<T>,
    validity: Option<&Bitmap>,
    f: F,
) -> std::result::Result<Vec<T>, usize> {
    let mut out = Vec::with_capacity(n);
    let fail = |i: usize| -> std::result::Result<T, usize> {
        if validity.is_none_or(|v| v.get(i)) {
            Err(i)
        } else {
            Ok(T::default())
        }
    };
    match (l, r) {
        (Side::Col(a), Side::Col(b)) => {
            for (i, (&x, &y)) in a.iter().zip(b.iter()).enumerate() {
                out.push(match f(x, y) {
                    Some(v) => v,
                    None => fail(i)?,
                });
            }
        }
        (Side::Col(a), Side::Scalar(s)) => {
            for (i, &x) in a.iter().enumerate() {
                out.push(match f(x, *s) {
                    Some(v) => v,
                    None => fail(i)?,
                });
            }
        }
        (Side::Scalar(s), Side::Col(b)) => {
            for (i, &y) in b.iter().enumerate() {
                out.push(match f(*s, y) {
                    Some(v) => v,
                    None => fail(i)?,
                });
            }
        }
        (Side::Scalar(a), Side::Scalar(b)) => match f(*a, *b) {
            Some(v) => out.resize(n, v),
            None if n > 0 => return Err(0),
            None => {}
        },
    }
    Ok(out)
}

/// BIGINT `+` (`add`) or `-` over every row in one branch-free pass: wrapping results, with
/// the rows' overflow bits ORed together. `None` when any row overflowed (NULL rows
/// included: the caller then looks for a non-NULL one).
fn add_sub_i64(add: bool, n: usize, l: &Side<i64>, r: &Side<i64>) -> Option<Vec<i64>> {
    // Overflow iff the result's sign differs from both addends' (for `a - b`: from `a`'s and
    // from `-b`'s); the sign bit of the flag is then set.
    #[inline(always)]
    fn step(add: bool, a: i64, b: i64) -> (i64, i64) {
        if add {
            let r = a.wrapping_add(b);
            (r, (a ^ r) & (b ^ r))
        } else {
            let r = a.wrapping_sub(b);
            (r, (a ^ b) & (a ^ r))
        }
    }
    fn run(n: usize, f: impl Fn(usize) -> (i64, i64)) -> (Vec<i64>, i64) {
        let mut out = vec![0i64; n];
        let mut flags = 0i64;
        for (i, o) in out.iter_mut().enumerate() {
            let (r, f) = f(i);
            *o = r;
            flags |= f;
        }
        (out, flags)
    }
    let short = |c: &[i64]| c.len() < n;
    let (out, flags) = match (l, r) {
        (Side::Col(a), _) if short(a) => return None,
        (_, Side::Col(b)) if short(b) => return None,
        (Side::Col(a), Side::Col(b)) => run(n, |i| step(add, a[i], b[i])),
        (Side::Col(a), Side::Scalar(s)) => run(n, |i| step(add, a[i], *s)),
        (Side::Scalar(s), Side::Col(b)) => run(n, |i| step(add, *s, b[i])),
        (Side::Scalar(a), Side::Scalar(b)) => {
            let (r, f) = step(add, *a, *b);
            (vec![r; n], f)
        }
    };
    (flags >= 0).then_some(out)
}

/// Float operations; a zero divisor's row is NULL (the caller clears its validity).
fn f64_op(op: BinaryOp) -> fn(f64, f64) -> Option<f64> {
    match op {
        BinaryOp::Add => |a, b| Some(a + b),
        BinaryOp::Sub => |a, b| Some(a - b),
        BinaryOp::Mul => |a, b| Some(a * b),
        BinaryOp::Div => |a, b| Some(if b == 0.0 { 0.0 } else { a / b }),
        _ => |a, b| Some(if b == 0.0 { 0.0 } else { a % b }),
    }
}

/// The result type of date arithmetic, or an error naming the operands; `None` when
/// neither operand is a DATE or TIMESTAMP.
pub fn temporal_arithmetic_type(
    op: BinaryOp,
    lt: Option<DataType>,
    rt: Option<DataType>,
) -> Result<Option<DataType>> {
    use DataType as T;
    if !lt.is_some_and(DataType::is_temporal) && !rt.is_some_and(DataType::is_temporal) {
        return Ok(None);
    }
    let int = |t: Option<DataType>| t.is_none_or(|t| t == T::Int64);
    let out = match (op, lt, rt) {
        (BinaryOp::Add | BinaryOp::Sub, Some(T::Date), r) if int(r) => Some(T::Date),
        (BinaryOp::Add, l, Some(T::Date)) if int(l) => Some(T::Date),
        (BinaryOp::Sub, Some(T::Date), Some(T::Date)) => Some(T::Int64),
        _ => None,
    };
    out.map(Some).ok_or_else(|| {
        Error::Type(format!(
            "operator {} does not take {} and {} (add or subtract an INTERVAL, or days to a DATE)",
            op.symbol(),
            type_name(lt),
            type_name(rt)
        ))
    })
}

/// `date ± integer days` and `date - date`.
fn date_arithmetic<'a>(
    op: BinaryOp,
    l: Val<'a>,
    r: Val<'a>,
    n: usize,
    out: DataType,
) -> Result<Val<'a>> {
    if l.is_null_scalar() || r.is_null_scalar() {
        return Ok(null_of(Some(out)));
    }
    if l.is_scalar() && r.is_scalar() {
        return Ok(to_scalar(date_arithmetic(op, lift(l), lift(r), 1, out)?));
    }
    let validity = and_validity(l.validity(), r.validity());
    let v = validity.as_ref();
    let overflow = || Error::Overflow("DATE out of range".into());
    let data = if out == DataType::Int64 {
        let (a, b) = (date_side(&l), date_side(&r));
        let res = arith_sides(n, &a, &b, v, |x, y| x.checked_sub(y));
        ColumnData::Int64(
            res.map_err(|_| overflow())?
                .into_iter()
                .map(i64::from)
                .collect(),
        )
    } else {
        let (d, k) = if l.dt() == Some(DataType::Date) {
            (date_side(&l), i64_side(&r))
        } else {
            (date_side(&r), i64_side(&l))
        };
        let sub = op == BinaryOp::Sub;
        let days: Vec<i32> = (0..n)
            .map(|i| {
                let k = if sub {
                    k.at(i).checked_neg()
                } else {
                    Some(k.at(i))
                };
                let x = k
                    .and_then(|k| i32::try_from(k).ok())
                    .and_then(|k| d.at(i).checked_add(k));
                match x {
                    Some(x) => Ok(x),
                    None if v.is_none_or(|v| v.get(i)) => Err(overflow()),
                    None => Ok(0),
                }
            })
            .collect::<Result<_>>()?;
        ColumnData::Date(days)
    };
    Ok(owned(Column::with_validity(data, validity)))
}

/// Exact arithmetic where at least one operand is a DECIMAL: unscaled `i128` loops at the
/// result's scale, every step checked.
fn decimal_arithmetic<'a>(
    op: BinaryOp,
    l: &Val<'a>,
    r: &Val<'a>,
    n: usize,
    out: DataType,
    validity: Option<&Bitmap>,
) -> Result<ColumnData> {
    let DataType::Decimal { precision, scale } = out else {
        return Err(Error::Internal(format!("decimal arithmetic giving {out}")));
    };
    let (lt, rt) = (l.dt().unwrap_or(out), r.dt().unwrap_or(out));
    // Multiplication keeps each side's scale (the result's is their sum); the other
    // operators first bring both sides to the result's scale.
    let (ls, rs) = if op == BinaryOp::Mul {
        (
            lt.decimal_scale().unwrap_or(0),
            rt.decimal_scale().unwrap_or(0),
        )
    } else {
        (scale, scale)
    };
    let overflow = || Error::Overflow(format!("DECIMAL overflow in {} {} {}", lt, op.symbol(), rt));
    let a = i128_side(l, ls).map_err(|_| overflow())?;
    let b = i128_side(r, rs).map_err(|_| overflow())?;
    let res = match op {
        BinaryOp::Add => arith_sides(n, &a, &b, validity, i128::checked_add),
        BinaryOp::Sub => arith_sides(n, &a, &b, validity, i128::checked_sub),
        BinaryOp::Mul => arith_sides(n, &a, &b, validity, i128::checked_mul),
        _ => arith_sides(n, &a, &b, validity, |x, y| {
            Some(if y == 0 {
                0
            } else {
                x.checked_rem(y).unwrap_or(0)
            })
        }),
    };
    match res {
        Ok(values) => Ok(ColumnData::Decimal {
            values,
            precision,
            scale,
        }),
        Err(i) => Err(Error::Overflow(format!(
            "DECIMAL overflow in {} {} {}",
            decimal::format(a.at(i), ls),
            op.symbol(),
            decimal::format(b.at(i), rs)
        ))),
    }
}

fn arithmetic<'a>(op: BinaryOp, l: Val<'a>, r: Val<'a>, n: usize) -> Result<Val<'a>> {
    let (lt, rt) = (l.dt(), r.dt());
    if let Some(out) = temporal_arithmetic_type(op, lt, rt)? {
        return date_arithmetic(op, l, r, n, out);
    }
    for t in [lt, rt].into_iter().flatten() {
        if !t.is_numeric() {
            return Err(Error::Type(format!(
                "operator {} needs numeric operands, got {} and {}",
                op.symbol(),
                type_name(lt),
                type_name(rt)
            )));
        }
    }
    let result_type = match (lt, rt) {
        (Some(a), Some(b)) => DataType::arithmetic_result(op, a, b),
        (Some(DataType::Decimal { .. }), None) | (None, Some(DataType::Decimal { .. }))
            if op == BinaryOp::Div =>
        {
            Some(DataType::Float64)
        }
        (a, b) => a.or(b),
    };
    if l.is_null_scalar() || r.is_null_scalar() {
        return Ok(null_of(result_type));
    }
    if l.is_scalar() && r.is_scalar() {
        return Ok(to_scalar(arithmetic(op, lift(l), lift(r), 1)?));
    }
    let mut validity = and_validity(l.validity(), r.validity());
    let divides = matches!(op, BinaryOp::Div | BinaryOp::Mod);
    if divides {
        // Division by zero gives NULL (as SQLite and MySQL do).
        let zero = |i: usize| match &r {
            Val::Col(c) => match &c.data {
                ColumnData::Int64(v) => v[i] == 0,
                ColumnData::Float64(v) => v[i] == 0.0,
                ColumnData::Decimal { values, .. } => values[i] == 0,
                _ => false,
            },
            Val::Scalar(v, _) => v.as_f64() == Some(0.0),
        };
        if (0..n).any(zero) {
            let mut v = validity.unwrap_or_else(|| Bitmap::new(n, true));
            for i in (0..n).filter(|&i| zero(i)) {
                v.set(i, false);
            }
            validity = Some(v);
        }
    }
    let data = if let Some(out @ DataType::Decimal { .. }) = result_type {
        decimal_arithmetic(op, &l, &r, n, out, validity.as_ref())?
    } else if result_type == Some(DataType::Int64) {
        let (ls, rs) = (i64_side(&l), i64_side(&r));
        let v = validity.as_ref();
        let res = match op {
            BinaryOp::Add | BinaryOp::Sub => match add_sub_i64(op == BinaryOp::Add, n, &ls, &rs) {
                Some(v) => Ok(v),
                // Some row overflowed: find the first one that is not NULL, if any.
                None if op == BinaryOp::Add => arith_sides(n, &ls, &rs, v, i64::checked_add),
                None => arith_sides(n, &ls, &rs, v, i64::checked_sub),
            },
            BinaryOp::Mul => arith_sides(n, &ls, &rs, v, i64::checked_mul),
            BinaryOp::Div => arith_sides(n, &ls, &rs, v, |a, b| {
                if b == 0 {
                    Some(0)
                } else {
                    a.checked_div(b)
                }
            }),
            // i64::MIN % -1 is 0 mathematically.
            _ => arith_sides(n, &ls, &rs, v, |a, b| {
                Some(if b == 0 {
                    0
                } else {
                    a.checked_rem(b).unwrap_or(0)
                })
            }),
        };
        match res {
            Ok(v) => ColumnData::Int64(v),
            Err(i) => {
                let (a, b) = (ls.at(i), rs.at(i));
                return Err(Error::Overflow(format!(
                    "BIGINT overflow in {a} {} {b}",
                    op.symbol()
                )));
            }
        }
    } else {
        let (ls, rs) = (f64_side(&l), f64_side(&r));
        match arith_sides(n, &ls, &rs, validity.as_ref(), f64_op(op)) {
            Ok(v) => ColumnData::Float64(v),
            Err(_) => return Err(Error::Internal("float arithmetic failed".into())),
        }
    };
    Ok(owned(Column::with_validity(data, validity)))
}

fn negate<'a>(v: Val<'a>) -> Result<Val<'a>> {
    match v {
        Val::Scalar(Value::Null, dt) => {
            if let Some(t) = dt.filter(|t| !t.is_numeric()) {
                return Err(Error::Type(format!("cannot negate {t}")));
            }
            Ok(null_of(dt))
        }
        Val::Scalar(..) => Err(Error::Internal("negate of a scalar".into())),
        Val::Col(c) => {
            let validity = c.validity.clone();
            let data = match &c.data {
                ColumnData::Int64(v) => {
                    let mut out = Vec::with_capacity(v.len());
                    for (i, &x) in v.iter().enumerate() {
                        match x.checked_neg() {
                            Some(y) => out.push(y),
                            None if c.is_valid(i) => {
                                return Err(Error::Overflow(format!("BIGINT overflow in -({x})")))
                            }
                            None => out.push(0),
                        }
                    }
                    ColumnData::Int64(out)
                }
                ColumnData::Float64(v) => ColumnData::Float64(v.iter().map(|x| -x).collect()),
                ColumnData::Decimal {
                    values,
                    precision,
                    scale,
                } => ColumnData::Decimal {
                    // i128::MIN never occurs: 38 digits stay far below it.
                    values: values.iter().map(|x| x.saturating_neg()).collect(),
                    precision: *precision,
                    scale: *scale,
                },
                _ => {
                    return Err(Error::Type(format!("cannot negate {}", c.data_type())));
                }
            };
            Ok(owned(Column::with_validity(data, validity)))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Boolean logic
// ---------------------------------------------------------------------------------------------

fn expect_bool(v: &Val<'_>, what: &str) -> Result<()> {
    match v.dt() {
        None | Some(DataType::Boolean) => Ok(()),
        Some(t) => Err(Error::Type(format!(
            "{what} needs BOOLEAN operands, got {t}"
        ))),
    }
}

fn not<'a>(v: Val<'a>) -> Result<Val<'a>> {
    expect_bool(&v, "NOT")?;
    Ok(match v {
        Val::Scalar(Value::Bool(b), dt) => Val::Scalar(Value::Bool(!b), dt),
        Val::Scalar(_, _) => null_of(Some(DataType::Boolean)),
        Val::Col(c) => {
            let c = c.into_owned();
            let Column { data, validity } = c;
            let ColumnData::Boolean(mut values) = data else {
                return Err(Error::Internal("NOT of a non-boolean column".into()));
            };
            values.iter_mut().for_each(|b| *b = !*b);
            owned(Column::with_validity(ColumnData::Boolean(values), validity))
        }
    })
}

/// Three-valued AND (`is_and`) or OR.
fn logic<'a>(is_and: bool, l: Val<'a>, r: Val<'a>, n: usize) -> Result<Val<'a>> {
    let what = if is_and { "AND" } else { "OR" };
    expect_bool(&l, what)?;
    expect_bool(&r, what)?;
    let both_scalar = l.is_scalar() && r.is_scalar();
    let len = if both_scalar { 1 } else { n };
    // A constant operand decides the result or passes the other side through.
    let konst = |v: &Val<'_>| match v {
        Val::Scalar(Value::Bool(s), _) => Some(*s),
        _ => None,
    };
    let (lk, rk) = (konst(&l), konst(&r));
    for k in [lk, rk].into_iter().flatten() {
        if k != is_and {
            // FALSE AND x = FALSE; TRUE OR x = TRUE.
            return Ok(scalar(Value::Bool(k)));
        }
    }
    // TRUE AND x = x; FALSE OR x = x.
    if lk.is_some() && !r.is_scalar() {
        return Ok(r);
    }
    if rk.is_some() && !l.is_scalar() {
        return Ok(l);
    }
    let lc = l.into_column(len, DataType::Boolean);
    let rc = r.into_column(len, DataType::Boolean);
    let (a, b) = (lc.as_bool().unwrap_or(&[]), rc.as_bool().unwrap_or(&[]));
    let col = match (&lc.validity, &rc.validity) {
        (None, None) => {
            let values = if is_and {
                a.iter().zip(b).map(|(x, y)| *x && *y).collect()
            } else {
                a.iter().zip(b).map(|(x, y)| *x || *y).collect()
            };
            Column::from_bools(values)
        }
        _ => {
            let mut values = Vec::with_capacity(len);
            let mut valid = Bitmap::new(len, true);
            for i in 0..len {
                let (av, bv) = (lc.is_valid(i), rc.is_valid(i));
                let (x, y) = (a[i], b[i]);
                let (value, ok) = if is_and {
                    if (av && !x) || (bv && !y) {
                        (false, true)
                    } else {
                        (true, av && bv)
                    }
                } else if (av && x) || (bv && y) {
                    (true, true)
                } else {
                    (false, av && bv)
                };
                values.push(value && ok);
                if !ok {
                    valid.set(i, false);
                }
            }
            Column::with_validity(ColumnData::Boolean(values), Some(valid))
        }
    };
    Ok(if both_scalar {
        to_scalar(owned(col))
    } else {
        owned(col)
    })
}

// ---------------------------------------------------------------------------------------------
// IN lists
// ---------------------------------------------------------------------------------------------

fn in_list<'a>(x: Val<'a>, items: &[Val<'a>], n: usize) -> Result<Val<'a>> {
    // Fast path: a column against many non-NULL constants of its own type.
    if let Val::Col(c) = &x {
        if items.len() > 4 && items.iter().all(|v| v.is_scalar() && !v.is_null_scalar()) {
            match &c.data {
                ColumnData::Int64(values)
                    if items.iter().all(|v| v.dt() == Some(DataType::Int64)) =>
                {
                    let set: hashbrown::HashSet<i64> = items
                        .iter()
                        .filter_map(|v| match v {
                            Val::Scalar(Value::Int(i), _) => Some(*i),
                            _ => None,
                        })
                        .collect();
                    let out = values.iter().map(|v| set.contains(v)).collect();
                    return Ok(owned(Column::with_validity(
                        ColumnData::Boolean(out),
                        c.validity.clone(),
                    )));
                }
                ColumnData::Utf8 { offsets, bytes }
                    if items.iter().all(|v| v.dt() == Some(DataType::Utf8)) =>
                {
                    let set: hashbrown::HashSet<&[u8]> = items
                        .iter()
                        .filter_map(|v| match v {
                            Val::Scalar(Value::Str(s), _) => Some(s.as_bytes()),
                            _ => None,
                        })
                        .collect();
                    let out = offsets
                        .windows(2)
                        .map(|w| set.contains(&bytes[w[0] as usize..w[1] as usize]))
                        .collect();
                    return Ok(owned(Column::with_validity(
                        ColumnData::Boolean(out),
                        c.validity.clone(),
                    )));
                }
                _ => {}
            }
        }
    }
    // General case: x = item1 OR x = item2 OR ...
    let mut acc: Val<'a> = scalar(Value::Bool(false));
    for item in items {
        let eq = compare(BinaryOp::Eq, &x, item, n)?;
        acc = logic(false, acc, eq, n)?;
    }
    // An empty list is vacuously FALSE (SQL forbids empty lists anyway).
    Ok(acc)
}

// ---------------------------------------------------------------------------------------------
// LIKE
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq)]
enum LikeTok {
    Char(char),
    One,
    Many,
}

/// A compiled LIKE pattern.
#[derive(Debug)]
enum LikeMatcher {
    Exact(Vec<u8>),
    Prefix(Vec<u8>),
    Suffix(Vec<u8>),
    Contains(Vec<u8>),
    All,
    General(Vec<LikeTok>),
}

impl LikeMatcher {
    fn compile(pattern: &str, escape: Option<char>) -> LikeMatcher {
        let escaped = escape.is_some_and(|e| pattern.contains(e));
        if !escaped && !pattern.contains('_') {
            let parts: Vec<&str> = pattern.split('%').collect();
            match parts.as_slice() {
                [exact] => return LikeMatcher::Exact(exact.as_bytes().to_vec()),
                [p, ""] => return LikeMatcher::Prefix(p.as_bytes().to_vec()),
                ["", s] => return LikeMatcher::Suffix(s.as_bytes().to_vec()),
                ["", c, ""] => return LikeMatcher::Contains(c.as_bytes().to_vec()),
                _ if parts.iter().all(|p| p.is_empty()) => return LikeMatcher::All,
                _ => {}
            }
        }
        let mut toks: Vec<LikeTok> = Vec::with_capacity(pattern.len());
        let mut chars = pattern.chars();
        while let Some(ch) = chars.next() {
            if Some(ch) == escape {
                // The escaped character is literal; a trailing escape matches itself.
                toks.push(LikeTok::Char(chars.next().unwrap_or(ch)));
                continue;
            }
            let t = match ch {
                '%' => LikeTok::Many,
                '_' => LikeTok::One,
                c => LikeTok::Char(c),
            };
            if t == LikeTok::Many && toks.last() == Some(&LikeTok::Many) {
                continue;
            }
            toks.push(t);
        }
        LikeMatcher::General(toks)
    }

    /// Whether `s` matches; `buf` is scratch space reused across rows.
    #[inline]
    fn matches(&self, s: &[u8], buf: &mut Vec<char>) -> bool {
        match self {
            LikeMatcher::Exact(p) => s == p.as_slice(),
            LikeMatcher::Prefix(p) => s.starts_with(p),
            LikeMatcher::Suffix(p) => s.ends_with(p),
            LikeMatcher::Contains(p) => {
                p.is_empty() || s.windows(p.len()).any(|w| w == p.as_slice())
            }
            LikeMatcher::All => true,
            LikeMatcher::General(toks) => {
                buf.clear();
                buf.extend(String::from_utf8_lossy(s).chars());
                like_general(toks, buf)
            }
        }
    }
}

fn like_general(toks: &[LikeTok], s: &[char]) -> bool {
    let (mut p, mut i) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while i < s.len() {
        if p < toks.len() {
            match toks[p] {
                LikeTok::Char(c) if c == s[i] => {
                    p += 1;
                    i += 1;
                    continue;
                }
                LikeTok::One => {
                    p += 1;
                    i += 1;
                    continue;
                }
                LikeTok::Many => {
                    star = Some((p, i));
                    p += 1;
                    continue;
                }
                LikeTok::Char(_) => {}
            }
        }
        match star {
            Some((sp, si)) => {
                p = sp + 1;
                i = si + 1;
                star = Some((sp, si + 1));
            }
            None => return false,
        }
    }
    while p < toks.len() && toks[p] == LikeTok::Many {
        p += 1;
    }
    p == toks.len()
}

fn like<'a>(x: Val<'a>, p: Val<'a>, escape: Option<char>, n: usize) -> Result<Val<'a>> {
    for v in [&x, &p] {
        if let Some(t) = v.dt().filter(|t| *t != DataType::Utf8) {
            return Err(Error::Type(format!("LIKE needs VARCHAR operands, got {t}")));
        }
    }
    if x.is_null_scalar() || p.is_null_scalar() {
        return Ok(null_of(Some(DataType::Boolean)));
    }
    let both_scalar = x.is_scalar() && p.is_scalar();
    let len = if both_scalar { 1 } else { n };
    let mut buf = Vec::new();
    let validity = and_validity(x.validity(), p.validity());
    let values: Vec<bool> = match &p {
        Val::Scalar(Value::Str(pat), _) => {
            let m = LikeMatcher::compile(pat, escape);
            match str_side(&x) {
                StrSide::Col { offsets, bytes } => offsets
                    .windows(2)
                    .map(|w| m.matches(&bytes[w[0] as usize..w[1] as usize], &mut buf))
                    .collect(),
                StrSide::Scalar(s) => vec![m.matches(s, &mut buf); len],
            }
        }
        _ => {
            // Per-row patterns: compile each one.
            let xs = str_side(&x);
            let ps = str_side(&p);
            (0..len)
                .map(|i| {
                    let s = match &xs {
                        StrSide::Col { offsets, bytes } => str_at(offsets, bytes, i),
                        StrSide::Scalar(s) => s,
                    };
                    let pat = match &ps {
                        StrSide::Col { offsets, bytes } => str_at(offsets, bytes, i),
                        StrSide::Scalar(s) => s,
                    };
                    LikeMatcher::compile(&String::from_utf8_lossy(pat), escape).matches(s, &mut buf)
                })
                .collect()
        }
    };
    let col = Column::with_validity(ColumnData::Boolean(values), validity);
    Ok(if both_scalar {
        to_scalar(owned(col))
    } else {
        owned(col)
    })
}

// ---------------------------------------------------------------------------------------------
// CAST
// ---------------------------------------------------------------------------------------------

fn cast_err(value: impl std::fmt::Display, to: DataType) -> Error {
    Error::Cast {
        value: value.to_string(),
        to: to.to_string(),
    }
}

fn f64_to_i64(f: f64) -> Option<i64> {
    // 2^63 as f64; the range check is exact at the boundaries.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    (f.is_finite() && (-LIMIT..LIMIT).contains(&f)).then(|| f.trunc() as i64)
}

fn parse_bool(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "true" | "t" | "1" | "yes" | "y" | "on" => Some(true),
        "false" | "f" | "0" | "no" | "n" | "off" => Some(false),
        _ => None,
    }
}

/// Casts a single value (used by the column cast for string sources and by callers).
fn cast<'a>(v: Val<'a>, to: DataType) -> Result<Val<'a>> {
    let from = v.dt();
    if from == Some(to) {
        return Ok(v);
    }
    match v {
        Val::Scalar(Value::Null, _) => Ok(null_of(Some(to))),
        Val::Scalar(..) => Ok(to_scalar(cast(lift(v), to)?)),
        Val::Col(c) => Ok(owned(cast_column(&c, to)?)),
    }
}

/// Converts every valid row of `src` with `f`; a row it rejects is an error naming the value
/// (NULL rows get `U::default()`).
fn convert<T: Copy + std::fmt::Debug, U: Default>(
    c: &Column,
    src: &[T],
    to: DataType,
    f: impl Fn(T) -> Option<U>,
) -> Result<Vec<U>> {
    src.iter()
        .enumerate()
        .map(|(i, &x)| match f(x) {
            Some(y) => Ok(y),
            None if c.is_valid(i) => Err(cast_err(c.value(i).to_sql(), to)),
            None => Ok(U::default()),
        })
        .collect()
}

/// Parses every valid row of a string column with `f`; a row it rejects is an error quoting
/// the text.
fn parse_strs<U: Default>(
    c: &Column,
    to: DataType,
    f: impl Fn(&str) -> Option<U>,
) -> Result<Vec<U>> {
    (0..c.len())
        .map(|i| {
            if !c.is_valid(i) {
                return Ok(U::default());
            }
            let s = c.str_at(i);
            f(s).ok_or_else(|| cast_err(format!("'{s}'"), to))
        })
        .collect()
}

/// Parses a DATE from text: `YYYY-MM-DD`, or a timestamp's date.
fn parse_date_text(s: &str) -> Option<i32> {
    temporal::parse_date(s).or_else(|| temporal::timestamp_to_date(temporal::parse_timestamp(s)?))
}

/// Casts to `DECIMAL(precision, scale)`: exact from integers and decimals (rounding half away
/// from zero when the scale shrinks), nearest from floats, parsed from text; a value with
/// more than `precision` digits is an error.
fn cast_to_decimal(c: &Column, to: DataType, precision: u8, scale: u8) -> Result<ColumnData> {
    let fit = |x: i128| decimal::fits(x, precision).then_some(x);
    let values = match &c.data {
        ColumnData::Int64(v) => convert(c, v, to, |x| {
            fit(decimal::rescale(i128::from(x), 0, scale)?)
        })?,
        ColumnData::Float64(v) => convert(c, v, to, |x| fit(decimal::from_f64(x, scale)?))?,
        ColumnData::Decimal {
            values, scale: s, ..
        } => convert(c, values, to, |x| fit(decimal::rescale(x, *s, scale)?))?,
        ColumnData::Utf8 { .. } => parse_strs(c, to, |t| fit(decimal::parse(t, scale)?))?,
        _ => return Err(cast_err(c.data_type(), to)),
    };
    Ok(ColumnData::Decimal {
        values,
        precision,
        scale,
    })
}

/// Casts a DECIMAL column to another type.
fn cast_from_decimal(c: &Column, values: &[i128], scale: u8, to: DataType) -> Result<ColumnData> {
    Ok(match to {
        DataType::Int64 => ColumnData::Int64(convert(c, values, to, |x| {
            i64::try_from(decimal::rescale(x, scale, 0)?).ok()
        })?),
        DataType::Float64 => {
            ColumnData::Float64(values.iter().map(|&x| decimal::to_f64(x, scale)).collect())
        }
        DataType::Boolean => ColumnData::Boolean(values.iter().map(|&x| x != 0).collect()),
        _ => return Err(cast_err(c.data_type(), to)),
    })
}

/// Casts to DATE or TIMESTAMP.
fn cast_to_temporal(c: &Column, to: DataType) -> Result<ColumnData> {
    Ok(match (&c.data, to) {
        (ColumnData::Utf8 { .. }, DataType::Date) => {
            ColumnData::Date(parse_strs(c, to, parse_date_text)?)
        }
        (ColumnData::Utf8 { .. }, _) => {
            ColumnData::Timestamp(parse_strs(c, to, temporal::parse_timestamp)?)
        }
        (ColumnData::Date(v), DataType::Timestamp) => {
            ColumnData::Timestamp(v.iter().map(|&d| temporal::date_to_timestamp(d)).collect())
        }
        (ColumnData::Timestamp(v), DataType::Date) => {
            ColumnData::Date(convert(c, v, to, temporal::timestamp_to_date)?)
        }
        _ => return Err(cast_err(c.data_type(), to)),
    })
}

/// Casts a column of text to a BIGINT, DOUBLE or BOOLEAN.
fn cast_from_text(c: &Column, to: DataType) -> Result<ColumnData> {
    Ok(match to {
        DataType::Int64 => ColumnData::Int64(parse_strs(c, to, |s| s.trim().parse().ok())?),
        DataType::Float64 => ColumnData::Float64(parse_strs(c, to, |s| s.trim().parse().ok())?),
        DataType::Boolean => ColumnData::Boolean(parse_strs(c, to, parse_bool)?),
        _ => c.data.clone(),
    })
}

/// Renders every valid row as text (decimals with their scale, dates as `YYYY-MM-DD`).
fn cast_to_text(c: &Column) -> ColumnData {
    let n = c.len();
    let mut offsets = Vec::with_capacity(n + 1);
    let mut bytes: Vec<u8> = Vec::with_capacity(n * 8);
    offsets.push(0u32);
    for i in 0..n {
        if c.is_valid(i) {
            // Writing into a Vec<u8> cannot fail.
            let _ = match &c.data {
                ColumnData::Int64(v) => write!(bytes, "{}", v[i]),
                ColumnData::Float64(v) => write!(bytes, "{}", v[i]),
                ColumnData::Boolean(v) => write!(bytes, "{}", v[i]),
                ColumnData::Utf8 { .. } => write!(bytes, "{}", c.str_at(i)),
                ColumnData::Decimal { .. } | ColumnData::Date(_) | ColumnData::Timestamp(_) => {
                    write!(bytes, "{}", c.value(i))
                }
            };
        }
        offsets.push(bytes.len() as u32);
    }
    ColumnData::Utf8 { offsets, bytes }
}

pub(crate) fn cast_column(c: &Column, to: DataType) -> Result<Column> {
    let validity = c.validity.clone();
    let from = c.data_type();
    let data = match (&c.data, to) {
        _ if from == to => c.data.clone(),
        (_, DataType::Utf8) => cast_to_text(c),
        (_, DataType::Decimal { precision, scale }) => cast_to_decimal(c, to, precision, scale)?,
        (ColumnData::Decimal { values, scale, .. }, _) => cast_from_decimal(c, values, *scale, to)?,
        (_, DataType::Date | DataType::Timestamp) => cast_to_temporal(c, to)?,
        (ColumnData::Utf8 { .. }, _) => cast_from_text(c, to)?,
        (ColumnData::Int64(v), DataType::Float64) => {
            ColumnData::Float64(v.iter().map(|&x| x as f64).collect())
        }
        (ColumnData::Int64(v), DataType::Boolean) => {
            ColumnData::Boolean(v.iter().map(|&x| x != 0).collect())
        }
        (ColumnData::Float64(v), DataType::Int64) => {
            ColumnData::Int64(convert(c, v, to, f64_to_i64)?)
        }
        (ColumnData::Float64(v), DataType::Boolean) => {
            ColumnData::Boolean(v.iter().map(|&x| x != 0.0).collect())
        }
        (ColumnData::Boolean(v), DataType::Int64) => {
            ColumnData::Int64(v.iter().map(|&x| x as i64).collect())
        }
        (ColumnData::Boolean(v), DataType::Float64) => {
            ColumnData::Float64(v.iter().map(|&x| x as i64 as f64).collect())
        }
        _ => return Err(cast_err(from, to)),
    };
    Ok(Column::with_validity(data, validity))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch() -> Batch {
        Batch::from_rows(
            &[
                DataType::Int64,
                DataType::Float64,
                DataType::Utf8,
                DataType::Boolean,
            ],
            &[
                vec![1.into(), 1.5.into(), "apple".into(), true.into()],
                vec![2.into(), Value::Null, "banana".into(), false.into()],
                vec![Value::Null, 3.0.into(), Value::Null, Value::Null],
                vec![4.into(), (-1.0).into(), "cherry".into(), true.into()],
            ],
        )
        .unwrap()
    }

    fn vals(e: &Expr) -> Vec<Value> {
        let b = batch();
        let c = evaluate(e, &b, &[Value::Int(2)]).unwrap();
        (0..c.len()).map(|i| c.value(i)).collect()
    }

    #[test]
    fn arithmetic_and_nulls() {
        let e = Expr::col(0).binary(BinaryOp::Add, Expr::lit(10));
        assert_eq!(vals(&e), vec![11.into(), 12.into(), Value::Null, 14.into()]);
        let e = Expr::col(0).binary(BinaryOp::Mul, Expr::col(1));
        assert_eq!(
            vals(&e),
            vec![1.5.into(), Value::Null, Value::Null, (-4.0).into()]
        );
        let e = Expr::lit(7).binary(BinaryOp::Mod, Expr::Param(0));
        assert_eq!(vals(&e), vec![1.into(); 4]);
    }

    #[test]
    fn arithmetic_errors() {
        let b = batch();
        let e = Expr::col(0).binary(BinaryOp::Add, Expr::lit(i64::MAX));
        assert!(matches!(evaluate(&e, &b, &[]), Err(Error::Overflow(_))));
        let e = Expr::lit(i64::MIN).binary(BinaryOp::Div, Expr::lit(-1));
        assert!(matches!(evaluate_scalar(&e, &[]), Err(Error::Overflow(_))));
        let e = Expr::Param(3);
        assert_eq!(evaluate(&e, &b, &[]), Err(Error::MissingParameter(4)));
        let e = Expr::col(2).binary(BinaryOp::Add, Expr::lit(1));
        assert!(matches!(evaluate(&e, &b, &[]), Err(Error::Type(_))));
        let e = Expr::col(2).eq(Expr::lit(1));
        assert!(matches!(evaluate(&e, &b, &[]), Err(Error::Type(_))));
        // Division by zero on a NULL row is fine.
        let e = Expr::lit(1).binary(
            BinaryOp::Div,
            Expr::col(0).binary(BinaryOp::Mul, Expr::lit(0)),
        );
        let b2 = Batch::from_rows(&[DataType::Int64], &[vec![Value::Null]]).unwrap();
        assert_eq!(evaluate(&e, &b2, &[]).unwrap().value(0), Value::Null);
    }

    #[test]
    fn division_by_zero_is_null() {
        // Column / scalar zero, scalar / scalar zero, column / column with zeros; int and float.
        let e = Expr::col(0).binary(BinaryOp::Div, Expr::lit(0));
        assert_eq!(vals(&e), vec![Value::Null; 4]);
        let e = Expr::col(1).binary(BinaryOp::Mod, Expr::lit(0.0));
        assert_eq!(vals(&e), vec![Value::Null; 4]);
        assert_eq!(
            evaluate_scalar(&Expr::lit(1).binary(BinaryOp::Div, Expr::lit(0)), &[]).unwrap(),
            Value::Null
        );
        let d = Expr::col(0).binary(BinaryOp::Sub, Expr::lit(2));
        let e = Expr::lit(10).binary(BinaryOp::Div, d.clone());
        assert_eq!(
            vals(&e),
            vec![(-10).into(), Value::Null, Value::Null, 5.into()]
        );
        let e = Expr::lit(10).binary(BinaryOp::Mod, d);
        assert_eq!(vals(&e), vec![0.into(), Value::Null, Value::Null, 0.into()]);
    }

    fn case(operand: Option<Expr>, branches: Vec<(Expr, Expr)>, els: Option<Expr>) -> Expr {
        Expr::Case {
            operand: operand.map(Box::new),
            branches,
            else_result: els.map(Box::new),
        }
    }

    #[test]
    fn case_both_forms() {
        // Searched, with ELSE; a NULL condition falls through.
        let e = case(
            None,
            vec![
                (
                    Expr::col(0).binary(BinaryOp::Gt, Expr::lit(3)),
                    Expr::lit("big"),
                ),
                (
                    Expr::col(0).binary(BinaryOp::Gt, Expr::lit(1)),
                    Expr::col(2),
                ),
            ],
            Some(Expr::lit("small")),
        );
        assert_eq!(
            vals(&e),
            vec![
                "small".into(),
                "banana".into(),
                "small".into(),
                "big".into()
            ]
        );
        // Simple, without ELSE: no match (and a NULL operand) gives NULL.
        let e = case(
            Some(Expr::col(0)),
            vec![(Expr::lit(1), Expr::lit(10)), (Expr::lit(4), Expr::lit(40))],
            None,
        );
        assert_eq!(
            vals(&e),
            vec![10.into(), Value::Null, Value::Null, 40.into()]
        );
        // A branch's result is evaluated only on its rows: the cast fails on row 1 only.
        let e = case(
            None,
            vec![(
                Expr::col(0).eq(Expr::lit(1)),
                Expr::Cast {
                    expr: Box::new(Expr::col(2)),
                    to: DataType::Int64,
                },
            )],
            Some(Expr::lit(0)),
        );
        let b = Batch::from_rows(
            &[DataType::Int64, DataType::Float64, DataType::Utf8],
            &[
                vec![1.into(), Value::Null, "7".into()],
                vec![2.into(), Value::Null, "x".into()],
            ],
        )
        .unwrap();
        let c = evaluate(&e, &b, &[]).unwrap();
        assert_eq!((c.value(0), c.value(1)), (7.into(), 0.into()));
        // Scalar CASE, and a NULL branch result.
        let e = case(None, vec![(Expr::lit(false), Expr::lit(1))], None);
        assert_eq!(evaluate_scalar(&e, &[]).unwrap(), Value::Null);
        let e = case(
            None,
            vec![(Expr::col(3), Expr::lit(Value::Null))],
            Some(Expr::col(0)),
        );
        assert_eq!(
            vals(&e),
            vec![Value::Null, 2.into(), Value::Null, Value::Null]
        );
        // Empty input.
        let empty = Batch::empty(&[DataType::Int64]);
        let e = case(
            None,
            vec![(Expr::col(0).eq(Expr::lit(1)), Expr::lit(1))],
            None,
        );
        assert_eq!(evaluate(&e, &empty, &[]).unwrap().len(), 0);
    }

    #[test]
    fn evaluate_borrowed_borrows_column_references_and_computes_the_rest() {
        let batch = Batch::try_new(vec![Column::from_i64(vec![1, 2, 3])]).unwrap();
        let col = evaluate_borrowed(&Expr::col(0), &batch, &[]).unwrap();
        assert!(matches!(&col, Cow::Borrowed(c) if std::ptr::eq(*c, batch.column(0))));
        let doubled = Expr::col(0).binary(BinaryOp::Mul, Expr::lit(2));
        let col = evaluate_borrowed(&doubled, &batch, &[]).unwrap();
        assert!(matches!(col, Cow::Owned(_)));
        assert_eq!(col.as_i64().unwrap(), &[2, 4, 6]);
        let lit = evaluate_borrowed(&Expr::lit(7), &batch, &[]).unwrap();
        assert_eq!(lit.len(), 3);
        assert!(evaluate_borrowed(&Expr::col(1), &batch, &[]).is_err());
    }

    #[test]
    fn coalesce_nullif_and_functions() {
        let f = |func, args| Expr::Function { func, args };
        let e = f(
            ScalarFunc::Coalesce,
            vec![
                Expr::col(1),
                Expr::Cast {
                    expr: Box::new(Expr::col(0)),
                    to: DataType::Float64,
                },
                Expr::lit(0.5),
            ],
        );
        assert_eq!(
            vals(&e),
            vec![1.5.into(), 2.0.into(), 3.0.into(), (-1.0).into()]
        );
        let e = f(ScalarFunc::NullIf, vec![Expr::col(0), Expr::lit(2)]);
        assert_eq!(vals(&e), vec![1.into(), Value::Null, Value::Null, 4.into()]);
        let e = f(ScalarFunc::NullIf, vec![Expr::lit(2), Expr::lit(2)]);
        assert_eq!(evaluate_scalar(&e, &[]).unwrap(), Value::Null);
        let e = f(ScalarFunc::Upper, vec![Expr::col(2)]);
        assert_eq!(
            vals(&e),
            vec![
                "APPLE".into(),
                "BANANA".into(),
                Value::Null,
                "CHERRY".into()
            ]
        );
        let e = f(ScalarFunc::ConcatOp, vec![Expr::lit("a"), Expr::lit("b")]);
        assert_eq!(evaluate_scalar(&e, &[]).unwrap(), Value::from("ab"));
        let e = f(ScalarFunc::Abs, vec![Expr::lit(Value::Null)]);
        assert_eq!(evaluate_scalar(&e, &[]).unwrap(), Value::Null);
        let e = f(ScalarFunc::Length, vec![Expr::col(2)]);
        assert_eq!(vals(&e), vec![5.into(), 6.into(), Value::Null, 6.into()]);
    }

    #[test]
    fn like_escape() {
        let like = |s: &str, p: &str| {
            let e = Expr::Like {
                expr: Box::new(Expr::lit(s)),
                pattern: Box::new(Expr::lit(p)),
                negated: false,
                escape: Some('!'),
            };
            evaluate_scalar(&e, &[]).unwrap()
        };
        assert_eq!(like("50%", "50!%"), true.into());
        assert_eq!(like("500", "50!%"), false.into());
        assert_eq!(like("a_b", "a!_%"), true.into());
        assert_eq!(like("axb", "a!_%"), false.into());
        assert_eq!(like("a!b", "a!!b"), true.into());
        assert_eq!(like("abc", "a%"), true.into());
    }

    #[test]
    fn comparisons_and_logic() {
        let b = batch();
        let e = Expr::col(0).binary(BinaryOp::Gt, Expr::lit(1.5));
        assert_eq!(
            evaluate_predicate(&e, &b, &[]).unwrap(),
            vec![false, true, false, true]
        );
        let e = Expr::col(2).binary(BinaryOp::Lt, Expr::lit("banana"));
        assert_eq!(
            vals(&e),
            vec![true.into(), false.into(), Value::Null, false.into()]
        );
        // NULL AND FALSE = FALSE; NULL OR TRUE = TRUE.
        let e = Expr::col(3).and(Expr::lit(false));
        assert_eq!(vals(&e), vec![false.into(); 4]);
        let e = Expr::col(3).binary(BinaryOp::Or, Expr::col(0).eq(Expr::lit(4)));
        assert_eq!(
            vals(&e),
            vec![true.into(), false.into(), Value::Null, true.into()]
        );
        let e = Expr::Not(Box::new(Expr::col(3)));
        assert_eq!(
            vals(&e),
            vec![false.into(), true.into(), Value::Null, false.into()]
        );
    }

    #[test]
    fn in_between_like_isnull() {
        let e = Expr::InList {
            expr: Box::new(Expr::col(0)),
            list: vec![Expr::lit(1), Expr::lit(Value::Null)],
            negated: false,
        };
        assert_eq!(
            vals(&e),
            vec![true.into(), Value::Null, Value::Null, Value::Null]
        );
        let e = Expr::InList {
            expr: Box::new(Expr::col(0)),
            list: (0..10).map(|i| Expr::lit(i * 2)).collect(),
            negated: true,
        };
        assert_eq!(
            vals(&e),
            vec![true.into(), false.into(), Value::Null, false.into()]
        );
        let e = Expr::Between {
            expr: Box::new(Expr::col(1)),
            low: Box::new(Expr::lit(0)),
            high: Box::new(Expr::lit(3)),
            negated: false,
        };
        assert_eq!(
            vals(&e),
            vec![true.into(), Value::Null, true.into(), false.into()]
        );
        for (pat, expect) in [
            ("%an%", [false, true, false]),
            ("a%", [true, false, false]),
            ("%y", [false, false, true]),
            ("_a%a", [false, true, false]),
            ("apple", [true, false, false]),
            ("%", [true, true, true]),
            ("c_e%r_", [false, false, true]),
        ] {
            let e = Expr::Like {
                expr: Box::new(Expr::col(2)),
                pattern: Box::new(Expr::lit(pat)),
                negated: false,
                escape: None,
            };
            let v = vals(&e);
            assert_eq!(
                v,
                vec![
                    expect[0].into(),
                    expect[1].into(),
                    Value::Null,
                    expect[2].into()
                ],
                "{pat}"
            );
        }
        let e = Expr::IsNull {
            expr: Box::new(Expr::col(1)),
            negated: true,
        };
        assert_eq!(
            vals(&e),
            vec![true.into(), false.into(), true.into(), true.into()]
        );
    }

    #[test]
    fn casts() {
        let c = |e: Expr, to| Expr::Cast {
            expr: Box::new(e),
            to,
        };
        assert_eq!(
            evaluate_scalar(&c(Expr::lit("42"), DataType::Int64), &[]).unwrap(),
            Value::Int(42)
        );
        assert!(matches!(
            evaluate_scalar(&c(Expr::lit("x"), DataType::Int64), &[]),
            Err(Error::Cast { .. })
        ));
        assert_eq!(
            evaluate_scalar(&c(Expr::lit(-2.7), DataType::Int64), &[]).unwrap(),
            Value::Int(-2)
        );
        assert_eq!(
            evaluate_scalar(&c(Expr::lit(3), DataType::Boolean), &[]).unwrap(),
            Value::Bool(true)
        );
        assert_eq!(
            evaluate_scalar(&c(Expr::lit(true), DataType::Int64), &[]).unwrap(),
            Value::Int(1)
        );
        assert_eq!(
            evaluate_scalar(&c(Expr::lit(2.5), DataType::Utf8), &[]).unwrap(),
            Value::from("2.5")
        );
        assert_eq!(
            vals(&c(Expr::col(0), DataType::Utf8)),
            vec!["1".into(), "2".into(), Value::Null, "4".into()]
        );
        assert_eq!(
            evaluate_scalar(&c(Expr::lit(Value::Null), DataType::Utf8), &[]).unwrap(),
            Value::Null
        );
    }

    #[test]
    fn scalars() {
        let e = Expr::Param(0).binary(BinaryOp::Add, Expr::lit(1.5));
        assert_eq!(
            evaluate_scalar(&e, &[Value::Int(1)]).unwrap(),
            Value::Float(2.5)
        );
        let e = Expr::Negate(Box::new(Expr::Param(0)));
        assert_eq!(
            evaluate_scalar(&e, &[Value::Int(1)]).unwrap(),
            Value::Int(-1)
        );
        assert!(matches!(
            evaluate_scalar(&Expr::col(0), &[]),
            Err(Error::Internal(_))
        ));
        let b = batch();
        let col = evaluate(&Expr::lit("x"), &b, &[]).unwrap();
        assert_eq!(col.len(), 4);
        assert_eq!(col.value(3), Value::from("x"));
    }

    fn dec(v: i128, s: u8) -> Expr {
        Expr::lit(Value::Decimal(v, s))
    }

    fn run(e: &Expr) -> Result<Value> {
        evaluate_scalar(e, &[])
    }

    #[test]
    fn decimal_arithmetic_is_exact_and_rescales() {
        // 1.50 + 0.005 = 1.505 (scale 3), 1.50 * 0.2 = 0.300 (scale 3), 1.5 - 2 = -0.5.
        let add = dec(150, 2).binary(BinaryOp::Add, dec(5, 3));
        assert_eq!(run(&add).unwrap(), Value::Decimal(1505, 3));
        let mul = dec(150, 2).binary(BinaryOp::Mul, dec(2, 1));
        assert_eq!(run(&mul).unwrap(), Value::Decimal(300, 3));
        let sub = dec(15, 1).binary(BinaryOp::Sub, Expr::lit(2));
        assert_eq!(run(&sub).unwrap(), Value::Decimal(-5, 1));
        let rem = dec(75, 1).binary(BinaryOp::Mod, dec(25, 1));
        assert_eq!(run(&rem).unwrap(), Value::Decimal(0, 1));
        // Division gives a DOUBLE; by zero it is NULL.
        let div = dec(1000, 2).binary(BinaryOp::Div, Expr::lit(4));
        assert_eq!(run(&div).unwrap(), Value::Float(2.5));
        let div0 = dec(1000, 2).binary(BinaryOp::Div, dec(0, 1));
        assert_eq!(run(&div0).unwrap(), Value::Null);
        // Mixed with a DOUBLE the result is a DOUBLE.
        let f = dec(15, 1).binary(BinaryOp::Add, Expr::lit(0.25));
        assert_eq!(run(&f).unwrap(), Value::Float(1.75));
        // A column: 0.1 added ten times is exactly 1.0 (f64 gives 0.9999999999999999).
        let col =
            Column::from_values(DataType::decimal(10, 1), &vec![Value::Decimal(1, 1); 10]).unwrap();
        let b = Batch::try_new(vec![col]).unwrap();
        let sum = (0..9).fold(Expr::col(0), |acc, _| {
            acc.binary(BinaryOp::Add, Expr::col(0))
        });
        let out = evaluate(&sum, &b, &[]).unwrap();
        assert_eq!(out.value(0), Value::Decimal(10, 1));
    }

    #[test]
    fn decimal_overflow_is_an_error() {
        let big = dec(10i128.pow(37), 0);
        let e = big.clone().binary(BinaryOp::Mul, Expr::lit(100));
        let err = run(&e).unwrap_err();
        assert!(matches!(err, Error::Overflow(_)), "{err:?}");
        assert!(err.to_string().contains("DECIMAL overflow"), "{err}");
        let e = dec(i128::MAX / 2, 0).binary(BinaryOp::Add, dec(i128::MAX / 2 + 2, 0));
        assert!(run(&e).is_err());
        // Rescaling an operand past i128 is an overflow too.
        let e = big.binary(BinaryOp::Add, dec(1, 5));
        assert!(run(&e).unwrap_err().to_string().contains("overflow"));
    }

    #[test]
    fn decimal_comparisons_across_scales_and_types() {
        let t = |e: Expr| run(&e).unwrap();
        assert_eq!(t(dec(150, 2).eq(dec(15, 1))), Value::Bool(true));
        assert_eq!(
            t(dec(150, 2).binary(BinaryOp::Lt, Expr::lit(2))),
            Value::Bool(true)
        );
        assert_eq!(
            t(dec(150, 2).binary(BinaryOp::Gt, Expr::lit(1.49))),
            Value::Bool(true)
        );
        assert_eq!(
            t(dec(-1, 2).binary(BinaryOp::Lt, dec(0, 0))),
            Value::Bool(true)
        );
    }

    #[test]
    fn date_arithmetic_and_comparisons() {
        let d = |s: &str| Expr::lit(Value::Date(crate::temporal::parse_date(s).unwrap()));
        let date = |s: &str| Value::Date(crate::temporal::parse_date(s).unwrap());
        let e = d("1994-01-01").binary(BinaryOp::Add, Expr::lit(31));
        assert_eq!(run(&e).unwrap(), date("1994-02-01"));
        let e = Expr::lit(1).binary(BinaryOp::Add, d("2024-02-28"));
        assert_eq!(run(&e).unwrap(), date("2024-02-29"), "leap day");
        let e = d("1995-01-01").binary(BinaryOp::Sub, d("1994-01-01"));
        assert_eq!(run(&e).unwrap(), Value::Int(365));
        let e = d("1994-01-01").binary(BinaryOp::Mul, Expr::lit(2));
        assert!(run(&e).is_err());
        let e = d("1994-01-01").binary(BinaryOp::Lt, d("1994-01-02"));
        assert_eq!(run(&e).unwrap(), Value::Bool(true));
        // A DATE compares with a TIMESTAMP at midnight.
        let ts = crate::temporal::parse_timestamp("1994-01-01 00:00:00").unwrap();
        let e = d("1994-01-01").eq(Expr::lit(Value::Timestamp(ts)));
        assert_eq!(run(&e).unwrap(), Value::Bool(true));
        let add = |x: Expr, months: i64| Expr::Function {
            func: ScalarFunc::AddInterval,
            args: vec![x, Expr::lit(months), Expr::lit(0), Expr::lit(0)],
        };
        assert_eq!(run(&add(d("2024-01-31"), 1)).unwrap(), date("2024-02-29"));
        assert_eq!(run(&add(d("2023-03-31"), -1)).unwrap(), date("2023-02-28"));
        assert_eq!(run(&add(Expr::lit(Value::Null), 1)).unwrap(), Value::Null);
    }

    #[test]
    fn extract_and_date_trunc() {
        let d = Expr::lit(Value::Date(
            crate::temporal::parse_date("2024-05-19").unwrap(),
        ));
        let f = |func, part: &str| Expr::Function {
            func,
            args: vec![Expr::lit(part), d.clone()],
        };
        assert_eq!(
            run(&f(ScalarFunc::Extract, "year")).unwrap(),
            Value::Int(2024)
        );
        assert_eq!(
            run(&f(ScalarFunc::Extract, "quarter")).unwrap(),
            Value::Int(2)
        );
        assert_eq!(run(&f(ScalarFunc::Extract, "dow")).unwrap(), Value::Int(0));
        assert_eq!(
            run(&f(ScalarFunc::DateTrunc, "month")).unwrap().to_string(),
            "2024-05-01"
        );
        assert!(run(&f(ScalarFunc::Extract, "fortnight")).is_err());
    }

    #[test]
    fn casts_of_the_new_types() {
        let c = |e: Expr, to| {
            run(&Expr::Cast {
                expr: Box::new(e),
                to,
            })
        };
        let d52 = DataType::decimal(5, 2);
        assert_eq!(
            c(Expr::lit("12.345"), d52).unwrap(),
            Value::Decimal(1235, 2)
        );
        assert_eq!(
            c(Expr::lit("-12.345"), d52).unwrap(),
            Value::Decimal(-1235, 2)
        );
        assert_eq!(c(Expr::lit(3), d52).unwrap(), Value::Decimal(300, 2));
        assert_eq!(c(Expr::lit(0.125), d52).unwrap(), Value::Decimal(13, 2));
        assert_eq!(c(dec(25, 1), DataType::Int64).unwrap(), Value::Int(3));
        assert_eq!(c(dec(-25, 1), DataType::Int64).unwrap(), Value::Int(-3));
        assert_eq!(
            c(dec(125, 2), DataType::Float64).unwrap(),
            Value::Float(1.25)
        );
        assert_eq!(
            c(dec(1250, 2), DataType::Utf8).unwrap(),
            Value::from("12.50")
        );
        let err = c(Expr::lit("abc"), d52).unwrap_err();
        assert_eq!(err.to_string(), "cannot cast 'abc' to DECIMAL(5,2)");
        let err = c(dec(123456, 1), d52).unwrap_err();
        assert_eq!(err.to_string(), "cannot cast 12345.6 to DECIMAL(5,2)");
        let day = crate::temporal::parse_date("1998-12-01").unwrap();
        assert_eq!(
            c(Expr::lit("1998-12-01"), DataType::Date).unwrap(),
            Value::Date(day)
        );
        assert_eq!(
            c(Expr::lit("1998-12-01 10:00:00"), DataType::Date).unwrap(),
            Value::Date(day)
        );
        assert_eq!(
            c(Expr::lit(Value::Date(day)), DataType::Utf8).unwrap(),
            Value::from("1998-12-01")
        );
        let ts = c(Expr::lit(Value::Date(day)), DataType::Timestamp).unwrap();
        assert_eq!(ts.to_string(), "1998-12-01 00:00:00");
        assert_eq!(c(Expr::lit(ts), DataType::Date).unwrap(), Value::Date(day));
        let err = c(Expr::lit("1998-02-30"), DataType::Date).unwrap_err();
        assert_eq!(err.to_string(), "cannot cast '1998-02-30' to DATE");
        assert!(c(Expr::lit(Value::Date(day)), DataType::Int64).is_err());
    }
}
