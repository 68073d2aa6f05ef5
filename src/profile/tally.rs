//! One kernel's running figures: what the profiler keeps per kernel however long it runs. The
//! count, total, mean, standard deviation, extremes and work are exact over every timed launch;
//! the percentiles come from every duration up to [`KEPT`] of them, then from a uniform random
//! sample of that many (reservoir sampling), so a kernel's memory stays bounded.

use crate::selftest::Rng;

/// Durations a kernel keeps for its percentiles.
///
/// ```
/// assert_eq!(cudrv::profile::KEPT, 4096);
/// ```
pub const KEPT: usize = 4096;

/// A kernel's running figures.
#[derive(Clone, Debug)]
pub(crate) struct Tally {
    /// Launches seen while profiling, timed or not.
    pub launches: u64,
    /// Timed launches.
    pub count: u64,
    pub total: f64,
    /// Running mean and sum of squared deviations (Welford).
    mean: f64,
    m2: f64,
    pub min: f64,
    pub max: f64,
    pub flops: f64,
    pub bytes: f64,
    /// Every duration up to `KEPT`, then a uniform sample of `KEPT` of them.
    kept: Vec<f64>,
    rng: Rng,
}

impl Default for Tally {
    fn default() -> Tally {
        Tally {
            launches: 0,
            count: 0,
            total: 0.0,
            mean: 0.0,
            m2: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            flops: 0.0,
            bytes: 0.0,
            kept: Vec::new(),
            rng: Rng::new(0),
        }
    }
}

impl Tally {
    /// Adds a timed launch of `duration` microseconds credited with `flops` and `bytes`.
    pub fn add(&mut self, duration: f64, flops: f64, bytes: f64) {
        self.count += 1;
        self.total += duration;
        let delta = duration - self.mean;
        self.mean += delta / self.count as f64;
        self.m2 += delta * (duration - self.mean);
        self.min = self.min.min(duration);
        self.max = self.max.max(duration);
        self.flops += flops;
        self.bytes += bytes;
        if self.kept.len() < KEPT {
            self.kept.push(duration);
        } else {
            // Algorithm R: the n-th duration replaces a kept one with probability KEPT / n.
            let j = (self.rng.next_u64() % self.count) as usize;
            if j < KEPT {
                self.kept[j] = duration;
            }
        }
    }

    /// The mean (total over count: exact for a sum of exact terms).
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.total / self.count as f64
        }
    }

    /// The population standard deviation.
    pub fn std(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            (self.m2.max(0.0) / self.count as f64).sqrt()
        }
    }

    /// The `q` quantiles (nearest rank) of the kept durations; zeros when none was timed.
    pub fn quantiles<const N: usize>(&self, q: [f64; N]) -> [f64; N] {
        let mut d = self.kept.clone();
        d.sort_by(|a, b| a.total_cmp(b));
        q.map(|q| {
            if d.is_empty() {
                return 0.0;
            }
            let r = ((q * d.len() as f64).ceil() as usize).clamp(1, d.len());
            d[r - 1]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_figures_and_bounded_memory() {
        let mut t = Tally::default();
        let n = 100_000u64;
        for i in 1..=n {
            t.add(i as f64, 0.0, 0.0);
        }
        assert_eq!((t.count, t.min, t.max), (n, 1.0, n as f64));
        assert_eq!(t.total, (n * (n + 1) / 2) as f64);
        // Population variance of 1..=n is (n^2 - 1) / 12.
        let std = (((n * n - 1) as f64) / 12.0).sqrt();
        assert!((t.std() - std).abs() < 1e-9 * std, "{} vs {std}", t.std());
        assert_eq!(t.kept.len(), KEPT);
        // A uniform sample of 1..=n: its median within a few percent of n / 2.
        let [p50, p99] = t.quantiles([0.5, 0.99]);
        assert!((p50 / (n as f64 / 2.0) - 1.0).abs() < 0.05, "{p50}");
        assert!((p99 / (0.99 * n as f64) - 1.0).abs() < 0.02, "{p99}");
    }

    #[test]
    fn empty_is_all_zero() {
        let t = Tally::default();
        assert_eq!((t.mean(), t.std(), t.quantiles([0.5])), (0.0, 0.0, [0.0]));
    }
}
