//! The aggregates as window functions: COUNT(*), COUNT, SUM, AVG, MIN and MAX over each row's
//! frame, with the hash aggregate's result types (COUNT of no rows is 0, the others NULL).
//!
//! - COUNT and the exact SUM and AVG (BIGINT and DECIMAL) read running counts and sums that
//!   restart at each partition: a frame's value is the difference of two of them, O(1) per
//!   frame segment, so a running or sliding SUM over `n` rows is O(n) (what entered the frame
//!   added, what left it taken away), EXCLUDE holes included.
//! - A floating-point SUM or AVG adds its rows as they enter when every frame starts at its
//!   partition's first row; a frame whose start moves reads a segment tree of sums instead,
//!   since taking a float back out can lose the others (`1e20 + 1 - 1e20` is 0).
//! - MIN and MAX keep the best row so far for frames that only grow, and read a segment tree
//!   of each range's best row otherwise: O(n log n) at worst.
//! - The variances and standard deviations combine each frame's rows' counts, sums and
//!   squared deviations ([`Moment`]): running ones as rows enter, others from a segment tree of
//!   them, O(n log n) at worst.

use super::cells::{take_or_null, NONE};
use super::frame::Frames;
use super::layout::Layout;
use super::segment_tree::SegmentTree;
use crate::bitmap::Bitmap;
use crate::column::ColumnData;
use crate::kernels::aggregate::{avg_decimal, finish_column, Moment};
use crate::plan::AggFunc;
use crate::{Column, DataType, Error, Result};

/// Bytes `func` over `n` rows holds besides its frames and result, at most: COUNT its running
/// counts; SUM and AVG also running sums and each frame's sum and count (or a tree of sums);
/// MIN and MAX a tree of rows and the rows picked.
pub(crate) fn bytes_for(func: AggFunc, n: usize) -> usize {
    let per_row = match func {
        AggFunc::CountStar => 0,
        AggFunc::Count => 4,
        AggFunc::Sum | AggFunc::Avg | AggFunc::Total => 4 + 16 + 16 + 8,
        AggFunc::Min | AggFunc::Max => 4 + 8 + 4,
        // A tree of states (two per row) and each frame's state.
        AggFunc::VarSamp | AggFunc::VarPop | AggFunc::StddevSamp | AggFunc::StddevPop => 3 * 24,
        // STRING_AGG's texts are its result's; PERCENTILE_CONT is not a window function (the
        // planner refuses it), the error comes from `aggregate`.
        AggFunc::StringAgg | AggFunc::PercentileCont => 0,
    };
    n * per_row + 64
}

/// `func` of `arg` (`None` for `COUNT(*)`) over every row's frame, as a column of
/// `output_type`.
pub(crate) fn aggregate(
    func: AggFunc,
    arg: Option<&Column>,
    output_type: DataType,
    layout: &Layout,
    frames: &Frames,
) -> Result<Column> {
    let n = layout.rows();
    let arg = match (func, arg) {
        (AggFunc::CountStar, _) => {
            let counts = (0..n).map(|i| frames.segments(i, layout).rows() as i64);
            return Ok(Column::from_i64(counts.collect()));
        }
        (_, Some(arg)) => arg,
        (_, None) => {
            return Err(Error::Internal(format!(
                "window {} without an argument",
                func.name()
            )))
        }
    };
    let counts = prefix_counts(arg);
    match func {
        AggFunc::CountStar | AggFunc::Count => {
            let c = (0..n).map(|i| {
                let segs = frames.segments(i, layout);
                segs.ranges()
                    .map(|(s, e)| i64::from(counts[e] - counts[s]))
                    .sum::<i64>()
            });
            Ok(Column::from_i64(c.collect()))
        }
        AggFunc::Sum | AggFunc::Avg => sum_avg(func, arg, &counts, output_type, layout, frames),
        // TOTAL: the frame's float sum, 0.0 where the frame holds no value.
        AggFunc::Total => {
            let sums = sum_avg(AggFunc::Sum, arg, &counts, output_type, layout, frames)?;
            let values = sums.as_f64().ok_or_else(|| {
                Error::Type(format!(
                    "TOTAL needs a DOUBLE argument, got {}",
                    arg.data_type()
                ))
            })?;
            let total = (0..n).map(|i| if sums.is_valid(i) { values[i] } else { 0.0 });
            Ok(Column::from_f64(total.collect()))
        }
        AggFunc::Min | AggFunc::Max => Ok(min_max(arg, func == AggFunc::Min, layout, frames)),
        AggFunc::VarSamp | AggFunc::VarPop | AggFunc::StddevSamp | AggFunc::StddevPop => {
            moments(func, arg, layout, frames)
        }
        AggFunc::StringAgg | AggFunc::PercentileCont => Err(Error::Internal(format!(
            "{} is not a window function",
            func.name()
        ))),
    }
}

