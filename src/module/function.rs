//! A kernel of a loaded module: [`Function`] (with its context) and the registry's
//! context-free [`FunctionCore`], their attributes, parameter sizes, shared-memory limit and
//! occupancy answers.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use super::Module;
use crate::context::Context;
use crate::driver::cu;
use crate::error::{Error, Result};
use crate::sys::{self, CUfunction_attribute as FnAttr, CUresult};

/// A kernel's attributes, read when the function is looked up.
///
/// ```no_run
/// let ctx = cudrv::Context::new(0)?;
/// let a = *ctx.kernel("fill_f32")?.attributes();
/// println!("{} registers, {} B local, sm_{}", a.num_regs, a.local_size_bytes, a.binary_version);
/// assert!(a.max_threads_per_block >= 32);
/// # Ok::<(), cudrv::Error>(())
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FunctionAttributes {
    /// Most threads per block this kernel can launch with (register use can lower it below
    /// the device's limit).
    pub max_threads_per_block: u32,
    /// Statically allocated shared memory per block, bytes.
    pub shared_size_bytes: u32,
    /// Registers per thread.
    pub num_regs: u32,
    /// Local memory per thread, bytes (spills and local arrays).
    pub local_size_bytes: u32,
    /// PTX ISA version the kernel was compiled from (e.g. 80).
    pub ptx_version: u32,
    /// Binary architecture it was compiled for (e.g. 90).
    pub binary_version: u32,
}

/// A kernel in a loaded module. Cheap to clone. It keeps its module and its context alive.
///
/// ```no_run
/// use cudrv::{DeviceBuffer, DeviceSlice, LaunchConfig};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// let m = cudrv::Module::from_ptx(&ctx, include_str!("../../examples/kernels/add_one.ptx"), "add_one")?;
/// let add_one = m.function("add_one")?;
/// let data = DeviceBuffer::from_slice(&stream, &[1.0f32, 2.0, 3.0])?;
/// let n = 3u32;
/// let mut launch = stream.launch_builder(&add_one);
/// launch.arg(&data).arg(&n);
/// // SAFETY: add_one(float* data, u32 n) touches data[0..n].
/// unsafe { launch.launch(LaunchConfig::for_num_elems(n)) }?;
/// assert_eq!(data.to_vec()?, vec![2.0, 3.0, 4.0]);
/// # Ok::<(), cudrv::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Function {
    core: FunctionCore,
    ctx: Arc<Context>,
}

/// (block size, dynamic shared memory) and the blocks per multiprocessor (or clusters) the
/// driver answered.
type OccupancyAnswer = ((u32, usize), u32);

/// The answer remembered in `memo` for `key`, else `ask`'s, remembered (at most 64 answers per
/// function; a failed question is not).
fn remembered(
    memo: &parking_lot::Mutex<Vec<OccupancyAnswer>>,
    key: (u32, usize),
    ask: impl FnOnce() -> Result<u32>,
) -> Result<u32> {
    if let Some(&(_, answer)) = memo.lock().iter().find(|(k, _)| *k == key) {
        return Ok(answer);
    }
    let answer = ask()?;
    let mut memo = memo.lock();
    if memo.len() < 64 && !memo.iter().any(|(k, _)| *k == key) {
        memo.push((key, answer));
    }
    Ok(answer)
}

/// A function without a reference to its context: what a context's kernel registry caches
/// (a strong reference there would be a cycle through the context).
#[derive(Debug, Clone)]
pub(crate) struct FunctionCore {
    raw: sys::CUfunction,
    module: Arc<Module>,
    name: Arc<str>,
    attributes: FunctionAttributes,
    max_dynamic_shared: Arc<AtomicU32>,
    /// Occupancy answers so far, by (block size, dynamic shared memory): see
    /// [`Function::max_active_blocks_cached`].
    occupancy: Arc<parking_lot::Mutex<Vec<OccupancyAnswer>>>,
    /// Cluster occupancy answers so far, likewise: see [`Function::max_active_clusters_cached`].
    clusters: Arc<parking_lot::Mutex<Vec<OccupancyAnswer>>>,
    /// The parameters' sizes in bytes, where the driver reports them (`cuFuncGetParamInfo`,
    /// CUDA 12.4 and later).
    params: Option<Arc<[usize]>>,
}

