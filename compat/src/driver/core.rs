//! Contexts, streams, events, device memory, pinned host memory, modules and functions.

use std::collections::HashMap;
use std::ffi::CString;
use std::marker::PhantomData;
use std::mem::size_of;
use std::ops::{Bound, RangeBounds};
use std::ptr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use cudrv::DeviceSlice as _;

use super::error::{DriverError, IntoDriver};
use super::{cu, sys};

// ---------------------------------------------------------------------------------------------
// Marker traits
// ---------------------------------------------------------------------------------------------

/// A type that can be copied to device memory and passed to a kernel by value.
///
/// This is compat's own trait with cudarc's shape (no supertraits), not cudrv's
/// [`cudrv::DeviceRepr`] (which requires `Copy + 'static`): a cudarc user's
/// `unsafe impl DeviceRepr for MyStruct {}` keeps compiling whether or not the struct is `Copy`,
/// and `bool` / `i128` / `u128` stay implemented as in cudarc.
///
/// # Safety
/// The type's bytes must be what the device code expects (`#[repr(C)]` or a primitive), and
/// every bit pattern a kernel may write must be a valid value of the type.
///
/// ```
/// #[derive(Clone, Copy)]
/// #[repr(C)]
/// struct Params { n: u32, scale: f32 }
/// // SAFETY: repr(C) plain data; every bit pattern is a valid Params.
/// unsafe impl cudrv_compat::driver::DeviceRepr for Params {}
/// ```
pub unsafe trait DeviceRepr {}

/// A type for which all-zero bytes are a valid value (so `alloc_zeros` may produce it).
///
/// # Safety
/// All-zero bytes must be a valid value of the type.
pub unsafe trait ValidAsZeroBits {}

macro_rules! plain {
    ($($t:ty),*) => {$(
        // SAFETY: a primitive: fixed layout, zero is a valid value.
        unsafe impl DeviceRepr for $t {}
        // SAFETY: as above.
        unsafe impl ValidAsZeroBits for $t {}
    )*};
}
plain!(
    bool,
    i8,
    i16,
    i32,
    i64,
    i128,
    isize,
    u8,
    u16,
    u32,
    u64,
    u128,
    usize,
    f32,
    f64,
    half::f16,
    half::bf16
);

// SAFETY: an array of device-representable values has the element's layout, repeated.
unsafe impl<T: DeviceRepr, const N: usize> DeviceRepr for [T; N] {}
// SAFETY: an array of zeroable values is zeroable.
unsafe impl<T: ValidAsZeroBits, const N: usize> ValidAsZeroBits for [T; N] {}

macro_rules! zero_tuples {
    ($($t:ident),+) => {
        // SAFETY: a tuple of zeroable values is zeroable.
        unsafe impl<$($t: ValidAsZeroBits),+> ValidAsZeroBits for ($($t,)+) {}
    };
}
zero_tuples!(A);
zero_tuples!(A, B);
zero_tuples!(A, B, C);
zero_tuples!(A, B, C, D);
zero_tuples!(A, B, C, D, E);
zero_tuples!(A, B, C, D, E, F);
zero_tuples!(A, B, C, D, E, F, G);
zero_tuples!(A, B, C, D, E, F, G, H);
zero_tuples!(A, B, C, D, E, F, G, H, I);
zero_tuples!(A, B, C, D, E, F, G, H, I, J);
zero_tuples!(A, B, C, D, E, F, G, H, I, J, K);
zero_tuples!(A, B, C, D, E, F, G, H, I, J, K, L);

// ---------------------------------------------------------------------------------------------
// Context
// ---------------------------------------------------------------------------------------------

/// A device's primary context (cudarc's `CudaContext`), backed by [`cudrv::Context`].
///
/// ```no_run
/// use cudrv_compat::driver::{sys, CudaContext};
/// let ctx = CudaContext::new(0)?;
/// let sms = ctx.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
/// println!("{} has {sms} SMs", ctx.name()?);
/// # Ok::<(), cudrv_compat::driver::DriverError>(())
/// ```
#[derive(Debug)]
pub struct CudaContext {
    pub(crate) inner: Arc<cudrv::Context>,
    ordinal: usize,
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
    pub fn new(ordinal: usize) -> Result<Arc<Self>, DriverError> {
        let inner = cudrv::Context::new(ordinal).drv()?;
        Ok(Arc::new(CudaContext {
            inner,
            ordinal,
            error: AtomicU32::new(0),
        }))
    }

    /// The cudrv context underneath, for mixing compat code with cudrv's own API.
    pub fn cudrv(&self) -> &Arc<cudrv::Context> {
        &self.inner
    }

    /// Always `true`: compat contexts are primary contexts.
    pub fn is_primary(&self) -> bool {
        true
    }

