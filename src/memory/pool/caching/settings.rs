//! The pool's knobs (release threshold, quick cache, reserve budget, limit) and what it reports
//! (statistics, the consistency check).

use std::sync::atomic::Ordering::Relaxed;

use super::super::{Backing, FenceSource, PoolStats};
use super::*;

impl<B: Backing, S: FenceSource> CachingPool<B, S> {
    /// Sets the most bytes the pool keeps cached after a free (`None`: no bound, the default).
    /// Takes effect at the next free that leaves an entirely free segment; call
    /// [`trim`](Self::trim) to apply it at once.
    ///
    /// ```
    /// # use cudrv::memory::pool::{sim::{SimBacking, SimFences}, CachingPool, StreamId};
    /// # let pool = CachingPool::new(SimBacking::new(1 << 30), SimFences::instant());
    /// pool.set_release_threshold(Some(0)); // cache nothing: every free segment goes back
    /// let b = pool.allocate(3 << 20, StreamId(1))?;
    /// pool.free(b);
    /// assert_eq!(pool.backing().used(), 0);
    /// assert_eq!(pool.release_threshold(), Some(0));
    /// # Ok::<(), cudrv::memory::pool::PoolError>(())
    /// ```
    pub fn set_release_threshold(&self, bytes: Option<usize>) {
        self.release_threshold.store(bytes.unwrap_or(UNSET), Relaxed);
    }

    /// Whether freed blocks are kept whole in a small per-stream quick cache (up to 32 blocks)
    /// for the next request of exactly their size on the same stream: the common
    /// allocate-free-allocate loop then costs a few hundred nanoseconds less. On by default; it
    /// is bypassed while a limit or release threshold is set. Off, every free coalesces at once.
    /// Quick-cached blocks count as cached bytes and are coalesced whenever the pool needs room
    /// (a miss on their stream, another stream looking for free segments, `trim`).
    ///
    /// ```
    /// # use cudrv::memory::pool::{sim::{SimBacking, SimFences}, CachingPool, StreamId};
    /// # let pool = CachingPool::new(SimBacking::new(1 << 30), SimFences::instant());
    /// pool.set_quick_cache(false);
    /// let b = pool.allocate(1000, StreamId(1))?;
    /// pool.free(b);
    /// pool.check_invariants();
    /// # Ok::<(), cudrv::memory::pool::PoolError>(())
    /// ```
    pub fn set_quick_cache(&self, enabled: bool) {
        self.quick.store(enabled, Relaxed);
        if !enabled {
            for shard in self.all_shards() {
                shard.lock().flush_quick();
            }
        }
    }

    /// Sets the reserve budget: a soft cap on the bytes reserved from the backing, relative to the
    /// most bytes ever allocated at once (see [`ReserveBudget`]; the default is
    /// `Some(ReserveBudget::default())`, 1.1 times that peak; `None` turns it off).
    ///
    /// When nothing the allocating stream may use at once fits a request and a new segment would
    /// take the reserved total past the budget, the pool first looks for memory another stream has
    /// freed but may still be using on the device: an entirely free segment, a free block, or a
    /// freed block waiting on the streams that used it. It makes the allocating stream wait for
    /// that use on the device ([`FenceSource::wait`]; the host does not block) and hands the
    /// memory over. Only when there is none does it release entirely free segments (which can be
    /// of other sizes) to make room before it reserves. Over budget, allocations may therefore
    /// order one stream's work after another's, and memory may go back to the backing and be
    /// reserved again later. With `None`, the pool reserves whenever nothing cached is ready at
    /// once, and keeps what it reserves.
    ///
    /// # Panics
    ///
    /// If the multiple is below 1 or not finite.
    ///
    /// ```
    /// # use cudrv::memory::pool::{sim::{SimBacking, SimFences}, CachingPool};
    /// # let pool = CachingPool::new(SimBacking::new(1 << 30), SimFences::instant());
    /// pool.set_reserve_budget(None); // reserve whenever nothing cached is ready
    /// assert_eq!(pool.reserve_budget(), None);
    /// ```
    pub fn set_reserve_budget(&self, budget: Option<ReserveBudget>) {
        let Some(budget) = budget else {
            self.budget_milli.store(UNSET, Relaxed);
            return;
        };
        let m = budget.multiple;
        assert!(
            m.is_finite() && m >= 1.0,
            "a reserve budget of {m} times the peak allocated bytes"
        );
        self.budget_slack.store(budget.slack, Relaxed);
        self.budget_milli.store((m * 1000.0).round() as usize, Relaxed);
    }

