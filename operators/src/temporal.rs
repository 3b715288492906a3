//! Calendar helpers behind `DATE` and `TIMESTAMP`, on top of `chrono`.
//!
//! A DATE is an `i32` count of days since 1970-01-01 and a TIMESTAMP an `i64` count of
//! microseconds since 1970-01-01 00:00:00 (no time zone). Parsing, formatting, month
//! arithmetic (clamped to the month's end, as PostgreSQL), `EXTRACT` and `date_trunc` all go
//! through `chrono`'s proleptic Gregorian calendar; nothing here does calendar math by hand.

use chrono::{Datelike, Months, NaiveDate, NaiveDateTime, NaiveTime, TimeDelta, Timelike};
use serde::{Deserialize, Serialize};

/// Microseconds in a day.
pub const MICROS_PER_DAY: i64 = 86_400_000_000;

fn epoch() -> NaiveDate {
    NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default()
}

/// The date of a day number.
pub fn to_date(days: i32) -> Option<NaiveDate> {
    epoch().checked_add_signed(TimeDelta::try_days(i64::from(days))?)
}

/// The day number of a date.
pub fn from_date(d: NaiveDate) -> Option<i32> {
    i32::try_from(d.signed_duration_since(epoch()).num_days()).ok()
}

/// The date and time of a timestamp.
pub fn to_datetime(micros: i64) -> Option<NaiveDateTime> {
    chrono::DateTime::from_timestamp_micros(micros).map(|t| t.naive_utc())
}

/// The timestamp of a date and time.
pub fn from_datetime(t: NaiveDateTime) -> i64 {
    t.and_utc().timestamp_micros()
}

/// Parses `YYYY-MM-DD` (surrounding spaces ignored) to a day number.
pub fn parse_date(text: &str) -> Option<i32> {
    let d = NaiveDate::parse_from_str(text.trim(), "%Y-%m-%d").ok()?;
    from_date(d)
}

/// Parses `YYYY-MM-DD[ HH:MM[:SS[.ffffff]]]` (a `T` may separate date and time) to a
/// timestamp.
pub fn parse_timestamp(text: &str) -> Option<i64> {
    let t = text.trim();
    for f in [
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M",
    ] {
        if let Ok(dt) = NaiveDateTime::parse_from_str(t, f) {
            return Some(from_datetime(dt));
        }
    }
    let d = NaiveDate::parse_from_str(t, "%Y-%m-%d").ok()?;
    Some(from_datetime(d.and_time(NaiveTime::MIN)))
}

/// Formats a day number as `YYYY-MM-DD`.
pub fn format_date(days: i32) -> String {
    match to_date(days) {
        Some(d) => d.format("%Y-%m-%d").to_string(),
        None => format!("<date {days}>"),
    }
}

/// Formats a timestamp as `YYYY-MM-DD HH:MM:SS`, with `.ffffff` when it has microseconds.
pub fn format_timestamp(micros: i64) -> String {
    match to_datetime(micros) {
        Some(t) if t.nanosecond() == 0 => t.format("%Y-%m-%d %H:%M:%S").to_string(),
        Some(t) => t.format("%Y-%m-%d %H:%M:%S%.6f").to_string(),
        None => format!("<timestamp {micros}>"),
    }
}

/// The clock's time now, in microseconds since 1970-01-01 00:00:00 UTC (weir's TIMESTAMP
/// has no time zone: the clock is read in UTC); 0 for a clock set before 1970.
pub fn now_micros() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

/// The timestamp at midnight of a day number (saturating: a day number beyond the calendar,
/// which no SQL produces but a loaded batch may hold, never overflows).
pub fn date_to_timestamp(days: i32) -> i64 {
    i64::from(days).saturating_mul(MICROS_PER_DAY)
}

/// The day number of a timestamp's date (the time of day dropped).
pub fn timestamp_to_date(micros: i64) -> Option<i32> {
    i32::try_from(micros.div_euclid(MICROS_PER_DAY)).ok()
}