    /// Whether the device supports stream-ordered allocation (`cuMemAllocAsync`).
    pub fn has_async_alloc(&self) -> bool {
        self.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)
            .map(|v| v != 0)
            .unwrap_or(false)
    }

    /// The number of CUDA devices.
    pub fn device_count() -> Result<i32, DriverError> {
        Ok(cudrv::Device::count().drv()? as i32)
    }

    /// The device's ordinal.
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    /// The device's name.
    pub fn name(&self) -> Result<String, DriverError> {
        self.inner.device().name().drv()
    }

    /// The device's UUID.
    pub fn uuid(&self) -> Result<sys::CUuuid, DriverError> {
        let bytes = self.inner.device().uuid().drv()?;
        Ok(sys::CUuuid {
            bytes: bytes.map(|b| b as std::ffi::c_char),
        })
    }

    /// (major, minor) compute capability.
    pub fn compute_capability(&self) -> Result<(i32, i32), DriverError> {
        let (major, minor) = self.inner.compute_capability();
        Ok((major as i32, minor as i32))
    }

    /// Total device memory in bytes.
    pub fn total_mem(&self) -> Result<usize, DriverError> {
        self.inner.device().total_memory().drv()
    }

    /// (free, total) device memory in bytes.
    pub fn mem_get_info(&self) -> Result<(usize, usize), DriverError> {
        self.inner.memory_info().drv()
    }

    /// The driver's device handle.
    pub fn cu_device(&self) -> sys::CUdevice {
        self.inner.device().raw()
    }

    /// The driver's context handle.
    pub fn cu_ctx(&self) -> sys::CUcontext {
        self.inner.raw()
    }

    /// Makes this context current on the calling thread (only if it is not already).
    #[inline]
    pub fn bind_to_thread(&self) -> Result<(), DriverError> {
        self.inner.bind_to_thread().drv()
    }

    /// A device attribute.
    pub fn attribute(&self, attrib: sys::CUdevice_attribute) -> Result<i32, DriverError> {
        self.inner.device().attribute(attrib).drv()
    }

    /// Waits for all work in the context.
    pub fn synchronize(&self) -> Result<(), DriverError> {
        self.inner.synchronize().drv()
    }

    /// Makes host threads block (rather than spin) while they wait for the device.
    pub fn set_blocking_synchronize(&self) -> Result<(), DriverError> {
        self.set_flags(sys::CUctx_flags::CU_CTX_SCHED_BLOCKING_SYNC)
    }

    /// Sets the context's flags.
    pub fn set_flags(&self, flags: sys::CUctx_flags) -> Result<(), DriverError> {
        self.bind_to_thread()?;
        // SAFETY: a flags word; the context is current.
        unsafe { cu!(cuCtxSetFlags(flags.0)) }
    }

    /// A context limit.
    pub fn get_limit(&self, limit: sys::CUlimit) -> Result<usize, DriverError> {
        self.bind_to_thread()?;
        let mut value = 0;
        // SAFETY: writes one size_t through a valid pointer.
        unsafe { cu!(cuCtxGetLimit(&mut value, limit))? };
        Ok(value)
    }

    /// Sets a context limit.
    pub fn set_limit(&self, limit: sys::CUlimit, value: usize) -> Result<(), DriverError> {
        self.bind_to_thread()?;
        // SAFETY: plain values; the context is current.
        unsafe { cu!(cuCtxSetLimit(limit, value)) }
    }

    /// The context's cache configuration.
    pub fn get_cache_config(&self) -> Result<sys::CUfunc_cache, DriverError> {
        self.bind_to_thread()?;
        let mut config = sys::CUfunc_cache::CU_FUNC_CACHE_PREFER_NONE;
        // SAFETY: writes one enum value through a valid pointer.
        unsafe { cu!(cuCtxGetCacheConfig(&mut config))? };
        Ok(config)
    }

    /// Sets the context's cache configuration.
    pub fn set_cache_config(&self, config: sys::CUfunc_cache) -> Result<(), DriverError> {
        self.bind_to_thread()?;
        // SAFETY: a plain value; the context is current.
        unsafe { cu!(cuCtxSetCacheConfig(config)) }
    }

    /// Always `false`: compat keeps no per-slice events (see MIGRATING.md); a slice used on a
    /// stream other than its own is ordered by a stream join instead.
    pub fn is_in_multi_stream_mode(&self) -> bool {
        false
    }

    /// Always `false` (no per-slice events).
    pub fn is_event_tracking(&self) -> bool {
        false
    }

    /// Always `true`: compat orders cross-stream uses of a slice itself.
    pub fn is_managing_stream_synchronization(&self) -> bool {
        true
    }

    /// Accepted for compatibility; compat has no per-slice events to enable.
    ///
    /// # Safety
    /// None beyond cudarc's contract; this does nothing.
    pub unsafe fn enable_event_tracking(&self) {}

    /// Accepted for compatibility; compat has no per-slice events to disable.
    ///
    /// # Safety
    /// None beyond cudarc's contract; this does nothing.
    pub unsafe fn disable_event_tracking(&self) {}

    /// Returns (and clears) the first error recorded by a drop or a guard since the last call.
    pub fn check_err(&self) -> Result<(), DriverError> {
        match self.error.swap(0, Ordering::Relaxed) {
            0 => Ok(()),
            code => Err(DriverError(sys::CUresult(code))),
        }
    }

    /// Records the error of `result`, if any, for [`check_err`](Self::check_err).
    pub fn record_err<T>(&self, result: Result<T, DriverError>) {
        if let Err(e) = result {
            let _ = self
                .error
                .compare_exchange(0, e.0 .0, Ordering::Relaxed, Ordering::Relaxed);
        }
    }

    /// A new event; `None` means `CU_EVENT_DISABLE_TIMING`, as in cudarc.
    pub fn new_event(self: &Arc<Self>, flags: Option<sys::CUevent_flags>) -> Result<CudaEvent, DriverError> {
        let flags = flags.unwrap_or(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING);
        self.bind_to_thread()?;
        let mut event = ptr::null_mut();
        // SAFETY: writes one handle through a valid pointer; destroyed in CudaEvent's Drop.
        unsafe { cu!(cuEventCreate(&mut event, flags.0))? };
        Ok(CudaEvent {
            cu_event: event,
            ctx: self.clone(),
        })
    }

    /// The context's legacy default (NULL) stream.
    pub fn default_stream(self: &Arc<Self>) -> Arc<CudaStream> {
        self.wrap(self.inner.default_stream())
    }

    /// The per-thread default stream (`CU_STREAM_PER_THREAD`). To the caching pool each value
    /// is its own stream: use it on the thread that asked for it.
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
    pub unsafe fn wrap_borrowed_stream(self: &Arc<Self>, cu_stream: sys::CUstream) -> Arc<CudaStream> {
        // SAFETY: forwarded: the caller guarantees the handle's lifetime and context.
        let inner = unsafe { cudrv::Stream::borrowed(self.inner.clone(), cu_stream) };
        self.wrap(Arc::new(inner))
    }

    /// A new non-blocking stream.
    pub fn new_stream(self: &Arc<Self>) -> Result<Arc<CudaStream>, DriverError> {
        let inner = self.inner.new_stream().drv()?;
        Ok(self.wrap(inner))
    }

    /// A new non-blocking stream with a priority (lower numbers run first).
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
    pub unsafe fn alloc_pinned<T: DeviceRepr>(self: &Arc<Self>, len: usize) -> Result<PinnedHostSlice<T>, DriverError> {
        // SAFETY: forwarded; the caller upholds the same contract.
        unsafe { self.alloc_pinned_with_flags(len, sys::CU_MEMHOSTALLOC_WRITECOMBINED) }
    }

    /// Allocates `len` elements of page-locked host memory with `cuMemHostAlloc` flags.
    ///
    /// # Safety
    /// The memory is uninitialised; write it before reading it.
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

// ---------------------------------------------------------------------------------------------
// Events
// ---------------------------------------------------------------------------------------------

/// A CUDA event (cudarc's `CudaEvent`).
#[derive(Debug)]
pub struct CudaEvent {
    cu_event: sys::CUevent,
    ctx: Arc<CudaContext>,
}

// SAFETY: an event handle may be used from any thread.
unsafe impl Send for CudaEvent {}
// SAFETY: as above; `&CudaEvent` only passes the handle to the driver.
unsafe impl Sync for CudaEvent {}

impl Drop for CudaEvent {
    fn drop(&mut self) {
        self.ctx.record_err(self.ctx.bind_to_thread());
        // SAFETY: created by this value and destroyed once.
        self.ctx.record_err(unsafe { cu!(cuEventDestroy_v2(self.cu_event)) });
    }
}

impl CudaEvent {
    /// The driver's handle.
    pub fn cu_event(&self) -> sys::CUevent {
        self.cu_event
    }

    /// The context the event belongs to.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// Records the work queued so far on `stream`.
    pub fn record(&self, stream: &CudaStream) -> Result<(), DriverError> {
        if self.ctx != stream.ctx {
            return Err(DriverError(sys::CUresult::CUDA_ERROR_INVALID_CONTEXT));
        }
        self.ctx.bind_to_thread()?;
        // SAFETY: both handles are live and of the same context.
        unsafe { cu!(cuEventRecord(self.cu_event, stream.cu_stream)) }
    }

    /// Waits for the recorded work.
    pub fn synchronize(&self) -> Result<(), DriverError> {
        self.ctx.bind_to_thread()?;
        // SAFETY: a live event.
        unsafe { cu!(cuEventSynchronize(self.cu_event)) }
    }

    /// Milliseconds from `self` to `end` (both need timing, i.e. not `CU_EVENT_DISABLE_TIMING`).
    pub fn elapsed_ms(&self, end: &Self) -> Result<f32, DriverError> {
        if self.ctx != end.ctx {
            return Err(DriverError(sys::CUresult::CUDA_ERROR_INVALID_CONTEXT));
        }
        self.synchronize()?;
        end.synchronize()?;
        let mut ms = 0.0f32;
        // SAFETY: writes one float; both events are live and complete.
        unsafe { cu!(cuEventElapsedTime(&mut ms, self.cu_event, end.cu_event))? };
        Ok(ms)
    }

    /// Whether the recorded work has completed (`false` on errors too).
    pub fn is_complete(&self) -> bool {
        self.try_is_complete().unwrap_or(false)
    }

