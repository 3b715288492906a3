//! `to_number(text, template)`: the number a text holds, read by a PostgreSQL numeric template
//! (`'9G999D99'`, `'L9,999.99'`, `'999MI'`, `'S999'`, `'999PR'`), as PostgreSQL reads it.
//!
//! The template's fields are walked in order, each reading from where the one before stopped:
//! a digit field (`9` or `0`) skips one blank, takes a sign before the first digit (`-`, `+`,
//! `<` with `PR`) and then a digit, or the decimal point at a `.` or `D` field, and moves on one
//! character whatever it found; `,` and `G` take a comma if there is one (nothing with `FM`);
//! `L` a `$` or one other character that is not part of a number; `MI`, `PL` and `SG` their
//! sign; `PR` a closing `>`; `TH` two letters; any other template character (in double quotes
//! or not) skips one character of the text. A sign right after the digits is read with `S`,
//! `MI`, `PL` and `SG`. Digits past the template's decimals are not read. Text without any
//! digit is PostgreSQL's error `invalid input syntax for type numeric`. The result is a
//! DECIMAL with as many decimals as the template has digit fields after its point (PostgreSQL
//! keeps as many as the text had: `12.3` read by `99.99` is `12.30` here, `12.3` there).
//! `V`, `EEEE` and `RN` are refused.

use super::catalogue::ScalarFunc;
use super::support::{all_valid, s, type_err, word_at};
use crate::column::{Column, ColumnBuilder};
use crate::decimal;
use crate::error::{Error, Result};
use crate::types::DataType;

/// One field of a template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    /// `9` or `0`.
    Digit,
    /// `.` or `D`.
    Point,
    /// `,` or `G`.
    Group,
    /// `L`: the currency symbol.
    Currency,
    /// `MI`.
    Minus,
    /// `PL`.
    Plus,
    /// `SG`.
    Sign,
    /// `PR`.
    Brackets,
    /// `TH` or `th`.
    Ordinal,
    /// A character of the template that is no field: skips one character of the text.
    Other,
    /// `S`, `FM`, `B`: nothing read where they stand.
    Nothing,
}

/// Where an `S` reads its sign.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LocaleSign {
    /// Before the first digit (an `S` before the decimal point).
    Before,
    /// After the digits.
    After,
}

/// A numeric template, read for input.
#[derive(Debug, Clone)]
pub(super) struct InputTemplate {
    fields: Vec<Field>,
    /// Digit fields after the decimal point.
    post: usize,
    /// Whether the template has a decimal point.
    point: bool,
    /// `FM`.
    fill: bool,
    /// `S`.
    sign: Option<LocaleSign>,
    /// `PL`, `MI` or `SG`.
    plus_or_minus: bool,
    /// `PR`.
    brackets: bool,
}

impl InputTemplate {
    /// Reads `text`; a field that cannot be read is an error naming it.
    pub(super) fn parse(text: &str) -> Result<InputTemplate> {
        let chars: Vec<char> = text.chars().collect();
        let mut t = InputTemplate {
            fields: Vec::new(),
            post: 0,
            point: false,
            fill: false,
            sign: None,
            plus_or_minus: false,
            brackets: false,
        };
        let starts = |i: usize, word: &str| word_at(&chars, i, word);
        let together = |other: &str| {
            Err(Error::Type(format!(
                "cannot use \"S\" and \"{other}\" together"
            )))
        };
        let mut i = 0;
        let mut quoted = false;
        while i < chars.len() {
            let c = chars[i];
            if c == '"' {
                quoted = !quoted;
                i += 1;
                continue;
            }
            if quoted {
                t.fields.push(Field::Other);
                i += 1;
                continue;
            }
            for word in ["EEEE", "RN"] {
                if starts(i, word) {
                    return Err(Error::Type(format!("\"{word}\" not supported for input")));
                }
            }
            let (field, width) = if starts(i, "FM") {
                t.fill = true;
                (Field::Nothing, 2)
            } else if starts(i, "MI") || starts(i, "PL") || starts(i, "SG") {
                if t.sign.is_some() {
                    let word: String = chars[i..i + 2].iter().collect();
                    return together(&word.to_uppercase());
                }
                t.plus_or_minus = true;
                let field = match c.to_ascii_uppercase() {
                    'M' => Field::Minus,
                    'P' => Field::Plus,
                    _ => Field::Sign,
                };
                (field, 2)
            } else if starts(i, "PR") {
                if t.sign.is_some() {
                    return together("PR");
                }
                t.brackets = true;
                (Field::Brackets, 2)
            } else if starts(i, "TH") {
                (Field::Ordinal, 2)
            } else {
                let field = match c {
                    '9' | '0' => {
                        if t.point {
                            t.post += 1;
                        }
                        Field::Digit
                    }
                    '.' | 'D' | 'd' => {
                        if t.point {
                            return Err(Error::Type("multiple decimal points".into()));
                        }
                        t.point = true;
                        Field::Point
                    }
                    ',' | 'G' | 'g' => Field::Group,
                    'L' | 'l' => Field::Currency,
                    'S' | 's' => {
                        if t.sign.is_some() {
                            return Err(Error::Type("cannot use \"S\" twice".into()));
                        }
                        if t.plus_or_minus {
                            return together("PL\"/\"MI\"/\"SG");
                        }
                        if t.brackets {
                            return together("PR");
                        }
                        t.sign = Some(if t.point {
                            LocaleSign::After
                        } else {
                            LocaleSign::Before
                        });
                        Field::Nothing
                    }
                    'V' | 'v' => {
                        return Err(Error::Type(
                            "to_number does not support \"V\" in its template".into(),
                        ))
                    }
                    'B' | 'b' => Field::Nothing,
                    _ => Field::Other,
                };
                (field, 1)
            };
            t.fields.push(field);
            i += width;
        }
        Ok(t)
    }

