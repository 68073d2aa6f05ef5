//! GEMM: cudrv's kernels beside cuBLAS (through the real `cudarc` 0.19, a dev-dependency: cuBLAS
//! appears in benches and tests that compare, never in the library), in the same process, on the
//! same GPU, with the same random inputs.
//!
//! Each group `gemm/<type>/<m>x<n>x<k>` has two functions, `cudrv` and `cublas`; criterion's
//! throughput is FLOP/s (`2 m n k` elements per iteration). After each group a line
//! `ratio <group> cudrv/cublas = X` gives the ratio of the medians measured here, so the figure
//! is always same-run. Without a GPU the bench prints `SKIPPED (no GPU)` and exits.
//!
//! `cargo bench --bench gemm -- f16/4096` runs one group (criterion's filter).
//! `CUDRV_BENCH_QUICK=1` runs only 256, 1024 and 4096.
#![allow(missing_docs)] // criterion_group! generates undocumented items

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use cudarc::cublas::sys::{cublasMath_t, cublasOperation_t};
use cudarc::cublas::{CudaBlas, Gemm as _, GemmConfig};
use cudarc::driver::{CudaContext, CudaSlice, CudaStream};
use cudrv::blas::{Gemm, GemmType, MathMode, Transpose};
use cudrv::selftest::Rng;
use cudrv::{Context, DeviceBuffer, Stream};
use half::{bf16, f16};

/// A type the bench runs, with its cuBLAS twin.
trait Ty: GemmType + cudarc::driver::DeviceRepr + Copy + Send + Sync + 'static
where
    CudaBlas: cudarc::cublas::Gemm<Self::Cu>,
{
    /// The element type cudarc's `Gemm` is implemented for (the same bits).
    type Cu: cudarc::driver::DeviceRepr + Copy;
    fn from_f64(x: f64) -> Self;
    fn to_cu(self) -> Self::Cu;
    fn scalar(x: f64) -> Self::Scalar;
    fn cu_scalar(x: f64) -> Self::Cu;
}
impl Ty for f32 {
    type Cu = f32;
    fn from_f64(x: f64) -> Self {
        x as f32
    }
    fn to_cu(self) -> f32 {
        self
    }
    fn scalar(x: f64) -> f32 {
        x as f32
    }
    fn cu_scalar(x: f64) -> f32 {
        x as f32
    }
}
impl Ty for f64 {
    type Cu = f64;
    fn from_f64(x: f64) -> Self {
        x
    }
    fn to_cu(self) -> f64 {
        self
    }
    fn scalar(x: f64) -> f64 {
        x
    }
    fn cu_scalar(x: f64) -> f64 {
        x
    }
}
impl Ty for f16 {
    type Cu = f16;
    fn from_f64(x: f64) -> Self {
        f16::from_f64(x)
    }
    fn to_cu(self) -> f16 {
        self
    }
    fn scalar(x: f64) -> f32 {
        x as f32
    }
    fn cu_scalar(x: f64) -> f16 {
        f16::from_f64(x)
    }
}
impl Ty for bf16 {
    type Cu = bf16;
    fn from_f64(x: f64) -> Self {
        bf16::from_f64(x)
    }
    fn to_cu(self) -> bf16 {
        self
    }
    fn scalar(x: f64) -> f32 {
        x as f32
    }
    fn cu_scalar(x: f64) -> bf16 {
        bf16::from_f64(x)
    }
}

struct Gpu {
    stream: Arc<Stream>,
    cu_stream: Arc<CudaStream>,
    blas: CudaBlas,
}

fn gpu() -> Option<Gpu> {
    let ctx = match Context::new(0) {
        Ok(c) => c,
        Err(e) => {
            println!("SKIPPED (no GPU): gemm bench: {e}");
            return None;
        }
    };
    let stream = ctx.new_stream().ok()?;
    let cu = CudaContext::new(0).ok()?;
    let cu_stream = cu.new_stream().ok()?;
    let blas = match CudaBlas::new(cu_stream.clone()) {
        Ok(b) => b,
        Err(e) => {
            println!("SKIPPED (no cuBLAS): gemm bench: {e:?}");
            return None;
        }
    };
    Some(Gpu {
        stream,
        cu_stream,
        blas,
    })
}

fn median_of(mut f: impl FnMut() -> Duration, n: usize) -> f64 {
    let mut v: Vec<f64> = (0..n).map(|_| f().as_secs_f64()).collect();
    v.sort_by(|a, b| a.total_cmp(b));
    v[n / 2]
}

