//! The pool: per-stream shards, the global byte accounting, the miss, OOM and trim paths.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use super::shard::{Counts, FreeOutcome, Served, ShardState};
use super::sizes::{round_size, segment_size, Kind, LARGE_SEGMENT_ROUNDING};
use super::{Backing, Block, FenceSource, StreamId};

mod cross_stream;
mod settings;

/// Why [`CachingPool::allocate`] failed.
///
/// ```
/// use cudrv::memory::pool::{sim::{SimBacking, SimFences}, CachingPool, PoolError, StreamId};
///
/// let pool = CachingPool::new(SimBacking::new(8 << 20), SimFences::instant());
/// match pool.allocate(16 << 20, StreamId(1)) {
///     Err(PoolError::OutOfMemory { requested, .. }) => assert_eq!(requested, 16 << 20),
///     other => panic!("expected out of memory, got {other:?}"),
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PoolError {
    /// No memory for the request, even after releasing the cache (or the request would exceed
    /// the pool's limit). The numbers are the pool's at the time of failure; the runtime adds what
    /// the device reports as free.
    #[error(
        "out of device memory: tried to allocate {requested} B; the pool has {reserved} B \
         reserved, {allocated} B allocated, {cached} B cached{}",
        limit.map(|l| format!(", limit {l} B")).unwrap_or_default()
    )]
    OutOfMemory {
        /// Bytes asked for.
        requested: usize,
        /// Bytes reserved from the backing.
        reserved: usize,
        /// Bytes in allocated blocks.
        allocated: usize,
        /// Bytes reserved but not allocated (free or waiting on fences).
        cached: usize,
        /// The pool's limit on reserved bytes, if one is set.
        limit: Option<usize>,
    },
    /// The backing failed for a reason other than running out of memory.
    #[error("the pool's backing failed: {0}")]
    Backing(String),
}

/// A stream's shard of a [`CachingPool`], kept by the caller to skip the shard look-up (see
/// [`CachingPool::shard_handle`]).
///
/// ```
/// # use cudrv::memory::pool::{sim::{SimBacking, SimFences}, CachingPool, StreamId};
/// # let pool = CachingPool::new(SimBacking::new(1 << 30), SimFences::instant());
/// let shard = pool.shard_handle(StreamId(3));
/// let b = pool.allocate_in(&shard, 4096)?;
/// assert_eq!(b.stream(), StreamId(3));
/// pool.free_in(&shard, b);
/// # Ok::<(), cudrv::memory::pool::PoolError>(())
/// ```
pub struct ShardHandle<F> {
    stream: StreamId,
    pool: u64,
    shard: Arc<Shard<F>>,
}

impl<F> std::fmt::Debug for ShardHandle<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardHandle")
            .field("stream", &self.stream)
            .field("pool", &self.pool)
            .finish()
    }
}

/// `usize::MAX` stands for "no limit"/"no threshold" in the atomics.
const UNSET: usize = usize::MAX;

static NEXT_POOL_ID: AtomicU64 = AtomicU64::new(1);

/// The pool-wide totals, updated with relaxed atomics. (Per-stream event counts live in the
/// shards.) `allocated` and `peak_allocated` change only under a shard lock, with a plain
/// load and store while the pool has one shard (see [`CachingPool::add_allocated`]).
#[derive(Default)]
struct Counters {
    oom_retries: AtomicU64,
    oom_failures: AtomicU64,
    segments: AtomicU64,
    /// Includes segments being reserved (charged before the backing is asked).
    reserved: AtomicUsize,
    allocated: AtomicUsize,
    peak_allocated: AtomicUsize,
    peak_reserved: AtomicUsize,
    /// Bytes released to keep within the reserve budget.
    budget_released: AtomicU64,
}

type Shard<F> = Mutex<ShardState<F>>;

/// Shows that the caller holds a shard's lock: made only from the state behind the guard.
#[derive(Clone, Copy)]
struct Locked<'a, F>(std::marker::PhantomData<&'a ShardState<F>>);