    /// The decimals of the numbers the template reads.
    pub(super) fn decimals(&self) -> usize {
        self.post
    }

    /// The number `text` holds, unscaled at [`InputTemplate::decimals`] decimals.
    pub(super) fn read(&self, text: &str) -> Result<i128> {
        let b = text.as_bytes();
        let len = b.len();
        let digit = |at: usize| b.get(at).is_some_and(u8::is_ascii_digit);
        // Skips `n` characters that cannot be part of a number.
        let eat = |at: &mut usize, mut n: usize| {
            while n > 0 && *at < len {
                let c = b[*at];
                if c.is_ascii_digit() || matches!(c, b'.' | b',' | b'+' | b'-') {
                    break;
                }
                *at += char_len(text, *at);
                n -= 1;
            }
        };
        let mut at = 0;
        let mut sign: Option<u8> = None;
        let (mut pre, mut post, mut read_point) = (0usize, 0usize, false);
        let mut value: i128 = 0;
        let overflow = || Error::Overflow(format!("numeric field overflow in to_number('{text}')"));
        for &field in &self.fields {
            if at >= len {
                break;
            }
            match field {
                Field::Other => at += char_len(text, at),
                Field::Digit | Field::Point => {
                    if b[at] == b' ' {
                        at += 1;
                    }
                    if at >= len {
                        continue;
                    }
                    if sign.is_none() && field == Field::Digit && pre + post == 0 {
                        let c = b[at];
                        let minus = c == b'-'
                            || (self.sign != Some(LocaleSign::Before)
                                && self.brackets
                                && c == b'<');
                        if minus || c == b'+' {
                            sign = Some(if minus { b'-' } else { b'+' });
                            at += 1;
                        }
                    }
                    if at >= len {
                        continue;
                    }
                    let mut consumed = false;
                    if digit(at) {
                        if read_point && post == self.post {
                            continue;
                        }
                        let d = i128::from(b[at] - b'0');
                        value = value
                            .checked_mul(10)
                            .and_then(|v| v.checked_add(d))
                            .ok_or_else(overflow)?;
                        if read_point {
                            post += 1;
                        } else {
                            pre += 1;
                        }
                        consumed = true;
                    } else if self.point && !read_point && b[at] == b'.' {
                        read_point = true;
                        consumed = true;
                    }
                    if sign.is_none() && pre + post > 0 {
                        if self.sign.is_some() && consumed && at + 1 < len && !digit(at + 1) {
                            if matches!(b[at + 1], b'-' | b'+') {
                                sign = Some(b[at + 1]);
                                at += 1;
                            }
                        } else if !consumed
                            && self.sign.is_none()
                            && self.plus_or_minus
                            && matches!(b[at], b'-' | b'+')
                        {
                            sign = Some(b[at]);
                        }
                    }
                    at += 1;
                }
                Field::Group => {
                    if !self.fill && b[at] == b',' {
                        at += 1;
                    }
                }
                Field::Currency => {
                    if b[at] == b'$' {
                        at += 1;
                    } else {
                        eat(&mut at, 1);
                    }
                }
                Field::Minus | Field::Plus | Field::Sign => {
                    let c = b[at];
                    let takes = match field {
                        Field::Minus => c == b'-',
                        Field::Plus => c == b'+',
                        _ => matches!(c, b'-' | b'+'),
                    };
                    if takes {
                        sign = Some(c);
                        at += 1;
                    } else {
                        eat(&mut at, 1);
                    }
                }
                Field::Brackets => {
                    if b[at] == b'>' {
                        at += 1;
                    }
                }
                Field::Ordinal => eat(&mut at, 2),
                Field::Nothing => {}
            }
        }
        if pre + post == 0 {
            let shown = sign.map_or(" ".to_string(), |c| char::from(c).to_string());
            return Err(Error::Cast {
                value: format!("\"{shown}\""),
                to: "numeric".into(),
            });
        }
        let value = u8::try_from(self.post - post)
            .ok()
            .and_then(decimal::pow10)
            .and_then(|p| value.checked_mul(p))
            .ok_or_else(overflow)?;
        Ok(if sign == Some(b'-') { -value } else { value })
    }
}

