//! `to_char(date or timestamp, template)`: a date and time written out by a PostgreSQL
//! template (numbers are [`super::to_char_number`]'s) (`'YYYY-MM-DD HH24:MI:SS'`, `'FMMonth DDth, YYYY'`, `'Dy "at" HH12 AM'`).
//!
//! A template is read once into [`Piece`]s (fields and literal text) and then written for each
//! row. Fields are PostgreSQL's: years (`YYYY`, `YYY`, `YY`, `Y`, `Y,YYY`, `IYYY`), months
//! (`MM`, `Month`/`MONTH`/`month` padded to 9 characters, `Mon`/`MON`/`mon`), days (`DD`, `DDD`,
//! `D` from Sunday 1, `ID` from Monday 1, `Day`/`DAY`/`day` padded to 9, `Dy`/`DY`/`dy`), weeks
//! (`WW`, `W`, `IW`), `Q`, `CC`, `J` (Julian day), times (`HH`/`HH12`, `HH24`, `MI`, `SS`,
//! `MS`, `US`, `SSSS`/`SSSSS` seconds past midnight), meridiem markers (`AM`, `PM`, `A.M.`,
//! `P.M.` and their lower-case forms) and `TZ` (empty: weir has no time zones). The prefix
//! `FM` drops a field's padding, the suffix `TH`/`th` adds its ordinal ending (`1st`,
//! `22ND`); text in double quotes is copied as it is (`\"` a quote), and anything else is
//! copied too.

use super::catalogue::ScalarFunc;
use super::support::{all_valid, datetime_at, s, type_err, TextOut};
use super::to_char_number::{decimal_parts, float_parts, NumberTemplate};
use crate::column::Column;
use crate::error::{Error, Result};
use crate::types::DataType;
use crate::value::Value;
use chrono::{Datelike, NaiveDateTime, Timelike};
use std::fmt::Write;

/// `to_char(x, template)` over `n` rows: `x` a DATE or TIMESTAMP column, the template text
/// (read again only when it changes from one row to the next, so a literal is read once).
pub(super) fn call(args: &[Column], n: usize) -> Result<Column> {
    let (x, templates) = (&args[0], &args[1]);
    if x.data_type().is_numeric() && templates.data_type() == DataType::Utf8 {
        return numbers(x, templates, n);
    }
    if !x.data_type().is_temporal() || templates.data_type() != DataType::Utf8 {
        return Err(type_err(ScalarFunc::ToChar, args));
    }
    let mut out = TextOut::new(ScalarFunc::ToChar, n);
    let mut last: Option<(&str, Template)> = None;
    let mut buf = String::new();
    for i in 0..n {
        if !all_valid(args, i) {
            out.push_null();
            continue;
        }
        let template = Template::reread(&mut last, s(templates, i));
        let t = datetime_at(x, i)
            .ok_or_else(|| Error::Overflow(format!("{} out of range", x.data_type())))?;
        template.write(t, &mut buf);
        out.push(&buf)?;
    }
    Ok(out.finish())
}

/// `to_char(x, template)` of a BIGINT, DOUBLE or DECIMAL column `x` over `n` rows (see
/// [`super::to_char_number`]; a template read again only when it changes).
fn numbers(x: &Column, templates: &Column, n: usize) -> Result<Column> {
    let mut out = TextOut::new(ScalarFunc::ToChar, n);
    let mut last: Option<(&str, NumberTemplate)> = None;
    let mut buf = String::new();
    for i in 0..n {
        if !x.is_valid(i) || !templates.is_valid(i) {
            out.push_null();
            continue;
        }
        let text = s(templates, i);
        let template = match &last {
            Some((t, template)) if *t == text => template,
            _ => &last.insert((text, NumberTemplate::parse(text)?)).1,
        };
        let decimals = template.decimals();
        let parts = match x.value(i) {
            Value::Int(v) => Some(decimal_parts(v as i128, 0, decimals)),
            Value::Decimal(v, scale) => Some(decimal_parts(v, scale, decimals)),
            Value::Float(v) => float_parts(v, decimals),
            _ => None,
        };
        match parts {
            Some((negative, int, frac)) => template.write(negative, &int, &frac, &mut buf),
            None => template.write_hashes(&mut buf),
        }
        out.push(&buf)?;
    }
    Ok(out.finish())
}