impl<'a, F> Locked<'a, F> {
    #[inline]
    fn by(_state: &'a ShardState<F>) -> Self {
        Locked(std::marker::PhantomData)
    }
}

/// A soft cap on the bytes a [`CachingPool`] reserves from its backing: the larger of
/// `multiple` times the most bytes ever allocated at once and that peak plus `slack` (the request
/// being served counts as allocated). See [`CachingPool::set_reserve_budget`].
///
/// ```
/// use cudrv::memory::pool::ReserveBudget;
/// # use cudrv::memory::pool::{sim::{SimBacking, SimFences}, CachingPool};
/// # let pool = CachingPool::new(SimBacking::new(1 << 30), SimFences::instant());
/// // Reserve at most twice the peak, and never less than 8 MiB above it.
/// pool.set_reserve_budget(Some(ReserveBudget { multiple: 2.0, slack: 8 << 20 }));
/// assert_eq!(pool.reserve_budget().unwrap().multiple, 2.0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReserveBudget {
    /// Reserved bytes allowed per peak allocated byte (at least 1).
    pub multiple: f64,
    /// Bytes always allowed above the peak allocated bytes, however small the peak.
    pub slack: usize,
}

impl Default for ReserveBudget {
    /// 1.1 times the peak allocated bytes, and at least 40 MiB (two large segments) above it, so
    /// that small pools never wait or release.
    fn default() -> Self {
        ReserveBudget {
            multiple: 1.1,
            slack: 2 * super::LARGE_SEGMENT_SIZE,
        }
    }
}

/// Memory of another stream obtained by waiting on fences.
enum Acquired {
    /// An entirely free segment, to be added to the allocating stream's shard.
    Segment { addr: u64, size: usize },
    /// A block lent by `home`'s shard.
    Block { home: StreamId, addr: u64, size: usize },
}

/// A stream-ordered caching allocator over a [`Backing`], generic over how stream progress is
/// observed ([`FenceSource`]).
///
/// All methods take `&self`; share the pool between threads with an `Arc`.
///
/// # Locking
///
/// Each stream has a *shard* (its segments, blocks, free sets and pending list) behind its own
/// mutex, so threads working on different streams do not contend. A read-write lock maps stream
/// ids to shards (written only the first time a stream is seen); byte totals and counters are
/// atomics. A thread holds at most one shard lock at a time, and never one while calling the
/// [`Backing`] or [`FenceSource::record`]. The hit path (a free block of the stream fits) takes
/// the stream's shard lock once (the map's read lock too, unless a [`ShardHandle`] is used).
///
/// While the pool has a single shard (a program that allocates on one stream), every change of
/// the allocated total happens under that shard's lock, so the total is updated with a plain
/// load and store instead of a locked read-modify-write: on the hit path that saves two of the
/// six atomic read-modify-writes of an allocate-and-free pair. The second shard ends that, once
/// for good, before it can be used (see its private `shard` method).
///
/// ```
/// use cudrv::memory::pool::{sim::{SimBacking, SimFences}, CachingPool, StreamId};
/// use std::sync::Arc;
///
/// let pool = Arc::new(CachingPool::new(SimBacking::new(1 << 30), SimFences::instant()));
/// let threads: Vec<_> = (0..4u64)
///     .map(|t| {
///         let pool = pool.clone();
///         std::thread::spawn(move || {
///             for _ in 0..100 {
///                 let b = pool.allocate(1000, StreamId(t)).unwrap();
///                 pool.free(b);
///             }
///         })
///     })
///     .collect();
/// threads.into_iter().for_each(|t| t.join().unwrap());
/// assert_eq!(pool.stats().allocations, 400);
/// pool.check_invariants();
/// ```
pub struct CachingPool<B: Backing, S: FenceSource> {
    // Fields drop in order: the shards (and the fences they hold) before the fence source, so a
    // source that recycles fence resources sees them all come back before it is dropped.
    shards: RwLock<BTreeMap<StreamId, Arc<Shard<S::F>>>>,
    backing: B,
    fences: S,
    id: u64,
    counters: Counters,
    limit: AtomicUsize,
    release_threshold: AtomicUsize,
    quick: AtomicBool,
    /// The pool has at most one shard (see the type's documentation).
    solo: AtomicBool,
    /// The reserve budget's multiple in thousandths, or [`UNSET`] for none.
    budget_milli: AtomicUsize,
    /// The reserve budget's slack in bytes.
    budget_slack: AtomicUsize,
    /// Held by the thread that is about to reserve a segment (see `allocate_from`).
    reserving: Mutex<()>,
}

