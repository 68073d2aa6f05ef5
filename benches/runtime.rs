//! Criterion benches of the runtime's per-call costs, each beside its raw driver reference in the
//! same run: kernel launch enqueue, a launch + synchronize round trip, and device allocation
//! (pooled against cuMemAllocAsync and cuMemAlloc).
//!
//! Run on a GPU machine: `cargo bench --bench runtime` (or `bash .gpu/run.sh bench runtime`).
//! Without a GPU the bench prints that it skipped and exits successfully.
#![allow(missing_docs)] // criterion_group! generates undocumented items

use std::ffi::c_void;
use std::ptr;
use std::sync::Arc;

use criterion::{criterion_group, Criterion};
use cudrv::{sys, Context, DeviceBuffer, DeviceSlice, LaunchConfig};

fn context() -> Option<Arc<Context>> {
    match Context::new(0) {
        Ok(c) => Some(c),
        Err(e) => {
            println!("SKIPPED (no GPU): runtime bench: {e}");
            None
        }
    }
}

fn launch(c: &mut Criterion) {
    let Some(ctx) = context() else { return };
    let stream = ctx.new_stream().expect("stream");
    let f = ctx.kernel("cudrv_empty_args").expect("kernel");
    let a = DeviceBuffer::from_slice(&stream, &[1.0f32; 32]).expect("alloc");
    let b = DeviceBuffer::from_slice(&stream, &[0.0f32; 32]).expect("alloc");
    let (n, alpha) = (32u64, 2.0f32);
    let cfg = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (32, 1, 1),
        shared_mem_bytes: 0,
    };
    let raw_launch = sys::resolve::cuLaunchKernel().expect("cuLaunchKernel");
    let (pa, pb) = (a.device_ptr(), b.device_ptr());
    let mut params: [*mut c_void; 4] = [
        &pa as *const u64 as *mut c_void,
        &pb as *const u64 as *mut c_void,
        &n as *const u64 as *mut c_void,
        &alpha as *const f32 as *mut c_void,
    ];
    let mut group = c.benchmark_group("launch_enqueue");
    group.bench_function("raw_cuLaunchKernel", |bench| {
        bench.iter(|| {
            // SAFETY: the parameters match cudrv_empty_args(const float*, float*, u64, float).
            let rc = unsafe {
                raw_launch(
                    f.raw(),
                    1,
                    1,
                    1,
                    32,
                    1,
                    1,
                    0,
                    stream.raw(),
                    params.as_mut_ptr(),
                    ptr::null_mut(),
                )
            };
            assert_eq!(rc, sys::CUresult::CUDA_SUCCESS);
        });
        stream.synchronize().expect("sync");
    });
    group.bench_function("cudrv_launch_builder", |bench| {
        bench.iter(|| {
            let mut l = stream.launch_builder(&f);
            l.arg(&a).arg(&b).arg(&n).arg(&alpha);
            // SAFETY: as above.
            unsafe { l.launch(cfg) }.expect("launch");
        });
        stream.synchronize().expect("sync");
    });
    group.finish();

    let mut group = c.benchmark_group("launch_sync_round_trip");
    let raw_sync = sys::resolve::cuStreamSynchronize().expect("cuStreamSynchronize");
    group.bench_function("raw", |bench| {
        bench.iter(|| {
            // SAFETY: as above; then a plain stream synchronize.
            unsafe {
                raw_launch(
                    f.raw(),
                    1,
                    1,
                    1,
                    32,
                    1,
                    1,
                    0,
                    stream.raw(),
                    params.as_mut_ptr(),
                    ptr::null_mut(),
                );
                raw_sync(stream.raw());
            }
        })
    });
    group.bench_function("cudrv", |bench| {
        bench.iter(|| {
            let mut l = stream.launch_builder(&f);
            l.arg(&a).arg(&b).arg(&n).arg(&alpha);
            // SAFETY: as above.
            unsafe { l.launch(cfg) }.expect("launch");
            stream.synchronize().expect("sync");
        })
    });
    group.finish();
}

fn alloc(c: &mut Criterion) {
    let Some(ctx) = context() else { return };
    let stream = ctx.new_stream().expect("stream");
    let alloc_async = sys::resolve::cuMemAllocAsync().expect("cuMemAllocAsync");
    let free_async = sys::resolve::cuMemFreeAsync().expect("cuMemFreeAsync");
    let alloc_sync = sys::resolve::cuMemAlloc_v2().expect("cuMemAlloc");
    let free_sync = sys::resolve::cuMemFree_v2().expect("cuMemFree");
    for (label, bytes) in [("4KiB", 4usize << 10), ("1MiB", 1 << 20), ("64MiB", 64 << 20)] {
        let mut group = c.benchmark_group(format!("alloc_free_{label}"));
        group.bench_function("cudrv_pooled", |bench| {
            bench.iter(|| {
                // SAFETY: never read.
                drop(unsafe { DeviceBuffer::<u8>::uninit(&stream, bytes) }.expect("alloc"));
            })
        });
        group.bench_function("raw_cuMemAllocAsync", |bench| {
            bench.iter(|| {
                let mut p = 0;
                // SAFETY: one allocation and its free, in order on the stream.
                unsafe {
                    assert_eq!(alloc_async(&mut p, bytes, stream.raw()), sys::CUresult::CUDA_SUCCESS);
                    free_async(p, stream.raw());
                }
            })
        });
        group.bench_function("raw_cuMemAlloc", |bench| {
            bench.iter(|| {
                let mut p = 0;
                // SAFETY: one allocation and its free.
                unsafe {
                    assert_eq!(alloc_sync(&mut p, bytes), sys::CUresult::CUDA_SUCCESS);
                    free_sync(p);
                }
            })
        });
        group.finish();
        stream.synchronize().expect("sync");
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default();
    targets = launch, alloc
}

fn main() {
    // `cargo bench` passes --bench; a test runner that runs every built target (as the GPU
    // bundle does, with test flags) gets a line saying so instead of criterion's usage error.
    if !std::env::args().any(|a| a == "--bench") {
        println!("SKIPPED (not a test): runtime bench; run it with `cargo bench --bench runtime`");
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
