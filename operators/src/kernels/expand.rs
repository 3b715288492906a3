//! Expand kernel: `generate_series(start, stop, step)` evaluated on every input row, each row
//! output once per value of its series with the value appended as the last column (a row
//! whose series is empty is dropped, as PostgreSQL's LATERAL call and select-list call drop
//! it).
//!
//! The arguments are evaluated on the whole input batch at once; the series are then walked
//! row by row with a cursor (row, series position), and the output is cut into batches of at
//! most `batch_size` rows, so a row whose series has millions of values never makes a batch
//! larger than that.

use super::operator::{output_pending, ExecContext, Operator};
use super::series::{series_column, Cursor, StepValue};
use crate::eval::evaluate;
use crate::plan::SeriesStep;
use crate::{Batch, Column, Expr, Result};

/// Repeats each input row once per value of its series (see the module documentation).
pub struct ExpandOp {
    start: Expr,
    stop: Expr,
    step: SeriesStep,
    ctx: ExecContext,
    /// The input batch being expanded, until its last row's series is done.
    current: Option<Expanding>,
}

/// An input batch and where its expansion is.
struct Expanding {
    batch: Batch,
    /// The arguments, one value per row (`steps` only for an integer step).
    starts: Column,
    stops: Column,
    steps: Option<Column>,
    /// The row being expanded, and its series (`None` until it is opened).
    row: usize,
    cursor: Option<Cursor>,
}

impl ExpandOp {
    /// Expands rows by `generate_series(start, stop, step)`, whose expressions read the
    /// input's columns and `ctx`'s parameters, in output batches of `ctx.batch_size` rows.
    ///
    /// ```
    /// use weir_operators::kernels::{drain, expand::ExpandOp, ExecContext, Operator};
    /// use weir_operators::plan::SeriesStep;
    /// use weir_operators::{Batch, Column, Expr};
    /// // Each n expanded to 1..n.
    /// let step = SeriesStep::Integer(Expr::lit(1));
    /// let mut op = ExpandOp::new(Expr::lit(1), Expr::col(0), step, ExecContext::new(vec![]));
    /// op.push(0, Batch::try_new(vec![Column::from_i64(vec![2, 0, 3])]).unwrap()).unwrap();
    /// let mut out = Vec::new();
    /// drain(&mut op, &mut out).unwrap();
    /// assert_eq!(out[0].column(0).as_i64().unwrap(), &[2, 2, 3, 3, 3]);
    /// assert_eq!(out[0].column(1).as_i64().unwrap(), &[1, 2, 1, 2, 3]);
    /// ```
    pub fn new(start: Expr, stop: Expr, step: SeriesStep, ctx: ExecContext) -> Self {
        ExpandOp {
            start,
            stop,
            step,
            ctx,
            current: None,
        }
    }
}

