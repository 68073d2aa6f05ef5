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

// ---------------------------------------------------------------------------------------------
// CPU: configuration types and nvrtc (no GPU needed)
// ---------------------------------------------------------------------------------------------

#[test]
fn launch_config_for_num_elems() {
    let cfg = LaunchConfig::for_num_elems(1025);
    assert_eq!(cfg.grid_dim, (2, 1, 1));
    assert_eq!(cfg.block_dim, (1024, 1, 1));
    assert_eq!(cfg.shared_mem_bytes, 0);
    assert_eq!(LaunchConfig::for_num_elems(1024).grid_dim, (1, 1, 1));
}

#[test]
fn blas_configs_are_plain_structs() {
    let g = GemmConfig {
        transa: cublasOperation_t::CUBLAS_OP_T,
        transb: cublasOperation_t::CUBLAS_OP_N,
        m: 4,
        n: 5,
        k: 6,
        alpha: 1.0f32,
        lda: 6,
        ldb: 6,
        beta: 0.0,
        ldc: 4,
    };
    let b = StridedBatchedConfig {
        gemm: g,
        batch_size: 2,
        stride_a: 24,
        stride_b: 30,
        stride_c: 20,
    };
    let v = GemvConfig {
        trans: cublasOperation_t::CUBLAS_OP_N,
        m: 3,
        n: 2,
        alpha: 1.0f64,
        lda: 3,
        incx: 1,
        beta: 0.0,
        incy: 1,
    };
    assert_eq!(b.gemm.transa, cublasOperation_t::CUBLAS_OP_T);
    assert_eq!((b.batch_size, v.m, v.n), (2, 3, 2));
    assert_eq!(cublasOperation_t::CUBLAS_OP_N as u32, 0);
}

#[test]
fn nvrtc_compiles_to_ptx() {
    let opts = CompileOptions {
        ftz: Some(true),
        name: Some("suite.cu".into()),
        ..Default::default()
    };
    let Some(ptx) = compiled("nvrtc_compiles_to_ptx", || compile_ptx_with_opts(KERNELS, opts)) else {
        return;
    };
    let src = ptx.to_src();
    for entry in ["axpy", "affine", "inc", "use_coeff"] {
        assert!(src.contains(&format!(".entry {entry}")), "{entry} missing from PTX");
    }
    // Ptx from text round-trips.
    let again: Ptx = src.clone().into();
    assert_eq!(again.to_src(), src);
    let _ = Ptx::from_src("x");
    let _ = Ptx::from_file("kernels.ptx");
}

#[test]
fn nvrtc_reports_the_log() {
    let bad = "extern \"C\" __global__ void broken(float *x) { x[0] = undeclared; }";
    let outcome = std::panic::catch_unwind(|| compile_ptx(bad));
    match outcome {
        Ok(Err(CompileError::CompileError { log, .. })) => {
            let log = log.to_string_lossy();
            assert!(log.contains("undeclared"), "{log}");
        }
        Ok(Err(e)) if format!("{e:?}").contains("LibraryNotFound") => {
            say("SKIPPED (no libnvrtc): nvrtc_reports_the_log".into())
        }
        Err(_) => say("SKIPPED (no libnvrtc): nvrtc_reports_the_log".into()),
        Ok(other) => panic!("expected a compile error, got {other:?}"),
    }
}

/// compat only: a missing driver entry point or library maps onto a code, keeping the message.
#[cfg(not(feature = "legacy"))]
#[test]
fn missing_pieces_are_errors_not_panics() {
    let e = DriverError::from_cudrv(cudrv::Error::MissingSymbol {
        name: "cuMemAllocAsync",
        library: "libcuda.so.1".into(),
    });
    assert_eq!(e, DriverError(sys::CUresult::CUDA_ERROR_NOT_FOUND));
    assert!(e.detail().unwrap().contains("cuMemAllocAsync"));
    // Without a driver, contexts are errors too.
    if cudrv::Device::count().is_err() {
        let err = CudaContext::new(0).unwrap_err();
        assert!(err.detail().is_some(), "{err:?}");
    }
    let _ = nvrtc::version();
}

// ---------------------------------------------------------------------------------------------
// GPU
// ---------------------------------------------------------------------------------------------

