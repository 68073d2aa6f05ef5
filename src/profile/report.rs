//! A profile's report: per-kernel statistics, and the launches themselves, as a terminal table,
//! JSON, and a Chrome trace-event file (Perfetto, chrome://tracing).

use std::fmt::Write;

use serde::Serialize;

use super::stats::{summarize, KernelStats, Sample};
use super::Timing;

/// What [`super::Profiler::report`] returns.
///
/// ```
/// use cudrv::profile::{Report, Sample};
/// let s = |d: f64| Sample { name: "k".into(), stream: 7, start_us: d, duration_us: 2.0, flops: 0.0, bytes: 0.0 };
/// let r = Report::from_samples(vec![s(0.0), s(5.0)]);
/// assert_eq!(r.kernels[0].count, 2);
/// assert!(r.table().contains("k"));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    /// Per kernel, most total device time first.
    pub kernels: Vec<KernelStats>,
    /// The timed launches, in the order they were launched: all of them, or the last
    /// [`super::Profiler::set_trace_capacity`] of them.
    pub samples: Vec<Sample>,
    /// Timed launches older than those in `samples` (they are in `kernels`' figures).
    pub dropped_samples: u64,
    /// How the launches were timed ([`Timing::Cupti`] or [`Timing::Events`]); `None` in a
    /// report made with [`Report::from_samples`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timing: Option<Timing>,
    /// Why the launches were timed with events where CUPTI was tried (libcupti absent, or held
    /// by another tool such as Nsight Systems).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why_not_cupti: Option<String>,
}

impl Report {
    /// The report of these launches.
    ///
    /// ```
    /// let r = cudrv::profile::Report::from_samples(Vec::new());
    /// assert!(r.kernels.is_empty());
    /// ```
    pub fn from_samples(samples: Vec<Sample>) -> Report {
        Report {
            kernels: summarize(&samples),
            samples,
            dropped_samples: 0,
            timing: None,
            why_not_cupti: None,
        }
    }

    /// A table for a terminal, with each kernel's flags and advice under it.
    ///
    /// ```
    /// let r = cudrv::profile::Report::from_samples(Vec::new());
    /// assert!(r.table().contains("no kernel launches"));
    /// ```
    pub fn table(&self) -> String {
        let mut s = String::new();
        if self.kernels.is_empty() {
            s.push_str("no kernel launches were profiled\n");
            return s;
        }
        let _ = writeln!(
            s,
            "{:<40} {:>13} {:>11} {:>9} {:>9} {:>9} {:>9} {:>9} {:>6} {:>8} {:>7}",
            "kernel", "count", "total us", "mean us", "std us", "min us", "max us", "p99 us", "CV %", "TFLOP/s", "GB/s"
        );
        for k in &self.kernels {
            let _ = writeln!(
                s,
                "{:<40} {:>13} {:>11.1} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>6.1} {:>8} {:>7}",
                k.name,
                if k.launches > k.count {
                    format!("{}/{}", k.count, k.launches)
                } else {
                    k.count.to_string()
                },
                k.total_us,
                k.mean_us,
                k.std_us,
                k.min_us,
                k.max_us,
                k.p99_us,
                k.cv * 100.0,
                k.tflops.map_or("-".into(), |t| format!("{t:.1}")),
                k.gbps.map_or("-".into(), |g| format!("{g:.0}"))
            );
            for (flag, advice) in k.flags.iter().zip(&k.advice) {
                let _ = writeln!(s, "    {flag}: {advice}");
            }
        }
        if self.kernels.iter().any(|k| k.launches > k.count) {
            s.push_str("count: timed/launched (the profiler samples; figures are the timed launches')\n");
        }
        if self.dropped_samples > 0 {
            let _ = writeln!(
                s,
                "{} earlier launches are in the figures but no longer in the trace",
                self.dropped_samples
            );
        }
        s
    }

    /// The report as JSON (kernels and samples).
    ///
    /// ```
    /// let r = cudrv::profile::Report::from_samples(Vec::new());
    /// assert!(r.to_json().starts_with('{'));
    /// ```
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// The launches in the Chrome trace-event format (one complete event per launch, one track
    /// per stream), for Perfetto (ui.perfetto.dev) or chrome://tracing.
    ///
    /// ```
    /// use cudrv::profile::{Report, Sample};
    /// let r = Report::from_samples(vec![Sample { name: "k".into(), stream: 3, start_us: 1.0, duration_us: 2.0, flops: 0.0, bytes: 0.0 }]);
    /// let trace: serde_json::Value = serde_json::from_str(&r.chrome_trace()).unwrap();
    /// assert_eq!(trace["traceEvents"].as_array().unwrap().iter().filter(|e| e["ph"] == "X").count(), 1);
    /// ```
    pub fn chrome_trace(&self) -> String {
        #[derive(Serialize)]
        struct Event<'a> {
            name: &'a str,
            cat: &'static str,
            ph: &'static str,
            ts: f64,
            dur: f64,
            pid: u32,
            tid: u64,
        }
        #[derive(Serialize)]
        struct Meta {
            name: &'static str,
            ph: &'static str,
            pid: u32,
            tid: u64,
            args: MetaArgs,
        }
        #[derive(Serialize)]
        struct MetaArgs {
            name: String,
        }
        #[derive(Serialize)]
        #[serde(untagged)]
        enum Any<'a> {
            Event(Event<'a>),
            Meta(Meta),
        }
        let mut streams: Vec<u64> = self.samples.iter().map(|s| s.stream).collect();
        streams.sort_unstable();
        streams.dedup();
        let mut events: Vec<Any> = streams
            .iter()
            .map(|&tid| {
                Any::Meta(Meta {
                    name: "thread_name",
                    ph: "M",
                    pid: 0,
                    tid,
                    args: MetaArgs {
                        name: if tid == 0 {
                            "stream NULL".into()
                        } else {
                            format!("stream {tid:#x}")
                        },
                    },
                })
            })
            .collect();
        events.extend(self.samples.iter().map(|s| {
            Any::Event(Event {
                name: &s.name,
                cat: "kernel",
                ph: "X",
                ts: s.start_us,
                dur: s.duration_us,
                pid: 0,
                tid: s.stream,
            })
        }));
        #[derive(Serialize)]
        struct Trace<'a> {
            #[serde(rename = "traceEvents")]
            trace_events: Vec<Any<'a>>,
            #[serde(rename = "displayTimeUnit")]
            display_time_unit: &'static str,
        }
        serde_json::to_string(&Trace {
            trace_events: events,
            display_time_unit: "ns",
        })
        .unwrap_or_default()
    }
}
