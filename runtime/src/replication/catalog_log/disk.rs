//! Files of the catalog log in a node's data directory: each written whole to a temporary
//! file, synced (with the `fsync` durability), and renamed over the old one, with a CRC32 of
//! its contents, so a crash leaves either the old file or the new one, never a mix.

use crate::wire::codec;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};

/// One file of the catalog log.
#[derive(Debug, Clone)]
pub struct LogFile {
    path: PathBuf,
    sync: bool,
}

impl LogFile {
    /// The file at `path`; `sync`: every write is synced to disk before it returns.
    pub fn new(path: PathBuf, sync: bool) -> Self {
        LogFile { path, sync }
    }

    /// Replaces the file's contents with `value`.
    pub fn write<T: Serialize>(&self, value: &T) -> std::io::Result<()> {
        let body = codec::encode(value).map_err(std::io::Error::other)?;
        let mut bytes = Vec::with_capacity(body.len() + 4);
        bytes.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
        bytes.extend_from_slice(&body);
        let tmp = self.path.with_extension("tmp");
        {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(&bytes)?;
            if self.sync {
                f.sync_all()?;
            }
        }
        std::fs::rename(&tmp, &self.path)?;
        if self.sync {
            if let Some(dir) = self.path.parent() {
                std::fs::File::open(dir)?.sync_all()?;
            }
        }
        Ok(())
    }

    /// The file's value; `None` when there is no file. A file whose checksum does not match
    /// or that does not decode is an error naming it.
    pub fn read<T: DeserializeOwned>(&self) -> std::io::Result<Option<T>> {
        read_checked(&self.path)
    }
}

fn read_checked<T: DeserializeOwned>(path: &Path) -> std::io::Result<Option<T>> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let corrupt = |why: String| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{}: {why}", path.display()),
        )
    };
    if bytes.len() < 4 {
        return Err(corrupt("truncated".into()));
    }
    let (sum, body) = bytes.split_at(4);
    if crc32fast::hash(body).to_le_bytes() != sum {
        return Err(corrupt("checksum mismatch".into()));
    }
    codec::decode(body)
        .map(Some)
        .map_err(|e| corrupt(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_written_reads_back_and_a_flipped_byte_is_refused() {
        let dir = std::env::temp_dir().join(format!("weir-logfile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = LogFile::new(dir.join("x.bin"), true);
        assert_eq!(file.read::<Vec<u64>>().unwrap(), None);
        file.write(&vec![1u64, 2, 3]).unwrap();
        assert_eq!(file.read::<Vec<u64>>().unwrap(), Some(vec![1, 2, 3]));
        let mut bytes = std::fs::read(dir.join("x.bin")).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        std::fs::write(dir.join("x.bin"), bytes).unwrap();
        let err = file.read::<Vec<u64>>().unwrap_err();
        assert!(err.to_string().contains("checksum"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
