//! Streams: ordered queues of device work.

use std::ptr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::capture::CaptureState;
use crate::context::Context;
use crate::driver::{check, cu};
use crate::error::Result;
use crate::event::Event;
use crate::memory::buffer::stream_id;
use crate::memory::device_pool::EventFence;
use crate::memory::pool::ShardHandle;
use crate::sys::{self, CUresult};
use once_cell::sync::OnceCell;

/// The driver's `CU_STREAM_PER_THREAD` handle.
const PER_THREAD_HANDLE: usize = 0x2;

/// How a new stream relates to the legacy default (NULL) stream.
///
/// ```no_run
/// use cudrv::StreamFlags;
/// let ctx = cudrv::Context::new(0)?;
/// // A stream that synchronizes with the legacy default stream, as CUDA runtime code may expect.
/// let s = ctx.new_stream_with(StreamFlags::Default, 0)?;
/// s.synchronize()?;
/// # Ok::<(), cudrv::Error>(())
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum StreamFlags {
    /// Work in the stream waits for, and is waited on by, the NULL stream.
    Default,
    /// The stream runs independently of the NULL stream.
    #[default]
    NonBlocking,
}

/// An ordered queue of device work in one context.
///
/// ```no_run
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// let buf = cudrv::DeviceBuffer::from_slice(&stream, &[1.0f32, 2.0, 3.0])?;
/// stream.synchronize()?;
/// # Ok::<(), cudrv::Error>(())
/// ```
#[derive(Debug)]
pub struct Stream {
    raw: sys::CUstream,
    /// Whether this is the driver's per-thread stream handle, which means a different stream on
    /// every thread: its memory bypasses the caching pool (whose reuse assumes one stream order).
    per_thread: bool,
    ctx: Arc<Context>,
    owned: bool,
    /// This stream's shard of the context's caching pool, looked up on first allocation.
    pool_shard: OnceCell<ShardHandle<EventFence>>,
    /// Whether a capture begun by cudrv is in progress (read on every buffer drop).
    pub(crate) capturing: AtomicBool,
    /// The capture in progress: memory its graph must keep.
    pub(crate) capture_state: Mutex<Option<CaptureState>>,
    /// CUPTI's id of this stream, looked up by the profiler on its first launch here.
    pub(crate) cupti_id: OnceCell<u32>,
}

// SAFETY: a CUstream handle may be used from any thread; the driver orders work on it.
unsafe impl Send for Stream {}
// SAFETY: as above; `&Stream` only passes the handle to the driver.
unsafe impl Sync for Stream {}

impl Stream {
    pub(crate) fn null(ctx: Arc<Context>) -> Self {
        Stream {
            raw: ptr::null_mut(),
            per_thread: false,
            ctx,
            owned: false,
            pool_shard: OnceCell::new(),
            capturing: AtomicBool::new(false),
            capture_state: Mutex::new(None),
            cupti_id: OnceCell::new(),
        }
    }

    pub(crate) fn create(ctx: Arc<Context>, flags: StreamFlags, priority: i32) -> Result<Self> {
        ctx.bind_to_thread()?;
        let flags = match flags {
            StreamFlags::Default => sys::CUstream_flags::CU_STREAM_DEFAULT.0,
            StreamFlags::NonBlocking => sys::CUstream_flags::CU_STREAM_NON_BLOCKING.0,
        };
        let mut raw = ptr::null_mut();
        // SAFETY: writes one CUstream through a valid pointer; the context is current. Destroyed
        // in Drop.
        unsafe { cu!(cuStreamCreateWithPriority(&mut raw, flags, priority))? };
        let stream = Stream {
            raw,
            per_thread: false,
            ctx,
            owned: true,
            pool_shard: OnceCell::new(),
            capturing: AtomicBool::new(false),
            capture_state: Mutex::new(None),
            cupti_id: OnceCell::new(),
        };
        // The driver may hand out the handle of a destroyed stream again.
        stream
            .ctx
            .memory_pool()
            .fence_source()
            .revive_stream(stream_id(&stream));
        Ok(stream)
    }

    /// Wraps a stream that was created elsewhere (another library, or the driver's
    /// `CU_STREAM_PER_THREAD` / `CU_STREAM_LEGACY` handles), so that cudrv's allocations, copies,
    /// launches and BLAS can run on it. The handle is not destroyed when the value drops.
    ///
    /// The caching pool keeps memory freed on this stream for later allocations on it, in stream
    /// order. A per-thread handle means a different stream on every thread, which no cache can
    /// order, so buffers on it are allocated and freed by the driver (`cuMemAllocAsync` /
    /// `cuMemFreeAsync`, ordered on the per-thread stream of the thread that makes the call).
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// // SAFETY: CU_STREAM_PER_THREAD is a valid handle for as long as the context lives.
    /// let per_thread = unsafe { cudrv::Stream::borrowed(ctx.clone(), 0x2 as cudrv::sys::CUstream) };
    /// let buf = cudrv::DeviceBuffer::from_slice(&std::sync::Arc::new(per_thread), &[1.0f32; 4])?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    ///
    /// # Safety
    /// `raw` must be a stream of `ctx` (or one of the driver's special handles) and stay alive as
    /// long as the returned value and any buffer allocated or freed on it.
    pub unsafe fn borrowed(ctx: Arc<Context>, raw: sys::CUstream) -> Self {
        let stream = Stream {
            raw,
            per_thread: raw as usize == PER_THREAD_HANDLE,
            ctx,
            owned: false,
            pool_shard: OnceCell::new(),
            capturing: AtomicBool::new(false),
            capture_state: Mutex::new(None),
            cupti_id: OnceCell::new(),
        };
        // The handle may be that of a stream the pool saw destroyed before.
        stream
            .ctx
            .memory_pool()
            .fence_source()
            .revive_stream(stream_id(&stream));
        stream
    }

