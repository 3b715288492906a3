//! Table functions (PostgreSQL's set-returning functions): `generate_series`,
//! `string_to_table` and `regexp_split_to_table`, each making any number of values of one
//! column from its arguments. A plan reads them as a source of their own (constant
//! arguments) or once per input row ([`PhysicalPlan::Expand`](crate::PhysicalPlan::Expand)),
//! optionally numbering each call's values from 1 (`WITH ORDINALITY`).

use crate::expr::Expr;
use crate::types::DataType;
use crate::value::Value;
use serde::{Deserialize, Serialize};

/// A table function and its arguments (expressions over the row it is evaluated on, or
/// constants).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum TableFunction {
    /// `generate_series(start, stop [, step])`: the integers (or timestamps) from `start` to
    /// `stop`, `step` apart.
    Series {
        /// The first value.
        start: Expr,
        /// The bound the values do not pass.
        stop: Expr,
        /// The distance between values.
        step: SeriesStep,
    },
    /// `string_to_table(text, delimiter [, null_string])`: the parts of `text` between
    /// occurrences of `delimiter` (each character when the delimiter is NULL, the whole text
    /// when it is empty; nothing for NULL or empty text); a part equal to `null_string` is
    /// NULL.
    SplitText {
        /// The text split.
        text: Expr,
        /// What separates the parts.
        delimiter: Expr,
        /// The part that stands for NULL.
        null_string: Option<Expr>,
    },
    /// `regexp_split_to_table(text, pattern [, flags])`: the parts of `text` between the
    /// matches of `pattern`, as PostgreSQL's (an empty match at the text's start or end, or
    /// right after another match, separates nothing).
    SplitPattern {
        /// The text split.
        text: Expr,
        /// The regular expression separating the parts.
        pattern: Expr,
        /// `i` (case-insensitive) or `c`.
        flags: Option<Expr>,
    },
}

/// The distance between the values of a [`TableFunction::Series`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum SeriesStep {
    /// Integers this far apart (not zero; negative counts down).
    Integer(Expr),
    /// Timestamps an interval apart, each the last plus the interval (months added first,
    /// clamped to the month's end, then days, then microseconds): not zero; a negative one
    /// counts down.
    Interval {
        /// Whole months.
        months: i64,
        /// Whole days.
        days: i64,
        /// Microseconds.
        micros: i64,
    },
}

impl SeriesStep {
    /// The step's expression, for an integer series.
    pub fn expr(&self) -> Option<&Expr> {
        match self {
            SeriesStep::Integer(e) => Some(e),
            SeriesStep::Interval { .. } => None,
        }
    }
}

/// Rows guessed for a call whose count is not read from literals, as a source of its own.
const GUESSED_ROWS: f64 = 1000.0;

/// Rows guessed for a call per input row whose count is not read from literals.
const GUESSED_ROWS_PER_ROW: f64 = 10.0;

