//! Spilling to disk: what an operator whose state outgrows its memory writes, and reads back.
//!
//! A node owns one [`SpillSpace`]: a directory and a disk quota shared by every operator that
//! runs there. An operator that is refused memory writes part of its state to a
//! [`SpillWriter`] (batches in the project's wire form, each compressed with LZ4 and framed by
//! its lengths), finishes it into a [`SpillFile`], frees the memory, and later reads the file
//! back with a [`SpillReader`]. [`SpillPartitions`] splits rows by the hash of their keys over
//! several files, as a grace hash join and a spilling aggregation do.
//!
//! Files are RAII: a writer or file dropped (its operator finished, failed, was cancelled or
//! killed) removes its file and gives its bytes back to the quota; a space made on a
//! directory removes what a crash left there. A writer's and a reader's buffer is accounted in
//! the operator's memory pool, beside its reservation, when the pool has room to spare, and
//! left out (the file read and written a frame at a time) when it has not.
//!
//! ```
//! use weir_operators::spill::{SpillSpace, SpillWriter};
//! use weir_operators::{Batch, Column, Reservation};
//!
//! let space = SpillSpace::temporary("doc", 1 << 20).unwrap();
//! let memory = Reservation::unbounded();
//! let mut writer = SpillWriter::new(&space, &memory).unwrap();
//! writer.write(&Batch::try_new(vec![Column::from_i64(vec![1, 2, 3])]).unwrap()).unwrap();
//! let file = writer.finish().unwrap();
//! let back: Vec<Batch> = file.reader(&memory).unwrap().collect::<Result<_, _>>().unwrap();
//! assert_eq!(back[0].num_rows(), 3);
//! drop(file);
//! assert_eq!(space.used(), 0);
//! ```

mod file;
mod partitions;
mod space;

pub use file::{SpillFile, SpillReader, SpillWriter};
pub use partitions::{spill_partition_of, SpillPartitions};
pub use space::{SpillCounts, SpillSpace, SpillStats};
