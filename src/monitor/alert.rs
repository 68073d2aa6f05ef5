//! Memory alerts: a threshold on device or pool memory, reported once when a snapshot finds it
//! crossed upwards and once when it falls back (edge-triggered, so a steady state is quiet).

use std::sync::mpsc;

use serde::Serialize;

use super::snapshot::Snapshot;

/// What a memory alert watches.
///
/// ```
/// use cudrv::monitor::MemoryThreshold;
/// let t = MemoryThreshold::DeviceUsedFraction(0.9); // 90% of the device's memory in use
/// # let _ = t;
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum MemoryThreshold {
    /// Device memory in use (by every process), bytes.
    DeviceUsedBytes(u64),
    /// Device memory in use as a fraction of the total (0.0 to 1.0).
    DeviceUsedFraction(f64),
    /// Bytes the context's caching pool holds from the device.
    PoolReservedBytes(u64),
}

impl MemoryThreshold {
    /// (value, limit) in `snapshot`, in the threshold's unit.
    fn measure(&self, s: &Snapshot) -> (f64, f64) {
        match *self {
            MemoryThreshold::DeviceUsedBytes(b) => (s.memory.used_bytes as f64, b as f64),
            MemoryThreshold::DeviceUsedFraction(f) => {
                let total = s.memory.total_bytes.max(1) as f64;
                (s.memory.used_bytes as f64 / total, f)
            }
            MemoryThreshold::PoolReservedBytes(b) => (s.pool.reserved_bytes as f64, b as f64),
        }
    }
}

/// Which way a threshold was crossed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Crossing {
    /// The value rose above the limit.
    Above,
    /// The value fell back to the limit or below.
    Below,
}

/// A threshold crossing, as a snapshot found it.
///
/// ```
/// use cudrv::monitor::{Crossing, MemoryAlert, MemoryThreshold};
/// let a = MemoryAlert {
///     threshold: MemoryThreshold::DeviceUsedBytes(1 << 30),
///     crossing: Crossing::Above,
///     value: 2e9,
///     limit: 1073741824.0,
///     unix_ms: 0,
/// };
/// assert!(a.to_string().contains("above"));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MemoryAlert {
    /// The threshold.
    pub threshold: MemoryThreshold,
    /// Which way it was crossed.
    pub crossing: Crossing,
    /// The value found (bytes, or a fraction for [`MemoryThreshold::DeviceUsedFraction`]).
    pub value: f64,
    /// The limit, in the same unit.
    pub limit: f64,
    /// The snapshot's time, milliseconds since the Unix epoch.
    pub unix_ms: u64,
}

impl std::fmt::Display for MemoryAlert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let way = match self.crossing {
            Crossing::Above => "above",
            Crossing::Below => "back to or below",
        };
        write!(
            f,
            "{:?}: {} is {way} the limit {}",
            self.threshold, self.value, self.limit
        )
    }
}

/// Where a rule's alerts go.
pub(crate) enum Sink {
    Channel(mpsc::Sender<MemoryAlert>),
    Callback(Box<dyn Fn(&MemoryAlert) + Send + Sync>),
}

/// A threshold, whether it is crossed now, and its sink.
pub(crate) struct Rule {
    threshold: MemoryThreshold,
    above: bool,
    sink: Sink,
}

impl Rule {
    pub fn new(threshold: MemoryThreshold, sink: Sink) -> Rule {
        Rule {
            threshold,
            above: false,
            sink,
        }
    }

    /// The crossing `snapshot` shows, if any (the first snapshot above the limit counts as a
    /// crossing).
    pub fn evaluate(&mut self, snapshot: &Snapshot) -> Option<MemoryAlert> {
        let (value, limit) = self.threshold.measure(snapshot);
        let above = value > limit;
        if above == self.above {
            return None;
        }
        self.above = above;
        Some(MemoryAlert {
            threshold: self.threshold,
            crossing: if above { Crossing::Above } else { Crossing::Below },
            value,
            limit,
            unix_ms: snapshot.unix_ms,
        })
    }

    /// Delivers `alert`; `false` when the rule's receiver is gone (the rule can be dropped).
    pub fn deliver(&self, alert: &MemoryAlert) -> bool {
        match &self.sink {
            Sink::Channel(tx) => tx.send(alert.clone()).is_ok(),
            Sink::Callback(f) => {
                f(alert);
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::{DeviceId, DeviceMemory, GpuReadings};

    fn snap(used: u64, reserved: u64) -> Snapshot {
        let pool = crate::memory::pool::PoolStats {
            reserved_bytes: reserved,
            ..Default::default()
        };
        Snapshot {
            unix_ms: 7,
            device: DeviceId {
                ordinal: 0,
                name: "test".into(),
                uuid: "GPU-test".into(),
            },
            memory: DeviceMemory {
                total_bytes: 1000,
                free_bytes: 1000 - used,
                used_bytes: used,
            },
            pool,
            profiling: false,
            kernels: vec![],
            gpu: GpuReadings::Unavailable { reason: "test".into() },
        }
    }

    #[test]
    fn crossings_are_reported_once_each_way() {
        let (tx, rx) = mpsc::channel();
        let mut r = Rule::new(MemoryThreshold::DeviceUsedFraction(0.5), Sink::Channel(tx));
        let mut seen = Vec::new();
        for used in [100, 400, 600, 700, 650, 500, 200, 900] {
            if let Some(a) = r.evaluate(&snap(used, 0)) {
                assert!(r.deliver(&a));
                seen.push((used, a.crossing));
            }
        }
        assert_eq!(
            seen,
            vec![(600, Crossing::Above), (500, Crossing::Below), (900, Crossing::Above)]
        );
        assert_eq!(rx.try_iter().count(), 3);
        drop(rx);
        let a = r.evaluate(&snap(100, 0)).unwrap();
        assert!(!r.deliver(&a), "a dropped receiver is reported so the rule can go");
    }

    #[test]
    fn pool_and_byte_thresholds_measure_their_own_figure() {
        let mut r = Rule::new(MemoryThreshold::PoolReservedBytes(64), Sink::Callback(Box::new(|_| {})));
        assert!(r.evaluate(&snap(999, 10)).is_none(), "device use is not the pool's");
        let a = r.evaluate(&snap(0, 65)).unwrap();
        assert_eq!(
            (a.crossing, a.value, a.limit, a.unix_ms),
            (Crossing::Above, 65.0, 64.0, 7)
        );
        let mut r = Rule::new(MemoryThreshold::DeviceUsedBytes(300), Sink::Callback(Box::new(|_| {})));
        assert!(r.evaluate(&snap(300, 0)).is_none(), "at the limit is not above it");
        assert_eq!(r.evaluate(&snap(301, 0)).map(|a| a.crossing), Some(Crossing::Above));
    }
}
