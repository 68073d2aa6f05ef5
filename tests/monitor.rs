//! The monitor's exports without a GPU: the Prometheus text format line by line (families
//! declared once, before their samples; labels escaped; NVML figures only when present) and
//! the JSON form.

use cudrv::monitor::{DeviceId, DeviceMemory, GpuReadings, Snapshot};
use cudrv::profile::{KernelStats, Sample};

fn snapshot(gpu: GpuReadings) -> Snapshot {
    let samples: Vec<Sample> = [10.0, 30.0]
        .iter()
        .map(|&d| Sample {
            name: "gemm f32 nn 8x8x8 / k\"1\\".into(),
            stream: 0,
            start_us: 0.0,
            duration_us: d,
            flops: 1024.0,
            bytes: 0.0,
        })
        .collect();
    let kernel = KernelStats::of(&samples[0].name, &samples.iter().collect::<Vec<_>>());
    let other = KernelStats::of("fill_f32", &samples.iter().collect::<Vec<_>>());
    Snapshot {
        unix_ms: 1_700_000_000_000,
        device: DeviceId {
            ordinal: 1,
            name: "Test GPU".into(),
            uuid: "GPU-1234".into(),
        },
        memory: DeviceMemory {
            total_bytes: 80 << 30,
            free_bytes: 60 << 30,
            used_bytes: 20 << 30,
        },
        pool: Default::default(),
        profiling: true,
        kernels: vec![kernel, other],
        gpu,
    }
}

/// (family, labels, value) of each sample line; panics on a malformed line.
fn parse(text: &str) -> Vec<(String, String, f64)> {
    let mut declared: Vec<String> = Vec::new();
    let mut helped: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            helped.push(rest.split(' ').next().unwrap().into());
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            assert!(kind == "gauge" || kind == "counter", "{line}");
            assert!(!declared.iter().any(|d| d == name), "{name} declared twice");
            assert!(helped.last().is_some_and(|h| h == name), "{name}: HELP before TYPE");
            declared.push(name.into());
            continue;
        }
        let (name, rest) = line.split_once('{').unwrap();
        assert!(name.starts_with("cudrv_") && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
        assert_eq!(
            declared.last().map(String::as_str),
            Some(name),
            "{line}: samples follow their TYPE line"
        );
        let (labels, value) = rest.rsplit_once("} ").unwrap();
        out.push((name.to_string(), labels.to_string(), value.parse::<f64>().unwrap()));
    }
    out
}

#[test]
fn prometheus_text_is_well_formed_and_complete() {
    let s = snapshot(GpuReadings::Available {
        utilization_percent: Some(87),
        memory_utilization_percent: None,
        sm_clock_mhz: Some(1980),
        memory_clock_mhz: Some(2619),
        temperature_c: Some(41),
        power_w: Some(312.5),
        power_limit_w: Some(700.0),
    });
    let lines = parse(&s.to_prometheus());
    let get = |name: &str| lines.iter().find(|l| l.0 == name).map(|l| l.2);
    assert_eq!(get("cudrv_memory_used_bytes"), Some((20u64 << 30) as f64));
    assert_eq!(get("cudrv_gpu_utilization_percent"), Some(87.0));
    assert_eq!(get("cudrv_gpu_power_watts"), Some(312.5));
    assert_eq!(
        get("cudrv_gpu_memory_utilization_percent"),
        None,
        "absent readings are left out"
    );
    assert_eq!(get("cudrv_nvml_available"), Some(1.0));
    assert_eq!(get("cudrv_kernel_launches_total"), Some(2.0));
    assert_eq!(
        lines.iter().filter(|l| l.0 == "cudrv_kernel_launches_total").count(),
        2,
        "both kernels' samples, grouped under one family (parse checks the grouping)"
    );
    assert_eq!(get("cudrv_kernel_mean_microseconds"), Some(20.0));
    let kernel_labels = &lines.iter().find(|l| l.0 == "cudrv_kernel_launches_total").unwrap().1;
    assert_eq!(
        kernel_labels, "device=\"1\",uuid=\"GPU-1234\",kernel=\"gemm f32 nn 8x8x8 / k\\\"1\\\\\"",
        "quotes and backslashes escaped"
    );
    let json: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
    assert_eq!(json["gpu"]["status"], "available");
    assert_eq!(json["gpu"]["sm_clock_mhz"], 1980);
    assert_eq!(json["kernels"][0]["count"], 2);
}

#[test]
fn several_snapshots_make_one_exposition() {
    let mut second = snapshot(GpuReadings::Unavailable {
        reason: "absent".into(),
    });
    second.device.ordinal = 2;
    second.device.uuid = "GPU-5678".into();
    let first = snapshot(GpuReadings::Available {
        utilization_percent: Some(10),
        memory_utilization_percent: Some(3),
        sm_clock_mhz: Some(1980),
        memory_clock_mhz: Some(2619),
        temperature_c: Some(40),
        power_w: Some(100.0),
        power_limit_w: Some(700.0),
    });
    let text = cudrv::monitor::prometheus(&[first, second]);
    let lines = parse(&text);
    let used: Vec<&str> = lines
        .iter()
        .filter(|l| l.0 == "cudrv_memory_used_bytes")
        .map(|l| l.1.as_str())
        .collect();
    assert_eq!(
        used,
        ["device=\"1\",uuid=\"GPU-1234\"", "device=\"2\",uuid=\"GPU-5678\""]
    );
    let available: Vec<f64> = lines
        .iter()
        .filter(|l| l.0 == "cudrv_nvml_available")
        .map(|l| l.2)
        .collect();
    assert_eq!(available, [1.0, 0.0]);
}

#[test]
fn without_nvml_the_export_says_so_and_keeps_the_rest() {
    let s = snapshot(GpuReadings::Unavailable {
        reason: "NVML not available (libnvidia-ml.so.1: cannot open)".into(),
    });
    let lines = parse(&s.to_prometheus());
    assert!(lines.iter().all(|l| !l.0.starts_with("cudrv_gpu_")));
    assert!(lines.iter().any(|l| l.0 == "cudrv_nvml_available" && l.2 == 0.0));
    assert!(lines.iter().any(|l| l.0 == "cudrv_memory_total_bytes"));
    let json: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
    assert_eq!(json["gpu"]["status"], "unavailable");
    assert!(json["gpu"]["reason"].as_str().unwrap().contains("libnvidia-ml"));
}
