//! Hash aggregation kernel (single-phase, partial and final modes).
//!
//! Each input batch is processed in two vectorized steps: first the group key columns are
//! hashed with [`hash_rows`](crate::kernels::hash::hash_rows) and every row is mapped to a
//! dense group id through a hash table
//! (new keys are appended to typed key stores; one BIGINT key is looked up by value in an
//! `IntTable` instead, without hashing the column first); then every aggregate updates its typed
//! accumulator vectors (indexed by group id) in one loop over the argument column.
//!
//! * [`AggMode::Single`]: input rows in, final values out.
//! * [`AggMode::Partial`]: input rows in, group keys and partial states out
//!   ([`AggregateExpr::state_types`]).
//! * [`AggMode::Final`]: group keys and partial states in, final values out.
//!
//! Without GROUP BY there is exactly one group, so an empty input still yields one row
//! (COUNT 0, other aggregates NULL) in every mode.
//!
//! After the input ends, each `next_output` call emits the next `batch_size` groups, built from
//! the key stores and accumulators by slices; the state (and its reservation) is released when
//! the last group has been emitted.
//!
//! Refused memory with a spill space ([`ExecContext::spill`]), a grouped aggregation spills
//! (module `spill`), or, in partial mode, sends what it holds downstream early. A partial
//! aggregation that barely groups lets its rows through, a state per row (module
//! `adaptive`).

mod adaptive;
mod few_groups;
mod moments;
mod shared_args;
mod spill;

use super::groups::{from_wide, wide_at, Groups};
use super::operator::{revoked, ExecContext, Operator};
use super::prefetch::{prefetch_ahead, worth_prefetching, L2_BYTES};
use crate::bitmap::Bitmap;
use crate::column::{ColumnBuilder, ColumnData};
use crate::eval::{cast_column, evaluate_borrowed};
use crate::plan::{AggFunc, AggMode, AggregateExpr};
use crate::spill::SpillFile;
use crate::{Batch, Column, DataType, Error, Expr, Reservation, Result, Value};
use adaptive::PartialProbe;
use moments::Moments;
pub(crate) use moments::{finish_column, Moment};
use shared_args::SharedArgs;
use spill::{GroupSpill, MAX_LEVEL};
use std::borrow::Cow;
use std::collections::VecDeque;

/// The exact sum of the values present (per `valid`): no slice of `i64`s can overflow an
/// `i128`.
fn masked_sum_i64(v: &[i64], valid: Option<&Bitmap>) -> i128 {
    match valid {
        None => v.iter().map(|&x| i128::from(x)).sum(),
        Some(m) => (0..v.len())
            .filter(|&i| m.get(i))
            .map(|i| i128::from(v[i]))
            .sum(),
    }
}

/// Per-group accumulator state of one aggregate.
#[derive(Debug)]
enum Acc {
    Count(Vec<i64>),
    SumInt {
        sum: Vec<i64>,
        seen: Vec<bool>,
    },
    /// Float SUM, and TOTAL (`total`: the final value is `0.0`, not NULL, over no values).
    SumFloat {
        sum: Vec<f64>,
        seen: Vec<bool>,
        total: bool,
    },
    Avg {
        sum: Vec<f64>,
        count: Vec<i64>,
    },
    MinMaxInt {
        v: Vec<i64>,
        seen: Vec<bool>,
        min: bool,
    },
    MinMaxFloat {
        v: Vec<f64>,
        seen: Vec<bool>,
        min: bool,
    },
    MinMaxBool {
        v: Vec<bool>,
        seen: Vec<bool>,
        min: bool,
    },
    MinMaxStr {
        v: Vec<String>,
        seen: Vec<bool>,
        min: bool,
    },
    /// PERCENTILE_CONT: each group's values, sorted when the group is emitted.
    Percentile {
        values: Vec<Vec<f64>>,
        fraction: f64,
    },
    /// STRING_AGG: each group's values joined so far by `separator`.
    Join {
        v: Vec<String>,
        seen: Vec<bool>,
        separator: String,
    },
    /// Exact SUM of decimals, at the input's scale.
    SumDecimal {
        sum: Vec<i128>,
        seen: Vec<bool>,
        precision: u8,
        scale: u8,
    },
    /// AVG of decimals: the exact sum and the count.
    AvgDecimal {
        sum: Vec<i128>,
        count: Vec<i64>,
        scale: u8,
    },
    /// The variances and standard deviations (`func`), of DOUBLE values.
    Moments {
        m: Moments,
        func: AggFunc,
    },
    /// MIN/MAX of DECIMAL, DATE and TIMESTAMP values, widened to `i128`.
    MinMaxWide {
        v: Vec<i128>,
        seen: Vec<bool>,
        min: bool,
        dt: DataType,
    },
}

impl Acc {
    fn new(agg: &AggregateExpr) -> Result<Acc> {
        let t = agg.input_type;
        let numeric = || {
            if t.is_numeric() {
                Ok(())
            } else {
                Err(Error::Type(format!(
                    "{} needs a numeric argument, got {t}",
                    agg.func.name()
                )))
            }
        };
        Ok(match agg.func {
            AggFunc::CountStar | AggFunc::Count => Acc::Count(Vec::new()),
            AggFunc::Sum => {
                numeric()?;
                if let DataType::Decimal { precision, scale } = agg.output_type() {
                    Acc::SumDecimal {
                        sum: Vec::new(),
                        seen: Vec::new(),
                        precision,
                        scale,
                    }
                } else if t == DataType::Int64 {
                    Acc::SumInt {
                        sum: Vec::new(),
                        seen: Vec::new(),
                    }
                } else {
                    Acc::SumFloat {
                        sum: Vec::new(),
                        seen: Vec::new(),
                        total: false,
                    }
                }
            }
            AggFunc::Total => {
                numeric()?;
                Acc::SumFloat {
                    sum: Vec::new(),
                    seen: Vec::new(),
                    total: true,
                }
            }
            AggFunc::PercentileCont => {
                numeric()?;
                match agg.param {
                    Some(Value::Float(f)) if (0.0..=1.0).contains(&f) => Acc::Percentile {
                        values: Vec::new(),
                        fraction: f,
                    },
                    _ => {
                        return Err(Error::Type(
                            "PERCENTILE_CONT needs a fraction between 0 and 1".into(),
                        ))
                    }
                }
            }
            AggFunc::VarSamp | AggFunc::VarPop | AggFunc::StddevSamp | AggFunc::StddevPop => {
                if t != DataType::Float64 {
                    return Err(Error::Type(format!(
                        "{} takes DOUBLE values, got {t}",
                        agg.func.name()
                    )));
                }
                Acc::Moments {
                    m: Moments::default(),
                    func: agg.func,
                }
            }
            AggFunc::StringAgg => Acc::Join {
                v: Vec::new(),
                seen: Vec::new(),
                separator: match &agg.param {
                    Some(Value::Str(s)) => s.clone(),
                    _ => ",".to_string(),
                },
            },
            AggFunc::Avg => {
                numeric()?;
                if let DataType::Decimal { scale, .. } = t {
                    return Ok(Acc::AvgDecimal {
                        sum: Vec::new(),
                        count: Vec::new(),
                        scale,
                    });
                }
                Acc::Avg {
                    sum: Vec::new(),
                    count: Vec::new(),
                }
            }
            AggFunc::Min | AggFunc::Max => {
                let min = agg.func == AggFunc::Min;
                let seen = Vec::new();
                match t {
                    DataType::Int64 => Acc::MinMaxInt {
                        v: Vec::new(),
                        seen,
                        min,
                    },
                    DataType::Float64 => Acc::MinMaxFloat {
                        v: Vec::new(),
                        seen,
                        min,
                    },
                    DataType::Boolean => Acc::MinMaxBool {
                        v: Vec::new(),
                        seen,
                        min,
                    },
                    DataType::Utf8 => Acc::MinMaxStr {
                        v: Vec::new(),
                        seen,
                        min,
                    },
                    DataType::Decimal { .. } | DataType::Date | DataType::Timestamp => {
                        Acc::MinMaxWide {
                            v: Vec::new(),
                            seen,
                            min,
                            dt: t,
                        }
                    }
                }
            }
        })
    }

