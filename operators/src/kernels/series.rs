//! `generate_series(start, stop [, step])` as a source: the integers from `start` to `stop`
//! (inclusive) `step` apart, or the timestamps an interval apart, made a batch at a time as
//! they are asked for, so a series of millions of rows never sits in memory whole.

use crate::column::ColumnData;
use crate::eval::evaluate_scalar;
use crate::plan::SeriesStep;
use crate::temporal;
use crate::{Batch, Column, Error, Expr, Result, Value};

/// A series being produced: where it is and where it ends.
#[derive(Debug)]
pub struct SeriesSource {
    cursor: Cursor,
    batch_size: usize,
    /// The position of the next value, from 1, when the values are numbered (`WITH
    /// ORDINALITY`).
    ordinal: Option<i64>,
}

/// The step of one series, evaluated: an integer (NULL makes the series empty) or an
/// interval.
#[derive(Debug, Clone, Copy)]
pub(crate) enum StepValue {
    /// Integers this far apart; `None` for a NULL step.
    Integer(Option<i64>),
    /// Timestamps this interval apart.
    Interval {
        /// Whole months.
        months: i64,
        /// Days.
        days: i64,
        /// Microseconds.
        micros: i64,
    },
}

/// The values of one series still to come.
#[derive(Debug)]
pub(crate) enum Cursor {
    /// Nothing more (the series ended, or an argument was NULL).
    Done,
    /// Integers from `next` to `stop`, `step` apart.
    Integers { next: i64, stop: i64, step: i64 },
    /// Timestamps (microseconds) from `next` to `stop`, each the last plus the interval;
    /// `down` when the interval is negative.
    Timestamps {
        next: i64,
        stop: i64,
        months: i64,
        days: i64,
        micros: i64,
        down: bool,
    },
}

impl StepValue {
    /// The step `step` of a series, its integer evaluated by `int_step` (called only for an
    /// integer step).
    pub(crate) fn of(
        step: &SeriesStep,
        int_step: impl FnOnce(&Expr) -> Result<Value>,
    ) -> Result<StepValue> {
        Ok(match step {
            SeriesStep::Integer(e) => StepValue::Integer(integer(int_step(e)?, "step")?),
            &SeriesStep::Interval {
                months,
                days,
                micros,
            } => StepValue::Interval {
                months,
                days,
                micros,
            },
        })
    }
}

/// An integer argument of a series (`None` for NULL), or an error naming it.
fn integer(v: Value, what: &str) -> Result<Option<i64>> {
    match v {
        Value::Null => Ok(None),
        Value::Int(i) => Ok(Some(i)),
        v => Err(Error::Type(format!(
            "generate_series needs an integer {what}, got {v}"
        ))),
    }
}

/// A timestamp argument of a series (`None` for NULL), or an error naming it.
fn timestamp(v: Value, what: &str) -> Result<Option<i64>> {
    match v {
        Value::Null => Ok(None),
        Value::Timestamp(t) => Ok(Some(t)),
        v => Err(Error::Type(format!(
            "generate_series needs a TIMESTAMP {what}, got {v}"
        ))),
    }
}

impl Cursor {
    /// The series from `start` to `stop` by `step`. A NULL argument makes an empty series,
    /// as PostgreSQL's does; a step of zero is an error.
    pub(crate) fn new(start: Value, stop: Value, step: StepValue) -> Result<Cursor> {
        let zero = || Error::Arithmetic("generate_series: step size cannot equal zero".into());
        match step {
            StepValue::Integer(step) => {
                if step == Some(0) {
                    return Err(zero());
                }
                let (start, stop) = (integer(start, "start")?, integer(stop, "stop")?);
                let (Some(next), Some(stop), Some(step)) = (start, stop, step) else {
                    return Ok(Cursor::Done);
                };
                let empty = if step > 0 { next > stop } else { next < stop };
                Ok(if empty {
                    Cursor::Done
                } else {
                    Cursor::Integers { next, stop, step }
                })
            }
            StepValue::Interval {
                months,
                days,
                micros,
            } => {
                let (start, stop) = (timestamp(start, "start")?, timestamp(stop, "stop")?);
                let (Some(next), Some(stop)) = (start, stop) else {
                    return Ok(Cursor::Done);
                };
                // The interval's direction, as PostgreSQL finds it: what it does to the start.
                let moved = temporal::add_interval_ts(next, months, days, micros)
                    .ok_or_else(|| Error::Overflow("timestamp out of range".into()))?;
                if moved == next {
                    return Err(zero());
                }
                let down = moved < next;
                let empty = if down { next < stop } else { next > stop };
                Ok(if empty {
                    Cursor::Done
                } else {
                    Cursor::Timestamps {
                        next,
                        stop,
                        months,
                        days,
                        micros,
                        down,
                    }
                })
            }
        }
    }

