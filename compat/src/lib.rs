//! `cudrv-compat`: modules shaped like the `cudarc` crate's, served by `cudrv`.
//!
//! The `driver`, `nvrtc` and `cublas` modules are being built; see the workspace README.
pub use cudrv;