    /// Grows the state to `n` groups.
    fn resize(&mut self, n: usize) {
        match self {
            Acc::Count(c) => c.resize(n, 0),
            Acc::SumInt { sum, seen } => {
                sum.resize(n, 0);
                seen.resize(n, false);
            }
            Acc::SumFloat { sum, seen, .. } => {
                sum.resize(n, 0.0);
                seen.resize(n, false);
            }
            Acc::Avg { sum, count } => {
                sum.resize(n, 0.0);
                count.resize(n, 0);
            }
            Acc::MinMaxInt { v, seen, .. } => {
                v.resize(n, 0);
                seen.resize(n, false);
            }
            Acc::MinMaxFloat { v, seen, .. } => {
                v.resize(n, 0.0);
                seen.resize(n, false);
            }
            Acc::MinMaxBool { v, seen, .. } => {
                v.resize(n, false);
                seen.resize(n, false);
            }
            Acc::MinMaxStr { v, seen, .. } | Acc::Join { v, seen, .. } => {
                v.resize(n, String::new());
                seen.resize(n, false);
            }
            Acc::SumDecimal { sum, seen, .. } | Acc::MinMaxWide { v: sum, seen, .. } => {
                sum.resize(n, 0);
                seen.resize(n, false);
            }
            Acc::AvgDecimal { sum, count, .. } => {
                sum.resize(n, 0);
                count.resize(n, 0);
            }
            Acc::Percentile { values, .. } => values.resize_with(n, Vec::new),
            Acc::Moments { m, .. } => m.resize(n),
        }
    }

    fn memory_size(&self) -> usize {
        match self {
            Acc::Count(c) => c.capacity() * 8,
            Acc::SumInt { sum, seen } => sum.capacity() * 8 + seen.capacity(),
            Acc::SumFloat { sum, seen, .. } => sum.capacity() * 8 + seen.capacity(),
            Acc::Avg { sum, count } => sum.capacity() * 8 + count.capacity() * 8,
            Acc::MinMaxInt { v, seen, .. } => v.capacity() * 8 + seen.capacity(),
            Acc::MinMaxFloat { v, seen, .. } => v.capacity() * 8 + seen.capacity(),
            Acc::MinMaxBool { v, seen, .. } => v.capacity() + seen.capacity(),
            Acc::MinMaxStr { v, seen, .. } | Acc::Join { v, seen, .. } => {
                v.capacity() * 24 + v.iter().map(String::capacity).sum::<usize>() + seen.capacity()
            }
            Acc::SumDecimal { sum, seen, .. } | Acc::MinMaxWide { v: sum, seen, .. } => {
                sum.capacity() * 16 + seen.capacity()
            }
            Acc::AvgDecimal { sum, count, .. } => sum.capacity() * 16 + count.capacity() * 8,
            Acc::Percentile { values, .. } => {
                values.capacity() * 24 + values.iter().map(|v| v.capacity() * 8).sum::<usize>()
            }
            Acc::Moments { m, .. } => m.memory_size(),
        }
    }

    /// `COUNT(*)`: every row counts.
    fn count_rows(&mut self, ids: &[u32]) {
        if let Acc::Count(c) = self {
            if let [single] = &mut c[..] {
                *single += ids.len() as i64;
                return;
            }
            if c.len() <= few_groups::FEW {
                few_groups::count_rows(c, ids);
                return;
            }
            for &g in ids {
                c[g as usize] += 1;
            }
        }
    }

