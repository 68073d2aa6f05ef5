//! Kernel launches: [`LaunchConfig`], [`LaunchArgs`] and [`PushKernelArg`].

use std::ffi::c_void;
use std::ptr;

use super::error::{DriverError, IntoDriver};
use super::{cu, sys};
use super::{
    event::CudaEvent,
    module::CudaFunction,
    ptr::order_before,
    repr::DeviceRepr,
    slice::CudaSlice,
    stream::CudaStream,
    view::{CudaView, CudaViewMut},
};

/// Grid and block shape and dynamic shared memory of a launch (cudarc's `LaunchConfig`).
///
/// ```
/// use cudrv_compat::imp::driver::LaunchConfig;
/// let cfg = LaunchConfig::for_num_elems(1025);
/// assert_eq!((cfg.grid_dim, cfg.block_dim), ((2, 1, 1), (1024, 1, 1)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks along x, y, z.
    pub grid_dim: (u32, u32, u32),
    /// Threads per block along x, y, z.
    pub block_dim: (u32, u32, u32),
    /// Dynamic shared memory per block, bytes.
    pub shared_mem_bytes: u32,
}

impl LaunchConfig {
    /// One thread per element in blocks of 1024, as in cudarc (`n == 0` gives an empty grid,
    /// which the launch rejects).
    ///
    /// ```
    /// let cfg = cudrv_compat::imp::driver::LaunchConfig::for_num_elems(3000);
    /// assert_eq!((cfg.grid_dim.0, cfg.block_dim.0), (3, 1024));
    /// ```
    pub fn for_num_elems(n: u32) -> Self {
        LaunchConfig {
            grid_dim: (n.div_ceil(1024), 1, 1),
            block_dim: (1024, 1, 1),
            shared_mem_bytes: 0,
        }
    }
}

/// Parameters held inline; more spill to the heap.
const INLINE_ARGS: usize = 16;

/// A launch being built (cudarc's `LaunchArgs`): push arguments with
/// [`arg`](PushKernelArg::arg), then [`launch`](Self::launch).
///
/// Up to 16 arguments live inline (no allocation per launch). A slice or view that belongs to a
/// stream other than the launch's is ordered with a stream join before and after the kernel.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::*;
/// # use std::sync::Arc;
/// # let ctx = CudaContext::new(0)?;
/// # let stream = ctx.default_stream();
/// let module = ctx.load_module(cudrv_compat::imp::nvrtc::Ptx::from_file("kernels.ptx"))?;
/// let f = module.load_function("scale")?;
/// let mut x = stream.alloc_zeros::<f32>(1000)?;
/// let (n, a) = (1000usize, 2.0f32);
/// let mut b = stream.launch_builder(&f);
/// b.arg(&mut x).arg(&a).arg(&n);
/// // SAFETY: scale(float* x, float a, size_t n) matches the arguments.
/// unsafe { b.launch(LaunchConfig::for_num_elems(1000)) }?;
/// # Ok::<(), DriverError>(())
/// ```
#[derive(Debug)]
pub struct LaunchArgs<'a> {
    stream: &'a CudaStream,
    func: &'a CudaFunction,
    inline: [*mut c_void; INLINE_ARGS],
    count: usize,
    spill: Vec<*mut c_void>,
    foreign: Vec<(&'a CudaStream, Option<&'a cudrv::DeviceBuffer<u8>>)>,
    flags: Option<sys::CUevent_flags>,
}

impl CudaStream {
    /// Starts a launch of `func` on this stream.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let f = ctx.load_module(cudrv_compat::imp::nvrtc::Ptx::from_file("kernels.ptx"))?.load_function("k")?;
    /// let b = stream.launch_builder(&f);
    /// # drop(b);
    /// # Ok::<(), DriverError>(())
    /// ```
    #[inline]
    pub fn launch_builder<'a>(&'a self, func: &'a CudaFunction) -> LaunchArgs<'a> {
        LaunchArgs {
            stream: self,
            func,
            inline: [ptr::null_mut(); INLINE_ARGS],
            count: 0,
            spill: Vec::new(),
            foreign: Vec::new(),
            flags: None,
        }
    }
}