impl<B: Backing, S: FenceSource> std::fmt::Debug for CachingPool<B, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachingPool")
            .field("id", &self.id)
            .field("stats", &self.stats())
            .field("limit", &self.limit())
            .field("release_threshold", &self.release_threshold())
            .finish_non_exhaustive()
    }
}

impl<B: Backing, S: FenceSource> CachingPool<B, S> {
    /// A pool with nothing reserved, no limit, no release threshold, and the default
    /// [reserve budget](Self::set_reserve_budget).
    ///
    /// ```
    /// use cudrv::memory::pool::{sim::{SimBacking, SimFences}, CachingPool};
    /// let pool = CachingPool::new(SimBacking::new(1 << 30), SimFences::manual());
    /// assert_eq!(pool.stats().reserved_bytes, 0);
    /// ```
    pub fn new(backing: B, fences: S) -> Self {
        let pool = CachingPool {
            backing,
            fences,
            id: NEXT_POOL_ID.fetch_add(1, Relaxed),
            shards: RwLock::new(BTreeMap::new()),
            counters: Counters::default(),
            limit: AtomicUsize::new(UNSET),
            release_threshold: AtomicUsize::new(UNSET),
            quick: AtomicBool::new(true),
            solo: AtomicBool::new(true),
            budget_milli: AtomicUsize::new(UNSET),
            budget_slack: AtomicUsize::new(0),
            reserving: Mutex::new(()),
        };
        pool.set_reserve_budget(Some(ReserveBudget::default()));
        pool
    }

    /// The backing the pool reserves from.
    ///
    /// ```
    /// # use cudrv::memory::pool::{sim::{SimBacking, SimFences}, CachingPool, StreamId};
    /// # let pool = CachingPool::new(SimBacking::new(1 << 30), SimFences::instant());
    /// let b = pool.allocate(100, StreamId(1))?;
    /// assert_eq!(pool.backing().used(), 2 << 20); // one small segment
    /// pool.free(b);
    /// # Ok::<(), cudrv::memory::pool::PoolError>(())
    /// ```
    pub fn backing(&self) -> &B {
        &self.backing
    }

    /// The source the pool records fences with.
    ///
    /// ```
    /// # use cudrv::memory::pool::{sim::{SimBacking, SimFences}, CachingPool, StreamId};
    /// let pool = CachingPool::new(SimBacking::new(1 << 30), SimFences::manual());
    /// let b = pool.allocate(100, StreamId(1))?;
    /// pool.free(b);
    /// pool.fence_source().complete(StreamId(1));
    /// # Ok::<(), cudrv::memory::pool::PoolError>(())
    /// ```
    pub fn fence_source(&self) -> &S {
        &self.fences
    }

