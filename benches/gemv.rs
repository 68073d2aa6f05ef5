//! GEMV: cudrv's `blas::gemv` beside cuBLAS's `cublasSgemv` (through the real `cudarc` 0.19, a
//! dev-dependency) and beside a device-to-device copy of the same bytes, all in one process.
//!
//! Each group `gemv/<op>/<m>x<n>` has `cudrv` and `cublas`; criterion's throughput is the bytes a
//! GEMV must move (`(m n + m + n) * 4`). After each group a line gives the same-run ratio
//! cudrv/cuBLAS and cudrv's fraction of the measured copy bandwidth. Without a GPU the bench
//! prints `SKIPPED (no GPU)` and exits.
#![allow(missing_docs)] // criterion_group! generates undocumented items

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use cudarc::cublas::sys::cublasOperation_t;
use cudarc::cublas::{CudaBlas, Gemv as _, GemvConfig};
use cudarc::driver::{CudaContext, CudaSlice, CudaStream};
use cudrv::blas::{self, Transpose};
use cudrv::selftest::Rng;
use cudrv::{Context, DeviceBuffer, DeviceSliceMut, Stream};

fn median_of(mut f: impl FnMut() -> Duration, n: usize) -> f64 {
    let mut v: Vec<f64> = (0..n).map(|_| f().as_secs_f64()).collect();
    v.sort_by(|a, b| a.total_cmp(b));
    v[n / 2]
}

fn timed(stream: &Stream, iters: u64, mut f: impl FnMut()) -> Duration {
    stream.synchronize().unwrap();
    let t = Instant::now();
    for _ in 0..iters {
        f();
    }
    stream.synchronize().unwrap();
    t.elapsed()
}

fn benches(c: &mut Criterion) {
    let ctx = match Context::new(0) {
        Ok(c) => c,
        Err(e) => {
            println!("SKIPPED (no GPU): gemv bench: {e}");
            return;
        }
    };
    let stream = ctx.new_stream().unwrap();
    let cu = CudaContext::new(0).unwrap();
    let cu_stream: Arc<CudaStream> = cu.new_stream().unwrap();
    let cublas = CudaBlas::new(cu_stream.clone()).unwrap();

    // The copy ceiling: 1 GiB device to device, bytes read + written.
    let n = 1usize << 28;
    let src = DeviceBuffer::from_slice(&stream, &vec![1.0f32; n]).unwrap();
    let mut dst = DeviceBuffer::<f32>::zeroed(&stream, n).unwrap();
    let copy_s = median_of(|| timed(&stream, 5, || dst.copy_from_device(&src).unwrap()), 7) / 5.0;
    let copy_bw = 2.0 * (n * 4) as f64 / copy_s / 1e9;
    println!("device copy: {copy_bw:.0} GB/s");
    drop((src, dst));

    let mut shapes: Vec<(Transpose, usize, usize)> = [1024, 4096, 8192, 16384, 32768]
        .iter()
        .map(|&s| (Transpose::N, s, s))
        .collect();
    shapes.extend([
        (Transpose::T, 4096, 4096),
        (Transpose::T, 8192, 8192),
        (Transpose::T, 16384, 16384),
        (Transpose::T, 32768, 8192),
        (Transpose::T, 8192, 32768),
    ]);
    for (trans, m, n) in shapes {
        let mut rng = Rng::new((m + n) as u64);
        let ha: Vec<f32> = rng.vec(m * n, -1.0, 1.0);
        let (lx, ly) = if trans == Transpose::N { (n, m) } else { (m, n) };
        let hx: Vec<f32> = rng.vec(lx, -1.0, 1.0);
        let a = DeviceBuffer::from_slice(&stream, &ha).unwrap();
        let x = DeviceBuffer::from_slice(&stream, &hx).unwrap();
        let mut y = DeviceBuffer::<f32>::zeroed(&stream, ly).unwrap();
        let cu_a: CudaSlice<f32> = cu_stream.clone_htod(&ha).unwrap();
        let cu_x: CudaSlice<f32> = cu_stream.clone_htod(&hx).unwrap();
        let mut cu_y: CudaSlice<f32> = cu_stream.alloc_zeros(ly).unwrap();
        let cfg = GemvConfig {
            trans: if trans == Transpose::N {
                cublasOperation_t::CUBLAS_OP_N
            } else {
                cublasOperation_t::CUBLAS_OP_T
            },
            m: m as i32,
            n: n as i32,
            alpha: 1.0f32,
            lda: m as i32,
            incx: 1,
            beta: 0.0f32,
            incy: 1,
        };
        let mut ours = |iters: u64| {
            timed(&stream, iters, || {
                blas::gemv(trans, m, n, 1.0, &a, m, &x, 1, 0.0, &mut y, 1).unwrap()
            })
        };
        let mut theirs = |iters: u64| {
            cu_stream.synchronize().unwrap();
            let t = Instant::now();
            for _ in 0..iters {
                // SAFETY: cu_a is m x n (lda m); cu_x and cu_y have the lengths the op needs.
                unsafe { cublas.gemv(cfg, &cu_a, &cu_x, &mut cu_y) }.unwrap();
            }
            cu_stream.synchronize().unwrap();
            t.elapsed()
        };
        let bytes = ((m * n + m + n) * 4) as u64;
        let id = format!("{}/{m}x{n}", if trans == Transpose::N { "N" } else { "T" });
        let mut group = c.benchmark_group(format!("gemv/{id}"));
        group.throughput(Throughput::Bytes(bytes));
        group
            .sample_size(20)
            .measurement_time(Duration::from_secs(1))
            .warm_up_time(Duration::from_millis(200));
        group.bench_function(BenchmarkId::from_parameter("cudrv"), |b| b.iter_custom(&mut ours));
        group.bench_function(BenchmarkId::from_parameter("cublas"), |b| b.iter_custom(&mut theirs));
        group.finish();
        let reps = (4e9 / bytes as f64).clamp(1.0, 1000.0) as u64;
        let (to, tt) = (median_of(|| ours(reps), 9), median_of(|| theirs(reps), 9));
        let gbps = bytes as f64 * reps as f64 / to / 1e9;
        println!(
            "ratio gemv/{id} cudrv/cublas = {:.3} (cudrv {gbps:.0} GB/s = {:.1}% of copy, cuBLAS {:.0} GB/s)",
            tt / to,
            100.0 * gbps / copy_bw,
            bytes as f64 * reps as f64 / tt / 1e9
        );
    }
}

criterion_group!(gemv, benches);
criterion_main!(gemv);
