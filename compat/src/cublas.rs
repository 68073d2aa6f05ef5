//! cudarc-shaped BLAS (`cudarc::cublas`): [`CudaBlas`] with [`Gemm`] (f16, bf16, f32, f64) and
//! [`Gemv`] (f32, f64), with cuBLAS's column-major conventions, served by [`cudrv::blas`]
//! (cudrv's own kernels; no libcublas).
//!
//! For streams that have no cudrv stream underneath (`per_thread_stream`,
//! `wrap_borrowed_stream`), or with `CUDRV_COMPAT_BLAS=bundled` in the environment, a small
//! tiled kernel set bundled with this crate (`compat/kernels/blas.cu`) runs instead: a
//! correctness fallback, not a fast path.
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

use std::cell::RefCell;
use std::ffi::{c_int, c_longlong};
use std::sync::Arc;

use crate::driver::{
    CudaFunction, CudaModule, CudaStream, DevicePtr, DevicePtrMut, DeviceRepr, LaunchConfig, PushKernelArg,
};

/// cuBLAS's raw types that the configurations use.
#[allow(non_camel_case_types)]
pub mod sys {
    /// Whether an operand is used as stored (`N`) or transposed (`T`, `C` for real types).
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
        pub const CUBLAS_OP_HERMITAN: cublasOperation_t = cublasOperation_t::CUBLAS_OP_C;
    }

    /// cuBLAS status codes.
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
    #[derive(Clone, Copy, PartialEq, Eq)]
    pub struct CublasError(pub sys::cublasStatus_t);

    impl CublasError {
        /// compat's full message for the most recent error of this status on this thread
        /// (the numbers of a rejected shape, or the driver error underneath).
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
use sys::{cublasOperation_t as Op, cublasStatus_t as Status};

thread_local! {
    static DETAIL: RefCell<Option<(Status, String)>> = const { RefCell::new(None) };
}

fn fail(status: Status, message: String) -> CublasError {
    DETAIL.with(|d| *d.borrow_mut() = Some((status, message)));
    CublasError(status)
}

fn invalid(message: String) -> CublasError {
    fail(Status::CUBLAS_STATUS_INVALID_VALUE, message)
}

fn exec(e: crate::driver::DriverError) -> CublasError {
    let message = e.detail().unwrap_or_else(|| format!("{e:?}"));
    fail(Status::CUBLAS_STATUS_EXECUTION_FAILED, message)
}

/// The kernels, compiled from `compat/kernels/blas.cu` (PTX ISA 8.0, sm_80 and newer).
const PTX: &str = include_str!("../kernels/blas.ptx");
const KERNELS: [&str; 6] = [
    "compat_gemm_f32",
    "compat_gemm_f64",
    "compat_gemm_f16",
    "compat_gemm_bf16",
    "compat_gemv_f32",
    "compat_gemv_f64",
];

/// Which implementation a [`CudaBlas`] dispatches to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Backend {
    /// `cudrv::blas` (the default).
    Cudrv,
    /// The kernels bundled with this crate.
    Bundled,
}

/// A BLAS handle bound to a stream (cudarc's `CudaBlas`).
#[derive(Debug)]
pub struct CudaBlas {
    stream: Arc<CudaStream>,
    backend: Backend,
    kernels: Option<Arc<[CudaFunction; 6]>>,
}

impl CudaBlas {
    /// A handle whose work is queued on `stream`.
    pub fn new(stream: Arc<CudaStream>) -> Result<Self, CublasError> {
        let bundled = std::env::var("CUDRV_COMPAT_BLAS").is_ok_and(|v| v == "bundled") || stream.cudrv().is_none();
        let kernels = if bundled { Some(load_bundled(&stream)?) } else { None };
        Ok(CudaBlas {
            stream,
            backend: if bundled { Backend::Bundled } else { Backend::Cudrv },
            kernels,
        })
    }

