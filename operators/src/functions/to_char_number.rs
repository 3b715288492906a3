//! `to_char(number, template)`: a BIGINT, DOUBLE or DECIMAL written by a PostgreSQL numeric
//! template (`'999'`, `'FM9,990.00'`, `'S0000'`, `'999PR'`).
//!
//! Fields: `9` (a digit, a blank where the number has none), `0` (a digit, zero where the
//! number has none: zeros fill from the first `0` on), `.` or `D` (the decimal point), `,` or
//! `G` (a group separator, blank before the number's first digit), `S` (the sign, `+` or `-`,
//! before the number or after it when written after the digits), `MI` (a minus sign where
//! written, blank for a number that is not negative), `PR` (a negative number in angle
//! brackets), `TH`/`th` (the integer's ordinal ending), the prefix `FM` (no padding blanks, no
//! trailing zeros for `9`s after the point); text in double quotes and any other character
//! are copied. A number with more integer digits than the template has positions is written
//! as `#`s. Without `S`, `MI` or `PR`, one position before the number holds its sign (blank
//! when it is not negative). As PostgreSQL, values are rounded to the template's decimals
//! (halves away from zero). `RN`, `V`, `EEEE`, `PL`, `SG`, `L` and `B` are refused.

use super::support::word_at;
use crate::error::{Error, Result};

/// One piece of a numeric template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    /// `9` (`zero`: false) or `0`.
    Digit { zero: bool },
    /// `.` or `D`.
    Point,
    /// `,` or `G`.
    Group,
    /// `S`.
    Sign,
    /// `MI`.
    Minus,
    /// `TH` (`upper`) or `th`.
    Ordinal { upper: bool },
    /// Text copied as it is.
    Text(String),
}

/// Where the sign of a number goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SignAt {
    /// One position before the number's first character (blank when not negative).
    Default,
    /// `S` before the digits: `+` or `-` before the number.
    Before,
    /// `S` after the digits: `+` or `-` after the number.
    After,
    /// `MI`: `-` at the `MI`, nothing in the number.
    Minus,
    /// `PR`: `<` and `>` around a negative number (blanks around another).
    Brackets,
}

/// A numeric template, read once.
#[derive(Debug, Clone)]
pub(super) struct NumberTemplate {
    nodes: Vec<Node>,
    /// Digit positions before the point, and after it.
    pre: usize,
    post: usize,
    /// `FM`.
    fill: bool,
    sign: SignAt,
    /// Index among the integer digit positions of the first `0`.
    zero_start: Option<usize>,
    /// How many decimals a `0` keeps with `FM` (the position of the last `0` after the point).
    zero_post: usize,
}

impl NumberTemplate {
    /// Reads `text`; a field weir does not write is an error naming it.
    pub(super) fn parse(text: &str) -> Result<NumberTemplate> {
        let chars: Vec<char> = text.chars().collect();
        let mut t = NumberTemplate {
            nodes: Vec::new(),
            pre: 0,
            post: 0,
            fill: false,
            sign: SignAt::Default,
            zero_start: None,
            zero_post: 0,
        };
        let mut point = false;
        let mut sign_given = false;
        let mut i = 0;
        let starts = |i: usize, word: &str| word_at(&chars, i, word);
        let refuse = |what: &str| {
            Err(Error::Type(format!(
                "to_char of a number does not support '{what}' in its template"
            )))
        };
        let mut set_sign = |t: &mut NumberTemplate, at: SignAt, word: &str| {
            if sign_given {
                return Err(Error::Type(format!(
                    "to_char: '{word}' with another sign field (S, MI or PR) in one template"
                )));
            }
            sign_given = true;
            t.sign = at;
            Ok(())
        };
        while i < chars.len() {
            let c = chars[i];
            if starts(i, "FM") {
                t.fill = true;
                i += 2;
                continue;
            }
            for word in ["EEEE", "RN", "PL", "SG"] {
                if starts(i, word) {
                    return refuse(word);
                }
            }
            if starts(i, "MI") {
                set_sign(&mut t, SignAt::Minus, "MI")?;
                t.nodes.push(Node::Minus);
                i += 2;
                continue;
            }
            if starts(i, "PR") {
                set_sign(&mut t, SignAt::Brackets, "PR")?;
                i += 2;
                continue;
            }
            if starts(i, "TH") {
                t.nodes.push(Node::Ordinal { upper: c == 'T' });
                i += 2;
                continue;
            }
            match c {
                '9' | '0' => {
                    let zero = c == '0';
                    if point {
                        t.post += 1;
                        if zero {
                            t.zero_post = t.post;
                        }
                    } else {
                        if zero && t.zero_start.is_none() {
                            t.zero_start = Some(t.pre);
                        }
                        t.pre += 1;
                    }
                    t.nodes.push(Node::Digit { zero });
                }
                '.' | 'D' | 'd' => {
                    if point {
                        return Err(Error::Type(
                            "to_char: a template with more than one decimal point".into(),
                        ));
                    }
                    point = true;
                    t.nodes.push(Node::Point);
                }
                ',' | 'G' | 'g' => t.nodes.push(Node::Group),
                'S' | 's' => {
                    let at = if point || t.pre > 0 {
                        SignAt::After
                    } else {
                        SignAt::Before
                    };
                    set_sign(&mut t, at, "S")?;
                    t.nodes.push(Node::Sign);
                }
                'V' | 'v' | 'L' | 'l' | 'B' | 'b' => return refuse(&c.to_string()),
                '"' => {
                    let mut text = String::new();
                    i += 1;
                    while i < chars.len() && chars[i] != '"' {
                        if chars[i] == '\\' && i + 1 < chars.len() {
                            i += 1;
                        }
                        text.push(chars[i]);
                        i += 1;
                    }
                    t.nodes.push(Node::Text(text));
                }
                other => t.nodes.push(Node::Text(other.to_string())),
            }
            i += 1;
        }
        // `S` before the point but after every integer digit is written after the number.
        if t.sign == SignAt::Before {
            let digits_after = t
                .nodes
                .iter()
                .skip_while(|n| **n != Node::Sign)
                .any(|n| matches!(n, Node::Digit { .. }));
            if !digits_after {
                t.sign = SignAt::After;
            }
        }
        Ok(t)
    }

