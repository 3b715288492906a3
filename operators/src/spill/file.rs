//! One spill file: batches written in the project's wire form, each compressed with LZ4 and
//! framed as `[compressed length u32][raw length u32][bytes]` (little-endian), and read back in
//! order through a large buffer (the reader fetches ahead of the batch being decoded).
//!
//! Each writer's and reader's buffer is accounted in the memory of the operator that opens
//! it (a reservation beside the operator's own), when the pool has room to spare: then the file
//! is buffered; else (a spill is what memory running out causes) it is read and written a
//! frame at a time, with no buffer, so that spilling never takes a node past its budget nor
//! the memory the operator needs next.

use super::space::{io_error, SpillSpace};
use crate::batch::Batch;
use crate::error::{Error, Result};
use crate::memory::Reservation;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Bytes a writer buffers: frames are written whole, so that a batch's frame usually goes
/// past the buffer in one request; the buffer gathers small ones (sixteen partitions' writers
/// of a spilling operator hold sixteen of these).
const WRITE_BUFFER_BYTES: usize = 32 << 10;

/// Bytes a reader buffers: it fetches ahead of the batch being decoded (and the system reads
/// ahead of a file read in order). A spilling operator holds sixteen writers per input, a
/// merge sixteen readers (0.5-1 MiB), accounted in its memory.
const READ_BUFFER_BYTES: usize = 64 << 10;

/// A buffer is taken only when the pool has room for this many beside it: a buffer only
/// saves system calls, and must not take the memory the operator's own state needs next (a
/// merge's batches, a partition's join).
const BUFFER_HEADROOM: usize = 4;

/// A buffer of `bytes` accounted in a new reservation beside `memory`, or none (an empty
/// reservation and no buffer) when the pool has not room for [`BUFFER_HEADROOM`] of them.
fn buffer(memory: &Reservation, bytes: usize) -> (Reservation, usize) {
    let mut held = memory.new_empty();
    match held.try_grow(bytes * BUFFER_HEADROOM) {
        Ok(()) => {
            held.shrink(bytes * (BUFFER_HEADROOM - 1));
            (held, bytes)
        }
        Err(_) => (held, 0),
    }
}

/// Largest frame read back (compressed or raw): the wire's limit on a message.
const MAX_FRAME_BYTES: usize = 1 << 30;

/// Scratch space kept between batches up to this size (a larger one, for an unusually large
/// batch, is given back after use).
const KEEP_SCRATCH_BYTES: usize = 4 << 20;

/// A batch's encoded and compressed bytes while it is written or read.
#[derive(Default)]
struct Scratch {
    raw: Vec<u8>,
    packed: Vec<u8>,
}

impl Scratch {
    fn trim(&mut self) {
        for v in [&mut self.raw, &mut self.packed] {
            if v.capacity() > KEEP_SCRATCH_BYTES {
                v.clear();
                v.shrink_to(KEEP_SCRATCH_BYTES);
            }
        }
    }
}

thread_local! {
    /// One scratch pair per thread, shared by every spill file the thread writes or reads (a
    /// spilling join's 32 writers, a merge's 16 readers), rather than a pair per file: a batch
    /// is encoded or decoded whole before the next one, so one pair is enough.
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
}

/// The file's path and the quota it holds; removing the file and returning the bytes when
/// dropped.
#[derive(Debug)]
struct Owned {
    space: Arc<SpillSpace>,
    path: PathBuf,
    bytes: u64,
}

impl Drop for Owned {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        self.space.release(self.bytes);
    }
}

/// A spill file being written. Dropped before [`finish`](SpillWriter::finish), it removes
/// its file.
#[derive(Debug)]
pub struct SpillWriter {
    owned: Owned,
    out: BufWriter<File>,
    /// The memory of `out`'s buffer.
    _buffer: Reservation,
    batches: usize,
    rows: usize,
}

