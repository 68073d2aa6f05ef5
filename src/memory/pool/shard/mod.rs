//! The per-stream state: the segments a stream owns, the blocks carved from them, its free sets
//! and its blocks waiting on fences. Everything here runs under the shard's mutex and makes no
//! calls out of the pool except [`Fence::is_complete`]. What other streams may take from a
//! shard (idle blocks, blocks lent against fences, the migration fence) is in `lending`.

use std::collections::{BTreeSet, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

use super::sizes::{Kind, KINDS};
use super::{Fence, StreamId};

/// A cheap hasher for device addresses (multiples of 512): a multiply, with the well-mixed high
/// half folded into the low bits the table indexes by.
#[derive(Default, Clone, Copy)]
pub(crate) struct AddrHasher(u64);

impl Hasher for AddrHasher {
    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 32)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(self.0.rotate_left(8) ^ u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (n ^ (n >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type AddrMap<V> = HashMap<u64, V, BuildHasherDefault<AddrHasher>>;

/// What a block is doing.
#[derive(Debug)]
enum State {
    /// In a free set: reusable by this shard's stream.
    Free,
    /// Handed out; the streams it was additionally used on (`record_stream`), deduplicated.
    /// A block listed in the shard's quick cache (freed, kept whole for the next request of
    /// exactly its size on this stream) stays in this state, with no streams: the list alone
    /// says it is cached, so the quick path needs no look-up of the block.
    Allocated(Vec<StreamId>),
    /// Freed, but used on other streams whose fences have not all completed.
    Pending,
}

/// Most blocks a stream's quick cache holds.
pub(crate) const QUICK_MAX: usize = 32;

/// A block: a run of bytes inside one segment, linked to its neighbours in address order.
#[derive(Debug)]
struct Node {
    size: usize,
    segment: u64,
    prev: Option<u64>,
    next: Option<u64>,
    state: State,
}

/// A segment: one reservation from the backing.
#[derive(Debug)]
struct Segment {
    size: usize,
    kind: Kind,
    /// The sequence number of the latest free of a block in it (0: none since it joined this
    /// shard). Another stream may take the segment once `safe_seq` reaches this.
    last_free_seq: u64,
}

/// A freed block waiting on fences recorded on the other streams that used it.
struct PendingFree<F> {
    addr: u64,
    seq: u64,
    fences: Vec<F>,
}

/// The fence that tells other streams which of this stream's frees are finished.
enum Migration<F> {
    /// None recorded or in flight.
    None,
    /// A thread is recording one outside the lock.
    Recording,
    /// Recorded after the free numbered `seq` (and every earlier one).
    InFlight { seq: u64, fence: F },
}

/// What [`ShardState::free`] did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum FreeOutcome {
    /// The block is in the free set.
    Freed {
        /// Bytes freed.
        size: usize,
        /// Whether its segment is now entirely free.
        became_idle: bool,
        /// `Some(seq)`: the caller must record a fence on this stream and hand it to
        /// [`ShardState::set_migration`] with `seq`.
        record_migration: Option<u64>,
    },
    /// The block was used on other streams: the caller must record a fence on each of `streams`
    /// and hand them to [`ShardState::push_pending`] with `addr` and `seq`.
    Deferred {
        /// Bytes freed.
        size: usize,
        /// The free's sequence number.
        seq: u64,
        /// The other streams.
        streams: Vec<StreamId>,
    },
}

/// A stream's event counts, kept under its lock (so the hit path touches no shared counter).
#[derive(Default, Clone, Copy, Debug)]
pub(crate) struct Counts {
    pub(crate) allocations: u64,
    pub(crate) frees: u64,
    pub(crate) hits: u64,
    pub(crate) misses: u64,
    pub(crate) cross_stream: u64,
    pub(crate) waited: u64,
    pub(crate) active_blocks: u64,
}

/// How an allocation was served, for [`Counts`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Served {
    /// From the stream's own free blocks.
    Hit,
    /// From a segment taken over from another stream, or a block lent by one.
    CrossStream,
    /// Like `CrossStream`, from memory whose last use is not known finished: the allocating
    /// stream is made to wait on a fence first.
    Waited,
    /// From a new segment.
    Miss,
}

/// One stream's share of the pool.
pub(crate) struct ShardState<F> {
    /// Event counts.
    pub(crate) counts: Counts,
    nodes: AddrMap<Node>,
    segments: AddrMap<Segment>,
    /// Free blocks by (size, addr), per [`Kind`].
    free: [BTreeSet<(usize, u64)>; KINDS],
    /// The free blocks that span a whole segment, by (size, addr), per [`Kind`].
    idle: [BTreeSet<(usize, u64)>; KINDS],
    pending: Vec<PendingFree<F>>,
    /// The sequence number of the latest free.
    seq: u64,
    /// Every free numbered up to this is known finished on the device.
    safe_seq: u64,
    migration: Migration<F>,
    free_bytes: usize,
    pending_bytes: usize,
    /// The quick cache: (size, addr) of freed blocks, newest last.
    quick: Vec<(usize, u64)>,
    /// Allocated blocks used on other streams too (their stream lists are not empty).
    shared: usize,
}

impl<F: Fence> Default for ShardState<F> {
    fn default() -> Self {
        ShardState {
            counts: Counts::default(),
            nodes: AddrMap::default(),
            segments: AddrMap::default(),
            free: std::array::from_fn(|_| BTreeSet::new()),
            idle: std::array::from_fn(|_| BTreeSet::new()),
            pending: Vec::new(),
            seq: 0,
            safe_seq: 0,
            migration: Migration::None,
            quick: Vec::new(),
            shared: 0,
            free_bytes: 0,
            pending_bytes: 0,
        }
    }
}

impl<F: Fence> ShardState<F> {
    /// Adds a segment (new from the backing, or taken from another shard) as one free block.
    /// `settled`: every earlier use of its memory is known finished. Otherwise (it was taken over
    /// by waiting on fences, so earlier uses are only ordered before this stream's later work)
    /// it counts as freed now, so other streams get it only after a fence recorded on this stream
    /// from now on has completed.
    pub(crate) fn add_segment(&mut self, addr: u64, size: usize, kind: Kind, settled: bool) {
        let last_free_seq = if settled {
            0
        } else {
            self.seq += 1;
            self.seq
        };
        let old = self.segments.insert(
            addr,
            Segment {
                size,
                kind,
                last_free_seq,
            },
        );
        assert!(old.is_none(), "segment {addr:#x} added twice");
        self.nodes.insert(
            addr,
            Node {
                size,
                segment: addr,
                prev: None,
                next: None,
                state: State::Free,
            },
        );
        self.insert_free(addr);
    }

    /// Best fit: carves `rounded` bytes from the smallest free block of `kind` that holds them.
    /// Returns the block's address and size.
    pub(crate) fn alloc_from_free(&mut self, kind: Kind, rounded: usize) -> Option<(u64, usize)> {
        let &(_, addr) = self.free[kind as usize].range((rounded, 0)..).next()?;
        Some((addr, self.carve(addr, rounded, Served::Hit)))
    }

    /// Counts an allocation served as `how`.
    #[inline]
    fn count_allocation(&mut self, how: Served) {
        let c = &mut self.counts;
        c.allocations += 1;
        c.active_blocks += 1;
        match how {
            Served::Hit => c.hits += 1,
            Served::CrossStream => {
                c.hits += 1;
                c.cross_stream += 1;
            }
            Served::Waited => {
                c.hits += 1;
                c.cross_stream += 1;
                c.waited += 1;
            }
            Served::Miss => c.misses += 1,
        }
    }

    /// Allocates `rounded` bytes at the start of the free block at `addr` (which must hold them),
    /// splitting off the remainder when it is worth keeping, and counts the allocation as `how`.
    /// Returns the block's size.
    pub(crate) fn carve(&mut self, addr: u64, rounded: usize, how: Served) -> usize {
        self.count_allocation(how);
        self.remove_free(addr);
        let node = self.nodes.get_mut(&addr).expect("carving a block that does not exist");
        debug_assert!(node.size >= rounded);
        let kind = self.segments[&node.segment].kind;
        node.state = State::Allocated(Vec::new());
        let remainder = node.size - rounded;
        if !kind.worth_splitting(remainder) {
            return node.size;
        }
        let rest = addr + rounded as u64;
        let next = node.next.replace(rest);
        let segment = node.segment;
        node.size = rounded;
        if let Some(n) = next {
            self.node_mut(n).prev = Some(rest);
        }
        self.nodes.insert(
            rest,
            Node {
                size: remainder,
                segment,
                prev: Some(addr),
                next,
                state: State::Free,
            },
        );
        self.insert_free(rest);
        rounded
    }

    /// Marks the allocated block at `addr` as also used on `stream`. `false` when no block is
    /// allocated there.
    pub(crate) fn record_stream(&mut self, addr: u64, stream: StreamId) -> bool {
        let Some(Node {
            state: State::Allocated(streams),
            ..
        }) = self.nodes.get_mut(&addr)
        else {
            return false;
        };
        if !streams.contains(&stream) {
            self.shared += usize::from(streams.is_empty());
            streams.push(stream);
        }
        true
    }

    /// Frees the allocated block at `addr`. `None` when no block is allocated there.
    pub(crate) fn free(&mut self, addr: u64) -> Option<FreeOutcome> {
        let node = self.nodes.get_mut(&addr)?;
        let streams = match &mut node.state {
            State::Allocated(streams) => std::mem::take(streams),
            _ => return None,
        };
        let size = node.size;
        self.counts.frees += 1;
        self.counts.active_blocks -= 1;
        self.seq += 1;
        let seq = self.seq;
        if !streams.is_empty() {
            node.state = State::Pending;
            self.pending_bytes += size;
            self.shared -= 1;
            return Some(FreeOutcome::Deferred { size, seq, streams });
        }
        let became_idle = self.mark_free(addr, seq);
        let record_migration = if became_idle && matches!(self.migration, Migration::None) {
            self.migration = Migration::Recording;
            Some(seq)
        } else {
            None
        };
        Some(FreeOutcome::Freed {
            size,
            became_idle,
            record_migration,
        })
    }

    /// Frees the allocated block at `addr` into the quick cache if it was used on no other
    /// stream. Returns its size, or `None` (then use [`free`](Self::free)). A full cache first
    /// returns its oldest block to the free sets, so that the sizes in use now keep their place
    /// (otherwise blocks of sizes no longer requested, left by earlier work, would send every
    /// free of the current size down the coalescing path for good).
    ///
    /// `addr` and `size` are those of a block allocated in this shard (a pool's [`Block`](super::Block)
    /// is a unique handle). While no block of the shard is shared with other streams, that is all
    /// the quick path needs to know, so it looks nothing up.
    #[inline]
    pub(crate) fn free_quick(&mut self, addr: u64, size: usize) -> Option<usize> {
        if self.shared > 0 {
            match &self.nodes.get(&addr)?.state {
                State::Allocated(streams) if streams.is_empty() => {}
                _ => return None,
            }
        }
        debug_assert!(
            matches!(self.nodes.get(&addr), Some(Node { state: State::Allocated(streams), size: s, .. })
                if streams.is_empty() && *s == size),
            "quick free of {addr:#x} ({size} B), which is not an unshared allocated block of that size"
        );
        if self.quick.len() >= QUICK_MAX {
            let (_, oldest) = self.quick.remove(0);
            self.seq += 1;
            let seq = self.seq;
            self.mark_free(oldest, seq);
        }
        self.quick.push((size, addr));
        self.counts.frees += 1;
        self.counts.active_blocks -= 1;
        Some(size)
    }

    /// Takes the newest quick-cached block of exactly `rounded` bytes, counted as a hit.
    #[inline]
    pub(crate) fn alloc_quick(&mut self, rounded: usize) -> Option<(u64, usize)> {
        let at = self.quick.iter().rposition(|&(size, _)| size == rounded)?;
        // Usually the newest entry: popping it spares `remove`'s memmove call.
        let (size, addr) = if at + 1 == self.quick.len() {
            self.quick.pop()?
        } else {
            self.quick.remove(at)
        };
        self.count_allocation(Served::Hit);
        Some((addr, size))
    }

    /// Whether the quick cache holds blocks.
    pub(crate) fn has_quick(&self) -> bool {
        !self.quick.is_empty()
    }

    /// Returns every quick-cached block to the free sets (coalescing), as ordinary frees made now.
    pub(crate) fn flush_quick(&mut self) {
        for (_, addr) in std::mem::take(&mut self.quick) {
            self.seq += 1;
            let seq = self.seq;
            self.mark_free(addr, seq);
        }
    }

    /// Files the fences of a deferred free (see [`FreeOutcome::Deferred`]).
    pub(crate) fn push_pending(&mut self, addr: u64, seq: u64, fences: Vec<F>) {
        debug_assert!(matches!(self.nodes[&addr].state, State::Pending));
        self.pending.push(PendingFree { addr, seq, fences });
    }

    /// Moves every pending block whose fences have all completed to the free set. Returns whether
    /// a segment became entirely free.
    pub(crate) fn poll_pending(&mut self) -> bool {
        let mut became_idle = false;
        let mut i = 0;
        while i < self.pending.len() {
            if self.pending[i].fences.iter().all(Fence::is_complete) {
                let p = self.pending.swap_remove(i);
                self.pending_bytes -= self.nodes[&p.addr].size;
                became_idle |= self.mark_free(p.addr, p.seq);
            } else {
                i += 1;
            }
        }
        became_idle
    }

    /// Whether blocks wait on fences.
    pub(crate) fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// The size of the largest free block (0 when none).
    pub(crate) fn largest_free(&self) -> usize {
        self.free
            .iter()
            .filter_map(|set| set.last().map(|&(size, _)| size))
            .max()
            .unwrap_or(0)
    }

    /// Bytes in freed blocks waiting on fences.
    pub(crate) fn pending_bytes(&self) -> usize {
        self.pending_bytes
    }

    /// Marks the block at `addr` free after the free numbered `seq`, merges it with free
    /// neighbours and files it. Returns whether its segment is now entirely free.
    fn mark_free(&mut self, addr: u64, seq: u64) -> bool {
        let mut addr = addr;
        let node = self.node_mut(addr);
        node.state = State::Free;
        let (prev, next, segment) = (node.prev, node.next, node.segment);
        let seg = self.segments.get_mut(&segment).expect("block outside a segment");
        seg.last_free_seq = seg.last_free_seq.max(seq);
        if let Some(p) = prev.filter(|p| matches!(self.nodes[p].state, State::Free)) {
            self.remove_free(p);
            self.merge_into_prev(p);
            addr = p;
        }
        if let Some(n) = next.filter(|n| matches!(self.nodes[n].state, State::Free)) {
            self.remove_free(n);
            self.merge_into_prev(addr);
        }
        self.insert_free(addr)
    }

    /// Merges the block after `addr` into the block at `addr`.
    fn merge_into_prev(&mut self, addr: u64) {
        let next = self.nodes[&addr].next.expect("merging with no neighbour");
        let gone = self.nodes.remove(&next).expect("dangling neighbour link");
        let node = self.node_mut(addr);
        node.size += gone.size;
        node.next = gone.next;
        if let Some(n) = gone.next {
            self.node_mut(n).prev = Some(addr);
        }
    }

    /// Files the free block at `addr` in the free set (and the idle set when it spans its
    /// segment). Returns whether it spans its segment.
    fn insert_free(&mut self, addr: u64) -> bool {
        let node = &self.nodes[&addr];
        let kind = self.segments[&node.segment].kind as usize;
        self.free[kind].insert((node.size, addr));
        self.free_bytes += node.size;
        let whole = node.prev.is_none() && node.next.is_none();
        if whole {
            self.idle[kind].insert((node.size, addr));
        }
        whole
    }

    /// Takes the free block at `addr` out of the free (and idle) set.
    fn remove_free(&mut self, addr: u64) {
        let node = &self.nodes[&addr];
        let kind = self.segments[&node.segment].kind as usize;
        let removed = self.free[kind].remove(&(node.size, addr));
        debug_assert!(removed, "block {addr:#x} was not in the free set");
        self.free_bytes -= node.size;
        if node.prev.is_none() && node.next.is_none() {
            self.idle[kind].remove(&(node.size, addr));
        }
    }

    /// Forgets the entirely free segment at `addr`.
    fn remove_segment(&mut self, addr: u64) {
        self.remove_free(addr);
        let node = self.nodes.remove(&addr).expect("segment without its block");
        let seg = self.segments.remove(&addr).expect("no such segment");
        debug_assert_eq!(node.size, seg.size, "removing a segment that is not entirely free");
    }

    fn node_mut(&mut self, addr: u64) -> &mut Node {
        self.nodes.get_mut(&addr).expect("dangling block link")
    }

    /// Checks every structural invariant: links are consistent and tile each segment exactly, no
    /// two neighbours are both free, and the sets and byte counts match. Returns (segments,
    /// reserved bytes, allocated bytes, allocated blocks). O(blocks).
    pub(crate) fn check(&self) -> (usize, usize, usize, usize) {
        let mut allocated = (0, 0);
        let mut free_bytes = 0;
        let mut pending_bytes = 0;
        let mut free_count = 0;
        let mut idle_count = 0;
        let mut quick_count = 0;
        let mut shared = 0;
        let quick: HashMap<u64, usize> = self.quick.iter().map(|&(size, addr)| (addr, size)).collect();
        assert_eq!(quick.len(), self.quick.len(), "a block listed twice in the quick cache");
        for (&start, seg) in &self.segments {
            let mut at = start;
            let mut prev = None;
            let mut prev_free = false;
            let mut cur = Some(start);
            while let Some(addr) = cur {
                assert_eq!(addr, at, "blocks do not tile segment {start:#x}");
                let node = &self.nodes[&addr];
                assert_eq!(node.segment, start);
                assert_eq!(node.prev, prev);
                assert!(node.size > 0 && node.size % super::MIN_BLOCK_SIZE == 0);
                let free = matches!(node.state, State::Free);
                assert!(!(free && prev_free), "two free neighbours at {addr:#x}");
                let kind = seg.kind as usize;
                assert_eq!(free, self.free[kind].contains(&(node.size, addr)));
                if free {
                    free_bytes += node.size;
                    free_count += 1;
                    let whole = node.prev.is_none() && node.next.is_none();
                    assert_eq!(whole, self.idle[kind].contains(&(node.size, addr)));
                    idle_count += usize::from(whole);
                }
                match &node.state {
                    State::Pending => pending_bytes += node.size,
                    State::Allocated(streams) => match quick.get(&addr) {
                        Some(&size) => {
                            assert!(streams.is_empty(), "quick block {addr:#x} has streams");
                            assert_eq!(size, node.size, "quick block {addr:#x} listed with another size");
                            quick_count += 1;
                        }
                        None => {
                            allocated = (allocated.0 + node.size, allocated.1 + 1);
                            shared += usize::from(!streams.is_empty());
                        }
                    },
                    State::Free => {}
                }
                prev_free = free;
                prev = Some(addr);
                at += node.size as u64;
                cur = node.next;
            }
            assert_eq!(at, start + seg.size as u64, "blocks do not fill segment");
        }
        assert_eq!(free_bytes, self.free_bytes);
        assert_eq!(pending_bytes, self.pending_bytes);
        assert_eq!(quick_count, self.quick.len(), "quick list and quick blocks differ");
        assert_eq!(shared, self.shared, "shared block count");
        assert_eq!(free_count, self.free.iter().map(BTreeSet::len).sum::<usize>());
        assert_eq!(idle_count, self.idle.iter().map(BTreeSet::len).sum::<usize>());
        let tiled: usize = self.segments.values().map(|seg| seg.size).sum();
        let in_nodes: usize = self.nodes.values().map(|n| n.size).sum();
        assert_eq!(tiled, in_nodes, "blocks outside any segment walk");
        assert!(self
            .pending
            .iter()
            .all(|p| matches!(self.nodes[&p.addr].state, State::Pending)));
        (self.segments.len(), tiled, allocated.0, allocated.1)
    }
}

mod lending;
#[cfg(test)]
mod tests;
