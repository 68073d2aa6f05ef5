//! BLAS on cudrv's own kernels (no cuBLAS): GEMM and GEMV with cuBLAS's conventions.
//!
//! Matrices are **column-major** as in cuBLAS: element `(i, j)` of a matrix with leading
//! dimension `ld` is at `i + j * ld`. [`Transpose`] picks `op(X) = X` or `X^T`. A row-major
//! convenience layer is [`Layout::RowMajor`] on a [`Gemm`], or [`matmul`].
//!
//! | type | math | kernels |
//! |---|---|---|
//! | `f32` | exact ([`MathMode::Exact`], the default): on compute capability 9.0 with full-rate f64 (H100, H200) the f64 tensor cores, f32 operands converted exactly, f64 sums, D rounded once; elsewhere f32 on the CUDA cores | `gemm_dmma90_f32` (`gemm_dmma90_f32_*`), `gemm_simt` |
//! | `f32` | TF32 tensor cores, f32 accumulate ([`MathMode::Tf32`], opt-in) | `gemm_wg_tf32` (wgmma + TMA) on compute capability 9.0, else `gemm_tc` (mma.sync); decode steps on compute capability 9.0 on `gemm_skinny90` (TMA + mma.sync) |
//! | `f16`, `bf16` | tensor cores, f32 accumulate, f32 `alpha`/`beta` | `gemm_wg_f16` / `gemm_wg_bf16` (wgmma + TMA) on compute capability 9.0, else `gemm_tc` (mma.sync); decode steps (a side of at most 16, both operands k-contiguous) on `gemm_skinny90` (TMA + mma.sync) or `gemm_tc`'s thin tiles |
//! | `f64` | f64 on the DMMA tensor cores (mma.sync m16n8k4 / m16n8k8 on compute capability 9.0 and later, m8n8k4 before), f64 accumulate | `gemm_dmma90` (`gemm_dmma90_*`), `gemm_tc` (`gemm_dmma_*`) |
//!
//! Tensor-core kernels load 16-byte aligned A and B whose leading dimensions (and batch strides)
//! are multiples of 16 bytes (8 elements for f16/bf16, 4 for tf32, 2 for f64). An operand that
//! is not (an odd `m` with a tight `lda`, a view at an odd offset) is copied once into an aligned
//! buffer from the caching pool (`gemm_pack_b*`) and the tensor-core kernel runs on the copy,
//! when the problem is large enough for that to pay (about 96^3 of work for f16, bf16 and f64,
//! 400^3 for tf32); smaller ones run on the general CUDA-core kernel (`gemm_simt`, f32/f64 math),
//! which accepts any shape, leading dimension and alignment. On Hopper (compute capability 9.0) the f16, bf16 and
//! tf32 GEMMs run on the sm_90a kernels (warpgroup `wgmma` fed by the tensor memory
//! accelerator) whenever `k >= 1` and `alpha != 0`. wgmma reads tf32 from shared memory only
//! k-contiguous, so the tf32 kernels load an m-contiguous operand into registers instead (NN runs
//! as the transposed problem); only NT (`op(A) = A`, `op(B) = B^T`) packs B into a temporary
//! buffer first (batch 1; NT batches use mma.sync).
//!
//! Long k over few output tiles (64 x 64 x 65536) in f32, tf32 and f64 splits k through partial
//! products ([`SplitK::Partials`]): the parts run as one strided batch of the kernels above into
//! a scratch from the caching pool, and `gemm_partials_<t>` adds them in a fixed order and applies
//! the epilogue.
//!
//! Every entry point validates the shapes, leading dimensions, strides and buffer lengths first
//! and returns [`Error::InvalidArgument`](crate::Error::InvalidArgument) quoting the numbers; on
//! an error nothing is launched and `C` is untouched. Work is queued on `C`'s stream (after
//! waiting for the inputs' streams when they differ).
//!
//! ```no_run
//! use cudrv::blas::{self, Gemm, Transpose};
//! use cudrv::{DeviceBuffer, DeviceSlice};
//! let ctx = cudrv::Context::new(0)?;
//! let stream = ctx.new_stream()?;
//! let (m, n, k) = (2, 2, 3);
//! let a = DeviceBuffer::from_slice(&stream, &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])?; // 2 x 3
//! let b = DeviceBuffer::from_slice(&stream, &[1.0f32; 6])?; // 3 x 2
//! let mut c = DeviceBuffer::<f32>::zeroed(&stream, 4)?; // 2 x 2
//! Gemm::new(Transpose::N, Transpose::N, m, n, k).run(&a, &b, &mut c)?;
//! assert_eq!(c.to_vec()?, vec![9.0, 12.0, 9.0, 12.0]);
//! # Ok::<(), cudrv::Error>(())
//! ```

mod gemm;
mod gemv;
mod memory_class;
mod tma;