    /// Allocates at least `bytes` bytes for use on `stream`.
    ///
    /// First, blocks of `stream` whose fences have completed leave the pending list (one fence
    /// query per pending block; nothing when none is pending). Then, in order:
    ///
    /// 1. the best-fitting free block of `stream` (a *hit*);
    /// 2. an entirely free segment of another stream whose last use is known finished (also a
    ///    hit; this may record a fence on that stream for next time);
    /// 3. a new segment from the backing (a *miss*). When the backing is out of memory, or the new
    ///    segment would exceed the [limit](Self::set_limit), the pool releases every entirely free
    ///    cached segment ([`empty_cache`](Self::empty_cache)) and tries once more.
    ///
    /// A 0-byte request gets a 512 B block with an address of its own.
    ///
    /// # Errors
    ///
    /// [`PoolError::OutOfMemory`] when there is no room even after releasing the cache;
    /// [`PoolError::Backing`] when the backing fails otherwise.
    ///
    /// ```
    /// # use cudrv::memory::pool::{sim::{SimBacking, SimFences}, CachingPool, StreamId};
    /// # let pool = CachingPool::new(SimBacking::new(1 << 30), SimFences::instant());
    /// let a = pool.allocate(0, StreamId(1))?;
    /// let b = pool.allocate(0, StreamId(1))?;
    /// assert_ne!(a.addr(), b.addr());
    /// assert_eq!((a.size(), pool.stats().cache_misses), (512, 1));
    /// pool.free(a);
    /// pool.free(b);
    /// # Ok::<(), cudrv::memory::pool::PoolError>(())
    /// ```
    pub fn allocate(&self, bytes: usize, stream: StreamId) -> Result<Block, PoolError> {
        self.allocate_from(&self.shard(stream), bytes, stream)
    }

    /// The shard of `stream`, to keep and pass to [`allocate_in`](Self::allocate_in) and
    /// [`free_in`](Self::free_in): those skip the look-up of the stream's shard.
    ///
    /// ```
    /// # use cudrv::memory::pool::{sim::{SimBacking, SimFences}, CachingPool, StreamId};
    /// # let pool = CachingPool::new(SimBacking::new(1 << 30), SimFences::instant());
    /// let shard = pool.shard_handle(StreamId(1));
    /// for _ in 0..10 {
    ///     let b = pool.allocate_in(&shard, 256)?;
    ///     pool.free_in(&shard, b);
    /// }
    /// assert_eq!(pool.stats().cache_hits, 9);
    /// # Ok::<(), cudrv::memory::pool::PoolError>(())
    /// ```
    pub fn shard_handle(&self, stream: StreamId) -> ShardHandle<S::F> {
        ShardHandle {
            stream,
            pool: self.id,
            shard: self.shard(stream),
        }
    }

    /// [`allocate`](Self::allocate) on the handle's stream.
    ///
    /// # Panics
    ///
    /// If the handle belongs to another pool.
    ///
    /// ```
    /// # use cudrv::memory::pool::{sim::{SimBacking, SimFences}, CachingPool, StreamId};
    /// # let pool = CachingPool::new(SimBacking::new(1 << 30), SimFences::instant());
    /// let shard = pool.shard_handle(StreamId(2));
    /// let b = pool.allocate_in(&shard, 1 << 20)?;
    /// assert_eq!(b.size(), 1 << 20);
    /// pool.free_in(&shard, b);
    /// # Ok::<(), cudrv::memory::pool::PoolError>(())
    /// ```
    pub fn allocate_in(&self, handle: &ShardHandle<S::F>, bytes: usize) -> Result<Block, PoolError> {
        assert_eq!(handle.pool, self.id, "shard handle of another pool");
        self.allocate_from(&handle.shard, bytes, handle.stream)
    }

    /// [`free`](Self::free), for a block of the handle's stream (other blocks take the ordinary
    /// path).
    ///
    /// ```
    /// # use cudrv::memory::pool::{sim::{SimBacking, SimFences}, CachingPool, StreamId};
    /// # let pool = CachingPool::new(SimBacking::new(1 << 30), SimFences::instant());
    /// let shard = pool.shard_handle(StreamId(2));
    /// let b = pool.allocate(512, StreamId(2))?;
    /// pool.free_in(&shard, b);
    /// assert_eq!(pool.stats().frees, 1);
    /// # Ok::<(), cudrv::memory::pool::PoolError>(())
    /// ```
    pub fn free_in(&self, handle: &ShardHandle<S::F>, block: Block) {
        if handle.pool == self.id && handle.stream == block.home {
            self.free_to(&handle.shard, block);
        } else {
            self.free(block);
        }
    }

