//! Frame evaluation: each sorted row's frame as a range of rows of its partition, and the
//! holes its EXCLUDE clause makes.
//!
//! `ROWS` bounds are the row's position plus or minus the offset; `GROUPS` bounds are peer
//! group boundaries of the layout; `RANGE` bounds with an offset are found by two pointers per
//! partition that only move forward (the ORDER BY values ascend, once a descending key is
//! negated), so every frame of `n` rows is found in O(n) whatever its size. A frame is a
//! half-open range `start..end`; EXCLUDE cuts at most two holes in it, so a frame is at most
//! three [`Segments`].

use super::layout::Layout;
use crate::column::ColumnData;
use crate::eval::evaluate_scalar;
use crate::plan::{FrameBound, FrameExclude, FrameUnits, SortKey, WindowFrame};
use crate::{Column, Error, Result, Value};

/// A frame bound whose offset is evaluated.
#[derive(Debug, Clone, PartialEq)]
enum Bound {
    UnboundedPreceding,
    Preceding(Value),
    CurrentRow,
    Following(Value),
    UnboundedFollowing,
}

impl Bound {
    /// `b` with its offset evaluated (with `params`) and checked: neither NULL nor negative.
    /// `which` is `"starting"` or `"ending"`, for the errors.
    fn new(b: &FrameBound, params: &[Value], which: &str) -> Result<Bound> {
        let offset = |e| -> Result<Value> {
            let v = evaluate_scalar(e, params)?;
            let negative = match &v {
                Value::Null => {
                    return Err(Error::Arithmetic(format!(
                        "frame {which} offset must not be null"
                    )))
                }
                Value::Int(i) => *i < 0,
                Value::Float(f) => *f < 0.0 || f.is_nan(),
                Value::Decimal(d, _) => *d < 0,
                other => {
                    return Err(Error::Type(format!(
                        "frame {which} offset must be a number, got {other}"
                    )))
                }
            };
            if negative {
                return Err(Error::Arithmetic(format!(
                    "frame {which} offset must not be negative"
                )));
            }
            Ok(v)
        };
        Ok(match b {
            FrameBound::UnboundedPreceding => Bound::UnboundedPreceding,
            FrameBound::Preceding(e) => Bound::Preceding(offset(e)?),
            FrameBound::CurrentRow => Bound::CurrentRow,
            FrameBound::Following(e) => Bound::Following(offset(e)?),
            FrameBound::UnboundedFollowing => Bound::UnboundedFollowing,
        })
    }

    /// The offset as a count of rows or groups (`ROWS` and `GROUPS` take integers).
    fn count(v: &Value) -> Result<i128> {
        match v {
            Value::Int(i) => Ok(i128::from(*i)),
            Value::Decimal(d, 0) => Ok(*d),
            other => Err(Error::Type(format!(
                "a ROWS or GROUPS offset must be an integer, got {other}"
            ))),
        }
    }
}

/// The rows a frame covers: up to three ascending, disjoint, non-empty ranges.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Segments {
    parts: [(u32, u32); 3],
    len: u8,
}

impl Segments {
    /// Appends `start..end` (after the ranges so far), merged with the last range when they
    /// touch.
    fn push(&mut self, start: usize, end: usize) {
        if start >= end {
            return;
        }
        if let Some(last) = self.len.checked_sub(1) {
            let (_, e) = &mut self.parts[last as usize];
            if *e as usize == start {
                *e = end as u32;
                return;
            }
        }
        self.parts[self.len as usize] = (start as u32, end as u32);
        self.len += 1;
    }

    /// The ranges, `(start, end)` half open.
    #[inline]
    pub(crate) fn ranges(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.parts[..self.len as usize]
            .iter()
            .map(|&(s, e)| (s as usize, e as usize))
    }

    /// Rows covered.
    #[inline]
    pub(crate) fn rows(&self) -> usize {
        self.ranges().map(|(s, e)| e - s).sum()
    }

    /// The `k`th row covered (from 0), if there are that many.
    #[inline]
    pub(crate) fn nth(&self, mut k: usize) -> Option<usize> {
        for (s, e) in self.ranges() {
            if k < e - s {
                return Some(s + k);
            }
            k -= e - s;
        }
        None
    }