    /// Writes the template's positions as `#`s, as for a number too large for it (NaN and
    /// the infinities, as PostgreSQL writes them).
    pub(super) fn write_hashes(&self, out: &mut String) {
        self.write(false, &"9".repeat(self.pre + 1), "", out);
    }

    /// The decimals the number is rounded to.
    pub(super) fn decimals(&self) -> usize {
        self.post
    }

    /// Writes a number into `out`: `negative` its sign, `int` its integer digits (no leading
    /// zeros; `0` for zero) and `frac` its `decimals()` decimals, already rounded.
    pub(super) fn write(&self, negative: bool, int: &str, frac: &str, out: &mut String) {
        out.clear();
        // A template without integer positions writes no integer zero.
        let int = if int == "0" && self.pre == 0 { "" } else { int };
        // `0.5` by `9.9` is ` .5`: the integer zero before decimals is a blank unless a `0`
        // position asks for it.
        let predec_blank = self.zero_start.is_none() && int == "0" && self.post > 0;
        let overflow = int.len() > self.pre;
        // The number's characters as the template places them: integer digits right-aligned.
        let lead = self.pre.saturating_sub(int.len());
        let int_digits: Vec<char> = if overflow {
            vec!['#'; self.pre]
        } else {
            int.chars().collect()
        };
        let frac_digits: Vec<char> = if overflow {
            vec!['#'; self.post]
        } else {
            frac.chars().collect()
        };
        // With FM, the decimals kept: up to the last that is not zero, or the last `0`.
        let kept_post = if self.fill && !overflow {
            let relevant = frac_digits
                .iter()
                .rposition(|&d| d != '0')
                .map_or(0, |p| p + 1);
            relevant.max(self.zero_post)
        } else {
            self.post
        };
        let zero_from = self.zero_start.unwrap_or(usize::MAX);
        // The first integer position that writes a character of the number (a digit, or a
        // zero of the `0` fill); with no integer digits, the point.
        let first = lead.min(zero_from);
        let (minus, plus) = match self.sign {
            SignAt::Brackets => ('<', ' '),
            _ => ('-', '+'),
        };
        let mut sign_wrote = matches!(self.sign, SignAt::Minus | SignAt::After);
        let write_sign = |out: &mut String, sign_wrote: &mut bool| {
            if *sign_wrote {
                return;
            }
            *sign_wrote = true;
            match self.sign {
                SignAt::Default if !negative => {
                    if !self.fill {
                        out.push(' ');
                    }
                }
                SignAt::Brackets if !negative => {
                    if !self.fill {
                        out.push(' ');
                    }
                }
                SignAt::Before => out.push(if negative { '-' } else { '+' }),
                _ => out.push(if negative { minus } else { plus }),
            }
        };
        let mut in_number = false;
        let mut pos = 0; // integer position
        let mut after_point = 0; // decimal position
        let mut point_seen = false;
        let last_numeric = self
            .nodes
            .iter()
            .rposition(|n| matches!(n, Node::Digit { .. } | Node::Point));
        for (k, node) in self.nodes.iter().enumerate() {
            match node {
                Node::Digit { .. } if !point_seen => {
                    if pos < first {
                        if !self.fill {
                            out.push(' ');
                        }
                        in_number = false;
                    } else if predec_blank && pos == lead {
                        // With FM and no decimal kept, PostgreSQL writes `0.`.
                        if self.fill && kept_post == 0 {
                            write_sign(out, &mut sign_wrote);
                            out.push('0');
                        } else if !self.fill {
                            out.push(' ');
                        }
                        in_number = false;
                    } else {
                        write_sign(out, &mut sign_wrote);
                        if pos < lead {
                            out.push('0');
                        } else {
                            out.push(int_digits[pos - lead]);
                        }
                        in_number = true;
                    }
                    pos += 1;
                }
                Node::Digit { .. } => {
                    if after_point < kept_post {
                        out.push(frac_digits.get(after_point).copied().unwrap_or('0'));
                    }
                    after_point += 1;
                }
                Node::Point => {
                    point_seen = true;
                    write_sign(out, &mut sign_wrote);
                    // FM with no decimal kept still writes the point, as PostgreSQL does.
                    out.push('.');
                    in_number = true;
                }
                Node::Group => {
                    if in_number {
                        out.push(',');
                    } else if !self.fill {
                        out.push(' ');
                    }
                }
                Node::Sign => {
                    if self.sign == SignAt::After {
                        out.push(if negative { '-' } else { '+' });
                    }
                }
                Node::Minus => {
                    if negative {
                        out.push('-');
                    } else if !self.fill {
                        out.push(' ');
                    }
                }
                Node::Ordinal { upper } => {
                    if !negative && frac.is_empty() && !overflow {
                        out.push_str(&ordinal(int, *upper));
                    }
                }
                Node::Text(text) => out.push_str(text),
            }
            if Some(k) == last_numeric && self.sign == SignAt::Brackets {
                if negative {
                    out.push('>');
                } else if !self.fill {
                    out.push(' ');
                }
            }
        }
    }
}