#[test]
fn context_basics() {
    let Some(ctx) = gpu("context_basics") else { return };
    assert!(CudaContext::device_count().unwrap() >= 1);
    assert_eq!(ctx.ordinal(), 0);
    assert!(!ctx.name().unwrap().is_empty());
    let (major, minor) = ctx.compute_capability().unwrap();
    let sms = ctx
        .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        .unwrap();
    assert!(sms > 0);
    ctx.bind_to_thread().unwrap();
    ctx.synchronize().unwrap();
    let s = ctx.new_stream().unwrap();
    assert!(Arc::ptr_eq(s.context(), &ctx) || **s.context() == *ctx);
    checksum("context_basics", [(major * 10 + minor) as f64, sms as f64]);
}

#[test]
#[allow(deprecated)]
fn copies_and_slices() {
    let Some(ctx) = gpu("copies_and_slices") else { return };
    let stream = ctx.default_stream();
    let host: Vec<f32> = inputs(1000, 1).into_iter().map(|v| v as f32).collect();
    let a = stream.memcpy_stod(&host).unwrap();
    assert_eq!(a.len(), 1000);
    assert_eq!(stream.memcpy_dtov(&a).unwrap(), host);
    let b = stream.clone_htod(&host[..500]).unwrap();
    assert_eq!(stream.clone_dtoh(&b).unwrap(), &host[..500]);
    // memcpy_htod into a view, memcpy_dtoh into an array.
    let mut c = stream.alloc_zeros::<f32>(8).unwrap();
    stream
        .memcpy_htod(&[1.0f32, 2.0, 3.0, 4.0], &mut c.slice_mut(2..6))
        .unwrap();
    let mut arr = [0.0f32; 8];
    stream.memcpy_dtoh(&c, &mut arr).unwrap();
    assert_eq!(arr, [0.0, 0.0, 1.0, 2.0, 3.0, 4.0, 0.0, 0.0]);
    // dtod and clones.
    let mut d = stream.alloc_zeros::<f32>(1000).unwrap();
    stream.memcpy_dtod(&a, &mut d).unwrap();
    let e = stream.clone_dtod(&d.slice(100..200)).unwrap();
    assert_eq!(stream.clone_dtoh(&e).unwrap(), &host[100..200]);
    let f = d.try_clone().unwrap();
    stream.memset_zeros(&mut d).unwrap();
    assert!(stream.clone_dtoh(&d).unwrap().iter().all(|&v| v == 0.0));
    assert_eq!(stream.clone_dtoh(&f).unwrap(), host);
    // split_at, transmute, leak/upgrade.
    let (left, right) = f.split_at(400);
    assert_eq!((left.len(), right.len()), (400, 600));
    assert_eq!(stream.clone_dtoh(&right.slice(..2)).unwrap(), &host[400..402]);
    // SAFETY: any f32 bit pattern is a valid u32.
    let bits = unsafe { f.transmute::<u32>(1000) }.unwrap();
    assert_eq!(stream.clone_dtoh(&bits).unwrap()[0], host[0].to_bits());
    // SAFETY: as above; more bytes than the slice has is refused.
    assert!(unsafe { f.transmute::<u64>(501) }.is_none());
    assert!(f.try_slice(999..1001).is_none());
    let n = f.len();
    let raw = f.leak();
    // SAFETY: the pointer came from leak with n elements.
    let g: CudaSlice<f32> = unsafe { stream.upgrade_device_ptr(raw, n) };
    assert_eq!(stream.clone_dtoh(&g).unwrap(), host);
    let v: Vec<f32> = g.try_into().unwrap();
    checksum(
        "copies_and_slices",
        v.iter().map(|&x| x as f64).chain(arr.iter().map(|&x| x as f64)),
    );
}

#[derive(Clone, Copy)]
enum Val {
    I32(i32),
    F32(f32),
    F64(f64),
    U64(u64),
    I16(i16),
    U8(u8),
    I64(i64),
}

impl Val {
    fn nth(k: usize) -> Val {
        let x = k as i64 + 1;
        match k % 7 {
            0 => Val::I32(-3 * x as i32),
            1 => Val::F32(1.5 * x as f32),
            2 => Val::F64(0.25 * x as f64),
            3 => Val::U64(1_000_000_007 * x as u64),
            4 => Val::I16(-(x as i16)),
            5 => Val::U8(200 + x as u8),
            _ => Val::I64(-1_000_000_000_000 * x),
        }
    }
    fn c_type(&self) -> &'static str {
        match self {
            Val::I32(_) => "int",
            Val::F32(_) => "float",
            Val::F64(_) => "double",
            Val::U64(_) => "unsigned long long",
            Val::I16(_) => "short",
            Val::U8(_) => "unsigned char",
            Val::I64(_) => "long long",
        }
    }
    fn as_f64(&self) -> f64 {
        match *self {
            Val::I32(v) => v as f64,
            Val::F32(v) => v as f64,
            Val::F64(v) => v,
            Val::U64(v) => v as f64,
            Val::I16(v) => v as f64,
            Val::U8(v) => v as f64,
            Val::I64(v) => v as f64,
        }
    }
}

