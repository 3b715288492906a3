//! Checkpoints: a node's partitions written as columnar files, and a manifest that names them
//! with the log position they cover.
//!
//! Each partition copy at a version is one file (`<table in hex>-<partition>-<version>.part`:
//! its batches in weir's wire format, each column one run of little-endian bytes, framed with
//! a checksum). A checkpoint writes only the files it does not have yet: a partition that did
//! not change since the last checkpoint keeps its file. The manifest
//! (`checkpoint-<lsn>.manifest`, written atomically) lists the files, the LSN of the last log
//! record they include, and the caller's own metadata (table layouts, the catalog). The two
//! newest manifests are kept, with their files; loading falls back to the older when the
//! newer, or a file it names, does not read back (the caller keeps the log from the older
//! one's LSN, [`Checkpoints::keep_log_from`]).

use crate::disk::Disk;
use crate::error::{Result, StorageError};
use crate::frame::{self, Read};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use weir_operators::Batch;

/// Manifests kept (each with its files).
const KEPT: usize = 2;

/// One partition copy as a checkpoint is to hold it.
#[derive(Debug, Clone)]
pub struct PartitionImage {
    /// Table name.
    pub table: String,
    /// Partition.
    pub partition: u32,
    /// The copy's version.
    pub version: u64,
    /// Its rows.
    pub batches: Vec<Arc<Batch>>,
}

/// A partition file of a checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartEntry {
    /// Table name.
    pub table: String,
    /// Partition.
    pub partition: u32,
    /// The copy's version.
    pub version: u64,
    /// The file's name in the checkpoint directory.
    pub file: String,
    /// Rows in the file.
    pub rows: u64,
}

/// What a checkpoint holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The LSN of the last log record the checkpoint includes: replay starts after it.
    pub lsn: u64,
    /// The caller's metadata (opaque here).
    pub meta: Vec<u8>,
    /// The partition files.
    pub parts: Vec<PartEntry>,
}

/// A checkpoint read back: its manifest and every partition's rows.
#[derive(Debug)]
pub struct Loaded {
    /// The manifest.
    pub manifest: Manifest,
    /// The rows of each of `manifest.parts`, in the same order.
    pub rows: Vec<Vec<Batch>>,
    /// Bytes read from disk.
    pub bytes: u64,
}

/// A node's checkpoint directory.
pub struct Checkpoints {
    disk: Arc<dyn Disk>,
    dir: PathBuf,
}

fn manifest_name(lsn: u64) -> String {
    format!("checkpoint-{lsn:020}.manifest")
}

fn manifest_lsn(path: &Path) -> Option<u64> {
    let name = path.file_name()?.to_str()?;
    name.strip_prefix("checkpoint-")?
        .strip_suffix(".manifest")?
        .parse()
        .ok()
}

fn part_name(table: &str, partition: u32, version: u64) -> String {
    let hex: String = table.bytes().map(|b| format!("{b:02x}")).collect();
    format!("{hex}-{partition}-{version}.part")
}

fn config() -> impl bincode::config::Config {
    bincode::config::standard()
}

/// The bytes of a partition file holding `batches`: the batches in weir's wire format (each
/// column one run of little-endian bytes), framed with their length and a checksum.
pub fn encode_rows(batches: &[&Batch]) -> std::result::Result<Vec<u8>, String> {
    let body = bincode::serde::encode_to_vec(batches, config()).map_err(|e| e.to_string())?;
    let mut framed = Vec::with_capacity(body.len() + frame::HEADER_BYTES);
    frame::encode(&body, &mut framed);
    Ok(framed)
}

/// The batches of a partition file's bytes ([`encode_rows`]); an error when they are torn,
/// damaged or do not decode.
pub fn decode_rows(framed: &[u8]) -> std::result::Result<Vec<Batch>, String> {
    let body = match frame::decode(framed, 0) {
        Read::Record(body, end) if end == framed.len() => body,
        Read::Record(..) => return Err("bytes after the record".into()),
        Read::End => return Err("the file is empty".into()),
        Read::Bad(reason) => return Err(reason.into()),
    };
    bincode::serde::decode_from_slice(body, config())
        .map(|(batches, _)| batches)
        .map_err(|e| e.to_string())
}

impl Checkpoints {
    /// The checkpoints in `dir` (created if missing).
    pub fn open(disk: Arc<dyn Disk>, dir: &Path) -> Result<Checkpoints> {
        disk.create_dir_all(dir)?;
        Ok(Checkpoints {
            disk,
            dir: dir.to_path_buf(),
        })
    }