    /// The reserve budget (see [`set_reserve_budget`](Self::set_reserve_budget)).
    ///
    /// ```
    /// use cudrv::memory::pool::ReserveBudget;
    /// # use cudrv::memory::pool::{sim::{SimBacking, SimFences}, CachingPool};
    /// # let pool = CachingPool::new(SimBacking::new(1 << 30), SimFences::instant());
    /// assert_eq!(pool.reserve_budget(), Some(ReserveBudget::default()));
    /// ```
    pub fn reserve_budget(&self) -> Option<ReserveBudget> {
        Some(self.budget_milli.load(Relaxed))
            .filter(|&m| m != UNSET)
            .map(|m| ReserveBudget {
                multiple: m as f64 / 1000.0,
                slack: self.budget_slack.load(Relaxed),
            })
    }

    /// The release threshold (see [`set_release_threshold`](Self::set_release_threshold)).
    ///
    /// ```
    /// # use cudrv::memory::pool::{sim::{SimBacking, SimFences}, CachingPool};
    /// # let pool = CachingPool::new(SimBacking::new(1 << 30), SimFences::instant());
    /// assert_eq!(pool.release_threshold(), None);
    /// pool.set_release_threshold(Some(64 << 20));
    /// assert_eq!(pool.release_threshold(), Some(64 << 20));
    /// ```
    pub fn release_threshold(&self) -> Option<usize> {
        Some(self.release_threshold.load(Relaxed)).filter(|&b| b != UNSET)
    }

    /// Caps the bytes the pool reserves from the backing (`None`: no cap, the default). A
    /// request that would need a segment beyond it first releases the cache, then fails with
    /// [`PoolError::OutOfMemory`]. Lowering the cap releases nothing by itself.
    ///
    /// ```
    /// # use cudrv::memory::pool::{sim::{SimBacking, SimFences}, CachingPool, StreamId};
    /// # let pool = CachingPool::new(SimBacking::new(1 << 30), SimFences::instant());
    /// pool.set_limit(Some(4 << 20));
    /// assert!(pool.allocate(1 << 20, StreamId(1)).is_ok());
    /// assert!(pool.allocate(5 << 20, StreamId(1)).is_err());
    /// ```
    pub fn set_limit(&self, bytes: Option<usize>) {
        self.limit.store(bytes.unwrap_or(UNSET), Relaxed);
    }

    /// The cap on reserved bytes (see [`set_limit`](Self::set_limit)).
    ///
    /// ```
    /// # use cudrv::memory::pool::{sim::{SimBacking, SimFences}, CachingPool};
    /// # let pool = CachingPool::new(SimBacking::new(1 << 30), SimFences::instant());
    /// assert_eq!(pool.limit(), None);
    /// pool.set_limit(Some(1 << 30));
    /// assert_eq!(pool.limit(), Some(1 << 30));
    /// ```
    pub fn limit(&self) -> Option<usize> {
        Some(self.limit.load(Relaxed)).filter(|&b| b != UNSET)
    }

