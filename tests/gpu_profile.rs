//! GPU tests of the kernel profiler: launches timed per kernel, none while off or inside a
//! capture, an empty report without work, and the exports (JSON, a Chrome trace with one event
//! per launch). Each skips visibly without a GPU (and fails under REQUIRE_GPU=1).

#[path = "support/gpu.rs"]
mod gpu;

use cudrv::{ops, DeviceBuffer, DeviceSlice};

#[test]
fn profiler_times_every_launch_and_exports_a_trace() {
    let Some((ctx, _turn)) = gpu::alone("profiler_times_every_launch_and_exports_a_trace") else {
        return;
    };
    let s = ctx.new_stream().unwrap();
    let other = ctx.new_stream().unwrap();
    let prof = ctx.profiler();
    prof.enable().unwrap();
    prof.clear().unwrap();
    // Nothing ran yet: an empty report, not an error.
    assert!(prof.report().unwrap().kernels.is_empty());
    let mut x = DeviceBuffer::from_slice(&s, &vec![1.0f32; 1 << 20]).unwrap();
    let mut y = DeviceBuffer::from_slice(&other, &vec![1.0f64; 1 << 16]).unwrap();
    for _ in 0..40 {
        ops::scale_in_place(&mut x, 1.0001f32).unwrap();
    }
    for _ in 0..7 {
        ops::fill(&mut y, 2.0f64).unwrap();
    }
    // Off: not timed.
    prof.disable();
    ops::scale_in_place(&mut x, 1.0f32).unwrap();
    prof.enable().unwrap();
    // Inside a capture: not timed (and the capture works).
    let g = s.capture(|_| ops::scale_in_place(&mut x, 1.0f32)).unwrap();
    g.launch(&s).unwrap();
    let r = prof.report().unwrap();
    assert_eq!(r.samples.len(), 47, "{}", r.table());
    let counts: Vec<usize> = r.kernels.iter().map(|k| k.count).collect();
    assert!(counts.contains(&40) && counts.contains(&7), "{counts:?}\n{}", r.table());
    for k in &r.kernels {
        assert!(k.min_us > 0.0 && k.min_us <= k.p50_us && k.p50_us <= k.max_us, "{k:?}");
        assert!((k.total_us - k.mean_us * k.count as f64).abs() < 1e-6 * k.total_us.max(1.0));
    }
    // Launches on one stream run in order: their starts do not go back in time.
    let on_s: Vec<f64> = r
        .samples
        .iter()
        .filter(|x| x.stream == s.raw() as u64)
        .map(|x| x.start_us)
        .collect();
    assert_eq!(on_s.len(), 40);
    assert!(on_s.windows(2).all(|w| w[1] >= w[0]), "{on_s:?}");
    // JSON and the trace parse; the trace has one complete event per launch and a track per stream.
    let json: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
    assert_eq!(json["samples"].as_array().unwrap().len(), 47);
    // ... and say how the launches were timed, as the profiler does.
    assert_eq!(r.timing, Some(prof.timing()));
    assert_eq!(json["timing"], serde_json::to_value(prof.timing()).unwrap());
    assert_eq!(r.why_not_cupti, prof.why_not_cupti());
    let trace: serde_json::Value = serde_json::from_str(&r.chrome_trace()).unwrap();
    let events = trace["traceEvents"].as_array().unwrap();
    assert_eq!(events.iter().filter(|e| e["ph"] == "X").count(), 47);
    assert_eq!(events.iter().filter(|e| e["ph"] == "M").count(), 2);
    let path = std::env::temp_dir().join(format!("cudrv-trace-{}.json", std::process::id()));
    std::fs::write(&path, r.chrome_trace()).unwrap();
    let back: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(back, trace);
    std::fs::remove_file(&path).unwrap();
    // Clearing forgets; the table says so.
    prof.clear().unwrap();
    assert!(prof.report().unwrap().table().contains("no kernel launches"));
    prof.disable();
}