    /// The stream the work goes to.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Moves later work to `stream`.
    ///
    /// # Safety
    /// Buffers used with the handle must be valid on the new stream (as in cudarc).
    pub unsafe fn set_stream(&mut self, stream: Arc<CudaStream>) -> Result<(), CublasError> {
        if stream.cudrv().is_none() && self.kernels.is_none() {
            self.kernels = Some(load_bundled(&stream)?);
            self.backend = Backend::Bundled;
        }
        self.stream = stream;
        Ok(())
    }

    fn bundled(&self) -> Result<&Arc<[CudaFunction; 6]>, CublasError> {
        self.kernels.as_ref().ok_or_else(|| {
            fail(
                Status::CUBLAS_STATUS_NOT_INITIALIZED,
                "bundled kernels not loaded".into(),
            )
        })
    }

    /// `"cudrv::blas"` or `"bundled"`: which implementation serves this handle.
    pub fn backend(&self) -> &'static str {
        match self.backend {
            Backend::Cudrv => "cudrv::blas",
            Backend::Bundled => "bundled",
        }
    }
}

/// Registers (once per context) and looks up the bundled kernels.
fn load_bundled(stream: &Arc<CudaStream>) -> Result<Arc<[CudaFunction; 6]>, CublasError> {
    let ctx = stream.context().clone();
    let init = |e: cudrv::Error| fail(Status::CUBLAS_STATUS_NOT_INITIALIZED, e.to_string());
    let registry = ctx.cudrv().registry();
    if !registry.contains(KERNELS[0]) {
        registry.register_ptx("cudrv_compat_blas", PTX).map_err(init)?;
    }
    let mut fns = Vec::with_capacity(KERNELS.len());
    for name in KERNELS {
        let inner = ctx.cudrv().kernel(name).map_err(init)?;
        let module = Arc::new(CudaModule {
            inner: inner.module().clone(),
            ctx: ctx.clone(),
        });
        fns.push(CudaFunction { inner, module });
    }
    let kernels: [CudaFunction; 6] = fns
        .try_into()
        .map_err(|_| fail(Status::CUBLAS_STATUS_INTERNAL_ERROR, "kernel table".into()))?;
    Ok(Arc::new(kernels))
}

/// A device range already ordered on the handle's stream, shown to `cudrv::blas` as a slice of
/// that stream (so it adds no joins of its own).
struct Ordered<'a, T> {
    ptr: u64,
    len: usize,
    stream: &'a Arc<cudrv::Stream>,
    _marker: std::marker::PhantomData<T>,
}

impl<T> cudrv::DeviceSlice<T> for Ordered<'_, T> {
    fn device_ptr(&self) -> u64 {
        self.ptr
    }
    fn len(&self) -> usize {
        self.len
    }
    fn stream(&self) -> &Arc<cudrv::Stream> {
        self.stream
    }
}
impl<T> cudrv::DeviceSliceMut<T> for Ordered<'_, T> {}

fn from_cudrv(e: cudrv::Error) -> CublasError {
    match e {
        cudrv::Error::InvalidArgument(m) => invalid(m),
        other => fail(Status::CUBLAS_STATUS_EXECUTION_FAILED, other.to_string()),
    }
}

fn transpose(flag: i32) -> cudrv::blas::Transpose {
    if flag == 0 {
        cudrv::blas::Transpose::N
    } else {
        cudrv::blas::Transpose::T
    }
}

/// Configuration of one GEMM, cuBLAS style (cudarc's `GemmConfig`).
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
pub trait Gemm<T> {
    /// `C = alpha * op(A) * op(B) + beta * C`.
    ///
    /// # Safety
    /// The buffers must hold the matrices the configuration describes, and `c` must not
    /// overlap `a` or `b`.
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
    unsafe fn gemm_strided_batched<A: DevicePtr<T>, B: DevicePtr<T>, C: DevicePtrMut<T>>(
        &self,
        cfg: StridedBatchedConfig<T>,
        a: &A,
        b: &B,
        c: &mut C,
    ) -> Result<(), CublasError>;
}