/// What a field writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Field {
    /// `Y,YYY`: the year with a thousands comma.
    YearComma,
    /// `YYYY`, `YYY`, `YY`, `Y`: the year's last 4 (all, when longer), 3, 2 or 1 digits.
    Year(u8),
    /// `IYYY`: the ISO 8601 week-numbering year.
    IsoYear,
    /// `MM`.
    Month,
    /// `Month`, `MONTH`, `month` (padded), or `Mon`, `MON`, `mon` (`abbrev`).
    MonthName { case: Case, abbrev: bool },
    /// `DDD`: day of the year.
    DayOfYear,
    /// `DD`.
    Day,
    /// `D`: day of the week, Sunday 1.
    Weekday,
    /// `ID`: ISO day of the week, Monday 1.
    IsoWeekday,
    /// `Day`, `DAY`, `day` (padded), or `Dy`, `DY`, `dy` (`abbrev`).
    DayName { case: Case, abbrev: bool },
    /// `WW`: week of the year, weeks counted from January 1st.
    WeekOfYear,
    /// `W`: week of the month, weeks counted from the 1st.
    WeekOfMonth,
    /// `IW`: ISO 8601 week.
    IsoWeek,
    /// `Q`.
    Quarter,
    /// `CC`: the century (21 from 2001).
    Century,
    /// `J`: the Julian day (days since 4714-11-24 BC).
    Julian,
    /// `HH`, `HH12`: 01 to 12.
    Hour12,
    /// `HH24`.
    Hour24,
    /// `MI`.
    Minute,
    /// `SS`.
    Second,
    /// `MS`: milliseconds.
    Millis,
    /// `US`: microseconds.
    Micros,
    /// `SSSS`, `SSSSS`: seconds past midnight.
    SecondsOfDay,
    /// `AM`/`PM` and the other forms: `dots` `A.M.`, `lower` `am`.
    Meridiem { dots: bool, lower: bool },
    /// `TZ`, `tz`: no time zone, nothing written.
    TimeZone,
}

/// How a name is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Case {
    /// `MONTH`.
    Upper,
    /// `Month`.
    Title,
    /// `month`.
    Lower,
}

/// One piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Piece {
    /// Text copied as it is.
    Text(String),
    /// A field: `fill` (the `FM` prefix) drops its padding; `ordinal` (`TH`/`th`, `upper`)
    /// adds the number's ordinal ending.
    Field {
        field: Field,
        fill: bool,
        ordinal: Option<bool>,
    },
}

/// The keywords, longest first where one begins another (`HH24` before `HH`, `DDD` before
/// `DD` before `D`), each with the field it is.
pub(super) const KEYWORDS: &[(&str, Field)] = &[
    ("Y,YYY", Field::YearComma),
    ("y,yyy", Field::YearComma),
    ("IYYY", Field::IsoYear),
    ("iyyy", Field::IsoYear),
    ("YYYY", Field::Year(4)),
    ("yyyy", Field::Year(4)),
    ("YYY", Field::Year(3)),
    ("yyy", Field::Year(3)),
    ("YY", Field::Year(2)),
    ("yy", Field::Year(2)),
    ("Y", Field::Year(1)),
    ("y", Field::Year(1)),
    ("MONTH", name_of_month(Case::Upper, false)),
    ("Month", name_of_month(Case::Title, false)),
    ("month", name_of_month(Case::Lower, false)),
    ("MON", name_of_month(Case::Upper, true)),
    ("Mon", name_of_month(Case::Title, true)),
    ("mon", name_of_month(Case::Lower, true)),
    ("MM", Field::Month),
    ("mm", Field::Month),
    ("MS", Field::Millis),
    ("ms", Field::Millis),
    ("MI", Field::Minute),
    ("mi", Field::Minute),
    ("DAY", name_of_day(Case::Upper, false)),
    ("Day", name_of_day(Case::Title, false)),
    ("day", name_of_day(Case::Lower, false)),
    ("DY", name_of_day(Case::Upper, true)),
    ("Dy", name_of_day(Case::Title, true)),
    ("dy", name_of_day(Case::Lower, true)),
    ("DDD", Field::DayOfYear),
    ("ddd", Field::DayOfYear),
    ("DD", Field::Day),
    ("dd", Field::Day),
    ("D", Field::Weekday),
    ("d", Field::Weekday),
    ("ID", Field::IsoWeekday),
    ("id", Field::IsoWeekday),
    ("IW", Field::IsoWeek),
    ("iw", Field::IsoWeek),
    ("WW", Field::WeekOfYear),
    ("ww", Field::WeekOfYear),
    ("W", Field::WeekOfMonth),
    ("w", Field::WeekOfMonth),
    ("Q", Field::Quarter),
    ("q", Field::Quarter),
    ("CC", Field::Century),
    ("cc", Field::Century),
    ("J", Field::Julian),
    ("j", Field::Julian),
    ("HH24", Field::Hour24),
    ("hh24", Field::Hour24),
    ("HH12", Field::Hour12),
    ("hh12", Field::Hour12),
    ("HH", Field::Hour12),
    ("hh", Field::Hour12),
    ("SSSSS", Field::SecondsOfDay),
    ("sssss", Field::SecondsOfDay),
    ("SSSS", Field::SecondsOfDay),
    ("ssss", Field::SecondsOfDay),
    ("SS", Field::Second),
    ("ss", Field::Second),
    ("US", Field::Micros),
    ("us", Field::Micros),
    ("A.M.", meridiem(true, false)),
    ("P.M.", meridiem(true, false)),
    ("a.m.", meridiem(true, true)),
    ("p.m.", meridiem(true, true)),
    ("AM", meridiem(false, false)),
    ("PM", meridiem(false, false)),
    ("am", meridiem(false, true)),
    ("pm", meridiem(false, true)),
    ("TZ", Field::TimeZone),
    ("tz", Field::TimeZone),
];

