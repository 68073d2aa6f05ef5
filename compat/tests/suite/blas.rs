//! On the GPU: cuBLAS-shaped GEMM (every type, strided batches, per-thread and borrowed
//! streams) and GEMV, against an f64 reference.

use super::*;

trait Elem: DeviceRepr + Copy + std::fmt::Debug + 'static {
    fn from_f64(v: f64) -> Self;
    fn to_f64(self) -> f64;
    const TOL: f64;
}
impl Elem for f32 {
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
    const TOL: f64 = 1e-5;
}
impl Elem for f64 {
    fn from_f64(v: f64) -> Self {
        v
    }
    fn to_f64(self) -> f64 {
        self
    }
    const TOL: f64 = 1e-12;
}
impl Elem for f16 {
    fn from_f64(v: f64) -> Self {
        f16::from_f64(v)
    }
    fn to_f64(self) -> f64 {
        f16::to_f64(self)
    }
    const TOL: f64 = 4e-3;
}
impl Elem for bf16 {
    fn from_f64(v: f64) -> Self {
        bf16::from_f64(v)
    }
    fn to_f64(self) -> f64 {
        bf16::to_f64(self)
    }
    const TOL: f64 = 3e-2;
}

/// Column-major reference: C = alpha op(A) op(B) + beta C, in f64.
#[allow(clippy::too_many_arguments)]
fn gemm_ref(
    ta: bool,
    tb: bool,
    m: usize,
    n: usize,
    k: usize,
    alpha: f64,
    a: &[f64],
    lda: usize,
    b: &[f64],
    ldb: usize,
    beta: f64,
    c: &mut [f64],
    ldc: usize,
) {
    for j in 0..n {
        for i in 0..m {
            let mut acc = 0.0;
            for p in 0..k {
                let av = if ta { a[p + i * lda] } else { a[i + p * lda] };
                let bv = if tb { b[j + p * ldb] } else { b[p + j * ldb] };
                acc += av * bv;
            }
            c[i + j * ldc] = alpha * acc + beta * c[i + j * ldc];
        }
    }
}

fn op(t: bool) -> cublasOperation_t {
    if t {
        cublasOperation_t::CUBLAS_OP_T
    } else {
        cublasOperation_t::CUBLAS_OP_N
    }
}

fn run_gemm<T: Elem>(name: &str)
where
    CudaBlas: Gemm<T>,
{
    let Some(ctx) = gpu(name) else { return };
    let stream = ctx.default_stream();
    let blas = CudaBlas::new(stream.clone()).unwrap();
    let (m, n, k) = (37usize, 29usize, 43usize);
    let mut all = Vec::new();
    for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
        let (ar, ac) = if ta { (k, m) } else { (m, k) };
        let (br, bc) = if tb { (n, k) } else { (k, n) };
        let (lda, ldb, ldc) = (ar + 3, br + 1, m + 2);
        // Inputs rounded to T, so the reference sees exactly what the device sees.
        let round = |v: Vec<f64>| -> Vec<T> { v.into_iter().map(T::from_f64).collect() };
        let a = round(inputs(lda * ac, 11));
        let b = round(inputs(ldb * bc, 12));
        let c0 = round(inputs(ldc * n, 13));
        let (alpha, beta) = (1.5f64, 0.5f64);
        let to64 = |v: &[T]| -> Vec<f64> { v.iter().map(|x| x.to_f64()).collect() };
        let mut want = to64(&c0);
        gemm_ref(
            ta,
            tb,
            m,
            n,
            k,
            alpha,
            &to64(&a),
            lda,
            &to64(&b),
            ldb,
            beta,
            &mut want,
            ldc,
        );
        let da = stream.clone_htod(&a).unwrap();
        let db = stream.clone_htod(&b).unwrap();
        let mut dc = stream.clone_htod(&c0).unwrap();
        let cfg = GemmConfig {
            transa: op(ta),
            transb: op(tb),
            m: m as i32,
            n: n as i32,
            k: k as i32,
            alpha: T::from_f64(alpha),
            lda: lda as i32,
            ldb: ldb as i32,
            beta: T::from_f64(beta),
            ldc: ldc as i32,
        };
        // SAFETY: the buffers hold the matrices the configuration describes.
        unsafe { blas.gemm(cfg, &da, &db, &mut dc) }.unwrap();
        let got = to64(&stream.clone_dtoh(&dc).unwrap());
        for j in 0..n {
            for i in 0..m {
                let (g, w) = (got[i + j * ldc], want[i + j * ldc]);
                assert!(
                    (g - w).abs() <= T::TOL * (k as f64) * (1.0 + w.abs()),
                    "{name} ta={ta} tb={tb} ({i},{j}): {g} vs {w}"
                );
            }
        }
        // The padding rows of C are untouched.
        assert_eq!(got[m], c0[m].to_f64());
        all.extend(got);
    }
    checksum(name, all);
}

