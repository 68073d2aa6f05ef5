//! GEMM: `C = act(alpha * op(A) * op(B) + beta * C + bias)`, plain and strided-batched.

use std::fmt::Debug;
use std::mem::size_of;
use std::sync::Arc;

use super::tma::{self, TensorMap, TmaElement, TmaMatrix};
use super::{batched_span, span, Activation, Layout, MathMode, Transpose};
use crate::error::{bail_invalid, Result};
use crate::launch::LaunchConfig;
use crate::memory::{use_on, DeviceBuffer, DeviceRepr, DeviceSlice, DeviceSliceMut};
use crate::module::Function;
use crate::stream::Stream;

/// Element types GEMM is built for: `f32`, `f64`, `half::f16`, `half::bf16`.
pub trait GemmType: DeviceRepr + Send + Sync + super::sealed::Sealed {
    /// The type of `alpha` and `beta`: `f64` for `f64`, `f32` for the others.
    type Scalar: Copy + Debug + PartialEq + Into<f64> + From<u8> + Send + Sync + 'static;
    /// The kernel-name part of the type.
    const NAME: &'static str;
    /// Whether the type runs on the tensor-core kernels (f32 only with [`MathMode::Tf32`]).
    const TENSOR_CORES: bool;
}
impl GemmType for f32 {
    type Scalar = f32;
    const NAME: &'static str = "f32";
    const TENSOR_CORES: bool = false;
}
impl GemmType for f64 {
    type Scalar = f64;
    const NAME: &'static str = "f64";
    const TENSOR_CORES: bool = true;
}
impl GemmType for half::f16 {
    type Scalar = f32;
    const NAME: &'static str = "f16";
    const TENSOR_CORES: bool = true;
}
impl GemmType for half::bf16 {
    type Scalar = f32;
    const NAME: &'static str = "bf16";
    const TENSOR_CORES: bool = true;
}

/// Which kernel family a [`Gemm`] runs on.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum Kernel {
    /// Chosen by type, math mode, shape, alignment and compute capability.
    #[default]
    Auto,
    /// The general CUDA-core kernel (any shape, leading dimension and alignment).
    Simt,
    /// A tensor-core kernel (the sm_90a wgmma kernel where it applies; for f64 on compute
    /// capability 9.0 and later the sm_90 DMMA kernels (m16n8k4 / m16n8k8); else mma.sync); an error
    /// when the operands do not meet the alignment rules or the type has no tensor-core path
    /// (f32 without [`MathMode::Tf32`]).
    TensorCore,
    /// The sm_80 mma.sync tensor-core kernels, even on Hopper (for f64: the m8n8k4 DMMA kernel).
    MmaSync,
    /// The Hopper kernel: `wgmma` fed by the tensor memory accelerator (f16, bf16, tf32 on compute
    /// capability 9.0); an error where it does not apply.
    Wgmma,
}

/// The block tile of a [`Gemm`] (a tuning knob; [`Tile::Auto`] picks by shape).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum Tile {
    /// Chosen from the problem size and the number of multiprocessors.
    #[default]
    Auto,
    /// 64 x 64 (every kernel family; f32 on the CUDA cores: two k-slices of 2 warps, 8 x 8 per
    /// thread).
    Small,
    /// 128 x 128 (wgmma: 2 consumer warpgroups of 64 x 128; mma.sync: 4 warps; sm_90 f64 DMMA:
    /// 8 warps; f32 CUDA cores: 8 x 8 per thread, or 128 x 256 with 8 x 16 when A and
    /// B allow 16-byte copies; the f64, f16 and bf16 CUDA-core kernels and the sm_80 f64 DMMA
    /// kernel have no large tile and use 64 x 64).
    Large,
    /// 128 x 256 (wgmma: 2 consumer warpgroups of 64 x 256); elsewhere the same as `Large`,
    /// except that f32 on the CUDA cores splits k over 2-4 blocks per tile when the 128 x 256
    /// tiles alone would fill less than 9/10 of the multiprocessors (batch 1).
    Wide,
    /// 128 x 64 (wgmma: 2 consumer warpgroups of 64 x 64, for mid-size problems that would
    /// leave multiprocessors idle with larger tiles); f32 on the CUDA cores: 32 x 64 (two
    /// k-slices of 2 warps, 8 x 4 per thread), or 128 x 64 (4 warps, 8 x 8 per thread) with a
    /// forced [`SplitK::Parts`]; f64 on the sm_90 DMMA kernels: 128 x 64 with 8 warps;
    /// elsewhere the same as `Small`.
    Narrow,
}

/// How a [`Gemm`] divides its k dimension between thread blocks (a tuning knob; [`SplitK::Auto`]
/// picks by shape).
///
/// A split gives a problem too small to fill the GPU more blocks: the blocks of one output tile
/// each sum a share of k, and their partial tiles are added in a fixed order, so the result does
/// not depend on timing. f64 on compute capability 9.0 and later splits inside a thread block
/// cluster, whose blocks add their partial tiles in each other's shared memory; f32 on the CUDA
/// cores splits its 128 x 256 tile (a forced [`Tile::Wide`], or the automatic tile when k is
/// long enough for every block to keep at least 1024 of it) and its 128 x 64 tile (long k over
/// few rows or columns, such as 64 x 8192 x 8192, or [`SplitK::Parts`]) through a scratch
/// buffer.
///
/// ```
/// use cudrv::blas::{Gemm, SplitK, Tile, Transpose};
/// // 1536^3 in f64: each 64 x 64 output tile summed by 2 blocks, k = 768 each.
/// let g = Gemm::<f64>::new(Transpose::N, Transpose::N, 1536, 1536, 1536)
///     .tile(Tile::Small)
///     .split_k(SplitK::Parts(2));
/// # let _ = g;
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum SplitK {
    /// Chosen from the problem size and the number of multiprocessors.
    #[default]
    Auto,
    /// Never split k.
    Off,
    /// Split k in this many parts: 2 for f64 on compute capability 9.0 and later, with the
    /// 64 x 64 tile ([`Tile::Small`]) or the automatic one; 2-4 for f32 on the CUDA cores, on
    /// the 128 x 64 tile ([`Tile::Auto`] or [`Tile::Narrow`], batch 1); other kernels and tiles
    /// have no forced split, and asking for one is an `InvalidArgument`. 0 and 1 mean no split.
    Parts(u32),
}

/// The kernels' parameter block (`struct GemmParams` in ptx/gemm_tc.cu and ptx/gemm_simt.cu).
#[derive(Copy, Clone, Debug, Default)]
#[repr(C)]
struct GemmParams {
    x: u64,
    y: u64,
    d: u64,
    bias: u64,
    m: i64,
    n: i64,
    k: i64,
    ldx: i64,
    ldy: i64,
    ldd: i64,
    sx: i64,
    sy: i64,
    sd: i64,
    alpha: f64,
    beta: f64,
    act: i32,
    batch: i32,
}
// SAFETY: repr(C) plain data matching the CUDA struct field for field (8-byte fields, then two
// i32s: no padding); every bit pattern is valid.
unsafe impl DeviceRepr for GemmParams {}

/// Most grid.y a launch uses (the batch index); larger batches take several launches.
const MAX_BATCH_PER_LAUNCH: usize = 65535;
/// Tensor-core pipeline depth (the kernels' STAGES).
const TC_STAGES: u32 = 4;
/// Dynamic shared memory of the wgmma kernels (every tile): stages, the epilogue's four 8 KiB
/// TMA staging boxes (which also hold the two 9 KiB chunks of the other epilogues), alignment and
/// barriers.
const WG_SMEM: u32 = 4 * (128 + 256) * 128 + 4 * 64 * 128 + 2048;

/// A GEMM description: `C = act(alpha * op(A) * op(B) + beta * C + bias)`, built with
/// [`Gemm::new`] and the setters, run with [`Gemm::run`] or [`Gemm::run_with_bias`].
///
/// `op(A)` is `m x k`, `op(B)` is `k x n`, `C` is `m x n`. Leading dimensions default to the
/// tightest (the stored rows for column-major, the stored columns for row-major). With
/// `beta == 0`, `C` is not read (as in cuBLAS: NaN in `C` does not propagate); with `alpha == 0`
/// or `k == 0`, `A` and `B` are not read. The bias (see [`Gemm::run_with_bias`]) has one element per
/// row of `C` (column-major) or per column of `C` (row-major): the `nn.Linear` convention.
#[derive(Copy, Clone, Debug)]
pub struct Gemm<S> {
    trans_a: Transpose,
    trans_b: Transpose,
    m: usize,
    n: usize,
    k: usize,
    alpha: S,
    beta: S,
    ld: [Option<usize>; 3],
    layout: Layout,
    batch: usize,
    strides: [usize; 3],
    math: MathMode,
    activation: Activation,
    kernel: Kernel,
    tile: Tile,
    split: SplitK,
}

impl<S: Copy + From<u8>> Gemm<S> {
    /// `C = op(A) * op(B)` (alpha 1, beta 0), column-major, tight leading dimensions, one batch.
    pub fn new(trans_a: Transpose, trans_b: Transpose, m: usize, n: usize, k: usize) -> Self {
        Gemm {
            trans_a,
            trans_b,
            m,
            n,
            k,
            alpha: S::from(1),
            beta: S::from(0),
            ld: [None; 3],
            layout: Layout::ColMajor,
            batch: 1,
            strides: [0; 3],
            math: MathMode::Exact,
            activation: Activation::None,
            kernel: Kernel::Auto,
            tile: Tile::Auto,
            split: SplitK::Auto,
        }
    }

    /// Sets `alpha`.
    pub fn alpha(mut self, alpha: S) -> Self {
        self.alpha = alpha;
        self
    }

    /// Sets `beta`.
    pub fn beta(mut self, beta: S) -> Self {
        self.beta = beta;
        self
    }

    /// Sets the leading dimensions of A, B and C.
    pub fn ld(mut self, lda: usize, ldb: usize, ldc: usize) -> Self {
        self.ld = [Some(lda), Some(ldb), Some(ldc)];
        self
    }

    /// Sets the storage order of all three matrices.
    pub fn layout(mut self, layout: Layout) -> Self {
        self.layout = layout;
        self
    }

    /// Makes it a strided batch: matrix `i` of A starts at element `i * stride_a`, and so on.
    /// A and B strides may be 0 (one matrix shared by every product); C's must keep the outputs
    /// apart.
    pub fn batched(mut self, batch: usize, stride_a: usize, stride_b: usize, stride_c: usize) -> Self {
        self.batch = batch;
        self.strides = [stride_a, stride_b, stride_c];
        self
    }

    /// Sets the math mode (only f32 reads it).
    pub fn math(mut self, math: MathMode) -> Self {
        self.math = math;
        self
    }

    /// Sets the epilogue's activation.
    pub fn activation(mut self, activation: Activation) -> Self {
        self.activation = activation;
        self
    }

    /// Forces a kernel family (tests and benches); [`Kernel::Auto`] by default.
    pub fn kernel(mut self, kernel: Kernel) -> Self {
        self.kernel = kernel;
        self
    }

    /// Forces a block tile (tests and benches); [`Tile::Auto`] by default.
    pub fn tile(mut self, tile: Tile) -> Self {
        self.tile = tile;
        self
    }

