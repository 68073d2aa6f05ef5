//! `cudrv bench`: the runtime's costs, each beside its reference measured in the same run.

use std::ffi::c_void;
use std::ptr;
use std::sync::Arc;
use std::time::Instant;

use crate::timing::median;
use cudrv::sys::{self, CUdeviceptr};
use cudrv::{Context, DeviceBuffer, DeviceSlice, DeviceSliceMut, LaunchConfig, PinnedHostBuffer, Result, Stream};

/// One row of the table: a cudrv figure, its reference, and what "better" means.
struct Row {
    name: String,
    cudrv: f64,
    reference: f64,
    reference_name: &'static str,
    unit: &'static str,
    /// true: smaller is better (times); false: larger is better (bandwidths).
    lower_is_better: bool,
}

/// Calls a raw driver function pointer and checks its result.
macro_rules! raw {
    ($f:expr, $name:literal, $($arg:expr),*) => {{
        // SAFETY: each call site passes arguments that satisfy the driver function's contract.
        let code = unsafe { ($f)($($arg),*) };
        if code != sys::CUresult::CUDA_SUCCESS {
            return Err(cudrv::Error::InvalidArgument(format!("{} failed with {}", $name, code.0)));
        }
    }};
}

pub fn run(what: &str) -> Result<bool> {
    let ctx = Context::new(0)?;
    let stream = ctx.new_stream()?;
    println!(
        "bench on {} (driver CUDA {}); medians; ratio = reference / cudrv for times, \
         cudrv / reference for bandwidths (>= 1 means cudrv is as fast)",
        ctx.device().name()?,
        cudrv::driver_version()?
    );
    let mut rows = Vec::new();
    let all = what == "all";
    if all || what == "launch" {
        launch(&ctx, &stream, &mut rows)?;
    }
    if all || what == "alloc" {
        alloc(&stream, &mut rows)?;
    }
    if all || what == "copy" {
        copy(&ctx, &stream, &mut rows)?;
    }
    if rows.is_empty() {
        return Err(cudrv::Error::InvalidArgument(format!(
            "unknown bench {what:?}; choose launch, alloc, copy or all"
        )));
    }
    println!(
        "\n{:<40} {:>12} {:>12}  {:<28} {:>6}",
        "measure", "cudrv", "reference", "reference is", "ratio"
    );
    for r in &rows {
        let ratio = if r.lower_is_better {
            r.reference / r.cudrv
        } else {
            r.cudrv / r.reference
        };
        println!(
            "{:<40} {:>9.3} {:<2} {:>9.3} {:<2}  {:<28} {:>6.3}",
            r.name, r.cudrv, r.unit, r.reference, r.unit, r.reference_name, ratio
        );
    }
    Ok(true)
}