/// `STRING_AGG(value, separator)` over every row's frame: the frame's non-NULL values in
/// order, each after the first preceded by its own row's separator (as PostgreSQL joins them);
/// NULL where the frame holds no value. Each result is checked against the largest value a
/// function may make before it is built.
pub(crate) fn string_agg(
    values: &Column,
    separators: &Column,
    layout: &Layout,
    frames: &Frames,
) -> Result<Column> {
    if values.data_type() != DataType::Utf8 || separators.data_type() != DataType::Utf8 {
        return Err(Error::Type(format!(
            "STRING_AGG takes text, got {} and {}",
            values.data_type(),
            separators.data_type()
        )));
    }
    let n = layout.rows();
    let limit = crate::limits::max_value_bytes();
    let mut out = crate::column::ColumnBuilder::new(DataType::Utf8, n);
    let mut text = String::new();
    for i in 0..n {
        text.clear();
        let mut any = false;
        for (a, b) in frames.segments(i, layout).ranges() {
            for j in (a..b).filter(|&j| values.is_valid(j)) {
                if any && separators.is_valid(j) {
                    text.push_str(separators.str_at(j));
                }
                text.push_str(values.str_at(j));
                any = true;
                if text.len() > limit {
                    return Err(Error::ValueTooLarge(format!(
                        "STRING_AGG would make a value of more than {limit} bytes"
                    )));
                }
            }
        }
        if any {
            out.push_str(&text);
        } else {
            out.push_null();
        }
    }
    Ok(out.finish())
}

/// `counts[j]`: the non-NULL rows of `col` before row `j` (`n + 1` entries).
fn prefix_counts(col: &Column) -> Vec<u32> {
    let mut out = Vec::with_capacity(col.len() + 1);
    out.push(0u32);
    let mut c = 0u32;
    for i in 0..col.len() {
        c += u32::from(col.is_valid(i));
        out.push(c);
    }
    out
}

/// Per partition, each row's running total from the partition's first row up to it
/// (inclusive), NULLs adding nothing; `add` may fail (an overflow).
fn running<T: Copy + Default>(
    layout: &Layout,
    col: &Column,
    value: impl Fn(usize) -> T,
    add: impl Fn(T, T) -> Result<T>,
) -> Result<Vec<T>> {
    let mut out = vec![T::default(); layout.rows()];
    for (ps, pe) in layout.partitions() {
        let mut acc = T::default();
        for (i, o) in out.iter_mut().enumerate().take(pe).skip(ps) {
            if col.is_valid(i) {
                acc = add(acc, value(i))?;
            }
            *o = acc;
        }
    }
    Ok(out)
}

/// A frame's sums and non-NULL counts, per row.
struct Totals<T> {
    sums: Vec<T>,
    counts: Vec<i64>,
}