impl<'a> LaunchArgs<'a> {
    #[inline(always)]
    fn push(&mut self, param: *mut c_void) {
        if self.count < INLINE_ARGS {
            self.inline[self.count] = param;
        } else {
            if self.spill.is_empty() {
                self.spill.extend_from_slice(&self.inline);
            }
            self.spill.push(param);
        }
        self.count += 1;
    }

    #[inline(always)]
    fn note_stream(&mut self, owner: &'a CudaStream, buf: Option<&'a cudrv::DeviceBuffer<u8>>) {
        if owner.cu_stream != self.stream.cu_stream {
            self.foreign.push((owner, buf));
        }
    }

    /// Records timing events around the kernel; [`launch`](Self::launch) returns them.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let f = ctx.load_module(cudrv_compat::imp::nvrtc::Ptx::from_file("kernels.ptx"))?.load_function("k")?;
    /// let mut b = stream.launch_builder(&f);
    /// b.record_kernel_launch(sys::CUevent_flags::CU_EVENT_DEFAULT);
    /// // SAFETY: k() takes no arguments.
    /// if let Some((start, end)) = unsafe { b.launch(LaunchConfig::for_num_elems(1)) }? {
    ///     println!("{:.3} ms", start.elapsed_ms(&end)?);
    /// }
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn record_kernel_launch(&mut self, flags: sys::CUevent_flags) -> &mut Self {
        self.flags = Some(flags);
        self
    }

    fn params(&mut self) -> *mut *mut c_void {
        if self.count > INLINE_ARGS {
            self.spill.as_mut_ptr()
        } else {
            self.inline.as_mut_ptr()
        }
    }

    /// Launches the kernel on the stream. The configuration is checked against the device's
    /// and the kernel's limits first (an invalid one is `CUDA_ERROR_INVALID_VALUE` with the
    /// numbers in [`DriverError::detail`]). Returns the timing events when
    /// [`record_kernel_launch`](Self::record_kernel_launch) asked for them.
    ///
    /// # Safety
    /// The arguments must match the kernel's parameters in number, order and type, and the
    /// kernel must stay within the memory passed to it.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let f = ctx.load_module(cudrv_compat::imp::nvrtc::Ptx::from_file("kernels.ptx"))?.load_function("k")?;
    /// // SAFETY: k() takes no arguments.
    /// unsafe { stream.launch_builder(&f).launch(LaunchConfig::for_num_elems(1)) }?;
    /// # Ok::<(), DriverError>(())
    /// ```
    #[inline]
    pub unsafe fn launch(&mut self, cfg: LaunchConfig) -> Result<Option<(CudaEvent, CudaEvent)>, DriverError> {
        // SAFETY: forwarded; the caller upholds the contract.
        unsafe { self.launch_with(cfg, false) }
    }

    /// Launches the kernel cooperatively (`cuLaunchCooperativeKernel`).
    ///
    /// # Safety
    /// As for [`launch`](Self::launch); the grid must fit on the device at once.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let f = ctx.load_module(cudrv_compat::imp::nvrtc::Ptx::from_file("kernels.ptx"))?.load_function("grid_sync")?;
    /// let cfg = LaunchConfig { grid_dim: (132, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
    /// // SAFETY: grid_sync() takes no arguments; every block is resident (one per SM).
    /// unsafe { stream.launch_builder(&f).launch_cooperative(cfg) }?;
    /// # Ok::<(), DriverError>(())
    /// ```
    pub unsafe fn launch_cooperative(
        &mut self,
        cfg: LaunchConfig,
    ) -> Result<Option<(CudaEvent, CudaEvent)>, DriverError> {
        // SAFETY: forwarded; the caller upholds the contract.
        unsafe { self.launch_with(cfg, true) }
    }

