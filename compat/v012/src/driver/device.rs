//! [`CudaDevice`], its [`CudaStream`]s and the [`CudaFunction`]s of its named modules.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use cudrv_compat::imp::driver as compat;
use cudrv_compat::imp::nvrtc::Ptx;

use super::{sys, DriverError};

/// A device, its primary context and the stream its work goes to (cudarc 0.12's `CudaDevice`).
///
/// Allocations are `Arc<CudaDevice>`-bound: a [`CudaSlice`](super::CudaSlice) keeps its device
/// alive. Modules are loaded under a name ([`load_ptx`](Self::load_ptx)) and their functions
/// looked up with [`get_func`](Self::get_func).
///
/// ```no_run
/// use cudrv_compat_012::driver::{sys, CudaDevice};
/// let dev = CudaDevice::new(0)?;
/// let sms = dev.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
/// println!("{} has {sms} SMs", dev.name()?);
/// # Ok::<(), cudrv_compat_012::driver::DriverError>(())
/// ```
#[derive(Debug)]
pub struct CudaDevice {
    pub(crate) ctx: Arc<compat::CudaContext>,
    pub(crate) stream: Arc<compat::CudaStream>,
    /// The stream's handle, kept so that [`cu_stream`](Self::cu_stream) can lend a reference.
    cu_stream: sys::CUstream,
    cu_device: sys::CUdevice,
    cu_ctx: sys::CUcontext,
    modules: RwLock<BTreeMap<String, Module>>,
}

// SAFETY: the handles are driver objects usable from any thread; the module table is locked.
unsafe impl Send for CudaDevice {}
// SAFETY: as above.
unsafe impl Sync for CudaDevice {}

#[derive(Debug)]
struct Module {
    functions: BTreeMap<String, compat::CudaFunction>,
}

