//! Kernel launches: the configuration, its checks, and the argument builder.

use std::ffi::c_void;
use std::marker::PhantomData;
use std::ptr;

use crate::device::DeviceLimits;
use crate::driver::cu;
use crate::error::{Error, Result};
use crate::memory::{DeviceBuffer, DeviceRepr, DeviceView, DeviceViewMut};
use crate::module::Function;
use crate::stream::Stream;
use crate::sys;

/// Grid and block shape and dynamic shared memory of a launch.
///
/// ```
/// let cfg = cudrv::LaunchConfig::for_num_elems(1000);
/// assert_eq!(cfg.block_dim, (1024, 1, 1));
/// assert_eq!(cfg.grid_dim, (1, 1, 1));
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LaunchConfig {
    /// Blocks along x, y, z.
    pub grid_dim: (u32, u32, u32),
    /// Threads per block along x, y, z.
    pub block_dim: (u32, u32, u32),
    /// Dynamic shared memory per block, bytes.
    pub shared_mem_bytes: u32,
}

impl LaunchConfig {
    /// One thread per element in blocks of 1024 (at least one block).
    ///
    /// ```
    /// let cfg = cudrv::LaunchConfig::for_num_elems(5000);
    /// assert_eq!((cfg.grid_dim.0, cfg.block_dim.0), (5, 1024));
    /// assert_eq!(cudrv::LaunchConfig::for_num_elems(0).grid_dim.0, 1);
    /// ```
    pub fn for_num_elems(n: u32) -> Self {
        const BLOCK: u32 = 1024;
        LaunchConfig {
            grid_dim: (n.div_ceil(BLOCK).max(1), 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    /// Checks the shape against the device's limits and the kernel's own; the error names the
    /// dimension and both numbers.
    ///
    /// ```
    /// # use cudrv::{LaunchConfig, DeviceLimits};
    /// let limits = DeviceLimits {
    ///     max_threads_per_block: 1024, max_block_dim: [1024, 1024, 64],
    ///     max_grid_dim: [i32::MAX as u32, 65535, 65535], max_shared_per_block: 49152,
    ///     max_shared_per_block_optin: 232448, multiprocessor_count: 132, warp_size: 32,
    ///     l2_cache_bytes: 50 << 20, memory_clock_khz: 2_619_000, memory_bus_bits: 5120,
    ///     single_to_double_ratio: 2,
    /// };
    /// let cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (2048, 1, 1), shared_mem_bytes: 0 };
    /// let err = cfg.check(&limits, 1024, 49152).unwrap_err().to_string();
    /// assert!(err.contains("2048"), "{err}");
    /// ```
    pub fn check(&self, limits: &DeviceLimits, kernel_max_threads: u32, kernel_max_dynamic_shared: u32) -> Result<()> {
        let (gx, gy, gz) = self.grid_dim;
        let (bx, by, bz) = self.block_dim;
        let bad = |msg: String| Err(Error::InvalidLaunch(msg));
        if [gx, gy, gz, bx, by, bz].contains(&0) {
            return bad(format!(
                "grid {:?} and block {:?} must have no zero dimension",
                self.grid_dim, self.block_dim
            ));
        }
        for (axis, (&b, &max)) in ["x", "y", "z"]
            .iter()
            .zip([bx, by, bz].iter().zip(&limits.max_block_dim))
        {
            if b > max {
                return bad(format!("block {axis} = {b} exceeds the device's limit of {max}"));
            }
        }
        for (axis, (&g, &max)) in ["x", "y", "z"]
            .iter()
            .zip([gx, gy, gz].iter().zip(&limits.max_grid_dim))
        {
            if g > max {
                return bad(format!("grid {axis} = {g} exceeds the device's limit of {max}"));
            }
        }
        let threads = bx as u64 * by as u64 * bz as u64;
        if threads > limits.max_threads_per_block as u64 {
            return bad(format!(
                "block {:?} has {threads} threads; the device allows at most {} per block",
                self.block_dim, limits.max_threads_per_block
            ));
        }
        if threads > kernel_max_threads as u64 {
            return bad(format!(
                "block {:?} has {threads} threads; this kernel allows at most {kernel_max_threads} \
                 (its register use limits it)",
                self.block_dim
            ));
        }
        if self.shared_mem_bytes > kernel_max_dynamic_shared {
            return bad(format!(
                "{} bytes of dynamic shared memory requested; the kernel allows {kernel_max_dynamic_shared} \
                 (raise it with Function::set_max_dynamic_shared_memory, up to the device's {} per block)",
                self.shared_mem_bytes, limits.max_shared_per_block_optin
            ));
        }
        Ok(())
    }
}

/// A value that can be passed to a kernel: it gives the driver a pointer to the bytes of the
/// parameter.
///
/// # Safety
/// `as_kernel_param` must return a pointer to a value that stays valid while `self` is borrowed
/// and whose bytes are exactly the kernel parameter's representation.
///
/// ```
/// use cudrv::launch::KernelArg;
/// // Plain data (DeviceRepr types) and device buffers are kernel arguments.
/// fn size_of_arg(a: &impl KernelArg) -> usize {
///     a.param_size()
/// }
/// assert_eq!(size_of_arg(&1.0f32), 4);
/// assert_eq!(size_of_arg(&7u64), 8);
/// ```
pub unsafe trait KernelArg {
    /// A pointer to the parameter's bytes.
    ///
    /// ```
    /// use cudrv::launch::KernelArg;
    /// let x = 3u32;
    /// assert_eq!(x.as_kernel_param() as *const u32, &x as *const u32);
    /// ```
    fn as_kernel_param(&self) -> *mut c_void;

    /// The parameter's size in bytes, checked against the kernel's where the driver reports
    /// its parameters (12.4 and later); [`UNKNOWN_PARAM_SIZE`] skips the check.
    ///
    /// ```
    /// use cudrv::launch::KernelArg;
    /// assert_eq!(2.0f64.param_size(), 8);
    /// ```
    #[inline]
    fn param_size(&self) -> usize {
        UNKNOWN_PARAM_SIZE
    }
}

/// What [`KernelArg::param_size`] returns for an argument whose size is not known.
///
/// ```
/// use cudrv::launch::{KernelArg, UNKNOWN_PARAM_SIZE};
/// use std::ffi::c_void;
/// /// An argument built by hand whose size the caller does not state.
/// struct Raw(*mut c_void);
/// // SAFETY: points at a value that outlives the launch (the caller's duty).
/// unsafe impl KernelArg for Raw {
///     fn as_kernel_param(&self) -> *mut c_void {
///         self.0
///     }
/// }
/// assert_eq!(Raw(std::ptr::null_mut()).param_size(), UNKNOWN_PARAM_SIZE);
/// ```
pub const UNKNOWN_PARAM_SIZE: usize = usize::MAX;

// SAFETY: a DeviceRepr value is its own device representation; the pointer is to self.
unsafe impl<T: DeviceRepr> KernelArg for T {
    #[inline]
    fn as_kernel_param(&self) -> *mut c_void {
        self as *const T as *mut c_void
    }
    #[inline]
    fn param_size(&self) -> usize {
        size_of::<T>()
    }
}

macro_rules! pointer_args {
    ($($ty:ident),*) => {$(
        // SAFETY: the parameter is the buffer's device address, a u64 field of the buffer that
        // lives as long as the borrow.
        unsafe impl<T> KernelArg for $ty<'_, T> {
            #[inline]
            fn as_kernel_param(&self) -> *mut c_void {
                self.ptr_field() as *mut c_void
            }
            #[inline]
            fn param_size(&self) -> usize {
                size_of::<u64>()
            }
        }
    )*};
}
pointer_args!(DeviceView, DeviceViewMut);

// SAFETY: as for views: the parameter is the buffer's device address field.
unsafe impl<T> KernelArg for DeviceBuffer<T> {
    #[inline]
    fn as_kernel_param(&self) -> *mut c_void {
        self.ptr_field() as *mut c_void
    }
    #[inline]
    fn param_size(&self) -> usize {
        size_of::<u64>()
    }
}

/// Most parameters a launch may carry.
///
/// ```no_run
/// use cudrv::launch::MAX_KERNEL_ARGS;
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// let f = ctx.kernel("fill_f32")?;
/// let x = 0u32;
/// let mut l = stream.launch_builder(&f);
/// for _ in 0..=MAX_KERNEL_ARGS {
///     l.arg(&x);
/// }
/// // SAFETY: refused before the driver is called.
/// assert!(unsafe { l.launch(cudrv::LaunchConfig::for_num_elems(1)) }.is_err());
/// # Ok::<(), cudrv::Error>(())
/// ```
pub const MAX_KERNEL_ARGS: usize = 32;

/// Collects a launch's arguments; made by [`Stream::launch_builder`].
///
/// ```no_run
/// use cudrv::{DeviceBuffer, LaunchConfig};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// let fill = ctx.kernel("fill_f32")?;
/// let out = unsafe { DeviceBuffer::<f32>::uninit(&stream, 1000)? };
/// let (value, n) = (2.5f32, 1000usize);
/// let mut launch = stream.launch_builder(&fill);
/// launch.arg(&out).arg(&value).arg(&n);
/// // SAFETY: fill_f32(float* out, float value, size_t n) matches the arguments.
/// unsafe { launch.launch(LaunchConfig::for_num_elems(1000)) }?;
/// # Ok::<(), cudrv::Error>(())
/// ```
pub struct LaunchArgs<'a> {
    stream: &'a Stream,
    function: &'a Function,
    params: [*mut c_void; MAX_KERNEL_ARGS],
    sizes: [usize; MAX_KERNEL_ARGS],
    count: usize,
    /// Launched with programmatic stream serialization (see [`LaunchArgs::overlap_previous`]).
    overlap: bool,
    _borrows: PhantomData<&'a ()>,
}

impl<'a> LaunchArgs<'a> {
    /// Lets the launch begin before the stream's previous kernel has finished (programmatic
    /// dependent launch, compute capability 9.0 and later; elsewhere, while the stream records a
    /// graph, or where the driver lacks `cuLaunchKernelEx`, an ordinary launch). Only for
    /// kernels that execute `griddepcontrol.wait` in every thread before any access to memory
    /// that earlier work on the stream may touch: the blocks may start, and run up to that
    /// instruction, while the previous kernel's last blocks still run.
    #[inline]
    pub(crate) fn overlap_previous(&mut self) -> &mut Self {
        self.overlap = true;
        self
    }