#[test]
fn blas_launches_are_keyed_by_operation_and_shape_and_carry_their_work() {
    let Some((ctx, _turn)) = gpu::alone("blas_launches_are_keyed_by_operation_and_shape_and_carry_their_work") else {
        return;
    };
    use cudrv::blas::{Gemm, Transpose};
    let s = ctx.new_stream().unwrap();
    let prof = ctx.profiler();
    let (m, n, k) = (384, 256, 512);
    let a = DeviceBuffer::from_slice(&s, &vec![0.5f32; m * k]).unwrap();
    let b = DeviceBuffer::from_slice(&s, &vec![0.25f32; k * n]).unwrap();
    let mut c = DeviceBuffer::from_slice(&s, &vec![f32::NAN; m * n]).unwrap();
    let g = Gemm::new(Transpose::N, Transpose::N, m, n, k);
    g.run(&a, &b, &mut c).unwrap(); // first-use costs outside the profile
    prof.enable().unwrap();
    prof.clear().unwrap();
    for _ in 0..10 {
        g.run(&a, &b, &mut c).unwrap();
    }
    // Not waited for: whatever has finished (a subset of what the full report holds).
    let partial = prof.finished().unwrap();
    let r = prof.report().unwrap();
    prof.disable();
    assert!(partial.samples.len() <= r.samples.len());
    assert!(
        c.to_vec().unwrap().iter().all(|&v| v == 0.125 * k as f32),
        "the product itself"
    );
    let row = r
        .kernels
        .iter()
        .find(|row| row.name.starts_with("gemm f32 nn 384x256x512 / "))
        .unwrap_or_else(|| panic!("{}", r.table()));
    assert_eq!(row.count, 10, "{}", r.table());
    let tflops = row.tflops.expect("a product's work is known");
    let want = 2.0 * (m * n * k) as f64 * 10.0 / row.total_us / 1e6;
    assert!((tflops - want).abs() < 1e-9 * want, "{tflops} vs {want}");
    assert!(row.gbps.is_some_and(|g| g > 0.0));
    assert!(r.table().contains("TFLOP/s"));
    prof.enable().unwrap();
    prof.clear().unwrap();
    ops::fill(&mut c, 1.0f32).unwrap();
    let r = prof.report().unwrap();
    prof.disable();
    // An elementwise operation is keyed by its size and carries its bytes, not FLOPs.
    let fill = &r.kernels[0];
    assert_eq!(fill.name, format!("fill f32 {} / fill_f32", m * n));
    assert!(fill.tflops.is_none() && fill.gbps.is_some_and(|g| g > 0.0), "{fill:?}");
    assert_eq!(fill.block, Some([256, 1, 1]));
    assert!(fill.occupancy.is_some_and(|o| o > 0.0 && o <= 1.0), "{fill:?}");
    // Four rows of softmax: four blocks on a device with many more SMs, flagged.
    let rows = 4;
    let cols = 1 << 20;
    let x = DeviceBuffer::from_slice(&s, &vec![0.5f32; rows * cols]).unwrap();
    let mut p = DeviceBuffer::<f32>::zeroed(&s, rows * cols).unwrap();
    ops::softmax_rows(&mut p, &x, rows, cols).unwrap();
    prof.enable().unwrap();
    prof.clear().unwrap();
    ops::softmax_rows(&mut p, &x, rows, cols).unwrap();
    let r = prof.report().unwrap();
    prof.disable();
    let soft = &r.kernels[0];
    assert_eq!(soft.grid, Some([4, 1, 1]), "{}", r.table());
    if soft.p50_us >= 10.0 && ctx.limits().multiprocessor_count > 16 {
        assert!(soft.flags.contains(&cudrv::profile::Flag::SmallGrid), "{}", r.table());
        assert!(r.table().contains("4 blocks for"), "{}", r.table());
    }
}

#[test]
fn sampling_counts_every_launch_and_a_long_run_stays_bounded() {
    let Some((ctx, _turn)) = gpu::alone("sampling_counts_every_launch_and_a_long_run_stays_bounded") else {
        return;
    };
    use cudrv::profile::{Sampling, DEFAULT_TRACE_CAPACITY, FIRST_TIMED};
    let s = ctx.new_stream().unwrap();
    let prof = ctx.profiler();
    let mut x = DeviceBuffer::from_slice(&s, &vec![1.0f32; 1 << 16]).unwrap();
    prof.clear().unwrap();
    prof.set_trace_capacity(500);
    prof.set_sampling(Sampling::OneIn(16));
    prof.enable().unwrap();
    let n = 5000usize;
    for _ in 0..n {
        ops::scale_in_place(&mut x, 1.0f32).unwrap();
    }
    let r = prof.report().unwrap();
    assert_eq!(r.kernels.len(), 1, "{}", r.table());
    let k = &r.kernels[0];
    // Every launch counted; the first FIRST_TIMED and then about one in 16 timed (expected 320
    // more, standard deviation about 17).
    assert_eq!(k.launches, n, "{}", r.table());
    let extra = k.count - FIRST_TIMED as usize;
    assert!((240..=400).contains(&extra), "{} timed\n{}", k.count, r.table());
    assert_eq!(r.samples.len() + r.dropped_samples as usize, k.count);
    assert!(r.table().contains(&format!("{}/{n}", k.count)), "{}", r.table());
    // Every launch timed, more launches than the trace keeps and than are read back at once:
    // the figures cover all, the trace the last 500, in launch order.
    prof.clear().unwrap();
    prof.set_sampling(Sampling::Every);
    let n = 3000usize;
    for _ in 0..n {
        ops::scale_in_place(&mut x, 1.0f32).unwrap();
    }
    let r = prof.report().unwrap();
    let k = &r.kernels[0];
    assert_eq!((k.count, k.launches), (n, n), "{}", r.table());
    assert_eq!((r.samples.len(), r.dropped_samples), (500, 2500));
    assert!(r.samples.windows(2).all(|w| w[1].start_us >= w[0].start_us));
    assert!(k.min_us > 0.0 && k.min_us <= k.p50_us && k.p50_us <= k.p99_us && k.p99_us <= k.max_us);
    assert!((k.total_us - k.mean_us * n as f64).abs() < 1e-6 * k.total_us);
    assert!(r.table().contains("2500 earlier launches"), "{}", r.table());
    prof.disable();
    prof.set_trace_capacity(DEFAULT_TRACE_CAPACITY);
    prof.clear().unwrap();
    assert_eq!(x.to_vec().unwrap()[..4], [1.0f32; 4]);
}

