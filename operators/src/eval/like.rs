//! `LIKE` with an optional escape character: a constant pattern is compiled once per batch
//! (to an exact, prefix, suffix or substring test where it can be), a per-row pattern once
//! per row.

use super::side::{str_at, str_side, StrSide};
use super::val::{and_validity, null_of, owned, to_scalar, Val};
use crate::column::{Column, ColumnData};
use crate::error::{Error, Result};
use crate::types::DataType;
use crate::value::Value;

/// One token of a LIKE pattern.
#[derive(Debug, Clone, Copy, PartialEq)]
enum LikeTok {
    /// This character.
    Char(char),
    /// `_`: any one character.
    One,
    /// `%`: any run of characters.
    Many,
}

/// A compiled LIKE pattern.
#[derive(Debug)]
enum LikeMatcher {
    Exact(Vec<u8>),
    Prefix(Vec<u8>),
    Suffix(Vec<u8>),
    Contains(Box<memchr::memmem::Finder<'static>>),
    All,
    Parts(Box<Parts>),
    General(Vec<LikeTok>),
}

/// Literal parts between `%`s and no `_`: `first`, then each of `middle` in order (each at
/// its leftmost place after the one before), then `last` (`'%special%requests%'`). Bytes are
/// compared: a valid UTF-8 literal only matches whole characters.
#[derive(Debug)]
struct Parts {
    first: Vec<u8>,
    middle: Vec<memchr::memmem::Finder<'static>>,
    last: Vec<u8>,
}

impl Parts {
    #[inline]
    fn matches(&self, s: &[u8]) -> bool {
        let (first, last) = (self.first.as_slice(), self.last.as_slice());
        if s.len() < first.len() + last.len()
            || (!first.is_empty() && !s.starts_with(first))
            || (!last.is_empty() && !s.ends_with(last))
        {
            return false;
        }
        let mut rest = &s[first.len()..s.len() - last.len()];
        for m in &self.middle {
            match m.find(rest) {
                Some(at) => rest = &rest[at + m.needle().len()..],
                None => return false,
            }
        }
        true
    }
}

impl LikeMatcher {
    fn compile(pattern: &str, escape: Option<char>) -> LikeMatcher {
        let escaped = escape.is_some_and(|e| pattern.contains(e));
        if !escaped && !pattern.contains('_') {
            let parts: Vec<&str> = pattern.split('%').collect();
            match parts.as_slice() {
                [exact] => return LikeMatcher::Exact(exact.as_bytes().to_vec()),
                [p, ""] => return LikeMatcher::Prefix(p.as_bytes().to_vec()),
                ["", s] => return LikeMatcher::Suffix(s.as_bytes().to_vec()),
                ["", c, ""] => {
                    return LikeMatcher::Contains(Box::new(
                        memchr::memmem::Finder::new(c.as_bytes()).into_owned(),
                    ))
                }
                _ if parts.iter().all(|p| p.is_empty()) => return LikeMatcher::All,
                [first, middle @ .., last] => {
                    return LikeMatcher::Parts(Box::new(Parts {
                        first: first.as_bytes().to_vec(),
                        middle: middle
                            .iter()
                            .filter(|m| !m.is_empty())
                            .map(|m| memchr::memmem::Finder::new(m.as_bytes()).into_owned())
                            .collect(),
                        last: last.as_bytes().to_vec(),
                    }))
                }
                [] => {}
            }
        }
        let mut toks: Vec<LikeTok> = Vec::with_capacity(pattern.len());
        let mut chars = pattern.chars();
        while let Some(ch) = chars.next() {
            if Some(ch) == escape {
                // The escaped character is literal; a trailing escape matches itself.
                toks.push(LikeTok::Char(chars.next().unwrap_or(ch)));
                continue;
            }
            let t = match ch {
                '%' => LikeTok::Many,
                '_' => LikeTok::One,
                c => LikeTok::Char(c),
            };
            if t == LikeTok::Many && toks.last() == Some(&LikeTok::Many) {
                continue;
            }
            toks.push(t);
        }
        LikeMatcher::General(toks)
    }