    /// Whether every value was made.
    pub(crate) fn is_done(&self) -> bool {
        matches!(self, Cursor::Done)
    }

    /// Appends the next values, at most `max` of them, to `out` (integers, or timestamps as
    /// microseconds); returns how many it appended.
    pub(crate) fn fill(&mut self, out: &mut Vec<i64>, max: usize) -> usize {
        let before = out.len();
        match self {
            Cursor::Done => {}
            Cursor::Integers { next, stop, step } => {
                let (first, stop, step) = (*next, *stop, *step);
                // Values left, at least 1: `(stop - first) / step` steps fit past the first.
                let left = (i128::from(stop) - i128::from(first)) / i128::from(step) + 1;
                let n = usize::try_from(left).map_or(max, |l| l.min(max));
                out.reserve(n);
                let mut v = i128::from(first);
                for _ in 0..n {
                    // Every value is between `first` and `stop`, so within BIGINT.
                    out.push(v as i64);
                    v += i128::from(step);
                }
                let past = if step > 0 {
                    v > i128::from(stop)
                } else {
                    v < i128::from(stop)
                };
                if past {
                    *self = Cursor::Done;
                } else {
                    *next = v as i64;
                }
            }
            Cursor::Timestamps {
                next,
                stop,
                months,
                days,
                micros,
                down,
            } => {
                let mut at = Some(*next);
                while let Some(t) = at {
                    if out.len() - before == max {
                        break;
                    }
                    out.push(t);
                    // Past the end of the calendar, the series ends.
                    at = temporal::add_interval_ts(t, *months, *days, *micros).filter(|&u| {
                        if *down {
                            u >= *stop
                        } else {
                            u <= *stop
                        }
                    });
                }
                match at {
                    Some(t) => *next = t,
                    None => *self = Cursor::Done,
                }
            }
        }
        out.len() - before
    }
}

/// A column of series values: timestamps for a series stepped by an interval, else BIGINT.
pub(crate) fn series_column(values: Vec<i64>, timestamps: bool) -> Column {
    if timestamps {
        Column::new(ColumnData::Timestamp(values))
    } else {
        Column::from_i64(values)
    }
}

impl SeriesSource {
    /// The series of the constant expressions `start` and `stop` (read with `params`) by
    /// `step`, in batches of `batch_size` rows: integers for an integer step, timestamps for
    /// an interval. A NULL argument makes an empty series, as PostgreSQL's does; a step of
    /// zero is an error.
    ///
    /// ```
    /// use weir_operators::kernels::series::SeriesSource;
    /// use weir_operators::plan::SeriesStep;
    /// use weir_operators::Expr;
    /// let step = SeriesStep::Integer(Expr::lit(4));
    /// let mut s = SeriesSource::new(&Expr::lit(1), &Expr::lit(10), &step, &[], 1024).unwrap();
    /// let batch = s.next_batch().unwrap().unwrap();
    /// assert_eq!(batch.column(0).as_i64().unwrap(), &[1, 5, 9]);
    /// assert!(s.next_batch().unwrap().is_none());
    /// ```
    pub fn new(
        start: &Expr,
        stop: &Expr,
        step: &SeriesStep,
        params: &[Value],
        batch_size: usize,
    ) -> Result<SeriesSource> {
        let step = StepValue::of(step, |e| evaluate_scalar(e, params))?;
        let (start, stop) = (
            evaluate_scalar(start, params)?,
            evaluate_scalar(stop, params)?,
        );
        Ok(SeriesSource {
            cursor: Cursor::new(start, stop, step)?,
            batch_size: batch_size.max(1),
            ordinal: None,
        })
    }

    /// The same series with each value followed by its position, from 1 (a second, BIGINT
    /// column: `WITH ORDINALITY`).
    ///
    /// ```
    /// use weir_operators::kernels::series::SeriesSource;
    /// use weir_operators::plan::SeriesStep;
    /// use weir_operators::Expr;
    /// let step = SeriesStep::Integer(Expr::lit(-5));
    /// let s = SeriesSource::new(&Expr::lit(10), &Expr::lit(0), &step, &[], 2).unwrap();
    /// let mut s = s.numbered();
    /// let first = s.next_batch().unwrap().unwrap();
    /// assert_eq!(first.column(1).as_i64().unwrap(), &[1, 2]);
    /// let last = s.next_batch().unwrap().unwrap();
    /// assert_eq!(last.column(0).as_i64().unwrap(), &[0]);
    /// assert_eq!(last.column(1).as_i64().unwrap(), &[3]);
    /// ```
    pub fn numbered(mut self) -> SeriesSource {
        self.ordinal = Some(1);
        self
    }

