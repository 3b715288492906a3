//! Splitting a text into parts, as `string_to_table` and `regexp_split_to_table` do, one part
//! at a time: a cursor keeps only where the next part starts, so a text of millions of parts
//! never has them all in memory, and each part is given as a byte range of the text, which
//! a caller copies once, into its output.

use super::regex::{Compiled, Flags};
use crate::error::{Error, Result};
use regex::Regex;
use std::ops::Range;

/// Where the next part of a text split by a delimiter starts, as PostgreSQL's
/// `string_to_table` splits: each character when the delimiter is `None` (NULL), the whole
/// text when it is empty, nothing when the text is empty.
///
/// ```
/// use weir_operators::functions::DelimitedParts;
/// let text = ",a,,b";
/// let mut parts = DelimitedParts::new(text);
/// let mut found = Vec::new();
/// while let Some(p) = parts.next_part(text, Some(",")) {
///     found.push(&text[p]);
/// }
/// assert_eq!(found, ["", "a", "", "b"]);
/// assert!(parts.is_done());
/// ```
#[derive(Debug, Clone, Copy)]
pub struct DelimitedParts {
    next: Option<usize>,
}

impl DelimitedParts {
    /// The parts of `text`, none read yet.
    pub fn new(text: &str) -> Self {
        DelimitedParts {
            next: (!text.is_empty()).then_some(0),
        }
    }

    /// Whether every part was read.
    pub fn is_done(&self) -> bool {
        self.next.is_none()
    }

    /// The next part of `text` (the text this cursor was made for) between occurrences of
    /// `delimiter`, or `None` after the last.
    pub fn next_part(&mut self, text: &str, delimiter: Option<&str>) -> Option<Range<usize>> {
        let start = self.next?;
        let rest = text.get(start..).unwrap_or_default();
        let (part, next) = match delimiter {
            None => {
                let width = rest.chars().next().map_or(0, char::len_utf8);
                let end = start + width;
                (start..end, (end < text.len()).then_some(end))
            }
            Some("") => (start..text.len(), None),
            Some(d) => match rest.find(d) {
                Some(at) => (start..start + at, Some(start + at + d.len())),
                None => (start..text.len(), None),
            },
        };
        self.next = next;
        Some(part)
    }
}

/// Where the next part of a text split by a regular expression starts, as PostgreSQL's
/// `regexp_split_to_table` splits: an empty match at the text's start or end, or right after
/// another match, separates nothing; an empty text is one empty part.
///
/// ```
/// use weir_operators::functions::{PatternParts, Patterns};
/// let text = "one  two,three";
/// let mut patterns = Patterns::default();
/// let regex = patterns.get("[ ,]+", "").unwrap();
/// let mut parts = PatternParts::default();
/// let mut words = Vec::new();
/// while let Some(p) = parts.next_part(regex, text) {
///     words.push(&text[p]);
/// }
/// assert_eq!(words, ["one", "two", "three"]);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct PatternParts {
    /// Where the part being read starts.
    part_start: usize,
    /// Where the next match is looked for.
    search: usize,
    done: bool,
}

impl PatternParts {
    /// Whether every part was read.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The next part of `text` (the text this cursor was made for) between matches of
    /// `regex`, or `None` after the last.
    pub fn next_part(&mut self, regex: &Regex, text: &str) -> Option<Range<usize>> {
        if self.done {
            return None;
        }
        while self.search <= text.len() {
            let Some(m) = regex.find_at(text, self.search) else {
                break;
            };
            // PostgreSQL's rule: a match counts when it starts before the end and ends after
            // the last counted one.
            let counts = m.start() < text.len() && m.end() > self.part_start;
            self.search = if m.is_empty() {
                // One character on: an empty match would be found again.
                m.end() + text[m.end()..].chars().next().map_or(1, char::len_utf8)
            } else {
                m.end()
            };
            if counts {
                let part = self.part_start..m.start();
                self.part_start = m.end();
                return Some(part);
            }
        }
        self.done = true;
        Some(self.part_start..text.len())
    }
}

/// The regular expressions of `regexp_split_to_table`: the last one compiled is kept while
/// the rows' pattern and flags stay the same.
#[derive(Default)]
pub struct Patterns {
    compiled: Compiled,
}

impl Patterns {
    /// `pattern` read with `flags` (`i`: case insensitive, `c`: sensitive; `g` is refused
    /// as PostgreSQL refuses it), compiled.
    pub fn get(&mut self, pattern: &str, flags: &str) -> Result<&Regex> {
        if flags.contains('g') {
            return Err(Error::Arithmetic(
                "regexp_split_to_table() does not support the \"global\" option".into(),
            ));
        }
        let flags = Flags::parse(flags, false)?;
        self.compiled.get(pattern, flags.insensitive)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern_parts(text: &str, pattern: &str) -> Vec<String> {
        let mut patterns = Patterns::default();
        let regex = patterns.get(pattern, "").unwrap();
        let mut parts = PatternParts::default();
        let mut out = Vec::new();
        while let Some(p) = parts.next_part(regex, text) {
            out.push(text[p].to_string());
        }
        assert!(parts.is_done() && parts.next_part(regex, text).is_none());
        out
    }

    fn delimited(text: &str, delimiter: Option<&str>) -> Vec<Range<usize>> {
        let mut parts = DelimitedParts::new(text);
        let mut out = Vec::new();
        while let Some(p) = parts.next_part(text, delimiter) {
            out.push(p);
        }
        assert!(parts.is_done());
        out
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
        let mut patterns = Patterns::default();
        let regex = patterns.get("x", "i").unwrap();
        let mut parts = PatternParts::default();
        assert_eq!(parts.next_part(regex, "aXbxc"), Some(0..1));
        assert_eq!(parts.next_part(regex, "aXbxc"), Some(2..3));
        let e = patterns.get(",", "g").unwrap_err();
        assert!(
            e.to_string().contains("does not support the \"global\""),
            "{e}"
        );
        let e = patterns.get("(", "").unwrap_err();
        assert!(e.to_string().contains("invalid regular expression"), "{e}");
    }

    #[test]
    fn delimiters_split_as_postgresql_does() {
        assert!(delimited("", Some(",")).is_empty());
        assert_eq!(delimited("abc", Some("")).len(), 1);
        assert_eq!(delimited("a<>b<>", Some("<>")), [0..1, 3..4, 6..6]);
        assert_eq!(delimited("aé", None), [0..1, 1..3]);
        assert_eq!(delimited("a,", Some(",")), [0..1, 2..2]);
    }
}
