//! cudarc-shaped BLAS (`cudarc::cublas`): [`CudaBlas`] with [`Gemm`] (f16, bf16, f32, f64) and
//! [`Gemv`] (f32, f64), with cuBLAS's column-major conventions, served by [`cudrv::blas`]
//! (cudrv's own kernels; no libcublas).
//! Every stream, borrowed and per-thread ones included, is served by `cudrv::blas`: there is
//! one BLAS in cudrv and this module only translates cuBLAS's calling conventions to it.
//!
//! Semantics follow cuBLAS as cudarc calls it: `C = alpha * op(A) * op(B) + beta * C`, all
//! matrices column-major, `op(A)` is `m x k`, `op(B)` is `k x n`, `C` is `m x n`; `lda`, `ldb`,
//! `ldc` are leading dimensions; `beta == 0` means `C` is not read. f16 and bf16 accumulate in
//! f32 (cudarc passes `CUBLAS_COMPUTE_32F`). Unlike cuBLAS, shapes, leading dimensions and
//! buffer lengths are checked before the launch (`CUBLAS_STATUS_INVALID_VALUE`, with the numbers
//! in [`CublasError::detail`](result::CublasError::detail)).
//!
//! ```no_run
//! use cudrv_compat::cublas::{sys::cublasOperation_t, CudaBlas, Gemm, GemmConfig};
//! use cudrv_compat::driver::CudaContext;
//! let ctx = CudaContext::new(0).unwrap();
//! let stream = ctx.default_stream();
//! let blas = CudaBlas::new(stream.clone()).unwrap();
//! let a = stream.clone_htod(&[1.0f32, 2.0, 3.0, 4.0]).unwrap(); // 2x2, column-major
//! let b = stream.clone_htod(&[1.0f32, 0.0, 0.0, 1.0]).unwrap(); // identity
//! let mut c = stream.alloc_zeros::<f32>(4).unwrap();
//! let cfg = GemmConfig {
//!     transa: cublasOperation_t::CUBLAS_OP_N, transb: cublasOperation_t::CUBLAS_OP_N,
//!     m: 2, n: 2, k: 2, alpha: 1.0, lda: 2, ldb: 2, beta: 0.0, ldc: 2,
//! };
//! // SAFETY: the buffers match the configuration.
//! unsafe { blas.gemm(cfg, &a, &b, &mut c) }.unwrap();
//! assert_eq!(stream.clone_dtoh(&c).unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
//! ```

mod shared;

use std::ffi::{c_int, c_longlong};
use std::sync::Arc;

use crate::imp::driver::{CudaStream, DevicePtr, DevicePtrMut};

use shared::DETAIL;
#[doc(hidden)]
pub use shared::{gemm_on, gemv_on, Element, Operand};

/// cuBLAS's raw types that the configurations use.
#[allow(non_camel_case_types)]
pub mod sys {
    /// Whether an operand is used as stored (`N`) or transposed (`T`, `C` for real types).
    ///
    /// ```
    /// use cudrv_compat::imp::cublas::sys::cublasOperation_t;
    /// let op = cublasOperation_t::CUBLAS_OP_T;
    /// assert_ne!(op, cublasOperation_t::CUBLAS_OP_N);
    /// ```
    #[repr(u32)]
    #[derive(Debug, Copy, Clone, Hash, PartialOrd, Ord, PartialEq, Eq)]
    pub enum cublasOperation_t {
        /// As stored.
        CUBLAS_OP_N = 0,
        /// Transposed.
        CUBLAS_OP_T = 1,
        /// Conjugate-transposed (transposed, for real types).
        CUBLAS_OP_C = 2,
        /// Conjugated, not transposed (not supported for real GEMM).
        CUBLAS_OP_CONJG = 3,
    }

    impl cublasOperation_t {
        /// cuBLAS's alias of `CUBLAS_OP_C`.
        ///
        /// ```
        /// use cudrv_compat::imp::cublas::sys::cublasOperation_t;
        /// assert_eq!(cublasOperation_t::CUBLAS_OP_HERMITAN, cublasOperation_t::CUBLAS_OP_C);
        /// ```
        pub const CUBLAS_OP_HERMITAN: cublasOperation_t = cublasOperation_t::CUBLAS_OP_C;
    }

