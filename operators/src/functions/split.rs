//! Splitting a text into parts, as `string_to_table` and `regexp_split_to_table` do: the parts
//! are given as byte ranges of the text, so a caller copies each part once, into its output.

use super::regex::{Compiled, Flags};
use crate::error::{Error, Result};
use std::ops::Range;

/// The parts of `text` between occurrences of `delimiter`, into `parts` (cleared first), as
/// PostgreSQL's `string_to_table`: each character when `delimiter` is `None` (NULL), the
/// whole text when it is empty, nothing when the text is empty.
///
/// ```
/// use weir_operators::functions::split_text;
/// let mut parts = Vec::new();
/// split_text(",a,,b", Some(","), &mut parts);
/// let text: Vec<&str> = parts.iter().map(|r| &",a,,b"[r.clone()]).collect();
/// assert_eq!(text, ["", "a", "", "b"]);
/// split_text("ab", None, &mut parts);
/// assert_eq!(parts, [0..1, 1..2]);
/// ```
pub fn split_text(text: &str, delimiter: Option<&str>, parts: &mut Vec<Range<usize>>) {
    parts.clear();
    if text.is_empty() {
        return;
    }
    match delimiter {
        None => parts.extend(text.char_indices().map(|(i, c)| i..i + c.len_utf8())),
        Some("") => parts.push(0..text.len()),
        Some(d) => {
            let mut start = 0;
            for (at, _) in text.match_indices(d) {
                parts.push(start..at);
                start = at + d.len();
            }
            parts.push(start..text.len());
        }
    }
}

/// Splits texts by regular expressions, keeping the last pattern compiled while the rows'
/// pattern and flags stay the same.
#[derive(Default)]
pub struct PatternSplitter {
    compiled: Compiled,
}

impl PatternSplitter {
    /// The parts of `text` between the matches of `pattern` read with `flags` (`i`: case
    /// insensitive), into `parts` (cleared first), as PostgreSQL's `regexp_split_to_table`:
    /// an empty match at the text's start or end, or right after another match, separates
    /// nothing; an empty text is one empty part.
    ///
    /// ```
    /// use weir_operators::functions::PatternSplitter;
    /// let mut parts = Vec::new();
    /// let text = "one  two,three";
    /// PatternSplitter::default().split(text, "[ ,]+", "", &mut parts).unwrap();
    /// let words: Vec<&str> = parts.iter().map(|r| &text[r.clone()]).collect();
    /// assert_eq!(words, ["one", "two", "three"]);
    /// ```
    pub fn split(
        &mut self,
        text: &str,
        pattern: &str,
        flags: &str,
        parts: &mut Vec<Range<usize>>,
    ) -> Result<()> {
        if flags.contains('g') {
            return Err(Error::Arithmetic(
                "regexp_split_to_table() does not support the \"global\" option".into(),
            ));
        }
        let flags = Flags::parse(flags, false)?;
        let regex = self.compiled.get(pattern, flags.insensitive)?;
        parts.clear();
        let mut part_start = 0;
        let mut search = 0;
        while search <= text.len() {
            let Some(m) = regex.find_at(text, search) else {
                break;
            };
            // PostgreSQL's rule: a match counts when it starts before the end and ends after
            // the last counted one (so an empty match at the start, at the end or right
            // after a match does not).
            if m.start() < text.len() && m.end() > part_start {
                parts.push(part_start..m.start());
                part_start = m.end();
            }
            search = if m.is_empty() {
                // One character on: an empty match would be found again.
                match text[m.end()..].chars().next() {
                    Some(c) => m.end() + c.len_utf8(),
                    None => break,
                }
            } else {
                m.end()
            };
        }
        parts.push(part_start..text.len());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern_parts(text: &str, pattern: &str) -> Vec<String> {
        let mut parts = Vec::new();
        PatternSplitter::default()
            .split(text, pattern, "", &mut parts)
            .unwrap();
        parts.iter().map(|r| text[r.clone()].to_string()).collect()
    }

    #[test]
    fn empty_matches_split_between_characters_as_postgresql_does() {
        // Answers of PostgreSQL 15.
        assert_eq!(
            pattern_parts("hello world", "\\s*"),
            ["h", "e", "l", "l", "o", "w", "o", "r", "l", "d"]
        );
        assert_eq!(pattern_parts("abc", ""), ["a", "b", "c"]);
        assert_eq!(pattern_parts("a1b22c", "\\d*"), ["a", "b", "c"]);
        assert_eq!(pattern_parts(",a,", ","), ["", "a", ""]);
        assert_eq!(pattern_parts("", "x"), [""]);
        assert_eq!(pattern_parts("żółw", ""), ["ż", "ó", "ł", "w"]);
    }

    #[test]
    fn flags_read_case_and_refuse_global() {
        let mut parts = Vec::new();
        let mut splitter = PatternSplitter::default();
        splitter.split("aXbxc", "x", "i", &mut parts).unwrap();
        assert_eq!(parts, [0..1, 2..3, 4..5]);
        let e = splitter.split("a", ",", "g", &mut parts).unwrap_err();
        assert!(
            e.to_string().contains("does not support the \"global\""),
            "{e}"
        );
        let e = splitter.split("a", "(", "", &mut parts).unwrap_err();
        assert!(e.to_string().contains("invalid regular expression"), "{e}");
    }

    #[test]
    fn delimiters_split_as_postgresql_does() {
        let mut parts = Vec::new();
        split_text("", Some(","), &mut parts);
        assert!(parts.is_empty());
        split_text("abc", Some(""), &mut parts);
        assert_eq!(parts.as_slice(), std::slice::from_ref(&(0..3)));
        split_text("a<>b<>", Some("<>"), &mut parts);
        assert_eq!(parts, [0..1, 3..4, 6..6]);
    }
}