impl CudaDevice {
    /// Device `ordinal`'s primary context; work goes to the legacy default stream.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let dev = CudaDevice::new(0)?; // device 0 with its own stream
    /// assert_eq!(dev.ordinal(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(ordinal: usize) -> Result<Arc<Self>, DriverError> {
        let ctx = compat::CudaContext::new(ordinal)?;
        let stream = ctx.default_stream();
        Ok(Self::with(ctx, stream))
    }

    /// As [`new`](Self::new), with a non-blocking stream of the device's own for its work.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let dev = CudaDevice::new_with_stream(0)?;
    /// dev.synchronize()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new_with_stream(ordinal: usize) -> Result<Arc<Self>, DriverError> {
        let ctx = compat::CudaContext::new(ordinal)?;
        let stream = ctx.new_stream()?;
        Ok(Self::with(ctx, stream))
    }

    fn with(ctx: Arc<compat::CudaContext>, stream: Arc<compat::CudaStream>) -> Arc<Self> {
        Arc::new(CudaDevice {
            cu_stream: stream.cu_stream(),
            cu_device: ctx.cu_device(),
            cu_ctx: ctx.cu_ctx(),
            ctx,
            stream,
            modules: RwLock::new(BTreeMap::new()),
        })
    }

    /// The number of devices.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// println!("{} devices", CudaDevice::count()?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn count() -> Result<i32, DriverError> {
        compat::CudaContext::device_count()
    }

    /// The device's ordinal.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// assert_eq!(dev.ordinal(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn ordinal(&self) -> usize {
        self.ctx.ordinal()
    }

    /// The device's name.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// println!("{}", dev.name()?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn name(&self) -> Result<String, DriverError> {
        self.ctx.name()
    }

    /// The driver's device handle.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let raw: sys::CUdevice = *dev.cu_device();
    /// # let _ = raw;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cu_device(&self) -> &sys::CUdevice {
        &self.cu_device
    }

    /// The primary context's handle.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// assert!(!dev.cu_primary_ctx().is_null());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cu_primary_ctx(&self) -> &sys::CUcontext {
        &self.cu_ctx
    }

    /// The handle of the stream the device's work goes to (NULL: the legacy default stream).
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let s: sys::CUstream = *dev.cu_stream(); // for raw `result` calls on the device's stream
    /// # let _ = s;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cu_stream(&self) -> &sys::CUstream {
        &self.cu_stream
    }

    /// A device attribute.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let warp = dev.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_WARP_SIZE)?;
    /// assert_eq!(warp, 32);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn attribute(&self, attrib: sys::CUdevice_attribute) -> Result<i32, DriverError> {
        self.ctx.attribute(attrib)
    }

    /// Makes the device's context current on the calling thread.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let d = dev.clone();
    /// std::thread::spawn(move || d.bind_to_thread()).join().unwrap()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn bind_to_thread(&self) -> Result<(), DriverError> {
        self.ctx.bind_to_thread()
    }

    /// Waits for all work of the context.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let x = dev.alloc_zeros::<f32>(1 << 20)?;
    /// dev.synchronize()?;
    /// # drop(x);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn synchronize(self: &Arc<Self>) -> Result<(), DriverError> {
        self.ctx.synchronize()
    }

    /// The `cudrv-compat` context underneath, to use cudrv's or the newer era's API beside this one.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// // The cudarc 0.19-shaped context underneath.
    /// println!("{:?}", dev.context().compute_capability()?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn context(&self) -> &Arc<compat::CudaContext> {
        &self.ctx
    }

    /// The `cudrv-compat` stream the device's work goes to.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let s = dev.stream();
    /// s.synchronize()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stream(&self) -> &Arc<compat::CudaStream> {
        &self.stream
    }

    /// Loads `ptx` (source, file or image) as module `module_name` and looks up `func_names`
    /// in it. A name the module lacks is `CUDA_ERROR_NOT_FOUND`, and nothing is registered.
    /// Loading a module under a name already used replaces it.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let ptx = cudrv_compat_012::nvrtc::compile_ptx("extern \"C\" __global__ void one(float* x) { x[0] = 1.0f; }")?;
    /// dev.load_ptx(ptx, "ones", &["one"])?;
    /// assert!(dev.has_func("ones", "one"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn load_ptx(
        self: &Arc<Self>,
        ptx: Ptx,
        module_name: &str,
        func_names: &[&'static str],
    ) -> Result<(), DriverError> {
        let module = self.ctx.load_module(ptx)?;
        let mut functions = BTreeMap::new();
        for &name in func_names {
            functions.insert(name.to_string(), module.load_function(name)?);
        }
        self.modules
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(module_name.to_string(), Module { functions });
        Ok(())
    }

    /// Whether module `module_name` was loaded with function `func_name`.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// dev.load_ptx(cudrv_compat_012::nvrtc::Ptx::from_file("kernels.ptx"), "kernels", &["scale"])?;
    /// assert!(dev.has_func("kernels", "scale") && !dev.has_func("kernels", "other"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn has_func(self: &Arc<Self>, module_name: &str, func_name: &str) -> bool {
        self.modules
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(module_name)
            .is_some_and(|m| m.functions.contains_key(func_name))
    }

    /// Function `func_name` of module `module_name`, if it was loaded.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// dev.load_ptx(cudrv_compat_012::nvrtc::Ptx::from_file("kernels.ptx"), "kernels", &["scale"])?;
    /// let scale = dev.get_func("kernels", "scale").expect("loaded above");
    /// # let _ = scale;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_func(self: &Arc<Self>, module_name: &str, func_name: &str) -> Option<CudaFunction> {
        let modules = self.modules.read().unwrap_or_else(|e| e.into_inner());
        let inner = modules.get(module_name)?.functions.get(func_name)?.clone();
        Some(CudaFunction {
            inner,
            device: self.clone(),
        })
    }

    /// A new non-blocking stream whose work starts after the work queued so far on the
    /// device's stream.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let side = dev.fork_default_stream()?; // starts after the device stream's work so far
    /// dev.wait_for(&side)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn fork_default_stream(self: &Arc<Self>) -> Result<CudaStream, DriverError> {
        let inner = self.stream.fork()?;
        Ok(CudaStream {
            stream: inner.cu_stream(),
            inner,
            device: self.clone(),
        })
    }

    /// Makes later work on the device's stream wait for the work queued so far on `stream`.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let side = dev.fork_default_stream()?;
    /// // ... work on `side` ...
    /// dev.wait_for(&side)?; // the device stream continues after it
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_for(self: &Arc<Self>, stream: &CudaStream) -> Result<(), DriverError> {
        self.stream.join(&stream.inner)
    }
}

/// A stream forked from the device's stream (cudarc 0.12's `CudaStream`). When dropped, the
/// device's stream waits for its work, then it is destroyed.
///
/// ```no_run
/// # use cudrv_compat_012::driver::*;
/// # use std::sync::Arc;
/// # let dev = CudaDevice::new(0)?;
/// let side: CudaStream = dev.fork_default_stream()?;
/// side.wait_for_default()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct CudaStream {
    /// The driver's handle.
    pub stream: sys::CUstream,
    pub(crate) inner: Arc<compat::CudaStream>,
    device: Arc<CudaDevice>,
}

