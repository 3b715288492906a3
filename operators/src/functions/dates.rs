//! Dates and times made from numbers, as PostgreSQL makes them: `make_date(year, month,
//! day)`, `make_timestamp(year, month, day, hour, minute, seconds)` and `to_timestamp(epoch
//! seconds)` (a TIMESTAMP in UTC: weir has no time zones). A field out of range is an error
//! naming it, as PostgreSQL's.

use super::catalogue::ScalarFunc;
use super::support::{all_valid, type_err};
use crate::column::{Column, ColumnBuilder};
use crate::error::{Error, Result};
use crate::temporal;
use crate::types::DataType;
use chrono::{NaiveDate, NaiveDateTime, NaiveTime};

/// The date of `year`, `month`, `day` (years from 1), or the error naming it.
fn date(year: i64, month: i64, day: i64) -> Result<NaiveDate> {
    let out_of_range = || {
        Error::Arithmetic(format!(
            "date field value out of range: {year}-{month:02}-{day:02}"
        ))
    };
    if year < 1 {
        return Err(out_of_range());
    }
    let (Ok(y), Ok(m), Ok(d)) = (
        i32::try_from(year),
        u32::try_from(month),
        u32::try_from(day),
    ) else {
        return Err(out_of_range());
    };
    NaiveDate::from_ymd_opt(y, m, d).ok_or_else(out_of_range)
}

/// The time of `hour`, `minute` and `seconds` (with a fraction, to the microsecond).
fn time(hour: i64, minute: i64, seconds: f64) -> Result<NaiveTime> {
    let out_of_range = || {
        Error::Arithmetic(format!(
            "time field value out of range: {hour}:{minute:02}:{seconds:02}"
        ))
    };
    if !(0.0..60.0).contains(&seconds) {
        return Err(out_of_range());
    }
    let micros = (seconds * 1e6).round() as u32;
    let (Ok(h), Ok(m)) = (u32::try_from(hour), u32::try_from(minute)) else {
        return Err(out_of_range());
    };
    NaiveTime::from_hms_micro_opt(h, m, micros / 1_000_000, micros % 1_000_000)
        .ok_or_else(out_of_range)
}

/// The TIMESTAMP `seconds` after 1970-01-01 00:00:00, to the microsecond.
fn from_epoch(seconds: f64) -> Result<i64> {
    if seconds.is_nan() {
        return Err(Error::Arithmetic("timestamp cannot be NaN".into()));
    }
    let micros = (seconds * 1e6).round();
    // Within what a TIMESTAMP prints and reads back (years 1 to 9999, as `date` allows).
    let (low, high) = (-62_135_596_800e6, 253_402_300_800e6);
    if !(low..high).contains(&micros) {
        return Err(Error::Overflow(format!(
            "timestamp out of range: \"{seconds}\""
        )));
    }
    Ok(micros as i64)
}

/// Evaluates one of this module's functions over `args` (types checked by the planner) of
/// `n` rows each.
pub(super) fn call(func: ScalarFunc, args: &[Column], n: usize) -> Result<Column> {
    use ScalarFunc as F;
    let ints = |k: usize| args[k].as_i64().ok_or_else(|| type_err(func, args));
    match func {
        F::MakeDate => {
            let (y, m, d) = (ints(0)?, ints(1)?, ints(2)?);
            let mut b = ColumnBuilder::new(DataType::Date, n);
            for i in 0..n {
                if !all_valid(args, i) {
                    b.push_null();
                    continue;
                }
                let day = date(y[i], m[i], d[i])?;
                b.push_date(temporal::from_date(day).ok_or_else(|| type_err(func, args))?);
            }
            Ok(b.finish())
        }
        F::MakeTimestamp => {
            let (y, mo, d, h, mi) = (ints(0)?, ints(1)?, ints(2)?, ints(3)?, ints(4)?);
            let s = args[5].as_f64().ok_or_else(|| type_err(func, args))?;
            let mut b = ColumnBuilder::new(DataType::Timestamp, n);
            for i in 0..n {
                if !all_valid(args, i) {
                    b.push_null();
                    continue;
                }
                let at = NaiveDateTime::new(date(y[i], mo[i], d[i])?, time(h[i], mi[i], s[i])?);
                b.push_timestamp(temporal::from_datetime(at));
            }
            Ok(b.finish())
        }
        F::ToTimestamp => {
            let s = args[0].as_f64().ok_or_else(|| type_err(func, args))?;
            let mut b = ColumnBuilder::new(DataType::Timestamp, n);
            for (i, &x) in s.iter().enumerate() {
                if args[0].is_valid(i) {
                    b.push_timestamp(from_epoch(x)?);
                } else {
                    b.push_null();
                }
            }
            Ok(b.finish())
        }
        _ => Err(Error::Internal(format!(
            "{} is not a function of dates",
            func.name()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_times_out_of_range_are_errors_naming_the_fields() {
        assert_eq!(date(2024, 2, 29).unwrap().to_string(), "2024-02-29");
        let e = date(2023, 2, 29).unwrap_err().to_string();
        assert!(
            e.contains("date field value out of range: 2023-02-29"),
            "{e}"
        );
        assert!(date(0, 1, 1).is_err());
        assert!(date(2024, 13, 1).is_err());
        assert!(date(i64::MAX, 1, 1).is_err());
        assert_eq!(time(23, 59, 59.5).unwrap().to_string(), "23:59:59.500");
        assert!(time(24, 0, 0.0).is_err());
        assert!(time(1, 0, 60.0).is_err());
        assert!(time(1, -1, 0.0).is_err());
    }

    #[test]
    fn epoch_seconds_become_microseconds_within_the_printable_years() {
        assert_eq!(from_epoch(0.0).unwrap(), 0);
        assert_eq!(from_epoch(1.5).unwrap(), 1_500_000);
        assert_eq!(from_epoch(-1.0).unwrap(), -1_000_000);
        assert!(from_epoch(f64::NAN).is_err());
        assert!(from_epoch(f64::INFINITY).is_err());
        assert!(from_epoch(1e15).is_err());
    }
}