    /// [`Acc::update`] for a single group (no GROUP BY), in one pass over the column without
    /// group ids, for COUNT and integer or float SUM; returns false (having done nothing) for
    /// the other aggregates. An integer sum fails only if the sum itself leaves BIGINT.
    fn update_single(&mut self, col: &Column, merge_counts: bool) -> Result<bool> {
        let valid = col.validity.as_ref();
        let overflow = || Error::Overflow("BIGINT overflow in SUM".into());
        match (self, &col.data) {
            (Acc::Count(c), ColumnData::Int64(v)) if merge_counts => {
                let add = masked_sum_i64(v, valid);
                c[0] = i64::try_from(i128::from(c[0]) + add).map_err(|_| overflow())?;
            }
            (Acc::Count(c), _) => c[0] += (col.len() - col.null_count()) as i64,
            (Acc::SumInt { sum, seen }, ColumnData::Int64(v)) => {
                if col.null_count() == col.len() {
                    return Ok(true);
                }
                let add = masked_sum_i64(v, valid);
                sum[0] = i64::try_from(i128::from(sum[0]) + add).map_err(|_| overflow())?;
                seen[0] = true;
            }
            (Acc::SumFloat { sum, seen, .. }, ColumnData::Float64(v)) => {
                if col.null_count() == col.len() {
                    return Ok(true);
                }
                sum[0] += match valid {
                    None => v.iter().sum::<f64>(),
                    Some(m) => (0..v.len()).filter(|&i| m.get(i)).map(|i| v[i]).sum(),
                };
                seen[0] = true;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Updates with the values of `col` (for SUM/MIN/MAX also the Final-mode merge, since
    /// their state is a value of the output type; for COUNT `merge_counts` adds the values
    /// instead of counting them).
    fn update(&mut self, ids: &[u32], col: &Column, merge_counts: bool) -> Result<()> {
        let valid = col.validity.as_ref();
        let ok = |i: usize| valid.is_none_or(|v| v.get(i));
        match (self, &col.data) {
            (Acc::Count(c), ColumnData::Int64(v)) if merge_counts => {
                let ahead = worth_prefetching(c, L2_BYTES);
                for (i, &g) in ids.iter().enumerate() {
                    if ahead {
                        prefetch_ahead(c, ids, i);
                    }
                    if ok(i) {
                        c[g as usize] += v[i];
                    }
                }
            }
            (Acc::Count(c), _) => {
                let ahead = worth_prefetching(c, L2_BYTES);
                for (i, &g) in ids.iter().enumerate() {
                    if ahead {
                        prefetch_ahead(c, ids, i);
                    }
                    c[g as usize] += valid.is_none_or(|v| v.get(i)) as i64;
                }
            }
            (Acc::SumInt { sum, seen }, ColumnData::Int64(v)) => {
                let ahead = worth_prefetching(sum, L2_BYTES);
                for (i, &g) in ids.iter().enumerate() {
                    if ahead {
                        prefetch_ahead(sum, ids, i);
                        prefetch_ahead(seen, ids, i);
                    }
                    if ok(i) {
                        let g = g as usize;
                        sum[g] = sum[g]
                            .checked_add(v[i])
                            .ok_or_else(|| Error::Overflow("BIGINT overflow in SUM".into()))?;
                        seen[g] = true;
                    }
                }
            }
            (Acc::SumFloat { sum, seen, .. }, ColumnData::Float64(v)) => {
                let ahead = worth_prefetching(sum, L2_BYTES);
                for (i, &g) in ids.iter().enumerate() {
                    if ahead {
                        prefetch_ahead(sum, ids, i);
                        prefetch_ahead(seen, ids, i);
                    }
                    if ok(i) {
                        sum[g as usize] += v[i];
                        seen[g as usize] = true;
                    }
                }
            }
            (Acc::Avg { sum, count }, ColumnData::Float64(v)) => {
                let ahead = worth_prefetching(sum, L2_BYTES);
                for (i, &g) in ids.iter().enumerate() {
                    if ahead {
                        prefetch_ahead(sum, ids, i);
                        prefetch_ahead(count, ids, i);
                    }
                    if ok(i) {
                        sum[g as usize] += v[i];
                        count[g as usize] += 1;
                    }
                }
            }
            (Acc::Avg { sum, count }, ColumnData::Int64(v)) => {
                let ahead = worth_prefetching(sum, L2_BYTES);
                for (i, &g) in ids.iter().enumerate() {
                    if ahead {
                        prefetch_ahead(sum, ids, i);
                        prefetch_ahead(count, ids, i);
                    }
                    if ok(i) {
                        sum[g as usize] += v[i] as f64;
                        count[g as usize] += 1;
                    }
                }
            }
            (Acc::MinMaxInt { v: acc, seen, min }, ColumnData::Int64(v)) => {
                let min = *min;
                let ahead = worth_prefetching(acc, L2_BYTES);
                for (i, &g) in ids.iter().enumerate() {
                    if ahead {
                        prefetch_ahead(acc, ids, i);
                        prefetch_ahead(seen, ids, i);
                    }
                    let g = g as usize;
                    if ok(i) && (!seen[g] || (v[i] < acc[g]) == min && v[i] != acc[g]) {
                        acc[g] = v[i];
                        seen[g] = true;
                    }
                }
            }
            (Acc::MinMaxFloat { v: acc, seen, min }, ColumnData::Float64(v)) => {
                let min = *min;
                let ahead = worth_prefetching(acc, L2_BYTES);
                for (i, &g) in ids.iter().enumerate() {
                    if ahead {
                        prefetch_ahead(acc, ids, i);
                        prefetch_ahead(seen, ids, i);
                    }
                    let g = g as usize;
                    if ok(i) {
                        let better = match v[i].total_cmp(&acc[g]) {
                            std::cmp::Ordering::Less => min,
                            std::cmp::Ordering::Greater => !min,
                            std::cmp::Ordering::Equal => false,
                        };
                        if !seen[g] || better {
                            acc[g] = v[i];
                            seen[g] = true;
                        }
                    }
                }
            }
            (Acc::MinMaxBool { v: acc, seen, min }, ColumnData::Boolean(v)) => {
                let min = *min;
                for (i, &g) in ids.iter().enumerate() {
                    let g = g as usize;
                    if ok(i) && (!seen[g] || (v[i] != acc[g] && (!v[i] & acc[g]) == min)) {
                        acc[g] = v[i];
                        seen[g] = true;
                    }
                }
            }
            (Acc::MinMaxStr { v: acc, seen, min }, ColumnData::Utf8 { .. }) => {
                let min = *min;
                for (i, &g) in ids.iter().enumerate() {
                    let g = g as usize;
                    if ok(i) {
                        let s = col.str_at(i);
                        let better = match s.cmp(acc[g].as_str()) {
                            std::cmp::Ordering::Less => min,
                            std::cmp::Ordering::Greater => !min,
                            std::cmp::Ordering::Equal => false,
                        };
                        if !seen[g] || better {
                            acc[g].clear();
                            acc[g].push_str(s);
                            seen[g] = true;
                        }
                    }
                }
            }
            (
                Acc::Join {
                    v: acc,
                    seen,
                    separator,
                },
                ColumnData::Utf8 { .. },
            ) => {
                for (i, &g) in ids.iter().enumerate() {
                    let g = g as usize;
                    if ok(i) {
                        if seen[g] {
                            acc[g].push_str(separator);
                        }
                        acc[g].push_str(col.str_at(i));
                        seen[g] = true;
                    }
                }
            }
            (Acc::Moments { m, .. }, _) => m.update(ids, col)?,
            (Acc::Percentile { values, .. }, ColumnData::Float64(v)) => {
                for (i, &g) in ids.iter().enumerate() {
                    if ok(i) {
                        values[g as usize].push(v[i]);
                    }
                }
            }
            (Acc::SumDecimal { sum, seen, .. }, ColumnData::Decimal { values, .. })
                if valid.is_none() && sum.len() <= few_groups::FEW =>
            {
                few_groups::add_i128(sum, Some(seen), None, ids, values, "SUM")?
            }
            (Acc::AvgDecimal { sum, count, .. }, ColumnData::Decimal { values, .. })
                if valid.is_none() && sum.len() <= few_groups::FEW =>
            {
                few_groups::add_i128(sum, None, Some(count), ids, values, "AVG")?
            }
            (Acc::SumDecimal { sum, seen, .. }, ColumnData::Decimal { values, .. }) => {
                let ahead = worth_prefetching(sum, L2_BYTES);
                for (i, &g) in ids.iter().enumerate() {
                    if ahead {
                        prefetch_ahead(sum, ids, i);
                        prefetch_ahead(seen, ids, i);
                    }
                    if ok(i) {
                        let g = g as usize;
                        sum[g] = sum[g]
                            .checked_add(values[i])
                            .ok_or_else(|| Error::Overflow("DECIMAL overflow in SUM".into()))?;
                        seen[g] = true;
                    }
                }
            }
            (Acc::AvgDecimal { sum, count, .. }, ColumnData::Decimal { values, .. }) => {
                let ahead = worth_prefetching(sum, L2_BYTES);
                for (i, &g) in ids.iter().enumerate() {
                    if ahead {
                        prefetch_ahead(sum, ids, i);
                        prefetch_ahead(count, ids, i);
                    }
                    if ok(i) {
                        let g = g as usize;
                        sum[g] = sum[g]
                            .checked_add(values[i])
                            .ok_or_else(|| Error::Overflow("DECIMAL overflow in AVG".into()))?;
                        count[g] += 1;
                    }
                }
            }
            (
                Acc::MinMaxWide {
                    v: acc,
                    seen,
                    min,
                    dt,
                },
                _,
            ) if col.data_type() == *dt => {
                let min = *min;
                for (i, &g) in ids.iter().enumerate() {
                    let g = g as usize;
                    if !ok(i) {
                        continue;
                    }
                    let x = wide_at(col, i).unwrap_or(0);
                    if !seen[g] || (x < acc[g]) == min && x != acc[g] {
                        acc[g] = x;
                        seen[g] = true;
                    }
                }
            }
            (acc, _) => {
                return Err(Error::Type(format!(
                    "aggregate state {} does not accept a {} column",
                    acc.kind(),
                    col.data_type()
                )))
            }
        }
        Ok(())
    }

    /// Final-mode merge of AVG states (sum column and count column).
    fn merge_avg(&mut self, ids: &[u32], sums: &Column, counts: &Column) -> Result<()> {
        if let (Acc::AvgDecimal { sum, count, .. }, Some((s, _)), Some(c)) =
            (&mut *self, sums.as_decimal(), counts.as_i64())
        {
            for (i, &g) in ids.iter().enumerate() {
                let g = g as usize;
                if sums.is_valid(i) {
                    sum[g] = sum[g]
                        .checked_add(s[i])
                        .ok_or_else(|| Error::Overflow("DECIMAL overflow in AVG".into()))?;
                }
                if counts.is_valid(i) {
                    count[g] += c[i];
                }
            }
            return Ok(());
        }
        let (Acc::Avg { sum, count }, Some(s), Some(c)) = (self, sums.as_f64(), counts.as_i64())
        else {
            return Err(Error::Type("AVG state must be (DOUBLE, BIGINT)".into()));
        };
        for (i, &g) in ids.iter().enumerate() {
            if sums.is_valid(i) {
                sum[g as usize] += s[i];
            }
            if counts.is_valid(i) {
                count[g as usize] += c[i];
            }
        }
        Ok(())
    }

    fn kind(&self) -> &'static str {
        match self {
            Acc::Count(_) => "COUNT",
            Acc::SumFloat { total: true, .. } => "TOTAL",
            Acc::SumInt { .. } | Acc::SumFloat { .. } | Acc::SumDecimal { .. } => "SUM",
            Acc::Avg { .. } | Acc::AvgDecimal { .. } => "AVG",
            Acc::Join { .. } => "STRING_AGG",
            Acc::Percentile { .. } => "PERCENTILE_CONT",
            Acc::Moments { func, .. } => func.name(),
            _ => "MIN/MAX",
        }
    }

    /// Output columns for groups `start..end` (`partial`: state columns).
    fn output(&self, start: usize, end: usize, partial: bool, out: &mut Vec<Column>) {
        fn opt<T: Clone>(v: &[T], seen: &[bool], f: fn(Vec<T>) -> ColumnData) -> Column {
            let bitmap = (!seen.iter().all(|&s| s)).then(|| Bitmap::from_bools(seen));
            Column::with_validity(f(v.to_vec()), bitmap)
        }
        let r = start..end;
        match self {
            Acc::Count(c) => out.push(Column::from_i64(c[r].to_vec())),
            Acc::SumInt { sum, seen } => {
                out.push(opt(&sum[r.clone()], &seen[r], ColumnData::Int64))
            }
            // TOTAL's final value over no values is 0.0, the sum's starting value.
            Acc::SumFloat {
                sum, total: true, ..
            } if !partial => out.push(Column::from_f64(sum[r].to_vec())),
            Acc::SumFloat { sum, seen, .. } => {
                out.push(opt(&sum[r.clone()], &seen[r], ColumnData::Float64))
            }
            Acc::Avg { sum, count } => {
                if partial {
                    out.push(Column::from_f64(sum[r.clone()].to_vec()));
                    out.push(Column::from_i64(count[r].to_vec()));
                } else {
                    let seen: Vec<bool> = count[r.clone()].iter().map(|&c| c > 0).collect();
                    let avg: Vec<f64> = sum[r.clone()]
                        .iter()
                        .zip(&count[r])
                        .map(|(&s, &c)| if c > 0 { s / c as f64 } else { 0.0 })
                        .collect();
                    out.push(opt(&avg, &seen, ColumnData::Float64));
                }
            }
            Acc::MinMaxInt { v, seen, .. } => {
                out.push(opt(&v[r.clone()], &seen[r], ColumnData::Int64))
            }
            Acc::MinMaxFloat { v, seen, .. } => {
                out.push(opt(&v[r.clone()], &seen[r], ColumnData::Float64))
            }
            Acc::MinMaxBool { v, seen, .. } => {
                out.push(opt(&v[r.clone()], &seen[r], ColumnData::Boolean))
            }
            Acc::MinMaxStr { v, seen, .. } | Acc::Join { v, seen, .. } => {
                let mut b = ColumnBuilder::new(DataType::Utf8, end - start);
                for (s, &ok) in v[r.clone()].iter().zip(&seen[r]) {
                    if ok {
                        b.push_str(s);
                    } else {
                        b.push_null();
                    }
                }
                out.push(b.finish());
            }
            Acc::SumDecimal {
                sum,
                seen,
                precision,
                scale,
            } => {
                let dt = DataType::Decimal {
                    precision: *precision,
                    scale: *scale,
                };
                out.push(wide_column(dt, &sum[r.clone()], &seen[r]));
            }
            Acc::MinMaxWide { v, seen, dt, .. } => {
                out.push(wide_column(*dt, &v[r.clone()], &seen[r]))
            }
            Acc::Percentile { values, fraction } => {
                let mut b = ColumnBuilder::new(DataType::Float64, end - start);
                for group in &values[r] {
                    match percentile(group, *fraction) {
                        Some(v) => b.push_f64(v),
                        None => b.push_null(),
                    }
                }
                out.push(b.finish());
            }
            Acc::Moments { m, func } => m.output(*func, start, end, partial, out),
            Acc::AvgDecimal { sum, count, scale } => {
                if partial {
                    let dt = DataType::decimal(crate::types::MAX_DECIMAL_PRECISION, *scale);
                    out.push(wide_column(dt, &sum[r.clone()], &vec![true; end - start]));
                    out.push(Column::from_i64(count[r].to_vec()));
                } else {
                    let seen: Vec<bool> = count[r.clone()].iter().map(|&c| c > 0).collect();
                    let avg: Vec<f64> = sum[r.clone()]
                        .iter()
                        .zip(&count[r])
                        .map(|(&s, &c)| avg_decimal(s, *scale, c))
                        .collect();
                    out.push(opt(&avg, &seen, ColumnData::Float64));
                }
            }
        }
    }
}

/// The value at `fraction` of `values` once sorted, interpolated between the two nearest
/// (PostgreSQL's `percentile_cont`); `None` when there are none.
fn percentile(values: &[f64], fraction: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    let at = fraction * (sorted.len() - 1) as f64;
    let (below, above) = (at.floor() as usize, at.ceil() as usize);
    let (low, high) = (sorted[below], sorted[above]);
    Some(low + (at - below as f64) * (high - low))
}

/// A column of type `dt` from wide values, NULL where not `seen`.
fn wide_column(dt: DataType, v: &[i128], seen: &[bool]) -> Column {
    let bitmap = (!seen.iter().all(|&s| s)).then(|| Bitmap::from_bools(seen));
    Column::with_validity(from_wide(dt, v), bitmap)
}

/// The mean of `count` decimals summing to unscaled `sum` at `scale`, as the nearest DOUBLE
/// (the division is done on the exact sum, rounded once per digit of the quotient).
pub(crate) fn avg_decimal(sum: i128, scale: u8, count: i64) -> f64 {
    if count <= 0 {
        return 0.0;
    }
    let c = i128::from(count);
    // 17 significant fraction digits of the exact quotient, then one conversion.
    let extra = 17u8.saturating_sub(scale).min(38 - scale.min(38));
    match crate::decimal::rescale(sum, 0, extra) {
        Some(scaled) => crate::decimal::to_f64(scaled / c, scale + extra),
        None => crate::decimal::to_f64(sum, scale) / count as f64,
    }
}

/// Hash aggregation.
pub struct HashAggregateOp {
    group_by: Vec<Expr>,
    group_types: Vec<DataType>,
    aggs: Vec<AggregateExpr>,
    mode: AggMode,
    ctx: ExecContext,
    reservation: Reservation,
    groups: Groups,
    accs: Vec<Acc>,
    ids: Vec<u32>,
    finished: bool,
    /// After the input ended: the next group to emit.
    emit: usize,
    /// A partial aggregation refused memory: it is emitting its groups early, then starts
    /// again.
    flushing: bool,
    /// How deep a spill this aggregation merges (0: it reads the query's rows).
    level: u32,
    /// Refused memory, the partitions its groups are spilled to.
    spilling: Option<GroupSpill>,
    /// After the input ended, spilled partitions still to merge.
    spilled: VecDeque<SpillFile>,
    /// The final-mode aggregation of the spilled partition being emitted.
    merging: Option<Box<HashAggregateOp>>,
    /// In partial mode: whether it groups enough to go on grouping.
    probe: PartialProbe,
    /// The aggregates' arguments, with the subexpressions they share computed once.
    args: SharedArgs,
}

impl HashAggregateOp {
    /// An aggregation grouping by `group_by` (of types `group_types`) and computing `aggs` in
    /// `mode`. In [`AggMode::Final`] the input's first `group_types.len()` columns are the keys
    /// and the following columns the partial states. Fails on aggregates that cannot apply to
    /// their input type (SUM/AVG of non-numbers).
    pub fn new(
        group_by: Vec<Expr>,
        group_types: Vec<DataType>,
        aggs: Vec<AggregateExpr>,
        mode: AggMode,
        ctx: ExecContext,
        reservation: Reservation,
    ) -> Result<Self> {
        if mode != AggMode::Final && group_by.len() != group_types.len() {
            return Err(Error::Internal(format!(
                "{} group expressions but {} group types",
                group_by.len(),
                group_types.len()
            )));
        }
        let accs = aggs.iter().map(Acc::new).collect::<Result<Vec<_>>>()?;
        let args = aggs.iter().map(|a| a.arg.clone()).collect();
        let mut op = HashAggregateOp {
            groups: Groups::new(&group_types),
            group_by,
            group_types,
            aggs,
            mode,
            ctx,
            reservation,
            accs,
            ids: Vec::new(),
            finished: false,
            emit: 0,
            flushing: false,
            level: 0,
            spilling: None,
            spilled: VecDeque::new(),
            merging: None,
            probe: PartialProbe::default(),
            args: SharedArgs::new(args),
        };
        if op.group_types.is_empty() {
            // One global group, present even without input.
            op.groups.len = 1;
            op.accs.iter_mut().for_each(|a| a.resize(1));
        }
        Ok(op)
    }

    /// Drops the state once every group has been emitted (memory is released at the end, not
    /// as output leaves: the key stores and accumulators cannot shrink piecewise).
    fn release(&mut self) {
        if self.probe.skipping() && !self.finished {
            // Rows let through: the next batch's rows go in the same room, without an index.
            self.groups.clear();
        } else {
            self.groups = Groups::new(&self.groups.types.clone());
        }
        self.accs.iter_mut().for_each(|a| {
            a.resize(0);
        });
        self.emit = 0;
        self.reservation.free();
    }

    /// The memory for the state was refused (`refused`): a grouped aggregation with a spill
    /// space spills it or, in partial mode, emits it early; otherwise the refusal stands.
    fn relieve(&mut self, refused: Error) -> Result<()> {
        let Some(space) = self.ctx.spill.clone() else {
            return Err(refused);
        };
        // A group's values all at once (PERCENTILE_CONT) cannot be written as partial states.
        if self.group_types.is_empty() || self.holistic() {
            return Err(refused);
        }
        if self.mode == AggMode::Partial {
            self.flushing = true;
            self.emit = 0;
            return Ok(());
        }
        // So deep, the memory is held elsewhere on the node (its groups split 16^6 ways would
        // fit otherwise): the refusal stands, and the query is killed and run again.
        if self.level >= MAX_LEVEL {
            return Err(Error::Memory(format!(
                "{refused}: the groups of an aggregation do not fit in memory even split \
                 {} ways on disk",
                crate::spill::SpillPartitions::FANOUT.pow(MAX_LEVEL)
            )));
        }
        if self.spilling.is_none() {
            space.record_spill();
            self.spilling = Some(GroupSpill::new(
                &space,
                self.level,
                self.group_types.len(),
                &self.reservation,
            ));
        }
        self.spill_groups()
    }

    /// Whether an aggregate needs a group's values all at once ([`AggFunc::is_holistic`]).
    fn holistic(&self) -> bool {
        self.aggs.iter().any(AggregateExpr::is_holistic)
    }

    /// Writes every group held as partial states to the spill partitions and frees the table.
    fn spill_groups(&mut self) -> Result<()> {
        let groups = self.groups.len;
        let size = self.ctx.batch_size.max(1);
        for start in (0..groups).step_by(size) {
            let batch = self.groups_batch(start, (start + size).min(groups), true)?;
            self.spilling.as_mut().expect("spilling").write(&batch)?;
        }
        self.release();
        Ok(())
    }

    /// Groups `start..end` as a batch: keys, then final values or (`partial`) states.
    fn groups_batch(&self, start: usize, end: usize, partial: bool) -> Result<Batch> {
        let mut cols = Vec::new();
        for (store, valid) in self.groups.stores.iter().zip(&self.groups.valid) {
            cols.push(store.to_column(valid, start, end));
        }
        for a in &self.accs {
            a.output(start, end, partial, &mut cols);
        }
        Batch::with_row_count(cols, end - start)
    }

    /// The next batch of the spilled partitions' merged groups: each partition merged in a
    /// final-mode aggregation of its own, one level deeper.
    fn next_merged(&mut self) -> Result<Option<Batch>> {
        loop {
            if let Some(merge) = &mut self.merging {
                if let Some(batch) = merge.next_output()? {
                    return Ok(Some(batch));
                }
                self.merging = None;
            }
            let Some(file) = self.spilled.pop_front() else {
                return Ok(None);
            };
            let mut merge = HashAggregateOp::new(
                Vec::new(),
                self.group_types.clone(),
                self.aggs.clone(),
                AggMode::Final,
                self.ctx.clone(),
                self.reservation.new_empty(),
            )?;
            merge.level = self.level + 1;
            for batch in file.reader(&self.reservation)? {
                merge.push(0, batch?)?;
            }
            merge.finish(0)?;
            self.merging = Some(Box::new(merge));
        }
    }

    fn account(&mut self) -> Result<()> {
        let size = self.groups.memory_size()
            + self.accs.iter().map(Acc::memory_size).sum::<usize>()
            + self.ids.capacity() * 4;
        self.reservation.resize(size)
    }

    /// The group key columns of `batch`, borrowed where they are columns of the batch already
    /// of the key's type.
    fn key_columns<'b>(&self, batch: &'b Batch) -> Result<Vec<Cow<'b, Column>>> {
        let n = self.group_types.len();
        let mut keys = Vec::with_capacity(n);
        for (k, &dt) in self.group_types.iter().enumerate() {
            let col = if self.mode == AggMode::Final {
                if k >= batch.num_columns() {
                    return Err(Error::Internal(
                        "final aggregate input lacks key columns".into(),
                    ));
                }
                Cow::Borrowed(batch.column(k))
            } else {
                evaluate_borrowed(&self.group_by[k], batch, &self.ctx.params)?
            };
            keys.push(if col.data_type() == dt {
                col
            } else {
                Cow::Owned(cast_column(&col, dt)?)
            });
        }
        Ok(keys)
    }

    /// The argument column of `agg` over `batch`, borrowed where it is a column of the batch
    /// already of the argument's type.
    fn arg_column<'b>(
        agg: &AggregateExpr,
        arg: Option<&Expr>,
        batch: &'b Batch,
        params: &[Value],
    ) -> Result<Cow<'b, Column>> {
        let Some(arg) = arg else {
            return Err(Error::Internal(format!(
                "{} without an argument",
                agg.func.name()
            )));
        };
        let col = evaluate_borrowed(arg, batch, params)?;
        if col.data_type() == agg.input_type {
            Ok(col)
        } else {
            cast_column(&col, agg.input_type).map(Cow::Owned)
        }
    }
}

