//! `generate_series(start, stop [, step])` as a source: the integers from `start` to `stop`
//! (inclusive) `step` apart, made a batch at a time as they are asked for, so a series of
//! millions of rows never sits in memory whole.

use crate::eval::evaluate_scalar;
use crate::{Batch, Column, Error, Expr, Result, Value};

/// How many values `generate_series(start, stop, step)` makes when its arguments are
/// integer literals (`None` when one is not: a parameter, an expression), for estimates.
pub fn literal_rows(start: &Expr, stop: &Expr, step: &Expr) -> Option<f64> {
    let int = |e: &Expr| match e {
        Expr::Literal(Value::Int(i)) => Some(i128::from(*i)),
        _ => None,
    };
    let (a, b, s) = (int(start)?, int(stop)?, int(step)?);
    if s == 0 {
        return Some(0.0);
    }
    Some(((b - a).div_euclid(s) + 1).max(0) as f64)
}

/// A series being produced: the next value and where it ends.
#[derive(Debug)]
pub struct SeriesSource {
    /// The next value; `None` once the series has ended.
    next: Option<i64>,
    stop: i64,
    step: i64,
    batch_size: usize,
}

impl SeriesSource {
    /// The series of the constant expressions `start`, `stop` and `step` (read with
    /// `params`), in batches of `batch_size` rows. A NULL argument makes an empty series, as
    /// PostgreSQL's does; a step of zero is an error.
    ///
    /// ```
    /// use weir_operators::kernels::series::SeriesSource;
    /// use weir_operators::Expr;
    /// let mut s = SeriesSource::new(&Expr::lit(1), &Expr::lit(10), &Expr::lit(4), &[], 1024)
    ///     .unwrap();
    /// let batch = s.next_batch().unwrap().unwrap();
    /// assert_eq!(batch.column(0).as_i64().unwrap(), &[1, 5, 9]);
    /// assert!(s.next_batch().unwrap().is_none());
    /// ```
    pub fn new(
        start: &Expr,
        stop: &Expr,
        step: &Expr,
        params: &[Value],
        batch_size: usize,
    ) -> Result<SeriesSource> {
        let int = |e: &Expr, what: &str| -> Result<Option<i64>> {
            match evaluate_scalar(e, params)? {
                Value::Null => Ok(None),
                Value::Int(i) => Ok(Some(i)),
                v => Err(Error::Type(format!(
                    "generate_series needs an integer {what}, got {v}"
                ))),
            }
        };
        let (start, stop, step) = (int(start, "start")?, int(stop, "stop")?, int(step, "step")?);
        if step == Some(0) {
            return Err(Error::Arithmetic(
                "generate_series: step size cannot equal zero".into(),
            ));
        }
        let (Some(start), Some(stop), Some(step)) = (start, stop, step) else {
            return Ok(SeriesSource {
                next: None,
                stop: 0,
                step: 1,
                batch_size,
            });
        };
        let empty = if step > 0 { start > stop } else { start < stop };
        Ok(SeriesSource {
            next: (!empty).then_some(start),
            stop,
            step,
            batch_size: batch_size.max(1),
        })
    }

    /// The next batch of values (one BIGINT column), or `None` after the last.
    pub fn next_batch(&mut self) -> Result<Option<Batch>> {
        let Some(first) = self.next else {
            return Ok(None);
        };
        // Values left, at least 1: `(stop - first) / step` steps fit past the first.
        let left = (i128::from(self.stop) - i128::from(first)) / i128::from(self.step) + 1;
        let n = usize::try_from(left).map_or(self.batch_size, |l| l.min(self.batch_size));
        let mut values = Vec::with_capacity(n);
        let mut v = i128::from(first);
        for _ in 0..n {
            // Every value is between `first` and `stop`, so within BIGINT.
            values.push(v as i64);
            v += i128::from(self.step);
        }
        let past = if self.step > 0 {
            v > i128::from(self.stop)
        } else {
            v < i128::from(self.stop)
        };
        self.next = (!past).then_some(v as i64);
        Ok(Some(Batch::try_new(vec![Column::from_i64(values)])?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(start: i64, stop: i64, step: i64, batch: usize) -> Vec<i64> {
        let lit = Expr::lit;
        let mut s = SeriesSource::new(&lit(start), &lit(stop), &lit(step), &[], batch).unwrap();
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
        let mut s = SeriesSource::new(&Expr::lit(1), &null, &Expr::lit(1), &[], 8).unwrap();
        assert!(s.next_batch().unwrap().is_none());
        let e = SeriesSource::new(&Expr::lit(1), &Expr::lit(2), &Expr::lit(0), &[], 8).unwrap_err();
        assert!(e.to_string().contains("step size cannot equal zero"), "{e}");
    }
}