    /// Forces how k is split between blocks (tests and benches); [`SplitK::Auto`] by default.
    pub fn split_k(mut self, split: SplitK) -> Self {
        self.split = split;
        self
    }
}

/// The validated problem in the kernels' row-major form (see ptx/gemm_tc.cu).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Plan {
    /// Kernel-name suffix: the column-major ops of A and B.
    pub ops: String,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    /// X = column-major op(B) source, Y = column-major op(A) source, D = C.
    pub ldx: usize,
    pub ldy: usize,
    pub ldd: usize,
    pub sx: usize,
    pub sy: usize,
    pub sd: usize,
    /// Whether the X and Y operands are swapped relative to the caller's A and B.
    pub swapped: bool,
}

/// Checks one operand: stored `rows x cols` in `layout`, leading dimension `ld`, `len` elements.
fn check_operand(
    what: &str,
    layout: Layout,
    (rows, cols): (usize, usize),
    ld: usize,
    len: usize,
    batch: usize,
    stride: usize,
) -> Result<()> {
    let (inner, outer, dim) = match layout {
        Layout::ColMajor => (rows, cols, "rows"),
        Layout::RowMajor => (cols, rows, "columns"),
    };
    if ld < inner.max(1) {
        bail_invalid!("gemm: ld{what} = {ld} is less than the {dim} of {what} ({inner}, stored {rows} x {cols})");
    }
    let one = span(inner, outer, ld)
        .ok_or_else(|| crate::error::invalid(format_args!("gemm: {what} ({rows} x {cols}, ld {ld}) overflows")))?;
    let need = batched_span(one, batch, stride).ok_or_else(|| {
        crate::error::invalid(format_args!("gemm: {what} batch ({batch} x stride {stride}) overflows"))
    })?;
    if len < need {
        if batch > 1 {
            bail_invalid!(
                "gemm: {what} has {len} elements; {batch} matrices of {rows} x {cols} (ld {ld}) with stride {stride} need {need}"
            );
        }
        bail_invalid!("gemm: {what} has {len} elements; {rows} x {cols} with ld {ld} needs {need}");
    }
    if i64::try_from(need).is_err() {
        bail_invalid!("gemm: {what} spans {need} elements, more than the kernels index");
    }
    Ok(())
}

impl<S: Copy + Into<f64>> Gemm<S> {
    fn lds(&self) -> [usize; 3] {
        let dims = self.stored_dims();
        let tight = |(r, c): (usize, usize)| match self.layout {
            Layout::ColMajor => r.max(1),
            Layout::RowMajor => c.max(1),
        };
        [
            self.ld[0].unwrap_or(tight(dims[0])),
            self.ld[1].unwrap_or(tight(dims[1])),
            self.ld[2].unwrap_or(tight(dims[2])),
        ]
    }

    /// (rows, cols) of stored A, B and C.
    fn stored_dims(&self) -> [(usize, usize); 3] {
        let a = match self.trans_a {
            Transpose::N => (self.m, self.k),
            Transpose::T => (self.k, self.m),
        };
        let b = match self.trans_b {
            Transpose::N => (self.k, self.n),
            Transpose::T => (self.n, self.k),
        };
        [a, b, (self.m, self.n)]
    }

    /// Validates against buffer lengths (A, B, C, bias) and returns the kernels' problem.
    pub(crate) fn plan(&self, lens: [usize; 3], bias_len: Option<usize>) -> Result<Plan> {
        let lds = self.lds();
        let dims = self.stored_dims();
        let batch = self.batch;
        let [sa, sb, sc] = self.strides;
        check_operand("A", self.layout, dims[0], lds[0], lens[0], batch, sa)?;
        check_operand("B", self.layout, dims[1], lds[1], lens[1], batch, sb)?;
        check_operand("C", self.layout, dims[2], lds[2], lens[2], batch, sc)?;
        if batch > 1 && self.m > 0 && self.n > 0 {
            let one_c = span(
                if self.layout == Layout::ColMajor {
                    self.m
                } else {
                    self.n
                },
                if self.layout == Layout::ColMajor {
                    self.n
                } else {
                    self.m
                },
                lds[2],
            )
            .unwrap_or(usize::MAX);
            if sc < one_c {
                bail_invalid!(
                    "gemm: stride_c = {sc} is less than one C matrix ({one_c} elements): the outputs would overlap"
                );
            }
        }
        if let Some(bl) = bias_len {
            let need = match self.layout {
                Layout::ColMajor => self.m,
                Layout::RowMajor => self.n,
            };
            if bl < need {
                bail_invalid!("gemm: bias has {bl} elements; it needs one per row of C ({need})");
            }
        }
        // The kernels' problem: row-major D = X * Y.
        // Column-major C (m x n) = op(A) op(B)  ->  D = C^T = op(B)^T op(A)^T: X from B, Y from A.
        // Row-major C (m x n) = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, i.e. the
        // column-major problem (ops of B, A; n, m; B, A), whose kernel form is X from A, Y from B.
        let plan = match self.layout {
            Layout::ColMajor => Plan {
                ops: format!("{}{}", self.trans_a.letter(), self.trans_b.letter()),
                m: self.n,
                n: self.m,
                k: self.k,
                ldx: lds[1],
                ldy: lds[0],
                ldd: lds[2],
                sx: sb,
                sy: sa,
                sd: sc,
                swapped: true,
            },
            Layout::RowMajor => Plan {
                ops: format!("{}{}", self.trans_b.letter(), self.trans_a.letter()),
                m: self.m,
                n: self.n,
                k: self.k,
                ldx: lds[0],
                ldy: lds[1],
                ldd: lds[2],
                sx: sa,
                sy: sb,
                sd: sc,
                swapped: false,
            },
        };
        Ok(plan)
    }

    /// Runs `C = act(alpha * op(A) * op(B) + beta * C)`.
    pub fn run<T: GemmType<Scalar = S>>(
        &self,
        a: &impl DeviceSlice<T>,
        b: &impl DeviceSlice<T>,
        c: &mut impl DeviceSliceMut<T>,
    ) -> Result<()> {
        self.launch(a, b, None, c)
    }

    /// Runs `C = act(alpha * op(A) * op(B) + beta * C + bias)`, the bias broadcast along the
    /// rows of C (column-major: `bias[i]` is added to row `i`, length >= m; row-major: to column
    /// `j`, length >= n).
    pub fn run_with_bias<T: GemmType<Scalar = S>>(
        &self,
        a: &impl DeviceSlice<T>,
        b: &impl DeviceSlice<T>,
        bias: &impl DeviceSlice<T>,
        c: &mut impl DeviceSliceMut<T>,
    ) -> Result<()> {
        self.launch(a, b, Some((bias.device_ptr(), bias.len(), bias)), c)
    }

    /// The kernel this GEMM would run on `C`'s stream for these operands, after the same checks
    /// as [`Gemm::run`] (so a call that would be refused is an error here too), without queueing
    /// anything: e.g. `gemm_wg_f16_w_nn`, `gemm_simt_f32_v_nt` or `gemm_dmma90_f64_s2_tn`. A
    /// split of k over blocks shows as `/splitN` (f32 `w` tiles), a tf32 operand packed first
    /// as a `gemm_wg_pack_tf32+` prefix. Empty problems (m, n or batch 0), which launch nothing,
    /// give `""`. For tests, benches and tuning notes.
    ///
    /// ```no_run
    /// use cudrv::blas::{Gemm, Transpose};
    /// use cudrv::DeviceBuffer;
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// let a = DeviceBuffer::<f32>::zeroed(&stream, 64 * 64)?;
    /// let b = DeviceBuffer::<f32>::zeroed(&stream, 64 * 64)?;
    /// let c = DeviceBuffer::<f32>::zeroed(&stream, 64 * 64)?;
    /// let name = Gemm::new(Transpose::N, Transpose::N, 64, 64, 64).kernel_name(&a, &b, &c)?;
    /// assert!(name.starts_with("gemm_simt_f32"));
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn kernel_name<T: GemmType<Scalar = S>>(
        &self,
        a: &impl DeviceSlice<T>,
        b: &impl DeviceSlice<T>,
        c: &impl DeviceSlice<T>,
    ) -> Result<String> {
        let plan = self.plan([a.len(), b.len(), c.len()], None)?;
        if self.m == 0 || self.n == 0 || self.batch == 0 {
            return Ok(String::new());
        }
        let params = self.params(&plan, [a.device_ptr(), b.device_ptr(), c.device_ptr()], 0);
        let choice = choose::<T, S>(self, &plan, &params, c.stream())?;
        let mut name = choice.name.clone();
        if choice.pack.iter().any(|&p| p) {
            name = format!("gemm_wg_pack_tf32+{name}");
        }
        if let Some(parts) = choice.split_k.filter(|&p| p > 1) {
            name = format!("{name}/split{parts}");
        }
        Ok(name)
    }

    /// The kernels' parameter block for `plan`, from the device addresses of A, B, C and the bias
    /// (0: none).
    fn params(&self, plan: &Plan, [a, b, c]: [u64; 3], bias: u64) -> GemmParams {
        let alpha: f64 = self.alpha.into();
        let (x, y) = if plan.swapped { (b, a) } else { (a, b) };
        GemmParams {
            x,
            y,
            d: c,
            bias,
            m: plan.m as i64,
            n: plan.n as i64,
            // alpha == 0: A and B are not read (cuBLAS semantics).
            k: if alpha == 0.0 { 0 } else { plan.k as i64 },
            ldx: plan.ldx as i64,
            ldy: plan.ldy as i64,
            ldd: plan.ldd as i64,
            sx: plan.sx as i64,
            sy: plan.sy as i64,
            sd: plan.sd as i64,
            alpha,
            beta: self.beta.into(),
            act: self.activation.code(),
            batch: 0,
        }
    }

    fn launch<T: GemmType<Scalar = S>>(
        &self,
        a: &impl DeviceSlice<T>,
        b: &impl DeviceSlice<T>,
        bias: Option<(u64, usize, &dyn DeviceSlice<T>)>,
        c: &mut impl DeviceSliceMut<T>,
    ) -> Result<()> {
        let plan = self.plan([a.len(), b.len(), c.len()], bias.map(|b| b.1))?;
        if self.m == 0 || self.n == 0 || self.batch == 0 {
            return Ok(());
        }
        let stream = c.stream().clone();
        let params = self.params(
            &plan,
            [a.device_ptr(), b.device_ptr(), c.device_ptr()],
            bias.map_or(0, |b| b.0),
        );
        // Every check (including the kernel choice) comes before anything is queued.
        let choice = choose::<T, S>(self, &plan, &params, &stream)?;
        use_on(a, &stream)?;
        use_on(b, &stream)?;
        if let Some((_, _, bias)) = bias {
            use_on(bias, &stream)?;
        }
        match choice.family {
            Family::Wgmma => run_wgmma::<T>(&stream, &choice, params, self.batch, self.activation),
            _ => run_kernel::<T>(&stream, &choice, params, self.batch),
        }
    }
}

/// The kernel families.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Family {
    Simt,
    MmaSync,
    Dmma,
    Wgmma,
}