impl Operator for ExpandOp {
    fn name(&self) -> &'static str {
        "Expand"
    }

    fn push(&mut self, _port: usize, batch: Batch) -> Result<()> {
        if self.current.is_some() {
            return Err(output_pending(self.name()));
        }
        if batch.is_empty() {
            return Ok(());
        }
        let params = &self.ctx.params;
        let starts = evaluate(&self.start, &batch, params)?;
        let stops = evaluate(&self.stop, &batch, params)?;
        let steps = match &self.step {
            SeriesStep::Integer(e) => Some(evaluate(e, &batch, params)?),
            SeriesStep::Interval { .. } => None,
        };
        self.current = Some(Expanding {
            batch,
            starts,
            stops,
            steps,
            row: 0,
            cursor: None,
        });
        Ok(())
    }

    fn finish(&mut self, _port: usize) -> Result<()> {
        Ok(())
    }

    fn next_output(&mut self) -> Result<Option<Batch>> {
        let Some(cur) = self.current.as_mut() else {
            return Ok(None);
        };
        let max = self.ctx.batch_size.max(1);
        let rows = cur.batch.num_rows();
        let mut values = Vec::new();
        let mut indices: Vec<u32> = Vec::new();
        while values.len() < max && cur.row < rows {
            let cursor = match &mut cur.cursor {
                Some(c) => c,
                None => {
                    let r = cur.row;
                    let step = StepValue::of(&self.step, |_| {
                        Ok(cur
                            .steps
                            .as_ref()
                            .map_or(crate::Value::Null, |s| s.value(r)))
                    })?;
                    let opened = Cursor::new(cur.starts.value(r), cur.stops.value(r), step)?;
                    cur.cursor.insert(opened)
                }
            };
            let room = max - values.len();
            let made = cursor.fill(&mut values, room);
            indices.extend(std::iter::repeat_n(cur.row as u32, made));
            if cursor.is_done() {
                cur.row += 1;
                cur.cursor = None;
            }
        }
        let timestamps = matches!(self.step, SeriesStep::Interval { .. });
        let out = if values.is_empty() {
            None
        } else {
            let mut columns = cur.batch.take(&indices).into_columns();
            columns.push(series_column(values, timestamps));
            Some(Batch::with_row_count(columns, indices.len())?)
        };
        if cur.row == rows {
            self.current = None;
        }
        Ok(out)
    }

    fn has_output(&self) -> bool {
        self.current.is_some()
    }

    fn memory_size(&self) -> usize {
        self.current.as_ref().map_or(0, |c| c.batch.memory_size())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::drain;
    use crate::{temporal, Value};

    fn ints(v: Vec<i64>) -> Batch {
        Batch::try_new(vec![Column::from_i64(v)]).unwrap()
    }

    /// The `(row's value, series value)` pairs of expanding `batch` by `start..=stop` by
    /// `step`, checking every output batch has between 1 and `size` rows.
    fn expand(batch: Batch, start: Expr, stop: Expr, step: Expr, size: usize) -> Vec<(i64, i64)> {
        let mut ctx = ExecContext::new(vec![]);
        ctx.batch_size = size;
        let mut op = ExpandOp::new(start, stop, SeriesStep::Integer(step), ctx);
        op.push(0, batch).unwrap();
        let mut out = Vec::new();
        drain(&mut op, &mut out).unwrap();
        assert!(!op.has_output());
        out.iter()
            .inspect(|b| assert!(b.num_rows() > 0 && b.num_rows() <= size))
            .flat_map(|b| {
                let (k, v) = (b.column(0).as_i64().unwrap(), b.column(1).as_i64().unwrap());
                k.iter().copied().zip(v.iter().copied()).collect::<Vec<_>>()
            })
            .collect()
    }

    #[test]
    fn each_row_is_repeated_once_per_value_of_its_own_series() {
        let got = expand(
            ints(vec![3, 0, -1, 2]),
            Expr::col(0),
            Expr::lit(2),
            Expr::lit(1),
            2,
        );
        // 3..=2 and -1's step up to 2 are as PostgreSQL has them: nothing, and four values.
        assert_eq!(
            got,
            vec![
                (0, 0),
                (0, 1),
                (0, 2),
                (-1, -1),
                (-1, 0),
                (-1, 1),
                (-1, 2),
                (2, 2)
            ]
        );
        // A step read from the row, counting down; a row's series longer than a batch.
        let got = expand(
            ints(vec![-2, 5]),
            Expr::lit(6),
            Expr::lit(0),
            Expr::col(0),
            3,
        );
        // 6 up to 0 by 5 is empty.
        assert_eq!(got, vec![(-2, 6), (-2, 4), (-2, 2), (-2, 0)]);
    }

    #[test]
    fn null_arguments_drop_the_row_and_a_zero_step_is_an_error() {
        let batch = Batch::try_new(vec![Column::from_values(
            crate::DataType::Int64,
            &[Value::Null, Value::Int(2)],
        )
        .unwrap()])
        .unwrap();
        assert_eq!(
            expand(batch, Expr::lit(1), Expr::col(0), Expr::lit(1), 8),
            vec![(2, 1), (2, 2)]
        );
        let mut op = ExpandOp::new(
            Expr::lit(1),
            Expr::lit(2),
            SeriesStep::Integer(Expr::col(0)),
            ExecContext::new(vec![]),
        );
        op.push(0, ints(vec![1, 0])).unwrap();
        let e = drain(&mut op, &mut Vec::new()).unwrap_err();
        assert!(e.to_string().contains("step size cannot equal zero"), "{e}");
    }

    #[test]
    fn timestamps_step_by_an_interval_per_row() {
        let day = 86_400_000_000i64;
        let t0 = temporal::parse_timestamp("2024-01-30 00:00:00").unwrap();
        let batch = Batch::try_new(vec![Column::new(crate::column::ColumnData::Timestamp(
            vec![t0, t0 + day],
        ))])
        .unwrap();
        let step = SeriesStep::Interval {
            months: 0,
            days: 1,
            micros: 0,
        };
        let stop = Expr::Literal(Value::Timestamp(t0 + 2 * day));
        let mut op = ExpandOp::new(Expr::col(0), stop, step, ExecContext::new(vec![]));
        op.push(0, batch).unwrap();
        let mut out = Vec::new();
        drain(&mut op, &mut out).unwrap();
        let values: Vec<String> = out[0].rows().iter().map(|r| r[1].to_string()).collect();
        assert_eq!(
            values,
            [
                "2024-01-30 00:00:00",
                "2024-01-31 00:00:00",
                "2024-02-01 00:00:00",
                "2024-01-31 00:00:00",
                "2024-02-01 00:00:00"
            ]
        );
    }
}
