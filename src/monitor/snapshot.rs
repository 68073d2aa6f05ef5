//! One moment of a device as the monitor sees it: memory, the caching pool, the profiler's
//! kernel figures and NVML's readings; as JSON or in the Prometheus text format.

use serde::Serialize;

use super::nvml::GpuReadings;
use crate::memory::pool::PoolStats;
use crate::profile::KernelStats;

/// The device a snapshot is of.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DeviceId {
    /// CUDA ordinal.
    pub ordinal: usize,
    /// Marketing name, e.g. "NVIDIA H100 80GB HBM3".
    pub name: String,
    /// `GPU-xxxxxxxx-...`, as nvidia-smi prints it.
    pub uuid: String,
}

/// Device memory as the driver reports it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct DeviceMemory {
    /// Total bytes.
    pub total_bytes: u64,
    /// Free bytes.
    pub free_bytes: u64,
    /// `total - free`: every process's use, this one's pool included.
    pub used_bytes: u64,
}

/// A snapshot ([`super::Monitor::snapshot`]).
///
/// ```
/// use cudrv::monitor::{DeviceId, DeviceMemory, GpuReadings, Snapshot};
/// let s = Snapshot {
///     unix_ms: 0,
///     device: DeviceId { ordinal: 0, name: "GPU".into(), uuid: "GPU-0".into() },
///     memory: DeviceMemory { total_bytes: 100, free_bytes: 40, used_bytes: 60 },
///     pool: Default::default(),
///     profiling: false,
///     kernels: vec![],
///     gpu: GpuReadings::Unavailable { reason: "absent".into() },
/// };
/// assert!(s.to_prometheus().contains("cudrv_memory_used_bytes{device=\"0\",uuid=\"GPU-0\"} 60\n"));
/// assert!(s.to_json().contains("\"used_bytes\":60"));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Snapshot {
    /// When it was taken, milliseconds since the Unix epoch.
    pub unix_ms: u64,
    /// Which device.
    pub device: DeviceId,
    /// Its memory.
    pub memory: DeviceMemory,
    /// The context's caching pool.
    pub pool: PoolStats,
    /// Whether the context's profiler is on.
    pub profiling: bool,
    /// The profiler's figures for the launches finished so far (empty when it is off).
    pub kernels: Vec<KernelStats>,
    /// NVML's readings, or why there are none.
    pub gpu: GpuReadings,
}

impl Snapshot {
    /// The snapshot as one JSON object (one line).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }

    /// The snapshot in the Prometheus text exposition format (version 0.0.4): gauges and
    /// counters named `cudrv_*`, labelled with the device's ordinal and UUID (and the kernel's
    /// name for kernel figures), each with its HELP and TYPE lines.
    pub fn to_prometheus(&self) -> String {
        prometheus(std::slice::from_ref(self))
    }

