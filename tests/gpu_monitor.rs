//! GPU tests of the device monitor: snapshots against the driver's own figures, memory alerts
//! crossing both ways when memory is taken and given back, the profiler's figures in the
//! Prometheus and JSON exports, and the background watch. Each skips visibly without a GPU (and
//! fails under REQUIRE_GPU=1).

#[path = "support/gpu.rs"]
mod gpu;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use cudrv::monitor::{Crossing, GpuReadings, MemoryThreshold, Monitor};
use cudrv::{ops, DeviceBuffer};

/// Every sample line is `name{labels} value` with a known name and a number; every family has
/// HELP and TYPE lines before its samples.
fn check_prometheus(text: &str) {
    let mut declared = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut parts = rest.split(' ');
            declared.push(parts.next().unwrap().to_string());
            assert!(matches!(parts.next(), Some("gauge" | "counter")), "{line}");
            continue;
        }
        if line.starts_with("# HELP ") {
            continue;
        }
        let (name, rest) = line.split_once('{').unwrap_or_else(|| panic!("no labels: {line}"));
        assert!(name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'), "{line}");
        assert!(
            declared.iter().any(|d| d == name),
            "{name} sampled before its TYPE line"
        );
        let (_, value) = rest.rsplit_once("} ").unwrap_or_else(|| panic!("{line}"));
        assert!(value.parse::<f64>().is_ok() || value == "NaN", "{line}");
    }
}

#[test]
fn snapshots_agree_with_the_driver_and_export_cleanly() {
    let Some(ctx) = gpu!("snapshots_agree_with_the_driver_and_export_cleanly") else {
        return;
    };
    let s = ctx.new_stream().unwrap();
    let monitor = Monitor::new(&ctx);
    ctx.profiler().enable().unwrap();
    let mut x = DeviceBuffer::<f32>::zeroed(&s, 1 << 20).unwrap();
    for _ in 0..5 {
        ops::fill(&mut x, 2.0).unwrap();
    }
    s.synchronize().unwrap();
    let (before, _) = ctx.memory_info().unwrap();
    let snap = monitor.snapshot().unwrap();
    let (after, total) = ctx.memory_info().unwrap();
    assert_eq!(snap.memory.total_bytes, total as u64);
    assert!(snap.memory.used_bytes <= snap.memory.total_bytes);
    // Other processes (tests run beside this one) may allocate around the snapshot: its free
    // bytes lie between the driver's readings before and after it, within 256 MiB.
    let (low, high) = (
        before.min(after) as i64 - (256 << 20),
        before.max(after) as i64 + (256 << 20),
    );
    let free = snap.memory.free_bytes as i64;
    assert!((low..=high).contains(&free), "{free} outside {low}..={high}");
    assert_eq!(snap.device.uuid, ctx.device().uuid_string().unwrap());
    assert!(snap.pool.reserved_bytes >= 4 << 20, "{:?}", snap.pool);
    assert!(snap.profiling);
    let fill = snap
        .kernels
        .iter()
        .find(|k| k.name == "fill f32 1048576 / fill_f32")
        .expect("fill_f32 profiled");
    assert_eq!(fill.count, 5);
    match &snap.gpu {
        GpuReadings::Available {
            sm_clock_mhz,
            temperature_c,
            power_w,
            ..
        } => {
            println!("NVML: {:?}", snap.gpu);
            assert!(sm_clock_mhz.map_or(true, |c| c > 0), "{sm_clock_mhz:?}");
            assert!(
                temperature_c.map_or(true, |t| (1..=125).contains(&t)),
                "{temperature_c:?}"
            );
            assert!(power_w.map_or(true, |p| p > 0.0 && p < 2000.0), "{power_w:?}");
        }
        GpuReadings::Unavailable { reason } => {
            println!("NVML not available: {reason}");
            assert!(!reason.is_empty());
        }
    }
    let prom = snap.to_prometheus();
    check_prometheus(&prom);
    assert!(prom.contains("kernel=\"fill f32 1048576 / fill_f32\"} 5\n"), "{prom}");
    assert!(prom.contains(&format!(
        "cudrv_memory_total_bytes{{device=\"0\",uuid=\"{}\"}} {total}\n",
        snap.device.uuid
    )));
    let json: serde_json::Value = serde_json::from_str(&snap.to_json()).unwrap();
    assert_eq!(json["memory"]["total_bytes"].as_u64(), Some(total as u64));
    assert_eq!(json["kernels"][0]["count"].as_u64(), Some(5));
    ctx.profiler().disable();
}

#[test]
fn memory_alerts_fire_once_each_way_as_memory_is_taken_and_given_back() {
    let Some(ctx) = gpu!("memory_alerts_fire_once_each_way_as_memory_is_taken_and_given_back") else {
        return;
    };
    let s = ctx.new_stream().unwrap();
    let monitor = Monitor::new(&ctx);
    ctx.empty_cache();
    let base = monitor.snapshot().unwrap();
    let channel = monitor.alert_channel(MemoryThreshold::DeviceUsedBytes(base.memory.used_bytes + (512 << 20)));
    let pool_alerts = Arc::new(AtomicUsize::new(0));
    let counter = pool_alerts.clone();
    monitor.on_alert(
        MemoryThreshold::PoolReservedBytes(base.pool.reserved_bytes + (512 << 20)),
        move |a| {
            assert_eq!(
                a.crossing,
                if counter.load(Ordering::SeqCst) == 0 {
                    Crossing::Above
                } else {
                    Crossing::Below
                }
            );
            counter.fetch_add(1, Ordering::SeqCst);
        },
    );
    monitor.snapshot().unwrap();
    assert!(channel.try_recv().is_err(), "nothing crossed yet");
    let big = DeviceBuffer::<u8>::zeroed(&s, 1 << 30).unwrap();
    s.synchronize().unwrap();
    monitor.snapshot().unwrap();
    let up = channel.try_recv().expect("1 GiB more is above +512 MiB");
    assert_eq!(up.crossing, Crossing::Above);
    assert!(up.value > up.limit, "{up}");
    monitor.snapshot().unwrap();
    assert!(channel.try_recv().is_err(), "a steady state is quiet");
    drop(big);
    s.synchronize().unwrap();
    ctx.empty_cache();
    monitor.snapshot().unwrap();
    let down = channel.try_recv().expect("given back");
    assert_eq!(down.crossing, Crossing::Below);
    assert_eq!(
        pool_alerts.load(Ordering::SeqCst),
        2,
        "the pool threshold crossed up and down"
    );
}

#[test]
fn a_watch_takes_snapshots_in_the_background_until_stopped() {
    let Some(ctx) = gpu!("a_watch_takes_snapshots_in_the_background_until_stopped") else {
        return;
    };
    let monitor = Monitor::new(&ctx);
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    // A threshold every snapshot is above: one alert, on the first snapshot only.
    monitor.on_alert(MemoryThreshold::DeviceUsedFraction(0.0), move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    let watch = monitor.watch(Duration::from_millis(20));
    std::thread::sleep(Duration::from_millis(200));
    let last = watch.stop().unwrap().expect("at least one snapshot");
    assert!(last.memory.total_bytes > 0);
    assert_eq!(seen.load(Ordering::SeqCst), 1);
}
