//! `to_date(text, template)` and `to_timestamp(text, template)`: a date or time read from
//! text by a PostgreSQL template, the fields of [`super::to_char`] read instead of written
//! (`to_date('15.03.2024', 'DD.MM.YYYY')`, `to_timestamp('2024-01-02 03:04 PM',
//! 'YYYY-MM-DD HH12:MI AM')`).
//!
//! As PostgreSQL reads them: spaces before a field are skipped; a character of literal text
//! in the template skips one character of the input (any but a digit, so `-` also matches
//! `/`); a number runs as far as its digits do, unless another field follows with nothing
//! between, when it takes exactly the field's width; month and day names match in any case;
//! the input may end early (the fields not read keep their defaults: January, the 1st,
//! midnight) and what follows the template's last field is ignored. `YY`, `YYY` and `Y` take
//! the year nearest 2020 (`99` is 1999, `24` is 2024), `DDD` a day of the year, `J` a Julian
//! day, `WW` and `W` the first day of a week of the year or month, `IYYY`, `IW` and `ID` an
//! ISO 8601 week date, `CC` the century of a two-digit year; `D`, `Q`, day names and `TZ`
//! past the input's end are read and ignored. A field out of range is PostgreSQL's error
//! (`date/time field value out of range: "2024-02-30"`). Unlike PostgreSQL's, a date with
//! no year is in year 1 (weir has no years before Christ).

use super::catalogue::ScalarFunc;
use super::support::{all_valid, s, type_err};
use super::to_char::{Field, Piece, Template, DAYS, JULIAN_EPOCH, KEYWORDS, MONTHS};
use crate::column::{Column, ColumnBuilder};
use crate::error::{Error, Result};
use crate::temporal;
use crate::types::DataType;
use chrono::{Datelike, Days, NaiveDate, NaiveDateTime, NaiveTime, Weekday};

/// `to_date(text, template)` (a DATE) or `to_timestamp(text, template)` (a TIMESTAMP) over
/// `n` rows; the template is read again only when it changes from one row to the next.
pub(super) fn call(func: ScalarFunc, args: &[Column], n: usize) -> Result<Column> {
    let (texts, templates) = (&args[0], &args[1]);
    if texts.data_type() != DataType::Utf8 || templates.data_type() != DataType::Utf8 {
        return Err(type_err(func, args));
    }
    let date_only = func == ScalarFunc::ToDate;
    let out_type = if date_only {
        DataType::Date
    } else {
        DataType::Timestamp
    };
    let mut out = ColumnBuilder::new(out_type, n);
    let mut last: Option<(&str, Template)> = None;
    for i in 0..n {
        if !all_valid(args, i) {
            out.push_null();
            continue;
        }
        let template = Template::reread(&mut last, s(templates, i));
        let at = read(s(texts, i), template)?;
        if date_only {
            let day = temporal::from_date(at.date()).ok_or_else(|| out_of_range(s(texts, i)))?;
            out.push_date(day);
        } else {
            out.push_timestamp(temporal::from_datetime(at));
        }
    }
    Ok(out.finish())
}

/// The fields read from one input, each `None` until read.
#[derive(Debug, Default)]
struct Fields {
    /// The year, and how many digits it was read from when a `YY`, `YYY` or `Y` field
    /// gave it (to be taken near 2020).
    year: Option<(i64, Option<usize>)>,
    century: Option<i64>,
    month: Option<i64>,
    day: Option<i64>,
    day_of_year: Option<i64>,
    week_of_year: Option<i64>,
    week_of_month: Option<i64>,
    julian: Option<i64>,
    iso_year: Option<i64>,
    iso_week: Option<i64>,
    iso_weekday: Option<i64>,
    /// The hour, and whether a 12-hour field (`HH`, `HH12`) gave it.
    hour: Option<(i64, bool)>,
    /// `Some(true)` after PM.
    pm: Option<bool>,
    minute: Option<i64>,
    second: Option<i64>,
    micros: i64,
}

