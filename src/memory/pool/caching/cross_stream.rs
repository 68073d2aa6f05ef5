//! Memory of other streams (entirely free segments taken over, free blocks lent, fences waited
//! on), the reserve budget that decides when to look for it, and reserving new segments.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use super::super::sizes::Kind;
use super::super::{Backing, BackingError, FenceSource, StreamId};
use super::*;

impl<B: Backing, S: FenceSource> CachingPool<B, S> {
    /// Looks for an entirely free segment of another stream that `stream` may take over, and asks
    /// for migration fences on streams whose free segments still wait on one.
    pub(super) fn take_from_other_streams(&self, stream: StreamId, kind: Kind, rounded: usize) -> Option<(u64, usize)> {
        let others: Vec<(StreamId, Arc<Shard<S::F>>)> = self
            .shards
            .read()
            .iter()
            .filter(|(s, _)| **s != stream)
            .map(|(s, shard)| (*s, shard.clone()))
            .collect();
        let mut taken = None;
        let mut want_fence = Vec::new();
        for (s, shard) in others {
            let mut st = shard.lock();
            st.flush_quick();
            if st.has_pending() {
                st.poll_pending();
            }
            if let Some(seg) = st.take_idle(kind, rounded) {
                taken = Some(seg);
                break;
            }
            if let Some(seq) = st.migration_fence_wanted() {
                drop(st);
                want_fence.push((s, shard, seq));
            }
        }
        // Every shard put in the recording state must get its fence, found or not.
        for (s, shard, seq) in want_fence {
            let fence = self.fences.record(s);
            let mut st = shard.lock();
            st.set_migration(seq, fence);
            if taken.is_none() {
                // An idle stream's fence may be complete already.
                taken = st.take_idle(kind, rounded);
            }
        }
        taken
    }

    /// Borrows a free block of another stream whose frees are known finished (its shard's
    /// migration fence completed after them). The block stays in the lender's books, marked as
    /// used on `stream`, so its free waits for `stream`'s work before the lender reuses it.
    pub(super) fn borrow_from_other_streams(
        &self,
        stream: StreamId,
        kind: Kind,
        rounded: usize,
    ) -> Option<(StreamId, u64, usize)> {
        self.lend_best_fit(&self.other_shards(stream), stream, kind, rounded, true)
            .map(|(home, addr, size, _)| (home, addr, size))
    }

    /// The other streams' shards.
    pub(super) fn other_shards(&self, stream: StreamId) -> Vec<(StreamId, Arc<Shard<S::F>>)> {
        self.shards
            .read()
            .iter()
            .filter(|(s, _)| **s != stream)
            .map(|(s, shard)| (*s, shard.clone()))
            .collect()
    }

    /// Takes out the smallest entirely free segment among `others`' that fits, whether or not its
    /// last use is known finished. Returns the owner, address, size, and whether the taker must
    /// wait on a fence recorded on the owner.
    pub(super) fn take_idle_best_fit(
        &self,
        others: &[(StreamId, Arc<Shard<S::F>>)],
        kind: Kind,
        rounded: usize,
    ) -> Option<(StreamId, u64, usize, bool)> {
        let (_, home, shard) = others
            .iter()
            .filter_map(|(home, shard)| {
                let fit = shard.lock().idle_fit(kind, rounded);
                fit.map(|(size, _)| (size, *home, shard))
            })
            .min_by_key(|&(size, home, _)| (size, home))?;
        // Another thread may have taken it since: then any shard's fit will do.
        let taken = shard.lock().take_idle_waiting(kind, rounded).map(|got| (home, got));
        taken
            .or_else(|| {
                others.iter().find_map(|(home, shard)| {
                    let got = shard.lock().take_idle_waiting(kind, rounded);
                    got.map(|got| (*home, got))
                })
            })
            .map(|(home, (addr, size, fence))| (home, addr, size, fence))
    }

    /// Lends `stream` the best-fitting free block among `others`' (see [`ShardState::lend`] for
    /// `safe`). Returns the lender, address, size, and whether `stream` must wait on a fence
    /// recorded on the lender.
    pub(super) fn lend_best_fit(
        &self,
        others: &[(StreamId, Arc<Shard<S::F>>)],
        stream: StreamId,
        kind: Kind,
        rounded: usize,
        safe: bool,
    ) -> Option<(StreamId, u64, usize, bool)> {
        let (_, home, shard) = others
            .iter()
            .filter_map(|(home, shard)| {
                let fit = shard.lock().lendable(kind, rounded, safe);
                fit.map(|(size, _)| (size, *home, shard))
            })
            .min_by_key(|&(size, home, _)| (size, home))?;
        // Another thread may have taken it since: then any shard's fit will do.
        let lent = shard.lock().lend(kind, rounded, stream, safe).map(|got| (home, got));
        lent.or_else(|| {
            others.iter().find_map(|(home, shard)| {
                let got = shard.lock().lend(kind, rounded, stream, safe);
                got.map(|got| (*home, got))
            })
        })
        .map(|(home, (addr, size, fence))| (home, addr, size, fence))
    }

