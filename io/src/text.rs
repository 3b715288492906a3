//! Text fields to typed values and back, for CSV: integers, doubles, exact decimals,
//! booleans, dates (`YYYY-MM-DD`) and timestamps (`YYYY-MM-DD HH:MM:SS[.ffffff]`, a `T`
//! allowed between date and time). An error quotes at most [`EXCERPT_CHARS`] characters of
//! the field, escaped: a file's contents do not travel in error messages.

use weir_operators::{decimal, temporal, ColumnBuilder, DataType};

/// Characters of a bad field an error quotes.
pub const EXCERPT_CHARS: usize = 32;

/// `text` as an error quotes it: in single quotes, at most [`EXCERPT_CHARS`] characters,
/// control characters and any non-ASCII one but a letter or digit escaped (`\n`,
/// `\u{202e}`), `...` after a cut.
///
/// ```
/// use weir_io::excerpt;
/// assert_eq!(excerpt("1x2"), "'1x2'");
/// assert_eq!(excerpt("a\tb é\u{202e}"), "'a\\tb é\\u{202e}'");
/// assert_eq!(excerpt(&"z".repeat(100)), format!("'{}'...", "z".repeat(32)));
/// ```
pub fn excerpt(text: &str) -> String {
    let mut out = String::from("'");
    for c in text.chars().take(EXCERPT_CHARS) {
        if c.is_control() || !c.is_ascii() && !c.is_alphanumeric() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    if text.chars().nth(EXCERPT_CHARS).is_some() {
        out.push_str("...");
    }
    out
}

/// Appends `text` to `builder` as a value of the builder's type, or says why it is not one
/// (quoting an [`excerpt`] of it).
pub(crate) fn push_text(builder: &mut ColumnBuilder, text: &str) -> Result<(), String> {
    let t = text.trim();
    match builder.data_type() {
        DataType::Int64 => builder.push_i64(
            t.parse::<i64>()
                .map_err(|_| format!("{} is not a BIGINT", excerpt(text)))?,
        ),
        DataType::Float64 => builder.push_f64(
            t.parse::<f64>()
                .map_err(|_| format!("{} is not a DOUBLE", excerpt(text)))?,
        ),
        DataType::Decimal { precision, scale } => {
            let v = decimal::parse(t, scale)
                .filter(|v| decimal::fits(*v, precision))
                .ok_or_else(|| {
                    format!("{} is not a DECIMAL({precision}, {scale})", excerpt(text))
                })?;
            builder.push_decimal(v)
        }
        DataType::Utf8 => builder.push_str(text),
        DataType::Boolean => builder.push_bool(parse_bool(t).ok_or_else(|| {
            format!(
                "{} is not a BOOLEAN (true/false, t/f, yes/no, 1/0)",
                excerpt(text)
            )
        })?),
        DataType::Date => builder.push_date(
            temporal::parse_date(t)
                .ok_or_else(|| format!("{} is not a DATE (YYYY-MM-DD)", excerpt(text)))?,
        ),
        DataType::Timestamp => {
            builder.push_timestamp(temporal::parse_timestamp(t).ok_or_else(|| {
                format!(
                    "{} is not a TIMESTAMP (YYYY-MM-DD HH:MM:SS[.ffffff])",
                    excerpt(text)
                )
            })?)
        }
    }
    Ok(())
}

fn parse_bool(t: &str) -> Option<bool> {
    match t.to_ascii_lowercase().as_str() {
        "true" | "t" | "yes" | "y" | "1" => Some(true),
        "false" | "f" | "no" | "n" | "0" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_parses_and_bad_text_is_named() {
        let mut b = ColumnBuilder::new(DataType::decimal(5, 2), 2);
        push_text(&mut b, "12.5").unwrap();
        assert_eq!(b.finish().value(0).to_string(), "12.50");
        let mut b = ColumnBuilder::new(DataType::decimal(3, 2), 1);
        assert!(push_text(&mut b, "123.4")
            .unwrap_err()
            .contains("DECIMAL(3, 2)"));
        let mut b = ColumnBuilder::new(DataType::Int64, 1);
        assert!(push_text(&mut b, "x1")
            .unwrap_err()
            .contains("'x1' is not a BIGINT"));
        let mut b = ColumnBuilder::new(DataType::Date, 1);
        push_text(&mut b, "2024-02-29").unwrap();
        assert_eq!(b.finish().value(0).to_string(), "2024-02-29");
        let mut b = ColumnBuilder::new(DataType::Boolean, 2);
        push_text(&mut b, "T").unwrap();
        assert!(push_text(&mut b, "maybe").is_err());
    }
}
