//! The caching pool on a real device: segments from `cuMemAlloc`, fences from CUDA events.
//!
//! [`DevicePool`] is the [`CachingPool`] every [`Context`](crate::Context) owns; device buffers
//! allocate from it unless caching is switched off for the context.

use std::collections::HashSet;
use std::ptr;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::context::bind_raw;
use crate::driver::{check, cu};
use crate::memory::pool::{Backing, BackingError, CachingPool, Fence, FenceSource, StreamId};
use crate::sys::{self, CUresult};

/// The caching pool of one context.
///
/// ```no_run
/// let ctx = cudrv::Context::new(0)?;
/// let pool: &cudrv::memory::device_pool::DevicePool = ctx.memory_pool();
/// pool.set_release_threshold(Some(1 << 30)); // keep at most 1 GiB cached
/// println!("{:?}", pool.stats());
/// # Ok::<(), cudrv::Error>(())
/// ```
pub type DevicePool = CachingPool<DriverBacking, EventFences>;

/// A raw context handle that the pool's parts use to make the context current.
#[derive(Copy, Clone, Debug)]
pub(crate) struct RawContext(pub(crate) sys::CUcontext);
// SAFETY: a CUcontext handle may be used from any thread; the owning Context outlives the pool.
unsafe impl Send for RawContext {}
// SAFETY: as above.
unsafe impl Sync for RawContext {}

/// Segments come from `cuMemAlloc` and go back with `cuMemFree` (which waits for the device, so a
/// segment is never released under running work).
///
/// ```no_run
/// use cudrv::memory::pool::Backing;
/// let ctx = cudrv::Context::new(0)?;
/// let backing = ctx.memory_pool().backing(); // cuMemAlloc / cuMemFree of this context
/// let addr = backing.reserve(2 << 20).expect("2 MiB");
/// backing.release(addr, 2 << 20);
/// # Ok::<(), cudrv::Error>(())
/// ```
#[derive(Debug)]
pub struct DriverBacking {
    ctx: RawContext,
}

impl Backing for DriverBacking {
    fn reserve(&self, bytes: usize) -> Result<u64, BackingError> {
        bind_raw(self.ctx.0).map_err(|e| BackingError::Other(e.to_string()))?;
        let alloc = sys::resolve::cuMemAlloc_v2().map_err(|e| BackingError::Other(e.to_string()))?;
        let mut ptr = 0;
        // SAFETY: writes one device pointer through a valid pointer; the context is current.
        match relaxed(|| unsafe { alloc(&mut ptr, bytes) }) {
            CUresult::CUDA_SUCCESS => Ok(ptr),
            CUresult::CUDA_ERROR_OUT_OF_MEMORY => Err(BackingError::OutOfBackingMemory),
            code => Err(BackingError::Other(
                check(code, "cuMemAlloc_v2")
                    .err()
                    .map(|e| e.to_string())
                    .unwrap_or_default(),
            )),
        }
    }

    fn release(&self, addr: u64, _bytes: usize) {
        let _ = bind_raw(self.ctx.0);
        // SAFETY: `addr` is a segment this backing reserved; the pool releases it once, when no
        // block in it is allocated. cuMemFree synchronises with the device first.
        let _ = relaxed(|| unsafe { sys::cuMemFree_v2(addr) });
    }
}

/// Fences are timing-disabled CUDA events, recycled through a free list.
///
/// ```no_run
/// use cudrv::memory::pool::{Fence, FenceSource, StreamId};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// let fence = ctx.memory_pool().fence_source().record(StreamId(stream.raw() as u64));
/// stream.synchronize()?;
/// assert!(fence.is_complete());
/// # Ok::<(), cudrv::Error>(())
/// ```
#[derive(Debug)]
pub struct EventFences {
    ctx: RawContext,
    spare: Arc<Mutex<Vec<EventHandle>>>,
    /// Streams destroyed since their id was last seen alive: their work has finished (the stream
    /// was synchronised before it was destroyed), so a fence "on" them is complete at once.
    retired: Mutex<HashSet<u64>>,
}

#[derive(Debug)]
struct EventHandle(sys::CUevent);
// SAFETY: a CUevent handle may be used from any thread.
unsafe impl Send for EventHandle {}
// SAFETY: shared access only queries or records the event, which the driver allows concurrently.
unsafe impl Sync for EventHandle {}

/// A point in a stream's work: complete when the event has been reached.
///
/// ```no_run
/// use cudrv::memory::pool::{Fence, FenceSource, StreamId};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// let fences = ctx.memory_pool().fence_source();
/// let fence = fences.record(StreamId(stream.raw() as u64));
/// let other = ctx.new_stream()?;
/// fences.wait(&fence, StreamId(other.raw() as u64)); // `other` now runs after `stream`'s work so far
/// # Ok::<(), cudrv::Error>(())
/// ```
#[derive(Debug)]
pub struct EventFence {
    event: Option<EventHandle>,
    spare: Arc<Mutex<Vec<EventHandle>>>,
}

