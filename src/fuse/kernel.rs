//! A compiled fusion and its checked launches.

use std::collections::HashMap;
use std::ffi::c_void;
use std::marker::PhantomData;
use std::sync::Arc;

use parking_lot::Mutex;

use super::binding::Binding;
use super::codegen::{row_reductions, Layout};
use super::{FuseType, Fusion};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::launch::{KernelArg, LaunchConfig};
use crate::memory::{use_on, DeviceBuffer, DeviceSlice, DeviceSliceMut};
use crate::module::{Function, Module};
use crate::nvrtc::Program;
use crate::stream::Stream;

/// Threads per block (the kernels' `__launch_bounds__`).
const BLOCK: u32 = 256;
/// Blocks per multiprocessor of the elementwise schedule, and of the row schedule.
const ELEMENTWISE_BLOCKS_PER_SM: u32 = 8;
const ROW_BLOCKS_PER_SM: u32 = 16;

/// The first line of PTX written by [`super::emit_ptx`]: names the fusion and the hash of its
/// source, so that a stale file is refused instead of run.
pub(crate) fn signature(fusion: &Fusion, source: &str) -> String {
    let key = crate::kernel_cache::CacheKey::for_parts("fusion", &[source.as_bytes()]);
    format!("// cudrv fusion {} {}", fusion.name, key.hex())
}

impl Fusion {
    /// Generates the kernel, compiles it for the device of `ctx` with NVRTC (a cubin; PTX for
    /// the driver to finish where this NVRTC does not know the device) and loads it. A program
    /// compiled before on this machine comes from cudrv's kernel cache without loading NVRTC.
    ///
    /// ```no_run
    /// use cudrv::fuse::{DType, Fusion};
    /// let ctx = cudrv::Context::new(0)?;
    /// let mut f = Fusion::new("axpy_relu", DType::F16);
    /// let (x, y, a) = (f.input("x"), f.input("y"), f.scalar("a"));
    /// f.output("out", (a * x + y).relu());
    /// let kernel = f.compile(&ctx)?;
    /// # let _ = kernel;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn compile(&self, ctx: &Arc<Context>) -> Result<FusedKernel> {
        let module = compile_module(ctx, self.source()?, &self.name)?;
        FusedKernel::new(self, module.function(&self.name)?)
    }
}

/// Compiles generated CUDA C++ for the device of `ctx` and loads it: a cubin, or PTX for the
/// driver to finish where this NVRTC does not know the device (a newer GPU).
pub(crate) fn compile_module(ctx: &Arc<Context>, source: String, name: &str) -> Result<Arc<Module>> {
    let file = format!("{name}.cu");
    match Program::new(source.clone())
        .name(file.clone())
        .cubin()
        .arch_for(ctx)
        .compile()
    {
        Ok(c) => match c.cubin() {
            Some(image) => Module::from_image(ctx, image, name),
            None => Module::from_ptx(ctx, c.ptx(), name),
        },
        Err(Error::Nvrtc { .. }) => {
            let (major, _) = ctx.compute_capability();
            let arch = if major >= 8 { "compute_80" } else { "compute_70" };
            let c = Program::new(source).name(file).arch(arch).compile()?;
            Module::from_ptx(ctx, c.ptx(), name)
        }
        Err(e) => Err(e),
    }
}

/// A fusion compiled for one context: launch it with [`FusedKernel::launch`].
///
/// ```no_run
/// use cudrv::fuse::{DType, Fusion};
/// use cudrv::{DeviceBuffer, DeviceSlice};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// let mut f = Fusion::new("scaled_sum", DType::F64);
/// let (x, s) = (f.input("x"), f.scalar("s"));
/// f.sum("total", x * s);
/// let k = f.compile(&ctx)?;
/// let x = DeviceBuffer::from_slice(&stream, &[1.0f64, 2.0, 3.0])?;
/// let mut total = DeviceBuffer::<f64>::zeroed(&stream, 1)?;
/// k.launch(&stream, 1, 3).input("x", &x).scalar("s", 2.0).output("total", &mut total).run()?;
/// assert_eq!(total.to_vec()?, vec![12.0]);
/// # Ok::<(), cudrv::Error>(())
/// ```
#[derive(Debug)]
pub struct FusedKernel {
    fusion: Fusion,
    function: Function,
    layout: Layout,
    by_rows: bool,
    /// Per stream: the whole reductions' partials and arrival counter (zeroed once; the kernel
    /// puts the counter back to zero).
    scratch: Mutex<HashMap<usize, DeviceBuffer<u64>>>,
}

