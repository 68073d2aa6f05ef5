//! `driver::result` and `driver::sys` as cudarc code uses them: thin calls returning `Result`,
//! and `sys` enums that are real Rust enums. Written against cudarc's API, so it compiles and runs
//! unchanged under `legacy` (the real cudarc 0.19) too.
//!
//! GPU tests print `SKIPPED (no GPU): <name>` without a GPU and fail under `REQUIRE_GPU=1`. Inputs
//! are random with a fresh seed (printed); every case runs twice and the two runs must agree.

use std::ffi::{c_void, CString};
use std::sync::Arc;

use cudrv_compat::driver::{result, sys, CudaContext, DriverError};
use cudrv_compat::nvrtc::compile_ptx;

fn require_gpu() -> bool {
    std::env::var("REQUIRE_GPU").is_ok_and(|v| v == "1")
}

/// Device 0's context (bound to this thread), or `None` (reported) without a GPU. The probe goes
/// through cudrv, which never panics without a driver (cudarc does).
fn gpu(name: &str) -> Option<Arc<CudaContext>> {
    match cudrv::Device::count() {
        Ok(n) if n > 0 => {
            let ctx = CudaContext::new(0).expect("CudaContext::new(0)");
            ctx.bind_to_thread().expect("bind_to_thread");
            Some(ctx)
        }
        other => {
            assert!(!require_gpu(), "REQUIRE_GPU=1 but no GPU: {other:?}");
            println!("SKIPPED (no GPU): {name}");
            None
        }
    }
}

/// A fresh seed per run, printed so that a failure can be replayed with `SEED=`.
fn seed(name: &str) -> u64 {
    let seed = std::env::var("SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            t.as_nanos() as u64 ^ (std::process::id() as u64) << 32
        });
    println!("SEED {name} {seed}");
    seed
}

fn random_f32(n: usize, seed: u64) -> Vec<f32> {
    cudrv::selftest::Rng::new(seed).vec(n, -1.0, 1.0)
}

/// Never constructed: an exhaustive `match` over a `sys` enum only compiles if it is a real enum.
fn cache_name(config: sys::CUfunc_cache) -> &'static str {
    match config {
        sys::CUfunc_cache::CU_FUNC_CACHE_PREFER_NONE => "none",
        sys::CUfunc_cache::CU_FUNC_CACHE_PREFER_SHARED => "shared",
        sys::CUfunc_cache::CU_FUNC_CACHE_PREFER_L1 => "L1",
        sys::CUfunc_cache::CU_FUNC_CACHE_PREFER_EQUAL => "equal",
    }
}

