//! `cudrv monitor`: a snapshot of a device (`--device N`, default 0) or of every device
//! (`--device all`) every `--interval` seconds (memory, the caching pool, GPU utilization,
//! clocks, temperature and power through NVML): one line per device, or JSON lines with
//! `--json`, or one Prometheus text exposition per interval with `--prometheus`; `--count N`
//! stops after N intervals.

use std::time::Duration;

use cudrv::monitor::{prometheus, GpuReadings, Monitor, Snapshot};
use cudrv::{Context, Device, Result};

/// How snapshots are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
    Prometheus,
}

/// What `cudrv monitor` was asked.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    pub interval: Duration,
    pub count: Option<u64>,
    pub format: Format,
    /// The device ordinal, or `None` for every device.
    pub device: Option<usize>,
}

/// Parses the options after `cudrv monitor`.
pub fn options(args: &[String]) -> std::result::Result<Options, String> {
    let mut o = Options {
        interval: Duration::from_secs(1),
        count: None,
        format: Format::Text,
        device: Some(0),
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--json" => o.format = Format::Json,
            "--prometheus" => o.format = Format::Prometheus,
            "--interval" => {
                let v = it.next().ok_or("--interval needs seconds")?;
                let secs = v
                    .parse::<f64>()
                    .ok()
                    .filter(|s| s.is_finite() && *s >= 0.01 && *s <= 86_400.0)
                    .ok_or_else(|| format!("--interval takes seconds from 0.01 to 86400, not {v:?}"))?;
                o.interval = Duration::from_secs_f64(secs);
            }
            "--count" => {
                let v = it.next().ok_or("--count needs a number")?;
                o.count = Some(
                    v.parse::<u64>()
                        .ok()
                        .filter(|&n| n > 0)
                        .ok_or_else(|| format!("--count takes a positive number, not {v:?}"))?,
                );
            }
            "--device" => {
                let v = it.next().ok_or("--device needs an ordinal or `all`")?;
                o.device = match v.as_str() {
                    "all" => None,
                    n => Some(
                        n.parse::<usize>()
                            .map_err(|_| format!("--device takes an ordinal or `all`, not {v:?}"))?,
                    ),
                };
            }
            other => return Err(format!("unknown option {other:?} to monitor")),
        }
    }
    Ok(o)
}

fn mib(bytes: u64) -> String {
    format!("{:.0} MiB", bytes as f64 / (1u64 << 20) as f64)
}

fn line(s: &Snapshot) -> String {
    let gpu = match &s.gpu {
        GpuReadings::Available {
            utilization_percent,
            sm_clock_mhz,
            temperature_c,
            power_w,
            power_limit_w,
            ..
        } => {
            let show = |v: Option<u32>, unit: &str| v.map_or("-".into(), |v| format!("{v}{unit}"));
            format!(
                "util {:>4}  sm {:>8}  temp {:>5}  power {}/{}",
                show(*utilization_percent, "%"),
                show(*sm_clock_mhz, " MHz"),
                show(*temperature_c, " C"),
                power_w.map_or("-".into(), |p| format!("{p:.0} W")),
                power_limit_w.map_or("-".into(), |p| format!("{p:.0} W"))
            )
        }
        GpuReadings::Unavailable { reason } => format!("NVML: {reason}"),
    };
    format!(
        "device {}  used {:>10} of {:>10}  pool reserved {:>9}  {gpu}",
        s.device.ordinal,
        mib(s.memory.used_bytes),
        mib(s.memory.total_bytes),
        mib(s.pool.reserved_bytes)
    )
}

pub fn run(o: &Options) -> Result<bool> {
    let ordinals: Vec<usize> = match o.device {
        Some(n) => vec![n],
        None => (0..Device::count()?).collect(),
    };
    let mut monitors = Vec::new();
    for &n in &ordinals {
        let ctx = Context::new(n)?;
        if o.format == Format::Text {
            println!(
                "monitor of device {n}: {} ({})",
                ctx.device().name()?,
                ctx.device().uuid_string()?
            );
        }
        monitors.push(Monitor::new(&ctx));
    }
    let mut taken = 0u64;
    loop {
        let snapshots = monitors.iter().map(Monitor::snapshot).collect::<Result<Vec<_>>>()?;
        match o.format {
            Format::Text => snapshots.iter().for_each(|s| println!("{}", line(s))),
            Format::Json => snapshots.iter().for_each(|s| println!("{}", s.to_json())),
            Format::Prometheus => print!("{}", prometheus(&snapshots)),
        }
        taken += 1;
        if o.count.is_some_and(|c| taken >= c) {
            return Ok(true);
        }
        std::thread::sleep(o.interval);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> std::result::Result<Options, String> {
        options(&crate::strings(args))
    }

    #[test]
    fn options_parse_and_refuse() {
        let o = parse(&["--interval", "0.5", "--count", "3", "--prometheus"]).unwrap();
        assert_eq!(o.device, Some(0));
        assert_eq!(parse(&["--device", "all"]).unwrap().device, None);
        assert_eq!(parse(&["--device", "3"]).unwrap().device, Some(3));
        assert_eq!(
            (o.interval, o.count, o.format),
            (Duration::from_millis(500), Some(3), Format::Prometheus)
        );
        for bad in [
            &["--interval", "0"][..],
            &["--interval", "x"],
            &["--count", "0"],
            &["--count"],
            &["--top"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }
}