    /// cuBLAS status codes.
    ///
    /// ```
    /// use cudrv_compat::imp::cublas::{sys::cublasStatus_t, CublasError};
    /// let e = CublasError(cublasStatus_t::CUBLAS_STATUS_INVALID_VALUE);
    /// println!("{e:?}");
    /// ```
    #[repr(u32)]
    #[derive(Debug, Copy, Clone, Hash, PartialOrd, Ord, PartialEq, Eq)]
    #[allow(missing_docs)]
    pub enum cublasStatus_t {
        CUBLAS_STATUS_SUCCESS = 0,
        CUBLAS_STATUS_NOT_INITIALIZED = 1,
        CUBLAS_STATUS_ALLOC_FAILED = 3,
        CUBLAS_STATUS_INVALID_VALUE = 7,
        CUBLAS_STATUS_ARCH_MISMATCH = 8,
        CUBLAS_STATUS_MAPPING_ERROR = 11,
        CUBLAS_STATUS_EXECUTION_FAILED = 13,
        CUBLAS_STATUS_INTERNAL_ERROR = 14,
        CUBLAS_STATUS_NOT_SUPPORTED = 15,
        CUBLAS_STATUS_LICENSE_ERROR = 16,
    }
}

/// cudarc's `cublas::result` path for the error type.
pub mod result {
    use super::sys;
    use std::fmt;

    /// A failed BLAS call: a cuBLAS status, as in cudarc.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// use cudrv_compat::imp::cublas::{CudaBlas, Gemm};
    /// # use cudrv_compat::imp::cublas::{sys::cublasOperation_t, GemmConfig};
    /// let blas = CudaBlas::new(stream.clone())?;
    /// let cfg = GemmConfig {
    ///     transa: cublasOperation_t::CUBLAS_OP_N,
    ///     transb: cublasOperation_t::CUBLAS_OP_N,
    ///     m: 2, n: 2, k: 2,
    ///     alpha: 1.0f32, lda: 2, ldb: 2,
    ///     beta: 0.0, ldc: 2,
    /// };
    /// let (a, b) = (stream.alloc_zeros::<f32>(4)?, stream.alloc_zeros::<f32>(3)?); // b too short
    /// let mut c = stream.alloc_zeros::<f32>(4)?;
    /// // SAFETY: the lengths are checked; a short buffer is an error, not a wild read.
    /// if let Err(e) = unsafe { blas.gemm(cfg, &a, &b, &mut c) } {
    ///     eprintln!("{e:?}: {:?}", e.detail());
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[derive(Clone, Copy, PartialEq, Eq)]
    pub struct CublasError(pub sys::cublasStatus_t);

    impl CublasError {
        /// compat's full message for the most recent error of this status on this thread
        /// (the numbers of a rejected shape, or the driver error underneath).
        ///
        /// ```
        /// use cudrv_compat::imp::cublas::{sys::cublasStatus_t, CublasError};
        /// let e = CublasError(cublasStatus_t::CUBLAS_STATUS_INVALID_VALUE);
        /// println!("{:?}", e.detail()); // the message of this thread's last such error, if any
        /// ```
        pub fn detail(&self) -> Option<String> {
            super::DETAIL.with(|d| match &*d.borrow() {
                Some((status, msg)) if *status == self.0 => Some(msg.clone()),
                _ => None,
            })
        }
    }

    impl fmt::Debug for CublasError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "CublasError({:?})", self.0)?;
            if let Some(d) = self.detail() {
                write!(f, ": {d}")?;
            }
            Ok(())
        }
    }

    impl fmt::Display for CublasError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "{self:?}")
        }
    }

    impl std::error::Error for CublasError {}
}

pub use result::CublasError;

