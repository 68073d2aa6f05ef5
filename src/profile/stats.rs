//! Per-kernel statistics of profiled launches, the flags a harness would raise, and what to do.

use serde::Serialize;

/// One timed launch.
///
/// ```
/// let s = cudrv::profile::Sample { name: "axpy_f32".into(), stream: 1, start_us: 10.0, duration_us: 2.5 };
/// assert_eq!(s.duration_us, 2.5);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Sample {
    /// The kernel's name.
    pub name: String,
    /// The stream it ran on (its driver handle, as a number; 0 for the NULL stream).
    pub stream: u64,
    /// Start on the device, microseconds since profiling was switched on.
    pub start_us: f64,
    /// Device time, microseconds.
    pub duration_us: f64,
}

/// What a kernel's figures suggest looking at.
///
/// ```
/// use cudrv::profile::Flag;
/// assert_eq!(Flag::Slow.to_string(), "slow");
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Flag {
    /// Mean above 5 ms.
    Slow,
    /// Coefficient of variation above 20%.
    HighVariance,
    /// A launch took more than twice the mean.
    Outliers,
    /// Many launches of a few microseconds each: launch overhead dominates.
    LaunchBound,
}

impl std::fmt::Display for Flag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Flag::Slow => "slow",
            Flag::HighVariance => "high variance",
            Flag::Outliers => "outliers",
            Flag::LaunchBound => "launch-bound",
        })
    }
}

/// One kernel's figures over the profiled launches.
///
/// ```
/// use cudrv::profile::{KernelStats, Sample};
/// let samples: Vec<Sample> = [1.0, 2.0, 3.0].iter().map(|&d| Sample {
///     name: "k".into(), stream: 0, start_us: 0.0, duration_us: d,
/// }).collect();
/// let s = KernelStats::of("k", &samples.iter().collect::<Vec<_>>());
/// assert_eq!((s.count, s.mean_us, s.min_us, s.max_us, s.p50_us), (3, 2.0, 1.0, 3.0, 2.0));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KernelStats {
    /// The kernel's name.
    pub name: String,
    /// Launches.
    pub count: usize,
    /// Total device time, microseconds.
    pub total_us: f64,
    /// Mean, microseconds.
    pub mean_us: f64,
    /// Standard deviation (population), microseconds.
    pub std_us: f64,
    /// Fastest launch, microseconds.
    pub min_us: f64,
    /// Slowest launch, microseconds.
    pub max_us: f64,
    /// Median, microseconds.
    pub p50_us: f64,
    /// 99th percentile (nearest rank), microseconds.
    pub p99_us: f64,
    /// Standard deviation over mean.
    pub cv: f64,
    /// What the figures suggest looking at.
    pub flags: Vec<Flag>,
    /// What to do about the flags, in words.
    pub advice: Vec<String>,
}

/// Mean above which a kernel is slow, microseconds.
pub const SLOW_US: f64 = 5000.0;
/// Coefficient of variation above which a kernel is unstable.
pub const HIGH_CV: f64 = 0.2;
/// A launch longer than this multiple of the mean is an outlier.
pub const OUTLIER_FACTOR: f64 = 2.0;

impl KernelStats {
    /// The figures of `samples` (all of one kernel; none is an empty, all-zero row).
    ///
    /// ```
    /// use cudrv::profile::{Flag, KernelStats, Sample};
    /// let mut d = vec![10.0; 20];
    /// d[7] = 40.0; // one launch four times the others
    /// let samples: Vec<Sample> = d.iter().map(|&d| Sample {
    ///     name: "k".into(), stream: 0, start_us: 0.0, duration_us: d,
    /// }).collect();
    /// let s = KernelStats::of("k", &samples.iter().collect::<Vec<_>>());
    /// assert!(s.flags.contains(&Flag::Outliers));
    /// ```
    pub fn of(name: &str, samples: &[&Sample]) -> KernelStats {
        let mut d: Vec<f64> = samples.iter().map(|s| s.duration_us).collect();
        d.sort_by(|a, b| a.total_cmp(b));
        let count = d.len();
        let total: f64 = d.iter().sum();
        let mean = if count > 0 { total / count as f64 } else { 0.0 };
        let var = if count > 0 {
            d.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / count as f64
        } else {
            0.0
        };
        let std = var.sqrt();
        let rank = |q: f64| -> f64 {
            if count == 0 {
                return 0.0;
            }
            let r = ((q * count as f64).ceil() as usize).clamp(1, count);
            d[r - 1]
        };
        let (min, max) = (d.first().copied().unwrap_or(0.0), d.last().copied().unwrap_or(0.0));
        let cv = if mean > 0.0 { std / mean } else { 0.0 };
        let mut stats = KernelStats {
            name: name.into(),
            count,
            total_us: total,
            mean_us: mean,
            std_us: std,
            min_us: min,
            max_us: max,
            p50_us: rank(0.5),
            p99_us: rank(0.99),
            cv,
            flags: Vec::new(),
            advice: Vec::new(),
        };
        stats.judge();
        stats
    }

    fn judge(&mut self) {
        let mut flag = |f: Flag, advice: String| {
            self.flags.push(f);
            self.advice.push(advice);
        };
        if self.mean_us > SLOW_US {
            flag(
                Flag::Slow,
                format!(
                    "mean {:.1} ms: check its occupancy (Function::attributes, the occupancy API) and memory \
                     access pattern; split the work if a launch holds the GPU for long",
                    self.mean_us / 1e3
                ),
            );
        }
        if self.count >= 3 && self.cv > HIGH_CV {
            flag(
                Flag::HighVariance,
                format!(
                    "CV {:.0}%: the launches differ (input-dependent work, contention with other streams, clock \
                     changes); profile with a fixed input and the device otherwise idle",
                    self.cv * 100.0
                ),
            );
        }
        if self.count >= 3 && self.max_us > OUTLIER_FACTOR * self.mean_us {
            flag(
                Flag::Outliers,
                format!(
                    "slowest launch {:.1} us is {:.1}x the mean: look for a first-use cost (module load, JIT) or \
                     a concurrent kernel; warm up before timing",
                    self.max_us,
                    self.max_us / self.mean_us.max(f64::MIN_POSITIVE)
                ),
            );
        }
        if self.count >= 100 && self.mean_us < 5.0 {
            flag(
                Flag::LaunchBound,
                format!(
                    "{} launches of {:.1} us each: the host's launch cost (a few us) is as large as the work; \
                     replay them as a graph (Stream::capture), run them in the persistent executor \
                     (cudrv::exec) or fuse them (cudrv::fuse)",
                    self.count, self.mean_us
                ),
            );
        }
    }
}

/// Statistics for every kernel in `samples`, most total time first.
///
/// ```
/// use cudrv::profile::{summarize, Sample};
/// let s = |n: &str, d: f64| Sample { name: n.into(), stream: 0, start_us: 0.0, duration_us: d };
/// let stats = summarize(&[s("a", 1.0), s("b", 5.0), s("a", 1.0)]);
/// assert_eq!((stats[0].name.as_str(), stats[1].count), ("b", 2));
/// ```
pub fn summarize(samples: &[Sample]) -> Vec<KernelStats> {
    let mut names: Vec<&str> = samples.iter().map(|s| s.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    let mut out: Vec<KernelStats> = names
        .into_iter()
        .map(|n| {
            let mine: Vec<&Sample> = samples.iter().filter(|s| s.name == n).collect();
            KernelStats::of(n, &mine)
        })
        .collect();
    out.sort_by(|a, b| b.total_us.total_cmp(&a.total_us));
    out
}
