//! What an external table's files hold, read when the table is created: the columns (taken
//! from the files when none are declared, else checked against every file) and, for
//! Parquet, the rows (from the footers, for the planner's estimates).
//!
//! A Parquet file's columns are its schema's; a CSV file's names come from its header line
//! (`column_1`, `column_2`, ... without one) and its types from its first
//! [`CSV_SAMPLE_ROWS`] rows: the narrowest of BIGINT, DOUBLE, DATE, TIMESTAMP, BOOLEAN
//! (`true`/`false`) that every non-NULL value of the column parses as, else VARCHAR.

use crate::arrow::{match_columns, weir_type};
use crate::error::{IoError, Result};
use ::parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use std::fs::File;
use std::path::{Path, PathBuf};
use weir_operators::external::{CsvLayout, ExternalSource, FileFormat};
use weir_operators::{temporal, DataType, Field, Schema};

/// Rows of a CSV file read to decide its columns' types.
pub const CSV_SAMPLE_ROWS: usize = 1000;

/// What an external table's files hold.
#[derive(Debug, Clone, PartialEq)]
pub struct FilesSummary {
    /// The table's columns.
    pub schema: Schema,
    /// The files, in path order.
    pub files: Vec<PathBuf>,
    /// Rows of all the files (Parquet, from their footers); `None` for CSV.
    pub rows: Option<u64>,
}

/// Lists `source`'s files and reads what they hold: with `declared` columns, checks that
/// every file has them; without, takes them from the first file and checks the others
/// against it. No file (an empty directory, a pattern matching nothing) is an error when the
/// columns must be taken from the files.
pub fn describe_files(source: &ExternalSource, declared: Option<&Schema>) -> Result<FilesSummary> {
    let files = super::files::list_files(source)?;
    if files.is_empty() && declared.is_none() {
        return Err(IoError::file(
            Path::new(&source.location),
            format!(
                "no {} file here to take the table's columns from (declare them, or add files)",
                source.format.name()
            ),
        ));
    }
    match &source.format {
        FileFormat::Parquet => describe_parquet(files, declared),
        FileFormat::Csv(layout) => describe_csv(files, declared, layout),
    }
}

/// The Arrow metadata of a Parquet file (its footer).
pub(crate) fn parquet_metadata(path: &Path) -> Result<ArrowReaderMetadata> {
    let file = File::open(path).map_err(|e| IoError::file(path, e.to_string()))?;
    ArrowReaderMetadata::load(&file, ArrowReaderOptions::new())
        .map_err(|e| IoError::file(path, format!("not a Parquet file we can read: {e}")))
}

fn describe_parquet(files: Vec<PathBuf>, declared: Option<&Schema>) -> Result<FilesSummary> {
    let mut schema = declared.cloned();
    let mut rows = 0u64;
    for path in &files {
        let meta = parquet_metadata(path)?;
        let arrow = meta.schema();
        match &schema {
            None => {
                let mut fields = Vec::with_capacity(arrow.fields().len());
                for f in arrow.fields() {
                    let t = weir_type(f.data_type()).ok_or_else(|| {
                        IoError::file(
                            path,
                            format!(
                                "column '{}' is of Arrow type {}, which weir has no type for",
                                f.name(),
                                f.data_type()
                            ),
                        )
                    })?;
                    fields.push(Field::new(f.name().clone(), t));
                }
                schema = Some(Schema::new(fields));
            }
            Some(s) => {
                match_columns(arrow, s).map_err(|e| IoError::file(path, e.to_string()))?;
            }
        }
        rows += meta.metadata().file_metadata().num_rows().max(0) as u64;
    }
    Ok(FilesSummary {
        schema: schema.unwrap_or_else(|| Schema::new(Vec::new())),
        files,
        rows: Some(rows),
    })
}

fn csv_reader(path: &Path, layout: &CsvLayout) -> Result<::csv::Reader<File>> {
    let file = File::open(path).map_err(|e| IoError::file(path, e.to_string()))?;
    Ok(::csv::ReaderBuilder::new()
        .has_headers(layout.header)
        .delimiter(layout.delimiter)
        .flexible(true)
        .from_reader(file))
}

fn describe_csv(
    files: Vec<PathBuf>,
    declared: Option<&Schema>,
    layout: &CsvLayout,
) -> Result<FilesSummary> {
    let schema = match declared {
        Some(s) => s.clone(),
        None => infer_csv(&files[0], layout)?,
    };
    // Every file's first record has the table's number of fields.
    for path in &files {
        let mut reader = csv_reader(path, layout)?;
        let mut record = ::csv::StringRecord::new();
        let more = reader
            .read_record(&mut record)
            .map_err(|e| IoError::file(path, e.to_string()))?;
        if more && record.len() != schema.len() {
            return Err(IoError::file(
                path,
                format!(
                    "its first row has {} fields but the table has {} columns",
                    record.len(),
                    schema.len()
                ),
            ));
        }
    }
    Ok(FilesSummary {
        schema,
        files,
        rows: None,
    })
}