/// Adds `months` (negative subtracts) to a date; a day past the new month's end becomes its
/// last day (`2024-01-31` + 1 month is `2024-02-29`). `None` out of range.
pub fn add_months(d: NaiveDate, months: i64) -> Option<NaiveDate> {
    let m = Months::new(u32::try_from(months.unsigned_abs()).ok()?);
    if months >= 0 {
        d.checked_add_months(m)
    } else {
        d.checked_sub_months(m)
    }
}

/// A day number plus an interval of `months`, `days` and `micros`, as a timestamp.
pub fn add_interval_ts(micros: i64, months: i64, days: i64, extra: i64) -> Option<i64> {
    let t = to_datetime(micros)?;
    let t = if months == 0 {
        t
    } else {
        add_months(t.date(), months)?.and_time(t.time())
    };
    let t = t.checked_add_signed(TimeDelta::try_days(days)?)?;
    let t = t.checked_add_signed(TimeDelta::microseconds(extra))?;
    Some(from_datetime(t))
}

/// A day number plus `months` and `days`.
pub fn add_interval_date(days: i32, months: i64, plus_days: i64) -> Option<i32> {
    let d = to_date(days)?;
    let d = if months == 0 {
        d
    } else {
        add_months(d, months)?
    };
    from_date(d.checked_add_signed(TimeDelta::try_days(plus_days)?)?)
}

/// A field of a date or time, for `EXTRACT(field FROM x)` and `date_trunc('field', x)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DatePart {
    /// The year.
    Year,
    /// 1 to 4.
    Quarter,
    /// 1 to 12.
    Month,
    /// ISO week of the year (1 to 53); `date_trunc` goes back to Monday.
    Week,
    /// Day of the month, 1 to 31.
    Day,
    /// Day of the week, Sunday 0 to Saturday 6 (as PostgreSQL).
    Dow,
    /// Day of the year, 1 to 366.
    Doy,
    /// 0 to 23.
    Hour,
    /// 0 to 59.
    Minute,
    /// 0 to 59 (whole seconds; EXTRACT of a TIMESTAMP keeps the fraction, as `Epoch`).
    Second,
    /// Seconds since 1970-01-01 00:00:00, whole (rounded down: EXTRACT of a TIMESTAMP binds
    /// `ScalarFunc::ExtractSeconds` for the fraction); a DATE counts from its midnight.
    Epoch,
    /// Day of the week, Monday 1 to Sunday 7 (ISO 8601).
    IsoDow,
    /// The ISO 8601 week-numbering year (the days of a week belong to the year of its
    /// Thursday).
    IsoYear,
    /// The decade: the year divided by 10, rounded down.
    Decade,
    /// The century: 20 for 1901 to 2000, 21 from 2001 (negative before year 1).
    Century,
    /// The millennium: 2 for 1001 to 2000, 3 from 2001.
    Millennium,
    /// The seconds field with its fraction, in milliseconds (0 to 59,999).
    Millisecond,
    /// The seconds field with its fraction, in microseconds (0 to 59,999,999).
    Microsecond,
}

impl DatePart {
    /// The part a name stands for (case-insensitive; plurals accepted).
    pub fn from_name(name: &str) -> Option<DatePart> {
        Some(match name.trim().to_ascii_lowercase().as_str() {
            "year" | "years" => DatePart::Year,
            "quarter" | "quarters" => DatePart::Quarter,
            "month" | "months" => DatePart::Month,
            "week" | "weeks" => DatePart::Week,
            "day" | "days" => DatePart::Day,
            "dow" | "dayofweek" => DatePart::Dow,
            "doy" | "dayofyear" => DatePart::Doy,
            "hour" | "hours" => DatePart::Hour,
            "minute" | "minutes" => DatePart::Minute,
            "second" | "seconds" => DatePart::Second,
            "epoch" => DatePart::Epoch,
            "isodow" => DatePart::IsoDow,
            "isoyear" => DatePart::IsoYear,
            "decade" | "decades" => DatePart::Decade,
            "century" | "centuries" => DatePart::Century,
            "millennium" | "millennia" | "millenniums" => DatePart::Millennium,
            "millisecond" | "milliseconds" => DatePart::Millisecond,
            "microsecond" | "microseconds" => DatePart::Microsecond,
            _ => return None,
        })
    }