    /// The next batch of values (one BIGINT or TIMESTAMP column), or `None` after the last.
    pub fn next_batch(&mut self) -> Result<Option<Batch>> {
        let timestamps = matches!(self.cursor, Cursor::Timestamps { .. });
        let mut values = Vec::new();
        let made = self.cursor.fill(&mut values, self.batch_size);
        if made == 0 {
            return Ok(None);
        }
        let mut columns = vec![series_column(values, timestamps)];
        if let Some(first) = self.ordinal.as_mut() {
            let next = *first + made as i64;
            columns.push(Column::from_i64((*first..next).collect()));
            *first = next;
        }
        Ok(Some(Batch::try_new(columns)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(start: i64, stop: i64, step: i64, batch: usize) -> Vec<i64> {
        let lit = Expr::lit;
        let step = SeriesStep::Integer(lit(step));
        let mut s = SeriesSource::new(&lit(start), &lit(stop), &step, &[], batch).unwrap();
        let mut out = Vec::new();
        while let Some(b) = s.next_batch().unwrap() {
            assert!(b.num_rows() <= batch && b.num_rows() > 0);
            out.extend_from_slice(b.column(0).as_i64().unwrap());
        }
        out
    }

    #[test]
    fn series_end_at_or_before_stop_in_batches() {
        assert_eq!(all(1, 5, 1, 2), vec![1, 2, 3, 4, 5]);
        assert_eq!(all(1, 10, 3, 100), vec![1, 4, 7, 10]);
        assert_eq!(all(10, 1, -4, 1), vec![10, 6, 2]);
        assert_eq!(all(5, 1, 1, 8), Vec::<i64>::new());
        assert_eq!(all(3, 3, -1, 8), vec![3]);
        assert_eq!(all(0, 2_500, 1, 1_000).len(), 2_501);
    }

    #[test]
    fn series_at_the_ends_of_bigint_do_not_overflow() {
        assert_eq!(
            all(i64::MAX - 2, i64::MAX, 1, 2),
            vec![i64::MAX - 2, i64::MAX - 1, i64::MAX]
        );
        assert_eq!(all(i64::MIN + 1, i64::MIN, -5, 2), vec![i64::MIN + 1]);
        assert_eq!(
            all(i64::MIN, i64::MAX, i64::MAX, 8),
            vec![i64::MIN, -1, i64::MAX - 1]
        );
    }

    #[test]
    fn a_null_argument_is_an_empty_series_and_a_zero_step_an_error() {
        let null = Expr::Literal(Value::Null);
        let one = SeriesStep::Integer(Expr::lit(1));
        let mut s = SeriesSource::new(&Expr::lit(1), &null, &one, &[], 8).unwrap();
        assert!(s.next_batch().unwrap().is_none());
        let zero = SeriesStep::Integer(Expr::lit(0));
        let e = SeriesSource::new(&Expr::lit(1), &Expr::lit(2), &zero, &[], 8).unwrap_err();
        assert!(e.to_string().contains("step size cannot equal zero"), "{e}");
        let no_time = SeriesStep::Interval {
            months: 0,
            days: 0,
            micros: 0,
        };
        let t = Expr::Literal(Value::Timestamp(0));
        let e = SeriesSource::new(&t, &t, &no_time, &[], 8).unwrap_err();
        assert!(e.to_string().contains("step size cannot equal zero"), "{e}");
    }

    fn times(start: &str, stop: &str, months: i64, days: i64, batch: usize) -> Vec<String> {
        let ts = |s: &str| Expr::Literal(Value::Timestamp(temporal::parse_timestamp(s).unwrap()));
        let step = SeriesStep::Interval {
            months,
            days,
            micros: 0,
        };
        let mut s = SeriesSource::new(&ts(start), &ts(stop), &step, &[], batch).unwrap();
        let mut out = Vec::new();
        while let Some(b) = s.next_batch().unwrap() {
            assert!(b.num_rows() <= batch && b.num_rows() > 0);
            for i in 0..b.num_rows() {
                out.push(b.column(0).value(i).to_string());
            }
        }
        out
    }

    #[test]
    fn timestamps_step_by_intervals_each_from_the_last() {
        assert_eq!(
            times("2024-01-31", "2024-05-01", 1, 0, 2),
            [
                "2024-01-31 00:00:00",
                "2024-02-29 00:00:00",
                "2024-03-29 00:00:00",
                "2024-04-29 00:00:00"
            ]
        );
        assert_eq!(
            times("2024-01-03", "2024-01-01", 0, -1, 8),
            [
                "2024-01-03 00:00:00",
                "2024-01-02 00:00:00",
                "2024-01-01 00:00:00"
            ]
        );
        assert!(times("2024-01-03", "2024-01-01", 0, 1, 8).is_empty());
        assert_eq!(times("2024-01-01", "2024-01-01", 12, 0, 8).len(), 1);
    }
}