    /// The driver's handle (NULL for the default stream).
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let s = ctx.new_stream()?;
    /// assert!(!s.raw().is_null());
    /// assert!(ctx.default_stream().raw().is_null());
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn raw(&self) -> sys::CUstream {
        self.raw
    }

    /// Whether this is the per-thread stream handle (its memory bypasses the caching pool).
    pub(crate) fn is_per_thread(&self) -> bool {
        self.per_thread
    }

    /// This stream's shard of the context's caching pool.
    pub(crate) fn pool_shard(&self) -> &ShardHandle<EventFence> {
        self.pool_shard
            .get_or_init(|| self.ctx.memory_pool().shard_handle(stream_id(self)))
    }

    /// The context the stream belongs to.
    ///
    /// ```no_run
    /// # use std::sync::Arc;
    /// let ctx = cudrv::Context::new(0)?;
    /// let s = ctx.new_stream()?;
    /// assert!(Arc::ptr_eq(s.context(), &ctx));
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }

    /// Waits until all work queued so far has finished.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// let x = cudrv::DeviceBuffer::<f32>::zeroed(&stream, 1 << 20)?;
    /// stream.synchronize()?; // the zeroing has finished
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn synchronize(&self) -> Result<()> {
        self.ctx.bind_to_thread()?;
        // SAFETY: the stream handle is live for as long as self.
        unsafe { cu!(cuStreamSynchronize(self.raw)) }
    }

    /// Waits until all work queued so far has finished, or `timeout` has passed: then
    /// [`Error::Timeout`](crate::Error::Timeout), with the work left running (a hung kernel no
    /// longer hangs the caller). Polls `cuStreamQuery` with a backoff up to 1 ms.
    ///
    /// The deadline bounds the wait for this stream, not for the driver: while another thread
    /// is in a call that synchronizes the whole device (a synchronous free such as
    /// `cuMemFree`/`cuMemFreeHost`, a context's teardown), the driver makes the query wait for
    /// that call, which itself waits for the device to go idle (seen on the H100).
    ///
    /// ```no_run
    /// # let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// stream.synchronize_timeout(std::time::Duration::from_secs(10))?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn synchronize_timeout(&self, timeout: std::time::Duration) -> Result<()> {
        crate::event::poll_until("the stream's work", timeout, || self.query())
    }

    /// Whether all work queued so far has finished, without waiting.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// while !stream.query()? {
    ///     std::thread::yield_now();
    /// }
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn query(&self) -> Result<bool> {
        self.ctx.bind_to_thread()?;
        let f = sys::resolve::cuStreamQuery()?;
        // SAFETY: the stream handle is live for as long as self.
        match unsafe { f(self.raw) } {
            CUresult::CUDA_SUCCESS => Ok(true),
            CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            code => check(code, "cuStreamQuery").map(|_| false),
        }
    }

    /// Makes later work on this stream wait until `event` has completed.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let (a, b) = (ctx.new_stream()?, ctx.new_stream()?);
    /// let done = a.record_event()?;
    /// b.wait(&done)?; // work queued on b from now on starts after a's work so far
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn wait(&self, event: &Event) -> Result<()> {
        self.ctx.bind_to_thread()?;
        // SAFETY: both handles are live; flags must be 0.
        unsafe { cu!(cuStreamWaitEvent(self.raw, event.raw(), 0)) }
    }

    /// Records a new timing-disabled event at the current end of this stream.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// let event = stream.record_event()?;
    /// event.synchronize()?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn record_event(&self) -> Result<Event> {
        let event = Event::new(&self.ctx, false)?;
        event.record(self)?;
        Ok(event)
    }

    /// Makes later work on this stream wait for everything queued so far on `other`.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let (a, b) = (ctx.new_stream()?, ctx.new_stream()?);
    /// b.join(&a)?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn join(&self, other: &Stream) -> Result<()> {
        if other.raw == self.raw {
            return Ok(());
        }
        self.wait(&other.record_event()?)
    }

    /// The stream's priority.
    ///
    /// ```no_run
    /// use cudrv::StreamFlags;
    /// let ctx = cudrv::Context::new(0)?;
    /// let (_, highest) = ctx.stream_priority_range()?;
    /// let s = ctx.new_stream_with(StreamFlags::NonBlocking, highest)?;
    /// assert_eq!(s.priority()?, highest);
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn priority(&self) -> Result<i32> {
        let mut p = 0;
        // SAFETY: writes one int through a valid pointer; the handle is live.
        unsafe { cu!(cuStreamGetPriority(self.raw, &mut p))? };
        Ok(p)
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        if self.owned {
            // The caching pool may later want a fence on this stream (for memory freed on it);
            // once its work is done and it is marked retired, such fences complete at once.
            let _ = self.synchronize();
            self.ctx.memory_pool().fence_source().retire_stream(stream_id(self));
            // SAFETY: the stream was created by this value and its work has finished. A failure
            // here leaves only a handle behind.
            let _ = unsafe { sys::cuStreamDestroy_v2(self.raw) };
        }
    }
}
