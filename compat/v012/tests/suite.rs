//! The CudaDevice-era suite, written the way cudarc 0.9-0.12 users write: it compiles and runs
//! unchanged under the default feature (cudrv underneath) and under `legacy` (the real cudarc
//! 0.12.1). Inputs are fresh random values (seed printed; `CUDRV_SEED` replays), outputs are
//! poisoned first and compared with an f64 CPU reference; every GPU case runs twice and the two
//! results must be bit-identical.
//!
//! GPU tests print `SKIPPED (no GPU): <name>` without a GPU and fail under `REQUIRE_GPU=1`.

use std::sync::Arc;

use cudrv_compat_012::cublas::{
    sys::cublasOperation_t as Op, CudaBlas, Gemm, GemmConfig, Gemv, GemvConfig, StridedBatchedConfig,
};
use cudrv_compat_012::driver::{
    CudaDevice, CudaSlice, DevicePtr, DeviceRepr, DeviceSlice, LaunchAsync, LaunchConfig, ValidAsZeroBits,
};
use cudrv_compat_012::nvrtc::compile_ptx;
use half::{bf16, f16};

fn require_gpu() -> bool {
    std::env::var("REQUIRE_GPU").is_ok_and(|v| v == "1")
}

/// Device 0, or `None` (reported) without a GPU; probed through cudrv, which never panics.
fn gpu(name: &str) -> Option<Arc<CudaDevice>> {
    match cudrv::Device::count() {
        Ok(n) if n > 0 => Some(CudaDevice::new(0).expect("CudaDevice::new(0)")),
        other => {
            assert!(!require_gpu(), "REQUIRE_GPU=1 but no GPU: {other:?}");
            println!("SKIPPED (no GPU): {name}");
            None
        }
    }
}

/// A seeded generator (SplitMix64); the seed is fresh unless `CUDRV_SEED` is set.
struct Rng(u64);

impl Rng {
    fn new(name: &str) -> Rng {
        let seed = std::env::var("CUDRV_SEED")
            .ok()
            .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok())
            .unwrap_or_else(|| {
                let t = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap();
                t.as_nanos() as u64 ^ (name.len() as u64) << 32
            });
        println!("SEED {name} 0x{seed:016x}");
        Rng(seed)
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    /// Uniform in [-1, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
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
extern "C" __global__ void sum12(double *out, int a, int b, int c, int d, int e, int f, int g, int h, int i2, int j, long long k) {
    out[0] = a + b + c + d + e + f + g + h + i2 + j + (double)k;
}
"#;

#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
struct Params {
    n: u32,
    scale: f32,
    offset: f64,
}
// SAFETY: repr(C) plain data matching the kernel's struct.
unsafe impl DeviceRepr for Params {}
// SAFETY: all-zero bytes are a valid Params.
unsafe impl ValidAsZeroBits for Params {}

fn load(dev: &Arc<CudaDevice>) {
    let ptx = compile_ptx(KERNELS).expect("nvrtc");
    dev.load_ptx(ptx, "suite", &["axpy", "affine", "sum12"])
        .expect("load_ptx");
}

#[test]
fn copies_views_and_memset_match_the_host() {
    let Some(dev) = gpu("copies_views_and_memset_match_the_host") else {
        return;
    };
    let mut rng = Rng::new("copies");
    for _ in 0..20 {
        let n = 1 + rng.below(5000);
        let host: Vec<f32> = (0..n).map(|_| rng.unit() as f32).collect();
        let a = dev.htod_copy(host.clone()).unwrap();
        assert_eq!(a.len(), n);
        assert_eq!(dev.dtoh_sync_copy(&a).unwrap(), host);
        // A view of a random range, copied out and through dtod into a poisoned slice.
        let (lo, hi) = {
            let x = rng.below(n + 1);
            let y = rng.below(n + 1);
            (x.min(y), x.max(y))
        };
        let view = a.slice(lo..hi);
        assert_eq!(view.len(), hi - lo);
        assert_eq!(dev.dtoh_sync_copy(&view).unwrap(), host[lo..hi]);
        let mut b = dev.htod_sync_copy(&vec![f32::NAN; n]).unwrap();
        dev.dtod_copy(&view, &mut b.slice_mut(lo..hi)).unwrap();
        let got = dev.dtoh_sync_copy(&b).unwrap();
        assert!(
            got[..lo].iter().chain(&got[hi..]).all(|v| v.is_nan()),
            "outside the range untouched"
        );
        assert_eq!(got[lo..hi], host[lo..hi]);
        // Zeroing a sub-range, then a clone.
        dev.memset_zeros(&mut b.slice_mut(lo..hi)).unwrap();
        let c = b.clone();
        let mut out = vec![1.0f32; n];
        dev.dtoh_sync_copy_into(&c, &mut out).unwrap();
        assert!(out[lo..hi].iter().all(|&v| v == 0.0));
        let z = dev.alloc_zeros::<Params>(3).unwrap();
        assert_eq!(z.num_bytes(), 3 * std::mem::size_of::<Params>());
        let back: Vec<f32> = c.try_into().unwrap();
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&back), bits(&out), "NaN poison outside the range compares by bits");
    }
    dev.synchronize().unwrap();
}

