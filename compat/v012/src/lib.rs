//! # cudrv-compat-012: cudarc 0.9–0.12 (the `CudaDevice` era) served by cudrv
//!
//! Code written against `cudarc` 0.9–0.12 (`CudaDevice`, `LaunchAsync`, `htod_copy`,
//! `CudaBlas::new(device)`) migrates by renaming one dependency:
//!
//! ```toml
//! cudarc = { package = "cudrv-compat-012", path = "../cudrv/compat/v012" }
//! ```
//!
//! | module | mirrors | served by |
//! |---|---|---|
//! | [`driver`] | `cudarc::driver` 0.12 | cudrv's contexts, streams, caching allocator and modules, through `cudrv-compat`'s |
//! | [`nvrtc`] | `cudarc::nvrtc` | `cudrv-compat`'s nvrtc (libnvrtc loaded at run time) |
//! | [`cublas`] | `cudarc::cublas` (gemm, gemv, strided batched) | `cudrv::blas` (no libcublas) |
//!
//! This is a package of its own, not a feature of `cudrv-compat`: the two eras' `DevicePtr`
//! traits differ, Cargo unifies features across a build, and two crates of one application may
//! each keep their own era. Both packages share one implementation underneath (memory, modules,
//! launch checks, BLAS), so a slice of either era comes from the same caching pool.
//!
//! A driver entry point the installed driver lacks, a missing libnvrtc, a length mismatch or an
//! unknown function name is an error from the call, never a panic. `MIGRATING.md` lists what
//! differs from cudarc 0.12.
//!
//! ## Features
//! - `legacy`: the modules are the real cudarc 0.12.1 instead (CUDA 12.6 bindings, dynamic
//!   loading), so one codebase can switch back with a feature flag.
#[cfg(not(feature = "legacy"))]
pub mod cublas;
#[cfg(not(feature = "legacy"))]
pub mod driver;
#[cfg(not(feature = "legacy"))]
pub use cudrv_compat::imp::nvrtc;

#[cfg(feature = "legacy")]
pub use cudarc::{cublas, driver, nvrtc};

/// Whether this build serves the modules with cudarc 0.12.1 itself (`legacy`) rather than cudrv.
///
/// ```
/// println!("served by {}", if cudrv_compat_012::LEGACY { "cudarc 0.12.1" } else { "cudrv" });
/// ```
pub const LEGACY: bool = cfg!(feature = "legacy");