/// The chosen kernel: name, block tile, dynamic shared memory, threads per block.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Choice {
    pub name: String,
    pub family: Family,
    /// wgmma tf32 only: X / Y are packed k-contiguous first (`gemm_wg_pack_tf32`).
    pub pack: [bool; 2],
    /// wgmma tf32 `nn` only: the kernel takes X and Y swapped (m and n too) and stores D
    /// transposed, so that the m-contiguous operand becomes wgmma's register-fed A operand.
    pub swap: bool,
    /// Block tile (rows, columns) of the kernels' row-major D.
    pub tile: (usize, usize),
    pub smem: u32,
    pub threads: u32,
    /// f32 `w` only (its kernels take a second parameter, `SplitK`): the number of blocks that
    /// split k for each output tile (grid z); `None` for kernels without the parameter.
    pub split_k: Option<u32>,
    /// The blocks of a thread block cluster that share one output tile, each summing a share of
    /// k (f64 `gemm_dmma90_*<tile><parts>`); grid x is the tile count times this. 1: no split.
    pub cluster_k: u32,
}

/// Dynamic shared memory of the f32 `w` kernel: 3 stages of 32 k of 128 + 4 and 256 + 4 floats.
const F32_W_SMEM: u32 = 3 * 32 * (132 + 260) * 4;
/// The least k each block keeps when the automatic choice splits the f32 `w` tile's k.
const F32_SPLIT_MIN_K: usize = 1024;

fn tiles(m: usize, n: usize, tile: usize) -> usize {
    m.div_ceil(tile) * n.div_ceil(tile)
}

fn tiles2(m: usize, n: usize, (bm, bn): (usize, usize)) -> usize {
    m.div_ceil(bm) * n.div_ceil(bn)
}

/// Whether the tensor-core kernels can load these operands (16-byte cp.async).
fn tc_aligned(params: &GemmParams, vec: i64, batch: usize) -> bool {
    params.x % 16 == 0
        && params.y % 16 == 0
        && params.ldx % vec == 0
        && params.ldy % vec == 0
        && (batch <= 1 || (params.sx % vec == 0 && params.sy % vec == 0))
}

/// Smallest problem (in 128 x 256 tiles) that takes the wide wgmma tile: half a wave (on the
/// H100, 2048^2 runs 12% faster on 128 wide tiles than on 256 of 128 x 128). Below that the
/// 128 x 128 tile is taken from 3/4 of a wave of its tiles, and the 128 x 64 tile under that.
fn wide_enough((m, n): (usize, usize), batch: usize, sms: usize) -> bool {
    tiles2(m, n, (128, 256)).saturating_mul(batch) >= sms / 2
}

/// The f64 sm_90 DMMA tile letter and the blocks of a cluster that split k for each tile.
///
/// Tiles: `l` (128 x 128, one block per multiprocessor), `m` (128 x 64, one), `s` (64 x 64, two),
/// `u` (32 x 32); `s` and `u` also split k over the 2 blocks of a cluster (`s2`, `u2`). Forced:
/// Large and Wide give `l`, Narrow `m`, Small `s`; a forced split in 2 takes `s` (Small, or Auto
/// when the 64 x 64 tiles fill a wave) or `u`. Automatically, from the measured table in
/// docs/kernels/gemm.md (H100): `l` from a wave of its tiles when the last wave is at least 3/4
/// full; `m` for 0.9-1.0 wave of its tiles; `s` split in 2 when its split blocks make 0.9 of
/// a wave (one per multiprocessor), k >= 1024, and `s` alone leaves its last wave of two blocks
/// per multiprocessor under 4/5 full, if the split fills it to 4/5 or k >= 4096 (long, narrow
/// problems such as 64 x 4096 x 4096); `s` from a wave of two blocks per multiprocessor; `u`
/// from a wave of its tiles; below that `u` split in 2 (k >= 256).
fn dmma90_tile(tile: Tile, split: SplitK, plan: &Plan, batch: usize, sms: usize) -> Result<(char, u32)> {
    let count = |dims| tiles2(plan.m, plan.n, dims).saturating_mul(batch);
    let (tl, tm, ts, tu) = (count((128, 128)), count((128, 64)), count((64, 64)), count((32, 32)));
    // The fraction of the block slots that the last wave of `blocks` fills.
    let fill = |blocks: usize, slots: usize| blocks as f64 / (blocks.div_ceil(slots).max(1) * slots) as f64;
    match split {
        SplitK::Parts(parts) if parts > 1 => {
            let letter = match tile {
                Tile::Small => 's',
                Tile::Auto if ts >= sms => 's',
                Tile::Auto => 'u',
                _ => bail_invalid!(
                    "gemm: the f64 {tile:?} tile does not split k; the Small and Auto tiles split it in 2 parts"
                ),
            };
            if parts != 2 {
                bail_invalid!("gemm: the f64 {letter} tile splits k in 2 parts, not {parts}");
            }
            return Ok((letter, 2));
        }
        _ => {}
    }
    let may_split = split == SplitK::Auto;
    Ok(match tile {
        Tile::Large | Tile::Wide => ('l', 1),
        Tile::Narrow => ('m', 1),
        Tile::Small => ('s', 1),
        Tile::Auto if tl >= sms && fill(tl, sms) >= 0.75 => ('l', 1),
        Tile::Auto if tm * 10 >= sms * 9 && tm <= sms => ('m', 1),
        Tile::Auto
            if may_split
                && 2 * ts * 10 >= sms * 9
                && plan.k >= 1024
                && fill(ts, 2 * sms) < 0.8
                && (fill(2 * ts, 2 * sms) >= 0.8 || plan.k >= 4096) =>
        {
            ('s', 2)
        }
        Tile::Auto if ts >= 2 * sms => ('s', 1),
        Tile::Auto if tu >= sms => ('u', 1),
        Tile::Auto if may_split && plan.k >= 256 => ('u', 2),
        Tile::Auto => ('u', 1),
    })
}

/// (block tile, threads, BK, stages) of an f64 sm_90 DMMA tile (ptx/gemm_dmma90.cu); dynamic
/// shared memory is `stages * 8 * (BK + 4) * (rows + columns)` bytes.
fn dmma90_config(letter: char) -> ((usize, usize), u32, u32, u32) {
    match letter {
        'l' => ((128, 128), 256, 16, 4),
        'm' => ((128, 64), 256, 16, 4),
        's' => ((64, 64), 128, 16, 3),
        _ => ((32, 32), 128, 16, 4),
    }
}