/// The error PostgreSQL gives for a field out of range, naming the input.
fn out_of_range(input: &str) -> Error {
    Error::Arithmetic(format!("date/time field value out of range: \"{input}\""))
}

/// How a field is written in templates, for errors (the first of its spellings).
fn keyword(field: Field) -> &'static str {
    KEYWORDS
        .iter()
        .find(|(_, f)| *f == field)
        .map_or("?", |(k, _)| k)
}

/// The width of a numeric field: the digits it takes when another field follows it at once.
fn width(field: Field) -> usize {
    match field {
        Field::Year(w) => w as usize,
        Field::YearComma | Field::IsoYear => 4,
        Field::DayOfYear | Field::Millis => 3,
        Field::Micros => 6,
        Field::SecondsOfDay => 5,
        Field::Julian => 7,
        Field::Weekday | Field::IsoWeekday | Field::Quarter | Field::WeekOfMonth => 1,
        _ => 2,
    }
}

/// Reads `input` by `template` into a date and time.
fn read(input: &str, template: &Template) -> Result<NaiveDateTime> {
    let mut f = Fields::default();
    let mut rest = input;
    let pieces = &template.pieces;
    for (k, piece) in pieces.iter().enumerate() {
        match piece {
            Piece::Text(text) => {
                for c in text.chars() {
                    if c.is_whitespace() {
                        rest = rest.trim_start();
                    } else if let Some(next) = rest.chars().next().filter(|n| !n.is_ascii_digit()) {
                        rest = &rest[next.len_utf8()..];
                    }
                }
            }
            Piece::Field { field, fill, .. } => {
                rest = rest.trim_start();
                if rest.is_empty() {
                    break;
                }
                let exact = !fill && matches!(pieces.get(k + 1), Some(Piece::Field { .. }));
                rest = read_field(*field, exact, rest, &mut f)?;
            }
        }
    }
    assemble(&f, input)
}

/// Reads one field from the start of `rest` into `f`; returns what follows it.
fn read_field<'a>(field: Field, exact: bool, rest: &'a str, f: &mut Fields) -> Result<&'a str> {
    let name = keyword(field);
    match field {
        Field::MonthName { abbrev, .. } => {
            let (month, after) =
                name_in(&MONTHS, abbrev, rest).ok_or_else(|| not_allowed(rest, name))?;
            f.month = Some(month as i64 + 1);
            Ok(after)
        }
        Field::DayName { abbrev, .. } => {
            let (_, after) = name_in(&DAYS, abbrev, rest).ok_or_else(|| not_allowed(rest, name))?;
            Ok(after)
        }
        Field::Meridiem { dots, .. } => {
            let (am, pm) = if dots { ("A.M.", "P.M.") } else { ("AM", "PM") };
            let head = rest.get(..am.len()).unwrap_or(rest);
            if head.eq_ignore_ascii_case(am) || head.eq_ignore_ascii_case(pm) {
                f.pm = Some(head.eq_ignore_ascii_case(pm));
                Ok(&rest[am.len()..])
            } else {
                Err(not_allowed(rest, name))
            }
        }
        Field::TimeZone => Err(Error::Arithmetic(format!(
            "formatting field \"{name}\" is only supported in to_char"
        ))),
        Field::YearComma => {
            // `1,234`: digits, a comma, digits.
            let (thousands, after) = number(rest, 1, false, name)?;
            let after = after.strip_prefix(',').unwrap_or(after);
            let (units, after) = number(after, 3, true, name)?;
            f.year = Some((thousands * 1000 + units, None));
            Ok(after)
        }
        _ => {
            let (value, digits, after) = digits(rest, width(field), exact, name)?;
            match field {
                Field::Year(w) if w < 4 => f.year = Some((value, Some(digits))),
                Field::Year(_) => f.year = Some((value, None)),
                Field::IsoYear => f.iso_year = Some(value),
                Field::Century => f.century = Some(value),
                Field::Month => f.month = Some(value),
                Field::Day => f.day = Some(value),
                Field::DayOfYear => f.day_of_year = Some(value),
                Field::WeekOfYear => f.week_of_year = Some(value),
                Field::WeekOfMonth => f.week_of_month = Some(value),
                Field::IsoWeek => f.iso_week = Some(value),
                Field::IsoWeekday => f.iso_weekday = Some(value),
                Field::Julian => f.julian = Some(value),
                Field::Hour12 => f.hour = Some((value, true)),
                Field::Hour24 => f.hour = Some((value, false)),
                Field::Minute => f.minute = Some(value),
                Field::Second => f.second = Some(value),
                // A fraction: `.5` is 500 milliseconds, as PostgreSQL reads it.
                Field::Millis => f.micros += value * 10i64.pow(3 - digits.min(3) as u32) * 1000,
                Field::Micros => f.micros += value * 10i64.pow(6 - digits.min(6) as u32),
                Field::SecondsOfDay => {
                    f.hour = Some((value / 3600, false));
                    f.minute = Some(value / 60 % 60);
                    f.second = Some(value % 60);
                }
                // Read and ignored, as PostgreSQL does.
                _ => {}
            }
            Ok(after)
        }
    }
}

