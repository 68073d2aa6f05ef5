//! [`DeviceRepr`] and [`LaunchAsync`]: cudarc 0.12's launch of a kernel with a tuple of
//! arguments.

use std::ffi::c_void;

use super::device::{CudaFunction, CudaStream};
use super::slice::{CudaSlice, CudaView, CudaViewMut};
use super::{sys, DriverError, LaunchConfig};

/// A type that can be passed to a kernel: the launch passes a pointer to the value's bytes
/// (cudarc 0.12's `DeviceRepr`, with its `as_kernel_param`).
///
/// # Safety
/// The value's bytes must be what the kernel's parameter expects (`#[repr(C)]` or a primitive),
/// and any bytes the device writes into memory of the type must be a valid value.
///
/// ```
/// #[repr(C)]
/// struct Params { n: u32, scale: f32 }
/// // SAFETY: repr(C) plain data; every bit pattern is a valid Params.
/// unsafe impl cudrv_compat_012::driver::DeviceRepr for Params {}
/// ```
pub unsafe trait DeviceRepr {
    /// A pointer to the parameter's bytes, valid while `self` is borrowed.
    ///
    /// ```
    /// use cudrv_compat_012::driver::DeviceRepr;
    /// let n = 5u32;
    /// assert_eq!(n.as_kernel_param() as *const u32, &n as *const u32);
    /// ```
    #[inline(always)]
    fn as_kernel_param(&self) -> *mut c_void {
        self as *const Self as *mut c_void
    }
}