    fn allocate_from(&self, shard: &Arc<Shard<S::F>>, bytes: usize, stream: StreamId) -> Result<Block, PoolError> {
        let Some(rounded) = round_size(bytes) else {
            return Err(self.out_of_memory(bytes));
        };
        let kind = Kind::of(rounded);
        if let Some((addr, size)) = self.own_free(shard, kind, rounded) {
            return Ok(self.make_block(addr, size, bytes, stream, stream));
        }
        if let Some(block) = self.other_streams_free(shard, kind, rounded, bytes, stream) {
            return Ok(block);
        }
        let Some(mut seg_size) = segment_size(rounded) else {
            return Err(self.out_of_memory(bytes));
        };
        // Going to the backing: one thread at a time, and each looks again once it is its turn,
        // since the threads before it (a backing call takes ~100 us on a GPU) may have freed
        // memory meanwhile. Deciding before the wait would reserve for every thread queued.
        let _turn = self.reserving.lock();
        if let Some((addr, size)) = self.own_free(shard, kind, rounded) {
            return Ok(self.make_block(addr, size, bytes, stream, stream));
        }
        if let Some(block) = self.other_streams_free(shard, kind, rounded, bytes, stream) {
            return Ok(block);
        }
        if let Some(excess) = self.over_budget(seg_size, rounded) {
            // Rather than grow past the budget: memory other streams freed, waiting on the
            // device for their work with it; else room made by releasing entirely free segments.
            match self.acquire_by_waiting(stream, kind, rounded) {
                Some(Acquired::Segment { addr, size: seg }) => {
                    let size = self.carve_segment(shard, addr, seg, kind, rounded, Served::Waited);
                    return Ok(self.make_block(addr, size, bytes, stream, stream));
                }
                Some(Acquired::Block { home, addr, size }) => {
                    return Ok(self.hand_out_from(addr, size, bytes, stream, home));
                }
                None => {
                    let released = self.trim(self.cached().saturating_sub(excess));
                    if kind == Kind::Large && released < excess {
                        // Still over: a segment of the request's size, not a shared one.
                        seg_size = rounded.next_multiple_of(LARGE_SEGMENT_ROUNDING);
                    }
                    self.counters.budget_released.fetch_add(released as u64, Relaxed);
                }
            }
        }
        let addr = self.reserve_segment(seg_size, bytes)?;
        let size = self.carve_segment(shard, addr, seg_size, kind, rounded, Served::Miss);
        Ok(self.make_block(addr, size, bytes, stream, stream))
    }

    /// Serves a request from the stream's own quick cache or free blocks (the hit path), and
    /// accounts its bytes. Returns the block's address and size.
    #[inline]
    fn own_free(&self, shard: &Shard<S::F>, kind: Kind, rounded: usize) -> Option<(u64, usize)> {
        let mut st = shard.lock();
        let hit = Self::take_own(&mut st, kind, rounded)?;
        self.add_allocated(hit.1, Locked::by(&st));
        Some(hit)
    }

    /// The block [`own_free`](Self::own_free) hands out, under the shard's lock.
    #[inline]
    fn take_own(st: &mut ShardState<S::F>, kind: Kind, rounded: usize) -> Option<(u64, usize)> {
        if let Some(hit) = st.alloc_quick(rounded) {
            return Some(hit);
        }
        if st.has_pending() {
            st.poll_pending();
        }
        if let Some(hit) = st.alloc_from_free(kind, rounded) {
            return Some(hit);
        }
        if st.has_quick() {
            // The quick cache may hold the pieces of a fitting block: coalesce and retry.
            st.flush_quick();
            return st.alloc_from_free(kind, rounded);
        }
        None
    }

    /// Serves a request from memory of another stream whose last use is known finished: an
    /// entirely free segment (taken over), else a free block (lent).
    fn other_streams_free(
        &self,
        shard: &Shard<S::F>,
        kind: Kind,
        rounded: usize,
        bytes: usize,
        stream: StreamId,
    ) -> Option<Block> {
        if let Some((addr, seg_size)) = self.take_from_other_streams(stream, kind, rounded) {
            let size = self.carve_segment(shard, addr, seg_size, kind, rounded, Served::CrossStream);
            return Some(self.make_block(addr, size, bytes, stream, stream));
        }
        self.borrow_from_other_streams(stream, kind, rounded)
            .map(|(home, addr, size)| self.hand_out_from(addr, size, bytes, stream, home))
    }