/// The BLAS serves borrowed and per-thread streams too (cudrv::blas on a cudrv stream that
/// borrows the handle): same results as on the default stream, checked against the reference.
#[test]
fn gemm_on_per_thread_and_borrowed_streams() {
    let Some(ctx) = gpu("gemm_on_per_thread_and_borrowed_streams") else {
        return;
    };
    let owner = ctx.new_stream().unwrap();
    // SAFETY: `owner` keeps the stream alive past every use of the borrowed handle below.
    let borrowed = unsafe { ctx.wrap_borrowed_stream(owner.cu_stream()) };
    let (m, n, k) = (130usize, 70usize, 300usize);
    let a: Vec<f32> = inputs(m * k, 21).into_iter().map(|v| v as f32).collect();
    let b: Vec<f32> = inputs(k * n, 22).into_iter().map(|v| v as f32).collect();
    let mut want = vec![0.0f64; m * n];
    let wide = |v: &[f32]| -> Vec<f64> { v.iter().map(|&x| x as f64).collect() };
    gemm_ref(
        false,
        false,
        m,
        n,
        k,
        1.0,
        &wide(&a),
        m,
        &wide(&b),
        k,
        0.0,
        &mut want,
        m,
    );
    let mut results = Vec::new();
    for stream in [ctx.default_stream(), ctx.per_thread_stream(), borrowed] {
        let blas = CudaBlas::new(stream.clone()).unwrap();
        let (da, db) = (stream.clone_htod(&a).unwrap(), stream.clone_htod(&b).unwrap());
        let mut dc = stream.clone_htod(&vec![f32::NAN; m * n]).unwrap();
        let cfg = GemmConfig {
            transa: op(false),
            transb: op(false),
            m: m as i32,
            n: n as i32,
            k: k as i32,
            alpha: 1.0f32,
            lda: m as i32,
            ldb: k as i32,
            beta: 0.0,
            ldc: m as i32,
        };
        // SAFETY: the buffers hold the matrices the configuration describes.
        unsafe { blas.gemm(cfg, &da, &db, &mut dc) }.unwrap();
        let got = stream.clone_dtoh(&dc).unwrap();
        for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
            assert!(
                (g as f64 - w).abs() <= 1e-5 * k as f64 * (1.0 + w.abs()),
                "C[{i}] = {g}, want {w}"
            );
        }
        results.push(got);
    }
    assert_eq!(results[0], results[1], "per-thread stream");
    assert_eq!(results[0], results[2], "borrowed stream");
    checksum(
        "gemm_on_per_thread_and_borrowed_streams",
        results[0].iter().map(|&v| v as f64),
    );
}

#[test]
fn gemm_f32() {
    run_gemm::<f32>("gemm_f32");
}
#[test]
fn gemm_f64() {
    run_gemm::<f64>("gemm_f64");
}
#[test]
fn gemm_f16() {
    run_gemm::<f16>("gemm_f16");
}
#[test]
fn gemm_bf16() {
    run_gemm::<bf16>("gemm_bf16");
}

