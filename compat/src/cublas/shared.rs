//! The pointer-level half of the BLAS modules, shared by both cudarc eras (this crate's
//! `cublas` and `cudrv-compat-012`'s): cuBLAS's shape rules, the checks of buffer lengths, and
//! the translation of one call to [`cudrv::blas`]. The eras differ only in how an operand's
//! pointer is obtained; from [`Operand`] on, everything is here once.

use std::cell::RefCell;
use std::sync::Arc;

use super::result::CublasError;
use super::sys::{cublasOperation_t as Op, cublasStatus_t as Status};
use super::{GemmConfig, GemvConfig};

thread_local! {
    /// The message of the most recent failure on this thread (`CublasError::detail`).
    pub(super) static DETAIL: RefCell<Option<(Status, String)>> = const { RefCell::new(None) };
}

fn fail(status: Status, message: String) -> CublasError {
    DETAIL.with(|d| *d.borrow_mut() = Some((status, message)));
    CublasError(status)
}

fn invalid(message: String) -> CublasError {
    fail(Status::CUBLAS_STATUS_INVALID_VALUE, message)
}

fn from_cudrv(e: cudrv::Error) -> CublasError {
    match e {
        cudrv::Error::InvalidArgument(m) => invalid(m),
        other => fail(Status::CUBLAS_STATUS_EXECUTION_FAILED, other.to_string()),
    }
}

/// One operand of a BLAS call: a device pointer already ordered on the call's stream, and the
/// number of elements its buffer holds from there.
///
/// ```
/// use cudrv_compat::imp::cublas::Operand;
/// let a = Operand { ptr: 0x7f00_0000_0000, len: 4096 };
/// assert_eq!(a.len, 4096);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Operand {
    /// The device address of the first element.
    pub ptr: u64,
    /// Elements available from `ptr`.
    pub len: usize,
}

/// The element types the BLAS modules serve (f32, f64, f16, bf16), and how a cuBLAS scalar of
/// the type becomes cudrv's (f16 and bf16 scale in f32, as cudarc asks cuBLAS to).
///
/// ```
/// use cudrv_compat::imp::cublas::Element;
/// fn served<T: Element>() {}
/// served::<f32>();
/// served::<half::bf16>();
/// ```
pub trait Element: cudrv::blas::GemmType + cudrv::blas::GemvType + Copy {
    /// `alpha` or `beta` as cudrv's GEMM takes it.
    ///
    /// ```
    /// use cudrv_compat::imp::cublas::Element;
    /// assert_eq!(half::f16::from_f32(0.5).gemm_scalar(), 0.5f32); // 16-bit types scale in f32
    /// ```
    fn gemm_scalar(self) -> <Self as cudrv::blas::GemmType>::Scalar;
}

impl Element for f32 {
    fn gemm_scalar(self) -> f32 {
        self
    }
}
impl Element for f64 {
    fn gemm_scalar(self) -> f64 {
        self
    }
}
impl Element for half::f16 {
    fn gemm_scalar(self) -> f32 {
        self.to_f32()
    }
}
impl Element for half::bf16 {
    fn gemm_scalar(self) -> f32 {
        self.to_f32()
    }
}

/// A device range shown to `cudrv::blas` as a slice of the call's stream (so it adds no joins
/// of its own: the caller ordered it there).
struct Ordered<'a, T> {
    op: Operand,
    stream: &'a Arc<cudrv::Stream>,
    _marker: std::marker::PhantomData<T>,
}

impl<T> cudrv::DeviceSlice<T> for Ordered<'_, T> {
    fn device_ptr(&self) -> u64 {
        self.op.ptr
    }
    fn len(&self) -> usize {
        self.op.len
    }
    fn stream(&self) -> &Arc<cudrv::Stream> {
        self.stream
    }
}
impl<T> cudrv::DeviceSliceMut<T> for Ordered<'_, T> {}