fn bench_one<T: Ty>(c: &mut Criterion, g: &mut Gpu, name: &str, math: MathMode, (m, n, k): (usize, usize, usize))
where
    CudaBlas: cudarc::cublas::Gemm<T::Cu>,
{
    let mut rng = Rng::new((m + n + k) as u64);
    let host = |len: usize, rng: &mut Rng| {
        (0..len)
            .map(|_| T::from_f64(rng.uniform(-1.0, 1.0)))
            .collect::<Vec<T>>()
    };
    let (ha, hb) = (host(m * k, &mut rng), host(k * n, &mut rng));
    let a = DeviceBuffer::from_slice(&g.stream, &ha).unwrap();
    let b = DeviceBuffer::from_slice(&g.stream, &hb).unwrap();
    let mut cc = DeviceBuffer::from_slice(&g.stream, &host(m * n, &mut rng)).unwrap();
    let cu_a: CudaSlice<T::Cu> = g
        .cu_stream
        .clone_htod(&ha.iter().map(|x| x.to_cu()).collect::<Vec<_>>())
        .unwrap();
    let cu_b: CudaSlice<T::Cu> = g
        .cu_stream
        .clone_htod(&hb.iter().map(|x| x.to_cu()).collect::<Vec<_>>())
        .unwrap();
    let mut cu_c: CudaSlice<T::Cu> = g
        .cu_stream
        .clone_htod(&host(m * n, &mut rng).iter().map(|x| x.to_cu()).collect::<Vec<_>>())
        .unwrap();
    let tf32 = math == MathMode::Tf32;
    // SAFETY: the handle is live; the math mode only selects the algorithm family.
    unsafe {
        cudarc::cublas::sys::cublasSetMathMode(
            *g.blas.handle(),
            if tf32 {
                cublasMath_t::CUBLAS_TF32_TENSOR_OP_MATH
            } else {
                cublasMath_t::CUBLAS_DEFAULT_MATH
            },
        );
    }
    let op = Gemm::<T::Scalar>::new(Transpose::N, Transpose::N, m, n, k).math(math);
    let cfg = GemmConfig {
        transa: cublasOperation_t::CUBLAS_OP_N,
        transb: cublasOperation_t::CUBLAS_OP_N,
        m: m as i32,
        n: n as i32,
        k: k as i32,
        alpha: T::cu_scalar(1.0),
        lda: m as i32,
        ldb: k as i32,
        beta: T::cu_scalar(0.0),
        ldc: m as i32,
    };
    let _ = T::scalar(1.0);
    let mut run_ours = |iters: u64| {
        g.stream.synchronize().unwrap();
        let t = Instant::now();
        for _ in 0..iters {
            op.run(&a, &b, &mut cc).unwrap();
        }
        g.stream.synchronize().unwrap();
        t.elapsed()
    };
    let blas = &g.blas;
    let cu_stream = g.cu_stream.clone();
    let mut run_theirs = |iters: u64| {
        cu_stream.synchronize().unwrap();
        let t = Instant::now();
        for _ in 0..iters {
            // SAFETY: the slices hold m*k, k*n and m*n elements; the leading dimensions are tight.
            unsafe { blas.gemm(cfg, &cu_a, &cu_b, &mut cu_c) }.unwrap();
        }
        cu_stream.synchronize().unwrap();
        t.elapsed()
    };
    let id = format!("{name}/{m}x{n}x{k}");
    let mut group = c.benchmark_group(format!("gemm/{id}"));
    group.throughput(Throughput::Elements((2 * m * n * k) as u64));
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(300));
    group.bench_function(BenchmarkId::from_parameter("cudrv"), |bch| {
        bch.iter_custom(&mut run_ours)
    });
    group.bench_function(BenchmarkId::from_parameter("cublas"), |bch| {
        bch.iter_custom(&mut run_theirs)
    });
    group.finish();
    let reps = (2e9 / (2.0 * m as f64 * n as f64 * k as f64)).clamp(1.0, 100.0) as u64;
    let ours = median_of(|| run_ours(reps), 9);
    let theirs = median_of(|| run_theirs(reps), 9);
    let tflops = 2.0 * (m * n * k) as f64 * reps as f64 / 1e12;
    println!(
        "ratio gemm/{id} cudrv/cublas = {:.3} (cudrv {:.2} TFLOP/s, cuBLAS {:.2} TFLOP/s)",
        theirs / ours,
        tflops / ours,
        tflops / theirs
    );
}

fn shapes() -> Vec<(usize, usize, usize)> {
    if std::env::var("CUDRV_BENCH_QUICK").is_ok() {
        return vec![(256, 256, 256), (1024, 1024, 1024), (4096, 4096, 4096)];
    }
    let mut v: Vec<_> = [256, 512, 1024, 2048, 4096, 8192].iter().map(|&s| (s, s, s)).collect();
    v.extend([(8192, 8192, 64), (64, 8192, 8192), (4096, 11008, 4096)]);
    v
}

fn benches(c: &mut Criterion) {
    let Some(mut g) = gpu() else { return };
    for s in shapes() {
        bench_one::<f32>(c, &mut g, "f32", MathMode::Exact, s);
        bench_one::<f32>(c, &mut g, "tf32", MathMode::Tf32, s);
        bench_one::<f16>(c, &mut g, "f16", MathMode::Exact, s);
        bench_one::<bf16>(c, &mut g, "bf16", MathMode::Exact, s);
        bench_one::<f64>(c, &mut g, "f64", MathMode::Exact, s);
    }
}

criterion_group!(gemm, benches);
criterion_main!(gemm);
