//! What cudrv asks of the driver, counted on the null driver (tests/fixtures/null_driver.c: one
//! H100-shaped device on which every call succeeds at once and no kernel runs). A repeated
//! launch, GEMM, GEMV or op makes its kernel launches and nothing else that costs: no module
//! loads, no allocations (the pool reuses), no synchronisation, no events unless the profiler
//! is on; the kernel a GEMM launches is the one `Gemm::kernel_name` names, also when calls of
//! one shape alternate between aligned and unaligned operands (the per-thread dispatch memo).
//!
//! No GPU is needed: the checks run in a child process whose driver is the null driver (the
//! driver library is chosen once per process). Skipped without a C compiler (failing under
//! `REQUIRE_CC=1`).

#[path = "support/child.rs"]
mod child;
#[path = "common/fake_driver.rs"]
mod fake_driver;
#[path = "support/null_driver.rs"]
mod null_driver;

use std::collections::BTreeMap;
use std::sync::Arc;

use cudrv::blas::{Gemm, GemmType, Layout, MathMode, SplitK, Transpose};
use cudrv::{Context, DeviceBuffer, LaunchConfig, Stream, ValidAsZeroBits};
use null_driver::{show, Calls};

/// Set in the child process.
const CHILD: &str = "CUDRV_HOST_CALLS_CHILD";

#[test]
fn repeated_calls_make_only_their_launches() {
    let test = "repeated_calls_make_only_their_launches";
    let Some(lib) = fake_driver::build(test, fake_driver::Fixture::NullDriver) else {
        return;
    };
    let said = child::run_on_driver(
        "host_calls_child",
        CHILD,
        lib.path(),
        // The profiler's event path is what is counted (a real libcupti beside the null
        // driver is not tried; tests/profile_cupti.rs covers the CUPTI path).
        &[("CUDRV_PROFILE_TIMING", "events".as_ref())],
        &[],
    );
    assert_eq!(said, "ok");
}

/// Entry points that must not appear in a repeated call's counts.
const COSTLY: &[&str] = &[
    "cuModuleLoadData",
    "cuModuleLoadDataEx",
    "cuModuleGetFunction",
    "cuFuncGetAttribute",
    "cuMemAlloc_v2",
    "cuMemAllocAsync",
    "cuMemFree_v2",
    "cuMemFreeAsync",
    "cuStreamSynchronize",
    "cuCtxSynchronize",
    "cuEventSynchronize",
    "cuStreamQuery",
    "cuEventQuery",
    "cuEventCreate",
    "cuEventRecord",
    "cuEventElapsedTime",
    "cuMemcpyHtoDAsync_v2",
    "cuMemcpyDtoHAsync_v2",
    "cuMemcpyHtoD_v2",
    "cuMemcpyDtoH_v2",
];

fn assert_cheap(what: &str, counts: &BTreeMap<String, u64>, calls: u64) {
    for name in COSTLY {
        assert!(
            !counts.contains_key(*name),
            "{what}: {calls} repeated calls made {name} ({})",
            show(counts)
        );
    }
}

/// Launches of either entry point (`cuLaunchKernelEx`: a launch that may overlap the kernel
/// before it).
fn launches(counts: &BTreeMap<String, u64>) -> u64 {
    ["cuLaunchKernel", "cuLaunchKernelEx"]
        .iter()
        .map(|k| counts.get(*k).copied().unwrap_or(0))
        .sum()
}

/// An op-N GEMV of `m x n` zeros at lda = m, called twice, then 8 times counted: each counted
/// call makes `per_call` launches and no other driver call, the last launch `last`.
fn gemv_case<T: cudrv::blas::GemvType + ValidAsZeroBits + Copy>(
    calls: &Calls,
    stream: &Arc<Stream>,
    (m, n): (usize, usize),
    (one, zero): (T, T),
    per_call: u64,
    last: &str,
) {
    let a = DeviceBuffer::<T>::zeroed(stream, m * n).unwrap();
    let x = DeviceBuffer::<T>::zeroed(stream, n).unwrap();
    let mut y = DeviceBuffer::<T>::zeroed(stream, m).unwrap();
    for _ in 0..2 {
        cudrv::blas::gemv(Transpose::N, m, n, one, &a, m, &x, 1, zero, &mut y, 1).unwrap();
    }
    calls.reset();
    for _ in 0..8 {
        cudrv::blas::gemv(Transpose::N, m, n, one, &a, m, &x, 1, zero, &mut y, 1).unwrap();
    }
    let counts = calls.take();
    let what = format!("gemv {} N {m}x{n}", T::NAME);
    assert_cheap(&what, &counts, 8);
    assert_eq!(
        show(&counts),
        format!("cuCtxGetCurrent={} cuLaunchKernel={}", 8 * per_call, 8 * per_call),
        "{what}"
    );
    assert_eq!(calls.last_kernel().as_deref(), Some(last), "{what}");
}