    /// The last row covered.
    #[inline]
    pub(crate) fn last(&self) -> Option<usize> {
        self.ranges().last().map(|(_, e)| e - 1)
    }
}

/// Every sorted row's frame.
#[derive(Debug)]
pub(crate) struct Frames {
    start: Vec<u32>,
    end: Vec<u32>,
    exclude: FrameExclude,
    running: bool,
}

impl Frames {
    /// Bytes the frames of `n` rows take.
    pub(crate) fn bytes_for(n: usize) -> usize {
        n * 8
    }

    /// The frames of `frame` for the rows of `layout`, with offsets evaluated with `params`.
    /// `key` is the ORDER BY key (sorted like the rows) and its spec, when there is exactly
    /// one: `RANGE` offsets need it.
    pub(crate) fn new(
        frame: &WindowFrame,
        params: &[Value],
        layout: &Layout,
        key: Option<(&Column, &SortKey)>,
    ) -> Result<Frames> {
        let start_bound = Bound::new(&frame.start, params, "starting")?;
        let end_bound = Bound::new(&frame.end, params, "ending")?;
        let n = layout.rows();
        let mut start = vec![0u32; n];
        let mut end = vec![0u32; n];
        match frame.units {
            FrameUnits::Rows => {
                for (ps, pe) in layout.partitions() {
                    for i in ps..pe {
                        start[i] = rows_bound(&start_bound, i, ps, pe, false)? as u32;
                        end[i] = rows_bound(&end_bound, i, ps, pe, true)? as u32;
                    }
                }
            }
            FrameUnits::Groups => {
                for (ps, pe) in layout.partitions() {
                    for i in ps..pe {
                        start[i] = groups_bound(&start_bound, i, ps, pe, layout, false)? as u32;
                        end[i] = groups_bound(&end_bound, i, ps, pe, layout, true)? as u32;
                    }
                }
            }
            FrameUnits::Range => {
                range_bounds(&start_bound, layout, key, false, &mut start)?;
                range_bounds(&end_bound, layout, key, true, &mut end)?;
            }
        }
        // An end before the start is an empty frame.
        for (s, e) in start.iter().zip(end.iter_mut()) {
            if *e < *s {
                *e = *s;
            }
        }
        Ok(Frames {
            start,
            end,
            exclude: frame.exclude,
            running: start_bound == Bound::UnboundedPreceding
                && frame.exclude == FrameExclude::NoOthers,
        })
    }

    /// Whether every frame is its partition's rows from the first up to some row, with no
    /// holes: aggregates can then accumulate as rows enter, never removing one.
    pub(crate) fn is_running(&self) -> bool {
        self.running
    }

    /// Row `i`'s frame before EXCLUDE: `(start, end)` half open.
    #[inline]
    pub(crate) fn bounds(&self, i: usize) -> (usize, usize) {
        (self.start[i] as usize, self.end[i] as usize)
    }

    /// Row `i`'s frame with EXCLUDE's holes.
    #[inline]
    pub(crate) fn segments(&self, i: usize, layout: &Layout) -> Segments {
        let (s, e) = self.bounds(i);
        let mut out = Segments::default();
        let (gs, ge) = match self.exclude {
            FrameExclude::NoOthers => {
                out.push(s, e);
                return out;
            }
            FrameExclude::CurrentRow => (i, i + 1),
            FrameExclude::Group | FrameExclude::Ties => layout.group_rows(layout.group(i)),
        };
        out.push(s, e.min(gs));
        if self.exclude == FrameExclude::Ties && s <= i && i < e {
            out.push(i, i + 1);
        }
        out.push(s.max(ge), e);
        out
    }
}

/// A `ROWS` bound of row `i` in partition `ps..pe`: a start, or an exclusive `end`, clamped
/// to the partition.
fn rows_bound(b: &Bound, i: usize, ps: usize, pe: usize, end: bool) -> Result<usize> {
    let i = i as i128;
    let one = i128::from(end);
    let at = match b {
        Bound::UnboundedPreceding => ps as i128,
        Bound::UnboundedFollowing => pe as i128,
        Bound::CurrentRow => i + one,
        Bound::Preceding(v) => i - Bound::count(v)? + one,
        Bound::Following(v) => i.saturating_add(Bound::count(v)?) + one,
    };
    Ok(at.clamp(ps as i128, pe as i128) as usize)
}