    /// Appends an argument; it stays borrowed until the launch.
    ///
    /// ```no_run
    /// use cudrv::{DeviceBuffer, LaunchConfig};
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// let f = ctx.kernel("fill_f32")?;
    /// let out = DeviceBuffer::<f32>::zeroed(&stream, 10)?;
    /// let (value, n) = (1.0f32, 10usize);
    /// let mut l = stream.launch_builder(&f);
    /// l.arg(&out).arg(&value).arg(&n);
    /// // SAFETY: fill_f32(float* out, float value, size_t n).
    /// unsafe { l.launch(LaunchConfig::for_num_elems(10)) }?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    #[inline]
    pub fn arg<A: KernelArg + ?Sized>(&mut self, arg: &'a A) -> &mut Self {
        if self.count < MAX_KERNEL_ARGS {
            self.params[self.count] = arg.as_kernel_param();
            self.sizes[self.count] = arg.param_size();
        }
        self.count += 1;
        self
    }

    /// Checks `config` and launches the kernel on the stream.
    ///
    /// # Safety
    /// The arguments must match the kernel's parameter list in number, order and type, and the
    /// kernel must only access memory within the buffers passed to it.
    ///
    /// ```no_run
    /// use cudrv::{DeviceBuffer, LaunchConfig};
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// let f = ctx.kernel("fill_f32")?;
    /// let out = DeviceBuffer::<f32>::zeroed(&stream, 10)?;
    /// let (value, n) = (1.0f32, 10usize);
    /// let mut l = stream.launch_builder(&f);
    /// l.arg(&out).arg(&value).arg(&n);
    /// // A block larger than the device allows is refused with the numbers, not launched.
    /// let too_big = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (4096, 1, 1), shared_mem_bytes: 0 };
    /// // SAFETY: fill_f32(float* out, float value, size_t n) matches the arguments.
    /// assert!(unsafe { l.launch(too_big) }.is_err());
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    #[inline]
    pub unsafe fn launch(&mut self, config: LaunchConfig) -> Result<()> {
        if self.count > MAX_KERNEL_ARGS {
            return Err(Error::InvalidArgument(format!(
                "{} arguments given to `{}`; at most {MAX_KERNEL_ARGS} are supported",
                self.count,
                self.function.name()
            )));
        }
        if let Some(kernel) = self.function.param_sizes() {
            check_params(self.function.name(), kernel, &self.sizes[..self.count])?;
        }
        let ctx = self.stream.context();
        if self.function.context().raw() != ctx.raw() {
            return Err(Error::InvalidArgument(format!(
                "kernel `{}` belongs to another context than the stream it is launched on",
                self.function.name()
            )));
        }
        config.check(
            ctx.limits(),
            self.function.attributes().max_threads_per_block,
            self.function.max_dynamic_shared_memory(),
        )?;
        ctx.bind_to_thread()?;
        let (g, b) = (config.grid_dim, config.block_dim);
        let timed = ctx.profiler().begin(self.stream, self.function);
        let overlap = self.overlap && ctx.compute_capability() >= (9, 0) && !self.stream.is_recorded();
        let ex = if overlap {
            sys::resolve::cuLaunchKernelEx().ok()
        } else {
            None
        };
        // SAFETY: the configuration was checked against the limits; the parameter pointers are
        // valid for the borrow 'a; their agreement with the kernel is the caller's contract (and,
        // with `overlap`, its `griddepcontrol.wait` before touching the stream's memory).
        let launched = if let Some(launch_ex) = ex {
            let mut attr = sys::CUlaunchAttribute {
                id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
                ..Default::default()
            };
            attr.value.programmaticStreamSerializationAllowed = 1;
            let cfg = sys::CUlaunchConfig {
                gridDimX: g.0,
                gridDimY: g.1,
                gridDimZ: g.2,
                blockDimX: b.0,
                blockDimY: b.1,
                blockDimZ: b.2,
                sharedMemBytes: config.shared_mem_bytes,
                hStream: self.stream.raw(),
                attrs: &mut attr,
                numAttrs: 1,
            };
            // SAFETY: as above; `cfg` and its one attribute outlive the call.
            let code = unsafe { launch_ex(&cfg, self.function.raw(), self.params.as_mut_ptr(), ptr::null_mut()) };
            crate::driver::check(code, "cuLaunchKernelEx")
        } else {
            // SAFETY: as above.
            unsafe {
                cu!(cuLaunchKernel(
                    self.function.raw(),
                    g.0,
                    g.1,
                    g.2,
                    b.0,
                    b.1,
                    b.2,
                    config.shared_mem_bytes,
                    self.stream.raw(),
                    self.params.as_mut_ptr(),
                    ptr::null_mut()
                ))
            }
        };
        if let Some(t) = timed {
            match launched {
                Ok(()) => ctx.profiler().end(t, self.function, &config, self.stream),
                Err(_) => ctx.profiler().abandon(t),
            }
        }
        launched
    }
}

/// Compares the arguments' sizes with the kernel's parameters (as the driver reports them).
#[inline]
pub(crate) fn check_params(name: &str, kernel: &[usize], given: &[usize]) -> Result<()> {
    if kernel.len() != given.len() {
        return Err(Error::InvalidArgument(format!(
            "kernel `{name}` takes {} parameters; {} arguments were given",
            kernel.len(),
            given.len()
        )));
    }
    for (i, (&want, &got)) in kernel.iter().zip(given).enumerate() {
        if got != UNKNOWN_PARAM_SIZE && got != want {
            return Err(Error::InvalidArgument(format!(
                "kernel `{name}`: argument {i} is {got} bytes; the kernel's parameter {i} is {want} bytes"
            )));
        }
    }
    Ok(())
}

impl Stream {
    /// Starts a launch of `function` on this stream.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// let f = ctx.kernel("fill_f32")?;
    /// let mut launch = stream.launch_builder(&f);
    /// # let _ = &mut launch;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    #[inline]
    pub fn launch_builder<'a>(&'a self, function: &'a Function) -> LaunchArgs<'a> {
        LaunchArgs {
            stream: self,
            function,
            params: [ptr::null_mut(); MAX_KERNEL_ARGS],
            sizes: [UNKNOWN_PARAM_SIZE; MAX_KERNEL_ARGS],
            count: 0,
            overlap: false,
            _borrows: PhantomData,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h100() -> DeviceLimits {
        DeviceLimits {
            max_threads_per_block: 1024,
            max_block_dim: [1024, 1024, 64],
            max_grid_dim: [i32::MAX as u32, 65535, 65535],
            max_shared_per_block: 49152,
            max_shared_per_block_optin: 232448,
            multiprocessor_count: 132,
            warp_size: 32,
            l2_cache_bytes: 50 << 20,
            memory_clock_khz: 2_619_000,
            memory_bus_bits: 5120,
            single_to_double_ratio: 2,
        }
    }

    fn cfg(grid: (u32, u32, u32), block: (u32, u32, u32), smem: u32) -> LaunchConfig {
        LaunchConfig {
            grid_dim: grid,
            block_dim: block,
            shared_mem_bytes: smem,
        }
    }

    #[test]
    fn arguments_are_checked_against_the_kernel_parameters() {
        assert!(check_params("k", &[8, 4, 8], &[8, 4, 8]).is_ok());
        assert!(check_params("k", &[8, 4, 8], &[8, UNKNOWN_PARAM_SIZE, 8]).is_ok());
        let few = check_params("k", &[8, 4, 8], &[8, 4]).unwrap_err().to_string();
        assert!(few.contains("takes 3 parameters; 2 arguments"), "{few}");
        let size = check_params("k", &[8, 4], &[8, 8]).unwrap_err().to_string();
        assert!(
            size.contains("argument 1 is 8 bytes; the kernel's parameter 1 is 4 bytes"),
            "{size}"
        );
    }

    #[test]
    fn for_num_elems_covers_every_element() {
        for n in [0u32, 1, 1023, 1024, 1025, 1 << 20] {
            let c = LaunchConfig::for_num_elems(n);
            assert!(c.grid_dim.0 * c.block_dim.0 >= n);
            assert!(c.grid_dim.0 >= 1);
        }
    }

    #[test]
    fn valid_configs_pass() {
        let l = h100();
        cfg((1, 1, 1), (1024, 1, 1), 0).check(&l, 1024, 49152).unwrap();
        cfg((i32::MAX as u32, 65535, 65535), (32, 32, 1), 49152)
            .check(&l, 1024, 49152)
            .unwrap();
    }

    #[test]
    fn each_limit_is_named_in_its_error() {
        let l = h100();
        let err = |c: LaunchConfig, kt, ks| c.check(&l, kt, ks).unwrap_err().to_string();
        let e = err(cfg((1, 1, 1), (2048, 1, 1), 0), 1024, 0);
        assert!(e.contains("block x = 2048") && e.contains("1024"), "{e}");
        let e = err(cfg((1, 1, 1), (64, 32, 1), 0), 1024, 0);
        assert!(e.contains("2048 threads") && e.contains("1024 per block"), "{e}");
        let e = err(cfg((1, 1, 1), (1, 1, 65), 0), 1024, 0);
        assert!(e.contains("block z = 65"), "{e}");
        let e = err(cfg((1, 70000, 1), (1, 1, 1), 0), 1024, 0);
        assert!(e.contains("grid y = 70000") && e.contains("65535"), "{e}");
        let e = err(cfg((0, 1, 1), (1, 1, 1), 0), 1024, 0);
        assert!(e.contains("zero dimension"), "{e}");
        let e = err(cfg((1, 1, 1), (512, 1, 1), 0), 256, 0);
        assert!(e.contains("this kernel allows at most 256"), "{e}");
        let e = err(cfg((1, 1, 1), (32, 1, 1), 100_000), 1024, 49152);
        assert!(
            e.contains("100000 bytes") && e.contains("set_max_dynamic_shared_memory"),
            "{e}"
        );
    }
}