impl FusedKernel {
    fn new(fusion: &Fusion, function: Function) -> Result<FusedKernel> {
        Ok(FusedKernel {
            layout: Layout::of(fusion),
            by_rows: !row_reductions(fusion).is_empty(),
            fusion: fusion.clone(),
            function,
            scratch: Mutex::new(HashMap::new()),
        })
    }

    /// Loads PTX that [`super::emit_ptx`] wrote for `fusion` (at build time, say), without
    /// NVRTC. PTX written for another description of the fusion is refused.
    ///
    /// ```no_run
    /// use cudrv::fuse::{DType, FusedKernel, Fusion};
    /// let ctx = cudrv::Context::new(0)?;
    /// let mut f = Fusion::new("twice", DType::F32);
    /// let x = f.input("x");
    /// f.output("y", x * 2.0);
    /// let ptx = std::fs::read_to_string(concat!(env!("OUT_DIR"), "/twice.ptx")).unwrap();
    /// let k = FusedKernel::from_ptx(&ctx, &f, &ptx)?;
    /// # let _ = k;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn from_ptx(ctx: &Arc<Context>, fusion: &Fusion, ptx: &str) -> Result<FusedKernel> {
        let want = signature(fusion, &fusion.source()?);
        if ptx.lines().next() != Some(want.as_str()) {
            return Err(Error::InvalidArgument(format!(
                "this PTX was not generated from this description of fusion `{}` (its first line \
                 should be `{want}`); generate it again with cudrv::fuse::emit_ptx",
                fusion.name
            )));
        }
        let module = Module::from_ptx(ctx, ptx, &fusion.name)?;
        FusedKernel::new(fusion, module.function(&fusion.name)?)
    }

    /// The description the kernel was made from.
    ///
    /// ```no_run
    /// # use cudrv::fuse::{DType, Fusion};
    /// # let ctx = cudrv::Context::new(0)?;
    /// # let mut f = Fusion::new("k", DType::F32);
    /// # let x = f.input("x");
    /// # f.output("y", x);
    /// let k = f.compile(&ctx)?;
    /// assert_eq!(k.fusion().name(), "k");
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn fusion(&self) -> &Fusion {
        &self.fusion
    }

    /// The loaded kernel function.
    ///
    /// ```no_run
    /// # use cudrv::fuse::{DType, Fusion};
    /// # let ctx = cudrv::Context::new(0)?;
    /// # let mut f = Fusion::new("k", DType::F32);
    /// # let x = f.input("x");
    /// # f.output("y", x);
    /// let k = f.compile(&ctx)?;
    /// assert_eq!(k.function().name(), "k");
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn function(&self) -> &Function {
        &self.function
    }

    /// Starts a launch over `rows x cols` elements on `stream`; name every input, scalar and
    /// output, then [`FusedLaunch::run`].
    ///
    /// ```no_run
    /// # use cudrv::fuse::{DType, Fusion};
    /// # use cudrv::DeviceBuffer;
    /// # let ctx = cudrv::Context::new(0)?;
    /// # let stream = ctx.new_stream()?;
    /// # let mut f = Fusion::new("k", DType::F32);
    /// # let x = f.input("x");
    /// # f.output("y", x);
    /// let k = f.compile(&ctx)?;
    /// let x = DeviceBuffer::from_slice(&stream, &[1.0f32; 6])?;
    /// let mut y = DeviceBuffer::<f32>::zeroed(&stream, 5)?;
    /// // y holds 5 elements, not 2 x 3: refused before anything runs.
    /// assert!(k.launch(&stream, 2, 3).input("x", &x).output("y", &mut y).run().is_err());
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn launch<'a>(&'a self, stream: &'a Arc<Stream>, rows: usize, cols: usize) -> FusedLaunch<'a> {
        FusedLaunch {
            kernel: self,
            stream,
            binding: Binding::new(&self.fusion, &self.layout, rows, cols),
            _borrows: PhantomData,
        }
    }

    /// The reduction scratch of `stream`, made (zeroed) on first use.
    fn scratch(&self, stream: &Arc<Stream>) -> Result<u64> {
        let mut map = self.scratch.lock();
        let buf = match map.entry(stream.raw() as usize) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let max_grid = self.function.context().limits().multiprocessor_count * ROW_BLOCKS_PER_SM;
                let words = self.layout.scratch_words(max_grid as usize);
                e.insert(DeviceBuffer::<u64>::zeroed(stream, words)?)
            }
        };
        Ok(buf.device_ptr())
    }
}