fn launch(ctx: &Arc<Context>, stream: &Arc<Stream>, rows: &mut Vec<Row>) -> Result<()> {
    let f = ctx.kernel("cudrv_empty_args")?;
    let a = DeviceBuffer::from_slice(stream, &[1.0f32; 32])?;
    let b = DeviceBuffer::from_slice(stream, &[0.0f32; 32])?;
    let (n, alpha) = (32u64, 2.0f32);
    let cfg = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (32, 1, 1),
        shared_mem_bytes: 0,
    };
    let raw_launch = sys::resolve::cuLaunchKernel()?;
    let raw_sync = sys::resolve::cuStreamSynchronize()?;
    let (pa, pb) = (a.device_ptr(), b.device_ptr());
    let mut params: [*mut c_void; 4] = [
        &pa as *const u64 as *mut c_void,
        &pb as *const u64 as *mut c_void,
        &n as *const u64 as *mut c_void,
        &alpha as *const f32 as *mut c_void,
    ];
    let s = stream.raw();
    const BATCH: usize = 1000;
    let p = params.as_mut_ptr();
    // `k` raw launches, and `k` of cudrv's; and the microseconds per launch of a batch of each.
    let raw_launches = |k: usize| -> Result<()> {
        for _ in 0..k {
            raw!(
                raw_launch,
                "cuLaunchKernel",
                f.raw(),
                1,
                1,
                1,
                32,
                1,
                1,
                0,
                s,
                p,
                ptr::null_mut()
            );
        }
        Ok(())
    };
    let our_launches = |k: usize| -> Result<()> {
        for _ in 0..k {
            let mut l = stream.launch_builder(&f);
            l.arg(&a).arg(&b).arg(&n).arg(&alpha);
            // SAFETY: cudrv_empty_args(const float*, float*, u64, float) matches.
            unsafe { l.launch(cfg)? };
        }
        Ok(())
    };
    let per_launch = |launches: &dyn Fn(usize) -> Result<()>| -> Result<f64> {
        let t = Instant::now();
        launches(BATCH)?;
        Ok(t.elapsed().as_secs_f64() * 1e6 / BATCH as f64)
    };
    let raw_batch = || per_launch(&raw_launches);
    let ours_batch = || per_launch(&our_launches);
    let (mut t_raw, mut t_ours) = (Vec::new(), Vec::new());
    let (mut rt_raw, mut rt_ours) = (Vec::new(), Vec::new());
    for round in 0..31 {
        // Alternate which goes first so drift in the machine's state hits both alike.
        for first in [round % 2 == 0, round % 2 == 1] {
            if first {
                t_raw.push(raw_batch()?);
                raw!(raw_sync, "cuStreamSynchronize", s);
            } else {
                t_ours.push(ours_batch()?);
                stream.synchronize()?;
            }
        }
        for _ in 0..20 {
            let t = Instant::now();
            raw_launches(1)?;
            raw!(raw_sync, "cuStreamSynchronize", s);
            rt_raw.push(t.elapsed().as_secs_f64() * 1e6);
            let t = Instant::now();
            our_launches(1)?;
            stream.synchronize()?;
            rt_ours.push(t.elapsed().as_secs_f64() * 1e6);
        }
    }
    rows.push(Row {
        name: "launch enqueue, 4 args (per launch)".into(),
        cudrv: median(t_ours),
        reference: median(t_raw),
        reference_name: "raw cuLaunchKernel",
        unit: "us",
        lower_is_better: true,
    });
    rows.push(Row {
        name: "launch + stream sync round trip".into(),
        cudrv: median(rt_ours),
        reference: median(rt_raw),
        reference_name: "raw launch + cuStreamSync",
        unit: "us",
        lower_is_better: true,
    });
    // The same launches with the profiler on: timing every launch from CUPTI's records (where
    // libcupti loads), with two event records each, and with events one launch in 16,
    // alternating with raw launches so both see the same state of the machine. Every launch
    // must be counted, and timed as the sampling says.
    use cudrv::profile::{Sampling, Timing};
    for (timing, sampling) in [
        (Timing::Cupti, Sampling::Every),
        (Timing::Events, Sampling::Every),
        (Timing::Events, Sampling::OneIn(16)),
    ] {
        ctx.profiler().set_timing(timing)?;
        ctx.profiler().set_sampling(sampling);
        if let Err(e) = ctx.profiler().enable() {
            println!("profiler timing {timing:?}: not available here ({e})");
            continue;
        }
        let (mut t_prof, mut t_raw2) = (Vec::new(), Vec::new());
        for _ in 0..15 {
            t_prof.push(ours_batch()?);
            stream.synchronize()?;
            t_raw2.push(raw_batch()?);
            stream.synchronize()?;
        }
        let profiled = ctx.profiler().report()?;
        ctx.profiler().disable();
        ctx.profiler().set_sampling(Sampling::Every);
        ctx.profiler().clear()?;
        let (timed, launched) = profiled
            .kernels
            .iter()
            .fold((0, 0), |(t, l), k| (t + k.count, l + k.launches));
        let expected = match sampling {
            Sampling::Every => timed == launched,
            Sampling::OneIn(n) => timed * (n as usize) < 2 * launched,
        };
        if launched != 15 * BATCH || !expected {
            return Err(cudrv::Error::InvalidArgument(format!(
                "timing {sampling:?}, the profiler counted {launched} launches of {} and timed {timed}",
                15 * BATCH
            )));
        }
        let how = match timing {
            Timing::Cupti => "cupti",
            _ => "events",
        };
        rows.push(Row {
            name: match sampling {
                Sampling::Every => format!("launch enqueue, profiler on, {how} (per launch)"),
                Sampling::OneIn(n) => format!("launch enqueue, profiler {how} 1 in {n} ({timed} of {launched} timed)"),
            },
            cudrv: median(t_prof),
            reference: median(t_raw2),
            reference_name: "raw cuLaunchKernel",
            unit: "us",
            lower_is_better: true,
        });
    }
    ctx.profiler().set_timing(Timing::Auto)?;
    let raw_us = rows
        .iter()
        .find(|r| r.reference_name == "raw cuLaunchKernel")
        .map_or(0.0, |r| r.reference);
    gemm_host(stream, raw_us, rows)?;
    // Kernel lookup by name through the registry (cached after the first).
    let t = Instant::now();
    for _ in 0..10_000 {
        std::hint::black_box(ctx.kernel("cudrv_empty_args")?);
    }
    let lookup = t.elapsed().as_secs_f64() * 1e6 / 10_000.0;
    println!("registry look-up of a cached kernel: {lookup:.3} us");
    Ok(())
}