/// A `GROUPS` bound of row `i` in partition `ps..pe`: peer group boundaries.
fn groups_bound(
    b: &Bound,
    i: usize,
    ps: usize,
    pe: usize,
    layout: &Layout,
    end: bool,
) -> Result<usize> {
    let g = layout.group(i) as i128;
    let (first, last_end) = layout.partition_groups(i);
    let (first, last_end) = (first as i128, last_end as i128);
    // Group `h`'s first row, or (for an end) the row after its last; outside the partition's
    // groups, the partition's edge.
    let edge = |h: i128| -> usize {
        if h < first {
            ps
        } else if h >= last_end {
            pe
        } else {
            let (s, e) = layout.group_rows(h as usize);
            if end {
                e
            } else {
                s
            }
        }
    };
    Ok(match b {
        Bound::UnboundedPreceding => ps,
        Bound::UnboundedFollowing => pe,
        Bound::CurrentRow => edge(g),
        Bound::Preceding(v) => {
            let h = g - Bound::count(v)?;
            // A start before the first group starts the partition; an end before it is empty.
            if h < first && !end {
                ps
            } else {
                edge(h)
            }
        }
        Bound::Following(v) => {
            let h = g.saturating_add(Bound::count(v)?);
            if h >= last_end && end {
                pe
            } else {
                edge(h)
            }
        }
    })
}

/// The ORDER BY values of a `RANGE` frame, made ascending (a descending key negated).
enum Values {
    /// Integers, dates (days), timestamps (microseconds) and decimals (unscaled).
    Exact(Vec<i128>),
    /// Floats, and anything met with a float offset.
    Float(Vec<f64>),
}

impl Values {
    /// `key`'s values for an offset of `offset`: exact when both are (a decimal offset at
    /// the key's scale or below), else as floats; and the offset in the same units.
    fn new(key: &Column, descending: bool, offset: &Value) -> Result<(Values, OffsetValue)> {
        let sign = if descending { -1 } else { 1 };
        let exact_offset = |scale: u8| -> Option<i128> {
            match offset {
                Value::Int(i) => crate::decimal::rescale(i128::from(*i), 0, scale),
                Value::Decimal(d, s) if *s <= scale => crate::decimal::rescale(*d, *s, scale),
                _ => None,
            }
        };
        let float_offset = || match offset {
            Value::Int(i) => *i as f64,
            Value::Float(f) => *f,
            Value::Decimal(d, s) => crate::decimal::to_f64(*d, *s),
            _ => 0.0,
        };
        let exact = |v: Vec<i128>, d: i128| (Values::Exact(v), OffsetValue::Exact(d));
        let float = |v: Vec<f64>| (Values::Float(v), OffsetValue::Float(float_offset()));
        Ok(match &key.data {
            ColumnData::Int64(v) | ColumnData::Timestamp(v) => match exact_offset(0) {
                Some(d) => exact(v.iter().map(|&x| sign * i128::from(x)).collect(), d),
                None => float(
                    v.iter()
                        .map(|&x| f64::from(sign as i32) * x as f64)
                        .collect(),
                ),
            },
            ColumnData::Date(v) => match exact_offset(0) {
                Some(d) => exact(v.iter().map(|&x| sign * i128::from(x)).collect(), d),
                None => float(v.iter().map(|&x| f64::from(sign as i32 * x)).collect()),
            },
            ColumnData::Decimal { values, scale, .. } => match exact_offset(*scale) {
                Some(d) => exact(values.iter().map(|&x| sign * x).collect(), d),
                None => float(
                    values
                        .iter()
                        .map(|&x| f64::from(sign as i32) * crate::decimal::to_f64(x, *scale))
                        .collect(),
                ),
            },
            ColumnData::Float64(v) => {
                float(v.iter().map(|&x| f64::from(sign as i32) * x).collect())
            }
            ColumnData::Utf8 { .. } | ColumnData::Boolean(_) => {
                return Err(Error::Type(format!(
                    "RANGE with an offset needs a numeric, DATE or TIMESTAMP ORDER BY key, got {}",
                    key.data_type()
                )))
            }
        })
    }
}