const fn name_of_month(case: Case, abbrev: bool) -> Field {
    Field::MonthName { case, abbrev }
}

const fn name_of_day(case: Case, abbrev: bool) -> Field {
    Field::DayName { case, abbrev }
}

const fn meridiem(dots: bool, lower: bool) -> Field {
    Field::Meridiem { dots, lower }
}

pub(super) const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

pub(super) const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

/// Days from 4714-11-24 BC (the Julian day 0) to 1970-01-01.
pub(super) const JULIAN_EPOCH: i64 = 2_440_588;

/// A template read into its pieces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Template {
    /// The fields and literal text, in order.
    pub(super) pieces: Vec<Piece>,
}

impl Template {
    /// The template of `text`, read again only when `text` is not the text `last` was read
    /// from (a column of one template, a literal's, is read once).
    pub(super) fn reread<'a, 'l>(
        last: &'l mut Option<(&'a str, Template)>,
        text: &'a str,
    ) -> &'l Template {
        if last.as_ref().is_some_and(|(t, _)| *t != text) {
            *last = None;
        }
        &last.get_or_insert_with(|| (text, Template::parse(text))).1
    }

    /// Reads `text` into fields and literal text.
    pub(super) fn parse(text: &str) -> Template {
        let mut pieces = Vec::new();
        let mut literal = String::new();
        let mut rest = text;
        while let Some(c) = rest.chars().next() {
            if c == '"' {
                // Quoted text up to the closing quote; `\"` is a quote.
                rest = &rest[1..];
                let mut chars = rest.char_indices();
                let mut end = rest.len();
                while let Some((i, ch)) = chars.next() {
                    match ch {
                        '"' => {
                            end = i + 1;
                            break;
                        }
                        '\\' => match chars.next() {
                            Some((_, q)) => literal.push(q),
                            None => end = rest.len(),
                        },
                        other => literal.push(other),
                    }
                }
                rest = &rest[end..];
                continue;
            }
            let fill = rest.starts_with("FM") || rest.starts_with("fm");
            let after = if fill { &rest[2..] } else { rest };
            if let Some((keyword, field)) = KEYWORDS.iter().find(|(k, _)| after.starts_with(k)) {
                let mut next = &after[keyword.len()..];
                let ordinal = if next.starts_with("TH") {
                    Some(true)
                } else if next.starts_with("th") {
                    Some(false)
                } else {
                    None
                };
                if ordinal.is_some() {
                    next = &next[2..];
                }
                if !literal.is_empty() {
                    pieces.push(Piece::Text(std::mem::take(&mut literal)));
                }
                pieces.push(Piece::Field {
                    field: *field,
                    fill,
                    ordinal,
                });
                rest = next;
                continue;
            }
            literal.push(c);
            rest = &rest[c.len_utf8()..];
        }
        if !literal.is_empty() {
            pieces.push(Piece::Text(literal));
        }
        Template { pieces }
    }

    /// Writes `t` by the template to `out` (cleared first).
    pub(super) fn write(&self, t: NaiveDateTime, out: &mut String) {
        out.clear();
        for piece in &self.pieces {
            match piece {
                Piece::Text(s) => out.push_str(s),
                Piece::Field {
                    field,
                    fill,
                    ordinal,
                } => write_field(*field, *fill, *ordinal, t, out),
            }
        }
    }
}

