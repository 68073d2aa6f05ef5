//! cuBLAS-shaped entry points over [`Gemm`].

use super::{Gemm, GemmType};
use crate::blas::{Layout, Transpose};
use crate::error::Result;
use crate::memory::{DeviceSlice, DeviceSliceMut};

/// cuBLAS-shaped column-major GEMM: `C = alpha * op(A) * op(B) + beta * C`
/// (`cublas<t>gemm`), with `alpha`/`beta` in f32 for f32/f16/bf16 and f64 for f64; f32 is exact.
///
/// ```no_run
/// use cudrv::blas::{self, Transpose};
/// use cudrv::{DeviceBuffer, DeviceSlice};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// let a = DeviceBuffer::from_slice(&stream, &[1.0f32, 2.0, 3.0, 4.0])?;
/// let b = DeviceBuffer::from_slice(&stream, &[1.0f32, 0.0, 0.0, 1.0])?;
/// let mut c = DeviceBuffer::<f32>::zeroed(&stream, 4)?;
/// blas::gemm(Transpose::N, Transpose::N, 2, 2, 2, 1.0, &a, 2, &b, 2, 0.0, &mut c, 2)?;
/// assert_eq!(c.to_vec()?, vec![1.0, 2.0, 3.0, 4.0]);
/// # Ok::<(), cudrv::Error>(())
/// ```
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
///
/// ```no_run
/// use cudrv::blas::{self, Transpose};
/// use cudrv::{DeviceBuffer, DeviceSlice};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// // Three 1 x 1 products: [1*4, 2*5, 3*6].
/// let a = DeviceBuffer::from_slice(&stream, &[1.0f32, 2.0, 3.0])?;
/// let b = DeviceBuffer::from_slice(&stream, &[4.0f32, 5.0, 6.0])?;
/// let mut c = DeviceBuffer::<f32>::zeroed(&stream, 3)?;
/// blas::gemm_strided_batched(Transpose::N, Transpose::N, 1, 1, 1, 1.0, &a, 1, 1, &b, 1, 1, 0.0, &mut c, 1, 1, 3)?;
/// assert_eq!(c.to_vec()?, vec![4.0, 10.0, 18.0]);
/// # Ok::<(), cudrv::Error>(())
/// ```
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
///
/// ```no_run
/// use cudrv::{blas, DeviceBuffer, DeviceSlice};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// let a = DeviceBuffer::from_slice(&stream, &[1.0f32, 2.0, 3.0, 4.0])?; // [[1, 2], [3, 4]]
/// let b = DeviceBuffer::from_slice(&stream, &[1.0f32, 1.0, 1.0, 1.0])?;
/// let mut c = DeviceBuffer::<f32>::zeroed(&stream, 4)?;
/// blas::matmul(&a, &b, &mut c, 2, 2, 2)?;
/// assert_eq!(c.to_vec()?, vec![3.0, 3.0, 7.0, 7.0]);
/// # Ok::<(), cudrv::Error>(())
/// ```
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