#[test]
fn clearing_while_another_thread_launches_is_safe() {
    let Some((ctx, _turn)) = gpu::alone("clearing_while_another_thread_launches_is_safe") else {
        return;
    };
    let prof = ctx.profiler();
    prof.clear().unwrap();
    prof.enable().unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let launched = std::thread::scope(|sc| {
        let worker = sc.spawn(|| {
            let s = ctx.new_stream().unwrap();
            let mut x = DeviceBuffer::from_slice(&s, &vec![1.0f32; 4096]).unwrap();
            let mut n = 0usize;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                ops::scale_in_place(&mut x, 1.0f32).unwrap();
                n += 1;
            }
            s.synchronize().unwrap();
            n
        });
        // Clears land between other launches' begin and end: those launches are dropped, never
        // counted under another kernel's row, and nothing panics.
        for _ in 0..200 {
            prof.clear().unwrap();
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        worker.join().unwrap()
    });
    let r = prof.report().unwrap();
    prof.disable();
    assert!(launched > 0);
    assert!(r.kernels.len() <= 1, "{}", r.table());
    for k in &r.kernels {
        assert!(k.count <= k.launches && k.launches <= launched, "{k:?} of {launched}");
        assert_eq!(r.samples.len(), k.count);
    }
    prof.clear().unwrap();
}

#[test]
fn cupti_records_and_events_time_the_same_kernels() {
    let Some((ctx, _turn)) = gpu::alone("cupti_records_and_events_time_the_same_kernels") else {
        return;
    };
    use cudrv::profile::Timing;
    let s = ctx.new_stream().unwrap();
    let prof = ctx.profiler();
    // 16M f32 scaled in place: 128 MB of traffic, tens of microseconds.
    let mut x = DeviceBuffer::from_slice(&s, &vec![1.0f32; 1 << 24]).unwrap();
    ops::scale_in_place(&mut x, 1.0f32).unwrap();
    let mut mean = Vec::new();
    for timing in [Timing::Auto, Timing::Events, Timing::Auto] {
        prof.set_timing(timing).unwrap();
        prof.enable().unwrap();
        prof.clear().unwrap();
        for _ in 0..30 {
            ops::scale_in_place(&mut x, 1.0f32).unwrap();
        }
        let used = prof.timing();
        // Launches made while off are not timed, and a report after `disable` still has the
        // launches made while on.
        prof.disable();
        ops::scale_in_place(&mut x, 1.0f32).unwrap();
        let r = prof.report().unwrap();
        assert_eq!(r.kernels.len(), 1, "{used:?}\n{}", r.table());
        let k = &r.kernels[0];
        assert_eq!(
            (k.count, k.launches, r.samples.len()),
            (30, 30, 30),
            "{used:?}\n{}",
            r.table()
        );
        let starts: Vec<f64> = r.samples.iter().map(|x| x.start_us).collect();
        assert!(starts.windows(2).all(|w| w[1] >= w[0]), "{used:?}: {starts:?}");
        assert!(k.min_us > 5.0, "{used:?}\n{}", r.table());
        println!("{used:?}: mean {:.2} us, min {:.2} us", k.mean_us, k.min_us);
        mean.push((used, k.mean_us));
        if timing == Timing::Auto && used == Timing::Events {
            println!("CUPTI not used: {:?}", prof.why_not_cupti());
        }
    }
    prof.set_timing(Timing::Auto).unwrap();
    prof.clear().unwrap();
    // CUPTI's kernel times against the events around each launch: within 10% (the events add
    // the gap between the event and the kernel, 1-3 us on the H100 here: 56.4 against 59.7
    // us on 2026-11-27; both against Nsight Compute in docs/PERFORMANCE.md).
    if let Some(&(_, cupti)) = mean.iter().find(|(t, _)| *t == Timing::Cupti) {
        let events = mean[1].1;
        assert!(
            (events - cupti).abs() < 0.10 * events,
            "cupti {cupti:.2} us, events {events:.2} us"
        );
    } else if std::env::var("REQUIRE_CUPTI").is_ok_and(|v| v == "1") {
        panic!(
            "REQUIRE_CUPTI=1 but the profiler timed with events: {:?}",
            prof.why_not_cupti()
        );
    }
    assert_eq!(mean[1].0, Timing::Events);
}