    /// The SQL name.
    pub fn name(self) -> &'static str {
        match self {
            DatePart::Year => "year",
            DatePart::Quarter => "quarter",
            DatePart::Month => "month",
            DatePart::Week => "week",
            DatePart::Day => "day",
            DatePart::Dow => "dow",
            DatePart::Doy => "doy",
            DatePart::Hour => "hour",
            DatePart::Minute => "minute",
            DatePart::Second => "second",
            DatePart::Epoch => "epoch",
            DatePart::IsoDow => "isodow",
            DatePart::IsoYear => "isoyear",
            DatePart::Decade => "decade",
            DatePart::Century => "century",
            DatePart::Millennium => "millennium",
            DatePart::Millisecond => "millisecond",
            DatePart::Microsecond => "microsecond",
        }
    }

    /// Whether `date_trunc` takes the part: a unit of time, not a position in one (DOW, DOY,
    /// ISODOW) or a count (EPOCH, ISOYEAR).
    pub fn is_unit(self) -> bool {
        !matches!(
            self,
            DatePart::Dow | DatePart::Doy | DatePart::IsoDow | DatePart::IsoYear | DatePart::Epoch
        )
    }
}

/// The first year of the period of `years` years (a century, a millennium) holding `year`,
/// counted as PostgreSQL does: periods start at years ending in 1 (2001, not 2000).
fn period_start(year: i32, years: i32) -> i32 {
    (year - 1).div_euclid(years) * years + 1
}

/// `EXTRACT(part FROM t)` of a date and time.
pub fn extract(part: DatePart, t: NaiveDateTime) -> i64 {
    let d = t.date();
    i64::from(match part {
        DatePart::Year => return i64::from(d.year()),
        DatePart::Quarter => d.month0() / 3 + 1,
        DatePart::Month => d.month(),
        DatePart::Week => d.iso_week().week(),
        DatePart::Day => d.day(),
        DatePart::Dow => d.weekday().num_days_from_sunday(),
        DatePart::Doy => d.ordinal(),
        DatePart::Hour => t.hour(),
        DatePart::Minute => t.minute(),
        DatePart::Second => t.second(),
        DatePart::Epoch => return t.and_utc().timestamp(),
        DatePart::IsoDow => d.weekday().number_from_monday(),
        DatePart::IsoYear => return i64::from(d.iso_week().year()),
        DatePart::Decade => return i64::from(d.year().div_euclid(10)),
        // Year 0 is 1 BC: the first century before Christ is -1.
        DatePart::Century if d.year() <= 0 => return -i64::from((100 - d.year()) / 100),
        DatePart::Century => return i64::from((d.year() + 99) / 100),
        DatePart::Millennium if d.year() <= 0 => return -i64::from((1000 - d.year()) / 1000),
        DatePart::Millennium => return i64::from((d.year() + 999) / 1000),
        DatePart::Millisecond => t.second() * 1000 + t.nanosecond() / 1_000_000,
        DatePart::Microsecond => t.second() * 1_000_000 + t.nanosecond() / 1000,
    })
}

