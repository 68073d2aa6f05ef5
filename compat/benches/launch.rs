//! Per-launch host cost: cudrv-compat's launch builder against cudarc 0.19's, measured in the
//! same process on the same context, with the raw `cuLaunchKernel` as the floor.
//!
//! cudarc is a dev-dependency of this crate, so in the default build the bench has both
//! `cudrv_compat::driver` (cudrv underneath) and `cudarc::driver` at once. Each sample queues
//! a batch of launches of an empty kernel (4 parameters: two slices, a float, an int), timing
//! only the launch calls; the stream is drained between batches (untimed) so the driver's queue
//! never fills. Two cases: the context's default stream, and a second stream (which switches
//! cudarc into multi-stream mode, where it records events per slice argument).
//!
//! Prints `SKIPPED (no GPU): launch` without a GPU. Run: `cargo bench -p cudrv-compat --bench launch`.

use std::ffi::c_void;
use std::hint::black_box;
use std::io::Write;
use std::time::{Duration, Instant};

use criterion::Criterion;

const PTX: &str = "
.version 8.0
.target sm_80
.address_size 64
.visible .entry noop(.param .u64 a, .param .u64 b, .param .f32 c, .param .u32 d)
{
    ret;
}
";

const BATCH: u64 = 256;

fn say(line: String) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(line.as_bytes());
    let _ = out.write_all(b"\n");
}

/// Times `iters` launches made by `launch`, in batches, draining the stream between them.
fn timed(iters: u64, mut launch: impl FnMut(), mut drain: impl FnMut()) -> Duration {
    let mut total = Duration::ZERO;
    let mut left = iters;
    while left > 0 {
        let n = left.min(BATCH);
        let start = Instant::now();
        for _ in 0..n {
            launch();
        }
        total += start.elapsed();
        drain();
        left -= n;
    }
    total
}