    #[inline]
    unsafe fn launch_with(
        &mut self,
        cfg: LaunchConfig,
        cooperative: bool,
    ) -> Result<Option<(CudaEvent, CudaEvent)>, DriverError> {
        let ctx = &self.stream.ctx;
        ctx.bind_to_thread()?;
        for &(owner, buf) in &self.foreign {
            order_before(owner, buf, self.stream);
        }
        let start = self.flags.map(|fl| self.stream.record_event(Some(fl))).transpose()?;
        let count = self.count;
        let params = self.params();
        // SAFETY: the parameter pointers stay valid for 'a (one per pushed argument); their
        // agreement with the kernel is the caller's contract.
        unsafe {
            self.func.launch_raw(
                self.stream,
                cfg,
                std::slice::from_raw_parts_mut(params, count),
                cooperative,
            )?
        };
        let end = self.flags.map(|fl| self.stream.record_event(Some(fl))).transpose()?;
        for &(owner, _) in &self.foreign {
            owner.join(self.stream)?;
        }
        Ok(start.zip(end))
    }
}

impl CudaFunction {
    /// Launches with a ready parameter array (one pointer per kernel parameter), after checking
    /// the configuration against the kernel and the device. The launch path that both cudarc
    /// eras' launch APIs end in.
    ///
    /// # Safety
    /// Each pointer of `params` must point to a value of the type of the kernel's parameter at
    /// that position, valid until the call returns; the kernel must be safe to run with them.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let f = ctx.load_module(cudrv_compat::imp::nvrtc::Ptx::from_file("kernels.ptx"))?.load_function("k")?;
    /// // SAFETY: k() takes no arguments.
    /// unsafe { f.launch_raw(&stream, LaunchConfig::for_num_elems(1), &mut [], false) }?;
    /// # Ok::<(), DriverError>(())
    /// ```
    #[doc(hidden)]
    pub unsafe fn launch_raw(
        &self,
        stream: &CudaStream,
        cfg: LaunchConfig,
        params: &mut [*mut c_void],
        cooperative: bool,
    ) -> Result<(), DriverError> {
        let ctx = &stream.ctx;
        let f = &self.inner;
        cudrv::LaunchConfig {
            grid_dim: cfg.grid_dim,
            block_dim: cfg.block_dim,
            shared_mem_bytes: cfg.shared_mem_bytes,
        }
        .check(
            ctx.inner.limits(),
            f.attributes().max_threads_per_block,
            f.max_dynamic_shared_memory(),
        )
        .drv()?;
        ctx.bind_to_thread()?;
        let (g, b) = (cfg.grid_dim, cfg.block_dim);
        let (func, raw_stream, smem) = (f.raw(), stream.cu_stream, cfg.shared_mem_bytes);
        let params = if params.is_empty() {
            ptr::null_mut()
        } else {
            params.as_mut_ptr()
        };
        if cooperative {
            // SAFETY: the configuration was checked; the parameters are the caller's contract.
            unsafe {
                cu!(cuLaunchCooperativeKernel(
                    func, g.0, g.1, g.2, b.0, b.1, b.2, smem, raw_stream, params
                ))
            }
        } else {
            // SAFETY: as above.
            unsafe {
                cu!(cuLaunchKernel(
                    func,
                    g.0,
                    g.1,
                    g.2,
                    b.0,
                    b.1,
                    b.2,
                    smem,
                    raw_stream,
                    params,
                    ptr::null_mut()
                ))
            }
        }
    }
}