    /// Whether the recorded work has completed.
    pub fn try_is_complete(&self) -> Result<bool, DriverError> {
        self.ctx.bind_to_thread()?;
        // SAFETY: a live event.
        match unsafe { cu!(cuEventQuery(self.cu_event)) } {
            Ok(()) => Ok(true),
            Err(DriverError(sys::CUresult::CUDA_ERROR_NOT_READY)) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Streams
// ---------------------------------------------------------------------------------------------

/// A stream of work on a context (cudarc's `CudaStream`), backed by [`cudrv::Stream`].
#[derive(Debug)]
pub struct CudaStream {
    pub(crate) cu_stream: sys::CUstream,
    /// cudrv's stream (owns the handle unless the stream was borrowed).
    pub(crate) inner: Arc<cudrv::Stream>,
    pub(crate) ctx: Arc<CudaContext>,
}

// SAFETY: a stream handle may be used from any thread; the driver orders work on it.
unsafe impl Send for CudaStream {}
// SAFETY: as above.
unsafe impl Sync for CudaStream {}

impl PartialEq for CudaStream {
    fn eq(&self, other: &Self) -> bool {
        self.cu_stream == other.cu_stream && self.ctx == other.ctx
    }
}
impl Eq for CudaStream {}

impl CudaStream {
    /// A new non-blocking stream whose work starts after the work queued so far on this one.
    pub fn fork(&self) -> Result<Arc<Self>, DriverError> {
        let stream = self.ctx.new_stream()?;
        stream.join(self)?;
        Ok(stream)
    }

    /// The driver's handle (NULL for the default stream).
    pub fn cu_stream(&self) -> sys::CUstream {
        self.cu_stream
    }

    /// The stream's context.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The cudrv stream underneath.
    pub fn cudrv(&self) -> &Arc<cudrv::Stream> {
        &self.inner
    }

    /// Waits for the work queued on this stream.
    pub fn synchronize(&self) -> Result<(), DriverError> {
        self.ctx.bind_to_thread()?;
        // SAFETY: a live stream of the current context.
        unsafe { cu!(cuStreamSynchronize(self.cu_stream)) }
    }

    /// Records an event after the work queued so far (`None` flags: timing disabled).
    pub fn record_event(&self, flags: Option<sys::CUevent_flags>) -> Result<CudaEvent, DriverError> {
        let event = self.ctx.new_event(flags)?;
        event.record(self)?;
        Ok(event)
    }

    /// Makes later work on this stream wait for `event`.
    pub fn wait(&self, event: &CudaEvent) -> Result<(), DriverError> {
        self.ctx.bind_to_thread()?;
        // SAFETY: both handles are live.
        unsafe { cu!(cuStreamWaitEvent(self.cu_stream, event.cu_event, 0)) }
    }

    /// Makes later work on this stream wait for the work queued so far on `other`.
    pub fn join(&self, other: &CudaStream) -> Result<(), DriverError> {
        let event = other.record_event(None)?;
        self.wait(&event)
    }

    /// A zero-length slice on this stream.
    pub fn null<T>(self: &Arc<Self>) -> Result<CudaSlice<T>, DriverError> {
        Ok(CudaSlice {
            ptr: 0,
            len: 0,
            storage: Storage::Empty,
            stream: self.clone(),
            _marker: PhantomData,
        })
    }

    /// Allocates `len` uninitialised elements, stream-ordered, from cudrv's caching pool.
    ///
    /// # Safety
    /// The contents are uninitialised; write them before reading them.
    pub unsafe fn alloc<T: DeviceRepr>(self: &Arc<Self>, len: usize) -> Result<CudaSlice<T>, DriverError> {
        let Some(bytes) = len.checked_mul(size_of::<T>()) else {
            return Err(DriverError::with_detail(
                sys::CUresult::CUDA_ERROR_INVALID_VALUE,
                format!("an allocation of {len} elements of {} bytes overflows", size_of::<T>()),
            ));
        };
        // SAFETY: uninitialised memory is the caller's contract.
        let buf = unsafe { cudrv::DeviceBuffer::<u8>::uninit(&self.inner, bytes).drv()? };
        let (ptr, storage) = (buf.device_ptr(), Storage::Pool(buf));
        Ok(CudaSlice {
            ptr,
            len,
            storage,
            stream: self.clone(),
            _marker: PhantomData,
        })
    }

    /// Allocates `len` zeroed elements.
    pub fn alloc_zeros<T: DeviceRepr + ValidAsZeroBits>(
        self: &Arc<Self>,
        len: usize,
    ) -> Result<CudaSlice<T>, DriverError> {
        // SAFETY: zeroed below before anyone can read it; zero bits are a valid T.
        let mut dst = unsafe { self.alloc(len) }?;
        self.memset_zeros(&mut dst)?;
        Ok(dst)
    }

    /// Sets every byte of `dst` to zero (queued on this stream).
    pub fn memset_zeros<T: DeviceRepr + ValidAsZeroBits, Dst: DevicePtrMut<T>>(
        self: &Arc<Self>,
        dst: &mut Dst,
    ) -> Result<(), DriverError> {
        let bytes = dst.num_bytes();
        if bytes == 0 {
            return Ok(());
        }
        self.ctx.bind_to_thread()?;
        let (ptr, _guard) = dst.device_ptr_mut(self);
        // SAFETY: the range is live and `bytes` long; written through &mut.
        unsafe { cu!(cuMemsetD8Async(ptr, 0, bytes, self.cu_stream)) }
    }

    /// Copies host data into a new device slice (deprecated in cudarc in favour of `clone_htod`).
    pub fn memcpy_stod<T: DeviceRepr, Src: HostSlice<T> + ?Sized>(
        self: &Arc<Self>,
        src: &Src,
    ) -> Result<CudaSlice<T>, DriverError> {
        self.clone_htod(src)
    }

    /// Copies host data into a new device slice.
    pub fn clone_htod<T: DeviceRepr, Src: HostSlice<T> + ?Sized>(
        self: &Arc<Self>,
        src: &Src,
    ) -> Result<CudaSlice<T>, DriverError> {
        // SAFETY: every element is written by the copy below before it can be read.
        let mut dst = unsafe { self.alloc(src.len()) }?;
        self.memcpy_htod(src, &mut dst)?;
        Ok(dst)
    }

    /// Copies `src` into the start of `dst` (queued; a pageable source may be reused at once).
    pub fn memcpy_htod<T: DeviceRepr, Src: HostSlice<T> + ?Sized, Dst: DevicePtrMut<T>>(
        self: &Arc<Self>,
        src: &Src,
        dst: &mut Dst,
    ) -> Result<(), DriverError> {
        check_room("memcpy_htod", dst.len(), src.len())?;
        if src.is_empty() {
            return Ok(());
        }
        self.ctx.bind_to_thread()?;
        // SAFETY: the host slice is used with this stream only.
        let (host, _host_guard) = unsafe { src.stream_synced_slice(self) };
        let (dptr, _dst_guard) = dst.device_ptr_mut(self);
        // SAFETY: `host` holds len elements, the device range has room for them; for pageable
        // memory the driver has staged the source when the call returns, and pinned sources
        // record an event through their guard.
        unsafe {
            cu!(cuMemcpyHtoDAsync_v2(
                dptr,
                host.as_ptr().cast(),
                std::mem::size_of_val(host),
                self.cu_stream
            ))
        }
    }

    /// Copies a device slice into a new `Vec` (deprecated in cudarc in favour of `clone_dtoh`).
    pub fn memcpy_dtov<T: DeviceRepr, Src: DevicePtr<T>>(self: &Arc<Self>, src: &Src) -> Result<Vec<T>, DriverError> {
        self.clone_dtoh(src)
    }

    /// Copies a device slice into a new `Vec`; returns when the data is there.
    pub fn clone_dtoh<T: DeviceRepr, Src: DevicePtr<T>>(self: &Arc<Self>, src: &Src) -> Result<Vec<T>, DriverError> {
        let len = src.len();
        let mut out = Vec::<T>::with_capacity(len);
        if len > 0 {
            self.ctx.bind_to_thread()?;
            {
                let (dptr, _guard) = src.device_ptr(self);
                // SAFETY: `out` has capacity for len elements; the device range holds them.
                unsafe {
                    cu!(cuMemcpyDtoHAsync_v2(
                        out.as_mut_ptr().cast(),
                        dptr,
                        len * size_of::<T>(),
                        self.cu_stream
                    ))?
                };
            }
            self.synchronize()?;
            // SAFETY: the copy has completed and wrote all len elements (DeviceRepr: any bytes
            // the device holds are a valid T).
            unsafe { out.set_len(len) };
        }
        Ok(out)
    }

    /// Copies `src` into the start of `dst`; returns when the data is there (pageable
    /// destinations) or records an event that host access waits for (pinned destinations).
    pub fn memcpy_dtoh<T: DeviceRepr, Src: DevicePtr<T>, Dst: HostSlice<T> + ?Sized>(
        self: &Arc<Self>,
        src: &Src,
        dst: &mut Dst,
    ) -> Result<(), DriverError> {
        check_room("memcpy_dtoh", dst.len(), src.len())?;
        if src.is_empty() {
            return Ok(());
        }
        self.ctx.bind_to_thread()?;
        let (dptr, _src_guard) = src.device_ptr(self);
        // SAFETY: the host slice is used with this stream only.
        let (host, _host_guard) = unsafe { dst.stream_synced_mut_slice(self) };
        // SAFETY: `host` has room for src.len() elements; its guard synchronizes the stream (or
        // records the pinned buffer's event) before the host can touch it again.
        unsafe {
            cu!(cuMemcpyDtoHAsync_v2(
                host.as_mut_ptr().cast(),
                dptr,
                src.num_bytes(),
                self.cu_stream
            ))
        }
    }

    /// Copies `src` into the start of `dst` on this stream (peer copy across contexts).
    pub fn memcpy_dtod<T, Src: DevicePtr<T>, Dst: DevicePtrMut<T>>(
        self: &Arc<Self>,
        src: &Src,
        dst: &mut Dst,
    ) -> Result<(), DriverError> {
        check_room("memcpy_dtod", dst.len(), src.len())?;
        let bytes = src.num_bytes();
        if bytes == 0 {
            return Ok(());
        }
        self.ctx.bind_to_thread()?;
        let src_ctx = src.stream().ctx.clone();
        let dst_ctx = dst.stream().ctx.clone();
        let (sptr, _src_guard) = src.device_ptr(self);
        let (dptr, _dst_guard) = dst.device_ptr_mut(self);
        if src_ctx == dst_ctx {
            // SAFETY: both ranges are live and at least `bytes` long.
            unsafe { cu!(cuMemcpyDtoDAsync_v2(dptr, sptr, bytes, self.cu_stream)) }
        } else {
            // SAFETY: as above, across two live contexts.
            unsafe {
                cu!(cuMemcpyPeerAsync(
                    dptr,
                    dst_ctx.cu_ctx(),
                    sptr,
                    src_ctx.cu_ctx(),
                    bytes,
                    self.cu_stream
                ))
            }
        }
    }

    /// Copies a device slice into a new one on this stream.
    pub fn clone_dtod<T: DeviceRepr, Src: DevicePtr<T>>(
        self: &Arc<Self>,
        src: &Src,
    ) -> Result<CudaSlice<T>, DriverError> {
        // SAFETY: every element is written by the copy below before it can be read.
        let mut dst = unsafe { self.alloc(src.len()) }?;
        self.memcpy_dtod(src, &mut dst)?;
        Ok(dst)
    }

    /// Takes ownership of device memory (for example from [`CudaSlice::leak`]).
    ///
    /// # Safety
    /// `cu_device_ptr` must be a live allocation of at least `len * size_of::<T>()` bytes, from
    /// `CudaSlice::leak` or `cuMemAlloc`/`cuMemAllocAsync`, owned by nobody else.
    pub unsafe fn upgrade_device_ptr<T>(self: &Arc<Self>, cu_device_ptr: sys::CUdeviceptr, len: usize) -> CudaSlice<T> {
        let storage = match leaked()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&cu_device_ptr)
        {
            Some(buf) => Storage::Pool(buf),
            None if cu_device_ptr == 0 => Storage::Empty,
            None => Storage::Raw,
        };
        CudaSlice {
            ptr: cu_device_ptr,
            len,
            storage,
            stream: self.clone(),
            _marker: PhantomData,
        }
    }
}

fn check_room(what: &str, dst: usize, src: usize) -> Result<(), DriverError> {
    if dst < src {
        return Err(DriverError::with_detail(
            sys::CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("{what}: the destination has {dst} elements, the source {src}"),
        ));
    }
    Ok(())
}

/// Pool buffers given up by [`CudaSlice::leak`], kept until `upgrade_device_ptr` takes them back.
fn leaked() -> &'static Mutex<HashMap<sys::CUdeviceptr, cudrv::DeviceBuffer<u8>>> {
    static LEAKED: OnceLock<Mutex<HashMap<sys::CUdeviceptr, cudrv::DeviceBuffer<u8>>>> = OnceLock::new();
    LEAKED.get_or_init(Default::default)
}

// ---------------------------------------------------------------------------------------------
// Device memory
// ---------------------------------------------------------------------------------------------

/// Where a slice's memory came from.
#[derive(Debug)]
pub(crate) enum Storage {
    /// Nothing to free.
    Empty,
    /// A buffer of cudrv's caching pool (returns to its stream's cache on drop).
    Pool(cudrv::DeviceBuffer<u8>),
    /// A raw allocation, freed with `cuMemFreeAsync` on the slice's stream.
    Raw,
}

impl Storage {
    fn buffer(&self) -> Option<&cudrv::DeviceBuffer<u8>> {
        match self {
            Storage::Pool(b) => Some(b),
            _ => None,
        }
    }
}

/// An owned array of `T` in device memory (cudarc's `CudaSlice`).
///
/// Allocated and freed in order on its stream, from cudrv's caching pool.
#[derive(Debug)]
pub struct CudaSlice<T> {
    pub(crate) ptr: sys::CUdeviceptr,
    pub(crate) len: usize,
    pub(crate) storage: Storage,
    pub(crate) stream: Arc<CudaStream>,
    _marker: PhantomData<*const T>,
}

// SAFETY: the slice owns its device memory; the stream handle may be used from any thread.
unsafe impl<T> Send for CudaSlice<T> {}
// SAFETY: `&CudaSlice` allows only reads and stream-ordered copies.
unsafe impl<T> Sync for CudaSlice<T> {}

impl<T> Drop for CudaSlice<T> {
    fn drop(&mut self) {
        if let Storage::Raw = self.storage {
            let ctx = &self.stream.ctx;
            ctx.record_err(ctx.bind_to_thread());
            // SAFETY: owned by this slice and freed once, in order on its stream.
            ctx.record_err(unsafe { cu!(cuMemFreeAsync(self.ptr, self.stream.cu_stream)) });
        }
        // Pool storage returns to the cache when the DeviceBuffer drops.
    }
}

impl<T> CudaSlice<T> {
    /// The slice's device-pointer field (what a kernel parameter points at), for the other
    /// era's `DevicePtr`, which hands out a reference to it.
    #[doc(hidden)]
    pub fn device_ptr_ref(&self) -> &sys::CUdeviceptr {
        &self.ptr
    }