pub use gemm::{gemm, gemm_strided_batched, matmul, Gemm, GemmType, Kernel, SplitK, Tile};
pub(crate) use gemm::{IN_PLACE_MAX_K, IN_PLACE_MAX_K_NARROW};
pub(crate) use gemv::{
    element_n_cluster, gemv_on_strips, row_strips, t_vector_kernel, vector_n_in_cluster, Strips, STRIP_CLUSTERS,
};
pub use gemv::{gemv, GemvType};

/// `op(X)` for a GEMM or GEMV operand.
///
/// ```no_run
/// use cudrv::blas::{Gemm, Transpose};
/// use cudrv::{DeviceBuffer, DeviceSlice};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// // C (2 x 2) = A^T B with A stored 3 x 2 and B stored 3 x 2, column-major.
/// let a = DeviceBuffer::from_slice(&stream, &[1.0f32, 0.0, 0.0, 0.0, 1.0, 0.0])?;
/// let b = DeviceBuffer::from_slice(&stream, &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])?;
/// let mut c = DeviceBuffer::<f32>::zeroed(&stream, 4)?;
/// Gemm::new(Transpose::T, Transpose::N, 2, 2, 3).run(&a, &b, &mut c)?;
/// assert_eq!(c.to_vec()?, vec![1.0, 2.0, 4.0, 5.0]);
/// # Ok::<(), cudrv::Error>(())
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Transpose {
    /// `op(X) = X`
    N,
    /// `op(X) = X^T`
    T,
}

impl Transpose {
    pub(crate) fn letter(self) -> char {
        match self {
            Transpose::N => 'n',
            Transpose::T => 't',
        }
    }
}

/// Storage order of the matrices of a [`Gemm`].
///
/// ```no_run
/// use cudrv::blas::{Gemm, Layout, Transpose};
/// use cudrv::{DeviceBuffer, DeviceSlice};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// // Row-major, as in C or PyTorch: A is 1 x 2, B is 2 x 3, C is 1 x 3.
/// let a = DeviceBuffer::from_slice(&stream, &[1.0f32, 2.0])?;
/// let b = DeviceBuffer::from_slice(&stream, &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])?;
/// let mut c = DeviceBuffer::<f32>::zeroed(&stream, 3)?;
/// Gemm::new(Transpose::N, Transpose::N, 1, 3, 2).layout(Layout::RowMajor).run(&a, &b, &mut c)?;
/// assert_eq!(c.to_vec()?, vec![9.0, 12.0, 15.0]);
/// # Ok::<(), cudrv::Error>(())
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum Layout {
    /// cuBLAS's convention: element `(i, j)` at `i + j * ld`.
    #[default]
    ColMajor,
    /// C's convention: element `(i, j)` at `i * ld + j`.
    RowMajor,
}

/// How an `f32` GEMM is computed.
///
/// ```no_run
/// use cudrv::blas::{Gemm, MathMode, Transpose};
/// use cudrv::DeviceBuffer;
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// let n = 1024;
/// let a = DeviceBuffer::<f32>::zeroed(&stream, n * n)?;
/// let b = DeviceBuffer::<f32>::zeroed(&stream, n * n)?;
/// let mut c = DeviceBuffer::<f32>::zeroed(&stream, n * n)?;
/// // f32 on the tensor cores, as cuBLAS does with CUBLAS_TF32_TENSOR_OP_MATH.
/// Gemm::new(Transpose::N, Transpose::N, n, n, n).math(MathMode::Tf32).run(&a, &b, &mut c)?;
/// # Ok::<(), cudrv::Error>(())
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum MathMode {
    /// Exact f32: every product and sum at least as accurate as f32 arithmetic. On compute
    /// capability 9.0 with full-rate f64 units (H100, H200) the automatic choice runs it on the
    /// f64 tensor cores (each element converted exactly to f64, products exact, sums in f64, D
    /// rounded to f32 once: closer to the exact result than cuBLAS's `CUBLAS_COMPUTE_32F`);
    /// elsewhere, and with [`Kernel::Simt`], on the CUDA cores. Ignored by the other types.
    #[default]
    Exact,
    /// f32 operands reduced to TF32 (10-bit mantissa) on the tensor cores, f32 accumulation: like
    /// cuBLAS's `CUBLAS_TF32_TENSOR_OP_MATH`. Relative error about 1e-3 instead of 1e-6. The
    /// mma.sync kernels and the operand packers round to nearest; the wgmma kernels (compute
    /// capability 9.0) hand f32 to the tensor cores, which keep its top 19 bits (truncation).
    Tf32,
    /// f32 accuracy on the tensor cores: each operand split into a tf32 part and a tf32
    /// remainder (`x = hi + lo` to 2^-22 of `|x|`), and three tf32 products summed in f32
    /// (`hi_a lo_b + lo_a hi_b + hi_a hi_b`), so each product is off by at most `3 * 2^-22 |a b|`
    /// and the sum is accumulated in f32 as the exact kernels do (infinities and NaN as in
    /// exact f32; subnormal inputs may be read as zero by the tensor cores, as with
    /// [`MathMode::Tf32`]). The split copies `(m + n) * 3k` elements per matrix first; small,
    /// short and one-row or one-column products run on the exact kernels instead, which are as
    /// fast there (and [`Kernel::Simt`] forces them). On an H200,
    /// 1.4-2.4x cuBLAS's exact f32 from 2048^3 and 3000 x 5000 x 700 up (docs/PERFORMANCE.md).
    /// Ignored by the other types.
    ///
    /// ```no_run
    /// use cudrv::blas::{Gemm, MathMode, Transpose};
    /// use cudrv::DeviceBuffer;
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// let n = 4096;
    /// let a = DeviceBuffer::<f32>::zeroed(&stream, n * n)?;
    /// let b = DeviceBuffer::<f32>::zeroed(&stream, n * n)?;
    /// let mut c = DeviceBuffer::<f32>::zeroed(&stream, n * n)?;
    /// let g = Gemm::new(Transpose::N, Transpose::N, n, n, n).math(MathMode::Tf32x3);
    /// assert!(g.kernel_name(&a, &b, &c)?.starts_with("gemm_split_tf32x3+"));
    /// g.run(&a, &b, &mut c)?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    Tf32x3,
}