    /// The manifests on disk, newest first.
    fn manifests(&self) -> Result<Vec<(u64, PathBuf)>> {
        let mut found: Vec<(u64, PathBuf)> = self
            .disk
            .list(&self.dir)?
            .into_iter()
            .filter_map(|p| manifest_lsn(&p).map(|l| (l, p)))
            .collect();
        found.sort_by_key(|m| std::cmp::Reverse(m.0));
        Ok(found)
    }

    /// The LSN from which the log must be kept: the oldest kept checkpoint's (loading may fall
    /// back to it); 0 with none.
    pub fn keep_log_from(&self) -> Result<u64> {
        let manifests = self.manifests()?;
        Ok(manifests
            .get(manifests.len().min(KEPT).saturating_sub(1))
            .map_or(0, |(lsn, _)| *lsn))
    }

    /// Writes a checkpoint of `parts` covering the log up to `lsn`, with `meta`; the files of
    /// partitions already on disk at their version are reused. Then removes what no kept
    /// manifest names. Returns the bytes written.
    pub fn write(
        &self,
        lsn: u64,
        meta: Vec<u8>,
        parts: impl IntoIterator<Item = PartitionImage>,
    ) -> Result<u64> {
        let present: HashSet<PathBuf> = self.disk.list(&self.dir)?.into_iter().collect();
        let mut written = 0u64;
        let mut entries = Vec::new();
        for image in parts {
            let file = part_name(&image.table, image.partition, image.version);
            let path = self.dir.join(&file);
            let rows: usize = image.batches.iter().map(|b| b.num_rows()).sum();
            if !present.contains(&path) {
                let batches: Vec<&Batch> = image.batches.iter().map(|b| b.as_ref()).collect();
                let framed = encode_rows(&batches).map_err(|e| {
                    StorageError::corrupt(&path, 0, format!("cannot encode the rows: {e}"))
                })?;
                self.disk.write_atomic(&path, &framed)?;
                written += framed.len() as u64;
            }
            entries.push(PartEntry {
                table: image.table,
                partition: image.partition,
                version: image.version,
                file,
                rows: rows as u64,
            });
        }
        let manifest = Manifest {
            lsn,
            meta,
            parts: entries,
        };
        let path = self.dir.join(manifest_name(lsn));
        let body = bincode::serde::encode_to_vec(&manifest, config())
            .map_err(|e| StorageError::corrupt(&path, 0, format!("cannot encode: {e}")))?;
        let mut framed = Vec::with_capacity(body.len() + frame::HEADER_BYTES);
        frame::encode(&body, &mut framed);
        self.disk.write_atomic(&path, &framed)?;
        written += framed.len() as u64;
        self.collect()?;
        Ok(written)
    }

    /// Removes manifests beyond the kept ones, and files no kept manifest names.
    fn collect(&self) -> Result<()> {
        let manifests = self.manifests()?;
        let mut named: HashSet<String> = HashSet::new();
        for (i, (_, path)) in manifests.iter().enumerate() {
            if i >= KEPT {
                self.disk.remove(path)?;
                continue;
            }
            // An unreadable manifest names nothing: its files go.
            if let Ok(m) = self.read_manifest(path) {
                named.extend(m.parts.into_iter().map(|p| p.file));
            }
        }
        for path in self.disk.list(&self.dir)? {
            // A temporary file is what a crash left of a file being written.
            if path.extension().is_some_and(|e| e == "tmp") {
                self.disk.remove(&path)?;
                continue;
            }
            let is_part = path.extension().is_some_and(|e| e == "part");
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if is_part && !named.contains(name) {
                self.disk.remove(&path)?;
            }
        }
        Ok(())
    }

    fn read_framed(&self, path: &Path) -> Result<Vec<u8>> {
        let bytes = self.disk.read(path)?;
        match frame::decode(&bytes, 0) {
            Read::Record(body, end) if end == bytes.len() => Ok(body.to_vec()),
            Read::Record(..) => Err(StorageError::corrupt(path, 0, "bytes after the record")),
            Read::End => Err(StorageError::corrupt(path, 0, "the file is empty")),
            Read::Bad(reason) => Err(StorageError::corrupt(path, 0, reason)),
        }
    }

