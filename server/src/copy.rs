//! `COPY ... FROM STDIN` and `COPY ... TO STDOUT` through the protocol's copy sub-protocol,
//! so `psql`'s `\copy` and drivers' copy APIs work, in PostgreSQL's text and CSV formats.
//!
//! `FROM STDIN`: the client's CopyData is written to a file of the server's temporary
//! directory (or of the first directory the cluster's COPY may use, when
//! `ClusterBuilder::copy_dirs` limits them) as it arrives (never held in memory); at CopyDone weir's own `COPY ... FROM
//! 'file'` loads it (all or nothing, a bad row an error naming its line and column) and the
//! file is removed. The text format is read as tab-separated values with `\N` for NULL (its
//! backslash escapes are not decoded). `TO STDOUT`: the table's or query's rows stream out a
//! batch at a time, one CopyData per row.
//!
//! A `COPY` naming a file on the server is refused: a client must not read or write the
//! server's files.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use futures::{Stream, StreamExt};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::copy::CopyData;
use sqlparser::tokenizer::{Token, TokenWithSpan};
use weir_operators::Batch;
use weir_runtime::AsyncQueryStream;

use crate::errors::{to_pg, user_error};
use crate::types::text_value;

/// The two text formats of COPY.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CopyFormat {
    /// CSV (`FORMAT csv`) rather than PostgreSQL's text format.
    pub csv: bool,
    /// The first line names the columns.
    pub header: bool,
    /// The character between values: `,` for CSV, a tab for text.
    pub delimiter: char,
    /// The text standing for NULL: empty for CSV, `\N` for text.
    pub null: String,
}

/// A `COPY` between a table (or query) and the client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CopySpec {
    /// `FROM STDIN` (else `TO STDOUT`).
    pub from_stdin: bool,
    /// The table and its column list (`t (a, b)`), or a parenthesized query (TO only).
    pub target: String,
    /// The format.
    pub format: CopyFormat,
}

/// Reads a `COPY` statement's tokens: `COPY target {FROM STDIN | TO STDOUT} [WITH]
/// [(option value, ...)]` or the older `[CSV] [HEADER] [DELIMITER [AS] 'c'] [NULL [AS] 's']`.
pub fn parse_copy(sql: &str, tokens: &[TokenWithSpan]) -> PgWireResult<CopySpec> {
    let toks: Vec<&Token> = tokens
        .iter()
        .map(|t| &t.token)
        .filter(|t| !matches!(t, Token::Whitespace(_) | Token::EOF | Token::SemiColon))
        .collect();
    fn word(t: &Token) -> Option<String> {
        match t {
            Token::Word(w) => Some(w.value.to_ascii_uppercase()),
            _ => None,
        }
    }
    // The FROM or TO outside parentheses.
    let mut depth = 0i32;
    let mut at = None;
    for (i, t) in toks.iter().enumerate().skip(1) {
        match t {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            _ if depth == 0 && matches!(word(t).as_deref(), Some("FROM" | "TO")) => {
                at = Some(i);
                break;
            }
            _ => {}
        }
    }
    let Some(at) = at else {
        return Err(user_error("42601", "COPY needs FROM STDIN or TO STDOUT"));
    };
    let from_stdin = word(toks[at]).as_deref() == Some("FROM");
    match toks.get(at + 1).and_then(|t| word(t)).as_deref() {
        Some("STDIN") if from_stdin => {}
        Some("STDOUT") if !from_stdin => {}
        _ => {
            return Err(user_error(
                "0A000",
                "COPY reads from STDIN or writes to STDOUT only: a client may not read or \
                 write the server's files",
            ))
        }
    }
    let target: Vec<String> = toks[1..at].iter().map(|t| t.to_string()).collect();
    let target = join_tokens(&target);
    if target.is_empty() {
        return Err(user_error("42601", "COPY needs a table"));
    }
    if target.starts_with('(') && from_stdin {
        return Err(user_error("42601", "COPY FROM needs a table, not a query"));
    }
    let mut csv = false;
    let mut header = false;
    let mut delimiter = None;
    let mut null = None;
    let value = |t: Option<&&Token>| -> PgWireResult<String> {
        match t {
            Some(Token::SingleQuotedString(s)) => Ok(s.clone()),
            Some(Token::Word(w)) => Ok(w.value.clone()),
            Some(Token::Number(n, _)) => Ok(n.clone()),
            _ => Err(user_error(
                "42601",
                format!("syntax error in COPY options: {sql}"),
            )),
        }
    };
    let mut i = at + 2;
    while i < toks.len() {
        let t = toks[i];
        let key = word(t);
        match key.as_deref() {
            _ if matches!(t, Token::LParen | Token::RParen | Token::Comma) => {}
            Some("WITH" | "AS") => {}
            Some("CSV") => csv = true,
            Some("BINARY") => return Err(binary()),
            Some("FORMAT") => {
                i += 1;
                match value(toks.get(i))?.to_ascii_lowercase().as_str() {
                    "csv" => csv = true,
                    "text" => csv = false,
                    "binary" => return Err(binary()),
                    f => {
                        return Err(user_error(
                            "22023",
                            format!("COPY format \"{f}\" not recognized"),
                        ))
                    }
                }
            }
            Some("HEADER") => {
                header = true;
                if let Some(v) = toks.get(i + 1).and_then(|t| word(t)) {
                    match v.as_str() {
                        "TRUE" | "ON" => i += 1,
                        "FALSE" | "OFF" => {
                            header = false;
                            i += 1;
                        }
                        _ => {}
                    }
                }
            }
            Some("DELIMITER") => {
                i += 1;
                if toks.get(i).and_then(|t| word(t)).as_deref() == Some("AS") {
                    i += 1;
                }
                let d = value(toks.get(i))?;
                let mut chars = d.chars();
                match (chars.next(), chars.next()) {
                    (Some(c), None) => delimiter = Some(c),
                    _ => {
                        return Err(user_error(
                            "22023",
                            "COPY delimiter must be a single character",
                        ))
                    }
                }
            }
            Some("NULL") => {
                i += 1;
                if toks.get(i).and_then(|t| word(t)).as_deref() == Some("AS") {
                    i += 1;
                }
                null = Some(value(toks.get(i))?);
            }
            _ => {
                return Err(user_error(
                    "0A000",
                    format!("COPY option {t} is not supported"),
                ))
            }
        }
        i += 1;
    }
    Ok(CopySpec {
        from_stdin,
        target,
        format: CopyFormat {
            csv,
            header,
            delimiter: delimiter.unwrap_or(if csv { ',' } else { '\t' }),
            null: null.unwrap_or_else(|| if csv { String::new() } else { "\\N".into() }),
        },
    })
}

