//! Expand kernel: a table function (`generate_series`, `string_to_table`,
//! `regexp_split_to_table`) evaluated on every input row, each row output once per value of
//! its call with the value (and, `WITH ORDINALITY`, the value's position from 1) appended as
//! the last columns; a row whose call makes no value is dropped, as PostgreSQL's LATERAL call
//! and select-list call drop it.
//!
//! The arguments are evaluated on the whole input batch at once; the calls are then walked
//! row by row with a cursor (row, position in the row's values), and the output is cut into
//! batches of at most `batch_size` rows, so a row whose series has millions of values never
//! makes a batch larger than that. A split row's parts are byte ranges of its text, found
//! once into a buffer the operator keeps, and copied once, into the output.

use super::operator::{output_pending, ExecContext, Operator};
use super::series::{series_column, Cursor, StepValue};
use crate::column::ColumnBuilder;
use crate::eval::evaluate;
use crate::functions::{DelimitedParts, PatternParts, Patterns};
use crate::table_function::TableFunction;
use crate::{Batch, Column, DataType, Error, Result, Value};

/// Repeats each input row once per value of its call (see the module documentation).
pub struct ExpandOp {
    function: TableFunction,
    ordinality: bool,
    ctx: ExecContext,
    /// The input batch being expanded, until its last row's values are done.
    current: Option<Expanding>,
    /// The regular expression of `regexp_split_to_table`, kept while the rows' pattern is the
    /// same.
    patterns: Patterns,
}

/// An input batch and where its expansion is.
struct Expanding {
    batch: Batch,
    /// The call's arguments, one value per row, in the order of [`TableFunction::args`].
    args: Vec<Column>,
    /// The row being expanded, and its values (`None` until they are opened).
    row: usize,
    open: Option<RowValues>,
    /// How many values of the row were output.
    position: usize,
}

/// The values of one row's call still to come.
enum RowValues {
    /// A series' values.
    Series(Cursor),
    /// The parts of the row's text between delimiters still to come.
    Delimited(DelimitedParts),
    /// The parts of the row's text between matches still to come.
    Pattern(PatternParts),
    /// None (a NULL argument).
    Empty,
}

/// The values of an output batch being made.
enum Made {
    /// Integers, or timestamps as microseconds.
    Numbers(Vec<i64>),
    Text(ColumnBuilder),
}

impl ExpandOp {
    /// Expands rows by `function`, whose arguments read the input's columns and `ctx`'s
    /// parameters, in output batches of `ctx.batch_size` rows; with `ordinality` each value
    /// is followed by its position among its row's values.
    ///
    /// ```
    /// use weir_operators::kernels::{drain, expand::ExpandOp, ExecContext, Operator};
    /// use weir_operators::plan::{SeriesStep, TableFunction};
    /// use weir_operators::{Batch, Column, Expr};
    /// // Each n expanded to 1..n.
    /// let series = TableFunction::Series {
    ///     start: Expr::lit(1),
    ///     stop: Expr::col(0),
    ///     step: SeriesStep::Integer(Expr::lit(1)),
    /// };
    /// let mut op = ExpandOp::new(series, false, ExecContext::new(vec![]));
    /// op.push(0, Batch::try_new(vec![Column::from_i64(vec![2, 0, 3])]).unwrap()).unwrap();
    /// let mut out = Vec::new();
    /// drain(&mut op, &mut out).unwrap();
    /// assert_eq!(out[0].column(0).as_i64().unwrap(), &[2, 2, 3, 3, 3]);
    /// assert_eq!(out[0].column(1).as_i64().unwrap(), &[1, 2, 1, 2, 3]);
    /// ```
    pub fn new(function: TableFunction, ordinality: bool, ctx: ExecContext) -> Self {
        ExpandOp {
            function,
            ordinality,
            ctx,
            current: None,
            patterns: Patterns::default(),
        }
    }

    /// Row `r`'s values: its series, or its text's parts. Arguments of the wrong type and a
    /// pattern that does not compile are errors here, before any value of the row is made.
    fn open(&mut self, args: &[Column], r: usize) -> Result<RowValues> {
        let arg = |k: usize| args.get(k).map_or(Value::Null, |c| c.value(r));
        let name = self.function.name();
        let text = |k: usize| text_arg(name, args, k, r);
        Ok(match &self.function {
            TableFunction::Series { step, .. } => {
                let step = StepValue::of(step, |_| Ok(arg(2)))?;
                RowValues::Series(Cursor::new(arg(0), arg(1), step)?)
            }
            TableFunction::SplitText { null_string, .. } => {
                // Read once here for its type; again as each part is made.
                text(1)?;
                if null_string.is_some() {
                    text(2)?;
                }
                match text(0)? {
                    Some(s) => RowValues::Delimited(DelimitedParts::new(s)),
                    None => RowValues::Empty,
                }
            }
            TableFunction::SplitPattern { flags, .. } => {
                let flags = if flags.is_some() { text(2)? } else { Some("") };
                // A NULL argument makes no rows (the function is strict).
                match (text(0)?, text(1)?, flags) {
                    (Some(_), Some(pattern), Some(flags)) => {
                        self.patterns.get(pattern, flags)?;
                        RowValues::Pattern(PatternParts::default())
                    }
                    _ => RowValues::Empty,
                }
            }
        })
    }

