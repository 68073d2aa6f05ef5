//! A cudarc-style program that builds unchanged against cudrv-compat (default) and against the
//! real cudarc (`--features legacy`): compile a kernel with nvrtc, launch it, copy back, check.
//!
//! In a project of your own, the rename happens in Cargo.toml
//! (`cudarc = { package = "cudrv-compat", path = "..." }`) and nothing below the next line changes.
use cudrv_compat as cudarc;

use cudarc::driver::{CudaContext, DriverError, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::compile_ptx;

const SRC: &str = r#"
extern "C" __global__ void sin_kernel(float *out, const float *inp, const size_t numel) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < numel) {
        out[i] = sin(inp[i]);
    }
}
"#;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    println!(
        "device: {} (sm_{}{})",
        ctx.name()?,
        ctx.compute_capability()?.0,
        ctx.compute_capability()?.1
    );

    let ptx = compile_ptx(SRC)?;
    let module = ctx.load_module(ptx)?;
    let sin_kernel = module.load_function("sin_kernel")?;

    let n = 100_000usize;
    let host: Vec<f32> = (0..n).map(|i| i as f32 * 1e-3).collect();
    let inp = stream.clone_htod(&host)?;
    let mut out = stream.alloc_zeros::<f32>(n)?;

    let mut builder = stream.launch_builder(&sin_kernel);
    builder.arg(&mut out);
    builder.arg(&inp);
    builder.arg(&n);
    // SAFETY: sin_kernel(float*, const float*, size_t) matches the arguments, and both buffers
    // hold n elements.
    unsafe { builder.launch(LaunchConfig::for_num_elems(n as u32)) }?;

    let result = stream.clone_dtoh(&out)?;
    let worst = host
        .iter()
        .zip(&result)
        .map(|(x, y)| (x.sin() - y).abs())
        .fold(0.0f32, f32::max);
    println!(
        "{} elements, max |sin(x) - gpu| = {worst:.2e} ({})",
        n,
        if cudrv_compat::LEGACY {
            "cudarc 0.19"
        } else {
            "cudrv-compat"
        }
    );
    if worst > 1e-5 {
        return Err(Box::new(DriverError(cudarc::driver::sys::CUresult::CUDA_ERROR_UNKNOWN)));
    }
    Ok(())
}
