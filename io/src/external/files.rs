//! Which files an external table's location names: one file, a directory's files of the
//! table's format (descending into subdirectories, in path order), or the files a glob
//! pattern matches (in path order). Every node lists the same location and gets the same
//! list, which is how the nodes agree on who reads what without talking.

use crate::error::{IoError, Result};
use std::path::{Path, PathBuf};
use weir_operators::external::ExternalSource;

/// Whether `location` is a glob pattern rather than a path.
pub fn is_pattern(location: &str) -> bool {
    location.contains(['*', '?', '['])
}

/// The files of `source`, in path order. A location that names nothing is an error naming
/// it; a directory or pattern with no file of the format is an empty list.
pub fn list_files(source: &ExternalSource) -> Result<Vec<PathBuf>> {
    let location = source.location.as_str();
    let at = Path::new(location);
    let mut files = Vec::new();
    if is_pattern(location) {
        let paths = glob::glob(location)
            .map_err(|e| IoError::file(at, format!("not a valid pattern: {e}")))?;
        for p in paths {
            let p = p.map_err(|e| IoError::file(e.path(), e.error().to_string()))?;
            if p.is_file() {
                files.push(p);
            }
        }
    } else {
        let meta = std::fs::metadata(at).map_err(|e| IoError::file(at, e.to_string()))?;
        if meta.is_dir() {
            walk(at, source.format.extensions(), &mut files)?;
        } else {
            files.push(at.to_path_buf());
        }
    }
    files.sort();
    Ok(files)
}

/// The files under `dir` whose extension is one of `extensions` (ignoring case), skipping
/// hidden names (`.x`) and names starting with `_` (as writers' temporary and metadata
/// files are).
fn walk(dir: &Path, extensions: &[&str], out: &mut Vec<PathBuf>) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|e| IoError::file(dir, e.to_string()))?;
    for entry in entries {
        let entry = entry.map_err(|e| IoError::file(dir, e.to_string()))?;
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') || name.starts_with('_') {
            continue;
        }
        let kind = entry
            .file_type()
            .map_err(|e| IoError::file(&path, e.to_string()))?;
        if kind.is_dir() {
            walk(&path, extensions, out)?;
        } else if path
            .extension()
            .and_then(|x| x.to_str())
            .is_some_and(|x| extensions.iter().any(|e| e.eq_ignore_ascii_case(x)))
        {
            out.push(path);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use weir_operators::external::{CsvLayout, FileFormat};

    #[test]
    fn a_directory_a_pattern_and_a_missing_path() {
        let dir = std::env::temp_dir().join(format!("weir-io-list-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        for f in [
            "b.csv",
            "a.CSV",
            "sub/c.csv",
            "notes.md",
            ".hidden.csv",
            "_tmp.csv",
        ] {
            std::fs::write(dir.join(f), "1\n").unwrap();
        }
        let csv = |location: String| ExternalSource {
            format: FileFormat::Csv(CsvLayout::default()),
            location,
        };
        let names = |files: Vec<PathBuf>| -> Vec<String> {
            files
                .iter()
                .map(|f| {
                    f.strip_prefix(&dir)
                        .unwrap()
                        .to_string_lossy()
                        .replace('\\', "/")
                })
                .collect()
        };
        let all = list_files(&csv(dir.to_string_lossy().into())).unwrap();
        assert_eq!(names(all), ["a.CSV", "b.csv", "sub/c.csv"]);
        let some = list_files(&csv(format!("{}/b*", dir.display()))).unwrap();
        assert_eq!(names(some), ["b.csv"]);
        let none = list_files(&csv(format!("{}/*.parquet", dir.display()))).unwrap();
        assert!(none.is_empty());
        let e = list_files(&csv(format!("{}/nothing.csv", dir.display()))).unwrap_err();
        assert!(e.to_string().contains("nothing.csv"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