/// The activation of a fused GEMM epilogue, applied last: `C = act(alpha op(A) op(B) + beta C + bias)`.
///
/// ```no_run
/// use cudrv::blas::{Activation, Gemm, Transpose};
/// use cudrv::{DeviceBuffer, DeviceSlice};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// // relu(A B + bias), A 2 x 1, B 1 x 1: one launch.
/// let a = DeviceBuffer::from_slice(&stream, &[1.0f32, -1.0])?;
/// let b = DeviceBuffer::from_slice(&stream, &[3.0f32])?;
/// let bias = DeviceBuffer::from_slice(&stream, &[0.5f32, 0.5])?;
/// let mut c = DeviceBuffer::<f32>::zeroed(&stream, 2)?;
/// Gemm::new(Transpose::N, Transpose::N, 2, 1, 1)
///     .activation(Activation::Relu)
///     .run_with_bias(&a, &b, &bias, &mut c)?;
/// assert_eq!(c.to_vec()?, vec![3.5, 0.0]);
/// # Ok::<(), cudrv::Error>(())
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum Activation {
    /// No activation.
    #[default]
    None,
    /// `max(x, 0)`
    Relu,
    /// `x * Phi(x)` (the exact, erf form: `0.5 x (1 + erf(x / sqrt 2))`).
    Gelu,
    /// `1 / (1 + exp(-x))`
    Sigmoid,
    /// `tanh(x)`
    Tanh,
}

impl Activation {
    /// Every activation but [`Activation::None`], for tests and tools.
    pub(crate) const APPLIED: [Activation; 4] = [
        Activation::Relu,
        Activation::Gelu,
        Activation::Sigmoid,
        Activation::Tanh,
    ];

    /// The elementwise function this activation applies ([`crate::ops::Activation`], whose
    /// `name` also names the GEMM kernels that inline it and whose `reference` is the host
    /// function they are checked against); `None` for [`Activation::None`].
    ///
    /// ```
    /// use cudrv::blas::Activation;
    /// assert_eq!(Activation::Gelu.op().map(|f| f.name()), Some("gelu"));
    /// assert_eq!(Activation::Relu.op().map(|f| f.reference(-2.0)), Some(0.0));
    /// assert!(Activation::None.op().is_none());
    /// ```
    pub fn op(self) -> Option<crate::ops::Activation> {
        use crate::ops::Activation as Op;
        match self {
            Activation::None => None,
            Activation::Relu => Some(Op::Relu),
            Activation::Gelu => Some(Op::Gelu),
            Activation::Sigmoid => Some(Op::Sigmoid),
            Activation::Tanh => Some(Op::Tanh),
        }
    }

    fn code(self) -> i32 {
        match self {
            Activation::None => 0,
            Activation::Relu => 1,
            Activation::Gelu => 2,
            Activation::Sigmoid => 3,
            Activation::Tanh => 4,
        }
    }
}

/// Elements a column-major `rows x cols` matrix with leading dimension `ld` spans:
/// `(cols - 1) * ld + rows`, or 0 when it is empty. `None` on overflow.
pub(crate) fn span(rows: usize, cols: usize, ld: usize) -> Option<usize> {
    if rows == 0 || cols == 0 {
        return Some(0);
    }
    (cols - 1).checked_mul(ld)?.checked_add(rows)
}

/// Elements `batch` matrices spanning `one` elements each, `stride` apart, need.
pub(crate) fn batched_span(one: usize, batch: usize, stride: usize) -> Option<usize> {
    if one == 0 || batch == 0 {
        return Some(0);
    }
    (batch - 1).checked_mul(stride)?.checked_add(one)
}
