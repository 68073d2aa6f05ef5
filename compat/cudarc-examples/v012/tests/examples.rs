//! cudarc 0.12.1's own examples (`examples/`, as shipped, under cudarc's MIT / Apache-2.0 licence
//! kept beside them), run on the GPU against `cudrv-compat-012` (or, under `legacy`, the real
//! cudarc 0.12.1). Each example's `main` must return `Ok`; the examples assert their own results
//! where they have any, and what they print can be compared between the two features
//! (`--nocapture --test-threads=1`).
//!
//! Without a GPU every test prints `SKIPPED (no GPU): <name>`; under `REQUIRE_GPU=1` it fails.

include!("../../harness.rs");

example!(allocate, "01-allocate.rs");
example!(copy, "02-copy.rs");
example!(launch_kernel, "03-launch-kernel.rs");
example!(streams, "04-streams.rs");
example!(device_repr, "05-device-repr.rs");
example!(threading, "06-threading.rs");
example!(matmul_kernel, "matmul-kernel.rs");
example!(nvrtc_compile, "nvrtc-compile.rs");