    /// Frees `block`.
    ///
    /// Its memory is reusable at once by allocations on the block's own stream. Other streams can
    /// take it over only as part of an entirely free segment, and only once a fence recorded on
    /// the block's stream after this free has completed (the pool records one here when the free
    /// leaves a segment entirely free and none is in flight, or later on another stream's miss).
    /// If the block was [used on other streams](Self::record_stream), a fence is recorded on each
    /// of them now, and the memory is reused by nobody until all of them have completed.
    ///
    /// When a [release threshold](Self::set_release_threshold) is set and this free leaves an
    /// entirely free segment while the pool caches more than the threshold, entirely free
    /// segments are released until it caches no more than the threshold (or none is left).
    ///
    /// # Panics
    ///
    /// If `block` was allocated by another pool.
    ///
    /// ```
    /// # use cudrv::memory::pool::{sim::{SimBacking, SimFences}, CachingPool, StreamId};
    /// # let pool = CachingPool::new(SimBacking::new(1 << 30), SimFences::instant());
    /// let a = pool.allocate(4096, StreamId(1))?;
    /// let addr = a.addr();
    /// pool.free(a);
    /// // The same stream gets the memory back at once.
    /// assert_eq!(pool.allocate(4096, StreamId(1))?.addr(), addr);
    /// # Ok::<(), cudrv::memory::pool::PoolError>(())
    /// ```
    pub fn free(&self, block: Block) {
        assert_eq!(
            block.pool, self.id,
            "Block at {:#x} freed into a pool that did not allocate it",
            block.addr
        );
        let shard = self.home_shard(&block);
        self.free_to(&shard, block);
    }

    /// The shard the block's memory belongs to (a block is only ever made from an existing one).
    fn home_shard(&self, block: &Block) -> Arc<Shard<S::F>> {
        self.shards
            .read()
            .get(&block.home)
            .cloned()
            .expect("block's stream has no shard")
    }

    fn free_to(&self, shard: &Arc<Shard<S::F>>, block: Block) {
        assert_eq!(
            block.pool, self.id,
            "Block at {:#x} freed into a pool that did not allocate it",
            block.addr
        );
        // Fast path: keep the block whole for the next request of its size on this stream (not
        // when a limit or release threshold asks the pool to keep its cache small).
        if self.quick.load(Relaxed)
            && self.limit.load(Relaxed) == UNSET
            && self.release_threshold.load(Relaxed) == UNSET
        {
            let mut st = shard.lock();
            if let Some(size) = st.free_quick(block.addr, block.size) {
                self.sub_allocated(size, Locked::by(&st));
                return;
            }
        }
        let outcome = {
            let mut st = shard.lock();
            let outcome = st.free(block.addr);
            if outcome.is_some() {
                self.sub_allocated(block.size, Locked::by(&st));
            }
            outcome
        };
        let Some(outcome) = outcome else {
            panic!("block at {:#x} is not allocated", block.addr);
        };
        match outcome {
            FreeOutcome::Freed {
                became_idle,
                record_migration,
                ..
            } => {
                if let Some(seq) = record_migration {
                    let fence = self.fences.record(block.home);
                    shard.lock().set_migration(seq, fence);
                }
                if became_idle {
                    self.apply_release_threshold();
                }
            }
            FreeOutcome::Deferred { seq, streams, .. } => {
                let fences = streams.into_iter().map(|s| self.fences.record(s)).collect();
                shard.lock().push_pending(block.addr, seq, fences);
            }
        }
    }