/// Writes one field of `t`.
fn write_field(
    field: Field,
    fill: bool,
    ordinal: Option<bool>,
    t: NaiveDateTime,
    out: &mut String,
) {
    let d = t.date();
    let number = |out: &mut String, value: i64, width: usize| {
        // Writing to a String cannot fail.
        let _ = if fill {
            write!(out, "{value}")
        } else {
            write!(out, "{value:0width$}")
        };
        if let Some(upper) = ordinal {
            out.push_str(ordinal_suffix(value, upper));
        }
    };
    let name = |out: &mut String, full: &str, case: Case, abbrev: bool| {
        let text = if abbrev { &full[..3] } else { full };
        let start = out.len();
        match case {
            Case::Upper => out.push_str(&text.to_uppercase()),
            Case::Title => out.push_str(text),
            Case::Lower => out.push_str(&text.to_lowercase()),
        }
        if !abbrev && !fill {
            // Full names are blank-padded to the longest's 9 characters.
            let written = out.len() - start;
            out.extend(std::iter::repeat_n(' ', 9usize.saturating_sub(written)));
        }
    };
    let year = i64::from(d.year());
    match field {
        Field::YearComma => {
            let _ = write!(out, "{},{:03}", year / 1000, (year % 1000).abs());
        }
        Field::Year(4) => number(out, year, 4),
        Field::Year(digits) => {
            let modulus = 10i64.pow(u32::from(digits));
            number(out, year.rem_euclid(modulus), usize::from(digits))
        }
        Field::IsoYear => number(out, i64::from(d.iso_week().year()), 4),
        Field::Month => number(out, i64::from(d.month()), 2),
        Field::MonthName { case, abbrev } => name(out, MONTHS[d.month0() as usize], case, abbrev),
        Field::DayOfYear => number(out, i64::from(d.ordinal()), 3),
        Field::Day => number(out, i64::from(d.day()), 2),
        Field::Weekday => number(out, i64::from(d.weekday().number_from_sunday()), 1),
        Field::IsoWeekday => number(out, i64::from(d.weekday().number_from_monday()), 1),
        Field::DayName { case, abbrev } => {
            let day = d.weekday().num_days_from_sunday() as usize;
            name(out, DAYS[day], case, abbrev)
        }
        Field::WeekOfYear => number(out, i64::from(d.ordinal0() / 7 + 1), 2),
        Field::WeekOfMonth => number(out, i64::from(d.day0() / 7 + 1), 1),
        Field::IsoWeek => number(out, i64::from(d.iso_week().week()), 2),
        Field::Quarter => number(out, i64::from(d.month0() / 3 + 1), 1),
        Field::Century => {
            let century = if year > 0 {
                (year + 99) / 100
            } else {
                -((100 - year) / 100)
            };
            number(out, century, 2)
        }
        Field::Julian => {
            let days = t.and_utc().timestamp().div_euclid(86_400);
            number(out, days + JULIAN_EPOCH, 1)
        }
        Field::Hour12 => {
            let h = t.hour() % 12;
            number(out, i64::from(if h == 0 { 12 } else { h }), 2)
        }
        Field::Hour24 => number(out, i64::from(t.hour()), 2),
        Field::Minute => number(out, i64::from(t.minute()), 2),
        Field::Second => number(out, i64::from(t.second()), 2),
        Field::Millis => number(out, i64::from(t.nanosecond() / 1_000_000), 3),
        Field::Micros => number(out, i64::from(t.nanosecond() / 1_000), 6),
        Field::SecondsOfDay => number(out, i64::from(t.num_seconds_from_midnight()), 1),
        Field::Meridiem { dots, lower } => {
            let text = match (t.hour() < 12, dots) {
                (true, false) => "AM",
                (false, false) => "PM",
                (true, true) => "A.M.",
                (false, true) => "P.M.",
            };
            if lower {
                out.push_str(&text.to_lowercase());
            } else {
                out.push_str(text);
            }
        }
        Field::TimeZone => {}
    }
}