/// SUM or AVG of `arg` (BIGINT, DECIMAL or DOUBLE).
fn sum_avg(
    func: AggFunc,
    arg: &Column,
    counts: &[u32],
    output_type: DataType,
    layout: &Layout,
    frames: &Frames,
) -> Result<Column> {
    let sum = func == AggFunc::Sum;
    match &arg.data {
        ColumnData::Int64(v) => {
            let t = exact(layout, frames, arg, counts, |i| i128::from(v[i]), "BIGINT")?;
            if sum {
                let mut out = Vec::with_capacity(t.sums.len());
                for (&s, &c) in t.sums.iter().zip(&t.counts) {
                    out.push(match c {
                        0 => 0,
                        _ => i64::try_from(s)
                            .map_err(|_| Error::Overflow("BIGINT overflow in SUM".into()))?,
                    });
                }
                Ok(with_counts(ColumnData::Int64(out), &t.counts))
            } else {
                let avg = t.sums.iter().zip(&t.counts).map(|(&s, &c)| match c {
                    0 => 0.0,
                    _ => s as f64 / c as f64,
                });
                Ok(with_counts(ColumnData::Float64(avg.collect()), &t.counts))
            }
        }
        ColumnData::Decimal { values, scale, .. } => {
            let t = exact(layout, frames, arg, counts, |i| values[i], "DECIMAL")?;
            if sum {
                let DataType::Decimal { precision, scale } = output_type else {
                    return Err(Error::Internal(format!(
                        "window SUM of a DECIMAL typed {output_type}"
                    )));
                };
                let data = ColumnData::Decimal {
                    values: t.sums,
                    precision,
                    scale,
                };
                Ok(with_counts(data, &t.counts))
            } else {
                let avg = t
                    .sums
                    .iter()
                    .zip(&t.counts)
                    .map(|(&s, &c)| avg_decimal(s, *scale, c));
                Ok(with_counts(ColumnData::Float64(avg.collect()), &t.counts))
            }
        }
        ColumnData::Float64(v) => {
            let t = floats(layout, frames, arg, v, counts)?;
            let out: Vec<f64> = if sum {
                t.sums
            } else {
                t.sums
                    .iter()
                    .zip(&t.counts)
                    .map(|(&s, &c)| if c > 0 { s / c as f64 } else { 0.0 })
                    .collect()
            };
            Ok(with_counts(ColumnData::Float64(out), &t.counts))
        }
        _ => Err(Error::Type(format!(
            "{} needs a numeric argument, got {}",
            func.name(),
            arg.data_type()
        ))),
    }
}

/// `data` with NULL where the frame held no value.
fn with_counts(data: ColumnData, counts: &[i64]) -> Column {
    if counts.iter().all(|&c| c > 0) {
        return Column::new(data);
    }
    let mut valid = Bitmap::new(counts.len(), true);
    for (i, &c) in counts.iter().enumerate() {
        if c == 0 {
            valid.set(i, false);
        }
    }
    Column::with_validity(data, Some(valid))
}

/// Exact frame sums (in `i128`) of `value` and their counts: differences of running sums.
fn exact(
    layout: &Layout,
    frames: &Frames,
    col: &Column,
    counts: &[u32],
    value: impl Fn(usize) -> i128,
    type_name: &str,
) -> Result<Totals<i128>> {
    let overflow = || Error::Overflow(format!("{type_name} overflow in SUM"));
    let run = running(layout, col, value, |a: i128, b| {
        a.checked_add(b).ok_or_else(overflow)
    })?;
    let n = layout.rows();
    let mut sums = Vec::with_capacity(n);
    let mut cs = Vec::with_capacity(n);
    for (ps, pe) in layout.partitions() {
        // The running total before row `j` of this partition.
        let before = |j: usize| if j == ps { 0 } else { run[j - 1] };
        for i in ps..pe {
            let (mut s, mut c) = (0i128, 0i64);
            for (a, b) in frames.segments(i, layout).ranges() {
                let part = before(b).checked_sub(before(a)).ok_or_else(overflow)?;
                s = s.checked_add(part).ok_or_else(overflow)?;
                c += i64::from(counts[b] - counts[a]);
            }
            sums.push(s);
            cs.push(c);
        }
    }
    Ok(Totals { sums, counts: cs })
}

/// Floating-point frame sums and counts: running sums when every frame starts at its
/// partition's first row, else a segment tree of sums.
fn floats(
    layout: &Layout,
    frames: &Frames,
    col: &Column,
    v: &[f64],
    counts: &[u32],
) -> Result<Totals<f64>> {
    let n = layout.rows();
    let mut sums = Vec::with_capacity(n);
    let mut cs = Vec::with_capacity(n);
    if frames.is_running() {
        let run = running(layout, col, |i| v[i], |a, b| Ok(a + b))?;
        for (ps, pe) in layout.partitions() {
            for i in ps..pe {
                let (_, e) = frames.bounds(i);
                sums.push(if e > ps { run[e - 1] } else { 0.0 });
                cs.push(i64::from(counts[e] - counts[ps]));
            }
        }
        return Ok(Totals { sums, counts: cs });
    }
    let leaves: Vec<f64> = (0..n)
        .map(|i| if col.is_valid(i) { v[i] } else { 0.0 })
        .collect();
    let add = |a: f64, b: f64| a + b;
    let tree = SegmentTree::build(&leaves, 0.0, add);
    for i in 0..n {
        let (mut s, mut c) = (0.0, 0i64);
        for (a, b) in frames.segments(i, layout).ranges() {
            s += tree.query(a, b, add);
            c += i64::from(counts[b] - counts[a]);
        }
        sums.push(s);
        cs.push(c);
    }
    Ok(Totals { sums, counts: cs })
}