/// Median ns per launch over `rounds` rounds of `per` launches.
fn median_ns(rounds: usize, per: u64, mut launch: impl FnMut(), mut drain: impl FnMut()) -> f64 {
    let mut v: Vec<f64> = (0..rounds)
        .map(|_| timed(per, &mut launch, &mut drain).as_nanos() as f64 / per as f64)
        .collect();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() {
    match cudrv::Device::count() {
        Ok(n) if n > 0 => {}
        _ => {
            say("SKIPPED (no GPU): launch".into());
            return;
        }
    }
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sample_size(20)
        .configure_from_args();
    let cfg1 = cudarc::driver::LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (32, 1, 1),
        shared_mem_bytes: 0,
    };
    let cfg2 = cudrv_compat::driver::LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (32, 1, 1),
        shared_mem_bytes: 0,
    };

    // compat (cudrv underneath in the default build).
    use cudrv_compat::driver::PushKernelArg as _;
    let cctx = cudrv_compat::driver::CudaContext::new(0).unwrap();
    let cmod = cctx.load_module(cudrv_compat::nvrtc::Ptx::from_src(PTX)).unwrap();
    let cf = cmod.load_function("noop").unwrap();

    // cudarc (under `legacy` this is the same trait as compat's).
    #[allow(unused_imports)]
    use cudarc::driver::PushKernelArg as _;
    let rctx = cudarc::driver::CudaContext::new(0).unwrap();
    let rmod = rctx.load_module(cudarc::nvrtc::Ptx::from_src(PTX)).unwrap();
    let rf = rmod.load_function("noop").unwrap();

    for case in ["default_stream", "second_stream"] {
        let (cs, rs) = if case == "default_stream" {
            (cctx.default_stream(), rctx.default_stream())
        } else {
            (cctx.new_stream().unwrap(), rctx.new_stream().unwrap())
        };
        let ca = cs.alloc_zeros::<f32>(1024).unwrap();
        let mut cb = cs.alloc_zeros::<f32>(1024).unwrap();
        let ra = rs.alloc_zeros::<f32>(1024).unwrap();
        let mut rb = rs.alloc_zeros::<f32>(1024).unwrap();
        let (x, n) = (1.5f32, 1024i32);

        let mut compat_launch = || {
            let mut b = cs.launch_builder(&cf);
            b.arg(&ca).arg(&mut cb).arg(&x).arg(&n);
            // SAFETY: noop(u64, u64, f32, u32) ignores its parameters.
            unsafe { b.launch(cfg2) }.unwrap();
        };
        let compat_drain = || cs.synchronize().unwrap();
        let mut cudarc_launch = || {
            let mut b = rs.launch_builder(&rf);
            b.arg(&ra).arg(&mut rb).arg(&x).arg(&n);
            // SAFETY: as above.
            unsafe { b.launch(cfg1) }.unwrap();
        };
        let cudarc_drain = || rs.synchronize().unwrap();
        // The floor: cuLaunchKernel with a prepared parameter array.
        let raw_f = cf.cu_function();
        let raw_s = cs.cu_stream();
        let (pa, pb) = (0u64, 0u64);
        let mut params: [*mut c_void; 4] = [
            &pa as *const u64 as *mut c_void,
            &pb as *const u64 as *mut c_void,
            &x as *const f32 as *mut c_void,
            &n as *const i32 as *mut c_void,
        ];
        let mut raw_launch = || {
            // SAFETY: a live function and stream; four parameters as the kernel declares.
            let rc = unsafe {
                cudrv_compat::driver::sys::cuLaunchKernel(
                    raw_f,
                    1,
                    1,
                    1,
                    32,
                    1,
                    1,
                    0,
                    raw_s,
                    params.as_mut_ptr(),
                    std::ptr::null_mut(),
                )
            };
            assert_eq!(rc, cudrv_compat::driver::sys::CUresult::CUDA_SUCCESS);
        };

        // Warm up, then the figures the report quotes (median of 25 rounds of 2560 launches).
        for _ in 0..1000 {
            compat_launch();
            cudarc_launch();
        }
        compat_drain();
        cudarc_drain();
        let compat_ns = median_ns(25, 2560, &mut compat_launch, compat_drain);
        let cudarc_ns = median_ns(25, 2560, &mut cudarc_launch, cudarc_drain);
        let raw_ns = median_ns(25, 2560, &mut raw_launch, compat_drain);
        say(format!(
            "LAUNCH {case}: compat {compat_ns:.0} ns, cudarc {cudarc_ns:.0} ns, raw cuLaunchKernel {raw_ns:.0} ns; \
             compat/cudarc = {:.3}, compat/raw = {:.3} (legacy build: {})",
            compat_ns / cudarc_ns,
            compat_ns / raw_ns,
            cudrv_compat::LEGACY
        ));

        let mut g = c.benchmark_group(format!("launch/{case}"));
        g.bench_function("compat", |bch| {
            bch.iter_custom(|iters| timed(iters, || black_box(&mut compat_launch)(), compat_drain))
        });
        g.bench_function("cudarc", |bch| {
            bch.iter_custom(|iters| timed(iters, || black_box(&mut cudarc_launch)(), cudarc_drain))
        });
        g.bench_function("raw", |bch| {
            bch.iter_custom(|iters| timed(iters, &mut raw_launch, compat_drain))
        });
        g.finish();
    }
    c.final_summary();
    gemm_figures();
}