#[allow(clippy::too_many_arguments)] // a pure function of everything dispatch depends on, for tests
pub(crate) fn choose_kernel(
    type_name: &str,
    tensor_type: bool,
    math: MathMode,
    forced: Kernel,
    tile: Tile,
    split: SplitK,
    plan: &Plan,
    aligned: bool,
    wgmma_ok: bool,
    cc: (u32, u32),
    sms: usize,
    batch: usize,
) -> Result<Choice> {
    let tc_name = match (type_name, math) {
        ("f32", MathMode::Tf32) => Some("tf32"),
        ("f32", _) => None,
        (t, _) if tensor_type => Some(t),
        _ => None,
    };
    let tensor_checks = || -> Result<()> {
        if tc_name.is_none() {
            bail_invalid!("gemm: {type_name} has no tensor-core kernel with {math:?} math");
        }
        if !aligned {
            bail_invalid!(
                "gemm: the tensor-core kernel needs 16-byte aligned A and B and leading dimensions / strides that are multiples of 16 bytes"
            );
        }
        if cc < (8, 0) {
            bail_invalid!(
                "gemm: the tensor-core kernel needs compute capability 8.0, not {}.{}",
                cc.0,
                cc.1
            );
        }
        Ok(())
    };
    let wg_type = matches!(tc_name, Some("f16" | "bf16" | "tf32"));
    let wg_possible = wg_type && aligned && wgmma_ok && cc == (9, 0);
    // Family: Simt, MmaSync (incl. DMMA for f64) or Wgmma.
    let family = match forced {
        Kernel::Simt => Family::Simt,
        Kernel::MmaSync => {
            tensor_checks()?;
            Family::MmaSync
        }
        Kernel::Wgmma => {
            tensor_checks()?;
            if !wg_possible {
                bail_invalid!(
                    "gemm: the wgmma kernel needs compute capability 9.0, f16 / bf16 / tf32, k >= 1, alpha != 0 and operands the tensor memory accelerator can address (16-byte aligned, extents below 2^31); tf32 with both operands m- or n-contiguous (op(A) = A, op(B) = B^T) needs batch 1"
                );
            }
            if tile == Tile::Small {
                bail_invalid!("gemm: the wgmma kernel has no 64 x 64 tile");
            }
            Family::Wgmma
        }
        Kernel::TensorCore => {
            tensor_checks()?;
            if wg_possible && tile != Tile::Small {
                Family::Wgmma
            } else {
                Family::MmaSync
            }
        }
        Kernel::Auto => {
            if tc_name.is_none() || !aligned || cc < (8, 0) {
                Family::Simt
            } else if wg_possible && tile != Tile::Small {
                // On the H100 the 128 x 128 wgmma tile beats the 64 x 64 mma.sync one down to
                // 256^2 (1.8x cuBLAS against 1.3x for bf16), so Auto takes wgmma at every size.
                Family::Wgmma
            } else {
                Family::MmaSync
            }
        }
    };
    let dmma90 = family == Family::MmaSync && type_name == "f64" && cc >= (9, 0) && forced != Kernel::MmaSync;
    let f32_simt = family == Family::Simt && type_name == "f32";
    if let SplitK::Parts(parts) = split {
        if !dmma90 && !f32_simt && parts > 1 {
            bail_invalid!(
                "gemm: a split of k in {parts} parts exists only for f64 on the sm_90 DMMA kernels (compute capability 9.0 and later) and for f32 on the CUDA cores"
            );
        }
        if f32_simt && parts > 1 && (parts > 4 || !matches!(tile, Tile::Auto | Tile::Narrow) || batch != 1) {
            bail_invalid!(
                "gemm: f32 on the CUDA cores splits k in 2-4 parts on its 128 x 64 tile (Tile::Auto or Tile::Narrow), batch 1; not {parts} parts on {tile:?} with batch {batch}"
            );
        }
    }
    let big = tiles(plan.m, plan.n, 128).saturating_mul(batch) >= sms;
    let plain = |name: String, family, tile, smem, threads| Choice {
        name,
        family,
        pack: [false; 2],
        swap: false,
        tile,
        smem,
        threads,
        split_k: None,
        cluster_k: 1,
    };
    match family {
        Family::Wgmma => {
            let t = tc_name.unwrap_or("f16");
            // wgmma reads tf32 from shared memory only k-contiguous. An m-contiguous X is loaded
            // into registers as wgmma's A operand (`tt`); for `nn` (n-contiguous Y) the problem is
            // transposed so that Y becomes that operand (`swap`); `nt` packs Y first and runs `tt`.
            let xk = plan.ops.ends_with('n');
            let yk = plan.ops.starts_with('t');
            let (ops, pack, swap) = match (t, xk, yk) {
                ("tf32", true, true) => ("tn", [false; 2], false),
                ("tf32", false, true) => ("tt", [false; 2], false),
                ("tf32", true, false) => ("nn", [false; 2], true),
                ("tf32", false, false) => ("tt", [false, true], false),
                _ => (plan.ops.as_str(), [false; 2], false),
            };
            let dims = if swap { (plan.n, plan.m) } else { (plan.m, plan.n) };
            let (letter, tile) = match tile {
                Tile::Wide => ('w', (128, 256)),
                Tile::Large => ('l', (128, 128)),
                Tile::Narrow => ('n', (128, 64)),
                // tf32 with k <= 128 (at most 4 k-tiles) keeps the 128 x 128 tile: with the
                // epilogue through shared memory it measured 1.1-1.5x faster than 128 x 256 up to
                // k = 256; with TMA stores the two tie at k = 128 and the wide tile is 5-12% faster
                // at k = 256 (docs/kernels/gemm.md). f16 / bf16 keep the wide tile.
                _ if wide_enough(dims, batch, sms) && !(t == "tf32" && plan.k <= 128) => ('w', (128, 256)),
                _ if tiles2(dims.0, dims.1, (128, 128)).saturating_mul(batch) >= sms * 3 / 4 => ('l', (128, 128)),
                _ => ('n', (128, 64)),
            };
            Ok(Choice {
                name: format!("gemm_wg_{t}_{letter}_{ops}"),
                family,
                pack,
                swap,
                tile,
                smem: WG_SMEM,
                threads: 384,
                split_k: None,
                cluster_k: 1,
            })
        }
        Family::MmaSync if dmma90 => {
            // The sm_90 DMMA kernels (m16n8k4 / m16n8k8, ptx/gemm_dmma90.cu).
            let (letter, parts) = dmma90_tile(tile, split, plan, batch, sms)?;
            let (tile, threads, bk, stages) = dmma90_config(letter);
            let suffix = if parts > 1 { parts.to_string() } else { String::new() };
            let mut choice = plain(
                format!("gemm_dmma90_f64_{letter}{suffix}_{}", plan.ops),
                Family::Dmma,
                tile,
                stages * 8 * (bk + 4) * (tile.0 + tile.1) as u32,
                threads,
            );
            choice.cluster_k = parts;
            Ok(choice)
        }
        Family::MmaSync if type_name == "f64" => {
            // The sm_80 DMMA kernel (m8n8k4): 64 x 64, 4 warps, 3 stages of 20480 bytes.
            Ok(plain(
                format!("gemm_dmma_f64_s_{}", plan.ops),
                Family::Dmma,
                (64, 64),
                3 * 20480,
                128,
            ))
        }
        Family::MmaSync | Family::Dmma => {
            let t = tc_name.unwrap_or("f16");
            let large = match tile {
                Tile::Auto => big,
                Tile::Small | Tile::Narrow => false,
                Tile::Large | Tile::Wide => true,
            };
            let (size, tile, smem) = if large {
                ('l', (128, 128), TC_STAGES * 80 * 256)
            } else {
                ('s', (64, 64), TC_STAGES * 80 * 128)
            };
            Ok(plain(
                format!("gemm_tc_{t}_{size}_{}", plan.ops),
                Family::MmaSync,
                tile,
                smem,
                128,
            ))
        }
        Family::Simt if type_name == "f32" => {
            // The pipelined f32 kernels (ptx/gemm_simt.cu): w = 128 x 256 with 16-byte copies
            // (`aligned` operands only), l = 128 x 128 (any operands), and for problems that
            // would leave multiprocessors idle with those, s = 64 x 64 and u = 32 x 64 (two
            // k-slices of warps per block) and v = 128 x 64 with k split over blocks. Automatic:
            // w from 9/10 of a wave of its tiles that fill them to 3/4 (or split, below), l
            // (unaligned) from a wave of 128 x 128 tiles, v for long k where it loads the busiest
            // SM least (below), s from a wave of its tiles unless u loads the busiest SM less
            // (below), else u.
            // A forced `Wide` below 9/10 of a wave of w tiles splits k over 2-4 blocks per tile
            // when that fills 3/4 of a wave and leaves every block at least 256 of k. The
            // automatic choice splits too when every block keeps at least F32_SPLIT_MIN_K of k
            // and the w tiles are at least 3/4 inside the problem: the split's reduction is
            // paid once per tile, so it needs long k (at 1024^3, 256 of k per block, it measured
            // slower than s; with 1024-4096 per block, 13-20% faster: docs/kernels/gemm.md).
            let fills = |t| tiles2(plan.m, plan.n, t).saturating_mul(batch) >= sms;
            let w_tiles = tiles2(plan.m, plan.n, (128, 256)).saturating_mul(batch);
            let w_full = plan.m.saturating_mul(plan.n).saturating_mul(4) >= w_tiles.saturating_mul(128 * 256 * 3);
            // w needs its tiles at least 3/4 full: 48 x 16384 x 4096 on 128 w tiles of which
            // 48 of 256 columns are inside the problem ran at 0.26x cuBLAS.
            let wide = w_tiles.saturating_mul(10) >= sms * 9 && w_full;
            let splits = (sms / w_tiles.max(1)).min(4).min(plan.k / 256);
            let auto_split = tile == Tile::Auto && w_full && plan.k >= F32_SPLIT_MIN_K.saturating_mul(splits);
            // A forced split (validated above) runs v.
            let forced_parts = match split {
                SplitK::Parts(p) if p > 1 => Some(p),
                _ => None,
            };
            let w_split = split != SplitK::Off
                && (tile == Tile::Wide || auto_split)
                && aligned
                && !wide
                && batch == 1
                && splits >= 2
                && w_tiles * splits * 4 >= sms * 3;
            // s or u: all their blocks are resident at once (3 per SM), so the busiest SM runs
            // ceil(tiles / SMs) of them. An s block does twice a u block's outputs at about 1.12x
            // the rate (1024^3: 32.7 against 29.1 TFLOP/s), so s wins unless it leaves SMs with
            // one block more than the average where u does not (100x6000x6000: 188 s tiles, up
            // to 2 per SM, against 376 u tiles, up to 3: u measured 16% faster).
            let per_sm = |t| tiles2(plan.m, plan.n, t).saturating_mul(batch).div_ceil(sms.max(1));
            let s_over_u = per_sm((64, 64)) * 200 <= per_sm((32, 64)) * 112;
            // v (128 x 64, k split over 2-4 blocks per tile, every block keeping at least
            // F32_SPLIT_MIN_K of k): long k over at most a wave of its tiles, which at least 3/4
            // fill, no w split, and less work on the busiest SM than s and u. The work of an SM is
            // its blocks (all resident: 3 per SM for each of the three) times a block's outputs
            // times its k, over the block's rate: u 1, s 1.12, v 1.2 (64 x 8192 x 8192: v's 256
            // blocks of 8 x 8 outputs per thread ran 1.2x u's 256 blocks of 8 x 4). Of equal
            // splits the larger wins. Measured (docs/kernels/gemm.md): 100 x 6000 x 6000 takes 4
            // parts (376 blocks, 0.83x cuBLAS, where 2 parts put 2 blocks on some SMs and ran
            // slower than u), 64 x 8192 x 8192 4 (0.88x; 2 parts leave 4 warps per SM, 3 parts
            // put 2 blocks on some SMs), 128 x 8192 x 8192 2-4 (equal).
            let v_tiles = tiles2(plan.m, plan.n, (128, 64)).saturating_mul(batch);
            let v_full = plan.m.saturating_mul(plan.n).saturating_mul(4) >= v_tiles.saturating_mul(128 * 64 * 3);
            // Work on the busiest SM, in units of 1/168 of an output-k product at u's rate.
            let work = |blocks: usize, outputs: u128, k_per_block: usize, weight: u128| {
                blocks.div_ceil(sms.max(1)) as u128 * outputs * k_per_block as u128 * weight
            };
            let v_work = |parts: usize| work(v_tiles.saturating_mul(parts), 8192, plan.k.div_ceil(parts), 140);
            let (v_splits, v_least) = (2..=4usize)
                .filter(|&parts| plan.k >= F32_SPLIT_MIN_K.saturating_mul(parts))
                .map(|parts| (parts, v_work(parts)))
                .fold((0, u128::MAX), |best, c| if c.1 <= best.1 { c } else { best });
            let unsplit = |dims: (usize, usize), weight| {
                let blocks = tiles2(plan.m, plan.n, dims).saturating_mul(batch);
                work(blocks, (dims.0 * dims.1) as u128, plan.k, weight)
            };
            let v_faster = v_least < unsplit((64, 64), 150) && v_least < unsplit((32, 64), 168);
            let v_split = tile == Tile::Auto
                && v_faster
                && split != SplitK::Off
                && !w_split
                && !(aligned && wide)
                && batch == 1
                && v_splits >= 2
                && v_full
                && v_tiles <= sms;
            let (size, tile, threads) = match tile {
                _ if forced_parts.is_some() => ("v", (128, 64), 128),
                Tile::Auto if w_split || (aligned && wide) => ("w", (128, 256), 256),
                Tile::Auto if v_split => ("v", (128, 64), 128),
                Tile::Auto if !aligned && big => ("l", (128, 128), 256),
                Tile::Auto if fills((64, 64)) && s_over_u => ("s", (64, 64), 128),
                Tile::Auto => ("u", (32, 64), 128),
                Tile::Large | Tile::Wide if aligned => ("w", (128, 256), 256),
                Tile::Large | Tile::Wide => ("l", (128, 128), 256),
                Tile::Narrow => ("u", (32, 64), 128),
                Tile::Small => ("s", (64, 64), 128),
            };
            let mut choice = plain(
                format!("gemm_simt_f32_{size}_{}", plan.ops),
                Family::Simt,
                tile,
                if size == "w" { F32_W_SMEM } else { 0 },
                threads,
            );
            if size == "w" {
                choice.split_k = Some(if w_split { splits as u32 } else { 1 });
            } else if size == "v" {
                choice.split_k = Some(forced_parts.unwrap_or(v_splits as u32));
            }
            Ok(choice)
        }
        Family::Simt => Ok(plain(
            format!("gemm_simt_{type_name}_s_{}", plan.ops),
            Family::Simt,
            (64, 64),
            0,
            256,
        )),
    }
}

/// The element type the TMA moves for a GEMM type (`None` for f64: no wgmma path).
fn tma_element<T: GemmType>() -> Option<TmaElement> {
    match T::NAME {
        "f16" => Some(TmaElement::F16),
        "bf16" => Some(TmaElement::Bf16),
        "f32" => Some(TmaElement::F32),
        _ => None,
    }
}

/// X and Y as the TMA sees them for the wgmma kernels, given whether each is k-contiguous.
fn tma_operands(params: &GemmParams, element: TmaElement, xk: bool, yk: bool, batch: usize) -> [TmaMatrix; 2] {
    let (m, n, k) = (params.m as u64, params.n as u64, params.k as u64);
    let op = |address, contiguous_k: bool, rows, ld, stride| TmaMatrix {
        address,
        element,
        inner: if contiguous_k { k } else { rows },
        outer: if contiguous_k { rows } else { k },
        ld,
        batch: batch as u64,
        stride,
    };
    [
        op(params.x, xk, m, params.ldx as u64, params.sx as u64),
        op(params.y, yk, n, params.ldy as u64, params.sy as u64),
    ]
}

