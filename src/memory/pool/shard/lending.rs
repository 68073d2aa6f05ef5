//! A shard's idle blocks and what other streams may take from it: blocks every earlier use of
//! which has finished (taken at once), blocks still waiting on fences (lent against them), the
//! migration fence that settles a stream's frees for the others, and draining idle blocks when
//! memory runs short.

use super::*;

impl<F: Fence> ShardState<F> {
    /// Completes the migration fence if it has completed.
    fn poll_migration(&mut self) {
        if let Migration::InFlight { seq, fence } = &self.migration {
            if fence.is_complete() {
                self.safe_seq = self.safe_seq.max(*seq);
                self.migration = Migration::None;
            }
        }
    }

    /// Takes out (for another stream) the smallest entirely free segment of `kind` that holds
    /// `rounded` bytes and whose last free is known finished. Returns its address and size.
    pub(crate) fn take_idle(&mut self, kind: Kind, rounded: usize) -> Option<(u64, usize)> {
        self.poll_migration();
        let &(size, addr) = self.idle[kind as usize]
            .range((rounded, 0)..)
            .find(|(_, a)| self.segments[a].last_free_seq <= self.safe_seq)?;
        self.remove_segment(addr);
        Some((addr, size))
    }

    /// The smallest entirely free segment of `kind` that holds `rounded` bytes, as (size,
    /// address), whether or not its last free is known finished.
    pub(crate) fn idle_fit(&mut self, kind: Kind, rounded: usize) -> Option<(usize, u64)> {
        self.poll_migration();
        self.idle[kind as usize].range((rounded, 0)..).next().copied()
    }

    /// Takes out (for another stream that will wait on a fence recorded on this stream) the
    /// smallest entirely free segment of `kind` that holds `rounded` bytes, whether or not its
    /// last free is known finished. Returns its address, size, and whether a fence is needed
    /// (`false` when its frees are known finished).
    pub(crate) fn take_idle_waiting(&mut self, kind: Kind, rounded: usize) -> Option<(u64, usize, bool)> {
        let (size, addr) = self.idle_fit(kind, rounded)?;
        let fence = self.segments[&addr].last_free_seq > self.safe_seq;
        self.remove_segment(addr);
        Some((addr, size, fence))
    }

    /// The best-fitting free block of `kind` holding `rounded` bytes that another stream may
    /// borrow: only from segments whose frees are all known finished when `safe`, else from any
    /// (the borrower then waits on a fence). Returns its (size, address).
    pub(crate) fn lendable(&mut self, kind: Kind, rounded: usize, safe: bool) -> Option<(usize, u64)> {
        self.poll_migration();
        self.free[kind as usize]
            .range((rounded, 0)..)
            .find(|(_, a)| !safe || self.segments[&self.nodes[a].segment].last_free_seq <= self.safe_seq)
            .copied()
    }

    /// Lends the best-fitting free block of `kind` holding `rounded` bytes (see
    /// [`lendable`](Self::lendable) for `safe`), marked as used on `borrower` (so freeing it waits
    /// on a fence on `borrower`). Counted as a cross-stream hit of this shard, a waited one when a
    /// fence is needed. Returns its address, size, and whether the borrower must wait on a fence
    /// recorded on this stream first (never when `safe`).
    pub(crate) fn lend(
        &mut self,
        kind: Kind,
        rounded: usize,
        borrower: StreamId,
        safe: bool,
    ) -> Option<(u64, usize, bool)> {
        let (_, addr) = self.lendable(kind, rounded, safe)?;
        let fence = self.segments[&self.nodes[&addr].segment].last_free_seq > self.safe_seq;
        let size = self.carve(addr, rounded, if fence { Served::Waited } else { Served::CrossStream });
        if let State::Allocated(streams) = &mut self.node_mut(addr).state {
            debug_assert!(streams.is_empty(), "a block carved just now has no streams");
            streams.push(borrower);
            self.shared += 1;
        }
        Some((addr, size, fence))
    }

    /// Lends (to a `borrower` that will wait on the returned fences, and on a fence recorded on
    /// this stream when the third value says so) the smallest freed block of `kind` still
    /// waiting on fences of the streams that used it, among those that hold `rounded` bytes
    /// with a remainder not worth splitting. The block is handed over whole, marked as used on
    /// `borrower`. Counted as a waited cross-stream hit of this shard.
    pub(crate) fn lend_pending(
        &mut self,
        kind: Kind,
        rounded: usize,
        borrower: StreamId,
    ) -> Option<(u64, usize, bool, Vec<F>)> {
        self.poll_migration();
        let (i, size) = self
            .pending
            .iter()
            .enumerate()
            .filter_map(|(i, p)| {
                let node = &self.nodes[&p.addr];
                let fits = node.size >= rounded
                    && self.segments[&node.segment].kind == kind
                    && !kind.worth_splitting(node.size - rounded);
                fits.then_some((i, node.size))
            })
            .min_by_key(|&(_, size)| size)?;
        let p = self.pending.swap_remove(i);
        self.pending_bytes -= size;
        self.count_allocation(Served::Waited);
        self.node_mut(p.addr).state = State::Allocated(vec![borrower]);
        self.shared += 1;
        Some((p.addr, size, p.seq > self.safe_seq, p.fences))
    }

    /// Whether another stream should record a migration fence on this stream: some entirely free
    /// segment waits on a free not yet known finished, and no fence is in flight. `Some(seq)`
    /// puts the shard in the recording state; the caller must then record a fence and call
    /// [`set_migration`](Self::set_migration) with `seq`.
    pub(crate) fn migration_fence_wanted(&mut self) -> Option<u64> {
        self.poll_migration();
        if !matches!(self.migration, Migration::None) {
            return None;
        }
        // Any segment with frees not yet known finished: its free blocks (whole segments, or
        // blocks other streams may borrow) wait on a fence.
        let waiting = self.free_bytes > 0 && self.segments.values().any(|seg| seg.last_free_seq > self.safe_seq);
        if waiting {
            self.migration = Migration::Recording;
            Some(self.seq)
        } else {
            None
        }
    }

    /// Installs a fence recorded after the free numbered `seq`.
    pub(crate) fn set_migration(&mut self, seq: u64, fence: F) {
        debug_assert!(matches!(self.migration, Migration::Recording));
        self.migration = Migration::InFlight { seq, fence };
    }

    /// Removes entirely free segments until their sizes add up to at least `need` bytes (or none
    /// is left), preferring the smallest single segment that covers what is still needed, else the
    /// largest. Returns them as (address, size).
    pub(crate) fn drain_idle(&mut self, need: usize) -> Vec<(u64, usize)> {
        let mut out = Vec::new();
        if need == 0 {
            return out;
        }
        let mut idle: Vec<(usize, u64)> = self.idle.iter().flatten().copied().collect();
        idle.sort_unstable();
        let mut left = need;
        while left > 0 && !idle.is_empty() {
            let i = idle.partition_point(|&(size, _)| size < left);
            let (size, addr) = idle.remove(i.min(idle.len() - 1));
            self.remove_segment(addr);
            out.push((addr, size));
            left = left.saturating_sub(size);
        }
        out
    }
}
