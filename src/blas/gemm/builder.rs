//! [`Gemm`]: the description of one GEMM (shape, scalars, layout, batch, knobs), its checks
//! against the buffers, and the calls that queue it.

use super::dispatch::choose;
use super::launch::run_choice;
use super::params::GemmParams;
use super::{partials, skinny, skinny90, tf32x3, vector};
use super::{GemmType, Kernel, SplitK, Tile};
use crate::blas::{batched_span, span, Activation, Layout, MathMode, Transpose};
use crate::error::{bail_invalid, Result};
use crate::memory::{use_on, DeviceSlice, DeviceSliceMut};
use crate::profile::scope::{Op, OpScope};
use crate::stream::Stream;

/// A GEMM description: `C = act(alpha * op(A) * op(B) + beta * C + bias)`, built with
/// [`Gemm::new`] and the setters, run with [`Gemm::run`] or [`Gemm::run_with_bias`].
///
/// `op(A)` is `m x k`, `op(B)` is `k x n`, `C` is `m x n`. Leading dimensions default to the
/// tightest (the stored rows for column-major, the stored columns for row-major). With
/// `beta == 0`, `C` is not read (as in cuBLAS: NaN in `C` does not propagate); with `alpha == 0`
/// or `k == 0`, `A` and `B` are not read. The bias (see [`Gemm::run_with_bias`]) has one element per
/// row of `C` (column-major) or per column of `C` (row-major): the `nn.Linear` convention.
///
/// ```no_run
/// use cudrv::blas::{Gemm, Layout, Transpose};
/// use cudrv::DeviceBuffer;
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// // Attention scores for 8 heads: S_h = Q_h K_h^T / sqrt(64), each 128 x 128, row-major.
/// let (heads, seq, dim) = (8, 128, 64);
/// let q = DeviceBuffer::<half::f16>::zeroed(&stream, heads * seq * dim)?;
/// let k = DeviceBuffer::<half::f16>::zeroed(&stream, heads * seq * dim)?;
/// let mut s = DeviceBuffer::<half::f16>::zeroed(&stream, heads * seq * seq)?;
/// Gemm::new(Transpose::N, Transpose::T, seq, seq, dim)
///     .layout(Layout::RowMajor)
///     .alpha(1.0 / 8.0)
///     .batched(heads, seq * dim, seq * dim, seq * seq)
///     .run(&q, &k, &mut s)?;
/// # Ok::<(), cudrv::Error>(())
/// ```
#[derive(Copy, Clone, Debug)]
pub struct Gemm<S> {
    pub(super) trans_a: Transpose,
    pub(super) trans_b: Transpose,
    pub(super) m: usize,
    pub(super) n: usize,
    pub(super) k: usize,
    pub(super) alpha: S,
    pub(super) beta: S,
    pub(super) ld: [Option<usize>; 3],
    pub(super) layout: Layout,
    pub(super) batch: usize,
    pub(super) strides: [usize; 3],
    pub(super) math: MathMode,
    pub(super) activation: Activation,
    pub(super) kernel: Kernel,
    pub(super) tile: Tile,
    pub(super) split: SplitK,
}

impl<S: Copy + From<u8>> Gemm<S> {
    /// `C = op(A) * op(B)` (alpha 1, beta 0), column-major, tight leading dimensions, one batch.
    ///
    /// ```
    /// use cudrv::blas::{Gemm, Transpose};
    /// // op(A) = A^T is 64 x 32 (A stored 32 x 64), op(B) = B is 32 x 16, C is 64 x 16.
    /// let g = Gemm::<f32>::new(Transpose::T, Transpose::N, 64, 16, 32);
    /// # let _ = g;
    /// ```
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
    ///
    /// ```no_run
    /// # use cudrv::blas::{Gemm, Transpose};
    /// # use cudrv::{DeviceBuffer, DeviceSlice};
    /// # let ctx = cudrv::Context::new(0)?;
    /// # let stream = ctx.new_stream()?;
    /// let a = DeviceBuffer::from_slice(&stream, &[2.0f32])?;
    /// let b = DeviceBuffer::from_slice(&stream, &[3.0f32])?;
    /// let mut c = DeviceBuffer::<f32>::zeroed(&stream, 1)?;
    /// Gemm::new(Transpose::N, Transpose::N, 1, 1, 1).alpha(0.5).run(&a, &b, &mut c)?;
    /// assert_eq!(c.to_vec()?, vec![3.0]);
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn alpha(mut self, alpha: S) -> Self {
        self.alpha = alpha;
        self
    }