impl Operator for HashAggregateOp {
    fn name(&self) -> &'static str {
        "HashAggregate"
    }

    fn push(&mut self, _port: usize, batch: Batch) -> Result<()> {
        if self.finished {
            return Err(Error::Internal("aggregate input after its end".into()));
        }
        let n = batch.num_rows();
        if n == 0 {
            return Ok(());
        }
        let mut ids = std::mem::take(&mut self.ids);
        if self.group_types.is_empty() {
            ids.clear();
            ids.resize(n, 0);
        } else {
            let keys = self.key_columns(&batch)?;
            if self.mode == AggMode::Partial && self.probe.skipping() {
                // Rows let through: each is a group of its own (see `adaptive`).
                self.groups.append_rows(&keys, n, &mut ids);
            } else {
                self.groups.assign(&keys, n, &mut ids)?;
            }
        }
        let groups = self.groups.len;
        // Without GROUP BY every row is group 0.
        let single = self.group_types.is_empty();
        let (batch, args) = if self.mode == AggMode::Final {
            (batch, None)
        } else {
            let (batch, args) = self.args.extend(batch, &self.ctx.params)?;
            (batch, Some(args))
        };
        let result = (|| -> Result<()> {
            let mut col = self.group_types.len();
            for a in 0..self.aggs.len() {
                self.accs[a].resize(groups);
                let agg = &self.aggs[a];
                match self.mode {
                    AggMode::Single | AggMode::Partial => {
                        if agg.func == AggFunc::CountStar {
                            self.accs[a].count_rows(&ids);
                        } else {
                            let arg = args.as_ref().and_then(|list| list[a].as_ref());
                            let c = Self::arg_column(agg, arg, &batch, &self.ctx.params)?;
                            if !(single && self.accs[a].update_single(&c, false)?) {
                                self.accs[a].update(&ids, &c, false)?;
                            }
                        }
                    }
                    AggMode::Final => {
                        let width = agg.state_types().len();
                        if col + width > batch.num_columns() {
                            return Err(Error::Internal(
                                "final aggregate input lacks state columns".into(),
                            ));
                        }
                        if agg.func == AggFunc::Avg {
                            self.accs[a].merge_avg(
                                &ids,
                                batch.column(col),
                                batch.column(col + 1),
                            )?;
                        } else if let Acc::Moments { m, .. } = &mut self.accs[a] {
                            m.merge(
                                &ids,
                                batch.column(col),
                                batch.column(col + 1),
                                batch.column(col + 2),
                            )?;
                        } else {
                            let c = batch.column(col);
                            let want = agg.state_types()[0];
                            let c = if c.data_type() == want {
                                std::borrow::Cow::Borrowed(c)
                            } else {
                                std::borrow::Cow::Owned(cast_column(c, want)?)
                            };
                            if !(single && self.accs[a].update_single(&c, true)?) {
                                self.accs[a].update(&ids, &c, true)?;
                            }
                        }
                        col += width;
                    }
                }
            }
            Ok(())
        })();
        self.ids = ids;
        result?;
        let grouped = !self.group_types.is_empty();
        if self.mode == AggMode::Partial && grouped && self.probe.observe(n, self.groups.len) {
            // Rows let through: what is held goes now (see `adaptive`).
            self.flushing = true;
            self.emit = 0;
        }
        match self.account() {
            Err(refused) => self.relieve(refused),
            ok => ok,
        }
    }

    fn finish(&mut self, _port: usize) -> Result<()> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        if self.spilling.is_some() {
            self.spill_groups()?;
            self.spilled = self.spilling.take().expect("spilling").finish()?;
            return Ok(());
        }
        let groups = self.groups.len;
        for a in &mut self.accs {
            a.resize(groups);
        }
        self.emit = 0;
        if groups == 0 {
            self.release();
        }
        Ok(())
    }

    fn next_output(&mut self) -> Result<Option<Batch>> {
        if !self.has_output() {
            return Ok(None);
        }
        if self.merging.is_some() || !self.spilled.is_empty() {
            return self.next_merged();
        }
        let groups = self.groups.len;
        let start = self.emit;
        let end = (start + self.ctx.batch_size.max(1)).min(groups);
        let out = self.groups_batch(start, end, self.mode == AggMode::Partial)?;
        self.emit = end;
        if end == groups {
            self.release();
            self.flushing = false;
        }
        Ok(Some(out))
    }

    fn has_output(&self) -> bool {
        ((self.finished || self.flushing) && self.emit < self.groups.len)
            || self.merging.is_some()
            || !self.spilled.is_empty()
    }

    fn memory_size(&self) -> usize {
        self.reservation.size()
    }

    fn revocable(&self) -> usize {
        let spills = self.ctx.spill.is_some()
            && !self.group_types.is_empty()
            && !self.holistic()
            && self.mode != AggMode::Partial
            && self.level < MAX_LEVEL
            && !self.finished;
        if spills {
            self.reservation.size()
        } else {
            0
        }
    }

    fn revoke(&mut self) -> Result<()> {
        if self.revocable() == 0 {
            return Ok(());
        }
        self.relieve(revoked())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::drain;
    use crate::Value;

    fn agg(func: AggFunc, arg: Option<usize>, t: DataType) -> AggregateExpr {
        AggregateExpr {
            func,
            arg: arg.map(Expr::col),
            input_type: t,
            param: None,
            order_by: Vec::new(),
        }
    }

    fn run(op: &mut HashAggregateOp, input: &[Batch]) -> Vec<Vec<Value>> {
        let mut out = Vec::new();
        for b in input {
            op.push(0, b.clone()).unwrap();
            assert!(!op.has_output());
        }
        op.finish(0).unwrap();
        drain(op, &mut out).unwrap();
        let mut rows: Vec<Vec<Value>> = out.iter().flat_map(Batch::rows).collect();
        rows.sort_by(|a, b| {
            a.iter()
                .zip(b)
                .map(|(x, y)| x.sort_cmp(y))
                .find(|o| o.is_ne())
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        rows
    }

    fn input() -> Batch {
        Batch::from_rows(
            &[DataType::Utf8, DataType::Int64, DataType::Float64],
            &[
                vec!["a".into(), 1.into(), 1.0.into()],
                vec!["b".into(), 2.into(), Value::Null],
                vec![Value::Null, 3.into(), 3.0.into()],
                vec!["a".into(), Value::Null, 5.0.into()],
                vec!["a".into(), 10.into(), 0.5.into()],
            ],
        )
        .unwrap()
    }

    fn aggs() -> Vec<AggregateExpr> {
        vec![
            agg(AggFunc::CountStar, None, DataType::Int64),
            agg(AggFunc::Count, Some(1), DataType::Int64),
            agg(AggFunc::Sum, Some(1), DataType::Int64),
            agg(AggFunc::Avg, Some(2), DataType::Float64),
            agg(AggFunc::Min, Some(2), DataType::Float64),
            agg(AggFunc::Max, Some(0), DataType::Utf8),
        ]
    }

    #[test]
    fn grouped_single() {
        let mut op = HashAggregateOp::new(
            vec![Expr::col(0)],
            vec![DataType::Utf8],
            aggs(),
            AggMode::Single,
            ExecContext::new(vec![]),
            Reservation::unbounded(),
        )
        .unwrap();
        let rows = run(&mut op, &[input(), input().slice(0, 2)]);
        assert_eq!(
            rows,
            vec![
                vec![
                    Value::Null,
                    1.into(),
                    1.into(),
                    3.into(),
                    3.0.into(),
                    3.0.into(),
                    Value::Null
                ],
                vec![
                    "a".into(),
                    4.into(),
                    3.into(),
                    12.into(),
                    (7.5 / 4.0).into(),
                    0.5.into(),
                    "a".into()
                ],
                vec![
                    "b".into(),
                    2.into(),
                    2.into(),
                    4.into(),
                    Value::Null,
                    Value::Null,
                    "b".into()
                ],
            ]
        );
    }

    /// One BIGINT key (looked up by value): many groups over several batches, NULL keys in
    /// one group of their own, counts and sums as a plain map computes them.
    #[test]
    fn grouped_by_one_bigint_key() {
        let mut op = HashAggregateOp::new(
            vec![Expr::col(0)],
            vec![DataType::Int64],
            vec![
                agg(AggFunc::CountStar, None, DataType::Int64),
                agg(AggFunc::Sum, Some(1), DataType::Int64),
            ],
            AggMode::Single,
            ExecContext::new(vec![]),
            Reservation::unbounded(),
        )
        .unwrap();
        let mut want: std::collections::BTreeMap<Option<i64>, (i64, i64)> = Default::default();
        let mut batches = Vec::new();
        for b in 0..4i64 {
            let rows: Vec<Vec<Value>> = (0..5000i64)
                .map(|i| {
                    let r = b * 5000 + i;
                    // Keys far apart and negative, every 97th row NULL.
                    let key = (r % 97 != 0).then(|| (r * 7919 % 3001 - 1500) << 33);
                    let e = want.entry(key).or_default();
                    e.0 += 1;
                    e.1 += r;
                    vec![key.map_or(Value::Null, Value::Int), Value::Int(r)]
                })
                .collect();
            batches.push(Batch::from_rows(&[DataType::Int64, DataType::Int64], &rows).unwrap());
        }
        let got = run(&mut op, &batches);
        let want: Vec<Vec<Value>> = want
            .into_iter()
            .map(|(k, (c, s))| vec![k.map_or(Value::Null, Value::Int), c.into(), s.into()])
            .collect();
        assert_eq!(got.len(), 3002);
        assert_eq!(got, want);
    }

    #[test]
    fn empty_global() {
        for mode in [AggMode::Single, AggMode::Final] {
            let mut op = HashAggregateOp::new(
                vec![],
                vec![],
                aggs(),
                mode,
                ExecContext::new(vec![]),
                Reservation::unbounded(),
            )
            .unwrap();
            let rows = run(&mut op, &[]);
            assert_eq!(
                rows,
                vec![vec![
                    0.into(),
                    0.into(),
                    Value::Null,
                    Value::Null,
                    Value::Null,
                    Value::Null
                ]]
            );
        }
    }

    /// `aggs` grouped by column 0 of [`input`], in two partial aggregations (of its first two
    /// rows and of the other three) merged by a final one: the final rows, sorted.
    fn partial_then_final_rows(aggs: &[AggregateExpr]) -> Vec<Vec<Value>> {
        let ctx = ExecContext::new(vec![]);
        let mut partial_out = Vec::new();
        for part in [input().slice(0, 2), input().slice(2, 3)] {
            let mut p = HashAggregateOp::new(
                vec![Expr::col(0)],
                vec![DataType::Utf8],
                aggs.to_vec(),
                AggMode::Partial,
                ctx.clone(),
                Reservation::unbounded(),
            )
            .unwrap();
            p.push(0, part).unwrap();
            p.finish(0).unwrap();
            drain(&mut p, &mut partial_out).unwrap();
        }
        let mut f = HashAggregateOp::new(
            vec![],
            vec![DataType::Utf8],
            aggs.to_vec(),
            AggMode::Final,
            ctx,
            Reservation::unbounded(),
        )
        .unwrap();
        run(&mut f, &partial_out)
    }

    #[test]
    fn a_partial_aggregation_that_barely_groups_lets_its_rows_through_and_the_final_agrees() {
        // Keys 0..150,000 each twice, far apart: past the probe rows nearly every row is a
        // group of its own.
        let rows = |range: std::ops::Range<i64>| -> Batch {
            let keys: Vec<i64> = range.clone().map(|r| r % 150_000).collect();
            Batch::try_new(vec![
                Column::from_i64(keys),
                Column::from_i64(range.collect()),
            ])
            .unwrap()
        };
        let batches: Vec<Batch> = (0..30)
            .map(|b| rows(b * 10_000..(b + 1) * 10_000))
            .collect();
        let aggs = vec![
            agg(AggFunc::CountStar, None, DataType::Int64),
            agg(AggFunc::Sum, Some(1), DataType::Int64),
        ];
        let ctx = ExecContext::new(vec![]);
        let mut partial = HashAggregateOp::new(
            vec![Expr::col(0)],
            vec![DataType::Int64],
            aggs.clone(),
            AggMode::Partial,
            ctx.clone(),
            Reservation::unbounded(),
        )
        .unwrap();
        let mut states = Vec::new();
        let mut early = 0;
        for b in &batches {
            partial.push(0, b.clone()).unwrap();
            if partial.has_output() {
                early += 1;
                drain(&mut partial, &mut states).unwrap();
            }
        }
        partial.finish(0).unwrap();
        drain(&mut partial, &mut states).unwrap();
        // Grouping until the probe's 100,000 rows, then every batch let through at once.
        assert_eq!(early, 21);
        let mut fin = HashAggregateOp::new(
            vec![],
            vec![DataType::Int64],
            aggs.clone(),
            AggMode::Final,
            ctx.clone(),
            Reservation::unbounded(),
        )
        .unwrap();
        let merged = run(&mut fin, &states);
        let mut single = HashAggregateOp::new(
            vec![Expr::col(0)],
            vec![DataType::Int64],
            aggs,
            AggMode::Single,
            ctx,
            Reservation::unbounded(),
        )
        .unwrap();
        assert_eq!(merged.len(), 150_000);
        assert_eq!(merged, run(&mut single, &batches));
        assert_eq!(merged[7], vec![7.into(), 2.into(), (7 + 150_007).into()]);
    }

    #[test]
    fn partial_then_final() {
        let mut s = HashAggregateOp::new(
            vec![Expr::col(0)],
            vec![DataType::Utf8],
            aggs(),
            AggMode::Single,
            ExecContext::new(vec![]),
            Reservation::unbounded(),
        )
        .unwrap();
        assert_eq!(partial_then_final_rows(&aggs()), run(&mut s, &[input()]));
    }

    /// TOTAL is 0.0 for a group without values; STRING_AGG joins partial texts with the same
    /// separator as rows, and is NULL for a group without values.
    #[test]
    fn total_and_string_agg_partial_then_final() {
        let joined = AggregateExpr {
            param: Some(Value::Str("+".into())),
            ..agg(AggFunc::StringAgg, Some(0), DataType::Utf8)
        };
        let aggs = [agg(AggFunc::Total, Some(2), DataType::Float64), joined];
        assert_eq!(
            partial_then_final_rows(&aggs),
            vec![
                vec![Value::Null, 3.0.into(), Value::Null],
                vec!["a".into(), 6.5.into(), "a+a+a".into()],
                vec!["b".into(), 0.0.into(), "b".into()],
            ]
        );
    }

    /// PostgreSQL's `percentile_cont`: the value at the fraction of the sorted values,
    /// interpolated between the two nearest.
    #[test]
    fn percentiles_interpolate_between_the_nearest_values() {
        assert_eq!(percentile(&[], 0.5), None);
        assert_eq!(percentile(&[7.0], 0.3), Some(7.0));
        assert_eq!(percentile(&[10.0, 1.0, 4.0, 2.0], 0.5), Some(3.0));
        assert_eq!(percentile(&[10.0, 1.0, 4.0, 2.0], 0.25), Some(1.75));
        assert_eq!(percentile(&[10.0, 1.0, 4.0, 2.0], 0.0), Some(1.0));
        assert_eq!(percentile(&[10.0, 1.0, 4.0, 2.0], 1.0), Some(10.0));
    }

    #[test]
    fn sum_overflow() {
        let mut op = HashAggregateOp::new(
            vec![],
            vec![],
            vec![agg(AggFunc::Sum, Some(0), DataType::Int64)],
            AggMode::Single,
            ExecContext::new(vec![]),
            Reservation::unbounded(),
        )
        .unwrap();
        let b = Batch::try_new(vec![Column::from_i64(vec![i64::MAX, 1])]).unwrap();
        assert!(matches!(op.push(0, b), Err(Error::Overflow(_))));
        assert!(HashAggregateOp::new(
            vec![],
            vec![],
            vec![agg(AggFunc::Sum, Some(0), DataType::Utf8)],
            AggMode::Single,
            ExecContext::new(vec![]),
            Reservation::unbounded(),
        )
        .is_err());
    }

    #[test]
    fn emits_one_batch_per_call_and_frees_at_the_end() {
        let pool = crate::UnboundedPool::new();
        let mut ctx = ExecContext::new(vec![]);
        ctx.batch_size = 50;
        let mut op = HashAggregateOp::new(
            vec![Expr::col(0)],
            vec![DataType::Int64],
            vec![agg(AggFunc::CountStar, None, DataType::Int64)],
            AggMode::Single,
            ctx,
            Reservation::new(pool.clone() as std::sync::Arc<dyn crate::MemoryPool>),
        )
        .unwrap();
        // 1000 groups, each 3 times.
        for part in 0..3 {
            let keys: Vec<i64> = (0..1000).map(|i| (i * 7 + part) % 1000).collect();
            op.push(0, Batch::try_new(vec![Column::from_i64(keys)]).unwrap())
                .unwrap();
        }
        op.finish(0).unwrap();
        assert!(op.has_output());
        let held = pool.used();
        assert!(held > 0);
        let mut groups = 0;
        let mut calls = 0;
        while let Some(b) = op.next_output().unwrap() {
            calls += 1;
            assert!(!b.is_empty() && b.num_rows() <= 50);
            assert_eq!(pool.used(), if op.has_output() { held } else { 0 });
            assert!(b.column(1).as_i64().unwrap().iter().all(|&c| c == 3));
            groups += b.num_rows();
        }
        assert_eq!((groups, calls), (1000, 20));
        assert!(!op.has_output());
        assert!(op.next_output().unwrap().is_none());
        assert!(op
            .push(0, Batch::try_new(vec![Column::from_i64(vec![1])]).unwrap())
            .is_err());
    }
}