/// Whether the wgmma path can take this call: k >= 1 and alpha != 0 (the kernel always reads
/// A and B), extents below 2^31, and operands the TMA can address, either as given or, for
/// tf32 with both operands m/n-contiguous, after packing Y (batch 1 only).
fn wgmma_fits<T: GemmType>(g_math: MathMode, plan: &Plan, params: &GemmParams, batch: usize) -> bool {
    let Some(element) = tma_element::<T>() else {
        return false;
    };
    if element == TmaElement::F32 && g_math != MathMode::Tf32 {
        return false;
    }
    let max = tma::MAX_EXTENT as i64;
    if params.k < 1 || params.m > max || params.n > max || params.k > max || batch > MAX_BATCH_PER_LAUNCH {
        return false;
    }
    let xk = plan.ops.ends_with('n');
    let yk = plan.ops.starts_with('t');
    let [x, y] = tma_operands(params, element, xk, yk, batch);
    if element == TmaElement::F32 && !xk && !yk {
        // tf32 nt: Y is packed into a fresh, tight, 16-byte aligned buffer; X must fit as given.
        return batch == 1 && x.fits();
    }
    x.fits() && y.fits()
}

fn choose<T: GemmType, S>(g: &Gemm<S>, plan: &Plan, params: &GemmParams, stream: &Stream) -> Result<Choice> {
    let vec = match (T::NAME, g.math) {
        ("f32", _) => 4,
        _ => (16 / size_of::<T>()) as i64,
    };
    let ctx = stream.context();
    choose_kernel(
        T::NAME,
        T::TENSOR_CORES,
        g.math,
        g.kernel,
        g.tile,
        g.split,
        plan,
        tc_aligned(params, vec, g.batch),
        wgmma_fits::<T>(g.math, plan, params, g.batch),
        ctx.compute_capability(),
        ctx.limits().multiprocessor_count as usize,
        g.batch,
    )
}

/// The second parameter of the f32 `w` kernels (`struct SplitK` in ptx/gemm_simt.cu).
#[derive(Copy, Clone, Debug, Default)]
#[repr(C)]
struct SplitKParams {
    ws: u64,
    counters: u64,
}
// SAFETY: repr(C) plain data matching `struct SplitK` (two pointers, no padding); every bit
// pattern is valid.
unsafe impl DeviceRepr for SplitKParams {}

fn run_kernel<T: GemmType>(stream: &Arc<Stream>, choice: &Choice, params: GemmParams, batch: usize) -> Result<()> {
    let f = stream.context().kernel(&choice.name)?;
    if choice.smem > f.max_dynamic_shared_memory() {
        f.set_max_dynamic_shared_memory(choice.smem)?;
    }
    let (m, n) = (params.m as usize, params.n as usize);
    let grid_x = tiles2(m, n, choice.tile).saturating_mul(choice.cluster_k as usize);
    let Ok(grid_x) = u32::try_from(grid_x) else {
        bail_invalid!("gemm: {m} x {n} needs {grid_x} tiles, more than one launch holds");
    };
    if grid_x > i32::MAX as u32 {
        bail_invalid!("gemm: {m} x {n} needs {grid_x} tiles, more than one launch holds");
    }
    let threads = choice.threads;
    let sz = size_of::<T>() as u64;
    let mut done = 0usize;
    while done < batch {
        let count = (batch - done).min(MAX_BATCH_PER_LAUNCH);
        let mut p = params;
        p.x += done as u64 * params.sx as u64 * sz;
        p.y += done as u64 * params.sy as u64 * sz;
        p.d += done as u64 * params.sd as u64 * sz;
        p.batch = count as i32;
        // Split k: each block's sums (one tile) in `ws`, and a zeroed arrival counter per tile;
        // both are freed in stream order after the launch.
        let splits = choice.split_k.unwrap_or(1);
        let mut split = SplitKParams::default();
        let mut scratch = None;
        if splits > 1 {
            let (bm, bn) = choice.tile;
            let tiles = grid_x as usize * count;
            let Some(len) = (tiles * splits as usize).checked_mul(bm * bn) else {
                bail_invalid!("gemm: the split-k buffer for {m} x {n} overflows");
            };
            // SAFETY: the kernel reads an element of `ws` only after the block that writes it
            // has written it (the arrival counter orders the two, see ptx/gemm_simt.cu).
            let ws = unsafe { DeviceBuffer::<f32>::uninit(stream, len) }?;
            let counters = DeviceBuffer::<u32>::zeroed(stream, tiles)?;
            split = SplitKParams {
                ws: ws.device_ptr(),
                counters: counters.device_ptr(),
            };
            scratch = Some((ws, counters));
        }
        let mut l = stream.launch_builder(&f);
        l.arg(&p);
        if choice.split_k.is_some() {
            l.arg(&split);
        }
        // SAFETY: the kernel takes one GemmParams by value (and the f32 `w` kernels a SplitK
        // after it); `plan` checked that every element the kernel touches (rows < m, cols < n,
        // depth < k of each of `count` batch entries, at the leading dimensions and strides
        // given) lies inside A, B, C and the bias; with splits > 1, `ws` holds splits blocks of
        // bm * bn floats per tile and `counters` one per tile, as the kernel indexes them; with
        // cluster_k > 1 grid x is the tile count times the cluster size the kernel is compiled
        // with (its name's digit), so each cluster covers one tile.
        unsafe {
            l.launch(LaunchConfig {
                grid_dim: (grid_x, count as u32, splits),
                block_dim: (threads, 1, 1),
                shared_mem_bytes: choice.smem,
            })
        }?;
        drop(scratch);
        done += count;
    }
    Ok(())
}

/// Packs an m- or n-contiguous f32 operand k-contiguous (rounded to tf32) into a new buffer on
/// `stream`: `out[r * ld + p] = in[p * ld_in + r]` for `r < count`, `p < k`, `ld = k` rounded up
/// to 4 (16 bytes). Returns the buffer and `ld`.
fn pack_tf32(stream: &Arc<Stream>, input: u64, count: i64, k: i64, ld_in: i64) -> Result<(DeviceBuffer<f32>, i64)> {
    let ld = (k + 3) / 4 * 4;
    let len = usize::try_from(count * ld)
        .map_err(|_| crate::error::invalid(format_args!("gemm: tf32 pack size overflows")))?;
    // SAFETY: every element the kernel reads from `out` (r < count, p < k) is written by the
    // pack kernel below before the GEMM that reads it is queued on the same stream; the padding
    // columns (k <= p < ld) are outside the tensor map and never read.
    let out = unsafe { DeviceBuffer::<f32>::uninit(stream, len) }?;
    let f = stream.context().kernel("gemm_wg_pack_tf32")?;
    let (grid_x, grid_y) = ((count as u64).div_ceil(32), (k as u64).div_ceil(32));
    if grid_x > i32::MAX as u64 || grid_y > 65535 {
        bail_invalid!("gemm: tf32 operand of {count} x {k} is too large to pack");
    }
    let o = out.device_ptr();
    let mut l = stream.launch_builder(&f);
    l.arg(&o).arg(&input).arg(&count).arg(&k).arg(&ld_in).arg(&ld);
    // SAFETY: gemm_wg_pack_tf32(float* out, const float* in, i64 count, i64 k, i64 ld_in,
    // i64 ld_out) reads in[p * ld_in + r] for r < count, p < k (inside the operand, which `plan`
    // checked) and writes out[r * ld + p], inside `out` (count * ld elements).
    unsafe {
        l.launch(LaunchConfig {
            grid_dim: (grid_x as u32, grid_y as u32, 1),
            block_dim: (32, 8, 1),
            shared_mem_bytes: 0,
        })
    }?;
    Ok((out, ld))
}

/// Runs a wgmma choice: packs tf32 operands if asked, builds the two tensor maps per launch and
/// launches `(tx, ty, params)`.
fn run_wgmma<T: GemmType>(
    stream: &Arc<Stream>,
    choice: &Choice,
    mut params: GemmParams,
    batch: usize,
    activation: Activation,
) -> Result<()> {
    let Some(element) = tma_element::<T>() else {
        bail_invalid!("gemm: {} has no wgmma kernel", T::NAME);
    };
    let kernel = |name: &str| -> Result<Function> {
        let f = stream.context().kernel(name)?;
        if choice.smem > f.max_dynamic_shared_memory() {
            f.set_max_dynamic_shared_memory(choice.smem)?;
        }
        Ok(f)
    };
    // With an activation, a D for the TMA runs the twin kernel of that activation's module
    // (gemm_wg_<act>_<type>); the kernels of gemm_wg_<type> apply it only in their rolled
    // epilogue.
    let act_name = activation
        .op()
        .map(|f| choice.name.replacen("gemm_wg_", &format!("gemm_wg_{}_", f.name()), 1));
    // Packed operands (tf32, batch 1) live until the GEMM is queued; their frees are ordered on
    // the same stream after it.
    let mut packed = Vec::new();
    if choice.pack[0] {
        let (buf, ld) = pack_tf32(stream, params.x, params.m, params.k, params.ldx)?;
        (params.x, params.ldx, params.sx) = (buf.device_ptr(), ld, 0);
        packed.push(buf);
    }
    if choice.pack[1] {
        let (buf, ld) = pack_tf32(stream, params.y, params.n, params.k, params.ldy)?;
        (params.y, params.ldy, params.sy) = (buf.device_ptr(), ld, 0);
        packed.push(buf);
    }
    let xk = choice.name.ends_with('n');
    let yk = choice.name.ends_with("tn") || choice.name.ends_with("tt");
    // tf32 nn: the kernel computes D^T = Y^T X^T (the m-contiguous operand as X, stored
    // transposed), so X and Y trade places, and with them m and n and the k-contiguity.
    let (xk, yk) = if choice.swap {
        std::mem::swap(&mut params.x, &mut params.y);
        std::mem::swap(&mut params.m, &mut params.n);
        std::mem::swap(&mut params.ldx, &mut params.ldy);
        std::mem::swap(&mut params.sx, &mut params.sy);
        (yk, xk)
    } else {
        (xk, yk)
    };
    let (bm, bn) = choice.tile;
    let tiles = tiles2(params.m as usize, params.n as usize, choice.tile);
    let sms = stream.context().limits().multiprocessor_count.max(1) as usize;
    // 128 bytes of k per box row, or of m/n for an operand that is not k-contiguous.
    let bk = (128 / size_of::<T>()) as u32;
    let sz = size_of::<T>() as u64;
    let mut done = 0usize;
    while done < batch {
        let count = (batch - done).min(MAX_BATCH_PER_LAUNCH);
        // The kernel numbers its tiles with 32-bit integers.
        if tiles.saturating_mul(count) > i32::MAX as usize {
            bail_invalid!(
                "gemm: {} x {} in {count} batch entries is {} tiles, more than one launch holds",
                params.m,
                params.n,
                tiles.saturating_mul(count)
            );
        }
        let grid_x = tiles.saturating_mul(count).min(sms) as u32;
        let mut p = params;
        p.x += done as u64 * params.sx as u64 * sz;
        p.y += done as u64 * params.sy as u64 * sz;
        p.d += done as u64 * params.sd as u64 * sz;
        p.batch = count as i32;
        let [x, y] = tma_operands(&p, element, xk, yk, count);
        let tx = if xk {
            x.encode(bk, bm as u32)?
        } else {
            x.encode(bk, bk)?
        };
        let ty = if yk {
            y.encode(bk, bn as u32)?
        } else {
            y.encode(bk, bk)?
        };
        // D through the TMA (C read through it when beta != 0): D's n
        // x m (x count) extents at ldd and sd, boxes of 128 bytes x 64 rows; the swapped kernels store
        // D transposed, so there the rows (the swapped m) are the contiguous side, in boxes of 32 rows
        // x 32 columns. Not for a batch that writes one D (sd = 0), which the map would address as one
        // matrix, nor for lines whose length is not a multiple of 16 bytes: on the H100 a box over f16
        // rows of 7 elements (14 bytes) also wrote each row's 8th element, so the TMA's clipping is
        // relied on only at 16-byte bounds (rows of 200 and 1000 elements, ending inside a box, kept
        // their padding in tests/gpu_blas.rs).
        let (inner, outer, box_outer) = if choice.swap { (p.m, p.n, 32) } else { (p.n, p.m, 64) };
        let d = TmaMatrix {
            address: p.d,
            element,
            inner: inner as u64,
            outer: outer as u64,
            ld: p.ldd as u64,
            batch: count as u64,
            stride: p.sd as u64,
        };
        let dstore = d.fits() && (count == 1 || p.sd != 0) && (d.inner * sz) % 16 == 0;
        let td = if dstore {
            d.encode(bk, box_outer)?
        } else {
            TensorMap::unused()
        };
        let f = match &act_name {
            Some(name) if dstore => kernel(name)?,
            _ => kernel(&choice.name)?,
        };
        let dstore = i32::from(dstore);
        let mut l = stream.launch_builder(&f);
        l.arg(&tx).arg(&ty).arg(&td).arg(&p).arg(&dstore);
        // SAFETY: the kernel (and its activation twin) takes (TensorMap, TensorMap, TensorMap,
        // GemmParams, i32) by value. The maps of X and Y cover exactly the operands' m x k and
        // k x n extents (TMA bounds zero-fill the rest of each box); the map of D, when dstore
        // is 1, covers exactly D's rows < m and cols < n of each of `count` matrices at ldd / sd
        // (transposed for the swapped kernels; TMA stores are clipped there); with dstore 0 the
        // kernel never reads td; `plan` checked that every element of D (rows < m, cols < n of
        // each of `count` matrices at ldd / sd) and of the bias lies inside C and the bias. A swapped (tf32 nn)
        // kernel writes D[r][c] of the swapped m x n at d[c * ldd + r], which is element (c, r)
        // of the unswapped D, and reads the bias at r < swapped m = unswapped n: the same ranges.
        unsafe {
            l.launch(LaunchConfig {
                grid_dim: (grid_x, 1, 1),
                block_dim: (choice.threads, 1, 1),
                shared_mem_bytes: choice.smem,
            })
        }?;
        done += count;
    }
    drop(packed);
    Ok(())
}

