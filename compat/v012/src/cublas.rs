//! cudarc 0.12-shaped BLAS (`cudarc::cublas`): [`CudaBlas::new`] takes the device, and
//! [`Gemm`] / [`Gemv`] take cudarc 0.12's [`DevicePtr`]s. Served by `cudrv::blas` for f32, f64,
//! f16 and bf16 (GEMV too), through the same pointer-level code as `cudrv_compat::imp::cublas`:
//! shapes, leading dimensions and buffer lengths are checked before the launch
//! (`CUBLAS_STATUS_INVALID_VALUE`, the numbers in [`CublasError::detail`]).
//!
//! ```no_run
//! use cudrv_compat_012::cublas::{sys::cublasOperation_t, CudaBlas, Gemm, GemmConfig};
//! use cudrv_compat_012::driver::CudaDevice;
//! let dev = CudaDevice::new(0).unwrap();
//! let blas = CudaBlas::new(dev.clone()).unwrap();
//! let a = dev.htod_copy(vec![1.0f32, 2.0, 3.0, 4.0]).unwrap(); // 2x2, column-major
//! let b = dev.htod_copy(vec![1.0f32, 0.0, 0.0, 1.0]).unwrap(); // identity
//! let mut c = dev.alloc_zeros::<f32>(4).unwrap();
//! let cfg = GemmConfig {
//!     transa: cublasOperation_t::CUBLAS_OP_N, transb: cublasOperation_t::CUBLAS_OP_N,
//!     m: 2, n: 2, k: 2, alpha: 1.0, lda: 2, ldb: 2, beta: 0.0, ldc: 2,
//! };
//! // SAFETY: the buffers match the configuration.
//! unsafe { blas.gemm(cfg, &a, &b, &mut c) }.unwrap();
//! assert_eq!(dev.dtoh_sync_copy(&c).unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
//! ```

use std::sync::{Arc, Mutex};

use cudrv_compat::imp::cublas::{gemm_on, gemv_on, Element, Operand};
pub use cudrv_compat::imp::cublas::{result, sys, CublasError, GemmConfig, GemvConfig, StridedBatchedConfig};
use cudrv_compat::imp::driver as compat;

use crate::driver::{CudaDevice, CudaStream, DevicePtr, DevicePtrMut};

/// A BLAS handle of a device (cudarc 0.12's `CudaBlas`): work goes to the device's stream, or
/// to the stream given to [`set_stream`](Self::set_stream).
///
/// ```no_run
/// # use cudrv_compat_012::driver::*;
/// # use std::sync::Arc;
/// # let dev = CudaDevice::new(0)?;
/// use cudrv_compat_012::cublas::{sys::cublasOperation_t, CudaBlas, Gemm, GemmConfig};
/// let blas = CudaBlas::new(dev.clone())?;
/// let a = dev.htod_sync_copy(&[1.0f32, 2.0, 3.0, 4.0])?;
/// let mut c = dev.alloc_zeros::<f32>(4)?;
/// let cfg = GemmConfig { transa: cublasOperation_t::CUBLAS_OP_N, transb: cublasOperation_t::CUBLAS_OP_N, m: 2, n: 2, k: 2, alpha: 1.0f32, lda: 2, ldb: 2, beta: 0.0, ldc: 2 };
/// // SAFETY: 2 x 2 matrices.
/// unsafe { blas.gemm(cfg, &a, &a, &mut c) }?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct CudaBlas {
    device: Arc<CudaDevice>,
    stream: Mutex<Arc<compat::CudaStream>>,
}