/// Host time to enqueue a tiny GEMM (planning, dispatch, argument packing and the launch),
/// against the raw `cuLaunchKernel` of the launch rows (`raw_us`): a GEMM this small is bound by
/// its host path. Batches of 100 calls, the stream drained between batches so that the launch
/// queue never blocks the host.
fn gemm_host(stream: &Arc<Stream>, raw_us: f64, rows: &mut Vec<Row>) -> Result<()> {
    use cudrv::blas::{Gemm, GemmType, Transpose};
    fn time<T: GemmType + cudrv::memory::ValidAsZeroBits>(
        stream: &Arc<Stream>,
        n: usize,
        one: T::Scalar,
    ) -> Result<(f64, f64, String)>
    where
        T::Scalar: Copy + Into<f64>,
    {
        let a = DeviceBuffer::<T>::zeroed(stream, n * n)?;
        let b = DeviceBuffer::<T>::zeroed(stream, n * n)?;
        let mut c = DeviceBuffer::<T>::zeroed(stream, n * n)?;
        let g = Gemm::<T::Scalar>::new(Transpose::N, Transpose::N, n, n, n).alpha(one);
        let name = g.kernel_name::<T>(&a, &b, &c)?;
        g.run::<T>(&a, &b, &mut c)?;
        stream.synchronize()?;
        const BATCH: usize = 100;
        let (mut run, mut plan) = (Vec::new(), Vec::new());
        for _ in 0..21 {
            let t = Instant::now();
            for _ in 0..BATCH {
                g.run::<T>(&a, &b, &mut c)?;
            }
            run.push(t.elapsed().as_secs_f64() * 1e6 / BATCH as f64);
            stream.synchronize()?;
            let t = Instant::now();
            for _ in 0..BATCH {
                std::hint::black_box(g.kernel_name::<T>(&a, &b, &c)?);
            }
            plan.push(t.elapsed().as_secs_f64() * 1e6 / BATCH as f64);
        }
        Ok((median(run), median(plan), name))
    }
    // (per call, plan + dispatch alone, kernel)
    type Timing = Result<(f64, f64, String)>;
    let cases: [(&str, Timing); 6] = [
        ("gemm f32 2^3", time::<f32>(stream, 2, 1.0)),
        ("gemm f32 16^3", time::<f32>(stream, 16, 1.0)),
        ("gemm f32 64^3", time::<f32>(stream, 64, 1.0)),
        ("gemm f16 16^3", time::<half::f16>(stream, 16, 1.0)),
        ("gemm f16 256^3", time::<half::f16>(stream, 256, 1.0)),
        ("gemm f64 64^3", time::<f64>(stream, 64, 1.0)),
    ];
    for (label, r) in cases {
        let (run, plan, name) = r?;
        println!("{label}: {run:.3} us per call ({name}); plan + dispatch alone (kernel_name) {plan:.3} us");
        rows.push(Row {
            name: format!("{label} enqueue (per call)"),
            cudrv: run,
            reference: raw_us,
            reference_name: "raw cuLaunchKernel",
            unit: "us",
            lower_is_better: true,
        });
    }
    Ok(())
}