impl SpillWriter {
    /// A new spill file in `space`, its buffer accounted beside `memory` (the opening
    /// operator's reservation).
    pub fn new(space: &Arc<SpillSpace>, memory: &Reservation) -> Result<Self> {
        let space = space.clone();
        let path = space.next_path();
        let file = File::create(&path).map_err(|e| io_error("create the spill file", &path, e))?;
        let (held, capacity) = buffer(memory, WRITE_BUFFER_BYTES);
        Ok(SpillWriter {
            owned: Owned {
                space,
                path,
                bytes: 0,
            },
            out: BufWriter::with_capacity(capacity, file),
            _buffer: held,
            batches: 0,
            rows: 0,
        })
    }

    /// Appends `batch`; fails with [`Error::SpillQuota`] when the node's quota has no room
    /// for it (nothing of it is then written).
    pub fn write(&mut self, batch: &Batch) -> Result<()> {
        SCRATCH.with(|scratch| {
            let mut s = scratch.borrow_mut();
            let written = self.write_with(batch, &mut s);
            s.trim();
            written
        })?;
        self.batches += 1;
        self.rows += batch.num_rows();
        Ok(())
    }

    /// Rows written so far.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Encodes, compresses and writes `batch`'s frame through `s`.
    fn write_with(&mut self, batch: &Batch, s: &mut Scratch) -> Result<()> {
        s.raw.clear();
        bincode::serde::encode_into_std_write(batch, &mut s.raw, bincode::config::standard())
            .map_err(|e| Error::Spill(format!("cannot encode a batch to spill: {e}")))?;
        s.packed
            .resize(lz4_flex::block::get_maximum_output_size(s.raw.len()), 0);
        let packed = lz4_flex::block::compress_into(&s.raw, &mut s.packed)
            .map_err(|e| Error::Spill(format!("cannot compress a batch to spill: {e}")))?;
        let frame = 8 + packed as u64;
        self.owned.space.charge(frame)?;
        self.owned.bytes += frame;
        let path = &self.owned.path;
        let write = |out: &mut BufWriter<File>, bytes: &[u8]| {
            out.write_all(bytes)
                .map_err(|e| io_error("write the spill file", path, e))
        };
        write(&mut self.out, &(packed as u32).to_le_bytes())?;
        write(&mut self.out, &(s.raw.len() as u32).to_le_bytes())?;
        write(&mut self.out, &s.packed[..packed])
    }

    /// Ends the file: flushes it and hands it over for reading.
    pub fn finish(mut self) -> Result<SpillFile> {
        let path = self.owned.path.clone();
        self.out
            .flush()
            .map_err(|e| io_error("write the spill file", &path, e))?;
        Ok(SpillFile {
            owned: self.owned,
            batches: self.batches,
            rows: self.rows,
        })
    }
}

/// A written spill file. Dropped, it removes its file and gives its bytes back to the quota.
#[derive(Debug)]
pub struct SpillFile {
    owned: Owned,
    batches: usize,
    rows: usize,
}

impl SpillFile {
    /// Reads the batches back, in the order they were written, through a buffer accounted
    /// beside `memory` (the reading operator's reservation).
    pub fn reader(&self, memory: &Reservation) -> Result<SpillReader> {
        let path = &self.owned.path;
        let file = File::open(path).map_err(|e| io_error("open the spill file", path, e))?;
        let (held, capacity) = buffer(memory, READ_BUFFER_BYTES);
        Ok(SpillReader {
            path: path.clone(),
            input: BufReader::with_capacity(capacity, file),
            _buffer: held,
            left: self.batches,
        })
    }

    /// Batches in the file.
    pub fn batches(&self) -> usize {
        self.batches
    }

    /// Rows in the file.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Bytes on disk.
    pub fn bytes(&self) -> u64 {
        self.owned.bytes
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.owned.path
    }
}

/// Reads a spill file's batches in order; an error (a damaged or truncated file) ends it.
#[derive(Debug)]
pub struct SpillReader {
    path: PathBuf,
    input: BufReader<File>,
    /// The memory of `input`'s buffer.
    _buffer: Reservation,
    left: usize,
}

impl SpillReader {
    fn read_batch(&mut self) -> Result<Batch> {
        SCRATCH.with(|scratch| {
            let mut s = scratch.borrow_mut();
            let batch = self.read_with(&mut s);
            s.trim();
            batch
        })
    }