impl Fence for EventFence {
    fn is_complete(&self) -> bool {
        let Some(event) = &self.event else { return true };
        // SAFETY: the event is live (owned by this fence until drop).
        let code = unsafe { sys::cuEventQuery(event.0) };
        // Any error also means the event will never be pending again; treat as complete so a
        // broken context cannot wedge the pool.
        code != CUresult::CUDA_ERROR_NOT_READY
    }
}

impl Drop for EventFence {
    fn drop(&mut self) {
        if let Some(event) = self.event.take() {
            self.spare.lock().push(event);
        }
    }
}

impl FenceSource for EventFences {
    type F = EventFence;

    fn record(&self, stream: StreamId) -> EventFence {
        let done = EventFence {
            event: None,
            spare: self.spare.clone(),
        };
        if self.retired.lock().contains(&stream.0) {
            return done;
        }
        let event = match self.spare.lock().pop() {
            Some(e) => e,
            None => match create_event(self.ctx) {
                Some(e) => e,
                // Without an event the only safe answer is to wait for the stream now.
                None => {
                    // SAFETY: the stream id is a live stream handle of this context.
                    let _ = unsafe { sys::cuStreamSynchronize(stream.0 as sys::CUstream) };
                    return done;
                }
            },
        };
        // SAFETY: both handles are live; the stream id is a stream handle of this context.
        let code = unsafe { sys::cuEventRecord(event.0, stream.0 as sys::CUstream) };
        if code != CUresult::CUDA_SUCCESS {
            // SAFETY: as above; fall back to waiting so the fence is truthfully complete.
            let _ = unsafe { sys::cuStreamSynchronize(stream.0 as sys::CUstream) };
            self.spare.lock().push(event);
            return done;
        }
        EventFence {
            event: Some(event),
            spare: self.spare.clone(),
        }
    }

    fn wait(&self, fence: &EventFence, stream: StreamId) {
        let Some(event) = &fence.event else { return };
        // The null stream means the current context's: make it this pool's.
        let _ = bind_raw(self.ctx.0);
        // The driver's view: covers captures begun outside cudrv too.
        if crate::driver::stream_capturing(stream.0 as sys::CUstream) {
            // A capture cannot wait on an event recorded outside it (the wait would spoil the
            // capture, or become a wait node on a recycled event): finish the fence on the host,
            // once, before the recorded work is ever launched.
            // SAFETY: the event is live (owned by the fence).
            let _ = unsafe { sys::cuEventSynchronize(event.0) };
            return;
        }
        // SAFETY: the event is live (owned by the fence); the stream id is a live stream handle of
        // this context (the pool hands memory only to streams it is allocating on). The wait
        // captures the event's current record, so the event may be recycled afterwards.
        let code = unsafe { sys::cuStreamWaitEvent(stream.0 as sys::CUstream, event.0, 0) };
        if code != CUresult::CUDA_SUCCESS {
            // Without the device-side dependency, wait on the host so the memory is truly free.
            // SAFETY: as above.
            let _ = unsafe { sys::cuEventSynchronize(event.0) };
        }
    }
}

/// Runs `f` with this thread's capture mode relaxed, so that the pool's own `cuMemAlloc` and
/// `cuMemFree` (memory no recorded work uses yet) are allowed while a stream captures.
fn relaxed<R>(f: impl FnOnce() -> R) -> R {
    let mut mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED;
    // SAFETY: swaps this thread's mode through a valid pointer; restored below.
    let swapped = unsafe { sys::cuThreadExchangeStreamCaptureMode(&mut mode) } == CUresult::CUDA_SUCCESS;
    let out = f();
    if swapped {
        // SAFETY: as above: puts the previous mode back.
        let _ = unsafe { sys::cuThreadExchangeStreamCaptureMode(&mut mode) };
    }
    out
}

fn create_event(ctx: RawContext) -> Option<EventHandle> {
    bind_raw(ctx.0).ok()?;
    let mut event = ptr::null_mut();
    let flags = sys::CUevent_flags::CU_EVENT_DISABLE_TIMING.0;
    // SAFETY: writes one CUevent through a valid pointer; the context is current.
    unsafe { cu!(cuEventCreate(&mut event, flags)) }.ok()?;
    Some(EventHandle(event))
}

impl EventFences {
    /// Marks a stream as destroyed after its work finished, so later fences on its id complete.
    pub(crate) fn retire_stream(&self, stream: StreamId) {
        self.retired.lock().insert(stream.0);
    }

    /// Marks a (new) stream id as alive again: the driver may reuse a destroyed stream's handle.
    pub(crate) fn revive_stream(&self, stream: StreamId) {
        self.retired.lock().remove(&stream.0);
    }
}

impl Drop for EventFences {
    fn drop(&mut self) {
        let _ = bind_raw(self.ctx.0);
        for event in self.spare.lock().drain(..) {
            // SAFETY: spare events belong to no fence; each is destroyed once.
            let _ = unsafe { sys::cuEventDestroy_v2(event.0) };
        }
    }
}

/// A new pool for the context `raw`.
pub(crate) fn new_device_pool(raw: sys::CUcontext) -> DevicePool {
    let ctx = RawContext(raw);
    CachingPool::new(
        DriverBacking { ctx },
        EventFences {
            ctx,
            spare: Arc::new(Mutex::new(Vec::new())),
            retired: Mutex::new(HashSet::new()),
        },
    )
}