impl CudaBlas {
    /// A handle on `device`'s stream.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let blas = cudrv_compat_012::cublas::CudaBlas::new(dev.clone())?; // on the device's stream
    /// # drop(blas);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(device: Arc<CudaDevice>) -> Result<Self, CublasError> {
        let stream = Mutex::new(device.stream().clone());
        Ok(CudaBlas { device, stream })
    }

    /// Moves later work to `opt_stream`, or back to the device's stream with `None`.
    ///
    /// # Safety
    /// Buffers used with the handle must be valid on the new stream (as in cudarc).
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let blas = cudrv_compat_012::cublas::CudaBlas::new(dev.clone())?;
    /// let side = dev.fork_default_stream()?;
    /// // SAFETY: the buffers used next are ordered on `side`.
    /// unsafe { blas.set_stream(Some(&side)) }?;
    /// // SAFETY: back to the device's stream.
    /// unsafe { blas.set_stream(None) }?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub unsafe fn set_stream(&self, opt_stream: Option<&CudaStream>) -> Result<(), CublasError> {
        let stream = opt_stream.map_or_else(|| self.device.stream().clone(), |s| s.compat().clone());
        *self.stream.lock().unwrap_or_else(|e| e.into_inner()) = stream;
        Ok(())
    }

    fn cudrv_stream(&self) -> Arc<cudrv::Stream> {
        self.stream.lock().unwrap_or_else(|e| e.into_inner()).cudrv().clone()
    }
}

fn operand<T>(p: &impl DevicePtr<T>) -> Operand {
    Operand {
        ptr: *p.device_ptr(),
        len: p.len(),
    }
}

fn operand_mut<T>(p: &mut impl DevicePtrMut<T>) -> Operand {
    let len = p.len();
    Operand {
        ptr: *p.device_ptr_mut(),
        len,
    }
}

/// Matrix-matrix multiplication (cudarc 0.12's `Gemm`).
///
/// ```no_run
/// # use cudrv_compat_012::driver::*;
/// # use std::sync::Arc;
/// # let dev = CudaDevice::new(0)?;
/// use cudrv_compat_012::cublas::{sys::cublasOperation_t, CudaBlas, Gemm, GemmConfig, StridedBatchedConfig};
/// let blas = CudaBlas::new(dev.clone())?;
/// let a = dev.alloc_zeros::<f64>(8 * 16)?;
/// let mut c = dev.alloc_zeros::<f64>(8 * 16)?;
/// let gemm = GemmConfig { transa: cublasOperation_t::CUBLAS_OP_N, transb: cublasOperation_t::CUBLAS_OP_N, m: 4, n: 4, k: 4, alpha: 1.0, lda: 4, ldb: 4, beta: 0.0, ldc: 4 };
/// let cfg = StridedBatchedConfig { gemm, batch_size: 8, stride_a: 16, stride_b: 16, stride_c: 16 };
/// // SAFETY: 8 matrices of 4 x 4 at stride 16.
/// unsafe { blas.gemm_strided_batched(cfg, &a, &a, &mut c) }?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Gemm<T> {
    /// `C = alpha * op(A) * op(B) + beta * C`, column-major, as cuBLAS.
    ///
    /// # Safety
    /// The buffers must hold the matrices the configuration describes, and `c` must not
    /// overlap `a` or `b`.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # let dev = CudaDevice::new(0)?;
    /// use cudrv_compat_012::cublas::{sys::cublasOperation_t, CudaBlas, Gemm, GemmConfig};
    /// let blas = CudaBlas::new(dev.clone())?;
    /// let a = dev.htod_sync_copy(&[1.0f32, 2.0, 3.0, 4.0])?;
    /// let mut c = dev.alloc_zeros::<f32>(4)?;
    /// let cfg = GemmConfig { transa: cublasOperation_t::CUBLAS_OP_N, transb: cublasOperation_t::CUBLAS_OP_N, m: 2, n: 2, k: 2, alpha: 1.0f32, lda: 2, ldb: 2, beta: 0.0, ldc: 2 };
    /// // SAFETY: 2 x 2 matrices.
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
    /// # use cudrv_compat_012::driver::*;
    /// # let dev = CudaDevice::new(0)?;
    /// use cudrv_compat_012::cublas::{sys::cublasOperation_t, CudaBlas, Gemm, GemmConfig};
    /// let blas = CudaBlas::new(dev.clone())?;
    /// let a = dev.htod_sync_copy(&[1.0f32, 2.0, 3.0, 4.0])?;
    /// let mut c = dev.alloc_zeros::<f32>(4)?;
    /// let cfg = GemmConfig { transa: cublasOperation_t::CUBLAS_OP_N, transb: cublasOperation_t::CUBLAS_OP_N, m: 2, n: 2, k: 2, alpha: 1.0f32, lda: 2, ldb: 2, beta: 0.0, ldc: 2 };
    /// let batched = cudrv_compat_012::cublas::StridedBatchedConfig { gemm: cfg, batch_size: 1, stride_a: 4, stride_b: 4, stride_c: 4 };
    /// // SAFETY: one 2 x 2 matrix each.
    /// unsafe { blas.gemm_strided_batched(batched, &a, &a, &mut c) }?;
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

