//! A cache of pinned host allocations, so that pinned buffers cost no `cuMemHostAlloc` after
//! the first (page-locking memory costs tens of microseconds to milliseconds per call).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

use parking_lot::Mutex;

use crate::context::bind_raw;
use crate::driver::cu;
use crate::error::Result;
use crate::memory::device_pool::RawContext;
use crate::sys;

/// Pinned allocations are rounded up to this many bytes.
const GRANULE: usize = 4096;
/// The default most bytes the pool keeps cached.
///
/// ```no_run
/// use cudrv::memory::pinned_pool::DEFAULT_MAX_CACHED;
/// let ctx = cudrv::Context::new(0)?;
/// ctx.pinned_pool().set_max_cached(DEFAULT_MAX_CACHED / 4); // keep at most 64 MiB pinned
/// # Ok::<(), cudrv::Error>(())
/// ```
pub const DEFAULT_MAX_CACHED: usize = 256 << 20;

/// The pinned-host-memory cache of one context; [`PinnedHostBuffer`] allocates from it.
///
/// A request takes the smallest cached allocation that holds it and is at most twice its size;
/// otherwise it allocates anew. A freed buffer's memory is cached unless that would take the
/// cache past its bound ([`set_max_cached`](Self::set_max_cached)), in which case it is freed.
///
/// [`PinnedHostBuffer`]: crate::PinnedHostBuffer
///
/// ```no_run
/// let ctx = cudrv::Context::new(0)?;
/// drop(cudrv::PinnedHostBuffer::<u8>::new(&ctx, 1 << 20)?);
/// let again = cudrv::PinnedHostBuffer::<u8>::new(&ctx, 1 << 20)?; // from the cache
/// assert!(ctx.pinned_pool().stats().hits >= 1);
/// # drop(again);
/// # Ok::<(), cudrv::Error>(())
/// ```
#[derive(Debug)]
pub struct PinnedPool {
    ctx: RawContext,
    /// Cached allocations by capacity: their addresses.
    free: Mutex<BTreeMap<usize, Vec<usize>>>,
    cached: AtomicUsize,
    max_cached: AtomicUsize,
    hits: AtomicU64,
    misses: AtomicU64,
}

/// Counters of a [`PinnedPool`].
///
/// ```no_run
/// let ctx = cudrv::Context::new(0)?;
/// let s = ctx.pinned_pool().stats();
/// println!("{} hits, {} misses, {} B cached", s.hits, s.misses, s.cached_bytes);
/// # Ok::<(), cudrv::Error>(())
/// ```
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct PinnedPoolStats {
    /// Requests served from the cache.
    pub hits: u64,
    /// Requests that called `cuMemHostAlloc`.
    pub misses: u64,
    /// Bytes cached now.
    pub cached_bytes: usize,
}

impl PinnedPool {
    pub(crate) fn new(ctx: sys::CUcontext) -> Self {
        PinnedPool {
            ctx: RawContext(ctx),
            free: Mutex::new(BTreeMap::new()),
            cached: AtomicUsize::new(0),
            max_cached: AtomicUsize::new(DEFAULT_MAX_CACHED),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// Takes at least `bytes` (> 0) of pinned memory: (address, capacity).
    pub(crate) fn take(&self, bytes: usize) -> Result<(*mut u8, usize)> {
        let Some(want) = bytes.checked_next_multiple_of(GRANULE) else {
            return Err(crate::error::invalid(format_args!(
                "a pinned allocation of {bytes} bytes overflows when rounded up to {GRANULE}-byte pages"
            )));
        };
        {
            let mut free = self.free.lock();
            let found = free
                .range_mut(want..=want.saturating_mul(2))
                .next()
                .map(|(&cap, addrs)| (cap, addrs.pop()));
            if let Some((capacity, Some(addr))) = found {
                if free.get(&capacity).is_some_and(Vec::is_empty) {
                    free.remove(&capacity);
                }
                self.cached.fetch_sub(capacity, Relaxed);
                self.hits.fetch_add(1, Relaxed);
                return Ok((addr as *mut u8, capacity));
            }
        }
        self.misses.fetch_add(1, Relaxed);
        bind_raw(self.ctx.0)?;
        let mut ptr = std::ptr::null_mut();
        // SAFETY: writes one host pointer through a valid pointer; the context is current.
        match unsafe { cu!(cuMemHostAlloc(&mut ptr, want, 0)) } {
            Ok(()) => Ok((ptr.cast(), want)),
            Err(_) if self.trim() > 0 => {
                // Out of pinned memory, perhaps because the cache holds it: release and retry.
                // SAFETY: as above.
                unsafe { cu!(cuMemHostAlloc(&mut ptr, want, 0))? };
                Ok((ptr.cast(), want))
            }
            Err(e) => Err(e),
        }
    }

    /// Returns an allocation made by [`take`](Self::take); no copy may still use it.
    pub(crate) fn give_back(&self, addr: *mut u8, capacity: usize) {
        let max = self.max_cached.load(Relaxed);
        let fits = self
            .cached
            .fetch_update(Relaxed, Relaxed, |c| c.checked_add(capacity).filter(|&n| n <= max))
            .is_ok();
        if fits {
            self.free.lock().entry(capacity).or_default().push(addr as usize);
        } else {
            let _ = bind_raw(self.ctx.0);
            // SAFETY: allocated by cuMemHostAlloc in `take`, unused, freed once.
            let _ = unsafe { sys::cuMemFreeHost(addr.cast()) };
        }
    }

    /// Frees every cached allocation; the number of bytes released.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// drop(cudrv::PinnedHostBuffer::<u8>::new(&ctx, 1 << 20)?);
    /// assert!(ctx.pinned_pool().trim() >= 1 << 20);
    /// assert_eq!(ctx.pinned_pool().stats().cached_bytes, 0);
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn trim(&self) -> usize {
        let drained = std::mem::take(&mut *self.free.lock());
        let _ = bind_raw(self.ctx.0);
        let mut released = 0;
        for (capacity, addrs) in drained {
            for addr in addrs {
                // SAFETY: cached allocations are unused and owned by the pool; each freed once.
                let _ = unsafe { sys::cuMemFreeHost(addr as *mut std::ffi::c_void) };
                released += capacity;
            }
        }
        self.cached.fetch_sub(released, Relaxed);
        released
    }

    /// Sets the most bytes the cache keeps (default 256 MiB); trims if it holds more.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// ctx.pinned_pool().set_max_cached(0); // cache nothing: every free goes to cuMemFreeHost
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn set_max_cached(&self, bytes: usize) {
        self.max_cached.store(bytes, Relaxed);
        if self.cached.load(Relaxed) > bytes {
            self.trim();
        }
    }

    /// The pool's counters.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let before = ctx.pinned_pool().stats();
    /// let buf = cudrv::PinnedHostBuffer::<u8>::new(&ctx, 4096)?;
    /// let after = ctx.pinned_pool().stats();
    /// assert_eq!(after.hits + after.misses, before.hits + before.misses + 1);
    /// # drop(buf);
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn stats(&self) -> PinnedPoolStats {
        PinnedPoolStats {
            hits: self.hits.load(Relaxed),
            misses: self.misses.load(Relaxed),
            cached_bytes: self.cached.load(Relaxed),
        }
    }
}

impl Drop for PinnedPool {
    fn drop(&mut self) {
        self.trim();
    }
}