macro_rules! plain {
    ($($t:ty),*) => {$(
        // SAFETY: a primitive: fixed layout.
        unsafe impl DeviceRepr for $t {}
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

// SAFETY: the parameter is the slice's device-pointer field, which lives as long as the borrow.
unsafe impl<T: DeviceRepr> DeviceRepr for &CudaSlice<T> {
    #[inline(always)]
    fn as_kernel_param(&self) -> *mut c_void {
        super::DevicePtr::device_ptr(*self) as *const sys::CUdeviceptr as *mut c_void
    }
}
// SAFETY: as above.
unsafe impl<T: DeviceRepr> DeviceRepr for &mut CudaSlice<T> {
    #[inline(always)]
    fn as_kernel_param(&self) -> *mut c_void {
        super::DevicePtr::device_ptr(&**self) as *const sys::CUdeviceptr as *mut c_void
    }
}
// SAFETY: the parameter is the view's device-pointer field.
unsafe impl<T: DeviceRepr> DeviceRepr for &CudaView<'_, T> {
    #[inline(always)]
    fn as_kernel_param(&self) -> *mut c_void {
        &self.ptr as *const sys::CUdeviceptr as *mut c_void
    }
}
// SAFETY: as above.
unsafe impl<T: DeviceRepr> DeviceRepr for &mut CudaViewMut<'_, T> {
    #[inline(always)]
    fn as_kernel_param(&self) -> *mut c_void {
        &self.ptr as *const sys::CUdeviceptr as *mut c_void
    }
}

/// Launches a kernel with a tuple of [`DeviceRepr`] arguments (one to twelve), or with a ready
/// array of parameter pointers (cudarc 0.12's `LaunchAsync`). The configuration is checked
/// against the kernel and device limits first (`CUDA_ERROR_INVALID_VALUE` with the numbers).
///
/// ```no_run
/// use cudrv_compat_012::driver::{CudaDevice, LaunchAsync, LaunchConfig};
/// let dev = CudaDevice::new(0)?;
/// let ptx = cudrv_compat_012::nvrtc::compile_ptx(
///     "extern \"C\" __global__ void fill(float *x, float v, int n) { int i = threadIdx.x; if (i < n) x[i] = v; }",
/// ).unwrap();
/// dev.load_ptx(ptx, "m", &["fill"])?;
/// let mut x = dev.alloc_zeros::<f32>(4)?;
/// let f = dev.get_func("m", "fill").unwrap();
/// // SAFETY: the arguments match `fill`'s parameters.
/// unsafe { f.launch(LaunchConfig::for_num_elems(4), (&mut x, 2.0f32, 4i32)) }?;
/// assert_eq!(dev.dtoh_sync_copy(&x)?, vec![2.0; 4]);
/// # Ok::<(), cudrv_compat_012::driver::DriverError>(())
/// ```
///
/// # Safety
/// Implementations must pass one pointer per kernel parameter, valid during the launch call.
pub unsafe trait LaunchAsync<Params> {
    /// Launches on the device's stream.
    ///
    /// # Safety
    /// The arguments must match the kernel's parameters in number, order and type, and the
    /// kernel must only touch memory it is given.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # let dev = CudaDevice::new(0)?;
    /// dev.load_ptx(cudrv_compat_012::nvrtc::Ptx::from_file("kernels.ptx"), "kernels", &["scale"])?;
    /// let f = dev.get_func("kernels", "scale").unwrap();
    /// let mut x = dev.alloc_zeros::<f32>(1024)?;
    /// // SAFETY: scale(float* x, float a, size_t n) matches.
    /// unsafe { f.launch(LaunchConfig::for_num_elems(1024), (&mut x, 2.0f32, 1024usize)) }?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    unsafe fn launch(self, cfg: LaunchConfig, params: Params) -> Result<(), DriverError>;

    /// Launches on `stream`.
    ///
    /// # Safety
    /// As for [`launch`](Self::launch).
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # let dev = CudaDevice::new(0)?;
    /// dev.load_ptx(cudrv_compat_012::nvrtc::Ptx::from_file("kernels.ptx"), "kernels", &["scale"])?;
    /// let f = dev.get_func("kernels", "scale").unwrap();
    /// let mut x = dev.alloc_zeros::<f32>(1024)?;
    /// let side = dev.fork_default_stream()?;
    /// // SAFETY: scale(float* x, float a, size_t n) matches; `x` is ordered on `side`.
    /// unsafe { f.launch_on_stream(&side, LaunchConfig::for_num_elems(1024), (&mut x, 2.0f32, 1024usize)) }?;
    /// dev.wait_for(&side)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    unsafe fn launch_on_stream(self, stream: &CudaStream, cfg: LaunchConfig, params: Params)
        -> Result<(), DriverError>;

    /// A cooperative launch on the device's stream.
    ///
    /// # Safety
    /// As for [`launch`](Self::launch).
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # let dev = CudaDevice::new(0)?;
    /// dev.load_ptx(cudrv_compat_012::nvrtc::Ptx::from_file("kernels.ptx"), "kernels", &["scale"])?;
    /// let f = dev.get_func("kernels", "scale").unwrap();
    /// let mut x = dev.alloc_zeros::<f32>(1024)?;
    /// let cfg = LaunchConfig { grid_dim: (4, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
    /// // SAFETY: scale(float* x, float a, size_t n) matches; 4 blocks are resident at once.
    /// unsafe { f.launch_cooperative(cfg, (&mut x, 2.0f32, 1024usize)) }?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    unsafe fn launch_cooperative(self, cfg: LaunchConfig, params: Params) -> Result<(), DriverError>;
}

impl CudaFunction {
    /// # Safety
    /// As for [`LaunchAsync::launch`].
    unsafe fn launch_params(
        &self,
        stream: Option<&CudaStream>,
        cfg: LaunchConfig,
        params: &mut [*mut c_void],
        cooperative: bool,
    ) -> Result<(), DriverError> {
        let stream = stream.map_or(&self.device.stream, |s| &s.inner);
        // SAFETY: forwarded; the caller upholds the contract.
        unsafe { self.inner.launch_raw(stream, cfg, params, cooperative) }
    }
}

// SAFETY: the caller's array is passed as it is.
unsafe impl LaunchAsync<&mut [*mut c_void]> for CudaFunction {
    unsafe fn launch(self, cfg: LaunchConfig, args: &mut [*mut c_void]) -> Result<(), DriverError> {
        // SAFETY: forwarded.
        unsafe { self.launch_params(None, cfg, args, false) }
    }
    unsafe fn launch_on_stream(
        self,
        stream: &CudaStream,
        cfg: LaunchConfig,
        args: &mut [*mut c_void],
    ) -> Result<(), DriverError> {
        // SAFETY: forwarded.
        unsafe { self.launch_params(Some(stream), cfg, args, false) }
    }
    unsafe fn launch_cooperative(self, cfg: LaunchConfig, args: &mut [*mut c_void]) -> Result<(), DriverError> {
        // SAFETY: forwarded.
        unsafe { self.launch_params(None, cfg, args, true) }
    }
}

// SAFETY: as above.
unsafe impl LaunchAsync<&mut Vec<*mut c_void>> for CudaFunction {
    unsafe fn launch(self, cfg: LaunchConfig, args: &mut Vec<*mut c_void>) -> Result<(), DriverError> {
        // SAFETY: forwarded.
        unsafe { self.launch_params(None, cfg, args, false) }
    }
    unsafe fn launch_on_stream(
        self,
        stream: &CudaStream,
        cfg: LaunchConfig,
        args: &mut Vec<*mut c_void>,
    ) -> Result<(), DriverError> {
        // SAFETY: forwarded.
        unsafe { self.launch_params(Some(stream), cfg, args, false) }
    }
    unsafe fn launch_cooperative(self, cfg: LaunchConfig, args: &mut Vec<*mut c_void>) -> Result<(), DriverError> {
        // SAFETY: forwarded.
        unsafe { self.launch_params(None, cfg, args, true) }
    }
}

macro_rules! impl_launch {
    ($($v:ident $i:tt),+) => {
        // SAFETY: one pointer per tuple element, each into the tuple, which lives until the
        // launch call returns.
        unsafe impl<$($v: DeviceRepr),+> LaunchAsync<($($v,)+)> for CudaFunction {
            unsafe fn launch(self, cfg: LaunchConfig, args: ($($v,)+)) -> Result<(), DriverError> {
                let params = &mut [$(args.$i.as_kernel_param()),+];
                // SAFETY: forwarded.
                unsafe { self.launch_params(None, cfg, params, false) }
            }
            unsafe fn launch_on_stream(self, stream: &CudaStream, cfg: LaunchConfig, args: ($($v,)+)) -> Result<(), DriverError> {
                let params = &mut [$(args.$i.as_kernel_param()),+];
                // SAFETY: forwarded.
                unsafe { self.launch_params(Some(stream), cfg, params, false) }
            }
            unsafe fn launch_cooperative(self, cfg: LaunchConfig, args: ($($v,)+)) -> Result<(), DriverError> {
                let params = &mut [$(args.$i.as_kernel_param()),+];
                // SAFETY: forwarded.
                unsafe { self.launch_params(None, cfg, params, true) }
            }
        }
    };
}
impl_launch!(A 0);
impl_launch!(A 0, B 1);
impl_launch!(A 0, B 1, C 2);
impl_launch!(A 0, B 1, C 2, D 3);
impl_launch!(A 0, B 1, C 2, D 3, E 4);
impl_launch!(A 0, B 1, C 2, D 3, E 4, F 5);
impl_launch!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
impl_launch!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
impl_launch!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
impl_launch!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
impl_launch!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
impl_launch!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);
