//! cudarc-shaped driver API (`cudarc::driver`), served by cudrv.
//!
//! The names, signatures and trait bounds follow cudarc 0.19: [`CudaContext`], [`CudaStream`],
//! [`CudaSlice`] and its views, [`LaunchArgs`] with [`PushKernelArg`], [`CudaModule`],
//! [`CudaFunction`], [`CudaEvent`], [`CudaGraph`], [`PinnedHostSlice`] and [`DriverError`].
//! Underneath, contexts, streams, modules and device memory are cudrv's, so a driver entry
//! point the installed driver lacks is an error from the one call that needs it, never a panic.
//!
//! ```no_run
//! use cudrv_compat::driver::{CudaContext, DriverError};
//! let ctx = CudaContext::new(0)?;
//! let stream = ctx.default_stream();
//! let a = stream.clone_htod(&[1.0f32, 2.0, 3.0])?;
//! assert_eq!(stream.clone_dtoh(&a)?, vec![1.0, 2.0, 3.0]);
//! # Ok::<(), DriverError>(())
//! ```

mod core;
mod error;
mod graph;
mod launch;

#[doc(hidden)]
pub use self::core::to_range;
pub use self::core::{
    CudaContext, CudaEvent, CudaFunction, CudaModule, CudaSlice, CudaStream, CudaView, CudaViewMut, DevicePtr,
    DevicePtrMut, DeviceRepr, DeviceSlice, HostSlice, PinnedHostSlice, SyncOnDrop, ValidAsZeroBits,
};
pub use self::error::DriverError;
pub use self::graph::CudaGraph;
pub use self::launch::{LaunchArgs, LaunchConfig, PushKernelArg};

/// cudarc's `driver::result` path for the error type.
pub mod result {
    pub use super::error::DriverError;
}

/// Raw driver types and functions: cudrv's bindgen types and its lazily loaded function table.
///
/// `sys::cuXxx(...)` calls the driver's entry point and returns its `CUresult`; an entry point
/// the installed driver lacks returns `CUDA_ERROR_NOT_FOUND` instead of panicking.
/// Enumerations are newtypes with associated constants, so `sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_...`
/// paths keep working; `sys::resolve::cuXxx()` gives the function pointer or a descriptive error.
pub mod sys {
    pub use cudrv::sys::*;
}

/// Calls a driver entry point through cudrv's lazy table, mapping a missing symbol and a failing
/// `CUresult` to [`DriverError`]. Expands to an unsafe call.
macro_rules! cu {
    ($name:ident($($arg:expr),* $(,)?)) => {
        match cudrv::sys::resolve::$name() {
            Ok(function) => $crate::imp::driver::error::check(function($($arg),*)),
            Err(e) => Err($crate::imp::driver::DriverError::from_cudrv(cudrv::Error::from(e))),
        }
    };
}
pub(crate) use cu;