/// A variance or standard deviation (`func`) of `col` (DOUBLE) over every row's frame: each
/// frame's state gathered as its rows enter when every frame starts at its partition's first
/// row, else combined from a segment tree of states.
fn moments(func: AggFunc, col: &Column, layout: &Layout, frames: &Frames) -> Result<Column> {
    let ColumnData::Float64(v) = &col.data else {
        return Err(Error::Type(format!(
            "{} takes DOUBLE values, got {}",
            func.name(),
            col.data_type()
        )));
    };
    let leaf = |i: usize| {
        if col.is_valid(i) {
            Moment::of(v[i])
        } else {
            Moment::default()
        }
    };
    let n = layout.rows();
    let mut states = Vec::with_capacity(n);
    if frames.is_running() {
        for (ps, pe) in layout.partitions() {
            // `run[j - ps]`: the state of rows `ps..=j`.
            let mut run = Vec::with_capacity(pe - ps);
            let mut acc = Moment::default();
            for j in ps..pe {
                acc = acc.combine(leaf(j));
                run.push(acc);
            }
            for i in ps..pe {
                let (_, e) = frames.bounds(i);
                states.push(if e > ps {
                    run[e - 1 - ps]
                } else {
                    Moment::default()
                });
            }
        }
    } else {
        let leaves: Vec<Moment> = (0..n).map(leaf).collect();
        let tree = SegmentTree::build(&leaves, Moment::default(), Moment::combine);
        for i in 0..n {
            let mut acc = Moment::default();
            for (a, b) in frames.segments(i, layout).ranges() {
                acc = acc.combine(tree.query(a, b, Moment::combine));
            }
            states.push(acc);
        }
    }
    Ok(finish_column(func, states.into_iter()))
}

/// MIN (`min`) or MAX of `col` over every row's frame.
fn min_max(col: &Column, min: bool, layout: &Layout, frames: &Frames) -> Column {
    let rows = match &col.data {
        ColumnData::Int64(v) | ColumnData::Timestamp(v) => {
            best_rows(col, min, layout, frames, |a, b| v[a] < v[b])
        }
        ColumnData::Float64(v) => best_rows(col, min, layout, frames, |a, b| {
            v[a].total_cmp(&v[b]).is_lt()
        }),
        ColumnData::Boolean(v) => best_rows(col, min, layout, frames, |a, b| !v[a] & v[b]),
        ColumnData::Decimal { values, .. } => {
            best_rows(col, min, layout, frames, |a, b| values[a] < values[b])
        }
        ColumnData::Date(v) => best_rows(col, min, layout, frames, |a, b| v[a] < v[b]),
        ColumnData::Utf8 { .. } => best_rows(col, min, layout, frames, |a, b| {
            col.str_at(a) < col.str_at(b)
        }),
    };
    take_or_null(col, &rows)
}