#[test]
fn gemm_strided_batched_f32() {
    let Some(ctx) = gpu("gemm_strided_batched_f32") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    let blas = CudaBlas::new(stream.clone()).unwrap();
    let (m, n, k, batch) = (20usize, 18usize, 24usize, 3usize);
    let (sa, sb, sc) = (m * k + 5, k * n + 7, m * n + 3);
    let a: Vec<f32> = inputs(sa * batch, 21).into_iter().map(|v| v as f32).collect();
    let b: Vec<f32> = inputs(sb * batch, 22).into_iter().map(|v| v as f32).collect();
    let da = stream.clone_htod(&a).unwrap();
    let db = stream.clone_htod(&b).unwrap();
    let mut dc = stream.alloc_zeros::<f32>(sc * batch).unwrap();
    let cfg = StridedBatchedConfig {
        gemm: GemmConfig {
            transa: cublasOperation_t::CUBLAS_OP_N,
            transb: cublasOperation_t::CUBLAS_OP_N,
            m: m as i32,
            n: n as i32,
            k: k as i32,
            alpha: 1.0f32,
            lda: m as i32,
            ldb: k as i32,
            beta: 0.0,
            ldc: m as i32,
        },
        batch_size: batch as i32,
        stride_a: sa as i64,
        stride_b: sb as i64,
        stride_c: sc as i64,
    };
    // SAFETY: the buffers hold `batch` matrices at the given strides.
    unsafe { blas.gemm_strided_batched(cfg, &da, &db, &mut dc) }.unwrap();
    let got = stream.clone_dtoh(&dc).unwrap();
    let a64: Vec<f64> = a.iter().map(|&v| v as f64).collect();
    let b64: Vec<f64> = b.iter().map(|&v| v as f64).collect();
    for z in 0..batch {
        let mut want = vec![0.0; m * n];
        gemm_ref(
            false,
            false,
            m,
            n,
            k,
            1.0,
            &a64[z * sa..],
            m,
            &b64[z * sb..],
            k,
            0.0,
            &mut want,
            m,
        );
        for (i, w) in want.iter().enumerate() {
            let g = got[z * sc + i] as f64;
            assert!((g - w).abs() <= 1e-4 * (1.0 + w.abs()), "batch {z} [{i}]: {g} vs {w}");
        }
    }
    checksum("gemm_strided_batched_f32", got.iter().map(|&v| v as f64));
}

fn run_gemv<T: Elem>(name: &str)
where
    CudaBlas: Gemv<T>,
{
    let Some(ctx) = gpu(name) else { return };
    let stream = ctx.default_stream();
    let blas = CudaBlas::new(stream.clone()).unwrap();
    let (m, n, lda) = (33usize, 17usize, 35usize);
    let a: Vec<T> = inputs(lda * n, 31).into_iter().map(T::from_f64).collect();
    let da = stream.clone_htod(&a).unwrap();
    let mut all = Vec::new();
    for trans in [false, true] {
        let (xlen, ylen) = if trans { (m, n) } else { (n, m) };
        let incx = 2usize;
        let x: Vec<T> = inputs(xlen * incx, 32).into_iter().map(T::from_f64).collect();
        let y0: Vec<T> = inputs(ylen, 33).into_iter().map(T::from_f64).collect();
        let dx = stream.clone_htod(&x).unwrap();
        let mut dy = stream.clone_htod(&y0).unwrap();
        let cfg = GemvConfig {
            trans: op(trans),
            m: m as i32,
            n: n as i32,
            alpha: T::from_f64(2.0),
            lda: lda as i32,
            incx: incx as i32,
            beta: T::from_f64(-1.0),
            incy: 1,
        };
        // SAFETY: the buffers hold the matrix and vectors the configuration describes.
        unsafe { blas.gemv(cfg, &da, &dx, &mut dy) }.unwrap();
        let got: Vec<f64> = stream.clone_dtoh(&dy).unwrap().iter().map(|v| v.to_f64()).collect();
        for (t, g) in got.iter().enumerate() {
            let mut acc = 0.0;
            for s in 0..xlen {
                let av = if trans { a[s + t * lda] } else { a[t + s * lda] };
                acc += av.to_f64() * x[s * incx].to_f64();
            }
            let w = 2.0 * acc - y0[t].to_f64();
            assert!(
                (g - w).abs() <= T::TOL * 40.0 * (1.0 + w.abs()),
                "{name} trans={trans} [{t}]: {g} vs {w}"
            );
        }
        all.extend(got);
    }
    checksum(name, all);
}

#[test]
fn gemv_f32() {
    run_gemv::<f32>("gemv_f32");
}
#[test]
fn gemv_f64() {
    run_gemv::<f64>("gemv_f64");
}
