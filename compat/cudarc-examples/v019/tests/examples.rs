//! cudarc 0.19's own examples (`examples/`, as shipped, under cudarc's MIT / Apache-2.0 licence
//! kept beside them), run on the GPU against `cudrv-compat` (or, under `legacy`, the real cudarc
//! 0.19). Each example's `main` must return `Ok`; the examples assert their own results where
//! they have any, and what they print can be compared between the two features
//! (`--nocapture --test-threads=1`). `08-cupti` needs the `cupti` feature (as in cudarc) and
//! libcupti; `13-copy-multi-gpu` needs two GPUs and says it skipped with one; `12-context-config`
//! queries a limit that compute capability 9.0 and later refuse, and says so when it stops there.
//!
//! Without a GPU every test prints `SKIPPED (no GPU): <name>`; under `REQUIRE_GPU=1` it fails.

include!("../../harness.rs");

example!(allocate, "01-allocate.rs");
example!(copy, "02-copy.rs");
example!(launch_kernel, "03-launch-kernel.rs");
example!(streams, "04-streams.rs");
example!(device_repr, "05-device-repr.rs");
example!(threading, "06-threading.rs");
#[cfg(feature = "cupti")]
example!(cupti, "08-cupti.rs");
example!(constant_memory, "09-constant-memory.rs");
example!(function_attributes, "10-function-attributes.rs");
// Hopper and later have no device-runtime sync depth: there the example stops at
// CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH with CUDA_ERROR_UNSUPPORTED_LIMIT, with cudarc as with compat.
example!(
    context_config,
    "12-context-config.rs",
    or_device_refuses = "CUDA_ERROR_UNSUPPORTED_LIMIT"
);
example!(copy_multi_gpu, "13-copy-multi-gpu.rs", gpus = 2);
example!(matmul_kernel, "matmul-kernel.rs");
example!(nvrtc_compile, "nvrtc-compile.rs");