/// `date_trunc(part, t)`: the start of the year, quarter, month, ISO week (Monday), day,
/// hour, minute or second containing `t`. `None` for DOW and DOY, which are not units.
pub fn trunc(part: DatePart, t: NaiveDateTime) -> Option<NaiveDateTime> {
    let d = t.date();
    let day = |d: NaiveDate| Some(d.and_time(NaiveTime::MIN));
    match part {
        DatePart::Year => day(NaiveDate::from_ymd_opt(d.year(), 1, 1)?),
        DatePart::Quarter => day(NaiveDate::from_ymd_opt(
            d.year(),
            d.month0() / 3 * 3 + 1,
            1,
        )?),
        DatePart::Month => day(d.with_day(1)?),
        DatePart::Week => {
            let back = TimeDelta::try_days(i64::from(d.weekday().num_days_from_monday()))?;
            day(d.checked_sub_signed(back)?)
        }
        DatePart::Day => day(d),
        DatePart::Hour => Some(d.and_hms_opt(t.hour(), 0, 0)?),
        DatePart::Minute => Some(d.and_hms_opt(t.hour(), t.minute(), 0)?),
        DatePart::Second => Some(d.and_hms_opt(t.hour(), t.minute(), t.second())?),
        DatePart::Decade => day(NaiveDate::from_ymd_opt(d.year().div_euclid(10) * 10, 1, 1)?),
        DatePart::Century => day(NaiveDate::from_ymd_opt(period_start(d.year(), 100), 1, 1)?),
        DatePart::Millennium => day(NaiveDate::from_ymd_opt(period_start(d.year(), 1000), 1, 1)?),
        DatePart::Millisecond => {
            let ms = t.nanosecond() / 1_000_000;
            Some(d.and_hms_milli_opt(t.hour(), t.minute(), t.second(), ms)?)
        }
        DatePart::Microsecond => Some(t),
        DatePart::Dow | DatePart::Doy | DatePart::IsoDow | DatePart::IsoYear | DatePart::Epoch => {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> i32 {
        parse_date(s).unwrap_or(i32::MIN)
    }

    #[test]
    fn dates_round_trip() {
        assert_eq!(d("1970-01-01"), 0);
        assert_eq!(d("1969-12-31"), -1);
        assert_eq!(format_date(d("1998-12-01")), "1998-12-01");
        assert_eq!(parse_date("1998-02-30"), None);
        assert_eq!(parse_date("not a date"), None);
        assert_eq!(parse_date("1998-12-01 10:00"), None);
    }

    #[test]
    fn timestamps_round_trip() {
        let t = parse_timestamp("1998-12-01 10:00:00").unwrap_or_default();
        assert_eq!(format_timestamp(t), "1998-12-01 10:00:00");
        let t = parse_timestamp("1998-12-01T10:00:00.25").unwrap_or_default();
        assert_eq!(format_timestamp(t), "1998-12-01 10:00:00.250000");
        assert_eq!(
            parse_timestamp("1998-12-01"),
            Some(date_to_timestamp(d("1998-12-01")))
        );
        assert_eq!(
            timestamp_to_date(-1),
            Some(-1),
            "before the epoch rounds down"
        );
        assert_eq!(parse_timestamp("1998-12-01 25:00:00"), None);
    }

    #[test]
    fn month_arithmetic_clamps_to_the_month_end() {
        let f = |s: &str, m: i64| add_interval_date(d(s), m, 0).map(format_date);
        assert_eq!(
            f("2024-01-31", 1).as_deref(),
            Some("2024-02-29"),
            "leap year"
        );
        assert_eq!(f("2023-01-31", 1).as_deref(), Some("2023-02-28"));
        assert_eq!(f("2024-02-29", 12).as_deref(), Some("2025-02-28"));
        assert_eq!(f("2024-03-31", -1).as_deref(), Some("2024-02-29"));
        assert_eq!(f("1994-01-01", 3).as_deref(), Some("1994-04-01"));
        assert_eq!(
            add_interval_date(d("1998-12-01"), 0, -90).map(format_date),
            Some("1998-09-02".to_string())
        );
        assert_eq!(add_interval_date(i32::MAX, 0, 1), None);
        let t = parse_timestamp("2024-01-31 12:30:00").unwrap_or_default();
        let u = add_interval_ts(t, 1, 1, 3_600_000_000).map(format_timestamp);
        assert_eq!(u.as_deref(), Some("2024-03-01 13:30:00"));
    }

    #[test]
    fn extract_and_trunc() {
        let t = to_datetime(parse_timestamp("2024-05-19 13:45:59").unwrap_or_default());
        let t = t.unwrap_or_default();
        assert_eq!(extract(DatePart::Year, t), 2024);
        assert_eq!(extract(DatePart::Quarter, t), 2);
        assert_eq!(extract(DatePart::Month, t), 5);
        assert_eq!(extract(DatePart::Day, t), 19);
        assert_eq!(extract(DatePart::Dow, t), 0, "a Sunday");
        assert_eq!(extract(DatePart::Doy, t), 31 + 29 + 31 + 30 + 19);
        assert_eq!(extract(DatePart::Hour, t), 13);
        assert_eq!(extract(DatePart::Minute, t), 45);
        assert_eq!(extract(DatePart::Second, t), 59);
        let f = |p| trunc(p, t).map(from_datetime).map(format_timestamp);
        assert_eq!(f(DatePart::Year).as_deref(), Some("2024-01-01 00:00:00"));
        assert_eq!(f(DatePart::Quarter).as_deref(), Some("2024-04-01 00:00:00"));
        assert_eq!(f(DatePart::Month).as_deref(), Some("2024-05-01 00:00:00"));
        assert_eq!(f(DatePart::Week).as_deref(), Some("2024-05-13 00:00:00"));
        assert_eq!(f(DatePart::Day).as_deref(), Some("2024-05-19 00:00:00"));
        assert_eq!(f(DatePart::Hour).as_deref(), Some("2024-05-19 13:00:00"));
        assert_eq!(f(DatePart::Dow), None);
        assert_eq!(DatePart::from_name("QUARTER"), Some(DatePart::Quarter));
        let u = to_datetime(parse_timestamp("2001-01-07 00:00:10.25").unwrap_or_default());
        let u = u.unwrap_or_default();
        assert_eq!(extract(DatePart::Epoch, u), 978_825_610);
        assert_eq!(extract(DatePart::IsoDow, u), 7, "a Sunday");
        assert_eq!(extract(DatePart::Dow, u), 0);
        assert_eq!(extract(DatePart::Century, u), 21);
        assert_eq!(extract(DatePart::Millennium, u), 3);
        assert_eq!(extract(DatePart::Decade, u), 200);
        assert_eq!(extract(DatePart::Millisecond, u), 10_250);
        assert_eq!(extract(DatePart::Microsecond, u), 10_250_000);
        // 2001-01-01 is a Monday: ISO year 2001; 2000-01-01 belongs to 1999's last week.
        assert_eq!(extract(DatePart::IsoYear, u), 2001);
        let y2k =
            to_datetime(parse_timestamp("2000-01-01").unwrap_or_default()).unwrap_or_default();
        assert_eq!(extract(DatePart::IsoYear, y2k), 1999);
        assert_eq!(extract(DatePart::Century, y2k), 20);
        assert_eq!(extract(DatePart::Millennium, y2k), 2);
        let before = to_datetime(parse_timestamp("1969-12-31 23:59:59.5").unwrap_or_default());
        assert_eq!(extract(DatePart::Epoch, before.unwrap_or_default()), -1);
        let g = |p| trunc(p, u).map(from_datetime).map(format_timestamp);
        assert_eq!(g(DatePart::Century).as_deref(), Some("2001-01-01 00:00:00"));
        assert_eq!(g(DatePart::Decade).as_deref(), Some("2000-01-01 00:00:00"));
        assert_eq!(
            g(DatePart::Millisecond).as_deref(),
            Some("2001-01-07 00:00:10.250000")
        );
        assert_eq!(g(DatePart::Epoch), None);
        // Year 0 is 1 BC, in the first century and millennium before Christ.
        let bc = NaiveDate::from_ymd_opt(0, 6, 1)
            .unwrap_or_default()
            .and_time(NaiveTime::MIN);
        assert_eq!(extract(DatePart::Century, bc), -1);
        assert_eq!(extract(DatePart::Millennium, bc), -1);
        assert_eq!(DatePart::from_name("fortnight"), None);
    }
}
