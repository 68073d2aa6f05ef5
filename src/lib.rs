//! # cudrv: a CUDA runtime for Rust on the CUDA Driver API
//!
//! cudrv loads the NVIDIA driver (`libcuda`) at run time: no CUDA toolkit is needed to build,
//! nothing links against a CUDA library, and an entry point the installed driver lacks is an
//! [`Error::MissingSymbol`] from the call that needs it, never a panic. It works on any driver
//! since CUDA 12.0.
//!
//! ```text
//! your code ─► cudrv safe layer: Context, Stream, Event, DeviceBuffer<T>, Module, Function,
//!                 │              launch builder, KernelRegistry, ops, Graph
//!                 ▼
//!              cudrv::sys: bindgen types + a function table resolved lazily from libcuda
//!                 ▼
//!              libcuda.so.1 (whatever driver is installed)
//! ```
//!
//! ## Quick start
//! ```no_run
//! use cudrv::{ops, Context, DeviceBuffer, DeviceSlice};
//!
//! let ctx = Context::new(0)?;                       // device 0's primary context
//! let stream = ctx.new_stream()?;
//! let x = DeviceBuffer::from_slice(&stream, &[1.0f32, 2.0, 3.0])?;
//! let mut y = DeviceBuffer::<f32>::zeroed(&stream, 3)?;
//! ops::axpy(&mut y, 2.0, &x)?;                      // a bundled kernel
//! assert_eq!(y.to_vec()?, vec![2.0, 4.0, 6.0]);
//!
//! // Your own kernels: register PTX, then launch by name with checked configuration.
//! ctx.registry().register_ptx("mine", include_str!("../examples/kernels/add_one.ptx"))?;
//! let f = ctx.kernel("add_one")?;
//! let n = 3u32;
//! let mut launch = stream.launch_builder(&f);
//! launch.arg(&y).arg(&n);
//! // SAFETY: add_one(float* data, u32 n) matches these arguments.
//! unsafe { launch.launch(cudrv::LaunchConfig::for_num_elems(3)) }?;
//! assert_eq!(y.to_vec()?, vec![3.0, 5.0, 7.0]);
//! # Ok::<(), cudrv::Error>(())
//! ```
//!
//! ## Features
//! - `regen-bindings`: regenerate `src/sys/bindings.rs` and `src/sys/functions.rs` with bindgen
//!   (needs libclang and `CUDA_HEADERS_DIR`; see `wrapper.h`).
//!
//! ## Environment
//! - `CUDRV_LIBCUDA`: load this driver library instead of `libcuda.so.1` / `libcuda.so`.

pub mod blas;
mod capture;
pub mod context;
pub mod device;
pub mod driver;
pub mod error;
pub mod event;
pub mod exec;
pub mod fault;
pub mod fuse;
pub mod graph;
mod image;
mod jit;
pub mod kernel_cache;
pub mod launch;
pub mod memory;
pub mod module;
pub mod monitor;
pub mod nvrtc;
pub mod nvtx;
pub mod ops;
pub mod profile;
pub mod ptx_info;
pub mod registry;
mod sealed;
pub mod selftest;
pub mod stream;
pub mod sys;
pub mod tune;

pub use context::Context;
pub use device::{Device, DeviceLimits};
pub use driver::{driver_version, init, DriverVersion};
pub use error::{Error, Result};
pub use event::Event;
pub use graph::Graph;
pub use launch::{KernelArg, LaunchArgs, LaunchConfig};
pub use memory::{
    DeviceBuffer, DeviceRepr, DeviceSlice, DeviceSliceMut, DeviceView, DeviceViewMut, PinnedHostBuffer, ValidAsZeroBits,
};
pub use module::{Function, FunctionAttributes, Module};
pub use registry::KernelRegistry;
pub use stream::{Stream, StreamFlags};

/// The README's examples, compiled by `cargo test --doc` so that they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