    fn read_manifest(&self, path: &Path) -> Result<Manifest> {
        let body = self.read_framed(path)?;
        bincode::serde::decode_from_slice(&body, config())
            .map(|(m, _)| m)
            .map_err(|e| StorageError::corrupt(path, 0, e.to_string()))
    }

    fn load_one(&self, path: &Path) -> Result<Loaded> {
        let manifest = self.read_manifest(path)?;
        let mut bytes = 0;
        let mut rows = Vec::with_capacity(manifest.parts.len());
        for entry in &manifest.parts {
            let path = self.dir.join(&entry.file);
            let framed = self.disk.read(&path)?;
            bytes += framed.len() as u64;
            rows.push(decode_rows(&framed).map_err(|e| StorageError::corrupt(&path, 0, e))?);
        }
        Ok(Loaded {
            manifest,
            rows,
            bytes,
        })
    }

    /// The newest checkpoint that reads back whole; an older one when the newest, or a file it
    /// names, is damaged. `None` when there is no checkpoint; an error when none reads back.
    pub fn load(&self) -> Result<Option<Loaded>> {
        let manifests = self.manifests()?;
        let mut first_error = None;
        for (_, path) in manifests.iter().take(KEPT) {
            match self.load_one(path) {
                Ok(loaded) => return Ok(Some(loaded)),
                Err(e) => {
                    tracing::warn!("checkpoint {} does not read back: {e}", path.display());
                    first_error.get_or_insert(e);
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::disk::RealDisk;
    use weir_operators::Column;

    fn batch(values: &[i64]) -> Arc<Batch> {
        Arc::new(Batch::try_new(vec![Column::from_i64(values.to_vec())]).unwrap())
    }

    fn image(partition: u32, version: u64, values: &[i64]) -> PartitionImage {
        PartitionImage {
            table: "t".into(),
            partition,
            version,
            batches: vec![batch(values)],
        }
    }

    #[test]
    fn a_checkpoint_reads_back_reuses_unchanged_files_and_falls_back_when_damaged() {
        let tmp = tempfile::tempdir().unwrap();
        let cp = Checkpoints::open(Arc::new(RealDisk), tmp.path()).unwrap();
        assert!(cp.load().unwrap().is_none());
        let first = cp
            .write(
                10,
                b"meta 1".to_vec(),
                vec![image(0, 1, &[1, 2]), image(1, 1, &[3])],
            )
            .unwrap();
        // Partition 1 unchanged: only partition 0's new version and the manifest are written.
        let second = cp
            .write(
                20,
                b"meta 2".to_vec(),
                vec![image(0, 2, &[1, 2, 4]), image(1, 1, &[3])],
            )
            .unwrap();
        assert!(
            second < first,
            "{second} bytes written, {first} the first time"
        );
        let loaded = cp.load().unwrap().unwrap();
        assert_eq!(loaded.manifest.lsn, 20);
        assert_eq!(loaded.manifest.meta, b"meta 2");
        assert_eq!(loaded.rows[0][0].num_rows(), 3);
        assert_eq!(cp.keep_log_from().unwrap(), 10);
        // Damage partition 0's newest file: the older checkpoint is loaded.
        let file = tmp.path().join(&loaded.manifest.parts[0].file);
        let mut bytes = std::fs::read(&file).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(&file, bytes).unwrap();
        let older = cp.load().unwrap().unwrap();
        assert_eq!(older.manifest.lsn, 10);
        assert_eq!(older.rows[0][0].num_rows(), 2);
        // A third checkpoint drops the oldest manifest and the files only it named.
        cp.write(30, vec![], vec![image(0, 3, &[9])]).unwrap();
        let names: Vec<String> = RealDisk
            .list(tmp.path())
            .unwrap()
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert!(!names.iter().any(|n| n.contains("-0-1.part")), "{names:?}");
        assert!(!names.contains(&manifest_name(10)), "{names:?}");
        assert_eq!(cp.keep_log_from().unwrap(), 20);
    }

    #[test]
    fn when_no_checkpoint_reads_back_loading_is_an_error_naming_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        let cp = Checkpoints::open(Arc::new(RealDisk), tmp.path()).unwrap();
        cp.write(5, vec![], vec![image(0, 1, &[1])]).unwrap();
        let path = tmp.path().join(manifest_name(5));
        std::fs::write(&path, b"garbage").unwrap();
        let err = cp.load().unwrap_err();
        assert!(
            matches!(&err, StorageError::Corrupt { path: p, .. } if *p == path),
            "{err}"
        );
    }
}
