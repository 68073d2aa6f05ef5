//! cuBLAS, loaded at run time for comparison only (`cudrv bench gemm` / `gemv`).
//!
//! The cudrv library never links or loads cuBLAS; the benches load `libcublas` by hand
//! (`CUDRV_LIBCUBLAS` names another) so that a user sees the ratio on their own GPU.

use std::ffi::c_void;

use libloading::Library;

type Handle = *mut c_void;
type CreateFn = unsafe extern "C" fn(*mut Handle) -> i32;
type DestroyFn = unsafe extern "C" fn(Handle) -> i32;
type SetStreamFn = unsafe extern "C" fn(Handle, *mut c_void) -> i32;
#[allow(clippy::upper_case_acronyms)]
type GemmExFn = unsafe extern "C" fn(
    Handle,
    i32,
    i32,
    i32,
    i32,
    i32,
    *const c_void,
    *const c_void,
    i32,
    i32,
    *const c_void,
    i32,
    i32,
    *const c_void,
    *mut c_void,
    i32,
    i32,
    i32,
    i32,
) -> i32;
#[allow(clippy::upper_case_acronyms)]
type GemmStridedBatchedExFn = unsafe extern "C" fn(
    Handle,
    i32,
    i32,
    i32,
    i32,
    i32,
    *const c_void,
    *const c_void,
    i32,
    i32,
    i64,
    *const c_void,
    i32,
    i32,
    i64,
    *const c_void,
    *mut c_void,
    i32,
    i32,
    i64,
    i32,
    i32,
    i32,
) -> i32;
type SgemvFn = unsafe extern "C" fn(
    Handle,
    i32,
    i32,
    i32,
    *const f32,
    *const f32,
    i32,
    *const f32,
    i32,
    *const f32,
    *mut f32,
    i32,
) -> i32;

/// cudaDataType_t values.
pub const R_32F: i32 = 0;
pub const R_64F: i32 = 1;
pub const R_16F: i32 = 2;
pub const R_16BF: i32 = 14;
/// cublasComputeType_t values.
pub const COMPUTE_32F: i32 = 68;
pub const COMPUTE_32F_FAST_TF32: i32 = 77;
pub const COMPUTE_64F: i32 = 70;
const GEMM_DEFAULT: i32 = -1;

pub struct Cublas {
    handle: Handle,
    destroy: DestroyFn,
    gemm_ex: GemmExFn,
    gemm_strided: GemmStridedBatchedExFn,
    sgemv: SgemvFn,
    pub path: String,
    _lib: Library,
}

impl Cublas {
    /// Loads cuBLAS and makes a handle bound to `stream`; `None` (with the reason) when it
    /// cannot.
    pub fn load(stream: *mut c_void) -> Result<Cublas, String> {
        // A library named by CUDRV_LIBCUBLAS is the only one tried: one that does not load means
        // no cuBLAS (a test's fake driver must not meet the system's cuBLAS).
        let names: Vec<String> = match cudrv::sys::loader::named_by("CUDRV_LIBCUBLAS") {
            Some(named) => vec![named],
            None => [
                "libcublas.so.13",
                "libcublas.so.12",
                "libcublas.so",
                "/usr/local/cuda/lib64/libcublas.so",
            ]
            .map(String::from)
            .to_vec(),
        };
        let mut why = Vec::new();
        for name in names {
            // SAFETY: loading cuBLAS runs its initialisers, which have no preconditions.
            match unsafe { Library::new(&name) } {
                Ok(lib) => return Self::with(lib, name, stream),
                Err(e) => why.push(format!("{name}: {e}")),
            }
        }
        Err(why.join("; "))
    }

    fn with(lib: Library, path: String, stream: *mut c_void) -> Result<Cublas, String> {
        // SAFETY: the symbols have the C signatures of cublas_api.h (CUDA 12/13) written above.
        unsafe {
            let sym = |n: &[u8]| -> Result<*const c_void, String> {
                lib.get::<*const c_void>(n)
                    .map(|s| *s)
                    .map_err(|e| format!("{path}: {e}"))
            };
            let create: CreateFn = std::mem::transmute(sym(b"cublasCreate_v2\0")?);
            let set_stream: SetStreamFn = std::mem::transmute(sym(b"cublasSetStream_v2\0")?);
            let destroy: DestroyFn = std::mem::transmute(sym(b"cublasDestroy_v2\0")?);
            let gemm_ex: GemmExFn = std::mem::transmute(sym(b"cublasGemmEx\0")?);
            let gemm_strided: GemmStridedBatchedExFn = std::mem::transmute(sym(b"cublasGemmStridedBatchedEx\0")?);
            let sgemv: SgemvFn = std::mem::transmute(sym(b"cublasSgemv_v2\0")?);
            let mut handle: Handle = std::ptr::null_mut();
            let rc = create(&mut handle);
            if rc != 0 {
                return Err(format!("cublasCreate failed with status {rc}"));
            }
            let rc = set_stream(handle, stream);
            if rc != 0 {
                destroy(handle);
                return Err(format!("cublasSetStream failed with status {rc}"));
            }
            Ok(Cublas {
                handle,
                destroy,
                gemm_ex,
                gemm_strided,
                sgemv,
                path,
                _lib: lib,
            })
        }
    }