/// Each row's frame's least (`min`) or greatest non-NULL row of `col` by `less`, or [`NONE`].
fn best_rows(
    col: &Column,
    min: bool,
    layout: &Layout,
    frames: &Frames,
    less: impl Fn(usize, usize) -> bool,
) -> Vec<u32> {
    let better = |a: u32, b: u32| -> u32 {
        if a == NONE {
            return b;
        }
        if b == NONE {
            return a;
        }
        let (x, y) = (a as usize, b as usize);
        let b_wins = if min { less(y, x) } else { less(x, y) };
        if b_wins {
            b
        } else {
            a
        }
    };
    let n = layout.rows();
    let mut out = Vec::with_capacity(n);
    if frames.is_running() {
        // Every frame starts at the partition's first row and its end never goes back.
        for (ps, pe) in layout.partitions() {
            let (mut next, mut best) = (ps, NONE);
            for i in ps..pe {
                let (_, e) = frames.bounds(i);
                while next < e {
                    if col.is_valid(next) {
                        best = better(best, next as u32);
                    }
                    next += 1;
                }
                out.push(best);
            }
        }
        return out;
    }
    let leaves: Vec<u32> = (0..n)
        .map(|i| if col.is_valid(i) { i as u32 } else { NONE })
        .collect();
    let tree = SegmentTree::build(&leaves, NONE, better);
    for i in 0..n {
        let best = frames
            .segments(i, layout)
            .ranges()
            .fold(NONE, |acc, (a, b)| better(acc, tree.query(a, b, better)));
        out.push(best);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{FrameBound, FrameExclude, FrameUnits, WindowFrame};
    use crate::{Expr, Value};

    fn values(c: &Column) -> Vec<Value> {
        (0..c.len()).map(|i| c.value(i)).collect()
    }

    fn sliding(exclude: FrameExclude) -> WindowFrame {
        WindowFrame {
            units: FrameUnits::Rows,
            start: FrameBound::Preceding(Expr::lit(1)),
            end: FrameBound::Following(Expr::lit(1)),
            exclude,
        }
    }

    #[test]
    fn sliding_sums_counts_and_extremes() {
        // Two partitions: [1, NULL, 3, 4] and [10].
        let p = Column::from_i64(vec![0, 0, 0, 0, 1]);
        let l = Layout::new(&[&p], &[], 5);
        let x = Column::from_values(
            DataType::Int64,
            &[1.into(), Value::Null, 3.into(), 4.into(), 10.into()],
        )
        .unwrap();
        let f = Frames::new(&sliding(FrameExclude::NoOthers), &[], &l, None).unwrap();
        let agg = |func, t| values(&aggregate(func, Some(&x), t, &l, &f).unwrap());
        let int = |v: &[Option<i64>]| v.iter().map(|&x| Value::from(x)).collect::<Vec<_>>();
        assert_eq!(
            agg(AggFunc::Sum, DataType::Int64),
            int(&[Some(1), Some(4), Some(7), Some(7), Some(10)])
        );
        assert_eq!(
            agg(AggFunc::Count, DataType::Int64),
            int(&[Some(1), Some(2), Some(2), Some(2), Some(1)])
        );
        assert_eq!(
            agg(AggFunc::Min, DataType::Int64),
            int(&[Some(1), Some(1), Some(3), Some(3), Some(10)])
        );
        assert_eq!(
            agg(AggFunc::Max, DataType::Int64),
            int(&[Some(1), Some(3), Some(4), Some(4), Some(10)])
        );
        let star = aggregate(AggFunc::CountStar, None, DataType::Int64, &l, &f).unwrap();
        assert_eq!(
            values(&star),
            int(&[Some(2), Some(3), Some(3), Some(2), Some(1)])
        );
        // Without the current row: the lone row's frame is empty.
        let g = Frames::new(&sliding(FrameExclude::CurrentRow), &[], &l, None).unwrap();
        let sum = aggregate(AggFunc::Sum, Some(&x), DataType::Int64, &l, &g).unwrap();
        assert_eq!(values(&sum), int(&[None, Some(4), Some(4), Some(3), None]));
        let avg = aggregate(AggFunc::Avg, Some(&x), DataType::Float64, &l, &g).unwrap();
        assert_eq!(
            values(&avg),
            [Value::Null, 2.0.into(), 4.0.into(), 3.0.into(), Value::Null]
        );
    }

    #[test]
    fn float_sums_do_not_lose_what_stays_in_the_frame() {
        let l = Layout::new(&[], &[], 3);
        let x = Column::from_f64(vec![1e20, 1.0, 1.0]);
        let f = Frames::new(&sliding(FrameExclude::NoOthers), &[], &l, None).unwrap();
        let sum = aggregate(AggFunc::Sum, Some(&x), DataType::Float64, &l, &f).unwrap();
        assert_eq!(values(&sum)[2], Value::Float(2.0));
    }

    #[test]
    fn big_bigint_sums_overflow_as_an_error() {
        let l = Layout::new(&[], &[], 2);
        let x = Column::from_i64(vec![i64::MAX, 1]);
        let f = Frames::new(&WindowFrame::default(), &[], &l, None).unwrap();
        let err = aggregate(AggFunc::Sum, Some(&x), DataType::Int64, &l, &f).unwrap_err();
        assert!(matches!(err, Error::Overflow(_)), "{err}");
    }
}