/// Something that can be pushed onto a launch as a kernel argument (cudarc's `PushKernelArg`):
/// `&T` for any [`DeviceRepr`] value (passed by value), and `&CudaSlice`, `&mut CudaSlice`,
/// `&CudaView`, `&mut CudaViewMut` (passed as a device pointer).
///
/// # Safety
/// Implementations must push a pointer to the parameter's bytes that stays valid for the
/// launch's lifetime.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::*;
/// # use std::sync::Arc;
/// # let ctx = CudaContext::new(0)?;
/// # let stream = ctx.default_stream();
/// let f = ctx.load_module(cudrv_compat::imp::nvrtc::Ptx::from_file("kernels.ptx"))?.load_function("fill")?;
/// let mut x = stream.alloc_zeros::<f32>(16)?;
/// let (v, n) = (1.0f32, 16u32);
/// let mut b = stream.launch_builder(&f);
/// // Slices, views and plain values all push as kernel arguments.
/// b.arg(&mut x).arg(&v).arg(&n);
/// // SAFETY: fill(float* x, float v, unsigned n) matches.
/// unsafe { b.launch(LaunchConfig::for_num_elems(16)) }?;
/// # Ok::<(), DriverError>(())
/// ```
pub unsafe trait PushKernelArg<T> {
    /// Appends an argument.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let f = ctx.load_module(cudrv_compat::imp::nvrtc::Ptx::from_file("kernels.ptx"))?.load_function("scale")?;
    /// let mut x = stream.alloc_zeros::<f32>(8)?;
    /// let (a, n) = (2.0f32, 8usize);
    /// let mut b = stream.launch_builder(&f);
    /// b.arg(&mut x).arg(&a).arg(&n);
    /// // SAFETY: scale(float* x, float a, size_t n).
    /// unsafe { b.launch(LaunchConfig::for_num_elems(8)) }?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn arg(&mut self, arg: T) -> &mut Self;
}

// SAFETY: the parameter is the value itself, borrowed for 'b: 'a.
unsafe impl<'a, 'b: 'a, T: DeviceRepr> PushKernelArg<&'b T> for LaunchArgs<'a> {
    #[inline(always)]
    fn arg(&mut self, arg: &'b T) -> &mut Self {
        self.push(arg as *const T as *mut c_void);
        self
    }
}

// SAFETY: the parameter is the slice's device-pointer field, borrowed for 'b: 'a.
unsafe impl<'a, 'b: 'a, T> PushKernelArg<&'b CudaSlice<T>> for LaunchArgs<'a> {
    #[inline(always)]
    fn arg(&mut self, arg: &'b CudaSlice<T>) -> &mut Self {
        self.note_stream(&arg.stream, arg.storage_buffer());
        self.push(&arg.ptr as *const sys::CUdeviceptr as *mut c_void);
        self
    }
}

// SAFETY: as above.
unsafe impl<'a, 'b: 'a, T> PushKernelArg<&'b mut CudaSlice<T>> for LaunchArgs<'a> {
    #[inline(always)]
    fn arg(&mut self, arg: &'b mut CudaSlice<T>) -> &mut Self {
        let arg: &'b CudaSlice<T> = arg;
        self.note_stream(&arg.stream, arg.storage_buffer());
        self.push(&arg.ptr as *const sys::CUdeviceptr as *mut c_void);
        self
    }
}

// SAFETY: the parameter is the view's device-pointer field, borrowed for 'b: 'a.
unsafe impl<'a, 'b: 'a, 'c: 'b, T> PushKernelArg<&'b CudaView<'c, T>> for LaunchArgs<'a> {
    #[inline(always)]
    fn arg(&mut self, arg: &'b CudaView<'c, T>) -> &mut Self {
        self.note_stream(arg.stream, arg.buf);
        self.push(&arg.ptr as *const sys::CUdeviceptr as *mut c_void);
        self
    }
}

// SAFETY: as above.
unsafe impl<'a, 'b: 'a, 'c: 'b, T> PushKernelArg<&'b mut CudaViewMut<'c, T>> for LaunchArgs<'a> {
    #[inline(always)]
    fn arg(&mut self, arg: &'b mut CudaViewMut<'c, T>) -> &mut Self {
        let arg: &'b CudaViewMut<'c, T> = arg;
        self.note_stream(arg.stream, arg.buf);
        self.push(&arg.ptr as *const sys::CUdeviceptr as *mut c_void);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::LaunchConfig;

    #[test]
    fn for_num_elems_matches_cudarc() {
        assert_eq!(LaunchConfig::for_num_elems(0).grid_dim, (0, 1, 1));
        assert_eq!(LaunchConfig::for_num_elems(1).grid_dim, (1, 1, 1));
        assert_eq!(LaunchConfig::for_num_elems(1024).grid_dim, (1, 1, 1));
        assert_eq!(LaunchConfig::for_num_elems(1025).grid_dim, (2, 1, 1));
    }
}