/// cuBLAS-shaped column-major GEMM: `C = alpha * op(A) * op(B) + beta * C`
/// (`cublas<t>gemm`), with `alpha`/`beta` in f32 for f32/f16/bf16 and f64 for f64; f32 is exact.
#[allow(clippy::too_many_arguments)]
pub fn gemm<T: GemmType>(
    trans_a: Transpose,
    trans_b: Transpose,
    m: usize,
    n: usize,
    k: usize,
    alpha: T::Scalar,
    a: &impl DeviceSlice<T>,
    lda: usize,
    b: &impl DeviceSlice<T>,
    ldb: usize,
    beta: T::Scalar,
    c: &mut impl DeviceSliceMut<T>,
    ldc: usize,
) -> Result<()> {
    Gemm::new(trans_a, trans_b, m, n, k)
        .alpha(alpha)
        .beta(beta)
        .ld(lda, ldb, ldc)
        .run(a, b, c)
}

/// cuBLAS-shaped strided-batched GEMM (`cublas<t>gemmStridedBatched`): for `i < batch`,
/// `C_i = alpha * op(A_i) * op(B_i) + beta * C_i` with `A_i` at `a[i * stride_a..]`, and so on.
#[allow(clippy::too_many_arguments)]
pub fn gemm_strided_batched<T: GemmType>(
    trans_a: Transpose,
    trans_b: Transpose,
    m: usize,
    n: usize,
    k: usize,
    alpha: T::Scalar,
    a: &impl DeviceSlice<T>,
    lda: usize,
    stride_a: usize,
    b: &impl DeviceSlice<T>,
    ldb: usize,
    stride_b: usize,
    beta: T::Scalar,
    c: &mut impl DeviceSliceMut<T>,
    ldc: usize,
    stride_c: usize,
    batch: usize,
) -> Result<()> {
    Gemm::new(trans_a, trans_b, m, n, k)
        .alpha(alpha)
        .beta(beta)
        .ld(lda, ldb, ldc)
        .batched(batch, stride_a, stride_b, stride_c)
        .run(a, b, c)
}

/// Row-major `C = A * B` with `A` `m x k`, `B` `k x n`, `C` `m x n`, all tightly packed.
pub fn matmul<T: GemmType>(
    a: &impl DeviceSlice<T>,
    b: &impl DeviceSlice<T>,
    c: &mut impl DeviceSliceMut<T>,
    m: usize,
    n: usize,
    k: usize,
) -> Result<()> {
    Gemm::<T::Scalar>::new(Transpose::N, Transpose::N, m, n, k)
        .layout(Layout::RowMajor)
        .run(a, b, c)
}

#[cfg(test)]
mod tests {
    #[test]
    fn wgmma_activation_modules_are_in_the_manifest() {
        use crate::blas::Activation;
        let manifest = include_str!("../../ptx/MANIFEST");
        assert!(Activation::None.op().is_none());
        for a in [
            Activation::Relu,
            Activation::Gelu,
            Activation::Sigmoid,
            Activation::Tanh,
        ] {
            let name = a.op().unwrap().name();
            assert_eq!(format!("{a:?}").to_lowercase(), name);
            for t in ["f16", "bf16", "tf32"] {
                let module = format!("gemm_wg_{name}_{t}");
                assert!(
                    manifest
                        .lines()
                        .any(|l| l.split_whitespace().next() == Some(module.as_str())),
                    "{module} is not in ptx/MANIFEST"
                );
            }
        }
    }

    /// `choose_kernel` on an H100 (compute capability 9.0, 132 multiprocessors), one batch,
    /// automatic k split.
    #[allow(clippy::too_many_arguments)]
    fn on_h100(
        type_name: &str,
        tensor_type: bool,
        math: MathMode,
        forced: Kernel,
        tile: Tile,
        plan: &Plan,
        aligned: bool,
        wgmma_ok: bool,
    ) -> Result<Choice> {
        choose_kernel(
            type_name,
            tensor_type,
            math,
            forced,
            tile,
            SplitK::Auto,
            plan,
            aligned,
            wgmma_ok,
            (9, 0),
            132,
            1,
        )
    }
    use super::*;

    fn plan(g: &Gemm<f32>, lens: [usize; 3]) -> Result<Plan> {
        g.plan(lens, None)
    }

    #[test]
    fn tight_leading_dimensions_follow_the_layout() {
        let g = Gemm::<f32>::new(Transpose::N, Transpose::T, 3, 4, 5);
        assert_eq!(g.lds(), [3, 4, 3]);
        let g = g.layout(Layout::RowMajor);
        assert_eq!(g.lds(), [5, 5, 4]);
    }

    #[test]
    fn short_buffers_and_small_leading_dimensions_are_rejected_with_numbers() {
        let g = Gemm::<f32>::new(Transpose::N, Transpose::N, 3, 4, 5);
        assert!(plan(&g, [15, 20, 12]).is_ok());
        let e = plan(&g, [14, 20, 12]).unwrap_err().to_string();
        assert!(e.contains("A has 14 elements") && e.contains("needs 15"), "{e}");
        let e = plan(&g, [15, 20, 11]).unwrap_err().to_string();
        assert!(e.contains("C has 11 elements"), "{e}");
        let e = plan(&g.ld(2, 5, 3), [100, 100, 100]).unwrap_err().to_string();
        assert!(
            e.contains("ldA = 2") && e.contains("(3,") || e.contains("rows of A (3"),
            "{e}"
        );
        let e = plan(&g.ld(3, 5, 2), [100, 100, 100]).unwrap_err().to_string();
        assert!(e.contains("ldC = 2"), "{e}");
        // ld > rows: the last column ends at (cols - 1) * ld + rows.
        assert!(plan(&g.ld(7, 5, 3), [4 * 7 + 3, 20, 12]).is_ok());
        assert!(plan(&g.ld(7, 5, 3), [4 * 7 + 2, 20, 12]).is_err());
    }

    #[test]
    fn batches_need_room_and_disjoint_outputs() {
        let g = Gemm::<f32>::new(Transpose::N, Transpose::N, 2, 2, 2).batched(3, 4, 0, 4);
        assert!(plan(&g, [12, 4, 12]).is_ok());
        let e = plan(&g, [11, 4, 12]).unwrap_err().to_string();
        assert!(e.contains("3 matrices") && e.contains("need 12"), "{e}");
        let g = g.batched(3, 4, 0, 3);
        let e = plan(&g, [12, 4, 12]).unwrap_err().to_string();
        assert!(e.contains("overlap"), "{e}");
    }

    #[test]
    fn empty_problems_need_no_memory() {
        let g = Gemm::<f32>::new(Transpose::N, Transpose::N, 0, 5, 7);
        assert!(plan(&g, [0, 35, 0]).is_ok());
        let g = Gemm::<f32>::new(Transpose::N, Transpose::N, 3, 2, 0);
        assert!(plan(&g, [0, 0, 6]).is_ok());
    }

    #[test]
    fn overflow_is_an_error_not_a_panic() {
        let g = Gemm::<f32>::new(Transpose::N, Transpose::N, usize::MAX / 2, 4, 5);
        assert!(plan(&g, [1, 1, 1]).is_err());
    }

    #[test]
    fn bias_length_is_checked() {
        let g = Gemm::<f32>::new(Transpose::N, Transpose::N, 3, 4, 5);
        assert!(g.plan([15, 20, 12], Some(3)).is_ok());
        assert!(g.plan([15, 20, 12], Some(2)).is_err());
        let g = g.layout(Layout::RowMajor);
        assert!(g.plan([15, 20, 12], Some(3)).is_err());
        assert!(g.plan([15, 20, 12], Some(4)).is_ok());
    }

    #[test]
    fn the_row_major_problem_maps_onto_the_kernels_form() {
        let g = Gemm::<f32>::new(Transpose::T, Transpose::N, 3, 4, 5);
        let p = plan(&g, [100, 100, 100]).unwrap();
        assert_eq!((p.ops.as_str(), p.m, p.n, p.swapped), ("tn", 4, 3, true));
        let p = plan(&g.layout(Layout::RowMajor), [100, 100, 100]).unwrap();
        assert_eq!((p.ops.as_str(), p.m, p.n, p.swapped), ("nt", 3, 4, false));
    }