/// Runs `g` on fresh operands of `lens` elements (A, B, C; each viewed from its offset) twice
/// (warm-up: modules load, the pool fills), then `REPEAT` times, and checks the repeated calls'
/// driver calls and the kernel launched last.
fn gemm_case<T: GemmType + ValidAsZeroBits>(
    calls: &Calls,
    stream: &Arc<Stream>,
    g: Gemm<T::Scalar>,
    lens: [usize; 3],
    offsets: [usize; 3],
) where
    T::Scalar: Copy + Into<f64>,
{
    const REPEAT: u64 = 8;
    let buffer = |i: usize| DeviceBuffer::<T>::zeroed(stream, lens[i] + offsets[i]).unwrap();
    let (a, b, mut c) = (buffer(0), buffer(1), buffer(2));
    let av = a.slice(offsets[0]..).unwrap();
    let bv = b.slice(offsets[1]..).unwrap();
    let mut cv = c.slice_mut(offsets[2]..).unwrap();
    let name = g.kernel_name(&av, &bv, &cv).unwrap();
    let what = format!("{} {g:?} at offsets {offsets:?} ({name})", T::NAME);
    for _ in 0..2 {
        g.run(&av, &bv, &mut cv).unwrap();
    }
    calls.reset();
    for _ in 0..REPEAT {
        g.run(&av, &bv, &mut cv).unwrap();
    }
    let counts = calls.take();
    assert_cheap(&what, &counts, REPEAT);
    let per_call = launches(&counts) as f64 / REPEAT as f64;
    // Partial products: the parts (a batch and a shorter last one, each after its aligned
    // copy when an operand needs one) and the sum.
    let most = if name.contains("/partials") { 5.0 } else { 3.0 };
    assert!(
        (1.0..=most).contains(&per_call) && launches(&counts) % REPEAT == 0,
        "{what}: {} launches in {REPEAT} calls ({})",
        launches(&counts),
        show(&counts)
    );
    // Besides launches: one current-context check per launch, the split scratch's zeroing, the
    // TMA's tensor maps, and (gemm_skinny90, whose launch may overlap the kernel before it and
    // whose flags are zeroed in a capture) whether the stream is being captured.
    let other: u64 = counts
        .iter()
        .filter(|(k, _)| {
            !matches!(
                k.as_str(),
                "cuLaunchKernel"
                    | "cuLaunchKernelEx"
                    | "cuCtxGetCurrent"
                    | "cuMemsetD8Async"
                    | "cuTensorMapEncodeTiled"
                    | "cuStreamIsCapturing"
            )
        })
        .map(|(_, v)| v)
        .sum();
    assert_eq!(other, 0, "{what}: {}", show(&counts));
    // The kernel launched last is the main kernel `kernel_name` names (after any packing
    // prefix, before any split suffix), or the skinny split's finishing kernel; a GEMV route
    // is named by its family (`gemv_t_f32` runs as gemv_t_f32 or its vector form gemv_tv_f32).
    let main = name.rsplit('+').next().unwrap().split('/').next().unwrap();
    let last = calls.last_kernel().expect("a kernel was launched");
    let gemv_family = |n: &str| n.strip_prefix("gemv_").map(|rest| rest.chars().next());
    assert!(
        last == main
            || (main.starts_with("gemm_skinny_") && last.starts_with("gemm_skinny_finish"))
            || (name.contains("/partials") && last == format!("gemm_partials_{}", T::NAME))
            || (gemv_family(main).is_some() && gemv_family(main) == gemv_family(&last)),
        "{what}: launched {last}, kernel_name says {name}"
    );
}

/// Zeroed A, B and C of `lens` elements.
fn operands<T: cudrv::DeviceRepr + ValidAsZeroBits>(
    stream: &Arc<Stream>,
    lens: [usize; 3],
) -> (DeviceBuffer<T>, DeviceBuffer<T>, DeviceBuffer<T>) {
    let buffer = |len| DeviceBuffer::<T>::zeroed(stream, len).unwrap();
    (buffer(lens[0]), buffer(lens[1]), buffer(lens[2]))
}

