//! Fakes for the caching device allocator's model tests (tests/pool_model.rs,
//! tests/pool_property.rs): an address space with a capacity (`FakeBacking`), fences that
//! complete when a test says so (`FakeFences`), a pool over them and the invariants that hold
//! whenever no other thread uses it.
#![allow(dead_code)]

use std::borrow::Borrow;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};

use cudrv::memory::pool::{
    round_size, Backing, BackingError, Block, CachingPool, Fence, FenceSource, PoolStats, StreamId,
};

/// A fake address space: a bump pointer (addresses are never reused, with a guard gap between
/// segments) plus a map of live segments, and a capacity on live bytes.
pub struct FakeBacking {
    state: Mutex<FakeSpace>,
    capacity: AtomicUsize,
    /// When set, `reserve` fails with `BackingError::Other`.
    pub broken: std::sync::atomic::AtomicBool,
}

#[derive(Default)]
pub struct FakeSpace {
    next: u64,
    live: BTreeMap<u64, usize>,
    used: usize,
    reserves: u64,
    failed_reserves: u64,
    releases: u64,
}

impl FakeBacking {
    pub fn new(capacity: usize) -> Self {
        FakeBacking {
            state: Mutex::new(FakeSpace {
                next: 1 << 32,
                ..FakeSpace::default()
            }),
            capacity: AtomicUsize::new(capacity),
            broken: Default::default(),
        }
    }

    pub fn used(&self) -> usize {
        self.state.lock().unwrap().used
    }

    pub fn live_segments(&self) -> Vec<(u64, usize)> {
        let st = self.state.lock().unwrap();
        st.live.iter().map(|(&a, &s)| (a, s)).collect()
    }

    pub fn reserves(&self) -> u64 {
        self.state.lock().unwrap().reserves
    }

    pub fn failed_reserves(&self) -> u64 {
        self.state.lock().unwrap().failed_reserves
    }

    pub fn releases(&self) -> u64 {
        self.state.lock().unwrap().releases
    }

    /// Whether `[addr, addr + size)` lies inside one live segment.
    pub fn contains(&self, addr: u64, size: usize) -> bool {
        let st = self.state.lock().unwrap();
        match st.live.range(..=addr).next_back() {
            Some((&start, &len)) => addr + size as u64 <= start + len as u64,
            None => false,
        }
    }
}

impl Backing for FakeBacking {
    fn reserve(&self, bytes: usize) -> Result<u64, BackingError> {
        assert!(bytes > 0 && bytes % 512 == 0, "odd segment size {bytes}");
        if self.broken.load(SeqCst) {
            return Err(BackingError::Other("device lost".into()));
        }
        let mut st = self.state.lock().unwrap();
        if st.used + bytes > self.capacity.load(SeqCst) {
            st.failed_reserves += 1;
            return Err(BackingError::OutOfBackingMemory);
        }
        let addr = st.next;
        st.next += bytes as u64 + 4096;
        let end = addr + bytes as u64;
        if let Some((&a, &s)) = st.live.range(..end).next_back() {
            assert!(a + s as u64 <= addr, "segments overlap");
        }
        st.live.insert(addr, bytes);
        st.used += bytes;
        st.reserves += 1;
        Ok(addr)
    }

    fn release(&self, addr: u64, bytes: usize) {
        let mut st = self.state.lock().unwrap();
        let live = st.live.remove(&addr);
        assert_eq!(
            live,
            Some(bytes),
            "release({addr:#x}, {bytes}) does not match a reservation"
        );
        st.used -= bytes;
        st.releases += 1;
    }
}

/// Which fences a stream's work is ordered after: per stream, the highest fence number.
pub type Clock = HashMap<StreamId, u64>;

/// Fences that complete when the test says so: per stream, a count of fences recorded and the
/// count completed. `complete(s)` completes every fence recorded on `s` so far (as if the stream
/// had drained), not later ones.
///
/// `wait(f, s)` orders the work queued on `s` from then on after `f`, and so after everything
/// `f`'s stream was itself ordered after when `f` was recorded: each stream has a clock of the
/// fences its new work comes after, and each fence carries its stream's clock.
#[derive(Default)]
pub struct FakeFences {
    streams: Arc<Mutex<HashMap<StreamId, (u64, u64)>>>,
    records: AtomicU64,
    clocks: Mutex<HashMap<StreamId, Clock>>,
    waits: AtomicU64,
}

pub struct FakeFence {
    streams: Arc<Mutex<HashMap<StreamId, (u64, u64)>>>,
    stream: StreamId,
    ticket: u64,
    /// The fences this one comes after, itself included.
    after: Clock,
}

impl Fence for FakeFence {
    fn is_complete(&self) -> bool {
        self.streams.lock().unwrap()[&self.stream].1 >= self.ticket
    }
}

impl FenceSource for FakeFences {
    type F = FakeFence;

    fn record(&self, stream: StreamId) -> FakeFence {
        self.records.fetch_add(1, SeqCst);
        let mut map = self.streams.lock().unwrap();
        let entry = map.entry(stream).or_default();
        entry.0 += 1;
        let mut after = self.clocks.lock().unwrap().get(&stream).cloned().unwrap_or_default();
        after.insert(stream, entry.0);
        FakeFence {
            streams: self.streams.clone(),
            stream,
            ticket: entry.0,
            after,
        }
    }

