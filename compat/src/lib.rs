//! # cudrv-compat: cudarc-shaped modules served by cudrv
//!
//! Code written against `cudarc` 0.17–0.19 (the `CudaContext` / `CudaStream` era) migrates by
//! changing `use cudarc::...` to `use cudrv_compat::...`, or without touching the source by
//! renaming the dependency:
//!
//! ```toml
//! cudarc = { package = "cudrv-compat", path = "../cudrv/compat" }
//! ```
//!
//! | module | mirrors | served by |
//! |---|---|---|
//! | [`driver`] | `cudarc::driver` | cudrv's contexts, streams, caching allocator, modules; raw calls through cudrv's lazy driver table |
//! | [`nvrtc`] | `cudarc::nvrtc` | libnvrtc loaded at run time (CUDA 12 or 13) |
//! | [`cublas`] | `cudarc::cublas` (gemm, gemv) | `cudrv::blas` (cudrv's own kernels, no libcublas) |
//! | `cupti` (feature `cupti`) | `cudarc::cupti` | libcupti loaded at run time |
//!
//! A driver entry point the installed driver lacks, or an absent libnvrtc, is an error from the
//! call that needs it, never a panic. `MIGRATING.md` lists what differs from cudarc.
//!
//! ## Features
//! - `legacy`: the modules are the real cudarc 0.19 (dynamic loading, CUDA 13.0
//!   bindings) instead, so one codebase can switch back with a feature flag.
//! - `cupti`: the `cupti` module, as cudarc's feature of that name.
//!
//! ## Environment
//! - `CUDRV_LIBCUDA`: the driver library to load (cudrv's loader).
//! - `CUDRV_LIBNVRTC`: the libnvrtc to load before the default candidates.
//! - `CUDRV_LIBCUPTI`: the libcupti to load instead of the default candidates.
/// cudrv's implementation of the three modules. Always compiled, so that `cudrv-compat-012`
/// (which shares it) keeps building when another crate of the same build turns `legacy` on
/// here: Cargo unifies features, and the two eras must be free to choose apart.
#[doc(hidden)]
pub mod imp {
    #[cfg(feature = "cupti")]
    pub use super::imp_cupti as cupti;
    pub use super::{imp_cublas as cublas, imp_driver as driver, imp_nvrtc as nvrtc};
}
#[doc(hidden)]
#[path = "cublas/mod.rs"]
pub mod imp_cublas;
#[cfg(feature = "cupti")]
#[doc(hidden)]
#[path = "cupti/mod.rs"]
pub mod imp_cupti;
#[doc(hidden)]
#[path = "driver/mod.rs"]
pub mod imp_driver;
#[doc(hidden)]
#[path = "nvrtc/mod.rs"]
pub mod imp_nvrtc;

#[cfg(not(feature = "legacy"))]
pub use imp::{cublas, driver, nvrtc};

#[cfg(feature = "legacy")]
pub use cudarc::{cublas, driver, nvrtc};

#[cfg(all(feature = "cupti", feature = "legacy"))]
pub use cudarc::cupti;
#[cfg(all(feature = "cupti", not(feature = "legacy")))]
pub use imp::cupti;

/// Whether this build serves the modules with cudarc itself (`legacy`) rather than cudrv.
///
/// ```
/// if cudrv_compat::LEGACY {
///     println!("served by cudarc 0.19");
/// } else {
///     println!("served by cudrv");
/// }
/// ```
pub const LEGACY: bool = cfg!(feature = "legacy");