#[test]
fn host_calls_child() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let ctx = Context::new(0).unwrap();
    let calls = Calls::of_this_process().expect("the null driver is this process's driver");
    let stream = ctx.new_stream().unwrap();

    // A checked launch: the launch and one current-context check.
    let f = ctx.kernel("cudrv_empty_args").unwrap();
    let a = DeviceBuffer::from_slice(&stream, &[1.0f32; 32]).unwrap();
    let mut b = DeviceBuffer::<f32>::zeroed(&stream, 32).unwrap();
    let cfg = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (32, 1, 1),
        shared_mem_bytes: 0,
    };
    let launch = |b: &mut DeviceBuffer<f32>, args: usize| {
        let mut l = stream.launch_builder(&f);
        l.arg(&a).arg(b).arg(&32u64);
        if args == 4 {
            l.arg(&2.0f32);
        }
        // SAFETY: cudrv_empty_args(const float*, float*, u64, float) on the null driver, which
        // runs nothing; the 3-argument launch is refused before it reaches the driver.
        unsafe { l.launch(cfg) }
    };
    launch(&mut b, 4).unwrap();
    calls.reset();
    for _ in 0..10 {
        launch(&mut b, 4).unwrap();
    }
    let counts = calls.take();
    assert_eq!(show(&counts), "cuCtxGetCurrent=10 cuLaunchKernel=10");
    // A launch whose arguments do not match the kernel's parameters reaches no driver call.
    assert!(launch(&mut b, 3).is_err());
    assert_eq!(show(&calls.take()), "");

    // Profiling: events only while it is on, two records per launch, never a wait.
    ctx.profiler().enable().unwrap();
    calls.reset();
    for _ in 0..10 {
        launch(&mut b, 4).unwrap();
    }
    let counts = calls.take();
    assert_eq!(counts.get("cuEventRecord"), Some(&20), "{}", show(&counts));
    for wait in ["cuStreamSynchronize", "cuCtxSynchronize", "cuEventSynchronize"] {
        assert!(!counts.contains_key(wait), "{}", show(&counts));
    }
    ctx.profiler().disable();
    ctx.profiler().clear().unwrap();
    calls.reset();
    launch(&mut b, 4).unwrap();
    assert_eq!(show(&calls.take()), "cuCtxGetCurrent=1 cuLaunchKernel=1");

    // GEMMs of every family, repeated: column-major NN (A m x k, B k x n), and the decode
    // step's TN (A k x m, B k x n).
    use Transpose::{N, T};
    fn nn<S: Copy + From<u8>>(m: usize, n: usize, k: usize) -> (Gemm<S>, [usize; 3]) {
        (Gemm::new(N, N, m, n, k), [m * k, k * n, m * n])
    }
    fn tn<S: Copy + From<u8>>(m: usize, n: usize, k: usize) -> (Gemm<S>, [usize; 3]) {
        (Gemm::new(T, N, m, n, k), [k * m, k * n, m * n])
    }
    let (g, lens) = nn(2, 2, 2);
    gemm_case::<f32>(&calls, &stream, g, lens, [0; 3]);
    // Exact f32 on this H100-like device's f64 tensor cores (their module joins the context's
    // registry on the first call), the CUDA cores forced, and operands one element in: read in
    // place below k = 512, copied aligned first from there.
    let (g, lens) = nn(256, 256, 256);
    gemm_case::<f32>(&calls, &stream, g, lens, [0; 3]);
    gemm_case::<f32>(&calls, &stream, g.kernel(cudrv::blas::Kernel::Simt), lens, [0; 3]);
    gemm_case::<f32>(&calls, &stream, g, lens, [1, 0, 0]);
    let (g1000, lens1000) = nn(1000, 1000, 1000);
    gemm_case::<f32>(&calls, &stream, g1000, lens1000, [1, 0, 0]);
    gemm_case::<f32>(&calls, &stream, g.math(MathMode::Tf32), lens, [0; 3]);
    let (g, lens) = nn(64, 64, 65536);
    gemm_case::<f32>(&calls, &stream, g, lens, [0; 3]);
    let (g, lens) = tn(4096, 16, 4096);
    gemm_case::<f32>(&calls, &stream, g, lens, [0; 3]);
    let (g, lens) = nn(1, 4096, 4096);
    gemm_case::<f32>(&calls, &stream, g, lens, [0; 3]);
    let (g, lens) = nn(64, 64, 64);
    gemm_case::<f64>(&calls, &stream, g, lens, [0; 3]);
    // Long k over one tile: partial products (a batch of parts, a shorter last part, the sum).
    let (g, lens) = nn(64, 64, 65536);
    gemm_case::<f64>(&calls, &stream, g, lens, [0; 3]);
    let (g, lens) = tn(100, 60, 30001);
    gemm_case::<f64>(&calls, &stream, g.split_k(SplitK::Partials(7)), lens, [1, 0, 0]);
    let (g, lens) = nn(16, 16, 16);
    gemm_case::<f64>(&calls, &stream, g, lens, [0; 3]);
    let (g, lens) = nn(256, 256, 256);
    gemm_case::<half::f16>(&calls, &stream, g, lens, [0; 3]);
    let (g, lens) = nn(255, 255, 255);
    gemm_case::<half::bf16>(&calls, &stream, g, lens, [0; 3]);
    // Decode steps on the TMA kernel (this driver is an H100-like sm_90 of 3.35 TB/s): stream-k
    // over every SM, whose launch overlaps the kernel before it (cuLaunchKernelEx); whole tiles
    // over 115 blocks, an ordinary launch; f32 in tf32 math with a short m, which the exact f32
    // skinny kernel does not take ahead of it.
    let launch_kinds = |counts: &BTreeMap<String, u64>| {
        ["cuLaunchKernel", "cuLaunchKernelEx"].map(|k| counts.get(k).copied().unwrap_or(0))
    };
    for (n, ex) in [(4096, 1), (22016, 0)] {
        let (g, lens) = tn::<f32>(n, 16, 4096);
        let (a, b, mut c) = operands::<half::f16>(&stream, lens);
        let name = g.kernel_name(&a, &b, &c).unwrap();
        assert_eq!(name, "gemm_skinny90_f16_k256", "{n} x 16 x 4096");
        gemm_case::<half::f16>(&calls, &stream, g, lens, [0; 3]);
        calls.reset();
        g.run(&a, &b, &mut c).unwrap();
        assert_eq!(launch_kinds(&calls.take()), [1 - ex, ex], "{n} x 16 x 4096");
    }
    let (g, lens) = tn::<f32>(16, 4096, 4096);
    let g = g.math(MathMode::Tf32);
    let (a, b, c) = operands::<f32>(&stream, lens);
    assert_eq!(g.kernel_name(&a, &b, &c).unwrap(), "gemm_skinny90_tf32_k128");
    gemm_case::<f32>(&calls, &stream, g, lens, [0; 3]);

    // Row-major attention scores over 4 heads, sharing one A.
    let g = Gemm::new(N, T, 128, 512, 256)
        .layout(Layout::RowMajor)
        .batched(4, 0, 512 * 256, 128 * 512);
    gemm_case::<half::f16>(&calls, &stream, g, [128 * 256, 4 * 512 * 256, 4 * 128 * 512], [0; 3]);

    // One shape, alternating between aligned and unaligned operands: each call launches the
    // kernel its own alignment calls for.
    let (square, square_lens) = nn(256, 256, 256);
    let (decode, decode_lens) = tn(4096, 16, 4096);
    for _ in 0..3 {
        for offsets in [[0, 0, 0], [1, 0, 0], [0, 3, 0], [8, 8, 1]] {
            gemm_case::<half::f16>(&calls, &stream, square, square_lens, offsets);
            gemm_case::<f32>(&calls, &stream, decode, decode_lens, offsets);
        }
    }

    // GEMVs, repeated. At an odd leading dimension (the element-wise N kernel) 1023 x 1025
    // splits its reduction 5 ways, which this sm_90 runs in the 16 blocks of a cluster (one
    // launch, no workspace); 33 x 200000 splits past 10 ways: gemv_n, then gemv_finish over a
    // workspace the pool hands back without a driver call. An aligned f64 GEMV of 8 row tiles,
    // split 4 ways, runs in a cluster too (`gemv_nvc`: no gemv_finish).
    let (one, zero) = (half::f16::ONE, half::f16::ZERO);
    gemv_case(&calls, &stream, (1023, 1025), (one, zero), 1, "gemv_nc16_f16");
    gemv_case(&calls, &stream, (33, 200_000), (one, zero), 2, "gemv_finish_f16");
    gemv_case(&calls, &stream, (1024, 1024), (1.0f64, 0.0), 1, "gemv_nvc_f64");

    // An op, repeated.
    let x = DeviceBuffer::<f32>::zeroed(&stream, 4096).unwrap();
    let mut y = DeviceBuffer::<f32>::zeroed(&stream, 4096).unwrap();
    cudrv::ops::scale(&mut y, 2.0, &x).unwrap();
    calls.reset();
    for _ in 0..10 {
        cudrv::ops::scale(&mut y, 2.0, &x).unwrap();
    }
    let counts = calls.take();
    assert_eq!(show(&counts), "cuCtxGetCurrent=10 cuLaunchKernel=10");
    println!("CHILD ok");
}