/// The ordinal ending of the integer written `digits` (`st`, `nd`, `rd`, `th`; `11`-`13`
/// take `th`).
fn ordinal(digits: &str, upper: bool) -> String {
    let b = digits.as_bytes();
    let last = b.last().map_or(0, |d| d - b'0');
    let tens = if b.len() >= 2 {
        b[b.len() - 2] - b'0'
    } else {
        0
    };
    let end = match (tens, last) {
        (1, _) => "th",
        (_, 1) => "st",
        (_, 2) => "nd",
        (_, 3) => "rd",
        _ => "th",
    };
    if upper {
        end.to_uppercase()
    } else {
        end.to_string()
    }
}

/// The sign, integer digits (`0` for zero) and `decimals` decimals of `v` rounded to them,
/// halves away from zero. `v` is an unscaled decimal of scale `scale`.
pub(super) fn decimal_parts(v: i128, scale: u8, decimals: usize) -> (bool, String, String) {
    let scale = scale as u32;
    let decimals_u = decimals.min(38) as u32;
    let magnitude = v.unsigned_abs();
    let rounded: u128 = if decimals_u >= scale {
        magnitude.saturating_mul(10u128.saturating_pow(decimals_u - scale))
    } else {
        let div = 10u128.pow(scale - decimals_u);
        let (q, r) = (magnitude / div, magnitude % div);
        if r * 2 >= div {
            q + 1
        } else {
            q
        }
    };
    let text = rounded.to_string();
    let d = decimals_u as usize;
    let (int, frac) = if text.len() > d {
        text.split_at(text.len() - d)
    } else {
        ("", text.as_str())
    };
    let frac = format!("{frac:0>d$}");
    let int = match int.trim_start_matches('0') {
        "" => "0".to_string(),
        digits => digits.to_string(),
    };
    (v < 0 && rounded != 0, int, frac)
}

