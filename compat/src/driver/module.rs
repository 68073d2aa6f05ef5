//! [`CudaModule`] and [`CudaFunction`]: loaded code and its kernels.

use std::ffi::CString;
use std::marker::PhantomData;
use std::sync::Arc;

use super::context::CudaContext;
use super::error::{DriverError, IntoDriver};
use super::stream::CudaStream;
use super::view::CudaViewMut;
use super::{cu, sys};

// ---------------------------------------------------------------------------------------------
// Modules and functions
// ---------------------------------------------------------------------------------------------

/// A loaded module (cudarc's `CudaModule`), backed by [`cudrv::Module`].
///
/// ```no_run
/// # use cudrv_compat::imp::driver::*;
/// # use std::sync::Arc;
/// # let ctx = CudaContext::new(0)?;
/// # let stream = ctx.default_stream();
/// let ptx = cudrv_compat::imp::nvrtc::compile_ptx("extern \"C\" __global__ void k(float* x) { x[0] = 1.0f; }").unwrap();
/// let module = ctx.load_module(ptx)?;
/// let k = module.load_function("k")?;
/// # let _ = k;
/// # Ok::<(), DriverError>(())
/// ```
#[derive(Debug)]
pub struct CudaModule {
    pub(crate) inner: Arc<cudrv::Module>,
    pub(crate) ctx: Arc<CudaContext>,
}

impl CudaModule {
    /// Looks up a kernel by name.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let module = ctx.load_module(cudrv_compat::imp::nvrtc::Ptx::from_file("kernels.ptx"))?;
    /// assert!(module.load_function("no_such_kernel").is_err());
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn load_function(self: &Arc<Self>, fn_name: &str) -> Result<CudaFunction, DriverError> {
        let inner = self.inner.function(fn_name).drv()?;
        Ok(CudaFunction {
            inner,
            module: self.clone(),
        })
    }

    /// A module-scope `__device__` or `__constant__` variable, as a writable byte view.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let module = ctx.load_module(cudrv_compat::imp::nvrtc::Ptx::from_file("kernels.ptx"))?;
    /// let counter = module.get_global("counter", &stream)?; // a __device__ variable's bytes
    /// println!("{} bytes", counter.len());
    /// # Ok::<(), DriverError>(())
    /// ```
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
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let module = ctx.load_module(cudrv_compat::imp::nvrtc::Ptx::from_file("kernels.ptx"))?;
    /// println!("{}", module.cudrv().name());
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn cudrv(&self) -> &Arc<cudrv::Module> {
        &self.inner
    }
}

/// A kernel (cudarc's `CudaFunction`), backed by [`cudrv::Function`].
///
/// ```no_run
/// # use cudrv_compat::imp::driver::*;
/// # use std::sync::Arc;
/// # let ctx = CudaContext::new(0)?;
/// # let stream = ctx.default_stream();
/// let module = ctx.load_module(cudrv_compat::imp::nvrtc::Ptx::from_file("kernels.ptx"))?;
/// let f: CudaFunction = module.load_function("my_kernel")?;
/// println!("{} registers", f.num_regs()?);
/// # Ok::<(), DriverError>(())
/// ```
#[derive(Debug, Clone)]
pub struct CudaFunction {
    pub(crate) inner: cudrv::Function,
    pub(crate) module: Arc<CudaModule>,
}

impl CudaFunction {
    /// The driver's handle.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// # let f = ctx.load_module(cudrv_compat::imp::nvrtc::Ptx::from_file("kernels.ptx"))?.load_function("my_kernel")?;
    /// assert!(!f.cu_function().is_null());
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn cu_function(&self) -> sys::CUfunction {
        self.inner.raw()
    }

    /// The cudrv function underneath.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// # let f = ctx.load_module(cudrv_compat::imp::nvrtc::Ptx::from_file("kernels.ptx"))?.load_function("my_kernel")?;
    /// println!("{:?}", f.cudrv().attributes());
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn cudrv(&self) -> &cudrv::Function {
        &self.inner
    }

