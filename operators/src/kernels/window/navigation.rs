//! The navigation functions: LAG and LEAD (a row at an offset within the partition, or a
//! default), FIRST_VALUE, LAST_VALUE and NTH_VALUE (a row of the frame). Each picks a row
//! per row; the result is gathered in runs (LAG and LEAD with a constant offset copy whole
//! slices) or in one typed pass.

use super::cells::{take_or_null, NONE};
use super::frame::Frames;
use super::layout::Layout;
use crate::bitmap::Bitmap;
use crate::column::ColumnData;
use crate::{Column, Error, Result};

/// `LAG` (`lead` false) or `LEAD` of `value` by `offset` (a BIGINT per row; NULL gives NULL,
/// a negative offset looks the other way) within each partition, `default` (of `value`'s
/// type) where the row at the offset is outside the partition.
pub(crate) fn lag_lead(
    layout: &Layout,
    value: &Column,
    offset: &Column,
    default: &Column,
    lead: bool,
) -> Result<Column> {
    let n = layout.rows();
    let ColumnData::Int64(offsets) = &offset.data else {
        return Err(Error::Type(format!(
            "the offset of LAG and LEAD must be a BIGINT, got {}",
            offset.data_type()
        )));
    };
    // Runs of (source, first row, rows): source 0 is `value`, 1 is `default`.
    let mut runs: Vec<(usize, usize, usize)> = Vec::new();
    let mut push = |src: usize, row: usize| match runs.last_mut() {
        Some((s, start, len)) if *s == src && *start + *len == row => *len += 1,
        _ => runs.push((src, row, 1)),
    };
    let mut null_offsets: Option<Bitmap> = None;
    for (ps, pe) in layout.partitions() {
        for (i, &off) in offsets.iter().enumerate().take(pe).skip(ps) {
            if offset.is_null(i) {
                null_offsets
                    .get_or_insert_with(|| Bitmap::new(n, true))
                    .set(i, false);
                push(1, i);
                continue;
            }
            let at = if lead {
                i as i128 + i128::from(off)
            } else {
                i as i128 - i128::from(off)
            };
            if (ps as i128..pe as i128).contains(&at) {
                push(0, at as usize);
            } else {
                push(1, i);
            }
        }
    }
    let out = Column::gather_runs(&[value, default], &runs, n);
    Ok(match null_offsets {
        None => out,
        Some(valid) => {
            let validity = match &out.validity {
                Some(v) => v.and(&valid),
                None => valid,
            };
            Column::with_validity(out.data, Some(validity))
        }
    })
}

/// `FIRST_VALUE` of `value` over each row's frame (NULL for an empty frame).
pub(crate) fn first_value(layout: &Layout, frames: &Frames, value: &Column) -> Column {
    let rows: Vec<u32> = (0..layout.rows())
        .map(|i| frames.segments(i, layout).nth(0).map_or(NONE, |r| r as u32))
        .collect();
    take_or_null(value, &rows)
}

/// `LAST_VALUE` of `value` over each row's frame.
pub(crate) fn last_value(layout: &Layout, frames: &Frames, value: &Column) -> Column {
    let rows: Vec<u32> = (0..layout.rows())
        .map(|i| frames.segments(i, layout).last().map_or(NONE, |r| r as u32))
        .collect();
    take_or_null(value, &rows)
}

/// `NTH_VALUE` of `value` at each row's frame's `nth[i]`th row (a BIGINT from 1; NULL gives
/// NULL, below 1 is an error).
pub(crate) fn nth_value(
    layout: &Layout,
    frames: &Frames,
    value: &Column,
    nth: &Column,
) -> Result<Column> {
    let ColumnData::Int64(ks) = &nth.data else {
        return Err(Error::Type(format!(
            "the position of NTH_VALUE must be a BIGINT, got {}",
            nth.data_type()
        )));
    };
    let mut rows = Vec::with_capacity(layout.rows());
    for (i, &k) in ks.iter().enumerate().take(layout.rows()) {
        if nth.is_null(i) {
            rows.push(NONE);
            continue;
        }
        if k <= 0 {
            return Err(Error::Arithmetic(
                "argument of nth_value must be greater than zero".into(),
            ));
        }
        let picked = usize::try_from(k - 1)
            .ok()
            .and_then(|k| frames.segments(i, layout).nth(k));
        rows.push(picked.map_or(NONE, |r| r as u32));
    }
    Ok(take_or_null(value, &rows))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{FrameBound, FrameExclude, FrameUnits, WindowFrame};
    use crate::{DataType, Expr, Value};

    fn values(c: &Column) -> Vec<Value> {
        (0..c.len()).map(|i| c.value(i)).collect()
    }

    #[test]
    fn lag_and_lead_stay_in_their_partition() {
        let p = Column::from_i64(vec![1, 1, 1, 2, 2]);
        let l = Layout::new(&[&p], &[], 5);
        let v = Column::from_strs(&["a", "b", "c", "d", "e"]);
        let one = Column::from_i64(vec![1; 5]);
        let dflt = Column::from_values(DataType::Utf8, &vec![Value::Null; 5]).unwrap();
        let lag = lag_lead(&l, &v, &one, &dflt, false).unwrap();
        assert_eq!(
            values(&lag),
            [Value::Null, "a".into(), "b".into(), Value::Null, "d".into()]
        );
        let dflt = Column::from_strs(&["x", "y", "z", "u", "w"]);
        let two = Column::from_values(
            DataType::Int64,
            &[2.into(), 2.into(), Value::Null, 2.into(), (-1).into()],
        )
        .unwrap();
        let lead = lag_lead(&l, &v, &two, &dflt, true).unwrap();
        assert_eq!(
            values(&lead),
            ["c".into(), "y".into(), Value::Null, "u".into(), "d".into()]
        );
    }

    #[test]
    fn value_functions_read_the_frame() {
        let l = Layout::new(&[], &[], 4);
        let f = WindowFrame {
            units: FrameUnits::Rows,
            start: FrameBound::Preceding(Expr::lit(1)),
            end: FrameBound::CurrentRow,
            exclude: FrameExclude::CurrentRow,
        };
        let frames = Frames::new(&f, &[], &l, None).unwrap();
        let v = Column::from_i64(vec![10, 20, 30, 40]);
        assert_eq!(
            values(&first_value(&l, &frames, &v)),
            [Value::Null, 10.into(), 20.into(), 30.into()]
        );
        assert_eq!(
            values(&last_value(&l, &frames, &v)),
            [Value::Null, 10.into(), 20.into(), 30.into()]
        );
        let whole = WindowFrame {
            units: FrameUnits::Rows,
            start: FrameBound::UnboundedPreceding,
            end: FrameBound::UnboundedFollowing,
            exclude: FrameExclude::NoOthers,
        };
        let frames = Frames::new(&whole, &[], &l, None).unwrap();
        let k = Column::from_i64(vec![1, 2, 4, 5]);
        assert_eq!(
            values(&nth_value(&l, &frames, &v, &k).unwrap()),
            [10.into(), 20.into(), 40.into(), Value::Null]
        );
        assert!(nth_value(&l, &frames, &v, &Column::from_i64(vec![0; 4])).is_err());
    }
}