/// A number of `width` digits exactly (`exact`) or of as many as follow (at most 9), with
/// how many digits it had and what follows it.
fn digits<'a>(
    rest: &'a str,
    width: usize,
    exact: bool,
    name: &str,
) -> Result<(i64, usize, &'a str)> {
    let run = rest.bytes().take_while(u8::is_ascii_digit).count();
    let shown = || rest.chars().take(width.max(1)).collect::<String>();
    if run == 0 {
        return Err(Error::Arithmetic(format!(
            "invalid value \"{}\" for \"{name}\": the value must be an integer",
            shown()
        )));
    }
    let take = if exact { width } else { run.min(9) };
    if run < take {
        return Err(Error::Arithmetic(format!(
            "invalid value \"{}\" for \"{name}\": the field requires {width} characters, but \
             only {run} could be parsed",
            shown()
        )));
    }
    let value = rest[..take]
        .parse()
        .map_err(|_| Error::Arithmetic(format!("invalid value \"{}\" for \"{name}\"", shown())))?;
    Ok((value, take, &rest[take..]))
}

/// [`digits`] for the parts of `Y,YYY`, without the count.
fn number<'a>(rest: &'a str, width: usize, exact: bool, name: &str) -> Result<(i64, &'a str)> {
    digits(rest, width, exact, name).map(|(v, _, after)| (v, after))
}

/// The index of the name in `names` (or its first three letters, `abbrev`) that `rest`
/// starts with in any case, with what follows it.
fn name_in<'a>(names: &[&str], abbrev: bool, rest: &'a str) -> Option<(usize, &'a str)> {
    names.iter().enumerate().find_map(|(i, name)| {
        let name = if abbrev { &name[..3] } else { name };
        let head = rest.get(..name.len())?;
        head.eq_ignore_ascii_case(name)
            .then(|| (i, &rest[name.len()..]))
    })
}

/// PostgreSQL's error for a name that is none of a field's values.
fn not_allowed(rest: &str, name: &str) -> Error {
    Error::Arithmetic(format!(
        "invalid value \"{rest}\" for \"{name}\": the value did not match any of the allowed \
         values for this field"
    ))
}

/// A year read from fewer than four digits, taken nearest 2020 as PostgreSQL does.
fn near_2020(year: i64) -> i64 {
    match year {
        0..70 => year + 2000,
        70..100 => year + 1900,
        100..520 => year + 2000,
        520..1000 => year + 1000,
        _ => year,
    }
}

