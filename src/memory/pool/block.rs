//! The handle of an allocated block.

use super::StreamId;

/// A block of device memory allocated from a [`CachingPool`](super::CachingPool).
///
/// A `Block` is a plain handle (address, sizes, stream): it owns nothing and has no `Drop`.
/// Give it back with [`CachingPool::free`](super::CachingPool::free), which consumes it, so a
/// block cannot be freed twice. Dropping a `Block` without freeing it corrupts nothing: its bytes
/// simply stay allocated (counted in [`PoolStats::allocated_bytes`](super::PoolStats)) for the
/// pool's lifetime, and its segment is never released. The runtime wraps it in an owning type
/// that frees it on drop.
///
/// `Block` is deliberately not `Clone`.
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a Block that is not freed stays allocated for the pool's lifetime"]
pub struct Block {
    pub(crate) addr: u64,
    pub(crate) size: usize,
    pub(crate) requested: usize,
    pub(crate) stream: StreamId,
    /// The stream whose shard the memory belongs to: `stream` itself, or the stream that lent
    /// the block (its free then waits for `stream`'s work before the memory goes home).
    pub(crate) home: StreamId,
    pub(crate) pool: u64,
}

impl Block {
    /// The device address of the first byte.
    pub fn addr(&self) -> u64 {
        self.addr
    }

    /// The bytes the block occupies: the request rounded up to 512 B (a 0-byte request gets
    /// 512 B), or more when the free block it was carved from was not worth splitting (a large
    /// block keeps a remainder of at most 1 MiB). Always a multiple of 512.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The byte count that was asked for.
    pub fn requested(&self) -> usize {
        self.requested
    }

    /// The stream the block was allocated on (it is freed in that stream's order).
    pub fn stream(&self) -> StreamId {
        self.stream
    }
}