/// Launches with 2 to 15 arguments: a device pointer and 1 to 14 scalars of mixed types, all
/// passed by reference to the builder.
#[test]
fn builder_launches_with_2_to_15_args() {
    let Some(ctx) = gpu("builder_launches_with_2_to_15_args") else {
        return;
    };
    let mut src = String::new();
    for total in 2..=15usize {
        let vals: Vec<Val> = (0..total - 1).map(Val::nth).collect();
        let params: Vec<String> = vals
            .iter()
            .enumerate()
            .map(|(i, v)| format!("{} a{i}", v.c_type()))
            .collect();
        let sum: Vec<String> = (0..vals.len()).map(|i| format!("(double)a{i}")).collect();
        src += &format!(
            "extern \"C\" __global__ void args{total}(double *out, {}) {{ out[{total}] = {}; }}\n",
            params.join(", "),
            sum.join(" + ")
        );
    }
    let Some(ptx) = compiled("builder_launches_with_2_to_15_args", || compile_ptx(&src)) else {
        return;
    };
    let module = ctx.load_module(ptx).unwrap();
    let stream = ctx.new_stream().unwrap();
    let mut out = stream.alloc_zeros::<f64>(16).unwrap();
    let one = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (1, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut expected = [0.0f64; 16];
    for (total, expect) in expected.iter_mut().enumerate().skip(2) {
        let f = module.load_function(&format!("args{total}")).unwrap();
        let vals: Vec<Val> = (0..total - 1).map(Val::nth).collect();
        *expect = vals.iter().map(Val::as_f64).sum();
        let mut b = stream.launch_builder(&f);
        b.arg(&mut out);
        for v in &vals {
            match v {
                Val::I32(x) => b.arg(x),
                Val::F32(x) => b.arg(x),
                Val::F64(x) => b.arg(x),
                Val::U64(x) => b.arg(x),
                Val::I16(x) => b.arg(x),
                Val::U8(x) => b.arg(x),
                Val::I64(x) => b.arg(x),
            };
        }
        // SAFETY: argsN(double*, ...) takes exactly these arguments in this order.
        unsafe { b.launch(one) }.unwrap();
    }
    let got = stream.clone_dtoh(&out).unwrap();
    assert_eq!(got[..], expected[..], "argsN results at index N");
    checksum("builder_launches_with_2_to_15_args", got);
}

#[test]
fn user_struct_device_repr() {
    let Some(kit) = Kit::new("user_struct_device_repr") else {
        return;
    };
    let n = 3000usize;
    let host: Vec<f32> = inputs(n, 2).into_iter().map(|v| v as f32).collect();
    let input = kit.stream.clone_htod(&host).unwrap();
    let mut out = kit.stream.alloc_zeros::<f32>(n).unwrap();
    let p = Params {
        n: n as u32,
        scale: 2.5,
        offset: -0.75,
    };
    let f = kit.f("affine");
    let mut b = kit.stream.launch_builder(&f);
    b.arg(&p).arg(&input).arg(&mut out);
    // SAFETY: affine(Params, const float*, float*), n elements each.
    unsafe { b.launch(LaunchConfig::for_num_elems(n as u32)) }.unwrap();
    let got = kit.stream.clone_dtoh(&out).unwrap();
    for i in 0..n {
        let want = (host[i] as f64 * 2.5 - 0.75) as f32;
        assert!(
            (got[i] - want).abs() <= 1e-6 * (1.0 + want.abs()),
            "{i}: {} vs {want}",
            got[i]
        );
    }
    // A slice of structs.
    let ps: Vec<Params> = (0..64)
        .map(|i| Params {
            n: i,
            scale: 0.5,
            offset: i as f64,
        })
        .collect();
    let dev = kit.stream.clone_htod(&ps).unwrap();
    let zeros = kit.stream.alloc_zeros::<Params>(2).unwrap();
    assert_eq!(kit.stream.clone_dtoh(&zeros).unwrap(), vec![Params::default(); 2]);
    let mut out2 = kit.stream.alloc_zeros::<f32>(64).unwrap();
    let count = 64i32;
    let f = kit.f("affine_many");
    let mut b = kit.stream.launch_builder(&f);
    b.arg(&dev).arg(&mut out2).arg(&count);
    // SAFETY: affine_many(const Params*, float*, int).
    unsafe { b.launch(LaunchConfig::for_num_elems(64)) }.unwrap();
    let got2 = kit.stream.clone_dtoh(&out2).unwrap();
    assert_eq!(got2[10], 15.0);
    checksum("user_struct_device_repr", got.iter().chain(&got2).map(|&x| x as f64));
}

#[test]
fn launches_with_views() {
    let Some(kit) = Kit::new("launches_with_views") else {
        return;
    };
    let n = 2048usize;
    let mut y = kit.stream.alloc_zeros::<f32>(n).unwrap();
    let x = kit.stream.clone_htod(&vec![1.0f32; n]).unwrap();
    let f = kit.f("axpy");
    let half = (n / 2) as i32;
    {
        let (mut lo, mut hi) = y.split_at_mut(n / 2);
        let xv = x.slice(..n / 2);
        let (a_lo, a_hi) = (2.0f32, 3.0f32);
        let mut b = kit.stream.launch_builder(&f);
        b.arg(&mut lo).arg(&xv).arg(&a_lo).arg(&half);
        // SAFETY: axpy(float*, const float*, float, int) over n/2 elements.
        unsafe { b.launch(LaunchConfig::for_num_elems(half as u32)) }.unwrap();
        let xv2 = x.slice(n / 2..);
        let mut b = kit.stream.launch_builder(&f);
        b.arg(&mut hi).arg(&xv2).arg(&a_hi).arg(&half);
        // SAFETY: as above.
        unsafe { b.launch(LaunchConfig::for_num_elems(half as u32)) }.unwrap();
    }
    let got = kit.stream.clone_dtoh(&y).unwrap();
    assert!(got[..n / 2].iter().all(|&v| v == 2.0));
    assert!(got[n / 2..].iter().all(|&v| v == 3.0));
    checksum("launches_with_views", got.iter().map(|&v| v as f64));
}

#[test]
fn streams_events_and_cross_stream_use() {
    let Some(kit) = Kit::new("streams_events_and_cross_stream_use") else {
        return;
    };
    let s1 = kit.ctx.new_stream().unwrap();
    let s2 = s1.fork().unwrap();
    let n = 1 << 20;
    let mut x = s1.alloc_zeros::<f32>(n).unwrap();
    let f = kit.f("inc");
    let ni = n as i32;
    let start = s2.record_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT)).unwrap();
    // x belongs to s1 but is incremented on s2, three times.
    for _ in 0..3 {
        let mut b = s2.launch_builder(&f);
        b.arg(&mut x).arg(&ni);
        // SAFETY: inc(float*, int) over n elements.
        unsafe { b.launch(LaunchConfig::for_num_elems(n as u32)) }.unwrap();
    }
    let end = s2.record_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT)).unwrap();
    let ms = start.elapsed_ms(&end).unwrap();
    assert!(ms >= 0.0);
    // Back on s1: join, then one more increment there.
    s1.join(&s2).unwrap();
    let ev = s2.record_event(None).unwrap();
    s1.wait(&ev).unwrap();
    let mut b = s1.launch_builder(&f);
    b.arg(&mut x).arg(&ni);
    // SAFETY: as above.
    unsafe { b.launch(LaunchConfig::for_num_elems(n as u32)) }.unwrap();
    let got = s1.clone_dtoh(&x).unwrap();
    assert!(got.iter().all(|&v| v == 4.0), "{}", got[0]);
    ev.synchronize().unwrap();
    s2.synchronize().unwrap();
    checksum(
        "streams_events_and_cross_stream_use",
        got.iter().step_by(1024).map(|&v| v as f64),
    );
}