/// The date and time the fields `f` read from `input` give.
fn assemble(f: &Fields, input: &str) -> Result<NaiveDateTime> {
    let bad = || out_of_range(input);
    let year = match (f.year, f.century) {
        (Some((y, Some(digits))), Some(cc)) if digits <= 2 => (cc - 1) * 100 + y,
        (Some((y, Some(digits))), _) if digits < 4 => near_2020(y),
        (Some((y, _)), _) => y,
        (None, Some(cc)) => (cc - 1) * 100 + 1,
        (None, None) => 1,
    };
    let year = i32::try_from(year).map_err(|_| bad())?;
    let date = if let Some(j) = f.julian {
        let since_epoch = chrono::TimeDelta::try_days(j - JULIAN_EPOCH);
        NaiveDate::from_ymd_opt(1970, 1, 1)
            .zip(since_epoch)
            .and_then(|(epoch, days)| epoch.checked_add_signed(days))
    } else if let (Some(iy), Some(iw)) = (f.iso_year, f.iso_week) {
        let wd = match f.iso_weekday.unwrap_or(1) {
            1 => Some(Weekday::Mon),
            2 => Some(Weekday::Tue),
            3 => Some(Weekday::Wed),
            4 => Some(Weekday::Thu),
            5 => Some(Weekday::Fri),
            6 => Some(Weekday::Sat),
            7 => Some(Weekday::Sun),
            _ => None,
        };
        match (i32::try_from(iy), u32::try_from(iw), wd) {
            (Ok(y), Ok(w), Some(d)) => NaiveDate::from_isoywd_opt(y, w, d),
            _ => None,
        }
    } else {
        // A month or day of 0 counts as not given, as in PostgreSQL.
        let month = f.month.filter(|&m| m != 0);
        let day = f.day.filter(|&d| d != 0);
        let first_of = |m: i64| {
            u32::try_from(m)
                .ok()
                .and_then(|m| NaiveDate::from_ymd_opt(year, m, 1))
        };
        let of_year = f
            .day_of_year
            .or_else(|| f.week_of_year.map(|w| (w - 1) * 7 + 1));
        match (month, day, of_year) {
            (None, None, Some(d)) => NaiveDate::from_ymd_opt(year, 1, 1)
                .filter(|_| d >= 1)
                .and_then(|first| first.checked_add_days(Days::new(d as u64 - 1)))
                .filter(|date| date.year() == year),
            _ => {
                let day = day.or_else(|| f.week_of_month.map(|w| (w - 1) * 7 + 1));
                match (
                    first_of(month.unwrap_or(1)),
                    u32::try_from(day.unwrap_or(1)),
                ) {
                    (Some(first), Ok(d)) => first.with_day(d),
                    _ => None,
                }
            }
        }
    }
    .ok_or_else(bad)?;
    let hour = match (f.hour, f.pm) {
        (Some((h, true)), pm) | (Some((h, false)), pm @ Some(_)) => {
            if !(1..=12).contains(&h) {
                return Err(Error::Arithmetic(format!(
                    "hour \"{h}\" is invalid for the 12-hour clock (use the 24-hour clock, or \
                     give an hour between 1 and 12)"
                )));
            }
            h % 12 + if pm == Some(true) { 12 } else { 0 }
        }
        (Some((h, false)), None) => h,
        (None, _) => 0,
    };
    let field = |v: Option<i64>| u32::try_from(v.unwrap_or(0)).map_err(|_| bad());
    let micros = u32::try_from(f.micros).map_err(|_| bad())?;
    let time = NaiveTime::from_hms_micro_opt(
        field(Some(hour))?,
        field(f.minute)?,
        field(f.second)?,
        micros,
    )
    .ok_or_else(bad)?;
    Ok(NaiveDateTime::new(date, time))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(input: &str, template: &str) -> Result<String> {
        read(input, &Template::parse(template)).map(|t| t.to_string())
    }

    #[test]
    fn fields_are_read_as_postgresql_reads_them() {
        let cases = [
            ("2024-01-02", "YYYY-MM-DD", "2024-01-02 00:00:00"),
            ("2024-1-2", "YYYY-MM-DD", "2024-01-02 00:00:00"),
            ("20240102", "YYYYMMDD", "2024-01-02 00:00:00"),
            ("2024/01/02", "YYYY-MM-DD", "2024-01-02 00:00:00"),
            ("  2024 01 02 extra", "YYYY-MM-DD", "2024-01-02 00:00:00"),
            ("02 jan 2024", "DD Mon YYYY", "2024-01-02 00:00:00"),
            ("January 5, 2024", "Month DD, YYYY", "2024-01-05 00:00:00"),
            ("99-01-02", "YY-MM-DD", "1999-01-02 00:00:00"),
            ("2024", "YY", "2024-01-01 00:00:00"),
            ("2024-01", "YYYY-MM-DD", "2024-01-01 00:00:00"),
            ("2024-060", "YYYY-DDD", "2024-02-29 00:00:00"),
            ("2460311", "J", "2024-01-01 00:00:00"),
            ("2024 10", "YYYY WW", "2024-03-04 00:00:00"),
            ("2024-W01-3", "IYYY-\"W\"IW-ID", "2024-01-03 00:00:00"),
            ("1,234-01-02", "Y,YYY-MM-DD", "1234-01-02 00:00:00"),
            ("12345-01-02", "YYYY-MM-DD", "+12345-01-02 00:00:00"),
            ("2024T01", "YYYY\"T\"MM", "2024-01-01 00:00:00"),
            (
                "Tuesday 2024-01-02",
                "Day YYYY-MM-DD",
                "2024-01-02 00:00:00",
            ),
            ("2024-00-10", "YYYY-MM-DD", "2024-01-10 00:00:00"),
            (
                "2024-01-02 03:04 PM",
                "YYYY-MM-DD HH12:MI AM",
                "2024-01-02 15:04:00",
            ),
            (
                "2024-01-02 12:04 am",
                "YYYY-MM-DD HH:MI PM",
                "2024-01-02 00:04:00",
            ),
            (
                "2024-01-02 10:11:12.5",
                "YYYY-MM-DD HH24:MI:SS.MS",
                "2024-01-02 10:11:12.500",
            ),
            (
                "2024-01-02 10:11:12.123456",
                "YYYY-MM-DD HH24:MI:SS.US",
                "2024-01-02 10:11:12.123456",
            ),
            ("2024-01-02 37230", "YYYY-MM-DD SSSS", "2024-01-02 10:20:30"),
        ];
        for (input, template, want) in cases {
            assert_eq!(at(input, template).unwrap(), want, "{input} by {template}");
        }
    }

    #[test]
    fn bad_input_is_postgresql_s_error() {
        for (input, template, error) in [
            ("2024-02-30", "YYYY-MM-DD", "out of range: \"2024-02-30\""),
            ("2024-13-02", "YYYY-MM-DD", "out of range"),
            ("2024-367", "YYYY-DDD", "out of range"),
            ("2024-01-02 25:00", "YYYY-MM-DD HH24:MI", "out of range"),
            ("2024-01-02 10:61", "YYYY-MM-DD HH24:MI", "out of range"),
            ("abc", "YYYY", "invalid value \"abc\" for \"YYYY\""),
            (
                "2024-1-02",
                "YYYY-MMDD",
                "requires 2 characters, but only 1",
            ),
            (
                "2024-xyz-02",
                "YYYY-Mon-DD",
                "invalid value \"xyz-02\" for \"Mon\"",
            ),
            ("2024 Jan 2", "YYYY Month DD", "for \"Month\""),
            (
                "2024-01-02 13:00 PM",
                "YYYY-MM-DD HH12:MI PM",
                "hour \"13\" is invalid",
            ),
            (
                "2024-01-02 10 UTC",
                "YYYY-MM-DD HH24 TZ",
                "only supported in to_char",
            ),
        ] {
            let e = at(input, template).unwrap_err().to_string();
            assert!(e.contains(error), "{input} by {template}: {e}");
        }
    }
}
