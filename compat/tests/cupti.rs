//! `cupti` (feature `cupti`) as cudarc code uses it: the activity API records every kernel the
//! process launches. Compiles and runs unchanged under `legacy` (cudarc's own cupti).
//!
//! Without a GPU it prints `SKIPPED (no GPU)`, without libcupti `SKIPPED (no libcupti)`; under
//! `REQUIRE_GPU=1` both fail.

use std::sync::atomic::{AtomicUsize, Ordering};

use cudrv_compat::cupti::result::{activity, CuptiError};
use cudrv_compat::cupti::sys;
use cudrv_compat::driver::{CudaContext, LaunchConfig, PushKernelArg};
use cudrv_compat::nvrtc::compile_ptx;

static KERNELS: AtomicUsize = AtomicUsize::new(0);
static OTHER: AtomicUsize = AtomicUsize::new(0);
const BUFFER: usize = 1 << 20;

extern "C" fn requested(buffer: *mut *mut u8, size: *mut usize, max_records: *mut usize) {
    let memory = vec![0u64; BUFFER / 8].into_boxed_slice();
    // SAFETY: CUPTI passes valid out pointers; the buffer is returned to `completed`, which frees it.
    unsafe {
        *buffer = Box::into_raw(memory).cast();
        *size = BUFFER;
        *max_records = 0;
    }
}

extern "C" fn completed(
    _ctx: cudrv_compat::driver::sys::CUcontext,
    _stream: u32,
    buffer: *mut u8,
    _size: usize,
    valid: usize,
) {
    let mut record: *mut sys::CUpti_Activity = std::ptr::null_mut();
    // SAFETY: `buffer` is a buffer CUPTI completed with `valid` bytes; `record` walks it.
    while unsafe { activity::get_next_record(buffer, valid, &mut record) }.is_ok() {
        // SAFETY: CUPTI returned a record of this buffer.
        let kind = unsafe { (*record).kind };
        if kind == sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL {
            KERNELS.fetch_add(1, Ordering::SeqCst);
        } else {
            OTHER.fetch_add(1, Ordering::SeqCst);
        }
    }
    // SAFETY: allocated in `requested` as a boxed slice of BUFFER / 8 u64s.
    drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(buffer.cast::<u64>(), BUFFER / 8)) });
}

#[test]
fn activity_records_count_the_kernels() {
    let name = "activity_records_count_the_kernels";
    let require = std::env::var("REQUIRE_GPU").is_ok_and(|v| v == "1");
    match cudrv::Device::count() {
        Ok(n) if n > 0 => {}
        other => {
            assert!(!require, "REQUIRE_GPU=1 but no GPU: {other:?}");
            println!("SKIPPED (no GPU): {name}");
            return;
        }
    }
    // cudarc panics when libcupti is missing; cudrv-compat returns an error.
    let registered = std::panic::catch_unwind(|| activity::register_callbacks(Some(requested), Some(completed)));
    match registered {
        Ok(Ok(())) => {}
        other => {
            assert!(!require, "REQUIRE_GPU=1 but CUPTI is unusable: {other:?}");
            println!("SKIPPED (no libcupti): {name}");
            return;
        }
    }
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let ptx = compile_ptx("extern \"C\" __global__ void bump(int *x) { atomicAdd(x, 1); }").unwrap();
    let f = ctx.load_module(ptx).unwrap().load_function("bump").unwrap();
    let mut x = stream.alloc_zeros::<i32>(1).unwrap();
    activity::enable(sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL).unwrap();
    let launches = 5 + (std::process::id() as usize % 7);
    for _ in 0..launches {
        let mut b = stream.launch_builder(&f);
        b.arg(&mut x);
        // SAFETY: bump(int*) with one block of 32 threads on a one-int buffer.
        unsafe {
            b.launch(LaunchConfig {
                grid_dim: (1, 1, 1),
                block_dim: (32, 1, 1),
                shared_mem_bytes: 0,
            })
        }
        .unwrap();
    }
    stream.synchronize().unwrap();
    activity::flush_all(1).unwrap();
    activity::disable(sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL).unwrap();
    assert_eq!(stream.clone_dtoh(&x).unwrap(), vec![32 * launches as i32]);
    let seen = KERNELS.load(Ordering::SeqCst);
    println!(
        "{launches} launches, {seen} kernel records, {} other records",
        OTHER.load(Ordering::SeqCst)
    );
    assert_eq!(seen, launches);
    let e: Result<(), CuptiError> = sys::CUptiResult::CUPTI_ERROR_INVALID_KIND.result();
    assert_eq!(e, Err(CuptiError(sys::CUptiResult::CUPTI_ERROR_INVALID_KIND)));
}