/// A `RANGE` offset in the units of [`Values`].
#[derive(Clone, Copy)]
enum OffsetValue {
    Exact(i128),
    Float(f64),
}

/// The `RANGE` bound `b` of every row into `out`: a start, or an exclusive end.
fn range_bounds(
    b: &Bound,
    layout: &Layout,
    key: Option<(&Column, &SortKey)>,
    end: bool,
    out: &mut [u32],
) -> Result<()> {
    let (offset, following) = match b {
        Bound::Preceding(v) => (v, false),
        Bound::Following(v) => (v, true),
        _ => {
            for (ps, pe) in layout.partitions() {
                for (i, o) in out.iter_mut().enumerate().take(pe).skip(ps) {
                    *o = match b {
                        Bound::UnboundedPreceding => ps,
                        Bound::UnboundedFollowing => pe,
                        _ => {
                            let (s, e) = layout.group_rows(layout.group(i));
                            if end {
                                e
                            } else {
                                s
                            }
                        }
                    } as u32;
                }
            }
            return Ok(());
        }
    };
    let Some((key, spec)) = key else {
        return Err(Error::Internal(
            "RANGE with an offset needs exactly one ORDER BY key".into(),
        ));
    };
    let (values, offset) = Values::new(key, spec.descending, offset)?;
    for (ps, pe) in layout.partitions() {
        // The NULL keys are one peer group at an end of the partition: their frame is their
        // group (an offset from NULL reaches only NULLs); the others' frames hold no NULL.
        let mut a = ps;
        while a < pe && key.is_null(a) {
            a += 1;
        }
        let mut b = a;
        while b < pe && key.is_valid(b) {
            b += 1;
        }
        for i in (ps..a).chain(b..pe) {
            let (s, e) = layout.group_rows(layout.group(i));
            out[i] = if end { e } else { s } as u32;
        }
        match (&values, offset) {
            (Values::Exact(v), OffsetValue::Exact(d)) => seek(v, a, b, end, out, |x| {
                if following {
                    x.saturating_add(d)
                } else {
                    x.saturating_sub(d)
                }
            }),
            (Values::Float(v), OffsetValue::Float(d)) => {
                seek(v, a, b, end, out, |x| if following { x + d } else { x - d })
            }
            _ => return Err(Error::Internal("RANGE values and offset disagree".into())),
        }
    }
    Ok(())
}