    /// Column-major `C = alpha op(A) op(B) + beta C` through cublasGemmEx, tight leading
    /// dimensions; `ops` = (A transposed, B transposed).
    ///
    /// # Safety
    /// The pointers must be device buffers of at least m*k, k*n and m*n elements of `dtype`;
    /// `alpha`/`beta` point at host scalars of the compute type's scale type.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn gemm(
        &self,
        (m, n, k): (usize, usize, usize),
        (ta, tb): (bool, bool),
        alpha: *const c_void,
        a: u64,
        b: u64,
        beta: *const c_void,
        c: u64,
        dtype: i32,
        compute: i32,
    ) -> Result<(), String> {
        let (lda, ldb) = (if ta { k } else { m }, if tb { n } else { k });
        // SAFETY: the caller's contract, with tight leading dimensions and one matrix.
        unsafe {
            self.gemm_strided(
                (m, n, k),
                (ta, tb),
                alpha,
                (a, lda, 0),
                (b, ldb, 0),
                beta,
                (c, m, 0),
                1,
                dtype,
                compute,
            )
        }
    }

    /// Column-major strided-batched `C_i = alpha op(A_i) op(B_i) + beta C_i` for `i < batch`
    /// through cublasGemmStridedBatchedEx (cublasGemmEx when `batch` is 1), each operand given as
    /// (device address, leading dimension, batch stride) in elements.
    ///
    /// # Safety
    /// The operands must be device buffers holding every element the problem touches at those
    /// leading dimensions and strides; `alpha`/`beta` point at host scalars of the compute
    /// type's scale type.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn gemm_strided(
        &self,
        (m, n, k): (usize, usize, usize),
        (ta, tb): (bool, bool),
        alpha: *const c_void,
        (a, lda, sa): (u64, usize, usize),
        (b, ldb, sb): (u64, usize, usize),
        beta: *const c_void,
        (c, ldc, sc): (u64, usize, usize),
        batch: usize,
        dtype: i32,
        compute: i32,
    ) -> Result<(), String> {
        let (mi, ni, ki) = (m as i32, n as i32, k as i32);
        // SAFETY: the caller's contract.
        let rc = unsafe {
            if batch == 1 {
                (self.gemm_ex)(
                    self.handle,
                    i32::from(ta),
                    i32::from(tb),
                    mi,
                    ni,
                    ki,
                    alpha,
                    a as *const c_void,
                    dtype,
                    lda as i32,
                    b as *const c_void,
                    dtype,
                    ldb as i32,
                    beta,
                    c as *mut c_void,
                    dtype,
                    ldc as i32,
                    compute,
                    GEMM_DEFAULT,
                )
            } else {
                (self.gemm_strided)(
                    self.handle,
                    i32::from(ta),
                    i32::from(tb),
                    mi,
                    ni,
                    ki,
                    alpha,
                    a as *const c_void,
                    dtype,
                    lda as i32,
                    sa as i64,
                    b as *const c_void,
                    dtype,
                    ldb as i32,
                    sb as i64,
                    beta,
                    c as *mut c_void,
                    dtype,
                    ldc as i32,
                    sc as i64,
                    batch as i32,
                    compute,
                    GEMM_DEFAULT,
                )
            }
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(format!("cublasGemm(StridedBatched)Ex failed with status {rc}"))
        }
    }

    /// `y = A x` (trans 0) or `A^T x` (trans 1), f32, column-major A with leading dimension
    /// `lda`.
    ///
    /// # Safety
    /// Device pointers of (n - 1) * lda + m, and n / m elements as the op needs.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn sgemv(
        &self,
        trans: i32,
        m: usize,
        n: usize,
        a: u64,
        lda: usize,
        x: u64,
        y: u64,
    ) -> Result<(), String> {
        let (one, zero) = (1.0f32, 0.0f32);
        // SAFETY: the caller's contract.
        let rc = unsafe {
            (self.sgemv)(
                self.handle,
                trans,
                m as i32,
                n as i32,
                &one,
                a as *const f32,
                lda as i32,
                x as *const f32,
                1,
                &zero,
                y as *mut f32,
                1,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(format!("cublasSgemv failed with status {rc}"))
        }
    }
}

impl Drop for Cublas {
    fn drop(&mut self) {
        // SAFETY: the handle was created by cublasCreate and is destroyed once.
        unsafe { (self.destroy)(self.handle) };
    }
}