    #[test]
    fn dispatch_by_type_alignment_and_size() {
        let g = Gemm::<f32>::new(Transpose::N, Transpose::N, 4096, 4096, 4096);
        let p = plan(&g, [1 << 24, 1 << 24, 1 << 24]).unwrap();
        let c = |t, tc, math, forced, aligned| on_h100(t, tc, math, forced, Tile::Auto, &p, aligned, false);
        assert_eq!(
            c("f32", false, MathMode::Exact, Kernel::Auto, true).unwrap().name,
            "gemm_simt_f32_w_nn"
        );
        assert_eq!(
            c("f32", false, MathMode::Exact, Kernel::Auto, false).unwrap().name,
            "gemm_simt_f32_l_nn"
        );
        assert_eq!(
            c("f32", false, MathMode::Tf32, Kernel::Auto, true).unwrap().name,
            "gemm_tc_tf32_l_nn"
        );
        assert_eq!(
            c("f32", false, MathMode::Tf32, Kernel::Auto, false).unwrap().name,
            "gemm_simt_f32_l_nn"
        );
        assert_eq!(
            c("f16", true, MathMode::Exact, Kernel::Auto, true).unwrap().name,
            "gemm_tc_f16_l_nn"
        );
        assert_eq!(
            c("bf16", true, MathMode::Exact, Kernel::Auto, false).unwrap().name,
            "gemm_simt_bf16_s_nn"
        );
        assert_eq!(
            c("f64", true, MathMode::Exact, Kernel::Auto, true).unwrap().name,
            "gemm_dmma90_f64_l_nn"
        );
        assert_eq!(
            c("f64", true, MathMode::Exact, Kernel::Auto, false).unwrap().name,
            "gemm_simt_f64_s_nn"
        );
        assert!(c("f32", false, MathMode::Exact, Kernel::TensorCore, true).is_err());
        assert!(c("f16", true, MathMode::Exact, Kernel::TensorCore, false).is_err());
        let small = plan(
            &Gemm::<f32>::new(Transpose::N, Transpose::N, 256, 256, 256),
            [1 << 20; 3],
        )
        .unwrap();
        let pick = |t, tile, cc| {
            choose_kernel(
                t,
                true,
                MathMode::Exact,
                Kernel::Auto,
                tile,
                SplitK::Auto,
                &small,
                true,
                false,
                cc,
                132,
                1,
            )
        };
        assert_eq!(pick("f16", Tile::Auto, (9, 0)).unwrap().name, "gemm_tc_f16_s_nn");
        assert_eq!(pick("f16", Tile::Auto, (7, 5)).unwrap().name, "gemm_simt_f16_s_nn");
        // f32 on the CUDA cores: u below one wave of 64 x 64 tiles, s below 9/10 of a wave of
        // 128 x 256 (aligned) or a wave of 128 x 128 tiles (unaligned), then w or l; a forced
        // Wide splits k over blocks where that fills 3/4 of a wave.
        let f32 = |n: usize, tile, aligned| {
            let p = plan(&Gemm::<f32>::new(Transpose::N, Transpose::N, n, n, n), [1 << 28; 3]).unwrap();
            let ch = on_h100("f32", false, MathMode::Exact, Kernel::Auto, tile, &p, aligned, false);
            let ch = ch.unwrap();
            (ch.name, ch.tile, ch.threads, ch.smem, ch.split_k)
        };
        let k =
            |name: &str, tile, threads, smem, split| (format!("gemm_simt_f32_{name}_nn"), tile, threads, smem, split);
        let w = |split| k("w", (128, 256), 256, 150_528, Some(split));
        let s = k("s", (64, 64), 128, 0, None);
        let u = k("u", (32, 64), 128, 0, None);
        let l = k("l", (128, 128), 256, 0, None);
        assert_eq!(f32(256, Tile::Auto, true), u);
        // 512: 8 tiles of 128 x 256, split in 2 (k / 256) would fill only 16 multiprocessors.
        assert_eq!(f32(512, Tile::Auto, true), u);
        assert_eq!(f32(512, Tile::Small, true), s);
        // 1024: 32 tiles of 128 x 256; a forced Wide splits k in 4 (128 blocks), Large does not.
        assert_eq!(f32(1024, Tile::Auto, true), s);
        assert_eq!(f32(1024, Tile::Auto, false), s);
        assert_eq!(f32(1024, Tile::Narrow, false), u);
        assert_eq!(f32(1024, Tile::Large, true), w(1));
        assert_eq!(f32(1024, Tile::Wide, true), w(4));
        assert_eq!(f32(1024, Tile::Wide, false), l);
        // 512: k / 256 = 2 parts of 8 tiles would fill 16 multiprocessors: no split.
        assert_eq!(f32(512, Tile::Wide, true), w(1));
        // 1536: 72 tiles of 128 x 256 (less than 9/10 of 132, and no room to split), 144 of
        // 128 x 128.
        assert_eq!(f32(1536, Tile::Auto, true), s);
        assert_eq!(f32(1536, Tile::Auto, false), l);
        // s against u by the blocks on the busiest SM: 768 and 896 (144 / 196 s tiles, 2 per
        // SM, against 288 / 392 u tiles, 3 per SM) take u; 1024 and 1536 keep s.
        assert_eq!(f32(768, Tile::Auto, true), u);
        assert_eq!(f32(896, Tile::Auto, false), u);
        // Long k over few w tiles: the automatic choice splits once every block keeps 1024 of k
        // (1024 x 1024 x 4096: 32 tiles, k in 4), not below (x 2048: 512 per block).
        let f32k = |m: usize, n: usize, k: usize| {
            let p = plan(&Gemm::<f32>::new(Transpose::N, Transpose::N, m, n, k), [1 << 28; 3]).unwrap();
            let ch = on_h100("f32", false, MathMode::Exact, Kernel::Auto, Tile::Auto, &p, true, false).unwrap();
            (ch.name, ch.split_k)
        };
        let wk = |split| ("gemm_simt_f32_w_nn".to_string(), Some(split));
        assert_eq!(f32k(1024, 1024, 4096), wk(4));
        assert_eq!(f32k(256, 8192, 8192), wk(2));
        // 1024 x 1024 x 2048 (128 v tiles, k in 2: 2 blocks of 128 x 64 x 1024 per SM against 2
        // s blocks of 64 x 64 x 2048) and 128 columns (half of each 256-column w tile would be
        // empty) take v; so does 100 x 6000 x 6000, in 4 parts (94 v tiles in 2 would put 2
        // blocks on some SMs, where 3 u blocks of 32 x 64 do less).
        let vk = |split| ("gemm_simt_f32_v_nn".to_string(), Some(split));
        assert_eq!(f32k(1024, 1024, 2048), vk(2));
        assert_eq!(f32k(64, 8192, 8192), vk(4));
        // tests/gpu_blas.rs `v_split_cases`.
        assert_eq!(f32k(52, 8200, 2100), vk(2));
        assert_eq!(f32k(52, 8200, 4100), vk(4));
        // A forced split runs v: 2-4 parts, Tile::Auto or Narrow, batch 1.
        let forced = |tile, parts, batch| {
            let p = plan(&Gemm::<f32>::new(Transpose::N, Transpose::N, 136, 72, 48), [1 << 28; 3]).unwrap();
            let ch = choose_kernel(
                "f32",
                false,
                MathMode::Exact,
                Kernel::Auto,
                tile,
                SplitK::Parts(parts),
                &p,
                false,
                false,
                (9, 0),
                132,
                batch,
            )?;
            Ok::<_, crate::Error>((ch.name, ch.split_k))
        };
        assert_eq!(forced(Tile::Narrow, 2, 1).unwrap(), vk(2));
        assert_eq!(forced(Tile::Auto, 4, 1).unwrap(), vk(4));
        for (tile, parts, batch) in [(Tile::Small, 2, 1), (Tile::Narrow, 5, 1), (Tile::Narrow, 2, 2)] {
            let e = forced(tile, parts, batch).unwrap_err();
            assert!(e.to_string().contains("2-4 parts on its 128 x 64 tile"), "{e}");
        }
        assert_eq!(f32k(100, 6000, 6000), vk(4));
        assert_eq!(f32k(128, 8192, 8192), vk(4));
        // w needs its tiles 3/4 full: 300 columns of 512 in two w tiles take s.
        assert_eq!(f32k(300, 16384, 2048), ("gemm_simt_f32_s_nn".to_string(), None));
        // 2048: 128 tiles of 128 x 256, at least 9/10 of 132.
        assert_eq!(f32(2048, Tile::Auto, true), w(1));
        assert_eq!(f32(2048, Tile::Wide, true), w(1));
        assert_eq!(f32(2048, Tile::Auto, false), l);
        assert_eq!(f32(8192, Tile::Auto, true), w(1));
        let l = pick("bf16", Tile::Large, (9, 0)).unwrap();
        assert_eq!(
            (l.name.as_str(), l.tile, l.threads, l.smem),
            ("gemm_tc_bf16_l_nn", (128, 128), 128, 81920)
        );
    }