/// GEMM through compat's `CudaBlas` (cudrv::blas underneath), cudrv::blas called directly, and
/// cuBLAS through cudarc, on the same buffers' shapes: median milliseconds of 10 runs each.
fn gemm_figures() {
    use cudarc::cublas::Gemm as _;
    use cudrv::DeviceSlice as _;
    // Under `legacy` this is the same trait as cudarc's.
    #[allow(unused_imports)]
    use cudrv_compat::cublas::Gemm as _;
    let cctx = cudrv_compat::driver::CudaContext::new(0).unwrap();
    let cs = cctx.new_stream().unwrap();
    let cblas = cudrv_compat::cublas::CudaBlas::new(cs.clone()).unwrap();
    let rctx = cudarc::driver::CudaContext::new(0).unwrap();
    let rs = rctx.new_stream().unwrap();
    let rblas = cudarc::cublas::CudaBlas::new(rs.clone()).unwrap();
    let dctx = cudrv::Context::new(0).unwrap();
    let ds = dctx.new_stream().unwrap();
    let median = |mut f: Box<dyn FnMut() + '_>, sync: Box<dyn Fn() + '_>| -> f64 {
        f();
        sync();
        let mut v: Vec<f64> = (0..10)
            .map(|_| {
                let t = Instant::now();
                f();
                sync();
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v[5]
    };
    macro_rules! shape {
        ($t:ty, $name:expr, $one:expr, $zero:expr, $n:expr) => {{
            let n: usize = $n;
            let host = vec![$one; n * n];
            let (ca, cb) = (cs.clone_htod(&host).unwrap(), cs.clone_htod(&host).unwrap());
            let mut cc = cs.alloc_zeros::<$t>(n * n).unwrap();
            let (ra, rb) = (rs.clone_htod(&host).unwrap(), rs.clone_htod(&host).unwrap());
            let mut rc = rs.alloc_zeros::<$t>(n * n).unwrap();
            let da = cudrv::DeviceBuffer::from_slice(&ds, &host).unwrap();
            let db = cudrv::DeviceBuffer::from_slice(&ds, &host).unwrap();
            let mut dc = cudrv::DeviceBuffer::<$t>::zeroed(&ds, n * n).unwrap();
            let ni = n as i32;
            let ccfg = cudrv_compat::cublas::GemmConfig {
                transa: cudrv_compat::cublas::sys::cublasOperation_t::CUBLAS_OP_N,
                transb: cudrv_compat::cublas::sys::cublasOperation_t::CUBLAS_OP_N,
                m: ni,
                n: ni,
                k: ni,
                alpha: $one,
                lda: ni,
                ldb: ni,
                beta: $zero,
                ldc: ni,
            };
            let rcfg = cudarc::cublas::GemmConfig {
                transa: cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_N,
                transb: cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_N,
                m: ni,
                n: ni,
                k: ni,
                alpha: $one,
                lda: ni,
                ldb: ni,
                beta: $zero,
                ldc: ni,
            };
            let compat_ms = median(
                Box::new(|| {
                    // SAFETY: n x n matrices in every buffer.
                    unsafe { cblas.gemm(ccfg, &ca, &cb, &mut cc) }.unwrap()
                }),
                Box::new(|| cs.synchronize().unwrap()),
            );
            let direct_ms = median(
                Box::new(|| {
                    cudrv::blas::Gemm::new(cudrv::blas::Transpose::N, cudrv::blas::Transpose::N, n, n, n)
                        .run(&da, &db, &mut dc)
                        .unwrap()
                }),
                Box::new(|| ds.synchronize().unwrap()),
            );
            let cublas_ms = median(
                Box::new(|| {
                    // SAFETY: n x n matrices in every buffer.
                    unsafe { rblas.gemm(rcfg, &ra, &rb, &mut rc) }.unwrap()
                }),
                Box::new(|| rs.synchronize().unwrap()),
            );
            let tflops = |ms: f64| 2.0 * (n as f64).powi(3) / (ms * 1e-3) / 1e12;
            say(format!(
                "GEMM {} n={n}: compat {compat_ms:.3} ms ({:.1} TFLOP/s), cudrv::blas {direct_ms:.3} ms ({:.1}), \
                 cuBLAS via cudarc {cublas_ms:.3} ms ({:.1}); compat/cudrv = {:.3}, compat/cuBLAS = {:.3}",
                $name,
                tflops(compat_ms),
                tflops(direct_ms),
                tflops(cublas_ms),
                compat_ms / direct_ms,
                compat_ms / cublas_ms
            ));
            let _ = dc.len();
        }};
    }
    for n in [1024usize, 4096] {
        shape!(f32, "f32", 1.0f32, 0.0f32, n);
        shape!(half::f16, "f16", half::f16::ONE, half::f16::ZERO, n);
    }
}