fn alloc(stream: &Arc<Stream>, rows: &mut Vec<Row>) -> Result<()> {
    let alloc_async = sys::resolve::cuMemAllocAsync()?;
    let free_async = sys::resolve::cuMemFreeAsync()?;
    let alloc_sync = sys::resolve::cuMemAlloc_v2()?;
    let free_sync = sys::resolve::cuMemFree_v2()?;
    let s = stream.raw();
    for (label, bytes) in [("4 KiB", 4usize << 10), ("1 MiB", 1 << 20), ("64 MiB", 64 << 20)] {
        let (mut ours, mut r_async, mut r_sync) = (Vec::new(), Vec::new(), Vec::new());
        // Each sample times a batch (a host timer costs tens of nanoseconds on this VM, too much
        // to read around every sub-microsecond call); the cuMemAlloc batch is small because
        // each call takes ~100 us.
        const BATCH: usize = 100;
        for _ in 0..41 {
            let t = Instant::now();
            for _ in 0..BATCH {
                // SAFETY: the buffer is dropped unread.
                let buf = unsafe { DeviceBuffer::<u8>::uninit(stream, bytes)? };
                drop(buf);
            }
            ours.push(t.elapsed().as_secs_f64() * 1e6 / BATCH as f64);

            let mut p: CUdeviceptr = 0;
            let t = Instant::now();
            for _ in 0..BATCH {
                raw!(alloc_async, "cuMemAllocAsync", &mut p, bytes, s);
                raw!(free_async, "cuMemFreeAsync", p, s);
            }
            r_async.push(t.elapsed().as_secs_f64() * 1e6 / BATCH as f64);

            let t = Instant::now();
            for _ in 0..5 {
                raw!(alloc_sync, "cuMemAlloc", &mut p, bytes);
                raw!(free_sync, "cuMemFree", p);
            }
            r_sync.push(t.elapsed().as_secs_f64() * 1e6 / 5.0);
        }
        stream.synchronize()?;
        let ours = median(ours);
        let name = format!("pooled alloc + free {label}");
        rows.push(Row {
            name: name.clone(),
            cudrv: ours,
            reference: median(r_async),
            reference_name: "raw cuMemAllocAsync+Free",
            unit: "us",
            lower_is_better: true,
        });
        rows.push(Row {
            name,
            cudrv: ours,
            reference: median(r_sync),
            reference_name: "raw cuMemAlloc+cuMemFree",
            unit: "us",
            lower_is_better: true,
        });
    }
    let stats = stream.context().memory_stats();
    println!(
        "caching pool after the alloc bench: hit rate {:.4}, {}",
        stats.hit_rate,
        stats.to_json()
    );

    // Pinned host memory: the context's pinned pool against cuMemHostAlloc + cuMemFreeHost.
    let ctx = stream.context();
    let host_alloc = sys::resolve::cuMemHostAlloc()?;
    let host_free = sys::resolve::cuMemFreeHost()?;
    for (label, bytes) in [("1 MiB", 1usize << 20), ("64 MiB", 64 << 20)] {
        let (mut ours, mut raw_times) = (Vec::new(), Vec::new());
        for _ in 0..20 {
            let t = Instant::now();
            drop(PinnedHostBuffer::<u8>::new(ctx, bytes)?);
            ours.push(t.elapsed().as_secs_f64() * 1e6);
            let mut p = std::ptr::null_mut();
            let t = Instant::now();
            raw!(host_alloc, "cuMemHostAlloc", &mut p, bytes, 0);
            // The pool zeroes what it hands out; do the same so both sides give zeroed memory.
            // SAFETY: `p` holds `bytes` writable bytes just allocated.
            unsafe { std::ptr::write_bytes(p.cast::<u8>(), 0, bytes) };
            raw!(host_free, "cuMemFreeHost", p);
            raw_times.push(t.elapsed().as_secs_f64() * 1e6);
        }
        rows.push(Row {
            name: format!("pinned alloc (zeroed) + free {label}"),
            cudrv: median(ours),
            reference: median(raw_times),
            reference_name: "raw cuMemHostAlloc+FreeHost",
            unit: "us",
            lower_is_better: true,
        });
    }
    println!("pinned pool after the alloc bench: {:?}", ctx.pinned_pool().stats());
    Ok(())
}

fn gbps(bytes: usize, seconds: f64) -> f64 {
    bytes as f64 / seconds / 1e9
}