fn ordered<T>(op: Operand, stream: &Arc<cudrv::Stream>) -> Ordered<'_, T> {
    Ordered {
        op,
        stream,
        _marker: std::marker::PhantomData,
    }
}

fn transpose(op: Op, which: &str) -> Result<cudrv::blas::Transpose, CublasError> {
    match op {
        Op::CUBLAS_OP_N => Ok(cudrv::blas::Transpose::N),
        Op::CUBLAS_OP_T | Op::CUBLAS_OP_C => Ok(cudrv::blas::Transpose::T),
        Op::CUBLAS_OP_CONJG => Err(invalid(format!(
            "{which} = CUBLAS_OP_CONJG is not supported for real types"
        ))),
    }
}

/// Elements a column-major `rows x cols` matrix with leading dimension `ld` spans.
fn span(rows: i64, cols: i64, ld: i64) -> i64 {
    if rows == 0 || cols == 0 {
        0
    } else {
        ld * (cols - 1) + rows
    }
}

/// Checks a batched GEMM's shape against cuBLAS's rules and the buffers' lengths; returns
/// op(A) and op(B).
pub(super) fn check_gemm<T>(
    cfg: &GemmConfig<T>,
    batch: i64,
    strides: [i64; 3],
    lens: [usize; 3],
) -> Result<[cudrv::blas::Transpose; 2], CublasError> {
    let ta = transpose(cfg.transa, "transa")?;
    let tb = transpose(cfg.transb, "transb")?;
    let (m, n, k) = (cfg.m as i64, cfg.n as i64, cfg.k as i64);
    if m < 0 || n < 0 || k < 0 || batch < 0 {
        return Err(invalid(format!("negative size: m={m} n={n} k={k} batch={batch}")));
    }
    if strides.iter().any(|&s| s < 0) {
        return Err(invalid(format!("negative stride in {strides:?}")));
    }
    // Stored shapes: A is (m x k) or (k x m); B is (k x n) or (n x k).
    let n_op = cudrv::blas::Transpose::N;
    let (a_rows, a_cols) = if ta == n_op { (m, k) } else { (k, m) };
    let (b_rows, b_cols) = if tb == n_op { (k, n) } else { (n, k) };
    let lds = [
        ("lda", cfg.lda as i64, a_rows, a_cols),
        ("ldb", cfg.ldb as i64, b_rows, b_cols),
        ("ldc", cfg.ldc as i64, m, n),
    ];
    for (i, (name, ld, rows, cols)) in lds.into_iter().enumerate() {
        if ld < rows.max(1) {
            return Err(invalid(format!("{name} = {ld} is less than max(1, {rows}) rows")));
        }
        let one = span(rows, cols, ld);
        let need = if batch == 0 || one == 0 {
            0
        } else {
            strides[i] * (batch - 1) + one
        };
        if (lens[i] as i64) < need {
            return Err(invalid(format!(
                "matrix {} needs {need} elements (ld {ld}, {rows} x {cols}, batch {batch}, stride {}) but its buffer has {}",
                ["A", "B", "C"][i],
                strides[i],
                lens[i]
            )));
        }
    }
    Ok([ta, tb])
}

