//! GPU tests of the kernel profiler: launches timed per kernel, none while off or inside a
//! capture, an empty report without work, and the exports (JSON, a Chrome trace with one event
//! per launch). Each skips visibly without a GPU (and fails under REQUIRE_GPU=1).

#[path = "support/gpu.rs"]
mod gpu;

use cudrv::{ops, DeviceBuffer};

#[test]
fn profiler_times_every_launch_and_exports_a_trace() {
    let Some(ctx) = gpu!("profiler_times_every_launch_and_exports_a_trace") else {
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
