//! `COPY`: loading a table from a CSV or Parquet file and writing a query's (or a table's)
//! rows to one. The file formats live in `weir-io`; this module parses the statement, streams
//! the file a batch at a time and hands the rows to the write path as one write, so a COPY
//! that fails (a bad value, a duplicate key) keeps nothing.
//!
//! ```text
//! COPY table [(column, ...)] FROM 'path' [WITH] (FORMAT csv|parquet, HEADER [true|false], DELIMITER 'c', NULL 'text')
//! COPY (query) TO 'path' [WITH] (FORMAT csv|parquet, HEADER [true|false], DELIMITER 'c', NULL 'text')
//! COPY table TO 'path' ...
//! ```
//!
//! The format defaults to the file's extension (`.parquet` / `.pq` is Parquet, anything else
//! CSV); `HEADER` defaults to false. Progress of a load goes to the callback of
//! [`Cluster::execute_with_progress`].
//!
//! Where a COPY may read and write is the cluster's
//! [`ClusterBuilder::copy_dirs`](crate::ClusterBuilder::copy_dirs): with a list, the path is
//! resolved (`confine`) and must lie inside one of its directories, and the file opened is
//! the resolved one.

use super::Cluster;
use crate::error::{Error, Result};
use sqlparser::ast::{
    CopyLegacyCsvOption, CopyLegacyOption, CopyOption, CopySource, CopyTarget,
    Statement as SqlStatement,
};
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;
use std::path::{Path, PathBuf};
use weir_io::csv::{CsvOptions, CsvReader, CsvWriter};
use weir_io::parquet::{ParquetReader, ParquetWriter};
use weir_io::DEFAULT_BATCH_ROWS;
use weir_operators::{Batch, Schema, Value};
use weir_planner::{Catalog, ColumnFill, SequenceFill, TableDef};

/// How far a COPY has come, given to the callback of [`Cluster::execute_with_progress`]
/// after every batch and once more at the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyProgress {
    /// Rows read (COPY FROM) or written (COPY TO) so far.
    pub rows: u64,
    /// Work done so far, in [`CopyProgress::unit`]s.
    pub done: u64,
    /// All the work, in the same unit, when known (a file's size or row count).
    pub total: Option<u64>,
    /// What `done` and `total` count.
    pub unit: ProgressUnit,
    /// Whether the COPY has finished (the last call).
    pub finished: bool,
}

/// What a [`CopyProgress`] counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressUnit {
    /// Bytes of the file (CSV).
    Bytes,
    /// Rows (Parquet, and COPY TO).
    Rows,
}

/// A file format of COPY.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Csv,
    Parquet,
}

/// A parsed COPY statement.
#[derive(Debug)]
struct Copy {
    /// COPY FROM: the table; COPY TO: the query's SQL.
    source: CopyFrom,
    path: PathBuf,
    format: Format,
    csv: CsvOptions,
}

#[derive(Debug)]
enum CopyFrom {
    /// Load the file into this table: into the listed columns (the file holds those, in
    /// that order; the table's other columns take their defaults), or into all of them when none are
    /// listed.
    IntoTable(String, Vec<String>),
    /// Write the rows of this query to the file.
    Query(String),
}

/// Whether `sql` is a COPY statement (its first word, past whitespace and comments, is
/// COPY).
pub(super) fn is_copy(sql: &str) -> bool {
    let mut t = sql.trim_start();
    loop {
        if let Some(rest) = t.strip_prefix("--") {
            t = rest
                .split_once('\n')
                .map_or("", |(_, after)| after)
                .trim_start();
        } else if let Some(rest) = t.strip_prefix("/*") {
            t = rest
                .split_once("*/")
                .map_or("", |(_, after)| after)
                .trim_start();
        } else {
            break;
        }
    }
    t.get(..4).is_some_and(|w| w.eq_ignore_ascii_case("copy"))
        && t[4..].starts_with(|c: char| c.is_whitespace() || c == '(')
}

fn invalid(message: impl Into<String>) -> Error {
    Error::Invalid(message.into())
}