    /// The device-pointer field, mutable (the other era's `DevicePtrMut` hands it out). What the
    /// slice frees is kept apart from it.
    #[doc(hidden)]
    pub fn device_ptr_mut_ref(&mut self) -> &mut sys::CUdeviceptr {
        &mut self.ptr
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// The size in bytes.
    pub fn num_bytes(&self) -> usize {
        self.len * size_of::<T>()
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device ordinal.
    pub fn ordinal(&self) -> usize {
        self.stream.ctx.ordinal
    }

    /// The context.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.stream.ctx
    }

    /// The stream the slice was allocated on (its frees are ordered there).
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// A view of the whole slice.
    pub fn as_view(&self) -> CudaView<'_, T> {
        CudaView {
            ptr: self.ptr,
            len: self.len,
            stream: &self.stream,
            buf: self.storage.buffer(),
            _marker: PhantomData,
        }
    }

    /// A writable view of the whole slice.
    pub fn as_view_mut(&mut self) -> CudaViewMut<'_, T> {
        CudaViewMut {
            ptr: self.ptr,
            len: self.len,
            stream: &self.stream,
            buf: self.storage.buffer(),
            _marker: PhantomData,
        }
    }

    /// A view of `bounds`.
    ///
    /// # Panics
    /// If the range is outside the slice (as in cudarc; use [`try_slice`](Self::try_slice)).
    pub fn slice(&self, bounds: impl RangeBounds<usize>) -> CudaView<'_, T> {
        self.try_slice(bounds).expect("slice range out of bounds")
    }

    /// A view of `bounds`, or `None` if the range is outside the slice.
    pub fn try_slice(&self, bounds: impl RangeBounds<usize>) -> Option<CudaView<'_, T>> {
        let (start, end) = to_range(bounds, self.len)?;
        Some(self.as_view().resized(start, end))
    }

    /// A writable view of `bounds`.
    ///
    /// # Panics
    /// If the range is outside the slice (as in cudarc).
    pub fn slice_mut(&mut self, bounds: impl RangeBounds<usize>) -> CudaViewMut<'_, T> {
        self.try_slice_mut(bounds).expect("slice range out of bounds")
    }

    /// A writable view of `bounds`, or `None` if the range is outside the slice.
    pub fn try_slice_mut(&mut self, bounds: impl RangeBounds<usize>) -> Option<CudaViewMut<'_, T>> {
        let (start, end) = to_range(bounds, self.len)?;
        Some(self.as_view_mut().resized(start, end))
    }

    /// Reinterprets the memory as `len` elements of `S`; `None` if that needs more bytes.
    ///
    /// # Safety
    /// The bytes must be valid values of `S`.
    pub unsafe fn transmute<S>(&self, len: usize) -> Option<CudaView<'_, S>> {
        (len * size_of::<S>() <= self.num_bytes()).then(|| CudaView {
            ptr: self.ptr,
            len,
            stream: &self.stream,
            buf: self.storage.buffer(),
            _marker: PhantomData,
        })
    }

    /// Reinterprets the memory as `len` writable elements of `S`.
    ///
    /// # Safety
    /// The bytes must be valid values of `S`, and `S`'s values valid for `T`.
    pub unsafe fn transmute_mut<S>(&mut self, len: usize) -> Option<CudaViewMut<'_, S>> {
        (len * size_of::<S>() <= self.num_bytes()).then(|| CudaViewMut {
            ptr: self.ptr,
            len,
            stream: &self.stream,
            buf: self.storage.buffer(),
            _marker: PhantomData,
        })
    }

    /// Two views split at `mid`.
    ///
    /// # Panics
    /// If `mid > len`.
    pub fn split_at(&self, mid: usize) -> (CudaView<'_, T>, CudaView<'_, T>) {
        self.try_split_at(mid).expect("split_at out of bounds")
    }

    /// Two views split at `mid`, or `None` if `mid > len`.
    pub fn try_split_at(&self, mid: usize) -> Option<(CudaView<'_, T>, CudaView<'_, T>)> {
        self.as_view().try_split_at(mid)
    }

    /// Two writable views split at `mid`.
    ///
    /// # Panics
    /// If `mid > len`.
    pub fn split_at_mut(&mut self, mid: usize) -> (CudaViewMut<'_, T>, CudaViewMut<'_, T>) {
        self.try_split_at_mut(mid).expect("split_at_mut out of bounds")
    }

    /// Two writable views split at `mid`, or `None` if `mid > len`.
    pub fn try_split_at_mut(&mut self, mid: usize) -> Option<(CudaViewMut<'_, T>, CudaViewMut<'_, T>)> {
        if mid > self.len {
            return None;
        }
        let len = self.len;
        let view = self.as_view_mut();
        let (ptr, stream, buf) = (view.ptr, view.stream, view.buf);
        let piece = |start: usize, end: usize| CudaViewMut {
            ptr: ptr + (start * size_of::<T>()) as u64,
            len: end - start,
            stream,
            buf,
            _marker: PhantomData,
        };
        Some((piece(0, mid), piece(mid, len)))
    }

    /// Gives up ownership and returns the device pointer; the memory stays allocated until
    /// [`CudaStream::upgrade_device_ptr`] takes it back.
    pub fn leak(mut self) -> sys::CUdeviceptr {
        let ptr = self.ptr;
        if let Storage::Pool(buf) = std::mem::replace(&mut self.storage, Storage::Empty) {
            // Keyed by the allocation's own address, whatever the pointer field was set to.
            leaked()
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(buf.device_ptr(), buf);
        }
        // Raw memory: forget the slice so Drop does not free it.
        self.storage = Storage::Empty;
        ptr
    }
}

