//! NVRTC sources that include CUDA headers (`cuda_fp16.h`, `curand_kernel.h`), compiled and run.
//!
//! With cudrv underneath the toolkit's include directories are found without options; under
//! `legacy` (cudarc, which adds none) the test passes them as `include_paths`, as cudarc users do.
//! Without libnvrtc the tests print `SKIPPED (no libnvrtc)`, without a GPU the run part prints
//! `SKIPPED (no GPU)`; under `REQUIRE_GPU=1` both fail.

use cudrv_compat::driver::{CudaContext, LaunchConfig, PushKernelArg};
use cudrv_compat::nvrtc::{compile_ptx_with_opts, CompileError, CompileOptions, Ptx};

fn require_gpu() -> bool {
    std::env::var("REQUIRE_GPU").is_ok_and(|v| v == "1")
}

/// Compiles `src`; `None` (reported) when libnvrtc cannot be loaded.
fn compile(name: &str, src: &str) -> Option<Result<Ptx, CompileError>> {
    let include_paths = if cudrv_compat::LEGACY {
        cudrv_compat::imp::nvrtc::cuda_include_dirs()
            .iter()
            .map(|d| d.display().to_string())
            .collect()
    } else {
        Vec::new()
    };
    let opts = CompileOptions {
        include_paths,
        ..Default::default()
    };
    match std::panic::catch_unwind(|| compile_ptx_with_opts(src, opts)) {
        Ok(Err(e)) if format!("{e:?}").contains("LibraryNotFound") => None,
        Ok(result) => Some(result),
        Err(_) => None,
    }
    .or_else(|| {
        assert!(!require_gpu(), "REQUIRE_GPU=1 but no libnvrtc");
        println!("SKIPPED (no libnvrtc): {name}");
        None
    })
}

const HALF: &str = r#"
#include <cuda_fp16.h>
extern "C" __global__ void halve(const __half *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __half2float(__float2half(__half2float(x[i]) * 0.5f));
}
"#;

#[test]
fn cuda_fp16_header_compiles_and_runs() {
    let Some(ptx) = compile("cuda_fp16_header_compiles_and_runs", HALF) else {
        return;
    };
    let ptx = ptx.expect("a source including cuda_fp16.h compiles");
    match cudrv::Device::count() {
        Ok(n) if n > 0 => {}
        _ => {
            assert!(!require_gpu(), "REQUIRE_GPU=1 but no GPU");
            println!("SKIPPED (no GPU): cuda_fp16_header_compiles_and_runs (compiled only)");
            return;
        }
    }
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let f = ctx.load_module(ptx).unwrap().load_function("halve").unwrap();
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    println!("SEED cuda_fp16_header_compiles_and_runs {seed}");
    let n = 1000usize;
    let host: Vec<half::f16> = (0..n)
        .map(|i| half::f16::from_f64(((seed.wrapping_mul(i as u64 + 1) >> 40) % 2000) as f64 / 100.0 - 10.0))
        .collect();
    let x = stream.clone_htod(&host).unwrap();
    let mut y = stream.alloc_zeros::<f32>(n).unwrap();
    let n32 = n as i32;
    let mut b = stream.launch_builder(&f);
    b.arg(&x).arg(&mut y).arg(&n32);
    // SAFETY: halve(const __half*, float*, int) over n elements.
    unsafe { b.launch(LaunchConfig::for_num_elems(n as u32)) }.unwrap();
    let got = stream.clone_dtoh(&y).unwrap();
    for i in 0..n {
        let want = (host[i].to_f64() * 0.5) as f32;
        assert_eq!(got[i], want, "element {i}");
    }
}

const CURAND: &str = r#"
#include <curand_kernel.h>
extern "C" __global__ void uniform(float *out, unsigned long long seed, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        curandStatePhilox4_32_10_t state;
        curand_init(seed, i, 0, &state);
        out[i] = curand_uniform(&state);
    }
}
"#;

#[test]
fn curand_kernel_header_compiles_and_runs() {
    let name = "curand_kernel_header_compiles_and_runs";
    let Some(ptx) = compile(name, CURAND) else { return };
    let ptx = match ptx {
        Ok(ptx) => ptx,
        // This machine's CUDA headers lack curand (NVIDIA's wheels ship it separately): the
        // error must say where it looked. The GPU machine has the whole toolkit.
        Err(e) if !require_gpu() && format!("{e}").contains("curand_kernel.h") => {
            let text = format!("{e}");
            if !cudrv_compat::LEGACY {
                assert!(text.contains("include"), "{text}");
            }
            println!(
                "SKIPPED (no curand headers): {name}: {}",
                text.lines().last().unwrap_or("")
            );
            return;
        }
        Err(e) => panic!("{e}"),
    };
    match cudrv::Device::count() {
        Ok(n) if n > 0 => {}
        _ => {
            assert!(!require_gpu(), "REQUIRE_GPU=1 but no GPU");
            println!("SKIPPED (no GPU): {name} (compiled only)");
            return;
        }
    }
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let f = ctx.load_module(ptx).unwrap().load_function("uniform").unwrap();
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    println!("SEED {name} {seed}");
    let n = 4096usize;
    let run = || {
        let mut out = stream.alloc_zeros::<f32>(n).unwrap();
        let n32 = n as i32;
        let mut b = stream.launch_builder(&f);
        b.arg(&mut out).arg(&seed).arg(&n32);
        // SAFETY: uniform(float*, unsigned long long, int) over n elements.
        unsafe { b.launch(LaunchConfig::for_num_elems(n as u32)) }.unwrap();
        stream.clone_dtoh(&out).unwrap()
    };
    let (first, second) = (run(), run());
    assert_eq!(first, second, "the same seed gives the same numbers");
    assert!(
        first.iter().all(|&v| v > 0.0 && v <= 1.0),
        "curand_uniform is in (0, 1]"
    );
    let mean = first.iter().map(|&v| v as f64).sum::<f64>() / n as f64;
    assert!((mean - 0.5).abs() < 0.03, "mean {mean}");
}

#[test]
fn a_missing_header_is_a_clear_error() {
    let Some(result) = compile(
        "a_missing_header_is_a_clear_error",
        "#include <no_such_header_anywhere.h>\n",
    ) else {
        return;
    };
    let e = result.expect_err("a missing header cannot compile");
    assert!(matches!(e, CompileError::CompileError { .. }), "{e:?}");
    let text = format!("{e}");
    assert!(text.contains("no_such_header_anywhere.h"), "{text}");
    if !cudrv_compat::LEGACY {
        assert!(text.contains("include"), "{text}");
    }
}
