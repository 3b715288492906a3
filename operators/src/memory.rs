//! Memory accounting for stateful operators.
//!
//! Operators that hold state (join build sides, aggregate tables, sort buffers) own a
//! [`Reservation`] and grow it before they keep more data. The [`MemoryPool`] behind it decides:
//! the runtime's node pool checks the node budget and the memory circuit breaker; tests use
//! [`UnboundedPool`]. Reservations are RAII: dropping one returns its bytes.

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
        let now = self.used.fetch_add(bytes, Ordering::SeqCst) + bytes;
        if let Some(limit) = self.limit {
            if now > limit {
                self.used.fetch_sub(bytes, Ordering::SeqCst);
                return Err(Error::Memory(format!(
                    "memory limit of {limit} bytes exceeded (asked for {bytes})"
                )));
            }
        }
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
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.free();
    }
}