#[test]
fn launches_take_tuples_structs_and_views() {
    let Some(dev) = gpu("launches_take_tuples_structs_and_views") else {
        return;
    };
    load(&dev);
    assert!(dev.has_func("suite", "axpy"));
    assert!(!dev.has_func("suite", "nope"));
    assert!(dev.get_func("suite", "nope").is_none());
    let mut rng = Rng::new("launch");
    for round in 0..10 {
        let n = 1 + rng.below(100_000);
        let x: Vec<f32> = (0..n).map(|_| rng.unit() as f32).collect();
        let y: Vec<f32> = (0..n).map(|_| rng.unit() as f32).collect();
        let a = rng.unit() as f32;
        let run = || -> Vec<f32> {
            let xd = dev.htod_copy(x.clone()).unwrap();
            let mut yd = dev.htod_copy(y.clone()).unwrap();
            let f = dev.get_func("suite", "axpy").unwrap();
            // SAFETY: the arguments match axpy(float*, const float*, float, int).
            unsafe { f.launch(LaunchConfig::for_num_elems(n as u32), (&mut yd, &xd, a, n as i32)) }.unwrap();
            dev.sync_reclaim(yd).unwrap()
        };
        let (first, second) = (run(), run());
        assert_eq!(first, second, "round {round}: two runs differ");
        for i in 0..n {
            let want = a as f64 * x[i] as f64 + y[i] as f64;
            assert!((first[i] as f64 - want).abs() <= 1e-6 * (1.0 + want.abs()), "axpy[{i}]");
        }
        // A struct by value and a view as a pointer, on a forked stream.
        let p = Params {
            n: (n / 2) as u32,
            scale: rng.unit() as f32,
            offset: rng.unit(),
        };
        let xd = dev.htod_copy(x.clone()).unwrap();
        let mut out = dev.htod_copy(vec![f32::NAN; n]).unwrap();
        let stream = dev.fork_default_stream().unwrap();
        let f = dev.get_func("suite", "affine").unwrap();
        let view = xd.slice(n - n / 2..);
        // SAFETY: the arguments match affine(Params, const float*, float*).
        unsafe { f.launch_on_stream(&stream, LaunchConfig::for_num_elems(n as u32), (p, &view, &mut out)) }.unwrap();
        dev.wait_for(&stream).unwrap();
        let got = dev.dtoh_sync_copy(&out).unwrap();
        for i in 0..n / 2 {
            let want = x[n - n / 2 + i] as f64 * p.scale as f64 + p.offset;
            assert!((got[i] as f64 - want).abs() <= 1e-6 * (1.0 + want.abs()), "affine[{i}]");
        }
        assert!(got[n / 2..].iter().all(|v| v.is_nan()));
    }
    // Eleven arguments, one of them 64-bit.
    let mut out = dev.alloc_zeros::<f64>(1).unwrap();
    let f = dev.get_func("suite", "sum12").unwrap();
    let cfg = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (1, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: the arguments match sum12's parameters.
    unsafe {
        f.launch(
            cfg,
            (
                &mut out,
                1i32,
                2i32,
                3i32,
                4i32,
                5i32,
                6i32,
                7i32,
                8i32,
                9i32,
                10i32,
                1i64 << 40,
            ),
        )
    }
    .unwrap();
    assert_eq!(dev.dtoh_sync_copy(&out).unwrap(), vec![55.0 + (1u64 << 40) as f64]);
}

/// Bad input: an error from the call, never a panic (cudarc 0.12 panics on a length mismatch).
#[cfg(not(feature = "legacy"))]
#[test]
fn bad_input_is_an_error() {
    use cudrv_compat_012::driver::{sys::CUresult, DriverError};
    let Some(dev) = gpu("bad_input_is_an_error") else {
        return;
    };
    let a = dev.htod_copy(vec![1.0f32; 8]).unwrap();
    let mut b = dev.alloc_zeros::<f32>(7).unwrap();
    let e = dev.dtod_copy(&a, &mut b).unwrap_err();
    assert_eq!(e, DriverError(CUresult::CUDA_ERROR_INVALID_VALUE));
    assert!(e.to_string().contains("7") && e.to_string().contains("8"), "{e}");
    assert!(dev.htod_sync_copy_into(&[1.0f32; 3], &mut b).is_err());
    assert!(dev.dtoh_sync_copy_into(&a, &mut [0.0f32; 2]).is_err());
    load(&dev);
    let e = dev
        .load_ptx(compile_ptx(KERNELS).unwrap(), "other", &["axpy", "missing"])
        .unwrap_err();
    assert_eq!(e, DriverError(CUresult::CUDA_ERROR_NOT_FOUND));
    assert!(!dev.has_func("other", "axpy"), "a failed load registers nothing");
    let bad = cudrv_compat_012::nvrtc::Ptx::from_src(".version 8.0\n.target sm_80\nthis is not ptx");
    assert!(dev.load_ptx(bad, "bad", &[]).is_err());
    // Too many threads per block: refused before the driver sees it.
    let f = dev.get_func("suite", "axpy").unwrap();
    let cfg = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (4096, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut y = dev.alloc_zeros::<f32>(1).unwrap();
    // SAFETY: refused before launch; the arguments would match.
    let e = unsafe { f.launch(cfg, (&mut y, &a, 1.0f32, 1i32)) }.unwrap_err();
    assert_eq!(e, DriverError(CUresult::CUDA_ERROR_INVALID_VALUE));
    let blas = CudaBlas::new(dev.clone()).unwrap();
    let cfg = gemm_cfg(Op::CUBLAS_OP_N, Op::CUBLAS_OP_N, 3, 3, 3, 1.0f32, 0.0);
    let (x, y2) = (dev.alloc_zeros::<f32>(9).unwrap(), dev.alloc_zeros::<f32>(9).unwrap());
    let mut small = dev.alloc_zeros::<f32>(8).unwrap();
    // SAFETY: refused before launch (C is one element short).
    let e = unsafe { blas.gemm(cfg, &x, &y2, &mut small) }.unwrap_err();
    assert!(e.detail().unwrap().contains("needs 9"), "{e:?}");
}

fn gemm_cfg<T>(transa: Op, transb: Op, m: i32, n: i32, k: i32, alpha: T, beta: T) -> GemmConfig<T> {
    let lda = if transa == Op::CUBLAS_OP_N { m } else { k };
    let ldb = if transb == Op::CUBLAS_OP_N { k } else { n };
    GemmConfig {
        transa,
        transb,
        m,
        n,
        k,
        alpha,
        lda: lda.max(1),
        ldb: ldb.max(1),
        beta,
        ldc: m.max(1),
    }
}

/// Conversions the BLAS checks need for every element type.
trait Elem: Copy + DeviceRepr + ValidAsZeroBits + PartialEq + std::fmt::Debug + Unpin + Default + 'static {
    fn of(v: f64) -> Self;
    fn to(self) -> f64;
    /// Relative error bound per unit of k.
    const EPS: f64;
}
impl Elem for f32 {
    fn of(v: f64) -> Self {
        v as f32
    }
    fn to(self) -> f64 {
        self as f64
    }
    // TF32 tensor cores may serve f32 GEMM in cudrv::blas only when asked; plain f32 here.
    const EPS: f64 = 1e-5;
}
impl Elem for f64 {
    fn of(v: f64) -> Self {
        v
    }
    fn to(self) -> f64 {
        self
    }
    const EPS: f64 = 1e-13;
}
impl Elem for f16 {
    fn of(v: f64) -> Self {
        f16::from_f64(v)
    }
    fn to(self) -> f64 {
        self.to_f64()
    }
    const EPS: f64 = 2e-3;
}
impl Elem for bf16 {
    fn of(v: f64) -> Self {
        bf16::from_f64(v)
    }
    fn to(self) -> f64 {
        self.to_f64()
    }
    const EPS: f64 = 1.6e-2;
}

/// Random strided-batched GEMMs of every transpose pair against an f64 reference.
fn gemm_cases<T: Elem>(dev: &Arc<CudaDevice>, name: &str)
where
    CudaBlas: Gemm<T>,
{
    let blas = CudaBlas::new(dev.clone()).unwrap();
    let mut rng = Rng::new(name);
    let ops = [Op::CUBLAS_OP_N, Op::CUBLAS_OP_T];
    for case in 0..24 {
        let (ta, tb) = (ops[case % 2], ops[(case / 2) % 2]);
        let (m, n, k) = (1 + rng.below(300), 1 + rng.below(300), 1 + rng.below(300));
        let batch = 1 + rng.below(3);
        let (alpha, beta) = (rng.unit(), if case % 3 == 0 { 0.0 } else { rng.unit() });
        let g = gemm_cfg(ta, tb, m as i32, n as i32, k as i32, T::of(alpha), T::of(beta));
        let (sa, sb, sc) = (m * k, k * n, m * n);
        let a: Vec<T> = (0..sa * batch).map(|_| T::of(rng.unit())).collect();
        let b: Vec<T> = (0..sb * batch).map(|_| T::of(rng.unit())).collect();
        let c0: Vec<T> = (0..sc * batch).map(|_| T::of(rng.unit())).collect();
        let cfg = StridedBatchedConfig {
            gemm: g,
            batch_size: batch as i32,
            stride_a: sa as i64,
            stride_b: sb as i64,
            stride_c: sc as i64,
        };
        let run = || -> Vec<T> {
            let (ad, bd) = (dev.htod_copy(a.clone()).unwrap(), dev.htod_copy(b.clone()).unwrap());
            let mut cd = dev.htod_copy(c0.clone()).unwrap();
            // SAFETY: the buffers hold the batch the configuration describes.
            unsafe { blas.gemm_strided_batched(cfg, &ad, &bd, &mut cd) }.unwrap();
            dev.dtoh_sync_copy(&cd).unwrap()
        };
        let (got, again) = (run(), run());
        assert_eq!(got, again, "{name} case {case}: two runs differ");
        let at = |p: usize, i: usize, l: usize| {
            if ta == Op::CUBLAS_OP_N {
                a[p * sa + i + l * m]
            } else {
                a[p * sa + l + i * k]
            }
            .to()
        };
        let bt = |p: usize, l: usize, j: usize| {
            if tb == Op::CUBLAS_OP_N {
                b[p * sb + l + j * k]
            } else {
                b[p * sb + j + l * n]
            }
            .to()
        };
        for _ in 0..64 {
            let (p, i, j) = (rng.below(batch), rng.below(m), rng.below(n));
            let (mut acc, mut mag) = (0.0, 0.0);
            for l in 0..k {
                acc += at(p, i, l) * bt(p, l, j);
                mag += (at(p, i, l) * bt(p, l, j)).abs();
            }
            let c_old = c0[p * sc + i + j * m].to();
            let want = alpha * acc + beta * c_old;
            let bound = T::EPS * (k as f64 + 2.0) * (alpha.abs() * mag + beta.abs() * c_old.abs()) + T::EPS;
            let have = got[p * sc + i + j * m].to();
            assert!(
                (have - want).abs() <= bound,
                "{name} case {case} {ta:?}{tb:?} {m}x{n}x{k} batch {batch}: C[{p}][{i},{j}] = {have}, want {want} (bound {bound})"
            );
        }
    }
}

fn gemv_cases<T: Elem>(dev: &Arc<CudaDevice>, name: &str)
where
    CudaBlas: Gemv<T>,
{
    let blas = CudaBlas::new(dev.clone()).unwrap();
    let mut rng = Rng::new(name);
    for case in 0..24 {
        let trans = if case % 2 == 0 {
            Op::CUBLAS_OP_N
        } else {
            Op::CUBLAS_OP_T
        };
        let (m, n) = (1 + rng.below(2000), 1 + rng.below(2000));
        let lda = m + rng.below(4);
        let (xl, yl) = if trans == Op::CUBLAS_OP_N { (n, m) } else { (m, n) };
        let (alpha, beta) = (rng.unit(), if case % 3 == 0 { 0.0 } else { rng.unit() });
        let a: Vec<T> = (0..lda * n).map(|_| T::of(rng.unit())).collect();
        let x: Vec<T> = (0..xl).map(|_| T::of(rng.unit())).collect();
        let y0: Vec<T> = (0..yl).map(|_| T::of(rng.unit())).collect();
        let cfg = GemvConfig {
            trans,
            m: m as i32,
            n: n as i32,
            alpha: T::of(alpha),
            lda: lda as i32,
            incx: 1,
            beta: T::of(beta),
            incy: 1,
        };
        let run = || -> Vec<T> {
            let (ad, xd) = (dev.htod_copy(a.clone()).unwrap(), dev.htod_copy(x.clone()).unwrap());
            let mut yd = dev.htod_copy(y0.clone()).unwrap();
            // SAFETY: the buffers hold what the configuration describes.
            unsafe { blas.gemv(cfg, &ad, &xd, &mut yd) }.unwrap();
            dev.dtoh_sync_copy(&yd).unwrap()
        };
        let (got, again) = (run(), run());
        assert_eq!(got, again, "{name} case {case}: two runs differ");
        let (alpha, beta) = (T::of(alpha).to(), T::of(beta).to());
        for r in 0..yl {
            let (mut acc, mut mag) = (0.0, 0.0);
            for l in 0..xl {
                let av = if trans == Op::CUBLAS_OP_N {
                    a[r + l * lda]
                } else {
                    a[l + r * lda]
                }
                .to();
                acc += av * x[l].to();
                mag += (av * x[l].to()).abs();
            }
            let want = alpha * acc + beta * y0[r].to();
            let bound = T::EPS * (xl as f64 + 2.0) * (alpha.abs() * mag + (beta * y0[r].to()).abs()) + T::EPS;
            assert!(
                (got[r].to() - want).abs() <= bound,
                "{name} case {case} {trans:?} {m}x{n}: y[{r}]"
            );
        }
    }
}

#[test]
fn gemm_matches_a_cpu_reference() {
    let Some(dev) = gpu("gemm_matches_a_cpu_reference") else {
        return;
    };
    gemm_cases::<f32>(&dev, "gemm f32");
    gemm_cases::<f64>(&dev, "gemm f64");
    gemm_cases::<f16>(&dev, "gemm f16");
    gemm_cases::<bf16>(&dev, "gemm bf16");
}

#[test]
fn gemv_matches_a_cpu_reference() {
    let Some(dev) = gpu("gemv_matches_a_cpu_reference") else {
        return;
    };
    gemv_cases::<f32>(&dev, "gemv f32");
    gemv_cases::<f64>(&dev, "gemv f64");
}

/// GEMV in f16 and bf16: cudrv::blas serves them (cudarc 0.12 has f32 and f64 only).
#[cfg(not(feature = "legacy"))]
#[test]
fn gemv_half_types_match_a_cpu_reference() {
    let Some(dev) = gpu("gemv_half_types_match_a_cpu_reference") else {
        return;
    };
    gemv_cases::<f16>(&dev, "gemv f16");
    gemv_cases::<bf16>(&dev, "gemv bf16");
}

#[test]
fn slices_keep_their_device_and_leak_round_trips() {
    let Some(dev) = gpu("slices_keep_their_device_and_leak_round_trips") else {
        return;
    };
    let a: CudaSlice<u32> = dev.htod_copy((0..1000).collect()).unwrap();
    assert_eq!(a.device().ordinal(), 0);
    let ptr = *a.device_ptr();
    let raw = a.leak();
    assert_eq!(raw, ptr);
    // SAFETY: the allocation came from leak and nobody else owns it.
    let back: CudaSlice<u32> = unsafe { dev.upgrade_device_ptr(raw, 1000) };
    assert_eq!(dev.dtoh_sync_copy(&back).unwrap(), (0..1000).collect::<Vec<_>>());
    let empty = dev.null::<f32>().unwrap();
    assert!(empty.is_empty());
    assert_eq!(dev.dtoh_sync_copy(&empty).unwrap(), Vec::<f32>::new());
}
