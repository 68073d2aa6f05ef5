//! A simulated device for the pool: a bounded address space and fences completed by hand.
//!
//! [`SimBacking`] and [`SimFences`] let a [`CachingPool`](super::CachingPool) run without a GPU:
//! to try an allocation pattern and read its peak reservation and fragmentation off
//! [`PoolStats`](super::PoolStats), to plan a memory limit, or in tests and examples. Nothing is
//! ever dereferenced; addresses are numbers.
//!
//! ```
//! use cudrv::memory::pool::sim::{SimBacking, SimFences};
//! use cudrv::memory::pool::{CachingPool, StreamId};
//!
//! // A 64 MiB device; fences complete only when told to.
//! let pool = CachingPool::new(SimBacking::new(64 << 20), SimFences::manual());
//! let (s1, s2) = (StreamId(1), StreamId(2));
//! let a = pool.allocate(3 << 20, s1)?;
//! pool.free(a);
//! // Stream 2 cannot take stream 1's segment while stream 1's work may still be running...
//! let b = pool.allocate(3 << 20, s2)?;
//! assert_eq!(pool.stats().segments, 2);
//! pool.free(b);
//! // ...but once it has finished, the free segment goes to whoever asks.
//! pool.fence_source().complete_all();
//! assert_eq!(pool.empty_cache(), 40 << 20);
//! assert_eq!(pool.backing().used(), 0);
//! # Ok::<(), cudrv::memory::pool::PoolError>(())
//! ```

use super::{Backing, BackingError, Fence, FenceSource, StreamId};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;

/// A simulated device memory of a fixed capacity. Addresses start at 4 GiB and are never
/// reused, so a stale address shows up as an unknown one.
///
/// ```
/// use cudrv::memory::pool::sim::SimBacking;
/// use cudrv::memory::pool::{Backing, BackingError};
///
/// let mem = SimBacking::new(4 << 20);
/// let a = mem.reserve(2 << 20)?;
/// assert_eq!(mem.reserve(3 << 20), Err(BackingError::OutOfBackingMemory));
/// mem.release(a, 2 << 20);
/// assert_eq!((mem.used(), mem.reserves(), mem.releases()), (0, 1, 1));
/// # Ok::<(), BackingError>(())
/// ```
#[derive(Debug)]
pub struct SimBacking {
    capacity: u64,
    used: AtomicU64,
    next: AtomicU64,
    reserves: AtomicU64,
    releases: AtomicU64,
}

impl SimBacking {
    /// A device with `capacity` bytes, all free.
    ///
    /// ```
    /// let mem = cudrv::memory::pool::sim::SimBacking::new(1 << 30);
    /// assert_eq!(mem.capacity(), 1 << 30);
    /// ```
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity as u64,
            used: AtomicU64::new(0),
            next: AtomicU64::new(1 << 32),
            reserves: AtomicU64::new(0),
            releases: AtomicU64::new(0),
        }
    }

    /// The capacity given to [`new`](Self::new).
    ///
    /// ```
    /// let mem = cudrv::memory::pool::sim::SimBacking::new(1000);
    /// assert_eq!(mem.capacity(), 1000);
    /// ```
    pub fn capacity(&self) -> usize {
        self.capacity as usize
    }

    /// The bytes reserved and not yet released.
    ///
    /// ```
    /// use cudrv::memory::pool::{sim::SimBacking, Backing};
    /// let mem = SimBacking::new(8 << 20);
    /// mem.reserve(2 << 20).unwrap();
    /// assert_eq!(mem.used(), 2 << 20);
    /// ```
    pub fn used(&self) -> usize {
        self.used.load(SeqCst) as usize
    }

    /// How many reservations succeeded.
    ///
    /// ```
    /// use cudrv::memory::pool::{sim::SimBacking, Backing};
    /// let mem = SimBacking::new(1 << 20);
    /// let _ = mem.reserve(2 << 20); // too large: not counted
    /// assert_eq!(mem.reserves(), 0);
    /// ```
    pub fn reserves(&self) -> u64 {
        self.reserves.load(SeqCst)
    }

    /// How many releases there were.
    ///
    /// ```
    /// use cudrv::memory::pool::{sim::SimBacking, Backing};
    /// let mem = SimBacking::new(4 << 20);
    /// let a = mem.reserve(2 << 20).unwrap();
    /// mem.release(a, 2 << 20);
    /// assert_eq!(mem.releases(), 1);
    /// ```
    pub fn releases(&self) -> u64 {
        self.releases.load(SeqCst)
    }
}

impl Backing for SimBacking {
    fn reserve(&self, bytes: usize) -> Result<u64, BackingError> {
        let bytes = bytes as u64;
        self.used
            .fetch_update(SeqCst, SeqCst, |u| u.checked_add(bytes).filter(|&n| n <= self.capacity))
            .map_err(|_| BackingError::OutOfBackingMemory)?;
        self.reserves.fetch_add(1, SeqCst);
        Ok(self.next.fetch_add(bytes.max(1), SeqCst))
    }

