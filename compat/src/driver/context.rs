//! [`CudaContext`]: one device's context, served by a cudrv context.

use std::mem::size_of;
use std::ptr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use super::error::{DriverError, IntoDriver};
use super::event::CudaEvent;
use super::host::PinnedHostSlice;
use super::module::CudaModule;
use super::repr::DeviceRepr;
use super::stream::CudaStream;
use super::{cu, sys};

// ---------------------------------------------------------------------------------------------
// Context
// ---------------------------------------------------------------------------------------------

/// A device's primary context (cudarc's `CudaContext`), backed by [`cudrv::Context`].
///
/// ```no_run
/// use cudrv_compat::imp::driver::{sys, CudaContext};
/// let ctx = CudaContext::new(0)?;
/// let sms = ctx.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
/// println!("{} has {sms} SMs", ctx.name()?);
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
#[derive(Debug)]
pub struct CudaContext {
    pub(crate) inner: Arc<cudrv::Context>,
    pub(super) ordinal: usize,
    error: AtomicU32,
}

impl PartialEq for CudaContext {
    fn eq(&self, other: &Self) -> bool {
        self.inner.raw() == other.inner.raw()
    }
}
impl Eq for CudaContext {}

impl CudaContext {
    /// Retains device `ordinal`'s primary context and binds it to this thread.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let ctx = CudaContext::new(0)?; // device 0's primary context, bound to this thread
    /// assert_eq!(ctx.ordinal(), 0);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn new(ordinal: usize) -> Result<Arc<Self>, DriverError> {
        let inner = cudrv::Context::new(ordinal).drv()?;
        Ok(Arc::new(CudaContext {
            inner,
            ordinal,
            error: AtomicU32::new(0),
        }))
    }

    /// The cudrv context underneath, for mixing compat code with cudrv's own API.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// // Mix in cudrv's own API, e.g. its BLAS or memory statistics.
    /// println!("{:?}", ctx.cudrv().memory_stats());
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn cudrv(&self) -> &Arc<cudrv::Context> {
        &self.inner
    }

    /// Always `true`: compat contexts are primary contexts.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// assert!(ctx.is_primary());
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn is_primary(&self) -> bool {
        true
    }

    /// Whether the device supports stream-ordered allocation (`cuMemAllocAsync`).
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// println!("stream-ordered allocation: {}", ctx.has_async_alloc());
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn has_async_alloc(&self) -> bool {
        self.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)
            .map(|v| v != 0)
            .unwrap_or(false)
    }

    /// The number of CUDA devices.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// for i in 0..CudaContext::device_count()? {
    ///     println!("{i}: {}", CudaContext::new(i as usize)?.name()?);
    /// }
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn device_count() -> Result<i32, DriverError> {
        Ok(cudrv::Device::count().drv()? as i32)
    }

    /// The device's ordinal.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// assert_eq!(ctx.ordinal(), 0);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    /// The device's name.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// println!("{}", ctx.name()?);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn name(&self) -> Result<String, DriverError> {
        self.inner.device().name().drv()
    }

    /// The device's UUID.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let uuid = ctx.uuid()?;
    /// println!("{:?}", uuid.bytes);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn uuid(&self) -> Result<sys::CUuuid, DriverError> {
        let bytes = self.inner.device().uuid().drv()?;
        Ok(sys::CUuuid {
            bytes: bytes.map(|b| b as std::ffi::c_char),
        })
    }

    /// (major, minor) compute capability.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let (major, minor) = ctx.compute_capability()?;
    /// println!("sm_{major}{minor}");
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn compute_capability(&self) -> Result<(i32, i32), DriverError> {
        let (major, minor) = self.inner.compute_capability();
        Ok((major as i32, minor as i32))
    }

    /// Total device memory in bytes.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// println!("{} GiB", ctx.total_mem()? >> 30);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn total_mem(&self) -> Result<usize, DriverError> {
        self.inner.device().total_memory().drv()
    }

    /// (free, total) device memory in bytes.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let (free, total) = ctx.mem_get_info()?;
    /// assert!(free <= total);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn mem_get_info(&self) -> Result<(usize, usize), DriverError> {
        self.inner.memory_info().drv()
    }

    /// The driver's device handle.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let dev: sys::CUdevice = ctx.cu_device(); // for raw `result` calls
    /// # let _ = dev;
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn cu_device(&self) -> sys::CUdevice {
        self.inner.device().raw()
    }

    /// The driver's context handle.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// assert!(!ctx.cu_ctx().is_null());
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn cu_ctx(&self) -> sys::CUcontext {
        self.inner.raw()
    }

    /// Makes this context current on the calling thread (only if it is not already).
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let worker = {
    ///     let ctx = ctx.clone();
    ///     std::thread::spawn(move || ctx.bind_to_thread())
    /// };
    /// worker.join().unwrap()?;
    /// # Ok::<(), DriverError>(())
    /// ```
    #[inline]
    pub fn bind_to_thread(&self) -> Result<(), DriverError> {
        self.inner.bind_to_thread().drv()
    }

    /// A device attribute.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let warp = ctx.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_WARP_SIZE)?;
    /// assert_eq!(warp, 32);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn attribute(&self, attrib: sys::CUdevice_attribute) -> Result<i32, DriverError> {
        self.inner.device().attribute(attrib.into()).drv()
    }

    /// Waits for all work in the context.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let _zeros = stream.alloc_zeros::<f32>(1 << 20)?;
    /// ctx.synchronize()?;
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn synchronize(&self) -> Result<(), DriverError> {
        self.inner.synchronize().drv()
    }

    /// Makes host threads block (rather than spin) while they wait for the device.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// ctx.set_blocking_synchronize()?; // waits sleep instead of spinning a core
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn set_blocking_synchronize(&self) -> Result<(), DriverError> {
        self.set_flags(sys::CUctx_flags::CU_CTX_SCHED_BLOCKING_SYNC)
    }

    /// Sets the context's flags.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// ctx.set_flags(sys::CUctx_flags::CU_CTX_SCHED_YIELD)?;
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn set_flags(&self, flags: sys::CUctx_flags) -> Result<(), DriverError> {
        self.bind_to_thread()?;
        // SAFETY: a flags word; the context is current.
        unsafe { cu!(cuCtxSetFlags(flags as u32)) }
    }

    /// A context limit.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let stack = ctx.get_limit(sys::CUlimit::CU_LIMIT_STACK_SIZE)?;
    /// println!("{stack} B of stack per thread");
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn get_limit(&self, limit: sys::CUlimit) -> Result<usize, DriverError> {
        self.bind_to_thread()?;
        let mut value = 0;
        // SAFETY: writes one size_t through a valid pointer.
        unsafe { cu!(cuCtxGetLimit(&mut value, limit))? };
        Ok(value)
    }

    /// Sets a context limit.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// ctx.set_limit(sys::CUlimit::CU_LIMIT_PRINTF_FIFO_SIZE, 8 << 20)?;
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn set_limit(&self, limit: sys::CUlimit, value: usize) -> Result<(), DriverError> {
        self.bind_to_thread()?;
        // SAFETY: plain values; the context is current.
        unsafe { cu!(cuCtxSetLimit(limit, value)) }
    }

    /// The context's cache configuration.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// println!("{:?}", ctx.get_cache_config()?);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn get_cache_config(&self) -> Result<sys::CUfunc_cache, DriverError> {
        self.bind_to_thread()?;
        let mut config = sys::CUfunc_cache::CU_FUNC_CACHE_PREFER_NONE;
        // SAFETY: writes one enum value through a valid pointer.
        unsafe { cu!(cuCtxGetCacheConfig(&mut config))? };
        Ok(config)
    }

    /// Sets the context's cache configuration.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// ctx.set_cache_config(sys::CUfunc_cache::CU_FUNC_CACHE_PREFER_SHARED)?;
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn set_cache_config(&self, config: sys::CUfunc_cache) -> Result<(), DriverError> {
        self.bind_to_thread()?;
        // SAFETY: a plain value; the context is current.
        unsafe { cu!(cuCtxSetCacheConfig(config)) }
    }

    /// Always `false`: compat keeps no per-slice events (see MIGRATING.md); a slice used on a
    /// stream other than its own is ordered by a stream join instead.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// assert!(!ctx.is_in_multi_stream_mode());
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn is_in_multi_stream_mode(&self) -> bool {
        false
    }

    /// Always `false` (no per-slice events).
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// assert!(!ctx.is_event_tracking());
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn is_event_tracking(&self) -> bool {
        false
    }

    /// Always `true`: compat orders cross-stream uses of a slice itself.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// assert!(ctx.is_managing_stream_synchronization());
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn is_managing_stream_synchronization(&self) -> bool {
        true
    }

    /// Accepted for compatibility; compat has no per-slice events to enable.
    ///
    /// # Safety
    /// None beyond cudarc's contract; this does nothing.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// // SAFETY: a no-op kept for cudarc code that calls it.
    /// unsafe { ctx.enable_event_tracking() };
    /// # Ok::<(), DriverError>(())
    /// ```
    pub unsafe fn enable_event_tracking(&self) {}

    /// Accepted for compatibility; compat has no per-slice events to disable.
    ///
    /// # Safety
    /// None beyond cudarc's contract; this does nothing.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// // SAFETY: a no-op kept for cudarc code that calls it.
    /// unsafe { ctx.disable_event_tracking() };
    /// # Ok::<(), DriverError>(())
    /// ```
    pub unsafe fn disable_event_tracking(&self) {}

    /// Returns (and clears) the first error recorded by a drop or a guard since the last call.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// drop(stream.alloc_zeros::<u8>(16)?); // a failure while freeing is recorded, not panicked
    /// ctx.check_err()?;
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn check_err(&self) -> Result<(), DriverError> {
        match self.error.swap(0, Ordering::Relaxed) {
            0 => Ok(()),
            code => Err(DriverError(
                sys::CUresult::from_raw(code).unwrap_or(sys::CUresult::CUDA_ERROR_UNKNOWN),
            )),
        }
    }

    /// Records the error of `result`, if any, for [`check_err`](Self::check_err).
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// ctx.record_err(ctx.synchronize()); // report later, e.g. from a Drop impl
    /// ctx.check_err()?;
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn record_err<T>(&self, result: Result<T, DriverError>) {
        if let Err(e) = result {
            let _ = self
                .error
                .compare_exchange(0, e.0 as u32, Ordering::Relaxed, Ordering::Relaxed);
        }
    }

    /// A new event; `None` means `CU_EVENT_DISABLE_TIMING`, as in cudarc.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let start = ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))?; // timing enabled
    /// start.record(&stream)?;
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn new_event(self: &Arc<Self>, flags: Option<sys::CUevent_flags>) -> Result<CudaEvent, DriverError> {
        let flags = flags.unwrap_or(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING);
        self.bind_to_thread()?;
        let mut event = ptr::null_mut();
        // SAFETY: writes one handle through a valid pointer; destroyed in CudaEvent's Drop.
        unsafe { cu!(cuEventCreate(&mut event, flags as u32))? };
        Ok(CudaEvent {
            cu_event: event,
            ctx: self.clone(),
        })
    }

    /// The context's legacy default (NULL) stream.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let s = ctx.default_stream();
    /// s.synchronize()?;
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn default_stream(self: &Arc<Self>) -> Arc<CudaStream> {
        self.wrap(self.inner.default_stream())
    }

    /// The per-thread default stream (`CU_STREAM_PER_THREAD`). To the caching pool each value
    /// is its own stream: use it on the thread that asked for it.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let s = ctx.per_thread_stream();
    /// let x = s.alloc_zeros::<f32>(8)?;
    /// # drop(x);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn per_thread_stream(self: &Arc<Self>) -> Arc<CudaStream> {
        // SAFETY: CU_STREAM_PER_THREAD is valid in every context for as long as it lives, and the
        // stream keeps its context alive.
        unsafe { self.wrap_borrowed_stream(0x2 as sys::CUstream) }
    }

    /// Wraps a stream created elsewhere; it is not destroyed when dropped.
    ///
    /// # Safety
    /// `cu_stream` must be a live stream of this context and outlive the returned value and
    /// every slice allocated or freed on it.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let owner = ctx.new_stream()?;
    /// // SAFETY: `owner` outlives the borrowed handle's uses.
    /// let borrowed = unsafe { ctx.wrap_borrowed_stream(owner.cu_stream()) };
    /// borrowed.synchronize()?;
    /// # Ok::<(), DriverError>(())
    /// ```
    pub unsafe fn wrap_borrowed_stream(self: &Arc<Self>, cu_stream: sys::CUstream) -> Arc<CudaStream> {
        // SAFETY: forwarded: the caller guarantees the handle's lifetime and context.
        let inner = unsafe { cudrv::Stream::borrowed(self.inner.clone(), cu_stream) };
        self.wrap(Arc::new(inner))
    }

    /// A new non-blocking stream.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let s = ctx.new_stream()?;
    /// s.synchronize()?;
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn new_stream(self: &Arc<Self>) -> Result<Arc<CudaStream>, DriverError> {
        let inner = self.inner.new_stream().drv()?;
        Ok(self.wrap(inner))
    }

    /// A new non-blocking stream with a priority (lower numbers run first).
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let urgent = ctx.new_stream_with_priority(-1)?;
    /// urgent.synchronize()?;
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn new_stream_with_priority(self: &Arc<Self>, priority: i32) -> Result<Arc<CudaStream>, DriverError> {
        let inner = self
            .inner
            .new_stream_with(cudrv::StreamFlags::NonBlocking, priority)
            .drv()?;
        Ok(self.wrap(inner))
    }

    fn wrap(self: &Arc<Self>, inner: Arc<cudrv::Stream>) -> Arc<CudaStream> {
        Arc::new(CudaStream {
            cu_stream: inner.raw(),
            inner,
            ctx: self.clone(),
        })
    }

    /// Loads a module from PTX (source, file, or an nvrtc image) or a cubin.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let ptx = cudrv_compat::imp::nvrtc::Ptx::from_file("kernels.ptx");
    /// let module = ctx.load_module(ptx)?;
    /// let f = module.load_function("my_kernel")?;
    /// # let _ = f;
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn load_module(self: &Arc<Self>, ptx: crate::imp::nvrtc::Ptx) -> Result<Arc<CudaModule>, DriverError> {
        use crate::imp::nvrtc::PtxKind;
        let inner = match &ptx.0 {
            PtxKind::Src(src) => cudrv::Module::from_ptx(&self.inner, src, "<ptx>").drv()?,
            PtxKind::Image(bytes) | PtxKind::Binary(bytes) => {
                cudrv::Module::from_image(&self.inner, bytes, "<image>").drv()?
            }
            PtxKind::File(path) => cudrv::Module::from_file(&self.inner, path).drv()?,
        };
        Ok(Arc::new(CudaModule {
            inner,
            ctx: self.clone(),
        }))
    }

    /// Allocates `len` elements of page-locked, write-combined host memory.
    ///
    /// # Safety
    /// The memory is uninitialised; write it before reading it.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// // SAFETY: the contents are written before they are read.
    /// let mut host = unsafe { ctx.alloc_pinned::<f32>(1024) }?;
    /// host.as_mut_slice()?.fill(1.0);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub unsafe fn alloc_pinned<T: DeviceRepr>(self: &Arc<Self>, len: usize) -> Result<PinnedHostSlice<T>, DriverError> {
        // SAFETY: forwarded; the caller upholds the same contract.
        unsafe { self.alloc_pinned_with_flags(len, sys::CU_MEMHOSTALLOC_WRITECOMBINED) }
    }

    /// Allocates `len` elements of page-locked host memory with `cuMemHostAlloc` flags.
    ///
    /// # Safety
    /// The memory is uninitialised; write it before reading it.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// // SAFETY: the contents are written before they are read.
    /// let host = unsafe { ctx.alloc_pinned_with_flags::<u8>(4096, sys::CU_MEMHOSTALLOC_WRITECOMBINED) }?;
    /// # drop(host);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub unsafe fn alloc_pinned_with_flags<T: DeviceRepr>(
        self: &Arc<Self>,
        len: usize,
        flags: u32,
    ) -> Result<PinnedHostSlice<T>, DriverError> {
        let Some(bytes) = len.checked_mul(size_of::<T>()).filter(|b| *b < isize::MAX as usize) else {
            return Err(DriverError::with_detail(
                sys::CUresult::CUDA_ERROR_INVALID_VALUE,
                format!(
                    "pinned allocation of {len} elements of {} bytes overflows",
                    size_of::<T>()
                ),
            ));
        };
        self.bind_to_thread()?;
        let event = self.new_event(Some(sys::CUevent_flags::CU_EVENT_BLOCKING_SYNC))?;
        let mut host = ptr::null_mut();
        // SAFETY: writes one pointer through a valid pointer; freed in PinnedHostSlice's Drop.
        unsafe { cu!(cuMemHostAlloc(&mut host, bytes.max(1), flags))? };
        Ok(PinnedHostSlice {
            ptr: host.cast(),
            len,
            event,
        })
    }
}