#[test]
fn sys_enums_are_rust_enums_and_results_convert() {
    assert_eq!(cache_name(sys::CUfunc_cache::CU_FUNC_CACHE_PREFER_L1), "L1");
    assert_eq!(sys::CUresult::CUDA_SUCCESS.result(), Ok(()));
    assert_eq!(
        sys::CUresult::CUDA_ERROR_INVALID_VALUE.result(),
        Err(DriverError(sys::CUresult::CUDA_ERROR_INVALID_VALUE))
    );
    assert_eq!(sys::CUresult::CUDA_ERROR_NOT_FOUND as u32, 500);
    assert_eq!(
        sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT as u32,
        16
    );
    let e: Result<(), DriverError> = Err(DriverError(sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY));
    match e {
        Err(DriverError(sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY)) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn device_queries_agree_with_the_context() {
    let Some(ctx) = gpu("device_queries_agree_with_the_context") else {
        return;
    };
    result::init().unwrap();
    let count = result::device::get_count().unwrap();
    assert!(count >= 1);
    let dev = result::device::get(0).unwrap();
    assert_eq!(result::device::get_name(dev).unwrap(), ctx.name().unwrap());
    // SAFETY: `dev` is a handle from device::get.
    let total = unsafe { result::device::total_mem(dev) }.unwrap();
    assert_eq!(total, ctx.total_mem().unwrap());
    // SAFETY: as above.
    let major = unsafe {
        result::device::get_attribute(
            dev,
            sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
        )
    }
    .unwrap();
    assert_eq!(major, ctx.compute_capability().unwrap().0);
    assert_eq!(result::device::get_uuid(dev).unwrap().bytes, ctx.uuid().unwrap().bytes);
    let (free, all) = result::mem_get_info().unwrap();
    assert!(free <= all && all == total, "{free} {all} {total}");
    let current = result::ctx::get_current().unwrap();
    assert_eq!(current, Some(ctx.cu_ctx()));
    assert_eq!(
        result::device::get(count).unwrap_err(),
        DriverError(sys::CUresult::CUDA_ERROR_INVALID_DEVICE)
    );
    println!("device 0: {major}.x, {total} bytes, {count} device(s)");
}

#[test]
fn context_settings_round_trip() {
    let Some(_ctx) = gpu("context_settings_round_trip") else {
        return;
    };
    let config = result::ctx::get_cache_config().unwrap();
    println!("cache config: {}", cache_name(config));
    result::ctx::set_cache_config(sys::CUfunc_cache::CU_FUNC_CACHE_PREFER_SHARED).unwrap();
    assert_eq!(
        result::ctx::get_cache_config().unwrap(),
        sys::CUfunc_cache::CU_FUNC_CACHE_PREFER_SHARED
    );
    result::ctx::set_cache_config(config).unwrap();
    let stack = result::ctx::get_limit(sys::CUlimit::CU_LIMIT_STACK_SIZE).unwrap();
    result::ctx::set_limit(sys::CUlimit::CU_LIMIT_STACK_SIZE, stack * 2).unwrap();
    assert!(result::ctx::get_limit(sys::CUlimit::CU_LIMIT_STACK_SIZE).unwrap() >= stack * 2);
    result::ctx::set_limit(sys::CUlimit::CU_LIMIT_STACK_SIZE, stack).unwrap();
    let (least, greatest) = result::stream::get_priority_range().unwrap();
    assert!(greatest <= least, "{least} {greatest}");
}

/// Copies random data through every copy and set call, sync and async; returns what came back.
fn copies(n: usize, seed: u64) -> Vec<f32> {
    let host = random_f32(n, seed);
    let bytes = n * 4;
    let stream = result::stream::create(result::stream::StreamKind::NonBlocking).unwrap();
    let mut back = vec![f32::NAN; n];
    let mut back_async = vec![f32::NAN; n];
    // SAFETY: every pointer below is an allocation of `bytes` made here, freed at the end; the
    // async copies finish before the stream is synchronized and the host buffers are read.
    unsafe {
        let a = result::malloc_sync(bytes).unwrap();
        let b = result::malloc_async(stream, bytes).unwrap();
        result::memset_d8_sync(a, 0xff, bytes).unwrap();
        result::memcpy_htod_sync(a, &host).unwrap();
        // A copy from pageable memory may return before its DMA lands, and the non-blocking
        // stream does not wait for the legacy stream's work: without this the half copy below
        // raced it (one failure in a GPU run with other tests beside it, H100, 2026-11-27).
        result::ctx::synchronize().unwrap();
        result::memset_d8_async(b, 0, bytes, stream).unwrap();
        result::memcpy_dtod_async(b, a, n / 2 * 4, stream).unwrap();
        result::memcpy_dtoh_async(&mut back_async, b, stream).unwrap();
        result::stream::synchronize(stream).unwrap();
        result::memcpy_dtod_sync(b, a, bytes).unwrap();
        result::memset_d8_sync(a, 0, 4).unwrap();
        result::memcpy_dtoh_sync(&mut back, b).unwrap();
        result::free_async(b, stream).unwrap();
        result::stream::synchronize(stream).unwrap();
        result::free_sync(a).unwrap();
        result::stream::destroy(stream).unwrap();
    }
    assert_eq!(back, host, "full device-to-device copy");
    for i in 0..n {
        let expect = if i < n / 2 { host[i] } else { 0.0 };
        assert_eq!(
            back_async[i].to_bits(),
            expect.to_bits(),
            "element {i} of the half copy"
        );
    }
    back.extend(back_async);
    back
}

#[test]
fn copies_and_sets_through_result() {
    let Some(_ctx) = gpu("copies_and_sets_through_result") else {
        return;
    };
    let seed = seed("copies_and_sets_through_result");
    for n in [1usize, 7, 1000, 1 << 16] {
        let first = copies(n, seed ^ n as u64);
        let second = copies(n, seed ^ n as u64);
        assert_eq!(
            first.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            second.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
    }
}

const AXPY: &str = r#"
extern "C" __global__ void axpy(float *y, const float *x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;

/// Runs axpy through module::load_data and launch_kernel; returns y.
fn axpy(module: sys::CUmodule, n: usize, seed: u64) -> Vec<f32> {
    let x = random_f32(n, seed);
    let y0 = random_f32(n, seed.rotate_left(17));
    let a = 0.75f32;
    let mut y = vec![f32::NAN; n];
    // SAFETY: axpy(float*, const float*, float, int) gets pointers to n floats; every handle is
    // created here and destroyed before returning; the event pair is timing-enabled.
    unsafe {
        let f = result::module::get_function(module, CString::new("axpy").unwrap()).unwrap();
        let (dx, dy) = (result::malloc_sync(n * 4).unwrap(), result::malloc_sync(n * 4).unwrap());
        result::memcpy_htod_sync(dx, &x).unwrap();
        result::memcpy_htod_sync(dy, &y0).unwrap();
        let stream = result::stream::create(result::stream::StreamKind::Default).unwrap();
        let start = result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT).unwrap();
        let end = result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT).unwrap();
        let (mut py, mut px, mut pa, mut pn) = (dy, dx, a, n as i32);
        let mut params = [
            (&mut py as *mut u64).cast::<c_void>(),
            (&mut px as *mut u64).cast(),
            (&mut pa as *mut f32).cast(),
            (&mut pn as *mut i32).cast(),
        ];
        result::event::record(start, stream).unwrap();
        result::launch_kernel(f, (n.div_ceil(128) as u32, 1, 1), (128, 1, 1), 0, stream, &mut params).unwrap();
        result::event::record(end, stream).unwrap();
        result::event::synchronize(end).unwrap();
        result::event::query(end).unwrap();
        assert!(result::event::elapsed(start, end).unwrap() >= 0.0);
        result::memcpy_dtoh_sync(&mut y, dy).unwrap();
        result::event::destroy(start).unwrap();
        result::event::destroy(end).unwrap();
        result::stream::destroy(stream).unwrap();
        result::free_sync(dx).unwrap();
        result::free_sync(dy).unwrap();
    }
    for i in 0..n {
        let want = a as f64 * x[i] as f64 + y0[i] as f64;
        assert!(
            (y[i] as f64 - want).abs() <= 1e-6 * (1.0 + want.abs()),
            "y[{i}] = {} want {want}",
            y[i]
        );
    }
    y
}

#[test]
fn modules_kernels_and_events_through_result() {
    let Some(_ctx) = gpu("modules_kernels_and_events_through_result") else {
        return;
    };
    let ptx = match std::panic::catch_unwind(|| compile_ptx(AXPY)) {
        Ok(Ok(ptx)) => ptx,
        other => {
            assert!(
                !require_gpu(),
                "REQUIRE_GPU=1 but nvrtc failed: {:?}",
                other.map(|r| r.err())
            );
            println!("SKIPPED (no libnvrtc): modules_kernels_and_events_through_result");
            return;
        }
    };
    let image = CString::new(ptx.to_src()).unwrap();
    let seed = seed("modules_kernels_and_events_through_result");
    // SAFETY: a NUL-terminated PTX image; the module is unloaded at the end.
    let module = unsafe { result::module::load_data(image.as_ptr().cast()) }.unwrap();
    for n in [1usize, 129, 4096 + 3] {
        assert_eq!(axpy(module, n, seed ^ n as u64), axpy(module, n, seed ^ n as u64));
    }
    // SAFETY: the module is live; a name it lacks is an error, not a handle.
    let missing = unsafe { result::module::get_function(module, CString::new("no_such_kernel").unwrap()) };
    assert_eq!(missing.unwrap_err(), DriverError(sys::CUresult::CUDA_ERROR_NOT_FOUND));
    // SAFETY: loaded above, not used afterwards.
    unsafe { result::module::unload(module) }.unwrap();
    let garbage = CString::new(".version 99.0\nthis is not ptx").unwrap();
    // SAFETY: a NUL-terminated image; the driver rejects it.
    let bad = unsafe { result::module::load_data(garbage.as_ptr().cast()) };
    let code = bad.expect_err("garbage PTX must not load").0;
    println!("bad PTX: {code:?}");
}
