//! cudrv's own host work per call, on the null driver (tests/fixtures/null_driver.c: every
//! driver call returns at once, no kernel runs), so the figures are what cudrv adds on top of
//! the driver's own cost, on any machine, GPU or not: a checked launch, repeated GEMMs of each
//! kernel family, a GEMV, an op, and a launch with the profiler on. Each row is the median of
//! 7 batches, with the driver calls one call makes.
//!
//! `cargo bench --bench host` (needs a C compiler for the null driver). For instruction
//! counts, which do not move with the machine's load, run the bench binary under
//! `valgrind --tool=callgrind` with `CUDRV_HOST_BENCH_CALLS` set to a small number.
#![allow(missing_docs)]

#[path = "../tests/common/fake_driver.rs"]
mod fake_driver;
#[path = "../tests/support/null_driver.rs"]
mod null_driver;

use std::sync::Arc;
use std::time::Instant;

use cudrv::blas::{Gemm, GemmType, MathMode, Transpose};
use cudrv::{Context, DeviceBuffer, LaunchConfig, Stream, ValidAsZeroBits};
use null_driver::Calls;

/// Calls per batch.
fn calls_per_batch() -> u64 {
    std::env::var("CUDRV_HOST_BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50_000)
}

/// Median nanoseconds per call of `f` over 7 batches, and the driver calls per call over them.
fn measure(calls: &Calls, name: &str, mut f: impl FnMut()) {
    let n = calls_per_batch();
    for _ in 0..3 {
        f();
    }
    calls.reset();
    let mut batches: Vec<f64> = (0..7)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..n {
                f();
            }
            t.elapsed().as_secs_f64() * 1e9 / n as f64
        })
        .collect();
    batches.sort_by(f64::total_cmp);
    let per_call: Vec<String> = calls
        .take()
        .iter()
        .map(|(k, v)| format!("{k} {:.2}", *v as f64 / (7 * n) as f64))
        .collect();
    println!("| {name} | {:.0} | {} |", batches[3], per_call.join(", "));
}

fn gemm<T: GemmType + ValidAsZeroBits>(calls: &Calls, stream: &Arc<Stream>, n: usize, math: MathMode)
where
    T::Scalar: Copy + From<u8> + Into<f64>,
{
    let a = DeviceBuffer::<T>::zeroed(stream, n * n).unwrap();
    let b = DeviceBuffer::<T>::zeroed(stream, n * n).unwrap();
    let mut c = DeviceBuffer::<T>::zeroed(stream, n * n).unwrap();
    let g = Gemm::<T::Scalar>::new(Transpose::N, Transpose::N, n, n, n).math(math);
    let kernel = g.kernel_name(&a, &b, &c).unwrap();
    let tf32 = if math == MathMode::Tf32 { " tf32" } else { "" };
    measure(calls, &format!("gemm {}{tf32} {n}^3 ({kernel})", T::NAME), || {
        g.run(&a, &b, &mut c).unwrap()
    });
}

fn main() {
    let Some(lib) = fake_driver::build("host_bench", fake_driver::Fixture::NullDriver) else {
        return;
    };
    // Before any cudrv call (the driver library is chosen once per process); no other thread
    // runs yet.
    std::env::set_var("CUDRV_LIBCUDA", lib.path());
    std::env::set_var("CUDRV_CACHE_DIR", lib.path().with_extension("cache"));
    std::env::remove_var("CUDRV_PROFILE");
    let ctx = Context::new(0).unwrap();
    let calls = Calls::of_this_process().expect("the null driver");
    let stream = ctx.new_stream().unwrap();

    println!("| call (null driver) | ns per call | driver calls per call |");
    println!("|---|---|---|");
    let f = ctx.kernel("cudrv_empty_args").unwrap();
    let a = DeviceBuffer::from_slice(&stream, &[1.0f32; 32]).unwrap();
    let b = DeviceBuffer::<f32>::zeroed(&stream, 32).unwrap();
    let cfg = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (32, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut launch = || {
        let mut l = stream.launch_builder(&f);
        l.arg(&a).arg(&b).arg(&32u64).arg(&2.0f32);
        // SAFETY: cudrv_empty_args(const float*, float*, u64, float); nothing runs.
        unsafe { l.launch(cfg) }.unwrap();
    };
    measure(&calls, "checked launch (4 arguments)", &mut launch);
    ctx.profiler().enable().unwrap();
    measure(&calls, "checked launch, profiler on (every launch)", &mut launch);
    ctx.profiler().disable();
    ctx.profiler().clear().unwrap();

    gemm::<f32>(&calls, &stream, 2, MathMode::Exact);
    gemm::<f32>(&calls, &stream, 16, MathMode::Exact);
    gemm::<f32>(&calls, &stream, 64, MathMode::Exact);
    gemm::<f32>(&calls, &stream, 256, MathMode::Exact);
    gemm::<f32>(&calls, &stream, 256, MathMode::Tf32);
    gemm::<f64>(&calls, &stream, 64, MathMode::Exact);
    gemm::<half::f16>(&calls, &stream, 16, MathMode::Exact);
    gemm::<half::f16>(&calls, &stream, 256, MathMode::Exact);

    let m = DeviceBuffer::<f32>::zeroed(&stream, 4096 * 4096).unwrap();
    let x = DeviceBuffer::<f32>::zeroed(&stream, 4096).unwrap();
    let mut y = DeviceBuffer::<f32>::zeroed(&stream, 4096).unwrap();
    measure(&calls, "gemv f32 N 4096^2", || {
        cudrv::blas::gemv(Transpose::N, 4096, 4096, 1.0f32, &m, 4096, &x, 1, 0.0, &mut y, 1).unwrap()
    });
    // Odd leading dimensions: the element-wise N kernel, split in a cluster (one launch) or
    // over a workspace with gemv_finish (two).
    for (m, n) in [(1023, 1025), (33, 200_000)] {
        let a = DeviceBuffer::<half::f16>::zeroed(&stream, m * n).unwrap();
        let xh = DeviceBuffer::<half::f16>::zeroed(&stream, n).unwrap();
        let mut yh = DeviceBuffer::<half::f16>::zeroed(&stream, m).unwrap();
        let (one, zero) = (half::f16::ONE, half::f16::ZERO);
        measure(&calls, &format!("gemv f16 N {m}x{n} (odd lda)"), || {
            cudrv::blas::gemv(Transpose::N, m, n, one, &a, m, &xh, 1, zero, &mut yh, 1).unwrap()
        });
    }
    measure(&calls, "ops::scale f32 4096", || {
        cudrv::ops::scale(&mut y, 2.0, &x).unwrap()
    });
}