// SAFETY: a CUfunction handle may be used from any thread; the module it belongs to is kept
// alive by the Arc.
unsafe impl Send for FunctionCore {}
// SAFETY: as above.
unsafe impl Sync for FunctionCore {}

impl FunctionCore {
    /// The function, holding `ctx` (the context of its module).
    pub(crate) fn with_context(&self, ctx: &Arc<Context>) -> Function {
        Function {
            core: self.clone(),
            ctx: ctx.clone(),
        }
    }

    pub(super) fn new(raw: sys::CUfunction, module: Arc<Module>, name: &str) -> Result<FunctionCore> {
        let get = |attr| -> Result<u32> {
            let mut v = 0;
            // SAFETY: writes one int through a valid pointer; `raw` is a live function.
            unsafe { cu!(cuFuncGetAttribute(&mut v, attr, raw))? };
            Ok(v.max(0) as u32)
        };
        let attributes = FunctionAttributes {
            max_threads_per_block: get(FnAttr::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            shared_size_bytes: get(FnAttr::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
            num_regs: get(FnAttr::CU_FUNC_ATTRIBUTE_NUM_REGS)?,
            local_size_bytes: get(FnAttr::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
            ptx_version: get(FnAttr::CU_FUNC_ATTRIBUTE_PTX_VERSION)?,
            binary_version: get(FnAttr::CU_FUNC_ATTRIBUTE_BINARY_VERSION)?,
        };
        let max_dynamic = get(FnAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)?;
        Ok(FunctionCore {
            params: param_sizes(raw),
            raw,
            module,
            name: name.into(),
            attributes,
            max_dynamic_shared: Arc::new(AtomicU32::new(max_dynamic)),
            occupancy: Arc::default(),
            clusters: Arc::default(),
        })
    }
}

/// The sizes of a kernel's parameters, or `None` where the driver cannot say (before 12.4).
fn param_sizes(raw: sys::CUfunction) -> Option<Arc<[usize]>> {
    let info = sys::resolve::cuFuncGetParamInfo().ok()?;
    let mut sizes = Vec::new();
    for index in 0..=crate::launch::MAX_KERNEL_ARGS * 8 {
        let (mut offset, mut size) = (0usize, 0usize);
        // SAFETY: writes two size_t through valid pointers; `raw` is a live function. An index
        // past the last parameter is CUDA_ERROR_INVALID_VALUE, which ends the list.
        match unsafe { info(raw, index, &mut offset, &mut size) } {
            CUresult::CUDA_SUCCESS => sizes.push(size),
            CUresult::CUDA_ERROR_INVALID_VALUE => return Some(sizes.into()),
            _ => return None,
        }
    }
    None
}

impl Function {
    /// The sizes in bytes of the kernel's parameters, as the driver reports them (CUDA 12.4 and
    /// later; `None` before). A launch whose arguments differ in number or size is refused.
    ///
    /// ```no_run
    /// # let ctx = cudrv::Context::new(0)?;
    /// let m = cudrv::Module::from_ptx(&ctx, include_str!("../../examples/kernels/add_one.ptx"), "add_one")?;
    /// // (float* data, u32 n), where the driver reports parameters (12.4 and later).
    /// if let Some(sizes) = m.function("add_one")?.param_sizes() {
    ///     assert_eq!(sizes, &[8, 4]);
    /// }
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn param_sizes(&self) -> Option<&[usize]> {
        self.core.params.as_deref()
    }

    /// The context the function runs in (it keeps it alive).
    ///
    /// ```no_run
    /// # use std::sync::Arc;
    /// let ctx = cudrv::Context::new(0)?;
    /// let f = ctx.kernel("fill_f32")?;
    /// assert!(Arc::ptr_eq(f.context(), &ctx));
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }

    /// The driver's handle.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let f = ctx.kernel("fill_f32")?;
    /// // For driver calls cudrv does not wrap (cuFuncGetAttribute, profiler hooks, ...).
    /// let handle: cudrv::sys::CUfunction = f.raw();
    /// assert!(!handle.is_null());
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn raw(&self) -> sys::CUfunction {
        self.core.raw
    }

    /// The kernel's name.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// assert_eq!(ctx.kernel("fill_f32")?.name(), "fill_f32");
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn name(&self) -> &str {
        &self.core.name
    }

    /// The module the kernel lives in.
    ///
    /// ```no_run
    /// # let ctx = cudrv::Context::new(0)?;
    /// let m = cudrv::Module::from_ptx(&ctx, include_str!("../../examples/kernels/add_one.ptx"), "add_one")?;
    /// assert_eq!(m.function("add_one")?.module().name(), "add_one");
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn module(&self) -> &Arc<Module> {
        &self.core.module
    }

    /// The attributes read when the function was looked up.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let f = ctx.kernel("fill_f32")?;
    /// assert_eq!(f.attributes().local_size_bytes, 0, "fill_f32 spills");
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn attributes(&self) -> &FunctionAttributes {
        &self.core.attributes
    }

    /// Dynamic shared memory a launch may request, bytes.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let f = ctx.kernel("fill_f32")?;
    /// assert!(f.max_dynamic_shared_memory() + f.attributes().shared_size_bytes <= 48 * 1024);
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn max_dynamic_shared_memory(&self) -> u32 {
        self.core.max_dynamic_shared.load(Ordering::Relaxed)
    }

    /// Raises (or lowers) the dynamic shared memory a launch may request, up to the device's
    /// opt-in limit minus the kernel's static shared memory.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let f = ctx.kernel("fill_f32")?;
    /// f.set_max_dynamic_shared_memory(100 * 1024)?; // above the 48 KiB default
    /// assert_eq!(f.max_dynamic_shared_memory(), 100 * 1024);
    /// // More than the device has is a clear error.
    /// assert!(f.set_max_dynamic_shared_memory(u32::MAX).is_err());
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn set_max_dynamic_shared_memory(&self, bytes: u32) -> Result<()> {
        let limits = self.ctx.limits();
        let room = limits
            .max_shared_per_block_optin
            .saturating_sub(self.core.attributes.shared_size_bytes);
        if bytes > room {
            return Err(Error::InvalidArgument(format!(
                "kernel `{}` asks for {bytes} bytes of dynamic shared memory; the device allows {} per block \
                 and the kernel uses {} statically, leaving {room}",
                self.core.name, limits.max_shared_per_block_optin, self.core.attributes.shared_size_bytes
            )));
        }
        let attr = FnAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
        // SAFETY: sets one attribute of a live function to a value within the device's limit.
        unsafe { cu!(cuFuncSetAttribute(self.core.raw, attr, bytes as i32))? };
        self.core.max_dynamic_shared.store(bytes, Ordering::Relaxed);
        Ok(())
    }

    /// Blocks of `block_size` threads that fit on one multiprocessor at once.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let f = ctx.kernel("fill_f32")?;
    /// let blocks = f.max_active_blocks_per_multiprocessor(256, 0)?;
    /// let waves = 10_000u32.div_ceil(blocks * ctx.limits().multiprocessor_count);
    /// println!("{blocks} blocks of 256 per SM; 10000 blocks take {waves} waves");
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn max_active_blocks_per_multiprocessor(&self, block_size: u32, dynamic_shared: usize) -> Result<u32> {
        let mut blocks = 0;
        // SAFETY: writes one int through a valid pointer; `raw` is a live function.
        unsafe {
            cu!(cuOccupancyMaxActiveBlocksPerMultiprocessor(
                &mut blocks,
                self.core.raw,
                block_size as i32,
                dynamic_shared
            ))?
        };
        Ok(blocks.max(0) as u32)
    }

    /// [`Function::max_active_blocks_per_multiprocessor`], asked of the driver once per block
    /// size and shared memory and remembered with the function (its clones and its registry
    /// entry share the memory): for cudrv's own launch paths, which ask it on every call of a
    /// GEMV. The answer depends only on the kernel's resources and the device, which cudrv never
    /// changes after loading (it sets no carveout).
    pub(crate) fn max_active_blocks_cached(&self, block_size: u32, dynamic_shared: usize) -> Result<u32> {
        remembered(&self.core.occupancy, (block_size, dynamic_shared), || {
            self.max_active_blocks_per_multiprocessor(block_size, dynamic_shared)
        })
    }

    /// Thread block clusters of a kernel compiled with a cluster shape (`__cluster_dims__`) that
    /// fit on the device at once, with blocks of `block` threads and `dynamic_shared` bytes of
    /// dynamic shared memory; `grid` is any grid the cluster shape divides (e.g. one cluster).
    /// The driver places a cluster's blocks within one GPU processing cluster, so this can be
    /// fewer than the multiprocessors' block slots divided by the cluster size. Needs CUDA 12.0's
    /// `cuOccupancyMaxActiveClusters` (an error from older drivers, never a panic).
    ///
    /// A `grid` of more than 8 blocks asks about a non-portable cluster size (the H100 and H200
    /// take 16): the function is first allowed such sizes
    /// (`CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED`), which its launches need too. A
    /// device that does not take the size answers 0 clusters or an error.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// // gemv_nvc_f32: clusters of 1 x 8 x 1 blocks of 32 x 8 threads (sm_90).
    /// let f = ctx.kernel("gemv_nvc_f32")?;
    /// let clusters = f.max_active_clusters((1, 8, 1), (32, 8, 1), 0)?;
    /// println!("{clusters} clusters of 8 at once");
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn max_active_clusters(
        &self,
        grid: (u32, u32, u32),
        block: (u32, u32, u32),
        dynamic_shared: u32,
    ) -> Result<u32> {
        let config = sys::CUlaunchConfig {
            gridDimX: grid.0,
            gridDimY: grid.1,
            gridDimZ: grid.2,
            blockDimX: block.0,
            blockDimY: block.1,
            blockDimZ: block.2,
            sharedMemBytes: dynamic_shared,
            hStream: std::ptr::null_mut(),
            attrs: std::ptr::null_mut(),
            numAttrs: 0,
        };
        if u64::from(grid.0) * u64::from(grid.1) * u64::from(grid.2) > 8 {
            let attr = FnAttr::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED;
            // SAFETY: sets one boolean attribute of a live function.
            unsafe { cu!(cuFuncSetAttribute(self.core.raw, attr, 1))? };
        }
        let mut clusters = 0;
        // SAFETY: writes one int through a valid pointer; `config` (no attributes) outlives the
        // call and `raw` is a live function.
        unsafe { cu!(cuOccupancyMaxActiveClusters(&mut clusters, self.core.raw, &config))? };
        Ok(clusters.max(0) as u32)
    }

    /// [`Function::max_active_clusters`] remembered per block size and shared memory, as
    /// [`Function::max_active_blocks_cached`] is (the grid is one cluster of `cluster` blocks).
    pub(crate) fn max_active_clusters_cached(
        &self,
        cluster: (u32, u32, u32),
        block: (u32, u32, u32),
        dynamic_shared: u32,
    ) -> Result<u32> {
        let key = (block.0 * block.1 * block.2, dynamic_shared as usize);
        remembered(&self.core.clusters, key, || {
            self.max_active_clusters(cluster, block, dynamic_shared)
        })
    }

    /// The block size that maximises occupancy, and the smallest grid that fills the device
    /// with it: (min_grid_size, block_size).
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let f = ctx.kernel("fill_f32")?;
    /// let (min_grid, block) = f.max_potential_block_size(0)?;
    /// assert!(block % 32 == 0 && block <= f.attributes().max_threads_per_block);
    /// # let _ = min_grid;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn max_potential_block_size(&self, dynamic_shared: usize) -> Result<(u32, u32)> {
        let (mut grid, mut block) = (0, 0);
        // SAFETY: writes two ints through valid pointers; no callback; limit 0 means none.
        unsafe {
            cu!(cuOccupancyMaxPotentialBlockSize(
                &mut grid,
                &mut block,
                self.core.raw,
                None,
                dynamic_shared,
                0
            ))?
        };
        Ok((grid.max(0) as u32, block.max(0) as u32))
    }
}
