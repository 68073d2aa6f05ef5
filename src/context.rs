//! Contexts: a device's primary context, shared through `Arc`.

use std::mem::ManuallyDrop;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::device::{Device, DeviceLimits};
use crate::driver::cu;
use crate::error::Result;
use crate::memory::device_pool::{new_device_pool, DevicePool};
use crate::memory::pinned_pool::PinnedPool;
use crate::memory::pool::PoolStats;
use crate::memory::staging::Staging;
use crate::profile::Profiler;
use crate::registry::KernelRegistry;
use crate::stream::{Stream, StreamFlags};
use crate::sys;

/// A device's primary context, retained for as long as this value lives.
///
/// Contexts are shared: every stream, buffer and module holds an `Arc<Context>`. The primary
/// context is the one the CUDA runtime and other libraries in the process use too, so memory
/// and modules interoperate with them. cudrv makes the context current on a thread only when the
/// thread's current context differs ([`Context::bind_to_thread`]).
///
/// ```no_run
/// let ctx = cudrv::Context::new(0)?;
/// println!("{} with {} SMs", ctx.device().name()?, ctx.limits().multiprocessor_count);
/// # Ok::<(), cudrv::Error>(())
/// ```
pub struct Context {
    raw: sys::CUcontext,
    device: Device,
    limits: DeviceLimits,
    compute_capability: (u32, u32),
    registry: KernelRegistry,
    /// Dropped by hand in `Drop`, before the context is released (its fences are CUDA events).
    pool: ManuallyDrop<DevicePool>,
    caching: AtomicBool,
    staging: Staging,
    pinned: PinnedPool,
    profiler: Profiler,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("raw", &self.raw)
            .field("device", &self.device.ordinal())
            .field("compute_capability", &self.compute_capability)
            .field("caching", &self.caching())
            .finish_non_exhaustive()
    }
}

// SAFETY: a CUcontext handle may be used from any thread; the driver serialises what it must.
// Every other field is Send + Sync.
unsafe impl Send for Context {}
// SAFETY: as above; `&Context` only reads the handle.
unsafe impl Sync for Context {}

impl Context {
    /// Retains the primary context of device `ordinal` and makes it current on this thread.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// println!("{} ({:?})", ctx.device().name()?, ctx.compute_capability());
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn new(ordinal: usize) -> Result<Arc<Context>> {
        let device = Device::get(ordinal)?;
        let limits = device.limits()?;
        let compute_capability = device.compute_capability()?;
        let mut raw = ptr::null_mut();
        // SAFETY: writes one CUcontext through a valid pointer; balanced by the release in Drop.
        unsafe { cu!(cuDevicePrimaryCtxRetain(&mut raw, device.raw()))? };
        let ctx = Arc::new(Context {
            raw,
            device,
            limits,
            compute_capability,
            registry: KernelRegistry::with_embedded(compute_capability),
            pool: ManuallyDrop::new(new_device_pool(raw)),
            caching: AtomicBool::new(true),
            staging: Staging::default(),
            pinned: PinnedPool::new(raw),
            profiler: Profiler::new(raw),
        });
        ctx.bind_to_thread()?;
        if let Ok(value) = std::env::var(crate::profile::PROFILE_ENV) {
            match crate::profile::Sampling::parse(&value) {
                Ok(Some(sampling)) => {
                    ctx.profiler.set_sampling(sampling);
                    ctx.profiler.enable()?;
                }
                Ok(None) => {}
                Err(e) => eprintln!("cudrv: {}: {e}; profiling stays off", crate::profile::PROFILE_ENV),
            }
        }
        Ok(ctx)
    }

    /// The driver's handle.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let raw: cudrv::sys::CUcontext = ctx.raw(); // for driver calls cudrv does not wrap
    /// assert!(!raw.is_null());
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn raw(&self) -> sys::CUcontext {
        self.raw
    }

    /// The context's kernel profiler (off unless `CUDRV_PROFILE=1` (or `1/N`) or
    /// [`Profiler::enable`](crate::profile::Profiler::enable)).
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// ctx.profiler().enable()?;
    /// // ... launches ...
    /// print!("{}", ctx.profiler().report()?.table());
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn profiler(&self) -> &Profiler {
        &self.profiler
    }

    /// The device this context belongs to.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// println!("{} MiB", ctx.device().total_memory()? >> 20);
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn device(&self) -> Device {
        self.device
    }

    /// The device limits launches are checked against (read once, at creation).
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let l = ctx.limits();
    /// println!("{} SMs, {} KiB shared per block (opt-in)", l.multiprocessor_count, l.max_shared_per_block_optin >> 10);
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn limits(&self) -> &DeviceLimits {
        &self.limits
    }