/// `C = alpha op(A) op(B) + beta C`, `batch` times at `strides`, on `stream` with cudrv's GEMM.
///
/// # Safety
/// The operands must be ordered on `stream` and valid for the whole call; `[a, b, c]` must hold
/// the matrices `cfg` describes (their lengths are checked), and C must not overlap A or B.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::*;
/// # let ctx = CudaContext::new(0)?;
/// # let stream = ctx.default_stream();
/// use cudrv_compat::imp::cublas::{gemm_on, sys::cublasOperation_t, GemmConfig, Operand};
/// let (a, b, c) = (stream.alloc_zeros::<f32>(4)?, stream.alloc_zeros::<f32>(4)?, stream.alloc_zeros::<f32>(4)?);
/// let op = |s: &CudaSlice<f32>| Operand { ptr: *s.device_ptr_ref(), len: s.len() };
/// let cfg = GemmConfig { transa: cublasOperation_t::CUBLAS_OP_N, transb: cublasOperation_t::CUBLAS_OP_N, m: 2, n: 2, k: 2, alpha: 1.0f32, lda: 2, ldb: 2, beta: 0.0, ldc: 2 };
/// // SAFETY: the three buffers live on `stream` for the call and hold 2 x 2 matrices.
/// unsafe { gemm_on(stream.cudrv(), &cfg, 1, [0, 0, 0], [op(&a), op(&b), op(&c)]) }?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub unsafe fn gemm_on<T: Element>(
    stream: &Arc<cudrv::Stream>,
    cfg: &GemmConfig<T>,
    batch: i32,
    strides: [i64; 3],
    [a, b, c]: [Operand; 3],
) -> Result<(), CublasError> {
    let [ta, tb] = check_gemm(cfg, batch as i64, strides, [a.len, b.len, c.len])?;
    if cfg.m == 0 || cfg.n == 0 || batch == 0 {
        return Ok(());
    }
    let (va, vb, mut vc) = (
        ordered::<T>(a, stream),
        ordered::<T>(b, stream),
        ordered::<T>(c, stream),
    );
    let u = |v: i32| v as usize;
    let mut g = cudrv::blas::Gemm::new(ta, tb, u(cfg.m), u(cfg.n), u(cfg.k))
        .alpha(cfg.alpha.gemm_scalar())
        .beta(cfg.beta.gemm_scalar())
        .ld(u(cfg.lda), u(cfg.ldb), u(cfg.ldc));
    if batch != 1 || strides != [0, 0, 0] {
        let s = |v: i64| v as usize;
        g = g.batched(batch as usize, s(strides[0]), s(strides[1]), s(strides[2]));
    }
    g.run(&va, &vb, &mut vc).map_err(from_cudrv)
}

/// `y = alpha op(A) x + beta y` on `stream` with cudrv's GEMV.
///
/// # Safety
/// As for [`gemm_on`]: `[a, x, y]` ordered on `stream`, holding what `cfg` describes.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::*;
/// # let ctx = CudaContext::new(0)?;
/// # let stream = ctx.default_stream();
/// use cudrv_compat::imp::cublas::{gemv_on, sys::cublasOperation_t, GemvConfig, Operand};
/// let (a, x, y) = (stream.alloc_zeros::<f64>(4)?, stream.alloc_zeros::<f64>(2)?, stream.alloc_zeros::<f64>(2)?);
/// let op = |s: &CudaSlice<f64>| Operand { ptr: *s.device_ptr_ref(), len: s.len() };
/// let cfg = GemvConfig { trans: cublasOperation_t::CUBLAS_OP_N, m: 2, n: 2, alpha: 1.0, lda: 2, incx: 1, beta: 0.0, incy: 1 };
/// // SAFETY: the buffers live on `stream` for the call and hold what `cfg` describes.
/// unsafe { gemv_on(stream.cudrv(), &cfg, [op(&a), op(&x), op(&y)]) }?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub unsafe fn gemv_on<T: Element>(
    stream: &Arc<cudrv::Stream>,
    cfg: &GemvConfig<T>,
    [a, x, y]: [Operand; 3],
) -> Result<(), CublasError> {
    let trans = transpose(cfg.trans, "trans")?;
    let (m, n) = (cfg.m as i64, cfg.n as i64);
    if m < 0 || n < 0 || cfg.incx == 0 || cfg.incy == 0 || (cfg.lda as i64) < m.max(1) {
        return Err(invalid(format!(
            "gemv: m={m} n={n} lda={} incx={} incy={} (need m, n >= 0, lda >= max(1, m), inc != 0)",
            cfg.lda, cfg.incx, cfg.incy
        )));
    }
    let (ylen, xlen) = if trans == cudrv::blas::Transpose::N {
        (m, n)
    } else {
        (n, m)
    };
    let vec_span = |len: i64, inc: i32| {
        if len == 0 {
            0
        } else {
            (len - 1) * (inc as i64).abs() + 1
        }
    };
    let needs = [
        ("A", span(m, n, cfg.lda as i64), a.len),
        ("x", vec_span(xlen, cfg.incx), x.len),
        ("y", vec_span(ylen, cfg.incy), y.len),
    ];
    for (name, need, have) in needs {
        if (have as i64) < need {
            return Err(invalid(format!("gemv: {name} needs {need} elements but has {have}")));
        }
    }
    if ylen == 0 {
        return Ok(());
    }
    let (va, vx, mut vy) = (
        ordered::<T>(a, stream),
        ordered::<T>(x, stream),
        ordered::<T>(y, stream),
    );
    cudrv::blas::gemv(
        trans,
        cfg.m as usize,
        cfg.n as usize,
        cfg.alpha,
        &va,
        cfg.lda as usize,
        &vx,
        cfg.incx as isize,
        cfg.beta,
        &mut vy,
        cfg.incy as isize,
    )
    .map_err(from_cudrv)
}