/// Matrix-vector multiplication (cudarc 0.12's `Gemv`).
///
/// ```no_run
/// # use cudrv_compat_012::driver::*;
/// # use std::sync::Arc;
/// # let dev = CudaDevice::new(0)?;
/// use cudrv_compat_012::cublas::{sys::cublasOperation_t, CudaBlas, Gemv, GemvConfig};
/// let blas = CudaBlas::new(dev.clone())?;
/// let a = dev.htod_sync_copy(&[1.0f32, 2.0, 3.0, 4.0])?;
/// let x = dev.htod_sync_copy(&[1.0f32, 1.0])?;
/// let mut y = dev.alloc_zeros::<f32>(2)?;
/// let cfg = GemvConfig { trans: cublasOperation_t::CUBLAS_OP_N, m: 2, n: 2, alpha: 1.0f32, lda: 2, incx: 1, beta: 0.0, incy: 1 };
/// // SAFETY: sizes as configured.
/// unsafe { blas.gemv(cfg, &a, &x, &mut y) }?;
/// assert_eq!(dev.dtoh_sync_copy(&y)?, vec![4.0, 6.0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Gemv<T> {
    /// `y = alpha * op(A) * x + beta * y`.
    ///
    /// # Safety
    /// The buffers must hold the matrix and vectors the configuration describes.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # let dev = CudaDevice::new(0)?;
    /// use cudrv_compat_012::cublas::{sys::cublasOperation_t, CudaBlas, Gemv, GemvConfig};
    /// let blas = CudaBlas::new(dev.clone())?;
    /// let (a, x) = (dev.alloc_zeros::<f32>(4)?, dev.alloc_zeros::<f32>(2)?);
    /// let mut y = dev.alloc_zeros::<f32>(2)?;
    /// let cfg = GemvConfig { trans: cublasOperation_t::CUBLAS_OP_T, m: 2, n: 2, alpha: 1.0f32, lda: 2, incx: 1, beta: 0.0, incy: 1 };
    /// // SAFETY: sizes as configured.
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

impl<T: Element> Gemm<T> for CudaBlas {
    unsafe fn gemm<A: DevicePtr<T>, B: DevicePtr<T>, C: DevicePtrMut<T>>(
        &self,
        cfg: GemmConfig<T>,
        a: &A,
        b: &B,
        c: &mut C,
    ) -> Result<(), CublasError> {
        let ops = [operand(a), operand(b), operand_mut(c)];
        // SAFETY: forwarded; in this era all work of a device is ordered by its user on the
        // handle's stream, as with cuBLAS.
        unsafe { gemm_on(&self.cudrv_stream(), &cfg, 1, [0, 0, 0], ops) }
    }

    unsafe fn gemm_strided_batched<A: DevicePtr<T>, B: DevicePtr<T>, C: DevicePtrMut<T>>(
        &self,
        cfg: StridedBatchedConfig<T>,
        a: &A,
        b: &B,
        c: &mut C,
    ) -> Result<(), CublasError> {
        let ops = [operand(a), operand(b), operand_mut(c)];
        let strides = [cfg.stride_a, cfg.stride_b, cfg.stride_c];
        // SAFETY: as above.
        unsafe { gemm_on(&self.cudrv_stream(), &cfg.gemm, cfg.batch_size, strides, ops) }
    }
}

impl<T: Element> Gemv<T> for CudaBlas {
    unsafe fn gemv<A: DevicePtr<T>, X: DevicePtr<T>, Y: DevicePtrMut<T>>(
        &self,
        cfg: GemvConfig<T>,
        a: &A,
        x: &X,
        y: &mut Y,
    ) -> Result<(), CublasError> {
        let ops = [operand(a), operand(x), operand_mut(y)];
        // SAFETY: as for gemm.
        unsafe { gemv_on(&self.cudrv_stream(), &cfg, ops) }
    }
}
