//! Criterion benches of the runtime's per-call costs, each beside its raw driver reference in the
//! same run: kernel launch enqueue and a launch + synchronize round trip.
//!
//! Run on a GPU machine: `cargo bench --bench runtime` (or `bash .gpu/run.sh bench runtime`).
//! Without a GPU the bench prints that it skipped and exits successfully.
#![allow(missing_docs)] // criterion_group! generates undocumented items

use std::ffi::c_void;
use std::ptr;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
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

criterion_group! {
    name = benches;
    config = Criterion::default();
    targets = launch
}
criterion_main!(benches);
