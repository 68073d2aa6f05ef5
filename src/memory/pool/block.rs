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
///
/// ```
/// # use cudrv::memory::pool::{sim::{SimBacking, SimFences}, CachingPool, StreamId};
/// # let pool = CachingPool::new(SimBacking::new(1 << 30), SimFences::instant());
/// let b = pool.allocate(1000, StreamId(1))?;
/// println!("{} B at {:#x} on {:?}", b.size(), b.addr(), b.stream());
/// pool.free(b); // consumes the handle: no double free
/// # Ok::<(), cudrv::memory::pool::PoolError>(())
/// ```
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
    ///
    /// ```
    /// # use cudrv::memory::pool::{sim::{SimBacking, SimFences}, CachingPool, StreamId};
    /// # let pool = CachingPool::new(SimBacking::new(1 << 30), SimFences::instant());
    /// let (a, b) = (pool.allocate(1, StreamId(1))?, pool.allocate(1, StreamId(1))?);
    /// assert_eq!(a.addr() % 512, 0);
    /// assert_eq!(b.addr().abs_diff(a.addr()), 512);
    /// # Ok::<(), cudrv::memory::pool::PoolError>(())
    /// ```
    pub fn addr(&self) -> u64 {
        self.addr
    }

    /// The bytes the block occupies: the request rounded up to 512 B (a 0-byte request gets
    /// 512 B), or more when the free block it was carved from was not worth splitting (a large
    /// block keeps a remainder of at most 1 MiB). Always a multiple of 512.
    ///
    /// ```
    /// # use cudrv::memory::pool::{sim::{SimBacking, SimFences}, CachingPool, StreamId};
    /// # let pool = CachingPool::new(SimBacking::new(1 << 30), SimFences::instant());
    /// assert_eq!(pool.allocate(513, StreamId(1))?.size(), 1024);
    /// # Ok::<(), cudrv::memory::pool::PoolError>(())
    /// ```
    pub fn size(&self) -> usize {
        self.size
    }

    /// The byte count that was asked for.
    ///
    /// ```
    /// # use cudrv::memory::pool::{sim::{SimBacking, SimFences}, CachingPool, StreamId};
    /// # let pool = CachingPool::new(SimBacking::new(1 << 30), SimFences::instant());
    /// assert_eq!(pool.allocate(513, StreamId(1))?.requested(), 513);
    /// # Ok::<(), cudrv::memory::pool::PoolError>(())
    /// ```
    pub fn requested(&self) -> usize {
        self.requested
    }

    /// The stream the block was allocated on (it is freed in that stream's order).
    ///
    /// ```
    /// # use cudrv::memory::pool::{sim::{SimBacking, SimFences}, CachingPool, StreamId};
    /// # let pool = CachingPool::new(SimBacking::new(1 << 30), SimFences::instant());
    /// assert_eq!(pool.allocate(64, StreamId(9))?.stream(), StreamId(9));
    /// # Ok::<(), cudrv::memory::pool::PoolError>(())
    /// ```
    pub fn stream(&self) -> StreamId {
        self.stream
    }
}