    /// Dynamic shared memory available per block when `num_blocks` blocks of `block_size`
    /// threads share a multiprocessor.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// # let f = ctx.load_module(cudrv_compat::imp::nvrtc::Ptx::from_file("kernels.ptx"))?.load_function("my_kernel")?;
    /// let smem = f.occupancy_available_dynamic_smem_per_block(2, 256)?;
    /// println!("{smem} B of dynamic shared memory for 2 blocks of 256 per SM");
    /// # Ok::<(), DriverError>(())
    /// ```
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
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// # let f = ctx.load_module(cudrv_compat::imp::nvrtc::Ptx::from_file("kernels.ptx"))?.load_function("my_kernel")?;
    /// let blocks = f.occupancy_max_active_blocks_per_multiprocessor(256, 0, None)?;
    /// println!("{blocks} blocks of 256 per SM");
    /// # Ok::<(), DriverError>(())
    /// ```
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
                flags as u32
            ))?
        };
        Ok(blocks.max(0) as u32)
    }

    /// (min grid size, block size) that maximise occupancy.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// # let f = ctx.load_module(cudrv_compat::imp::nvrtc::Ptx::from_file("kernels.ptx"))?.load_function("my_kernel")?;
    /// extern "C" fn no_smem(_block: std::ffi::c_int) -> usize {
    ///     0
    /// }
    /// let (min_grid, block) = f.occupancy_max_potential_block_size(no_smem, 0, 0, None)?;
    /// println!("{block} threads, at least {min_grid} blocks");
    /// # Ok::<(), DriverError>(())
    /// ```
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
                flags as u32
            ))?
        };
        Ok((grid.max(0) as u32, block.max(0) as u32))
    }

    /// A function attribute.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// # let f = ctx.load_module(cudrv_compat::imp::nvrtc::Ptx::from_file("kernels.ptx"))?.load_function("my_kernel")?;
    /// let regs = f.get_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_NUM_REGS)?;
    /// assert_eq!(regs, f.num_regs()?);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn get_attribute(&self, attribute: sys::CUfunction_attribute) -> Result<i32, DriverError> {
        self.module.ctx.bind_to_thread()?;
        let mut value = 0;
        // SAFETY: writes one int; the function is live.
        unsafe { cu!(cuFuncGetAttribute(&mut value, attribute, self.cu_function()))? };
        Ok(value)
    }

    /// Registers per thread.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// # let f = ctx.load_module(cudrv_compat::imp::nvrtc::Ptx::from_file("kernels.ptx"))?.load_function("my_kernel")?;
    /// assert!(f.num_regs()? > 0);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn num_regs(&self) -> Result<i32, DriverError> {
        self.get_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_NUM_REGS)
    }

    /// Static shared memory per block, bytes.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// # let f = ctx.load_module(cudrv_compat::imp::nvrtc::Ptx::from_file("kernels.ptx"))?.load_function("my_kernel")?;
    /// println!("{} B static shared memory", f.shared_size_bytes()?);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn shared_size_bytes(&self) -> Result<i32, DriverError> {
        self.get_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
    }

    /// Constant memory, bytes.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// # let f = ctx.load_module(cudrv_compat::imp::nvrtc::Ptx::from_file("kernels.ptx"))?.load_function("my_kernel")?;
    /// println!("{} B constant memory", f.const_size_bytes()?);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn const_size_bytes(&self) -> Result<i32, DriverError> {
        self.get_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES)
    }

    /// Local memory per thread, bytes.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// # let f = ctx.load_module(cudrv_compat::imp::nvrtc::Ptx::from_file("kernels.ptx"))?.load_function("my_kernel")?;
    /// assert_eq!(f.local_size_bytes()?, 0, "the kernel spills");
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn local_size_bytes(&self) -> Result<i32, DriverError> {
        self.get_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)
    }

    /// Most threads per block this kernel can launch with.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// # let f = ctx.load_module(cudrv_compat::imp::nvrtc::Ptx::from_file("kernels.ptx"))?.load_function("my_kernel")?;
    /// assert!(f.max_threads_per_block()? >= 32);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn max_threads_per_block(&self) -> Result<i32, DriverError> {
        self.get_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
    }

    /// PTX version the kernel was compiled from.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// # let f = ctx.load_module(cudrv_compat::imp::nvrtc::Ptx::from_file("kernels.ptx"))?.load_function("my_kernel")?;
    /// println!("PTX ISA {}", f.ptx_version()?);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn ptx_version(&self) -> Result<i32, DriverError> {
        self.get_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_PTX_VERSION)
    }

    /// Binary architecture version.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// # let f = ctx.load_module(cudrv_compat::imp::nvrtc::Ptx::from_file("kernels.ptx"))?.load_function("my_kernel")?;
    /// println!("sm_{}", f.binary_version()?);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn binary_version(&self) -> Result<i32, DriverError> {
        self.get_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_BINARY_VERSION)
    }

    /// Sets a function attribute. Raising `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES` goes
    /// through cudrv, so its launch checks know the new limit.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// # let f = ctx.load_module(cudrv_compat::imp::nvrtc::Ptx::from_file("kernels.ptx"))?.load_function("my_kernel")?;
    /// f.set_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 96 * 1024)?;
    /// # Ok::<(), DriverError>(())
    /// ```
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
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// # let f = ctx.load_module(cudrv_compat::imp::nvrtc::Ptx::from_file("kernels.ptx"))?.load_function("my_kernel")?;
    /// f.set_function_cache_config(sys::CUfunc_cache::CU_FUNC_CACHE_PREFER_L1)?;
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn set_function_cache_config(&self, attribute: sys::CUfunc_cache) -> Result<(), DriverError> {
        self.module.ctx.bind_to_thread()?;
        // SAFETY: a plain value for a live function.
        unsafe { cu!(cuFuncSetCacheConfig(self.cu_function(), attribute)) }
    }
}
