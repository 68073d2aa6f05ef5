//! Per-kernel statistics of profiled launches, the flags a harness would raise, and what to do.

use serde::Serialize;

use super::tally::Tally;

/// One timed launch.
///
/// ```
/// let s = cudrv::profile::Sample { name: "axpy_f32".into(), stream: 1, start_us: 10.0, duration_us: 2.5, flops: 0.0, bytes: 0.0 };
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
    /// Floating-point operations the launch did, where cudrv knows them (BLAS); 0 otherwise.
    pub flops: f64,
    /// Bytes the launch had to move at least, where cudrv knows them (BLAS); 0 otherwise.
    pub bytes: f64,
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
    /// The occupancy API's block size would keep a quarter more threads resident.
    LowOccupancy,
    /// Fewer blocks than a quarter of the device's SMs: most of the GPU idles.
    SmallGrid,
}

impl std::fmt::Display for Flag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Flag::Slow => "slow",
            Flag::HighVariance => "high variance",
            Flag::Outliers => "outliers",
            Flag::LaunchBound => "launch-bound",
            Flag::LowOccupancy => "low occupancy",
            Flag::SmallGrid => "small grid",
        })
    }
}

/// One kernel's figures over the profiled launches.
///
/// ```
/// use cudrv::profile::{KernelStats, Sample};
/// let samples: Vec<Sample> = [1.0, 2.0, 3.0].iter().map(|&d| Sample {
///     name: "k".into(), stream: 0, start_us: 0.0, duration_us: d, flops: 0.0, bytes: 0.0,
/// }).collect();
/// let s = KernelStats::of("k", &samples.iter().collect::<Vec<_>>());
/// assert_eq!((s.count, s.mean_us, s.min_us, s.max_us, s.p50_us), (3, 2.0, 1.0, 3.0, 2.0));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KernelStats {
    /// The kernel's name.
    pub name: String,
    /// Timed launches: the figures below are theirs.
    pub count: usize,
    /// Launches made while profiling, timed or not: `count` unless the profiler samples
    /// ([`super::Sampling::OneIn`]).
    pub launches: usize,
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
    /// 99th percentile (nearest rank), microseconds. Both percentiles are exact up to
    /// [`super::KEPT`] timed launches, then estimated from a uniform sample of that many.
    pub p99_us: f64,
    /// Standard deviation over mean.
    pub cv: f64,
    /// Achieved TFLOP/s (total operations over total time), where cudrv knows the operations.
    pub tflops: Option<f64>,
    /// Achieved GB/s of the bytes the launches had to move, where cudrv knows them.
    pub gbps: Option<f64>,
    /// The last launch's grid, where the profiler saw the launch.
    pub grid: Option<[u32; 3]>,
    /// The last launch's block.
    pub block: Option<[u32; 3]>,
    /// Resident threads per SM over the most an SM holds, for that launch (occupancy API).
    pub occupancy: Option<f64>,
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
    ///     name: "k".into(), stream: 0, start_us: 0.0, duration_us: d, flops: 0.0, bytes: 0.0,
    /// }).collect();
    /// let s = KernelStats::of("k", &samples.iter().collect::<Vec<_>>());
    /// assert!(s.flags.contains(&Flag::Outliers));
    /// ```
    pub fn of(name: &str, samples: &[&Sample]) -> KernelStats {
        let mut tally = Tally::default();
        for s in samples {
            tally.add(s.duration_us, s.flops, s.bytes);
        }
        tally.launches = tally.count;
        KernelStats::from_tally(name, &tally)
    }

    /// The figures of a kernel's running tally.
    pub(crate) fn from_tally(name: &str, t: &Tally) -> KernelStats {
        let (mean, std) = (t.mean(), t.std());
        let [p50, p99] = t.quantiles([0.5, 0.99]);
        let timed = t.count > 0;
        let rate = |per: f64, work: f64| (work > 0.0 && t.total > 0.0).then(|| work / t.total / per);
        let mut stats = KernelStats {
            name: name.into(),
            count: t.count as usize,
            launches: t.launches.max(t.count) as usize,
            total_us: t.total,
            mean_us: mean,
            std_us: std,
            min_us: if timed { t.min } else { 0.0 },
            max_us: if timed { t.max } else { 0.0 },
            p50_us: p50,
            p99_us: p99,
            cv: if mean > 0.0 { std / mean } else { 0.0 },
            tflops: rate(1e6, t.flops),
            gbps: rate(1e3, t.bytes),
            grid: None,
            block: None,
            occupancy: None,
            flags: Vec::new(),
            advice: Vec::new(),
        };
        stats.judge();
        stats
    }

    /// Adds what the launch's shape says. `resident`: threads per SM resident with its block
    /// size, of `per_sm`; `better`: the occupancy API's suggested block size with the threads it
    /// keeps resident, if that keeps at least a quarter more; `sms`: the device's SMs. Flags
    /// kernels whose median launch takes 10 us or more: low occupancy when the suggestion would
    /// raise it (a kernel whose registers or shared memory hold it low by design is not
    /// flagged), a small grid when the grid has fewer blocks than a quarter of the SMs.
    ///
    /// ```
    /// use cudrv::profile::{Flag, KernelStats, Sample};
    /// let s = Sample { name: "k".into(), stream: 0, start_us: 0.0, duration_us: 80.0, flops: 0.0, bytes: 0.0 };
    /// let mut k = KernelStats::of("k", &[&s]);
    /// k.judge_launch([16, 1, 1], [1024, 1, 1], (1024, 2048), Some((256, 2048)), 132);
    /// assert!(k.flags.contains(&Flag::LowOccupancy) && k.flags.contains(&Flag::SmallGrid));
    /// assert_eq!(k.occupancy, Some(0.5));
    /// ```
    pub fn judge_launch(
        &mut self,
        grid: [u32; 3],
        block: [u32; 3],
        (resident, per_sm): (u32, u32),
        better: Option<(u32, u32)>,
        sms: u32,
    ) {
        self.grid = Some(grid);
        self.block = Some(block);
        let threads = block.iter().product::<u32>();
        let per_sm = f64::from(per_sm.max(1));
        let occupancy = f64::from(resident) / per_sm;
        self.occupancy = Some(occupancy);
        if self.p50_us < 10.0 {
            return;
        }
        if let Some((suggested, keeps)) = better.filter(|&(_, keeps)| f64::from(keeps) >= 1.25 * f64::from(resident)) {
            self.flags.push(Flag::LowOccupancy);
            self.advice.push(format!(
                "occupancy {:.0}%: {resident} threads per SM resident with blocks of {threads}; blocks of \
                 {suggested} (the occupancy API's suggestion) keep {keeps} ({:.0}%); cudrv::tune measures which is \
                 faster",
                occupancy * 100.0,
                f64::from(keeps) / per_sm * 100.0
            ));
        }
        let blocks = u64::from(grid[0]) * u64::from(grid[1]) * u64::from(grid[2]);
        if blocks * 4 < u64::from(sms) {
            self.flags.push(Flag::SmallGrid);
            self.advice.push(format!(
                "{blocks} blocks for {sms} SMs: most of the GPU idles; launch at least {sms} blocks (smaller blocks, \
                 more work items, or a split of the work)"
            ));
        }
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
        if self.launches.max(self.count) >= 100 && self.mean_us < 5.0 {
            flag(
                Flag::LaunchBound,
                format!(
                    "{} launches of {:.1} us each: the host's launch cost (a few us) is as large as the work; \
                     replay them as a graph (Stream::capture), run them in the persistent executor \
                     (cudrv::exec) or fuse them (cudrv::fuse)",
                    self.launches.max(self.count),
                    self.mean_us
                ),
            );
        }
    }
}

/// Statistics for every kernel in `samples`, most total time first.
///
/// ```
/// use cudrv::profile::{summarize, Sample};
/// let s = |n: &str, d: f64| Sample { name: n.into(), stream: 0, start_us: 0.0, duration_us: d, flops: 0.0, bytes: 0.0 };
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