impl<T> CudaSlice<T> {
    pub(crate) fn storage_buffer(&self) -> Option<&cudrv::DeviceBuffer<u8>> {
        self.storage.buffer()
    }
}

impl<T: DeviceRepr> CudaSlice<T> {
    /// A copy on the same stream.
    pub fn try_clone(&self) -> Result<Self, DriverError> {
        self.stream.clone_dtod(self)
    }
}

impl<T: DeviceRepr> Clone for CudaSlice<T> {
    fn clone(&self) -> Self {
        self.try_clone()
            .expect("CudaSlice::clone failed; use try_clone to handle the error")
    }
}

impl<T: Clone + Default + DeviceRepr> TryFrom<CudaSlice<T>> for Vec<T> {
    type Error = DriverError;
    fn try_from(value: CudaSlice<T>) -> Result<Self, Self::Error> {
        value.stream.clone_dtoh(&value)
    }
}

/// `bounds` resolved against `len` as `(start, end)`, or `None` when out of bounds; the one
/// range rule of both eras' slices.
#[doc(hidden)]
pub fn to_range(bounds: impl RangeBounds<usize>, len: usize) -> Option<(usize, usize)> {
    let start = match bounds.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s.checked_add(1)?,
        Bound::Unbounded => 0,
    };
    let end = match bounds.end_bound() {
        Bound::Included(&e) => e.checked_add(1)?,
        Bound::Excluded(&e) => e,
        Bound::Unbounded => len,
    };
    (start <= end && end <= len).then_some((start, end))
}

/// A borrowed, read-only range of device memory (cudarc's `CudaView`).
#[derive(Debug)]
pub struct CudaView<'a, T> {
    pub(crate) ptr: sys::CUdeviceptr,
    pub(crate) len: usize,
    pub(crate) stream: &'a Arc<CudaStream>,
    pub(crate) buf: Option<&'a cudrv::DeviceBuffer<u8>>,
    _marker: PhantomData<&'a T>,
}

impl<T> Clone for CudaView<'_, T> {
    fn clone(&self) -> Self {
        CudaView { ..*self }
    }
}

/// A borrowed, writable range of device memory (cudarc's `CudaViewMut`).
#[derive(Debug)]
pub struct CudaViewMut<'a, T> {
    pub(crate) ptr: sys::CUdeviceptr,
    pub(crate) len: usize,
    pub(crate) stream: &'a Arc<CudaStream>,
    pub(crate) buf: Option<&'a cudrv::DeviceBuffer<u8>>,
    _marker: PhantomData<&'a mut T>,
}

impl<'a, T> CudaView<'a, T> {
    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn resized(&self, start: usize, end: usize) -> Self {
        CudaView {
            ptr: self.ptr + (start * size_of::<T>()) as u64,
            len: end - start,
            stream: self.stream,
            buf: self.buf,
            _marker: PhantomData,
        }
    }

    /// A narrower view (relative to this one).
    ///
    /// # Panics
    /// If the range is outside the view.
    pub fn slice(&self, bounds: impl RangeBounds<usize>) -> Self {
        self.try_slice(bounds).expect("slice range out of bounds")
    }

    /// A narrower view, or `None` if the range is outside the view.
    pub fn try_slice(&self, bounds: impl RangeBounds<usize>) -> Option<Self> {
        let (start, end) = to_range(bounds, self.len)?;
        Some(self.resized(start, end))
    }

    /// Reinterprets the memory as `len` elements of `S`; `None` if that needs more bytes.
    ///
    /// # Safety
    /// The bytes must be valid values of `S`.
    pub unsafe fn transmute<S>(&self, len: usize) -> Option<CudaView<'a, S>> {
        (len * size_of::<S>() <= self.len * size_of::<T>()).then_some(CudaView {
            ptr: self.ptr,
            len,
            stream: self.stream,
            buf: self.buf,
            _marker: PhantomData,
        })
    }

    /// Two views split at `mid`.
    ///
    /// # Panics
    /// If `mid > len`.
    pub fn split_at(&self, mid: usize) -> (Self, Self) {
        self.try_split_at(mid).expect("split_at out of bounds")
    }

    /// Two views split at `mid`, or `None` if `mid > len`.
    pub fn try_split_at(&self, mid: usize) -> Option<(Self, Self)> {
        (mid <= self.len).then(|| (self.resized(0, mid), self.resized(mid, self.len)))
    }

    /// Consecutive views of `chunk_size` elements (a shorter remainder is left out).
    pub fn chunks_exact(&self, chunk_size: usize) -> impl Iterator<Item = CudaView<'a, T>> + '_ {
        assert!(chunk_size > 0, "chunk_size must be non-zero");
        (0..self.len / chunk_size).map(move |i| self.resized(i * chunk_size, (i + 1) * chunk_size))
    }
}