// SAFETY: a stream handle may be used from any thread; the driver orders work on it.
unsafe impl Send for CudaStream {}
// SAFETY: as above.
unsafe impl Sync for CudaStream {}

impl CudaStream {
    /// Makes later work on this stream wait for the work queued so far on the device's stream.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let side = dev.fork_default_stream()?;
    /// side.wait_for_default()?; // `side` waits for the device stream's work so far
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_for_default(&self) -> Result<(), DriverError> {
        self.inner.join(&self.device.stream)
    }

    /// The `cudrv-compat` stream underneath.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let side = dev.fork_default_stream()?;
    /// side.compat().synchronize()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn compat(&self) -> &Arc<compat::CudaStream> {
        &self.inner
    }
}

impl Drop for CudaStream {
    fn drop(&mut self) {
        // Work queued on the device's stream after this point (frees included) must not
        // overtake this stream's; an error is kept by the context (`check_err`).
        let ctx = self.device.ctx.clone();
        ctx.record_err(self.device.stream.join(&self.inner));
    }
}

/// A kernel of a loaded module (cudarc 0.12's `CudaFunction`); launched with
/// [`LaunchAsync`](super::LaunchAsync).
///
/// ```no_run
/// # use cudrv_compat_012::driver::*;
/// # use std::sync::Arc;
/// # let dev = CudaDevice::new(0)?;
/// dev.load_ptx(cudrv_compat_012::nvrtc::Ptx::from_file("kernels.ptx"), "kernels", &["scale"])?;
/// let f: CudaFunction = dev.get_func("kernels", "scale").unwrap();
/// let mut x = dev.alloc_zeros::<f32>(1024)?;
/// // SAFETY: scale(float* x, float a, size_t n) matches the arguments.
/// unsafe { f.launch(LaunchConfig::for_num_elems(1024), (&mut x, 2.0f32, 1024usize)) }?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct CudaFunction {
    pub(crate) inner: compat::CudaFunction,
    pub(crate) device: Arc<CudaDevice>,
}

impl CudaFunction {
    /// Dynamic shared memory available per block with `num_blocks` blocks of `block_size`
    /// threads per multiprocessor.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// dev.load_ptx(cudrv_compat_012::nvrtc::Ptx::from_file("kernels.ptx"), "kernels", &["scale"])?;
    /// let f = dev.get_func("kernels", "scale").unwrap();
    /// println!("{} B", f.occupancy_available_dynamic_smem_per_block(2, 256)?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn occupancy_available_dynamic_smem_per_block(
        &self,
        num_blocks: u32,
        block_size: u32,
    ) -> Result<usize, DriverError> {
        self.inner
            .occupancy_available_dynamic_smem_per_block(num_blocks, block_size)
    }

    /// Blocks of `block_size` threads that fit on one multiprocessor.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// dev.load_ptx(cudrv_compat_012::nvrtc::Ptx::from_file("kernels.ptx"), "kernels", &["scale"])?;
    /// let f = dev.get_func("kernels", "scale").unwrap();
    /// println!("{} blocks per SM", f.occupancy_max_active_blocks_per_multiprocessor(256, 0, None)?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn occupancy_max_active_blocks_per_multiprocessor(
        &self,
        block_size: u32,
        dynamic_smem_size: usize,
        flags: Option<sys::CUoccupancy_flags_enum>,
    ) -> Result<u32, DriverError> {
        self.inner
            .occupancy_max_active_blocks_per_multiprocessor(block_size, dynamic_smem_size, flags)
    }

    /// Sets a function attribute.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// dev.load_ptx(cudrv_compat_012::nvrtc::Ptx::from_file("kernels.ptx"), "kernels", &["scale"])?;
    /// let f = dev.get_func("kernels", "scale").unwrap();
    /// f.set_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 64 * 1024)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_attribute(&self, attribute: sys::CUfunction_attribute, value: i32) -> Result<(), DriverError> {
        self.inner.set_attribute(attribute, value)
    }

    /// The `cudrv-compat` function underneath.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// dev.load_ptx(cudrv_compat_012::nvrtc::Ptx::from_file("kernels.ptx"), "kernels", &["scale"])?;
    /// let f = dev.get_func("kernels", "scale").unwrap();
    /// println!("{} registers", f.compat().num_regs()?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn compat(&self) -> &compat::CudaFunction {
        &self.inner
    }
}
