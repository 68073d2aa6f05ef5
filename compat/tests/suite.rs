//! The compat suite, written the way cudarc users write: it compiles and runs unchanged under the
//! default feature (cudrv underneath) and under `legacy` (the real cudarc 0.19).
//!
//! GPU tests print `SKIPPED (no GPU): <name>` without a GPU and fail under `REQUIRE_GPU=1`.
//! nvrtc tests print `SKIPPED (no libnvrtc): <name>` when no libnvrtc loads (set
//! `CUDRV_LIBNVRTC`, or `LD_LIBRARY_PATH` for `legacy`). Every GPU test prints a line
//! `CHECKSUM <name> <value>`, so the output of the two features can be compared line by line.

use std::io::Write;
use std::sync::Arc;

use cudrv_compat::cublas::{
    sys::cublasOperation_t, CudaBlas, Gemm, GemmConfig, Gemv, GemvConfig, StridedBatchedConfig,
};
use cudrv_compat::driver::{
    self, sys, CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DeviceRepr, DeviceSlice, DriverError,
    LaunchConfig, PushKernelArg, ValidAsZeroBits,
};
use cudrv_compat::nvrtc::{self, compile_ptx, compile_ptx_with_opts, CompileError, CompileOptions, Ptx};
use half::{bf16, f16};

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

fn say(line: String) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(line.as_bytes());
    let _ = out.write_all(b"\n");
}

fn require_gpu() -> bool {
    std::env::var("REQUIRE_GPU").is_ok_and(|v| v == "1")
}

/// Device 0's context, or `None` (reported) without a GPU. The probe goes through cudrv, which
/// never panics, so that `legacy` (cudarc panics without libcuda) skips cleanly too.
fn gpu(name: &str) -> Option<Arc<CudaContext>> {
    match cudrv::Device::count() {
        Ok(n) if n > 0 => Some(CudaContext::new(0).expect("CudaContext::new(0)")),
        other => {
            assert!(!require_gpu(), "REQUIRE_GPU=1 but no GPU: {other:?}");
            say(format!("SKIPPED (no GPU): {name}"));
            None
        }
    }
}

/// Runs an nvrtc compilation; `None` (reported) when no libnvrtc can be loaded. Under `legacy`
/// cudarc panics when the library is missing, so the call is isolated with `catch_unwind`.
fn compiled<T>(name: &str, f: impl FnOnce() -> Result<T, CompileError> + std::panic::UnwindSafe) -> Option<T> {
    let outcome = std::panic::catch_unwind(f);
    match outcome {
        Ok(Ok(v)) => Some(v),
        Ok(Err(e)) if format!("{e:?}").contains("LibraryNotFound") => {
            assert!(!require_gpu(), "REQUIRE_GPU=1 but no libnvrtc: {e}");
            say(format!("SKIPPED (no libnvrtc): {name}"));
            None
        }
        Ok(Err(e)) => panic!("{name}: compilation failed: {e}"),
        Err(_) => {
            assert!(!require_gpu(), "REQUIRE_GPU=1 but libnvrtc could not be loaded");
            say(format!("SKIPPED (no libnvrtc): {name}"));
            None
        }
    }
}

fn checksum(name: &str, values: impl IntoIterator<Item = f64>) {
    let (mut sum, mut abs, mut n) = (0.0f64, 0.0f64, 0usize);
    for v in values {
        sum += v;
        abs += v.abs();
        n += 1;
    }
    say(format!("CHECKSUM {name} n={n} sum={sum:.6e} abs={abs:.6e}"));
}

/// Deterministic inputs (the same in both runs).
fn inputs(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 40) as f64 / (1u64 << 24) as f64) * 2.0 - 1.0
        })
        .collect()
}

const KERNELS: &str = r#"
struct Params { unsigned int n; float scale; double offset; };

extern "C" __global__ void axpy(float *y, const float *x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void affine(Params p, const float *in, float *out) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n) out[i] = (float)(in[i] * p.scale + p.offset);
}
extern "C" __global__ void affine_many(const Params *ps, float *out, int count) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count) out[i] = (float)(ps[i].n * ps[i].scale + ps[i].offset);
}
extern "C" __global__ void inc(float *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}
__device__ float coeff[4];
extern "C" __global__ void use_coeff(float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = coeff[i % 4] * i;
}
"#;

struct Kit {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    module: Arc<CudaModule>,
}

impl Kit {
    fn new(name: &str) -> Option<Kit> {
        let ctx = gpu(name)?;
        let ptx = compiled(name, || compile_ptx(KERNELS))?;
        let module = ctx.load_module(ptx).expect("load_module");
        let stream = ctx.default_stream();
        Some(Kit { ctx, stream, module })
    }
    fn f(&self, name: &str) -> CudaFunction {
        self.module.load_function(name).expect("load_function")
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(C)]
struct Params {
    n: u32,
    scale: f32,
    offset: f64,
}
// SAFETY: repr(C) plain data matching the kernel's struct; every bit pattern is a valid Params.
unsafe impl DeviceRepr for Params {}
// SAFETY: all-zero bytes are a valid Params.
unsafe impl ValidAsZeroBits for Params {}

#[path = "suite/blas.rs"]
mod blas;
#[path = "suite/cpu.rs"]
mod cpu;
#[path = "suite/gpu.rs"]
mod gpu;