    #[test]
    fn f64_takes_the_sm90_dmma_kernels_by_capability_and_size() {
        let pick_mnk = |(m, n, k): (usize, usize, usize), split| {
            let g = Gemm::<f64>::new(Transpose::N, Transpose::T, m, n, k);
            let p = g.plan([1 << 28; 3], None).unwrap();
            let ch = choose_kernel(
                "f64",
                true,
                MathMode::Exact,
                Kernel::Auto,
                Tile::Auto,
                split,
                &p,
                true,
                false,
                (9, 0),
                132,
                1,
            );
            ch.unwrap().name
        };
        let pick_split = |n: usize, k: usize, batch: usize, forced, tile, split, cc| {
            let g = Gemm::<f64>::new(Transpose::N, Transpose::T, n, n, k);
            let p = g.plan([1 << 26; 3], None).unwrap();
            let ch = choose_kernel(
                "f64",
                true,
                MathMode::Exact,
                forced,
                tile,
                split,
                &p,
                true,
                false,
                cc,
                132,
                batch,
            )?;
            Ok::<_, crate::Error>((ch.name, ch.tile, ch.smem, ch.threads, ch.cluster_k))
        };
        let pick = |n: usize, batch: usize, forced, tile, cc| {
            let (name, tile, smem, threads, _) = pick_split(n, n, batch, forced, tile, SplitK::Auto, cc).unwrap();
            (name, tile, smem, threads)
        };
        let h = (9, 0);
        // Automatic tiles on 132 SMs (the measured table in docs/kernels/gemm.md): l from a wave of
        // 128 x 128 tiles whose last wave is 3/4 full (2048: 256 tiles in 2 waves of 132).
        assert_eq!(
            pick(4096, 1, Kernel::Auto, Tile::Auto, h),
            ("gemm_dmma90_f64_l_nt".into(), (128, 128), 163840, 256)
        );
        assert_eq!(pick(2048, 1, Kernel::Auto, Tile::Auto, h).0, "gemm_dmma90_f64_l_nt");
        // 1536: 144 tiles of 128 x 128 leave the second wave 1/10 full; 576 of 64 x 64 fill
        // 0.73 of their last wave of 264 (two per SM), split in 2 (1152 blocks) 0.87.
        assert_eq!(
            pick_split(1536, 1536, 1, Kernel::Auto, Tile::Auto, SplitK::Auto, h).unwrap(),
            ("gemm_dmma90_f64_s2_nt".into(), (64, 64), 61440, 128, 2)
        );
        assert_eq!(pick_mnk((1536, 1536, 1536), SplitK::Off), "gemm_dmma90_f64_s_nt");
        assert_eq!(pick_mnk((1536, 1536, 500), SplitK::Auto), "gemm_dmma90_f64_s_nt");
        // Long k over few output tiles: s split in 2 (64 x 8192 x 8192: 128 tiles of 64 x 64 in
        // 256 blocks; 64 x 4096 x 4096 and 100 x 6000 x 6000: k >= 4096); 128 x 8192 x 8192
        // fills a wave of 128 x 64.
        assert_eq!(pick_mnk((64, 8192, 8192), SplitK::Auto), "gemm_dmma90_f64_s2_nt");
        assert_eq!(pick_mnk((64, 4096, 4096), SplitK::Auto), "gemm_dmma90_f64_s2_nt");
        assert_eq!(pick_mnk((64, 4096, 1000), SplitK::Auto), "gemm_dmma90_f64_u_nt");
        assert_eq!(pick_mnk((100, 6000, 6000), SplitK::Auto), "gemm_dmma90_f64_s2_nt");
        assert_eq!(pick_mnk((100, 6000, 6000), SplitK::Off), "gemm_dmma90_f64_u_nt");
        assert_eq!(pick_mnk((128, 8192, 8192), SplitK::Auto), "gemm_dmma90_f64_m_nt");
        assert_eq!(pick_mnk((8192, 8192, 64), SplitK::Auto), "gemm_dmma90_f64_l_nt");
        // 1024: 128 tiles of 128 x 64, one wave.
        assert_eq!(
            pick(1024, 1, Kernel::Auto, Tile::Auto, h),
            ("gemm_dmma90_f64_m_nt".into(), (128, 64), 122880, 256)
        );
        // 768 and 512: u from a wave of its tiles; 256: u split in 2 (64 tiles, 128 blocks).
        assert_eq!(pick(768, 1, Kernel::Auto, Tile::Auto, h).0, "gemm_dmma90_f64_u_nt");
        assert_eq!(
            pick(512, 1, Kernel::Auto, Tile::Auto, h),
            ("gemm_dmma90_f64_u_nt".into(), (32, 32), 40960, 128)
        );
        assert_eq!(
            pick_split(256, 256, 1, Kernel::Auto, Tile::Auto, SplitK::Auto, h).unwrap(),
            ("gemm_dmma90_f64_u2_nt".into(), (32, 32), 40960, 128, 2)
        );
        assert_eq!(pick_mnk((256, 256, 200), SplitK::Auto), "gemm_dmma90_f64_u_nt");
        assert_eq!(pick_mnk((256, 256, 256), SplitK::Off), "gemm_dmma90_f64_u_nt");
        // A batch counts its tiles: 4 x 512^2 is 256 of 64 x 64, 0.97 of a wave of 128 x 64.
        assert_eq!(pick(512, 4, Kernel::Auto, Tile::Auto, h).0, "gemm_dmma90_f64_m_nt");
        // Forced tiles and splits, and forced families.
        assert_eq!(
            pick(256, 1, Kernel::TensorCore, Tile::Small, h).0,
            "gemm_dmma90_f64_s_nt"
        );
        assert_eq!(pick(256, 1, Kernel::Auto, Tile::Narrow, h).0, "gemm_dmma90_f64_m_nt");
        assert_eq!(pick(256, 1, Kernel::Auto, Tile::Large, h).0, "gemm_dmma90_f64_l_nt");
        assert_eq!(pick(256, 1, Kernel::Auto, Tile::Wide, h).0, "gemm_dmma90_f64_l_nt");
        let forced = |n, tile, parts| pick_split(n, n, 1, Kernel::Auto, tile, SplitK::Parts(parts), h);
        assert_eq!(forced(4096, Tile::Small, 2).unwrap().0, "gemm_dmma90_f64_s2_nt");
        assert_eq!(forced(4096, Tile::Auto, 2).unwrap().0, "gemm_dmma90_f64_s2_nt");
        assert_eq!(forced(256, Tile::Auto, 2).unwrap().0, "gemm_dmma90_f64_u2_nt");
        for (tile, parts) in [
            (Tile::Large, 2),
            (Tile::Wide, 2),
            (Tile::Narrow, 2),
            (Tile::Small, 4),
            (Tile::Auto, 3),
        ] {
            let e = forced(1024, tile, parts).unwrap_err();
            assert!(matches!(e, crate::Error::InvalidArgument(_)), "{tile:?} {parts}: {e}");
        }
        // Only the sm_90 DMMA kernels split.
        let e = pick_split(1024, 1024, 1, Kernel::MmaSync, Tile::Auto, SplitK::Parts(2), h).unwrap_err();
        assert!(e.to_string().contains("only for f64 on the sm_90 DMMA kernels"), "{e}");
        assert_eq!(
            pick(4096, 1, Kernel::MmaSync, Tile::Auto, h),
            ("gemm_dmma_f64_s_nt".into(), (64, 64), 61440, 128)
        );
        // Before Hopper: the m8n8k4 kernel.
        assert_eq!(pick(4096, 1, Kernel::Auto, Tile::Auto, (8, 0)).0, "gemm_dmma_f64_s_nt");
        assert_eq!(pick(4096, 1, Kernel::Auto, Tile::Large, (8, 9)).0, "gemm_dmma_f64_s_nt");
        assert_eq!(
            pick(4096, 1, Kernel::Auto, Tile::Auto, (10, 0)).0,
            "gemm_dmma90_f64_l_nt"
        );
    }

    #[test]
    fn hopper_dispatch_prefers_wgmma_and_packs_tf32() {
        let g = Gemm::<f32>::new(Transpose::N, Transpose::N, 4096, 4096, 4096);
        let p = plan(&g, [1 << 24, 1 << 24, 1 << 24]).unwrap();
        let c = |t, math, forced, tile, ok, cc| {
            choose_kernel(
                t,
                t != "f32",
                math,
                forced,
                tile,
                SplitK::Auto,
                &p,
                true,
                ok,
                cc,
                132,
                1,
            )
        };
        let e = MathMode::Exact;
        let w = c("f16", e, Kernel::Auto, Tile::Auto, true, (9, 0)).unwrap();
        assert_eq!(
            (w.name.as_str(), w.family, w.threads, w.tile),
            ("gemm_wg_f16_w_nn", Family::Wgmma, 384, (128, 256))
        );
        assert_eq!(
            c("bf16", e, Kernel::Auto, Tile::Large, true, (9, 0)).unwrap().name,
            "gemm_wg_bf16_l_nn"
        );
        assert_eq!(
            c("bf16", e, Kernel::Auto, Tile::Small, true, (9, 0)).unwrap().name,
            "gemm_tc_bf16_s_nn"
        );
        assert_eq!(
            c("f16", e, Kernel::MmaSync, Tile::Auto, true, (9, 0)).unwrap().name,
            "gemm_tc_f16_l_nn"
        );
        // Not on other devices, and not when the operands do not suit the TMA.
        assert_eq!(
            c("f16", e, Kernel::Auto, Tile::Auto, true, (8, 0)).unwrap().name,
            "gemm_tc_f16_l_nn"
        );
        assert_eq!(
            c("f16", e, Kernel::Auto, Tile::Auto, false, (9, 0)).unwrap().name,
            "gemm_tc_f16_l_nn"
        );
        assert!(c("f16", e, Kernel::Wgmma, Tile::Auto, false, (9, 0)).is_err());
        assert!(c("f16", e, Kernel::Wgmma, Tile::Small, true, (9, 0)).is_err());
        assert!(c("f64", e, Kernel::Wgmma, Tile::Auto, true, (9, 0)).is_err());
        // tf32 is read from shared memory k-contiguous only: nn runs transposed (swap) with the
        // m-contiguous operand in registers, tt reads X into registers as it is, nt packs Y and
        // runs tt, tn needs nothing.
        let t = c("f32", MathMode::Tf32, Kernel::Wgmma, Tile::Wide, true, (9, 0)).unwrap();
        assert_eq!(
            (t.name.as_str(), t.pack, t.swap),
            ("gemm_wg_tf32_w_nn", [false, false], true)
        );
        let tf32 = |ta, tb, tile| {
            let p = plan(&Gemm::<f32>::new(ta, tb, 64, 64, 64), [1 << 20; 3]).unwrap();
            let t = on_h100("f32", false, MathMode::Tf32, Kernel::Wgmma, tile, &p, true, true).unwrap();
            (t.name, t.pack, t.swap)
        };
        use Transpose::{N, T};
        assert_eq!(
            tf32(T, N, Tile::Large),
            ("gemm_wg_tf32_l_tn".into(), [false, false], false)
        );
        assert_eq!(
            tf32(T, T, Tile::Large),
            ("gemm_wg_tf32_l_tt".into(), [false, false], false)
        );
        assert_eq!(
            tf32(N, T, Tile::Narrow),
            ("gemm_wg_tf32_n_tt".into(), [false, true], false)
        );
        assert_eq!(
            tf32(N, N, Tile::Narrow),
            ("gemm_wg_tf32_n_nn".into(), [false, false], true)
        );
        // The swapped problem picks its tile from its own m and n: C of 64 x 8448 is 33 tiles of
        // 128 x 256 and 66 of 128 x 128 (too few for either: 128 x 64), where the unswapped
        // 8448 x 64 would count 66 wide tiles.
        let skinny = plan(&Gemm::<f32>::new(N, N, 64, 8448, 256), [1 << 26; 3]).unwrap();
        let t = on_h100(
            "f32",
            false,
            MathMode::Tf32,
            Kernel::Auto,
            Tile::Auto,
            &skinny,
            true,
            true,
        )
        .unwrap();
        assert_eq!((t.name.as_str(), t.swap), ("gemm_wg_tf32_n_nn", true));
        // Short k (at most 128): tf32 takes 128 x 128 where f16 keeps 128 x 256.
        let short_k = |t: &str, k| {
            let math = if t == "f32" { MathMode::Tf32 } else { e };
            let p = plan(&Gemm::<f32>::new(T, N, 8192, 8192, k), [1 << 28; 3]).unwrap();
            let ch = on_h100(t, t != "f32", math, Kernel::Auto, Tile::Auto, &p, true, true);
            ch.unwrap().name
        };
        assert_eq!(short_k("f32", 64), "gemm_wg_tf32_l_tn");
        assert_eq!(short_k("f32", 128), "gemm_wg_tf32_l_tn");
        assert_eq!(short_k("f32", 129), "gemm_wg_tf32_w_tn");
        assert_eq!(short_k("f32", 256), "gemm_wg_tf32_w_tn");
        assert_eq!(short_k("f16", 64), "gemm_wg_f16_w_tn");
        // Small problems take the 128 x 64 wgmma tile.
        let small = plan(
            &Gemm::<f32>::new(Transpose::N, Transpose::N, 256, 256, 256),
            [1 << 20; 3],
        )
        .unwrap();
        let s = on_h100("f16", true, e, Kernel::Auto, Tile::Auto, &small, true, true).unwrap();
        assert_eq!(s.name, "gemm_wg_f16_n_nn");
    }
}

#[cfg(test)]
mod degenerate_tests {
    use super::*;

    #[test]
    fn k_zero_plans_with_empty_operands() {
        for ta in [Transpose::N, Transpose::T] {
            for tb in [Transpose::N, Transpose::T] {
                for layout in [Layout::ColMajor, Layout::RowMajor] {
                    let g = Gemm::<f32>::new(ta, tb, 3, 4, 0).layout(layout);
                    let r = g.plan([0, 0, 12], None);
                    assert!(r.is_ok(), "{ta:?}{tb:?} {layout:?}: {r:?}");
                }
            }
        }
    }
}