impl<'a, T> CudaViewMut<'a, T> {
    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn resized(self, start: usize, end: usize) -> Self {
        CudaViewMut {
            ptr: self.ptr + (start * size_of::<T>()) as u64,
            len: end - start,
            ..self
        }
    }

    /// A read-only view of this one.
    pub fn as_view<'b>(&'b self) -> CudaView<'b, T> {
        CudaView {
            ptr: self.ptr,
            len: self.len,
            stream: self.stream,
            buf: self.buf,
            _marker: PhantomData,
        }
    }

    /// Turns this into a read-only view.
    pub fn into_view(self) -> CudaView<'a, T> {
        CudaView {
            ptr: self.ptr,
            len: self.len,
            stream: self.stream,
            buf: self.buf,
            _marker: PhantomData,
        }
    }

    /// A read-only view of `bounds`.
    ///
    /// # Panics
    /// If the range is outside the view.
    pub fn slice<'b>(&'b self, bounds: impl RangeBounds<usize>) -> CudaView<'b, T> {
        self.try_slice(bounds).expect("slice range out of bounds")
    }

    /// A read-only view of `bounds`, or `None` if the range is outside the view.
    pub fn try_slice<'b>(&'b self, bounds: impl RangeBounds<usize>) -> Option<CudaView<'b, T>> {
        self.as_view().try_slice(bounds)
    }

    /// Reinterprets the memory as `len` elements of `S`.
    ///
    /// # Safety
    /// The bytes must be valid values of `S`.
    pub unsafe fn transmute<'b, S>(&'b self, len: usize) -> Option<CudaView<'b, S>> {
        // SAFETY: forwarded; the caller upholds the contract.
        unsafe { self.as_view().transmute(len) }
    }

    fn reborrow<'b>(&'b mut self) -> CudaViewMut<'b, T> {
        CudaViewMut {
            ptr: self.ptr,
            len: self.len,
            stream: self.stream,
            buf: self.buf,
            _marker: PhantomData,
        }
    }

    /// A writable view of `bounds`.
    ///
    /// # Panics
    /// If the range is outside the view.
    pub fn slice_mut<'b>(&'b mut self, bounds: impl RangeBounds<usize>) -> CudaViewMut<'b, T> {
        self.try_slice_mut(bounds).expect("slice range out of bounds")
    }

    /// A writable view of `bounds`, or `None` if the range is outside the view.
    pub fn try_slice_mut<'b>(&'b mut self, bounds: impl RangeBounds<usize>) -> Option<CudaViewMut<'b, T>> {
        let (start, end) = to_range(bounds, self.len)?;
        Some(self.reborrow().resized(start, end))
    }

    /// Two writable views split at `mid`.
    ///
    /// # Panics
    /// If `mid > len`.
    pub fn split_at_mut<'b>(&'b mut self, mid: usize) -> (CudaViewMut<'b, T>, CudaViewMut<'b, T>) {
        self.try_split_at_mut(mid).expect("split_at_mut out of bounds")
    }

    /// Two writable views split at `mid`, or `None` if `mid > len`.
    pub fn try_split_at_mut<'b>(&'b mut self, mid: usize) -> Option<(CudaViewMut<'b, T>, CudaViewMut<'b, T>)> {
        if mid > self.len {
            return None;
        }
        let len = self.len;
        let (ptr, stream, buf) = (self.ptr, self.stream, self.buf);
        let piece = |start: usize, end: usize| CudaViewMut {
            ptr: ptr + (start * size_of::<T>()) as u64,
            len: end - start,
            stream,
            buf,
            _marker: PhantomData,
        };
        Some((piece(0, mid), piece(mid, len)))
    }

    /// Consecutive writable views of `chunk_size` elements (a shorter remainder is left out).
    pub fn chunks_exact_mut(self, chunk_size: usize) -> impl Iterator<Item = CudaViewMut<'a, T>> {
        assert!(chunk_size > 0, "chunk_size must be non-zero");
        let (ptr, stream, buf) = (self.ptr, self.stream, self.buf);
        (0..self.len / chunk_size).map(move |i| CudaViewMut {
            ptr: ptr + (i * chunk_size * size_of::<T>()) as u64,
            len: chunk_size,
            stream,
            buf,
            _marker: PhantomData,
        })
    }

    /// Reinterprets the memory as `len` writable elements of `S`.
    ///
    /// # Safety
    /// The bytes must be valid values of `S`, and `S`'s values valid for `T`.
    pub unsafe fn transmute_mut<'b, S>(&'b mut self, len: usize) -> Option<CudaViewMut<'b, S>> {
        (len * size_of::<S>() <= self.len * size_of::<T>()).then_some(CudaViewMut {
            ptr: self.ptr,
            len,
            stream: self.stream,
            buf: self.buf,
            _marker: PhantomData,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Slice traits
// ---------------------------------------------------------------------------------------------

/// Length and stream of a device slice or view (cudarc's `DeviceSlice`).
pub trait DeviceSlice<T> {
    /// The number of elements.
    fn len(&self) -> usize;
    /// The size in bytes.
    fn num_bytes(&self) -> usize {
        self.len() * size_of::<T>()
    }
    /// Whether there are no elements.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The stream the memory belongs to.
    fn stream(&self) -> &Arc<CudaStream>;
}

macro_rules! device_slice {
    ($($ty:ty),*) => {$(
        impl<T> DeviceSlice<T> for $ty {
            fn len(&self) -> usize {
                self.len
            }
            fn stream(&self) -> &Arc<CudaStream> {
                &self.stream
            }
        }
    )*};
}
device_slice!(CudaSlice<T>, CudaView<'_, T>, CudaViewMut<'_, T>);

/// What to do once the device pointer or host slice handed out has been used (cudarc's
/// `SyncOnDrop`). Keep it alive until the work that uses the pointer has been queued.
#[derive(Debug)]
#[must_use]
pub enum SyncOnDrop<'a> {
    /// Records the event on the stream when dropped.
    Record(Option<(&'a CudaEvent, &'a CudaStream)>),
    /// Synchronizes the stream when dropped.
    Sync(Option<&'a CudaStream>),
    /// compat's cross-stream ordering: the first stream (the memory's own) waits for the work
    /// queued on the second when dropped.
    #[doc(hidden)]
    Join(Option<(&'a CudaStream, &'a CudaStream)>),
}

impl<'a> SyncOnDrop<'a> {
    /// A guard that records `event` (if any) on `stream`.
    pub fn record_event(event: &'a Option<CudaEvent>, stream: &'a CudaStream) -> Self {
        SyncOnDrop::Record(event.as_ref().map(|e| (e, stream)))
    }

    /// A guard that synchronizes `stream`.
    pub fn sync_stream(stream: &'a CudaStream) -> Self {
        SyncOnDrop::Sync(Some(stream))
    }
}

impl Drop for SyncOnDrop<'_> {
    fn drop(&mut self) {
        match self {
            SyncOnDrop::Record(target) => {
                if let Some((event, stream)) = target.take() {
                    stream.ctx.record_err(event.record(stream));
                }
            }
            SyncOnDrop::Sync(target) => {
                if let Some(stream) = target.take() {
                    stream.ctx.record_err(stream.synchronize());
                }
            }
            SyncOnDrop::Join(target) => {
                if let Some((owner, user)) = target.take() {
                    owner.ctx.record_err(owner.join(user));
                }
            }
        }
    }
}

/// Orders a use of memory owned by `owner` on `user`: nothing when they are the same stream;
/// otherwise `user` waits for `owner`'s queued work now, the pool learns of the use, and the
/// returned guard makes `owner` wait for `user`'s work when dropped.
#[inline]
pub(crate) fn cross_stream<'a>(
    owner: &'a CudaStream,
    buf: Option<&cudrv::DeviceBuffer<u8>>,
    user: &'a CudaStream,
) -> SyncOnDrop<'a> {
    if owner.cu_stream == user.cu_stream {
        return SyncOnDrop::Sync(None);
    }
    order_before(owner, buf, user);
    SyncOnDrop::Join(Some((owner, user)))
}