    /// Adds the snapshot's samples to `out`.
    fn expose(&self, out: &mut Exposition) {
        let dev = [
            ("device", self.device.ordinal.to_string()),
            ("uuid", self.device.uuid.clone()),
        ];
        let m = &self.memory;
        out.metric(
            "cudrv_memory_total_bytes",
            "gauge",
            "Device memory, bytes.",
            &dev,
            m.total_bytes as f64,
        );
        out.metric(
            "cudrv_memory_free_bytes",
            "gauge",
            "Free device memory, bytes.",
            &dev,
            m.free_bytes as f64,
        );
        out.metric(
            "cudrv_memory_used_bytes",
            "gauge",
            "Device memory in use by every process, bytes.",
            &dev,
            m.used_bytes as f64,
        );
        let p = &self.pool;
        for (name, help, v) in [
            (
                "cudrv_pool_reserved_bytes",
                "Bytes the caching pool holds from the device.",
                p.reserved_bytes,
            ),
            (
                "cudrv_pool_allocated_bytes",
                "Bytes in allocated blocks.",
                p.allocated_bytes,
            ),
            (
                "cudrv_pool_cached_bytes",
                "Bytes held but not allocated.",
                p.cached_bytes,
            ),
            (
                "cudrv_pool_peak_reserved_bytes",
                "Highest reserved bytes seen.",
                p.peak_reserved_bytes,
            ),
        ] {
            out.metric(name, "gauge", help, &dev, v as f64);
        }
        for (name, help, v) in [
            (
                "cudrv_pool_allocations_total",
                "Allocations served by the pool.",
                p.allocations,
            ),
            (
                "cudrv_pool_cache_hits_total",
                "Allocations served without reserving memory.",
                p.cache_hits,
            ),
            (
                "cudrv_pool_oom_failures_total",
                "Allocations that failed for lack of memory.",
                p.oom_failures,
            ),
        ] {
            out.metric(name, "counter", help, &dev, v as f64);
        }
        out.metric(
            "cudrv_profiling",
            "gauge",
            "1 when the context's profiler times launches.",
            &dev,
            f64::from(u8::from(self.profiling)),
        );
        for k in &self.kernels {
            let labels = [dev[0].clone(), dev[1].clone(), ("kernel", k.name.clone())];
            out.metric(
                "cudrv_kernel_launches_total",
                "counter",
                "Timed launches of the kernel.",
                &labels,
                k.count as f64,
            );
            out.metric(
                "cudrv_kernel_time_microseconds_total",
                "counter",
                "Device time of the kernel's timed launches, microseconds.",
                &labels,
                k.total_us,
            );
            out.metric(
                "cudrv_kernel_mean_microseconds",
                "gauge",
                "Mean device time per launch, microseconds.",
                &labels,
                k.mean_us,
            );
            out.metric(
                "cudrv_kernel_p99_microseconds",
                "gauge",
                "99th percentile of device time per launch, microseconds.",
                &labels,
                k.p99_us,
            );
        }
        out.metric(
            "cudrv_nvml_available",
            "gauge",
            "1 when NVML readings are present.",
            &dev,
            f64::from(u8::from(self.gpu.is_available())),
        );
        if let GpuReadings::Available {
            utilization_percent,
            memory_utilization_percent,
            sm_clock_mhz,
            memory_clock_mhz,
            temperature_c,
            power_w,
            power_limit_w,
        } = &self.gpu
        {
            let as_f = |v: &Option<u32>| v.map(f64::from);
            for (name, help, v) in [
                (
                    "cudrv_gpu_utilization_percent",
                    "Percent of time a kernel ran.",
                    as_f(utilization_percent),
                ),
                (
                    "cudrv_gpu_memory_utilization_percent",
                    "Percent of time device memory was accessed.",
                    as_f(memory_utilization_percent),
                ),
                ("cudrv_gpu_sm_clock_mhz", "SM clock, MHz.", as_f(sm_clock_mhz)),
                (
                    "cudrv_gpu_memory_clock_mhz",
                    "Memory clock, MHz.",
                    as_f(memory_clock_mhz),
                ),
                (
                    "cudrv_gpu_temperature_celsius",
                    "GPU temperature, degrees Celsius.",
                    as_f(temperature_c),
                ),
                ("cudrv_gpu_power_watts", "Board power draw, watts.", *power_w),
                (
                    "cudrv_gpu_power_limit_watts",
                    "Enforced power limit, watts.",
                    *power_limit_w,
                ),
            ] {
                if let Some(v) = v {
                    out.metric(name, "gauge", help, &dev, v);
                }
            }
        }
    }
}

/// Several snapshots (of several devices, or one device over time) as one Prometheus text
/// exposition: each metric family once, with every snapshot's samples under it, told apart by
/// their `device` and `uuid` labels.
///
/// ```
/// use cudrv::monitor::{prometheus, DeviceId, DeviceMemory, GpuReadings, Snapshot};
/// let snap = |ordinal: usize| Snapshot {
///     unix_ms: 0,
///     device: DeviceId { ordinal, name: "GPU".into(), uuid: format!("GPU-{ordinal}") },
///     memory: DeviceMemory { total_bytes: 100, free_bytes: 40, used_bytes: 60 },
///     pool: Default::default(),
///     profiling: false,
///     kernels: vec![],
///     gpu: GpuReadings::Unavailable { reason: "absent".into() },
/// };
/// let text = prometheus(&[snap(0), snap(1)]);
/// assert_eq!(text.matches("# TYPE cudrv_memory_used_bytes gauge").count(), 1);
/// assert!(text.contains("cudrv_memory_used_bytes{device=\"1\",uuid=\"GPU-1\"} 60\n"));
/// ```
pub fn prometheus(snapshots: &[Snapshot]) -> String {
    let mut out = Exposition::default();
    for s in snapshots {
        s.expose(&mut out);
    }
    out.text()
}

/// Builds the exposition text: the samples of each metric family together, after its HELP and
/// TYPE lines, families in the order they first appear (the format asks for a family's samples
/// in one group).
#[derive(Default)]
struct Exposition {
    families: Vec<Family>,
}

struct Family {
    name: &'static str,
    kind: &'static str,
    help: &'static str,
    samples: Vec<String>,
}

impl Exposition {
    fn metric(
        &mut self,
        name: &'static str,
        kind: &'static str,
        help: &'static str,
        labels: &[(&str, String)],
        value: f64,
    ) {
        let labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", escape(v))).collect();
        let sample = format!("{name}{{{}}} {}", labels.join(","), number(value));
        match self.families.iter_mut().find(|f| f.name == name) {
            Some(f) => f.samples.push(sample),
            None => self.families.push(Family {
                name,
                kind,
                help,
                samples: vec![sample],
            }),
        }
    }

    fn text(&self) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        for f in &self.families {
            let _ = writeln!(out, "# HELP {} {}", f.name, f.help);
            let _ = writeln!(out, "# TYPE {} {}", f.name, f.kind);
            for sample in &f.samples {
                out.push_str(sample);
                out.push('\n');
            }
        }
        out
    }
}

/// A label value with `\`, `"` and newlines escaped as the format asks.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// A sample value: integers without a fraction, NaN and infinities as the format spells them.
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}
