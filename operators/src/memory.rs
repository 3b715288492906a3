//! Memory accounting for stateful operators.
//!
//! Operators that hold state (join build sides, aggregate tables, sort buffers) own a
//! [`Reservation`] and grow it before they keep more data. The [`MemoryPool`] behind it decides:
//! the runtime's node pool checks the node budget and the memory circuit breaker; tests use
//! [`UnboundedPool`]. Reservations are RAII: dropping one returns its bytes. A reservation can
//! be split, taken or merged without asking the pool again, so bytes already accounted move
//! along with the data they stand for instead of being accounted anew.

use crate::error::{Error, Result};
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Where reservations take their bytes from.
pub trait MemoryPool: Send + Sync {
    /// Asks for `bytes` more; an `Err` means the bytes were not granted.
    fn grow(&self, bytes: usize) -> Result<()>;
    /// Returns `bytes` previously granted.
    fn shrink(&self, bytes: usize);

    /// Accounts `bytes` that are already held and cannot be refused (a batch in flight).
    /// The default grants through [`MemoryPool::grow`] and, on refusal, accounts nothing.
    fn force_grow(&self, bytes: usize) -> bool {
        self.grow(bytes).is_ok()
    }
}

/// A pool that grants everything and counts what is held, optionally up to a limit.
#[derive(Debug, Default)]
pub struct UnboundedPool {
    used: AtomicUsize,
    peak: AtomicUsize,
    limit: Option<usize>,
}

impl UnboundedPool {
    /// A pool without a limit.
    pub fn new() -> Arc<Self> {
        Arc::new(UnboundedPool::default())
    }

    /// A pool that refuses to go past `limit` bytes.
    pub fn with_limit(limit: usize) -> Arc<Self> {
        Arc::new(UnboundedPool {
            limit: Some(limit),
            ..Default::default()
        })
    }

    /// Bytes held now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::SeqCst)
    }

    /// Most bytes ever held at once.
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::SeqCst)
    }
}

impl MemoryPool for UnboundedPool {
    fn grow(&self, bytes: usize) -> Result<()> {
        let limit = self.limit.unwrap_or(usize::MAX);
        // A refused grow changes nothing: `used` never goes past the limit, even for a moment.
        let now = self
            .used
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
                used.checked_add(bytes).filter(|&now| now <= limit)
            })
            .map_err(|_| {
                Error::Memory(format!(
                    "memory limit of {limit} bytes exceeded (asked for {bytes})"
                ))
            })?
            + bytes;
        self.peak.fetch_max(now, Ordering::SeqCst);
        Ok(())
    }

    fn shrink(&self, bytes: usize) {
        self.used.fetch_sub(bytes, Ordering::SeqCst);
    }
}

/// Bytes held by one consumer; returned to the pool when dropped.
pub struct Reservation {
    pool: Arc<dyn MemoryPool>,
    size: usize,
}

impl fmt::Debug for Reservation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reservation")
            .field("size", &self.size)
            .finish()
    }
}

impl Reservation {
    /// An empty reservation against `pool`.
    pub fn new(pool: Arc<dyn MemoryPool>) -> Self {
        Reservation { pool, size: 0 }
    }

    /// An empty reservation against a fresh unbounded pool (for tests and benchmarks).
    pub fn unbounded() -> Self {
        Reservation::new(UnboundedPool::new())
    }

    /// Bytes held.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Grows by `bytes`, or fails without changing anything.
    pub fn try_grow(&mut self, bytes: usize) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        self.pool.grow(bytes)?;
        self.size += bytes;
        Ok(())
    }

    /// Accounts `bytes` that cannot be refused (see [`MemoryPool::force_grow`]).
    pub fn force_grow(&mut self, bytes: usize) {
        if bytes > 0 && self.pool.force_grow(bytes) {
            self.size += bytes;
        }
    }

    /// Shrinks by up to `bytes`.
    pub fn shrink(&mut self, bytes: usize) {
        let bytes = bytes.min(self.size);
        if bytes > 0 {
            self.pool.shrink(bytes);
            self.size -= bytes;
        }
    }

    /// Grows or shrinks to exactly `total` bytes.
    pub fn resize(&mut self, total: usize) -> Result<()> {
        if total > self.size {
            self.try_grow(total - self.size)
        } else {
            self.shrink(self.size - total);
            Ok(())
        }
    }

    /// Returns every byte to the pool.
    pub fn free(&mut self) {
        self.shrink(self.size);
    }

    /// A new, empty reservation against the same pool.
    pub fn new_empty(&self) -> Reservation {
        Reservation::new(self.pool.clone())
    }

    /// Moves up to `bytes` of this reservation into a new one against the same pool, without
    /// asking the pool: the bytes stay accounted, now held by the new reservation (a batch
    /// split in parts takes its share of the whole's reservation along).
    pub fn split(&mut self, bytes: usize) -> Reservation {
        let bytes = bytes.min(self.size);
        self.size -= bytes;
        Reservation {
            pool: self.pool.clone(),
            size: bytes,
        }
    }

    /// Moves every byte into a new reservation against the same pool, leaving this one empty.
    pub fn take(&mut self) -> Reservation {
        self.split(self.size)
    }

    /// Takes over `other`'s bytes (which must be accounted in the same pool) without asking
    /// the pool; a reservation against another pool is freed instead.
    pub fn merge(&mut self, mut other: Reservation) {
        if self.same_pool(&other.pool) {
            self.size += std::mem::take(&mut other.size);
        }
    }

    /// Whether this reservation is accounted in `pool`.
    pub fn same_pool(&self, pool: &Arc<dyn MemoryPool>) -> bool {
        std::ptr::addr_eq(Arc::as_ptr(&self.pool), Arc::as_ptr(pool))
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.free();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_grow_changes_nothing() {
        let pool = UnboundedPool::with_limit(100);
        let mut r = Reservation::new(pool.clone());
        r.try_grow(60).unwrap();
        assert!(r.try_grow(50).is_err());
        assert_eq!((r.size(), pool.used(), pool.peak()), (60, 60, 60));
        r.try_grow(40).unwrap();
        assert_eq!((pool.used(), pool.peak()), (100, 100));
    }

    #[test]
    fn split_take_and_merge_move_bytes_without_the_pool() {
        let pool = UnboundedPool::with_limit(100);
        let dyn_pool: Arc<dyn MemoryPool> = pool.clone();
        let mut whole = Reservation::new(dyn_pool.clone());
        whole.try_grow(90).unwrap();
        let part = whole.split(30);
        let too_much = whole.split(1_000);
        assert_eq!((whole.size(), part.size(), too_much.size()), (0, 30, 60));
        assert_eq!(pool.used(), 90);
        let mut moved = Reservation::new(dyn_pool.clone());
        moved.merge(too_much);
        assert!(moved.same_pool(&dyn_pool));
        assert_eq!((moved.size(), pool.used()), (60, 90));
        let all = moved.take();
        assert_eq!((moved.size(), all.size()), (0, 60));
        drop(part);
        assert_eq!(pool.used(), 60);
        // A reservation of another pool is freed, not merged.
        let other = UnboundedPool::new();
        let mut foreign = Reservation::new(other.clone());
        foreign.try_grow(5).unwrap();
        let mut mine = Reservation::new(dyn_pool);
        mine.merge(foreign);
        assert_eq!((mine.size(), other.used()), (0, 0));
        drop(all);
        assert_eq!(pool.used(), 0);
    }
}