/// For each row `i` of `a..b` (whose values `v` ascend), into `out[i]`: the first row of
/// `a..b` whose value is at least `target(v[i])`, or (for an exclusive `end`) above it.
/// The targets ascend with `i`, so the pointer only moves forward.
fn seek<T: Copy + PartialOrd>(
    v: &[T],
    a: usize,
    b: usize,
    end: bool,
    out: &mut [u32],
    target: impl Fn(T) -> T,
) {
    let mut p = a;
    for i in a..b {
        let t = target(v[i]);
        if end {
            while p < b && v[p] <= t {
                p += 1;
            }
        } else {
            while p < b && v[p] < t {
                p += 1;
            }
        }
        out[i] = p as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DataType, Expr};

    fn frame(units: FrameUnits, start: FrameBound, end: FrameBound) -> WindowFrame {
        WindowFrame {
            units,
            start,
            end,
            exclude: FrameExclude::NoOthers,
        }
    }

    fn all_bounds(f: &Frames, n: usize) -> Vec<(usize, usize)> {
        (0..n).map(|i| f.bounds(i)).collect()
    }

    #[test]
    fn rows_groups_and_range_bounds() {
        // One partition, keys 1 1 2 4 4 5.
        let key = Column::from_i64(vec![1, 1, 2, 4, 4, 5]);
        let layout = Layout::new(&[], &[&key], 6);
        let spec = SortKey {
            expr: Expr::col(0),
            descending: false,
            nulls_first: false,
        };
        let one = || Expr::lit(1);
        let rows = Frames::new(
            &frame(
                FrameUnits::Rows,
                FrameBound::Preceding(one()),
                FrameBound::Following(one()),
            ),
            &[],
            &layout,
            None,
        )
        .unwrap();
        assert_eq!(
            all_bounds(&rows, 6),
            [(0, 2), (0, 3), (1, 4), (2, 5), (3, 6), (4, 6)]
        );
        let groups = Frames::new(
            &frame(
                FrameUnits::Groups,
                FrameBound::Preceding(one()),
                FrameBound::CurrentRow,
            ),
            &[],
            &layout,
            None,
        )
        .unwrap();
        assert_eq!(
            all_bounds(&groups, 6),
            [(0, 2), (0, 2), (0, 3), (2, 5), (2, 5), (3, 6)]
        );
        let range = Frames::new(
            &frame(
                FrameUnits::Range,
                FrameBound::Preceding(one()),
                FrameBound::Following(one()),
            ),
            &[],
            &layout,
            Some((&key, &spec)),
        )
        .unwrap();
        assert_eq!(
            all_bounds(&range, 6),
            [(0, 3), (0, 3), (0, 3), (3, 6), (3, 6), (3, 6)]
        );
        // The default frame: up to the last peer.
        let default = Frames::new(&WindowFrame::default(), &[], &layout, None).unwrap();
        assert_eq!(
            all_bounds(&default, 6),
            [(0, 2), (0, 2), (0, 3), (0, 5), (0, 5), (0, 6)]
        );
        assert!(default.is_running());
    }

    #[test]
    fn exclusion_cuts_holes() {
        let key = Column::from_i64(vec![1, 2, 2, 2, 3]);
        let layout = Layout::new(&[], &[&key], 5);
        let mut f = frame(
            FrameUnits::Rows,
            FrameBound::UnboundedPreceding,
            FrameBound::UnboundedFollowing,
        );
        let segs = |f: &WindowFrame, i: usize| {
            let frames = Frames::new(f, &[], &layout, None).unwrap();
            frames.segments(i, &layout).ranges().collect::<Vec<_>>()
        };
        f.exclude = FrameExclude::CurrentRow;
        assert_eq!(segs(&f, 2), [(0, 2), (3, 5)]);
        f.exclude = FrameExclude::Group;
        assert_eq!(segs(&f, 2), [(0, 1), (4, 5)]);
        f.exclude = FrameExclude::Ties;
        assert_eq!(segs(&f, 2), [(0, 1), (2, 3), (4, 5)]);
        assert_eq!(segs(&f, 0), [(0, 5)]);
    }

    #[test]
    fn offsets_are_checked_and_range_keys_may_be_null_or_descending() {
        let layout = Layout::new(&[], &[], 2);
        let negative = frame(
            FrameUnits::Rows,
            FrameBound::Preceding(Expr::lit(-1)),
            FrameBound::CurrentRow,
        );
        let err = Frames::new(&negative, &[], &layout, None).unwrap_err();
        assert!(err.to_string().contains("must not be negative"), "{err}");
        let null = frame(
            FrameUnits::Rows,
            FrameBound::CurrentRow,
            FrameBound::Following(Expr::Param(0)),
        );
        let err = Frames::new(&null, &[Value::Null], &layout, None).unwrap_err();
        assert!(
            err.to_string().contains("ending offset must not be null"),
            "{err}"
        );
        // DESC with NULLs first: keys NULL NULL 9 7 6 2.
        let key = Column::from_values(
            DataType::Int64,
            &[
                Value::Null,
                Value::Null,
                9.into(),
                7.into(),
                6.into(),
                2.into(),
            ],
        )
        .unwrap();
        let layout = Layout::new(&[], &[&key], 6);
        let spec = SortKey {
            expr: Expr::col(0),
            descending: true,
            nulls_first: true,
        };
        let range = Frames::new(
            &frame(
                FrameUnits::Range,
                FrameBound::Preceding(Expr::lit(2)),
                FrameBound::CurrentRow,
            ),
            &[],
            &layout,
            Some((&key, &spec)),
        )
        .unwrap();
        assert_eq!(
            all_bounds(&range, 6),
            [(0, 2), (0, 2), (2, 3), (2, 4), (3, 5), (5, 6)]
        );
    }
}