    /// Appends at most `room` of row `r`'s parts to `out`; returns how many, and whether the
    /// row has no more.
    fn fill_parts(
        &mut self,
        values: &mut RowValues,
        args: &[Column],
        r: usize,
        out: &mut ColumnBuilder,
        room: usize,
    ) -> Result<(usize, bool)> {
        let name = self.function.name();
        let has_null_string = matches!(
            self.function,
            TableFunction::SplitText {
                null_string: Some(_),
                ..
            }
        );
        let text = text_arg(name, args, 0, r)?.unwrap_or_default();
        let mut made = 0;
        let done = match values {
            RowValues::Delimited(parts) => {
                let delimiter = text_arg(name, args, 1, r)?;
                let null = match has_null_string {
                    true => text_arg(name, args, 2, r)?,
                    false => None,
                };
                while made < room {
                    let Some(p) = parts.next_part(text, delimiter) else {
                        break;
                    };
                    let part = &text[p];
                    match Some(part) == null {
                        true => out.push_null(),
                        false => out.push_str(part),
                    }
                    made += 1;
                }
                parts.is_done()
            }
            RowValues::Pattern(parts) => {
                let pattern = text_arg(name, args, 1, r)?.unwrap_or_default();
                let flags = text_arg(name, args, 2, r)?.unwrap_or_default();
                let regex = self.patterns.get(pattern, flags)?;
                while made < room {
                    let Some(p) = parts.next_part(regex, text) else {
                        break;
                    };
                    out.push_str(&text[p]);
                    made += 1;
                }
                parts.is_done()
            }
            RowValues::Empty => true,
            RowValues::Series(_) => {
                return Err(Error::Internal(format!("{name} made a series of text")))
            }
        };
        Ok((made, done))
    }
}