    /// Sets `beta`.
    ///
    /// ```no_run
    /// # use cudrv::blas::{Gemm, Transpose};
    /// # use cudrv::{DeviceBuffer, DeviceSlice};
    /// # let ctx = cudrv::Context::new(0)?;
    /// # let stream = ctx.new_stream()?;
    /// let a = DeviceBuffer::from_slice(&stream, &[2.0f32])?;
    /// let b = DeviceBuffer::from_slice(&stream, &[3.0f32])?;
    /// let mut c = DeviceBuffer::from_slice(&stream, &[10.0f32])?;
    /// // Accumulate into C: C = A B + 1 * C.
    /// Gemm::new(Transpose::N, Transpose::N, 1, 1, 1).beta(1.0).run(&a, &b, &mut c)?;
    /// assert_eq!(c.to_vec()?, vec![16.0]);
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn beta(mut self, beta: S) -> Self {
        self.beta = beta;
        self
    }

    /// Sets the leading dimensions of A, B and C.
    ///
    /// ```no_run
    /// # use cudrv::blas::{Gemm, Transpose};
    /// # use cudrv::DeviceBuffer;
    /// # let ctx = cudrv::Context::new(0)?;
    /// # let stream = ctx.new_stream()?;
    /// // The top-left 100 x 100 blocks of 128 x 128 column-major matrices.
    /// let a = DeviceBuffer::<f32>::zeroed(&stream, 128 * 128)?;
    /// let b = DeviceBuffer::<f32>::zeroed(&stream, 128 * 128)?;
    /// let mut c = DeviceBuffer::<f32>::zeroed(&stream, 128 * 128)?;
    /// Gemm::new(Transpose::N, Transpose::N, 100, 100, 100).ld(128, 128, 128).run(&a, &b, &mut c)?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn ld(mut self, lda: usize, ldb: usize, ldc: usize) -> Self {
        self.ld = [Some(lda), Some(ldb), Some(ldc)];
        self
    }

    /// Sets the storage order of all three matrices.
    ///
    /// ```
    /// use cudrv::blas::{Gemm, Layout, Transpose};
    /// // y = x W^T for a row-major batch of 32 inputs of 768 features and a 3072 x 768 weight.
    /// let g = Gemm::<f32>::new(Transpose::N, Transpose::T, 32, 3072, 768).layout(Layout::RowMajor);
    /// # let _ = g;
    /// ```
    pub fn layout(mut self, layout: Layout) -> Self {
        self.layout = layout;
        self
    }

    /// Makes it a strided batch: matrix `i` of A starts at element `i * stride_a`, and so on.
    /// A and B strides may be 0 (one matrix shared by every product); C's must keep the outputs
    /// apart.
    ///
    /// ```
    /// use cudrv::blas::{Gemm, Transpose};
    /// // 512 products of 64 x 64 matrices, all against the same B (stride 0).
    /// let g = Gemm::<f32>::new(Transpose::N, Transpose::N, 64, 64, 64).batched(512, 64 * 64, 0, 64 * 64);
    /// # let _ = g;
    /// ```
    pub fn batched(mut self, batch: usize, stride_a: usize, stride_b: usize, stride_c: usize) -> Self {
        self.batch = batch;
        self.strides = [stride_a, stride_b, stride_c];
        self
    }

    /// Sets the math mode (only f32 reads it).
    ///
    /// ```
    /// use cudrv::blas::{Gemm, MathMode, Transpose};
    /// let g = Gemm::<f32>::new(Transpose::N, Transpose::N, 2048, 2048, 2048).math(MathMode::Tf32);
    /// # let _ = g;
    /// ```
    pub fn math(mut self, math: MathMode) -> Self {
        self.math = math;
        self
    }

    /// Sets the epilogue's activation.
    ///
    /// ```
    /// use cudrv::blas::{Activation, Gemm, Transpose};
    /// // An MLP layer's up projection: gelu(x W + b) in one kernel (run with `run_with_bias`).
    /// let g = Gemm::<f32>::new(Transpose::N, Transpose::N, 4096, 64, 1024).activation(Activation::Gelu);
    /// # let _ = g;
    /// ```
    pub fn activation(mut self, activation: Activation) -> Self {
        self.activation = activation;
        self
    }

    /// Forces a kernel family (tests and benches); [`Kernel::Auto`] by default.
    ///
    /// ```
    /// use cudrv::blas::{Gemm, Kernel, Transpose};
    /// let g = Gemm::<f32>::new(Transpose::N, Transpose::N, 512, 512, 512).kernel(Kernel::Simt);
    /// # let _ = g;
    /// ```
    pub fn kernel(mut self, kernel: Kernel) -> Self {
        self.kernel = kernel;
        self
    }

    /// Forces a block tile (tests and benches); [`Tile::Auto`] by default.
    ///
    /// ```
    /// use cudrv::blas::{Gemm, Tile, Transpose};
    /// let g = Gemm::<f32>::new(Transpose::N, Transpose::N, 512, 512, 512).tile(Tile::Small);
    /// # let _ = g;
    /// ```
    pub fn tile(mut self, tile: Tile) -> Self {
        self.tile = tile;
        self
    }

    /// Forces how k is split between blocks (tests and benches); [`SplitK::Auto`] by default.
    ///
    /// ```
    /// use cudrv::blas::{Gemm, SplitK, Transpose};
    /// // 64 x 64 x 8192 in f32: 4 blocks share each output tile's k.
    /// let g = Gemm::<f32>::new(Transpose::N, Transpose::N, 64, 64, 8192).split_k(SplitK::Parts(4));
    /// # let _ = g;
    /// ```
    pub fn split_k(mut self, split: SplitK) -> Self {
        self.split = split;
        self
    }
}