#[cfg(test)]
mod tests {
    use super::super::sys::cublasOperation_t as Op;
    use super::super::sys::cublasStatus_t as Status;
    use super::*;

    #[allow(clippy::too_many_arguments)]
    fn cfg(transa: Op, transb: Op, m: i32, n: i32, k: i32, lda: i32, ldb: i32, ldc: i32) -> GemmConfig<f32> {
        GemmConfig {
            transa,
            transb,
            m,
            n,
            k,
            alpha: 1.0,
            lda,
            ldb,
            beta: 0.0,
            ldc,
        }
    }

    #[test]
    fn gemm_shapes_follow_cublas_rules() {
        use cudrv::blas::Transpose::{N, T};
        use Op::*;
        // 3x4 * 4x5, no transposes.
        assert_eq!(
            check_gemm(
                &cfg(CUBLAS_OP_N, CUBLAS_OP_N, 3, 5, 4, 3, 4, 3),
                1,
                [0; 3],
                [12, 20, 15]
            )
            .unwrap(),
            [N, N]
        );
        // Transposed A is stored k x m: lda >= k.
        assert!(check_gemm(
            &cfg(CUBLAS_OP_T, CUBLAS_OP_N, 3, 5, 4, 3, 4, 3),
            1,
            [0; 3],
            [12, 20, 15]
        )
        .is_err());
        assert_eq!(
            check_gemm(
                &cfg(CUBLAS_OP_T, CUBLAS_OP_T, 3, 5, 4, 4, 5, 3),
                1,
                [0; 3],
                [12, 20, 15]
            )
            .unwrap(),
            [T, T]
        );
        // Too small a C buffer names the numbers.
        let e = check_gemm(
            &cfg(CUBLAS_OP_N, CUBLAS_OP_N, 3, 5, 4, 3, 4, 3),
            1,
            [0; 3],
            [12, 20, 14],
        )
        .unwrap_err();
        assert_eq!(e.0, Status::CUBLAS_STATUS_INVALID_VALUE);
        assert!(e.detail().unwrap().contains("needs 15"), "{:?}", e.detail());
        // Batches need stride * (batch - 1) more.
        assert!(check_gemm(
            &cfg(CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, 2, 2, 2),
            3,
            [4, 4, 4],
            [12, 12, 11]
        )
        .is_err());
        assert!(check_gemm(
            &cfg(CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, 2, 2, 2),
            3,
            [4, 4, 4],
            [12, 12, 12]
        )
        .is_ok());
        assert!(check_gemm(
            &cfg(CUBLAS_OP_CONJG, CUBLAS_OP_N, 2, 2, 2, 2, 2, 2),
            1,
            [0; 3],
            [4, 4, 4]
        )
        .is_err());
    }
}