    fn wait(&self, fence: &FakeFence, stream: StreamId) {
        self.waits.fetch_add(1, SeqCst);
        let mut clocks = self.clocks.lock().unwrap();
        let clock = clocks.entry(stream).or_default();
        for (&s, &t) in &fence.after {
            let at = clock.entry(s).or_default();
            *at = (*at).max(t);
        }
    }
}

impl FakeFences {
    /// Completes every fence recorded on `stream` so far, and with them every fence `stream` was
    /// made to wait on (its work could not have finished before them).
    pub fn complete(&self, stream: StreamId) {
        let mut map = self.streams.lock().unwrap();
        let entry = map.entry(stream).or_default();
        entry.1 = entry.0;
        if let Some(clock) = self.clocks.lock().unwrap().get(&stream) {
            for (&s, &t) in clock {
                let entry = map.entry(s).or_default();
                entry.1 = entry.1.max(t);
            }
        }
    }

    /// Fences of `stream` completed so far (fences complete in the order they were recorded).
    pub fn completed(&self, stream: StreamId) -> u64 {
        self.streams.lock().unwrap().get(&stream).map_or(0, |e| e.1)
    }

    pub fn records(&self) -> u64 {
        self.records.load(SeqCst)
    }

    /// Fences recorded on `stream` so far.
    pub fn recorded(&self, stream: StreamId) -> u64 {
        self.streams.lock().unwrap().get(&stream).map_or(0, |e| e.0)
    }

    /// Whether new work on `stream` is ordered after a fence of `on` numbered above `after`
    /// (recorded after the first `after` fences of `on`).
    pub fn waited(&self, stream: StreamId, on: StreamId, after: u64) -> bool {
        let clocks = self.clocks.lock().unwrap();
        clocks.get(&stream).and_then(|c| c.get(&on)).is_some_and(|&t| t > after)
    }

    /// Waits so far.
    pub fn wait_count(&self) -> u64 {
        self.waits.load(SeqCst)
    }
}

pub type Pool = CachingPool<FakeBacking, FakeFences>;

pub fn pool(capacity: usize) -> Pool {
    CachingPool::new(FakeBacking::new(capacity), FakeFences::default())
}

pub const S1: StreamId = StreamId(1);
pub const S2: StreamId = StreamId(2);
pub const S3: StreamId = StreamId(3);

/// The invariants that hold whenever no other thread uses the pool.
pub fn check_quiescent<T: Borrow<Block>>(pool: &Pool, live: &[T]) -> PoolStats {
    pool.check_invariants();
    let live: Vec<&Block> = live.iter().map(Borrow::borrow).collect();
    let st = pool.stats();
    let backing = pool.backing();
    let mut sorted: Vec<(u64, usize)> = live.iter().map(|b| (b.addr(), b.size())).collect();
    sorted.sort_unstable();
    for w in sorted.windows(2) {
        assert!(w[0].0 + w[0].1 as u64 <= w[1].0, "live blocks overlap: {w:?}");
    }
    for b in &live {
        assert!(backing.contains(b.addr(), b.size()), "{b:?} outside any segment");
        assert!(b.size() >= round_size(b.requested()).unwrap());
        assert_eq!(b.size() % 512, 0);
    }
    let allocated: usize = live.iter().map(|b| b.size()).sum();
    assert_eq!(st.allocated_bytes, allocated as u64);
    assert_eq!(st.active_blocks, live.len() as u64);
    assert_eq!(st.reserved_bytes, backing.used() as u64);
    assert_eq!(st.segments, backing.live_segments().len() as u64);
    assert!(st.reserved_bytes >= st.allocated_bytes);
    assert_eq!(st.cached_bytes, st.reserved_bytes - st.allocated_bytes);
    assert!(st.pending_bytes <= st.cached_bytes);
    assert!(st.largest_free_block <= st.cached_bytes);
    assert_eq!(st.cache_hits + st.cache_misses, st.allocations);
    assert!(st.cross_stream_reuses <= st.cache_hits);
    assert!(st.peak_allocated_bytes >= st.allocated_bytes);
    assert!(st.peak_reserved_bytes >= st.reserved_bytes);
    assert!((0.0..=1.0).contains(&st.fragmentation));
    assert!((0.0..=1.0).contains(&st.hit_rate));
    st
}

/// Frees everything, drains every stream and empties the cache; asserts nothing leaked.
pub fn drain_and_check_empty(pool: &Pool, live: Vec<Block>, streams: &[StreamId]) {
    for b in live {
        pool.free(b);
    }
    for &s in streams {
        pool.fence_source().complete(s);
    }
    pool.empty_cache();
    let st = check_quiescent::<Block>(pool, &[]);
    assert_eq!(st.reserved_bytes, 0);
    assert_eq!(st.segments, 0);
    assert_eq!(st.allocated_bytes, 0);
    assert_eq!(st.pending_bytes, 0);
    assert!(pool.backing().live_segments().is_empty(), "segments leaked");
}