/// The table `name` names: its last part, as a query's FROM reads it (`public.t` is `t`).
fn table_of(name: &sqlparser::ast::ObjectName) -> Result<String> {
    match name.0.last() {
        Some(sqlparser::ast::ObjectNamePart::Identifier(id)) => Ok(id.value.clone()),
        _ => Err(invalid(format!("COPY: '{name}' is not a table's name"))),
    }
}

fn parse(sql: &str) -> Result<Copy> {
    let mut stmts =
        Parser::parse_sql(&GenericDialect {}, sql).map_err(|e| invalid(format!("COPY: {e}")))?;
    if stmts.len() != 1 {
        return Err(invalid("expected one statement"));
    }
    let SqlStatement::Copy {
        source,
        to,
        target,
        options,
        legacy_options,
        ..
    } = stmts.remove(0)
    else {
        return Err(invalid("expected a COPY statement"));
    };
    let path = match target {
        CopyTarget::File { filename } => PathBuf::from(filename),
        other => {
            return Err(invalid(format!(
                "COPY {other} is not supported: name a file ('path')"
            )))
        }
    };
    let source = match (source, to) {
        (
            CopySource::Table {
                table_name,
                columns,
            },
            false,
        ) => CopyFrom::IntoTable(
            table_of(&table_name)?,
            columns.iter().map(|c| c.value.clone()).collect(),
        ),
        (
            CopySource::Table {
                table_name,
                columns,
            },
            true,
        ) => {
            let cols = if columns.is_empty() {
                "*".to_string()
            } else {
                columns
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            CopyFrom::Query(format!("SELECT {cols} FROM {table_name}"))
        }
        (CopySource::Query(q), true) => CopyFrom::Query(q.to_string()),
        (CopySource::Query(_), false) => {
            return Err(invalid(
                "COPY (query) FROM is not possible: load into a table",
            ))
        }
    };
    let mut format = None;
    let mut csv = CsvOptions::default();
    let delimiter = |c: char| {
        u8::try_from(c)
            .ok()
            .filter(u8::is_ascii)
            .ok_or_else(|| invalid(format!("DELIMITER '{c}' must be one ASCII character")))
    };
    for o in options {
        match o {
            CopyOption::Format(name) => {
                format = Some(match name.value.to_ascii_lowercase().as_str() {
                    "csv" => Format::Csv,
                    "parquet" => Format::Parquet,
                    other => {
                        return Err(invalid(format!(
                            "unknown COPY FORMAT '{other}' (use csv or parquet)"
                        )))
                    }
                })
            }
            CopyOption::Header(h) => csv.header = h,
            CopyOption::Delimiter(c) => csv.delimiter = delimiter(c)?,
            CopyOption::Null(n) => csv.null = n,
            other => return Err(invalid(format!("COPY option {other} is not supported"))),
        }
    }
    for o in legacy_options {
        match o {
            CopyLegacyOption::Csv(csv_options) => {
                format = Some(Format::Csv);
                for c in csv_options {
                    match c {
                        CopyLegacyCsvOption::Header => csv.header = true,
                        other => {
                            return Err(invalid(format!("COPY option {other} is not supported")))
                        }
                    }
                }
            }
            CopyLegacyOption::Parquet => format = Some(Format::Parquet),
            CopyLegacyOption::Header => csv.header = true,
            CopyLegacyOption::Delimiter(c) => csv.delimiter = delimiter(c)?,
            CopyLegacyOption::Null(n) => csv.null = n,
            other => return Err(invalid(format!("COPY option {other} is not supported"))),
        }
    }
    let format = format.unwrap_or_else(|| format_of(&path));
    Ok(Copy {
        source,
        path,
        format,
        csv,
    })
}

/// The table positions of a COPY FROM's column list (`None` without one); an unknown or
/// repeated name is an error naming it.
fn listed_columns(table: &str, schema: &Schema, columns: &[String]) -> Result<Option<Vec<usize>>> {
    if columns.is_empty() {
        return Ok(None);
    }
    let mut indices = Vec::with_capacity(columns.len());
    for name in columns {
        let i = schema
            .index_of(name)
            .ok_or_else(|| invalid(format!("COPY {table}: table {table} has no column {name}")))?;
        if indices.contains(&i) {
            return Err(invalid(format!(
                "COPY {table}: column {name} is listed twice"
            )));
        }
        indices.push(i);
    }
    Ok(Some(indices))
}

/// What a COPY with a column list puts in the table's columns it does not list: each
/// column's `DEFAULT` value (NULL without one), or its sequence's values.
struct Unlisted {
    /// The value of each column of the table that has one (`DEFAULT expr`).
    values: Vec<Option<Value>>,
    /// The columns filled from their sequences.
    fills: Vec<SequenceFill>,
}

impl Unlisted {
    /// The defaults of `table`'s columns but `listed`.
    fn of(def: &TableDef, listed: &[usize], catalog: &Catalog) -> Result<Unlisted> {
        let mut values = vec![None; def.schema.len()];
        let mut fills = Vec::new();
        for c in (0..def.schema.len()).filter(|c| !listed.contains(c)) {
            match weir_planner::column_fill(def, c, catalog)? {
                ColumnFill::Null => {}
                ColumnFill::Value(v) => values[c] = Some(v),
                ColumnFill::Sequence(from) => fills.push(SequenceFill {
                    column: c,
                    rows: None,
                    from,
                    current: false,
                }),
            }
        }
        Ok(Unlisted { values, fills })
    }

    /// A batch of the listed columns (at table positions `indices`) as a batch of every
    /// column of the table, the others at their defaults (sequence columns NULL, to be
    /// filled).
    fn widen(&self, batch: Batch, indices: &[usize], table: &Schema) -> Result<Batch> {
        let n = batch.num_rows();
        let mut columns: Vec<Option<weir_operators::Column>> = vec![None; table.len()];
        for (column, &i) in batch.into_columns().into_iter().zip(indices) {
            columns[i] = Some(column);
        }
        let columns = columns
            .into_iter()
            .zip(&table.fields)
            .zip(&self.values)
            .map(|((c, f), default)| match (c, default) {
                (Some(c), _) => Ok(c),
                (None, Some(v)) => weir_operators::Column::repeat(f.data_type, v, n)
                    .map_err(|e| Error::Invalid(e.to_string())),
                (None, None) => Ok(weir_operators::Column::nulls(f.data_type, n)),
            })
            .collect::<Result<Vec<_>>>()?;
        Batch::with_row_count(columns, n).map_err(|e| Error::Invalid(e.to_string()))
    }
}

/// `path` made absolute (from the current directory) with every symbolic link and `..` of
/// the part of it that exists resolved; the rest, which does not exist yet, appended as it is
/// (a `..` in it is an error).
fn resolve(path: &Path) -> std::io::Result<PathBuf> {
    let absolute = std::env::current_dir()?.join(path);
    let mut missing = Vec::new();
    let mut at = absolute.as_path();
    loop {
        match at.canonicalize() {
            Ok(mut resolved) => {
                resolved.extend(missing.iter().rev());
                return Ok(resolved);
            }
            Err(e) => match (at.file_name(), at.parent()) {
                (Some(name), Some(parent)) => {
                    missing.push(name.to_os_string());
                    at = parent;
                }
                _ => return Err(e),
            },
        }
    }
}

/// The file a COPY uses for `path`: `path` itself when `dirs` is `None` (any path); else its
/// resolved form ([`resolve`]), which must lie inside one of `dirs` (resolved too), or an
/// error naming them. A path that does not exist is judged by where it would be, so the
/// error does not tell whether a file outside exists.
pub(super) fn confine(path: &Path, dirs: Option<&[PathBuf]>) -> Result<PathBuf> {
    let Some(dirs) = dirs else {
        return Ok(path.to_path_buf());
    };
    let named = || {
        let list: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        if list.is_empty() {
            "none".to_string()
        } else {
            list.join(", ")
        }
    };
    let outside = || {
        invalid(format!(
            "COPY: '{}' is outside the directories COPY may use ({})",
            path.display(),
            named()
        ))
    };
    let resolved = resolve(path).map_err(|_| outside())?;
    let inside = dirs
        .iter()
        .filter_map(|d| resolve(d).ok())
        .any(|d| resolved.starts_with(d));
    if inside {
        Ok(resolved)
    } else {
        Err(outside())
    }
}

/// The format a file's extension names: Parquet for `.parquet` and `.pq`, else CSV.
fn format_of(path: &Path) -> Format {
    match path.extension().and_then(|e| e.to_str()) {
        Some(e) if e.eq_ignore_ascii_case("parquet") || e.eq_ignore_ascii_case("pq") => {
            Format::Parquet
        }
        _ => Format::Csv,
    }
}

impl Cluster {
    /// Runs `sql` as [`Cluster::execute`] does, calling `progress` as a `COPY` goes (after
    /// every batch read or written, and once at the end); other statements never call it.
    ///
    /// ```
    /// use weir_runtime::Cluster;
    /// let dir = std::env::temp_dir().join(format!("weir-copy-doc-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir).unwrap();
    /// let csv = dir.join("kv.csv");
    /// std::fs::write(&csv, "k,v\n1,one\n2,\"two, too\"\n").unwrap();
    /// let cluster = Cluster::builder().nodes(2).build().unwrap();
    /// cluster.execute("CREATE TABLE kv (k BIGINT PRIMARY KEY, v VARCHAR)").unwrap();
    /// let sql = format!("COPY kv FROM '{}' (FORMAT csv, HEADER true)", csv.display());
    /// let mut calls = 0;
    /// let loaded = cluster.execute_with_progress(&sql, &mut |_| calls += 1).unwrap();
    /// assert_eq!(loaded, 2);
    /// assert!(calls >= 1);
    /// let out = dir.join("kv.parquet");
    /// let sql = format!("COPY (SELECT * FROM kv WHERE k = 2) TO '{}'", out.display());
    /// assert_eq!(cluster.execute(&sql).unwrap(), 1);
    /// # cluster.shutdown();
    /// ```
    pub fn execute_with_progress(
        &self,
        sql: &str,
        progress: &mut dyn FnMut(&CopyProgress),
    ) -> Result<u64> {
        match self.copy(sql, progress) {
            Some(done) => {
                super::lost::hold_acknowledgement();
                done
            }
            None => self.execute(sql),
        }
    }

    /// The columns of `table`.
    pub(crate) fn table_schema(&self, table: &str) -> Result<Schema> {
        let catalog = self.inner.catalog.read().unwrap_or_else(|e| e.into_inner());
        catalog
            .table(table)
            .map(|d| d.schema.clone())
            .ok_or_else(|| Error::Plan(weir_planner::PlanError::UnknownTable(table.to_string())))
    }

    /// Runs `sql` if it is a COPY statement (`None` if it is not).
    pub(super) fn copy(
        &self,
        sql: &str,
        progress: &mut dyn FnMut(&CopyProgress),
    ) -> Option<Result<u64>> {
        if !is_copy(sql) {
            return None;
        }
        let dirs = self.inner.config.copy_dirs.as_deref();
        let parsed = parse(sql).and_then(|mut c| {
            c.path = confine(&c.path, dirs)?;
            Ok(c)
        });
        Some(parsed.and_then(|c| match &c.source {
            CopyFrom::IntoTable(table, columns) => self.copy_from(table, columns, &c, progress),
            CopyFrom::Query(query) => self.copy_to(query, &c, progress),
        }))
    }

    /// Reads the whole file into batches of the table's types (nothing is written while a
    /// row can still be bad), then loads them as one write. With a column list the file
    /// holds those columns, and the table's others take their defaults (NULL, a `DEFAULT`
    /// value, or their sequence's values).
    fn copy_from(
        &self,
        table: &str,
        columns: &[String],
        c: &Copy,
        progress: &mut dyn FnMut(&CopyProgress),
    ) -> Result<u64> {
        let table_schema = self.table_schema(table)?;
        let listed = listed_columns(table, &table_schema, columns)?;
        let schema = match &listed {
            Some(indices) => Schema::new(
                indices
                    .iter()
                    .map(|&i| table_schema.fields[i].clone())
                    .collect(),
            ),
            None => table_schema.clone(),
        };
        let io = |e: weir_io::IoError| Error::Invalid(e.to_string());
        // The rows read are held on the client node until they are written, accounted in its
        // pool: a file larger than the client's memory fails clearly instead of exhausting
        // the host.
        let client = &self.inner.nodes[self.client() as usize];
        let mut held = weir_operators::Reservation::new(client.pool.clone());
        let mut hold = |b: &Batch, rows: u64| {
            held.try_grow(b.memory_size()).map_err(|e| {
                Error::OutOfMemory(format!(
                    "{} (COPY {table} FROM '{}': the {rows} rows read so far do not fit in \
                     its memory: {e})",
                    client.name,
                    c.path.display()
                ))
            })
        };
        let mut batches: Vec<Batch> = Vec::new();
        let mut rows = 0u64;
        let mut report = |rows: u64, done: u64, total: u64, unit, finished| {
            progress(&CopyProgress {
                rows,
                done,
                total: Some(total),
                unit,
                finished,
            })
        };
        match c.format {
            Format::Csv => {
                let mut r = CsvReader::open(&c.path, &schema, &c.csv).map_err(io)?;
                while let Some(b) = r.next_batch(DEFAULT_BATCH_ROWS).map_err(io)? {
                    rows += b.num_rows() as u64;
                    hold(&b, rows)?;
                    batches.push(b);
                    report(
                        rows,
                        r.bytes_read(),
                        r.bytes_total(),
                        ProgressUnit::Bytes,
                        false,
                    );
                }
                report(
                    rows,
                    r.bytes_total(),
                    r.bytes_total(),
                    ProgressUnit::Bytes,
                    false,
                );
            }
            Format::Parquet => {
                let mut r =
                    ParquetReader::open(&c.path, &schema, DEFAULT_BATCH_ROWS).map_err(io)?;
                while let Some(b) = r.next_batch().map_err(io)? {
                    rows += b.num_rows() as u64;
                    hold(&b, rows)?;
                    batches.push(b);
                    report(
                        rows,
                        r.rows_read(),
                        r.rows_total(),
                        ProgressUnit::Rows,
                        false,
                    );
                }
            }
        }
        tracing::debug!(
            "COPY {table} FROM {}: {rows} rows in {} batches parsed; loading",
            c.path.display(),
            batches.len()
        );
        let _writing = self.writing();
        if let Some(indices) = &listed {
            let unlisted = {
                let catalog = self.inner.catalog.read().unwrap_or_else(|e| e.into_inner());
                let def = catalog.table(table).ok_or_else(|| {
                    Error::Plan(weir_planner::PlanError::UnknownTable(table.to_string()))
                })?;
                Unlisted::of(def, indices, &catalog)?
            };
            batches = batches
                .into_iter()
                .map(|b| {
                    let wide = unlisted.widen(b, indices, &table_schema)?;
                    self.fill_sequences(table, wide, &unlisted.fills)
                })
                .collect::<Result<_>>()?;
        }
        let loaded = self.load_all_locked(table, batches)? as u64;
        drop(held);
        report(loaded, rows, rows, ProgressUnit::Rows, true);
        Ok(loaded)
    }

    /// Streams the query's batches into the file.
    fn copy_to(
        &self,
        query: &str,
        c: &Copy,
        progress: &mut dyn FnMut(&CopyProgress),
    ) -> Result<u64> {
        let stream = self.query_stream(query, &[])?;
        let schema = stream.schema().clone();
        let io = |e: weir_io::IoError| Error::Invalid(e.to_string());
        let mut rows = 0u64;
        let mut step = |rows: u64, finished| {
            progress(&CopyProgress {
                rows,
                done: rows,
                total: None,
                unit: ProgressUnit::Rows,
                finished,
            })
        };
        match c.format {
            Format::Csv => {
                let names: Vec<String> = schema.fields.iter().map(|f| f.name.clone()).collect();
                let mut w = CsvWriter::create(&c.path, &names, &c.csv).map_err(io)?;
                for b in stream {
                    let b = b?;
                    rows += b.num_rows() as u64;
                    w.write(&b).map_err(io)?;
                    step(rows, false);
                }
                w.finish().map_err(io)?;
            }
            Format::Parquet => {
                let mut w = ParquetWriter::create(&c.path, &schema).map_err(io)?;
                for b in stream {
                    let b = b?;
                    rows += b.num_rows() as u64;
                    w.write(b).map_err(io)?;
                    step(rows, false);
                }
                w.finish().map_err(io)?;
            }
        }
        step(rows, true);
        tracing::debug!("COPY TO {}: {rows} rows written", c.path.display());
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_statements_parse_with_their_options() {
        assert!(is_copy("  copy t FROM 'x'") && is_copy("COPY(SELECT 1) TO 'x'"));
        assert!(!is_copy("COPYRIGHT") && !is_copy("SELECT 1"));
        assert!(is_copy("-- load\n/* the file */ COPY t FROM 'x'"));
        assert!(!is_copy("-- COPY t FROM 'x'\nSELECT 1"));
        let c = parse(
            "COPY t FROM '/tmp/a.txt' WITH (FORMAT csv, HEADER true, DELIMITER ';', NULL 'NA')",
        )
        .unwrap();
        assert!(
            matches!(c.source, CopyFrom::IntoTable(ref t, ref cols) if t == "t" && cols.is_empty())
        );
        assert_eq!(c.format, Format::Csv);
        assert_eq!(
            c.csv,
            CsvOptions {
                header: true,
                delimiter: b';',
                null: "NA".into()
            }
        );
        let c = parse("COPY t (b, a) FROM '/tmp/a.csv'").unwrap();
        assert!(
            matches!(c.source, CopyFrom::IntoTable(ref t, ref cols) if t == "t" && cols == &["b", "a"])
        );
        let c = parse("COPY (SELECT a FROM t) TO '/tmp/a.parquet'").unwrap();
        assert_eq!(c.format, Format::Parquet);
        assert!(matches!(c.source, CopyFrom::Query(ref q) if q.contains("SELECT a FROM t")));
        let err = parse("COPY t FROM '/tmp/a' (FORMAT xml)").unwrap_err();
        assert!(
            err.to_string().contains("unknown COPY FORMAT 'xml'"),
            "{err}"
        );
        assert!(parse("COPY t FROM STDIN").is_err());
    }

    #[test]
    fn paths_are_confined_to_the_allowed_directories() {
        let root = std::env::temp_dir().join(format!("weir-confine-{}", std::process::id()));
        let allowed = root.join("allowed");
        let other = root.join("other");
        std::fs::create_dir_all(&allowed).unwrap();
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(other.join("secret.csv"), "1\n").unwrap();
        let dirs = [allowed.clone()];
        let ok = |p: &Path| confine(p, Some(&dirs));
        // Inside, existing or not yet.
        assert!(ok(&allowed.join("new.csv"))
            .unwrap()
            .ends_with("allowed/new.csv"));
        assert!(ok(&allowed.join("sub/new.csv")).is_ok());
        // Outside, whether it exists or not, and through `..`.
        for p in [
            other.join("secret.csv"),
            other.join("missing.csv"),
            allowed.join("../other/secret.csv"),
            allowed.join("missing/../../other/x.csv"),
            PathBuf::from("/etc/passwd"),
        ] {
            let e = ok(&p).unwrap_err().to_string();
            assert!(
                e.contains("outside the directories") && e.contains("allowed"),
                "{e}"
            );
        }
        // A symbolic link inside that points outside is outside.
        #[cfg(unix)]
        {
            let link = allowed.join("link.csv");
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink(other.join("secret.csv"), &link).unwrap();
            assert!(ok(&link).is_err());
        }
        // No list: any path, as given; an empty list: none.
        assert_eq!(
            confine(Path::new("/etc/passwd"), None).unwrap(),
            Path::new("/etc/passwd")
        );
        let e = confine(&allowed.join("a.csv"), Some(&[])).unwrap_err();
        assert!(e.to_string().contains("(none)"), "{e}");
        let _ = std::fs::remove_dir_all(&root);
    }
}