/// The validated problem in the kernels' row-major form (see ptx/gemm_tc.cu).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Plan {
    /// Kernel-name suffix: the column-major ops of A and B (`"nn"`, `"nt"`, `"tn"`, `"tt"`).
    pub ops: &'static str,
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

/// The kernel-name suffix of the column-major ops `first`, `second` (no allocation: a plan is
/// made on every call).
fn ops_suffix(first: Transpose, second: Transpose) -> &'static str {
    match (first, second) {
        (Transpose::N, Transpose::N) => "nn",
        (Transpose::N, Transpose::T) => "nt",
        (Transpose::T, Transpose::N) => "tn",
        (Transpose::T, Transpose::T) => "tt",
    }
}

/// How a checked GEMM runs: the skinny kernel, or the tiled kernels' choice.
pub(super) enum Path {
    Skinny(skinny::SkinnyRoute),
    Skinny90(skinny90::Skinny90Route),
    Partials(partials::PartialsRoute),
    Tiles(std::sync::Arc<super::choice::Choice>),
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
    pub(super) fn lds(&self) -> [usize; 3] {
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
                ops: ops_suffix(self.trans_a, self.trans_b),
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
                ops: ops_suffix(self.trans_b, self.trans_a),
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
    ///
    /// ```no_run
    /// # use cudrv::blas::{Gemm, Transpose};
    /// # use cudrv::{DeviceBuffer, DeviceSlice};
    /// # let ctx = cudrv::Context::new(0)?;
    /// # let stream = ctx.new_stream()?;
    /// let a = DeviceBuffer::from_slice(&stream, &[1.0f64, 2.0])?; // 2 x 1
    /// let b = DeviceBuffer::from_slice(&stream, &[3.0f64, 4.0])?; // 1 x 2
    /// let mut c = DeviceBuffer::<f64>::zeroed(&stream, 4)?; // 2 x 2, the outer product
    /// Gemm::new(Transpose::N, Transpose::N, 2, 2, 1).run(&a, &b, &mut c)?;
    /// assert_eq!(c.to_vec()?, vec![3.0, 6.0, 4.0, 8.0]);
    /// // Too short a C is refused before anything is queued.
    /// assert!(Gemm::new(Transpose::N, Transpose::N, 3, 3, 1).run(&a, &b, &mut c).is_err());
    /// # Ok::<(), cudrv::Error>(())
    /// ```
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
    ///
    /// ```no_run
    /// # use cudrv::blas::{Gemm, Layout, Transpose};
    /// # use cudrv::{DeviceBuffer, DeviceSlice};
    /// # let ctx = cudrv::Context::new(0)?;
    /// # let stream = ctx.new_stream()?;
    /// // nn.Linear: y = x W^T + b, row-major, x 1 x 2, W 3 x 2, b of 3.
    /// let x = DeviceBuffer::from_slice(&stream, &[1.0f32, 1.0])?;
    /// let w = DeviceBuffer::from_slice(&stream, &[1.0f32, 0.0, 0.0, 1.0, 1.0, 1.0])?;
    /// let bias = DeviceBuffer::from_slice(&stream, &[10.0f32, 20.0, 30.0])?;
    /// let mut y = DeviceBuffer::<f32>::zeroed(&stream, 3)?;
    /// Gemm::new(Transpose::N, Transpose::T, 1, 3, 2)
    ///     .layout(Layout::RowMajor)
    ///     .run_with_bias(&x, &w, &bias, &mut y)?;
    /// assert_eq!(y.to_vec()?, vec![11.0, 21.0, 32.0]);
    /// # Ok::<(), cudrv::Error>(())
    /// ```
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
    /// anything: e.g. `gemm_wg_f16_w_nn`, `gemm_simt_f32_v_nt`, `gemm_dmma90_f64_s2_tn`,
    /// `gemm_small_f32` (m, n, k <= 32), `gemm_skinny_f32_r2s2` (an f32 side of at most 16, both
    /// operands k-contiguous) or `gemm_skinny90_f16_k256` (such an f16 or bf16 decode step on
    /// compute capability 9.0). A split of k over blocks shows as `/splitN` (the f32 `w` and `v`
    /// tiles, the wgmma `n` and `l` tiles, the skinny kernel), a tf32 operand packed first as a
    /// `gemm_wg_pack_tf32+` prefix, an unaligned operand copied into an aligned buffer first (for
    /// the tensor-core kernels) as a `gemm_pack_b<bits>+` prefix, an f32 B copied transposed
    /// first (the CUDA-core kernels, TN and TT with many rows of C^T) as a `gemm_transpose_b32+`
    /// prefix, a split of k through partial
    /// products ([`SplitK::Partials`]) as a `/partials<parts>` suffix after the parts' kernel; a
    /// GEMM with one row or one
    /// column that runs as a GEMV as `gemv_n_<t>` or `gemv_t_<t>`. Empty problems (m, n or batch
    /// 0), which launch nothing, give `""`. For tests, benches and tuning notes.
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
        if T::NAME == "f32" && self.math == MathMode::Tf32x3 {
            let cc = c.stream().context().compute_capability();
            if !tf32x3::splits(self, cc)? {
                let exact = Gemm {
                    math: MathMode::Exact,
                    ..*self
                };
                return exact.kernel_name(a, b, c);
            }
            return tf32x3::product_name::<T, S>(self, c, None);
        }
        self.name_at::<T>(&plan, [a.device_ptr(), b.device_ptr(), c.device_ptr()], c.stream())
    }