    /// A snapshot of the counters (see [`PoolStats`] for what each means). Takes each shard's
    /// lock briefly.
    ///
    /// ```
    /// # use cudrv::memory::pool::{sim::{SimBacking, SimFences}, CachingPool, StreamId};
    /// # let pool = CachingPool::new(SimBacking::new(1 << 30), SimFences::instant());
    /// let b = pool.allocate(1000, StreamId(1))?;
    /// let s = pool.stats();
    /// assert_eq!((s.allocated_bytes, s.reserved_bytes, s.active_blocks), (1024, 2 << 20, 1));
    /// pool.free(b);
    /// # Ok::<(), cudrv::memory::pool::PoolError>(())
    /// ```
    pub fn stats(&self) -> PoolStats {
        let c = &self.counters;
        let (mut largest, mut pending) = (0, 0);
        let mut n = Counts::default();
        for shard in self.all_shards() {
            let st = shard.lock();
            largest = largest.max(st.largest_free());
            pending += st.pending_bytes();
            let s = st.counts;
            n.allocations += s.allocations;
            n.frees += s.frees;
            n.hits += s.hits;
            n.misses += s.misses;
            n.cross_stream += s.cross_stream;
            n.waited += s.waited;
            n.active_blocks += s.active_blocks;
        }
        let allocated = c.allocated.load(Relaxed);
        let reserved = c.reserved.load(Relaxed);
        let cached = reserved.saturating_sub(allocated);
        let ratio = |num: u64, den: u64| {
            if den == 0 {
                0.0
            } else {
                num as f64 / den as f64
            }
        };
        PoolStats {
            allocations: n.allocations,
            frees: n.frees,
            cache_hits: n.hits,
            cache_misses: n.misses,
            hit_rate: ratio(n.hits, n.allocations),
            cross_stream_reuses: n.cross_stream,
            waited_reuses: n.waited,
            segments: c.segments.load(Relaxed),
            reserved_bytes: reserved as u64,
            allocated_bytes: allocated as u64,
            active_blocks: n.active_blocks,
            peak_allocated_bytes: c.peak_allocated.load(Relaxed) as u64,
            peak_reserved_bytes: c.peak_reserved.load(Relaxed) as u64,
            cached_bytes: cached as u64,
            pending_bytes: pending as u64,
            largest_free_block: largest as u64,
            fragmentation: if cached == 0 {
                0.0
            } else {
                (1.0 - ratio(largest as u64, cached as u64)).clamp(0.0, 1.0)
            },
            oom_retries: c.oom_retries.load(Relaxed),
            oom_failures: c.oom_failures.load(Relaxed),
            budget_released_bytes: c.budget_released.load(Relaxed),
        }
    }

    /// Checks the pool's internal bookkeeping and panics if it is inconsistent: within each
    /// stream, blocks tile their segments exactly, no two neighbouring blocks are both free, and
    /// the free, idle and pending sets match the blocks; across streams, segment, reserved and
    /// allocated totals match the counters. For tests and debugging; takes each stream's lock in
    /// turn and costs time linear in the number of blocks.
    ///
    /// Call it only while no other thread uses the pool (the totals are compared to counters
    /// that other threads update without a common lock).
    ///
    /// # Panics
    ///
    /// On the first inconsistency found.
    ///
    /// ```
    /// # use cudrv::memory::pool::{sim::{SimBacking, SimFences}, CachingPool, StreamId};
    /// # let pool = CachingPool::new(SimBacking::new(1 << 30), SimFences::instant());
    /// let blocks: Vec<_> = (1..50).map(|i| pool.allocate(i * 700, StreamId(i as u64 % 3))).collect::<Result<_, _>>()?;
    /// blocks.into_iter().step_by(2).for_each(|b| pool.free(b));
    /// pool.check_invariants();
    /// # Ok::<(), cudrv::memory::pool::PoolError>(())
    /// ```
    pub fn check_invariants(&self) {
        let (mut segments, mut reserved, mut allocated) = (0, 0, 0);
        for shard in self.all_shards() {
            let st = shard.lock();
            let (s, r, a, b) = st.check();
            assert_eq!(b as u64, st.counts.active_blocks, "active blocks");
            let n = st.counts;
            assert_eq!(n.hits + n.misses, n.allocations, "hits + misses");
            assert_eq!(n.allocations - n.frees, n.active_blocks, "allocations - frees");
            segments += s;
            reserved += r;
            allocated += a;
        }
        let c = &self.counters;
        assert_eq!(segments as u64, c.segments.load(Relaxed), "segment count");
        assert_eq!(reserved, c.reserved.load(Relaxed), "reserved bytes");
        assert_eq!(allocated, c.allocated.load(Relaxed), "allocated bytes");
    }
}