fn binary() -> PgWireError {
    user_error("0A000", "COPY in binary format is not supported")
}

/// Tokens back to text: words apart, punctuation close.
fn join_tokens(tokens: &[String]) -> String {
    let mut out = String::new();
    for t in tokens {
        let glue = matches!(t.as_str(), "," | ")" | ".")
            || out.ends_with('(')
            || out.ends_with('.')
            || out.is_empty();
        if !glue {
            out.push(' ');
        }
        out.push_str(t);
    }
    out
}

/// SQL text quoted as a string literal.
fn quoted(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// A COPY FROM STDIN under way: the file the client's data goes to.
pub struct CopyIn {
    spec: CopySpec,
    path: PathBuf,
    file: Option<std::fs::File>,
    /// The data ends at a line `\.` (the text format's old end marker): dropped.
    tail: Vec<u8>,
}

impl CopyIn {
    /// Starts a COPY FROM STDIN: a new file in directory `dir`.
    pub fn start(spec: CopySpec, dir: &std::path::Path) -> PgWireResult<CopyIn> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let path = dir.join(format!(
            "weir-copy-{}-{}.csv",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| user_error("58030", format!("COPY cannot buffer the data: {e}")))?;
        Ok(CopyIn {
            spec,
            path,
            file: Some(file),
            tail: Vec::new(),
        })
    }

    /// Appends a CopyData's bytes.
    pub fn write(&mut self, data: &[u8]) -> PgWireResult<()> {
        let Some(file) = self.file.as_mut() else {
            return Ok(());
        };
        // Keep the last bytes back until the next message or the end, to drop a `\.` line.
        self.tail.extend_from_slice(data);
        let keep = self.tail.len().min(4);
        let ready = self.tail.len() - keep;
        file.write_all(&self.tail[..ready])
            .map_err(|e| user_error("58030", format!("COPY cannot buffer the data: {e}")))?;
        self.tail.drain(..ready);
        Ok(())
    }

    /// The data is complete: the statement that loads the file (weir's COPY), once the file
    /// is closed.
    pub fn finish(&mut self) -> PgWireResult<String> {
        let mut file = self
            .file
            .take()
            .ok_or_else(|| user_error("08P01", "COPY finished twice"))?;
        let tail = std::mem::take(&mut self.tail);
        let tail: &[u8] = if tail.ends_with(b"\\.\n") || tail.ends_with(b"\\.") {
            &tail[..tail.len() - if tail.ends_with(b"\n") { 3 } else { 2 }]
        } else {
            &tail
        };
        file.write_all(tail)
            .and_then(|_| file.flush())
            .map_err(|e| user_error("58030", format!("COPY cannot buffer the data: {e}")))?;
        drop(file);
        let f = &self.spec.format;
        Ok(format!(
            "COPY {} FROM {} (FORMAT csv, HEADER {}, DELIMITER {}, NULL {})",
            self.spec.target,
            quoted(&self.path.to_string_lossy()),
            f.header,
            quoted(&f.delimiter.to_string()),
            quoted(&f.null)
        ))
    }
}

impl Drop for CopyIn {
    fn drop(&mut self) {
        self.file = None;
        let _ = std::fs::remove_file(&self.path);
    }
}

/// One value as a COPY text-format field: backslash, tab, line breaks escaped.
fn text_field(s: &str, delimiter: char) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == delimiter => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// One value as a CSV field: quoted when it holds the delimiter, a quote, a line break, is
/// empty (to tell it from NULL) or equals the NULL text.
fn csv_field(s: &str, f: &CopyFormat) -> String {
    if s.is_empty() || s == f.null || s.contains(f.delimiter) || s.contains(['"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// A row's fields joined into a line.
fn line(fields: impl Iterator<Item = Option<String>>, f: &CopyFormat) -> Bytes {
    let mut out = String::new();
    for (i, v) in fields.enumerate() {
        if i > 0 {
            out.push(f.delimiter);
        }
        match v {
            None => out.push_str(&f.null),
            Some(s) if f.csv => out.push_str(&csv_field(&s, f)),
            Some(s) => out.push_str(&text_field(&s, f.delimiter)),
        }
    }
    out.push('\n');
    Bytes::from(out)
}

/// The lines of a batch.
fn batch_lines(batch: &Batch, f: &CopyFormat) -> Vec<PgWireResult<CopyData>> {
    (0..batch.num_rows())
        .map(|row| {
            let fields = batch.columns().iter().map(|c| text_value(c, row));
            Ok(CopyData::new(line(fields, f)))
        })
        .collect()
}

/// The CopyData of a COPY TO STDOUT: the header line if asked, then a line per row.
pub fn copy_out_stream(
    stream: AsyncQueryStream,
    format: CopyFormat,
) -> impl Stream<Item = PgWireResult<CopyData>> + Send + 'static {
    let header = format.header.then(|| {
        let names = stream.schema().fields.iter().map(|f| Some(f.name.clone()));
        Ok(CopyData::new(line(names, &format)))
    });
    let rows = stream.flat_map(move |b| {
        futures::stream::iter(match b {
            Ok(batch) => batch_lines(&batch, &format),
            Err(e) => vec![Err(to_pg(e))],
        })
    });
    futures::stream::iter(header).chain(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::split::tokenize;

    fn spec(sql: &str) -> PgWireResult<CopySpec> {
        parse_copy(sql, &tokenize(sql).unwrap())
    }

    #[test]
    fn copy_statements_parse() {
        let s = spec("COPY t (a, b) FROM STDIN WITH (FORMAT csv, HEADER true)").unwrap();
        assert!(s.from_stdin);
        assert_eq!(s.target, "t (a, b)");
        assert!(s.format.csv && s.format.header);
        assert_eq!((s.format.delimiter, s.format.null.as_str()), (',', ""));
        let s = spec("copy t from stdin").unwrap();
        assert!(!s.format.csv);
        assert_eq!((s.format.delimiter, s.format.null.as_str()), ('\t', "\\N"));
        let s = spec("COPY (SELECT a FROM t) TO STDOUT CSV HEADER DELIMITER ';'").unwrap();
        assert!(!s.from_stdin && s.format.csv && s.format.header);
        assert_eq!(s.format.delimiter, ';');
        assert!(s.target.starts_with('('));
        assert!(spec("COPY t FROM '/etc/passwd'").is_err());
        assert!(spec("COPY t TO STDOUT (FORMAT binary)").is_err());
    }

    #[test]
    fn fields_are_escaped() {
        let csv = CopyFormat {
            csv: true,
            header: false,
            delimiter: ',',
            null: String::new(),
        };
        let l = line(
            [
                Some("a,b".into()),
                None,
                Some(String::new()),
                Some("x\"y".into()),
            ]
            .into_iter(),
            &csv,
        );
        assert_eq!(&l[..], b"\"a,b\",,\"\",\"x\"\"y\"\n");
        let text = CopyFormat {
            csv: false,
            header: false,
            delimiter: '\t',
            null: "\\N".into(),
        };
        let l = line([Some("a\tb\\".into()), None].into_iter(), &text);
        assert_eq!(&l[..], b"a\\tb\\\\\t\\N\n");
    }
}