impl TableFunction {
    /// The function's SQL name (`generate_series`), which also names its column by default.
    pub fn name(&self) -> &'static str {
        match self {
            TableFunction::Series { .. } => "generate_series",
            TableFunction::SplitText { .. } => "string_to_table",
            TableFunction::SplitPattern { .. } => "regexp_split_to_table",
        }
    }

    /// The type of its values: BIGINT or TIMESTAMP for a series, text for the others.
    pub fn data_type(&self) -> DataType {
        match self {
            TableFunction::Series {
                step: SeriesStep::Interval { .. },
                ..
            } => DataType::Timestamp,
            TableFunction::Series { .. } => DataType::Int64,
            TableFunction::SplitText { .. } | TableFunction::SplitPattern { .. } => DataType::Utf8,
        }
    }

    /// Its argument expressions, in the order the call writes them (an interval step is not
    /// an expression).
    ///
    /// ```
    /// use weir_operators::table_function::TableFunction;
    /// use weir_operators::Expr;
    /// let f = TableFunction::SplitText {
    ///     text: Expr::col(0),
    ///     delimiter: Expr::lit(","),
    ///     null_string: None,
    /// };
    /// assert_eq!(f.args(), vec![&Expr::col(0), &Expr::lit(",")]);
    /// ```
    pub fn args(&self) -> Vec<&Expr> {
        match self {
            TableFunction::Series { start, stop, step } => {
                let mut args = vec![start, stop];
                args.extend(step.expr());
                args
            }
            TableFunction::SplitText {
                text,
                delimiter: second,
                null_string: third,
            }
            | TableFunction::SplitPattern {
                text,
                pattern: second,
                flags: third,
            } => {
                let mut args = vec![text, second];
                args.extend(third.as_ref());
                args
            }
        }
    }

    /// The same call with every argument expression replaced by `f` of it.
    pub fn map_args(&self, f: &mut dyn FnMut(&Expr) -> Expr) -> TableFunction {
        let mapped = self.try_map_args(|e| Ok::<_, std::convert::Infallible>(f(e)));
        match mapped {
            Ok(function) => function,
            Err(never) => match never {},
        }
    }

    /// The same call with every argument expression replaced by `f` of it, or `f`'s first
    /// error.
    pub fn try_map_args<E>(
        &self,
        mut f: impl FnMut(&Expr) -> Result<Expr, E>,
    ) -> Result<TableFunction, E> {
        Ok(match self {
            TableFunction::Series { start, stop, step } => TableFunction::Series {
                start: f(start)?,
                stop: f(stop)?,
                step: match step {
                    SeriesStep::Integer(e) => SeriesStep::Integer(f(e)?),
                    interval => interval.clone(),
                },
            },
            TableFunction::SplitText {
                text,
                delimiter,
                null_string,
            } => TableFunction::SplitText {
                text: f(text)?,
                delimiter: f(delimiter)?,
                null_string: null_string.as_ref().map(&mut f).transpose()?,
            },
            TableFunction::SplitPattern {
                text,
                pattern,
                flags,
            } => TableFunction::SplitPattern {
                text: f(text)?,
                pattern: f(pattern)?,
                flags: flags.as_ref().map(&mut f).transpose()?,
            },
        })
    }

    /// How many values one call makes, for estimates: for a series, counted from integer
    /// literals, else a guess of 1,000 (a source of its own) or 10 (`per_row`, a call per
    /// input row); for a split, a guess of 10 either way (the parts of one text).
    pub fn estimated_rows(&self, per_row: bool) -> f64 {
        let guess = if per_row {
            GUESSED_ROWS_PER_ROW
        } else {
            GUESSED_ROWS
        };
        match self {
            TableFunction::Series { start, stop, step } => {
                literal_rows(start, stop, step).unwrap_or(guess)
            }
            _ => GUESSED_ROWS_PER_ROW,
        }
    }
}

/// How many values `generate_series(start, stop, step)` makes as a source of its own, for
/// estimates: counted when its arguments are integer literals, else a guess of 1,000.
pub fn series_rows(start: &Expr, stop: &Expr, step: &SeriesStep) -> f64 {
    literal_rows(start, stop, step).unwrap_or(GUESSED_ROWS)
}

/// How many values the series makes when its arguments are integer literals (`None` when one
/// is not: a parameter, an expression, an interval).
fn literal_rows(start: &Expr, stop: &Expr, step: &SeriesStep) -> Option<f64> {
    let int = |e: &Expr| match e {
        Expr::Literal(Value::Int(i)) => Some(i128::from(*i)),
        _ => None,
    };
    let (a, b, s) = (int(start)?, int(stop)?, int(step.expr()?)?);
    if s == 0 {
        return Some(0.0);
    }
    Some(((b - a).div_euclid(s) + 1).max(0) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_literal_series_is_counted_and_others_are_guessed() {
        let series = |a: i64, b: i64, s: i64| TableFunction::Series {
            start: Expr::lit(a),
            stop: Expr::lit(b),
            step: SeriesStep::Integer(Expr::lit(s)),
        };
        assert_eq!(series(1, 10, 3).estimated_rows(false), 4.0);
        assert_eq!(series(10, 1, 1).estimated_rows(true), 0.0);
        let split = TableFunction::SplitPattern {
            text: Expr::col(0),
            pattern: Expr::lit(","),
            flags: None,
        };
        assert_eq!(split.estimated_rows(true), GUESSED_ROWS_PER_ROW);
        let mapped = split.map_args(&mut |e| match e {
            Expr::Column(c) => Expr::col(c + 2),
            e => e.clone(),
        });
        assert_eq!(mapped.args()[0], &Expr::col(2));
        assert_eq!(mapped.data_type(), DataType::Utf8);
    }
}