/// One launch of a [`FusedKernel`] being put together: each argument is checked as it is given
/// (its name, element type and length); the first mistake is returned by [`FusedLaunch::run`]
/// and nothing runs.
///
/// ```no_run
/// # use cudrv::fuse::{DType, Fusion};
/// # use cudrv::DeviceBuffer;
/// # let ctx = cudrv::Context::new(0)?;
/// # let stream = ctx.new_stream()?;
/// # let mut f = Fusion::new("k", DType::F32);
/// # let x = f.input("x");
/// # f.output("y", x);
/// let k = f.compile(&ctx)?;
/// let x = DeviceBuffer::from_slice(&stream, &[1.0f64; 4])?;
/// let mut y = DeviceBuffer::<f32>::zeroed(&stream, 4)?;
/// let err = k.launch(&stream, 1, 4).input("x", &x).output("y", &mut y).run().unwrap_err();
/// assert!(err.to_string().contains("f64"));
/// # Ok::<(), cudrv::Error>(())
/// ```
pub struct FusedLaunch<'a> {
    kernel: &'a FusedKernel,
    stream: &'a Arc<Stream>,
    binding: Binding<'a>,
    _borrows: PhantomData<&'a mut ()>,
}

impl<'a> FusedLaunch<'a> {
    /// Binds the input buffer `name`.
    ///
    /// ```no_run
    /// # use cudrv::fuse::{DType, Fusion};
    /// # use cudrv::DeviceBuffer;
    /// # let ctx = cudrv::Context::new(0)?;
    /// # let stream = ctx.new_stream()?;
    /// # let mut f = Fusion::new("k", DType::F32);
    /// # let x = f.input("x");
    /// # f.output("y", x);
    /// # let k = f.compile(&ctx)?;
    /// let x = DeviceBuffer::from_slice(&stream, &[1.0f32; 4])?;
    /// let mut y = DeviceBuffer::<f32>::zeroed(&stream, 4)?;
    /// k.launch(&stream, 1, 4).input("x", &x).output("y", &mut y).run()?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn input<T: FuseType>(mut self, name: &str, buffer: &'a impl DeviceSlice<T>) -> Self {
        if self.binding.input::<T>(name, buffer.device_ptr(), buffer.len()) {
            let joined = use_on(buffer, self.stream);
            self.binding.fail(joined);
        }
        self
    }

    /// Gives the scalar `name` its value for this launch.
    ///
    /// ```no_run
    /// # use cudrv::fuse::{DType, Fusion};
    /// # use cudrv::DeviceBuffer;
    /// # let ctx = cudrv::Context::new(0)?;
    /// # let stream = ctx.new_stream()?;
    /// let mut f = Fusion::new("shift", DType::F32);
    /// let (x, c) = (f.input("x"), f.scalar("c"));
    /// f.output("y", x + c);
    /// let k = f.compile(&ctx)?;
    /// let x = DeviceBuffer::from_slice(&stream, &[1.0f32; 4])?;
    /// let mut y = DeviceBuffer::<f32>::zeroed(&stream, 4)?;
    /// k.launch(&stream, 1, 4).input("x", &x).scalar("c", 0.5).output("y", &mut y).run()?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn scalar(mut self, name: &str, value: f64) -> Self {
        self.binding.scalar(name, value);
        self
    }

    /// Binds the output buffer `name`: `rows x cols`, `cols`, `rows` or 1 element after the
    /// shape of its value (1 for a whole reduction).
    ///
    /// ```no_run
    /// # use cudrv::fuse::{DType, Fusion};
    /// # use cudrv::DeviceBuffer;
    /// # let ctx = cudrv::Context::new(0)?;
    /// # let stream = ctx.new_stream()?;
    /// let mut f = Fusion::new("row_sums", DType::F32);
    /// let x = f.input("x");
    /// f.output("s", x.sum_rows());
    /// let k = f.compile(&ctx)?;
    /// let x = DeviceBuffer::from_slice(&stream, &[1.0f32; 6])?;
    /// let mut s = DeviceBuffer::<f32>::zeroed(&stream, 2)?; // one per row
    /// k.launch(&stream, 2, 3).input("x", &x).output("s", &mut s).run()?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn output<T: FuseType>(mut self, name: &str, buffer: &'a mut impl DeviceSliceMut<T>) -> Self {
        if self.binding.output::<T>(name, buffer.device_ptr(), buffer.len()) {
            let joined = use_on(&*buffer, self.stream);
            self.binding.fail(joined);
        }
        self
    }

    /// Checks that everything was given and launches the kernel.
    ///
    /// ```no_run
    /// # use cudrv::fuse::{DType, Fusion};
    /// # use cudrv::DeviceBuffer;
    /// # let ctx = cudrv::Context::new(0)?;
    /// # let stream = ctx.new_stream()?;
    /// # let mut f = Fusion::new("k", DType::F32);
    /// # let x = f.input("x");
    /// # f.output("y", x);
    /// # let k = f.compile(&ctx)?;
    /// let x = DeviceBuffer::from_slice(&stream, &[1.0f32; 4])?;
    /// // The output was not given: an error naming it.
    /// let err = k.launch(&stream, 1, 4).input("x", &x).run().unwrap_err();
    /// assert!(err.to_string().contains("`y`"));
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn run(self) -> Result<()> {
        let bound = self.binding.finish()?;
        let mut words = bound.words;
        let total = bound.rows * bound.cols;
        let sms = self.kernel.function.context().limits().multiprocessor_count.max(1);
        let grid = if self.kernel.by_rows {
            bound.rows.clamp(1, (sms * ROW_BLOCKS_PER_SM) as usize)
        } else {
            total
                .div_ceil(BLOCK as usize)
                .clamp(1, (sms * ELEMENTWISE_BLOCKS_PER_SM) as usize)
        } as u32;
        if self.kernel.layout.scratch.is_some() {
            let base = self.kernel.scratch(self.stream)?;
            self.kernel.layout.bind_scratch(&mut words, base);
        }
        let params = Words(&words);
        let mut l = self.stream.launch_builder(&self.kernel.function);
        l.arg(&params);
        let config = LaunchConfig {
            grid_dim: (grid, 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the kernel takes one by-value array of `words` 64-bit words laid out by
        // `Layout`; every buffer word points at a buffer of this context checked to hold the
        // elements its shape reads or writes for `rows x cols`, and the scratch holds a partial
        // per block of at most `sms * ROW_BLOCKS_PER_SM` blocks per whole reduction.
        unsafe { l.launch(config) }
    }
}

/// The kernel's parameter: the array of words, passed by value.
struct Words<'a>(&'a [u64]);

// SAFETY: points at the words, which live as long as the borrow; the parameter is exactly
// `len * 8` bytes.
unsafe impl KernelArg for Words<'_> {
    fn as_kernel_param(&self) -> *mut c_void {
        self.0.as_ptr() as *mut c_void
    }
    fn param_size(&self) -> usize {
        self.0.len() * 8
    }
}