    /// Marks `block` as also used on `stream` (work on `stream` reads or writes it). When the
    /// block is freed, a fence is recorded on every such stream and the memory is reused only after
    /// all of them have completed. A no-op for the block's own stream.
    ///
    /// # Panics
    ///
    /// If `block` was allocated by another pool.
    ///
    /// ```
    /// # use cudrv::memory::pool::{sim::{SimBacking, SimFences}, CachingPool, StreamId};
    /// let pool = CachingPool::new(SimBacking::new(1 << 30), SimFences::manual());
    /// let (s1, s2) = (StreamId(1), StreamId(2));
    /// let a = pool.allocate(4096, s1)?;
    /// pool.record_stream(&a, s2); // stream 2 reads it too
    /// let addr = a.addr();
    /// pool.free(a);
    /// // Held back until stream 2's work is done, even for stream 1.
    /// assert_ne!(pool.allocate(4096, s1)?.addr(), addr);
    /// assert!(pool.stats().pending_bytes > 0);
    /// # Ok::<(), cudrv::memory::pool::PoolError>(())
    /// ```
    pub fn record_stream(&self, block: &Block, stream: StreamId) {
        assert_eq!(
            block.pool, self.id,
            "Block at {:#x} used with a pool that did not allocate it",
            block.addr
        );
        if stream == block.home {
            return;
        }
        let shard = self.home_shard(block);
        let ok = shard.lock().record_stream(block.addr, stream);
        assert!(ok, "block at {:#x} is not allocated", block.addr);
    }

    /// Releases every entirely free cached segment to the backing (after moving blocks whose
    /// fences have completed out of the pending lists). Returns the bytes released.
    ///
    /// Segments with an allocated block, or a freed block still waiting on fences, stay.
    ///
    /// ```
    /// # use cudrv::memory::pool::{sim::{SimBacking, SimFences}, CachingPool, StreamId};
    /// # let pool = CachingPool::new(SimBacking::new(1 << 30), SimFences::instant());
    /// let keep = pool.allocate(100, StreamId(1))?;
    /// let drop_me = pool.allocate(5 << 20, StreamId(1))?;
    /// pool.free(drop_me);
    /// assert_eq!(pool.empty_cache(), 20 << 20); // the large segment; the small one is in use
    /// assert_eq!(pool.backing().used(), 2 << 20);
    /// pool.free(keep);
    /// # Ok::<(), cudrv::memory::pool::PoolError>(())
    /// ```
    pub fn empty_cache(&self) -> usize {
        self.trim(0)
    }

    /// Releases entirely free cached segments until the pool caches (reserves beyond what is
    /// allocated) at most `max_cached` bytes, or no entirely free segment is left. Prefers the
    /// smallest segment that alone covers the excess, else the largest. Returns the bytes
    /// released.
    ///
    /// ```
    /// # use cudrv::memory::pool::{sim::{SimBacking, SimFences}, CachingPool, StreamId};
    /// # let pool = CachingPool::new(SimBacking::new(1 << 30), SimFences::instant());
    /// let blocks: Vec<_> = (0..3).map(|_| pool.allocate(2 << 20, StreamId(1))).collect::<Result<_, _>>()?;
    /// let _ = pool.allocate(11 << 20, StreamId(1)).map(|b| pool.free(b));
    /// blocks.into_iter().for_each(|b| pool.free(b));
    /// let released = pool.trim(20 << 20);
    /// assert!(pool.stats().cached_bytes <= 20 << 20 && released > 0);
    /// # Ok::<(), cudrv::memory::pool::PoolError>(())
    /// ```
    pub fn trim(&self, max_cached: usize) -> usize {
        let mut released = 0;
        for shard in self.all_shards() {
            let need = self.cached().saturating_sub(max_cached);
            if need == 0 {
                break;
            }
            let segments = {
                let mut st = shard.lock();
                st.flush_quick();
                st.poll_pending();
                st.drain_idle(need)
            };
            for (addr, size) in segments {
                self.backing.release(addr, size);
                self.counters.reserved.fetch_sub(size, Relaxed);
                self.counters.segments.fetch_sub(1, Relaxed);
                released += size;
            }
        }
        released
    }