/// A BLAS handle bound to a stream (cudarc's `CudaBlas`).
///
/// ```no_run
/// # use cudrv_compat::imp::driver::*;
/// # use std::sync::Arc;
/// # let ctx = CudaContext::new(0)?;
/// # let stream = ctx.default_stream();
/// use cudrv_compat::imp::cublas::{sys::cublasOperation_t, CudaBlas, Gemm, GemmConfig};
/// let blas = CudaBlas::new(stream.clone())?;
/// let a = stream.memcpy_stod(&[1.0f32, 2.0, 3.0, 4.0])?;
/// let b = stream.memcpy_stod(&[1.0f32, 0.0, 0.0, 1.0])?;
/// let mut c = stream.alloc_zeros::<f32>(4)?;
/// let cfg = GemmConfig {
///     transa: cublasOperation_t::CUBLAS_OP_N,
///     transb: cublasOperation_t::CUBLAS_OP_N,
///     m: 2, n: 2, k: 2,
///     alpha: 1.0f32, lda: 2, ldb: 2,
///     beta: 0.0, ldc: 2,
/// };
/// // SAFETY: a, b, c hold 2 x 2 matrices.
/// unsafe { blas.gemm(cfg, &a, &b, &mut c) }?;
/// assert_eq!(stream.memcpy_dtov(&c)?, vec![1.0, 2.0, 3.0, 4.0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct CudaBlas {
    stream: Arc<CudaStream>,
}

impl CudaBlas {
    /// A handle whose work is queued on `stream`.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let blas = cudrv_compat::imp::cublas::CudaBlas::new(stream.clone())?; // no libcublas is loaded
    /// # drop(blas);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(stream: Arc<CudaStream>) -> Result<Self, CublasError> {
        Ok(CudaBlas { stream })
    }

    /// The stream the work goes to.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let blas = cudrv_compat::imp::cublas::CudaBlas::new(stream.clone())?;
    /// assert_eq!(blas.stream().cu_stream(), stream.cu_stream());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Moves later work to `stream`.
    ///
    /// # Safety
    /// Buffers used with the handle must be valid on the new stream (as in cudarc).
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let mut blas = cudrv_compat::imp::cublas::CudaBlas::new(stream.clone())?;
    /// let other = ctx.new_stream()?;
    /// other.join(&stream)?;
    /// // SAFETY: the buffers used next are ordered on `other` (it waited for `stream`).
    /// unsafe { blas.set_stream(other) }?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub unsafe fn set_stream(&mut self, stream: Arc<CudaStream>) -> Result<(), CublasError> {
        self.stream = stream;
        Ok(())
    }

    /// `"cudrv::blas"`: the implementation that serves every handle.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let blas = cudrv_compat::imp::cublas::CudaBlas::new(stream.clone())?;
    /// assert_eq!(blas.backend(), "cudrv::blas");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn backend(&self) -> &'static str {
        "cudrv::blas"
    }
}

/// Configuration of one GEMM, cuBLAS style (cudarc's `GemmConfig`).
///
/// ```
/// use cudrv_compat::imp::cublas::{sys::cublasOperation_t, GemmConfig};
/// // C (64 x 32) = A^T (64 x 128) B (128 x 32), column-major.
/// let cfg = GemmConfig {
///     transa: cublasOperation_t::CUBLAS_OP_T,
///     transb: cublasOperation_t::CUBLAS_OP_N,
///     m: 64, n: 32, k: 128,
///     alpha: 1.0f32, lda: 128, ldb: 128,
///     beta: 0.0, ldc: 64,
/// };
/// # let _ = cfg;
/// ```
#[derive(Debug, Copy, Clone)]
pub struct GemmConfig<T> {
    /// op(A).
    pub transa: sys::cublasOperation_t,
    /// op(B).
    pub transb: sys::cublasOperation_t,
    /// Rows of op(A) and C.
    pub m: c_int,
    /// Columns of op(B) and C.
    pub n: c_int,
    /// Columns of op(A), rows of op(B).
    pub k: c_int,
    /// Scale of op(A) op(B).
    pub alpha: T,
    /// Leading dimension of A.
    pub lda: c_int,
    /// Leading dimension of B.
    pub ldb: c_int,
    /// Scale of C's previous contents (0: C is not read).
    pub beta: T,
    /// Leading dimension of C.
    pub ldc: c_int,
}