    /// The kernel name of [`Gemm::kernel_name`] for the checked `plan` on operands at `ptrs`
    /// (A, B, C).
    pub(super) fn name_at<T: GemmType<Scalar = S>>(
        &self,
        plan: &Plan,
        ptrs: [u64; 3],
        stream: &Stream,
    ) -> Result<String> {
        if let Some(route) = vector::route::<T, S>(self, self.lds()) {
            return Ok(route.name(T::NAME));
        }
        let params = self.params(plan, ptrs, 0);
        Ok(match self.path::<T>(plan, &params, stream)? {
            Path::Skinny(route) => route.name(),
            Path::Skinny90(route) => route.name(),
            Path::Partials(route) => route.name::<T>(),
            Path::Tiles(choice) => choice.reported_name::<T>(),
        })
    }

    /// The kernel family that takes the problem (`plan`, `params`) on `stream`'s device: the TMA
    /// decode kernel first (on compute capability 9.0 it also takes f32 in tf32 math, ahead of
    /// the exact f32 skinny kernel: 16 x 4096 x 4096 TN 0.75x cuBLAS there), then the skinny
    /// kernel, a split through partial products, the tiles. Inlined into the launch: as a call
    /// it added 25-30 ns to every repeated GEMM on the null driver (`cargo bench --bench host`,
    /// 2026-11-28: f32 64^3 237-249 -> 271 ns), inlined 10-20.
    #[inline(always)]
    pub(super) fn path<T: GemmType<Scalar = S>>(
        &self,
        plan: &Plan,
        params: &GemmParams,
        stream: &Stream,
    ) -> Result<Path> {
        let ctx = stream.context();
        let (sms, cc) = (ctx.limits().multiprocessor_count as usize, ctx.compute_capability());
        let bandwidth = ctx.limits().peak_memory_bandwidth();
        Ok(
            if let Some(route) = skinny90::route::<T, S>(self, plan, params, sms, cc, bandwidth) {
                Path::Skinny90(route)
            } else if let Some(route) = skinny::route::<T, S>(self, plan, params, sms, cc) {
                Path::Skinny(route)
            } else if let Some(route) = partials::route::<T, S>(self, plan, params, stream)? {
                Path::Partials(route)
            } else {
                Path::Tiles(choose::<T, S>(self, plan, params, stream)?)
            },
        )
    }