    /// The device's compute capability, (major, minor).
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let hopper = ctx.compute_capability() >= (9, 0);
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn compute_capability(&self) -> (u32, u32) {
        self.compute_capability
    }

    /// The kernels this context can launch by name: the embedded set plus user registrations.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// assert!(ctx.registry().contains("fill_f32"));
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn registry(&self) -> &KernelRegistry {
        &self.registry
    }

    /// The context's caching allocator, which device buffers use by default.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// ctx.memory_pool().set_limit(Some(8 << 30)); // this context reserves at most 8 GiB
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn memory_pool(&self) -> &DevicePool {
        &self.pool
    }

    /// The cache that pinned host buffers are allocated from.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// ctx.pinned_pool().set_max_cached(64 << 20);
    /// println!("{:?}", ctx.pinned_pool().stats());
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn pinned_pool(&self) -> &PinnedPool {
        &self.pinned
    }

    /// The pinned chunks large pageable copies are staged through.
    pub(crate) fn staging(&self) -> &Staging {
        &self.staging
    }

    /// Whether new device buffers come from the caching pool (the default) or straight from the
    /// driver (`cuMemAllocAsync`).
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// assert!(ctx.caching()); // on by default
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn caching(&self) -> bool {
        self.caching.load(Ordering::Relaxed)
    }

    /// Switches the caching pool on or off for buffers allocated from now on (buffers already
    /// allocated go back where they came from).
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// ctx.set_caching(false); // every allocation is a cuMemAllocAsync
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn set_caching(&self, enabled: bool) {
        self.caching.store(enabled, Ordering::Relaxed);
    }

    /// The caching pool's statistics: allocations, hit rate, reserved and allocated bytes,
    /// peaks, fragmentation (`to_json()` renders them as JSON).
    ///
    /// ```no_run
    /// use cudrv::DeviceBuffer;
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// let buf = DeviceBuffer::<f32>::zeroed(&stream, 1 << 20)?;
    /// let s = ctx.memory_stats();
    /// assert!(s.allocated_bytes >= 4 << 20);
    /// println!("{}", serde_json::to_string(&s).unwrap());
    /// # drop(buf);
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn memory_stats(&self) -> PoolStats {
        self.pool.stats()
    }

    /// Returns every fully free cached segment to the driver; the number of bytes released.
    ///
    /// ```no_run
    /// use cudrv::DeviceBuffer;
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// drop(DeviceBuffer::<f32>::zeroed(&stream, 64 << 20)?);
    /// stream.synchronize()?;
    /// let released = ctx.empty_cache();
    /// println!("gave {} MiB back to the driver", released >> 20);
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn empty_cache(&self) -> usize {
        self.pool.empty_cache()
    }

    /// Makes this context current on the calling thread if it is not already.
    ///
    /// One `cuCtxGetCurrent` when it is already current; `cuCtxSetCurrent` only when it differs.
    ///
    /// A context that has hit a sticky fault ([`crate::fault`]) is refused here with
    /// [`Error::ContextFaulted`](crate::Error::ContextFaulted), so every call that uses it fails
    /// fast, naming the fault.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let worker = {
    ///     let ctx = ctx.clone();
    ///     std::thread::spawn(move || -> cudrv::Result<()> {
    ///         ctx.bind_to_thread()?; // before raw driver calls on this thread
    ///         Ok(())
    ///     })
    /// };
    /// worker.join().unwrap()?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    #[inline]
    pub fn bind_to_thread(&self) -> Result<()> {
        crate::fault::check_context(self.raw)?;
        bind_raw(self.raw)
    }

    /// `Ok` while the context can run work; [`Error::ContextFaulted`](crate::Error::ContextFaulted)
    /// (naming the original fault) once a sticky fault has hit it. Asks the driver too (one
    /// `cuMemGetInfo`, which does not wait for queued work), so a fault no cudrv call has seen yet
    /// is found as soon as the driver knows of it.
    ///
    /// After a fault the process must restart to use the GPU again: CUDA keeps the context
    /// failing, and a reset of the primary context does not help within the process.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// if let Err(e) = ctx.health() {
    ///     eprintln!("GPU unusable ({e}); exiting so the supervisor restarts this worker");
    ///     std::process::exit(3);
    /// }
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn health(&self) -> Result<()> {
        // A fault on record comes back from here as it is (memory_info would bind again, and its
        // ContextFaulted must not be wrapped in a second one below).
        self.bind_to_thread()?;
        match self.memory_info() {
            Err(e) if e.is_sticky() => Err(crate::Error::ContextFaulted { fault: Box::new(e) }),
            Err(e) => Err(e),
            Ok(_) => Ok(()),
        }
    }