    /// The shard of `stream`, made on first use.
    ///
    /// Making the second shard ends the solo accounting (see the type's documentation) before
    /// the new shard can be used by anyone: with the map's write lock held, `solo` is cleared and
    /// the first shard's lock is taken and released once, so a plain update of the totals that
    /// began under it has finished, and every later one sees `solo` cleared.
    fn shard(&self, stream: StreamId) -> Arc<Shard<S::F>> {
        if let Some(shard) = self.shards.read().get(&stream) {
            return shard.clone();
        }
        let mut shards = self.shards.write();
        if let Some(shard) = shards.get(&stream) {
            return shard.clone();
        }
        if self.solo.load(Relaxed) && !shards.is_empty() {
            self.solo.store(false, Relaxed);
            for shard in shards.values() {
                drop(shard.lock());
            }
        }
        shards.entry(stream).or_default().clone()
    }

    fn all_shards(&self) -> Vec<Arc<Shard<S::F>>> {
        self.shards.read().values().cloned().collect()
    }

    fn cached(&self) -> usize {
        let allocated = self.counters.allocated.load(Relaxed);
        self.counters.reserved.load(Relaxed).saturating_sub(allocated)
    }

    /// Adds a segment (new, or taken from another stream) to `shard` and carves the block at its
    /// start. Returns the block's size.
    fn carve_segment(
        &self,
        shard: &Shard<S::F>,
        addr: u64,
        seg_size: usize,
        kind: Kind,
        rounded: usize,
        how: Served,
    ) -> usize {
        let mut st = shard.lock();
        st.add_segment(addr, seg_size, kind, how != Served::Waited);
        let size = st.carve(addr, rounded, how);
        self.add_allocated(size, Locked::by(&st));
        size
    }

    /// Adds `size` bytes to the allocated total and its peak. The caller holds a shard lock
    /// (`_held`): while the pool is solo, that lock orders every change of the totals, so a
    /// plain load and store suffice.
    #[inline]
    fn add_allocated(&self, size: usize, _held: Locked<'_, S::F>) {
        let c = &self.counters;
        if self.solo.load(Relaxed) {
            let now = c.allocated.load(Relaxed) + size;
            c.allocated.store(now, Relaxed);
            if now > c.peak_allocated.load(Relaxed) {
                c.peak_allocated.store(now, Relaxed);
            }
        } else {
            self.add_allocated_atomic(size);
        }
    }

    /// Adds `size` bytes to the allocated total and its peak with atomic read-modify-writes (the
    /// pool has several shards).
    #[inline]
    fn add_allocated_atomic(&self, size: usize) {
        let c = &self.counters;
        let now = c.allocated.fetch_add(size, Relaxed) + size;
        if now > c.peak_allocated.load(Relaxed) {
            c.peak_allocated.fetch_max(now, Relaxed);
        }
    }

    /// Takes `size` bytes off the allocated total (under a shard lock, as for
    /// [`add_allocated`](Self::add_allocated)).
    #[inline]
    fn sub_allocated(&self, size: usize, _held: Locked<'_, S::F>) {
        let c = &self.counters;
        if self.solo.load(Relaxed) {
            c.allocated.store(c.allocated.load(Relaxed) - size, Relaxed);
        } else {
            c.allocated.fetch_sub(size, Relaxed);
        }
    }

    /// Accounts the bytes of memory lent by `home`'s shard (never solo: lending needs two
    /// shards) and makes the block's handle.
    fn hand_out_from(&self, addr: u64, size: usize, requested: usize, stream: StreamId, home: StreamId) -> Block {
        debug_assert!(!self.solo.load(Relaxed), "memory lent in a solo pool");
        self.add_allocated_atomic(size);
        self.make_block(addr, size, requested, stream, home)
    }

    /// The handle of an allocation whose bytes are accounted.
    fn make_block(&self, addr: u64, size: usize, requested: usize, stream: StreamId, home: StreamId) -> Block {
        Block {
            addr,
            size,
            requested,
            stream,
            home,
            pool: self.id,
        }
    }
}