#[test]
fn graph_capture_and_replay() {
    let Some(kit) = Kit::new("graph_capture_and_replay") else {
        return;
    };
    // cudarc's own idiom (its test_end_capture_flags): with all accesses on one stream, switch
    // per-slice event tracking off before creating the stream and the buffers, so that no launch
    // inside the capture waits on an event recorded outside it. A no-op in compat, which has no
    // per-slice events.
    // SAFETY: every access to `x` below is on `stream`.
    unsafe { kit.ctx.disable_event_tracking() };
    let stream = kit.ctx.new_stream().unwrap();
    let n = 4096usize;
    let mut x = stream.alloc_zeros::<f32>(n).unwrap();
    stream.synchronize().unwrap();
    let f = kit.f("inc");
    let ni = n as i32;
    stream
        .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .unwrap();
    for _ in 0..2 {
        let mut b = stream.launch_builder(&f);
        b.arg(&mut x).arg(&ni);
        // SAFETY: inc(float*, int) over n elements.
        unsafe { b.launch(LaunchConfig::for_num_elems(n as u32)) }.unwrap();
    }
    let graph = stream
        .end_capture(sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)
        .unwrap()
        .expect("a graph");
    graph.launch().unwrap();
    graph.launch().unwrap();
    let got = stream.clone_dtoh(&x).unwrap();
    assert!(got.iter().all(|&v| v == 4.0), "{}", got[0]);
    checksum("graph_capture_and_replay", got.iter().map(|&v| v as f64));
}