/// The length in bytes of the character of `text` at byte `at`.
fn char_len(text: &str, at: usize) -> usize {
    text[at..].chars().next().map_or(1, char::len_utf8)
}

/// The decimals of the result of `to_number(x, template)` (the binder's type), or the
/// template's error.
pub fn result_decimals(template: &str) -> Result<u8> {
    let t = InputTemplate::parse(template)?;
    u8::try_from(t.decimals())
        .ok()
        .filter(|&d| d <= crate::types::MAX_DECIMAL_PRECISION)
        .ok_or_else(|| Error::Type(format!("to_number: too many decimals in '{template}'")))
}

/// Evaluates `to_number` over `n` rows into a column of `out` (a DECIMAL).
pub(super) fn call(args: &[Column], n: usize, out: DataType) -> Result<Column> {
    let DataType::Decimal { scale, .. } = out else {
        return Err(Error::Internal(format!("to_number giving {out}")));
    };
    let func = ScalarFunc::ToNumber(scale);
    if args.iter().any(|c| c.data_type() != DataType::Utf8) {
        return Err(type_err(func, args));
    }
    let mut b = ColumnBuilder::new(out, n);
    // The template is nearly always one literal: read again only when its text changes.
    let mut template: Option<(String, InputTemplate)> = None;
    for i in 0..n {
        if !all_valid(args, i) {
            b.push_null();
            continue;
        }
        let text = s(&args[1], i);
        if text.is_empty() {
            b.push_null();
            continue;
        }
        let read = match template.take() {
            Some((seen, parsed)) if seen == text => (seen, parsed),
            _ => (text.to_string(), InputTemplate::parse(text)?),
        };
        let t = &template.insert(read).1;
        if usize::from(scale) != t.decimals() {
            return Err(Error::Type(format!(
                "to_number: the template '{text}' changed its decimals between rows"
            )));
        }
        b.push_decimal(t.read(s(&args[0], i))?);
    }
    Ok(b.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str, template: &str) -> Result<String> {
        let t = InputTemplate::parse(template)?;
        let scale = t.decimals() as u8;
        Ok(decimal::format(t.read(text)?, scale))
    }

    #[test]
    fn numbers_are_read_as_postgresql_reads_them() {
        assert_eq!(read("12,454.8-", "99G999D9S").unwrap(), "-12454.8");
        assert_eq!(read("$1,234.56", "L9,999.99").unwrap(), "1234.56");
        assert_eq!(read("-12.5", "999.99").unwrap(), "-12.50");
        assert_eq!(read("  1 2 3", "999").unwrap(), "12");
        assert_eq!(read("<123.45>", "999.99PR").unwrap(), "-123.45");
        assert_eq!(read("123.456", "999.9").unwrap(), "123.4");
        assert_eq!(read("1234", "99").unwrap(), "12");
        assert_eq!(read("12-", "99MI").unwrap(), "-12");
        assert_eq!(read("12-", "99S").unwrap(), "-12");
        assert_eq!(read("-  12", "S999").unwrap(), "-12");
        assert_eq!(read("x12", "999").unwrap(), "12");
        assert_eq!(read("ab12", "\"ab\"99").unwrap(), "12");
        assert_eq!(read("-.5", "9.9").unwrap(), "-0.5");
    }

    #[test]
    fn text_without_digits_and_unreadable_templates_are_errors() {
        assert!(read("abc", "999")
            .unwrap_err()
            .to_string()
            .contains("numeric"));
        assert!(read("1", "9.9.9")
            .unwrap_err()
            .to_string()
            .contains("multiple decimal points"));
        assert!(read("1", "9.9EEEE")
            .unwrap_err()
            .to_string()
            .contains("EEEE"));
        assert!(read("1", "RN").is_err());
        assert!(read("1", "S99S").is_err());
        assert!(read(
            "99999999999999999999999999999999999999999",
            "9999999999999999999999999999999999999999999"
        )
        .is_err());
    }
}