    /// By how many bytes reserving `seg_size` more would exceed the reserve budget (counting this
    /// request of `rounded` bytes as allocated), or `None` when it would not or no budget is set.
    pub(super) fn over_budget(&self, seg_size: usize, rounded: usize) -> Option<usize> {
        let milli = self.budget_milli.load(Relaxed);
        if milli == UNSET {
            return None;
        }
        let c = &self.counters;
        let high = c
            .peak_allocated
            .load(Relaxed)
            .max(c.allocated.load(Relaxed).saturating_add(rounded));
        let budget = (high / 1000)
            .saturating_mul(milli)
            .max(high.saturating_add(self.budget_slack.load(Relaxed)));
        let after = c.reserved.load(Relaxed).saturating_add(seg_size);
        after.checked_sub(budget).filter(|&excess| excess > 0)
    }

    /// Finds memory of another stream that fits the request but whose last use may not have
    /// finished, and makes `stream` wait on fences for that use, on the device. In order of
    /// preference: an entirely free segment (taken over), a free block (lent), a freed block still
    /// waiting on the fences of streams that used it (lent whole). A fence is recorded on the
    /// owning stream when its frees are not known finished; the fences of the streams that used a
    /// waiting block are waited on too.
    pub(super) fn acquire_by_waiting(&self, stream: StreamId, kind: Kind, rounded: usize) -> Option<Acquired> {
        let others = self.other_shards(stream);
        let found = self
            .take_idle_best_fit(&others, kind, rounded)
            .map(|(home, addr, size, fence)| (home, Acquired::Segment { addr, size }, fence, Vec::new()))
            .or_else(|| {
                self.lend_best_fit(&others, stream, kind, rounded, false)
                    .map(|(home, addr, size, fence)| (home, Acquired::Block { home, addr, size }, fence, Vec::new()))
            })
            .or_else(|| {
                others.iter().find_map(|(home, shard)| {
                    let got = shard.lock().lend_pending(kind, rounded, stream);
                    got.map(|(addr, size, fence, users)| {
                        let block = Acquired::Block {
                            home: *home,
                            addr,
                            size,
                        };
                        (*home, block, fence, users)
                    })
                })
            });
        let (home, acquired, fence, users) = found?;
        if fence {
            self.fences.wait(&self.fences.record(home), stream);
        }
        for user in &users {
            self.fences.wait(user, stream);
        }
        Some(acquired)
    }

    /// Reserves a segment of `seg_size` bytes, releasing the cache and retrying once when the
    /// limit or the backing says no.
    pub(super) fn reserve_segment(&self, seg_size: usize, requested: usize) -> Result<u64, PoolError> {
        let mut retried = false;
        loop {
            let Some(total) = self.charge(seg_size) else {
                if retried {
                    return Err(self.out_of_memory(requested));
                }
                retried = true;
                self.counters.oom_retries.fetch_add(1, Relaxed);
                self.empty_cache();
                continue;
            };
            match self.backing.reserve(seg_size) {
                Ok(addr) => {
                    self.counters.segments.fetch_add(1, Relaxed);
                    self.counters.peak_reserved.fetch_max(total, Relaxed);
                    return Ok(addr);
                }
                Err(BackingError::OutOfBackingMemory) => {
                    self.counters.reserved.fetch_sub(seg_size, Relaxed);
                    if retried {
                        return Err(self.out_of_memory(requested));
                    }
                    retried = true;
                    self.counters.oom_retries.fetch_add(1, Relaxed);
                    self.empty_cache();
                }
                Err(BackingError::Other(msg)) => {
                    self.counters.reserved.fetch_sub(seg_size, Relaxed);
                    return Err(PoolError::Backing(msg));
                }
            }
        }
    }

    /// Adds `bytes` to the reserved total unless that would pass the limit; returns the new
    /// total.
    pub(super) fn charge(&self, bytes: usize) -> Option<usize> {
        let limit = self.limit.load(Relaxed);
        self.counters
            .reserved
            .fetch_update(Relaxed, Relaxed, |r| {
                r.checked_add(bytes).filter(|&n| limit == UNSET || n <= limit)
            })
            .ok()
            .map(|before| before + bytes)
    }

    pub(super) fn apply_release_threshold(&self) {
        let threshold = self.release_threshold.load(Relaxed);
        if threshold != UNSET && self.cached() > threshold {
            self.trim(threshold);
        }
    }

    pub(super) fn out_of_memory(&self, requested: usize) -> PoolError {
        self.counters.oom_failures.fetch_add(1, Relaxed);
        let allocated = self.counters.allocated.load(Relaxed);
        let reserved = self.counters.reserved.load(Relaxed);
        PoolError::OutOfMemory {
            requested,
            reserved,
            allocated,
            cached: reserved.saturating_sub(allocated),
            limit: self.limit(),
        }
    }
}