/// `st`, `nd`, `rd` or `th` after `n` (`ST`, ... when `upper`): 11th to 13th take `th`.
fn ordinal_suffix(n: i64, upper: bool) -> &'static str {
    let n = n.abs();
    let lower = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    match (upper, lower) {
        (false, s) => s,
        (true, "st") => "ST",
        (true, "nd") => "ND",
        (true, "rd") => "RD",
        (true, _) => "TH",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::NaiveDate;

    fn at(y: i32, m: u32, d: u32, h: u32, mi: u32, s: u32, micro: u32) -> NaiveDateTime {
        NaiveDate::from_ymd_opt(y, m, d)
            .and_then(|d| d.and_hms_micro_opt(h, mi, s, micro))
            .unwrap_or_default()
    }

    fn fmt(t: NaiveDateTime, template: &str) -> String {
        let mut out = String::new();
        Template::parse(template).write(t, &mut out);
        out
    }

    #[test]
    fn the_common_templates_write_as_postgresql_does() {
        let t = at(2024, 3, 5, 14, 7, 9, 123_456);
        assert_eq!(fmt(t, "YYYY-MM-DD HH24:MI:SS"), "2024-03-05 14:07:09");
        assert_eq!(
            fmt(t, "YYYY-MM-DD\"T\"HH24:MI:SS.US"),
            "2024-03-05T14:07:09.123456"
        );
        assert_eq!(fmt(t, "HH12:MI AM"), "02:07 PM");
        assert_eq!(fmt(t, "hh:mi a.m."), "02:07 p.m.");
        assert_eq!(fmt(t, "Month DD, YYYY"), "March     05, 2024");
        assert_eq!(fmt(t, "FMMonth FMDDth, YYYY"), "March 5th, 2024");
        assert_eq!(fmt(t, "Dy, DD Mon YYYY"), "Tue, 05 Mar 2024");
        assert_eq!(fmt(t, "DAY|day|FMDay"), "TUESDAY  |tuesday  |Tuesday");
        assert_eq!(fmt(t, "YY Q CC DDD D ID"), "24 1 21 065 3 2");
        assert_eq!(fmt(t, "MS US SSSS"), "123 123456 50829");
        assert_eq!(fmt(t, "Y,YYY YYY Y"), "2,024 024 4");
        assert_eq!(fmt(t, "J"), "2460375");
        assert_eq!(fmt(t, "WW W IW IYYY"), "10 1 10 2024");
        assert_eq!(fmt(t, "DDTH ddth"), "05TH 05th");
    }

    #[test]
    fn ordinals_midnight_and_literals() {
        for (d, s) in [
            (1, "1st"),
            (2, "2nd"),
            (3, "3rd"),
            (4, "4th"),
            (11, "11th"),
            (12, "12th"),
            (13, "13th"),
            (21, "21st"),
            (22, "22nd"),
            (23, "23rd"),
            (31, "31st"),
        ] {
            assert_eq!(fmt(at(2024, 1, d, 0, 0, 0, 0), "FMDDth"), s);
        }
        let midnight = at(2024, 1, 1, 0, 0, 0, 0);
        assert_eq!(fmt(midnight, "HH12 AM HH24"), "12 AM 00");
        assert_eq!(
            fmt(midnight, "\"Year\" YYYY, \"quote \\\" inside\""),
            "Year 2024, quote \" inside"
        );
        assert_eq!(fmt(midnight, "x#/ YYYY!"), "x#/ 2024!");
        assert_eq!(fmt(midnight, "TZ"), "");
        // 2024-01-01 is a Monday; 2021-01-01 belongs to ISO week 53 of 2020.
        assert_eq!(fmt(at(2021, 1, 1, 0, 0, 0, 0), "IYYY-IW"), "2020-53");
    }
}