/// `user` waits for `owner`'s queued work, and the pool learns that `user` uses the memory.
pub(crate) fn order_before(owner: &CudaStream, buf: Option<&cudrv::DeviceBuffer<u8>>, user: &CudaStream) {
    owner.ctx.record_err(user.join(owner));
    if let Some(buf) = buf {
        buf.record_stream(&user.inner);
    }
}

/// Read access to a device slice's pointer on a stream (cudarc's `DevicePtr`).
pub trait DevicePtr<T>: DeviceSlice<T> {
    /// The device pointer for reading on `stream`; keep the guard until the read is queued.
    fn device_ptr<'a>(&'a self, stream: &'a CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>);
}

/// Write access to a device slice's pointer on a stream (cudarc's `DevicePtrMut`).
pub trait DevicePtrMut<T>: DeviceSlice<T> {
    /// The device pointer for writing on `stream`; keep the guard until the write is queued.
    fn device_ptr_mut<'a>(&'a mut self, stream: &'a CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>);
}

impl<T> DevicePtr<T> for CudaSlice<T> {
    #[inline]
    fn device_ptr<'a>(&'a self, stream: &'a CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>) {
        (self.ptr, cross_stream(&self.stream, self.storage.buffer(), stream))
    }
}
impl<T> DevicePtrMut<T> for CudaSlice<T> {
    #[inline]
    fn device_ptr_mut<'a>(&'a mut self, stream: &'a CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>) {
        (self.ptr, cross_stream(&self.stream, self.storage.buffer(), stream))
    }
}
impl<T> DevicePtr<T> for CudaView<'_, T> {
    #[inline]
    fn device_ptr<'a>(&'a self, stream: &'a CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>) {
        (self.ptr, cross_stream(self.stream, self.buf, stream))
    }
}
impl<T> DevicePtr<T> for CudaViewMut<'_, T> {
    #[inline]
    fn device_ptr<'a>(&'a self, stream: &'a CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>) {
        (self.ptr, cross_stream(self.stream, self.buf, stream))
    }
}
impl<T> DevicePtrMut<T> for CudaViewMut<'_, T> {
    #[inline]
    fn device_ptr_mut<'a>(&'a mut self, stream: &'a CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>) {
        (self.ptr, cross_stream(self.stream, self.buf, stream))
    }
}

impl<'a, T> CudaView<'a, T> {
    /// The device pointer for reading on `stream`, consuming the view.
    pub fn view_ptr(self, stream: &'a CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>) {
        (self.ptr, cross_stream(self.stream, self.buf, stream))
    }
}

impl<'a, T> CudaViewMut<'a, T> {
    /// The device pointer for reading on `stream`, consuming the view.
    pub fn view_ptr(self, stream: &'a CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>) {
        (self.ptr, cross_stream(self.stream, self.buf, stream))
    }

    /// The device pointer for writing on `stream`, consuming the view.
    pub fn view_ptr_mut(self, stream: &'a CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>) {
        (self.ptr, cross_stream(self.stream, self.buf, stream))
    }
}

/// Host memory a copy can read or write: `[T]`, `[T; N]`, `Vec<T>`, [`PinnedHostSlice<T>`]
/// (cudarc's `HostSlice`).
pub trait HostSlice<T> {
    /// The number of elements.
    fn len(&self) -> usize;
    /// Whether there are no elements.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The slice to read, and a guard to keep until the read is queued on `stream`.
    ///
    /// # Safety
    /// Use the slice with `stream` only.
    unsafe fn stream_synced_slice<'a>(&'a self, stream: &'a CudaStream) -> (&'a [T], SyncOnDrop<'a>);

    /// The slice to write, and a guard to keep until the write is queued on `stream`.
    ///
    /// # Safety
    /// Use the slice with `stream` only.
    unsafe fn stream_synced_mut_slice<'a>(&'a mut self, stream: &'a CudaStream) -> (&'a mut [T], SyncOnDrop<'a>);
}

macro_rules! pageable_host {
    ($(impl[$($g:tt)*] $ty:ty),*) => {$(
        impl<$($g)*> HostSlice<T> for $ty {
            fn len(&self) -> usize {
                <[T]>::len(self)
            }
            unsafe fn stream_synced_slice<'a>(&'a self, _stream: &'a CudaStream) -> (&'a [T], SyncOnDrop<'a>) {
                (&self[..], SyncOnDrop::Sync(None))
            }
            unsafe fn stream_synced_mut_slice<'a>(
                &'a mut self,
                stream: &'a CudaStream,
            ) -> (&'a mut [T], SyncOnDrop<'a>) {
                (&mut self[..], SyncOnDrop::Sync(Some(stream)))
            }
        }
    )*};
}
pageable_host!(impl[T] [T], impl[T, const N: usize] [T; N], impl[T] Vec<T>);

/// Page-locked host memory (cudarc's `PinnedHostSlice`); host access waits for the copies
/// queued with it.
#[derive(Debug)]
pub struct PinnedHostSlice<T> {
    ptr: *mut T,
    len: usize,
    event: CudaEvent,
}

// SAFETY: the slice owns its host allocation exclusively.
unsafe impl<T> Send for PinnedHostSlice<T> {}
// SAFETY: `&PinnedHostSlice` gives only synchronized shared access.
unsafe impl<T> Sync for PinnedHostSlice<T> {}

impl<T> Drop for PinnedHostSlice<T> {
    fn drop(&mut self) {
        let ctx = self.event.ctx.clone();
        ctx.record_err(self.event.synchronize());
        // SAFETY: allocated by cuMemHostAlloc in alloc_pinned and freed once, after the copies
        // that use it have completed.
        ctx.record_err(unsafe { cu!(cuMemFreeHost(self.ptr.cast())) });
    }
}

impl<T> PinnedHostSlice<T> {
    /// The context the memory is registered with.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.event.ctx
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// The size in bytes.
    pub fn num_bytes(&self) -> usize {
        self.len * size_of::<T>()
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl<T: ValidAsZeroBits> PinnedHostSlice<T> {
    /// A pointer to the data, after the copies queued with it have completed.
    pub fn as_ptr(&self) -> Result<*const T, DriverError> {
        self.event.synchronize()?;
        Ok(self.ptr)
    }

    /// A mutable pointer to the data, after the copies queued with it have completed.
    pub fn as_mut_ptr(&mut self) -> Result<*mut T, DriverError> {
        self.event.synchronize()?;
        Ok(self.ptr)
    }

    /// The data, after the copies queued with it have completed.
    pub fn as_slice(&self) -> Result<&[T], DriverError> {
        self.event.synchronize()?;
        // SAFETY: the allocation holds len elements and no queued copy touches it any more.
        Ok(unsafe { std::slice::from_raw_parts(self.ptr, self.len) })
    }

    /// The data, writable, after the copies queued with it have completed.
    pub fn as_mut_slice(&mut self) -> Result<&mut [T], DriverError> {
        self.event.synchronize()?;
        // SAFETY: as above, and &mut self is exclusive.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) })
    }
}

impl<T> HostSlice<T> for PinnedHostSlice<T> {
    fn len(&self) -> usize {
        self.len
    }

    unsafe fn stream_synced_slice<'a>(&'a self, stream: &'a CudaStream) -> (&'a [T], SyncOnDrop<'a>) {
        stream.ctx.record_err(stream.wait(&self.event));
        // SAFETY: the allocation holds len elements; the stream waits for earlier writes to it
        // and the guard records when this use is done.
        let slice = unsafe { std::slice::from_raw_parts(self.ptr, self.len) };
        (slice, SyncOnDrop::Record(Some((&self.event, stream))))
    }

    unsafe fn stream_synced_mut_slice<'a>(&'a mut self, stream: &'a CudaStream) -> (&'a mut [T], SyncOnDrop<'a>) {
        stream.ctx.record_err(stream.wait(&self.event));
        // SAFETY: as above, with &mut self exclusive.
        let slice = unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) };
        (slice, SyncOnDrop::Record(Some((&self.event, stream))))
    }
}