/// [`decimal_parts`] of a DOUBLE, rounded as PostgreSQL rounds one (its exact binary value,
/// as `printf("%.*f")` does, so `2.675` to two decimals is `2.67`), with at most 15
/// significant digits (a DOUBLE's precision; the decimals past them are zeros).
pub(super) fn float_parts(v: f64, decimals: usize) -> Option<(bool, String, String)> {
    if !v.is_finite() {
        return None;
    }
    const DIGITS: usize = 15;
    let pre_len = format!("{:.0}", v.abs()).len();
    let kept = decimals.min(DIGITS.saturating_sub(pre_len));
    let text = format!("{:.*}", kept, v.abs());
    let (int, frac) = text.split_once('.').unwrap_or((text.as_str(), ""));
    let frac = format!("{frac:0<decimals$}");
    let int = match int.trim_start_matches('0') {
        "" => "0".to_string(),
        digits => digits.to_string(),
    };
    let zero = int == "0" && frac.bytes().all(|b| b == b'0');
    Some((v < 0.0 && !zero, int, frac))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt_int(v: i64, template: &str) -> String {
        let t = NumberTemplate::parse(template).unwrap();
        let (negative, int, frac) = decimal_parts(v as i128, 0, t.decimals());
        let mut out = String::new();
        t.write(negative, &int, &frac, &mut out);
        out
    }

    fn fmt_float(v: f64, template: &str) -> String {
        let t = NumberTemplate::parse(template).unwrap();
        let (negative, int, frac) = float_parts(v, t.decimals()).unwrap();
        let mut out = String::new();
        t.write(negative, &int, &frac, &mut out);
        out
    }

    /// The examples of PostgreSQL's documentation (table "to_char Examples").
    #[test]
    fn postgresql_documented_examples() {
        assert_eq!(fmt_float(-0.1, "99.99"), "  -.10");
        assert_eq!(fmt_float(-0.1, "FM9.99"), "-.1");
        assert_eq!(fmt_float(-0.1, "FM90.99"), "-0.1");
        assert_eq!(fmt_float(0.1, "0.9"), " 0.1");
        assert_eq!(fmt_int(12, "9990999.9"), "    0012.0");
        assert_eq!(fmt_int(12, "FM9990999.9"), "0012.");
        assert_eq!(fmt_int(485, "999"), " 485");
        assert_eq!(fmt_int(-485, "999"), "-485");
        assert_eq!(fmt_int(485, "9 9 9"), " 4 8 5");
        assert_eq!(fmt_int(1485, "9,999"), " 1,485");
        assert_eq!(fmt_int(1485, "9G999"), " 1,485");
        assert_eq!(fmt_float(148.5, "999.999"), " 148.500");
        assert_eq!(fmt_float(148.5, "FM999.999"), "148.5");
        assert_eq!(fmt_float(148.5, "FM999.990"), "148.500");
        assert_eq!(fmt_float(148.5, "999D999"), " 148.500");
        assert_eq!(fmt_float(3148.5, "9G999D999"), " 3,148.500");
        assert_eq!(fmt_int(-485, "999S"), "485-");
        assert_eq!(fmt_int(-485, "999MI"), "485-");
        assert_eq!(fmt_int(485, "999MI"), "485 ");
        assert_eq!(fmt_int(485, "FM999MI"), "485");
        assert_eq!(fmt_int(-485, "999PR"), "<485>");
        assert_eq!(fmt_int(482, "999th"), " 482nd");
        assert_eq!(fmt_int(485, "\"Good number:\"999"), "Good number: 485");
        assert_eq!(
            fmt_float(485.8, "\"Pre:\"999\" Post:\" .999"),
            "Pre: 485 Post: .800"
        );
        assert_eq!(fmt_int(-12, "S9999"), "  -12");
        assert_eq!(fmt_int(-12, "MI9999"), "-  12");
    }

    #[test]
    fn rounding_overflow_and_zero() {
        // A DOUBLE rounds by its binary value, a DECIMAL by its digits.
        assert_eq!(fmt_float(2.675, "9.99"), " 2.67");
        assert_eq!(decimal_parts(2675, 3, 2).2, "68");
        assert_eq!(fmt_float(1e20, "9999"), " ####");
        assert_eq!(fmt_float(0.1 + 0.2, "FM9.999999999999999999"), ".3");
        assert_eq!(fmt_float(-0.004, "9.99"), "  .00");
        assert_eq!(fmt_int(1234, "99"), " ##");
        assert_eq!(fmt_float(123.4, "99.9"), " ##.#");
        assert_eq!(fmt_int(0, "999"), "   0");
        assert_eq!(fmt_float(0.5, "9.9"), "  .5");
        assert_eq!(fmt_float(0.0, "FM9.99"), "0.");
        assert_eq!(fmt_float(0.5, ".99"), " .50");
        assert_eq!(fmt_int(0, "990"), "   0");
        assert_eq!(fmt_int(7, "000"), " 007");
        assert_eq!(fmt_int(-7, "000"), "-007");
        assert_eq!(fmt_int(1234567, "FM9,999,999"), "1,234,567");
        assert_eq!(fmt_int(1234, "9,999,999"), "     1,234");
        assert_eq!(fmt_int(11, "99TH"), " 11TH");
        let mut out = String::new();
        NumberTemplate::parse("99.9")
            .unwrap()
            .write_hashes(&mut out);
        assert_eq!(out, " ##.#");
        let (neg, int, frac) = decimal_parts(-12_345, 2, 1);
        assert_eq!((neg, int.as_str(), frac.as_str()), (true, "123", "5"));
    }

    #[test]
    fn fields_weir_does_not_write_are_refused() {
        for t in [
            "9.99EEEE", "RN", "99V9", "L999", "PL999", "SG999", "9.9.9", "S999MI",
        ] {
            assert!(NumberTemplate::parse(t).is_err(), "{t}");
        }
    }
}