/// A batch of GEMMs with equal shapes at fixed strides (cudarc's `StridedBatchedConfig`).
///
/// ```
/// use cudrv_compat::imp::cublas::{sys::cublasOperation_t, GemmConfig, StridedBatchedConfig};
/// let gemm = GemmConfig {
///     transa: cublasOperation_t::CUBLAS_OP_N,
///     transb: cublasOperation_t::CUBLAS_OP_N,
///     m: 64, n: 64, k: 64,
///     alpha: 1.0f64, lda: 64, ldb: 64,
///     beta: 0.0, ldc: 64,
/// };
/// // 512 products, B shared (stride 0).
/// let cfg = StridedBatchedConfig { gemm, batch_size: 512, stride_a: 64 * 64, stride_b: 0, stride_c: 64 * 64 };
/// # let _ = cfg;
/// ```
#[derive(Debug, Copy, Clone)]
pub struct StridedBatchedConfig<T> {
    /// The shape of each GEMM.
    pub gemm: GemmConfig<T>,
    /// How many.
    pub batch_size: c_int,
    /// Elements between consecutive A matrices.
    pub stride_a: c_longlong,
    /// Elements between consecutive B matrices.
    pub stride_b: c_longlong,
    /// Elements between consecutive C matrices.
    pub stride_c: c_longlong,
}

/// Configuration of one GEMV, cuBLAS style (cudarc's `GemvConfig`).
///
/// ```
/// use cudrv_compat::imp::cublas::{sys::cublasOperation_t, GemvConfig};
/// let cfg = GemvConfig {
///     trans: cublasOperation_t::CUBLAS_OP_N,
///     m: 4096, n: 4096,
///     alpha: 1.0f32, lda: 4096, incx: 1,
///     beta: 0.0, incy: 1,
/// };
/// # let _ = cfg;
/// ```
#[derive(Debug, Copy, Clone)]
pub struct GemvConfig<T> {
    /// op(A).
    pub trans: sys::cublasOperation_t,
    /// Rows of A (as stored).
    pub m: c_int,
    /// Columns of A (as stored).
    pub n: c_int,
    /// Scale of op(A) x.
    pub alpha: T,
    /// Leading dimension of A.
    pub lda: c_int,
    /// Stride of x.
    pub incx: c_int,
    /// Scale of y's previous contents (0: y is not read).
    pub beta: T,
    /// Stride of y.
    pub incy: c_int,
}

