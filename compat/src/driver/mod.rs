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

mod context;
mod error;
mod event;
mod graph;
mod host;
mod launch;
mod module;
mod ptr;
mod repr;
mod slice;
mod stream;
mod view;

pub use self::context::CudaContext;
pub use self::error::DriverError;
pub use self::event::CudaEvent;
pub use self::graph::CudaGraph;
pub use self::host::{HostSlice, PinnedHostSlice};
pub use self::launch::{LaunchArgs, LaunchConfig, PushKernelArg};
pub use self::module::{CudaFunction, CudaModule};
pub use self::ptr::{DevicePtr, DevicePtrMut, DeviceSlice, SyncOnDrop};
pub use self::repr::{DeviceRepr, ValidAsZeroBits};
pub use self::slice::CudaSlice;
pub use self::stream::CudaStream;
#[doc(hidden)]
pub use self::view::to_range;
pub use self::view::{CudaView, CudaViewMut};

pub mod result;

pub mod sys;

/// Calls a driver entry point through [`sys`], mapping a missing symbol (with its name kept as
/// the error's detail) and a failing `CUresult` to [`DriverError`]. Expands to an unsafe call.
/// Exported (hidden) for `cudrv-compat-012`, which calls the driver the same way.
#[doc(hidden)]
#[macro_export]
macro_rules! __compat_cu {
    ($name:ident($($arg:expr),* $(,)?)) => {
        match cudrv::sys::resolve::$name() {
            Ok(_) => $crate::imp::driver::check($crate::imp::driver::sys::$name($($arg),*)),
            Err(e) => Err($crate::imp::driver::DriverError::from_cudrv(cudrv::Error::from(e))),
        }
    };
}
#[doc(hidden)]
pub use self::error::check;
pub(crate) use __compat_cu as cu;