fn copy(ctx: &Arc<Context>, stream: &Arc<Stream>, rows: &mut Vec<Row>) -> Result<()> {
    const BYTES: usize = 256 << 20;
    const REPS: usize = 7;
    let n = BYTES / 4;
    let host: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut back = vec![0.0f32; n];
    let mut dev = DeviceBuffer::<f32>::zeroed(stream, n)?;
    let htod = sys::resolve::cuMemcpyHtoD_v2()?;
    let dtoh = sys::resolve::cuMemcpyDtoH_v2()?;
    let htod_async = sys::resolve::cuMemcpyHtoDAsync_v2()?;
    let dtoh_async = sys::resolve::cuMemcpyDtoHAsync_v2()?;
    let dtod_async = sys::resolve::cuMemcpyDtoDAsync_v2()?;
    let sync = sys::resolve::cuStreamSynchronize()?;
    let s = stream.raw();
    let d = dev.device_ptr();
    stream.synchronize()?;

    let time = |f: &mut dyn FnMut() -> Result<()>| -> Result<f64> {
        let mut v = Vec::new();
        for _ in 0..REPS {
            let t = Instant::now();
            f()?;
            v.push(t.elapsed().as_secs_f64());
        }
        Ok(median(v))
    };

    // Pageable host memory (cudrv stages large copies through pinned chunks).
    let pageable_h2d = time(&mut || dev.copy_from_slice(&host))?;
    let ours = pageable_h2d;
    let reference = time(&mut || {
        raw!(htod, "cuMemcpyHtoD", d, host.as_ptr().cast(), BYTES);
        Ok(())
    })?;
    rows.push(bw_row(
        "H2D 256 MiB pageable",
        ours,
        reference,
        "raw cuMemcpyHtoD",
        BYTES,
    ));
    let pageable_d2h = time(&mut || dev.copy_to_slice(&mut back))?;
    let ours = pageable_d2h;
    let bp = back.as_mut_ptr();
    let reference = time(&mut || {
        raw!(dtoh, "cuMemcpyDtoH", bp.cast(), d, BYTES);
        Ok(())
    })?;
    rows.push(bw_row(
        "D2H 256 MiB pageable",
        ours,
        reference,
        "raw cuMemcpyDtoH",
        BYTES,
    ));

    // Pinned host memory.
    let mut pinned = PinnedHostBuffer::<f32>::new(ctx, n)?;
    pinned.as_mut_slice()?.copy_from_slice(&host);
    let pp = pinned.as_slice()?.as_ptr();
    let ours = time(&mut || {
        dev.copy_from_pinned_async(&pinned)?;
        pinned.synchronize()
    })?;
    let reference = time(&mut || {
        raw!(htod_async, "cuMemcpyHtoDAsync", d, pp.cast(), BYTES, s);
        raw!(sync, "cuStreamSynchronize", s);
        Ok(())
    })?;
    rows.push(bw_row(
        "H2D 256 MiB pinned",
        ours,
        reference,
        "raw cuMemcpyHtoDAsync",
        BYTES,
    ));
    rows.push(bw_row(
        "H2D 256 MiB pageable (cudrv) vs pinned",
        pageable_h2d,
        reference,
        "raw pinned cuMemcpyHtoDAsync",
        BYTES,
    ));
    let ours = time(&mut || {
        dev.copy_to_pinned_async(&mut pinned)?;
        pinned.synchronize()
    })?;
    let pm = pinned.as_mut_slice()?.as_mut_ptr();
    let reference = time(&mut || {
        raw!(dtoh_async, "cuMemcpyDtoHAsync", pm.cast(), d, BYTES, s);
        raw!(sync, "cuStreamSynchronize", s);
        Ok(())
    })?;
    rows.push(bw_row(
        "D2H 256 MiB pinned",
        ours,
        reference,
        "raw cuMemcpyDtoHAsync",
        BYTES,
    ));
    rows.push(bw_row(
        "D2H 256 MiB pageable (cudrv) vs pinned",
        pageable_d2h,
        reference,
        "raw pinned cuMemcpyDtoHAsync",
        BYTES,
    ));

    // Device to device, 1 GiB, bytes read + written counted.
    let big = 1usize << 30;
    let src = DeviceBuffer::<u8>::zeroed(stream, big)?;
    let mut dst = DeviceBuffer::<u8>::zeroed(stream, big)?;
    let (ps, pd) = (src.device_ptr(), dst.device_ptr());
    let ours = time(&mut || {
        dst.copy_from_device(&src)?;
        stream.synchronize()
    })?;
    let reference = time(&mut || {
        raw!(dtod_async, "cuMemcpyDtoDAsync", pd, ps, big, s);
        raw!(sync, "cuStreamSynchronize", s);
        Ok(())
    })?;
    rows.push(bw_row(
        "D2D 1 GiB (read+write)",
        ours,
        reference,
        "raw cuMemcpyDtoDAsync",
        2 * big,
    ));
    Ok(())
}

fn bw_row(name: &str, ours: f64, reference: f64, reference_name: &'static str, bytes: usize) -> Row {
    Row {
        name: name.into(),
        cudrv: gbps(bytes, ours),
        reference: gbps(bytes, reference),
        reference_name,
        unit: "GB/s",
        lower_is_better: false,
    }
}