    /// The kernels' parameter block for `plan`, from the device addresses of A, B, C and the bias
    /// (0: none).
    pub(super) fn params(&self, plan: &Plan, [a, b, c]: [u64; 3], bias: u64) -> GemmParams {
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

    /// What the profiler and NVTX call this product, and its work.
    fn op<T: GemmType<Scalar = S>>(&self) -> Op {
        let (m, n, k, batch) = (self.m as f64, self.n as f64, self.k as f64, self.batch as f64);
        let reads_c = if self.beta.into() != 0.0 { 2.0 } else { 1.0 };
        let batched = if self.batch > 1 {
            format!(" x{}", self.batch)
        } else {
            String::new()
        };
        let tf32 = match (T::NAME, self.math) {
            ("f32", MathMode::Tf32) => " tf32",
            ("f32", MathMode::Tf32x3) => " tf32x3",
            _ => "",
        };
        Op {
            label: format!(
                "gemm {}{tf32} {}{} {}x{}x{}{batched}",
                T::NAME,
                self.trans_a.letter(),
                self.trans_b.letter(),
                self.m,
                self.n,
                self.k
            ),
            flops: 2.0 * m * n * k * batch,
            bytes: (m * k + k * n + reads_c * m * n) * batch * size_of::<T>() as f64,
            credited: Default::default(),
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
        let _scope = OpScope::enter(c.stream().context(), || self.op::<T>());
        if T::NAME == "f32" && self.math == MathMode::Tf32x3 {
            return tf32x3::run(self, &plan, a, b, bias, c);
        }
        self.launch_planned(&plan, a, b, bias, c)
    }

    /// [`Gemm::launch`] after its checks, inside the caller's profiler scope: `plan` is this
    /// GEMM's plan against these operands (not empty); the rest of the checks, then the queued
    /// kernels.
    pub(super) fn launch_planned<T: GemmType<Scalar = S>>(
        &self,
        plan: &Plan,
        a: &impl DeviceSlice<T>,
        b: &impl DeviceSlice<T>,
        bias: Option<(u64, usize, &dyn DeviceSlice<T>)>,
        c: &mut impl DeviceSliceMut<T>,
    ) -> Result<()> {
        if bias.is_none() {
            if let Some(route) = vector::route::<T, S>(self, self.lds()) {
                return vector::run(&route, a, b, c);
            }
        }
        let stream = c.stream().clone();
        let params = self.params(
            plan,
            [a.device_ptr(), b.device_ptr(), c.device_ptr()],
            bias.map_or(0, |b| b.0),
        );
        // Every check (including the kernel choice) comes before anything is queued.
        let path = self.path::<T>(plan, &params, &stream)?;
        use_on(a, &stream)?;
        use_on(b, &stream)?;
        if let Some((_, _, bias)) = bias {
            use_on(bias, &stream)?;
        }
        let choice = match path {
            Path::Skinny(route) => return skinny::run::<T>(&stream, &route),
            Path::Skinny90(route) => return skinny90::run(&stream, &route),
            Path::Partials(route) => return partials::run::<T>(&stream, &route, &params),
            Path::Tiles(choice) => choice,
        };
        run_choice::<T>(&stream, &choice, plan, params, self.batch, self.activation)
    }
}