/// Argument `k` of row `r` of a call of `name` as text: `None` for NULL (of any type: an
/// untyped NULL literal is evaluated as one) or an argument the call does not have.
fn text_arg<'a>(name: &str, args: &'a [Column], k: usize, r: usize) -> Result<Option<&'a str>> {
    match args.get(k) {
        Some(c) if !c.is_valid(r) => Ok(None),
        Some(c) if c.data_type() != DataType::Utf8 => Err(Error::Type(format!(
            "{name} takes text, got {}",
            c.data_type()
        ))),
        Some(c) => Ok(Some(c.str_at(r))),
        None => Ok(None),
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
        let args = self
            .function
            .args()
            .into_iter()
            .map(|e| evaluate(e, &batch, params))
            .collect::<Result<Vec<_>>>()?;
        self.current = Some(Expanding {
            batch,
            args,
            row: 0,
            open: None,
            position: 0,
        });
        Ok(())
    }

    fn finish(&mut self, _port: usize) -> Result<()> {
        Ok(())
    }

    fn next_output(&mut self) -> Result<Option<Batch>> {
        let Some(mut cur) = self.current.take() else {
            return Ok(None);
        };
        let max = self.ctx.batch_size.max(1);
        let rows = cur.batch.num_rows();
        let ty = self.function.data_type();
        let mut made = match ty {
            DataType::Utf8 => Made::Text(ColumnBuilder::new(ty, max.min(1024))),
            _ => Made::Numbers(Vec::new()),
        };
        let mut indices: Vec<u32> = Vec::new();
        let mut ordinals: Vec<i64> = Vec::new();
        while indices.len() < max && cur.row < rows {
            let r = cur.row;
            let open = match &mut cur.open {
                Some(open) => open,
                None => {
                    let opened = self.open(&cur.args, r)?;
                    cur.open.insert(opened)
                }
            };
            let room = max - indices.len();
            let (n, done) = match (open, &mut made) {
                (RowValues::Series(cursor), Made::Numbers(values)) => {
                    (cursor.fill(values, room), cursor.is_done())
                }
                (values, Made::Text(b)) => self.fill_parts(values, &cur.args, r, b, room)?,
                _ => {
                    return Err(Error::Internal(format!(
                        "{} made values of another type",
                        self.function.name()
                    )))
                }
            };
            indices.extend(std::iter::repeat_n(r as u32, n));
            if self.ordinality {
                let first = cur.position as i64 + 1;
                ordinals.extend(first..first + n as i64);
            }
            cur.position += n;
            if done {
                cur.row += 1;
                cur.open = None;
                cur.position = 0;
            }
        }
        let out = if indices.is_empty() {
            None
        } else {
            let mut columns = cur.batch.take(&indices).into_columns();
            columns.push(match made {
                Made::Numbers(values) => series_column(values, ty == DataType::Timestamp),
                Made::Text(b) => b.finish(),
            });
            if self.ordinality {
                columns.push(Column::from_i64(ordinals));
            }
            Some(Batch::with_row_count(columns, indices.len())?)
        };
        if cur.row < rows {
            self.current = Some(cur);
        }
        Ok(out)
    }

    fn has_output(&self) -> bool {
        self.current.is_some()
    }

    fn memory_size(&self) -> usize {
        self.current.as_ref().map_or(0, |c| {
            c.batch.memory_size() + c.args.iter().map(Column::memory_size).sum::<usize>()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::drain;
    use crate::table_function::SeriesStep;
    use crate::{temporal, Expr};

    fn series(start: Expr, stop: Expr, step: SeriesStep) -> TableFunction {
        TableFunction::Series { start, stop, step }
    }

    fn ints(v: Vec<i64>) -> Batch {
        Batch::try_new(vec![Column::from_i64(v)]).unwrap()
    }

    /// The `(row's value, series value)` pairs of expanding `batch` by `start..=stop` by
    /// `step`, checking every output batch has between 1 and `size` rows.
    fn expand(batch: Batch, start: Expr, stop: Expr, step: Expr, size: usize) -> Vec<(i64, i64)> {
        let mut ctx = ExecContext::new(vec![]);
        ctx.batch_size = size;
        let mut op = ExpandOp::new(series(start, stop, SeriesStep::Integer(step)), false, ctx);
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
        let step = SeriesStep::Integer(Expr::col(0));
        let mut op = ExpandOp::new(
            series(Expr::lit(1), Expr::lit(2), step),
            false,
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
        let mut op = ExpandOp::new(
            series(Expr::col(0), stop, step),
            false,
            ExecContext::new(vec![]),
        );
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

    /// Every output row of `function` over `batch` in batches of `size` rows, `WITH
    /// ORDINALITY`, as text.
    fn numbered(function: TableFunction, batch: Batch, size: usize) -> Vec<String> {
        let mut ctx = ExecContext::new(vec![]);
        ctx.batch_size = size;
        let mut op = ExpandOp::new(function, true, ctx);
        op.push(0, batch).unwrap();
        let mut out = Vec::new();
        drain(&mut op, &mut out).unwrap();
        out.iter()
            .inspect(|b| assert!(b.num_rows() > 0 && b.num_rows() <= size))
            .flat_map(|b| b.rows())
            .map(|r| {
                let cells: Vec<String> = r.iter().map(Value::to_string).collect();
                cells.join("|")
            })
            .collect()
    }

    fn texts(values: &[Option<&str>]) -> Batch {
        let values: Vec<Value> = values
            .iter()
            .map(|v| v.map_or(Value::Null, |s| Value::Str(s.into())))
            .collect();
        Batch::try_new(vec![Column::from_values(DataType::Utf8, &values).unwrap()]).unwrap()
    }

    #[test]
    fn texts_split_per_row_numbered_across_output_batches() {
        let split = TableFunction::SplitText {
            text: Expr::col(0),
            delimiter: Expr::lit(","),
            null_string: Some(Expr::lit("-")),
        };
        let batch = texts(&[Some("a,-,b"), None, Some(""), Some("c")]);
        // NULL and empty texts make no rows; the part equal to the null string is NULL.
        assert_eq!(
            numbered(split, batch, 2),
            ["a,-,b|a|1", "a,-,b|NULL|2", "a,-,b|b|3", "c|c|1"]
        );
        let pattern = TableFunction::SplitPattern {
            text: Expr::col(0),
            pattern: Expr::lit("x"),
            flags: Some(Expr::lit("i")),
        };
        let batch = texts(&[Some("aXbxc"), Some("")]);
        assert_eq!(
            numbered(pattern, batch, 8),
            ["aXbxc|a|1", "aXbxc|b|2", "aXbxc|c|3", "|NULL|1"].map(|r| r.replace("NULL", ""))
        );
    }

    #[test]
    fn a_text_of_many_parts_is_split_a_batch_at_a_time() {
        let text = vec!["p"; 10_000].join(",");
        let split = TableFunction::SplitPattern {
            text: Expr::col(0),
            pattern: Expr::lit(","),
            flags: None,
        };
        let mut ctx = ExecContext::new(vec![]);
        ctx.batch_size = 1_000;
        let mut op = ExpandOp::new(split, true, ctx);
        op.push(0, texts(&[Some(&text)])).unwrap();
        let held = op.memory_size();
        let mut ordinals = Vec::new();
        while let Some(b) = op.next_output().unwrap() {
            assert_eq!(b.num_rows(), 1_000);
            // Only the input and its arguments are held, never the parts.
            assert!(op.memory_size() <= held, "{} > {held}", op.memory_size());
            ordinals.extend_from_slice(b.column(2).as_i64().unwrap());
        }
        assert_eq!(ordinals, (1..=10_000).collect::<Vec<i64>>());
    }

    #[test]
    fn series_are_numbered_from_one_per_row() {
        let f = series(
            Expr::col(0),
            Expr::lit(3),
            SeriesStep::Integer(Expr::lit(1)),
        );
        let batch = Batch::try_new(vec![Column::from_i64(vec![2, 1])]).unwrap();
        assert_eq!(
            numbered(f, batch, 2),
            ["2|2|1", "2|3|2", "1|1|1", "1|2|2", "1|3|3"]
        );
    }
}
