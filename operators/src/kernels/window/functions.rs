//! One window function's column over the sorted rows: the frame it reads (computed once for
//! all the functions that share it), then the ranking, navigation or aggregate that computes
//! it.

use super::aggregates::{aggregate, string_agg};
use super::frame::Frames;
use super::layout::Layout;
use super::{navigation, ranking};
use crate::plan::{AggFunc, SortKey, WindowExpr, WindowFrame, WindowFunc};
use crate::{Column, Error, Result, Value};

/// What every function of one window reads besides its arguments: the sorted rows' layout,
/// the parameters (of frame offsets), the single ORDER BY key when there is one (of `RANGE`
/// offsets), and the frames computed so far.
pub(crate) struct Window<'a> {
    /// The partitions and peer groups.
    pub(crate) layout: &'a Layout,
    /// The query's parameters.
    pub(crate) params: &'a [Value],
    /// The ORDER BY key, sorted, and its spec, when there is exactly one.
    pub(crate) key: Option<(&'a Column, &'a SortKey)>,
    /// Frames already computed, by their spec.
    frames: Vec<(WindowFrame, Frames)>,
}

impl<'a> Window<'a> {
    /// A window over `layout`.
    pub(crate) fn new(
        layout: &'a Layout,
        params: &'a [Value],
        key: Option<(&'a Column, &'a SortKey)>,
    ) -> Self {
        Window {
            layout,
            params,
            key,
            frames: Vec::new(),
        }
    }

    /// The frames of `spec`, computed on first use.
    fn frames(&mut self, spec: &WindowFrame) -> Result<&Frames> {
        let at = match self.frames.iter().position(|(s, _)| s == spec) {
            Some(at) => at,
            None => {
                let f = Frames::new(spec, self.params, self.layout, self.key)?;
                self.frames.push((spec.clone(), f));
                self.frames.len() - 1
            }
        };
        Ok(&self.frames[at].1)
    }

    /// `f`'s column over the sorted rows, from its arguments `args` (sorted too).
    pub(crate) fn evaluate(&mut self, f: &WindowExpr, args: &[&Column]) -> Result<Column> {
        let layout = self.layout;
        let arg = |k: usize| -> Result<&Column> {
            args.get(k).copied().ok_or_else(|| {
                Error::Internal(format!(
                    "{} has {} arguments, needs {}",
                    f.func.name(),
                    args.len(),
                    k + 1
                ))
            })
        };
        let out = match f.func {
            WindowFunc::RowNumber => ranking::row_number(layout),
            WindowFunc::Rank => ranking::rank(layout),
            WindowFunc::DenseRank => ranking::dense_rank(layout),
            WindowFunc::PercentRank => ranking::percent_rank(layout),
            WindowFunc::CumeDist => ranking::cume_dist(layout),
            WindowFunc::Ntile => ranking::ntile(layout, arg(0)?)?,
            WindowFunc::Lag | WindowFunc::Lead => navigation::lag_lead(
                layout,
                arg(0)?,
                arg(1)?,
                arg(2)?,
                f.func == WindowFunc::Lead,
            )?,
            WindowFunc::FirstValue => {
                navigation::first_value(layout, self.frames(&f.frame)?, arg(0)?)
            }
            WindowFunc::LastValue => {
                navigation::last_value(layout, self.frames(&f.frame)?, arg(0)?)
            }
            WindowFunc::NthValue => {
                let (value, nth) = (arg(0)?, arg(1)?);
                navigation::nth_value(layout, self.frames(&f.frame)?, value, nth)?
            }
            WindowFunc::Aggregate(AggFunc::StringAgg) => {
                let (values, separators) = (arg(0)?, arg(1)?);
                string_agg(values, separators, layout, self.frames(&f.frame)?)?
            }
            WindowFunc::Aggregate(func) => {
                let a = args.first().copied();
                aggregate(func, a, f.output_type, layout, self.frames(&f.frame)?)?
            }
        };
        if out.data_type() != f.output_type {
            return Err(Error::Internal(format!(
                "window {} computed {}, planned {}",
                f.func.name(),
                out.data_type(),
                f.output_type
            )));
        }
        Ok(out)
    }
}