    /// Waits for all work in this context to finish.
    ///
    /// ```no_run
    /// use cudrv::DeviceBuffer;
    /// let ctx = cudrv::Context::new(0)?;
    /// let (s1, s2) = (ctx.new_stream()?, ctx.new_stream()?);
    /// let a = DeviceBuffer::<f32>::zeroed(&s1, 1 << 20)?;
    /// let b = DeviceBuffer::<f32>::zeroed(&s2, 1 << 20)?;
    /// ctx.synchronize()?; // both streams are done
    /// # drop((a, b));
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn synchronize(&self) -> Result<()> {
        self.bind_to_thread()?;
        // SAFETY: no arguments; the context is current.
        unsafe { cu!(cuCtxSynchronize()) }
    }

    /// Free and total device memory in bytes, as the driver reports them now.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let (free, total) = ctx.memory_info()?;
    /// assert!(free <= total);
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn memory_info(&self) -> Result<(usize, usize)> {
        self.bind_to_thread()?;
        let (mut free, mut total) = (0, 0);
        // SAFETY: writes two size_t through valid pointers; the context is current.
        unsafe { cu!(cuMemGetInfo_v2(&mut free, &mut total))? };
        Ok((free, total))
    }

    /// The context's legacy default stream (the NULL stream), which synchronises with other
    /// blocking streams. Prefer [`Context::new_stream`] for concurrent work.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.default_stream();
    /// stream.synchronize()?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn default_stream(self: &Arc<Self>) -> Arc<Stream> {
        Arc::new(Stream::null(self.clone()))
    }

    /// A new non-blocking stream with default priority.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// stream.synchronize()?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn new_stream(self: &Arc<Self>) -> Result<Arc<Stream>> {
        self.new_stream_with(StreamFlags::NonBlocking, 0)
    }

    /// A new stream with the given flags and priority (lower numbers run first; see
    /// [`Context::stream_priority_range`]).
    ///
    /// ```no_run
    /// use cudrv::StreamFlags;
    /// let ctx = cudrv::Context::new(0)?;
    /// let (_, highest) = ctx.stream_priority_range()?;
    /// let urgent = ctx.new_stream_with(StreamFlags::NonBlocking, highest)?;
    /// urgent.synchronize()?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn new_stream_with(self: &Arc<Self>, flags: StreamFlags, priority: i32) -> Result<Arc<Stream>> {
        Stream::create(self.clone(), flags, priority).map(Arc::new)
    }

    /// The (least, greatest) stream priority; the greatest is the numerically lowest.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let (least, greatest) = ctx.stream_priority_range()?;
    /// assert!(greatest <= least); // e.g. (0, -5): -5 runs first
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn stream_priority_range(&self) -> Result<(i32, i32)> {
        self.bind_to_thread()?;
        let (mut least, mut greatest) = (0, 0);
        // SAFETY: writes two ints through valid pointers.
        unsafe { cu!(cuCtxGetStreamPriorityRange(&mut least, &mut greatest))? };
        Ok((least, greatest))
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // Every buffer held an Arc to the context, so all pool memory is free: give it back
        // while the context still exists.
        let _ = self.bind_to_thread();
        // The registry's modules refer to the context weakly; unload them while it exists.
        self.registry.unload_all();
        self.pool.empty_cache();
        // SAFETY: the pool is not used after this point (this is the context's last act), and
        // dropping it now destroys its fence events while the context that owns them exists.
        unsafe { ManuallyDrop::drop(&mut self.pool) };
        self.pinned.trim();
        self.staging.release();
        self.profiler.release();
        // SAFETY: balances the retain in `new`; every object that used the context held an Arc
        // to it, so none is left. A failure here cannot be reported and leaves only a reference.
        let _ = unsafe { sys::cuDevicePrimaryCtxRelease_v2(self.device.raw()) };
    }
}

/// Makes `raw` current on the calling thread if it is not already (one `cuCtxGetCurrent`).
///
/// For parts of the context (its memory pool) that cannot hold an `Arc` to it.
#[inline]
pub(crate) fn bind_raw(raw: sys::CUcontext) -> Result<()> {
    let mut current = ptr::null_mut();
    // SAFETY: writes one CUcontext through a valid pointer.
    unsafe { cu!(cuCtxGetCurrent(&mut current))? };
    if current != raw {
        // SAFETY: callers pass a context they keep retained for the duration of the call.
        unsafe { cu!(cuCtxSetCurrent(raw))? };
    }
    Ok(())
}
