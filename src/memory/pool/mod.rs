//! The bookkeeping core of a stream-ordered caching device allocator.
//!
//! [`CachingPool`] hands out [`Block`]s carved from large *segments* that it reserves from a
//! [`Backing`] (on a GPU: `cuMemAlloc`/`cuMemFree`) and caches freed blocks for reuse, in the
//! manner of PyTorch's CUDA caching allocator. It knows nothing about CUDA: where memory comes from
//! and how "this stream's work is done" is observed are the two traits [`Backing`] and
//! [`FenceSource`], so the whole allocator can be tested with a fake address space on a machine
//! without a GPU.
//!
//! The rules, in short (`docs/allocator.md` has the long form):
//!
//! * Sizes are rounded up to [`MIN_BLOCK_SIZE`] (512 B); a 0-byte request gets a 512 B block.
//! * Requests up to [`SMALL_REQUEST_MAX`] (1 MiB) are carved from [`SMALL_SEGMENT_SIZE`] (2 MiB)
//!   segments; larger ones from [`LARGE_SEGMENT_SIZE`] (20 MiB) segments, or, above
//!   [`LARGE_SEGMENT_THRESHOLD`] (10 MiB), from a segment of their own rounded up to
//!   [`LARGE_SEGMENT_ROUNDING`] (2 MiB). The three size classes never share blocks.
//! * A freed block is immediately reusable by later allocations *on the same stream* (stream order
//!   makes that safe). Another stream may reuse the memory only after a fence recorded on the
//!   owning stream after the free has completed; this happens a whole free segment at a time.
//! * A block used on more streams ([`CachingPool::record_stream`]) is held back when freed until a
//!   fence recorded on each of those streams at free time has completed.
//! * When the backing runs out, the pool releases every fully free cached segment and retries once.
//! * A [`ReserveBudget`] (default: 1.1 times the peak allocated bytes, and at least 40 MiB above
//!   it) bounds what the pool reserves: a request that would reserve past it first takes memory
//!   another stream freed, making its stream wait on that stream's fences on the device
//!   ([`FenceSource::wait`]), then releases entirely free segments.
//!
//! ```
//! use cudrv::memory::pool::{
//!     Backing, BackingError, CachingPool, Fence, FenceSource, StreamId,
//! };
//! use std::sync::atomic::{AtomicU64, Ordering};
//!
//! /// A toy address space: never reuses addresses, never runs out.
//! struct Bump(AtomicU64);
//! impl Backing for Bump {
//!     fn reserve(&self, bytes: usize) -> Result<u64, BackingError> {
//!         Ok(self.0.fetch_add(bytes as u64, Ordering::Relaxed))
//!     }
//!     fn release(&self, _addr: u64, _bytes: usize) {}
//! }
//! /// Fences that are always complete (as if every stream were idle).
//! struct Done;
//! impl Fence for Done {
//!     fn is_complete(&self) -> bool {
//!         true
//!     }
//! }
//! struct Fences;
//! impl FenceSource for Fences {
//!     type F = Done;
//!     fn record(&self, _stream: StreamId) -> Done {
//!         Done
//!     }
//!     fn wait(&self, _fence: &Done, _stream: StreamId) {}
//! }
//!
//! let pool = CachingPool::new(Bump(AtomicU64::new(1 << 20)), Fences);
//! let s = StreamId(1);
//! let a = pool.allocate(1000, s)?;
//! assert_eq!(a.size(), 1024);
//! let addr = a.addr();
//! pool.free(a);
//! let b = pool.allocate(900, s)?; // same stream: served from the cache
//! assert_eq!(b.addr(), addr);
//! pool.free(b);
//! assert_eq!(pool.stats().cache_hits, 1);
//! assert_eq!(pool.empty_cache(), 2 << 20);
//! # Ok::<(), cudrv::memory::pool::PoolError>(())
//! ```

mod block;
mod caching;
mod shard;
pub mod sim;
mod sizes;
mod stats;
mod traits;

pub use block::Block;
pub use caching::{CachingPool, PoolError, ReserveBudget, ShardHandle};
pub use sizes::{
    round_size, segment_size, LARGE_SEGMENT_ROUNDING, LARGE_SEGMENT_SIZE, LARGE_SEGMENT_THRESHOLD, MIN_BLOCK_SIZE,
    SMALL_REQUEST_MAX, SMALL_SEGMENT_SIZE,
};
pub use stats::PoolStats;
pub use traits::{Backing, BackingError, Fence, FenceSource, StreamId};