    /// Reads, decompresses and decodes the next frame through `s`.
    fn read_with(&mut self, s: &mut Scratch) -> Result<Batch> {
        let damaged = |what: &str| {
            Error::Spill(format!(
                "damaged spill file {}: {what}",
                self.path.display()
            ))
        };
        let mut lengths = [0u8; 8];
        self.input
            .read_exact(&mut lengths)
            .map_err(|e| io_error("read the spill file", &self.path, e))?;
        let packed = u32::from_le_bytes(lengths[..4].try_into().expect("4 bytes")) as usize;
        let raw = u32::from_le_bytes(lengths[4..].try_into().expect("4 bytes")) as usize;
        if packed > MAX_FRAME_BYTES || raw > MAX_FRAME_BYTES {
            return Err(damaged("a frame larger than any batch"));
        }
        s.packed.resize(packed, 0);
        self.input
            .read_exact(&mut s.packed)
            .map_err(|e| io_error("read the spill file", &self.path, e))?;
        s.raw.resize(raw, 0);
        let n = lz4_flex::block::decompress_into(&s.packed, &mut s.raw)
            .map_err(|e| damaged(&e.to_string()))?;
        if n != raw {
            return Err(damaged("a frame shorter than its length"));
        }
        let (batch, used) =
            bincode::serde::decode_from_slice::<Batch, _>(&s.raw, bincode::config::standard())
                .map_err(|e| damaged(&e.to_string()))?;
        if used != raw {
            return Err(damaged("bytes after a batch"));
        }
        Ok(batch)
    }
}

impl Iterator for SpillReader {
    type Item = Result<Batch>;