    fn release(&self, _addr: u64, bytes: usize) {
        self.used.fetch_sub(bytes as u64, SeqCst);
        self.releases.fetch_add(1, SeqCst);
    }
}

/// Per stream: fences recorded so far, and how many of them have completed.
type Progress = Arc<Mutex<HashMap<StreamId, (u64, u64)>>>;

/// Simulated streams: each [`record`](FenceSource::record) is a point in its stream's work, and
/// the work up to it finishes when [`complete`](Self::complete) says so, or at once with
/// [`instant`](Self::instant) fences.
///
/// ```
/// use cudrv::memory::pool::sim::SimFences;
/// use cudrv::memory::pool::{Fence, FenceSource, StreamId};
///
/// let fences = SimFences::manual();
/// let f = fences.record(StreamId(7));
/// assert!(!f.is_complete());
/// fences.complete(StreamId(7));
/// assert!(f.is_complete());
/// ```
#[derive(Debug, Default)]
pub struct SimFences {
    progress: Progress,
    instant: AtomicBool,
    waits: AtomicU64,
}

/// A fence of [`SimFences`]: complete once its stream's work up to it is marked finished.
///
/// ```
/// use cudrv::memory::pool::sim::SimFences;
/// use cudrv::memory::pool::{Fence, FenceSource, StreamId};
///
/// let f = SimFences::instant().record(StreamId(1));
/// assert!(f.is_complete());
/// ```
#[derive(Debug)]
pub struct SimFence {
    progress: Option<Progress>,
    stream: StreamId,
    ticket: u64,
}

impl SimFences {
    /// Fences that complete only when [`complete`](Self::complete) or
    /// [`complete_all`](Self::complete_all) is called: streams that are still busy.
    ///
    /// ```
    /// use cudrv::memory::pool::{sim::SimFences, Fence, FenceSource, StreamId};
    /// assert!(!SimFences::manual().record(StreamId(1)).is_complete());
    /// ```
    pub fn manual() -> Self {
        Self::default()
    }

    /// Fences that are complete as soon as they are recorded: streams that are always idle.
    ///
    /// ```
    /// use cudrv::memory::pool::{sim::SimFences, Fence, FenceSource, StreamId};
    /// assert!(SimFences::instant().record(StreamId(1)).is_complete());
    /// ```
    pub fn instant() -> Self {
        let s = Self::default();
        s.instant.store(true, SeqCst);
        s
    }

    /// Marks all of `stream`'s work recorded so far as finished.
    ///
    /// ```
    /// use cudrv::memory::pool::{sim::SimFences, Fence, FenceSource, StreamId};
    /// let fences = SimFences::manual();
    /// let (a, b) = (fences.record(StreamId(1)), fences.record(StreamId(2)));
    /// fences.complete(StreamId(1));
    /// assert!(a.is_complete() && !b.is_complete());
    /// ```
    pub fn complete(&self, stream: StreamId) {
        if let Some(p) = self.progress.lock().get_mut(&stream) {
            p.1 = p.0;
        }
    }

    /// Marks every stream's work recorded so far as finished.
    ///
    /// ```
    /// use cudrv::memory::pool::{sim::SimFences, Fence, FenceSource, StreamId};
    /// let fences = SimFences::manual();
    /// let (a, b) = (fences.record(StreamId(1)), fences.record(StreamId(2)));
    /// fences.complete_all();
    /// assert!(a.is_complete() && b.is_complete());
    /// ```
    pub fn complete_all(&self) {
        for p in self.progress.lock().values_mut() {
            p.1 = p.0;
        }
    }

    /// How many times the pool made a stream wait on another's fence
    /// ([`FenceSource::wait`]).
    ///
    /// ```
    /// use cudrv::memory::pool::{sim::SimFences, FenceSource, StreamId};
    /// let fences = SimFences::manual();
    /// let f = fences.record(StreamId(1));
    /// fences.wait(&f, StreamId(2));
    /// assert_eq!(fences.waits(), 1);
    /// ```
    pub fn waits(&self) -> u64 {
        self.waits.load(SeqCst)
    }
}

impl Fence for SimFence {
    fn is_complete(&self) -> bool {
        match &self.progress {
            None => true,
            Some(p) => p.lock().get(&self.stream).is_some_and(|&(_, done)| done >= self.ticket),
        }
    }
}

impl FenceSource for SimFences {
    type F = SimFence;

    fn record(&self, stream: StreamId) -> SimFence {
        if self.instant.load(SeqCst) {
            return SimFence {
                progress: None,
                stream,
                ticket: 0,
            };
        }
        let mut map = self.progress.lock();
        let p = map.entry(stream).or_default();
        p.0 += 1;
        SimFence {
            progress: Some(self.progress.clone()),
            stream,
            ticket: p.0,
        }
    }

    /// The simulated device orders the waiting stream after the fence; the pool then treats the
    /// memory as usable on it, so the wait is only counted.
    fn wait(&self, _fence: &SimFence, _stream: StreamId) {
        self.waits.fetch_add(1, SeqCst);
    }
}