/// Matrix-matrix multiplication (cudarc's `Gemm`).
///
/// ```no_run
/// # use cudrv_compat::imp::driver::*;
/// # use std::sync::Arc;
/// # let ctx = CudaContext::new(0)?;
/// # let stream = ctx.default_stream();
/// use cudrv_compat::imp::cublas::{sys::cublasOperation_t, CudaBlas, Gemm, GemmConfig};
/// /// Works for every element type the handle serves.
/// unsafe fn square<T>(blas: &CudaBlas, a: &CudaSlice<T>, c: &mut CudaSlice<T>, cfg: GemmConfig<T>) -> Result<(), cudrv_compat::imp::cublas::CublasError>
/// where
///     CudaBlas: Gemm<T>,
/// {
///     // SAFETY: forwarded.
///     unsafe { blas.gemm(cfg, a, a, c) }
/// }
/// let blas = CudaBlas::new(stream.clone())?;
/// let a = stream.memcpy_stod(&[1.0f32, 2.0, 3.0, 4.0])?;
/// let mut c = stream.alloc_zeros::<f32>(4)?;
/// let cfg = GemmConfig {
///     transa: cublasOperation_t::CUBLAS_OP_N,
///     transb: cublasOperation_t::CUBLAS_OP_N,
///     m: 2, n: 2, k: 2,
///     alpha: 1.0f32, lda: 2, ldb: 2,
///     beta: 0.0, ldc: 2,
/// };
/// // SAFETY: 2 x 2 matrices.
/// unsafe { square(&blas, &a, &mut c, cfg) }?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Gemm<T> {
    /// `C = alpha * op(A) * op(B) + beta * C`.
    ///
    /// # Safety
    /// The buffers must hold the matrices the configuration describes, and `c` must not
    /// overlap `a` or `b`.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// use cudrv_compat::imp::cublas::{sys::cublasOperation_t, CudaBlas, Gemm, GemmConfig};
    /// let blas = CudaBlas::new(stream.clone())?;
    /// let a = stream.memcpy_stod(&[1.0f32, 2.0, 3.0, 4.0])?;
    /// let mut c = stream.alloc_zeros::<f32>(4)?;
    /// let cfg = GemmConfig {
    ///     transa: cublasOperation_t::CUBLAS_OP_N,
    ///     transb: cublasOperation_t::CUBLAS_OP_N,
    ///     m: 2, n: 2, k: 2,
    ///     alpha: 1.0f32, lda: 2, ldb: 2,
    ///     beta: 0.0, ldc: 2,
    /// };
    /// // SAFETY: a and c hold 2 x 2 matrices.
    /// unsafe { blas.gemm(cfg, &a, &a, &mut c) }?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    unsafe fn gemm<A: DevicePtr<T>, B: DevicePtr<T>, C: DevicePtrMut<T>>(
        &self,
        cfg: GemmConfig<T>,
        a: &A,
        b: &B,
        c: &mut C,
    ) -> Result<(), CublasError>;

    /// `batch_size` GEMMs at fixed strides.
    ///
    /// # Safety
    /// As for [`gemm`](Self::gemm), for every matrix of the batch.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// use cudrv_compat::imp::cublas::{sys::cublasOperation_t, CudaBlas, Gemm, GemmConfig, StridedBatchedConfig};
    /// let blas = CudaBlas::new(stream.clone())?;
    /// let a = stream.alloc_zeros::<f32>(8 * 16)?;
    /// let mut c = stream.alloc_zeros::<f32>(8 * 16)?;
    /// let gemm = GemmConfig {
    ///     transa: cublasOperation_t::CUBLAS_OP_N,
    ///     transb: cublasOperation_t::CUBLAS_OP_N,
    ///     m: 4, n: 4, k: 4,
    ///     alpha: 1.0f32, lda: 4, ldb: 4,
    ///     beta: 0.0, ldc: 4,
    /// };
    /// let cfg = StridedBatchedConfig { gemm, batch_size: 8, stride_a: 16, stride_b: 16, stride_c: 16 };
    /// // SAFETY: a and c hold 8 matrices of 4 x 4 at stride 16.
    /// unsafe { blas.gemm_strided_batched(cfg, &a, &a, &mut c) }?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    unsafe fn gemm_strided_batched<A: DevicePtr<T>, B: DevicePtr<T>, C: DevicePtrMut<T>>(
        &self,
        cfg: StridedBatchedConfig<T>,
        a: &A,
        b: &B,
        c: &mut C,
    ) -> Result<(), CublasError>;
}

/// Matrix-vector multiplication (cudarc's `Gemv`).
///
/// ```no_run
/// # use cudrv_compat::imp::driver::*;
/// # use std::sync::Arc;
/// # let ctx = CudaContext::new(0)?;
/// # let stream = ctx.default_stream();
/// use cudrv_compat::imp::cublas::{sys::cublasOperation_t, CudaBlas, Gemv, GemvConfig};
/// let blas = CudaBlas::new(stream.clone())?;
/// let a = stream.memcpy_stod(&[1.0f32, 2.0, 3.0, 4.0])?; // [[1, 3], [2, 4]]
/// let x = stream.memcpy_stod(&[1.0f32, 1.0])?;
/// let mut y = stream.alloc_zeros::<f32>(2)?;
/// let cfg = GemvConfig { trans: cublasOperation_t::CUBLAS_OP_N, m: 2, n: 2, alpha: 1.0f32, lda: 2, incx: 1, beta: 0.0, incy: 1 };
/// // SAFETY: a is 2 x 2, x and y hold 2.
/// unsafe { blas.gemv(cfg, &a, &x, &mut y) }?;
/// assert_eq!(stream.memcpy_dtov(&y)?, vec![4.0, 6.0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Gemv<T> {
    /// `y = alpha * op(A) * x + beta * y`.
    ///
    /// # Safety
    /// The buffers must hold the matrix and vectors the configuration describes.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// use cudrv_compat::imp::cublas::{sys::cublasOperation_t, CudaBlas, Gemv, GemvConfig};
    /// let blas = CudaBlas::new(stream.clone())?;
    /// let a = stream.alloc_zeros::<f64>(4096 * 4096)?;
    /// let x = stream.alloc_zeros::<f64>(4096)?;
    /// let mut y = stream.alloc_zeros::<f64>(4096)?;
    /// let cfg = GemvConfig { trans: cublasOperation_t::CUBLAS_OP_T, m: 4096, n: 4096, alpha: 1.0, lda: 4096, incx: 1, beta: 0.0, incy: 1 };
    /// // SAFETY: the sizes match the configuration.
    /// unsafe { blas.gemv(cfg, &a, &x, &mut y) }?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    unsafe fn gemv<A: DevicePtr<T>, X: DevicePtr<T>, Y: DevicePtrMut<T>>(
        &self,
        cfg: GemvConfig<T>,
        a: &A,
        x: &X,
        y: &mut Y,
    ) -> Result<(), CublasError>;
}

