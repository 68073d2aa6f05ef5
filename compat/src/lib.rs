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
//!
//! A driver entry point the installed driver lacks, or an absent libnvrtc, is an error from the
//! call that needs it, never a panic. `MIGRATING.md` lists what differs from cudarc.
//!
//! ## Features
//! - `legacy`: the three modules are the real cudarc 0.19 (dynamic loading, CUDA 13.0
//!   bindings) instead, so one codebase can switch back with a feature flag.
//!
//! ## Environment
//! - `CUDRV_LIBCUDA`: the driver library to load (cudrv's loader).
//! - `CUDRV_LIBNVRTC`: the libnvrtc to load before the default candidates.
//! - `CUDRV_COMPAT_BLAS=bundled`: serve `cublas` with the kernels bundled in this crate instead
//!   of `cudrv::blas`.
#[cfg(not(feature = "legacy"))]
pub mod cublas;
#[cfg(not(feature = "legacy"))]
pub mod driver;
#[cfg(not(feature = "legacy"))]
pub mod nvrtc;

#[cfg(feature = "legacy")]
pub use cudarc::{cublas, driver, nvrtc};

/// Whether this build serves the modules with cudarc itself (`legacy`) rather than cudrv.
pub const LEGACY: bool = cfg!(feature = "legacy");