// ---------------------------------------------------------------------------------------------
// Modules and functions
// ---------------------------------------------------------------------------------------------

/// A loaded module (cudarc's `CudaModule`), backed by [`cudrv::Module`].
#[derive(Debug)]
pub struct CudaModule {
    pub(crate) inner: Arc<cudrv::Module>,
    pub(crate) ctx: Arc<CudaContext>,
}

impl CudaModule {
    /// Looks up a kernel by name.
    pub fn load_function(self: &Arc<Self>, fn_name: &str) -> Result<CudaFunction, DriverError> {
        let inner = self.inner.function(fn_name).drv()?;
        Ok(CudaFunction {
            inner,
            module: self.clone(),
        })
    }

    /// A module-scope `__device__` or `__constant__` variable, as a writable byte view.
    pub fn get_global<'a>(
        self: &'a Arc<Self>,
        name: &str,
        stream: &'a Arc<CudaStream>,
    ) -> Result<CudaViewMut<'a, u8>, DriverError> {
        if CString::new(name).is_err() {
            return Err(DriverError(sys::CUresult::CUDA_ERROR_INVALID_VALUE));
        }
        self.ctx.bind_to_thread()?;
        let (ptr, bytes) = self.inner.global(name).drv()?;
        Ok(CudaViewMut {
            ptr,
            len: bytes,
            stream,
            buf: None,
            _marker: PhantomData,
        })
    }

    /// The cudrv module underneath.
    pub fn cudrv(&self) -> &Arc<cudrv::Module> {
        &self.inner
    }
}

/// A kernel (cudarc's `CudaFunction`), backed by [`cudrv::Function`].
#[derive(Debug, Clone)]
pub struct CudaFunction {
    pub(crate) inner: cudrv::Function,
    pub(crate) module: Arc<CudaModule>,
}

impl CudaFunction {
    /// The driver's handle.
    pub fn cu_function(&self) -> sys::CUfunction {
        self.inner.raw()
    }

    /// The cudrv function underneath.
    pub fn cudrv(&self) -> &cudrv::Function {
        &self.inner
    }

    /// Dynamic shared memory available per block when `num_blocks` blocks of `block_size`
    /// threads share a multiprocessor.
    pub fn occupancy_available_dynamic_smem_per_block(
        &self,
        num_blocks: u32,
        block_size: u32,
    ) -> Result<usize, DriverError> {
        self.module.ctx.bind_to_thread()?;
        let mut bytes = 0usize;
        // SAFETY: writes one size_t; the function is live.
        unsafe {
            cu!(cuOccupancyAvailableDynamicSMemPerBlock(
                &mut bytes,
                self.cu_function(),
                num_blocks as i32,
                block_size as i32
            ))?
        };
        Ok(bytes)
    }

    /// Blocks of `block_size` threads that fit on one multiprocessor at once.
    pub fn occupancy_max_active_blocks_per_multiprocessor(
        &self,
        block_size: u32,
        dynamic_smem_size: usize,
        flags: Option<sys::CUoccupancy_flags_enum>,
    ) -> Result<u32, DriverError> {
        self.module.ctx.bind_to_thread()?;
        let flags = flags.unwrap_or(sys::CUoccupancy_flags_enum::CU_OCCUPANCY_DEFAULT);
        let mut blocks = 0;
        // SAFETY: writes one int; the function is live.
        unsafe {
            cu!(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
                &mut blocks,
                self.cu_function(),
                block_size as i32,
                dynamic_smem_size,
                flags.0
            ))?
        };
        Ok(blocks.max(0) as u32)
    }

    /// (min grid size, block size) that maximise occupancy.
    pub fn occupancy_max_potential_block_size(
        &self,
        block_size_to_dynamic_smem_size: extern "C" fn(block_size: std::ffi::c_int) -> usize,
        dynamic_smem_size: usize,
        block_size_limit: u32,
        flags: Option<sys::CUoccupancy_flags_enum>,
    ) -> Result<(u32, u32), DriverError> {
        self.module.ctx.bind_to_thread()?;
        let flags = flags.unwrap_or(sys::CUoccupancy_flags_enum::CU_OCCUPANCY_DEFAULT);
        let (mut grid, mut block) = (0, 0);
        // SAFETY: an `extern "C" fn(c_int) -> usize` has the ABI of CUoccupancyB2DSize.
        let callback: sys::CUoccupancyB2DSize = unsafe {
            std::mem::transmute::<extern "C" fn(std::ffi::c_int) -> usize, sys::CUoccupancyB2DSize>(
                block_size_to_dynamic_smem_size,
            )
        };
        // SAFETY: writes two ints; the callback is a plain function of the right ABI.
        unsafe {
            cu!(cuOccupancyMaxPotentialBlockSizeWithFlags(
                &mut grid,
                &mut block,
                self.cu_function(),
                callback,
                dynamic_smem_size,
                block_size_limit as i32,
                flags.0
            ))?
        };
        Ok((grid.max(0) as u32, block.max(0) as u32))
    }

    /// A function attribute.
    pub fn get_attribute(&self, attribute: sys::CUfunction_attribute) -> Result<i32, DriverError> {
        self.module.ctx.bind_to_thread()?;
        let mut value = 0;
        // SAFETY: writes one int; the function is live.
        unsafe { cu!(cuFuncGetAttribute(&mut value, attribute, self.cu_function()))? };
        Ok(value)
    }

    /// Registers per thread.
    pub fn num_regs(&self) -> Result<i32, DriverError> {
        self.get_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_NUM_REGS)
    }

    /// Static shared memory per block, bytes.
    pub fn shared_size_bytes(&self) -> Result<i32, DriverError> {
        self.get_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
    }

    /// Constant memory, bytes.
    pub fn const_size_bytes(&self) -> Result<i32, DriverError> {
        self.get_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES)
    }

    /// Local memory per thread, bytes.
    pub fn local_size_bytes(&self) -> Result<i32, DriverError> {
        self.get_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)
    }

    /// Most threads per block this kernel can launch with.
    pub fn max_threads_per_block(&self) -> Result<i32, DriverError> {
        self.get_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
    }

    /// PTX version the kernel was compiled from.
    pub fn ptx_version(&self) -> Result<i32, DriverError> {
        self.get_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_PTX_VERSION)
    }

    /// Binary architecture version.
    pub fn binary_version(&self) -> Result<i32, DriverError> {
        self.get_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_BINARY_VERSION)
    }

    /// Sets a function attribute. Raising `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES` goes
    /// through cudrv, so its launch checks know the new limit.
    pub fn set_attribute(&self, attribute: sys::CUfunction_attribute, value: i32) -> Result<(), DriverError> {
        self.module.ctx.bind_to_thread()?;
        if attribute == sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES {
            let bytes = u32::try_from(value).map_err(|_| DriverError(sys::CUresult::CUDA_ERROR_INVALID_VALUE))?;
            return self.inner.set_max_dynamic_shared_memory(bytes).drv();
        }
        // SAFETY: sets one attribute of a live function.
        unsafe { cu!(cuFuncSetAttribute(self.cu_function(), attribute, value)) }
    }

    /// Sets the function's cache preference.
    pub fn set_function_cache_config(&self, attribute: sys::CUfunc_cache) -> Result<(), DriverError> {
        self.module.ctx.bind_to_thread()?;
        // SAFETY: a plain value for a live function.
        unsafe { cu!(cuFuncSetCacheConfig(self.cu_function(), attribute)) }
    }
}

#[cfg(test)]
mod tests {
    use super::to_range;

    #[test]
    fn ranges_follow_cudarc() {
        assert_eq!(to_range(.., 10), Some((0, 10)));
        assert_eq!(to_range(2..5, 10), Some((2, 5)));
        assert_eq!(to_range(2..=5, 10), Some((2, 6)));
        assert_eq!(to_range(10.., 10), Some((10, 10)));
        assert_eq!(to_range(5..11, 10), None);
        #[allow(clippy::reversed_empty_ranges)]
        let reversed = 6..5;
        assert_eq!(to_range(reversed, 10), None);
    }
}