    /// Whether `s` matches; `buf` is scratch space reused across rows.
    #[inline]
    fn matches(&self, s: &[u8], buf: &mut Vec<char>) -> bool {
        match self {
            LikeMatcher::Exact(p) => s == p.as_slice(),
            LikeMatcher::Prefix(p) => s.starts_with(p),
            LikeMatcher::Suffix(p) => s.ends_with(p),
            LikeMatcher::Contains(p) => p.find(s).is_some(),
            LikeMatcher::Parts(p) => p.matches(s),
            LikeMatcher::All => true,
            LikeMatcher::General(toks) => {
                buf.clear();
                buf.extend(String::from_utf8_lossy(s).chars());
                like_general(toks, buf)
            }
        }
    }
}

/// Matches `s` against a general pattern with backtracking on the last `%`.
fn like_general(toks: &[LikeTok], s: &[char]) -> bool {
    let (mut p, mut i) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while i < s.len() {
        if p < toks.len() {
            match toks[p] {
                LikeTok::Char(c) if c == s[i] => {
                    p += 1;
                    i += 1;
                    continue;
                }
                LikeTok::One => {
                    p += 1;
                    i += 1;
                    continue;
                }
                LikeTok::Many => {
                    star = Some((p, i));
                    p += 1;
                    continue;
                }
                LikeTok::Char(_) => {}
            }
        }
        match star {
            Some((sp, si)) => {
                p = sp + 1;
                i = si + 1;
                star = Some((sp, si + 1));
            }
            None => return false,
        }
    }
    while p < toks.len() && toks[p] == LikeTok::Many {
        p += 1;
    }
    p == toks.len()
}

/// `x LIKE p [ESCAPE escape]` over `n` rows; NULL where either side is NULL.
pub(super) fn like<'a>(x: Val<'a>, p: Val<'a>, escape: Option<char>, n: usize) -> Result<Val<'a>> {
    for v in [&x, &p] {
        if let Some(t) = v.dt().filter(|t| *t != DataType::Utf8) {
            return Err(Error::Type(format!("LIKE needs VARCHAR operands, got {t}")));
        }
    }
    if x.is_null_scalar() || p.is_null_scalar() {
        return Ok(null_of(Some(DataType::Boolean)));
    }
    let both_scalar = x.is_scalar() && p.is_scalar();
    let len = if both_scalar { 1 } else { n };
    let mut buf = Vec::new();
    let validity = and_validity(x.validity(), p.validity());
    let values: Vec<bool> = match &p {
        Val::Scalar(Value::Str(pat), _) => {
            let m = LikeMatcher::compile(pat, escape);
            match str_side(&x) {
                StrSide::Col { offsets, bytes } => offsets
                    .windows(2)
                    .map(|w| m.matches(&bytes[w[0] as usize..w[1] as usize], &mut buf))
                    .collect(),
                StrSide::Scalar(s) => vec![m.matches(s, &mut buf); len],
            }
        }
        _ => {
            // Per-row patterns: compile each one.
            let xs = str_side(&x);
            let ps = str_side(&p);
            (0..len)
                .map(|i| {
                    let s = match &xs {
                        StrSide::Col { offsets, bytes } => str_at(offsets, bytes, i),
                        StrSide::Scalar(s) => s,
                    };
                    let pat = match &ps {
                        StrSide::Col { offsets, bytes } => str_at(offsets, bytes, i),
                        StrSide::Scalar(s) => s,
                    };
                    LikeMatcher::compile(&String::from_utf8_lossy(pat), escape).matches(s, &mut buf)
                })
                .collect()
        }
    };
    let col = Column::with_validity(ColumnData::Boolean(values), validity);
    Ok(if both_scalar {
        to_scalar(owned(col))
    } else {
        owned(col)
    })
}

#[cfg(test)]
mod tests {
    use crate::eval::evaluate_scalar;
    use crate::eval::testing::vals;
    use crate::{Expr, Value};

    #[test]
    fn like_escape() {
        let like = |s: &str, p: &str| {
            let e = Expr::Like {
                expr: Box::new(Expr::lit(s)),
                pattern: Box::new(Expr::lit(p)),
                negated: false,
                escape: Some('!'),
            };
            evaluate_scalar(&e, &[]).unwrap()
        };
        assert_eq!(like("50%", "50!%"), true.into());
        assert_eq!(like("500", "50!%"), false.into());
        assert_eq!(like("a_b", "a!_%"), true.into());
        assert_eq!(like("axb", "a!_%"), false.into());
        assert_eq!(like("a!b", "a!!b"), true.into());
        assert_eq!(like("abc", "a%"), true.into());
    }

    /// Every compiled form answers as the general matcher does, for every pattern of `a`, `b`
    /// and `%` and every text of `a`, `b` and `é` up to five characters.
    #[test]
    fn compiled_patterns_agree_with_the_general_matcher() {
        use super::{like_general, LikeMatcher, LikeTok};
        fn words(alphabet: &[char], max: usize) -> Vec<String> {
            let mut out = vec![String::new()];
            let mut last = vec![String::new()];
            for _ in 0..max {
                last = last
                    .iter()
                    .flat_map(|w| alphabet.iter().map(move |c| format!("{w}{c}")))
                    .collect();
                out.extend(last.iter().cloned());
            }
            out
        }
        let texts = words(&['a', 'b', 'é'], 5);
        for pattern in words(&['a', 'b', '%'], 5) {
            let compiled = LikeMatcher::compile(&pattern, None);
            let general: Vec<LikeTok> = pattern
                .chars()
                .map(|c| match c {
                    '%' => LikeTok::Many,
                    c => LikeTok::Char(c),
                })
                .collect();
            let mut buf = Vec::new();
            for text in &texts {
                let chars: Vec<char> = text.chars().collect();
                assert_eq!(
                    compiled.matches(text.as_bytes(), &mut buf),
                    like_general(&general, &chars),
                    "{text:?} LIKE {pattern:?} ({compiled:?})"
                );
            }
        }
    }

    #[test]
    fn like_patterns() {
        for (pat, expect) in [
            ("%an%", [false, true, false]),
            ("a%", [true, false, false]),
            ("%y", [false, false, true]),
            ("_a%a", [false, true, false]),
            ("apple", [true, false, false]),
            ("%", [true, true, true]),
            ("c_e%r_", [false, false, true]),
        ] {
            let e = Expr::Like {
                expr: Box::new(Expr::col(2)),
                pattern: Box::new(Expr::lit(pat)),
                negated: false,
                escape: None,
            };
            let v = vals(&e);
            assert_eq!(
                v,
                vec![
                    expect[0].into(),
                    expect[1].into(),
                    Value::Null,
                    expect[2].into()
                ],
                "{pat}"
            );
        }
    }
}