/// The narrowest type every sampled value of a column parses as.
fn infer_csv(path: &Path, layout: &CsvLayout) -> Result<Schema> {
    let mut reader = csv_reader(path, layout)?;
    let mut names: Vec<String> = if layout.header {
        reader
            .headers()
            .map_err(|e| IoError::file(path, e.to_string()))?
            .iter()
            .map(|h| h.trim().to_string())
            .collect()
    } else {
        Vec::new()
    };
    // Per column, the candidate types still possible, narrowest first.
    const CANDIDATES: [DataType; 5] = [
        DataType::Int64,
        DataType::Float64,
        DataType::Date,
        DataType::Timestamp,
        DataType::Boolean,
    ];
    let mut possible: Vec<Vec<DataType>> = Vec::new();
    let mut seen: Vec<bool> = Vec::new();
    let mut record = ::csv::StringRecord::new();
    for _ in 0..CSV_SAMPLE_ROWS {
        let more = reader
            .read_record(&mut record)
            .map_err(|e| IoError::file(path, e.to_string()))?;
        if !more {
            break;
        }
        if possible.len() < record.len() {
            possible.resize(record.len(), CANDIDATES.to_vec());
            seen.resize(record.len(), false);
        }
        for (i, text) in record.iter().enumerate() {
            if text == layout.null {
                continue;
            }
            seen[i] = true;
            let t = text.trim();
            possible[i].retain(|dt| parses_as(t, *dt));
        }
    }
    let columns = possible.len().max(names.len());
    if columns == 0 {
        return Err(IoError::file(path, "no line to take the columns from"));
    }
    for i in names.len()..columns {
        names.push(format!("column_{}", i + 1));
    }
    let mut fields = Vec::with_capacity(columns);
    for (i, name) in names.into_iter().enumerate() {
        if name.is_empty() {
            return Err(IoError::file(
                path,
                format!("column {} has an empty name in the header", i + 1),
            ));
        }
        if fields
            .iter()
            .any(|f: &Field| f.name.eq_ignore_ascii_case(&name))
        {
            return Err(IoError::file(
                path,
                format!("column '{name}' appears twice in the header"),
            ));
        }
        let dt = match (seen.get(i), possible.get(i)) {
            (Some(true), Some(p)) => p.first().copied().unwrap_or(DataType::Utf8),
            _ => DataType::Utf8,
        };
        fields.push(Field::new(name, dt));
    }
    Ok(Schema::new(fields))
}

fn parses_as(t: &str, dt: DataType) -> bool {
    match dt {
        DataType::Int64 => t.parse::<i64>().is_ok(),
        DataType::Float64 => t.parse::<f64>().is_ok(),
        DataType::Date => temporal::parse_date(t).is_some(),
        DataType::Timestamp => temporal::parse_timestamp(t).is_some(),
        DataType::Boolean => t.eq_ignore_ascii_case("true") || t.eq_ignore_ascii_case("false"),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("weir-io-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn csv_columns_are_named_and_typed_from_the_file() {
        let d = dir("describe-csv");
        std::fs::write(
            d.join("a.csv"),
            "id,price,day,flag,name,empty\n1,2.5,2024-01-02,true,x,\n2,3,2024-01-03,false,7,\n",
        )
        .unwrap();
        let source = ExternalSource {
            format: FileFormat::Csv(CsvLayout {
                header: true,
                ..CsvLayout::default()
            }),
            location: d.to_string_lossy().into(),
        };
        let s = describe_files(&source, None).unwrap();
        let got: Vec<(String, DataType)> = s
            .schema
            .fields
            .iter()
            .map(|f| (f.name.clone(), f.data_type))
            .collect();
        assert_eq!(
            got,
            [
                ("id".to_string(), DataType::Int64),
                ("price".into(), DataType::Float64),
                ("day".into(), DataType::Date),
                ("flag".into(), DataType::Boolean),
                ("name".into(), DataType::Utf8),
                ("empty".into(), DataType::Utf8),
            ]
        );
        // Declared columns are checked against the files' field counts.
        let two = Schema::new(vec![
            Field::new("a", DataType::Int64),
            Field::new("b", DataType::Int64),
        ]);
        let e = describe_files(&source, Some(&two)).unwrap_err().to_string();
        assert!(e.contains("a.csv") && e.contains("6 fields"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn no_file_to_infer_from_and_a_file_that_is_not_parquet() {
        let d = dir("describe-parquet");
        let source = ExternalSource {
            format: FileFormat::Parquet,
            location: d.to_string_lossy().into(),
        };
        let e = describe_files(&source, None).unwrap_err().to_string();
        assert!(e.contains("no PARQUET file"), "{e}");
        std::fs::write(d.join("bad.parquet"), "not parquet at all").unwrap();
        let e = describe_files(&source, None).unwrap_err().to_string();
        assert!(
            e.contains("bad.parquet") && e.contains("not a Parquet file"),
            "{e}"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }
}