#[test]
fn pinned_host_memory() {
    let Some(ctx) = gpu("pinned_host_memory") else { return };
    let stream = ctx.new_stream().unwrap();
    let n = 1 << 16;
    // SAFETY: written below before it is read.
    let mut pinned = unsafe { ctx.alloc_pinned::<f32>(n) }.unwrap();
    for (i, v) in pinned.as_mut_slice().unwrap().iter_mut().enumerate() {
        *v = i as f32 * 0.5;
    }
    let dev = stream.clone_htod(&pinned).unwrap();
    // SAFETY: written by the copy below before it is read.
    let mut back = unsafe { ctx.alloc_pinned::<f32>(n) }.unwrap();
    stream.memcpy_dtoh(&dev, &mut back).unwrap();
    let got = back.as_slice().unwrap();
    assert_eq!(got[1000], 500.0);
    assert_eq!(pinned.len(), n);
    checksum("pinned_host_memory", got.iter().map(|&v| v as f64));
}

#[test]
fn module_globals_and_function_attributes() {
    let Some(kit) = Kit::new("module_globals_and_function_attributes") else {
        return;
    };
    let stream = kit.ctx.new_stream().unwrap();
    {
        let mut coeff = kit.module.get_global("coeff", &stream).unwrap();
        assert_eq!(coeff.len(), 16);
        let bytes: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        stream.memcpy_htod(&bytes, &mut coeff).unwrap();
    }
    let n = 64i32;
    let mut out = stream.alloc_zeros::<f32>(64).unwrap();
    let f = kit.f("use_coeff");
    let mut b = stream.launch_builder(&f);
    b.arg(&mut out).arg(&n);
    // SAFETY: use_coeff(float*, int) over 64 elements.
    unsafe { b.launch(LaunchConfig::for_num_elems(64)) }.unwrap();
    let got = stream.clone_dtoh(&out).unwrap();
    assert_eq!(got[5], 2.0 * 5.0);
    let regs = f.num_regs().unwrap();
    let max_threads = f.max_threads_per_block().unwrap();
    assert!(max_threads >= 32);
    let blocks = f.occupancy_max_active_blocks_per_multiprocessor(256, 0, None).unwrap();
    assert!(blocks >= 1);
    let attr = f
        .get_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
        .unwrap();
    assert_eq!(attr, max_threads);
    assert!(regs > 0);
    checksum("module_globals_and_function_attributes", got.iter().map(|&v| v as f64));
}

#[test]
fn invalid_launch_is_an_error() {
    let Some(kit) = Kit::new("invalid_launch_is_an_error") else {
        return;
    };
    let mut x = kit.stream.alloc_zeros::<f32>(4).unwrap();
    let n = 4i32;
    let f = kit.f("inc");
    let mut b = kit.stream.launch_builder(&f);
    b.arg(&mut x).arg(&n);
    let cfg = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (2048, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: the arguments match; the configuration is rejected before the kernel runs.
    let err = unsafe { b.launch(cfg) }.unwrap_err();
    assert_eq!(err, DriverError(sys::CUresult::CUDA_ERROR_INVALID_VALUE));
    say("CHECKSUM invalid_launch_is_an_error CUDA_ERROR_INVALID_VALUE".into());
    kit.stream.synchronize().unwrap();
}

// ---------------------------------------------------------------------------------------------
// BLAS
// ---------------------------------------------------------------------------------------------

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

#[test]
fn module_paths_match_cudarc() {
    // These paths are what cudarc users import; they must resolve under both features.
    let _: Option<driver::CudaGraph> = None;
    let _: Option<driver::CudaEvent> = None;
    let _: Option<driver::CudaView<'static, f32>> = None;
    let _: Option<driver::CudaViewMut<'static, f32>> = None;
    let _: Option<driver::PinnedHostSlice<f32>> = None;
    let _: Option<driver::LaunchArgs<'static>> = None;
    let _: fn(&CudaSlice<f32>) -> usize = DeviceSlice::<f32>::len;
    let _ = sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_WARP_SIZE;
    let _ = nvrtc::CompileOptions::default();
    let _: Option<nvrtc::Ptx> = None;
}