    fn next(&mut self) -> Option<Result<Batch>> {
        if self.left == 0 {
            return None;
        }
        let batch = self.read_batch();
        self.left = if batch.is_ok() { self.left - 1 } else { 0 };
        Some(batch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spill::SpillSpace;
    use crate::{Column, DataType, Value};

    /// Memory no test here runs short of.
    fn memory() -> Reservation {
        Reservation::unbounded()
    }

    fn batch(from: i64, rows: usize) -> Batch {
        let ids: Vec<i64> = (from..from + rows as i64).collect();
        let names: Vec<String> = ids.iter().map(|i| format!("row {i}")).collect();
        let mut amounts: Vec<Value> = ids.iter().map(|&i| Value::Float(i as f64 / 3.0)).collect();
        amounts[0] = Value::Null;
        Batch::try_new(vec![
            Column::from_i64(ids),
            Column::from_strs(&names),
            Column::from_values(DataType::Float64, &amounts).unwrap(),
        ])
        .unwrap()
    }

    #[test]
    fn batches_come_back_as_written_and_the_file_goes_with_its_handle() {
        let space = SpillSpace::temporary("test", 1 << 30).unwrap();
        let mut w = SpillWriter::new(&space, &memory()).unwrap();
        let written: Vec<Batch> = (0..5).map(|i| batch(i * 1000, 1000)).collect();
        for b in &written {
            w.write(b).unwrap();
        }
        let file = w.finish().unwrap();
        assert_eq!((file.batches(), file.rows()), (5, 5000));
        assert_eq!(space.used(), file.bytes());
        let read: Vec<Batch> = file
            .reader(&memory())
            .unwrap()
            .map(|b| b.unwrap())
            .collect();
        assert_eq!(read, written);
        // Two readers of one file are independent.
        assert_eq!(file.reader(&memory()).unwrap().count(), 5);
        let path = file.path().to_path_buf();
        assert!(path.exists());
        drop(file);
        assert!(!path.exists());
        assert_eq!(space.used(), 0);
    }

    #[test]
    fn buffers_are_accounted_while_open_and_done_without_when_memory_is_short() {
        let space = SpillSpace::temporary("test", 1 << 30).unwrap();
        let written: Vec<Batch> = (0..3).map(|i| batch(i * 100, 100)).collect();
        // Room for one writer's buffer with its headroom, not for a second.
        let pool = crate::UnboundedPool::with_limit(BUFFER_HEADROOM * WRITE_BUFFER_BYTES);
        let memory = Reservation::new(pool.clone());
        let mut w = SpillWriter::new(&space, &memory).unwrap();
        assert_eq!(pool.used(), WRITE_BUFFER_BYTES);
        let mut unbuffered = SpillWriter::new(&space, &memory).unwrap();
        assert_eq!(pool.used(), WRITE_BUFFER_BYTES);
        for b in &written {
            w.write(b).unwrap();
            unbuffered.write(b).unwrap();
        }
        let (file, other) = (w.finish().unwrap(), unbuffered.finish().unwrap());
        assert_eq!(pool.used(), 0);
        // The same for readers.
        let pool = crate::UnboundedPool::with_limit(BUFFER_HEADROOM * READ_BUFFER_BYTES);
        let memory = Reservation::new(pool.clone());
        let reader = file.reader(&memory).unwrap();
        assert_eq!(pool.used(), READ_BUFFER_BYTES);
        let second = other.reader(&memory).unwrap();
        assert_eq!(pool.used(), READ_BUFFER_BYTES);
        let read: Vec<Batch> = second.map(|b| b.unwrap()).collect();
        assert_eq!(read, written);
        assert_eq!(pool.used(), READ_BUFFER_BYTES, "held until its reader goes");
        let read: Vec<Batch> = reader.map(|b| b.unwrap()).collect();
        assert_eq!(read, written);
        assert_eq!(pool.used(), 0);
    }

    #[test]
    fn an_unfinished_writer_removes_its_file() {
        let space = SpillSpace::temporary("test", 1 << 30).unwrap();
        let mut w = SpillWriter::new(&space, &memory()).unwrap();
        w.write(&batch(0, 10)).unwrap();
        let count = || std::fs::read_dir(space.dir()).unwrap().count();
        assert_eq!(count(), 1);
        drop(w);
        assert_eq!(count(), 0);
        assert_eq!(space.used(), 0);
    }

    #[test]
    fn past_the_quota_a_write_is_refused_with_a_typed_error() {
        let space = SpillSpace::temporary("node 2", 2_000).unwrap();
        let mut w = SpillWriter::new(&space, &memory()).unwrap();
        let err = (0..100)
            .map(|i| w.write(&batch(i * 100, 100)))
            .find_map(|r| r.err())
            .expect("the quota is reached");
        assert!(
            matches!(err, Error::SpillQuota { quota: 2_000, .. }),
            "{err:?}"
        );
        assert!(err.to_string().contains("node 2"), "{err}");
        assert!(space.used() <= 2_000);
        drop(w);
        assert_eq!(space.used(), 0);
    }

    #[test]
    fn a_damaged_file_is_an_error_naming_it() {
        let space = SpillSpace::temporary("test", 1 << 30).unwrap();
        let mut w = SpillWriter::new(&space, &memory()).unwrap();
        w.write(&batch(0, 100)).unwrap();
        let file = w.finish().unwrap();
        let mut bytes = std::fs::read(file.path()).unwrap();
        let last = bytes.len() - 3;
        bytes[last] ^= 0xff;
        bytes.truncate(bytes.len() - 1);
        std::fs::write(file.path(), bytes).unwrap();
        let err = file.reader(&memory()).unwrap().next().unwrap().unwrap_err();
        assert!(matches!(err, Error::Spill(_)), "{err:?}");
        assert!(
            err.to_string().contains(&file.path().display().to_string()),
            "{err}"
        );
    }

    #[test]
    fn a_space_on_a_directory_removes_what_a_crash_left() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("7.spill"), b"left by a crash").unwrap();
        std::fs::write(dir.path().join("notes.txt"), b"not ours").unwrap();
        let space = SpillSpace::new("test", dir.path(), 1 << 20).unwrap();
        assert!(!dir.path().join("7.spill").exists());
        assert!(dir.path().join("notes.txt").exists());
        drop(space);
        assert!(dir.path().exists(), "a given directory stays");
    }

    #[test]
    fn a_temporary_space_removes_its_directory() {
        let space = SpillSpace::temporary("test", 1 << 20).unwrap();
        let dir = space.dir().to_path_buf();
        assert!(dir.exists());
        drop(space);
        assert!(!dir.exists());
    }
}