impl CudaBlas {
    /// One operand, ordered on this handle's stream: its pointer, and the guard to keep until
    /// the work is queued.
    fn operand<'a, T, P: DevicePtr<T>>(&'a self, p: &'a P) -> (Operand, crate::imp::driver::SyncOnDrop<'a>) {
        let (ptr, guard) = p.device_ptr(&self.stream);
        (Operand { ptr, len: p.len() }, guard)
    }

    fn operand_mut<'a, T, P: DevicePtrMut<T>>(&'a self, p: &'a mut P) -> (Operand, crate::imp::driver::SyncOnDrop<'a>) {
        let len = p.len();
        let (ptr, guard) = p.device_ptr_mut(&self.stream);
        (Operand { ptr, len }, guard)
    }
}

macro_rules! gemm_impl {
    ($t:ty) => {
        impl Gemm<$t> for CudaBlas {
            unsafe fn gemm<A: DevicePtr<$t>, B: DevicePtr<$t>, C: DevicePtrMut<$t>>(
                &self,
                cfg: GemmConfig<$t>,
                a: &A,
                b: &B,
                c: &mut C,
            ) -> Result<(), CublasError> {
                let ((oa, _ga), (ob, _gb)) = (self.operand(a), self.operand(b));
                let (oc, _gc) = self.operand_mut(c);
                // SAFETY: forwarded; the caller upholds the contract, and the operands are
                // ordered on the handle's stream until the guards drop.
                unsafe { gemm_on(self.stream.cudrv(), &cfg, 1, [0, 0, 0], [oa, ob, oc]) }
            }

            unsafe fn gemm_strided_batched<A: DevicePtr<$t>, B: DevicePtr<$t>, C: DevicePtrMut<$t>>(
                &self,
                cfg: StridedBatchedConfig<$t>,
                a: &A,
                b: &B,
                c: &mut C,
            ) -> Result<(), CublasError> {
                let strides = [cfg.stride_a, cfg.stride_b, cfg.stride_c];
                let ((oa, _ga), (ob, _gb)) = (self.operand(a), self.operand(b));
                let (oc, _gc) = self.operand_mut(c);
                // SAFETY: as above.
                unsafe {
                    gemm_on(
                        self.stream.cudrv(),
                        &cfg.gemm,
                        cfg.batch_size,
                        strides,
                        [oa, ob, oc],
                    )
                }
            }
        }
    };
}
gemm_impl!(f32);
gemm_impl!(f64);
gemm_impl!(half::f16);
gemm_impl!(half::bf16);

macro_rules! gemv_impl {
    ($t:ty) => {
        impl Gemv<$t> for CudaBlas {
            unsafe fn gemv<A: DevicePtr<$t>, X: DevicePtr<$t>, Y: DevicePtrMut<$t>>(
                &self,
                cfg: GemvConfig<$t>,
                a: &A,
                x: &X,
                y: &mut Y,
            ) -> Result<(), CublasError> {
                let ((oa, _ga), (ox, _gx)) = (self.operand(a), self.operand(x));
                let (oy, _gy) = self.operand_mut(y);
                // SAFETY: as for gemm.
                unsafe { gemv_on(self.stream.cudrv(), &cfg, [oa, ox, oy]) }
            }
        }
    };
}
gemv_impl!(f32);
gemv_impl!(f64);
gemv_impl!(half::f16);
gemv_impl!(half::bf16);
