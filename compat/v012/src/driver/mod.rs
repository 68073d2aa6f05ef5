//! cudarc 0.12-shaped driver API (`cudarc::driver`), served by cudrv.
//!
//! [`CudaDevice`] owns the device's primary context and one stream (the legacy default stream,
//! or a stream of its own with [`CudaDevice::new_with_stream`]); every allocation, copy and
//! [`LaunchAsync::launch`] goes to that stream, as in cudarc 0.12. Memory comes from cudrv's
//! caching pool; modules and launch checks are `cudrv-compat`'s.
//!
//! ```no_run
//! use cudrv_compat_012::driver::{CudaDevice, DriverError};
//! let dev = CudaDevice::new(0)?;
//! let a = dev.htod_copy(vec![1.0f32, 2.0, 3.0])?;
//! assert_eq!(dev.dtoh_sync_copy(&a)?, vec![1.0, 2.0, 3.0]);
//! # Ok::<(), DriverError>(())
//! ```

mod copy;
mod device;
mod launch;
mod slice;

pub use self::device::{CudaDevice, CudaFunction, CudaStream};
pub use self::launch::{DeviceRepr, LaunchAsync};
pub use self::slice::{CudaSlice, CudaView, CudaViewMut, DevicePtr, DevicePtrMut, DeviceSlice};
pub use cudrv_compat::imp::driver::{DriverError, LaunchConfig, ValidAsZeroBits};

/// Raw driver types and functions: the same module as `cudrv_compat::imp::driver::sys`.
pub mod sys {
    pub use cudrv_compat::imp::driver::sys::*;
}

/// cudarc's `driver::result`: the error type, and the raw calls `cudrv-compat` provides.
pub mod result {
    pub use cudrv_compat::imp::driver::result::*;
}

/// Calls a driver entry point as cudrv-compat does: a missing symbol is `CUDA_ERROR_NOT_FOUND`
/// with the symbol's name as the detail. Expands to an unsafe call.
macro_rules! cu {
    ($($call:tt)*) => { cudrv_compat::__compat_cu!($($call)*) };
}
pub(crate) use cu;

/// An error with `code` and a message (`DriverError::detail`).
fn invalid(message: String) -> DriverError {
    DriverError::from_cudrv(cudrv::Error::InvalidArgument(message))
}