/// Matrix-vector multiplication (cudarc's `Gemv`).
pub trait Gemv<T> {
    /// `y = alpha * op(A) * x + beta * y`.
    ///
    /// # Safety
    /// The buffers must hold the matrix and vectors the configuration describes.
    unsafe fn gemv<A: DevicePtr<T>, X: DevicePtr<T>, Y: DevicePtrMut<T>>(
        &self,
        cfg: GemvConfig<T>,
        a: &A,
        x: &X,
        y: &mut Y,
    ) -> Result<(), CublasError>;
}

fn op_flag(op: Op, which: &str) -> Result<i32, CublasError> {
    match op {
        Op::CUBLAS_OP_N => Ok(0),
        Op::CUBLAS_OP_T | Op::CUBLAS_OP_C => Ok(1),
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

/// Checks a batched GEMM's shape against cuBLAS's rules and the buffers' lengths.
fn check_gemm<T>(
    cfg: &GemmConfig<T>,
    batch: i64,
    strides: [i64; 3],
    lens: [usize; 3],
) -> Result<[i32; 2], CublasError> {
    let ta = op_flag(cfg.transa, "transa")?;
    let tb = op_flag(cfg.transb, "transb")?;
    let (m, n, k) = (cfg.m as i64, cfg.n as i64, cfg.k as i64);
    if m < 0 || n < 0 || k < 0 || batch < 0 {
        return Err(invalid(format!("negative size: m={m} n={n} k={k} batch={batch}")));
    }
    // Stored shapes: A is (m x k) or (k x m); B is (k x n) or (n x k).
    let (a_rows, a_cols) = if ta == 0 { (m, k) } else { (k, m) };
    let (b_rows, b_cols) = if tb == 0 { (k, n) } else { (n, k) };
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
    if (n as u64).div_ceil(16) > 65535 || batch > 65535 {
        return Err(fail(
            Status::CUBLAS_STATUS_NOT_SUPPORTED,
            format!("n = {n} (at most 1048560) or batch = {batch} (at most 65535) too large"),
        ));
    }
    Ok([ta, tb])
}

impl CudaBlas {
    #[allow(clippy::too_many_arguments)]
    unsafe fn gemm_impl<
        T: cudrv::blas::GemmType<Scalar = S>,
        S: DeviceRepr + Copy + From<u8> + Into<f64> + PartialEq + std::fmt::Debug + Send + Sync + 'static,
        A: DevicePtr<T>,
        B: DevicePtr<T>,
        C: DevicePtrMut<T>,
    >(
        &self,
        kernel: usize,
        cfg: &GemmConfig<T>,
        alpha: S,
        beta: S,
        batch: i32,
        strides: [i64; 3],
        a: &A,
        b: &B,
        c: &mut C,
    ) -> Result<(), CublasError> {
        let [ta, tb] = check_gemm(cfg, batch as i64, strides, [a.len(), b.len(), c.len()])?;
        if cfg.m == 0 || cfg.n == 0 || batch == 0 {
            return Ok(());
        }
        let stream = &self.stream;
        let (la, lb, lc) = (a.len(), b.len(), c.len());
        let (pa, _ga) = a.device_ptr(stream);
        let (pb, _gb) = b.device_ptr(stream);
        let (pc, _gc) = c.device_ptr_mut(stream);
        let (Backend::Cudrv, Some(cs)) = (self.backend, stream.cudrv()) else {
            let kernels = self.bundled()?;
            // SAFETY: forwarded; the caller upholds the contract and check_gemm verified the shapes.
            return unsafe {
                self.gemm_bundled(
                    &kernels[kernel],
                    cfg,
                    [ta, tb],
                    alpha,
                    beta,
                    batch,
                    strides,
                    [pa, pb, pc],
                )
            };
        };
        let view = |ptr: u64, len: usize| Ordered::<T> {
            ptr,
            len,
            stream: cs,
            _marker: std::marker::PhantomData,
        };
        let (va, vb, mut vc) = (view(pa, la), view(pb, lb), view(pc, lc));
        let u = |v: i32| v as usize;
        let mut g = cudrv::blas::Gemm::<S>::new(transpose(ta), transpose(tb), u(cfg.m), u(cfg.n), u(cfg.k))
            .alpha(alpha)
            .beta(beta)
            .ld(u(cfg.lda), u(cfg.ldb), u(cfg.ldc));
        if batch != 1 || strides != [0, 0, 0] {
            let s = |v: i64| v as usize;
            g = g.batched(batch as usize, s(strides[0]), s(strides[1]), s(strides[2]));
        }
        g.run(&va, &vb, &mut vc).map_err(from_cudrv)
    }

    #[allow(clippy::too_many_arguments)]
    unsafe fn gemm_bundled<S: DeviceRepr>(
        &self,
        f: &CudaFunction,
        cfg: &GemmConfig<impl Sized>,
        [ta, tb]: [i32; 2],
        alpha: S,
        beta: S,
        batch: i32,
        strides: [i64; 3],
        [pa, pb, pc]: [u64; 3],
    ) -> Result<(), CublasError> {
        let stream = &self.stream;
        let launch = LaunchConfig {
            grid_dim: ((cfg.m as u32).div_ceil(16), (cfg.n as u32).div_ceil(16), batch as u32),
            block_dim: (16, 16, 1),
            shared_mem_bytes: 0,
        };
        let mut args = stream.launch_builder(f);
        args.arg(&ta)
            .arg(&tb)
            .arg(&cfg.m)
            .arg(&cfg.n)
            .arg(&cfg.k)
            .arg(&alpha)
            .arg(&pa)
            .arg(&cfg.lda)
            .arg(&strides[0])
            .arg(&pb)
            .arg(&cfg.ldb)
            .arg(&strides[1])
            .arg(&beta)
            .arg(&pc)
            .arg(&cfg.ldc)
            .arg(&strides[2]);
        // SAFETY: the arguments match compat_gemm_*'s parameter list (int, int, int, int, int,
        // S, T*, int, i64, T*, int, i64, S, T*, int, i64) and check_gemm verified that every
        // element the kernel touches lies within the buffers.
        unsafe { args.launch(launch) }.map(|_| ()).map_err(exec)
    }

    #[allow(clippy::too_many_arguments)]
    unsafe fn gemv_impl<
        T: cudrv::blas::GemvType,
        S: DeviceRepr,
        A: DevicePtr<T>,
        X: DevicePtr<T>,
        Y: DevicePtrMut<T>,
    >(
        &self,
        kernel: usize,
        cfg: &GemvConfig<T>,
        alpha: S,
        beta: S,
        a: &A,
        x: &X,
        y: &mut Y,
    ) -> Result<(), CublasError> {
        let trans = op_flag(cfg.trans, "trans")?;
        let (m, n) = (cfg.m as i64, cfg.n as i64);
        if m < 0 || n < 0 || cfg.incx == 0 || cfg.incy == 0 || (cfg.lda as i64) < m.max(1) {
            return Err(invalid(format!(
                "gemv: m={m} n={n} lda={} incx={} incy={} (need m, n >= 0, lda >= max(1, m), inc != 0)",
                cfg.lda, cfg.incx, cfg.incy
            )));
        }
        let (ylen, xlen) = if trans == 0 { (m, n) } else { (n, m) };
        let vec_span = |len: i64, inc: i32| {
            if len == 0 {
                0
            } else {
                (len - 1) * (inc as i64).abs() + 1
            }
        };
        let needs = [
            ("A", span(m, n, cfg.lda as i64), a.len()),
            ("x", vec_span(xlen, cfg.incx), x.len()),
            ("y", vec_span(ylen, cfg.incy), y.len()),
        ];
        for (name, need, have) in needs {
            if (have as i64) < need {
                return Err(invalid(format!("gemv: {name} needs {need} elements but has {have}")));
            }
        }
        if ylen == 0 {
            return Ok(());
        }
        let stream = &self.stream;
        let (la, lx, ly) = (a.len(), x.len(), y.len());
        let (pa, _ga) = a.device_ptr(stream);
        let (px, _gx) = x.device_ptr(stream);
        let (py, _gy) = y.device_ptr_mut(stream);
        if let (Backend::Cudrv, Some(cs)) = (self.backend, stream.cudrv()) {
            let view = |ptr: u64, len: usize| Ordered::<T> {
                ptr,
                len,
                stream: cs,
                _marker: std::marker::PhantomData,
            };
            let (va, vx, mut vy) = (view(pa, la), view(px, lx), view(py, ly));
            return cudrv::blas::gemv(
                transpose(trans),
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
            .map_err(from_cudrv);
        }
        let kernels = self.bundled()?;
        let launch = LaunchConfig {
            grid_dim: ((ylen as u32).div_ceil(128), 1, 1),
            block_dim: (128, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut args = stream.launch_builder(&kernels[kernel]);
        args.arg(&trans)
            .arg(&cfg.m)
            .arg(&cfg.n)
            .arg(&alpha)
            .arg(&pa)
            .arg(&cfg.lda)
            .arg(&px)
            .arg(&cfg.incx)
            .arg(&beta)
            .arg(&py)
            .arg(&cfg.incy);
        // SAFETY: the arguments match compat_gemv_*'s parameter list (int, int, int, S, T*, int,
        // T*, int, S, T*, int) and every element it touches lies within the checked buffers.
        unsafe { args.launch(launch) }.map(|_| ()).map_err(exec)
    }
}

macro_rules! gemm_impl {
    ($t:ty, $kernel:expr, $to:expr) => {
        impl Gemm<$t> for CudaBlas {
            unsafe fn gemm<A: DevicePtr<$t>, B: DevicePtr<$t>, C: DevicePtrMut<$t>>(
                &self,
                cfg: GemmConfig<$t>,
                a: &A,
                b: &B,
                c: &mut C,
            ) -> Result<(), CublasError> {
                let to = $to;
                // SAFETY: forwarded; the caller upholds the contract.
                unsafe { self.gemm_impl($kernel, &cfg, to(cfg.alpha), to(cfg.beta), 1, [0, 0, 0], a, b, c) }
            }

            unsafe fn gemm_strided_batched<A: DevicePtr<$t>, B: DevicePtr<$t>, C: DevicePtrMut<$t>>(
                &self,
                cfg: StridedBatchedConfig<$t>,
                a: &A,
                b: &B,
                c: &mut C,
            ) -> Result<(), CublasError> {
                let to = $to;
                let g = &cfg.gemm;
                let strides = [cfg.stride_a, cfg.stride_b, cfg.stride_c];
                if strides.iter().any(|&s| s < 0) {
                    return Err(invalid(format!("negative stride in {strides:?}")));
                }
                // SAFETY: forwarded; the caller upholds the contract.
                unsafe {
                    self.gemm_impl(
                        $kernel,
                        g,
                        to(g.alpha),
                        to(g.beta),
                        cfg.batch_size,
                        strides,
                        a,
                        b,
                        c,
                    )
                }
            }
        }
    };
}
gemm_impl!(f32, 0, |v: f32| v);
gemm_impl!(f64, 1, |v: f64| v);
gemm_impl!(half::f16, 2, |v: half::f16| v.to_f32());
gemm_impl!(half::bf16, 3, |v: half::bf16| v.to_f32());

macro_rules! gemv_impl {
    ($t:ty, $kernel:expr) => {
        impl Gemv<$t> for CudaBlas {
            unsafe fn gemv<A: DevicePtr<$t>, X: DevicePtr<$t>, Y: DevicePtrMut<$t>>(
                &self,
                cfg: GemvConfig<$t>,
                a: &A,
                x: &X,
                y: &mut Y,
            ) -> Result<(), CublasError> {
                // SAFETY: forwarded; the caller upholds the contract.
                unsafe { self.gemv_impl($kernel, &cfg, cfg.alpha, cfg.beta, a, x, y) }
            }
        }
    };
}
gemv_impl!(f32, 4);
gemv_impl!(f64, 5);

#[cfg(test)]
mod tests {
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
            [0, 0]
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
            [1, 1]
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
